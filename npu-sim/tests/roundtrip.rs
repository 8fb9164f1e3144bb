//! The printer and the parser agree: `parse(print(p)) == p` for random programs built with the
//! builder, and for the hand-written examples; the printed gemm is a golden file.

use npu_sim::builder::Builder;
use npu_sim::program::*;
use npu_sim::{assemble, print};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn expr(rng: &mut ChaCha8Rng, scope: &[Expr], depth: u32) -> Expr {
    if depth == 0 || rng.random_bool(0.3) {
        return match rng.random_range(0..4) {
            0 if !scope.is_empty() => scope[rng.random_range(0..scope.len())].clone(),
            1 => Expr::Core,
            2 => Expr::Cores,
            _ => Expr::Const(rng.random_range(-40..40)),
        };
    }
    let sub = |rng: &mut ChaCha8Rng| Box::new(expr(rng, scope, depth - 1));
    match rng.random_range(0..9) {
        0 => Expr::Add(sub(rng), sub(rng)),
        1 => Expr::Sub(sub(rng), sub(rng)),
        2 => Expr::Mul(rng.random_range(-5..6), sub(rng)),
        3 => Expr::Div(sub(rng), rng.random_range(1..9)),
        4 => Expr::Mod(sub(rng), rng.random_range(1..9)),
        5 => Expr::Min(sub(rng), sub(rng)),
        6 => Expr::Max(sub(rng), sub(rng)),
        7 => Expr::Select(sub(rng), sub(rng), sub(rng)),
        _ => Expr::Cmp(CmpOp::ALL[rng.random_range(0..6)], sub(rng), sub(rng)),
    }
}

/// A size: usually a constant in `range`, sometimes an expression.
fn size(rng: &mut ChaCha8Rng, scope: &[Expr], range: std::ops::Range<i64>) -> Expr {
    if rng.random_bool(0.7) {
        Expr::Const(rng.random_range(range))
    } else {
        expr(rng, scope, 2)
    }
}

struct Decls {
    x: TensorId,
    ua: BufferId,
    ub: BufferId,
    l1: BufferId,
    l0a: BufferId,
    l0b: BufferId,
    l0c: BufferId,
}

fn instr(b: &mut Builder, rng: &mut ChaCha8Rng, d: &Decls, scope: &[Expr]) {
    let e = |rng: &mut ChaCha8Rng| expr(rng, scope, 3);
    let z = |rng: &mut ChaCha8Rng, range| size(rng, scope, range);
    let opt = |rng: &mut ChaCha8Rng| rng.random_bool(0.5).then(|| size(rng, scope, 0..300));
    if rng.random_bool(0.2) {
        let note = format!("S{} [i, j]", rng.random_range(0..9));
        b.origin(rng.random_bool(0.8).then_some(note.as_str()));
    }
    match rng.random_range(0..7) {
        0 => {
            let (dst, src) = (b.at(d.ua, [e(rng), e(rng)]), b.at(d.x, [e(rng), e(rng)]));
            let (count, len) = (z(rng, 1..4), z(rng, 1..64));
            b.push(Dma::new(dst, src, count, len).strides(z(rng, 1..99), z(rng, 1..99)));
        }
        1 => {
            // Every layout mode on a path it applies to.
            let (count, len) = (z(rng, 1..4), z(rng, 1..64));
            let (dst, src, mode) = match rng.random_range(0..3) {
                0 => (
                    b.at(d.l0a, [e(rng)]),
                    b.at(d.l1, [e(rng)]),
                    DmaMode::Transpose,
                ),
                1 => (
                    b.at(d.l1, [e(rng)]),
                    b.at(d.x, [e(rng), e(rng)]),
                    DmaMode::Nd2nz,
                ),
                _ => (
                    b.at(d.ua, [e(rng), e(rng)]),
                    b.at(d.l0c, [e(rng)]),
                    DmaMode::Nz2nd,
                ),
            };
            let dma = Dma::new(dst, src, count, len).strides(z(rng, 1..99), z(rng, 1..99));
            b.push(dma.mode(mode));
        }
        2 => {
            let (c, a, bb) = (
                b.at(d.l0c, [e(rng)]),
                b.at(d.l0a, [e(rng)]),
                b.at(d.l0b, [e(rng)]),
            );
            let init = e(rng);
            let mkn = (z(rng, 1..64), z(rng, 1..64), z(rng, 1..64));
            b.mmad(c, a, bb, mkn, init);
        }
        3 => {
            let (dst, a, c) = (
                b.at(d.ua, [e(rng), e(rng)]),
                b.at(d.ub, [e(rng), e(rng)]),
                b.at(d.ua, [e(rng), e(rng)]),
            );
            let op = match rng.random_range(0..8) {
                0 => VecOp::Binary {
                    op: BinaryOp::ALL[rng.random_range(0..6)],
                    a,
                    b: c,
                },
                1 => VecOp::Unary {
                    op: UnaryOp::ALL[rng.random_range(0..8)],
                    a,
                },
                2 => VecOp::Scalar {
                    op: ScalarOp::ALL[rng.random_range(0..4)],
                    a,
                    value: rng.random_range(-1e3..1e3),
                },
                3 => VecOp::Dup {
                    value: rng.random_range(-1e-3..1e-3),
                },
                4 => VecOp::Cmp {
                    op: CmpOp::ALL[rng.random_range(0..6)],
                    a,
                    b: c,
                },
                5 => VecOp::Select {
                    cond: c.clone(),
                    a,
                    b: c,
                },
                6 => VecOp::Reduce {
                    op: ReduceOp::ALL[rng.random_range(0..3)],
                    a,
                },
                _ => VecOp::Bcast { a },
            };
            let mut v = Vector::new(op, dst, z(rng, 1..255));
            if let Some(mask) = opt(rng) {
                v = v.mask(mask);
            }
            if let Some(rs) = opt(rng) {
                v = v.dst_stride(rs);
            }
            for k in 0..v.op.sources().len() {
                if let Some(rs) = opt(rng) {
                    v = v.src_stride(k, rs);
                }
            }
            b.push(v);
        }
        4 => {
            let pipes = Pipe::ALL;
            let src = pipes[rng.random_range(0..6)];
            let dst = *pipes
                .iter()
                .filter(|p| **p != src)
                .nth(rng.random_range(0..5))
                .unwrap();
            let id = match rng.random_bool(0.5) {
                true => Expr::Const(rng.random_range(0..8)),
                false => e(rng),
            };
            b.flag(rng.random_bool(0.5), src, dst, id);
        }
        5 => match rng.random_range(0..3) {
            0 => b.barrier(BarrierScope::All),
            1 => b.barrier(BarrierScope::Pipe(Pipe::ALL[rng.random_range(0..6)])),
            _ => b.sync_all(),
        },
        _ => {
            let (dst, src) = (b.at(d.l0a, [e(rng)]), b.at(d.l1, [e(rng)]));
            let sizes = Load3dSizes {
                h: z(rng, 1..9),
                w: z(rng, 1..9),
                c: z(rng, 1..9),
                kh: z(rng, 1..4),
                kw: z(rng, 1..4),
                stride: z(rng, 1..3),
                pad_top: z(rng, 0..2),
                pad_bottom: z(rng, 0..2),
                pad_left: z(rng, 0..2),
                pad_right: z(rng, 0..2),
                m_start: z(rng, 0..40),
                m_ext: z(rng, 1..4),
                k_start: z(rng, 0..40),
                k_ext: z(rng, 1..4),
            };
            b.load3d(dst, src, sizes);
        }
    }
}

fn block(
    b: &mut Builder,
    rng: &mut ChaCha8Rng,
    d: &Decls,
    scope: &mut Vec<Expr>,
    depth: u32,
    names: &mut u32,
) {
    for _ in 0..rng.random_range(1..5) {
        if depth < 3 && rng.random_bool(0.3) {
            *names += 1;
            let (lo, hi) = (expr(rng, scope, 2), expr(rng, scope, 2));
            let step = rng.random_range(1..4);
            b.for_loop(&format!("v{names}"), lo, hi, step, |b, v| {
                scope.push(v);
                block(b, rng, d, scope, depth + 1, names);
                scope.pop();
            });
        } else {
            instr(b, rng, d, scope);
        }
    }
}

fn random_program(seed: u64) -> Program {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b = Builder::new();
    let d = Decls {
        x: b.tensor("x", DType::F16, &[64, 64], Direction::In),
        ua: b.buffer("ua", Tier::Ub, DType::F16, &[2, 128]),
        ub: b.buffer_placed("ub", Tier::Ub, DType::F16, &[2, 128], Placement::At(1024)),
        l1: b.buffer("a1", Tier::L1, DType::F16, &[1024]),
        l0a: b.buffer("a0", Tier::L0a, DType::F16, &[256]),
        l0b: b.buffer("b0", Tier::L0b, DType::F16, &[256]),
        l0c: b.buffer("c0", Tier::L0c, DType::F32, &[256]),
    };
    b.tensor("y", DType::F16, &[64], Direction::InOut);
    block(&mut b, &mut rng, &d, &mut vec![], 0, &mut 0);
    b.finish().expect("the builder makes parseable programs")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn print_then_parse_is_the_identity(seed in any::<u64>()) {
        let p = random_program(seed);
        let text = print(&p);
        let q = assemble(&text).map_err(|d| TestCaseError::fail(d.render("printed.npu", &text)))?;
        prop_assert_eq!(&q, &p);
        // Origins are comments: the parser skips them, the builder keeps them.
        let uncommented: String = (text.lines())
            .filter(|l| !l.trim_start().starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        prop_assert_eq!(print(&q), uncommented);
        let mut origins = 0;
        p.for_each_instr(&mut |i| origins += i.origin.note().is_some() as usize);
        prop_assert_eq!(origins, text.lines().count() - print(&q).lines().count());
    }
}

#[test]
fn examples_round_trip_and_the_printed_gemm_is_stable() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/npu");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let src = std::fs::read_to_string(&path).unwrap();
        let p = assemble(&src).unwrap();
        let printed = print(&p);
        assert_eq!(assemble(&printed).unwrap(), p, "{}", path.display());
        if path.file_name().is_some_and(|n| n == "gemm.npu") {
            expect_test::expect_file!["golden/gemm.printed.npu"].assert_eq(&printed);
        }
    }
}
