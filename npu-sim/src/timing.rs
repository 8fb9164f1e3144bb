//! Timing: the scalar unit issues in program order into one in-order queue per pipe; pipes run
//! concurrently; flags, `barrier ALL` and `sync_all` are the only order across pipes.
//!
//! A transfer costs its path's latency, then (on a GM path) a fixed number of cycles per burst,
//! then its charged bytes ([`Cost::Transfer`]) at a rate: its path's bandwidth, capped by a
//! max-min fair share of its core's GM budget among that core's GM transfers, then by a
//! max-min fair share of the total GM bandwidth among all cores' GM transfers. Latency is
//! pipelined: the next transfer of a pipe may start its latency while the current one moves
//! data, but starts its bursts only after the current one has finished (so transfers still
//! start and finish in order). A `wait_flag` gates only what comes after it: it may run while
//! a transfer before it is still in flight. In the strict semantics a `set_flag` only sets a
//! bit: it leaves its pipe at once and fires a flag cycle after everything before it on the
//! pipe has finished, while the pipe goes on; in the relaxed semantics it occupies its pipe
//! until then. Everything else occupies its pipe alone, at least a cycle. `sync_all` starts
//! when every core has reached it with its pipes drained and lasts one GM round trip (the
//! longest GM path latency; our choice). A discrete-event simulation over all cores at once;
//! rates are shared in a fixed order, so a run is deterministic.

use crate::expand::{Cost, Inst};
use crate::machine::Machine;
use crate::order::Semantics;
use crate::program::{Op, Pipe};
use std::collections::VecDeque;

/// When each instruction ran, per core.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// Per core.
    pub cores: Vec<CoreTimes>,
    /// When the last instruction of any core finished.
    pub cycles: f64,
}

/// Start and end of each instruction of one core, and busy cycles per pipe.
#[derive(Clone, Debug)]
pub struct CoreTimes {
    /// Start (cycles) of each instruction, by index in the core's list.
    pub start: Vec<f64>,
    /// End of each instruction.
    pub end: Vec<f64>,
    /// Cycles in which each pipe had work in progress (S includes issuing).
    pub busy: [f64; Pipe::COUNT],
}

/// Waits that can never proceed.
#[derive(Clone, Debug)]
pub struct Deadlock {
    /// The core.
    pub core: u32,
    /// The blocked instructions (indices in the core's list).
    pub blocked: Vec<usize>,
}

/// What a transfer does after its latency: `setup` cycles of bursts, then `bytes`.
#[derive(Clone, Copy, Debug)]
struct Move {
    setup: f64,
    bytes: f64,
}

impl Move {
    /// The phase of a transfer that starts its bursts now.
    fn begin(self, now: f64) -> Phase {
        if self.setup > 0.0 {
            Phase::Bursts {
                until: now + self.setup,
                bytes: self.bytes,
            }
        } else {
            Phase::Data {
                remaining: self.bytes,
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Fixed work (or an issue step) until this time.
    Until(f64),
    /// A transfer's latency until this time, then its move.
    Latency { until: f64, then: Move },
    /// Latency over, waiting for the pipe's current transfer to finish moving data.
    Ready { then: Move },
    /// Setting up its bursts until this time (no bandwidth used), then moving these bytes.
    Bursts { until: f64, bytes: f64 },
    /// Moving data.
    Data { remaining: f64 },
}

#[derive(Clone, Copy, Debug)]
struct Job {
    inst: usize,
    issue: bool,
    phase: Phase,
}

/// One pipe: the job that owns it, and a transfer overlapping its latency with it.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    current: Option<Job>,
    next: Option<Job>,
}

impl Slot {
    fn idle(&self) -> bool {
        self.current.is_none() && self.next.is_none()
    }
}

struct CoreState {
    queues: [VecDeque<usize>; Pipe::COUNT],
    pipes: [Slot; Pipe::COUNT],
    next_issue: usize,
    s_pending: Option<usize>,
    /// Strict `set_flag`s that have left their pipe: each with the instructions still on the
    /// pipe when it left (it fires after they finish), then its firing time.
    sets: Vec<(usize, [Option<usize>; 2], Option<f64>)>,
}

impl CoreState {
    /// Every pipe but S idle with an empty queue.
    fn drained(&self) -> bool {
        (0..Pipe::COUNT)
            .filter(|&q| q != Pipe::S.index())
            .all(|q| self.queues[q].is_empty() && self.pipes[q].idle())
    }
}

const EPS: f64 = 1e-6;

/// Simulates all cores. `matches[c][i]` is the set a wait `i` of core `c` waits for.
pub fn simulate(
    m: &Machine,
    cores: &[Vec<Inst>],
    matches: &[Vec<Option<usize>>],
    semantics: Semantics,
) -> Result<Timeline, Deadlock> {
    let mut states: Vec<CoreState> = cores
        .iter()
        .map(|_| CoreState {
            queues: Default::default(),
            pipes: [Slot::default(); Pipe::COUNT],
            next_issue: 0,
            s_pending: None,
            sets: vec![],
        })
        .collect();
    let mut times: Vec<CoreTimes> = cores
        .iter()
        .map(|c| CoreTimes {
            start: vec![f64::NAN; c.len()],
            end: vec![f64::NAN; c.len()],
            busy: [0.0; Pipe::COUNT],
        })
        .collect();
    let mut now = 0.0f64;
    let mut rates: Vec<(usize, usize, f64)> = vec![];
    loop {
        start_ready(m, cores, matches, semantics, &mut states, &mut times, now);
        start_sync(m, cores, &mut states, &mut times, now);
        rates.clear();
        collect_rates(m, cores, &states, &mut rates);
        let mut next = f64::INFINITY;
        for s in &states {
            next = (s.sets.iter().filter_map(|f| f.2)).fold(next, f64::min);
        }
        for (c, s) in states.iter().enumerate() {
            for (p, slot) in s.pipes.iter().enumerate() {
                for job in [slot.current, slot.next].into_iter().flatten() {
                    let t = match job.phase {
                        Phase::Until(t)
                        | Phase::Latency { until: t, .. }
                        | Phase::Bursts { until: t, .. } => t,
                        Phase::Data { remaining } => now + remaining / rate_of(&rates, c, p),
                        Phase::Ready { .. } => continue,
                    };
                    next = next.min(t);
                }
            }
        }
        if next.is_infinite() {
            return finish(cores, &states, times, now);
        }
        let dt = next - now;
        now = next;
        for (c, s) in states.iter_mut().enumerate() {
            for (p, slot) in s.pipes.iter_mut().enumerate() {
                if !slot.idle() {
                    times[c].busy[p] += dt;
                }
                if let Some(Job {
                    phase: Phase::Data { remaining },
                    ..
                }) = &mut slot.current
                {
                    *remaining -= rate_of(&rates, c, p) * dt;
                }
            }
        }
        complete(m, cores, &mut states, &mut times, now);
        for (c, s) in states.iter_mut().enumerate() {
            fire_sets(m, s, &mut times[c], now);
        }
    }
}

fn rate_of(rates: &[(usize, usize, f64)], c: usize, p: usize) -> f64 {
    rates
        .iter()
        .find(|r| r.0 == c && r.1 == p)
        .map_or(f64::INFINITY, |r| r.2)
}

/// Rates of every transfer in its data phase: its path's bandwidth; for a GM transfer capped
/// by a max-min fair share of its core's GM budget among the core's GM transfers, then by a
/// max-min fair share of the total GM bandwidth among every core's GM transfers.
fn collect_rates(
    m: &Machine,
    cores: &[Vec<Inst>],
    states: &[CoreState],
    rates: &mut Vec<(usize, usize, f64)>,
) {
    let mut gm: Vec<usize> = vec![];
    for (c, s) in states.iter().enumerate() {
        let first = gm.len();
        for (p, slot) in s.pipes.iter().enumerate() {
            if let Some(Job {
                inst,
                phase: Phase::Data { .. },
                ..
            }) = slot.current
            {
                if let Cost::Transfer { path, .. } = cores[c][inst].cost {
                    let spec = &m.paths[path];
                    if spec.touches_gm() {
                        gm.push(rates.len());
                    }
                    rates.push((c, p, spec.bytes_per_cycle));
                }
            }
        }
        share(rates, &mut gm[first..], m.gm.bytes_per_cycle_per_core);
    }
    share(rates, &mut gm, m.gm.bytes_per_cycle_total);
}

/// Max-min fair sharing of `capacity` among the rates at `members`: each keeps the smaller of
/// its own rate and an equal share of what the smaller ones leave. Sorts `members` (stably,
/// so equal rates keep their order and the result is deterministic).
fn share(rates: &mut [(usize, usize, f64)], members: &mut [usize], capacity: f64) {
    members.sort_by(|a, b| rates[*a].2.total_cmp(&rates[*b].2));
    let mut left = capacity;
    for (k, &i) in members.iter().enumerate() {
        let r = rates[i].2.min(left / (members.len() - k) as f64);
        rates[i].2 = r;
        left -= r;
    }
}

/// Starts every core's `sync_all` once all of them have reached one with their pipes drained.
fn start_sync(
    m: &Machine,
    cores: &[Vec<Inst>],
    states: &mut [CoreState],
    times: &mut [CoreTimes],
    now: f64,
) {
    let at_sync = |(c, s): (usize, &CoreState)| {
        s.s_pending
            .is_some_and(|i| cores[c][i].cost == Cost::SyncAll)
            && s.pipes[Pipe::S.index()].idle()
            && s.drained()
            && s.sets.is_empty()
    };
    if states.is_empty() || !states.iter().enumerate().all(at_sync) {
        return;
    }
    let round_trip = (m.paths.iter())
        .filter(|p| p.touches_gm())
        .map(|p| p.latency)
        .fold(1.0, f64::max);
    for (c, s) in states.iter_mut().enumerate() {
        let i = s.s_pending.take().expect("at a sync");
        times[c].start[i] = now;
        s.pipes[Pipe::S.index()].current = Some(Job {
            inst: i,
            issue: false,
            phase: Phase::Until(now + round_trip),
        });
    }
}

fn start_ready(
    m: &Machine,
    cores: &[Vec<Inst>],
    matches: &[Vec<Option<usize>>],
    semantics: Semantics,
    states: &mut [CoreState],
    times: &mut [CoreTimes],
    now: f64,
) {
    let at_least_one = |c: f64| now + c.max(1.0);
    for (c, s) in states.iter_mut().enumerate() {
        let insts = &cores[c];
        let mut progressed = true;
        while progressed {
            progressed = false;
            for p in 0..Pipe::COUNT {
                if p == Pipe::S.index()
                    && s.pipes[p].idle()
                    && s.s_pending.is_none()
                    && s.next_issue < insts.len()
                {
                    let i = s.next_issue;
                    s.next_issue += 1;
                    let phase = Phase::Until(now + insts[i].scalar_cost);
                    s.pipes[p].current = Some(Job {
                        inst: i,
                        issue: true,
                        phase,
                    });
                    progressed = true;
                    continue;
                }
                let candidate = if p == Pipe::S.index() {
                    s.s_pending
                } else {
                    s.queues[p].front().copied()
                };
                let Some(i) = candidate else { continue };
                let slot = s.pipes[p];
                if semantics == Semantics::Strict
                    && p != Pipe::S.index()
                    && matches!(insts[i].instr.op, Op::SetFlag(_))
                {
                    // Sets a bit once what is before it has finished; the pipe goes on.
                    s.queues[p].pop_front();
                    times[c].start[i] = now;
                    let before = [slot.current, slot.next].map(|j| j.map(|j| j.inst));
                    s.sets.push((i, before, None));
                    fire_sets(m, s, &mut times[c], now);
                    progressed = true;
                    continue;
                }
                let overlaps = matches!(insts[i].cost, Cost::Transfer { .. } | Cost::Wait);
                let behind_transfer = slot.next.is_none()
                    && slot
                        .current
                        .is_some_and(|j| matches!(insts[j.inst].cost, Cost::Transfer { .. }));
                if !(slot.idle() || (overlaps && behind_transfer)) {
                    continue;
                }
                let phase = match insts[i].cost {
                    Cost::Fixed(cycles) => Phase::Until(at_least_one(cycles)),
                    Cost::Transfer {
                        path,
                        charged,
                        bursts,
                        ..
                    } => Phase::Latency {
                        until: now + m.paths[path].latency,
                        then: Move {
                            setup: m.burst_setup(path, bursts),
                            bytes: charged as f64,
                        },
                    },
                    Cost::Wait => {
                        let set =
                            matches[c][i].expect("unmatched waits are rejected before timing");
                        if times[c].end[set].is_nan() {
                            continue;
                        }
                        Phase::Until(at_least_one(m.scalar.flag_cycles))
                    }
                    Cost::BarrierAll => {
                        if !s.drained() || !s.sets.is_empty() {
                            continue;
                        }
                        Phase::Until(at_least_one(m.scalar.flag_cycles))
                    }
                    Cost::SyncAll => continue,
                };
                if p == Pipe::S.index() {
                    s.s_pending = None;
                } else {
                    s.queues[p].pop_front();
                }
                times[c].start[i] = now;
                let job = Some(Job {
                    inst: i,
                    issue: false,
                    phase,
                });
                if slot.idle() {
                    s.pipes[p].current = job;
                } else {
                    s.pipes[p].next = job;
                }
                progressed = true;
            }
        }
    }
}

fn complete(
    m: &Machine,
    cores: &[Vec<Inst>],
    states: &mut [CoreState],
    times: &mut [CoreTimes],
    now: f64,
) {
    for (c, s) in states.iter_mut().enumerate() {
        fire_sets(m, s, &mut times[c], now);
        for p in 0..Pipe::COUNT {
            let slot = &mut s.pipes[p];
            if let Some(job) = slot.next.as_mut() {
                match job.phase {
                    Phase::Latency { until, then } if until <= now + EPS => {
                        job.phase = Phase::Ready { then }
                    }
                    Phase::Until(t) if t <= now + EPS => {
                        times[c].end[job.inst] = now;
                        slot.next = None;
                    }
                    _ => {}
                }
            }
            let Some(job) = slot.current.as_mut() else {
                continue;
            };
            let done = match job.phase {
                Phase::Until(t) => t <= now + EPS,
                Phase::Latency { until, then } => {
                    if until <= now + EPS {
                        job.phase = then.begin(now);
                    }
                    false
                }
                Phase::Bursts { until, bytes } => {
                    if until <= now + EPS {
                        job.phase = Phase::Data { remaining: bytes };
                    }
                    false
                }
                Phase::Data { remaining } => remaining <= EPS,
                Phase::Ready { .. } => unreachable!("only the next transfer waits"),
            };
            if !done {
                continue;
            }
            let (i, issue) = (job.inst, job.issue);
            slot.current = slot.next.take().map(|mut j| {
                if let Phase::Ready { then } = j.phase {
                    j.phase = then.begin(now);
                }
                j
            });
            if issue {
                let target = cores[c][i].pipe;
                if target == Pipe::S {
                    s.s_pending = Some(i);
                } else {
                    s.queues[target.index()].push_back(i);
                }
            } else {
                times[c].end[i] = now;
            }
        }
    }
}

/// Strict sets: one whose predecessor on its pipe has finished fires a flag cycle later.
fn fire_sets(m: &Machine, s: &mut CoreState, times: &mut CoreTimes, now: f64) {
    s.sets.retain_mut(|(i, before, fire)| match fire {
        Some(t) if *t <= now + EPS => {
            times.end[*i] = now;
            false
        }
        Some(_) => true,
        None => {
            if before.iter().flatten().all(|&b| !times.end[b].is_nan()) {
                *fire = Some(now + m.scalar.flag_cycles.max(1.0));
            }
            true
        }
    });
}

fn finish(
    cores: &[Vec<Inst>],
    states: &[CoreState],
    times: Vec<CoreTimes>,
    now: f64,
) -> Result<Timeline, Deadlock> {
    for (c, s) in states.iter().enumerate() {
        let mut blocked: Vec<usize> = s.queues.iter().filter_map(|q| q.front().copied()).collect();
        blocked.extend(s.s_pending);
        if !blocked.is_empty() || s.next_issue < cores[c].len() {
            blocked.sort_unstable();
            return Err(Deadlock {
                core: c as u32,
                blocked,
            });
        }
    }
    Ok(Timeline {
        cores: times,
        cycles: now,
    })
}
