//! What each fuzz target does with its input, shared by the libFuzzer targets
//! (`fuzz/fuzz_targets/`) and by the suite's replay of their corpora (`tests/fuzz_corpus.rs`),
//! so that a corpus file checked in is run the same way in both. Every function must return
//! normally on any input: a panic, a hang or an abort is a bug.

use npu_sim::program::DType;

/// The kernel language: parse and check arbitrary text, as a kernel file and as an
/// intrinsic file.
pub fn kernel_language(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let file = frontend::SourceFile::new("fuzz.pk", text);
        let _ = frontend::compile(&file);
        let _ = frontend::compile_intrinsics(&file);
    }
}

/// The `.npu` assembler: every program it accepts prints to text that assembles back to the
/// same program.
pub fn npu_assembler(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(program) = npu_sim::assemble(text) {
        let printed = npu_sim::print(&program);
        match npu_sim::assemble(&printed) {
            Ok(again) => assert_eq!(again, program, "printed:\n{printed}"),
            Err(d) => panic!("the printed program does not assemble: {d}\n{printed}"),
        }
    }
}

/// Machine descriptions in TOML.
pub fn machine_toml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = npu_sim::Machine::from_toml(text);
    }
}

/// `.npy` input files, read as every element type.
pub fn npy(data: &[u8]) {
    for dtype in DType::ALL {
        let _ = npu_sim::TensorData::from_npy(data, "fuzz.npy", *dtype);
    }
}
