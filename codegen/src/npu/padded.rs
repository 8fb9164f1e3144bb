//! An input padded by the kernel itself: two statements make a temporary `X` a copy of an
//! input `I` with a border of one value, `X[..] = V` over all of `X`, then
//! `X[.., h + PT, w + PL, ..] = I[.., h, w, ..]` over all of `I`. The back end never builds
//! `X`: the convolutions pad on the fly (`load3d`), the window reductions skip the border.

use crate::npu::conv::{Pad, Tensor};
use crate::npu::read::{refuse, Reader};
use crate::npu::NpuError;
use frontend::ir::{ArrayId, AssignOp, ExprKind, Role, StmtContext};

/// What the two statements make of `X`.
#[derive(Clone, Debug, PartialEq)]
pub struct Padded {
    /// The input copied into `X`.
    pub input: Tensor,
    /// The border's rows and columns.
    pub pad: Pad,
    /// The border's value.
    pub fill: f64,
}

/// `fill` and `copy` make the 4-D temporary `x` a padded copy of an input, with `dims` the
/// positions of its batch, row, column and channel dimensions; or a refusal saying how to
/// write one.
pub fn copy(
    rd: &Reader,
    fill: &StmtContext,
    copy: &StmtContext,
    x: ArrayId,
    [ndim, hdim, wdim, cdim]: [usize; 4],
) -> Result<Padded, NpuError> {
    let xname = rd.name(x).to_string();
    let not_padding = || {
        refuse(format!(
            "statements {} and {} do not make `{xname}` a padded copy of an input: write `{xname}[..] = V` over all of it, then `{xname}[.., h + PT, w + PL, ..] = I[.., h, w, ..]` over all of the input `I`",
            fill.stmt.name, copy.stmt.name
        ))
    };
    let x_shape = rd.shape(x)?;
    // X[a, b, c, d] = V over X's whole extent
    let fill_ext = rd.extents(fill)?;
    let value = match fill.stmt.rhs.kind {
        ExprKind::Literal(v) => Some(v),
        _ => None,
    };
    let fill_ok = fill.stmt.target.array == x
        && rd.kernel.array(x).role == Role::Temp
        && fill.stmt.op == AssignOp::Assign
        && rd.indices(&fill.stmt.target).is_some_and(|ix| {
            ix.iter()
                .zip(&x_shape)
                .all(|(e, &d)| e.bare().is_some_and(|l| fill_ext.get(l) == Some(&d)))
                && ix.len() == fill_ext.len()
        });
    let ExprKind::Read(src) = &copy.stmt.rhs.kind else {
        return not_padding();
    };
    let copy_ext = rd.extents(copy)?;
    let input = rd.tensor(src.array)?;
    let (Some(ti), Some(si)) = (rd.indices(&copy.stmt.target), rd.indices(src)) else {
        return not_padding();
    };
    let offsets: Option<Vec<i64>> = (ti.iter().zip(&si).zip(&input.shape))
        .map(|((t, s), &extent)| {
            let l = s.bare()?;
            let same = t.coefs.len() == 1 && t.coefs.get(l) == Some(&1);
            (same && copy_ext.get(l) == Some(&extent)).then_some(t.constant)
        })
        .collect();
    let copy_ok = copy.stmt.target.array == x
        && copy.stmt.op == AssignOp::Assign
        && rd.kernel.array(src.array).role == Role::In
        && ti.len() == 4
        && si.len() == 4
        && copy_ext.len() == 4;
    let (Some(off), Some(fill)) = (offsets.filter(|_| fill_ok && copy_ok), value) else {
        return not_padding();
    };
    let pad = Pad {
        top: off[hdim],
        bottom: x_shape[hdim] - input.shape[hdim] - off[hdim],
        left: off[wdim],
        right: x_shape[wdim] - input.shape[wdim] - off[wdim],
    };
    let fits = off[ndim] == 0
        && off[cdim] == 0
        && x_shape[ndim] == input.shape[ndim]
        && x_shape[cdim] == input.shape[cdim]
        && [pad.top, pad.bottom, pad.left, pad.right]
            .iter()
            .all(|&v| v >= 0);
    if !fits {
        return not_padding();
    }
    Ok(Padded { input, pad, fill })
}
