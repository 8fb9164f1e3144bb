//! Every run-time error of the interpreter is a clean error naming where it happened.

use frontend::ir::Kernel;
use poly::interp::{InterpError, Interpreter, Memory, ParamValues};
use std::collections::BTreeMap;

fn compile(source: &str) -> Kernel {
    let file = frontend::SourceFile::new("test.pk", source);
    match frontend::compile(&file) {
        Ok(mut kernels) => kernels.remove(0),
        Err(d) => panic!("{d:?}"),
    }
}

fn setup(source: &str, n: i64) -> (Interpreter, Memory) {
    let kernel = compile(source);
    let overrides = [("N".to_string(), n)].into();
    let params = ParamValues::resolve(&kernel, &overrides, &BTreeMap::new()).unwrap();
    let memory = Memory::random(&kernel, &params, 0).unwrap();
    (Interpreter::new(&kernel, &params).unwrap(), memory)
}

/// Runs both ways; both must fail the same way. Returns the error's message.
fn failure(source: &str, prepare: impl Fn(&mut Memory)) -> String {
    let (interp, mut memory) = setup(source, 5);
    prepare(&mut memory);
    let mut listed = memory.clone();
    let walked = interp.run_original(&mut memory).unwrap_err();
    let instances = interp.original_instances();
    assert_eq!(
        interp.run_instances(&mut listed, instances),
        Err(walked.clone())
    );
    walked.to_string()
}

#[test]
fn out_of_bounds_names_statement_instance_and_index() {
    let message = failure(
        "kernel k(A: f32[N]) -> (B: f32[N]) params N { for i in 0..N { S: B[i] = A[i + 1]; } }",
        |_| {},
    );
    assert_eq!(
        message,
        "statement S at (i=4): index 5 out of bounds 0..5 in dimension 0 of `A`"
    );
    let message = failure(
        "kernel k() -> (B: f32[N, N]) params N { for i in 0..N { for j in 0..N { B[j, i - j] = 1; } } }",
        |_| {},
    );
    assert_eq!(
        message,
        "statement S0 at (i=0, j=1): index -1 out of bounds 0..5 in dimension 1 of `B`"
    );
}

#[test]
fn integer_division_by_zero() {
    let source = "kernel k(A: i8[N], D: i8[N]) -> (B: i8[N]) params N {
        for i in 0..N { B[i] = A[i] / D[i]; }
      }";
    let message = failure(source, |m| {
        m.array_mut("D")
            .unwrap()
            .set_values(&[1.0, -1.0, 2.0, 0.0, 3.0])
            .unwrap();
    });
    assert_eq!(message, "statement S0 at (i=3): integer division by zero");
    let compound =
        "kernel k(D: i32[N]) -> (B: i32[N]) params N { for i in 0..N { B[i] /= D[i]; } }";
    assert!(failure(compound, |m| m
        .array_mut("D")
        .unwrap()
        .set_values(&[0.0; 5])
        .unwrap())
    .ends_with("(i=0): integer division by zero"));
}

#[test]
fn float_to_integer_conversion_out_of_range() {
    let source =
        "kernel k(X: f32[N]) -> (B: i8[N]) params N { for i in 0..N { B[i] = i8(X[i] * 200); } }";
    let message = failure(source, |m| {
        m.array_mut("X")
            .unwrap()
            .set_values(&[0.1, 0.2, 0.9, 0.0, 0.0])
            .unwrap();
    });
    assert!(
        message.starts_with("statement S0 at (i=2): cannot convert 180"),
        "{message}"
    );
}

#[test]
fn bad_instances_and_foreign_memory() {
    let source = "kernel k() -> (B: f32[N]) params N { for i in 0..N { B[i] = 1; } }";
    let (interp, mut memory) = setup(source, 5);
    assert!(matches!(
        interp.run_instances(&mut memory, [(1, vec![0])]),
        Err(InterpError::BadInstance { .. })
    ));
    assert!(matches!(
        interp.run_instances(&mut memory, [(0, vec![0, 1])]),
        Err(InterpError::BadInstance { .. })
    ));
    let (_, mut other) = setup(source, 6);
    assert!(matches!(
        interp.run_original(&mut other),
        Err(InterpError::MemoryMismatch { .. })
    ));
}

#[test]
fn missing_parameter_and_violated_constraint() {
    let kernel =
        compile("kernel k() -> (B: f32[N]) params N where N >= 2 { for i in 0..N { B[i] = 1; } }");
    assert_eq!(
        ParamValues::resolve(&kernel, &BTreeMap::new(), &BTreeMap::new()),
        Err(InterpError::MissingParam { name: "N".into() })
    );
    let one = [("N".to_string(), 1)].into();
    let err = ParamValues::resolve(&kernel, &one, &BTreeMap::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "parameter constraint `N >= 2` does not hold with N=1"
    );
}
