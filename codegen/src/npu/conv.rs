//! 2-D convolutions on the NPU: the im2col mapping proved by `scheduler::mapping`
//! (`recognise`), tiles chosen by an analytic model (`tiles`), and a program in which
//! `load3d` builds the im2col matrix from a feature map held in L1 (`emit`), the feature map
//! and the weights having been brought into the layouts the cube reads (`prologue`).
//!
//! The layouts the machine reads are fixed: a feature map in L1 is C1HWC0 (16 channels
//! innermost, one slice of the image per 16 channels), the weights are fractals of 16
//! output channels by 16 input channels, one per (input channel block, window position).
//! The kernel's own layouts decide what it costs to get there: channels innermost (NHWC
//! activations, `[k, r, s, c]` weights) is a matter of DMAs; NCHW activations are transposed
//! through the cube (a product with the identity) and `[k, c, r, s]` weights with a window
//! permuted through it. The output's layout decides how the cube is fed: NHWC outputs take
//! the im2col matrix as the cube's left operand (pixels on its rows), NCHW outputs compute
//! the transposed product (the weights on the left, output channels on the rows), so that
//! either comes out of L0C in the order GM stores it. See `docs/npu-backend.md`,
//! "Convolutions".

pub mod emit;
pub mod footprint;
pub mod geometry;
pub mod model;
pub mod prologue;
pub mod recognise;
pub mod ring;
pub mod stream;
pub mod tiles;

use super::epilogue::Epilogue;
use super::{Compiled, NpuError, Plan};
use frontend::ir::{ArrayId, ElemType, Kernel};
use npu_sim::Machine;
use scheduler::target::Target;
use std::collections::BTreeMap;

/// The convolution `kernel` computes at the sizes `params`, as the back end for `machine`
/// sees it (`None`: the kernel is no convolution).
pub fn recognise(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
) -> Result<Option<Conv>, NpuError> {
    recognise::convolution(kernel, params, &Target::of_npu(machine))
}

/// The program of a recognised convolution on `machine`, with the tiles the model chose.
pub fn compile(cv: Conv, machine: &Machine) -> Result<Compiled, NpuError> {
    let tiles = tiles::Tiles::choose(&cv, machine).ok_or_else(|| {
        NpuError::Unsupported(format!(
            "no tiling of the convolution fits `{}`'s buffers",
            machine.name
        ))
    })?;
    compile_with(cv, tiles, machine)
}

/// The program of a recognised convolution on `machine` with `tiles`, one of
/// [`tiles::Tiles::options`] (the tests run tilings the model would not choose).
pub fn compile_with(
    cv: Conv,
    tiles: tiles::Tiles,
    machine: &Machine,
) -> Result<Compiled, NpuError> {
    let program = emit::program(&cv, &tiles, machine)?;
    let predicted = model::cycles(&cv, machine, geometry::Orientation::of(&cv), &tiles);
    Ok(Compiled {
        program,
        plan: Plan::Conv {
            summary: cv.summary(),
            tiles,
            predicted,
            mapping: cv.mapping,
        },
    })
}

/// Which of a convolution's options [`ranked`] offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// One program per tiling (a slab's output channels and pixels, a tile's pixels): the
    /// model's cheapest way of streaming it.
    Tilings,
    /// Every program: the ways of streaming a tiling (the first tile's blocks of output
    /// channels and size, band chunks, UB pieces) apart.
    Variants,
}

/// The programs of the cheapest options of a recognised convolution by the model, at most
/// `limit`, the model's choice ([`compile`]'s) first: per tiling or every variant (`offer`).
/// Options that differ only where the program does not are one candidate, the cheaper.
pub fn ranked(
    cv: &Conv,
    machine: &Machine,
    limit: usize,
    offer: Offer,
) -> Result<Vec<Compiled>, NpuError> {
    let mut out: Vec<Compiled> = Vec::new();
    let mut tilings = std::collections::HashSet::new();
    for (_, tiles) in tiles::Tiles::ranked(cv, machine) {
        if out.len() >= limit {
            break;
        }
        if offer == Offer::Tilings && !tilings.insert((tiles.ks, tiles.ps, tiles.mp)) {
            continue;
        }
        let compiled = compile_with(cv.clone(), tiles, machine)?;
        if out.iter().all(|o| o.program != compiled.program) {
            out.push(compiled);
        }
    }
    Ok(out)
}

/// How an activation tensor orders its four dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activations {
    /// `[n, c, h, w]`: each channel's image contiguous.
    Nchw,
    /// `[n, h, w, c]`: each pixel's channels contiguous.
    Nhwc,
}

/// How the weights order theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weights {
    /// `[k, c, r, s]` (PyTorch's OIHW).
    Kcrs,
    /// `[k, r, s, c]`: input channels innermost (and `[k, c]`).
    Krsc,
    /// `[r, s, c, k]` (TensorFlow's HWIO; and `[c, k]`): output channels innermost.
    Rsck,
}

/// Zero rows and columns around the input image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pad {
    /// Rows above.
    pub top: i64,
    /// Rows below.
    pub bottom: i64,
    /// Columns to the left.
    pub left: i64,
    /// Columns to the right.
    pub right: i64,
}

/// A kernel tensor the program reads or writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// The array.
    pub id: ArrayId,
    /// Its name.
    pub name: String,
    /// Its shape.
    pub shape: Vec<i64>,
}

/// A convolution as the back end compiles it: `O[n, k, p, q] = sum(c, r, s)
/// I[n, c, stride*p + r - pad.top, stride*q + s - pad.left] * W[k, c, r, s]`, zero where
/// the window leaves the image, up to how each tensor orders its dimensions.
#[derive(Clone, Debug)]
pub struct Conv {
    /// Images.
    pub batch: i64,
    /// Input channels.
    pub c: i64,
    /// Output channels.
    pub k: i64,
    /// Input rows.
    pub h: i64,
    /// Input columns.
    pub w: i64,
    /// Window rows.
    pub r: i64,
    /// Window columns.
    pub s: i64,
    /// Output rows.
    pub oh: i64,
    /// Output columns.
    pub ow: i64,
    /// The stride, the same in both directions.
    pub stride: i64,
    /// The zero padding.
    pub pad: Pad,
    /// The input.
    pub input: Tensor,
    /// Its layout.
    pub input_layout: Activations,
    /// The weights.
    pub weights: Tensor,
    /// Their layout.
    pub weight_layout: Weights,
    /// The output.
    pub output: Tensor,
    /// What becomes of the sums on their way out (a statement after the convolution, over
    /// a temporary): nothing, a ReLU by the copy out of L0C, or an element-wise statement the
    /// vector unit computes on each tile in UB (NHWC output, streamed slabs only).
    pub epilogue: crate::npu::epilogue::Epilogue,
    /// Its layout.
    pub output_layout: Activations,
    /// The proved mapping, in the mapping text format.
    pub mapping: String,
    /// The input rows each output pixel reads, counted by isl from the access relations.
    pub rows: std::sync::Arc<footprint::RowReads>,
}

/// The element type of a convolution's output after `epilogue`: f32, f16/bf16 when the
/// epilogue rounds the sums on their way out of L0C, or the vector epilogue's result's.
pub fn output_elem(epilogue: &Epilogue) -> ElemType {
    match epilogue {
        Epilogue::Cast(e) | Epilogue::Relu(e) => *e,
        Epilogue::None => ElemType::F32,
        Epilogue::Vector(v) => v.kernel.array(v.out).elem,
    }
}

impl Conv {
    /// The output's element type ([`output_elem`]).
    pub fn out_elem(&self) -> ElemType {
        output_elem(&self.epilogue)
    }

    /// Bytes of an output element.
    pub fn out_bytes(&self) -> i64 {
        self.out_elem().size_bytes() as i64
    }

    /// The element type the copy out of L0C writes into UB: the output's, but f32 sums
    /// before a vector epilogue.
    pub fn drained_elem(&self) -> ElemType {
        match self.epilogue {
            Epilogue::Vector(_) => ElemType::F32,
            _ => self.out_elem(),
        }
    }

    /// Output pixels per image.
    pub fn pixels(&self) -> i64 {
        self.oh * self.ow
    }

    /// Input pixels per image.
    pub fn pixels_in(&self) -> i64 {
        self.h * self.w
    }

    /// Blocks of 16 input channels.
    pub fn c1(&self) -> i64 {
        (self.c + 15) / 16
    }

    /// Window positions.
    pub fn rs(&self) -> i64 {
        self.r * self.s
    }

    /// A one-line summary: sizes, stride, padding and layouts.
    pub fn summary(&self) -> String {
        let p = self.pad;
        let pad = if p == Pad::default() {
            String::new()
        } else {
            format!(
                ", padding {} {} {} {} (top bottom left right)",
                p.top, p.bottom, p.left, p.right
            )
        };
        let relu = match &self.epilogue {
            Epilogue::None => String::new(),
            Epilogue::Vector(v) => {
                format!(
                    ", statement {} by the vector unit on each tile",
                    v.statement
                )
            }
            Epilogue::Relu(ElemType::F32) => ", ReLU on the way out of L0C".to_string(),
            Epilogue::Relu(e) => format!(", ReLU and rounding to {e} on the way out of L0C"),
            Epilogue::Cast(e) => format!(", rounded to {e} on the way out of L0C"),
        };
        format!(
            "{}x{} convolution, stride {}{pad}: {} image(s) of {} x {} x {} ({:?}) -> {} x {} x {} ({:?}), weights {:?}{relu}",
            self.r, self.s, self.stride, self.batch, self.h, self.w, self.c, self.input_layout,
            self.oh, self.ow, self.k, self.output_layout, self.weight_layout
        )
    }
}
