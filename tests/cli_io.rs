//! End-to-end behaviour of the CLI around files: exit codes on every malformed program,
//! standard input, and `.npy` inputs and outputs.

use npyz::WriterBuilder;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;

use common::polyc;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn every_malformed_program_exits_1_with_its_code_and_position() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("frontend/tests/malformed");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "pk") {
            continue;
        }
        n += 1;
        let name = path.file_name().unwrap().to_str().unwrap();
        let code = name.split('_').next().unwrap();
        let out = polyc(&["check", path.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!("error[{code}]")),
            "{name} lacks {code}: {err}"
        );
        assert!(
            err.contains(&format!("{name}:")),
            "{name}: no file:line:col in {err}"
        );
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    assert!(n >= 40, "only {n} malformed programs");
}

/// Runs polyc with `args`, `input` on its standard input.
fn with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

const TWICE: &[u8] = b"kernel twice(x: f32[N]) -> (y: f32[N]) params N { y[i] = x[i] + x[i]; }";

#[test]
fn standard_input_is_read_with_a_dash() {
    let out = with_stdin(&["run", "-", "-D", "N=4"], TWICE);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("kernel twice (N=4)\ny f32[4] sum="),
        "{}",
        stdout(&out)
    );
    // The compiled run reads its kernel twice (to run and to compile it): standard input is
    // read once and remembered, and both give the interpreter's checksums.
    let compiled = with_stdin(&["run", "-", "-D", "N=4", "--target", "cpu"], TWICE);
    assert_eq!(compiled.status.code(), Some(0), "{}", stderr(&compiled));
    let checksums = |o: &Output| stdout(o).lines().take(2).collect::<Vec<_>>().join("\n");
    assert_eq!(checksums(&compiled), checksums(&out));
}

#[test]
fn an_inputs_directory_must_exist_and_name_only_arrays() {
    let missing = polyc(&["run", "examples/strided.pk", "--inputs", "no/such/dir"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("no/such/dir"),
        "{}",
        stderr(&missing)
    );
    let dir = tempfile::tempdir().unwrap();
    write_npy_f64(&dir.path().join("Ax.npy"), &[12, 16], &[0.0; 192]);
    let typo = polyc(&[
        "run",
        "examples/strided.pk",
        "--inputs",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(typo.status.code(), Some(1));
    assert!(
        stderr(&typo).contains("Ax.npy: names no array of the kernel"),
        "{}",
        stderr(&typo)
    );
}

fn write_npy_f64(path: &Path, shape: &[u64], values: &[f64]) {
    let mut file = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut file)
        .begin_nd()
        .unwrap();
    w.extend(values.iter().copied()).unwrap();
    w.finish().unwrap();
}

fn read_npy_f64(path: &Path) -> (Vec<u64>, Vec<f64>) {
    let bytes = std::fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape = npy.shape().to_vec();
    (shape, npy.into_vec::<f64>().unwrap())
}

#[test]
fn npy_inputs_fix_parameters_and_outputs_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, outputs) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&inputs).unwrap();
    // gemm: C := alpha * A * B + beta * C with every input given, so the result is exact.
    write_npy_f64(&inputs.join("alpha.npy"), &[], &[2.0]);
    write_npy_f64(&inputs.join("beta.npy"), &[], &[0.5]);
    write_npy_f64(
        &inputs.join("A.npy"),
        &[2, 3],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    );
    write_npy_f64(&inputs.join("B.npy"), &[3, 1], &[1.0, 0.0, -1.0]);
    write_npy_f64(&inputs.join("C.npy"), &[2, 1], &[10.0, 20.0]);
    let out = polyc(&[
        "run",
        "examples/polybench/gemm.pk",
        "--inputs",
        inputs.to_str().unwrap(),
        "--outputs",
        outputs.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("kernel gemm (NI=2, NJ=1, NK=3)"),
        "{}",
        stdout(&out)
    );
    let (shape, c) = read_npy_f64(&outputs.join("C.npy"));
    assert_eq!(shape, vec![2, 1]);
    // row 0: 0.5*10 + 2*(1 - 3) = 1; row 1: 0.5*20 + 2*(4 - 6) = 6
    assert_eq!(c, vec![1.0, 6.0]);
}

#[test]
fn an_input_contradicting_the_kernel_is_a_user_error() {
    let dir = tempfile::tempdir().unwrap();
    write_npy_f64(&dir.path().join("A.npy"), &[2, 3], &[0.0; 6]);
    write_npy_f64(&dir.path().join("B.npy"), &[4, 2], &[0.0; 8]);
    let out = polyc(&[
        "run",
        "examples/polybench/gemm.pk",
        "--inputs",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains('B') && err.contains("dimension"), "{err}");
}
