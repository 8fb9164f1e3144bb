//! The working-set footprint of one tile: the distinct array elements its statement
//! instances touch, times their size.
//!
//! Everything here has its parameters fixed and the enclosing loops fixed to one iteration,
//! so every set is bounded. The tile is the box of `sizes[k]` consecutive values of each
//! band member centred on an instance near the middle of the band's iteration space (each
//! member at the middle of its range given the outer members: inside triangular spaces
//! too), so that it is a full tile wherever the space allows one. For each access, isl computes the exact bounds of the elements it touches
//! in the tile (the image of the tile's instances, the domain's own bounds included); the
//! elements of one array are the union of these boxes, counted exactly. The count is exact
//! when each access's image is a box (rectangular tiles through subscripts of one band
//! member each: matrix products, `lu`, most of PolyBench) and an upper bound otherwise (a
//! skewed stencil's image is a sheared box, counted as its bounding box).

use poly::isl::{IslError, IslResult, Map, Set, UnionMap, UnionSet, Val};
use std::collections::BTreeMap;

/// Accesses of one statement to one array that differ by constant offsets (a stencil's
/// neighbours), in band coordinates.
struct Touch {
    /// `[t0, .., t(d-1)] -> A[x0, .., x(r-1)]`: the elements the first access reaches from
    /// the instances with those band coordinates.
    relation: Map,
    /// Band members `d` and array rank `r`.
    dims: (usize, usize),
    /// The array's isl tuple name.
    array: String,
    /// Per access of the group: its element minus the first access's element.
    offsets: Vec<Vec<i64>>,
}

/// The footprint of tiles of one band.
pub struct BandFootprint {
    touches: Vec<Touch>,
    /// The band coordinates tiles are centred on: an instance near the middle of the band's
    /// iteration space (each member at the middle of its range given the outer ones).
    center: Vec<i64>,
    /// Bytes per element, by the array's isl tuple name.
    elem_bytes: BTreeMap<String, u64>,
}

/// An inclusive box: per dimension, the lowest and highest coordinate.
type Bounds = Vec<(i64, i64)>;

impl BandFootprint {
    /// The footprint model of a band: `band` maps the instances of one iteration of the
    /// enclosing loops to their band coordinates; `accesses` holds, per statement, relations
    /// from its instances to the elements of one array they read or write.
    pub fn new(
        band: &UnionMap,
        accesses: &[Vec<UnionMap>],
        elem_bytes: BTreeMap<String, u64>,
    ) -> IslResult<BandFootprint> {
        let center = match single_set(&band.range()?)? {
            Some(range) => bounds(&middle_iteration(&range, range.n_dims()?)?)?
                .into_iter()
                .map(|(lo, _)| lo)
                .collect(),
            None => Vec::new(),
        };
        let d = center.len();
        let instances = band.domain()?;
        let to_instances = band.reverse()?;
        let mut touches = Vec::new();
        for statement in accesses {
            // (first access, its group) for this statement's arrays.
            let mut groups: Vec<(UnionMap, Touch)> = Vec::new();
            for a in statement {
                let a = a.intersect_domain(&instances)?;
                let Some(element) = single_set(&a.range()?)? else {
                    continue;
                };
                let (Some(array), r) = (element.tuple_name(), element.n_dims()?) else {
                    continue;
                };
                if r == 0 {
                    // A scalar lives in a register.
                    continue;
                }
                let mut grouped = false;
                for (first, touch) in groups.iter_mut().filter(|(_, t)| t.array == array) {
                    if let Some(offset) = constant_offset(first, &a)? {
                        if !touch.offsets.contains(&offset) {
                            touch.offsets.push(offset);
                        }
                        grouped = true;
                        break;
                    }
                }
                if !grouped {
                    let relation = to_instances.apply_range(&a)?.to_map()?;
                    let touch = Touch {
                        relation,
                        dims: (d, r),
                        array,
                        offsets: vec![vec![0; r]],
                    };
                    groups.push((a, touch));
                }
            }
            touches.extend(groups.into_iter().map(|(_, t)| t));
        }
        Ok(BandFootprint {
            touches,
            center,
            elem_bytes,
        })
    }

    /// The bytes touched by one tile with `sizes[k]` values of member `k`.
    pub fn bytes(&self, sizes: &[u32]) -> IslResult<u64> {
        let mut boxes: BTreeMap<&str, Vec<Bounds>> = BTreeMap::new();
        for t in &self.touches {
            if let Some(first) = self.image_bounds(t, sizes)? {
                let shifted = t.offsets.iter().map(|off| {
                    first
                        .iter()
                        .zip(off)
                        .map(|(&(lo, hi), &o)| (lo + o, hi + o))
                        .collect()
                });
                boxes.entry(t.array.as_str()).or_default().extend(shifted);
            }
        }
        Ok(boxes
            .iter()
            .map(|(array, b)| union_volume(b).saturating_mul(self.element_bytes(array)))
            .fold(0, u64::saturating_add))
    }

    /// The member that moves the most access groups by exactly one element in their last
    /// dimension, and nowhere else, when it advances by one (ties: the innermost), if any.
    pub fn stride_one_member(&self) -> IslResult<Option<usize>> {
        let d = self.center.len();
        let ones = vec![1; d];
        let mut score = vec![0usize; d];
        for t in &self.touches {
            let Some(base) = self.image_bounds(t, &ones)? else {
                continue;
            };
            for (k, score) in score.iter_mut().enumerate() {
                let mut two = ones.clone();
                two[k] = 2;
                let Some(moved) = self.image_bounds(t, &two)? else {
                    continue;
                };
                let r = base.len();
                let grows = |j: usize| (moved[j].1 - moved[j].0) - (base[j].1 - base[j].0);
                if grows(r - 1) == 1 && (0..r - 1).all(|j| grows(j) == 0) {
                    *score += 1;
                }
            }
        }
        let best = (0..d).rev().max_by_key(|&k| score[k]);
        Ok(best.filter(|&k| score[k] > 0))
    }

    /// The size in bytes of the smallest element the band touches (`None`: no array).
    pub fn smallest_element(&self) -> Option<u64> {
        self.touches
            .iter()
            .map(|t| self.element_bytes(&t.array))
            .min()
    }

    fn element_bytes(&self, array: &str) -> u64 {
        self.elem_bytes.get(array).copied().unwrap_or(1)
    }

    /// The bounds of the elements the first access of `touch` reaches in the tile of
    /// `sizes` (`None`: the tile holds no instance of its statement).
    fn image_bounds(&self, touch: &Touch, sizes: &[u32]) -> IslResult<Option<Bounds>> {
        let mut pairs = touch.relation.clone();
        for (k, (&c, &size)) in self.center.iter().zip(sizes).enumerate() {
            let first = c - i64::from(size / 2);
            pairs = bound_input(&pairs, k, first, first + i64::from(size) - 1)?;
        }
        let pairs = pairs.wrap()?;
        if pairs.is_empty()? {
            return Ok(None);
        }
        let first = pairs.n_dims()? - touch.dims.1;
        (first..first + touch.dims.1)
            .map(|k| dim_bounds(&pairs, k))
            .collect::<IslResult<Bounds>>()
            .map(Some)
    }
}

/// `map` with input dimension `k` restricted to `lo..=hi`.
fn bound_input(map: &Map, k: usize, lo: i64, hi: i64) -> IslResult<Map> {
    map.bound_source(k, lo, hi)
}

/// The points of `range` whose first `depth` dimensions (the enclosing loops) are fixed to
/// one iteration near the middle of each one's range, outermost first.
pub fn middle_iteration(range: &Set, depth: usize) -> IslResult<Set> {
    let mut set = range.clone();
    for k in 0..depth {
        let (lo, hi) = bounds(&set)?[k];
        let middle = set.fix_dim(k, lo + (hi - lo) / 2)?;
        set = if middle.is_empty()? {
            set.fix_dim(k, lo)?
        } else {
            middle
        };
    }
    Ok(set)
}

/// `Some(c)` when access `b` reaches, from every instance, the element of access `a` plus
/// the constant `c` (both of one statement, to one array).
fn constant_offset(a: &UnionMap, b: &UnionMap) -> IslResult<Option<Vec<i64>>> {
    let Some(deltas) = single_set(&a.reverse()?.apply_range(b)?.deltas()?)? else {
        return Ok(None);
    };
    let b = bounds(&deltas)?;
    Ok(b.iter()
        .all(|(lo, hi)| lo == hi)
        .then(|| b.iter().map(|&(lo, _)| lo).collect()))
}

/// The number of integer points in a union of inclusive boxes of one dimension count:
/// sweep the first dimension's breakpoints, recurse on the boxes covering each slab.
pub fn union_volume(boxes: &[Bounds]) -> u64 {
    let Some(first) = boxes.first() else {
        return 0;
    };
    if first.is_empty() {
        return 1;
    }
    let mut cuts: Vec<i64> = boxes.iter().flat_map(|b| [b[0].0, b[0].1 + 1]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .map(|w| {
            let inside: Vec<Bounds> = boxes
                .iter()
                .filter(|b| b[0].0 <= w[0] && w[1] - 1 <= b[0].1)
                .map(|b| b[1..].to_vec())
                .collect();
            (w[1] - w[0]) as u64 * union_volume(&inside)
        })
        .sum()
}

/// The one set of a union set whose sets all live in one space (`None`: empty).
pub fn single_set(u: &UnionSet) -> IslResult<Option<Set>> {
    Ok(u.sets()?.into_iter().next())
}

/// Per dimension of a bounded, non-empty, parameter-fixed set: its lowest and highest value.
pub fn bounds(set: &Set) -> IslResult<Vec<(i64, i64)>> {
    (0..set.n_dims()?).map(|k| dim_bounds(set, k)).collect()
}

/// The lowest and highest value of dimension `k` of a bounded, non-empty set.
fn dim_bounds(set: &Set, k: usize) -> IslResult<(i64, i64)> {
    let (lo, hi) = set.dim_range(k)?;
    Ok((val_i64(&lo)?, val_i64(&hi)?))
}

/// The integer value of `v`, or an error if it is not one (an unbounded dimension).
fn val_i64(v: &Val) -> IslResult<i64> {
    v.as_i64()?.ok_or_else(|| {
        IslError::Isl(format!(
            "the tile size model needs bounded loops (got bound {v})"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use poly::isl::Ctx;

    #[test]
    fn unions_of_boxes_are_counted_exactly() {
        assert_eq!(union_volume(&[]), 0);
        assert_eq!(union_volume(&[vec![]]), 1);
        assert_eq!(union_volume(&[vec![(0, 3), (2, 6)]]), 20);
        // Two overlapping squares: 16 + 16 - 4.
        let a = vec![(0, 3), (0, 3)];
        let b = vec![(2, 5), (2, 5)];
        assert_eq!(union_volume(&[a.clone(), b]), 28);
        assert_eq!(union_volume(&[a.clone(), a]), 16);
        // A 5-point stencil's shifted blocks.
        let shifted: Vec<Bounds> = [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]
            .iter()
            .map(|&(di, dj)| vec![(di, di + 9), (dj, dj + 9)])
            .collect();
        assert_eq!(union_volume(&shifted), 100 + 4 * 10);
    }

    #[test]
    fn a_tile_of_a_matrix_product_touches_three_blocks() {
        let ctx = Ctx::default();
        let band = ctx
            .union_map("{ S[i, j, k] -> [i, j, k] : 0 <= i, j, k < 100 }")
            .unwrap();
        let accesses = ["C[i, j]", "A[i, k]", "B[k, j]", "C[i, j]"]
            .map(|a| ctx.union_map(&format!("{{ S[i, j, k] -> {a} }}")).unwrap());
        let accesses = [accesses.to_vec()];
        let bytes = [("A", 8), ("B", 8), ("C", 8)]
            .map(|(n, b)| (n.to_string(), b))
            .into();
        let fp = BandFootprint::new(&band, &accesses, bytes).unwrap();
        assert_eq!(
            fp.bytes(&[4, 8, 16]).unwrap(),
            8 * (4 * 8 + 4 * 16 + 16 * 8)
        );
        // Larger than the range: the whole range.
        assert_eq!(fp.bytes(&[1, 1, 1000]).unwrap(), 8 * (1 + 100 + 100));
        assert_eq!(fp.smallest_element(), Some(8));
        assert_eq!(fp.stride_one_member().unwrap(), Some(1));
    }
}
