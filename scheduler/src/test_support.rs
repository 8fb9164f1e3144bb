//! Helpers shared by the crate's unit tests.

use poly::isl::Ctx;
use poly::model::Program;
use std::collections::BTreeMap;

/// The first kernel of `examples/<example>`, lifted with symbolic parameters.
pub fn program(example: &str) -> Program {
    let path = format!("{}/../examples/{example}", env!("CARGO_MANIFEST_DIR"));
    let kernels = frontend::compile(&frontend::read_source(&path).unwrap()).unwrap();
    Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap()
}
