//! Convolutions on the NPU, differentially: each compiled program runs in the simulator
//! (strict semantics, race detector) on the interpreter's inputs and must give its outputs
//! within the tolerance of a reordered f32 sum; the timing oracle must agree on the values;
//! kernels outside the back end's reach are refused with a reason.

use codegen::npu::conv::tiles::Tiles;
use codegen::npu::{compile, simulate, Plan};
use codegen::runner::tolerance;
use frontend::ir::{ElemType, Kernel};
use frontend::SourceFile;
use npu_sim::Machine;
use poly::interp::{Interpreter, Memory, ParamValues};
use std::collections::BTreeMap;

fn kernel(text: &str) -> Kernel {
    frontend::compile(&SourceFile::new("k.pk", text.to_string()))
        .unwrap_or_else(|e| panic!("{e:?}\n{text}"))
        .remove(0)
}

/// How a test kernel orders its tensors' dimensions.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// NCHW activations, `[k, c, r, s]` weights.
    Nchw,
    /// NHWC activations, `[k, r, s, c]` weights.
    Nhwc,
    /// NHWC activations, `[r, s, c, k]` weights (TensorFlow's HWIO).
    Hwio,
}

/// Every layout.
const LAYOUTS: [Layout; 3] = [Layout::Nhwc, Layout::Hwio, Layout::Nchw];

/// A convolution kernel: `layout`, stride `st`, zero padding `p` on every side (written as
/// a padded copy of the input when `p > 0`).
fn conv(layout: Layout, st: i64, p: i64) -> String {
    let (i, w, o, x, read, wt) = match layout {
        Layout::Nchw => (
            "I: f16[N, C, H, W]",
            "Wt: f16[K, C, R, S]",
            "O: f32[N, K, OH, OW]",
            "X: f16[N, C, H + 2 * P, W + 2 * P]",
            format!("X[n, c, {st} * p + r, {st} * q + s]"),
            "Wt[k, c, r, s]",
        ),
        Layout::Nhwc | Layout::Hwio => (
            "I: f16[N, H, W, C]",
            if matches!(layout, Layout::Hwio) {
                "Wt: f16[R, S, C, K]"
            } else {
                "Wt: f16[K, R, S, C]"
            },
            "O: f32[N, OH, OW, K]",
            "X: f16[N, H + 2 * P, W + 2 * P, C]",
            format!("X[n, {st} * p + r, {st} * q + s, c]"),
            if matches!(layout, Layout::Hwio) {
                "Wt[r, s, c, k]"
            } else {
                "Wt[k, r, s, c]"
            },
        ),
    };
    let out = match layout {
        Layout::Nchw => "O[n, k, p, q]",
        Layout::Nhwc | Layout::Hwio => "O[n, p, q, k]",
    };
    let (copy_to, copy_from) = match layout {
        Layout::Nchw => ("X[n, c, h + P, w + P]", "I[n, c, h, w]"),
        Layout::Nhwc | Layout::Hwio => ("X[n, h + P, w + P, c]", "I[n, h, w, c]"),
    };
    let zero_idx = match layout {
        Layout::Nchw => "X[n, c, h, w]",
        Layout::Nhwc | Layout::Hwio => "X[n, h, w, c]",
    };
    let body = if p > 0 {
        format!(
            "  let {x};
  {zero_idx} = 0.0;
  for n in 0..N {{ for h in 0..H {{ for w in 0..W {{ for c in 0..C {{ {copy_to} = {copy_from}; }} }} }} }}
  {out} = sum(c, r, s) f32({read}) * f32({wt});"
        )
    } else {
        format!(
            "  {out} = sum(c, r, s) f32({}) * f32({wt});",
            read.replace('X', "I")
        )
    };
    format!(
        "kernel conv({i}, {w}) -> ({o})
  params N = 1, C = 16, H = 8, W = 8, K = 16, R = 3, S = 3, P = {p}, OH = 6, OW = 6
  where OH == floor((H + 2 * P - R) / {st}) + 1 and OW == floor((W + 2 * P - S) / {st}) + 1
{{
{body}
}}"
    )
}

/// The output extent of `n` inputs with window `k`, padding `p`, stride `st`.
fn out(n: i64, k: i64, p: i64, st: i64) -> i64 {
    (n + 2 * p - k) / st + 1
}

/// Compiles `text` at `sizes` for `machine`, runs it on the interpreter's random inputs
/// (strict semantics, race detector) and returns the largest normwise error of the output,
/// with the tiles chosen; the timing oracle must agree on the values.
fn differential(text: &str, sizes: &[(&str, i64)], machine: &str) -> (f64, Tiles) {
    let k = kernel(text);
    let fixed: BTreeMap<String, i64> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let params = ParamValues::resolve(&k, &fixed, &BTreeMap::new()).unwrap();
    let all: BTreeMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
    let m = Machine::load(machine).unwrap();
    let compiled = compile(&k, &all, &m, true).unwrap_or_else(|e| panic!("{e}"));
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
    let report = npu_sim::oracle::check_timing(
        &compiled.program,
        &m,
        &inputs,
        1,
        npu_sim::Semantics::Strict,
        2,
    );
    assert!(report.agreed(), "timing oracle: {report:?}");
    let Plan::Conv { tiles, .. } = compiled.plan else {
        panic!("not a convolution: {:?}", compiled.plan)
    };
    (worst, tiles)
}

/// Sizes for `n` images of `h x w` with `c` channels into `k`, a `r x r` window,
/// padding `p`, stride `st`.
fn sizes(
    (n, c, h, w, k): (i64, i64, i64, i64, i64),
    r: i64,
    p: i64,
    st: i64,
) -> Vec<(&'static str, i64)> {
    vec![
        ("N", n),
        ("C", c),
        ("H", h),
        ("W", w),
        ("K", k),
        ("R", r),
        ("S", r),
        ("P", p),
        ("OH", out(h, r, p, st)),
        ("OW", out(w, r, p, st)),
    ]
}

fn check(layout: Layout, st: i64, p: i64, sz: &[(&'static str, i64)], machine: &str) -> Tiles {
    let (err, tiles) = differential(&conv(layout, st, p), sz, machine);
    assert!(
        err <= tolerance(ElemType::F32),
        "{layout:?} stride {st} pad {p} {sz:?} on {machine}: {err:e} ({tiles:?})"
    );
    tiles
}

#[test]
fn three_by_three_convolutions_match_the_interpreter() {
    for layout in LAYOUTS {
        check(
            layout,
            1,
            0,
            &sizes((1, 16, 8, 8, 16), 3, 0, 1),
            "ascend-like",
        );
        check(
            layout,
            1,
            1,
            &sizes((1, 32, 9, 7, 48), 3, 1, 1),
            "ascend-like",
        );
    }
}

#[test]
fn strided_and_padded_convolutions_match_the_interpreter() {
    for layout in LAYOUTS {
        check(
            layout,
            2,
            1,
            &sizes((1, 16, 9, 11, 16), 3, 1, 2),
            "ascend-like",
        );
        check(
            layout,
            2,
            3,
            &sizes((1, 3, 20, 18, 32), 7, 3, 2),
            "ascend-like",
        );
    }
}

#[test]
fn channels_and_pixels_off_the_fractal_grid_match() {
    for layout in LAYOUTS {
        check(
            layout,
            1,
            1,
            &sizes((1, 20, 7, 5, 24), 3, 1, 1),
            "ascend-like",
        );
        check(
            layout,
            1,
            0,
            &sizes((1, 5, 6, 9, 7), 3, 0, 1),
            "ascend-like",
        );
    }
}

#[test]
fn batches_and_one_by_one_convolutions_match() {
    for layout in LAYOUTS {
        check(
            layout,
            1,
            1,
            &sizes((3, 16, 6, 6, 32), 3, 1, 1),
            "ascend-like",
        );
        check(
            layout,
            1,
            0,
            &sizes((2, 48, 5, 7, 32), 1, 0, 1),
            "ascend-like",
        );
        check(
            layout,
            2,
            0,
            &sizes((1, 32, 9, 9, 16), 1, 0, 2),
            "ascend-like",
        );
    }
}

#[test]
fn the_half_bandwidth_preset_and_the_mini_machine_give_the_same_values() {
    for layout in LAYOUTS {
        check(
            layout,
            1,
            1,
            &sizes((1, 32, 9, 7, 48), 3, 1, 1),
            "ascend-like-halfgm",
        );
    }
    check(
        Layout::Nhwc,
        1,
        1,
        &sizes((1, 16, 5, 6, 16), 3, 1, 1),
        "mini",
    );
    check(
        Layout::Nchw,
        1,
        0,
        &sizes((1, 16, 5, 6, 16), 1, 0, 1),
        "mini",
    );
}
