//! The malformed-program corpus: every `tests/malformed/*.npu` must be rejected, with the
//! diagnostic in the `.expected` file beside it (`UPDATE_EXPECT=1` regenerates them). The
//! machine is `mini` unless the first line says `# machine: NAME`.

use npu_sim::{assemble, run, Machine};
use std::path::Path;

fn diagnose(name: &str, source: &str) -> String {
    let machine = source
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# machine: "))
        .unwrap_or("mini");
    let m = Machine::preset(machine.trim()).expect("a preset");
    let program = match assemble(source) {
        Ok(p) => p,
        Err(d) => return d.render(name, source),
    };
    match run(&program, &m, &Default::default(), 0) {
        Ok(_) => "no error\n".to_string(),
        Err(d) => d.render(name, source),
    }
}

#[test]
fn every_malformed_program_gets_its_diagnostic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/malformed");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "npu"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 30, "the corpus has {} cases", cases.len());
    for path in cases {
        let name = format!("{}", path.file_name().unwrap().to_string_lossy());
        let source = std::fs::read_to_string(&path).unwrap();
        let got = diagnose(&name, &source);
        assert!(got.starts_with("error["), "{name} was accepted");
        expect_test::expect_file![path.with_extension("expected")].assert_eq(&got);
    }
}
