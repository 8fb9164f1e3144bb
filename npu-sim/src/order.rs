//! Happens-before from the program alone, never from the clock.
//!
//! Every executed instruction gets what is known to happen before it: per pipe of its core,
//! the highest sequence number on that pipe whose instruction (and every earlier one of that
//! pipe) has completed before it starts; and its phase, the number of `sync_all` before it,
//! which orders it after everything of every core in an earlier phase. Timing never takes
//! part, so the race verdict is a property of the program: the same on every machine whose
//! latencies, bandwidths and start-ups differ.
//!
//! The sources of order, in [`Semantics::Strict`] (the hardware's rules):
//! - the scalar unit issues in program order and blocks on its own instructions (`barrier
//!   ALL`, `sync_all`, flags to or from S), so everything after one of them in program order
//!   happens after it;
//! - a `set_flag` on pipe P happens after every earlier instruction of P; its matching
//!   `wait_flag` on Q happens after the set, and every later instruction of Q after the wait;
//! - `barrier P` happens after every earlier instruction of P, and every later one of P after
//!   it; `barrier ALL` and `sync_all` after every earlier instruction of the core;
//! - `sync_all` orders every core: what precedes the k-th on any core happens before what
//!   follows the k-th on every core.
//!
//! Two instructions of one pipe are *not* ordered by program order alone: dependent
//! instructions on one pipe need a `barrier` (Huawei's PipeBarrier). [`Semantics::Relaxed`]
//! adds program order within each pipe, the simulator's teaching semantics.

use crate::diag::{Code, Diagnostic};
use crate::expand::{Cost, Inst};
use crate::program::{BarrierScope, Op, Pipe};
use std::collections::VecDeque;

/// Which synchronisation rules a run follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Semantics {
    /// The hardware's: single-event flags, non-blocking `set_flag`, and a `barrier` needed
    /// between dependent instructions of one pipe.
    #[default]
    Strict,
    /// For teaching: counting flags, `set_flag` drains its pipe, every pipe in program order.
    Relaxed,
}

/// A vector clock over the pipes of one core: per pipe, the highest sequence number known to
/// have completed (every earlier instruction of that pipe with it).
pub type Clock = [u32; Pipe::COUNT];

/// Where one executed instruction stands in happens-before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    /// What has completed before it starts, per pipe of its core.
    pub known: Clock,
    /// Its sequence number on its pipe, from 1.
    pub seq: u32,
    /// The `sync_all` before it on its core.
    pub phase: u32,
}

/// Happens-before of a whole run.
#[derive(Clone, Debug)]
pub struct Order {
    /// Per core, per instruction.
    pub stamps: Vec<Vec<Stamp>>,
    /// Every instruction of every core, in one order that respects happens-before.
    pub logical: Vec<(u32, usize)>,
}

/// Instructions that can never run: the waits (or `sync_all`) that block a core.
#[derive(Clone, Debug)]
pub struct Blocked {
    /// The core.
    pub core: u32,
    /// The blocked instructions, in program order.
    pub insts: Vec<usize>,
}

fn join(a: &mut Clock, b: &Clock) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

/// One core's walk: the scalar unit issues into one queue per pipe; an instruction runs when
/// it heads its queue and what it waits for has run.
struct Walk {
    issued: usize,
    queues: [VecDeque<usize>; Pipe::COUNT],
    /// What the next instruction of each pipe inherits (waits and barriers on it; in the
    /// relaxed semantics every earlier instruction of it).
    front: [Clock; Pipe::COUNT],
    /// Everything every instruction of each pipe so far has known, and itself.
    all: [Clock; Pipe::COUNT],
    /// What the last scalar-unit instruction knew, and itself.
    scalar: Clock,
    seqs: [u32; Pipe::COUNT],
    phase: u32,
    done: Vec<bool>,
}

impl Walk {
    fn new(len: usize) -> Walk {
        Walk {
            issued: 0,
            queues: Default::default(),
            front: [[0; Pipe::COUNT]; Pipe::COUNT],
            all: [[0; Pipe::COUNT]; Pipe::COUNT],
            scalar: [0; Pipe::COUNT],
            seqs: [0; Pipe::COUNT],
            phase: 0,
            done: vec![false; len],
        }
    }

    /// Issues until the scalar unit blocks on one of its own instructions.
    fn issue(&mut self, insts: &[Inst]) {
        while self.issued < insts.len() && self.queues[Pipe::S.index()].is_empty() {
            let i = self.issued;
            self.queues[insts[i].pipe.index()].push_back(i);
            self.issued += 1;
        }
    }

    /// Whether every pipe but S has drained.
    fn drained(&self) -> bool {
        (self.queues.iter().enumerate()).all(|(p, q)| p == Pipe::S.index() || q.is_empty())
    }

    /// The `sync_all` heading the scalar queue of a drained core.
    fn at_sync(&self, insts: &[Inst]) -> bool {
        let head = self.queues[Pipe::S.index()].front();
        head.is_some_and(|&i| insts[i].cost == Cost::SyncAll) && self.drained()
    }
}

/// Computes happens-before for every core. `matches[c][i]` is the set a wait matches.
pub fn order(
    insts: &[Vec<Inst>],
    matches: &[Vec<Option<usize>>],
    semantics: Semantics,
) -> Result<Order, Blocked> {
    let mut walks: Vec<Walk> = insts.iter().map(|c| Walk::new(c.len())).collect();
    let mut stamps: Vec<Vec<Stamp>> = (insts.iter())
        .map(|c| vec![Stamp::default(); c.len()])
        .collect();
    let mut logical = Vec::with_capacity(insts.iter().map(Vec::len).sum());
    loop {
        let mut progressed = false;
        for (c, walk) in walks.iter_mut().enumerate() {
            loop {
                walk.issue(&insts[c]);
                let mut ran = false;
                for p in 0..Pipe::COUNT {
                    while let Some(&i) = walk.queues[p].front() {
                        let ready = match insts[c][i].cost {
                            Cost::Wait => matches[c][i].is_some_and(|s| walk.done[s]),
                            Cost::BarrierAll => walk.drained(),
                            Cost::SyncAll => false,
                            _ => true,
                        };
                        if !ready {
                            break;
                        }
                        walk.queues[p].pop_front();
                        let set = matches[c][i].map(|s| stamps[c][s]);
                        stamps[c][i] = step(walk, &insts[c][i], set, semantics);
                        walk.done[i] = true;
                        logical.push((c as u32, i));
                        ran = true;
                    }
                }
                if !ran {
                    break;
                }
                progressed = true;
            }
        }
        if walks.iter().enumerate().all(|(c, w)| w.at_sync(&insts[c])) && !walks.is_empty() {
            for (c, walk) in walks.iter_mut().enumerate() {
                let i = walk.queues[Pipe::S.index()].pop_front().expect("at a sync");
                stamps[c][i] = step(walk, &insts[c][i], None, semantics);
                walk.phase += 1;
                walk.done[i] = true;
                logical.push((c as u32, i));
            }
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    for (c, walk) in walks.iter().enumerate() {
        if walk.issued < insts[c].len() || walk.queues.iter().any(|q| !q.is_empty()) {
            let mut blocked: Vec<usize> = walk
                .queues
                .iter()
                .filter_map(|q| q.front().copied())
                .collect();
            blocked.sort_unstable();
            return Err(Blocked {
                core: c as u32,
                insts: blocked,
            });
        }
    }
    Ok(Order { stamps, logical })
}

/// Runs one instruction in the walk: its stamp from what it inherits, and what it passes on.
fn step(walk: &mut Walk, inst: &Inst, set: Option<Stamp>, semantics: Semantics) -> Stamp {
    let p = inst.pipe.index();
    let mut known = walk.scalar;
    join(&mut known, &walk.front[p]);
    if let Some(s) = set {
        join(&mut known, &completed(&s, inst_pipe_of_set(inst)));
    }
    let barrier = matches!(inst.instr.op, Op::Barrier(BarrierScope::Pipe(_)));
    if barrier || matches!(inst.instr.op, Op::SetFlag(_)) {
        join(&mut known, &walk.all[p]);
    }
    if matches!(inst.cost, Cost::BarrierAll | Cost::SyncAll) {
        for q in 0..Pipe::COUNT {
            let other = walk.all[q];
            join(&mut known, &other);
        }
    }
    walk.seqs[p] += 1;
    let stamp = Stamp {
        known,
        seq: walk.seqs[p],
        phase: walk.phase,
    };
    let done = completed(&stamp, inst.pipe);
    join(&mut walk.all[p], &done);
    if inst.pipe == Pipe::S {
        walk.scalar = done;
    } else if semantics == Semantics::Relaxed || barrier {
        // In order, or after a barrier of this pipe: every earlier instruction of the pipe
        // has completed before the next one starts.
        join(&mut walk.front[p], &done);
    } else if inst.cost == Cost::Wait {
        // A wait orders what follows it on its pipe after its set, not after the
        // instructions of the pipe before it.
        join(&mut walk.front[p], &known);
    }
    stamp
}

/// The pipe a wait's set ran on.
fn inst_pipe_of_set(wait: &Inst) -> Pipe {
    match wait.instr.op {
        Op::WaitFlag(ref f) => f.src,
        _ => unreachable!("only waits have a set"),
    }
}

/// What an instruction that happens after `s` (on `pipe`) knows from it.
fn completed(s: &Stamp, pipe: Pipe) -> Clock {
    let mut c = s.known;
    c[pipe.index()] = c[pipe.index()].max(s.seq);
    c
}

/// Whether the instruction stamped `earlier` (of `core`, on `pipe`) happens before the one
/// stamped `later` of `later_core`.
pub fn before(earlier: (u32, Pipe, &Stamp), later: (u32, &Stamp)) -> bool {
    let (core, pipe, e) = earlier;
    if core == later.0 {
        later.1.known[pipe.index()] >= e.seq
    } else {
        e.phase < later.1.phase
    }
}

/// In the strict semantics a flag is one event: its next set must come after the wait that
/// consumed the previous one. Reports the first set that does not, naming both sets.
pub fn single_event_flags(
    insts: &[Vec<Inst>],
    matches: &[Vec<Option<usize>>],
    order: &Order,
) -> Result<(), Diagnostic> {
    for (c, core) in insts.iter().enumerate() {
        let stamps = &order.stamps[c];
        // Per flag, the wait that consumed its last set (or the set still pending).
        let mut last: std::collections::HashMap<_, (usize, Option<usize>)> = Default::default();
        let mut waits_of = vec![None; core.len()];
        for (w, m) in matches[c].iter().enumerate() {
            if let Some(s) = m {
                waits_of[*s] = Some(w);
            }
        }
        for (i, inst) in core.iter().enumerate() {
            let (Op::SetFlag(_), Some(key)) = (&inst.instr.op, inst.flag) else {
                continue;
            };
            if let Some(&(prev, wait)) = last.get(&key) {
                let consumed = wait.is_some_and(|w| {
                    before((c as u32, core[w].pipe, &stamps[w]), (c as u32, &stamps[i]))
                });
                if !consumed {
                    return Err(Diagnostic::new(
                        Code::FlagSetTwice,
                        inst.instr.span,
                        format!(
                            "flag {key} is set again on core {c} before the wait of its previous set has happened"
                        ),
                    )
                    .with_related(core[prev].instr.span, "the previous set")
                    .with_note("a flag holds one event: wait for it before setting it again, or use another id (`--relaxed` counts sets)"));
                }
            }
            last.insert(key, (i, waits_of[i]));
        }
    }
    Ok(())
}
