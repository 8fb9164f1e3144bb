//! Every instruction's values against a plain Rust reference, through whole small programs on
//! a one-core `mini` machine.

use npu_sim::program::DType;
use npu_sim::{assemble, run, Machine, TensorData};
use std::collections::HashMap;

/// Runs `body` with input tensors `a`, `b`, `c` (f64 values, given type, 1-D) and returns the
/// output tensor `d` (`n` elements of `out`).
fn sim(src: &str, inputs: &[(&str, DType, Vec<f64>)]) -> Vec<f64> {
    let p = assemble(src).unwrap_or_else(|d| panic!("{}", d.render("test.npu", src)));
    let mut m = Machine::preset("mini").unwrap();
    m.cores = 1;
    let ins: HashMap<String, TensorData> = inputs
        .iter()
        .map(|(n, dt, v)| {
            (
                n.to_string(),
                TensorData::from_values(*dt, &[v.len() as u64], v),
            )
        })
        .collect();
    let r = run(&p, &m, &ins, 0).unwrap_or_else(|d| panic!("{}", d.render("test.npu", src)));
    r.outputs[0].1.values()
}

/// A vector program over 128 elements of `dt` in `ua`, `ub2`, `uc`; `ud` (cleared) goes out.
fn vector(line: &str, dt: DType, a: &[f64], b: &[f64], c: &[f64]) -> Vec<f64> {
    let reps = 128 * dt.size() / 256;
    let src = format!(
        "tensor a : {dt}[128] in\ntensor b : {dt}[128] in\ntensor c : {dt}[128] in\ntensor d : {dt}[128] out\n\
         buffer ua : ub {dt}[128]\nbuffer ub2 : ub {dt}[128]\nbuffer uc : ub {dt}[128]\nbuffer ud : ub {dt}[128]\n\
         dma ua[0], a[0], len=128\ndma ub2[0], b[0], len=128\ndma uc[0], c[0], len=128\n\
         set_flag MTE2, V, 0\nwait_flag MTE2, V, 0\nvdup ud[0], 0.0, repeat={reps}\nbarrier V\n{line}\n\
         set_flag V, MTE3, 0\nwait_flag V, MTE3, 0\ndma d[0], ud[0], len=128\n"
    );
    sim(
        &src,
        &[
            ("a", dt, a.to_vec()),
            ("b", dt, b.to_vec()),
            ("c", dt, c.to_vec()),
        ],
    )
}

fn round(dt: DType, v: f64) -> f64 {
    TensorData::from_values(dt, &[1], &[v]).values()[0]
}

fn data() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let a: Vec<f64> = (0..128).map(|i| 0.25 + (i as f64 * 0.37) % 3.0).collect();
    let b: Vec<f64> = (0..128).map(|i| 1.5 - (i as f64 * 0.61) % 2.5).collect();
    let c: Vec<f64> = (0..128).map(|i| (i % 3 == 0) as u8 as f64).collect();
    (a, b, c)
}

#[test]
fn element_wise_ops_match_the_reference_in_f32_and_f16() {
    let (a, b, c) = data();
    for dt in [DType::F32, DType::F16] {
        let (a, b): (Vec<f64>, Vec<f64>) = (
            a.iter().map(|v| round(dt, *v)).collect(),
            b.iter().map(|v| round(dt, *v)).collect(),
        );
        let reps = 128 * dt.size() / 256;
        type F = fn(f64, f64, f64) -> f64;
        let cases: Vec<(&str, F)> = vec![
            ("vadd ud[0], ua[0], ub2[0]", |a, b, _| a + b),
            ("vsub ud[0], ua[0], ub2[0]", |a, b, _| a - b),
            ("vmul ud[0], ua[0], ub2[0]", |a, b, _| a * b),
            ("vdiv ud[0], ua[0], ub2[0]", |a, b, _| a / b),
            ("vmax ud[0], ua[0], ub2[0]", |a, b, _| a.max(b)),
            ("vmin ud[0], ua[0], ub2[0]", |a, b, _| a.min(b)),
            ("vexp ud[0], ua[0]", |a, _, _| a.exp()),
            ("vln ud[0], ua[0]", |a, _, _| a.ln()),
            ("vsqrt ud[0], ua[0]", |a, _, _| a.sqrt()),
            ("vrsqrt ud[0], ua[0]", |a, _, _| 1.0 / a.sqrt()),
            ("vabs ud[0], ub2[0]", |_, b, _| b.abs()),
            ("vrelu ud[0], ub2[0]", |_, b, _| b.max(0.0)),
            ("vrec ud[0], ua[0]", |a, _, _| 1.0 / a),
            ("vmov ud[0], ub2[0]", |_, b, _| b),
            ("vadds ud[0], ua[0], -0.75", |a, _, _| a - 0.75),
            ("vmuls ud[0], ua[0], 3.0", |a, _, _| a * 3.0),
            ("vmaxs ud[0], ub2[0], 0.5", |_, b, _| b.max(0.5)),
            ("vmins ud[0], ub2[0], 0.5", |_, b, _| b.min(0.5)),
            ("vdup ud[0], 2.5", |_, _, _| 2.5),
            ("vcmp.lt ud[0], ua[0], ub2[0]", |a, b, _| {
                (a < b) as u8 as f64
            }),
            ("vcmp.ge ud[0], ua[0], ub2[0]", |a, b, _| {
                (a >= b) as u8 as f64
            }),
            ("vcmp.eq ud[0], ua[0], ua[0]", |_, _, _| 1.0),
            ("vcmp.ne ud[0], ua[0], ub2[0]", |a, b, _| {
                (a != b) as u8 as f64
            }),
            ("vsel ud[0], uc[0], ua[0], ub2[0]", |a, b, c| {
                if c != 0.0 {
                    a
                } else {
                    b
                }
            }),
        ];
        for (line, f) in cases {
            let got = vector(&format!("{line}, repeat={reps}"), dt, &a, &b, &c);
            for i in 0..128 {
                assert_eq!(
                    got[i],
                    round(dt, f(a[i], b[i], c[i])),
                    "{dt} `{line}` element {i}"
                );
            }
        }
    }
}

#[test]
fn masks_repeat_strides_reductions_and_broadcasts() {
    let (a, b, c) = data();
    let dt = DType::F32;
    let (a, b): (Vec<f64>, Vec<f64>) = (
        a.iter().map(|v| round(dt, *v)).collect(),
        b.iter().map(|v| round(dt, *v)).collect(),
    );
    let got = vector(
        "vadd ud[0], ua[0], ub2[0], repeat=2, mask=5, dst_rs=7, src0_rs=3, src1_rs=0",
        dt,
        &a,
        &b,
        &c,
    );
    let mut want = vec![0.0; 128];
    for r in 0..2 {
        for l in 0..5 {
            want[7 * r + l] = round(dt, a[3 * r + l] + b[l]);
        }
    }
    assert_eq!(got, want);
    for (op, f) in [("sum", 0), ("max", 1), ("min", 2)] {
        let got = vector(
            &format!("vreduce.{op} ud[0], ua[0], repeat=2, mask=10, dst_rs=3"),
            dt,
            &a,
            &b,
            &c,
        );
        let mut want = vec![0.0; 128];
        for r in 0..2 {
            let xs = &a[64 * r..64 * r + 10];
            let v = match f {
                0 => xs.iter().sum(),
                1 => xs.iter().copied().fold(f64::MIN, f64::max),
                _ => xs.iter().copied().fold(f64::MAX, f64::min),
            };
            want[3 * r] = round(dt, v);
        }
        assert_eq!(got, want, "vreduce.{op}");
    }
    let got = vector("vbcast ud[0], ua[0], repeat=2, src0_rs=5", dt, &a, &b, &c);
    let want: Vec<f64> = (0..128).map(|i| round(dt, a[5 * (i / 64)])).collect();
    assert_eq!(got, want);
}

#[test]
fn conversions_round_and_saturate() {
    let src = "tensor a : f32[64] in\ntensor d : i8[64] out\nbuffer ua : ub f32[64]\nbuffer h : ub f16[64]\nbuffer ud : ub i8[64]\n\
        dma ua[0], a[0], len=64\nset_flag MTE2, V, 0\nwait_flag MTE2, V, 0\n\
        vconv h[0], ua[0]\nbarrier V\nvconv ud[0], h[0], mask=64\nset_flag V, MTE3, 0\nwait_flag V, MTE3, 0\ndma d[0], ud[0], len=64\n";
    let a: Vec<f64> = (0..64).map(|i| (i as f64 - 32.0) * 7.3).collect();
    let got = sim(src, &[("a", DType::F32, a.clone())]);
    for i in 0..64 {
        let h = round(DType::F16, a[i]);
        assert_eq!(
            got[i],
            h.round_ties_even().clamp(-128.0, 127.0),
            "element {i}"
        );
    }
}

#[test]
fn strided_dma_moves_the_right_elements() {
    let src = "tensor a : f32[64] in\ntensor d : f32[64] out\nbuffer u : ub f32[64]\n\
        vdup u[0], 0.0\nset_flag V, MTE2, 0\nwait_flag V, MTE2, 0\n\
        dma u[0], a[8], count=3, len=8, src_stride=16, dst_stride=24\nset_flag MTE2, MTE3, 0\nwait_flag MTE2, MTE3, 0\n\
        dma d[0], u[0], len=64\n";
    let a: Vec<f64> = (0..64).map(|i| i as f64).collect();
    let got = sim(src, &[("a", DType::F32, a.clone())]);
    let mut want = vec![0.0; 64];
    for i in 0..3 {
        for j in 0..8 {
            want[24 * i + j] = a[8 + 16 * i + j];
        }
    }
    assert_eq!(got, want);
}

/// `A` (m x k) through L1 into L0A (optionally transposed), times `B` (k x n), accumulated
/// twice (init, then accumulate), out through UB as f32 (with ReLU when asked).
#[allow(clippy::too_many_arguments)]
fn cube(
    dt: DType,
    load: &str,
    m: u64,
    k: u64,
    n: u64,
    relu: bool,
    a: Vec<f64>,
    b: Vec<f64>,
) -> Vec<f64> {
    let acc = if dt == DType::I8 {
        DType::I32
    } else {
        DType::F32
    };
    let relu = if relu { ", relu" } else { "" };
    let src = format!(
        "tensor a : {dt}[{la}] in\ntensor b : {dt}[{lb}] in\ntensor d : {acc}[{lc}] out\n\
         buffer a1 : l1 {dt}[{la}]\nbuffer b1 : l1 {dt}[{lb}]\nbuffer a0 : l0a {dt}[{lk}]\nbuffer b0 : l0b {dt}[{lb}]\n\
         buffer c0 : l0c {acc}[{lc}]\nbuffer u : ub {acc}[{lc}]\n\
         dma a1[0], a[0], len={la}\ndma b1[0], b[0], len={lb}\nset_flag MTE2, MTE1, 0\nwait_flag MTE2, MTE1, 0\n\
         {load}\ndma b0[0], b1[0], len={lb}\nset_flag MTE1, M, 0\nwait_flag MTE1, M, 0\n\
         mmad c0[0], a0[0], b0[0], m={m}, k={k}, n={n}, init\nmmad c0[0], a0[0], b0[0], m={m}, k={k}, n={n}\n\
         set_flag M, V, 0\nwait_flag M, V, 0\ndma u[0], c0[0], len={lc}{relu}\nset_flag V, MTE3, 0\nwait_flag V, MTE3, 0\n\
         dma d[0], u[0], len={lc}\n",
        la = a.len(),
        lb = b.len(),
        lk = m * k,
        lc = m * n
    );
    sim(&src, &[("a", dt, a), ("b", dt, b)])
}

fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    (0..m * n)
        .map(|ij| {
            (0..k)
                .map(|kk| a[ij / n * k + kk] * b[kk * n + ij % n])
                .sum()
        })
        .collect()
}

#[test]
fn mmad_accumulates_f16_in_f32_and_i8_in_i32() {
    let (m, k, n) = (16, 32, 16);
    let a: Vec<f64> = (0..m * k).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
    let b: Vec<f64> = (0..k * n).map(|i| ((i * 5) % 9) as f64 - 4.0).collect();
    let want: Vec<f64> = matmul(&a, &b, m, k, n).iter().map(|v| 2.0 * v).collect();
    for dt in [DType::F16, DType::I8] {
        let got = cube(
            dt,
            "dma a0[0], a1[0], len=512",
            m as u64,
            k as u64,
            n as u64,
            false,
            a.clone(),
            b.clone(),
        );
        assert_eq!(got, want, "{dt}");
    }
    let got = cube(
        DType::F16,
        "dma a0[0], a1[0], len=512",
        m as u64,
        k as u64,
        n as u64,
        true,
        a.clone(),
        b.clone(),
    );
    assert_eq!(got, want.iter().map(|v| v.max(0.0)).collect::<Vec<_>>());
}

#[test]
fn transposing_load_and_im2col_feed_the_cube() {
    // A stored as 16x32, loaded transposed: the cube sees its 32x16 transpose.
    let a: Vec<f64> = (0..512).map(|i| (i % 13) as f64).collect();
    let ident: Vec<f64> = (0..256).map(|i| (i / 16 == i % 16) as u8 as f64).collect();
    let got = cube(
        DType::F16,
        "dma a0[0], a1[0], count=16, len=32, transpose",
        32,
        16,
        16,
        false,
        a.clone(),
        ident.clone(),
    );
    let at: Vec<f64> = (0..512).map(|ij| a[(ij % 16) * 32 + ij / 16]).collect();
    assert_eq!(
        got,
        matmul(&at, &ident, 32, 16, 16)
            .iter()
            .map(|v| 2.0 * v)
            .collect::<Vec<_>>()
    );
    // A 4x4x2 (HWC) image, 3x3 kernel, stride 1, pad 1: 16 rows of 18 columns; B = identity.
    let img: Vec<f64> = (0..32).map(|i| i as f64 + 1.0).collect();
    let eye18: Vec<f64> = (0..18 * 18)
        .map(|i| (i / 18 == i % 18) as u8 as f64)
        .collect();
    let load = "im2col a0[0], a1[0], h=4, w=4, c=2, kh=3, kw=3, pad=1";
    let got = cube(DType::F16, load, 16, 18, 18, false, img.clone(), eye18);
    for oy in 0..4i64 {
        for ox in 0..4i64 {
            for ky in 0..3i64 {
                for kx in 0..3i64 {
                    for ch in 0..2i64 {
                        let (iy, ix) = (oy + ky - 1, ox + kx - 1);
                        let v = if (0..4).contains(&iy) && (0..4).contains(&ix) {
                            img[((iy * 4 + ix) * 2 + ch) as usize]
                        } else {
                            0.0
                        };
                        let col = (ky * 3 + kx) * 2 + ch;
                        assert_eq!(got[((oy * 4 + ox) * 18 + col) as usize], 2.0 * v);
                    }
                }
            }
        }
    }
}
