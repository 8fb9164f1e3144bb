//! Every instruction's values against a plain Rust reference, through whole small programs on
//! a one-core `ascend-like` machine.

use npu_sim::program::DType;
use npu_sim::{assemble, run, Machine, TensorData};
use std::collections::HashMap;

/// Runs `body` with input tensors `a`, `b`, `c` (f64 values, given type, 1-D) and returns the
/// output tensor `d` (`n` elements of `out`).
fn sim(src: &str, inputs: &[(&str, DType, Vec<f64>)]) -> Vec<f64> {
    let p = assemble(src).unwrap_or_else(|d| panic!("{}", d.render("test.npu", src)));
    let mut m = Machine::preset("ascend-like").unwrap();
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

/// How B reaches L0B in [`cube`].
#[derive(Clone, Copy, PartialEq)]
enum BRoute {
    /// B (k x n, ND) -> NZ in L1 -> L0B with one transposing load per fractal row.
    Transposed,
    /// B^T (n x k, ND) -> NZ in L1, which is already L0B's nZ layout: one plain copy.
    FromTranspose,
}

/// `C = A x B` through the cube with every layout conversion a compiler must emit: A (m x k,
/// ND) -> NZ in L1 (`nd2nz`) -> zZ in L0A (one load per fractal row); B by `route`; `mmad`
/// twice (init, then accumulate); C (NZ in L0C) -> ND in UB (`nz2nd`, with ReLU when asked)
/// -> GM. Shapes need not be multiples of the fractal: the padding is zero.
#[allow(clippy::too_many_arguments)]
fn cube(
    dt: DType,
    route: BRoute,
    (m, k, n): (u64, u64, u64),
    relu: bool,
    a: Vec<f64>,
    b: Vec<f64>,
) -> Vec<f64> {
    let acc = if dt == DType::I8 {
        DType::I32
    } else {
        DType::F32
    };
    let ka = 32 / dt.size();
    let (m1, k1, n1) = (m.div_ceil(16), k.div_ceil(ka), n.div_ceil(16));
    let (fa, fb) = (16 * ka, 16 * ka);
    let relu = if relu { ", relu" } else { "" };
    let load_b = match route {
        BRoute::Transposed => format!(
            "loop bk in 0..{k1} {{\n  dma b0[bk*{row}], b1[bk*{fb}], count={n1}, len={fb}, src_stride={col}, transpose\n}}\n",
            row = n1 * fb,
            col = k1 * fb,
        ),
        BRoute::FromTranspose => format!("dma b0[0], b1[0], len={}\n", k1 * n1 * fb),
    };
    let (b_rows, b_cols, b_pad) = match route {
        BRoute::Transposed => (k, n, k1 * ka),
        BRoute::FromTranspose => (n, k, n1 * 16),
    };
    let src = format!(
        "tensor a : {dt}[{la}] in\ntensor b : {dt}[{lb}] in\ntensor d : {acc}[{lc}] out\n\
         buffer a1 : l1 {dt}[{za}]\nbuffer b1 : l1 {dt}[{zb}]\nbuffer a0 : l0a {dt}[{za}]\nbuffer b0 : l0b {dt}[{zb}]\n\
         buffer c0 : l0c {acc}[{zc}]\nbuffer u : ub {acc}[{lc}]\n\
         dma a1[0], a[0], count={m}, len={k}, dst_stride={ma}, nd2nz\n\
         dma b1[0], b[0], count={b_rows}, len={b_cols}, dst_stride={b_pad}, nd2nz\n\
         set_flag MTE2, MTE1, 0\nwait_flag MTE2, MTE1, 0\n\
         loop bi in 0..{m1} {{\n  dma a0[bi*{arow}], a1[bi*{fa}], count={k1}, len={fa}, src_stride={acol}\n}}\n\
         {load_b}set_flag MTE1, M, 0\nwait_flag MTE1, M, 0\n\
         mmad c0[0], a0[0], b0[0], m={m}, k={k}, n={n}, init\nbarrier M\nmmad c0[0], a0[0], b0[0], m={m}, k={k}, n={n}\n\
         set_flag M, V, 0\nwait_flag M, V, 0\n\
         dma u[0], c0[0], count={m}, len={n}, src_stride={ma}, dst_stride={n}, nz2nd{relu}\n\
         set_flag V, MTE3, 0\nwait_flag V, MTE3, 0\ndma d[0], u[0], len={lc}\n",
        la = a.len(),
        lb = b.len(),
        lc = m * n,
        za = m1 * k1 * fa,
        zb = k1 * n1 * fb,
        zc = m1 * n1 * 256,
        ma = m1 * 16,
        arow = k1 * fa,
        acol = m1 * fa,
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

fn transpose(x: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows * cols)
        .map(|ji| x[(ji % rows) * cols + ji / rows])
        .collect()
}

#[test]
fn mmad_reads_and_writes_fractal_layouts_and_accumulates_f16_in_f32_and_i8_in_i32() {
    // Partial fractals on every axis: 20 = 16 + 4 rows, 40 = 32 + 8 (f16) or 32 + 8 (i8).
    let (m, k, n) = (20, 40, 24);
    let a: Vec<f64> = (0..m * k).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
    let b: Vec<f64> = (0..k * n).map(|i| ((i * 5) % 9) as f64 - 4.0).collect();
    let bt = transpose(&b, k, n);
    let want: Vec<f64> = matmul(&a, &b, m, k, n).iter().map(|v| 2.0 * v).collect();
    let shape = (m as u64, k as u64, n as u64);
    for (dt, route, b) in [
        (DType::F16, BRoute::Transposed, &b),
        (DType::F16, BRoute::FromTranspose, &bt),
        (DType::I8, BRoute::FromTranspose, &bt),
    ] {
        let got = cube(dt, route, shape, false, a.clone(), b.clone());
        assert_eq!(got, want, "{dt}");
    }
    let got = cube(
        DType::F16,
        BRoute::Transposed,
        shape,
        true,
        a.clone(),
        b.clone(),
    );
    assert_eq!(got, want.iter().map(|v| v.max(0.0)).collect::<Vec<_>>());
}

#[test]
fn nhwc_to_c1hwc0_and_load3d_windows_with_per_side_padding_feed_the_cube() {
    // A 5 x 4 image of 32 channels (NHWC in GM) becomes C1HWC0 in L1 with one strided copy per
    // C1 slice; load3d takes rows 16..32 and columns 16..80 of its im2col matrix (3 x 2
    // kernel, stride 2, padding 1 above, 0 below, 1 left, 1 right); B = identity brings the
    // window through the cube.
    let (h, w, c, kh, kw, stride) = (5usize, 4usize, 32usize, 3usize, 2usize, 2usize);
    let (pt, pb, pl, pr) = (1usize, 0usize, 1usize, 1usize);
    let (m_start, m_ext, k_start, k_ext) = (16usize, 16usize, 16usize, 64usize);
    let img: Vec<f64> = (0..h * w * c).map(|i| (i % 251) as f64 - 100.0).collect();
    let eye: Vec<f64> = (0..k_ext * k_ext)
        .map(|i| (i / k_ext == i % k_ext) as u8 as f64)
        .collect();
    let src = format!(
        "tensor a : f16[{li}] in\ntensor b : f16[{le}] in\ntensor d : f32[{lc}] out\n\
         buffer f1 : l1 f16[{li}]\nbuffer b1 : l1 f16[{le}]\nbuffer a0 : l0a f16[{lw}]\nbuffer b0 : l0b f16[{le}]\n\
         buffer c0 : l0c f32[{lc}]\nbuffer u : ub f32[{lc}]\n\
         loop c1 in 0..{c1} {{\n  dma f1[c1*{slice}], a[c1*16], count={hw}, len=16, src_stride={c}, dst_stride=16\n}}\n\
         dma b1[0], b[0], count={k_ext}, len={k_ext}, dst_stride={k_ext}, nd2nz\n\
         set_flag MTE2, MTE1, 0\nwait_flag MTE2, MTE1, 0\n\
         load3d a0[0], f1[0], h={h}, w={w}, c={c}, kh={kh}, kw={kw}, stride={stride}, \
           pad_top={pt}, pad_left={pl}, pad_right={pr}, m_start={m_start}, m_ext={m_ext}, k_start={k_start}, k_ext={k_ext}\n\
         dma b0[0], b1[0], len={le}\nset_flag MTE1, M, 0\nwait_flag MTE1, M, 0\n\
         mmad c0[0], a0[0], b0[0], m={m_ext}, k={k_ext}, n={k_ext}, init\n\
         set_flag M, V, 0\nwait_flag M, V, 0\n\
         dma u[0], c0[0], count={m_ext}, len={k_ext}, src_stride={m_ext}, dst_stride={k_ext}, nz2nd\n\
         set_flag V, MTE3, 0\nwait_flag V, MTE3, 0\ndma d[0], u[0], len={lc}\n",
        li = h * w * c,
        le = k_ext * k_ext,
        lc = m_ext * k_ext,
        lw = m_ext * k_ext,
        c1 = c / 16,
        slice = h * w * 16,
        hw = h * w,
    );
    let got = sim(
        &src,
        &[("a", DType::F16, img.clone()), ("b", DType::F16, eye)],
    );
    let ow = (w + pl + pr - kw) / stride + 1;
    let oh = (h + pt + pb - kh) / stride + 1;
    for r in 0..m_ext {
        for q in 0..k_ext {
            let (pos, col) = (m_start + r, k_start + q);
            let (c1, rest) = (col / (kh * kw * 16), col % (kh * kw * 16));
            let (ky, kx, ci) = (rest / (kw * 16), rest / 16 % kw, rest % 16);
            let (oy, ox) = (pos / ow, pos % ow);
            let (iy, ix) = (
                (oy * stride + ky) as i64 - pt as i64,
                (ox * stride + kx) as i64 - pl as i64,
            );
            let inside =
                pos < oh * ow && (0..h as i64).contains(&iy) && (0..w as i64).contains(&ix);
            let want = if inside {
                img[(iy as usize * w + ix as usize) * c + c1 * 16 + ci]
            } else {
                0.0
            };
            assert_eq!(got[r * k_ext + q], want, "row {r} column {q}");
        }
    }
}
