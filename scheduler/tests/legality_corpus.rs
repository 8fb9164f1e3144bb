//! The legality corpus (`tests/wrong/`): wrong schedules rejected for their precise reason,
//! legal ones accepted; the reports are golden files (`UPDATE_EXPECT=1` regenerates them).

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::legality::{check, input::parse_schedule, Flip, Report, Rule, Violation};
use std::path::{Path, PathBuf};

/// The rule every violation of a wrong case must break.
fn expected_rule(case: &str) -> fn(&Violation) -> bool {
    match case {
        "reversed-time" | "illegal-interchange" => {
            |v| matches!(v, Violation::Dependence(d) if matches!(d.rule, Rule::Order(Flip::Dimension(_))))
        }
        "illegal-fusion" => {
            |v| matches!(v, Violation::Dependence(d) if matches!(d.rule, Rule::Order(_)))
        }
        "parallel-carried-k" => {
            |v| matches!(v, Violation::Dependence(d) if matches!(d.rule, Rule::Parallel(_)))
        }
        "illegal-tiling" => {
            |v| matches!(v, Violation::Dependence(d) if matches!(d.rule, Rule::Permutable(_)))
        }
        "dropped-instances" => |v| matches!(v, Violation::Unscheduled { .. }),
        "instances-twice" => |v| matches!(v, Violation::SeveralTimes { .. }),
        other => panic!("corpus case `{other}` has no expected rule: add it to this table"),
    }
}

fn report(path: &Path) -> Report {
    let name = path.file_name().unwrap().to_str().unwrap();
    let kernel_name = name.split('.').next().unwrap();
    let source_path = format!(
        "{}/../examples/polybench/{kernel_name}.pk",
        env!("CARGO_MANIFEST_DIR")
    );
    let source = std::fs::read_to_string(&source_path).unwrap();
    let file = frontend::SourceFile::new(&source_path, &source);
    let kernel = frontend::compile(&file)
        .expect("example compiles")
        .remove(0);
    let ctx = Ctx::default();
    let program = Program::build(&ctx, &kernel, &Default::default()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let schedule = parse_schedule(&ctx, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
    check(&program, &deps, &schedule, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn corpus() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/wrong");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "schedule"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 8, "corpus missing: {}", dir.display());
    for path in cases {
        let report = report(&path);
        let case = path
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .split_once('.')
            .unwrap()
            .1;
        if case.starts_with("legal-") {
            assert!(report.is_legal(), "{case} must be legal:\n{report}");
        } else {
            let rule = expected_rule(case);
            assert!(!report.is_legal(), "{case} must be rejected");
            assert!(
                report.violations.iter().all(rule),
                "{case} rejected for another reason:\n{report}"
            );
        }
        expect_test::expect_file![path.with_extension("expected")].assert_eq(&report.to_string());
    }
}
