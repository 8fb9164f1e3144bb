//! The strips schedule: a core's consecutive tiles share A's row band, resident in L1; each
//! tile fills L0C once, in row strips that drain on their own; the core's last steps go strip
//! by strip. It generalises the hand-written `examples/npu/gemm.npu` (`docs/npu.md`,
//! "Performance").
//!
//! Per core, one loop over the steps (`TK` of K) of all its tiles, then one over its last
//! tile's last `last` steps strip by strip:
//! - MTE2: with the first tile of a band, A's `TM x K` band goes to L1 (NZ) in chunks of
//!   `chunk` steps, each in `halves` row halves with a "ready" flag each, loaded at the step
//!   that first needs them; B comes in pieces of one step (`TK x TN`, NZ) through a ring of
//!   `ring` L1 slots; the pieces of the last tile's final steps go to slots of their own,
//!   loaded every other step ahead of them;
//! - MTE1: per step, A's `TM x TK` slice NZ -> zZ (one load per K fractal and half, the
//!   first half before B's piece is waited for) and B's piece NZ -> nZ (one transposing load
//!   per K fractal) into one of two L0 slots; in a tile that loads A the slot is ready half
//!   by half, else as a whole;
//! - M: one `mmad` per strip of `TM / strips` rows, each strip its own NZ block of L0C; a
//!   tile's first step on a strip waits only for that strip's drain;
//! - V and MTE3: after a tile's last step its strips are converted (L0C NZ f32 -> UB ND, the
//!   epilogue on the way) and stored one by one; the strips of the core's last tile, which
//!   finish one after the other, in parts ([`Strips::parts`]) so that the last store starts
//!   early.
//!
//! Flags: MTE2 -> MTE1 has the ring's slots and A's halves; MTE1 -> MTE2 the ring's slots
//! and "A's band is free" (when a core moves to another band); MTE1 -> M two L0 slots times
//! the halves; M -> MTE1 the two L0 slots; M -> V and V -> M one per strip; V -> MTE3 and
//! MTE3 -> V one per strip, then one per part. Every "free" flag is set once before the
//! program and waited for at its end.

mod emit;

pub(super) use emit::program;

use super::{round16, row_stride, Grid, F};
use crate::npu::recognise::Matmul;
use npu_sim::machine::Mem;
use npu_sim::Machine;

/// The sizes and counts of the strips schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strips {
    /// Rows of a C tile (a multiple of 16 times `strips`).
    pub tm: i64,
    /// Columns of a C tile.
    pub tn: i64,
    /// K values of one step (a multiple of 16).
    pub tk: i64,
    /// Row strips of a tile, each with its own L0C block and flags.
    pub strips: i64,
    /// Steps per chunk of A's band.
    pub chunk: i64,
    /// Row halves of an A chunk with a "ready" flag each (1 or 2).
    pub halves: i64,
    /// L1 slots of B's ring.
    pub ring: i64,
    /// Steps at the end of a core's last tile computed strip by strip.
    pub last: i64,
}

/// Why a strips schedule cannot compute a product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    /// A tile, step or strip is not whole fractals.
    #[error("tiles, steps and strips must be whole fractals")]
    Fractals,
    /// The halves are not 1 or 2, or do not split the strips evenly.
    #[error("A's chunks come whole or in two halves of whole strips")]
    Halves,
    /// No ring slot, no step in a chunk, or a chunk longer than the tile.
    #[error("the ring needs a slot, a chunk a step of the tile")]
    Empty,
    /// MTE2 sets a chunk's flags again only after a ring wait that follows MTE1's waits for
    /// the previous chunk (a flag holds one event).
    #[error("chunks of A must be more steps apart than the ring has slots")]
    ChunksTooClose,
    /// The final steps' B pieces are loaded every other step or every step before them.
    #[error("more final steps than half the tile's steps")]
    FinalTooLong,
    /// A core's last tile loads A, and a chunk of it starts among the final steps.
    #[error("a last tile that loads A needs its last chunk before its final steps")]
    FinalBeforeChunk,
    /// More flag ids than the machine has per pipe pair.
    #[error("not enough flag ids")]
    FlagIds,
}

/// Rows of a strip of a core's last tile converted and stored in the first part: small, so
/// that the last store starts soon after the last `mmad`.
const FIRST_PART: i64 = 8;
/// Rows up to the end of the second part: long enough (at 512 bytes a row, about 200 cycles
/// of GM) to hide the next part's GM latency.
const SECOND_PART_END: i64 = 32;

impl Strips {
    /// Rows of a strip.
    pub fn strip_rows(&self) -> i64 {
        self.tm / self.strips
    }

    /// Steps of a tile, for a reduction of `k`.
    pub fn steps(&self, k: i64) -> i64 {
        (k + self.tk - 1) / self.tk
    }

    /// The parts (rows) in which each strip of a core's last tile is converted and stored,
    /// for rows of C `row_bytes` apart in GM: 8 rows, up to row 32, the rest (as many as fit
    /// the strip), each part starting on a GM block (stores into one block would race).
    pub fn parts(&self, row_bytes: i64) -> Vec<i64> {
        let sr = self.strip_rows();
        let block = npu_sim::hazards::BLOCK as i64;
        let ends = [FIRST_PART.min(sr), SECOND_PART_END.min(sr), sr];
        let mut parts = Vec::new();
        let mut from = 0;
        for end in ends {
            if end > from && (end == sr || end * row_bytes % block == 0) {
                parts.push(end - from);
                from = end;
            }
        }
        parts
    }

    /// The flag ids each pipe pair needs, at most, for rows of C `row_bytes` apart.
    pub fn flag_ids(&self, row_bytes: i64) -> i64 {
        let parts = self.parts(row_bytes).len() as i64;
        [
            self.ring + self.halves,
            self.ring + 1,
            2 * self.halves,
            self.strips.max(parts),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }

    /// Whether the schedule can compute `mm` on `cores` cores with `flag_ids` ids per pipe
    /// pair, or why not.
    pub fn check(&self, mm: &Matmul, cores: i64, flag_ids: i64) -> Result<(), Unfit> {
        let steps = self.steps(mm.product.k);
        let chunks = (steps + self.chunk - 1) / self.chunk;
        let grid = Grid::new(mm, self.tm, self.tn, cores);
        // does some core's last tile load A (its final steps then need their chunks loaded
        // in the first loop)?
        let last_loads_a = (0..cores).any(|core| {
            let mine = (grid.tiles - core * grid.per_core).clamp(0, grid.per_core);
            let idx = core * grid.per_core + mine - 1;
            mine == 1 || (mine > 1 && idx % grid.nt == 0)
        });
        if self.tm % (F * self.strips) != 0 || self.tn % F != 0 || self.tk % F != 0 {
            Err(Unfit::Fractals)
        } else if !(1..=2).contains(&self.halves) || self.strips % self.halves != 0 {
            Err(Unfit::Halves)
        } else if self.ring < 1 || self.chunk < 1 || self.chunk > steps {
            Err(Unfit::Empty)
        } else if chunks > 1 && self.chunk <= self.ring {
            Err(Unfit::ChunksTooClose)
        } else if self.last < 0 || (self.last > 0 && 2 * self.last > steps) {
            Err(Unfit::FinalTooLong)
        } else if last_loads_a && self.last > steps - 1 - (chunks - 1) * self.chunk {
            Err(Unfit::FinalBeforeChunk)
        } else if self.flag_ids(c_row_bytes(mm)) > flag_ids {
            Err(Unfit::FlagIds)
        } else {
            Ok(())
        }
    }

    /// Where the B pieces of the last tile's final steps are loaded, for `steps` steps a
    /// tile: piece j at the first loop's step `from + j * gap` of that tile (every other
    /// step when there is room, else every step), the last at the loop's last step.
    pub fn final_loads(&self, steps: i64) -> (i64, i64) {
        let gap = if steps - self.last - 1 - 2 * (self.last - 1) >= 0 {
            2
        } else {
            1
        };
        (steps - self.last - 1 - gap * (self.last - 1).max(0), gap)
    }

    /// Whether the buffers fit `machine`'s tiers: A's band and the B slots in L1, two L0
    /// slots, one tile in L0C (f32) and in UB (C's type; f32 and C's type with a vector
    /// epilogue, and its buffers).
    pub fn fits(&self, mm: &Matmul, machine: &Machine) -> bool {
        let cap = |m: Mem| machine.tiers.get(&m).map_or(0, |t| t.capacity as i64);
        let (a, b) = (
            mm.product.a.elem.size_bytes() as i64,
            mm.product.b.elem.size_bytes() as i64,
        );
        self.tm * round16(mm.product.k) * a + (self.ring + self.last) * self.tk * self.tn * b
            <= cap(Mem::L1)
            && 2 * self.tm * self.tk * a <= cap(Mem::L0a)
            && 2 * self.tk * self.tn * b <= cap(Mem::L0b)
            && self.tm * self.tn * 4 <= cap(Mem::L0c)
            && super::c_ub_bytes(mm, machine, self.tn, self.c_tiles(), false)
                .is_some_and(|b| b <= cap(Mem::Ub))
    }

    /// C's tiles in UB: a slot of results per strip, one of sums (see `CTiles`).
    pub(super) fn c_tiles(&self) -> super::CTiles {
        let sr = self.strip_rows();
        super::CTiles {
            slots: self.strips,
            elems: sr * self.tn,
            sums: 1,
            rows: sr,
        }
    }

    /// One line for the program's header.
    pub fn describe(&self) -> String {
        let halves = if self.halves == 2 {
            ", each in two row halves"
        } else {
            ""
        };
        let last = match self.last {
            0 => String::new(),
            n => format!(" A core's last {n} steps go strip by strip."),
        };
        format!(
            "Strips schedule: C tiles of {} x {} in {} row strips, one tile at a time in L0C; A's band stays in L1, loaded in chunks of {} K values{halves}; B in pieces of {} K values through {} L1 slots.{last}",
            self.tm,
            self.tn,
            self.strips,
            self.chunk * self.tk,
            self.tk,
            self.ring,
        )
    }
}

/// The byte distance between two rows of C in GM.
pub(super) fn c_row_bytes(mm: &Matmul) -> i64 {
    row_stride(&mm.c) * mm.c.elem.size_bytes() as i64
}
