//! The NPU back end, differentially: each compiled program runs in the simulator (strict
//! semantics, race detector) on the interpreter's inputs and must give its outputs within
//! the documented tolerance of a reordered f32 sum; the timing oracle must agree on the
//! values; kernels outside the back end's reach are refused with a reason.

use codegen::npu::matmul::{self, Tiles};
use codegen::npu::{compile, recognise, simulate, NpuError};
use codegen::runner::tolerance;
use frontend::ir::{ElemType, Kernel};
use frontend::SourceFile;
use npu_sim::Machine;
use poly::interp::{Interpreter, Memory, ParamValues};
use scheduler::target::Target;
use std::collections::BTreeMap;

fn kernel(text: &str) -> Kernel {
    frontend::compile(&SourceFile::new("k.pk", text.to_string()))
        .unwrap()
        .remove(0)
}

/// Compiles `text` at `sizes` for `machine`, runs it on the interpreter's random inputs and
/// returns the largest normwise error of each output, with the tiles chosen.
fn differential(text: &str, sizes: &[(&str, i64)], machine: &str) -> (f64, Tiles) {
    differential_with(text, sizes, machine, None)
}

/// [`differential`] with the tiles forced (`None`: the model's).
fn differential_with(
    text: &str,
    sizes: &[(&str, i64)],
    machine: &str,
    force: Option<Tiles>,
) -> (f64, Tiles) {
    let (worst, plan) = run(text, sizes, machine, force);
    let codegen::npu::Plan::Matmul { tiles, .. } = plan else {
        panic!("not a matrix product: {plan:?}")
    };
    (worst, tiles)
}

/// [`differential_with`] for any kind of program: the error and the plan.
fn run(
    text: &str,
    sizes: &[(&str, i64)],
    machine: &str,
    force: Option<Tiles>,
) -> (f64, codegen::npu::Plan) {
    let k = kernel(text);
    let fixed: BTreeMap<String, i64> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let params = ParamValues::resolve(&k, &fixed, &BTreeMap::new()).unwrap();
    let all: BTreeMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
    let m = Machine::load(machine).unwrap();
    let mut compiled = compile(&k, &all, &m, true).unwrap();
    if let Some(tiles) = force {
        let mm = recognise::matmul(&k, &all, &Target::of_npu(&m)).unwrap();
        let elems = [&mm.a, &mm.b, &mm.c].map(|o| k.array(o.tensor).elem);
        compiled.program = matmul::program(&mm, elems, m.cores as i64, tiles).unwrap();
        if let codegen::npu::Plan::Matmul { tiles: t, .. } = &mut compiled.plan {
            *t = tiles;
        }
    }
    let mut memory = Memory::random(&k, &params, 7).unwrap();
    let sim = simulate(&compiled, &k, &memory, &m)
        .unwrap_or_else(|e| panic!("{e}\n{}", npu_sim::print(&compiled.program)));
    let inputs = codegen::npu::inputs(&k, &memory).unwrap();
    Interpreter::new(&k, &params)
        .unwrap()
        .run_original(&mut memory)
        .unwrap();
    let mut worst: f64 = 0.0;
    for array in k.arrays.iter().filter(|a| a.role.is_output()) {
        let want = memory.array(&array.name).unwrap().values();
        let got = sim.memory.array(&array.name).unwrap().values();
        let scale = want
            .iter()
            .fold(0.0f64, |a, v| a.max(v.abs()))
            .max(f64::MIN_POSITIVE);
        let err = (got.iter().zip(want)).fold(0.0f64, |a, (g, w)| a.max((g - w).abs())) / scale;
        worst = worst.max(err);
    }
    // the timing oracle: other machines, the same values
    let report = npu_sim::oracle::check_timing(
        &compiled.program,
        &m,
        &inputs,
        1,
        npu_sim::Semantics::Strict,
        4,
    );
    assert!(report.agreed(), "timing oracle: {report:?}");
    (worst, compiled.plan)
}

const BMM: &str = "kernel bmm(A: f16[NB, M, K], B: f16[NB, K, N]) -> (C: f32[NB, M, N])
  params NB = 2, M = 64, N = 64, K = 64
{ C[b, i, j] = sum(k) f32(A[b, i, k]) * f32(B[b, k, j]); }";

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
    let tiles = Tiles {
        tm: 16,
        tn: 32,
        tk: 32,
        kc: 64,
        panel: true,
    };
    for sizes in [
        [("M", 96), ("N", 104), ("K", 150)],
        [("M", 40), ("N", 64), ("K", 130)],
    ] {
        let (err, _) = differential_with(GEMM, &sizes, "ascend-like", Some(tiles));
        assert!(err <= tolerance(ElemType::F32), "{sizes:?}: {err:e}");
    }
}

#[test]
fn tiles_never_store_into_a_shared_gm_block() {
    // rows of 100 f32 values start off 32-byte blocks: the model keeps whole rows per tile,
    // and forced narrower tiles are refused rather than racing
    let (err, tiles) = differential(GEMM, &[("M", 96), ("N", 100), ("K", 150)], "ascend-like");
    assert!(err <= tolerance(ElemType::F32), "{err:e}");
    assert!(tiles.tn >= 100, "{tiles:?}");
    let k = kernel(GEMM);
    let sizes = BTreeMap::from([
        ("M".to_string(), 96),
        ("N".to_string(), 100),
        ("K".to_string(), 150),
    ]);
    let m = Machine::load("ascend-like").unwrap();
    let mm = recognise::matmul(&k, &sizes, &Target::of_npu(&m)).unwrap();
    let narrow = Tiles {
        tm: 16,
        tn: 32,
        tk: 32,
        kc: 64,
        panel: true,
    };
    let elems = [&mm.a, &mm.b, &mm.c].map(|o| k.array(o.tensor).elem);
    let refused = matmul::program(&mm, elems, 8, narrow);
    assert!(
        matches!(refused, Err(NpuError::Unsupported(_))),
        "{refused:?}"
    );
}

#[test]
fn a_machine_with_tiny_buffers_gets_tiles_that_fit() {
    let (err, tiles) = differential(GEMM, &[("M", 50), ("N", 40), ("K", 70)], "mini");
    assert!(err <= tolerance(ElemType::F32), "{err:e}");
    assert!(tiles.tk < 64, "{tiles:?}");
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
        matches!(refuse(f64mm, true), NpuError::Unsupported(ref w) if w.contains("matches no matrix intrinsic"))
    );
    let softmax = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/softmax.pk"
    ))
    .unwrap();
    assert!(matches!(refuse(&softmax, true), NpuError::Unsupported(_)));
}

/// Which example kernels the NPU back end compiles (the ResNet-50 layers among them), and
/// why it refuses the others; the convolution example also runs against the interpreter.
#[test]
fn every_example_kernel_compiles_or_is_refused_as_listed() {
    let m = Machine::load("ascend-like").unwrap();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let resnet: Vec<String> = std::fs::read_dir(format!("{root}/resnet50"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(resnet.len(), 13, "{resnet:?}");
    let compiles = ["batched-matmul.pk", "matmul.pk", "conv2d.pk"];
    let differential = ["conv2d.pk"];
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
                    (true, Ok(_)) if differential.contains(&name.as_str()) => {
                        let text = std::fs::read_to_string(&path).unwrap();
                        let (err, plan) = run(&text, &[], "ascend-like", None);
                        assert!(err <= tolerance(ElemType::F32), "{name}: {err:e}");
                        assert!(matches!(plan, codegen::npu::Plan::Conv { .. }), "{plan:?}");
                    }
                    (true, Ok(_)) => {}
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
    assert!(seen.len() >= 51, "{seen:?}");
}

mod random_products {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

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
    }
}
