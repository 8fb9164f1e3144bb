//! The software side of a mapping: one statement of a kernel, its loops, domain and
//! accesses, as the conditions need them.
//!
//! Parameters are either all fixed (`Sizes::Concrete`, the shapes a run uses) or those not
//! fixed are left symbolic (`Sizes::Symbolic`: query variables bounded below by 1 and by
//! the kernel's `where` constraints), in which case a proof holds for every such size.

use super::formula::{Formula, Lin, Query};
use super::qexpr::QExpr;
use frontend::ir::{
    Access, AffExpr, AssignOp, Cond, ElemType, Kernel, Loop, Stmt, StmtContext, Var,
};
use std::collections::BTreeMap;

/// How the kernel's size parameters are treated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sizes {
    /// Every parameter has this value.
    Concrete(BTreeMap<String, i64>),
    /// The parameters listed have these values; every other one is a variable, so proofs
    /// hold for all its values allowed.
    Symbolic(BTreeMap<String, i64>),
}

impl Sizes {
    /// The parameters with a fixed value.
    pub fn fixed(&self) -> &BTreeMap<String, i64> {
        match self {
            Sizes::Concrete(v) | Sizes::Symbolic(v) => v,
        }
    }
    /// A parameter's value, if fixed.
    pub fn value(&self, name: &str) -> Option<i64> {
        self.fixed().get(name).copied()
    }
}

/// Whether a loop carries a statement's output to different elements or sums into one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoopKind {
    /// It indexes the element written.
    Spatial,
    /// It does not: its iterations update the same element.
    Reduction,
}

impl LoopKind {
    /// `spatial` or `reduction`.
    pub fn name(self) -> &'static str {
        match self {
            LoopKind::Spatial => "spatial",
            LoopKind::Reduction => "reduction",
        }
    }
}

/// The statement being mapped.
#[derive(Clone, Debug)]
pub struct Software<'k> {
    /// The kernel it belongs to.
    pub kernel: &'k Kernel,
    /// The statement.
    pub stmt: &'k Stmt,
    /// Its enclosing loops, outermost first.
    pub loops: Vec<&'k Loop>,
    /// The guards around it.
    pub guards: Vec<&'k Cond>,
    /// How parameters are treated.
    pub sizes: Sizes,
}

/// A software loop's values and extent, when its bounds mention no other loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Box1 {
    /// First value.
    pub lower: QExpr,
    /// Step between values.
    pub step: i64,
    /// Number of values.
    pub extent: QExpr,
}

/// Values of a query's variables standing for one statement instance and its parameters.
#[derive(Clone, Debug)]
pub struct InstanceVars {
    /// One term per loop, outermost first.
    pub loops: Vec<Lin>,
    /// Parameter terms by name.
    pub params: BTreeMap<String, Lin>,
}

impl<'k> Software<'k> {
    /// The statement `ctx` of `kernel`.
    pub fn new(kernel: &'k Kernel, ctx: &StmtContext<'k>, sizes: Sizes) -> Software<'k> {
        let guards = (ctx.enclosing.iter())
            .filter_map(|e| match e {
                frontend::ir::Enclosing::If(i) => Some(&i.cond),
                frontend::ir::Enclosing::Loop(_) => None,
            })
            .collect();
        Software {
            kernel,
            stmt: ctx.stmt,
            loops: ctx.loops().collect(),
            guards,
            sizes,
        }
    }

    /// Position of a loop by name.
    pub fn loop_index(&self, name: &str) -> Option<usize> {
        self.loops.iter().position(|l| l.var == name)
    }

    /// The element type written.
    pub fn target_type(&self) -> ElemType {
        self.kernel.array(self.stmt.target.array).elem
    }

    /// Whether the statement accumulates with an associative, commutative operator.
    pub fn is_reduction(&self) -> bool {
        self.stmt.op.is_reduction()
    }

    /// Whether reordering its updates can change the result (a floating-point sum or
    /// product; `max`/`min` are exact).
    pub fn reordering_inexact(&self) -> bool {
        matches!(self.stmt.op, AssignOp::Add | AssignOp::Mul | AssignOp::Sub)
            && self.target_type().is_float()
    }

    /// Every loop's kind with respect to the element written.
    pub fn kinds(&self) -> Vec<LoopKind> {
        self.loops
            .iter()
            .map(|l| {
                let used = (self.stmt.target.indices.iter()).any(|e| mentions(e, &l.var));
                if used {
                    LoopKind::Spatial
                } else {
                    LoopKind::Reduction
                }
            })
            .collect()
    }

    /// A parameter as an expression (its value, or itself when symbolic).
    fn param(&self, name: &str) -> QExpr {
        self.sizes
            .value(name)
            .map_or_else(|| QExpr::var(name), QExpr::Const)
    }

    /// An IR expression over parameters only, or `None` if it mentions a loop or min/max.
    fn param_expr(&self, e: &AffExpr) -> Option<QExpr> {
        if loops_in(e).next().is_some() {
            return None;
        }
        QExpr::from_aff(e, &|v| self.param(v.name()))
    }

    /// The values of loop `k` when its bounds mention parameters only and no guard mentions
    /// it; `None` otherwise (such a loop cannot be linearised onto an intrinsic loop).
    pub fn rectangular(&self, k: usize) -> Option<Box1> {
        let l = self.loops[k];
        if self.guards.iter().any(|g| cond_mentions(g, &l.var)) {
            return None;
        }
        let other_bounds_mention = self
            .loops
            .iter()
            .any(|o| o.var != l.var && (mentions(&o.lower, &l.var) || mentions(&o.upper, &l.var)));
        if other_bounds_mention {
            return None;
        }
        let lower = self.param_expr(&l.lower)?;
        let upper = self.param_expr(&l.upper)?;
        let span = QExpr::sum(upper, QExpr::scale(-1, lower.clone()));
        let extent = QExpr::floor_div(QExpr::sum(span, QExpr::Const(l.step - 1)), l.step);
        Some(Box1 {
            lower,
            step: l.step,
            extent,
        })
    }

    /// New variables for one instance (named with `suffix`) and the parameters, with the
    /// facts that put the instance in the domain. `params` are shared between instances of
    /// one query: pass the first instance's.
    pub fn instance(
        &self,
        q: &mut Query,
        suffix: &str,
        params: Option<&BTreeMap<String, Lin>>,
    ) -> InstanceVars {
        let params = match params {
            Some(p) => p.clone(),
            None => self.param_vars(q),
        };
        let loops: Vec<Lin> = (self.loops.iter())
            .map(|l| q.fresh(format!("{}{suffix}", l.var)))
            .collect();
        let vars = InstanceVars { loops, params };
        for (k, l) in self.loops.iter().enumerate() {
            let v = vars.loops[k].clone();
            let lo = self.aff(q, &l.lower, &vars);
            let hi = self.aff(q, &l.upper, &vars);
            q.assert(v.ge(&lo));
            q.assert(v.lt(&hi));
            if l.step > 1 {
                let m = q.modulo(&v.sub(&lo), l.step);
                q.assert(m.eq(&Lin::constant(0)));
            }
        }
        for g in &self.guards {
            let f = self.cond(q, g, &vars);
            q.assert(f);
        }
        vars
    }

    /// Parameter variables (symbolic sizes) or constants (concrete), with their facts.
    fn param_vars(&self, q: &mut Query) -> BTreeMap<String, Lin> {
        let mut out = BTreeMap::new();
        for p in &self.kernel.params {
            let term = match (&self.sizes, self.sizes.value(&p.name)) {
                (_, Some(v)) => Lin::constant(v),
                (Sizes::Concrete(_), None) => Lin::constant(0),
                (Sizes::Symbolic(_), None) => {
                    let v = q.fresh(p.name.clone());
                    q.assert(v.ge(&Lin::constant(1)));
                    v
                }
            };
            out.insert(p.name.clone(), term);
        }
        if matches!(self.sizes, Sizes::Symbolic(_)) {
            let vars = InstanceVars {
                loops: Vec::new(),
                params: out.clone(),
            };
            for c in &self.kernel.param_constraints {
                let f = self.cond(q, c, &vars);
                q.assert(f);
            }
        }
        out
    }

    /// An IR expression as a term over an instance's variables.
    pub fn aff(&self, q: &mut Query, e: &AffExpr, vars: &InstanceVars) -> Lin {
        match e {
            AffExpr::Const(c) => Lin::constant(*c),
            AffExpr::Var(Var::Loop(name)) => match self.loop_index(name) {
                Some(k) => vars.loops[k].clone(),
                None => Lin::constant(0),
            },
            AffExpr::Var(Var::Param(name)) => vars.params.get(name).cloned().unwrap_or_default(),
            AffExpr::Add(a, b) => self.aff(q, a, vars).add(&self.aff(q, b, vars)),
            AffExpr::Sub(a, b) => self.aff(q, a, vars).sub(&self.aff(q, b, vars)),
            AffExpr::Neg(a) => self.aff(q, a, vars).scale(-1),
            AffExpr::Mul(c, a) => self.aff(q, a, vars).scale(*c),
            AffExpr::FloorDiv(a, c) => {
                let t = self.aff(q, a, vars);
                q.floor_div(&t, *c)
            }
            AffExpr::CeilDiv(a, c) => {
                let t = self.aff(q, a, vars);
                q.ceil_div(&t, *c)
            }
            AffExpr::Mod(a, c) => {
                let t = self.aff(q, a, vars);
                q.modulo(&t, *c)
            }
            AffExpr::Min(a, b) => {
                let (x, y) = (self.aff(q, a, vars), self.aff(q, b, vars));
                q.min(&x, &y)
            }
            AffExpr::Max(a, b) => {
                let (x, y) = (self.aff(q, a, vars), self.aff(q, b, vars));
                q.max(&x, &y)
            }
        }
    }

    fn cond(&self, q: &mut Query, c: &Cond, vars: &InstanceVars) -> Formula {
        match c {
            Cond::Cmp(a, op, b) => {
                let (x, y) = (self.aff(q, a, vars), self.aff(q, b, vars));
                use frontend::ir::CmpOp::*;
                match op {
                    Lt => x.lt(&y),
                    Le => x.le(&y),
                    Gt => x.gt(&y),
                    Ge => x.ge(&y),
                    Eq => x.eq(&y),
                    Ne => x.ne(&y),
                }
            }
            Cond::And(a, b) => Formula::And(vec![self.cond(q, a, vars), self.cond(q, b, vars)]),
            Cond::Or(a, b) => Formula::Or(vec![self.cond(q, a, vars), self.cond(q, b, vars)]),
        }
    }

    /// The element an access touches at an instance, one term per dimension.
    pub fn element(&self, q: &mut Query, access: &Access, vars: &InstanceVars) -> Vec<Lin> {
        (access.indices.iter())
            .map(|e| self.aff(q, e, vars))
            .collect()
    }

    /// The element an access touches at an instance given by loop values (Rust, for
    /// replaying counterexamples); parameters from `sizes` (concrete) or `params`.
    pub fn element_at(
        &self,
        access: &Access,
        loops: &[i64],
        params: &BTreeMap<String, i64>,
    ) -> Vec<i64> {
        (access.indices.iter())
            .map(|e| self.eval_aff(e, loops, params))
            .collect()
    }

    /// An IR expression's value at given loop and parameter values.
    pub fn eval_aff(&self, e: &AffExpr, loops: &[i64], params: &BTreeMap<String, i64>) -> i64 {
        let ev = |e: &AffExpr| self.eval_aff(e, loops, params);
        match e {
            AffExpr::Const(c) => *c,
            AffExpr::Var(Var::Loop(n)) => self.loop_index(n).map_or(0, |k| loops[k]),
            AffExpr::Var(Var::Param(n)) => params.get(n).copied().unwrap_or(0),
            AffExpr::Add(a, b) => ev(a) + ev(b),
            AffExpr::Sub(a, b) => ev(a) - ev(b),
            AffExpr::Neg(a) => -ev(a),
            AffExpr::Mul(c, a) => c * ev(a),
            AffExpr::FloorDiv(a, c) => ev(a).div_euclid(*c),
            AffExpr::CeilDiv(a, c) => (ev(a) + c - 1).div_euclid(*c),
            AffExpr::Mod(a, c) => ev(a).rem_euclid(*c),
            AffExpr::Min(a, b) => ev(a).min(ev(b)),
            AffExpr::Max(a, b) => ev(a).max(ev(b)),
        }
    }

    /// Whether loop values (and parameters) are an instance of the statement.
    pub fn contains(&self, loops: &[i64], params: &BTreeMap<String, i64>) -> bool {
        let in_loops = self.loops.iter().enumerate().all(|(k, l)| {
            let lo = self.eval_aff(&l.lower, loops, params);
            let hi = self.eval_aff(&l.upper, loops, params);
            loops[k] >= lo && loops[k] < hi && (loops[k] - lo) % l.step == 0
        });
        in_loops && self.guards.iter().all(|g| self.eval_cond(g, loops, params))
    }

    fn eval_cond(&self, c: &Cond, loops: &[i64], params: &BTreeMap<String, i64>) -> bool {
        match c {
            Cond::Cmp(a, op, b) => {
                let (x, y) = (
                    self.eval_aff(a, loops, params),
                    self.eval_aff(b, loops, params),
                );
                use frontend::ir::CmpOp::*;
                match op {
                    Lt => x < y,
                    Le => x <= y,
                    Gt => x > y,
                    Ge => x >= y,
                    Eq => x == y,
                    Ne => x != y,
                }
            }
            Cond::And(a, b) => self.eval_cond(a, loops, params) && self.eval_cond(b, loops, params),
            Cond::Or(a, b) => self.eval_cond(a, loops, params) || self.eval_cond(b, loops, params),
        }
    }
}

/// Whether an expression mentions loop `var`.
pub fn mentions(e: &AffExpr, var: &str) -> bool {
    loops_in(e).any(|v| v == var)
}

fn cond_mentions(c: &Cond, var: &str) -> bool {
    match c {
        Cond::Cmp(a, _, b) => mentions(a, var) || mentions(b, var),
        Cond::And(a, b) | Cond::Or(a, b) => cond_mentions(a, var) || cond_mentions(b, var),
    }
}

/// The loop variables an expression mentions.
pub fn loops_in(e: &AffExpr) -> impl Iterator<Item = &str> {
    let mut out = Vec::new();
    fn go<'a>(e: &'a AffExpr, out: &mut Vec<&'a str>) {
        match e {
            AffExpr::Const(_) | AffExpr::Var(Var::Param(_)) => {}
            AffExpr::Var(Var::Loop(n)) => out.push(n),
            AffExpr::Neg(a)
            | AffExpr::Mul(_, a)
            | AffExpr::FloorDiv(a, _)
            | AffExpr::CeilDiv(a, _)
            | AffExpr::Mod(a, _) => go(a, out),
            AffExpr::Add(a, b) | AffExpr::Sub(a, b) | AffExpr::Min(a, b) | AffExpr::Max(a, b) => {
                go(a, out);
                go(b, out)
            }
        }
    }
    go(e, &mut out);
    out.into_iter()
}

/// The coefficient of each loop in an index, when it is affine (no division or modulo of a
/// loop) and its coefficients fit `i64`; `None` otherwise. (`frontend`'s `linear_form`,
/// for comparing extents, refuses any division; here a division of parameters only is a
/// constant like any other.)
pub fn linear_coefficients(e: &AffExpr) -> Option<BTreeMap<String, i64>> {
    let mut out = BTreeMap::new();
    fn go(e: &AffExpr, k: i64, out: &mut BTreeMap<String, i64>) -> Option<()> {
        match e {
            AffExpr::Const(_) | AffExpr::Var(Var::Param(_)) => Some(()),
            AffExpr::Var(Var::Loop(n)) => {
                let e = out.entry(n.clone()).or_insert(0);
                *e = e.checked_add(k)?;
                Some(())
            }
            AffExpr::Add(a, b) => {
                go(a, k, out)?;
                go(b, k, out)
            }
            AffExpr::Sub(a, b) => {
                go(a, k, out)?;
                go(b, k.checked_neg()?, out)
            }
            AffExpr::Neg(a) => go(a, k.checked_neg()?, out),
            AffExpr::Mul(c, a) => go(a, k.checked_mul(*c)?, out),
            other => loops_in(other).next().is_none().then_some(()),
        }
    }
    go(e, 1, &mut out)?;
    out.retain(|_, c| *c != 0);
    Some(out)
}

/// The reads of an expression.
pub fn collect_reads<'e>(e: &'e frontend::ir::Expr, out: &mut Vec<&'e Access>) {
    use frontend::ir::ExprKind;
    match &e.kind {
        ExprKind::Read(a) => out.push(a),
        ExprKind::Literal(_) | ExprKind::Index(_) => {}
        ExprKind::Neg(a) | ExprKind::Not(a) | ExprKind::Cast(a) => collect_reads(a, out),
        ExprKind::Binary(_, a, b) | ExprKind::Compare(_, a, b) | ExprKind::Logic(_, a, b) => {
            collect_reads(a, out);
            collect_reads(b, out)
        }
        ExprKind::Select(c, a, b) => {
            collect_reads(c, out);
            collect_reads(a, out);
            collect_reads(b, out)
        }
        ExprKind::Call(_, args) => args.iter().for_each(|a| collect_reads(a, out)),
    }
}
