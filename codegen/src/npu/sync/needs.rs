//! The dependences of a program that nothing orders yet.
//!
//! Each core's executed instructions are walked in program order (the order the kernel's
//! semantics gives them: the program without its flags is a sequential program). Memory is
//! shadowed in the race detector's 32-byte blocks, each keeping its last write and, per
//! pipe, the last read since; an access that conflicts with one of them (a read or a write
//! after a write, a write after a read) is a dependence. A dependence is *covered* when the
//! program's own synchronisation (`npu_sim::order`, the strict semantics: flags, barriers,
//! `sync_all`) orders the two accesses, either way round: a path that synchronises a ring
//! between sibling loops itself (a producer's loop before its consumer's, each slot's reuse
//! waiting for the consumer) has accesses that program order puts the other way; the others
//! are what the planner must order, in program order. Only the last write and each pipe's
//! last read are kept: an instruction ordered after them is ordered after the earlier ones
//! of their pipes too (a `set_flag` follows everything before it on its pipe).
//!
//! What is deliberately left out: dependences between cores (a path orders those with
//! `sync_all`, and the race detector judges them), the cube's accumulation chains and
//! atomic adds, which the hardware orders itself.

use super::shape::{Shape, Trace};
use super::Refusal;
use npu_sim::expand::{Inst, Space};
use npu_sim::order::{before, Semantics};
use npu_sim::program::{FlagKey, Op, Pipe, Program};
use npu_sim::Machine;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The shadow granule (the race detector's).
const BLOCK: u64 = npu_sim::hazards::BLOCK;

/// A dependence between two static instructions that the program does not order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    /// The earlier instruction (index in [`Shape::paths`]).
    pub from: usize,
    /// Its pipe.
    pub from_pipe: Pipe,
    /// The later instruction.
    pub to: usize,
    /// Its pipe.
    pub to_pipe: Pipe,
    /// The fewest iterations of their innermost common loop between an instance of `from`
    /// and one of `to` that depends on it (0 when they share no loop).
    pub distance: u64,
}

/// What the analysis found: the unordered dependences, and the flags the program uses.
pub struct Found {
    /// Per pair of static instructions, the nearest unordered dependence.
    pub needs: Vec<Need>,
    /// The flags the program already sets.
    pub used: BTreeSet<FlagKey>,
}

/// A shadowed block: its last write and, per pipe, its last read since (`NONE` if none).
#[derive(Clone, Copy)]
struct Block {
    write: u32,
    reads: [u32; Pipe::COUNT],
}

const NONE: u32 = u32::MAX;

impl Default for Block {
    fn default() -> Block {
        Block {
            write: NONE,
            reads: [NONE; Pipe::COUNT],
        }
    }
}

/// The blocks of one space a core has touched: a window from block `base` (a core touches
/// its own part of a large tensor).
#[derive(Default)]
struct Window {
    base: u64,
    blocks: Vec<Block>,
}

impl Window {
    /// Blocks `first..=last`, shadowed from now on.
    fn span(&mut self, first: u64, last: u64) -> &mut [Block] {
        if self.blocks.is_empty() {
            self.base = first;
        }
        if first < self.base {
            let more = (self.base - first) as usize;
            self.blocks
                .splice(0..0, std::iter::repeat_n(Block::default(), more));
            self.base = first;
        }
        let end = (last + 1 - self.base) as usize;
        if self.blocks.len() < end {
            self.blocks.resize(end, Block::default());
        }
        &mut self.blocks[(first - self.base) as usize..end]
    }
}

/// The unordered dependences of `p` on `m`; refused if `p` does not run, deadlocks or sets a
/// flag again before its previous set was taken (so a program with none left is correct in
/// the strict semantics on every core, whatever the timing).
pub fn uncovered(p: &Program, m: &Machine, shape: &Shape) -> Result<Found, Refusal> {
    let npu_sim::run::Walked {
        insts, order: ord, ..
    } = npu_sim::run::walk(p, m, Semantics::Strict).map_err(Refusal::Given)?;
    let mut nearest: BTreeMap<(usize, usize), Need> = BTreeMap::new();
    let mut used = BTreeSet::new();
    for (c, core) in insts.iter().enumerate() {
        used.extend(core.iter().filter_map(|i| i.flag));
        let trace = (shape.trace(p, c as u32, m.cores, core))
            .map_err(|e| Refusal::Internal(e.to_string()))?;
        let stamps = &ord.stamps[c];
        let mut shadow: HashMap<Space, Window> = HashMap::new();
        for (q, inst) in core.iter().enumerate() {
            // the accesses this one conflicts with (few distinct ones over many blocks)
            let mut earlier: Vec<u32> = vec![];
            let mut note = |e: u32| {
                if e != NONE && !earlier.contains(&e) {
                    earlier.push(e);
                }
            };
            for a in &inst.accesses {
                let window = shadow.entry(a.space).or_default();
                for run in a.pattern.runs() {
                    for blk in window.span(run.start / BLOCK, (run.end - 1) / BLOCK) {
                        note(blk.write);
                        if a.write {
                            blk.reads.iter().for_each(|&r| note(r));
                            *blk = Block {
                                write: q as u32,
                                reads: [NONE; Pipe::COUNT],
                            };
                        } else {
                            blk.reads[inst.pipe.index()] = q as u32;
                        }
                    }
                }
            }
            for e in earlier.into_iter().map(|e| e as usize) {
                let hb = |a: usize, b: usize| {
                    before((c as u32, core[a].pipe, &stamps[a]), (c as u32, &stamps[b]))
                };
                // (a ring a path synchronised itself may order the later access first)
                let ordered = e == q || hardware_ordered(&core[e], inst) || hb(e, q) || hb(q, e);
                if !ordered {
                    let need = need(shape, &trace, core, e, q);
                    let n = nearest.entry((need.from, need.to)).or_insert(need);
                    n.distance = n.distance.min(need.distance);
                }
            }
        }
    }
    Ok(Found {
        needs: nearest.into_values().collect(),
        used,
    })
}

/// Pairs the hardware orders by itself: the cube's accumulation chain, atomic adds.
fn hardware_ordered(a: &Inst, b: &Inst) -> bool {
    let atomic = |i: &Inst| matches!(&i.instr.op, Op::Dma(d) if d.atomic);
    let mmad = |i: &Inst| matches!(i.instr.op, Op::Mmad(_));
    (mmad(a) && mmad(b)) || (atomic(a) && atomic(b))
}

/// The dependence of executed instruction `q` on `e`.
fn need(shape: &Shape, trace: &Trace, core: &[Inst], e: usize, q: usize) -> Need {
    let (from, to) = (trace.stat[e], trace.stat[q]);
    let common = common_loops(&shape.paths[from], &shape.paths[to]);
    let distance = match common {
        0 => 0,
        d => trace.counters[q][d - 1] - trace.counters[e][d - 1],
    };
    Need {
        from,
        from_pipe: core[e].pipe,
        to,
        to_pipe: core[q].pipe,
        distance,
    }
}

/// How many loops two instructions' paths share.
pub fn common_loops(a: &[usize], b: &[usize]) -> usize {
    let shared = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    shared.min(a.len() - 1).min(b.len() - 1)
}
