//! The meeting of a spread tiling's pieces through the GM workspace
//! ([`crate::npu::window::tiles::Meet::Workspace`]): after every core has stored its
//! pieces' partial results (a row of the workspace each) and all have met at a `sync_all`,
//! each core takes its share of the tiles (contiguous ranges, as the work items are dealt);
//! per tile MTE2 loads its pieces' rows (one burst: they follow one another), V combines
//! them pairwise with the initial value into an output slot, and MTE3 stores the tile's
//! outputs. One slot each way, turned by the rings' flag ids 0, which the work items have
//! waited for already: a tile's load waits for V to have combined the one before, and V
//! waits for its store.

use super::item::Context;
use super::{dealt, modulo, over, pairwise, times, Initial};
use npu_sim::builder::Builder;
use npu_sim::program::{Dma, Expr, Pipe};

/// The meeting, on `cores` cores, if `cx` has a workspace.
pub(super) fn emit(b: &mut Builder, cx: &Context, cores: i64) {
    let Some(pieces) = cx.pieces else { return };
    let (w, model, z, bufs) = (cx.w, cx.model, cx.z, cx.bufs);
    // the pieces' rows go where a part's pixels would: in the output's type
    let work = bufs.converted.unwrap_or(bufs.input.0);
    let out = bufs.output.0;
    b.sync_all();
    let [tp, tq, tc, tiles] = model.grid(z);
    let (first, count) = dealt(tiles, cores);
    b.set_flag(Pipe::V, Pipe::Mte2, 0);
    b.set_flag(Pipe::Mte3, Pipe::V, 0);
    b.repeat("u", count, |b, u| {
        let g = first.clone() + u;
        let n = over(g.clone(), tp * tq * tc);
        let c0 = times(modulo(g.clone(), tc), z.chans);
        b.wait_flag(Pipe::V, Pipe::Mte2, 0);
        b.origin(Some(&format!(
            "load the pieces' partial results of {}",
            w.output.name
        )));
        let dst = b.at(work, [Expr::Const(0)]);
        let src = b.at(pieces, [times(g, z.spread), Expr::Const(0)]);
        b.push(Dma::new(dst, src, 1, z.spread * z.chans));
        b.origin(None);
        b.set_flag(Pipe::Mte2, Pipe::V, 0);
        b.wait_flag(Pipe::Mte2, Pipe::V, 0);
        b.wait_flag(Pipe::Mte3, Pipe::V, 0);
        b.origin(Some(&format!(
            "statement {}: the pieces' partial results combined",
            w.stmt
        )));
        pairwise(
            b,
            (w, model),
            ((work, Expr::Const(0)), None),
            (out, Expr::Const(0)),
            (z.spread, z.chans),
            (&Initial::Always, w.init),
        );
        b.origin(None);
        b.set_flag(Pipe::V, Pipe::Mte2, 0);
        b.set_flag(Pipe::V, Pipe::Mte3, 0);
        b.wait_flag(Pipe::V, Pipe::Mte3, 0);
        b.origin(Some(&format!(
            "store the tile's outputs of {}",
            w.output.name
        )));
        let dst = b.at(
            cx.tensors.1,
            cx.out_at(n, Expr::Const(0), Expr::Const(0), c0),
        );
        let src = b.at(out, [Expr::Const(0)]);
        b.push(Dma::new(dst, src, 1, z.chans));
        b.origin(None);
        b.set_flag(Pipe::Mte3, Pipe::V, 0);
    });
    b.wait_flag(Pipe::V, Pipe::Mte2, 0);
    b.wait_flag(Pipe::Mte3, Pipe::V, 0);
}
