//! From unordered dependences to flags and barriers, with the positions that make them
//! correct, never set twice and never deadlock.
//!
//! A dependence of instruction `q` (pipe B) on `p` (pipe A) is placed in the body of their
//! innermost common loop `L` (the top level if none), between the children of that body
//! holding them: child `i` holds `p`, child `j` holds `q`. A *gap* `g` of a body is the place
//! before its child `g` (the last gap is after the last child).
//!
//! - Another pipe, `i < j`: a flag set by A after child `i` and waited for by B before child
//!   `j` in the same iteration ([`Reach::Within`]). Every later dependence of the pair into
//!   `j` or after it from a child up to the latest such `i` is covered by the same flag (a
//!   `set_flag` follows everything before it on its pipe, and everything after a
//!   `wait_flag` on its pipe follows it), and so is every dependence carried from an earlier
//!   iteration.
//! - Another pipe, `i >= j`: the dependence is carried by `L`, at least `d` iterations. A
//!   flag set after child `i` in iteration `K` is waited for before child `j` in iteration
//!   `K + m` ([`Reach::Across`], `m <= d`, at most 2): `m` ids used in turn by `K mod m`,
//!   each set once before `L`'s outermost loop and waited for once after it.
//! - The same pipe: `barrier` on it before child `j` (a later round: most such dependences
//!   are ordered through the flags of the first).
//!
//! A flag holds one event (the strict semantics), so the `K`-th set of an id must follow
//! the wait of the previous one. A flag in a loop is safe when a flag the other way, at the
//! same level, closes the loop: for a [`Reach::Within`] flag, an [`Reach::Across`] one with
//! no more ids, set after its wait and waited for before its set; for an `Across` flag, a
//! `Within` one placed so. A ring's "full" and "free" flags are such a pair. A flag without
//! one gets a *credit*: the other flag of the pair, set right after its wait and waited for
//! right before its set.
//!
//! Within a gap, in this order: credits' waits, sets, waits, credits' sets. Every wait then
//! waits for a set earlier in program order (the same iteration's, an earlier iteration's or
//! one before the loop), so the program cannot deadlock: the earliest blocked instruction
//! would wait for a set on a pipe whose earlier instructions are not blocked.

use super::internal;
use super::needs::{common_loops, Found};
use super::shape::Shape;
use crate::npu::NpuError;
use npu_sim::program::{FlagKey, Pipe};
use std::collections::BTreeMap;

/// How far apart a flag's set and its wait are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// In the same iteration of the loop (or at the top level, once).
    Within,
    /// The wait `m` iterations after the set (the ids primed before the loop).
    Across,
}

/// One flag of the plan: a pair of pipes, where its set and wait go, and its ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sync {
    /// The setting pipe.
    pub from: Pipe,
    /// The waiting pipe.
    pub to: Pipe,
    /// The loop whose body holds both (its path; empty at the top level).
    pub level: Vec<usize>,
    /// The gap of the set.
    pub set_gap: usize,
    /// The gap of the wait.
    pub wait_gap: usize,
    /// Same iteration or `m` later.
    pub reach: Reach,
    /// Ids used in turn.
    pub m: u32,
    /// The first id.
    pub base: u32,
    /// A credit (the back flag added so that another cannot be set twice).
    pub credit: bool,
    /// The instructions it orders (first dependence placed on it), for the program's notes.
    pub orders: (usize, usize),
}

impl Sync {
    /// Where the set goes: its gap and its rank in the gap.
    pub fn set_at(&self) -> (usize, u8) {
        (self.set_gap, if self.credit { 3 } else { 1 })
    }
    /// Where the wait goes.
    pub fn wait_at(&self) -> (usize, u8) {
        (self.wait_gap, if self.credit { 0 } else { 2 })
    }
    /// Whether `t` (the other way, at the same level) keeps `self` from being set twice.
    fn protected_by(&self, t: &Sync) -> bool {
        let kind = match self.reach {
            Reach::Within => t.reach == Reach::Across && t.m <= self.m,
            Reach::Across => t.reach == Reach::Within,
        };
        kind && (t.from, t.to) == (self.to, self.from)
            && t.level == self.level
            && t.set_at() > self.wait_at()
            && t.wait_at() < self.set_at()
    }
}

/// A `barrier` on one pipe before a child of a loop body.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Barrier {
    /// The loop (its path).
    pub level: Vec<usize>,
    /// The gap.
    pub gap: usize,
    /// The pipe.
    pub pipe: Pipe,
}

/// What to insert.
#[derive(Debug, Default)]
pub struct Plan {
    /// Flags.
    pub syncs: Vec<Sync>,
    /// Barriers.
    pub barriers: Vec<Barrier>,
}

/// Most ids a flag uses in turn (a ring's two slots).
const MOST_IDS: u64 = 2;

/// A dependence placed: the pair's level and children, how far it reaches.
struct Placed {
    i: usize,
    j: usize,
    distance: u64,
    orders: (usize, usize),
}

/// The plan for `found`'s dependences; with `cross_only`, those between pipes only.
pub fn plan(shape: &Shape, found: &Found, ids: u32, cross_only: bool) -> Result<Plan, NpuError> {
    let mut by_key: BTreeMap<(Vec<usize>, Pipe, Pipe), Vec<Placed>> = BTreeMap::new();
    for n in &found.needs {
        if cross_only && n.from_pipe == n.to_pipe {
            continue;
        }
        let (pf, pt) = (&shape.paths[n.from], &shape.paths[n.to]);
        let d = common_loops(pf, pt);
        let placed = Placed {
            i: pf[d],
            j: pt[d],
            distance: n.distance,
            orders: (n.from, n.to),
        };
        by_key
            .entry((pf[..d].to_vec(), n.from_pipe, n.to_pipe))
            .or_default()
            .push(placed);
    }
    let mut plan = Plan::default();
    for ((level, from, to), mut needs) in by_key {
        if from == to {
            for n in &needs {
                let b = Barrier {
                    level: level.clone(),
                    gap: n.j,
                    pipe: from,
                };
                if !plan.barriers.contains(&b) {
                    plan.barriers.push(b);
                }
            }
            continue;
        }
        let sync = |set_gap, wait_gap, reach, m, orders| Sync {
            from,
            to,
            level: level.clone(),
            set_gap,
            wait_gap,
            reach,
            m,
            base: 0,
            credit: false,
            orders,
        };
        needs.sort_by_key(|n| (n.j, n.i));
        let mut here: Vec<Sync> = vec![];
        for n in needs.iter().filter(|n| n.i < n.j) {
            if here.iter().any(|s| s.set_gap > n.i && s.wait_gap <= n.j) {
                continue;
            }
            // the latest child any dependence into `j` or later comes from
            let latest = (needs.iter())
                .filter(|o| o.i < n.j && o.j >= n.j)
                .map(|o| o.i)
                .max()
                .unwrap_or(n.i);
            let m = if level.is_empty() { 1 } else { MOST_IDS as u32 };
            here.push(sync(latest + 1, n.j, Reach::Within, m, n.orders));
        }
        let carried: Vec<&Placed> = (needs.iter())
            .filter(|n| n.i >= n.j)
            .filter(|n| !here.iter().any(|s| s.wait_gap <= n.j))
            .collect();
        if let Some(first) = carried.first() {
            if level.is_empty() {
                return Err(internal("a dependence runs backwards at the top level"));
            }
            let set_gap = carried.iter().map(|n| n.i).max().unwrap_or(0) + 1;
            let wait_gap = carried.iter().map(|n| n.j).min().unwrap_or(0);
            let d = carried.iter().map(|n| n.distance).min().unwrap_or(1);
            let m = d.clamp(1, MOST_IDS) as u32;
            here.push(sync(set_gap, wait_gap, Reach::Across, m, first.orders));
        }
        plan.syncs.extend(here);
    }
    credits(&mut plan.syncs);
    allocate(&mut plan.syncs, found, ids)?;
    Ok(plan)
}

/// Gives every flag in a loop a flag the other way that keeps it from being set twice.
fn credits(syncs: &mut Vec<Sync>) {
    let mut added = vec![];
    for k in 0..syncs.len() {
        let s = &syncs[k];
        if s.level.is_empty() {
            continue;
        }
        let found = syncs
            .iter()
            .filter(|t| s.protected_by(t))
            .map(|t| t.m)
            .max();
        match (found, s.reach) {
            (Some(m), Reach::Within) => syncs[k].m = syncs[k].m.max(m),
            (Some(_), Reach::Across) => {}
            (None, reach) => added.push(Sync {
                from: s.to,
                to: s.from,
                set_gap: s.wait_gap,
                wait_gap: s.set_gap,
                reach: match reach {
                    Reach::Within => Reach::Across,
                    Reach::Across => Reach::Within,
                },
                credit: true,
                orders: (s.orders.1, s.orders.0),
                ..s.clone()
            }),
        }
    }
    syncs.extend(added);
}

/// Gives every flag ids of its pair that nothing else uses.
fn allocate(syncs: &mut [Sync], found: &Found, ids: u32) -> Result<(), NpuError> {
    let mut taken: Vec<FlagKey> = found.used.iter().copied().collect();
    for s in syncs {
        let free = |base: u32| {
            (base..base + s.m).all(|id| {
                id < ids
                    && !taken.contains(&FlagKey {
                        src: s.from,
                        dst: s.to,
                        id,
                    })
            })
        };
        let base = (0..ids).find(|&b| free(b)).ok_or_else(|| {
            internal(&format!(
                "the machine's {ids} flag ids from {} to {} are not enough for the program's synchronisation",
                s.from, s.to
            ))
        })?;
        s.base = base;
        taken.extend((base..base + s.m).map(|id| FlagKey {
            src: s.from,
            dst: s.to,
            id,
        }));
    }
    Ok(())
}
