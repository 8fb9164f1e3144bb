//! Where slabs and tiles are, as program expressions of their indices: a slab's image,
//! channels, pixels and input band; a tile's pixels and the window of band rows its
//! `load3d` reads, with the padding that window needs.

use super::tiles::{max_band_rows, max_chunk, Tiles};
use super::{Activations, Conv};
use npu_sim::program::{Expr, Load3dSizes};

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

/// How a band covers its slab's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BandMode {
    /// Whole input rows (a window reads across rows).
    Rows,
    /// Exactly the slab's pixels: a 1x1 convolution with stride 1 and no padding reads each
    /// output pixel's own input pixel, so a tile's window is its own pixels.
    Pixels,
}

impl BandMode {
    /// The mode of `cv` in `orient`: pointwise when the convolution is and its band
    /// certainly streams (the prologue fills bands by rows).
    pub fn of(cv: &Conv, orient: Orientation) -> BandMode {
        let pointwise = cv.rs() == 1 && cv.stride == 1 && cv.pad == Default::default();
        if pointwise && cv.c % 16 == 0 && super::tiles::streamable(cv, orient) {
            BandMode::Pixels
        } else {
            BandMode::Rows
        }
    }
}

/// Band pixels (from the band's first) the tiles `0..=g` of the slab of pixels `[p0, p_end)`
/// need: what the band streams by tile `g` (the host-side twin of [`Slab::need`], from the
/// rows isl finds the pixels read: [`super::footprint`]).
pub fn need(cv: &Conv, mode: BandMode, tiles: &Tiles, (p0, p_end): (i64, i64), g: i64) -> i64 {
    if g < 0 {
        return 0;
    }
    let end = (p0 + tiles.start(g + 1)).min(p_end);
    match mode {
        BandMode::Pixels => end - p0,
        BandMode::Rows => {
            let (first, _) = cv.rows.input_rows(p0, p_end);
            let (_, last) = cv.rows.input_rows(p0, end);
            (last - first).max(0) * cv.w
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
    /// Groups of input-channel blocks of the reduction's sub-steps.
    pub csubs: i64,
    /// Rows a band holds at most.
    pub band_rows: i64,
    /// Pixels per band row: the image's width, or with its padding columns (`Band::Padded`).
    pub pitch: i64,
    /// The column of a band row where the image's first column is.
    pub left: i64,
    /// Zero pixels before the band's first slice (room for reads starting before a run).
    pub lead: i64,
    /// Pixels between two channel blocks' slices of the band (a multiple of 16); pointwise,
    /// within a tile's slot (`mp`).
    pub slice: i64,
    /// Fractal columns of the weights (input-channel blocks x window positions).
    pub j: i64,
    /// Input-channel blocks.
    pub c1: i64,
    /// How the band covers the slab.
    pub mode: BandMode,
    /// The most band pixels one tile adds to what earlier tiles of its slab needed.
    pub max_chunk: i64,
    /// Input pixels whose NHWC data is a whole number of 16-element GM blocks (a streamed
    /// band's GM reads start on a multiple of it).
    pub align_pixels: i64,
    /// Input rows whose GM data is a whole number of 16-element blocks: a GM read starts
    /// on a row that is a multiple of it (counted over the tensor).
    pub align_rows: i64,
    /// The orientation.
    pub orient: Orientation,
}

impl Shape {
    /// Where channel block `c1`'s slice of the band starts (elements): after the lead,
    /// `slice` pixels apart; pointwise, in tile `tile`'s slot.
    pub fn slice_at(&self, tile: &Expr, c1: Expr) -> Expr {
        let slice = c1 * (self.slice * 16) + self.lead * 16;
        match self.mode {
            BandMode::Rows => slice,
            BandMode::Pixels => slice + tile.clone() * (self.c1 * self.slice * 16),
        }
    }
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
        let mode = BandMode::of(cv, orient);
        let tiles = t.count(t.ps);
        let max_chunk = max_chunk(cv, orient, t);
        let slice = match mode {
            BandMode::Rows => (band_rows * pitch + 15) / 16 * 16,
            BandMode::Pixels => t.mp,
        };
        Shape {
            pk,
            pp,
            slabs,
            per_core: (slabs + cores - 1) / cores,
            tiles,
            csubs: (cv.c1() + t.kc1 - 1) / t.kc1,
            band_rows,
            pitch,
            left,
            lead,
            slice,
            mode,
            max_chunk,
            j: cv.c1() * cv.rs(),
            c1: cv.c1(),
            align_rows: align_rows(cv),
            align_pixels: align_pixels(cv),
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

/// Input pixels of NHWC data that make a whole number of 16-element GM blocks.
pub fn align_pixels(cv: &Conv) -> i64 {
    16 / gcd(cv.c, 16)
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

impl Slab {
    /// The input pixel (in its image) the band's first pixel holds.
    pub fn origin(&self, cv: &Conv, sh: &Shape) -> Expr {
        match sh.mode {
            BandMode::Rows => self.y_first.clone() * cv.w,
            BandMode::Pixels => self.p0.clone(),
        }
    }

    /// Band pixels tiles `0..=g` need (0 for `g` = -1): [`need`] as an expression.
    pub fn need(&self, cv: &Conv, t: &Tiles, sh: &Shape, g: Expr) -> Expr {
        let end = (self.p0.clone() + t.start_expr(g.clone() + 1)).min(self.p_end.clone());
        let pixels = match sh.mode {
            BandMode::Pixels => end - self.p0.clone(),
            BandMode::Rows => {
                let last = ((end - 1) / cv.ow * cv.stride + (cv.r - cv.pad.top)).min(cv.h);
                (last - self.y_first.clone()) * cv.w
            }
        };
        g.cmp(npu_sim::program::CmpOp::Lt, 0)
            .select(0, pixels.max(0))
    }
}

/// One tile of a slab, as expressions of its index within the slab.
#[derive(Clone, Debug)]
pub struct Tile {
    /// Its index in the slab.
    pub index: Expr,
    /// The rows its im2col window and L0C tile have: its pixels rounded up to 16, or `mp`
    /// for the slab's first tile when it goes through blocks of output channels (each a
    /// column of L0C fractals `mp` rows high).
    pub rows: Expr,
    /// Whether the tile exists (the slab's last tiles may be past its pixels).
    pub valid: Expr,
    /// Its first output pixel in the image.
    pub p0: Expr,
    /// Its pixels.
    pub pixels: Expr,
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
        let p0 = slab.p0.clone() + tiles.start_expr(t.clone());
        let first = t.clone().cmp(npu_sim::program::CmpOp::Eq, 0);
        let pixels = (slab.p_end.clone() - p0.clone()).min(first.select(tiles.m0, tiles.mp));
        let oy_a = p0.clone() / cv.ow;
        let oy_b = (p0.clone() + pixels.clone() - 1) / cv.ow;
        let st = cv.stride;
        let y_lo = (oy_a.clone() * st - cv.pad.top).max(0);
        let y_hi = (oy_b.clone() * st + (cv.r - cv.pad.top)).min(cv.h);
        let h = y_hi - y_lo.clone();
        let pad_top = y_lo.clone() + cv.pad.top - oy_a.clone() * st;
        let pad_bottom = ((oy_b - oy_a.clone()) * st + cv.r - h.clone() - pad_top.clone()).max(0);
        let rows = if tiles.kblocks > 1 {
            t.clone()
                .cmp(npu_sim::program::CmpOp::Eq, 0)
                .select(tiles.rows0(), up16(pixels.clone()))
        } else {
            up16(pixels.clone())
        };
        Tile {
            rows,
            index: t,
            valid: p0
                .clone()
                .cmp(npu_sim::program::CmpOp::Lt, slab.p_end.clone()),
            row: y_lo - slab.y_base.clone(),
            m_start: p0.clone() - oy_a * cv.ow,
            p0,
            pixels,
            h,
            pad_top,
            pad_bottom,
        }
    }

    /// Where the band data its `load3d` windows read starts: channel block `c1`'s slice
    /// at the window's first row, or (pointwise) the tile's own slot.
    pub fn window_at(&self, cv: &Conv, sh: &Shape, c1: Expr) -> Expr {
        match sh.mode {
            BandMode::Rows => sh.slice_at(&self.index, c1) + self.row.clone() * (cv.w * 16),
            BandMode::Pixels => sh.slice_at(&self.index, c(0)),
        }
    }

    /// The `load3d` of the tile's im2col window, `rows` rows by columns `k_start .. +
    /// k_ext`: in one channel block's slice, whole rows with their padding; or (pointwise)
    /// the tile's slot, its `mp` pixels as one row of every channel block (pixels past the
    /// tile are zeros).
    pub fn window(
        &self,
        cv: &Conv,
        sh: &Shape,
        (mp, rows): (i64, Expr),
        k_start: Expr,
        k_ext: Expr,
    ) -> Load3dSizes<Expr> {
        let (h, w, channels, pads, m_start) = match sh.mode {
            BandMode::Pixels => (c(1), c(mp), cv.c1() * 16, [c(0), c(0), c(0), c(0)], c(0)),
            BandMode::Rows => {
                let pads = [
                    self.pad_top.clone(),
                    self.pad_bottom.clone(),
                    c(cv.pad.left),
                    c(cv.pad.right),
                ];
                (self.h.clone(), c(cv.w), 16, pads, self.m_start.clone())
            }
        };
        let [pad_top, pad_bottom, pad_left, pad_right] = pads;
        Load3dSizes {
            h,
            w,
            c: c(channels),
            kh: c(cv.r),
            kw: c(cv.s),
            stride: c(cv.stride),
            pad_top,
            pad_bottom,
            pad_left,
            pad_right,
            m_start,
            // `rows` of the im2col matrix (past the window: zeros)
            m_ext: rows,
            k_start,
            k_ext,
        }
    }
}
