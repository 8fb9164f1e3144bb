//! The input rows and columns each output row and column of a window reduction reads, found
//! by isl from the kernel's access relations (through the padded copy, so a window's
//! border rows and columns are not the input's), and the check that every tile of a
//! program loads them.
//!
//! The program computes each tile's input rows and columns with expressions of the tile's
//! first output row and column (`program::input_box`); [`check`] evaluates those very
//! expressions for every tile of an image and proves that the box they load contains what
//! isl says the tile's outputs read. The window's rows depend on the output row alone and
//! its columns on the output column alone (the recognised form, `sh*p + r` and `sw*q + s`),
//! so a tile reads the hull of its rows' rows by the hull of its columns' columns.

use super::{Dim, View, Window};
use crate::npu::lifted::{self, Source};
use crate::npu::NpuError;
use poly::isl::{Ctx, IslResult};
use poly::model::Program;

/// `[first, end)` of the input's rows (or columns); `None`: none.
type Span = Option<(i64, i64)>;

/// What each output row and each output column of one image reads of the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    /// Per output row, the input rows its windows read.
    pub rows: Vec<Span>,
    /// Per output column, the input columns its windows read.
    pub cols: Vec<Span>,
}

impl Reads {
    /// The reads of the window reduction `src` describes, counted by isl.
    pub fn of(src: &Source, view: &View) -> Result<Reads, NpuError> {
        let ctx = Ctx::default();
        let program = src.lift(&ctx, "window reduction")?;
        Self::from_program(&ctx, &program, src, view).map_err(|e| {
            NpuError::Internal(format!("counting the window's input rows with isl: {e}"))
        })
    }

    fn from_program(
        ctx: &Ctx,
        program: &Program,
        src: &Source,
        view: &View,
    ) -> Result<Reads, String> {
        let isl = |e: poly::isl::IslError| e.to_string();
        let update = (program.statements.iter())
            .find(|s| s.name == src.update)
            .ok_or("the update is not in the kernel")?;
        let read_x = lifted::reads(update, src.x).ok_or("the update does not read its input")?;
        // { O[..] -> X[..] }, then through the copy { O[..] -> I[..] }
        let mut rel = (update.write.relation.reverse())
            .and_then(|o| o.apply_range(&read_x))
            .map_err(isl)?;
        if src.input != src.x {
            let unpad = lifted::unpadded(program, src.x, src.input)?;
            rel = rel.apply_range(&unpad).map_err(isl)?;
        }
        let out = (update.write.relation.range())
            .map_err(isl)?
            .tuple_name()
            .unwrap_or_default();
        let inp = rel.range().map_err(isl)?.tuple_name().unwrap_or_default();
        let shape = &program.kernel.array(update.write.array).dims;
        let vars = |n: usize| {
            (0..n)
                .map(|k| format!("i{k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let in_rank: usize = view.input.iter().map(|d| d.rank()).sum();
        // the input rows (`dim` 1) or columns (2) output row (column) x of the first image
        // reads (global pooling's output has one pixel), through the view: an input without
        // such a dimension has one row (column)
        let span = |dim: usize, extent: i64| -> IslResult<Vec<Span>> {
            let index = match view.input[dim] {
                Dim::Absent => return Ok(vec![Some((0, 1)); extent as usize]),
                Dim::At(k) => format!("i{k}"),
                Dim::Merged { at, inner } => format!("{inner}*i{at} + i{}", at + 1),
            };
            let mut fixed: Vec<String> = match view.output[0] {
                Dim::At(n) => vec![format!("i{n} = 0")],
                _ => vec![],
            };
            fixed.push(match view.output.get(dim) {
                Some(Dim::At(k)) if view.output.len() == 4 => format!("i{k} = x"),
                _ => "x = 0".into(),
            });
            let from = ctx.map(&format!(
                "{{ [x] -> {out}[{}] : {} }}",
                vars(shape.len()),
                fixed.join(" and ")
            ))?;
            let to = ctx.map(&format!("{{ {inp}[{}] -> [{index}] }}", vars(in_rank)))?;
            let by = from.apply_range(&rel)?.apply_range(&to)?;
            let mut spans = vec![None; extent as usize];
            for (x, s) in lifted::scan(&by)? {
                if let Some(slot) = usize::try_from(x[0]).ok().and_then(|x| spans.get_mut(x)) {
                    *slot = Some(s);
                }
            }
            Ok(spans)
        };
        let extent = |d: usize| -> Result<i64, String> {
            if shape.len() != 4 {
                return Ok(1);
            }
            let e = shape.get(d).ok_or("the output is not 4-D")?;
            scheduler::mapping::qexpr::QExpr::from_aff(e, &|v| {
                scheduler::mapping::qexpr::QExpr::Const(
                    src.sizes.get(v.name()).copied().unwrap_or(0),
                )
            })
            .map(|q| q.eval(&|_| 0))
            .ok_or_else(|| "an extent of the output has no value".to_string())
        };
        Ok(Reads {
            rows: span(1, extent(1)?).map_err(isl)?,
            cols: span(2, extent(2)?).map_err(isl)?,
        })
    }
}

/// The hull of the spans `spans[a..b]` (`None`: none read).
fn hull(spans: &[Span], a: i64, b: i64) -> Span {
    (a..b)
        .filter_map(|i| spans.get(i as usize).copied().flatten())
        .reduce(|x, y| (x.0.min(y.0), x.1.max(y.1)))
}

/// Every tile of `rows x cols` output pixels of one image of `w` loads, by `load_box`
/// (the tile's first output row and column and its sizes -> its input rows `hlo..hhi` and
/// columns `wlo..whi`), the input rows and columns isl says its outputs read, and nothing
/// outside the image; else an internal error naming the tile.
pub fn check(
    w: &Window,
    reads: &Reads,
    (rows, cols): (i64, i64),
    load_box: impl Fn(i64, i64, i64, i64) -> [i64; 4],
) -> Result<(), NpuError> {
    let within = |read: Span, lo: i64, hi: i64| read.is_none_or(|(a, b)| lo <= a && b <= hi);
    for p0 in (0..w.oh).step_by(rows.max(1) as usize) {
        for q0 in (0..w.ow).step_by(cols.max(1) as usize) {
            let (r, c) = (rows.min(w.oh - p0), cols.min(w.ow - q0));
            let [hlo, hhi, wlo, whi] = load_box(p0, q0, r, c);
            let (need_rows, need_cols) =
                (hull(&reads.rows, p0, p0 + r), hull(&reads.cols, q0, q0 + c));
            let inside = 0 <= hlo && hhi <= w.h && 0 <= wlo && whi <= w.w;
            if !inside || !within(need_rows, hlo, hhi) || !within(need_cols, wlo, whi) {
                return Err(NpuError::Internal(format!(
                    "the tile of output rows {p0}..{} and columns {q0}..{} loads input rows {hlo}..{hhi} and columns {wlo}..{whi}, where isl finds that its windows read rows {need_rows:?} and columns {need_cols:?} of an image of {} x {}",
                    p0 + r,
                    q0 + c,
                    w.h,
                    w.w
                )));
            }
        }
    }
    Ok(())
}
