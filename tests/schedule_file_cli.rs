//! `--schedule FILE` end to end: hand-written legal schedules (an interchange of gemm, a
//! skew of jacobi-1d that puts the wavefront outermost) compiled by `polyc compile
//! --harness`, built, run and compared with the interpreter's outputs; an illegal one and a
//! malformed one refused with exit 1 by every command that takes `--schedule`.

mod common;

use codegen::runner;
use codegen::toolchain::CCompiler;
use common::{passing, polyc};
use frontend::SourceFile;
use poly::interp::{InputFiles, Memory, ParamValues};
use std::collections::BTreeMap;
use std::path::Path;

/// The checksum lines (`NAME TYPE[..] sum=.. hash=..`, one per output array) of a `polyc
/// run` or harness output.
fn checksums(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| l.contains(" hash="))
        .map(str::to_owned)
        .collect()
}

/// Compiles `kernel` with the schedule `text`, the pipeline `flags` and a harness, runs it on
/// the interpreter's seeded inputs and returns its checksum lines, with the interpreter's.
fn compiled_and_interpreted(
    kernel: &str,
    text: &str,
    params: &[(&str, i64)],
    flags: &[&str],
) -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("given.schedule");
    std::fs::write(&schedule, text).unwrap();
    let c_file = dir.path().join("kernel.c");
    let defines: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let mut args = vec![
        "compile",
        kernel,
        "--harness",
        "--schedule",
        schedule.to_str().unwrap(),
        "-o",
        c_file.to_str().unwrap(),
    ];
    args.extend(flags);
    let mut run = vec!["run", kernel];
    for d in &defines {
        args.extend(["-D", d]);
        run.extend(["-D", d]);
    }
    let out = polyc(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let code = std::fs::read_to_string(&c_file).unwrap();
    let exe = CCompiler::system("-O1")
        .build(&code, dir.path(), "kernel")
        .unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join(kernel)).unwrap();
    let ir = frontend::compile(&SourceFile::new(kernel, source)).unwrap();
    let overrides: BTreeMap<String, i64> =
        params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let values = ParamValues::resolve(&ir[0], &overrides, &BTreeMap::new()).unwrap();
    let memory = Memory::load_inputs(&ir[0], &values, &InputFiles::default(), 0).unwrap();
    let compiled = runner::run_on(&exe, &memory, &values, dir.path(), None).unwrap();
    assert!(compiled.success, "{}", compiled.stderr);
    let interpreted = polyc(&run);
    assert_eq!(interpreted.status.code(), Some(0));
    (
        checksums(compiled.stdout.as_bytes()),
        checksums(&interpreted.stdout),
    )
}

#[test]
fn hand_written_interchange_and_skew_compile_to_the_interpreters_outputs() {
    let cases = [
        (
            "examples/polybench/gemm.pk",
            "[NI, NJ, NK] -> { S0[i, j] -> [j, 0, i, 0]; S1[i, k, j] -> [j, 1, k, i] }",
            [("NI", 13), ("NJ", 11), ("NK", 7)].as_slice(),
        ),
        (
            "examples/polybench/jacobi-1d.pk",
            "[TSTEPS, N] -> { S0[t, i] -> [2t + i, t, 0]; S1[t, i] -> [2t + i + 1, t, 1] }",
            [("TSTEPS", 9), ("N", 23)].as_slice(),
        ),
    ];
    for (kernel, schedule, params) in cases {
        let (compiled, interpreted) = compiled_and_interpreted(kernel, schedule, params, &[]);
        assert!(!interpreted.is_empty(), "{kernel}: no checksum printed");
        assert_eq!(compiled, interpreted, "{kernel}: {schedule}");
    }
}

/// Pluto's own schedule of `kernel` (neither tiled nor made parallel), written to a file
/// in `dir`: the file and the text.
fn pluto_schedule(kernel: &str, dir: &Path) -> (std::path::PathBuf, String) {
    let args = [
        "schedule",
        kernel,
        "--no-tile",
        "--no-parallel",
        "--emit",
        "schedule",
    ];
    let text = passing(&args);
    let file = dir.join("pluto.schedule");
    std::fs::write(&file, &text).unwrap();
    (file, text)
}

/// Pluto's schedules of the stencils, diamond-tiled by 4 and made parallel (a wavefront of
/// tiles whose second member is an OpenMP loop), compute what the interpreter computes.
#[test]
fn diamond_tiled_stencils_compute_the_interpreters_outputs() {
    let cases = [
        (
            "examples/polybench/jacobi-1d.pk",
            [("TSTEPS", 9), ("N", 23)].as_slice(),
        ),
        (
            "examples/polybench/jacobi-2d.pk",
            [("TSTEPS", 7), ("N", 13)].as_slice(),
        ),
        (
            "examples/polybench/heat-3d.pk",
            [("TSTEPS", 5), ("N", 11)].as_slice(),
        ),
        (
            "examples/polybench/fdtd-2d.pk",
            [("TMAX", 7), ("NX", 13), ("NY", 11)].as_slice(),
        ),
    ];
    let flags = ["--tile", "4", "--parallel", "--diamond"];
    for (kernel, params) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (file, text) = pluto_schedule(kernel, dir.path());
        let mut args = vec!["schedule", kernel, "--schedule", file.to_str().unwrap()];
        args.extend(flags);
        let notes = String::from_utf8(polyc(&args).stderr).unwrap();
        assert!(
            notes.contains("diamond tiling: applied"),
            "{kernel}: {notes}"
        );
        let (compiled, interpreted) = compiled_and_interpreted(kernel, &text, params, &flags);
        assert!(!interpreted.is_empty(), "{kernel}: no checksum printed");
        assert_eq!(compiled, interpreted, "{kernel}");
    }
}

/// The given schedule is the one compiled: no tiling unless asked (`for` loops as
/// written), and, with `--parallel`, not traded for the original order (which the cost
/// decisions prefer to a skewed jacobi-1d: see Pluto's schedule with `--parallel`).
#[test]
fn the_given_order_is_kept_untiled() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("given.schedule");
    std::fs::write(
        &schedule,
        "[TSTEPS, N] -> { S0[t, i] -> [2t + i, t, 0]; S1[t, i] -> [2t + i + 1, t, 1] }",
    )
    .unwrap();
    for extra in [&[][..], &["--parallel"][..]] {
        let mut args = vec![
            "schedule",
            "examples/polybench/jacobi-1d.pk",
            "--schedule",
            schedule.to_str().unwrap(),
            "--emit",
            "ast",
        ];
        args.extend(extra);
        let out = polyc(&args);
        let ast = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {ast}");
        let loops = ast
            .lines()
            .filter(|l| l.trim_start().starts_with("for"))
            .count();
        assert_eq!(loops, 2, "{extra:?}: two loops:\n{ast}");
        assert!(
            ast.contains("c0 < 2 * TSTEPS + N - 2"),
            "{extra:?}: the wavefront outermost:\n{ast}"
        );
        assert!(!ast.contains("32"), "{extra:?}: no tiles:\n{ast}");
    }
    // Asked to tile a union map (one band, not permutable): nothing tiled, and said so.
    let out = polyc(&[
        "compile",
        "examples/polybench/jacobi-1d.pk",
        "--schedule",
        schedule.to_str().unwrap(),
        "--tile",
        "-o",
        dir.path().join("out.c").to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("`--tile` tiled nothing"), "{stderr}");
}

/// An illegal schedule (jacobi-1d interchanged) and a malformed one exit 1 with the
/// checker's report or the syntax error's position, on every command that takes one.
#[test]
fn illegal_and_malformed_schedules_are_refused_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let illegal = dir.path().join("illegal.schedule");
    std::fs::write(
        &illegal,
        "[TSTEPS, N] -> { S0[t, i] -> [i, t, 0]; S1[t, i] -> [i, t, 1] }",
    )
    .unwrap();
    let malformed = dir.path().join("malformed.schedule");
    std::fs::write(
        &malformed,
        "[TSTEPS, N] -> {\n  S0[t, i] -> [t, 0, i];\n  S1[t, i] -> [t, 1, i\n}\n",
    )
    .unwrap();
    let kernel = "examples/polybench/jacobi-1d.pk";
    let commands: [&[&str]; 4] = [
        &["compile", kernel],
        &[
            "run", kernel, "--target", "cpu", "-D", "TSTEPS=4", "-D", "N=10",
        ],
        &["schedule", kernel],
        &[
            "bench", kernel, "-D", "TSTEPS=4", "-D", "N=10", "--rounds", "1",
        ],
    ];
    for command in commands {
        for (file, says) in [
            (&illegal, "the schedule is illegal"),
            (&malformed, "malformed.schedule:4:1"),
        ] {
            let mut args = command.to_vec();
            args.extend(["--schedule", file.to_str().unwrap()]);
            let out = polyc(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(stderr.contains(says), "{args:?}: {stderr}");
        }
    }
    // Only the CPU back end runs a given schedule; elsewhere `--schedule` is refused.
    for command in [
        &["run", kernel][..],
        &["run", kernel, "--target", "npu"][..],
        &["compile", kernel, "--target", "npu"][..],
    ] {
        let mut args = command.to_vec();
        args.extend(["--schedule", illegal.to_str().unwrap()]);
        let out = polyc(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("applies to `--target cpu`"),
            "{args:?}: {stderr}"
        );
    }
    let out = polyc(&["verify", kernel, "--schedule", malformed.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: malformed schedule: expected `]`, found `}`"),
        "{stderr}"
    );
}

/// Time-tiled stencils with a wavefront of tiles, whose tile sizes once made isl's AST
/// generator run out of its budget (exit 2) when every band was split into one-member bands
/// for the parallel marks: they compile, with the parallel tile loop an OpenMP loop.
#[test]
fn time_tiled_stencils_compile_with_a_parallel_tile_loop() {
    for (kernel, tiles) in [
        ("examples/polybench/jacobi-1d.pk", "256,256"),
        ("examples/polybench/jacobi-2d.pk", "64,32,64"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (file, _) = pluto_schedule(kernel, dir.path());
        let c = dir.path().join("kernel.c");
        let out = polyc(&[
            "compile",
            kernel,
            "--schedule",
            file.to_str().unwrap(),
            "--tile",
            tiles,
            "--parallel",
            "-o",
            c.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{kernel}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let code = std::fs::read_to_string(&c).unwrap();
        assert!(
            code.contains("#pragma omp for"),
            "{kernel}: no parallel loop"
        );
    }
}
