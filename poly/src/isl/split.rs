//! Pairs of instances sorted by which of several disjoint sets of instances holds each end
//! (the children of a schedule tree's sequence: which pairs stay inside a child, which run
//! from one child to another).
//!
//! Restricting a relation to each part in turn (`intersect_domain`, `intersect_range`)
//! walks the whole relation once per part, which for a sequence of `n` children over `m`
//! relations costs `n * m` isl operations at every node and every analysis; deriche's
//! original order (47 statements, 212 dependence relations) spent a quarter of its compile
//! time that way. Parts are nearly always whole statements (`{ S3[i, j] }`, a universe), so
//! each relation is placed by its tuple names in one pass, and isl intersects only the
//! pieces of parts that hold some instances of a statement and not others.

use super::{Ctx, IslResult, Map, Set, UnionMap, UnionSet};
use isl_rs::DimType;
use std::collections::{BTreeMap, HashMap};

/// The pairs of a relation, sorted by the parts their ends lie in (see
/// [`UnionMap::split_by_ends`]).
pub struct SplitPairs {
    ctx: Ctx,
    /// `(d, r)`: the pieces whose source lies in part `d` and whose sink lies in part `r`.
    cells: BTreeMap<(usize, usize), Vec<Map>>,
}

impl SplitPairs {
    /// The pairs from a part `d` to a part `r` for which `keep(d, r)` holds.
    pub fn select(&self, keep: impl Fn(usize, usize) -> bool) -> IslResult<UnionMap> {
        let mut out = self.ctx.empty_union_map()?;
        for (&(d, r), maps) in &self.cells {
            if keep(d, r) {
                for m in maps {
                    out = out.apply2(m, |u, m| u.add_map(m))?;
                }
            }
        }
        Ok(out)
    }
}

/// The pieces of one part in one statement's space.
struct Piece {
    part: usize,
    set: Set,
    /// Whether the piece is the whole space (then nothing needs intersecting).
    whole: bool,
}

impl UnionMap {
    /// Sorts the pairs of `self` by the parts of `parts` (disjoint sets of instances) that
    /// hold their two ends; pairs with an end in no part are dropped.
    pub fn split_by_ends(&self, parts: &[&UnionSet]) -> IslResult<SplitPairs> {
        // Statement spaces are told apart by tuple name and dimension.
        let mut by_tuple: HashMap<(Option<String>, usize), Vec<Piece>> = HashMap::new();
        for (part, p) in parts.iter().enumerate() {
            for set in p.sets()? {
                let whole = set.query(|s| s.plain_is_universe())?;
                let key = (set.tuple_name(), set.n_dims()?);
                by_tuple
                    .entry(key)
                    .or_default()
                    .push(Piece { part, set, whole });
            }
        }
        let none = Vec::new();
        let mut cells: BTreeMap<(usize, usize), Vec<Map>> = BTreeMap::new();
        for map in self.maps()? {
            let sources = by_tuple.get(&map.tuple(DimType::In)?).unwrap_or(&none);
            let sinks = by_tuple.get(&map.tuple(DimType::Out)?).unwrap_or(&none);
            if sinks.is_empty() {
                continue;
            }
            for d in sources {
                let from = if d.whole {
                    map.clone()
                } else {
                    map.intersect_domain(&d.set)?
                };
                for r in sinks {
                    let piece = if r.whole {
                        from.clone()
                    } else {
                        from.intersect_range(&r.set)?
                    };
                    if (d.whole && r.whole) || !piece.is_empty()? {
                        cells.entry((d.part, r.part)).or_default().push(piece);
                    }
                }
            }
        }
        Ok(SplitPairs {
            ctx: self.ctx().clone(),
            cells,
        })
    }
}

impl Map {
    /// The name (if any) and dimension of the relation's source (`DimType::In`) or sink
    /// (`DimType::Out`) tuple.
    fn tuple(&self, end: DimType) -> IslResult<(Option<String>, usize)> {
        // isl-rs reads a NULL name (an anonymous tuple) as a C string: ask first.
        let name = if self.query(|m| m.has_tuple_name(end))? {
            Some(self.query(|m| m.get_tuple_name(end).map(str::to_owned))?)
        } else {
            None
        };
        let dims = self.query(|m| m.dim(end))?;
        Ok((name.filter(|n| !n.is_empty()), dims.max(0) as usize))
    }
}

#[cfg(test)]
mod tests {
    use crate::isl::Ctx;

    #[test]
    fn pairs_are_sorted_by_the_parts_of_their_ends() {
        let ctx = Ctx::default();
        let pairs = ctx
            .union_map(
                "{ S[i] -> T[j] : 0 <= i < 4 and 0 <= j < 4; T[j] -> S[i] : 0 <= i, j < 4; \
                 S[i] -> S[i + 1] : 0 <= i < 3; U[] -> S[0] }",
            )
            .unwrap();
        // Part 0 holds all of S, part 1 the first half of T, part 2 the second half.
        let s = ctx.union_set("{ S[i] }").unwrap();
        let t_low = ctx.union_set("{ T[j] : j < 2 }").unwrap();
        let t_high = ctx.union_set("{ T[j] : j >= 2 }").unwrap();
        let split = pairs.split_by_ends(&[&s, &t_low, &t_high]).unwrap();
        let expected = |text: &str| ctx.union_map(text).unwrap();
        let cell = |d: usize, r: usize| split.select(|x, y| (x, y) == (d, r)).unwrap();
        assert!(cell(0, 0)
            .is_equal(&expected("{ S[i] -> S[i + 1] : 0 <= i < 3 }"))
            .unwrap());
        assert!(cell(0, 1)
            .is_equal(&expected("{ S[i] -> T[j] : 0 <= i < 4 and 0 <= j < 2 }"))
            .unwrap());
        assert!(cell(2, 0)
            .is_equal(&expected("{ T[j] -> S[i] : 0 <= i < 4 and 2 <= j < 4 }"))
            .unwrap());
        assert!(cell(1, 2).is_empty().unwrap());
        // U is in no part: its pair is in no cell.
        let everything = split.select(|_, _| true).unwrap();
        assert!(everything
            .is_equal(&pairs.subtract(&expected("{ U[] -> S[0] }")).unwrap())
            .unwrap());
    }
}
