//! An output set before atomic adds into it: every core stores a UB slot over its share of
//! the output, then all cores meet at a `sync_all`. Split-K products (`matmul::ring`) and
//! spread global sums (`window::program`) start so.

use npu_sim::builder::Builder;
use npu_sim::program::{BufferId, Dma, Expr, TensorId};

/// A core's share of `total` elements of `elem_bytes` bytes each among `cores`: whole
/// 32-byte blocks (the last core's share may be shorter or empty).
pub fn share(total: i64, cores: i64, elem_bytes: i64) -> i64 {
    let block = npu_sim::hazards::BLOCK as i64 / elem_bytes;
    (total + cores * block - 1) / (cores * block) * block
}

/// Every core stores the first `piece` elements of `src` (in UB) over its `share` of
/// `tensor`'s `total` elements (flat: the last of its `rank` indices), a transfer per
/// `piece`, each under `origin`; then all cores wait for all (`sync_all`), so that the atomic
/// adds after it find the tensor written (the simulator's rule E0023).
pub fn store_shares(
    b: &mut Builder,
    (tensor, rank): (TensorId, usize),
    src: BufferId,
    (total, share, piece): (i64, i64, i64),
    origin: &str,
) {
    let start = Expr::Core * share;
    let len = (Expr::Const(total) - start.clone()).min(share).max(0);
    b.repeat("z", (len.clone() + (piece - 1)) / piece, |b, z| {
        let at = start.clone() + z.clone() * piece;
        let mut index = vec![Expr::Const(0); rank];
        if let Some(last) = index.last_mut() {
            *last = at.clone();
        }
        let dst = b.at(tensor, index);
        let from = b.at(src, [Expr::Const(0)]);
        b.origin(Some(origin));
        b.push(Dma::new(
            dst,
            from,
            1,
            (start.clone() + len.clone() - at).min(piece),
        ));
        b.origin(None);
    });
    b.sync_all();
}
