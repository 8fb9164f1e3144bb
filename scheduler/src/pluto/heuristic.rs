//! What makes one Pluto-style scheduler differ from another: a [`Heuristic`] shapes the
//! integer program of each hyperplane and decides where statements are fused and cut.
//! Pluto's own choices ([`PlutoHeuristic`] and the trait's default hooks) go through the
//! same interface as any plug-in's.

use super::row::{RowIlp, View};
use crate::ilp::LinExpr;
use crate::problem::{FusePolicy, ScheduleError};

/// A scheduling heuristic on Pluto's search ([`super::Pluto::with_heuristic`]).
///
/// The search keeps every schedule legal on its own: whatever a heuristic asks, each
/// hyperplane respects the live dependences and stays linearly independent where a
/// statement needs more dimensions, and cuts only order strongly connected components in
/// topological order.
pub trait Heuristic {
    /// The name users select it by (`--scheduler NAME`).
    fn name(&self) -> &'static str;

    /// Shapes the integer program of the next hyperplane of a group of statements: may add
    /// unknowns and constraints to `ilp`, and returns the terms minimised lexicographically
    /// (the first as much as possible, then the second, ...). Each term must be bounded
    /// below on the solutions (any combination of magnitudes, shifts and bounded unknowns
    /// with non-negative weights is). Ties are broken by the unknowns: for each statement,
    /// its coefficients from the innermost iterator outwards, then its shift; then the
    /// heuristic's own unknowns in order.
    fn hyperplane(&self, ilp: &mut RowIlp<'_>) -> Result<Vec<LinExpr>, ScheduleError>;

    /// Before the first hyperplane: whether to cut (distribute) between component `k - 1`
    /// and component `k` of `components` (`k >= 1`). By default, Pluto's fusion policy
    /// ([`View::fuse`]): `max` never cuts, `none` always, `smart` where the components'
    /// loop depths differ. The search also cuts a group before it exceeds
    /// [`super::Pluto::max_fused_statements`] statements.
    fn fusion_cut(&self, components: &Components<'_>, k: usize) -> Result<bool, ScheduleError> {
        Ok(match components.view().fuse() {
            FusePolicy::Max => false,
            FusePolicy::None => true,
            FusePolicy::Smart => components.loop_depth(k) != components.loop_depth(k - 1),
        })
    }

    /// When no band can go on and no hyperplane starts a new one: the group of each
    /// component (`0` for the first, each the same as the previous one or one more), a
    /// scalar row ordering the groups. By default, Pluto's: greedily, a component joins the
    /// current group while the group still has a hyperplane. If the cut orders no live
    /// dependence, the search separates every component; if that orders none either, it
    /// adds a row that carries one.
    fn forced_cut(&self, components: &Components<'_>) -> Result<Vec<usize>, ScheduleError> {
        let mut groups: Vec<usize> = Vec::with_capacity(components.sccs().len());
        let mut current: Vec<usize> = Vec::new();
        for scc in components.sccs() {
            let candidate: Vec<usize> = current.iter().chain(scc).copied().collect();
            let fused = current.is_empty() || components.has_hyperplane(&candidate)?;
            if !fused {
                current.clear();
            }
            current.extend(scc);
            groups.push(groups.last().map_or(0, |&g| g + usize::from(!fused)));
        }
        Ok(groups)
    }
}

/// Pluto's objective: the bounding function `u . N + w` first ([`bounding_function`]:
/// small dependence distances, `0` being a parallel loop), then the sum of the
/// coefficients' magnitudes (simple hyperplanes); Pluto's fusion and cuts.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlutoHeuristic;

impl Heuristic for PlutoHeuristic {
    fn name(&self) -> &'static str {
        "pluto"
    }

    fn hyperplane(&self, ilp: &mut RowIlp<'_>) -> Result<Vec<LinExpr>, ScheduleError> {
        let mut terms = bounding_function(ilp)?;
        terms.push(ilp.total_magnitude());
        Ok(terms)
    }
}

/// Pluto's bounding function: new unknowns `u_p >= 0` (one per parameter) and `w >= 0`
/// with `u . N + w - (phi_T(t) - phi_S(s)) >= 0` on every dependence of the group (under
/// `--rar`, on its input dependences and the non-transitive others instead:
/// [`RowIlp::reuse_dependences`], reads of one element brought close as Pluto's `--rar`
/// does); returns
/// `[u_0, .., u_P-1, w]`, which minimised in that order prefer hyperplanes with small
/// dependence distances (`0`: a parallel loop; a constant: tilable with good reuse).
pub fn bounding_function(ilp: &mut RowIlp<'_>) -> Result<Vec<LinExpr>, ScheduleError> {
    let u: Vec<LinExpr> = (0..ilp.n_params()).map(|_| ilp.new_var(0, None)).collect();
    let w = ilp.new_var(0, None);
    for &dep in ilp.reuse_dependences() {
        let distance = ilp.distance(dep);
        let negated = |e: &[LinExpr]| e.iter().map(|x| LinExpr::default().minus(x)).collect();
        let bound = crate::farkas::Form {
            constant: w.clone().minus(&distance.constant),
            params: u.clone(),
            src: negated(&distance.src),
            dst: negated(&distance.dst),
        };
        ilp.require(dep, &bound)?;
    }
    Ok(u.into_iter().chain([w]).collect())
}

/// The strongly connected components of the live dependence graph, in topological order
/// (ties: textual order), as the fusion and cut hooks see them.
pub struct Components<'a> {
    pub(super) view: View<'a>,
    pub(super) sccs: &'a [Vec<usize>],
    pub(super) probe: &'a dyn Fn(&[usize]) -> Result<bool, ScheduleError>,
}

impl<'a> Components<'a> {
    /// The search so far.
    pub fn view(&self) -> View<'a> {
        self.view
    }
    /// The components: statement indices, in topological order.
    pub fn sccs(&self) -> &'a [Vec<usize>] {
        self.sccs
    }
    /// The loop depth of component `k`: the most iterators among its statements.
    pub fn loop_depth(&self, k: usize) -> usize {
        (self.sccs[k].iter())
            .map(|&s| self.view.program.statements[s].iterators.len())
            .max()
            .unwrap_or(0)
    }
    /// Whether the statements `stmts`, fused, have a next hyperplane under the heuristic
    /// (one integer program per group of them connected by dependences; memoised until the
    /// next row).
    pub fn has_hyperplane(&self, stmts: &[usize]) -> Result<bool, ScheduleError> {
        (self.probe)(stmts)
    }
}
