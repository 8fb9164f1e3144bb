//! Which written arrays may be expanded, and along which loops.
//!
//! The statements that access an array split into *webs*: sets of statements connected by
//! the value-based flow through the array. A web whose flow never crosses an iteration of the
//! loops all its statements share (its *common loops*), and none of whose reads sees a value
//! from before the region, may give each iteration of those loops an element of its own: the
//! false (write-after-read and write-after-write) dependences between iterations go, the
//! flow stays.

use super::bound;
use frontend::ir::{AffExpr, ArrayId, CmpOp, Cond, Loop, Role, StmtContext, Var};
use poly::deps::value_flow;
use poly::isl::{IslResult, Map};
use poly::model::isl_text::{aff, isl_name};
use poly::model::{param_prefix, rhs_reads, Program};
use std::collections::BTreeSet;

/// One web of an array, to be given an array of its own with leading dimensions for its
/// common loops.
#[derive(Clone, Debug)]
pub struct Web {
    /// The names of its statements.
    pub statements: BTreeSet<String>,
    /// The common loops' variables, outermost first.
    pub along: Vec<String>,
    /// For each common loop, the index of its iteration in the new dimension (`i - lo`).
    pub index: Vec<AffExpr>,
    /// For each common loop, the extent of the new dimension, in the parameters.
    pub extents: Vec<AffExpr>,
}

/// The final contents of an array the caller reads after the region, when its one web is
/// expanded: every iteration of the common loops writes the same box of elements, so the
/// last one's copy holds their final values.
#[derive(Clone, Debug)]
pub struct CopyOut {
    /// The box written, as the lower (inclusive) and upper (exclusive) bound of each index.
    pub elements: Vec<(AffExpr, AffExpr)>,
    /// The index of the last iteration in each new dimension.
    pub last: Vec<AffExpr>,
    /// When the common loops run at all.
    pub nonempty: Cond,
}

/// How one array is expanded.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The array.
    pub array: ArrayId,
    /// Its webs that are expanded.
    pub webs: Vec<Web>,
    /// For an array read after the region, how its final contents are restored.
    pub copy_out: Option<CopyOut>,
}

/// The expansions that apply to `program`: the arrays in `dead_after` (and the region's own
/// temporaries) are not read after the region.
pub fn plans(program: &Program, dead_after: &[ArrayId]) -> IslResult<Vec<Plan>> {
    let contexts = program.kernel.statements();
    let most_dims = (program.kernel.arrays.iter())
        .map(|a| a.dims.len())
        .max()
        .unwrap_or(0);
    let flow = {
        let _analysis = program.ctx.analysis();
        Flow::of(program)?
    };
    let mut out = Vec::new();
    for a in 0..program.kernel.arrays.len() {
        // Each array is an analysis of its own; one that exceeds isl's budget is left as
        // it is (expansion is an optimisation, never needed).
        let _analysis = program.ctx.analysis();
        let id = ArrayId(a);
        if let Ok(Some(plan)) = plan(program, &flow, &contexts, id, dead_after, most_dims) {
            out.push(plan);
        }
    }
    Ok(out)
}

/// The value-based flow of the whole program, one relation per pair of statements, and the
/// reads no write of the program reaches. A statement writes one array, so the flow from
/// it is the flow through that array.
struct Flow {
    /// `(source tuple, sink tuple, { S[i] -> T[j] })`.
    pairs: Vec<(String, String, Map)>,
    /// The array (isl tuple) of each read that sees the value from before the program.
    exposed: BTreeSet<String>,
}

impl Flow {
    fn of(program: &Program) -> IslResult<Flow> {
        let (flow, exposed) = value_flow(program, &program.reads()?, &program.writes()?)?;
        let mut pairs = Vec::new();
        for m in flow.maps()? {
            if let (Some(from), Some(to)) = (m.domain()?.tuple_name(), m.range()?.tuple_name()) {
                pairs.push((from, to, m));
            }
        }
        let exposed = (exposed.maps()?.iter())
            .filter_map(|m| m.range().ok()?.tuple_name())
            .collect();
        Ok(Flow { pairs, exposed })
    }

    /// The flow through `array`, from the statements (by tuple) that write it.
    fn through<'f>(
        &'f self,
        writers: &'f BTreeSet<String>,
    ) -> impl Iterator<Item = &'f (String, String, Map)> + 'f {
        self.pairs
            .iter()
            .filter(move |(from, _, _)| writers.contains(from))
    }
}

/// How `array` is expanded, if it is.
fn plan(
    program: &Program,
    flow: &Flow,
    contexts: &[StmtContext],
    id: ArrayId,
    dead_after: &[ArrayId],
    most_dims: usize,
) -> IslResult<Option<Plan>> {
    let array = program.kernel.array(id);
    let live = array.role != Role::Temp && !dead_after.contains(&id);
    // An array read after the region has one web, all its statements: their common loops
    // decide, before any isl work (adi's arrays share only the time loop, and a copy per
    // time step would add a dimension).
    if live {
        let members: Vec<&StmtContext> = (contexts.iter()).filter(|c| touches(c, id)).collect();
        let depth = common_loops(&members).len();
        if depth == 0 || depth + array.dims.len() > most_dims {
            return Ok(None);
        }
    }
    let Some(webs) = webs_of(program, flow, id)? else {
        return Ok(None);
    };
    if live && webs.len() != 1 {
        return Ok(None);
    }
    let mut plan = Plan {
        array: id,
        webs: Vec::new(),
        copy_out: None,
    };
    for web in webs {
        let members: Vec<&StmtContext> = (contexts.iter())
            .filter(|c| web.contains(&c.stmt.name))
            .collect();
        let loops = common_loops(&members);
        // Expansion never adds a dimension beyond the kernel's largest array, so the
        // memory it takes stays of the order the kernel already needs.
        if loops.is_empty() || loops.len() + array.dims.len() > most_dims {
            continue;
        }
        if !flow_stays_within(program, flow, id, &web, loops.len())? {
            continue;
        }
        let Some(ranges) = (0..loops.len())
            .map(|k| bound::range(&loops, k))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        if live {
            match copy_out(program, id, &members, &loops)? {
                Some(c) => plan.copy_out = Some(c),
                None => continue,
            }
        }
        plan.webs.push(Web {
            statements: web,
            along: loops.iter().map(|l| l.var.clone()).collect(),
            index: (loops.iter().zip(&ranges))
                .map(|(l, (lo, _))| {
                    AffExpr::Sub(
                        Box::new(AffExpr::Var(Var::Loop(l.var.clone()))),
                        Box::new(lo.clone()),
                    )
                })
                .collect(),
            extents: ranges.into_iter().map(|(_, e)| e).collect(),
        });
    }
    Ok(Some(plan).filter(|p| !p.webs.is_empty()))
}

/// Whether the statement of `c` reads or writes `array`.
fn touches(c: &StmtContext, array: ArrayId) -> bool {
    c.stmt.target.array == array || rhs_reads(c.stmt).iter().any(|a| a.array == array)
}

/// The webs of `array`'s statements, or `None` when the array is not written or some read
/// of it may see a value from before the region.
fn webs_of(
    program: &Program,
    flow: &Flow,
    array: ArrayId,
) -> IslResult<Option<Vec<BTreeSet<String>>>> {
    let writers = writers(program, array);
    let name = isl_name(&program.kernel.array(array).name);
    if writers.is_empty() || flow.exposed.contains(&name) {
        return Ok(None);
    }
    let mut webs = Webs::default();
    for s in &program.statements {
        if s.write.array == array || s.reads.iter().any(|r| r.array == array) {
            webs.add(&s.tuple);
        }
    }
    for (from, to, _) in flow.through(&writers) {
        webs.join(from, to);
    }
    let by_tuple = |t: &str| program.statement_by_tuple(t).map(|s| s.name.clone());
    Ok(Some(
        webs.components()
            .into_iter()
            .map(|c| c.iter().filter_map(|t| by_tuple(t)).collect())
            .collect(),
    ))
}

/// The tuples of the statements that write `array`.
fn writers(program: &Program, array: ArrayId) -> BTreeSet<String> {
    (program.statements.iter())
        .filter(|s| s.write.array == array)
        .map(|s| s.tuple.clone())
        .collect()
}

/// Statements joined into connected components (a small union-find by tuple name).
#[derive(Default)]
struct Webs {
    names: Vec<String>,
    parent: Vec<usize>,
}

impl Webs {
    fn add(&mut self, name: &str) -> usize {
        if let Some(k) = self.names.iter().position(|n| n == name) {
            return k;
        }
        self.names.push(name.to_owned());
        self.parent.push(self.parent.len());
        self.parent.len() - 1
    }
    fn root(&self, mut k: usize) -> usize {
        while self.parent[k] != k {
            k = self.parent[k];
        }
        k
    }
    fn join(&mut self, a: &str, b: &str) {
        let (a, b) = (self.add(a), self.add(b));
        let (ra, rb) = (self.root(a), self.root(b));
        self.parent[ra] = rb;
    }
    fn components(&self) -> Vec<Vec<String>> {
        let mut out: Vec<(usize, Vec<String>)> = Vec::new();
        for (k, name) in self.names.iter().enumerate() {
            let r = self.root(k);
            match out.iter_mut().find(|(root, _)| *root == r) {
                Some((_, c)) => c.push(name.clone()),
                None => out.push((r, vec![name.clone()])),
            }
        }
        out.into_iter().map(|(_, c)| c).collect()
    }
}

/// The loops around every statement of `members`, outermost first.
fn common_loops<'k>(members: &[&StmtContext<'k>]) -> Vec<&'k Loop> {
    let Some(first) = members.first() else {
        return Vec::new();
    };
    let mut common: Vec<&Loop> = first.loops().collect();
    for m in &members[1..] {
        let shared = (common.iter().zip(m.loops()))
            .take_while(|(a, b)| std::ptr::eq(**a, *b))
            .count();
        common.truncate(shared);
    }
    common
}

/// Whether every flow through `array` between the statements of `web` stays within one
/// iteration of their `depth` common loops.
fn flow_stays_within(
    program: &Program,
    flow: &Flow,
    array: ArrayId,
    web: &BTreeSet<String>,
    depth: usize,
) -> IslResult<bool> {
    let writers = writers(program, array);
    let tuples: BTreeSet<&str> = (program.statements.iter())
        .filter(|s| web.contains(&s.name))
        .map(|s| s.tuple.as_str())
        .collect();
    let prefix = param_prefix(&program.kernel);
    let within_web = |(from, to, _): &&(String, String, Map)| {
        tuples.contains(from.as_str()) && tuples.contains(to.as_str())
    };
    for (f, t, m) in flow.through(&writers).filter(within_web) {
        let (from, to) = (m.domain()?, m.range()?);
        let a: Vec<String> = (0..from.n_dims()?).map(|k| format!("a{k}")).collect();
        let b: Vec<String> = (0..to.n_dims()?).map(|k| format!("b{k}")).collect();
        let same: Vec<String> = (0..depth).map(|k| format!("a{k} = b{k}")).collect();
        let within = program.ctx.map(&format!(
            "{prefix}{{ {f}[{}] -> {t}[{}] : {} }}",
            a.join(", "),
            b.join(", "),
            same.join(" and ")
        ))?;
        if !m.is_subset(&within)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// How the final contents of `array` are restored after its web (the statements
/// `members`) is expanded along `loops`, or `None` when they cannot be: the loops must have
/// bounds in the parameters alone and every iteration of them must write the same box of
/// elements, the one a member writes with a loop of such bounds per index.
fn copy_out(
    program: &Program,
    array: ArrayId,
    members: &[&StmtContext],
    loops: &[&Loop],
) -> IslResult<Option<CopyOut>> {
    let simple =
        |l: &Loop| l.step == 1 && bound::is_parametric(&l.lower) && bound::is_parametric(&l.upper);
    if !loops.iter().all(|l| simple(l)) {
        return Ok(None);
    }
    let Some(elements) = members.iter().find_map(|m| written_box(m, array, &simple)) else {
        return Ok(None);
    };
    let web: BTreeSet<&str> = members.iter().map(|m| m.stmt.name.as_str()).collect();
    let prefix = param_prefix(&program.kernel);
    let kernel = &program.kernel;
    let decl = kernel.array(array);
    let name = isl_name(&decl.name);
    let c: Vec<String> = (0..loops.len()).map(|k| format!("c{k}")).collect();
    let e: Vec<String> = (0..decl.dims.len()).map(|k| format!("e{k}")).collect();
    let mut bounds: Vec<String> = (loops.iter().zip(&c))
        .map(|(l, c)| format!("{} <= {c} < {}", aff(&l.lower), aff(&l.upper)))
        .collect();
    bounds.extend(
        (elements.iter().zip(&e)).map(|((lo, hi), e)| format!("{} <= {e} < {}", aff(lo), aff(hi))),
    );
    let whole = program.ctx.union_map(&format!(
        "{prefix}{{ pc_iter[{}] -> {name}[{}] : {} }}",
        c.join(", "),
        e.join(", "),
        bounds.join(" and ")
    ))?;
    let mut written = program.ctx.empty_union_map()?;
    for s in (program.statements.iter())
        .filter(|s| web.contains(s.name.as_str()) && s.write.array == array)
    {
        let dims: Vec<String> = (0..s.iterators.len()).map(|k| format!("a{k}")).collect();
        let project = program.ctx.union_map(&format!(
            "{{ {}[{}] -> pc_iter[{}] }}",
            s.tuple,
            dims.join(", "),
            dims[..loops.len()].join(", ")
        ))?;
        let w = s.write.relation.to_union()?;
        written = written.union(&w.apply_domain(&project)?)?;
    }
    let context = &program.context;
    let (written, whole) = (
        written.intersect_params(context)?,
        whole.intersect_params(context)?,
    );
    if !written.is_equal(&whole)? {
        return Ok(None);
    }
    let last = loops
        .iter()
        .map(|l| {
            let one = Box::new(AffExpr::Const(1));
            let hi = AffExpr::Sub(Box::new(l.upper.clone()), one);
            AffExpr::Sub(Box::new(hi), Box::new(l.lower.clone()))
        })
        .collect();
    let nonempty = (loops.iter())
        .map(|l| Cond::Cmp(l.lower.clone(), CmpOp::Lt, l.upper.clone()))
        .reduce(|a, b| Cond::And(Box::new(a), Box::new(b)));
    Ok(nonempty.map(|nonempty| CopyOut {
        elements,
        last,
        nonempty,
    }))
}

/// The box of elements of `array` that `member` writes, when each index of its target is
/// the variable of an enclosing loop with `simple` bounds: that loop's bounds per index.
fn written_box(
    member: &StmtContext,
    array: ArrayId,
    simple: &impl Fn(&Loop) -> bool,
) -> Option<Vec<(AffExpr, AffExpr)>> {
    let target = &member.stmt.target;
    if target.array != array {
        return None;
    }
    (target.indices.iter())
        .map(|index| {
            let AffExpr::Var(Var::Loop(v)) = index else {
                return None;
            };
            let l = member.loops().find(|l| &l.var == v).filter(|l| simple(l))?;
            Some((l.lower.clone(), l.upper.clone()))
        })
        .collect()
}
