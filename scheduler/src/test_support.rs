//! Helpers shared by the crate's unit tests.

use crate::transform::tile_size::Machine;
use poly::isl::Ctx;
use poly::model::Program;
use std::collections::BTreeMap;

/// The first kernel of `examples/<example>`, lifted with symbolic parameters.
pub fn program(example: &str) -> Program {
    let path = format!("{}/../examples/{example}", env!("CARGO_MANIFEST_DIR"));
    let kernels = frontend::compile(&frontend::read_source(&path).unwrap()).unwrap();
    Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap()
}

/// The first kernel of `text`, lifted with symbolic parameters.
pub fn inline(text: &str) -> Program {
    let file = frontend::SourceFile::new("t.pk", text);
    let kernels = frontend::compile(&file).unwrap();
    Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap()
}

/// A Zen 3 core pair: 32 KiB L1d, 512 KiB L2, AVX2, two cores (a fixed machine, never the
/// host's).
pub const ZEN3: Machine = Machine {
    l1d_bytes: 32 << 10,
    l2_bytes: 512 << 10,
    l3_bytes: 32 << 20,
    vector_bytes: 32,
    cores: 2,
};
