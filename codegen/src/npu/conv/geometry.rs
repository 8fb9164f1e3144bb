//! Where slabs and tiles are, as program expressions of their indices: a slab's image,
//! channels, pixels and input band; a tile's pixels and the window of band rows its
//! `load3d` reads, with the padding that window needs.

use super::tiles::{max_band_rows, Tiles};
use super::{Activations, Conv};
use npu_sim::program::Expr;

/// Which operand of the cube holds the im2col matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Orientation {
    /// The im2col matrix on the cube's rows (left operand, L0A): L0C holds pixels by
    /// channels, as an NHWC output stores them.
    PixelRows,
    /// The weights on the cube's rows, the im2col matrix transposed as its right operand
    /// (L0B): L0C holds channels by pixels, as an NCHW output stores them.
    ChannelRows,
}

impl Orientation {
    /// The orientation that writes `cv`'s output layout directly.
    pub fn of(cv: &Conv) -> Orientation {
        match cv.output_layout {
            Activations::Nhwc => Orientation::PixelRows,
            Activations::Nchw => Orientation::ChannelRows,
        }
    }
}

/// A constant as an expression.
pub fn c(v: i64) -> Expr {
    Expr::Const(v)
}

/// `e` rounded up to a multiple of 16.
pub fn up16(e: Expr) -> Expr {
    (e + 15) / 16 * 16
}

/// Constants derived from a convolution and its tiles.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Ranges of output channels.
    pub pk: i64,
    /// Ranges of output pixels per image.
    pub pp: i64,
    /// Slabs in all.
    pub slabs: i64,
    /// Slabs per core (the last core may have fewer).
    pub per_core: i64,
    /// Tiles per slab.
    pub tiles: i64,
    /// Reduction sub-steps per input-channel block.
    pub subs: i64,
    /// Rows a band holds at most.
    pub band_rows: i64,
    /// Pixels per band row: the image's width, or with its padding columns (`Band::Padded`).
    pub pitch: i64,
    /// The column of a band row where the image's first column is.
    pub left: i64,
    /// Zero pixels before the band's first slice (room for reads starting before a run).
    pub lead: i64,
    /// Pixels between two channel blocks' slices of the band (a multiple of 16).
    pub slice: i64,
    /// Fractal columns of the weights (input-channel blocks x window positions).
    pub j: i64,
    /// Input rows whose GM data is a whole number of 16-element blocks: a GM read starts
    /// on a row that is a multiple of it (counted over the tensor).
    pub align_rows: i64,
    /// The orientation.
    pub orient: Orientation,
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Shape {
    /// The shape of `cv` cut as `t` says on `cores` cores.
    pub fn new(cv: &Conv, t: &Tiles, cores: i64) -> Shape {
        let pk = (cv.k + t.ks - 1) / t.ks;
        let pp = (cv.pixels() + t.ps - 1) / t.ps;
        let slabs = cv.batch * pk * pp;
        let orient = Orientation::of(cv);
        let band_rows = max_band_rows(cv, orient, t.ps);
        let (pitch, left, lead) = band_layout(cv, orient);
        Shape {
            pk,
            pp,
            slabs,
            per_core: (slabs + cores - 1) / cores,
            tiles: (t.ps + t.mp - 1) / t.mp,
            subs: (cv.rs() + t.nrs - 1) / t.nrs,
            band_rows,
            pitch,
            left,
            lead,
            slice: (band_rows * pitch + 15) / 16 * 16,
            j: cv.c1() * cv.rs(),
            align_rows: align_rows(cv),
            orient,
        }
    }
}

/// How a band holds its rows: `(pitch, left, lead)` of [`Shape`]. The pixel-rows
/// orientation reads it with `load3d`, which pads on its own: the image's rows as they are.
/// The channel-rows one copies runs of it with DMAs: the image with its zero padding, after
/// room for a run's leading pixels.
pub fn band_layout(cv: &Conv, orient: Orientation) -> (i64, i64, i64) {
    match orient {
        Orientation::PixelRows => (cv.w, 0, 0),
        Orientation::ChannelRows => (
            cv.w + cv.pad.left + cv.pad.right,
            cv.pad.left,
            16 * cv.stride,
        ),
    }
}

/// Rows of input that make a whole number of 16-element GM blocks (GM reads start on one).
pub fn align_rows(cv: &Conv) -> i64 {
    16 / gcd(row_elements(cv), 16)
}

/// Elements between two consecutive input rows of one channel's GM data read as a burst
/// start: a whole pixel row of every channel (NHWC) or one channel's row (NCHW).
pub fn row_elements(cv: &Conv) -> i64 {
    match cv.input_layout {
        Activations::Nhwc => cv.w * cv.c,
        Activations::Nchw => cv.w,
    }
}

/// One slab, as expressions of its index.
#[derive(Clone, Debug)]
pub struct Slab {
    /// Its image.
    pub n: Expr,
    /// Its first output channel.
    pub k0: Expr,
    /// Its output channels.
    pub ka: Expr,
    /// Its output channels rounded up to 16.
    pub ka16: Expr,
    /// Its first output pixel.
    pub p0: Expr,
    /// One past its last output pixel.
    pub p_end: Expr,
    /// The input row the band's first row holds (negative: a padding row).
    pub y_base: Expr,
    /// The first input row loaded.
    pub y_first: Expr,
    /// One past the last input row loaded.
    pub y_end: Expr,
}

impl Slab {
    /// Slab `index` (channel ranges innermost, then pixel ranges, then images).
    pub fn at(cv: &Conv, t: &Tiles, sh: &Shape, index: Expr) -> Slab {
        let n = index.clone() / (sh.pk * sh.pp);
        let kp = index.clone() % sh.pk;
        let pp = index / sh.pk % sh.pp;
        let k0 = kp * t.ks;
        let ka = (c(cv.k) - k0.clone()).min(t.ks);
        let p0 = pp * t.ps;
        let p_end = (p0.clone() + t.ps).min(cv.pixels());
        let top = p0.clone() / cv.ow * cv.stride - cv.pad.top;
        let y_first = top.clone().max(0);
        let y_end = ((p_end.clone() - 1) / cv.ow * cv.stride + (cv.r - cv.pad.top)).min(cv.h);
        Slab {
            n,
            ka16: up16(ka.clone()),
            k0,
            ka,
            p0,
            p_end,
            y_base: match sh.orient {
                Orientation::PixelRows => y_first.clone(),
                Orientation::ChannelRows => top,
            },
            y_first,
            y_end,
        }
    }
}

/// One tile of a slab, as expressions of its index within the slab.
#[derive(Clone, Debug)]
pub struct Tile {
    /// Whether the tile exists (the slab's last tiles may be past its pixels).
    pub valid: Expr,
    /// Its first output pixel in the image.
    pub p0: Expr,
    /// Its pixels.
    pub pixels: Expr,
    /// Its pixels rounded up to 16 (the im2col window's rows).
    pub pixels16: Expr,
    /// The first band row its `load3d` window reads (the pixel-rows orientation).
    pub row: Expr,
    /// Rows its window reads.
    pub h: Expr,
    /// Zero rows above the window.
    pub pad_top: Expr,
    /// Zero rows below it.
    pub pad_bottom: Expr,
    /// The window's first im2col row.
    pub m_start: Expr,
}

impl Tile {
    /// Tile `t` of `slab`.
    pub fn at(cv: &Conv, tiles: &Tiles, slab: &Slab, t: Expr) -> Tile {
        let p0 = slab.p0.clone() + t * tiles.mp;
        let pixels = (slab.p_end.clone() - p0.clone()).min(tiles.mp);
        let oy_a = p0.clone() / cv.ow;
        let oy_b = (p0.clone() + pixels.clone() - 1) / cv.ow;
        let st = cv.stride;
        let y_lo = (oy_a.clone() * st - cv.pad.top).max(0);
        let y_hi = (oy_b.clone() * st + (cv.r - cv.pad.top)).min(cv.h);
        let h = y_hi - y_lo.clone();
        let pad_top = y_lo.clone() + cv.pad.top - oy_a.clone() * st;
        let pad_bottom = ((oy_b - oy_a.clone()) * st + cv.r - h.clone() - pad_top.clone()).max(0);
        Tile {
            valid: p0
                .clone()
                .cmp(npu_sim::program::CmpOp::Lt, slab.p_end.clone()),
            pixels16: up16(pixels.clone()),
            row: y_lo - slab.y_base.clone(),
            m_start: p0.clone() - oy_a * cv.ow,
            p0,
            pixels,
            h,
            pad_top,
            pad_bottom,
        }
    }
}
