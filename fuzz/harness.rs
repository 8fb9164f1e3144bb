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

/// The kernel schedule text is checked against: two statements with a flow dependence
/// carried by the outer loop and one inside it.
const SCHEDULE_KERNEL: &str = "kernel k(A: inout f64[N, N]) params N = 8 {
  for t in 1..N { for i in 1..N - 1 {
    A[t, i] = A[t - 1, i - 1] + A[t - 1, i + 1];
    A[t, i] += A[t, i - 1];
  } }
}";

thread_local! {
    /// The kernel's program and dependences, built once per thread.
    static SCHEDULED: (poly::model::Program, poly::deps::Dependences) = {
        let file = frontend::SourceFile::new("k.pk", SCHEDULE_KERNEL);
        let kernel = frontend::compile(&file).expect("the kernel compiles").remove(0);
        let program = poly::model::Program::build(
            &poly::isl::Ctx::default(),
            &kernel,
            &std::collections::BTreeMap::new(),
        )
        .expect("the kernel lifts");
        let deps = poly::deps::Dependences::compute(&program).expect("dependences");
        (program, deps)
    };
}

/// Schedule text, as `polyc verify` reads it (an isl schedule tree in YAML or a union map,
/// parsed by isl's C code), then checked against a small kernel's dependences: any text
/// gives a verdict or an error.
pub fn schedule_text(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    SCHEDULED.with(|(program, deps)| {
        let _analysis = program.ctx.analysis();
        if let Ok(schedule) = scheduler::legality::input::parse_schedule(&program.ctx, text) {
            let options = scheduler::Options::default();
            let _ = scheduler::legality::check(program, deps, &schedule, &options);
        }
    });
}
