//! Tile sizes chosen by a cache model.
//!
//! For a permutable band of `d` members and sizes `T = (T1..Td)`, the *footprint* `F(T)` is
//! the number of distinct array elements the instances of one tile touch, per array, times
//! the element size, summed over arrays (scalars, kept in registers, are left out). It is
//! counted with isl (`footprint`) with the parameters fixed (`-D` values, else the
//! declared defaults, else [`UNKNOWN_PARAM_VALUE`]), the enclosing loops fixed to their
//! middle iteration, and the tile centred on an instance in the middle of the band's
//! iteration space. The rule:
//!
//! 1. **Candidates.** Member `k` may take the powers of two from 1 to [`MAX_TILE_SIZE`];
//!    the stride-1 member (the one that moves the most accesses by exactly one element in
//!    their last dimension) only multiples of the vector width in elements
//!    (`vector_bytes / smallest element`: 8 doubles or 16 floats with AVX-512, 4 or 8 with
//!    AVX2). A candidate larger than the member's extent (its range over the whole iteration
//!    space) becomes the extent. A size given by the user is its member's only candidate.
//! 2. **Fit.** `T` fits when the tile's footprint is at most 1/[`CACHE_SHARE`] of L2 and the
//!    footprint of one iteration of the outermost point loop (`T` with `T1 = 1`: what the
//!    inner point loops reuse from one outer iteration to the next) at most 1/[`CACHE_SHARE`]
//!    of L1d.
//! 3. **Cube.** Start from the smallest candidates, then take the largest `s` (a power of
//!    two) such that every member at its largest candidate not above `s` still fits.
//! 4. **Growth.** Repeatedly move one member to its next candidate: among the moves that
//!    still fit, the one whose tile has the best reuse, iterations per byte
//!    `T1*..*Td / F(T)` (ties: the outermost member); stop when no move fits. A member along
//!    which accesses are invariant adds little footprint and so grows first (Pluto's and
//!    PPCG's preference for large tiles along reuse dimensions).
//!
//! When even the smallest candidates do not fit, they are kept. Footprints grow with the
//! sizes, so every step evaluates at most `d` moves and the search ends within
//! `d * (candidates per member)` steps; footprints are memoised.

mod blocked;
mod footprint;
mod machine;

pub use blocked::{blocked_sizes, RegisterBlock, RegisterBlocks, RegisterShape, MAX_PANEL_BYTES};
pub use footprint::{bounds, single_set, union_volume, BandFootprint};
pub use machine::{Machine, MachineFileError, NamedMachine, SYSFS_CACHE_DIR};

use super::tile::{Position, DEFAULT_TILE_SIZE};
use super::tree::BandNode;
use footprint::middle_iteration;
use poly::isl::{IslError, IslResult, Set, UnionMap};
use poly::model::isl_text::isl_name;
use poly::model::Program;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::num::NonZeroU32;

/// The largest tile size the model chooses: larger tiles add little reuse but leave fewer
/// tiles to run in parallel and more work in partial tiles.
pub const MAX_TILE_SIZE: u32 = 256;

/// A tile may fill one `CACHE_SHARE`-th of a cache (the rest holds other data, and
/// associativity conflicts start well before a cache is full).
pub const CACHE_SHARE: u64 = 2;

/// The value given to a parameter neither fixed with `-D` nor given a default.
pub const UNKNOWN_PARAM_VALUE: i64 = 1024;

/// The sizes chosen for one band, with the footprints that justify them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// One size per band member.
    pub sizes: Vec<NonZeroU32>,
    /// Bytes touched by one tile.
    pub tile_bytes: u64,
    /// Bytes touched by one iteration of the outermost point loop.
    pub inner_bytes: u64,
    /// Whether the footprints fit the budgets (false: nothing fits, smallest sizes kept).
    pub fits: bool,
    /// The register block the sizes were chosen for (`blocked`'s rule; `None`: the
    /// footprint rule).
    pub blocked: Option<RegisterBlock>,
}

/// The sizes chosen for one band and the model that chose them.
#[derive(Clone, Debug)]
pub struct TileSizeNote {
    /// The band's depth (schedule dimensions above it).
    pub depth: usize,
    /// The sizes, one per member.
    pub sizes: Vec<NonZeroU32>,
    /// Which model chose them, with its figures.
    pub model: SizeModel,
}

/// The model behind a [`TileSizeNote`].
#[derive(Clone, Debug)]
pub enum SizeModel {
    /// The register-block model (`blocked`).
    Blocked {
        /// The register block the tile holds whole.
        block: RegisterBlock,
        /// The machine it sized for.
        machine: Machine,
        /// Bytes of the packed panel of one tile.
        panel_bytes: u64,
        /// Bytes of one block's slice of the panel.
        slice_bytes: u64,
    },
    /// The footprint (cache) model.
    Cache {
        /// The machine it sized for.
        machine: Machine,
        /// Bytes touched by one tile.
        tile_bytes: u64,
        /// Bytes touched by one iteration of the outermost point loop.
        inner_bytes: u64,
        /// Whether the footprints fit (false: nothing fits, smallest sizes kept).
        fits: bool,
    },
    /// The model failed; [`DEFAULT_TILE_SIZE`] where no size was given.
    Failed(IslError),
}

impl fmt::Display for TileSizeNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tile sizes at depth {}: ", self.depth)?;
        match &self.model {
            SizeModel::Blocked {
                block,
                machine,
                panel_bytes,
                slice_bytes,
            } => write!(
                f,
                "{} (register-block model, {} rows x {} bytes, {machine}: panel {}, one \
                 block's slice {})",
                join(&self.sizes),
                block.rows,
                block.bytes,
                kib(*panel_bytes),
                kib(*slice_bytes),
            ),
            SizeModel::Cache {
                machine,
                tile_bytes,
                inner_bytes,
                fits,
            } => write!(
                f,
                "{} (cache model, {machine}: tile {}, one outer point iteration {}; {})",
                join(&self.sizes),
                kib(*tile_bytes),
                kib(*inner_bytes),
                if *fits {
                    "fits"
                } else {
                    "nothing fits, smallest sizes"
                }
            ),
            SizeModel::Failed(e) => write!(
                f,
                "cache model failed ({e}), {DEFAULT_TILE_SIZE} where no size is given"
            ),
        }
    }
}

/// Chooses tile sizes for the bands of one program, remembering what it chose.
#[derive(Clone)]
pub struct TileSizer<'a> {
    program: &'a Program,
    machine: Machine,
    given: &'a [NonZeroU32],
    register: Option<RegisterBlocks>,
    notes: RefCell<Vec<TileSizeNote>>,
}

impl<'a> TileSizer<'a> {
    /// A sizer for `program` on `machine`; `given[k]` fixes member `k` of every band;
    /// bands the back end will register-tile with `register` and hold in registers get
    /// `blocked`'s sizes.
    pub fn new(
        program: &'a Program,
        machine: Machine,
        given: &'a [NonZeroU32],
        register: Option<RegisterBlocks>,
    ) -> Self {
        TileSizer {
            program,
            machine,
            given,
            register,
            notes: RefCell::new(Vec::new()),
        }
    }

    /// The sizes for a band: the given ones, the rest chosen by [`TileSizer::choose`]
    /// ([`DEFAULT_TILE_SIZE`] if the model fails, e.g. on an unbounded loop). Each choice
    /// is noted.
    pub fn sizes(&self, band: &BandNode, position: &Position) -> Vec<NonZeroU32> {
        let n = band.members.len();
        if self.given.len() >= n {
            return self.given[..n].to_vec();
        }
        let depth = position.depth;
        // The model is an analysis of its own (`choose` scopes it): the transformations
        // after it get a fresh isl budget.
        let chosen = self.choose(band, position);
        let (sizes, model) = match chosen {
            Ok(Choice {
                sizes,
                tile_bytes,
                inner_bytes,
                blocked: Some(block),
                ..
            }) => (
                sizes,
                SizeModel::Blocked {
                    block,
                    machine: self.machine,
                    panel_bytes: tile_bytes,
                    slice_bytes: inner_bytes,
                },
            ),
            Ok(c) => (
                c.sizes,
                SizeModel::Cache {
                    machine: self.machine,
                    tile_bytes: c.tile_bytes,
                    inner_bytes: c.inner_bytes,
                    fits: c.fits,
                },
            ),
            Err(e) => (
                (0..n)
                    .map(|k| self.given.get(k).copied().unwrap_or(DEFAULT_TILE_SIZE))
                    .collect(),
                SizeModel::Failed(e),
            ),
        };
        self.notes.borrow_mut().push(TileSizeNote {
            depth,
            sizes: sizes.clone(),
            model,
        });
        sizes
    }

    /// What was chosen so far, one note per band.
    pub fn notes(&self) -> Vec<TileSizeNote> {
        self.notes.borrow().clone()
    }

    /// Chooses sizes for the members of `band` not given, by the rule of this module.
    pub fn choose(&self, band: &BandNode, position: &Position) -> IslResult<Choice> {
        let program = self.program;
        let _analysis = program.ctx.analysis();
        let n = band.members.len();
        let depth = position.depth;
        let params = param_point(program)?;
        let schedule = at_params(
            &position.schedule.intersect_domain(position.instances)?,
            &params,
        )?;
        let Some(range) = single_set(&schedule.range()?)? else {
            return Ok(self.smallest_choice(n));
        };
        let extents: Vec<i64> = bounds(&range)?[depth..]
            .iter()
            .map(|&(lo, hi)| hi - lo + 1)
            .collect();
        let band_map = schedule
            .intersect_range(&middle_iteration(&range, depth)?.to_union()?)?
            .apply_range(&program.ctx.union_map(&project_last(depth + n, n))?)?;
        let pin = |a: &poly::isl::Map| at_params(&a.to_union()?, &params);
        let accesses = program
            .statements
            .iter()
            .map(|s| {
                s.reads
                    .iter()
                    .chain(std::iter::once(&s.write))
                    .map(|a| pin(&a.relation))
                    .collect::<IslResult<Vec<_>>>()
            })
            .collect::<IslResult<Vec<_>>>()?;
        let footprint = BandFootprint::new(&band_map, &accesses, element_bytes(program)?)?;
        let lanes = footprint
            .smallest_element()
            .map_or(1, |b| (u64::from(self.machine.vector_bytes) / b).max(1));
        let stride = footprint.stride_one_member()?;
        if let (Some(blocks), Some(j)) = (self.register, stride) {
            if let Some(shape) = RegisterShape::of(band, j, program)? {
                if shape.accumulates {
                    let block = blocks.of(&shape);
                    return Ok(self.blocked_choice(band, shape, block, &extents));
                }
            }
        }
        let ladders: Vec<Vec<u32>> = (0..n)
            .map(|k| match self.given.get(k) {
                Some(s) => vec![s.get()],
                None => ladder(extents[k], if stride == Some(k) { lanes as u32 } else { 1 }),
            })
            .collect();
        let budget = Budget {
            l1: self.machine.l1d_bytes / CACHE_SHARE,
            l2: self.machine.l2_bytes / CACHE_SHARE,
        };
        search(&ladders, budget, &mut |sizes| footprint.bytes(sizes))
    }

    /// [`blocked_sizes`] with the given sizes in place, and the bytes of the panel of `j`
    /// and `k` and of one block's slice of it and of the panel of `i` and `k`.
    fn blocked_choice(
        &self,
        band: &BandNode,
        shape: RegisterShape,
        block: RegisterBlock,
        extents: &[i64],
    ) -> Choice {
        let mut sizes = blocked_sizes(band, shape, block, extents, &self.machine);
        for (s, given) in sizes.iter_mut().zip(self.given) {
            *s = given.get();
        }
        let elem = u64::from(shape.elem_bytes);
        let kc = u64::from(sizes[shape.k]);
        let rows = shape.i.map_or(1, |_| u64::from(block.rows));
        Choice {
            tile_bytes: kc * u64::from(sizes[shape.j]) * elem,
            inner_bytes: kc * (u64::from(shape.cols(block)) + rows) * elem,
            sizes: sizes
                .into_iter()
                .map(|s| NonZeroU32::new(s).expect("blocked sizes are positive"))
                .collect(),
            fits: true,
            blocked: Some(block),
        }
    }

    fn smallest_choice(&self, n: usize) -> Choice {
        Choice {
            sizes: (0..n)
                .map(|k| self.given.get(k).copied().unwrap_or(NonZeroU32::MIN))
                .collect(),
            tile_bytes: 0,
            inner_bytes: 0,
            fits: true,
            blocked: None,
        }
    }
}

/// The cache budgets of one tile, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// For one iteration of the outermost point loop.
    pub l1: u64,
    /// For the whole tile.
    pub l2: u64,
}

/// The candidate sizes of a member: `min`, `2 min`, `4 min`, .. up to [`MAX_TILE_SIZE`],
/// each at most `extent` (so the list ends at the extent when it is smaller).
pub fn ladder(extent: i64, min: u32) -> Vec<u32> {
    let extent = extent.clamp(1, i64::from(MAX_TILE_SIZE)) as u32;
    let mut out = Vec::new();
    let mut size = min.max(1);
    loop {
        out.push(size.min(extent));
        if size >= extent || size >= MAX_TILE_SIZE {
            break;
        }
        size *= 2;
    }
    out.dedup();
    out
}

/// The growth search of rule 3 over the candidate `ladders`, with `bytes(sizes)` the
/// footprint of one tile.
pub fn search(
    ladders: &[Vec<u32>],
    budget: Budget,
    bytes: &mut dyn FnMut(&[u32]) -> IslResult<u64>,
) -> IslResult<Choice> {
    let mut memo: HashMap<Vec<u32>, u64> = HashMap::new();
    let mut measure = |sizes: &[u32]| -> IslResult<u64> {
        if let Some(&b) = memo.get(sizes) {
            return Ok(b);
        }
        let b = bytes(sizes)?;
        memo.insert(sizes.to_vec(), b);
        Ok(b)
    };
    let outer_fixed = |sizes: &[u32]| {
        let mut v = sizes.to_vec();
        v[0] = 1;
        v
    };
    // `(tile bytes, inner bytes)` when the sizes fit.
    let mut fit = |sizes: &[u32]| -> IslResult<Option<(u64, u64)>> {
        let inner = measure(&outer_fixed(sizes))?;
        if inner > budget.l1 {
            return Ok(None);
        }
        let tile = measure(sizes)?;
        Ok((tile <= budget.l2).then_some((tile, inner)))
    };
    let sizes_at =
        |at: &[usize]| -> Vec<u32> { at.iter().zip(ladders).map(|(&i, l)| l[i]).collect() };
    // Phase 1: the largest cube, every member at the largest candidate up to a common size.
    let cube = |side: u32| -> Vec<usize> {
        ladders
            .iter()
            .map(|l| l.iter().rposition(|&s| s <= side.max(l[0])).unwrap_or(0))
            .collect()
    };
    let mut at = cube(1);
    let Some((mut tile, mut inner)) = fit(&sizes_at(&at))? else {
        let sizes = sizes_at(&at);
        let (tile, inner) = (bytes(&sizes)?, bytes(&outer_fixed(&sizes))?);
        return Ok(choice(sizes, tile, inner, false));
    };
    let mut side = 1;
    while side < MAX_TILE_SIZE {
        side *= 2;
        let next = cube(side);
        if next == at {
            continue;
        }
        let Some((t, i)) = fit(&sizes_at(&next))? else {
            break;
        };
        (at, tile, inner) = (next, t, i);
    }
    // Phase 2: one member at a time, the move with the best reuse.
    loop {
        // (member, tile bytes, inner bytes, volume)
        let mut best: Option<(usize, u64, u64, u128)> = None;
        for k in 0..ladders.len() {
            if at[k] + 1 >= ladders[k].len() {
                continue;
            }
            let mut next = at.clone();
            next[k] += 1;
            let sizes = sizes_at(&next);
            let Some((t, i)) = fit(&sizes)? else {
                continue;
            };
            let volume: u128 = sizes.iter().map(|&s| u128::from(s)).product();
            if best.is_none_or(|(_, bt, _, bv)| volume * u128::from(bt) > bv * u128::from(t)) {
                best = Some((k, t, i, volume));
            }
        }
        let Some((k, t, i, _)) = best else { break };
        at[k] += 1;
        (tile, inner) = (t, i);
    }
    Ok(choice(sizes_at(&at), tile, inner, true))
}

fn choice(sizes: Vec<u32>, tile_bytes: u64, inner_bytes: u64, fits: bool) -> Choice {
    Choice {
        sizes: sizes
            .into_iter()
            .map(|s| NonZeroU32::new(s).expect("candidate sizes are positive"))
            .collect(),
        tile_bytes,
        inner_bytes,
        fits,
        blocked: None,
    }
}

/// The parameter values the model assumes: those fixed with `-D`, else the declared
/// defaults, else [`UNKNOWN_PARAM_VALUE`]; a value the kernel's constraints reject is left
/// out (then loops over that parameter are unbounded and the model fails).
pub fn param_point(program: &Program) -> IslResult<Set> {
    let mut point = program.context.clone();
    for p in &program.kernel.params {
        let value = program
            .fixed
            .get(&p.name)
            .copied()
            .or(p.default)
            .unwrap_or(UNKNOWN_PARAM_VALUE);
        let fixed = point.fix_param(&isl_name(&p.name), value)?;
        if !fixed.is_empty()? {
            point = fixed;
        }
    }
    Ok(point)
}

/// `map` at the parameter values `params` (a point of [`param_point`]), its parameters
/// projected out.
pub fn at_params(map: &UnionMap, params: &Set) -> IslResult<UnionMap> {
    map.intersect_params(params)?.project_out_all_params()
}

/// Bytes per element of every array, by isl tuple name.
fn element_bytes(program: &Program) -> IslResult<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    for s in &program.statements {
        for a in s.reads.iter().chain(std::iter::once(&s.write)) {
            if let Some(name) = a.relation.range()?.tuple_name() {
                let elem = program.kernel.array(a.array).elem;
                out.insert(name, elem.size_bytes() as u64);
            }
        }
    }
    Ok(out)
}

/// `{ [x0, .., x(total-1)] -> [last `keep` of them] }` in isl notation.
fn project_last(total: usize, keep: usize) -> String {
    let xs: Vec<String> = (0..total).map(|k| format!("x{k}")).collect();
    format!(
        "{{ [{}] -> [{}] }}",
        xs.join(", "),
        xs[total - keep..].join(", ")
    )
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

fn join(sizes: &[NonZeroU32]) -> String {
    let s: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    s.join("x")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders_are_powers_of_two_capped_by_the_extent() {
        assert_eq!(ladder(1000, 1), vec![1, 2, 4, 8, 16, 32, 64, 128, 256]);
        assert_eq!(ladder(1000, 8), vec![8, 16, 32, 64, 128, 256]);
        assert_eq!(ladder(5, 1), vec![1, 2, 4, 5]);
        assert_eq!(ladder(5, 8), vec![5]);
        assert_eq!(ladder(1, 1), vec![1]);
    }

    /// A matrix product's footprint in elements of 8 bytes.
    fn gemm_bytes(s: &[u32]) -> IslResult<u64> {
        let (i, j, k) = (u64::from(s[0]), u64::from(s[1]), u64::from(s[2]));
        Ok(8 * (i * j + i * k + k * j))
    }

    #[test]
    fn growth_stops_at_the_budgets() {
        let ladders = vec![ladder(2000, 1), ladder(2000, 8), ladder(2000, 1)];
        let budget = Budget {
            l1: 16 << 10,
            l2: 512 << 10,
        };
        let c = search(&ladders, budget, &mut gemm_bytes).unwrap();
        assert!(c.fits);
        let s: Vec<u32> = c.sizes.iter().map(|s| s.get()).collect();
        assert!(gemm_bytes(&[1, s[1], s[2]]).unwrap() <= budget.l1);
        assert!(gemm_bytes(&s).unwrap() <= budget.l2);
        // Every single move further breaks a budget.
        for k in 0..3 {
            let mut next = s.clone();
            next[k] *= 2;
            if next[k] <= MAX_TILE_SIZE {
                let mut inner = next.clone();
                inner[0] = 1;
                assert!(
                    gemm_bytes(&inner).unwrap() > budget.l1
                        || gemm_bytes(&next).unwrap() > budget.l2,
                    "{s:?} could grow member {k}"
                );
            }
        }
    }

    #[test]
    fn nothing_fitting_keeps_the_smallest_sizes() {
        let ladders = vec![ladder(100, 1), ladder(100, 8)];
        let budget = Budget { l1: 16, l2: 16 };
        let c = search(&ladders, budget, &mut |_| Ok(1 << 20)).unwrap();
        assert!(!c.fits);
        assert_eq!(c.sizes, [1, 8].map(|s| NonZeroU32::new(s).unwrap()));
    }
}
