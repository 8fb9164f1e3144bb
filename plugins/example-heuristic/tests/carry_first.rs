//! The example plug-in end to end: `carry-first` is listed and run by `polyc compare` from
//! the plug-in's own binary, its schedules pass the legality checker, and they differ from
//! Pluto's.

use example_heuristic::CarryFirst;
use expect_test::expect;
use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use poly::order::AnySchedule;
use scheduler::legality;
use scheduler::pluto::Pluto;
use scheduler::{Options, Problem, Scheduler};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

/// The workspace root, where the examples are.
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The plug-in's binary (polyc with `carry-first` registered) run from the workspace root.
fn polyc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_polyc-carry-first"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

#[test]
fn compare_lists_and_runs_the_plugin_beside_pluto() {
    let kernels = [
        "examples/polybench/jacobi-1d.pk",
        "examples/polybench/gemm.pk",
    ];
    let mut args = vec!["compare"];
    args.extend(kernels);
    // The schedulers' own schedules: tiling and the wavefront would add parallel loops.
    args.extend(["--emit", "json", "--no-tile", "--no-parallel"]);
    let out = polyc(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = &report["results"];
    let row = |kernel: &str, scheduler: &str| -> Value {
        (rows.as_array().expect("the report's rows").iter())
            .find(|r| r["kernel"] == kernel && r["scheduler"] == scheduler)
            .unwrap_or_else(|| panic!("no {scheduler} row for {kernel}: {rows:#}"))
            .clone()
    };
    for kernel in ["jacobi_1d", "gemm"] {
        assert_eq!(row(kernel, "carry-first")["error"], Value::Null);
    }
    // jacobi-1d: Pluto's (t, 2t + i) has no parallel loop; carry-first's first row carries
    // every dependence, which leaves the wavefront 2t + i parallel.
    assert_eq!(row("jacobi_1d", "pluto")["parallel_loops"], 0);
    assert_eq!(row("jacobi_1d", "carry-first")["parallel_loops"], 1);
}

#[test]
fn every_option_taking_a_scheduler_names_the_plugin_in_its_help() {
    for command in ["schedule", "compare", "compile", "bench", "c"] {
        let help = polyc(&[command, "--help"]);
        assert!(help.status.success());
        let help = String::from_utf8_lossy(&help.stdout).into_owned();
        assert!(help.contains("Plug-ins: carry-first."), "{command}: {help}");
    }
    let unknown = polyc(&[
        "schedule",
        "examples/polybench/gemm.pk",
        "--scheduler",
        "nope",
    ]);
    assert_eq!(unknown.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&unknown.stderr).into_owned();
    assert!(stderr.contains("identity, carry-first)"), "{stderr}");
}

#[test]
fn the_plugins_schedule_is_run_and_verified_by_the_cli() {
    let kernel = "examples/polybench/jacobi-1d.pk";
    let scheduled = polyc(&[
        "schedule",
        kernel,
        "--scheduler",
        "carry-first",
        "--emit",
        "schedule",
    ]);
    assert!(
        scheduled.status.success(),
        "{}",
        String::from_utf8_lossy(&scheduled.stderr)
    );
    let file = std::env::temp_dir().join(format!("carry-first-{}.yaml", std::process::id()));
    std::fs::write(&file, &scheduled.stdout).unwrap();
    let verified = polyc(&["verify", kernel, "--schedule", file.to_str().unwrap()]);
    std::fs::remove_file(&file).unwrap();
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
}

/// The kernel `examples/polybench/NAME.pk` with symbolic parameters.
fn lift(name: &str) -> (Program, Dependences) {
    let path = root().join(format!("examples/polybench/{name}.pk"));
    let source = frontend::read_source(path.to_str().unwrap()).unwrap();
    let kernel = frontend::compile(&source).unwrap().remove(0);
    let program = Program::build(&Ctx::default(), &kernel, &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    (program, deps)
}

#[test]
fn its_schedules_are_legal_and_differ_from_plutos() {
    let flat = |pluto: &Pluto, name: &str| {
        let (program, deps) = lift(name);
        let problem = Problem {
            program: &program,
            deps: &deps,
            options: Options::default(),
        };
        let tree = pluto.schedule(&problem).unwrap();
        let schedule = AnySchedule::Tree(tree.clone());
        let report = legality::check(&program, &deps, &schedule, &problem.options).unwrap();
        assert!(
            report.is_legal(),
            "{name} under {}:\n{report}",
            pluto.name()
        );
        tree.map().unwrap().to_string()
    };
    let (pluto, carry_first) = (Pluto::default(), Pluto::with_heuristic(CarryFirst));
    for name in ["gemm", "2mm", "seidel-2d", "lu"] {
        flat(&carry_first, name);
    }
    expect!["[TSTEPS, N] -> { S1[t, i] -> [t, 1 + 2t + i, 1]; S0[t, i] -> [t, 2t + i, 0] }"]
        .assert_eq(&flat(&pluto, "jacobi-1d"));
    expect!["[TSTEPS, N] -> { S1[t, i] -> [1 + 2t, 1 + 2t + i, 1]; S0[t, i] -> [2t, 2t + i, 0] }"]
        .assert_eq(&flat(&carry_first, "jacobi-1d"));
}
