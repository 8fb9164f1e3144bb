//! Convolutions on the NPU, differentially: each compiled program runs in the simulator
//! (strict semantics, race detector) on the interpreter's inputs and must give its outputs
//! within the tolerance of a reordered f32 sum; the timing oracle must agree on the values;
//! kernels outside the back end's reach are refused with a reason.

mod common;

use common::kernel;

use codegen::npu::conv::{self, tiles::Tiles, Offer};
use codegen::npu::{candidates, compile, Compiled, NpuError, Plan};
use codegen::runner::tolerance;
use frontend::ir::{ElemType, Kernel};
use npu_sim::Machine;
use poly::interp::ParamValues;
use std::collections::BTreeMap;

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

/// A kernel at some sizes: the kernel, its parameters, and every size by name.
struct Case {
    kernel: Kernel,
    params: ParamValues,
    sizes: BTreeMap<String, i64>,
}

impl Case {
    fn new(text: &str, sizes: &[(&str, i64)]) -> Case {
        let kernel = kernel(text);
        let fixed: BTreeMap<String, i64> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        let params = ParamValues::resolve(&kernel, &fixed, &BTreeMap::new()).unwrap();
        let sizes = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
        Case {
            kernel,
            params,
            sizes,
        }
    }

    /// Runs `compiled` on the interpreter's random inputs (strict semantics, race detector)
    /// and returns the largest normwise error of the output; the timing oracle must agree
    /// on the values.
    fn error(&self, compiled: &Compiled, m: &Machine) -> f64 {
        let k = &self.kernel;
        let (want, got) =
            common::interpreted_and_simulated(k, &self.params, compiled, m, 2, &k.name);
        common::worst_error(k, &want, &got)
    }
}

/// Compiles `text` at `sizes` for `machine` and runs it ([`Case::error`]): the error and
/// the tiles the model chose.
fn differential(text: &str, sizes: &[(&str, i64)], machine: &str) -> (f64, Tiles) {
    let case = Case::new(text, sizes);
    let m = Machine::load(machine).unwrap();
    let compiled = compile(&case.kernel, &case.sizes, &m, true).unwrap_or_else(|e| panic!("{e}"));
    let err = case.error(&compiled, &m);
    let Plan::Conv { tiles, .. } = compiled.plan else {
        panic!("not a convolution: {:?}", compiled.plan)
    };
    (err, tiles)
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
    // a smaller first tile (3 pixels, then 16) whose second tile's band rows need two
    // pieces: the stream counted the slab's tiles without the smaller first one and loaded
    // one piece (an unwritten read, exit 2)
    check(
        Layout::Hwio,
        2,
        0,
        &sizes((1, 16, 5, 6, 16), 1, 0, 2),
        "mini",
    );
}

/// What a tiling streams and how: the cheapest tiling of each kind is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Kind {
    streamed: bool,
    /// The first tile goes through blocks of output channels.
    blocks: bool,
    /// The first tile goes through groups of window positions as the weights come by them.
    window: bool,
    /// The first tile is smaller.
    small_first: bool,
    /// Band chunks of several tiles.
    grouped: bool,
    /// The band goes through UB (else GM -> L1).
    band_hop: bool,
    /// The weights go through UB.
    weight_hop: bool,
    /// A slab has several tiles, the last one smaller.
    ragged: bool,
    /// A slab has several blocks of output channels.
    wide: bool,
}

impl Kind {
    fn of(t: &Tiles, pixels: i64) -> Kind {
        let ps = t.ps.min(pixels);
        Kind {
            streamed: t.streamed,
            blocks: t.kblocks > 1,
            window: t.window_group > 0,
            small_first: t.m0 < t.mp,
            grouped: t.band_group > 1,
            band_hop: t.band_piece > 0,
            weight_hop: t.weight_piece > 0,
            ragged: ps > t.m0 && (ps - t.m0) % t.mp != 0,
            wide: t.ks > 16,
        }
    }
}

/// Runs the cheapest tiling of each kind of `layout`'s convolution at `sz`; returns the
/// kinds run.
fn every_kind(layout: Layout, st: i64, p: i64, sz: &[(&'static str, i64)]) -> Vec<Kind> {
    let case = Case::new(&conv(layout, st, p), sz);
    let m = Machine::load("ascend-like").unwrap();
    let cv = conv::recognise(&case.kernel, &case.sizes, &m)
        .unwrap()
        .expect("a convolution");
    let pixels = cv.pixels();
    let mut cheapest: BTreeMap<Kind, (f64, Tiles)> = BTreeMap::new();
    for (cost, t) in Tiles::options(&cv, &m) {
        let kind = Kind::of(&t, pixels);
        if cheapest.get(&kind).is_none_or(|(c, _)| cost < *c) {
            cheapest.insert(kind, (cost, t));
        }
    }
    for (kind, (_, t)) in &cheapest {
        let compiled = conv::compile_with(cv.clone(), *t, &m).unwrap();
        let err = case.error(&compiled, &m);
        assert!(
            err <= tolerance(ElemType::F32),
            "{layout:?} {sz:?} {kind:?} {t:?}: {err:e}"
        );
    }
    cheapest.into_keys().collect()
}

/// Tilings the model would not choose: the first tile by blocks of output channels or
/// smaller, band chunks of several tiles, ragged slabs, slabs of one or several blocks of
/// output channels, and each stream through UB or straight from GM.
#[test]
fn every_way_of_streaming_matches() {
    let mut kinds = every_kind(Layout::Nhwc, 1, 1, &sizes((1, 20, 12, 12, 64), 3, 1, 1));
    kinds.extend(every_kind(
        Layout::Hwio,
        1,
        1,
        &sizes((1, 16, 10, 9, 256), 3, 1, 1),
    ));
    kinds.extend(every_kind(
        Layout::Nhwc,
        1,
        0,
        &sizes((1, 256, 9, 7, 32), 1, 0, 1),
    ));
    kinds.extend(every_kind(
        Layout::Nchw,
        2,
        1,
        &sizes((1, 16, 9, 9, 40), 3, 1, 2),
    ));
    // 256 channels: `[k, r, s, c]` weights straight from GM, by groups of window positions
    kinds.extend(every_kind(
        Layout::Nhwc,
        1,
        1,
        &sizes((1, 256, 7, 6, 40), 3, 1, 1),
    ));
    let any = |f: fn(&Kind) -> bool| kinds.iter().any(f);
    assert!(any(|k| k.blocks) && any(|k| k.small_first) && any(|k| k.grouped));
    assert!(any(|k| k.window) && any(|k| k.window && k.wide));
    assert!(any(|k| k.band_hop) && any(|k| k.streamed && !k.band_hop));
    assert!(any(|k| k.weight_hop) && any(|k| k.streamed && !k.weight_hop));
    assert!(any(|k| k.ragged) && any(|k| !k.streamed && k.wide));
}

/// The back end's candidates for a convolution (`polyc bench --target npu`): the model's
/// choice first, then the others cheapest first by the model, every program distinct, one
/// per tiling unless every variant is asked for, each race-free and matching the
/// interpreter.
#[test]
fn convolution_candidates_are_distinct_and_each_matches() {
    let case = Case::new(
        &conv(Layout::Nhwc, 1, 1),
        &sizes((1, 20, 9, 7, 56), 3, 1, 1),
    );
    let m = Machine::load("ascend-like").unwrap();
    let chosen = compile(&case.kernel, &case.sizes, &m, true).unwrap();
    for offer in [Offer::Tilings, Offer::Variants] {
        let found = candidates(&case.kernel, &case.sizes, &m, true, 4, offer).unwrap();
        assert!(found.len() > 1, "{offer:?}: {} candidate(s)", found.len());
        assert_eq!(found[0].compiled.program, chosen.program, "{offer:?}");
        let tiles: Vec<Tiles> = (found.iter())
            .map(|c| match c.compiled.plan {
                Plan::Conv { tiles, .. } => tiles,
                ref other => panic!("not a convolution: {other:?}"),
            })
            .collect();
        for (i, c) in found.iter().enumerate() {
            assert!(i == 0 || c.predicted >= found[i - 1].predicted, "{offer:?}");
            for (d, t) in found[i + 1..].iter().zip(&tiles[i + 1..]) {
                assert_ne!(c.compiled.program, d.compiled.program, "{offer:?}");
                if offer == Offer::Tilings {
                    let (a, b) = (tiles[i], *t);
                    assert_ne!((a.ks, a.ps, a.mp), (b.ks, b.ps, b.mp));
                }
            }
            let err = case.error(&c.compiled, &m);
            assert!(err <= tolerance(ElemType::F32), "{}: {err:e}", c.label);
        }
    }
}

/// A slab of fewer output channels than the others (56 in slabs of 32) whose first tile
/// goes through blocks of them, the last block short: the program matches.
#[test]
fn a_short_last_slab_of_channels_by_blocks_matches() {
    let case = Case::new(
        &conv(Layout::Nhwc, 1, 1),
        &sizes((1, 20, 9, 7, 56), 3, 1, 1),
    );
    let m = Machine::load("ascend-like").unwrap();
    let cv = conv::recognise(&case.kernel, &case.sizes, &m)
        .unwrap()
        .expect("a convolution");
    let (_, t) = (Tiles::ranked(&cv, &m).into_iter())
        .find(|(_, t)| t.ks == 32 && t.kblocks > 1)
        .expect("slabs of 32 channels by blocks");
    let err = case.error(&conv::compile_with(cv, t, &m).unwrap(), &m);
    assert!(err <= tolerance(ElemType::F32), "{t:?}: {err:e}");
}

/// `[k, r, s, c]` weights of 256 channels streamed by groups of window positions (every
/// output channel's positions of a group one burst, straight into their fractals), the
/// slab's first tile going through the groups as they arrive: one window row and two (the
/// last group then shorter), slabs of 32 channels with a short last one (40 channels), on
/// both presets of `ascend-like`; each program matches the interpreter.
#[test]
fn a_first_tile_by_groups_of_window_positions_matches() {
    let case = Case::new(
        &conv(Layout::Nhwc, 1, 1),
        &sizes((1, 256, 7, 6, 40), 3, 1, 1),
    );
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        let m = Machine::load(machine).unwrap();
        let cv = conv::recognise(&case.kernel, &case.sizes, &m)
            .unwrap()
            .expect("a convolution");
        let ranked = Tiles::ranked(&cv, &m);
        for group in [3, 6] {
            let (_, t) = (ranked.iter())
                .find(|(_, t)| t.window_group == group && t.ks == 32 && t.m0 < t.ps)
                .unwrap_or_else(|| panic!("{machine}: first tiles by groups of {group}"));
            let compiled = conv::compile_with(cv.clone(), *t, &m).unwrap();
            let err = case.error(&compiled, &m);
            assert!(err <= tolerance(ElemType::F32), "{machine} {t:?}: {err:e}");
        }
    }
}

/// The model streams conv4_x's 3x3 layer of ResNet-50 (256 channels, `[k, r, s, c]`) by
/// window rows on `ascend-like`, its first tile going through them as they arrive: the
/// weights of a window row for all 32 channels of a slab come first, one burst per channel
/// (the program says so and loads them so). On the half-bandwidth preset, where GM binds,
/// its weights keep coming by output channels.
#[test]
fn resnet_conv4_streams_its_weights_by_window_rows() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/resnet50/conv4-3x3.pk"
    ))
    .unwrap();
    let case = Case::new(&text, &[]);
    for (machine, group) in [("ascend-like", 3), ("ascend-like-halfgm", 0)] {
        let m = Machine::load(machine).unwrap();
        let compiled = compile(&case.kernel, &case.sizes, &m, true).unwrap();
        let Plan::Conv { tiles, .. } = compiled.plan else {
            panic!("not a convolution")
        };
        assert_eq!(tiles.window_group, group, "{machine}: {tiles:?}");
        let text = npu_sim::print(&compiled.program);
        let loads = "count=min(256 - 32*((core + slab)%8), 32), len=768, src_stride=2304";
        assert_eq!(text.contains(loads), group > 0, "{machine}");
    }
}

/// A slab with a smaller first tile whose pixels, counted in whole tiles, make fewer tiles
/// than it has (15 pixels: 9 then 6, where 15 / 16 rounds up to one), its band in one chunk
/// of UB pieces: every band row is streamed (the pieces once covered the first tile only,
/// and the second tile read rows never written).
#[test]
fn a_slab_with_a_smaller_first_tile_streams_its_whole_band() {
    let case = Case::new(
        &conv(Layout::Hwio, 1, 1),
        &sizes((1, 16, 10, 9, 256), 3, 1, 1),
    );
    let m = Machine::load("ascend-like").unwrap();
    let cv = conv::recognise(&case.kernel, &case.sizes, &m)
        .unwrap()
        .expect("a convolution");
    let (_, t) = (Tiles::ranked(&cv, &m).into_iter())
        .find(|(_, t)| {
            t.m0 < t.mp
                && (t.ps + t.mp - 1) / t.mp < t.count(t.ps)
                && t.band_group > 1
                && t.band_piece > 0
        })
        .expect("such a tiling");
    let err = case.error(&conv::compile_with(cv, t, &m).unwrap(), &m);
    assert!(err <= tolerance(ElemType::F32), "{t:?}: {err:e}");
}

/// Kernels the back end refuses, each with its reason.
/// `text`'s convolution followed by `f(.)` of its sums: the statement `O[..] = sum(..) ..;`
/// becomes `O[..] = f(sum(..) .., rest)` (`rest` the function's other arguments, if any).
fn after(text: &str, f: &str, rest: &str) -> String {
    (text.lines())
        .map(|l| match l.split_once("= sum(") {
            Some((target, sum)) => {
                let sum = sum.trim_end().trim_end_matches(';');
                format!("{target}= {f}(sum({sum}{rest});")
            }
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Compiles `text` at `sz` for `machine` as a convolution whose summary mentions `fused`
/// and whose program declares `tensors` GM tensors (none for the sums, a temporary), and
/// checks it against the interpreter.
fn fused(text: &str, sz: &[(&str, i64)], machine: &str, (what, tensors): (&str, usize)) {
    let case = Case::new(text, sz);
    let m = Machine::load(machine).unwrap();
    let compiled = compile(&case.kernel, &case.sizes, &m, true).unwrap();
    let Plan::Conv { summary, .. } = &compiled.plan else {
        panic!("not a convolution: {:?}", compiled.plan)
    };
    assert!(summary.contains(what), "{summary}");
    let names: Vec<&str> = (compiled.program.tensors.iter())
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names.len(), tensors, "{names:?}");
    let err = case.error(&compiled, &m);
    let elem = (case.kernel.arrays.iter())
        .find(|a| a.role.is_output())
        .map_or(ElemType::F32, |a| a.elem);
    assert!(err <= tolerance(elem), "{sz:?} on {machine}: {err:e}");
}

/// A ReLU after the convolution is applied by the copy out of L0C (the sums never reach
/// GM), in every layout, padded or not, on three presets.
#[test]
fn a_relu_after_the_convolution_matches_the_interpreter() {
    for (layout, st, p) in [
        (Layout::Nhwc, 1, 1),
        (Layout::Hwio, 2, 0),
        (Layout::Nchw, 1, 1),
    ] {
        let text = after(&conv(layout, st, p), "max", ", 0.0");
        assert!(text.contains("max(sum("), "{text}");
        let small = after(&conv(layout, 1, 0), "max", ", 0.0");
        for (machine, text, sz) in [
            ("ascend-like", &text, sizes((1, 20, 9, 7, 24), 3, p, st)),
            (
                "ascend-like-halfgm",
                &text,
                sizes((1, 20, 9, 7, 24), 3, p, st),
            ),
            ("mini", &small, sizes((1, 16, 5, 6, 16), 1, 0, 1)),
        ] {
            fused(text, &sz, machine, ("ReLU", 3));
        }
    }
}

/// A convolution whose output is f16 or bf16 (`O = f16(sum ..)`, or with its ReLU) is
/// rounded by the copy out of L0C, in both NHWC weight layouts, strided and padded, on three
/// presets, with two images (whose outputs start on GM blocks of 16 f16 values); an NCHW
/// output is refused with the reason (its tiles are channel rows of the output's type).
#[test]
fn an_f16_output_is_rounded_on_its_way_out_of_l0c() {
    let half = |text: &str, elem: &str| text.replace("O: f32", &format!("O: {elem}"));
    for (layout, st, p, elem) in [
        (Layout::Nhwc, 1, 1, "f16"),
        (Layout::Hwio, 2, 0, "bf16"),
        (Layout::Nhwc, 2, 1, "f16"),
    ] {
        let cast = half(&after(&conv(layout, st, p), elem, ""), elem);
        let relu = half(
            &after(&conv(layout, st, p), &format!("{elem}(max"), ", 0.0)"),
            elem,
        );
        assert!(cast.contains(&format!("{elem}(sum(")), "{cast}");
        assert!(relu.contains(&format!("{elem}(max(sum(")), "{relu}");
        let small = half(&after(&conv(layout, 1, 0), elem, ""), elem);
        for (machine, text, sz, what) in [
            (
                "ascend-like",
                &cast,
                sizes((2, 20, 9, 7, 32), 3, p, st),
                "rounded to",
            ),
            (
                "ascend-like-halfgm",
                &relu,
                sizes((1, 20, 9, 7, 48), 3, p, st),
                "ReLU and rounding",
            ),
            (
                "mini",
                &small,
                sizes((1, 16, 5, 6, 16), 1, 0, 1),
                "rounded to",
            ),
        ] {
            fused(text, &sz, machine, (what, 3));
        }
    }
    let m = Machine::load("ascend-like").unwrap();
    let text = half(&after(&conv(Layout::Nchw, 1, 0), "f16", ""), "f16");
    let case = Case::new(&text, &[]);
    let refused = compile(&case.kernel, &case.sizes, &m, true);
    assert!(
        matches!(refused, Err(NpuError::Unsupported(ref w)) if w.contains("only an NHWC convolution's output")),
        "{refused:?}"
    );
}

/// A bias and a ReLU after an NHWC convolution (`max((sum ..) + bias[k], 0)`, the shape of a
/// ResNet layer with its batch normalisation folded) run on the vector unit on each tile in
/// UB: no tensor for the sums, the interpreter's values on two presets, strided and padded,
/// with both NHWC weight layouts, and into an f16 output; after an NCHW convolution (the
/// bias would be per row of the tile) it is refused with the reason.
#[test]
fn a_bias_and_relu_after_an_nhwc_convolution_run_on_the_vector_unit() {
    let with_bias = |layout: Layout, st: i64, p: i64| {
        after(&conv(layout, st, p), "max(", ") + bias[k], 0.0")
            .replace(") -> (O:", ", bias: f32[K]) -> (O:")
    };
    for (layout, st, p) in [
        (Layout::Nhwc, 1, 1),
        (Layout::Hwio, 2, 1),
        (Layout::Nhwc, 1, 0),
    ] {
        let text = with_bias(layout, st, p);
        assert!(
            text.contains("max((sum(") && text.contains("bias: f32[K]"),
            "{text}"
        );
        for machine in ["ascend-like", "ascend-like-halfgm"] {
            let sz = sizes((1, 20, 9, 7, 48), 3, p, st);
            fused(&text, &sz, machine, ("by the vector unit", 4));
        }
    }
    // into an f16 output: the sums drained in f32, the results rounded by the vector unit
    let half = after(&conv(Layout::Nhwc, 1, 1), "f16(max(", ") + bias[k], 0.0)")
        .replace(") -> (O: f32", ", bias: f32[K]) -> (O: f16");
    assert!(half.contains("f16(max((sum("), "{half}");
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        fused(
            &half,
            &sizes((1, 20, 9, 7, 48), 3, 1, 1),
            machine,
            ("by the vector unit", 4),
        );
    }
    // output channels that no slab of 16 divides but 16 itself (20, 40, 100): a last slab
    // whose channels past K are computed on zeroed padding and never stored
    for (k, text) in [
        (20, &with_bias(Layout::Nhwc, 1, 1)),
        (40, &half),
        (100, &half),
    ] {
        for machine in ["ascend-like", "ascend-like-halfgm"] {
            let sz = sizes((1, 16, 8, 7, k), 3, 1, 1);
            fused(text, &sz, machine, ("by the vector unit", 4));
        }
    }
    // two images of f16 outputs: each starts on a GM block of 16 values, or is refused
    let two = |k| sizes((2, 16, 3, 3, k), 3, 1, 1);
    fused(&half, &two(32), "ascend-like", ("by the vector unit", 4));
    let m = Machine::load("ascend-like").unwrap();
    let case = Case::new(&half, &two(24));
    let refused = compile(&case.kernel, &case.sizes, &m, true);
    assert!(
        matches!(refused, Err(NpuError::Unsupported(ref w)) if w.contains("3 x 3 x 24 f16 values do not start on 32-byte GM blocks")),
        "{refused:?}"
    );
    let case = Case::new(&with_bias(Layout::Nchw, 1, 0), &[]);
    let refused = compile(&case.kernel, &case.sizes, &m, true);
    assert!(
        matches!(refused, Err(NpuError::Unsupported(ref w)) if w.contains("`bias` is indexed [k]")),
        "{refused:?}"
    );
}

#[test]
fn convolutions_outside_its_reach_are_refused_with_a_reason() {
    let m = Machine::load("ascend-like").unwrap();
    let refuse = |text: &str, reorder: bool| {
        let case = Case::new(text, &[]);
        match compile(&case.kernel, &case.sizes, &m, reorder) {
            Err(e) => e,
            Ok(_) => panic!("compiled:\n{text}"),
        }
    };
    // a vector per output pixel after the convolution (spans are pixels, not a product's
    // rows)
    let per_pixel = after(&conv(Layout::Nhwc, 1, 1), "max(", ") * sc[n, p, q], 0.0")
        .replace(") -> (O: f32", ", sc: f32[N, OH, OW]) -> (O: f32");
    assert!(per_pixel.contains("* sc[n, p, q]"), "{per_pixel}");
    let case = Case::new(&per_pixel, &sizes((1, 16, 8, 8, 16), 3, 1, 1));
    let e = compile(&case.kernel, &case.sizes, &m, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("reads `sc` once per output pixel"), "{e}");
    let depthwise = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/depthwise-conv.pk"
    ))
    .unwrap();
    assert!(
        matches!(refuse(&depthwise, true), NpuError::Unsupported(ref w) if w.contains("depthwise")),
        "{:?}",
        refuse(&depthwise, true)
    );
    let plain = conv(Layout::Nchw, 1, 0);
    assert!(matches!(refuse(&plain, false), NpuError::ReorderNotAllowed));
    let strides = "kernel c(I: f16[1, 16, 9, 9], W: f16[16, 16, 3, 3]) -> (O: f32[1, 16, 4, 7])
        { O[n, k, p, q] = sum(c, r, s) f32(I[n, c, 2 * p + r, q + s]) * f32(W[k, c, r, s]); }";
    assert!(
        matches!(refuse(strides, true), NpuError::Unsupported(ref w) if w.contains("one stride")),
        "{:?}",
        refuse(strides, true)
    );
    let offset = "kernel c(I: f16[1, 16, 9, 9], W: f16[16, 16, 3, 3]) -> (O: f32[1, 16, 6, 6])
        { O[n, k, p, q] = sum(c, r, s) f32(I[n, c, p + r + 1, q + s + 1]) * f32(W[k, c, r, s]); }";
    assert!(
        matches!(refuse(offset, true), NpuError::Unsupported(ref w) if w.contains("zero-padded copy")),
        "{:?}",
        refuse(offset, true)
    );
}

/// A residual after an NHWC convolution (`max((sum ..) + R[n, p, q, k], 0)`, a ResNet
/// bottleneck's last layer with the shortcut added; with a bias too) is added by the vector
/// unit on each tile in UB, its spans loaded beside the tiles: no tensor for the sums, the
/// interpreter's values on two presets, strided and padded, with both NHWC weight layouts,
/// and f16 throughout.
/// With input channels off multiples of 16 (whose streams spread them through the vector
/// unit, with the flags the residual's loads need) it is refused with the reason.
#[test]
fn a_residual_after_an_nhwc_convolution_is_added_by_the_vector_unit() {
    let with = |layout: Layout, st: i64, p: i64, bias: bool| {
        let (extra, decl) = match bias {
            true => (" + bias[k]", ", bias: f32[K], Res: f32[N, OH, OW, K]"),
            false => ("", ", Res: f32[N, OH, OW, K]"),
        };
        after(
            &conv(layout, st, p),
            "max(",
            &format!("){extra} + Res[n, p, q, k], 0.0"),
        )
        .replace(") -> (O:", &format!("{decl}) -> (O:"))
    };
    for (layout, st, p, bias) in [
        (Layout::Nhwc, 1, 1, false),
        (Layout::Hwio, 2, 1, false),
        (Layout::Nhwc, 1, 0, true),
    ] {
        let text = with(layout, st, p, bias);
        assert!(text.contains("+ Res[n, p, q, k], 0.0)"), "{text}");
        for machine in ["ascend-like", "ascend-like-halfgm"] {
            let sz = sizes((1, 32, 9, 7, 48), 3, p, st);
            fused(
                &text,
                &sz,
                machine,
                ("by the vector unit", 4 + usize::from(bias)),
            );
        }
    }
    // f16 throughout: an f16 shortcut into an f16 output
    let half = after(
        &conv(Layout::Nhwc, 1, 1),
        "f16(max(",
        ") + f32(Res[n, p, q, k]), 0.0)",
    )
    .replace(") -> (O: f32", ", Res: f16[N, OH, OW, K]) -> (O: f16");
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        fused(
            &half,
            &sizes((1, 32, 9, 7, 48), 3, 1, 1),
            machine,
            ("by the vector unit", 4),
        );
    }
    let m = Machine::load("ascend-like").unwrap();
    let case = Case::new(
        &with(Layout::Nhwc, 1, 1, false),
        &sizes((1, 20, 9, 7, 48), 3, 1, 1),
    );
    let refused = compile(&case.kernel, &case.sizes, &m, true);
    assert!(
        matches!(refused, Err(NpuError::Unsupported(ref w)) if w.contains("reads `Res`, a tile of the output's shape (a residual), and its 20 input channels are not a multiple of 16")),
        "{refused:?}"
    );
}

mod random_convolutions {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Random small convolutions in every layout, on `ascend-like` or the tiny `mini`:
        /// the program matches the interpreter, or (several images not on GM blocks) the
        /// kernel is refused with that reason.
        #[test]
        fn any_small_convolution_matches(
            layout in 0usize..3, batch in 1i64..3, c in 1i64..40, k in 1i64..40,
            h in 3i64..12, w in 3i64..12, window in prop_oneof![Just(1i64), Just(3)],
            st in 1i64..3, pad in 0i64..2, tiny in proptest::bool::ANY,
        ) {
            let machine = if tiny { "mini" } else { "ascend-like" };
            let p = if window == 1 { 0 } else { pad };
            let sz = sizes((batch, c, h, w, k), window, p, st);
            let text = conv(LAYOUTS[layout], st, p);
            let image = out(h, window, p, st) * out(w, window, p, st) * k;
            if batch > 1 && image % 8 != 0 {
                let case = Case::new(&text, &sz);
                let m = Machine::load("ascend-like").unwrap();
                let refused = compile(&case.kernel, &case.sizes, &m, true);
                prop_assert!(
                    matches!(refused, Err(NpuError::Unsupported(ref w)) if w.contains("32-byte GM blocks")),
                    "{refused:?}"
                );
            } else {
                let case = Case::new(&text, &sz);
                let m = Machine::load(machine).unwrap();
                match compile(&case.kernel, &case.sizes, &m, true) {
                    // mini's buffers are small: no tiling may fit
                    Err(NpuError::Unsupported(w)) if tiny && w.contains("no tiling") => {}
                    Ok(compiled) => {
                        let err = case.error(&compiled, &m);
                        prop_assert!(err <= tolerance(ElemType::F32), "{sz:?} on {machine}: {err:e}");
                    }
                    Err(e) => prop_assert!(false, "{sz:?} on {machine}: {e}"),
                }
            }
        }

        /// Random NHWC convolutions with a bias and ReLU on the vector unit, into f32 or f16,
        /// or with a residual (f32; input channels then a multiple of 16, as the residual
        /// needs), output channels any number (a last slab's channels past them computed on
        /// padding), on both presets: the program matches the interpreter.
        #[test]
        fn any_small_convolution_with_a_bias_matches(
            c in 1i64..40, k in 1i64..70, h in 3i64..10, w in 3i64..10,
            window in prop_oneof![Just(1i64), Just(3)], st in 1i64..3, pad in 0i64..2,
            f16 in proptest::bool::ANY, halfgm in proptest::bool::ANY,
            residual in proptest::bool::ANY,
        ) {
            let machine = if halfgm { "ascend-like-halfgm" } else { "ascend-like" };
            let p = if window == 1 { 0 } else { pad };
            let c = if residual { (c + 15) / 16 * 16 } else { c };
            let sz = sizes((1, c, h, w, k), window, p, st);
            let (f16, (f, close, input)) = match (residual, f16) {
                (true, _) => (false, ("max(", ") + Res[n, p, q, k], 0.0", "Res: f32[N, OH, OW, K]")),
                (false, true) => (true, ("f16(max(", ") + bias[k], 0.0)", "bias: f32[K]")),
                (false, false) => (false, ("max(", ") + bias[k], 0.0", "bias: f32[K]")),
            };
            let out_elem = if f16 { "f16" } else { "f32" };
            let text = after(&conv(Layout::Nhwc, st, p), f, close)
                .replace(") -> (O: f32", &format!(", {input}) -> (O: {out_elem}"));
            prop_assert!(text.contains(close) && text.contains(input), "{}", text);
            let case = Case::new(&text, &sz);
            let m = Machine::load(machine).unwrap();
            match compile(&case.kernel, &case.sizes, &m, true) {
                Ok(compiled) => {
                    let err = case.error(&compiled, &m);
                    let elem = if f16 { ElemType::F16 } else { ElemType::F32 };
                    prop_assert!(err <= tolerance(elem), "{sz:?} on {machine}: {err:e}");
                }
                Err(e) => prop_assert!(false, "{sz:?} on {machine}: {e}"),
            }
        }
    }
}

/// isl's rows of each output pixel, from the access relations (through the padded copy when
/// there is one), agree with the window arithmetic: `[st*oy - p, st*oy - p + R)` clipped to
/// the input's rows (none when the window's columns are all padding), and `R` rows of the
/// padded input.
#[test]
fn isl_counts_the_rows_each_output_pixel_reads() {
    let m = Machine::load("ascend-like").unwrap();
    for layout in LAYOUTS {
        for (st, p, r) in [(1, 0, 3), (1, 1, 3), (2, 3, 7), (2, 0, 1), (1, 4, 3)] {
            let sz = sizes((1, 16, 9, 7, 16), r, p, st);
            let case = Case::new(&conv(layout, st, p), &sz);
            let cv = conv::recognise(&case.kernel, &case.sizes, &m)
                .unwrap()
                .expect("a convolution");
            let (h, w, ow) = (9, 7, out(7, r, p, st));
            for px in 0..cv.oh * cv.ow {
                let (top, left) = (px / ow * st - p, px % ow * st - p);
                let (first, end) = (top.max(0), (top + r).min(h));
                let columns = left.max(0) < (left + r).min(w);
                let want = if first < end && columns {
                    (first, end)
                } else {
                    (0, 0)
                };
                let what = format!("{layout:?} stride {st} pad {p} window {r}, pixel {px}");
                assert_eq!(cv.rows.input_rows(px, px + 1), want, "{what}");
                assert_eq!(cv.rows.padded_rows(px, px + 1), r, "{what}");
            }
        }
    }
}

/// The compile-time proof that bands and windows hold what the instances read fails when
/// they do not: a 3x3 convolution's program checked against the rows of a 5x5 one (the same
/// output, two more rows a pixel).
#[test]
fn a_band_short_of_the_rows_isl_counts_is_an_internal_error() {
    use codegen::npu::conv::geometry::{Orientation, Shape};
    let m = Machine::load("ascend-like").unwrap();
    let recognise = |r: i64, p: i64| {
        let case = Case::new(
            &conv(Layout::Nhwc, 1, p),
            &sizes((1, 16, 12, 12, 16), r, p, 1),
        );
        conv::recognise(&case.kernel, &case.sizes, &m)
            .unwrap()
            .unwrap()
    };
    let (mut three, five) = (recognise(3, 1), recognise(5, 2));
    let tiles = Tiles::choose(&three, &m).unwrap();
    let shape = Shape::new(&three, &tiles, m.cores as i64);
    assert_eq!(Orientation::of(&three), Orientation::PixelRows);
    conv::footprint::check(&three, &tiles, &shape).unwrap();
    three.rows = five.rows;
    let err = conv::footprint::check(&three, &tiles, &shape).unwrap_err();
    assert!(
        matches!(&err, NpuError::Internal(why) if why.contains("short of rows")),
        "{err}"
    );
}

/// The check also refuses a band sized one row short of what a slab loads, pieces one
/// pixel short of a streamed chunk, and tiles whose stores leave part of the output out.
#[test]
fn buffers_short_of_what_a_slab_loads_are_an_internal_error() {
    use codegen::npu::conv::geometry::Shape;
    let m = Machine::load("ascend-like").unwrap();
    let case = Case::new(
        &conv(Layout::Nhwc, 1, 1),
        &sizes((1, 16, 12, 12, 16), 3, 1, 1),
    );
    let cv = conv::recognise(&case.kernel, &case.sizes, &m)
        .unwrap()
        .unwrap();
    let tiles = Tiles::choose(&cv, &m).unwrap();
    assert!(tiles.streamed, "{tiles:?}");
    let shape = Shape::new(&cv, &tiles, m.cores as i64);
    conv::footprint::check(&cv, &tiles, &shape).unwrap();
    for shrink in [
        (|s: &mut Shape| s.band_rows -= 1) as fn(&mut Shape),
        |s: &mut Shape| s.max_chunk -= 1,
    ] {
        let mut short = shape.clone();
        shrink(&mut short);
        let err = conv::footprint::check(&cv, &tiles, &short).unwrap_err();
        assert!(
            matches!(&err, NpuError::Internal(why) if why.contains("into a band of")),
            "{err}"
        );
    }
    // a slab's last tile not stored
    let mut fewer = shape.clone();
    fewer.tiles -= 1;
    let err = conv::footprint::check(&cv, &tiles, &fewer).unwrap_err();
    assert!(
        matches!(&err, NpuError::Internal(why) if why.contains("do not cover")),
        "{err}"
    );
}
