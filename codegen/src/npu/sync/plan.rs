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
//!   each set once before `L`'s outermost loop and waited for once after it. `K` must be an
//!   expression of the loop variables (`Shape::counter`); where it is not (`L` inside a
//!   loop whose bounds vary, a guard), a flag has one id, which needs none.
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
//! Ids are the machine's few per pair of pipes, none shared between flags; loop flags get
//! theirs first, the innermost first. A flag that finds none, or whose credit finds none,
//! becomes a `barrier ALL` before its wait's child (it orders everything before it, in this
//! iteration and the earlier ones: correct, costly where it runs often).
//!
//! Within a gap, in this order: credits' waits, sets, waits, credits' sets. Every wait then
//! waits for a set earlier in program order (the same iteration's, an earlier iteration's or
//! one before the loop), so the program cannot deadlock: the earliest blocked instruction
//! would wait for a set on a pipe whose earlier instructions are not blocked.

use super::internal;
use super::needs::{common_loops, Found};
use super::shape::Shape;
use crate::npu::NpuError;
use npu_sim::program::{BarrierScope, FlagKey, Pipe};
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
    /// The credit that keeps `self` from being set twice: the flag the other way, set right
    /// after `self`'s wait and waited for right before its set, as many ids.
    fn credit_for(&self) -> Sync {
        Sync {
            from: self.to,
            to: self.from,
            set_gap: self.wait_gap,
            wait_gap: self.set_gap,
            reach: match self.reach {
                Reach::Within => Reach::Across,
                Reach::Across => Reach::Within,
            },
            credit: true,
            orders: (self.orders.1, self.orders.0),
            ..self.clone()
        }
    }

    /// A `barrier ALL` in place of `self`, before its wait's child: it orders everything
    /// before it, in this iteration and the earlier ones.
    fn drain(&self) -> Barrier {
        Barrier {
            level: self.level.clone(),
            gap: self.wait_gap,
            scope: BarrierScope::All,
        }
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

/// A `barrier` before a child of a loop body: on one pipe (a dependence within it), or on
/// all (a dependence whose flag found no ids).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Barrier {
    /// The loop (its path).
    pub level: Vec<usize>,
    /// The gap.
    pub gap: usize,
    /// What it drains.
    pub scope: BarrierScope,
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
const MOST_IDS: u32 = 2;

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
                    scope: BarrierScope::Pipe(from),
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
        // ids in turn need the loop's iterations as an expression; one id does not
        let counted = shape.counter(&level).is_some();
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
            let m = if counted { MOST_IDS } else { 1 };
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
            let m = if counted {
                d.clamp(1, u64::from(MOST_IDS)) as u32
            } else {
                1
            };
            here.push(sync(set_gap, wait_gap, Reach::Across, m, first.orders));
        }
        plan.syncs.extend(here);
    }
    close(&mut plan, found, ids);
    Ok(plan)
}

/// Gives every flag ids of its pair that nothing else uses, and every flag in a loop a flag
/// the other way that keeps it from being set twice (a credit where the plan has none).
/// Flags in loops get their ids first, the innermost first; a flag that finds none (the
/// machine has few per pair), or whose credit finds none, becomes a `barrier ALL` before
/// its wait's child, which orders everything before it: correct, and costly only where it
/// runs often.
fn close(plan: &mut Plan, found: &Found, ids: u32) {
    let mut ids = Ids {
        taken: found.used.iter().copied().collect(),
        count: ids,
    };
    plan.syncs.sort_by_key(|s| std::cmp::Reverse(s.level.len()));
    let mut kept: Vec<Sync> = vec![];
    for mut s in std::mem::take(&mut plan.syncs) {
        match ids.take(s.from, s.to, s.m) {
            Some(base) => {
                s.base = base;
                kept.push(s);
            }
            None => plan.barriers.push(s.drain()),
        }
    }
    // a flag whose partner became a barrier needs a credit now: until nothing changes
    loop {
        let open = (0..kept.len()).find(|&k| {
            let s = &kept[k];
            !s.level.is_empty() && !s.credit && !kept.iter().any(|t| s.protected_by(t))
        });
        let Some(k) = open else { break };
        let mut credit = kept[k].credit_for();
        match ids.take(credit.from, credit.to, credit.m) {
            Some(base) => {
                credit.base = base;
                kept.push(credit);
            }
            None => {
                let s = kept.remove(k);
                plan.barriers.push(s.drain());
            }
        }
    }
    plan.syncs = kept;
}

/// The flag ids of the machine, per pair of pipes, and which are taken.
struct Ids {
    taken: Vec<FlagKey>,
    count: u32,
}

impl Ids {
    /// `m` consecutive free ids from `src` to `dst`, taken.
    fn take(&mut self, src: Pipe, dst: Pipe, m: u32) -> Option<u32> {
        let free = |base: u32| {
            (base..base + m)
                .all(|id| id < self.count && !self.taken.contains(&FlagKey { src, dst, id }))
        };
        let base = (0..self.count).find(|&b| free(b))?;
        (self.taken).extend((base..base + m).map(|id| FlagKey { src, dst, id }));
        Some(base)
    }
}
