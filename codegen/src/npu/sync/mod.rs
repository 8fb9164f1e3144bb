//! Flags placed by a dependence analysis of the generated program.
//!
//! A path that uses it emits its instructions without the flags between its pipes (what
//! orders its cores, `sync_all`, and the vector unit's own barriers stay its own), and
//! [`place`] makes the program correct in the simulator's strict semantics: it finds every
//! dependence of the program, as a sequential program, that nothing orders
//! (`needs`), plans flags (and, for one pipe, barriers) that order them (`plan`), and
//! writes them into the loop bodies (`insert`). Rounds repeat until nothing is left
//! unordered: the first places flags between pipes only, since most dependences within a
//! pipe (a ring slot loaded again two groups later) are then ordered through them.
//!
//! Invariants: `place` returns a program only once its own analysis finds nothing left
//! unordered, no deadlock and no flag set twice (the simulator's strict criteria on each
//! core); a placed flag's wait always waits for a set earlier in program order (no
//! deadlock); a flag in a loop has a flag the other way that keeps it from being set twice
//! (a ring's "full" and "free"), added as a *credit* when the dependences gave none; ids
//! are the machine's, none shared with another flag. The analysis runs the program's walk
//! on every core, so the flags cover the program as generated (its sizes), not a family of
//! programs; the race detector and the timing oracle judge the result like any other
//! program's.

mod insert;
mod needs;
mod plan;
mod shape;

use crate::npu::NpuError;
use npu_sim::{Machine, Program};

/// Most rounds of analysis and placement (the second orders what the first's flags left).
const ROUNDS: usize = 3;

fn internal(what: &str) -> NpuError {
    NpuError::Internal(format!("synchronisation: {what}"))
}

/// Why [`place_given`] gives no program.
#[derive(Debug)]
pub enum Refusal {
    /// The program as given does not run: the simulator's diagnostic (a fault, a deadlock,
    /// a flag set again before its wait, a program too long to walk).
    Given(npu_sim::Diagnostic),
    /// The placement failed (a bug).
    Internal(String),
}

/// `p` with flags (and barriers) placed so that every dependence on one core is ordered;
/// a program a back end generated, whose every failure is the back end's (a program too
/// long for the simulator is refused as too large).
pub fn place(p: Program, m: &Machine) -> Result<Program, NpuError> {
    place_given(p, m).map_err(|r| match r {
        Refusal::Given(d) => crate::npu::refused_by_simulator(d),
        Refusal::Internal(what) => NpuError::Internal(what),
    })
}

/// [`place`] for a program someone wrote: what is wrong with it as given is its own
/// diagnostic, told apart from a failure of the placement.
pub fn place_given(p: Program, m: &Machine) -> Result<Program, Refusal> {
    let ours = |e: NpuError| Refusal::Internal(e.to_string());
    let mut p = p;
    for round in 0..ROUNDS {
        let shape = shape::Shape::of(&p);
        // after the first round, the program is ours
        let found = needs::uncovered(&p, m, &shape).map_err(|r| match (r, round) {
            (Refusal::Given(d), 1..) => Refusal::Internal(format!(
                "synchronisation: the placed flags break the program: {}",
                d.message
            )),
            (r, _) => r,
        })?;
        if found.needs.is_empty() {
            return Ok(p);
        }
        let plan = plan::plan(&shape, &found, m.flag_ids, round == 0).map_err(ours)?;
        p = insert::apply(&p, &shape, &plan).map_err(ours)?;
    }
    Err(ours(internal(&format!(
        "dependences are left unordered after {ROUNDS} rounds"
    ))))
}
