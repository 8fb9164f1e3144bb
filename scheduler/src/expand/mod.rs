//! Array expansion: a written array whose values never flow from one iteration of some
//! loops to another gets a copy per iteration of those loops, so that the false
//! dependences through it no longer order the iterations.
//!
//! A scalar assigned at the top of each iteration of a loop and read only within it
//! (`w = A[i][j]; for k: w -= ...; A[i][j] = w;` in a C region) serialises the loop through
//! its write-after-read and write-after-write dependences although no value crosses
//! iterations; expanded along the loops its web shares, it no longer does. An array the
//! caller reads after the region is expanded only when every iteration of those loops
//! writes it whole, and its final contents are then copied back from the last iteration.
//!
//! Deliberately absent: expansion that adds dimensions beyond the kernel's largest array
//! (its memory stays of the order the kernel already needs), and storage contraction of
//! the expanded arrays after scheduling.

mod analysis;
mod bound;
mod rewrite;
#[cfg(test)]
mod tests;

pub use analysis::{plans, CopyOut, Plan, Web};
pub use rewrite::{rewrite, Expansion};

use frontend::ir::{ArrayId, Kernel};
use poly::isl::IslResult;
use poly::model::Program;

/// `program`'s kernel with every expansion that applies, and what was expanded; `None` when
/// nothing applies. The arrays in `dead_after` are not read after the region; new arrays
/// are named from `prefix`.
pub fn expand(
    program: &Program,
    dead_after: &[ArrayId],
    prefix: &str,
) -> IslResult<Option<(Kernel, Vec<Expansion>)>> {
    let plans = plans(program, dead_after)?;
    if plans.is_empty() {
        return Ok(None);
    }
    Ok(Some(rewrite(&program.kernel, &plans, prefix)))
}
