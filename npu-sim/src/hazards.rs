//! Race detection by happens-before with vector clocks (one clock per pipe of a core).
//!
//! Order comes only from: program order within a pipe; issue by the scalar unit (everything the
//! scalar unit had done before issuing an instruction happens before it); a `set_flag` before
//! its matching `wait_flag`; `barrier ALL`. Cores are never ordered with each other. Memory is
//! tracked in 32-byte blocks: for each, the last write and the last read of every pipe. An
//! access conflicting with a write (or a write conflicting with a read) that does not happen
//! before it is a race, whatever the timing made of it.

use crate::expand::{Access, Inst, Space};
use crate::program::{Pipe, Tier};
use std::collections::HashMap;

/// The shadow granule in bytes.
pub const BLOCK: u64 = 32;

/// A vector clock: one counter per pipe.
pub type Clock = [u32; Pipe::COUNT];

/// Who last touched a block: the core, the pipe, its clock, and the instruction (index in the
/// core's list). `clock == 0` means nobody.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Epoch {
    /// Core.
    pub core: u32,
    /// Pipe index.
    pub pipe: u8,
    /// The pipe's clock at the access.
    pub clock: u32,
    /// The instruction.
    pub inst: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Block {
    write: Epoch,
    reads: [Epoch; Pipe::COUNT],
    readers: u64,
}

/// A race found: the current access and the earlier one it conflicts with.
#[derive(Clone, Debug)]
pub struct Race {
    /// The later access's space.
    pub space: Space,
    /// First byte of the conflicting block.
    pub byte: u64,
    /// Whether the later access writes.
    pub write: bool,
    /// The earlier access.
    pub earlier: Epoch,
    /// Whether the earlier access wrote.
    pub earlier_write: bool,
}

/// The happens-before state of a whole run.
#[derive(Debug)]
pub struct Hazards {
    clocks: Vec<[Clock; Pipe::COUNT]>,
    snapshots: Vec<HashMap<usize, Clock>>,
    gm: HashMap<u32, Vec<Block>>,
    tiers: HashMap<(u32, Tier), Vec<Block>>,
}

fn join(a: &mut Clock, b: &Clock) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

impl Hazards {
    /// Fresh state for `cores` cores.
    pub fn new(cores: u32) -> Hazards {
        Hazards {
            clocks: vec![[[0; Pipe::COUNT]; Pipe::COUNT]; cores as usize],
            snapshots: vec![HashMap::new(); cores as usize],
            gm: HashMap::new(),
            tiers: HashMap::new(),
        }
    }

    /// Advances the clocks for instruction `i` of `core` and checks its accesses.
    /// `s_pred` is the last scalar-unit instruction before it in program order; `set` the
    /// set a wait matches. Instructions must come in an order that respects happens-before.
    pub fn step(
        &mut self,
        core: u32,
        i: usize,
        inst: &Inst,
        s_pred: Option<usize>,
        set: Option<usize>,
        barrier_all: bool,
    ) -> Result<(), Race> {
        let c = core as usize;
        let p = inst.pipe.index();
        let mut vc = self.clocks[c][p];
        if let Some(s) = s_pred {
            join(&mut vc, &self.snapshots[c][&s]);
        }
        if let Some(s) = set {
            join(&mut vc, &self.snapshots[c][&s]);
        }
        if barrier_all {
            for q in 0..Pipe::COUNT {
                let other = self.clocks[c][q];
                join(&mut vc, &other);
            }
        }
        vc[p] += 1;
        self.clocks[c][p] = vc;
        if inst.pipe == Pipe::S || matches!(inst.instr.op, crate::program::Op::SetFlag(_)) {
            self.snapshots[c].insert(i, vc);
        }
        let me = Epoch {
            core,
            pipe: p as u8,
            clock: vc[p],
            inst: i as u32,
        };
        for a in &inst.accesses {
            self.access(me, &vc, a)?;
        }
        Ok(())
    }

    fn access(&mut self, me: Epoch, vc: &Clock, a: &Access) -> Result<(), Race> {
        let blocks = match a.space {
            Space::Gm(t) => self.gm.entry(t.0).or_default(),
            Space::Tier(t) => self.tiers.entry((me.core, t)).or_default(),
        };
        let ordered = |e: &Epoch| {
            e.clock == 0
                || (e.core == me.core && (e.pipe == me.pipe || vc[e.pipe as usize] >= e.clock))
        };
        for run in a.pattern.runs() {
            let (first, last) = (run.start / BLOCK, (run.end - 1) / BLOCK);
            if blocks.len() <= last as usize {
                blocks.resize(last as usize + 1, Block::default());
            }
            for b in first..=last {
                let blk = &mut blocks[b as usize];
                let race = |earlier: Epoch, earlier_write| Race {
                    space: a.space,
                    byte: b * BLOCK,
                    write: a.write,
                    earlier,
                    earlier_write,
                };
                if !ordered(&blk.write) {
                    return Err(race(blk.write, true));
                }
                if a.write {
                    if let Some(r) = blk.reads.iter().find(|r| !ordered(r)) {
                        return Err(race(*r, false));
                    }
                    if blk.readers & !(1u64 << me.core) != 0 {
                        let other = blk.readers.trailing_zeros();
                        let earlier = blk
                            .reads
                            .iter()
                            .find(|r| r.core == other)
                            .copied()
                            .unwrap_or(Epoch { core: other, ..me });
                        return Err(race(earlier, false));
                    }
                    *blk = Block {
                        write: me,
                        ..Block::default()
                    };
                } else {
                    blk.reads[me.pipe as usize] = me;
                    blk.readers |= 1 << me.core;
                }
            }
        }
        Ok(())
    }
}
