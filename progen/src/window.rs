//! Random window reductions of the shape the NPU back end compiles on its vector unit
//! (`codegen::npu::window`): pooling (`max=`, `min=`, `+=`, the last sometimes scaled) and
//! depthwise convolutions, NHWC, over a padded copy of the input or the input itself, with
//! random sizes, windows, strides and borders, in `f32` or `f16` (the depthwise ones and
//! scaled sums `f16` into `f32`). Borders hold what the back end can skip: the initial
//! value of a maximum or minimum, zeros around a sum. [`generate`] is a pure function of
//! its seed. [`global_spec`] draws global pooling (the window the whole image, `O[n, c]`)
//! apart, so that the window reductions of a seed stay what they were.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What a window kernel's term is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    /// The input.
    Input,
    /// The input times `Wt[r, s, c]` (`Wt[s, r, c]` when `swapped`).
    Product {
        /// Whether the weights are `[s, r, c]`.
        swapped: bool,
    },
    /// The input times 0.25.
    Scaled,
}

/// A window kernel: its sizes, reduction, term, types, strides and border.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Images.
    pub n: i64,
    /// Input rows.
    pub h: i64,
    /// Input columns.
    pub w: i64,
    /// Channels.
    pub c: i64,
    /// Window rows.
    pub r: i64,
    /// Window columns.
    pub s: i64,
    /// Strides between windows, rows and columns.
    pub stride: (i64, i64),
    /// The border: top, bottom, left, right.
    pub pad: [i64; 4],
    /// `+`, `max` or `min`.
    pub op: &'static str,
    /// What each window position contributes.
    pub term: Term,
    /// Input (and weights) type, output type.
    pub types: (&'static str, &'static str),
    /// The output's initial value.
    pub init: f64,
    /// The border's value (when there is a border).
    pub fill: f64,
    /// Whether the loop over window columns is outside the one over window rows.
    pub s_outer: bool,
    /// Whether the window is the whole image with its border (global pooling: the output
    /// is `O[n, c]`, the window `R x S` the padded image, the strides unused).
    pub global: bool,
    /// Global pooling without a border: whether the arrays leave out the images' dimension
    /// (one image: `O[c]`) and the columns' (one column: `I[.., h, c]`), views of the NHWC
    /// form that the NPU back end compiles as global pooling (a column sum is both).
    pub flat: (bool, bool),
    /// Global pooling over the images as well as the pixels: the output leaves out the
    /// images' dimension that the input keeps (`O[c]` from `I[n, h, w, c]`, the images' loop
    /// just outside the rows', the columns' outside both when [`Spec::s_outer`]), which the
    /// NPU back end compiles as one image of the images' rows.
    pub over_images: bool,
}

impl Spec {
    /// Pooling with `op` from `init` over a border of `init`: 3x3 windows, stride 2,
    /// border 1, 9 x 11 x 64 f16.
    pub fn pool(op: &'static str, init: f64) -> Spec {
        Spec {
            n: 1,
            h: 9,
            w: 11,
            c: 64,
            r: 3,
            s: 3,
            stride: (2, 2),
            pad: [1, 1, 1, 1],
            op,
            term: Term::Input,
            types: ("f16", "f16"),
            init,
            fill: init,
            s_outer: false,
            global: false,
            flat: (false, false),
            over_images: false,
        }
    }

    /// A depthwise 3x3 convolution, stride 1, zero border 1, f16 into f32.
    pub fn depthwise() -> Spec {
        Spec {
            stride: (1, 1),
            op: "+",
            term: Term::Product { swapped: false },
            types: ("f16", "f32"),
            init: 0.0,
            fill: 0.0,
            ..Spec::pool("+", 0.0)
        }
    }

    /// Output rows and columns (one of each for global pooling).
    pub fn out(&self) -> (i64, i64) {
        if self.global {
            return (1, 1);
        }
        let [t, b, l, r] = self.pad;
        (
            (self.h + t + b - self.r) / self.stride.0 + 1,
            (self.w + l + r - self.s) / self.stride.1 + 1,
        )
    }

    /// The kernel, in the kernel language.
    pub fn text(&self) -> String {
        let (ti, to) = self.types;
        let (oh, ow) = self.out();
        let [pt, pb, pl, pr] = self.pad;
        let padded = self.pad != [0; 4];
        let x = if padded { "X" } else { "I" };
        // the arrays' indices with the dimensions a flat global pooling leaves out
        let (no_n, no_w) = self.flat;
        let idx = |n: &str, h: &str, w: &str, c: &str| {
            let dims = [(!no_n).then_some(n), Some(h), (!no_w).then_some(w), Some(c)];
            dims.into_iter().flatten().collect::<Vec<_>>().join(", ")
        };
        let mut read = match self.global {
            true => format!("{x}[{}]", idx("n", "r", "s", "c")),
            false => format!(
                "{x}[n, {} * p + r, {} * q + s, c]",
                self.stride.0, self.stride.1
            ),
        };
        if ti != to {
            read = format!("{to}({read})");
        }
        let (weights, term) = match self.term {
            Term::Input => (String::new(), read),
            Term::Scaled => (String::new(), format!("{read} * 0.25")),
            Term::Product { swapped } => {
                let (dims, idx) = match (swapped, no_w) {
                    (_, true) => ("R, C", "r, c"),
                    (true, false) => ("S, R, C", "s, r, c"),
                    (false, false) => ("R, S, C", "r, s, c"),
                };
                let w = if ti != to {
                    format!("{to}(Wt[{idx}])")
                } else {
                    format!("Wt[{idx}]")
                };
                (format!(", Wt: {ti}[{dims}]"), format!("{read} * {w}"))
            }
        };
        let pad = if padded {
            format!(
                "  let X: {ti}[N, H + {}, W + {}, C];
  X[n, h, w, c] = {:?};
  for n in 0..N {{ for h in 0..H {{ for w in 0..W {{ for c in 0..C {{
    X[n, h + {pt}, w + {pl}, c] = I[n, h, w, c];
  }} }} }} }}
",
                pt + pb,
                pl + pr,
                self.fill
            )
        } else {
            String::new()
        };
        let (l1, l2) = if self.s_outer {
            ("s in 0..S", "r in 0..R")
        } else {
            ("r in 0..R", "s in 0..S")
        };
        if self.global {
            // the images' dimension of the output, and the images' loop outside the rest
            let batched = !no_n && !self.over_images;
            let out = |n: &str, c: &str| match batched {
                false => c.to_string(),
                true => format!("{n}, {c}"),
            };
            let images = match batched {
                false => "",
                true => "for n in 0..N { ",
            };
            let (loops, ends) = match (no_w, self.over_images, self.s_outer) {
                (true, false, _) => ("for r in 0..R {".to_string(), "}"),
                (true, true, _) => ("for n in 0..N { for r in 0..R {".to_string(), "} }"),
                (false, false, _) => (format!("for {l1} {{ for {l2} {{"), "} }"),
                (false, true, false) => (
                    "for n in 0..N { for r in 0..R { for s in 0..S {".to_string(),
                    "} } }",
                ),
                (false, true, true) => (
                    "for s in 0..S { for n in 0..N { for r in 0..R {".to_string(),
                    "} } }",
                ),
            };
            let close = if batched { " }" } else { "" };
            return format!(
                "kernel win(I: {ti}[{}]{weights}) -> (O: {to}[{}])
  params N = {}, H = {}, W = {}, C = {}, R = {}, S = {}
{{
{pad}  O[{}] = {:?};
  {images}for c in 0..C {{ {loops}
    O[{}] {}= {term};
  {ends} }}{close}
}}
",
                idx("N", "H", "W", "C"),
                out("N", "C"),
                self.n,
                self.h,
                self.w,
                self.c,
                self.r,
                self.s,
                out("n", "c"),
                self.init,
                out("n", "c"),
                self.op
            );
        }
        format!(
            "kernel win(I: {ti}[N, H, W, C]{weights}) -> (O: {to}[N, OH, OW, C])
  params N = {}, H = {}, W = {}, C = {}, R = {}, S = {}, OH = {oh}, OW = {ow}
{{
{pad}  O[n, p, q, c] = {:?};
  for n in 0..N {{ for p in 0..OH {{ for q in 0..OW {{ for c in 0..C {{ for {l1} {{ for {l2} {{
    O[n, p, q, c] {}= {term};
  }} }} }} }} }} }}
}}
",
            self.n, self.h, self.w, self.c, self.r, self.s, self.init, self.op
        )
    }
}

/// A random window reduction from `rng`: 1 or 2 images of 3 to 12 by 3 to 12 pixels, 16 to
/// 128 channels, windows of 1 to 3 by 1 to 3 with strides 1 to 3 and borders narrower than
/// the window.
pub fn random(rng: &mut impl Rng) -> Spec {
    loop {
        let (n, h, w) = (
            rng.random_range(1..=2),
            rng.random_range(3..=12),
            rng.random_range(3..=12),
        );
        let c = [16, 32, 64, 80, 128][rng.random_range(0..5)];
        let (r, s) = (rng.random_range(1..=3), rng.random_range(1..=3));
        let stride = (rng.random_range(1..=3), rng.random_range(1..=3));
        let mut side = |window: i64| rng.random_range(0..=2i64).min(window - 1);
        let pad = [side(r), side(r), side(s), side(s)];
        if h + pad[0] + pad[1] < r || w + pad[2] + pad[3] < s {
            continue;
        }
        let s_outer = rng.random_bool(0.5);
        let base = match rng.random_range(0..5) {
            0 => Spec::pool("max", -65504.0),
            1 => Spec::pool("min", 65504.0),
            2 => Spec {
                term: Term::Scaled,
                ..Spec::depthwise()
            },
            3 => Spec::pool("+", 0.0),
            _ => Spec {
                term: Term::Product { swapped: s_outer },
                ..Spec::depthwise()
            },
        };
        let types = match (base.types, rng.random_bool(0.5)) {
            ((_, o), true) => ("f32", if o == "f16" { "f32" } else { o }),
            (t, false) => t,
        };
        return Spec {
            n,
            h,
            w,
            c,
            r,
            s,
            stride,
            pad,
            s_outer,
            types,
            ..base
        };
    }
}

/// A random global pooling from `rng`: any reduction and term of [`random`]'s, 1 or 2
/// images of 1 to 18 by 1 to 18 pixels (up to 324, more than a vector instruction's 255
/// repeats; 1 to 8 by 1 to 8 with weights, which UB holds whole), 16 to 256 channels, half
/// of them over a padded copy (a border of 0 to 2 on each side); without a border, some
/// with arrays that leave out the images' or the columns' dimension ([`Spec::flat`]) and
/// some over the images as well ([`Spec::over_images`]).
pub fn random_global(rng: &mut impl Rng) -> Spec {
    let base = random(rng);
    let side = match base.term {
        Term::Product { .. } => 8,
        _ => 18,
    };
    let (n, h, w) = (
        rng.random_range(1..=2),
        rng.random_range(1..=side),
        rng.random_range(1..=side),
    );
    let c = [16, 32, 64, 80, 96, 128, 256][rng.random_range(0..7)];
    let pad = match rng.random_bool(0.5) {
        true => [0; 4].map(|_| rng.random_range(0..=2i64)),
        false => [0; 4],
    };
    // without a border, a third leave out the images' dimension, a third the columns'
    let flat = match pad {
        [0, 0, 0, 0] => (rng.random_bool(0.33), rng.random_bool(0.33)),
        _ => (false, false),
    };
    let (n, w) = (if flat.0 { 1 } else { n }, if flat.1 { 1 } else { w });
    // drawn last, so that the rest of a seed's kernel stays what it was
    let over_images = pad == [0; 4]
        && !flat.0
        && !matches!(base.term, Term::Product { .. })
        && rng.random_bool(0.33);
    Spec {
        n,
        h,
        w,
        flat,
        over_images,
        c,
        r: h + pad[0] + pad[1],
        s: w + pad[2] + pad[3],
        stride: (1, 1),
        pad,
        global: true,
        ..base
    }
}

/// A random global pooling from `seed`.
pub fn global_spec(seed: u64) -> Spec {
    random_global(&mut ChaCha8Rng::seed_from_u64(seed))
}

/// A random window reduction from `seed`.
pub fn spec(seed: u64) -> Spec {
    random(&mut ChaCha8Rng::seed_from_u64(seed))
}

/// A random window reduction, as text, from `seed`.
pub fn generate(seed: u64) -> String {
    spec(seed).text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_gives_a_valid_kernel() {
        for seed in 0..200 {
            let text = generate(seed);
            let file = frontend::SourceFile::new("w.pk", text.clone());
            assert!(frontend::compile(&file).is_ok(), "seed {seed}:\n{text}");
            assert_eq!(generate(seed), text);
            let global = global_spec(seed).text();
            let file = frontend::SourceFile::new("g.pk", global.clone());
            assert!(frontend::compile(&file).is_ok(), "seed {seed}:\n{global}");
        }
    }

    #[test]
    fn global_pooling_comes_with_every_view() {
        let flats: Vec<(bool, bool)> = (0..200).map(|seed| global_spec(seed).flat).collect();
        for view in [(false, false), (true, false), (false, true), (true, true)] {
            assert!(flats.contains(&view), "{view:?}");
        }
        // a column sum: `O[c]` from `I[r, c]`
        let column = (0..200)
            .map(global_spec)
            .find(|s| s.flat == (true, true) && s.term == Term::Input)
            .unwrap();
        let text = column.text();
        assert!(text.contains("-> (O: ") && text.contains("[C])"), "{text}");
        assert!(text.contains("I[r, c]"), "{text}");
        // over the images too: `O[c]` from `I[n, r, s, c]`, both orders of the window's loops
        for s_outer in [false, true] {
            let pooled = (0..200)
                .map(global_spec)
                .find(|s| s.over_images && s.flat == (false, false) && s.s_outer == s_outer)
                .unwrap();
            let text = pooled.text();
            assert!(
                text.contains("I[n, r, s, c]") && text.contains("O[c] "),
                "{text}"
            );
        }
    }
}
