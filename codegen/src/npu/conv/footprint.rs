//! The input rows each output pixel's window reads, found by isl from the kernel's access
//! relations: what a slab's band must hold and what a tile's window must cover.
//!
//! The program computes its bands and windows with expressions of the slab and tile indices
//! (`geometry`). The model sizes the bands with these tables instead, and [`check`] proves,
//! for every slab and tile of a compiled program, that the rows its expressions load contain
//! the rows isl says the slab's or the tile's instances read.

use super::geometry::{c, BandMode, Orientation, Shape, Slab, Tile};
use super::tiles::Tiles;
use super::{Activations, Conv};
use crate::npu::{lifted, NpuError};
use frontend::ir::ArrayId;
use poly::isl::{Ctx, IslResult, Map};
use poly::model::isl_text::isl_name;
use poly::model::{Program, Statement};

/// Rows `[first, end)` of an image.
type Rows = (i64, i64);

/// The rows a pixel reads; `None`: no row.
type Span = Option<Rows>;

/// For each output pixel of one image (row-major), the rows its window reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowReads {
    /// Rows of the input itself (a zero-padding row is none of its rows).
    input: Hulls,
    /// Rows of the array the convolution reads: the zero-padded copy, padding rows included,
    /// or the input itself when the kernel makes no copy.
    padded: Hulls,
}

/// Spans of consecutive pixels, with the hull of any range of them in constant time (the
/// model asks for thousands of ranges per candidate). Pixels come in runs of equal spans
/// (an output row's pixels but those whose window lies in the padding): each pixel knows its
/// run, and level `l` holds the hull of each `2^l` consecutive runs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Hulls {
    /// Each pixel's run.
    run: Vec<u32>,
    levels: Vec<Vec<(i64, i64)>>,
}

/// The hull of no row: the identity of [`join`].
const NONE: (i64, i64) = (i64::MAX, i64::MIN);

/// The smallest span holding both.
fn join(a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
    (a.0.min(b.0), a.1.max(b.1))
}

impl Hulls {
    fn new(spans: &[Span]) -> Hulls {
        let (mut run, mut runs) = (Vec::with_capacity(spans.len()), Vec::new());
        for span in spans {
            let span = span.unwrap_or(NONE);
            if runs.last() != Some(&span) {
                runs.push(span);
            }
            run.push(runs.len() as u32 - 1);
        }
        let n = runs.len();
        let mut levels = vec![runs];
        let mut width = 1;
        while 2 * width <= n {
            let prev = levels.last().expect("level 0 exists");
            let next = (0..=n - 2 * width)
                .map(|i| join(prev[i], prev[i + width]))
                .collect();
            levels.push(next);
            width *= 2;
        }
        Hulls { run, levels }
    }

    /// The rows the pixels `[a, b)` read, as `(first, end)` (`(0, 0)`: none).
    fn rows(&self, a: i64, b: i64) -> (i64, i64) {
        let len = self.run.len() as i64;
        let (a, b) = (a.clamp(0, len), b.clamp(0, len));
        if b <= a {
            return (0, 0);
        }
        // the runs of the first and the last pixel
        let (first, last) = (
            self.run[a as usize] as usize,
            self.run[b as usize - 1] as usize + 1,
        );
        let l = (usize::BITS - 1 - (last - first).leading_zeros()) as usize;
        let level = &self.levels[l];
        match join(level[first], level[last - (1 << l)]) {
            NONE => (0, 0),
            span => span,
        }
    }
}

/// What the tables are computed from: the kernel's statement and arrays, as the recogniser
/// found them.
pub struct Source<'a> {
    /// The kernel, its multiply-accumulate statement, the array it reads the image from
    /// and the input.
    pub at: lifted::Source<'a>,
    /// The output's layout.
    pub output_layout: Activations,
    /// The input's layout.
    pub input_layout: Activations,
    /// Output rows of an image.
    pub out_rows: i64,
    /// Output columns of an image.
    pub out_cols: i64,
}

impl RowReads {
    /// The tables of the convolution `src` describes.
    pub fn of(src: &Source) -> Result<RowReads, NpuError> {
        let ctx = Ctx::default();
        let program = src.at.lift(&ctx, "convolution")?;
        Self::from_program(&ctx, &program, src).map_err(|e| {
            NpuError::Internal(format!(
                "counting the convolution's input rows with isl: {e}"
            ))
        })
    }

    /// [`RowReads::of`] on the lifted kernel.
    fn from_program(ctx: &Ctx, program: &Program, src: &Source) -> Result<RowReads, String> {
        let isl = |e: poly::isl::IslError| e.to_string();
        let (update, read_x) = src.at.update(program)?;
        let to_x = Self::pixels(ctx, update, src)
            .and_then(|p| p.apply_range(&read_x))
            .map_err(isl)?;
        let x_row = row_of(ctx, src, src.at.x).map_err(isl)?;
        let padded = (to_x.apply_range(&x_row))
            .and_then(|rel| Self::table(&rel, (src.out_rows, src.out_cols)))
            .map_err(isl)?;
        if src.at.input == src.at.x {
            let hulls = Hulls::new(&padded);
            return Ok(RowReads {
                input: hulls.clone(),
                padded: hulls,
            });
        }
        // through the copy: `{ X[..] -> I[..] }` where the copy writes X[..] from I[..]
        let unpad = lifted::unpadded(program, src.at.x, src.at.input)?;
        let i_row = row_of(ctx, src, src.at.input).map_err(isl)?;
        let input = (to_x.apply_range(&unpad))
            .and_then(|rel| rel.apply_range(&i_row))
            .and_then(|rel| Self::table(&rel, (src.out_rows, src.out_cols)))
            .map_err(isl)?;
        Ok(RowReads {
            input: Hulls::new(&input),
            padded: Hulls::new(&padded),
        })
    }

    /// `{ [row, column] -> S[..] }`: the instances of `update` computing each output pixel
    /// of the first image (the others repeat its rows).
    fn pixels(ctx: &Ctx, update: &Statement, src: &Source) -> IslResult<Map> {
        let out = update.write.relation.clone();
        let o = out.range()?.tuple_name().unwrap_or_default();
        let (p, q) = match src.output_layout {
            Activations::Nchw => ("i2", "i3"),
            Activations::Nhwc => ("i1", "i2"),
        };
        let pixel = ctx.map(&format!(
            "{{ [oy, ox] -> {o}[i0, i1, i2, i3] : i0 = 0 and oy = {p} and ox = {q} }}"
        ))?;
        pixel.apply_range(&out.reverse()?)
    }

    /// The first and last row of each pixel's image under `rel` (`{ [oy, ox] -> [row] }`),
    /// pixels numbered row-major in rows of `cols`.
    ///
    /// A convolution's pixels read rows by their output row alone, unless their window
    /// lies in the padding: when isl finds `rel` to be that product, it is scanned per
    /// output row and per pixel reading nothing (isl's scan of a million pixels takes
    /// seconds); otherwise per pixel.
    fn table(rel: &Map, (rows, cols): (i64, i64)) -> IslResult<Vec<Span>> {
        let ctx = rel.ctx();
        let row = ctx.map("{ [oy, ox] -> [oy] }")?;
        let by_row = row.reverse()?.apply_range(rel)?;
        let reading = rel.domain()?;
        let product = row.intersect_domain(&reading)?.apply_range(&by_row)?;
        if !product.is_equal(rel)? {
            let mut spans = vec![None; (rows * cols) as usize];
            let at = |pt: &[i64]| (pt[0] * cols + pt[1]) as usize;
            for (pt, span) in lifted::scan(rel)? {
                spans[at(&pt)] = Some(span);
            }
            return Ok(spans);
        }
        let mut per_row = vec![None; rows as usize];
        for (pt, span) in lifted::scan(&by_row)? {
            per_row[pt[0] as usize] = Some(span);
        }
        let mut spans: Vec<Span> = (0..rows * cols)
            .map(|px| per_row[(px / cols) as usize])
            .collect();
        // the parameters fixed as in `rel`, so that the difference is bounded
        let all = (ctx.set(&format!(
            "{{ [oy, ox] : 0 <= oy < {rows} and 0 <= ox < {cols} }}"
        ))?)
        .intersect_params(&reading.params()?)?;
        for pt in all.subtract(&reading)?.points()? {
            spans[(pt[0] * cols + pt[1]) as usize] = None;
        }
        Ok(spans)
    }

    /// The rows of the input the pixels `[a, b)` read, as `(first, end)` (`(0, 0)`: none).
    pub fn input_rows(&self, a: i64, b: i64) -> (i64, i64) {
        self.input.rows(a, b)
    }

    /// How many rows of the padded input the pixels `[a, b)` read, padding rows included.
    pub fn padded_rows(&self, a: i64, b: i64) -> i64 {
        let (first, end) = self.padded.rows(a, b);
        end - first
    }
}

/// `{ A[i0, i1, i2, i3] -> [row] }` for the activation `array` in the input's layout.
fn row_of(ctx: &Ctx, src: &Source, array: ArrayId) -> IslResult<Map> {
    let name = isl_name(&src.at.kernel.array(array).name);
    let row = match src.input_layout {
        Activations::Nchw => 2,
        Activations::Nhwc => 1,
    };
    ctx.map(&format!("{{ {name}[i0, i1, i2, i3] -> [i{row}] }}"))
}

/// Whether the rows `read` (empty: none) lie within `have`.
fn within(read: (i64, i64), have: (i64, i64)) -> bool {
    read.0 >= read.1 || (have.0 <= read.0 && read.1 <= have.1)
}

/// The value of a program expression that mentions no loop variable.
fn ev(e: &npu_sim::program::Expr) -> i64 {
    e.eval(&[], 0, 1)
}

/// An output box `(first pixel, end pixel, first channel, end channel)` a tile stores.
type Stored = (i64, i64, i64, i64);

/// Whether `boxes` tile `[0, pixels) x [0, channels)` exactly: ranges of channels that
/// follow each other from 0 to `channels`, and within each, ranges of pixels that follow
/// each other from 0 to `pixels` (no element stored twice, none left out).
fn partition(mut boxes: Vec<Stored>, pixels: i64, channels: i64) -> bool {
    boxes.sort_by_key(|&(p0, _, k0, k1)| (k0, k1, p0));
    let mut k_end = 0;
    let mut rest = boxes.as_slice();
    while let Some(&(_, _, k0, k1)) = rest.first() {
        let n = rest.iter().take_while(|b| (b.2, b.3) == (k0, k1)).count();
        let (group, tail) = rest.split_at(n);
        let mut p_end = 0;
        for &(p0, p1, _, _) in group {
            if p0 != p_end || p1 <= p0 {
                return false;
            }
            p_end = p1;
        }
        if k0 != k_end || k1 <= k0 || p_end != pixels {
            return false;
        }
        k_end = k1;
        rest = tail;
    }
    k_end == channels
}

/// Proves that the program of `cv` cut as `t` (shape `sh`) loads every input row the
/// instances of each slab read into its band, and (bands of whole rows read by `load3d`)
/// that the band and its streamed chunks fit the buffers sized from those rows, and that
/// each tile's window covers the rows its instances read, within the rows the band holds
/// and has received by that tile; and that its tiles' stores cover the image's output
/// pixels and channels once each. The first image's slabs stand for the others.
pub fn check(cv: &Conv, t: &Tiles, sh: &Shape) -> Result<(), NpuError> {
    let short = |what: String, must: (i64, i64), have: (i64, i64)| {
        NpuError::Internal(format!(
            "{what} holds input rows [{}, {}), short of rows [{}, {}) (what isl finds the instances read)",
            have.0, have.1, must.0, must.1
        ))
    };
    let mut stored: Vec<Stored> = Vec::new();
    for index in 0..sh.pk * sh.pp {
        let slab = Slab::at(cv, t, sh, c(index));
        let (k0, ka) = (ev(&slab.k0), ev(&slab.ka));
        let tiles: Vec<Tile> = (0..sh.tiles)
            .map(|g| Tile::at(cv, t, &slab, c(g)))
            .collect();
        for tile in tiles.iter().filter(|tile| ev(&tile.valid) != 0) {
            let p0 = ev(&tile.p0);
            stored.push((p0, p0 + ev(&tile.pixels), k0, k0 + ka));
        }
        let loaded = (ev(&slab.y_first), ev(&slab.y_end));
        let read = cv.rows.input_rows(ev(&slab.p0), ev(&slab.p_end));
        if !within(read, loaded) {
            return Err(short(format!("the band of slab {index}"), read, loaded));
        }
        if sh.mode != BandMode::Rows || sh.orient != Orientation::PixelRows {
            continue;
        }
        // the buffers, sized from isl's rows, hold what the expressions load
        let rows = loaded.1 - loaded.0;
        let need = |g: i64| ev(&slab.need(cv, t, sh, c(g)));
        let group = t.band_group.max(1);
        let chunk = (0..sh.tiles)
            .step_by(group as usize)
            .map(|g| need(g + group - 1) - need(g - 1))
            .max()
            .unwrap_or(0);
        if rows > sh.band_rows || (t.streamed && chunk > sh.max_chunk) {
            return Err(NpuError::Internal(format!(
                "slab {index} loads {rows} rows into a band of {}, in chunks of up to {chunk} pixels where the pieces hold {}",
                sh.band_rows, sh.max_chunk
            )));
        }
        let base = ev(&slab.y_base);
        for (g, tile) in (0..).zip(&tiles) {
            if ev(&tile.valid) == 0 {
                continue;
            }
            let p0 = ev(&tile.p0);
            let read = cv.rows.input_rows(p0, p0 + ev(&tile.pixels));
            let first = base + ev(&tile.row);
            let window = (first, first + ev(&tile.h));
            let what = |s: &str| format!("{s} of tile {g} of slab {index}");
            if !within(read, window) {
                return Err(short(what("the window"), read, window));
            }
            let received = loaded.0 + need(g) / cv.w;
            for (s, have) in [
                ("the band's rows", (base, base + sh.band_rows)),
                ("the band by the time", (loaded.0, received)),
            ] {
                if !within(window, have) {
                    return Err(short(what(s), window, have));
                }
            }
        }
    }
    if !partition(stored, cv.pixels(), cv.k) {
        return Err(NpuError::Internal(format!(
            "the tiles' stores do not cover the {} x {} output pixels and channels once each",
            cv.pixels(),
            cv.k
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores tile the output only when they leave nothing out and store nothing twice.
    #[test]
    fn stores_partition_the_output_once() {
        let grid = vec![(0, 5, 0, 16), (5, 9, 0, 16), (0, 9, 16, 20)];
        assert!(partition(grid.clone(), 9, 20));
        assert!(!partition(grid.clone(), 10, 20), "pixels left out");
        assert!(!partition(grid.clone(), 9, 24), "channels left out");
        let mut overlap = grid.clone();
        overlap[1].0 = 4;
        assert!(!partition(overlap, 9, 20), "a pixel stored twice");
        let mut gap = grid.clone();
        gap[2].2 = 17;
        assert!(!partition(gap, 9, 20), "a channel left out");
        let mut twice = grid;
        twice.push((0, 9, 16, 20));
        assert!(!partition(twice, 9, 20), "a tile stored twice");
    }

    /// The table of a relation, by either path, is each pixel's first and last row: a
    /// product of output rows and reading pixels (with pixels reading nothing), and a
    /// relation whose rows depend on the column too.
    #[test]
    fn each_pixel_s_rows_by_either_path() {
        let ctx = Ctx::default();
        for (text, want) in [
            (
                "{ [oy, ox] -> [y] : 0 <= oy < 3 and 1 <= ox < 4 and 2 * oy <= y < 2 * oy + 3 }",
                &(|oy: i64, ox: i64| (ox >= 1).then_some((2 * oy, 2 * oy + 3)))
                    as &dyn Fn(i64, i64) -> Span,
            ),
            (
                "{ [oy, ox] -> [y] : 0 <= oy < 3 and 0 <= ox < 4 and oy + ox <= y <= oy + 2 * ox }",
                &|oy: i64, ox: i64| Some((oy + ox, oy + 2 * ox + 1)),
            ),
        ] {
            let spans = RowReads::table(&ctx.map(text).unwrap(), (3, 4)).unwrap();
            for px in 0..12 {
                assert_eq!(
                    spans[px as usize],
                    want(px / 4, px % 4),
                    "{text}: pixel {px}"
                );
            }
        }
    }

    /// Every range's hull is the fold of its spans, on spans with gaps (pixels reading no
    /// row) and ranges of every length.
    #[test]
    fn the_hull_of_a_range_is_its_spans_fold() {
        let spans: Vec<Span> = (0..37i64)
            .map(|i| (i % 5 != 3).then_some(((i * 7) % 11, (i * 7) % 11 + 1 + i % 3)))
            .collect();
        let hulls = Hulls::new(&spans);
        for a in 0..=spans.len() {
            for b in a..=spans.len() {
                let want = (spans[a..b].iter().flatten()).fold(NONE, |acc, &s| join(acc, s));
                let want = if want == NONE { (0, 0) } else { want };
                assert_eq!(hulls.rows(a as i64, b as i64), want, "[{a}, {b})");
            }
        }
    }
}
