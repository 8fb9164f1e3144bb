//! Race detection against happens-before computed from the program ([`crate::order`]).
//!
//! Memory is shadowed in 32-byte blocks (the hardware's block). Each block keeps its last
//! plain write, the atomic adds since it, and the reads since it (one per pipe of each core,
//! the latest in that pipe's order: sequence numbers are downward closed, so the latest
//! stands for the earlier ones). An access conflicting with a write, or a write (or atomic
//! add) conflicting with a read, that does not happen before it is a race, whatever the
//! timing made of it. Atomic adds do not conflict with each other. Consecutive `mmad`s of
//! one core on the same accumulators form the cube's accumulation chain and are ordered by
//! it. Accesses must come in an order that respects happens-before ([`crate::order::Order::logical`]).

use crate::expand::{Access, Inst, Space};
use crate::order::{before, Stamp};
use crate::program::{Op, Pipe, Tier};
use std::collections::HashMap;

/// The shadow granule in bytes.
pub const BLOCK: u64 = 32;

/// How an access touches memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Touch {
    /// A read or a plain write.
    #[default]
    Plain,
    /// The accumulators of an `mmad` (read and written by the cube's accumulation chain).
    Accumulator,
    /// An atomic add into GM.
    AtomicAdd,
}

/// One access to a block: who made it and where it stands in happens-before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Epoch {
    /// Core.
    pub core: u32,
    /// Pipe.
    pub pipe: Pipe,
    /// The instruction (index in the core's list).
    pub inst: u32,
    /// Its place in happens-before.
    pub stamp: Stamp,
    /// How it touched the block.
    pub touch: Touch,
}

#[derive(Clone, Debug, Default)]
struct Block {
    write: Option<Epoch>,
    atomics: Vec<Epoch>,
    reads: Vec<Epoch>,
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

/// The shadow memory of a whole run.
#[derive(Debug, Default)]
pub struct Hazards {
    gm: HashMap<u32, Vec<Block>>,
    tiers: HashMap<(u32, Tier), Vec<Block>>,
}

impl Hazards {
    /// Checks the accesses of instruction `i` of `core`, stamped `stamp`.
    pub fn step(&mut self, core: u32, i: usize, inst: &Inst, stamp: &Stamp) -> Result<(), Race> {
        let mmad = matches!(inst.instr.op, Op::Mmad(_));
        let atomic = matches!(&inst.instr.op, Op::Dma(d) if d.atomic);
        for a in &inst.accesses {
            let touch = match (a.write, a.operand == 0) {
                (_, true) if mmad => Touch::Accumulator,
                (true, true) if atomic => Touch::AtomicAdd,
                _ => Touch::Plain,
            };
            let me = Epoch {
                core,
                pipe: inst.pipe,
                inst: i as u32,
                stamp: *stamp,
                touch,
            };
            self.access(me, a)?;
        }
        Ok(())
    }

    fn access(&mut self, me: Epoch, a: &Access) -> Result<(), Race> {
        let blocks = match a.space {
            Space::Gm(t) => self.gm.entry(t.0).or_default(),
            Space::Tier(t) => self.tiers.entry((me.core, t)).or_default(),
        };
        let ordered = |e: &Epoch| {
            let itself = e.core == me.core && e.inst == me.inst;
            let chain = e.touch == Touch::Accumulator
                && me.touch == Touch::Accumulator
                && e.core == me.core;
            itself || chain || before((e.core, e.pipe, &e.stamp), (me.core, &me.stamp))
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
                if let Some(w) = blk.write.filter(|w| !ordered(w)) {
                    return Err(race(w, true));
                }
                if me.touch != Touch::AtomicAdd {
                    if let Some(w) = blk.atomics.iter().find(|w| !ordered(w)) {
                        return Err(race(*w, true));
                    }
                }
                if a.write {
                    if let Some(r) = blk.reads.iter().find(|r| !ordered(r)) {
                        return Err(race(*r, false));
                    }
                    if me.touch == Touch::AtomicAdd {
                        blk.atomics
                            .retain(|e| (e.core, e.pipe) != (me.core, me.pipe));
                        blk.atomics.push(me);
                    } else {
                        *blk = Block {
                            write: Some(me),
                            ..Block::default()
                        };
                    }
                } else {
                    blk.reads.retain(|e| (e.core, e.pipe) != (me.core, me.pipe));
                    blk.reads.push(me);
                }
            }
        }
        Ok(())
    }
}
