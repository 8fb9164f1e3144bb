//! The kernel lifted into isl for the recognisers that count what their tiles read (the
//! convolutions' rows, the window reductions' rows and columns): the lifting, a statement's
//! read of an array, the way back through a padded copy to the input, and the span of each
//! point's image.

use crate::npu::NpuError;
use frontend::ir::{ArrayId, Kernel};
use poly::isl::{Ctx, IslResult, Map};
use poly::model::{Program, Statement};

/// What a footprint is counted from: a kernel at its sizes, the update statement whose reads
/// are counted, the array it reads its image from (a padded copy, or the input) and the
/// input behind it.
pub struct Source<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Its parameters' values.
    pub sizes: &'a BTreeMap<String, i64>,
    /// The update statement's name.
    pub update: &'a str,
    /// The array the update reads its image from.
    pub x: ArrayId,
    /// The input (the array the copy reads, or `x`).
    pub input: ArrayId,
}

impl Source<'_> {
    /// The kernel in isl (`what` names it in the error).
    pub fn lift(&self, ctx: &Ctx, what: &str) -> Result<Program, NpuError> {
        Program::build(ctx, self.kernel, self.sizes)
            .map_err(|e| NpuError::Internal(format!("lifting the {what}: {e}")))
    }

    /// The update in `program` and its read of the image.
    pub fn update<'p>(&self, program: &'p Program) -> Result<(&'p Statement, Map), String> {
        let update = (program.statements.iter())
            .find(|s| s.name == self.update)
            .ok_or("the update is not in the kernel")?;
        let read = reads(update, self.x).ok_or("the update does not read its image")?;
        Ok((update, read))
    }
}
use std::collections::{BTreeMap, HashMap};

/// The read of `array` by `s`, if any.
pub fn reads(s: &Statement, array: ArrayId) -> Option<Map> {
    (s.reads.iter())
        .find(|a| a.array == array)
        .map(|a| a.relation.clone())
}

/// `{ X[..] -> I[..] }`: the element of `input` each element of `x` is a copy of, from the
/// statement that copies one into the other (a padded copy).
pub fn unpadded(program: &Program, x: ArrayId, input: ArrayId) -> Result<Map, String> {
    let (copy, read_i) = (program.statements.iter())
        .filter(|s| s.write.array == x)
        .find_map(|s| Some((s, reads(s, input)?)))
        .ok_or("no statement copies the input into the padded array")?;
    (copy.write.relation.reverse())
        .and_then(|unpad| unpad.apply_range(&read_i))
        .map_err(|e| e.to_string())
}

/// A point of a domain with the span `[first, end)` of its one-dimensional image.
pub type Spanned = (Vec<i64>, (i64, i64));

/// Each point of `rel`'s domain with the span of its one-dimensional image.
pub fn scan(rel: &Map) -> IslResult<Vec<Spanned>> {
    let n = rel.domain()?.n_dims()?;
    let ends: HashMap<Vec<i64>, i64> = (rel.lexmax()?.wrap()?.points()?)
        .into_iter()
        .map(|pt| (pt[..n].to_vec(), pt[n] + 1))
        .collect();
    let firsts = rel.lexmin()?.wrap()?.points()?;
    Ok((firsts.into_iter())
        .map(|pt| (pt[..n].to_vec(), (pt[n], ends[&pt[..n]])))
        .collect())
}
