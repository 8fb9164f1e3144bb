//! The seven conditions of a correct mapping, each written as queries whose solutions are
//! counterexamples.
//!
//! 1. coverage: every software instance runs at a point of some call;
//! 2. injectivity: no two instances run at the same point of the same call;
//! 3. operands: at every instance, each operand holds exactly the element the statement
//!    touches there;
//! 4. kinds: within a call, two instances update the same element exactly when they
//!    accumulate at the same position of the output operand (a software reduction loop on
//!    a spatial intrinsic loop, or the converse, breaks this);
//! 5. padding: a padded point whose output position is stored contributes the identity;
//! 6. capacity: every operand's resident blocks fit its tier, aligned;
//! 7. reordering: the instances of one call carry no dependence but the mapped reduction,
//!    which is exact or allowed to be reordered, and calls keep every other dependence.

use super::formula::{Formula, Lin, Query};
use super::intrinsic::Intrinsic;
use super::physical::{Layout, Mapping, Pad};
use super::software::{collect_reads, InstanceVars, Software};
use crate::target::Target;
use frontend::ir::Access;
use std::collections::BTreeMap;
use std::fmt;

/// One of the seven conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Condition {
    /// (1) every instance is mapped to some (call, point).
    Coverage,
    /// (2) no two instances share a (call, point).
    Injective,
    /// (3) operands hold the elements the statement touches.
    Operands,
    /// (4) spatial loops on spatial intrinsic loops, reductions on reductions.
    Kinds,
    /// (5) padded points contribute nothing observed.
    Padding,
    /// (6) operand blocks fit their tiers, aligned.
    Capacity,
    /// (7) no dependence is broken by executing a call's points together or calls in order.
    Reordering,
}

impl Condition {
    /// All of them, in order.
    pub const ALL: [Condition; 7] = [
        Condition::Coverage,
        Condition::Injective,
        Condition::Operands,
        Condition::Kinds,
        Condition::Padding,
        Condition::Capacity,
        Condition::Reordering,
    ];
    /// The condition's number in the documentation.
    pub fn number(self) -> usize {
        Condition::ALL.iter().position(|&c| c == self).unwrap_or(0) + 1
    }
    /// A short name (`coverage`, `operands`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Condition::Coverage => "coverage",
            Condition::Injective => "injectivity",
            Condition::Operands => "operands",
            Condition::Kinds => "kinds",
            Condition::Padding => "padding",
            Condition::Capacity => "capacity",
            Condition::Reordering => "reordering",
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}) {}", self.number(), self.name())
    }
}

/// What a query's variables stand for, to read a solution back.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    /// Variable indices of each instance's loops.
    pub instances: Vec<Vec<usize>>,
    /// Variable indices of symbolic parameters.
    pub params: Vec<(String, usize)>,
    /// Variable indices of a call and point not given by an instance (padding): outer
    /// loops, tiles, points.
    pub call: Option<(Vec<usize>, Vec<usize>, Vec<usize>)>,
    /// Variable indices of a buffer copy and an element position (capacity).
    pub slot: Option<(usize, Vec<usize>)>,
    /// The operand concerned, if one.
    pub operand: Option<usize>,
    /// Which kind of violation a solution shows.
    pub what: Violation,
}

/// The kind of violation a query's solutions show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Violation {
    /// An instance outside every call's points.
    #[default]
    Uncovered,
    /// Two instances at one point.
    Collision,
    /// An operand holds another element than the one the instance touches.
    WrongElement,
    /// Two instances of one call update one element at different output positions.
    SplitAccumulation,
    /// Two instances of one call update different elements at one output position.
    MixedAccumulation,
    /// A padded point adds a non-identity value to a stored output element.
    PaddingLeaks,
    /// An operand block element lies beyond its tier, or a block is misaligned.
    Overflow,
    /// Two dependent instances run together in one call.
    DependenceInCall,
    /// A floating-point reduction would be reordered without permission.
    ReductionReordered,
    /// Two dependent instances run in calls ordered against the dependence.
    DependenceAcrossCalls,
}

/// A query and how to read its solutions.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The condition it checks.
    pub condition: Condition,
    /// The question.
    pub query: Query,
    /// Its variables' meaning.
    pub frame: Frame,
}

/// Everything the conditions read.
pub struct Setup<'a> {
    /// The statement.
    pub sw: &'a Software<'a>,
    /// The intrinsic.
    pub intr: &'a Intrinsic,
    /// The statement's access bound to each operand.
    pub binding: &'a [Access],
    /// The mapping.
    pub mapping: &'a Mapping,
    /// Its linearisation.
    pub layout: &'a Layout,
    /// The machine whose tiers hold the operands.
    pub target: &'a Target,
    /// Whether the user allowed floating-point reductions to be reordered.
    pub allow_reorder: bool,
}

/// An instance's variables and where it runs.
struct Placed {
    vars: InstanceVars,
    indices: Vec<usize>,
    fused: Vec<Lin>,
    tiles: Vec<Lin>,
    points: Vec<Lin>,
}

fn index_of(l: &Lin) -> usize {
    *l.coeffs.keys().next().expect("a variable")
}

fn all(fs: Vec<Formula>) -> Formula {
    Formula::And(fs)
}

fn any(fs: Vec<Formula>) -> Formula {
    Formula::Or(fs)
}

fn same(a: &[Lin], b: &[Lin]) -> Formula {
    all(a.iter().zip(b).map(|(x, y)| x.eq(y)).collect())
}

fn differ(a: &[Lin], b: &[Lin]) -> Formula {
    any(a.iter().zip(b).map(|(x, y)| x.ne(y)).collect())
}

/// `a` before `b` lexicographically, dimension `k` descending where `reverse[k]`.
fn lex_before(a: &[Lin], b: &[Lin], reverse: &[bool]) -> Formula {
    any((0..a.len())
        .map(|k| {
            let mut f: Vec<Formula> = (0..k).map(|j| a[j].eq(&b[j])).collect();
            f.push(if reverse[k] {
                a[k].gt(&b[k])
            } else {
                a[k].lt(&b[k])
            });
            all(f)
        })
        .collect())
}

impl Setup<'_> {
    fn param_env(&self, vars: &InstanceVars) -> impl Fn(&str) -> Lin + '_ {
        let params = vars.params.clone();
        move |p: &str| params.get(p).cloned().unwrap_or_default()
    }

    fn extents(&self, q: &mut Query, vars: &InstanceVars) -> Vec<Lin> {
        let env = self.param_env(vars);
        (self.layout.extents.iter())
            .map(|e| e.to_lin(q, &env))
            .collect()
    }

    fn frame_params(&self, vars: &InstanceVars) -> Vec<(String, usize)> {
        (vars.params.iter())
            .filter(|(_, l)| l.as_constant().is_none())
            .map(|(n, l)| (n.clone(), index_of(l)))
            .collect()
    }

    /// A new instance in the domain and where it runs.
    fn placed(&self, q: &mut Query, suffix: &str, params: Option<&InstanceVars>) -> Placed {
        let vars = self.sw.instance(q, suffix, params.map(|p| &p.params));
        let indices = vars.loops.iter().map(index_of).collect();
        let env = self.param_env(&vars);
        let fused: Vec<Lin> = (self.mapping.groups.iter())
            .map(|g| {
                g.iter().fold(Lin::constant(0), |acc, &l| {
                    let b = self.layout.boxes[l].as_ref().expect("a grouped loop");
                    let lower = b.lower.to_lin(q, &env);
                    let offset = vars.loops[l].sub(&lower);
                    let idx = q.floor_div(&offset, b.step);
                    acc.add(&idx.scale(self.layout.weights[l]))
                })
            })
            .collect();
        let tiles: Vec<Lin> = (fused.iter().zip(&self.intr.loops))
            .map(|(f, x)| q.floor_div(f, x.extent))
            .collect();
        let points = (fused.iter().zip(&tiles).zip(&self.intr.loops))
            .map(|((f, t), x)| f.sub(&t.scale(x.extent)))
            .collect();
        Placed {
            vars,
            indices,
            fused,
            tiles,
            points,
        }
    }

    fn outer(&self, p: &Placed) -> Vec<Lin> {
        self.layout
            .outer
            .iter()
            .map(|&l| p.vars.loops[l].clone())
            .collect()
    }

    fn same_call(&self, a: &Placed, b: &Placed) -> Formula {
        all(vec![
            same(&self.outer(a), &self.outer(b)),
            same(&a.tiles, &b.tiles),
        ])
    }

    fn frame(&self, placed: &[&Placed], what: Violation) -> Frame {
        Frame {
            instances: placed.iter().map(|p| p.indices.clone()).collect(),
            params: self.frame_params(&placed[0].vars),
            what,
            ..Frame::default()
        }
    }

    fn probe(&self, condition: Condition, query: Query, frame: Frame) -> Probe {
        Probe {
            condition,
            query,
            frame,
        }
    }

    /// The element operand `o` holds where an instance runs. An intrinsic loop that does
    /// not index the operand stands for its tile's first value: the operand's position
    /// does not say which point of that loop runs.
    fn held(
        &self,
        q: &mut Query,
        o: usize,
        at: &Placed,
        outer: &[Lin],
        vars: &InstanceVars,
    ) -> Vec<Lin> {
        let mine: Vec<usize> = self.intr.loops_of(o).collect();
        let values = (0..self.intr.loops.len()).map(|x| {
            if mine.contains(&x) {
                at.fused[x].clone()
            } else {
                at.tiles[x].scale(self.intr.loops[x].extent)
            }
        });
        let names: BTreeMap<String, Lin> = (self.intr.loops.iter().map(|x| x.name.clone()))
            .zip(values)
            .chain(
                (self
                    .layout
                    .outer
                    .iter()
                    .map(|&l| self.sw.loops[l].var.clone()))
                .zip(outer.iter().cloned()),
            )
            .collect();
        let env = |n: &str| -> Lin {
            names
                .get(n)
                .or_else(|| vars.params.get(n))
                .cloned()
                .unwrap_or_default()
        };
        (self.mapping.operands[o].index.iter())
            .map(|e| e.to_lin(q, &env))
            .collect()
    }

    fn write(&self, q: &mut Query, p: &Placed) -> Vec<Lin> {
        self.sw.element(q, &self.sw.stmt.target, &p.vars)
    }

    /// Pairs of accesses of two instances that conflict and are not the mapped reduction.
    fn conflicts(&self, q: &mut Query, a: &Placed, b: &Placed) -> Formula {
        let target = &self.sw.stmt.target;
        let mut reads = Vec::new();
        collect_reads(&self.sw.stmt.rhs, &mut reads);
        let mut out = Vec::new();
        let wa = self.write(q, a);
        let wb = self.write(q, b);
        for r in reads.into_iter().filter(|r| r.array == target.array) {
            let ra = self.sw.element(q, r, &a.vars);
            let rb = self.sw.element(q, r, &b.vars);
            out.push(same(&wa, &rb));
            out.push(same(&ra, &wb));
        }
        if !self.sw.is_reduction() {
            out.push(same(&wa, &wb));
        }
        any(out)
    }

    /// Every probe of every condition.
    pub fn probes(&self) -> Vec<Probe> {
        let mut out = vec![self.coverage(), self.injective()];
        out.extend(self.operands());
        out.extend(self.kinds());
        out.push(self.padding());
        out.extend(self.capacity());
        out.extend(self.reordering());
        out
    }

    fn coverage(&self) -> Probe {
        let mut q = Query::default();
        let s = self.placed(&mut q, "", None);
        let e = self.extents(&mut q, &s.vars);
        let outside = (s.fused.iter().zip(&e))
            .flat_map(|(l, e)| [l.lt(&Lin::constant(0)), l.ge(e)])
            .collect();
        q.assert(any(outside));
        let frame = self.frame(&[&s], Violation::Uncovered);
        self.probe(Condition::Coverage, q, frame)
    }

    fn injective(&self) -> Probe {
        let mut q = Query::default();
        let s = self.placed(&mut q, "", None);
        let t = self.placed(&mut q, "'", Some(&s.vars));
        q.assert(same(&self.outer(&s), &self.outer(&t)));
        q.assert(same(&s.fused, &t.fused));
        q.assert(differ(&s.vars.loops, &t.vars.loops));
        let frame = self.frame(&[&s, &t], Violation::Collision);
        self.probe(Condition::Injective, q, frame)
    }

    fn operands(&self) -> Vec<Probe> {
        (0..self.intr.operands.len())
            .map(|o| {
                let mut q = Query::default();
                let s = self.placed(&mut q, "", None);
                let access = &self.binding[o];
                if self.mapping.operands[o].tensor != access.array {
                    // any instance shows the operand holds another tensor's elements
                } else {
                    let outer = self.outer(&s);
                    let held = self.held(&mut q, o, &s, &outer, &s.vars);
                    let touched = self.sw.element(&mut q, access, &s.vars);
                    q.assert(differ(&held, &touched));
                }
                let mut frame = self.frame(&[&s], Violation::WrongElement);
                frame.operand = Some(o);
                self.probe(Condition::Operands, q, frame)
            })
            .collect()
    }

    fn kinds(&self) -> Vec<Probe> {
        let out_loops: Vec<usize> = self.intr.loops_of(self.intr.output).collect();
        [Violation::SplitAccumulation, Violation::MixedAccumulation]
            .into_iter()
            .map(|what| {
                let mut q = Query::default();
                let s = self.placed(&mut q, "", None);
                let t = self.placed(&mut q, "'", Some(&s.vars));
                q.assert(self.same_call(&s, &t));
                let (ws, wt) = (self.write(&mut q, &s), self.write(&mut q, &t));
                let ps: Vec<Lin> = out_loops.iter().map(|&x| s.points[x].clone()).collect();
                let pt: Vec<Lin> = out_loops.iter().map(|&x| t.points[x].clone()).collect();
                if what == Violation::SplitAccumulation {
                    q.assert(same(&ws, &wt));
                    q.assert(differ(&ps, &pt));
                } else {
                    q.assert(differ(&ws, &wt));
                    q.assert(same(&ps, &pt));
                }
                let frame = self.frame(&[&s, &t], what);
                self.probe(Condition::Kinds, q, frame)
            })
            .collect()
    }

    fn padding(&self) -> Probe {
        let mut q = Query::default();
        let s = self.placed(&mut q, "", None);
        let e = self.extents(&mut q, &s.vars);
        let mut tiles = Vec::new();
        let mut points = Vec::new();
        let mut fused = Vec::new();
        for (x, l) in self.intr.loops.iter().enumerate() {
            let t = q.fresh(format!("t_{}", l.name));
            let p = q.fresh(format!("p_{}", l.name));
            let n = q.ceil_div(&e[x], l.extent);
            q.assert(t.ge(&Lin::constant(0)));
            q.assert(t.lt(&n));
            q.assert(p.ge(&Lin::constant(0)));
            q.assert(p.lt(&Lin::constant(l.extent)));
            fused.push(t.scale(l.extent).add(&p));
            tiles.push(t);
            points.push(p);
        }
        let beyond = |x: usize| fused[x].ge(&e[x]);
        let within = |x: usize| fused[x].lt(&e[x]);
        q.assert(any((0..fused.len()).map(beyond).collect()));
        q.assert(all(self
            .intr
            .loops_of(self.intr.output)
            .map(within)
            .collect()));
        for &o in &self.intr.annihilators {
            if self.mapping.operands[o].pad == Pad::Identity {
                q.assert(all(self.intr.loops_of(o).map(within).collect()));
            }
        }
        let mut frame = self.frame(&[&s], Violation::PaddingLeaks);
        frame.instances.clear();
        frame.call = Some((
            self.layout.outer.iter().map(|&l| s.indices[l]).collect(),
            tiles.iter().map(index_of).collect(),
            points.iter().map(index_of).collect(),
        ));
        self.probe(Condition::Padding, q, frame)
    }

    fn capacity(&self) -> Vec<Probe> {
        let mut out = Vec::new();
        for (o, slot) in self
            .mapping
            .slots(self.intr, self.target)
            .into_iter()
            .enumerate()
        {
            let op = &self.intr.operands[o];
            let (bytes, align) = (slot.elem_bytes, slot.align);
            let mut q = Query::default();
            let b = q.fresh("buffer");
            q.assert(b.ge(&Lin::constant(0)));
            q.assert(b.lt(&Lin::constant(slot.copies)));
            let mut offset = Lin::constant(slot.base).add(&b.scale(slot.pitch));
            let start = offset.clone();
            let mut pos = Vec::new();
            for (j, (&e, &stride)) in slot.block.iter().zip(&slot.strides).enumerate() {
                let a = q.fresh(format!("a{j}"));
                q.assert(a.ge(&Lin::constant(0)));
                q.assert(a.lt(&Lin::constant(e)));
                offset = offset.add(&a.scale(stride * bytes));
                pos.push(a);
            }
            let capacity = slot.capacity;
            let block = slot.block;
            let misaligned = q.modulo(&start, align);
            let mut bad = vec![
                offset.plus(bytes).gt(&Lin::constant(capacity)),
                misaligned.ne(&Lin::constant(0)),
            ];
            for (d, &e) in op.dims.iter().zip(&block) {
                if let Some(x) = d {
                    if e % self.intr.loops[*x].extent != 0 {
                        bad.push(Formula::truth());
                    }
                }
            }
            q.assert(any(bad));
            let frame = Frame {
                slot: Some((index_of(&b), pos.iter().map(index_of).collect())),
                operand: Some(o),
                what: Violation::Overflow,
                ..Frame::default()
            };
            out.push(self.probe(Condition::Capacity, q, frame));
        }
        out
    }

    fn reordering(&self) -> Vec<Probe> {
        let mut out = Vec::new();
        let inexact = self.sw.reordering_inexact() && !self.allow_reorder;
        // (a) dependences inside a call
        let mut q = Query::default();
        let s = self.placed(&mut q, "", None);
        let t = self.placed(&mut q, "'", Some(&s.vars));
        q.assert(self.same_call(&s, &t));
        q.assert(differ(&s.vars.loops, &t.vars.loops));
        let c = self.conflicts(&mut q, &s, &t);
        q.assert(c);
        out.push(self.probe(
            Condition::Reordering,
            q,
            self.frame(&[&s, &t], Violation::DependenceInCall),
        ));
        // (b) the reduction, reordered inside a call
        if inexact {
            let mut q = Query::default();
            let s = self.placed(&mut q, "", None);
            let t = self.placed(&mut q, "'", Some(&s.vars));
            q.assert(self.same_call(&s, &t));
            q.assert(differ(&s.vars.loops, &t.vars.loops));
            let (ws, wt) = (self.write(&mut q, &s), self.write(&mut q, &t));
            q.assert(same(&ws, &wt));
            out.push(self.probe(
                Condition::Reordering,
                q,
                self.frame(&[&s, &t], Violation::ReductionReordered),
            ));
        }
        // (c) calls ordered against a dependence
        let mut q = Query::default();
        let s = self.placed(&mut q, "", None);
        let t = self.placed(&mut q, "'", Some(&s.vars));
        let reverse: Vec<bool> = self.sw.loops.iter().map(|l| l.reverse).collect();
        q.assert(lex_before(&s.vars.loops, &t.vars.loops, &reverse));
        let mut call_s = self.outer(&s);
        call_s.extend(s.tiles.iter().cloned());
        let mut call_t = self.outer(&t);
        call_t.extend(t.tiles.iter().cloned());
        let mut call_rev: Vec<bool> = self.layout.outer.iter().map(|&l| reverse[l]).collect();
        call_rev.extend(self.intr.loops.iter().map(|_| false));
        q.assert(lex_before(&call_t, &call_s, &call_rev));
        let mut dep = vec![self.conflicts(&mut q, &s, &t)];
        if inexact {
            let (ws, wt) = (self.write(&mut q, &s), self.write(&mut q, &t));
            dep.push(same(&ws, &wt));
        }
        q.assert(any(dep));
        out.push(self.probe(
            Condition::Reordering,
            q,
            self.frame(&[&s, &t], Violation::DependenceAcrossCalls),
        ));
        out
    }
}
