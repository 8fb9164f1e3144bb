//! Property: no input makes the front end panic or hang; bad input gives diagnostics that
//! render.

use frontend::{compile, SourceFile};
use proptest::prelude::*;

const VOCABULARY: &[&str] = &[
    "kernel",
    "params",
    "where",
    "let",
    "for",
    "in",
    "out",
    "inout",
    "step",
    "if",
    "else",
    "and",
    "or",
    "not",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    "->",
    "..",
    ".",
    "?",
    "+",
    "-",
    "*",
    "/",
    "%",
    "=",
    "+=",
    "-=",
    "*=",
    "/=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "max=",
    "A",
    "B",
    "i",
    "j",
    "k",
    "N",
    "f32",
    "f16",
    "i8",
    "sum",
    "max",
    "min",
    "exp",
    "floor",
    "rev",
    "0",
    "1",
    "2",
    "1.5",
    "99999999999999999999",
    "1e999",
    "/*",
    "//",
    "\n",
    "#",
];

const GEMM: &str = "kernel gemm(alpha: f64, beta: f64, A: f64[NI, NK], B: f64[NK, NJ], C: inout f64[NI, NJ])
  params NI = 10, NJ = 11, NK = 12
{
  for i in 0..NI {
    for j in 0..NJ { S0: C[i, j] *= beta; }
    for k in 0..NK { for j in 0..NJ { S1: C[i, j] += alpha * A[i, k] * B[k, j]; } }
  }
}
kernel mm(A: f32[M, K], B: f32[K, N]) -> (C: f32[M, N]) params M, N, K { C[i, j] = sum(k) A[i, k] * B[k, j]; }
";

fn run(bytes: Vec<u8>) {
    if let Ok(file) = SourceFile::from_bytes("fuzz.pk", bytes) {
        if let Err(d) = compile(&file) {
            assert!(d.count() > 0);
            let _ = d.render(&file, true);
        }
        if let Err(d) = frontend::compile_intrinsics(&file) {
            assert!(d.count() > 0);
            let _ = d.render(&file, true);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn random_bytes_do_not_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        run(bytes);
    }

    #[test]
    fn random_token_streams_do_not_panic(tokens in prop::collection::vec(prop::sample::select(VOCABULARY), 0..200)) {
        run(tokens.join(" ").into_bytes());
    }

    #[test]
    fn mutated_programs_do_not_panic(
        edits in prop::collection::vec((0..GEMM.len(), prop::sample::select(VOCABULARY), any::<bool>()), 1..6)
    ) {
        let mut text = GEMM.to_string();
        for (at, tok, delete) in edits {
            let mut at = at.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if delete {
                let end = (at + tok.len()).min(text.len());
                if text.is_char_boundary(end) {
                    text.replace_range(at..end, "");
                }
            } else {
                text.insert_str(at, tok);
            }
        }
        run(text.into_bytes());
    }
}

#[test]
fn huge_files_are_fine() {
    let body = "  x[0] = x[0] + 1;\n".repeat(20_000);
    let text = format!("kernel big(x: inout f32[1]) {{\n{body}}}\n");
    let kernels = compile(&SourceFile::new("big.pk", text)).expect("compiles");
    assert_eq!(kernels[0].statements().len(), 20_000);
    let garbage = "#".repeat(100_000);
    let d = compile(&SourceFile::new("garbage.pk", garbage)).unwrap_err();
    assert!(d.count() >= 100_000 && d.list.len() <= frontend::diagnostics::MAX_DIAGNOSTICS);
}
