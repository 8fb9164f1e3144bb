//! What the legality checker found, each violation with a concrete witness.

use poly::deps::DepKind;
use std::fmt;

/// The result of a legality check: every violation found (none: the schedule is legal).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The violations, structural ones first, then by rule, dependence kind and statements.
    pub violations: Vec<Violation>,
}

impl Report {
    /// Whether the schedule respects every rule.
    pub fn is_legal(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Parameter values, by (isl) name, in the kernel's declaration order.
pub type ParamValues = Vec<(String, i64)>;

/// A statement instance: `S1[0, 2]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The statement's isl tuple name.
    pub tuple: String,
    /// Its iteration vector.
    pub point: Vec<i64>,
}

/// An array element: `C[0, 1]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Element {
    /// The array's (isl) name.
    pub array: String,
    /// Its index.
    pub index: Vec<i64>,
}

/// One way a schedule is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// An instance of the program has no time (the schedule drops it).
    Unscheduled {
        /// The smallest parameter values with such an instance.
        params: ParamValues,
        /// The instance.
        instance: Instance,
    },
    /// An instance has several times (the schedule would run it more than once).
    SeveralTimes {
        /// The smallest parameter values with such an instance.
        params: ParamValues,
        /// The instance.
        instance: Instance,
        /// Its times.
        times: Vec<Vec<i64>>,
    },
    /// A dependence is not respected.
    Dependence(DepViolation),
}

/// A dependence between two instances that the schedule does not respect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepViolation {
    /// Which rule is broken.
    pub rule: Rule,
    /// The kind of dependence.
    pub kind: DepKind,
    /// The smallest parameter values with such a pair of instances.
    pub params: ParamValues,
    /// The instance that runs first in the original program.
    pub source: Instance,
    /// The instance that depends on it.
    pub sink: Instance,
    /// The element both access.
    pub element: Element,
    /// The source's time vector in the schedule.
    pub source_time: Vec<i64>,
    /// The sink's time vector in the schedule.
    pub sink_time: Vec<i64>,
}

/// The rule a dependence violation breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The sink does not run strictly after the source.
    Order(Flip),
    /// A band member marked coincident (a parallel loop) carries the dependence.
    Parallel(BandMember),
    /// A member of a permutable band runs the dependence backwards.
    Permutable(BandMember),
}

/// Where the order of a dependence's instances goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flip {
    /// The first schedule dimension at which the two time vectors differ (the sink's is
    /// smaller there).
    Dimension(usize),
    /// The two instances have the same time vector: nothing orders them.
    EqualTimes,
}

/// One member of a band of the schedule tree, with the dependence's distance along it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandMember {
    /// The band's number among the tree's bands, in depth-first order from 0.
    pub band: usize,
    /// The member's position in the band, from 0.
    pub member: usize,
    /// The band's number of members.
    pub members: usize,
    /// The member's schedule for the source's statement, in isl notation.
    pub schedule: String,
    /// The sink's value minus the source's value of the member.
    pub distance: i64,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_legal() {
            return writeln!(f, "schedule is legal");
        }
        for (k, v) in self.violations.iter().enumerate() {
            write!(f, "violation {}: {v}", k + 1)?;
        }
        Ok(())
    }
}

impl fmt::Display for Violation {
    /// One headline, indented details, each on its own line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Unscheduled { params, instance } => {
                writeln!(f, "instance {instance} has no time in the schedule")?;
                write_params(f, params)
            }
            Violation::SeveralTimes {
                params,
                instance,
                times,
            } => {
                let times: Vec<String> = times.iter().map(|t| format!("{t:?}")).collect();
                writeln!(
                    f,
                    "instance {instance} has several times in the schedule: {}",
                    times.join(", ")
                )?;
                write_params(f, params)
            }
            Violation::Dependence(d) => d.fmt(f),
        }
    }
}

impl fmt::Display for DepViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind.short();
        match &self.rule {
            Rule::Order(Flip::Dimension(d)) => writeln!(
                f,
                "{kind} dependence reversed: the sink runs first, the order flips at schedule dimension {d}"
            )?,
            Rule::Order(Flip::EqualTimes) => writeln!(
                f,
                "{kind} dependence not ordered: source and sink run at equal times"
            )?,
            Rule::Parallel(m) => writeln!(
                f,
                "{kind} dependence carried by a parallel loop: band {} member {} of {} ({}) is marked coincident, but the distance is {}",
                m.band, m.member, m.members, m.schedule, m.distance
            )?,
            Rule::Permutable(m) => writeln!(
                f,
                "{kind} dependence breaks permutable band {}: member {} of {} ({}) has distance {}",
                m.band, m.member, m.members, m.schedule, m.distance
            )?,
        }
        let (source_verb, sink_verb) = match self.kind {
            DepKind::Flow => ("writes", "reads"),
            DepKind::Anti => ("reads", "writes"),
            DepKind::Output => ("writes", "writes"),
        };
        writeln!(
            f,
            "  source {} {source_verb} {} at time {:?}",
            self.source, self.element, self.source_time
        )?;
        writeln!(
            f,
            "  sink   {} {sink_verb} {} at time {:?}",
            self.sink, self.element, self.sink_time
        )?;
        write_params(f, &self.params)
    }
}

fn write_params(f: &mut fmt::Formatter<'_>, params: &ParamValues) -> fmt::Result {
    if params.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = params.iter().map(|(n, v)| format!("{n} = {v}")).collect();
    writeln!(f, "  with {}", values.join(", "))
}

impl fmt::Display for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&poly::order::instance_text(&self.tuple, &self.point))
    }
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&poly::order::instance_text(&self.array, &self.index))
    }
}
