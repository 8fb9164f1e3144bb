//! Window reductions (pooling, depthwise convolutions) on the NPU's vector unit,
//! differentially: each compiled program runs in the simulator (strict semantics, race
//! detector, the timing oracle agreeing on two more machines) on the interpreter's inputs
//! and must give exactly the interpreter's outputs (the program combines each output's terms
//! in the kernel's order, and skips only border terms that cannot change it), or, global
//! pooling combined pairwise, the interpreter's within the tolerance; kernels outside the
//! back end's reach are refused with a reason.

mod common;

use codegen::npu::window::{
    self,
    tiles::{Meet, Model, Size},
    Combine, Order,
};
use codegen::npu::{candidates, compile, conv::Offer, NpuError, Plan};
use frontend::ir::Kernel;
use npu_sim::Machine;
use poly::interp::Memory;
use progen::window::{Spec, Term};

fn defaults(
    k: &Kernel,
) -> (
    poly::interp::ParamValues,
    std::collections::BTreeMap<String, i64>,
) {
    common::sizes_of(k, &[])
}

/// Every output of `k` in `got` equals the interpreter's in `want`, bit for bit.
fn assert_exact(k: &Kernel, want: &Memory, got: &Memory, at: &str) {
    for array in k.arrays.iter().filter(|a| a.role.is_output()) {
        let want = want.array(&array.name).unwrap().values();
        let got = got.array(&array.name).unwrap().values();
        let diff = (want.iter().zip(got.iter())).position(|(a, b)| a != b);
        assert!(
            diff.is_none(),
            "{at}: `{}` differs at element {diff:?}: {:?} against {:?}",
            array.name,
            diff.map(|i| got[i]),
            diff.map(|i| want[i])
        );
    }
}

/// Compiles `text` for `machine` (tiles `forced` or the model's), runs it against the
/// interpreter and returns the plan.
fn exact_with(text: &str, machine: &str, forced: Option<Size>) -> window::Plan {
    let k = common::kernel(text);
    let m = Machine::load(machine).unwrap();
    let (params, sizes) = defaults(&k);
    let w = window::recognise(&k, &sizes)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .unwrap_or_else(|| panic!("not a window reduction:\n{text}"));
    let (program, plan) =
        window::compile(&w, &m, Order::Kernel, forced).unwrap_or_else(|e| panic!("{e}\n{text}"));
    codegen::npu::lift::check(&k, &sizes, &program, &m).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let compiled = codegen::npu::Compiled {
        program,
        plan: Plan::Window(plan.clone()),
    };
    let (want, got) = common::interpreted_and_simulated(&k, &params, &compiled, &m, 2, text);
    assert_exact(&k, &want, &got, &format!("{machine}\n{text}"));
    plan
}

fn exact(spec: &Spec, machine: &str) -> window::Plan {
    exact_with(&spec.text(), machine, None)
}

#[test]
fn max_and_min_pooling_match_the_interpreter_exactly() {
    // `mini`'s UB (4 KiB) holds tiles of a few pixels of 16 channels
    for (machine, c) in [("ascend-like", 64), ("mini", 16)] {
        exact(
            &Spec {
                c,
                ..Spec::pool("max", -65504.0)
            },
            machine,
        );
        exact(
            &Spec {
                c,
                ..Spec::pool("min", 65504.0)
            },
            machine,
        );
        // a border no larger than the initial value is skipped
        exact(
            &Spec {
                fill: -70000.0,
                types: ("f32", "f32"),
                c: c / 2,
                ..Spec::pool("max", -1.0)
            },
            machine,
        );
    }
}

#[test]
fn sums_over_windows_match_exactly_in_the_kernels_order() {
    for s_outer in [false, true] {
        exact(
            &Spec {
                s_outer,
                ..Spec::depthwise()
            },
            "ascend-like",
        );
    }
    exact(
        &Spec {
            term: Term::Product { swapped: true },
            s_outer: true,
            ..Spec::depthwise()
        },
        "ascend-like",
    );
    // sum pooling, scaled, f16 into f32 and f32 into f32
    for types in [("f16", "f32"), ("f32", "f32")] {
        exact(
            &Spec {
                term: Term::Scaled,
                types,
                ..Spec::depthwise()
            },
            "ascend-like-halfgm",
        );
    }
}

#[test]
fn strides_borders_batches_and_channels_off_the_lanes_match() {
    let cases = [
        // no border, unequal strides, a 2 x 3 window
        Spec {
            pad: [0; 4],
            stride: (1, 2),
            r: 2,
            s: 3,
            ..Spec::pool("max", -65504.0)
        },
        // strides longer than the window: input rows and columns no window reads (the
        // lifted check once asked for them to be loaded)
        Spec {
            pad: [0, 0, 0, 1],
            stride: (2, 3),
            r: 1,
            s: 2,
            c: 16,
            ..Spec::pool("max", -65504.0)
        },
        // uneven border, two images
        Spec {
            n: 2,
            pad: [0, 2, 1, 0],
            ..Spec::pool("max", -65504.0)
        },
        // 96 f32 channels: a full chunk of 64 lanes and one of 32
        Spec {
            c: 96,
            ..Spec::depthwise()
        },
        // 16 f32 channels: 64 bytes a pixel
        Spec {
            c: 16,
            types: ("f32", "f32"),
            ..Spec::depthwise()
        },
        // a 5 x 5 window, stride 2, border 2
        Spec {
            r: 5,
            s: 5,
            stride: (2, 2),
            pad: [2, 2, 2, 2],
            h: 13,
            w: 12,
            ..Spec::depthwise()
        },
    ];
    for spec in &cases {
        exact(spec, "ascend-like");
    }
}

#[test]
fn a_window_along_one_dimension_matches() {
    // no window row loop: `I[n, p, 2 * q + s, c]`
    let text = "kernel w1(I: f32[N, H, W, C]) -> (O: f32[N, H, OW, C])
  params N = 1, H = 4, W = 9, C = 16, OW = 4
{
  O[n, p, q, c] = -1.0;
  for n in 0..N { for p in 0..H { for q in 0..OW { for c in 0..C { for s in 0..3 {
    O[n, p, q, c] max= I[n, p, 2 * q + s, c];
  } } } } }
}
";
    let plan = exact_with(text, "ascend-like", None);
    assert!(plan.summary.contains("window 1 x 3"), "{}", plan.summary);
}

#[test]
fn edge_tiles_of_every_shape_match() {
    let spec = Spec {
        h: 14,
        w: 15,
        ..Spec::depthwise()
    };
    let text = spec.text();
    let (oh, ow) = spec.out();
    // 64 channels: all of them, or groups of 32 f32 (128-byte bursts, a pixel each)
    for (rows, cols, chans) in [
        (1, 1, 64),
        (3, 4, 32),
        (oh, ow, 64),
        (5, ow, 32),
        (oh - 1, 2, 64),
    ] {
        let size = Size::whole(rows, cols, chans);
        let plan = exact_with(&text, "ascend-like", Some(size));
        assert_eq!(plan.choice.size, size);
    }
}

/// Global pooling (`O[n, c]` from `X[n, r, s, c]`, the window the whole image): the tiles
/// are groups of channels, each instruction's repeats walk the chunks of lanes.
/// A global pooling kernel `O[n, c] OP= TERM` over `H x W` pixels of `C` channels.
fn global(
    types: (&str, &str),
    (h, w, c): (i64, i64, i64),
    op: &str,
    init: &str,
    term: &str,
) -> String {
    format!(
        "kernel g(I: {}[N, H, W, C]) -> (O: {}[N, C])
  params N = 2, H = {h}, W = {w}, C = {c}
{{
  O[n, c] = {init};
  for n in 0..N {{ for c in 0..C {{ for h in 0..H {{ for w in 0..W {{
    O[n, c] {op}= {term};
  }} }} }} }}
}}
",
        types.0, types.1
    )
}

#[test]
fn global_pooling_matches_in_groups_of_channels() {
    let text =
        |op: &str, init: &str, term: &str| global(("f16", "f32"), (5, 6, 512), op, init, term);
    let avg = text("+", "0.0", "f32(I[n, h, w, c]) * 0.0333");
    let max = text("max", "-1.0e9", "f32(I[n, h, w, c])");
    for t in [&avg, &max] {
        let plan = exact_with(t, "ascend-like", None);
        assert!(plan.summary.contains("window 5 x 6"), "{}", plan.summary);
        for chans in [512, 128, 64, 16] {
            let size = Size::whole(1, 1, chans);
            assert_eq!(
                exact_with(t, "ascend-like-halfgm", Some(size)).choice.size,
                size
            );
        }
        // loaded a part of the image rows at a time (5 rows: parts of 1, of 2 and 2 and 1,
        // of 4 and 1), each combined before the next, in the kernel's order still
        for (chans, part) in [(512, 1), (512, 2), (64, 4), (16, 2)] {
            let size = Size {
                part,
                ..Size::whole(1, 1, chans)
            };
            let plan = exact_with(t, "ascend-like", Some(size));
            assert_eq!(plan.choice.size, size);
            assert!(plan.describe()[1].contains(&format!("in parts of {part} image row")));
        }
    }
}

/// A global pooling whose image does not fit UB (40 x 40 pixels of 64 channels, f16
/// converted to f32: 400 KiB a tile of all of them, and a pixel's group of 16 channels is
/// the smallest the blocks allow) goes in parts of image rows.
#[test]
fn global_pooling_of_an_image_larger_than_ub_goes_in_parts() {
    let text = global(
        ("f16", "f32"),
        (40, 40, 64),
        "+",
        "0.0",
        "f32(I[n, h, w, c]) * 0.000625",
    );
    for machine in ["ascend-like", "mini"] {
        let plan = exact_with(&text, machine, None);
        assert!(plan.choice.size.part > 0, "{machine}: {:?}", plan.choice);
        pairwise_with(&text, machine, None);
    }
}

/// Global reductions of arrays with fewer dimensions than NHWC are views of global pooling
/// (`window::View`): a column sum, a maximum over `[n, h, c]`, a mean over `[h, w, c]`, a
/// weighted column sum, a mean over the images as well as the pixels of `[n, h, w, c]` (its
/// images' rows merged into one image's), a maximum of `[n, a, h, w, c]` over `a, h, w`
/// (merged likewise, per `n`); each matches exactly in the kernel's order and
/// (but the weighted one) within the tolerance pairwise, on `ascend-like` and `mini` (the
/// weighted one on `ascend-like`); a column goes in parts of rows, forced, and so do the
/// merged rows, in parts that straddle two images.
#[test]
fn global_reductions_of_fewer_dimensions_are_views_of_global_pooling() {
    let column = "kernel colsum(X: f32[B, L]) -> (Y: f32[L])
  params B = 200, L = 64
{
  Y[l] = sum(b) X[b, l];
}
";
    let nhc = "kernel nhc(X: f32[N, H, C]) -> (Y: f32[N, C])
  params N = 3, H = 40, C = 96
{
  Y[n, c] = max(h) X[n, h, c];
}
";
    let hwc = "kernel hwc(X: f16[H, W, C]) -> (Y: f32[C])
  params H = 12, W = 10, C = 64
{
  Y[c] = sum(h, w) f32(X[h, w, c]) * 0.5;
}
";
    let weighted = "kernel colw(X: f32[B, L], Wt: f32[B, L]) -> (Y: f32[L])
  params B = 24, L = 128
{
  Y[l] = sum(b) X[b, l] * Wt[b, l];
}
";
    let nhwc = "kernel nhwc(X: f16[N, H, W, C]) -> (Y: f32[C])
  params N = 3, H = 4, W = 5, C = 64
{
  Y[c] = sum(n, h, w) f32(X[n, h, w, c]) * 0.25;
}
";
    let five = "kernel five(X: f32[N, A, H, W, C]) -> (Y: f32[N, C])
  params N = 2, A = 3, H = 4, W = 5, C = 64
{
  Y[n, c] = max(a, h, w) X[n, a, h, w, c];
}
";
    for (text, form) in [
        (column, "1 x 200 x 1 x 64"),
        (five, "2 x 12 x 5 x 64"),
        (nhc, "3 x 40 x 1 x 96"),
        (hwc, "1 x 12 x 10 x 64"),
        (weighted, "1 x 24 x 1 x 128"),
        (nhwc, "1 x 12 x 5 x 64"),
    ] {
        // (the weights, loaded whole, do not fit `mini`'s UB)
        let machines: &[&str] = match text == weighted {
            true => &["ascend-like"],
            false => &["ascend-like", "mini"],
        };
        for &machine in machines {
            let plan = exact_with(text, machine, None);
            assert!(
                plan.summary.contains(&format!("({form}, viewed as NHWC)")),
                "{}",
                plan.summary
            );
            if text != weighted {
                pairwise_with(text, machine, None);
            }
        }
    }
    // 200 rows of 64 f32 in parts of 7 rows (the last of 4), both orders
    let parts = Size {
        part: 7,
        ..Size::whole(1, 1, 64)
    };
    exact_with(column, "mini", Some(parts));
    pairwise_with(column, "mini", Some(parts));
    // 12 merged rows (3 images of 4) in parts of 3 and of 5 (of 16 channels, which `mini`'s
    // UB holds): each part but the first of 3 ends in another image than it starts
    for part in [3, 5] {
        let parts = Size {
            part,
            ..Size::whole(1, 1, 16)
        };
        exact_with(nhwc, "mini", Some(parts));
        pairwise_with(nhwc, "mini", Some(parts));
    }
}

/// Compiles `text` with `--reorder-reductions` for `machine` (tiles `forced`, combined
/// pairwise, or the model's in the order the back end chooses), runs it against the
/// interpreter and compares: exactly when the plan keeps the kernel's order or the
/// reduction is a maximum or a minimum (which any order gives exactly), else as the fuzzer
/// does (within the tolerance, or no further from the exact result than the interpreter);
/// returns the plan.
fn reordered_with(text: &str, machine: &str, forced: Option<Size>) -> window::Plan {
    let k = common::kernel(text);
    let m = Machine::load(machine).unwrap();
    let (params, sizes) = defaults(&k);
    let compiled = match forced {
        None => compile(&k, &sizes, &m, true).unwrap_or_else(|e| panic!("{e}\n{text}")),
        Some(z) => {
            let w = window::recognise(&k, &sizes).unwrap().unwrap();
            let (program, plan) = window::compile(&w, &m, Order::Pairwise, Some(z))
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            codegen::npu::lift::check(&k, &sizes, &program, &m).unwrap();
            codegen::npu::Compiled {
                program,
                plan: Plan::Window(plan),
            }
        }
    };
    let Plan::Window(plan) = &compiled.plan else {
        panic!("not a window reduction:\n{text}")
    };
    assert_eq!(compiled.plan.exact(), plan.order == Order::Kernel);
    let (want, got) = common::interpreted_and_simulated(&k, &params, &compiled, &m, 2, text);
    let combine = window::recognise(&k, &sizes).unwrap().unwrap().combine;
    if compiled.plan.exact() || combine != Combine::Sum {
        assert_exact(&k, &want, &got, &format!("{machine}\n{text}"));
    } else {
        // the inputs `interpreted_and_simulated` drew
        let inputs = Memory::random(&k, &params, 7).unwrap();
        let bad = codegen::runner::judged(&k, &params, &inputs, &want, &got).unwrap();
        assert!(bad.is_empty(), "{machine}: {bad:?}\n{text}");
    }
    plan.clone()
}

/// [`reordered_with`], which must combine the terms pairwise.
fn pairwise_with(text: &str, machine: &str, forced: Option<Size>) -> window::Plan {
    let plan = reordered_with(text, machine, forced);
    assert_eq!(plan.order, Order::Pairwise, "{text}");
    plan
}

/// The forced sizes the spread tests try: 15 merged rows (3 images of 5) in parts of 2 (the
/// last of 1) dealt in 3 pieces (3, 3 and 2 parts, the short part in the last), in 8 (one
/// part each) and in 5 on `mini`'s 2 cores (uneven); 2 groups of 16 channels in 3 pieces
/// (6 work items).
fn spread_sizes() -> [(&'static str, Size); 4] {
    let spread = |part, spread, chans| Size {
        part,
        spread,
        ..Size::whole(1, 1, chans)
    };
    [
        ("ascend-like", spread(2, 3, 32)),
        ("ascend-like", spread(2, 8, 32)),
        ("mini", spread(2, 5, 32)),
        ("ascend-like-halfgm", spread(2, 3, 16)),
    ]
}

/// A global sum combined pairwise into f32 may spread each tile's parts over pieces
/// (`Size::spread`), each a work item whose partial sums are added into the output
/// atomically after every core has set its share of the output to the initial value
/// ([`spread_sizes`]); from an initial value of 1.5, set once and not once a piece. The
/// kernel's order is not spread (the pieces reorder the terms).
#[test]
fn global_sums_spread_over_the_cores_in_pieces_added_atomically() {
    let sum = |init: &str, out: &str| {
        format!(
            "kernel s(X: f16[N, H, W, C]) -> (Y: {out}[C])
  params N = 3, H = 5, W = 4, C = 32
{{
  Y[c] = {init};
  for c in 0..C {{ for n in 0..N {{ for h in 0..H {{ for w in 0..W {{
    Y[c] += {out}(X[n, h, w, c]) * 0.25;
  }} }} }} }}
}}
"
        )
    };
    for init in ["0.0", "1.5"] {
        let text = sum(init, "f32");
        for (machine, z) in spread_sizes() {
            let plan = pairwise_with(&text, machine, Some(z));
            assert_eq!(plan.choice.size, z);
            assert_eq!(plan.meet, Some(Meet::Atomic));
            let work = z.spread * 32 / z.chans;
            assert_eq!(plan.choice.tiles, work, "{machine}");
            assert!(plan.describe()[1].contains(&format!("dealt in {} pieces", z.spread)));
        }
    }
    // the model spreads a few channels' pooling of many pixels over the cores
    let plan = pairwise_with(
        &sum("0.0", "f32").replace("H = 5", "H = 40"),
        "ascend-like",
        None,
    );
    assert!(plan.choice.size.spread > 1, "{:?}", plan.choice);
    // not spread: the kernel's order
    let k = common::kernel(&sum("0.0", "f32"));
    let (_, sizes) = defaults(&k);
    let m = Machine::load("ascend-like").unwrap();
    let w = window::recognise(&k, &sizes).unwrap().unwrap();
    let z = spread_sizes()[0].1;
    assert!(window::compile(&w, &m, Order::Kernel, Some(z)).is_err());
    assert!(window::compile(&w, &m, Order::Pairwise, Some(z)).is_ok());
}

/// Maxima, minima and sums into f16 spread through a GM workspace (`Meet::Workspace`: the
/// machine's atomic `dma` only adds, and an f16 sum would round at every add): each piece
/// stores its partial result into its row of a `scratch` tensor, and after a `sync_all`
/// each core combines the rows of its share of the tiles with the initial value
/// ([`spread_sizes`]). Maxima and minima match exactly; the initial value (2.5 for the
/// sums, above every input for the minimum, 0.5 for the maximum, above half the inputs)
/// counts once; a scaled sum is scaled once. The model spreads a large maximum.
#[test]
fn global_maxima_minima_and_f16_sums_spread_through_a_gm_workspace() {
    let kernel = |init: &str, op: &str, out: &str, term: &str| {
        format!(
            "kernel s(X: f16[N, H, W, C]) -> (Y: {out}[C])
  params N = 3, H = 5, W = 4, C = 32
{{
  Y[c] = {init};
  for c in 0..C {{ for n in 0..N {{ for h in 0..H {{ for w in 0..W {{
    Y[c] {op} {term};
  }} }} }} }}
}}
"
        )
    };
    for text in [
        kernel("0.5", "max=", "f16", "X[n, h, w, c]"),
        kernel("2.0", "min=", "f16", "X[n, h, w, c]"),
        kernel("-4.0", "max=", "f32", "f32(X[n, h, w, c])"),
        kernel("2.5", "+=", "f16", "X[n, h, w, c] * 0.25"),
        kernel("2.5", "+=", "f16", "X[n, h, w, c]"),
    ] {
        for (machine, z) in spread_sizes() {
            let plan = pairwise_with(&text, machine, Some(z));
            assert_eq!(plan.choice.size, z);
            assert_eq!(plan.meet, Some(Meet::Workspace), "{text}");
            assert!(plan.describe()[1].contains("GM workspace"), "{text}");
        }
    }
    let large = kernel("-60000.0", "max=", "f16", "X[n, h, w, c]").replace("H = 5", "H = 40");
    let plan = pairwise_with(&large, "ascend-like", None);
    assert!(plan.choice.size.spread > 1, "{:?}", plan.choice);
    assert_eq!(plan.meet, Some(Meet::Workspace));
}

#[test]
fn global_pooling_reordered_is_combined_pairwise_within_the_tolerance() {
    let scaled = "f32(I[n, h, w, c]) * 0.0204";
    let cases = [
        // the example's kind: converted, then scaled in place, 49 pixels
        global(("f16", "f32"), (7, 7, 512), "+", "0.0", scaled),
        // f32 summed in the input's slot itself; 96 channels: a full chunk of lanes and
        // one of 32
        global(("f32", "f32"), (5, 6, 96), "+", "1.5", "I[n, h, w, c]"),
        // 272 pixels: passes of more than an instruction's 255 repeats
        global(
            ("f16", "f32"),
            (16, 17, 64),
            "max",
            "-1.0e9",
            "f32(I[n, h, w, c])",
        ),
        // f16 throughout, fewer channels than lanes
        global(
            ("f16", "f16"),
            (3, 5, 64),
            "min",
            "65504.0",
            "I[n, h, w, c]",
        ),
    ];
    for text in &cases {
        for machine in ["ascend-like", "ascend-like-halfgm"] {
            pairwise_with(text, machine, None);
        }
    }
    for chans in [512, 128, 16] {
        let size = Size::whole(1, 1, chans);
        assert_eq!(
            pairwise_with(&cases[0], "ascend-like", Some(size))
                .choice
                .size,
            size
        );
    }
    // in parts of image rows (the last shorter), each halved to a pixel and combined into
    // the outputs: 7 rows in parts of 3, and 16 rows of 17 pixels in parts of 5
    for (case, chans, part) in [(0, 512, 3), (0, 128, 1), (2, 64, 5)] {
        let size = Size {
            part,
            ..Size::whole(1, 1, chans)
        };
        let plan = pairwise_with(&cases[case], "ascend-like", Some(size));
        assert_eq!(plan.choice.size, size);
    }
    // a padded copy's border is skipped, in the kernel's order with or without the flag
    // (its pixels are not one after the other in UB)
    let padded = "kernel g(I: f16[N, H, W, C]) -> (O: f32[N, C])
  params N = 2, H = 5, W = 6, C = 64
{
  let X: f16[N, H + 2, W + 3, C];
  X[n, h, w, c] = 0.0;
  for n in 0..N { for h in 0..H { for w in 0..W { for c in 0..C {
    X[n, h + 1, w + 2, c] = I[n, h, w, c];
  } } } }
  O[n, c] = 0.5;
  for n in 0..N { for c in 0..C { for h in 0..H + 2 { for w in 0..W + 3 {
    O[n, c] += f32(X[n, h, w, c]);
  } } } }
}
";
    let plan = exact_with(padded, "ascend-like", None);
    assert!(plan.summary.contains("border 1 1 2 1"), "{}", plan.summary);
    // in groups of channels: a burst per pixel
    let half = Size::whole(1, 1, 32);
    exact_with(padded, "ascend-like", Some(half));
    let k = common::kernel(padded);
    let (params, sizes) = defaults(&k);
    let m = Machine::load("ascend-like").unwrap();
    let compiled = compile(&k, &sizes, &m, true).unwrap();
    assert!(compiled.plan.exact(), "{:?}", compiled.plan);
    let (want, got) = common::interpreted_and_simulated(&k, &params, &compiled, &m, 1, padded);
    assert_exact(&k, &want, &got, padded);
    // a weight per pixel (272 of them: converted in two instructions) keeps the kernel's
    // order, exactly
    let weighted = "kernel g(I: f16[N, H, W, C], Wt: f16[H, W, C]) -> (O: f32[N, C])
  params N = 2, H = 16, W = 17, C = 16
{
  O[n, c] = 0.0;
  for n in 0..N { for c in 0..C { for h in 0..H { for w in 0..W {
    O[n, c] += f32(I[n, h, w, c]) * f32(Wt[h, w, c]);
  } } } }
}
";
    let plan = reordered_with(weighted, "ascend-like", None);
    assert_eq!(plan.order, Order::Kernel);
    // without --reorder-reductions the kernel's order, exactly
    let k = common::kernel(&cases[0]);
    let (_, sizes) = defaults(&k);
    let m = Machine::load("ascend-like").unwrap();
    let kept = compile(&k, &sizes, &m, false).unwrap();
    assert!(matches!(&kept.plan, Plan::Window(p) if p.order == Order::Kernel));
    assert!(kept.plan.exact());
}

#[test]
fn the_examples_compile_and_match() {
    for (file, sizes) in [
        ("maxpool.pk", &[("OH", 10), ("OW", 9)][..]),
        (
            "depthwise-conv-nhwc.pk",
            &[("H", 12), ("W", 10), ("C", 64)][..],
        ),
    ] {
        let k = common::kernel(&common::example(file));
        let (params, all) = common::sizes_of(&k, sizes);
        for machine in ["ascend-like", "ascend-like-halfgm"] {
            let m = Machine::load(machine).unwrap();
            let compiled = compile(&k, &all, &m, false).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(matches!(compiled.plan, Plan::Window(_)), "{file}");
            let (want, got) =
                common::interpreted_and_simulated(&k, &params, &compiled, &m, 2, file);
            assert_exact(&k, &want, &got, file);
        }
    }
}

#[test]
fn candidates_are_the_models_tilings_each_matching() {
    let spec = Spec {
        h: 12,
        w: 12,
        ..Spec::pool("max", -65504.0)
    };
    let k = common::kernel(&spec.text());
    let (params, sizes) = defaults(&k);
    let m = Machine::load("ascend-like").unwrap();
    let all = candidates(&k, &sizes, &m, false, 4, Offer::Tilings).unwrap();
    assert_eq!(all.len(), 4);
    let w = window::recognise(&k, &sizes).unwrap().unwrap();
    let ranked = Model::new(&w, &m, Order::Kernel).unwrap().ranked();
    for (c, choice) in all.iter().zip(&ranked) {
        assert_eq!(
            c.label,
            format!(
                "tiles of {} x {} output pixels",
                choice.size.rows, choice.size.cols
            )
        );
        let (want, got) =
            common::interpreted_and_simulated(&k, &params, &c.compiled, &m, 1, &c.label);
        assert_exact(&k, &want, &got, &c.label);
    }
}

fn refusal(text: &str) -> String {
    let k = common::kernel(text);
    let (_, sizes) = defaults(&k);
    let m = Machine::load("ascend-like").unwrap();
    match compile(&k, &sizes, &m, true) {
        Err(NpuError::Unsupported(why)) => why,
        other => panic!("expected a refusal, got {other:?}\n{text}"),
    }
}

#[test]
fn window_reductions_outside_its_reach_are_refused_with_a_reason() {
    // NCHW: the window slides along the innermost dimension
    let nchw = common::example("depthwise-conv.pk");
    assert!(
        refusal(&nchw).contains("innermost dimension"),
        "{}",
        refusal(&nchw)
    );
    // 8 f16 channels: 16 bytes a pixel
    let narrow = Spec {
        c: 8,
        ..Spec::pool("max", -65504.0)
    };
    assert!(refusal(&narrow.text()).contains("32-byte blocks"));
    // a border of zeros around a maximum from -65504 could be the answer
    let zeros = Spec {
        fill: 0.0,
        ..Spec::pool("max", -65504.0)
    };
    assert!(refusal(&zeros.text()).contains("border of 0"));
    let ones = Spec {
        fill: 1.0,
        ..Spec::depthwise()
    };
    assert!(refusal(&ones.text()).contains("border of 1"));
    // a border as wide as the window
    let wide = Spec {
        pad: [3, 3, 1, 1],
        ..Spec::pool("max", -65504.0)
    };
    assert!(refusal(&wide.text()).contains("no larger than its padding"));
    // a product of the input with itself is not one instruction's term
    let square = Spec::pool("+", 0.0).text().replace(
        "O[n, p, q, c] += X[n, 2 * p + r, 2 * q + s, c];",
        "O[n, p, q, c] += X[n, 2 * p + r, 2 * q + s, c] * X[n, 2 * p + r, 2 * q + s, c];",
    );
    assert!(
        refusal(&square).contains("not one the vector unit computes"),
        "{}",
        refusal(&square)
    );
    // `*=` does not reduce
    let product = Spec::pool("*", 1.0);
    assert!(refusal(&product.text()).contains("`*=`"));
    // a reduction over the images and the pixels merges the images' rows into one image's,
    // so the images' loop must be nested just outside the rows' (not the columns' between)
    // and the weights cannot step by merged rows
    let merged = |loops: &str, term: &str, weights: &str| {
        format!(
            "kernel m(X: f32[N, H, W, C]{weights}) -> (Y: f32[C])
  params N = 2, H = 3, W = 4, C = 64
{{
  Y[c] = 0.0;
  for c in 0..C {{ {loops}
    Y[c] += {term};
  }} }} }} }}
}}
"
        )
    };
    for (loops, term, weights, why) in [
        (
            "for n in 0..N { for w in 0..W { for h in 0..H {",
            "X[n, h, w, c]",
            "",
            "nested in that order",
        ),
        (
            "for h in 0..H { for n in 0..N { for w in 0..W {",
            "X[n, h, w, c]",
            "",
            "nested in that order",
        ),
        (
            "for n in 0..N { for h in 0..H { for w in 0..W {",
            "X[n, h, w, c] * Wt[h, w, c]",
            ", Wt: f32[H, W, C]",
            "merged into one image's rows",
        ),
    ] {
        let why_not = refusal(&merged(loops, term, weights));
        assert!(why_not.contains(why), "{why_not}");
    }
}

/// isl's count of the rows and columns each output row and column reads (through the
/// padded copy) is the window's arithmetic clipped to the image; a tile loading one row
/// or column short of it is an internal error.
#[test]
fn isl_counts_each_output_rows_reads_and_short_tiles_are_caught() {
    let spec = Spec {
        pad: [1, 2, 2, 1],
        stride: (2, 3),
        r: 3,
        s: 4,
        h: 10,
        w: 13,
        ..Spec::pool("max", -65504.0)
    };
    let k = common::kernel(&spec.text());
    let (_, sizes) = defaults(&k);
    let w = window::recognise(&k, &sizes).unwrap().unwrap();
    let clipped = |first: i64, extent: i64, size: i64| {
        let (a, b) = (first.max(0), (first + extent).min(size));
        (a < b).then_some((a, b))
    };
    let rows: Vec<_> = (0..w.oh).map(|p| clipped(2 * p - 1, 3, w.h)).collect();
    let cols: Vec<_> = (0..w.ow).map(|q| clipped(3 * q - 2, 4, w.w)).collect();
    assert_eq!(w.reads.rows, rows);
    assert_eq!(w.reads.cols, cols);
    let exact = |p0: i64, q0: i64, r: i64, c: i64| {
        let at = [p0, q0, r, c].map(npu_sim::program::Expr::Const);
        window::program::input_box(&w, [&at[0], &at[1], &at[2], &at[3]]).map(|e| e.eval(&[], 0, 1))
    };
    for tiles in [(1, 1), (2, 3), (w.oh, w.ow)] {
        window::footprint::check(&w, &w.reads, tiles, exact).unwrap();
        for shrink in 0..4 {
            let short = |p0, q0, r, c| {
                let mut b = exact(p0, q0, r, c);
                match shrink {
                    0 | 2 => b[shrink] += 1,
                    _ => b[shrink] -= 1,
                }
                b
            };
            let err = window::footprint::check(&w, &w.reads, tiles, short).unwrap_err();
            assert!(
                matches!(&err, NpuError::Internal(why) if why.contains("where isl finds")),
                "{err:?}"
            );
        }
    }
}

#[test]
fn the_model_reports_the_busiest_cores_work() {
    let spec = Spec::pool("max", -65504.0);
    let k = common::kernel(&spec.text());
    let (_, sizes) = defaults(&k);
    let w = window::recognise(&k, &sizes).unwrap().unwrap();
    assert_eq!(w.combine, Combine::Max);
    let m = Machine::load("ascend-like").unwrap();
    let model = Model::new(&w, &m, Order::Kernel).unwrap();
    let best = model.ranked().remove(0);
    // every tiling the model ranks fits UB, and the chosen one is among them
    assert!(best.ub_bytes <= model.ub_capacity);
    assert!(best.cycles >= best.gm_cycles.max(best.vector_cycles));
    assert_eq!(best.tiles, {
        let [tp, tq, tc, n] = model.grid(best.size);
        assert_eq!(n, tp * tq * tc * w.batch);
        n
    });
}

mod random {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // 24 cases, or `PROPTEST_CASES` for a longer run
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24),
            ..ProptestConfig::default()
        })]

        /// Any small window reduction (`progen::window`, by seed) compiles for both presets
        /// and matches the interpreter exactly, with the model's tiles and with tiles of a
        /// drawn size (half the channels when those are whole 32-byte blocks).
        #[test]
        fn any_small_window_reduction_matches(
            seed in any::<u64>(),
            rows in 1i64..=4,
            cols in 1i64..=5,
            half in any::<bool>(),
        ) {
            let spec = progen::window::spec(seed);
            for machine in ["ascend-like", "ascend-like-halfgm"] {
                exact(&spec, machine);
            }
            let (oh, ow) = spec.out();
            // whole 32-byte blocks in the narrowest type
            let narrowest: i64 = if spec.types.0 == "f16" { 2 } else { 4 };
            let chans = match half && (spec.c / 2 * narrowest) % 32 == 0 {
                true => spec.c / 2,
                false => spec.c,
            };
            let size = Size::whole(rows.min(oh), cols.min(ow), chans);
            exact_with(&spec.text(), "ascend-like", Some(size));
        }

        /// Any small global pooling (`progen::window::global_spec`, by seed) matches on both
        /// presets: in the kernel's order exactly, and with `--reorder-reductions` (pairwise
        /// when the window is the image alone and the term the input, scaled or not) as the
        /// fuzzer judges reordered sums; and in groups of half the channels, and loaded
        /// `part` image rows at a time (without a border), both ways, and in `part + 1`
        /// pieces (added atomically, or meeting through a workspace).
        #[test]
        fn any_small_global_pooling_matches(
            seed in any::<u64>(),
            half in any::<bool>(),
            part in 1i64..4,
        ) {
            let spec = progen::window::global_spec(seed);
            let text = spec.text();
            let pairwise = spec.pad == [0; 4] && matches!(spec.term, Term::Input | Term::Scaled);
            for machine in ["ascend-like", "ascend-like-halfgm"] {
                exact(&spec, machine);
                let plan = reordered_with(&text, machine, None);
                prop_assert_eq!(plan.order == Order::Pairwise, pairwise);
            }
            // half the channels, when such tiles fit (whole 32-byte blocks, UB)
            let k = common::kernel(&text);
            let (_, sizes) = defaults(&k);
            let w = window::recognise(&k, &sizes).unwrap().unwrap();
            let m = Machine::load("ascend-like").unwrap();
            let size = Size::whole(1, 1, spec.c / 2);
            let fits = |z, order| Model::new(&w, &m, order).unwrap().cost(z).is_some();
            if half && fits(size, Order::Kernel) {
                exact_with(&text, "ascend-like", Some(size));
            }
            // (no parts with a border, nor in the kernel's order with the window's columns
            // outer)
            let parts = Size { part, ..Size::whole(1, 1, spec.c) };
            if fits(parts, Order::Kernel) {
                exact_with(&text, "ascend-like", Some(parts));
            }
            if pairwise && fits(parts, Order::Pairwise) {
                pairwise_with(&text, "ascend-like", Some(parts));
            }
            // spread over `part + 1` pieces (added atomically or through a workspace),
            // where the parts allow
            let spread = Size { spread: part + 1, ..parts };
            if pairwise && fits(spread, Order::Pairwise) {
                pairwise_with(&text, "ascend-like", Some(spread));
            }
        }
    }
}
