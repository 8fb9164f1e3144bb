//! Deciding the conditions: each probe by Z3 (and, on request, by isl as a second opinion),
//! one verdict per condition, counterexamples read back as instances and elements.

use super::conditions::{Condition, Frame, Probe, Setup, Violation};
use super::formula::Answer;
use super::physical::Placement;
use super::{presburger, smt};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// How to decide.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Z3's time limit per query.
    pub timeout: Duration,
    /// Also decide every query with isl and record where the two disagree.
    pub second_opinion: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            timeout: Duration::from_secs(10),
            second_opinion: false,
        }
    }
}

/// A solution of a probe, read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// What it shows.
    pub what: Violation,
    /// The operand concerned, if one.
    pub operand: Option<usize>,
    /// Software instances (loop values, outermost first).
    pub instances: Vec<Vec<i64>>,
    /// Values of parameters that were symbolic.
    pub params: BTreeMap<String, i64>,
    /// A call (outer loop values, tiles) and point not given by an instance.
    pub call: Option<(Vec<i64>, Vec<i64>, Vec<i64>)>,
    /// A buffer copy and element position of an operand block.
    pub slot: Option<(i64, Vec<i64>)>,
    /// The counterexample in words (see [`Counterexample::describe`]).
    pub text: String,
}

/// The verdict on one condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Holds: every probe's query has no solution.
    Proved,
    /// Violated, with a solution.
    Refuted(Counterexample),
    /// A solver gave up on a probe (a timeout): not a proof.
    Unknown(String),
}

/// One condition's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Which condition.
    pub condition: Condition,
    /// Its outcome.
    pub outcome: Outcome,
}

/// Where Z3 and isl disagreed on a probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    /// The condition.
    pub condition: Condition,
    /// Z3's answer and isl's, in words.
    pub answers: (String, String),
}

/// All verdicts on one mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// One per condition, in order.
    pub verdicts: Vec<Verdict>,
    /// Probes on which the second opinion differed (empty without it).
    pub disagreements: Vec<Disagreement>,
    /// Queries decided by Z3.
    pub queries: usize,
}

impl Report {
    /// Whether every condition is proved.
    pub fn proved(&self) -> bool {
        self.verdicts.iter().all(|v| v.outcome == Outcome::Proved)
    }
    /// The verdict on a condition.
    pub fn outcome(&self, c: Condition) -> &Outcome {
        &self.verdicts[c.number() - 1].outcome
    }
    /// The conditions refuted.
    pub fn refuted(&self) -> Vec<Condition> {
        (self.verdicts.iter())
            .filter(|v| matches!(v.outcome, Outcome::Refuted(_)))
            .map(|v| v.condition)
            .collect()
    }
}

fn word(a: &Answer) -> String {
    match a {
        Answer::Empty => "holds".into(),
        Answer::Witness(_) => "violated".into(),
        Answer::Unknown(r) => format!("unknown ({r})"),
    }
}

/// Decides every condition of a mapping.
pub fn verify(setup: &Setup, options: &Options) -> Report {
    let probes = setup.probes();
    let mut verdicts: Vec<Verdict> = (Condition::ALL.iter())
        .map(|&condition| Verdict {
            condition,
            outcome: Outcome::Proved,
        })
        .collect();
    let mut disagreements = Vec::new();
    let mut queries = 0;
    for probe in &probes {
        let slot = &mut verdicts[probe.condition.number() - 1].outcome;
        if matches!(slot, Outcome::Refuted(_)) && !options.second_opinion {
            continue;
        }
        queries += 1;
        let answer = smt::decide(&probe.query, options.timeout);
        if options.second_opinion {
            let other = presburger::decide(&probe.query);
            let differ = matches!(
                (&answer, &other),
                (Answer::Empty, Answer::Witness(_)) | (Answer::Witness(_), Answer::Empty)
            );
            if differ {
                disagreements.push(Disagreement {
                    condition: probe.condition,
                    answers: (word(&answer), word(&other)),
                });
            }
        }
        match answer {
            Answer::Empty => {}
            Answer::Witness(values) => {
                if !matches!(slot, Outcome::Refuted(_)) {
                    let mut c = read_back(probe, &values);
                    c.text = c.describe(setup);
                    *slot = Outcome::Refuted(c);
                }
            }
            Answer::Unknown(reason) => {
                if *slot == Outcome::Proved {
                    *slot = Outcome::Unknown(reason);
                }
            }
        }
    }
    Report {
        verdicts,
        disagreements,
        queries,
    }
}

fn read_back(probe: &Probe, values: &[i64]) -> Counterexample {
    let f: &Frame = &probe.frame;
    let pick = |ix: &[usize]| ix.iter().map(|&k| values[k]).collect::<Vec<i64>>();
    Counterexample {
        what: f.what,
        operand: f.operand,
        instances: f.instances.iter().map(|ix| pick(ix)).collect(),
        params: f
            .params
            .iter()
            .map(|(n, k)| (n.clone(), values[*k]))
            .collect(),
        call: f.call.as_ref().map(|(o, t, p)| (pick(o), pick(t), pick(p))),
        slot: f.slot.as_ref().map(|(b, a)| (values[*b], pick(a))),
        text: String::new(),
    }
}

impl Counterexample {
    /// The parameter values in force: the symbolic ones from the solution, the others from
    /// the sizes.
    pub fn sizes(&self, setup: &Setup) -> BTreeMap<String, i64> {
        let mut out = setup.sw.sizes.fixed().clone();
        out.extend(self.params.clone());
        out
    }

    /// The counterexample in words: instances, calls, points and elements.
    pub fn describe(&self, setup: &Setup) -> String {
        let sw = setup.sw;
        let params = self.sizes(setup);
        let inst = |v: &[i64]| {
            let body: Vec<String> = (sw.loops.iter().zip(v))
                .map(|(l, x)| format!("{}={x}", l.var))
                .collect();
            format!("{}[{}]", sw.stmt.name, body.join(", "))
        };
        let elem = |array: frontend::ir::ArrayId, e: &[i64]| {
            let idx: Vec<String> = e.iter().map(|x| x.to_string()).collect();
            format!("{}[{}]", sw.kernel.array(array).name, idx.join(", "))
        };
        let place = |v: &[i64]| setup.mapping.place(setup.layout, setup.intr, v, &params);
        let at = |p: &Placement| {
            let t: Vec<String> = (setup.intr.loops.iter().zip(&p.tiles))
                .map(|(x, t)| format!("{}={t}", x.name))
                .collect();
            let pt: Vec<String> = (setup.intr.loops.iter().zip(&p.point))
                .map(|(x, t)| format!("{}={t}", x.name))
                .collect();
            format!("call (tiles {}) at point ({})", t.join(", "), pt.join(", "))
        };
        let mut s = String::new();
        if !self.params.is_empty() {
            let ps: Vec<String> = self
                .params
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            let _ = write!(s, "with {}: ", ps.join(", "));
        }
        let write_of = |v: &[i64]| {
            elem(
                sw.stmt.target.array,
                &sw.element_at(&sw.stmt.target, v, &params),
            )
        };
        match self.what {
            Violation::Uncovered => {
                let p = place(&self.instances[0]);
                let _ = write!(
                    s,
                    "{} runs at no point: its fused indices {:?} lie outside the extents",
                    inst(&self.instances[0]),
                    p.fused
                );
            }
            Violation::Collision => {
                let p = place(&self.instances[0]);
                let _ = write!(
                    s,
                    "{} and {} both run in {}",
                    inst(&self.instances[0]),
                    inst(&self.instances[1]),
                    at(&p)
                );
            }
            Violation::WrongElement => {
                let o = self.operand.unwrap_or(0);
                let v = &self.instances[0];
                let p = place(v);
                let held = setup
                    .mapping
                    .held(sw, setup.layout, setup.intr, o, &p, &params);
                let touched = sw.element_at(&setup.binding[o], v, &params);
                let _ = write!(
                    s,
                    "{} runs in {}; there operand {} holds {} but the statement touches {}",
                    inst(v),
                    at(&p),
                    setup.intr.operands[o].name,
                    elem(setup.mapping.operands[o].tensor, &held),
                    elem(setup.binding[o].array, &touched)
                );
            }
            Violation::SplitAccumulation | Violation::MixedAccumulation => {
                let (a, b) = (&self.instances[0], &self.instances[1]);
                let (pa, pb) = (place(a), place(b));
                let how = if self.what == Violation::SplitAccumulation {
                    "update the same element but accumulate at different positions of the output operand"
                } else {
                    "update different elements but accumulate at the same position of the output operand"
                };
                let _ = write!(
                    s,
                    "{} (writes {}, point {:?}) and {} (writes {}, point {:?}) run in one call and {how}",
                    inst(a), write_of(a), pa.point, inst(b), write_of(b), pb.point
                );
            }
            Violation::PaddingLeaks => {
                if let Some((o, t, p)) = &self.call {
                    let _ = write!(
                        s,
                        "in the call with outer loops {o:?} and tiles {t:?}, the padded point {p:?} adds a value that is not the identity to a stored output element"
                    );
                }
            }
            Violation::Overflow => {
                let o = self.operand.unwrap_or(0);
                if let Some((b, a)) = &self.slot {
                    let op = &setup.intr.operands[o];
                    let _ = write!(
                        s,
                        "element {a:?} of copy {b} of operand {}'s block does not fit {} (capacity, alignment or a block that is not a whole number of tiles)",
                        op.name, op.tier
                    );
                }
            }
            Violation::DependenceInCall
            | Violation::ReductionReordered
            | Violation::DependenceAcrossCalls => {
                let (a, b) = (&self.instances[0], &self.instances[1]);
                let why = match self.what {
                    Violation::DependenceInCall => "depend on each other but run together in one call".to_string(),
                    Violation::ReductionReordered => format!(
                        "accumulate into the same element {} in one call, which reorders their {} reduction (allow with --reorder-reductions)",
                        write_of(a),
                        sw.target_type()
                    ),
                    _ => "depend on each other, and the second runs in an earlier call".to_string(),
                };
                let _ = write!(s, "{} and {} {why}", inst(a), inst(b));
            }
        }
        s
    }
}
