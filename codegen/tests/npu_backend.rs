//! The NPU back end, differentially: each compiled program runs in the simulator (strict
//! semantics, race detector) on the interpreter's inputs and must give its outputs within
//! the documented tolerance of a reordered f32 sum; the timing oracle must agree on the
//! values; kernels outside the back end's reach are refused with a reason.

mod common;

use common::{example, kernel, sizes_of};

use codegen::npu::matmul::ring::Ring;
use codegen::npu::matmul::strips::Strips;
use codegen::npu::matmul::{self, Schedule};
use codegen::npu::{compile, recognise, simulate, NpuError};
use codegen::runner::tolerance;
use frontend::ir::{ElemType, Kernel};
use frontend::SourceFile;
use npu_sim::Machine;
use poly::interp::{Interpreter, Memory, ParamValues};
use scheduler::target::Target;
use std::collections::BTreeMap;

/// Compiles `text` at `sizes` for `machine`, runs it on the interpreter's random inputs and
/// returns the largest normwise error of each output, with the tiles chosen.
fn differential(text: &str, sizes: &[(&str, i64)], machine: &str) -> (f64, Schedule) {
    differential_with(text, sizes, machine, None)
}

/// [`differential`] with the schedule forced (`None`: the model's).
// `Plan` has one kind of program today; the patterns stay refutable for the next ones
fn differential_with(
    text: &str,
    sizes: &[(&str, i64)],
    machine: &str,
    force: Option<Schedule>,
) -> (f64, Schedule) {
    let k = kernel(text);
    let fixed: BTreeMap<String, i64> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let params = ParamValues::resolve(&k, &fixed, &BTreeMap::new()).unwrap();
    let all: BTreeMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
    let m = Machine::load(machine).unwrap();
    let mut compiled = compile(&k, &all, &m, true).unwrap();
    if let Some(forced) = force {
        let mm = recognise::matmul(&k, &all, &Target::of_npu(&m)).unwrap();
        compiled.program = matmul::program(&mm, &m, forced).unwrap();
        if let codegen::npu::Plan::Matmul { schedule, .. } = &mut compiled.plan {
            *schedule = forced;
        }
    }
    // the timing oracle: other machines, the same values
    let (want, got) = common::interpreted_and_simulated(&k, &params, &compiled, &m, 4, machine);
    let worst = common::worst_error(&k, &want, &got);
    let codegen::npu::Plan::Matmul { schedule, .. } = compiled.plan else {
        panic!("not a matrix product: {:?}", compiled.plan)
    };
    (worst, schedule)
}

const BMM: &str = "kernel bmm(A: f16[NB, M, K], B: f16[NB, K, N]) -> (C: f32[NB, M, N])
  params NB = 2, M = 64, N = 64, K = 64
{ C[b, i, j] = sum(k) f32(A[b, i, k]) * f32(B[b, k, j]); }";

/// A product stored in f16 through an f32 temporary (the epilogue converts it on the way
/// out of L0C).
const GEMM_F16: &str =
    "kernel mm(A: f16[M, K], B: f16[K, N]) -> (C: f16[M, N]) params M = 256, N = 256, K = 512
{ let acc: f32[M, N]; acc[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]); C[i, j] = f16(acc[i, j]); }";

/// The tolerance of an f16 result: the two sums (interpreter and matrix unit, in different
/// orders) are within the f32 tolerance of each other, and their roundings to f16 can then
/// land one f16 ulp apart (2^-10 of the largest value).
const F16_RESULT: f64 = 1e-3 + 1.0 / 1024.0;

const GEMM: &str =
    "kernel mm(A: f16[M, K], B: f16[K, N]) -> (C: f32[M, N]) params M = 256, N = 256, K = 512
{ C[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]); }";

#[test]
fn a_batched_product_matches_the_interpreter_on_both_presets() {
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        let (err, _) = differential(BMM, &[], machine);
        assert!(err <= tolerance(ElemType::F32), "{machine}: {err:e}");
    }
}

#[test]
fn edge_tiles_of_every_kind_match_the_interpreter() {
    // rows, columns and K none of them multiples of the tiles (128, 128, 64) or of 16
    for sizes in [
        [("M", 130), ("N", 33), ("K", 70)],
        [("M", 17), ("N", 200), ("K", 300)],
        [("M", 5), ("N", 7), ("K", 9)],
    ] {
        let (err, _) = differential(GEMM, &sizes, "ascend-like");
        assert!(err <= tolerance(ElemType::F32), "{sizes:?}: {err:e}");
    }
}

#[test]
fn a_larger_product_uses_every_core_and_matches() {
    for sizes in [vec![], vec![("K", 200)]] {
        let (err, _) = differential(GEMM, &sizes, "ascend-like");
        assert!(err <= tolerance(ElemType::F32), "{sizes:?}: {err:e}");
    }
}

#[test]
fn a_resident_a_panel_over_several_tiles_and_bands_per_core_matches() {
    // 16-row tiles: each core gets several tiles, across a band boundary, with edge tiles
    let tiles = Schedule::Ring(Ring {
        tm: 16,
        tn: 32,
        tk: 32,
        kc: 64,
        panel: true,
        split: 1,
    });
    for sizes in [
        [("M", 96), ("N", 104), ("K", 150)],
        [("M", 40), ("N", 64), ("K", 130)],
    ] {
        let (err, _) = differential_with(GEMM, &sizes, "ascend-like", Some(tiles));
        assert!(err <= tolerance(ElemType::F32), "{sizes:?}: {err:e}");
    }
    // the same schedule storing f16 through the epilogue
    let sizes = [("M", 40), ("N", 64), ("K", 130)];
    let (err, _) = differential_with(GEMM_F16, &sizes, "ascend-like", Some(tiles));
    assert!(err <= F16_RESULT, "{err:e}");
}

#[test]
fn tiles_never_store_into_a_shared_gm_block() {
    // rows of 100 f32 values start off 32-byte blocks: the model keeps whole rows per tile,
    // and forced narrower tiles are refused rather than racing
    let (err, tiles) = differential(GEMM, &[("M", 96), ("N", 100), ("K", 150)], "ascend-like");
    assert!(err <= tolerance(ElemType::F32), "{err:e}");
    assert!(tiles.tile().1 >= 100, "{tiles:?}");
    let k = kernel(GEMM);
    let sizes = BTreeMap::from([
        ("M".to_string(), 96),
        ("N".to_string(), 100),
        ("K".to_string(), 150),
    ]);
    let m = Machine::load("ascend-like").unwrap();
    let mm = recognise::matmul(&k, &sizes, &Target::of_npu(&m)).unwrap();
    let narrow = Schedule::Ring(Ring {
        tm: 16,
        tn: 32,
        tk: 32,
        kc: 64,
        panel: true,
        split: 1,
    });
    let refused = matmul::program(&mm, &m, narrow);
    assert!(
        matches!(refused, Err(NpuError::Unsupported(_))),
        "{refused:?}"
    );
}

/// Products with fewer tiles than cores and a long reduction split K over the cores, each
/// part's sums added into C atomically (C zeroed first): the model's choice on three
/// presets, and forced splits with edge tiles, a batch and an odd number of parts per core.
#[test]
fn split_k_products_match_the_interpreter() {
    let split_of = |s: &Schedule| match s {
        Schedule::Ring(r) => r.split,
        Schedule::Strips(_) => 1,
    };
    for (m, n, k) in [(64, 64, 4096), (100, 48, 3000)] {
        for machine in ["ascend-like", "ascend-like-halfgm", "mini"] {
            let (err, schedule) = differential(GEMM, &[("M", m), ("N", n), ("K", k)], machine);
            assert!(
                err <= tolerance(ElemType::F32),
                "{m}x{n}x{k} on {machine}: {err:e}"
            );
            if machine != "mini" {
                assert!(
                    split_of(&schedule) > 1,
                    "{m}x{n}x{k} on {machine}: {schedule:?}"
                );
            }
        }
    }
    // 32 x 32 tiles, K in chunks of 64, split in `split` parts
    let ring = |split| {
        Schedule::Ring(Ring {
            tm: 32,
            tn: 32,
            tk: 32,
            kc: 64,
            panel: false,
            split,
        })
    };
    for (text, sizes, split) in [
        (GEMM, vec![("M", 40), ("N", 72), ("K", 500)], 2),
        (GEMM, vec![("M", 40), ("N", 72), ("K", 500)], 4),
        (BMM, vec![("NB", 3), ("M", 20), ("N", 32), ("K", 256)], 4),
    ] {
        let (err, _) = differential_with(text, &sizes, "ascend-like", Some(ring(split)));
        assert!(
            err <= tolerance(ElemType::F32),
            "{sizes:?} split {split}: {err:e}"
        );
    }
    // an f16 C, a ReLU or a vector epilogue is split through an f32 workspace (adding
    // rounded or transformed parts would be wrong): the parts add into it, and a pass after
    // a `sync_all` converts each tile; the model's choice and forced splits, with edge
    // tiles (C's columns off 16: the pass's UB slot zeroed), on both presets
    let relu = with_epilogue("", "f16", "f16(max(acc[i, j], 0.0))");
    let bias = with_epilogue(", b: f32[N]", "f32", "max(acc[i, j] + b[j], 0.0)");
    let residual = with_epilogue(", R: f16[M, N]", "f16", "f16(acc[i, j] + f32(R[i, j]))");
    let residual32 = with_epilogue(", R: f32[M, N]", "f32", "acc[i, j] + R[i, j]");
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        for (text, sizes) in [
            (GEMM_F16, [("M", 64), ("N", 64), ("K", 4096)]),
            (GEMM_F16, [("M", 16), ("N", 256), ("K", 8192)]),
            (&relu, [("M", 40), ("N", 72), ("K", 3000)]),
            (&bias, [("M", 1), ("N", 1000), ("K", 2048)]),
            (&residual, [("M", 20), ("N", 40), ("K", 2500)]),
        ] {
            let (err, schedule) = differential(text, &sizes, machine);
            assert!(err <= F16_RESULT, "{sizes:?} on {machine}: {err:e}");
            assert!(
                split_of(&schedule) > 1,
                "{sizes:?} on {machine}: {schedule:?}"
            );
        }
    }
    for (text, sizes, split) in [
        (GEMM_F16, vec![("M", 40), ("N", 80), ("K", 500)], 4),
        (relu.as_str(), vec![("M", 40), ("N", 80), ("K", 500)], 2),
        (bias.as_str(), vec![("M", 33), ("N", 40), ("K", 256)], 2),
        (residual.as_str(), vec![("M", 40), ("N", 80), ("K", 500)], 4),
        // a workspace slice of 9 f32 (36 bytes) is padded to 64, so that the second slice
        // starts on a GM block (the property test's case: the simulator refused the program)
        (residual32.as_str(), vec![("M", 1), ("N", 9), ("K", 256)], 4),
    ] {
        let (err, _) = differential_with(text, &sizes, "ascend-like", Some(ring(split)));
        assert!(err <= F16_RESULT, "{sizes:?} split {split}: {err:e}");
    }
}

#[test]
fn a_machine_with_tiny_buffers_gets_tiles_that_fit() {
    let (err, tiles) = differential(GEMM, &[("M", 50), ("N", 40), ("K", 70)], "mini");
    assert!(err <= tolerance(ElemType::F32), "{err:e}");
    assert!(tiles.tile().0 * tiles.tile().1 < 256 * 256, "{tiles:?}");
}

#[test]
fn kernels_outside_its_reach_are_refused_with_a_reason() {
    let m = Machine::load("ascend-like").unwrap();
    let refuse = |text: &str, reorder: bool| {
        let k = kernel(text);
        let sizes: BTreeMap<String, i64> = k
            .params
            .iter()
            .map(|p| (p.name.clone(), p.default.unwrap()))
            .collect();
        compile(&k, &sizes, &m, reorder).unwrap_err()
    };
    assert_eq!(refuse(BMM, false), NpuError::ReorderNotAllowed);
    let transposed =
        "kernel t(A: f16[K, M], B: f16[K, N]) -> (C: f32[M, N]) params M = 32, N = 32, K = 32
        { C[i, j] = sum(k) f32(A[k, i]) * f32(B[k, j]); }";
    assert!(
        matches!(refuse(transposed, true), NpuError::Unsupported(ref w) if w.contains("transposed")),
        "{:?}",
        refuse(transposed, true)
    );
    let f64mm =
        "kernel d(A: f64[M, K], B: f64[K, N]) -> (C: f64[M, N]) params M = 32, N = 32, K = 32
        { C[i, j] = sum(k) A[i, k] * B[k, j]; }";
    assert!(
        matches!(refuse(f64mm, true), NpuError::Unsupported(ref w) if w.starts_with("`A` is f64"))
    );
    let odd_batches = "kernel b(A: f16[NB, M, K], B: f16[NB, K, N]) -> (C: f32[NB, M, N])
        params NB = 2, M = 33, N = 32, K = 17
        { C[b, i, j] = sum(k) f32(A[b, i, k]) * f32(B[b, k, j]); }";
    assert!(
        matches!(refuse(odd_batches, true), NpuError::Unsupported(ref w) if w.contains("`A`'s batch elements")),
        "{:?}",
        refuse(odd_batches, true)
    );
    let attention = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/attention.pk"
    ))
    .unwrap();
    // f32 probabilities: the cube multiplies f16 operands only
    assert!(
        matches!(refuse(&attention, true), NpuError::Unsupported(ref w) if w.contains("statement S10") && w.contains("f16 operands only")),
        "{:?}",
        refuse(&attention, true)
    );
}

/// Compiles `k` with every parameter at most 64 (the examples' sizes can be large), runs it
/// in the simulator on the interpreter's inputs and compares within the tolerance.
fn differential_small(k: &Kernel, machine: &Machine) {
    let small: BTreeMap<String, i64> = (k.params.iter())
        .map(|p| (p.name.clone(), p.default.unwrap_or(1).min(64)))
        .collect();
    let params = ParamValues::resolve(k, &small, &BTreeMap::new()).unwrap();
    let compiled = compile(k, &small, machine, true).unwrap();
    let mut memory = Memory::random(k, &params, 3).unwrap();
    let sim = simulate(&compiled, k, &memory, machine).unwrap();
    Interpreter::new(k, &params)
        .unwrap()
        .run_original(&mut memory)
        .unwrap();
    let bad = codegen::runner::disagreements(
        k,
        &memory,
        &sim.memory,
        codegen::runner::Comparison::Tolerant,
    )
    .unwrap();
    assert!(bad.is_empty(), "{}: {bad:?}", k.name);
}

/// Which example kernels the NPU back end compiles (each also run against the interpreter at
/// small sizes), and why it refuses the others.
#[test]
fn every_example_kernel_compiles_or_is_refused_as_listed() {
    let m = Machine::load("ascend-like").unwrap();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    // ResNet-50's layers compile too (at full size: not run against the interpreter here,
    // `npu_conv.rs` runs their kinds at small sizes)
    let resnet: Vec<String> = std::fs::read_dir(format!("{root}/resnet50"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(resnet.len(), 13, "{resnet:?}");
    let compiles = [
        "attention-causal.pk",
        "attention-f16.pk",
        "batched-matmul.pk",
        "channel-mean-f16.pk",
        "classifier.pk",
        "column-mean-f16.pk",
        "conv-bias-relu.pk",
        "conv-relu.pk",
        "conv-residual-relu.pk",
        "conv2d.pk",
        "depthwise-conv-nhwc.pk",
        "global-avgpool.pk",
        "layernorm-f16.pk",
        "layernorm-train.pk",
        "layernorm.pk",
        "bias-relu.pk",
        "matmul-bias-relu.pk",
        "matmul-f16.pk",
        "matmul-residual.pk",
        "matmul.pk",
        "maxpool.pk",
        "softmax-f16.pk",
        "softmax.pk",
    ];
    let mut seen = Vec::new();
    for dir in [
        root.to_string(),
        format!("{root}/polybench"),
        format!("{root}/resnet50"),
    ] {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for path in files
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "pk"))
        {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            for k in frontend::compile(&SourceFile::new(name.clone(), text)).unwrap() {
                let sizes: BTreeMap<String, i64> = k
                    .params
                    .iter()
                    .map(|p| (p.name.clone(), p.default.unwrap_or(1)))
                    .collect();
                let result = compile(&k, &sizes, &m, true);
                let listed = compiles.contains(&name.as_str()) || resnet.contains(&name);
                match (listed, result) {
                    (true, Ok(_)) if resnet.contains(&name) => {}
                    (true, Ok(_)) => differential_small(&k, &m),
                    (false, Err(NpuError::Unsupported(why))) => assert!(!why.is_empty()),
                    (want, got) => panic!(
                        "{name}: expected {}, got {got:?}",
                        if want { "a program" } else { "a refusal" }
                    ),
                }
                seen.push(name.clone());
            }
        }
    }
    assert!(seen.len() >= 56, "{seen:?}");
}

/// The strips schedule with sizes forced.
fn strips(tm: i64, tn: i64, tk: i64, strips: i64, chunk: i64, halves: i64, last: i64) -> Schedule {
    Schedule::Strips(Strips {
        tm,
        tn,
        tk,
        strips,
        chunk,
        halves,
        ring: 2,
        last,
    })
}

#[test]
fn strips_with_edge_tiles_and_an_f16_result_match_on_both_presets() {
    // 130 x 208 x 140 in 64 x 64 tiles of 4 strips: the last row band has 2 rows (one
    // strip, one half), the last column 16 columns, the last step 16 of 32 K values; two
    // tiles per core, the last two steps strip by strip
    let sizes = [("M", 130), ("N", 208), ("K", 140)];
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        let forced = strips(64, 64, 32, 4, 3, 2, 2);
        let (err, _) = differential_with(GEMM_F16, &sizes, machine, Some(forced));
        assert!(err <= F16_RESULT, "{machine}: {err:e}");
    }
    // C's rows 42 bytes apart: the last tile's strips are stored in parts that start on GM
    // blocks only (32 rows, not 8 and 24)
    let forced = strips(32, 32, 16, 1, 4, 1, 2);
    let sizes = [("M", 40), ("N", 21), ("K", 50)];
    let (err, _) = differential_with(GEMM_F16, &sizes, "ascend-like", Some(forced));
    assert!(err <= F16_RESULT, "{err:e}");
    // a single column of tiles wider than C (70 columns: rows off the 32-byte blocks)
    let forced = strips(32, 80, 32, 2, 3, 1, 1);
    let (err, _) = differential_with(
        GEMM_F16,
        &[("M", 100), ("N", 70), ("K", 90)],
        "ascend-like",
        Some(forced),
    );
    assert!(err <= F16_RESULT, "{err:e}");
}

#[test]
fn strips_over_several_bands_per_core_match() {
    // 384 x 64 in 32 x 32 tiles: 24 tiles, 3 per core, so that cores change row band in
    // the middle (A's band reloaded behind "band free") and some last tiles load A
    let sizes = [("M", 384), ("N", 64), ("K", 200)];
    for forced in [
        strips(32, 32, 32, 2, 3, 2, 0),
        strips(32, 32, 32, 2, 7, 2, 2),
    ] {
        let (err, _) = differential_with(GEMM, &sizes, "ascend-like", Some(forced));
        assert!(err <= tolerance(ElemType::F32), "{forced:?}: {err:e}");
    }
}

#[test]
fn strips_of_a_batched_product_and_on_the_tiny_machine_match() {
    let (err, _) = differential_with(
        BMM,
        &[],
        "ascend-like",
        Some(strips(32, 64, 32, 2, 2, 2, 1)),
    );
    assert!(err <= tolerance(ElemType::F32), "{err:e}");
    let forced = strips(32, 32, 16, 2, 3, 2, 1);
    let (err, _) = differential_with(
        GEMM,
        &[("M", 50), ("N", 40), ("K", 70)],
        "mini",
        Some(forced),
    );
    assert!(err <= tolerance(ElemType::F32), "{err:e}");
}

/// An example kernel's text.
/// `text` compiled at `sizes` for `machine` by the model's choice and simulated on random
/// inputs: the kernel, the memory with the program's outputs, the cycles, the prediction
/// and the schedule.
fn simulated(
    text: &str,
    sizes: &[(&str, i64)],
    machine: &str,
) -> (Kernel, Memory, u64, f64, Schedule) {
    let k = kernel(text);
    let fixed: BTreeMap<String, i64> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let params = ParamValues::resolve(&k, &fixed, &BTreeMap::new()).unwrap();
    let all: BTreeMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
    let m = Machine::load(machine).unwrap();
    let compiled = compile(&k, &all, &m, true).unwrap();
    let memory = Memory::random(&k, &params, 7).unwrap();
    let sim = simulate(&compiled, &k, &memory, &m).unwrap();
    let codegen::npu::Plan::Matmul {
        schedule,
        predicted,
        ..
    } = compiled.plan
    else {
        panic!("not a matrix product: {:?}", compiled.plan)
    };
    (k, sim.memory, sim.cycles, predicted, schedule)
}

/// docs/npu-backend.md, "Performance": the 1024^3 f16 product (`examples/matmul-f16.pk`)
/// takes the strips schedule and at most the hand-written `examples/npu/gemm.npu`'s 38,547
/// cycles, 85.0% of the cube roofline on `ascend-like` (the simulator is deterministic, so
/// this guards the schedule and the model's choice against regressions); its values match
/// an f64 reference of the same f16 inputs within half an f16 ulp and a little, on every
/// 37th row.
#[test]
fn the_1024_cube_f16_product_reaches_85_percent_of_the_cube_roofline() {
    let (_, memory, cycles, predicted, schedule) =
        simulated(&example("matmul-f16.pk"), &[], "ascend-like");
    assert!(matches!(schedule, Schedule::Strips(_)), "{schedule:?}");
    let roofline = (1024 * 1024 * 1024 / (16 * 16 * 16) / 8) as f64;
    println!(
        "1024^3 f16: {cycles} cycles, {:.2}% of the cube roofline; predicted {predicted:.0}",
        100.0 * roofline / cycles as f64
    );
    assert!(cycles <= 38_547, "{cycles} cycles");
    assert!(roofline / cycles as f64 >= 0.85, "{cycles} cycles");
    let values = |name: &str| memory.array(name).unwrap().values().to_vec();
    let (a, b, c) = (values("A"), values("B"), values("C"));
    for i in (0..1024).step_by(37) {
        for j in 0..1024 {
            let want: f64 = (0..1024).map(|k| a[i * 1024 + k] * b[k * 1024 + j]).sum();
            let got = c[i * 1024 + j];
            assert!(
                (got - want).abs() <= want.abs() / 1024.0 + 1e-3,
                "C[{i}, {j}] = {got}, want {want}"
            );
        }
    }
}

/// The model's prediction against the simulator, on products of several shapes on both
/// presets: within 6% (docs/npu-backend.md gives the table this prints).
#[test]
fn the_model_predicts_the_simulated_cycles() {
    let text = example("matmul-f16.pk");
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        for (m, n, k) in [
            (512, 512, 512),
            (256, 256, 256),
            (130, 208, 140),
            (2048, 256, 512),
        ] {
            let (_, _, cycles, predicted, schedule) =
                simulated(&text, &[("M", m), ("N", n), ("K", k)], machine);
            let err = (predicted - cycles as f64) / cycles as f64;
            println!(
                "{m} x {n} x {k} on {machine}: predicted {predicted:.0}, simulated {cycles} ({:+.1}%), {schedule:?}",
                100.0 * err
            );
            assert!(err.abs() <= 0.06, "{m} x {n} x {k} on {machine}: {err:+.3}");
        }
    }
}

#[test]
fn conversion_and_relu_epilogues_match_the_interpreter() {
    let product = |out: &str, epilogue: &str| {
        format!(
            "kernel e(A: f16[M, K], B: f16[K, N]) -> (C: {out}[M, N]) params M = 70, N = 48, K = 90
            {{ let acc: f32[M, N]; acc[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]); C[i, j] = {epilogue}; }}"
        )
    };
    for (out, epilogue, tol) in [
        ("f16", "max(f16(acc[i, j]), 0.0)", F16_RESULT),
        ("f16", "f16(max(acc[i, j], 0.0))", F16_RESULT),
        ("f32", "max(0.0, acc[i, j])", tolerance(ElemType::F32)),
        // bf16 keeps 8 bits: one ulp is 2^-7 of the largest value
        ("bf16", "bf16(acc[i, j])", 1e-3 + 1.0 / 128.0),
    ] {
        let text = product(out, epilogue);
        for machine in ["ascend-like", "mini"] {
            let (err, _) = differential(&text, &[], machine);
            assert!(err <= tol, "{epilogue} on {machine}: {err:e}");
        }
    }
}

/// A product with `epilogue` as its third statement, C of type `out`, `inputs` declared
/// after A and B.
fn with_epilogue(inputs: &str, out: &str, epilogue: &str) -> String {
    format!(
        "kernel e(A: f16[M, K], B: f16[K, N]{inputs}) -> (C: {out}[M, N]) params M = 70, N = 48, K = 90
        {{ let acc: f32[M, N]; acc[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]); C[i, j] = {epilogue}; }}"
    )
}

/// Element-wise epilogues the copy out of L0C cannot compute run on the vector unit on each
/// tile in UB: a bias per column (f16 or f32), ReLU after it, a scale, a scalar input, a
/// conversion after them, inputs of the output's shape (a residual, two of them); each
/// matches the interpreter on three presets (two inputs of the output's shape fit no tile
/// of `mini`), in the model's schedule and in a forced ring schedule.
#[test]
fn vector_epilogues_match_the_interpreter() {
    let f32_result = tolerance(ElemType::F32);
    for (inputs, out, epilogue, tol) in [
        (
            ", bias: f16[N]",
            "f16",
            "f16(max(acc[i, j] + f32(bias[j]), 0.0))",
            F16_RESULT,
        ),
        (", bias: f32[N]", "f32", "acc[i, j] + bias[j]", f32_result),
        ("", "f16", "f16(acc[i, j] * 0.5)", F16_RESULT),
        (
            ", alpha: f32, bias: f32[N]",
            "f32",
            "max(alpha * acc[i, j] - bias[j], 0.0)",
            f32_result,
        ),
        (
            ", bias: f16[N]",
            "bf16",
            "bf16(min(acc[i, j], f32(bias[j])))",
            1e-3 + 1.0 / 128.0,
        ),
        // a residual, loaded with each span of the tile
        (", R: f32[M, N]", "f32", "acc[i, j] + R[i, j]", f32_result),
        (
            ", bias: f16[N], R: f16[M, N], S: f32[M, N]",
            "f16",
            "f16(max(acc[i, j] + f32(bias[j]) + f32(R[i, j]), 0.0) * S[i, j])",
            F16_RESULT,
        ),
    ] {
        let text = with_epilogue(inputs, out, epilogue);
        // (two tiles of inputs besides the sums fit no tile in `mini`'s 4 KiB of UB)
        let tiny = !inputs.contains("S:");
        let machines = ["ascend-like", "ascend-like-halfgm", "mini"];
        for machine in machines.into_iter().filter(|m| tiny || *m != "mini") {
            let (err, _) = differential(&text, &[], machine);
            assert!(err <= tol, "{epilogue} on {machine}: {err:e}");
        }
        let ring = Schedule::Ring(Ring {
            tm: 32,
            tn: 16,
            tk: 32,
            kc: 64,
            panel: false,
            split: 1,
        });
        let (err, _) = differential_with(&text, &[], "ascend-like", Some(ring));
        assert!(err <= tol, "{epilogue} in a ring: {err:e}");
    }
    let batched = "kernel b(A: f16[NB, M, K], B: f16[NB, K, N], bias: f32[N]) -> (C: f32[NB, M, N])
        params NB = 3, M = 40, N = 32, K = 50
        { let acc: f32[NB, M, N]; acc[b, i, j] = sum(k) f32(A[b, i, k]) * f32(B[b, k, j]);
          C[b, i, j] = acc[b, i, j] + bias[j]; }";
    let (err, _) = differential(batched, &[], "ascend-like");
    assert!(err <= f32_result, "batched: {err:e}");
    let residual = batched
        .replace("bias: f32[N]", "R: f32[NB, M, N]")
        .replace("+ bias[j]", "+ R[b, i, j]");
    let (err, _) = differential(&residual, &[], "ascend-like");
    assert!(err <= f32_result, "batched with a residual: {err:e}");
}

/// Fused, a product's f32 sums never reach GM: matmul + bias + ReLU moves less GM traffic
/// than the product storing its sums followed by the epilogue reading them back, by twice
/// the sums' size, and declares no tensor for them.
#[test]
fn a_fused_epilogue_keeps_the_sums_out_of_gm() {
    let m = Machine::load("ascend-like").unwrap();
    let n = 256;
    let traffic = |file: &str| {
        let k = &frontend::compile(&SourceFile::new(file.to_string(), example(file)))
            .unwrap()
            .remove(0);
        let fixed = BTreeMap::from([
            ("M".to_string(), n),
            ("N".to_string(), n),
            ("K".to_string(), n),
        ]);
        let sizes: BTreeMap<String, i64> = (k.params.iter())
            .map(|p| (p.name.clone(), fixed[&p.name]))
            .collect();
        let params = ParamValues::resolve(k, &sizes, &BTreeMap::new()).unwrap();
        let compiled = compile(k, &sizes, &m, true).unwrap();
        let names: Vec<&str> = (compiled.program.tensors.iter())
            .map(|t| t.name.as_str())
            .collect();
        let memory = Memory::random(k, &params, 1).unwrap();
        let sim = simulate(&compiled, k, &memory, &m).unwrap();
        (sim.report.gm_bytes, names.join(" "))
    };
    let (fused, tensors) = traffic("matmul-bias-relu.pk");
    assert_eq!(tensors, "A B C bias", "the sums have no GM tensor");
    let (product, _) = traffic("matmul.pk");
    let (epilogue, _) = traffic("bias-relu.pk");
    let sums = (n * n * 4) as u64;
    assert!(
        fused + 2 * sums <= product + epilogue,
        "fused {fused}, unfused {product} + {epilogue}"
    );
}

#[test]
fn epilogues_outside_both_units_reach_are_refused() {
    let m = Machine::load("ascend-like").unwrap();
    let refuse = |decl: &str, epilogue: &str| {
        let text = format!(
            "kernel e(A: f16[M, K], B: f16[K, N]{decl}) params M = 32, N = 32, K = 32
            {{ {} acc[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]); {epilogue} }}",
            if decl.contains("acc") {
                ""
            } else {
                "let acc: f32[M, N];"
            }
        );
        let k = kernel(&text);
        let sizes = BTreeMap::from([
            ("M".to_string(), 32),
            ("N".to_string(), 32),
            ("K".to_string(), 32),
        ]);
        match compile(&k, &sizes, &m, true) {
            Err(NpuError::Unsupported(why)) => why,
            other => panic!("{epilogue}: {other:?}"),
        }
    };
    // a per-row vector of f16 (its span of 8 rows would start mid-block)
    let why = refuse(
        ", r: f16[M]) -> (C: f32[M, N]",
        "C[i, j] = acc[i, j] + f32(r[i]);",
    );
    assert!(
        why.contains("one value per row, but not an f32 input"),
        "{why}"
    );
    let why = refuse(
        ", R: inout f32[M, N]) -> (C: f32[M, N]",
        "C[i, j] = acc[i, j] + R[i, j];",
    );
    assert!(
        why.contains("neither the accumulator nor an input"),
        "{why}"
    );
    let why = refuse(") -> (C: f16[M, N]", "C[i, j] = f16(acc[j, i]);");
    assert!(why.contains("at the element it writes"), "{why}");
    let why = refuse(
        ") -> (C: f16[M, N]",
        "for i in 0..M - 1 { for j in 0..N { C[i, j] = f16(acc[i, j]); } }",
    );
    assert!(why.contains("every element"), "{why}");
    let why = refuse(
        ") -> (acc: f32[M, N], C: f16[M, N]",
        "C[i, j] = f16(acc[i, j]);",
    );
    assert!(why.contains("not a temporary"), "{why}");
    let why = refuse(") -> (C: i32[M, N]", "C[i, j] = i32(acc[i, j]);");
    assert!(why.contains("truncates"), "{why}");
}

/// A per-row f32 vector in the epilogue (a scale per token, `C = acc * s[i] * t[j]`): each
/// span's rows of it are loaded with the span, into a ring of two slots; the model's
/// schedule (the strips schedule's parts of 8 rows included) and a forced ring, batches,
/// both presets. A convolution's per-pixel vector is refused.
#[test]
fn a_per_row_vector_in_the_epilogue_matches() {
    let scale = with_epilogue(
        ", s: f32[M], t: f32[N]",
        "f16",
        "f16(acc[i, j] * s[i] * t[j])",
    );
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        for sizes in [
            [("M", 70), ("N", 48), ("K", 90)],
            [("M", 1), ("N", 1000), ("K", 64)],
            [("M", 300), ("N", 256), ("K", 128)],
            [("M", 40), ("N", 64), ("K", 3000)],
        ] {
            let (err, _) = differential(&scale, &sizes, machine);
            assert!(err <= F16_RESULT, "{machine} {sizes:?}: {err:e}");
        }
    }
    let ring = Schedule::Ring(Ring {
        tm: 32,
        tn: 32,
        tk: 32,
        kc: 64,
        panel: true,
        split: 1,
    });
    let sizes = [("M", 70), ("N", 80), ("K", 90)];
    let (err, _) = differential_with(&scale, &sizes, "ascend-like", Some(ring));
    assert!(err <= F16_RESULT, "{err:e}");
    let batched =
        "kernel b(A: f16[NB, M, K], B: f16[NB, K, N], s: f32[NB, M]) -> (C: f32[NB, M, N])
        params NB = 3, M = 40, N = 32, K = 48
        { let acc: f32[NB, M, N]; acc[b, i, j] = sum(k) f32(A[b, i, k]) * f32(B[b, k, j]);
          C[b, i, j] = acc[b, i, j] * s[b, i]; }";
    let (err, _) = differential(batched, &[], "ascend-like");
    assert!(err <= tolerance(ElemType::F32), "{err:e}");
}

/// Vector epilogues on tiles that do not divide C's columns (C's columns off multiples of
/// 16: ResNet-50's classifier, 1000 classes): the last tile's columns past C's are computed
/// on zeroed padding and never stored; a bias, a residual, one row, tiles of whole rows.
#[test]
fn vector_epilogues_on_columns_off_multiples_of_16_match() {
    let bias = with_epilogue(", bias: f32[N]", "f32", "acc[i, j] + bias[j]");
    let residual = with_epilogue(
        ", R: f16[M, N]",
        "f16",
        "f16(max(acc[i, j] + f32(R[i, j]), 0.0))",
    );
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        for (text, sizes) in [
            (&bias, [("M", 32), ("N", 40), ("K", 32)]),
            (&bias, [("M", 1), ("N", 1000), ("K", 64)]),
            (&bias, [("M", 48), ("N", 1000), ("K", 64)]),
            (&residual, [("M", 70), ("N", 200), ("K", 48)]),
            (&residual, [("M", 1), ("N", 1000), ("K", 32)]),
        ] {
            let (err, _) = differential(text, &sizes, machine);
            assert!(err <= F16_RESULT, "{machine} {sizes:?}: {err:e}");
        }
    }
}

mod random_products {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Random sizes of an f16 result, whose rows are off GM's blocks unless its columns
        /// are a multiple of 16 (up to 1100: tiles of whole rows), on both presets: the
        /// program matches, or no tile fits and the product is refused with that reason.
        #[test]
        fn any_f16_product_matches_or_is_refused(
            m in 1i64..80, n in 1i64..1100, k in 1i64..100, halfgm in any::<bool>(),
        ) {
            let machine = if halfgm { "ascend-like-halfgm" } else { "ascend-like" };
            let kk = kernel(GEMM_F16);
            let sizes = BTreeMap::from([("M".to_string(), m), ("N".to_string(), n), ("K".to_string(), k)]);
            let mach = Machine::load(machine).unwrap();
            match compile(&kk, &sizes, &mach, true) {
                Ok(_) => {
                    let (err, _) = differential(GEMM_F16, &[("M", m), ("N", n), ("K", k)], machine);
                    prop_assert!(err <= F16_RESULT, "{err:e}");
                }
                Err(NpuError::Unsupported(why)) => prop_assert!(why.contains("no tile"), "{why}"),
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }

        /// Random sizes on a full and a tiny machine: the program matches the interpreter,
        /// or no tile fits and the product is refused with that reason.
        #[test]
        fn any_product_matches_or_is_refused(
            m in 1i64..70, n in 1i64..70, k in 1i64..160, tiny in any::<bool>()
        ) {
            let machine = if tiny { "mini" } else { "ascend-like" };
            let kk = kernel(GEMM);
            let sizes = BTreeMap::from([("M".to_string(), m), ("N".to_string(), n), ("K".to_string(), k)]);
            let mach = Machine::load(machine).unwrap();
            match compile(&kk, &sizes, &mach, true) {
                Ok(_) => {
                    let (err, _) = differential(GEMM, &[("M", m), ("N", n), ("K", k)], machine);
                    prop_assert!(err <= tolerance(ElemType::F32), "{err:e}");
                }
                Err(NpuError::Unsupported(why)) => prop_assert!(why.contains("no tile"), "{why}"),
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }

        /// Random sizes with a residual (f32, or f16 into an f16 result) or a bias and ReLU
        /// on both presets, in the model's schedule, C's columns any number (the last
        /// tile's past them computed on padding): the program matches, or no tile fits
        /// and the product is refused with that reason.
        #[test]
        fn any_product_with_a_residual_matches_or_is_refused(
            m in 1i64..100, n in 1i64..100, k in 1i64..160, f16 in any::<bool>(),
            halfgm in any::<bool>(), bias in any::<bool>(),
        ) {
            let machine = if halfgm { "ascend-like-halfgm" } else { "ascend-like" };
            let (text, tol) = match (f16, bias) {
                (_, true) => (
                    with_epilogue(", b: f16[N]", "f16", "f16(max(acc[i, j] + f32(b[j]), 0.0))"),
                    F16_RESULT,
                ),
                (true, false) => (
                    with_epilogue(", R: f16[M, N]", "f16", "f16(acc[i, j] + f32(R[i, j]))"),
                    F16_RESULT,
                ),
                (false, false) => (
                    with_epilogue(", R: f32[M, N]", "f32", "acc[i, j] + R[i, j]"),
                    tolerance(ElemType::F32),
                ),
            };
            let kk = kernel(&text);
            let sizes = BTreeMap::from([("M".to_string(), m), ("N".to_string(), n), ("K".to_string(), k)]);
            let mach = Machine::load(machine).unwrap();
            match compile(&kk, &sizes, &mach, true) {
                Ok(_) => {
                    let (err, _) = differential(&text, &[("M", m), ("N", n), ("K", k)], machine);
                    prop_assert!(err <= tol, "{err:e}");
                }
                Err(NpuError::Unsupported(why)) => prop_assert!(why.contains("no tile"), "{why}"),
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }

        /// Random sizes and random strips schedules (the model's choice or not, repaired to
        /// meet `Strips::check`'s conditions where that is simple), f32 or f16 result, on a
        /// full and a tiny machine: the program matches.
        #[test]
        fn any_fitting_strips_schedule_matches(
            m in 1i64..150, n in 1i64..150, k in 1i64..200, f16 in any::<bool>(), tiny in any::<bool>(),
            strips in 0usize..3, rows in 1i64..5, cols in 1i64..9, tk in 1i64..5,
            chunk in 1i64..9, halves in 1i64..3, ring in 2i64..4, last in 0i64..4,
        ) {
            let machine = if tiny { "mini" } else { "ascend-like" };
            let text = if f16 { GEMM_F16 } else { GEMM };
            // mini's L0 holds 512 A or B values a slot: one or two strips of 16 rows, 16 deep
            let (strips, rows, tk, k) = if tiny {
                ([1, 2, 2][strips], 1, 1, 1 + k % 100)
            } else {
                ([1, 2, 4][strips], rows, tk, k)
            };
            let tk = (16 * tk).min((k + 15) / 16 * 16);
            let steps = (k + tk - 1) / tk;
            let ring = if halves == 2 && strips > 1 { 2 } else { ring };
            let s = Strips {
                tm: 16 * strips * rows,
                tn: 16 * cols,
                tk,
                strips,
                chunk: if chunk <= ring { steps } else { chunk.min(steps) },
                halves: if strips > 1 { halves } else { 1 },
                ring,
                last: last.min(steps / 2),
            };
            let kk = kernel(text);
            let sizes = BTreeMap::from([("M".to_string(), m), ("N".to_string(), n), ("K".to_string(), k)]);
            let mach = Machine::load(machine).unwrap();
            let mm = recognise::matmul(&kk, &sizes, &Target::of_npu(&mach)).unwrap();
            let (cores, ids) = (mach.cores as i64, mach.flag_ids as i64);
            prop_assume!(s.fits(&mm, &mach) && s.check(&mm, cores, ids).is_ok());
            prop_assume!(matmul::program(&mm, &mach, Schedule::Strips(s)).is_ok());
            let forced = Some(Schedule::Strips(s));
            let (err, _) = differential_with(text, &[("M", m), ("N", n), ("K", k)], machine, forced);
            let tol = if f16 { F16_RESULT } else { tolerance(ElemType::F32) };
            prop_assert!(err <= tol, "{s:?}: {err:e}");
        }
    }
}

/// C's rows off GM's 32-byte blocks and wider than the usual tiles (an f16 C of 1000
/// columns: ResNet-50's classifier): tiles of whole rows (1008 columns wide, which no two
/// cores share a block of), or, for a single row, tiles of any width; both presets.
#[test]
fn c_rows_off_gm_blocks_are_stored_by_tiles_of_whole_rows() {
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        let (err, schedule) = differential(GEMM_F16, &[("M", 64), ("N", 1000), ("K", 96)], machine);
        assert!(err <= F16_RESULT, "{machine}: {err:e}");
        assert_eq!(schedule.tile().1, 1008, "{machine}: {schedule:?}");
        let (err, schedule) = differential(GEMM_F16, &[("M", 1), ("N", 1000), ("K", 200)], machine);
        assert!(err <= F16_RESULT, "{machine}: {err:e}");
        assert!(schedule.tile().1 < 1000, "{machine}: {schedule:?}");
        // 3001 columns: a whole row does not fit L0B beside a step of 16
        let k = kernel(GEMM_F16);
        let (_, all) = sizes_of(&k, &[("M", 77), ("N", 3001), ("K", 33)]);
        let m = Machine::load(machine).unwrap();
        let why = compile(&k, &all, &m, true).unwrap_err().to_string();
        assert!(
            why.contains(
                "only tiles of whole rows may store them, and a tile 3008 wide does not fit"
            ),
            "{why}"
        );
    }
}
