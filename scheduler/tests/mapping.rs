//! Intrinsic mapping: the enumeration's counts, every candidate proved by Z3, wrong
//! mappings refuted by the right condition, counterexamples replayed, Z3 and isl agreeing.

use frontend::ir::Kernel;
use frontend::source::SourceFile;
use scheduler::mapping::conditions::Setup;
use scheduler::mapping::enumerate;
use scheduler::mapping::intrinsic::{bind, Intrinsic};
use scheduler::mapping::physical::{Layout, Mapping};
use scheduler::mapping::software::{Sizes, Software};
use scheduler::mapping::verify::{verify, Options, Outcome};
use scheduler::target::{Memory, Target};
use std::collections::BTreeMap;

const MMAD: &str = "kernel mmad_f16(A: f16[16, 16], B: f16[16, 16], C: inout f32[16, 16]) {
  for i1 in 0..16 { for i2 in 0..16 { for r1 in 0..16 {
    C[i1, i2] += f32(A[i1, r1]) * f32(B[r1, i2]);
  } } }
}";

fn compile(text: &str) -> Kernel {
    let file = SourceFile::new("test.pk", text.to_string());
    frontend::compile(&file).expect("compiles").remove(0)
}

fn mmad() -> Intrinsic {
    Intrinsic::new(compile(MMAD), &[Memory::L0a, Memory::L0b, Memory::L0c]).expect("intrinsic")
}

fn defaults(k: &Kernel) -> BTreeMap<String, i64> {
    k.params.iter().map(|p| (p.name.clone(), p.default.unwrap_or(1))).collect()
}

/// The mappings of the kernel's last statement (a reduction's update) and whether each is proved.
fn mappings(text: &str, allow: bool) -> Vec<(Vec<Vec<String>>, bool)> {
    let k = compile(text);
    let intr = mmad();
    let target = Target::npu("ascend-like").unwrap();
    let stmts = k.statements();
    let ctx = stmts.last().unwrap();
    let sw = Software::new(&k, ctx, Sizes::Concrete(defaults(&k)));
    let binding = bind(&intr, ctx.stmt, &k).expect("matches");
    enumerate::mappings(&sw, &intr, &binding)
        .into_iter()
        .map(|groups| {
            let names = groups.iter().map(|g| g.iter().map(|&l| sw.loops[l].var.clone()).collect()).collect();
            let m = Mapping::derive(&sw, &intr, &binding, groups).unwrap();
            let layout = Layout::new(&sw, &m.groups).unwrap();
            let setup = Setup { sw: &sw, intr: &intr, binding: &binding, mapping: &m, layout: &layout, target: &target, allow_reorder: allow };
            let r = verify(&setup, &Options::default());
            if !r.proved() {
                for v in &r.verdicts {
                    if let Outcome::Refuted(c) = &v.outcome {
                        eprintln!("{:?} {}: {}", names, v.condition, c.describe(&setup));
                    }
                }
            }
            (names, r.proved())
        })
        .collect()
}

const CONV1D: &str = "kernel conv1d(I: f16[N, C, H], Wt: f16[K, C, R]) -> (O: f32[N, K, H - R + 1])
  params N = 2, C = 5, H = 9, K = 3, R = 3
{ O[n, k, p] = sum(c, r) f32(I[n, c, p + r]) * f32(Wt[k, c, r]); }";

const CONV2D: &str = "kernel conv2d(I: f16[N, C, H, W], Wt: f16[K, C, R, S]) -> (O: f32[N, K, H - R + 1, W - S + 1])
  params N = 2, C = 3, H = 6, W = 7, K = 5, R = 3, S = 2
{ O[n, k, p, q] = sum(c, r, s) f32(I[n, c, p + r, q + s]) * f32(Wt[k, c, r, s]); }";

const CONV3D: &str = "kernel conv3d(I: f16[N, C, D, H, W], Wt: f16[K, C, T, R, S]) -> (O: f32[N, K, D - T + 1, H - R + 1, W - S + 1])
  params N = 1, C = 2, D = 4, H = 4, W = 5, K = 3, T = 2, R = 2, S = 3
{ O[n, k, d, p, q] = sum(c, t, r, s) f32(I[n, c, d + t, p + r, q + s]) * f32(Wt[k, c, t, r, s]); }";

const GEMM: &str = "kernel gemm(A: f16[M, K], B: f16[K, N]) -> (C: f32[M, N]) params M = 20, N = 18, K = 33
{ C[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]); }";

const BMM: &str = "kernel bmm(A: f16[G, M, K], B: f16[G, K, N]) -> (C: f32[G, M, N]) params G = 2, M = 20, N = 18, K = 33
{ C[g, i, j] = sum(k) f32(A[g, i, k]) * f32(B[g, k, j]); }";

#[test]
fn counts_match_amos_and_every_candidate_is_proved() {
    for (text, count) in [(GEMM, 1), (BMM, 1), (CONV1D, 6), (CONV2D, 35), (CONV3D, 180)] {
        let ms = mappings(text, true);
        assert_eq!(ms.len(), count, "{text}");
        assert!(ms.iter().all(|(_, ok)| *ok), "{ms:?}");
    }
}
