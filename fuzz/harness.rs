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

/// The C front end after the preprocessor: everything `polyc c` and the commands reading a
/// `.c` file do between `cpp` and scheduling ([`frontend::c::translate`], then the regions'
/// kernels printed and their diagnostics rendered). The input is a C file, then a NUL byte,
/// then its preprocessed text (line markers and all); without a NUL byte, the file is its
/// own preprocessed text, under one line marker (what `cpp` makes of a file without
/// directives). Every diagnostic and every region must point into the file, on character
/// boundaries (`polyc c` cuts the file at the regions' spans), and a region refused has a
/// reason.
pub fn c_frontend(data: &[u8]) {
    let (original, preprocessed) = match data.iter().position(|&b| b == 0) {
        Some(k) => (
            &data[..k],
            std::str::from_utf8(&data[k + 1..]).map(str::to_owned),
        ),
        None => (
            data,
            std::str::from_utf8(data).map(|text| format!("# 1 \"fuzz.c\"\n{text}")),
        ),
    };
    let (Ok(file), Ok(preprocessed)) = (
        frontend::SourceFile::from_bytes("fuzz.c", original.to_vec()),
        preprocessed,
    ) else {
        return;
    };
    let in_file = |span: frontend::span::Span| {
        span.start <= span.end
            && span.end <= file.text.len()
            && file.text.is_char_boundary(span.start)
            && file.text.is_char_boundary(span.end)
    };
    let check = |diagnostics: &frontend::Diagnostics| {
        assert!(
            !diagnostics.list.is_empty(),
            "an error without a diagnostic"
        );
        for d in &diagnostics.list {
            let spans = std::iter::once(&d.span).chain(d.secondary.iter().map(|(s, _)| s));
            for span in spans {
                assert!(in_file(*span), "{span:?} is not in the file: {d:?}");
            }
        }
        let _ = diagnostics.render(&file, false);
    };
    let regions = match frontend::c::translate(&file, &preprocessed) {
        Ok(regions) => regions,
        Err(diagnostics) => {
            check(&diagnostics);
            return;
        }
    };
    let mut after = 0;
    for region in &regions {
        assert!(
            in_file(region.span) && after <= region.span.start,
            "region {:?} of lines {:?} is not in the file after byte {after}",
            region.span,
            region.lines
        );
        after = region.span.end;
        match &region.kernel {
            Ok(kernel) => drop(kernel.to_string()),
            Err(diagnostics) => check(diagnostics),
        }
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
