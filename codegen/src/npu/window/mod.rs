//! The NPU back end's window reductions: pooling (a maximum, minimum or sum over a window,
//! global pooling over the whole image) and depthwise convolutions (each channel's window
//! times its own weights), NHWC, on the vector unit.
//!
//! A window reduction reads each output pixel's `R x S` window of input pixels, channels
//! innermost: for one window position `(r, s)` the pixels of an output row read input
//! pixels `sw` apart, so one vector instruction combines a whole row of a tile into its
//! accumulators, a repeat a pixel and a lane a channel (`src_rs = sw * C`, `dst_rs = C`).
//! The matrix unit has no use here: there is no reduction over channels.
//!
//! - `recognise`: which kernels are window reductions, and the refusals (a window along
//!   the innermost dimension, a border that would change the result);
//! - `footprint`: the input rows and columns each output row and column reads, counted by
//!   isl, and the check that every tile of a program loads them;
//! - `tiles`: the analytic model that chooses the tile of output rows, columns and channels
//!   (GM bytes charged by segments, the vector unit's instructions, UB with both rings);
//! - `program`: the tiled, double-buffered, multi-core program.
//!
//! Invariants: the border of a padded input is never built nor loaded, and the terms that
//! read it are skipped (so a sum's border must be zeros, a maximum's no larger than the
//! initial value: `recognise` refuses the others); each output element is combined in the
//! kernel's order of the window's loops ([`Order::Kernel`]), so sums need no
//! `--reorder-reductions`, except global pooling with `--reorder-reductions`, whose terms
//! are combined pairwise ([`Order::Pairwise`]). See `docs/npu-backend.md`, "Window
//! reductions".

pub mod footprint;
pub mod program;
pub mod recognise;
pub mod tiles;

use crate::npu::conv::{Pad, Tensor};
use crate::npu::NpuError;
use frontend::ir::{ElemType, Kernel};
use npu_sim::Machine;
use std::collections::BTreeMap;

/// How a window's terms are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// `+=`: a sum (sum pooling, a depthwise convolution).
    Sum,
    /// `max=`: max pooling.
    Max,
    /// `min=`.
    Min,
}

/// In which order a window's terms are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The kernel's order of the window's loops, from the initial value, one rounding per
    /// term: the interpreter's outputs bit for bit.
    Kernel,
    /// Global pooling with reordering allowed: every term of the tile computed at once
    /// (the image's pixels, a repeat per chunk of lanes), then halves combined pairwise
    /// until one pixel is left, which is combined with the initial value.
    Pairwise,
}

impl Order {
    /// The order for `w`: pairwise for global pooling without a border (a term of the input
    /// or the input times a constant) when `reorder` allows it, else the kernel's.
    pub fn of(w: &Window, reorder: bool) -> Order {
        match reorder && w.consecutive() && matches!(w.term, Term::Input | Term::Scaled(_)) {
            true => Order::Pairwise,
            false => Order::Kernel,
        }
    }
}

/// What one window position contributes.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    /// The input pixel itself.
    Input,
    /// The input pixel times the weight of its channel at that window position.
    Product {
        /// `W[.., c]`, indexed by the window's loops then the channels.
        weights: Tensor,
        /// Its element type.
        elem: ElemType,
        /// Elements of `W` between consecutive window rows and between consecutive window
        /// columns.
        steps: (i64, i64),
    },
    /// The input pixel times a constant.
    Scaled(f64),
}

/// Where one dimension of the reduction's NHWC form is among an array's indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// The array has no such dimension: an extent of 1, index 0.
    Absent,
    /// The index at this position.
    At(usize),
    /// The indices at this position and the next, merged in the array's row-major order:
    /// the form's index is `i[at] * inner + i[at + 1]`, `inner` the next one's extent
    /// (`Y[c]` from `X[n, h, w, c]`: one image of `N*H` rows, since the images' rows follow
    /// one another in GM).
    Merged {
        /// The first of the two positions.
        at: usize,
        /// The extent of the second.
        inner: i64,
    },
}

impl Dim {
    /// How many of the array's indices the dimension takes.
    pub fn rank(self) -> usize {
        match self {
            Dim::Absent => 0,
            Dim::At(_) => 1,
            Dim::Merged { .. } => 2,
        }
    }

    /// The form's extent for an array of `shape`.
    pub fn extent(self, shape: &[i64]) -> i64 {
        match self {
            Dim::Absent => 1,
            Dim::At(k) => shape[k],
            Dim::Merged { at, .. } => shape[at] * shape[at + 1],
        }
    }
}

/// Where the dimensions of the reduction's NHWC form are among an array's indices.
///
/// A global reduction of arrays of fewer dimensions is a view of global pooling: a column
/// sum `Y[c] = sum(h) X[h, c]` pools one image of `H x 1` pixels, `O[n, c]` from `X[n, h, c]`
/// images of `H x 1` pixels, `Y[c]` from `X[h, w, c]` one image, and `Y[c]` from
/// `X[n, h, w, c]` (over the images as well) one image of `N*H x W` pixels. Each dimension
/// of the form is at a position among the array's indices, at two merged, or absent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// The input's `[n, h, w, c]`.
    pub input: [Dim; 4],
    /// The output's `[n, p, q, c]` (a spatial window) or `[n, c]` (global).
    pub output: Vec<Dim>,
}

impl View {
    /// The arrays' own NHWC order (`[n, c]` for a global output).
    pub fn nhwc(spatial: bool) -> View {
        View {
            input: [Dim::At(0), Dim::At(1), Dim::At(2), Dim::At(3)],
            output: match spatial {
                true => vec![Dim::At(0), Dim::At(1), Dim::At(2), Dim::At(3)],
                false => vec![Dim::At(0), Dim::At(1)],
            },
        }
    }

    /// Whether the arrays are indexed in the NHWC form itself.
    pub fn is_nhwc(&self) -> bool {
        *self == View::nhwc(self.output.len() == 4)
    }

    /// The form's `dims` (4 or 2 extents) for an array of `shape` viewed through `at`
    /// (`self.input` or `self.output`).
    pub fn extents(at: &[Dim], shape: &[i64]) -> Vec<i64> {
        at.iter().map(|d| d.extent(shape)).collect()
    }
}

/// A window reduction as the back end compiles it: `O[n, p, q, c] = init` combined with the
/// term of `I[n, sh*p + r - pad.top, sw*q + s - pad.left, c]` over every window position
/// inside the image.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// The update statement.
    pub stmt: String,
    /// The input read from GM (unpadded).
    pub input: Tensor,
    /// The output.
    pub output: Tensor,
    /// Element types of the input and the output (the vector unit's arithmetic rounds to
    /// the output's).
    pub types: (ElemType, ElemType),
    /// Images.
    pub batch: i64,
    /// Input rows.
    pub h: i64,
    /// Input columns.
    pub w: i64,
    /// Channels.
    pub c: i64,
    /// Output rows.
    pub oh: i64,
    /// Output columns.
    pub ow: i64,
    /// Window rows.
    pub r: i64,
    /// Window columns.
    pub s: i64,
    /// Strides between the windows of consecutive output rows and columns.
    pub stride: (i64, i64),
    /// The border around the input (never built: its terms are skipped).
    pub pad: Pad,
    /// The output's initial value.
    pub init: f64,
    /// How terms are combined.
    pub combine: Combine,
    /// What each window position contributes.
    pub term: Term,
    /// Whether the kernel nests the window's row loop outside its column loop.
    pub r_outer: bool,
    /// What each output row and column reads, by isl.
    pub reads: std::sync::Arc<footprint::Reads>,
    /// How the input and output arrays index the NHWC form (whether the output has rows
    /// and columns: [`Window::spatial`]).
    pub view: View,
}

impl Window {
    /// Whether the output has rows and columns (`O[n, p, q, c]`); global pooling's
    /// `O[n, c]` has one output pixel per image, its window the whole image.
    pub fn spatial(&self) -> bool {
        self.view.output.len() == 4
    }

    /// Whether a tile's window is the whole image and holds nothing else (global pooling
    /// without a border): its pixels follow one another in GM and in UB.
    pub fn consecutive(&self) -> bool {
        !self.spatial() && self.pad == Pad::default()
    }

    /// One line saying what was recognised.
    pub fn describe(&self) -> String {
        let what = match (&self.term, self.combine) {
            (Term::Product { weights, .. }, _) => {
                format!("depthwise convolution (weights `{}`)", weights.name)
            }
            (_, Combine::Max) => "max pooling".into(),
            (_, Combine::Min) => "min pooling".into(),
            (Term::Scaled(v), Combine::Sum) => format!("sum pooling scaled by {v}"),
            (_, Combine::Sum) => "sum pooling".into(),
        };
        let p = self.pad;
        format!(
            "Window reduction (statement {}): {what} of `{}` ({} x {} x {} x {}, {}) into `{}` ({} x {}), window {} x {}, strides {} and {}, border {} {} {} {} (skipped), on the vector unit.",
            self.stmt,
            self.input.name,
            self.batch,
            self.h,
            self.w,
            self.c,
            match self.view.is_nhwc() {
                true => "NHWC",
                false => "viewed as NHWC",
            },
            self.output.name,
            self.oh,
            self.ow,
            self.r,
            self.s,
            self.stride.0,
            self.stride.1,
            p.top,
            p.bottom,
            p.left,
            p.right
        )
    }
}

/// What the back end decided for a window reduction.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// What was recognised.
    pub summary: String,
    /// The tiling and the model's figures for it.
    pub choice: tiles::Choice,
    /// UB capacity.
    pub ub_capacity: u64,
    /// Slots of the input ring (one when V converts each tile first).
    pub in_slots: i64,
    /// Channels of the output.
    pub channels: i64,
    /// The order the terms are combined in.
    pub order: Order,
    /// How the pieces of a spread tile meet (`None` unless tiles are spread).
    pub meet: Option<tiles::Meet>,
}

impl Plan {
    /// The program's header lines.
    pub fn describe(&self) -> Vec<String> {
        let c = &self.choice;
        vec![
            self.summary.clone(),
            format!(
                "Tiles of {} output row(s) by {} column(s) of one image{} ({} {}, at most {} a core, in contiguous ranges); each tile's input rows and columns are loaded GM -> UB by MTE2{}, combined by V into the tile's outputs, stored UB -> GM by MTE3; {}. UB: {} of {} bytes.",
                c.size.rows,
                c.size.cols,
                match c.size.chans == self.channels {
                    true => String::new(),
                    false => format!(", {} of its {} channels", c.size.chans, self.channels),
                },
                c.tiles,
                match c.size.spread {
                    1 => "tiles",
                    _ => "work items (pieces of tiles)",
                },
                c.per_core,
                match (c.size.part, self.meet) {
                    (0, _) => String::new(),
                    (rows, None) => format!(" in parts of {rows} image row(s), each combined before the next (the input slots turn once a part)"),
                    (rows, Some(meet)) => format!(
                        " in parts of {rows} image row(s), each combined before the next (the input slots turn once a part), a tile's parts dealt in {} pieces, each a work item of its own whose partial {}",
                        c.size.spread,
                        match meet {
                            tiles::Meet::Atomic => "sums are added into the output atomically (each core first sets its share of the output to the initial value, then all wait for all)",
                            tiles::Meet::Workspace => "results are stored into a GM workspace (a row each); after all cores have met, each core loads the rows of its share of the tiles, combines them pairwise with the initial value and stores the tile's outputs",
                        }
                    ),
                },
                match self.in_slots {
                    1 => "one input slot (V converts each tile into a copy first, which frees it) and two output slots",
                    _ => "two slots each way",
                },
                c.ub_bytes,
                self.ub_capacity
            ),
            match self.order {
                Order::Kernel => "Each output's terms combined in the kernel's order of the window's loops, from its initial value (the interpreter's outputs bit for bit).".into(),
                Order::Pairwise => "Each tile's terms computed at once, then combined pairwise (the first half of the pixels with the last, until one is left) and with the initial value (allowed by --reorder-reductions).".into(),
            },
            format!(
                "Model of the busiest core: {:.0} cycles ({:.0} GM, {:.0} vector).",
                c.cycles, c.gm_cycles, c.vector_cycles
            ),
        ]
    }
}

/// The window reduction of `kernel`, if it is one ([`recognise::window`]).
pub fn recognise(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
) -> Result<Option<Window>, NpuError> {
    recognise::window(kernel, params)
}

/// Compiles `w` for `machine` combining its terms in `order`, with the model's tiling, or
/// tiles of the size `forced` when given, after checking that every tile loads what isl
/// says it reads.
pub fn compile(
    w: &Window,
    machine: &Machine,
    order: Order,
    forced: Option<tiles::Size>,
) -> Result<(npu_sim::Program, Plan), NpuError> {
    let model = tiles::Model::new(w, machine, order)?;
    let choice = match forced {
        Some(z) => model.cost(z).ok_or_else(|| {
            NpuError::Unsupported(format!(
                "tiles of {} x {} output pixels and {} channels{} do not fit `{}`'s UB or its vector repeats, or do not split the channels into whole 32-byte blocks",
                z.rows, z.cols, z.chans, match z.part {
                    0 => String::new(),
                    rows => format!(" in parts of {rows} image rows"),
                }, machine.name
            ))
        })?,
        None => model.ranked().into_iter().next().ok_or_else(|| {
            NpuError::Unsupported(format!(
                "no tile of one output pixel fits `{}`'s UB ({} bytes needed)",
                machine.name,
                model.ub_bytes(tiles::Size::whole(1, 1, w.c))
            ))
        })?,
    };
    footprint::check(
        w,
        &w.reads,
        (choice.size.rows, choice.size.cols),
        |p0, q0, r, c| {
            let at = [p0, q0, r, c].map(npu_sim::program::Expr::Const);
            program::input_box(w, [&at[0], &at[1], &at[2], &at[3]]).map(|e| e.eval(&[], 0, 1))
        },
    )?;
    let program = program::program(w, machine, &model, &choice)?;
    let meet = model.meeting(choice.size);
    Ok((
        program,
        Plan {
            summary: w.describe(),
            choice,
            ub_capacity: model.ub_capacity,
            in_slots: model.in_slots(),
            channels: w.c,
            order,
            meet,
        },
    ))
}

/// The model's `limit` cheapest tilings of `w` combining its terms in `order`, compiled,
/// cheapest first.
pub fn ranked(
    w: &Window,
    machine: &Machine,
    order: Order,
    limit: usize,
) -> Result<Vec<(npu_sim::Program, Plan)>, NpuError> {
    let model = tiles::Model::new(w, machine, order)?;
    (model.ranked().into_iter().take(limit))
        .map(|c| compile(w, machine, order, Some(c.size)))
        .collect()
}
