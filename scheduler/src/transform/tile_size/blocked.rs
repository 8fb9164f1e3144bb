//! The register-block model: register blocks, and tile sizes for the bands whose blocks the
//! back end holds in registers.
//!
//! A permutable band is register-tiled ([`RegisterShape::of`]) when it has a parallel
//! stride-1 member `j`, a member `k` that carries dependences, and a statement whose target
//! stays the same along `k` (gemm's `C[i, j] += A[i, k] * B[k, j]`). Register tiling
//! ([`crate::transform::register_tile`]) cuts each tile into blocks of `rows x cols` targets (`rows`
//! of `i`, the innermost other parallel member; `cols` of `j`), `k` innermost but for the
//! block, rows of blocks outside columns of blocks.
//!
//! When the band schedules that one statement over a rectangular space
//! ([`RegisterShape::accumulates`]), the C printer holds a block's targets in registers
//! across `k` (`codegen::c::accumulate`), copies the reads that move with `j` (`B[k, j]`)
//! into a panel reused by every row block of the tile, and the products that do not
//! (`alpha * A[i, k]`) into a panel reused by every column block (`codegen::c::pack`).
//! Such blocks must fit the register file ([`RegisterBlock::for_machine`]); a block
//! without a row member spends the rows' registers on columns ([`RegisterBlocks::of`]).
//! Other register-tiled bands (several statements, triangular spaces) keep their targets in
//! memory: their blocks are strips of the stride-1 loop, for which wider is better
//! ([`RegisterBlocks::STRIPS`]; trmm ran 1.9x slower with 6 x 64-byte blocks than with
//! 4 x 256), and the footprint model sizes their tiles.
//!
//! The footprint model ([`super::search`]) does not know the panels, and its tiles (256 x
//! 32 x 32 in `(i, j, k)` for gemm at PolyBench's LARGE size, on a 32 KiB L1d) leave
//! accumulated blocks short loops over `k` and panels repacked for a few row blocks each.
//! Those bands get BLIS's analytical sizes instead, adapted to that loop order
//! ([`blocked_sizes`]):
//!
//! - `k`: `KC`, the largest power of two (at most [`super::MAX_TILE_SIZE`]) whose slice of
//!   the panel one block streams, `KC x cols` elements, fills at most half of L1d;
//! - `j`: `NC`, the largest multiple of `cols` whose panel, `KC x NC` elements, fits both
//!   in L2 and in [`MAX_PANEL_BYTES`];
//! - `i`: `MC`, a multiple of `rows`: when `i` is the band's outermost parallel member (the
//!   one OpenMP shares), its extent split evenly among the machine's cores, so that each
//!   thread runs one tile of rows and packs each panel once; otherwise its whole extent;
//! - `j` is split evenly among the cores likewise when it is the outermost parallel member;
//! - any other member: 1.
//!
//! Each is at most the member's extent, rounded up to a whole block. Sizes given by the
//! user still win.

use super::footprint::single_set;
use super::machine::Machine;
use super::{at_params, param_point, MAX_TILE_SIZE};
use crate::transform::analysis::same_value;
use crate::transform::tree::BandNode;
use poly::isl::{IslResult, UnionMap};
use poly::model::Program;

/// The largest packed panel, in bytes (the C printer allocates each once per reuse, on the
/// heap).
pub const MAX_PANEL_BYTES: u64 = 512 * 1024;

/// The register block: `rows` of the outer parallel member, `bytes` of the stride-1 member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RegisterBlock {
    /// Iterations of the outer parallel member per block.
    pub rows: u32,
    /// Bytes of the target array along the stride-1 member per block (divided by the
    /// element size: 64 bytes are 8 `f64`, two AVX2 registers).
    pub bytes: u32,
}

impl RegisterBlock {
    /// The block for `machine`'s vector registers: with AVX-512 (32 registers of 64 bytes),
    /// 4 rows of 4 vectors; with narrower vectors (16 registers), 6 rows of 2 vectors. Both
    /// keep 12 to 16 accumulators and leave registers for the operands of each step (a
    /// row's broadcast value, a block row of the streamed panel, the products, which are
    /// not fused into the sums). Measured: 4 x 256 bytes on an AVX-512 Xeon; 6 x 64 bytes
    /// on a Zen 3 EPYC, where 4 x 256 spilled its 32 accumulators (`docs/performance.md`).
    pub fn for_machine(machine: &Machine) -> RegisterBlock {
        if machine.vector_bytes >= 64 {
            RegisterBlock {
                rows: 4,
                bytes: 4 * machine.vector_bytes,
            }
        } else {
            RegisterBlock {
                rows: 6,
                bytes: 2 * machine.vector_bytes,
            }
        }
    }
}

/// The register blocks of the bands of a program, by what the back end does with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RegisterBlocks {
    /// Blocks whose targets are held in registers (see the module documentation).
    pub accumulated: RegisterBlock,
    /// Blocks whose targets stay in memory.
    pub strips: RegisterBlock,
}

impl RegisterBlocks {
    /// The strips of bands whose targets stay in memory: 4 rows of 256 bytes (32 `f64`).
    pub const STRIPS: RegisterBlock = RegisterBlock {
        rows: 4,
        bytes: 256,
    };

    /// The blocks for `machine`: its register block, and [`RegisterBlocks::STRIPS`].
    pub fn for_machine(machine: &Machine) -> RegisterBlocks {
        RegisterBlocks {
            accumulated: RegisterBlock::for_machine(machine),
            strips: RegisterBlocks::STRIPS,
        }
    }

    /// `block` for every band (`--register-tile ROWS,BYTES`).
    pub fn uniform(block: RegisterBlock) -> RegisterBlocks {
        RegisterBlocks {
            accumulated: block,
            strips: block,
        }
    }

    /// The block of a band of shape `shape`: an accumulated block without a row member has
    /// the columns of all the rows (`mean[j] += data[i, j]` under blocks of 8 columns had
    /// two vector accumulators, too few to hide the additions' latency).
    pub fn of(&self, shape: &RegisterShape) -> RegisterBlock {
        match (shape.accumulates, shape.i) {
            (false, _) => self.strips,
            (true, Some(_)) => self.accumulated,
            (true, None) => RegisterBlock {
                rows: 1,
                bytes: self.accumulated.rows * self.accumulated.bytes,
            },
        }
    }
}

/// Which members of a band a register block blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterShape {
    /// The innermost parallel member other than `j` (blocked by rows), if any.
    pub i: Option<usize>,
    /// The parallel stride-1 member (blocked by columns).
    pub j: usize,
    /// The innermost member that carries dependences, along which targets are reused.
    pub k: usize,
    /// The size of an element of the reused target.
    pub elem_bytes: u32,
    /// Whether the band schedules that statement alone over a rectangular space (a box at
    /// the parameter values the tile-size model assumes), so that the back end holds the
    /// targets of a block in registers.
    pub accumulates: bool,
}

impl RegisterShape {
    /// The shape of `b` with `j` as its stride-1 member, or `None` when `b` does not
    /// qualify (see the module documentation).
    pub fn of(b: &BandNode, j: usize, program: &Program) -> IslResult<Option<RegisterShape>> {
        let n = b.members.len();
        if !b.permutable || n < 2 || j >= n || !b.coincident[j] {
            return Ok(None);
        }
        let Some(k) = (0..n).rev().find(|&m| !b.coincident[m]) else {
            return Ok(None);
        };
        let Some(elem_bytes) = reused_target_bytes(b, k, program)? else {
            return Ok(None);
        };
        let i = (0..n).rev().find(|&m| m != j && b.coincident[m]);
        Ok(Some(RegisterShape {
            i,
            j,
            k,
            elem_bytes,
            accumulates: one_statement_in_a_box(b, program)?,
        }))
    }

    /// Elements of the stride-1 member per block.
    pub fn cols(&self, block: RegisterBlock) -> u32 {
        (block.bytes / self.elem_bytes).max(1)
    }
}

/// The sizes of a band of shape `shape` for `block` on `machine`, one per member, given the
/// members' extents (see the module documentation).
pub fn blocked_sizes(
    b: &BandNode,
    shape: RegisterShape,
    block: RegisterBlock,
    extents: &[i64],
    machine: &Machine,
) -> Vec<u32> {
    let elem = u64::from(shape.elem_bytes);
    let cols = shape.cols(block);
    // At most the extent, rounded up to whole blocks of `unit`.
    let clip = |size: u64, extent: i64, unit: u32| -> u32 {
        let unit = u64::from(unit);
        let whole = (extent.max(1) as u64).div_ceil(unit) * unit;
        size.clamp(unit, whole.max(unit)) as u32
    };
    let mut kc = u64::from(MAX_TILE_SIZE);
    while kc > 1 && kc * u64::from(cols) * elem > machine.l1d_bytes / 2 {
        kc /= 2;
    }
    let kc = clip(kc, extents[shape.k], 1);
    let panel = machine.l2_bytes.min(MAX_PANEL_BYTES);
    let nc = (panel / (u64::from(kc) * elem) / u64::from(cols)).max(1) * u64::from(cols);
    // Whole blocks of `unit`, split among the cores when OpenMP shares member `m`.
    let outermost_parallel = b.coincident.iter().position(|&c| c);
    let shared = |m: usize, unit: u32| -> u64 {
        let blocks = (extents[m].max(1) as u64).div_ceil(u64::from(unit));
        let threads = match outermost_parallel == Some(m) {
            true => u64::from(machine.cores.max(1)),
            false => 1,
        };
        blocks.div_ceil(threads) * u64::from(unit)
    };
    let nc = clip(nc.min(shared(shape.j, cols)), extents[shape.j], cols);
    let mc = shape
        .i
        .map(|i| clip(shared(i, block.rows), extents[i], block.rows));
    (0..b.members.len())
        .map(|m| match m {
            _ if m == shape.k => kc,
            _ if m == shape.j => nc,
            _ if Some(m) == shape.i => mc.expect("i has a size"),
            _ => 1,
        })
        .collect()
}

/// Whether `b` schedules the instances of one statement, and those form a box (a product
/// of intervals) at the parameter values of [`param_point`].
fn one_statement_in_a_box(b: &BandNode, program: &Program) -> IslResult<bool> {
    let mut scheduled = Vec::new();
    for s in &program.statements {
        let domain = s.domain.to_union()?;
        if !b.members[0].intersect_domain(&domain)?.is_empty()? {
            scheduled.push(domain);
        }
    }
    let [domain] = scheduled.as_slice() else {
        return Ok(false);
    };
    let points = at_params(
        &b.schedule()?.intersect_domain(domain)?,
        &param_point(program)?,
    )?;
    match single_set(&points.range()?)? {
        Some(points) => points.is_box(),
        None => Ok(false),
    }
}

/// The element size of the target of a statement of the band whose target element stays the
/// same while member `k` advances and every other member is fixed (`None`: no such
/// statement, so blocking would not save any load or store).
fn reused_target_bytes(b: &BandNode, k: usize, program: &Program) -> IslResult<Option<u32>> {
    let mut others: Option<UnionMap> = None;
    for (m, member) in b.members.iter().enumerate() {
        if m != k {
            let same = same_value(member)?;
            others = Some(match others {
                None => same,
                Some(o) => o.intersect(&same)?,
            });
        }
    }
    let member = &b.members[k];
    let before = member.ctx().union_map("{ [a] -> [b] : a < b }")?;
    let advances = member
        .apply_range(&before)?
        .apply_range(&member.reverse()?)?;
    let along_k = match others {
        Some(o) => o.intersect(&advances)?,
        None => advances,
    };
    for s in &program.statements {
        let write = s.write.relation.to_union()?;
        let same_element = write.apply_range(&write.reverse()?)?;
        if !same_element.intersect(&along_k)?.is_empty()? {
            let elem = program.kernel.arrays[s.write.array.0].elem;
            return Ok(Some(elem.size_bytes() as u32));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{program, ZEN3};
    use crate::transform::tree::{BandKind, Node};

    #[test]
    fn blocks_fill_the_vector_registers() {
        let avx2 = RegisterBlock::for_machine(&ZEN3);
        assert_eq!((avx2.rows, avx2.bytes), (6, 64));
        let avx512 = RegisterBlock::for_machine(&Machine {
            vector_bytes: 64,
            ..ZEN3
        });
        assert_eq!((avx512.rows, avx512.bytes), (4, 256));
    }

    /// The band `members` (isl maps from one statement's instances, e.g. `[i]`) of the
    /// statement with `depth` iterators of `examples/EXAMPLE`, marked `coincident`.
    fn band_of(
        example: &str,
        depth: usize,
        members: &[&str],
        coincident: &[bool],
    ) -> (Program, BandNode) {
        let p = program(example);
        let stmt = p
            .statements
            .iter()
            .find(|s| s.iterators.len() == depth)
            .unwrap();
        let its = stmt.iterators.join(", ");
        let member = |m: &&str| {
            (p.ctx
                .union_map(&format!("{{ {}[{its}] -> [{m}] }}", stmt.tuple)))
            .unwrap()
        };
        let band = BandNode {
            members: members.iter().map(member).collect(),
            permutable: true,
            coincident: coincident.to_vec(),
            kind: BandKind::Loop,
            child: Box::new(Node::Leaf),
        };
        (p, band)
    }

    /// gemm's update band in the original order `(i, k, j)`, marked as an annotated tree
    /// marks it (`i` and `j` parallel, `k` a reduction).
    fn gemm_band() -> (Program, BandNode) {
        band_of(
            "polybench/gemm.pk",
            3,
            &["i", "k", "j"],
            &[true, false, true],
        )
    }

    #[test]
    fn gemm_gets_blis_like_sizes() {
        let (gemm, band) = gemm_band();
        let shape = RegisterShape::of(&band, 2, &gemm).unwrap().unwrap();
        assert_eq!(
            (shape.i, shape.j, shape.k, shape.elem_bytes),
            (Some(0), 2, 1, 8)
        );
        assert!(shape.accumulates);
        let block = RegisterBlocks::for_machine(&ZEN3).of(&shape);
        assert_eq!((block.rows, block.bytes), (6, 64));
        // PolyBench LARGE: i 1000, k 1200, j 1100.
        let sizes = blocked_sizes(&band, shape, block, &[1000, 1200, 1100], &ZEN3);
        // k: 256 x 8 doubles = 16 KiB, half of L1d; j: a 256 x 256 panel of 512 KiB;
        // i: 1000 rows in 167 blocks of 6, 84 blocks per core.
        assert_eq!(sizes, [504, 256, 256]);
        // Small extents: whole blocks, the whole extent.
        let sizes = blocked_sizes(&band, shape, block, &[7, 5, 3], &ZEN3);
        assert_eq!(sizes, [6, 5, 8]);
        // One core: every row in one tile.
        let one = Machine { cores: 1, ..ZEN3 };
        assert_eq!(
            blocked_sizes(&band, shape, block, &[1000, 1200, 1100], &one)[0],
            1002
        );
    }

    #[test]
    fn columns_shared_by_openmp_are_split_among_the_cores() {
        // `(j, k, i)`: OpenMP shares `j`, the outermost parallel member.
        let (gemm, band) = band_of(
            "polybench/gemm.pk",
            3,
            &["j", "k", "i"],
            &[true, false, true],
        );
        let shape = RegisterShape::of(&band, 0, &gemm).unwrap().unwrap();
        assert_eq!((shape.i, shape.j, shape.k), (Some(2), 0, 1));
        let block = RegisterBlocks::for_machine(&ZEN3).of(&shape);
        // 1100 columns: 69 blocks of 8 per core, more than the panel's 256 columns. 300
        // columns: 19 blocks per core.
        let sizes = blocked_sizes(&band, shape, block, &[1100, 1200, 1000], &ZEN3);
        assert_eq!(sizes[0], 256);
        let sizes = blocked_sizes(&band, shape, block, &[300, 1200, 1000], &ZEN3);
        assert_eq!(sizes[0], 152);
        // `i` is not shared: all its rows in one tile.
        assert_eq!(sizes[2], 1002);
    }

    #[test]
    fn a_band_without_a_reused_target_does_not_qualify() {
        let (gemm, band) = gemm_band();
        // With `j` taken as the reduction member, no target stays along it.
        let band = BandNode {
            coincident: vec![true, true, false],
            ..band
        };
        assert_eq!(RegisterShape::of(&band, 1, &gemm).unwrap(), None);
        // The stride-1 member must be parallel.
        assert_eq!(RegisterShape::of(&band, 2, &gemm).unwrap(), None);
    }

    #[test]
    fn triangular_spaces_and_several_statements_keep_their_targets_in_memory() {
        // trmm: `B[i, j] += A[k, i] * B[k, j]` for `k` from `i + 1`: a triangle in (i, k).
        let (trmm, band) = band_of(
            "polybench/trmm.pk",
            3,
            &["i", "j", "k"],
            &[true, true, false],
        );
        let shape = RegisterShape::of(&band, 1, &trmm).unwrap().unwrap();
        assert!(!shape.accumulates);
        let blocks = RegisterBlocks::for_machine(&ZEN3);
        assert_eq!(blocks.of(&shape), RegisterBlocks::STRIPS);
        // gemm's `C[i, j] *= beta` and update in one band.
        let (gemm, update) = gemm_band();
        let init = gemm
            .statements
            .iter()
            .find(|s| s.iterators.len() == 2)
            .unwrap();
        let both = |m: &UnionMap, to: &str| {
            let init = format!("{{ {}[i, j] -> [{to}] }}", init.tuple);
            m.union(&gemm.ctx.union_map(&init).unwrap()).unwrap()
        };
        let band = BandNode {
            members: vec![
                both(&update.members[0], "i"),
                both(&update.members[1], "0"),
                both(&update.members[2], "j"),
            ],
            ..update
        };
        let shape = RegisterShape::of(&band, 2, &gemm).unwrap().unwrap();
        assert!(!shape.accumulates);
        // A block held in registers without rows has the columns of all of them.
        let columns = RegisterBlocks::for_machine(&ZEN3).of(&RegisterShape {
            i: None,
            accumulates: true,
            ..shape
        });
        assert_eq!((columns.rows, columns.bytes), (1, 384));
    }
}
