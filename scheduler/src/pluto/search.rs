//! Pluto's outer loop: hyperplanes one at a time, bands, and scalar cuts.

use super::heuristic::Components;
use super::hyperplane::{self, Member, Settings};
use super::independence::rank;
use super::row::{BandDep, View};
use super::Pluto;
use crate::affine::{AffineSchedule, Band, Row, RowKind, StmtRow};
use crate::ddg::Ddg;
use crate::farkas::FarkasDual;
use crate::ilp::Memo;
use crate::original;
use crate::problem::{FusePolicy, Problem, ScheduleError};

use poly::isl::{Analysis, End, IslResult, PairOrder, UnionMap};
use poly::model::Program;
use std::cell::OnceCell;
use std::cell::RefCell;
use std::collections::hash_map::{Entry, HashMap};

/// One hyperplane of a group of statements: each statement's row.
type GroupRows = Vec<(usize, StmtRow)>;

/// The hyperplanes found for groups of statements, by coefficient bound and group.
type Solved = HashMap<(i64, Vec<usize>), Option<GroupRows>>;

/// How a run ended.
pub enum Run {
    /// The schedule.
    Done(AffineSchedule),
    /// A band closed while some statement still needed a hyperplane, and one exists with
    /// coefficients up to [`Pluto::coefficient_cap`]: the bound cut the band short, and the
    /// run was abandoned for one with a larger bound.
    BoundHit,
}

/// What every run of one scheduling shares (the fused and the distributed searches of
/// `smart` fusion, runs restarted with a larger bound): the dependences they start from, the
/// Farkas duals and the integer programs solved so far, none of which depends on the run.
pub struct Shared {
    /// The dependences a schedule must respect, coalesced.
    validity: UnionMap,
    /// The dependences the objective bounds under `--rar` ([`Problem::reuse`]), coalesced.
    reuse: Option<UnionMap>,
    /// Pairs of instances that access a common element (see [`Search::band_deps`]).
    conflicts: UnionMap,
    /// The Farkas duals computed so far, by dependence text.
    duals: RefCell<HashMap<String, FarkasDual>>,
    /// The hyperplanes' integer programs solved so far.
    ilps: Memo,
}

impl Shared {
    /// Nothing solved yet, for `problem`.
    pub fn new(problem: &Problem<'_>) -> Result<Shared, ScheduleError> {
        Ok(Shared {
            validity: problem.validity()?.coalesce()?,
            reuse: problem.reuse()?.map(|r| r.coalesce()).transpose()?,
            conflicts: problem.conflicts()?,
            duals: RefCell::new(HashMap::new()),
            ilps: Memo::default(),
        })
    }
}

/// The state of one scheduling run.
pub struct Search<'a> {
    pluto: &'a Pluto,
    /// Bound on the magnitude of each iterator coefficient in this run.
    bound: i64,
    program: &'a Program,
    fuse: FusePolicy,
    n_params: usize,
    schedule: AffineSchedule,
    /// The first row of the band being built.
    band_start: usize,
    /// Per statement, the iterator coefficients of its loop rows.
    found: Vec<Vec<Vec<i64>>>,
    /// The dependence instances not yet ordered by the rows so far.
    live: UnionMap,
    /// Under `--rar`, the instances of [`Shared::reuse`] not yet ordered (distance 0 on every
    /// row so far); empty otherwise.
    live_reuse: UnionMap,
    /// Under `--rar`, the dependences the objective of the band's hyperplanes bounds (as
    /// [`Search::band_deps`] of [`Search::live_reuse`] at the band's start).
    reuse_deps: Vec<BandDep>,
    /// What the runs share.
    shared: &'a Shared,
    /// The hyperplanes found for groups of statements since the last row or band, by group
    /// (see [`Search::solve_component`]).
    solved: RefCell<Solved>,
    /// The isl operation budget of the search's set-up; each step of its loop (a hyperplane,
    /// or a band closed or cut) has one of its own, so that the bound applies to one step,
    /// not to the sum over a schedule's rows (seed 1531 of `polyc fuzz-schedules`: thirteen
    /// statements in three nests, whose whole search exceeded one budget).
    _analysis: Analysis<'a>,
}

impl<'a> Search<'a> {
    /// A run for `problem` under the fusion policy `fuse`, with iterator coefficients
    /// bounded by `bound`, sharing `shared` with the other runs.
    pub fn new(
        pluto: &'a Pluto,
        problem: &'a Problem<'_>,
        fuse: FusePolicy,
        bound: i64,
        shared: &'a Shared,
    ) -> Result<Self, ScheduleError> {
        let program = problem.program;
        Ok(Search {
            _analysis: program.ctx.analysis(),
            pluto,
            bound,
            program,
            fuse,
            n_params: program.kernel.params.len(),
            schedule: AffineSchedule::default(),
            band_start: 0,
            found: vec![Vec::new(); program.statements.len()],
            live: shared.validity.clone(),
            live_reuse: match &shared.reuse {
                Some(reuse) => reuse.clone(),
                None => program.ctx.empty_union_map()?,
            },
            reuse_deps: Vec::new(),
            shared,
            solved: RefCell::new(HashMap::new()),
        })
    }

    /// Runs to completion, or until the bound is found to cut a band short.
    pub fn run(mut self) -> Result<Run, ScheduleError> {
        self.reuse_deps = self.band_deps(&self.live_reuse)?;
        self.fusion_cut()?;
        let mut band_deps = self.band_deps(&self.live)?;
        self.reuse_deps = self.band_deps(&self.live_reuse)?;
        self.band_start = self.schedule.rows.len();
        loop {
            let _step = self.program.ctx.analysis();
            let all_full = (0..self.program.statements.len()).all(|s| !self.needs_more(s));
            if all_full && self.live.is_empty()? {
                break;
            }
            if !all_full {
                if let Some(row) = self.hyperplane(&band_deps, &self.all_statements())? {
                    self.push_loop(row)?;
                    continue;
                }
                if self.bound_cuts_band(&band_deps)? {
                    return Ok(Run::BoundHit);
                }
            }
            // No (further) hyperplane in this band: close it and try again with what is left.
            if self.schedule.rows.len() > self.band_start {
                self.close_band();
            } else {
                self.forced_cut(&band_deps)?;
            }
            band_deps = self.band_deps(&self.live)?;
            self.reuse_deps = self.band_deps(&self.live_reuse)?;
            self.solved.get_mut().clear();
            self.band_start = self.schedule.rows.len();
        }
        self.close_band();
        // Statements whose every row is equal run at the same time; a last scalar row in
        // textual order makes the schedule injective, as Pluto's scattering does (every
        // dependence is satisfied by now, so any order of them is legal).
        let mut textual = self.zero_row();
        for (s, row) in textual.iter_mut().enumerate() {
            row.constant = s as i64;
        }
        self.schedule.rows.push(Row {
            kind: RowKind::Scalar,
            stmts: textual,
        });
        Ok(Run::Done(self.schedule))
    }

    /// Whether a hyperplane the run's bound excludes exists with coefficients up to the
    /// cap (the band being closed could go on with a larger bound).
    fn bound_cuts_band(&self, band_deps: &[BandDep]) -> Result<bool, ScheduleError> {
        if self.bound >= self.pluto.coefficient_cap {
            return Ok(false);
        }
        let among = self.all_statements();
        let wider = self.hyperplane_within(band_deps, &among, self.pluto.coefficient_cap)?;
        Ok(wider.is_some())
    }

    /// The search's settings with iterator coefficients bounded by `bound`.
    fn settings(&self, bound: i64) -> Settings<'_> {
        Settings {
            ctx: &self.program.ctx,
            heuristic: self.pluto.heuristic.as_ref(),
            max_coefficient: bound,
            n_params: self.n_params,
            memo: &self.shared.ilps,
        }
    }

    fn needs_more(&self, s: usize) -> bool {
        let n = self.program.statements[s].iterators.len();
        rank(&self.found[s], n) < n
    }

    /// What a heuristic reads of the search so far.
    fn view(&self) -> View<'_> {
        View {
            program: self.program,
            rows: &self.schedule.rows,
            band_start: self.band_start,
            live: &self.live,
            fuse: self.fuse,
        }
    }

    /// The cut the heuristic asks for before the first hyperplane
    /// ([`super::Heuristic::fusion_cut`]), with groups of at most `max_fused_statements`
    /// statements (see [`Pluto::max_fused_statements`]).
    fn fusion_cut(&mut self) -> Result<(), ScheduleError> {
        let sccs = self.live_graph()?.sccs();
        // Only a heuristic that asks whether groups have a hyperplane pays for the duals.
        let band_deps = OnceCell::new();
        let probe = |stmts: &[usize]| -> Result<bool, ScheduleError> {
            if band_deps.get().is_none() {
                let _ = band_deps.set(self.band_deps(&self.live)?);
            }
            let deps = band_deps.get().map_or(&[][..], Vec::as_slice);
            Ok(self.hyperplane(deps, stmts)?.is_some())
        };
        let components = Components {
            view: self.view(),
            sccs: &sccs,
            probe: &probe,
        };
        let mut groups = Vec::with_capacity(sccs.len());
        let (mut group, mut size) = (0, 0);
        for (k, scc) in sccs.iter().enumerate() {
            if k > 0
                && (self.pluto.heuristic.fusion_cut(&components, k)?
                    || size + scc.len() > self.pluto.max_fused_statements)
            {
                group += 1;
                size = 0;
            }
            size += scc.len();
            groups.push(group);
        }
        if group > 0 {
            self.push_cut(&sccs, &groups)?;
        }
        Ok(())
    }

    /// No hyperplane exists: split the strongly connected components of the live
    /// dependence graph, in topological order, into the consecutive groups the heuristic
    /// chooses ([`super::Heuristic::forced_cut`]; Pluto's: as few as possible such that
    /// each group has a hyperplane); if that orders nothing, separate every component.
    fn forced_cut(&mut self, band_deps: &[BandDep]) -> Result<(), ScheduleError> {
        let sccs = self.live_graph()?.sccs();
        let probe = |stmts: &[usize]| Ok(self.hyperplane(band_deps, stmts)?.is_some());
        let components = Components {
            view: self.view(),
            sccs: &sccs,
            probe: &probe,
        };
        let groups = self.pluto.heuristic.forced_cut(&components)?;
        let in_order = groups.len() == sccs.len()
            && groups.first().is_none_or(|&g| g == 0)
            && groups.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1);
        if !in_order {
            return Err(ScheduleError::NoSchedule {
                scheduler: self.pluto.heuristic.name(),
                reason: format!(
                    "its forced cut {groups:?} does not give the {} components groups in \
                     topological order (0 first, then each the same or one more)",
                    sccs.len()
                ),
            });
        }
        let before = (self.live.clone(), self.live_reuse.clone());
        for attempt in [groups, (0..sccs.len()).collect()] {
            if attempt.last().copied().unwrap_or(0) == 0 {
                continue;
            }
            self.push_cut(&sccs, &attempt)?;
            if !self.live.is_equal(&before.0)? {
                return Ok(());
            }
            self.schedule.rows.pop();
            (self.live, self.live_reuse) = before.clone();
        }
        if let Some(row) = self.carrying_row(band_deps)? {
            return self.push_loop(row);
        }
        // Farkas' lemma may hide every row (see `crate::original`)
        if let Some(row) = original::first_ordering_row(self.program, &self.live)? {
            return match row.kind {
                RowKind::Scalar => self.push_scalar(row),
                RowKind::Loop { .. } => self.push_loop(row),
            };
        }
        Err(ScheduleError::NoSchedule {
            scheduler: self.pluto.heuristic.name(),
            reason: format!(
                "no hyperplane respects the remaining dependences, they do not cross \
                 strongly connected components, and no row of the original order orders \
                 them: {}",
                self.live
            ),
        })
    }

    /// When no hyperplane independent of the earlier ones exists and no cut orders what is
    /// left (a component whose statements must interleave), Pluto adds hyperplanes beyond
    /// the statements' dimensions: a row, not necessarily independent of the earlier ones,
    /// that respects every live dependence of a component and carries one basic piece of
    /// one of them (tried in turn; Pluto's dependences are those pieces). A whole
    /// dependence may be uncarriable where a piece is: seed 122's `A2[i]` and `A2[2k]` under
    /// a reversed `i`, whose first band (`i`, `2k`: the element written) leaves pairs at
    /// `i' < i` and at `i' = i` in every dependence; `-i` carries the former. The statements
    /// outside the component get 0.
    fn carrying_row(&self, band_deps: &[BandDep]) -> Result<Option<Row>, ScheduleError> {
        let settings = self.settings(self.bound);
        for scc in self.live_graph()?.sccs() {
            let inside = |d: &&BandDep| scc.contains(&d.src) && scc.contains(&d.dst);
            let deps: Vec<&BandDep> = band_deps.iter().filter(inside).collect();
            let reuse = self.reuse_deps(&deps, inside);
            let members: Vec<Member<'_>> = (scc.iter())
                .map(|&s| Member {
                    stmt: s,
                    n_iters: self.program.statements[s].iterators.len(),
                    found: &self.found[s],
                    needs_more: false,
                })
                .collect();
            for dep in &deps {
                for carried in self.pieces(dep)? {
                    let found = hyperplane::find(
                        &settings,
                        self.view(),
                        &members,
                        (&deps, &reuse),
                        1,
                        Some(&carried),
                    )?;
                    let Some(solution) = found else {
                        continue;
                    };
                    let mut stmts = self.zero_row();
                    for (s, f) in solution {
                        stmts[s] = f;
                    }
                    return Ok(Some(Row {
                        kind: RowKind::Loop { coincident: false },
                        stmts,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// The non-empty basic pieces of `dep`, each a dependence with its own Farkas dual.
    fn pieces(&self, dep: &BandDep) -> IslResult<Vec<BandDep>> {
        let mut pieces = Vec::new();
        for relation in dep.relation.basic_maps()? {
            if relation.is_empty()? {
                continue;
            }
            pieces.push(BandDep {
                src: dep.src,
                dst: dep.dst,
                dual: self.dual(&relation)?,
                relation,
            });
        }
        Ok(pieces)
    }

    /// A scalar row giving the statements of `sccs[k]` the constant `groups[k]`.
    fn push_cut(&mut self, sccs: &[Vec<usize>], groups: &[usize]) -> Result<(), ScheduleError> {
        let mut stmts = self.zero_row();
        for (scc, &g) in sccs.iter().zip(groups) {
            for &s in scc {
                stmts[s].constant = g as i64;
            }
        }
        self.push_scalar(Row {
            kind: RowKind::Scalar,
            stmts,
        })?;
        Ok(())
    }

    /// The dependences the objective of a group's hyperplane bounds: under `--rar` those of
    /// [`Search::reuse_deps`] `inside` the group, otherwise the group's `deps` themselves.
    fn reuse_deps<'s>(
        &'s self,
        deps: &[&'s BandDep],
        inside: impl Fn(&&BandDep) -> bool,
    ) -> Vec<&'s BandDep> {
        if self.shared.reuse.is_some() {
            self.reuse_deps.iter().filter(inside).collect()
        } else {
            deps.to_vec()
        }
    }

    fn all_statements(&self) -> Vec<usize> {
        (0..self.program.statements.len()).collect()
    }

    /// The next hyperplane for the statements `among`, each group of them connected by the
    /// band's dependences solved on its own, or `None` if some group that needs one has
    /// none.
    fn hyperplane(
        &self,
        band_deps: &[BandDep],
        among: &[usize],
    ) -> Result<Option<Row>, ScheduleError> {
        self.hyperplane_within(band_deps, among, self.bound)
    }

    /// [`Search::hyperplane`] with iterator coefficients bounded by `bound`.
    fn hyperplane_within(
        &self,
        band_deps: &[BandDep],
        among: &[usize],
        bound: i64,
    ) -> Result<Option<Row>, ScheduleError> {
        let n = self.program.statements.len();
        // Statements related only by input dependences share an integer program too: the
        // objective bounds the distances between them.
        let inside = |d: &&BandDep| among.contains(&d.src) && among.contains(&d.dst);
        let edges = band_deps.iter().chain(&self.reuse_deps).filter(inside);
        let graph = Ddg::new(n, edges.map(|d| (d.src, d.dst)));
        let settings = self.settings(bound);
        let mut stmts = self.zero_row();
        for component in graph.components() {
            if !among.contains(&component[0]) || !component.iter().any(|&s| self.needs_more(s)) {
                continue;
            }
            let Some(solution) = self.solve_component(&settings, band_deps, &component)? else {
                return Ok(None);
            };
            for (s, f) in solution {
                stmts[s] = f;
            }
        }
        Ok(Some(Row {
            kind: RowKind::Loop { coincident: false },
            stmts,
        }))
    }

    /// The hyperplane of one connected group of statements (either orientation), memoised
    /// by bound until the next row or the next band: the greedy forced cut asks again for
    /// the groups its candidate does not change.
    fn solve_component(
        &self,
        settings: &Settings<'_>,
        band_deps: &[BandDep],
        component: &[usize],
    ) -> Result<Option<GroupRows>, ScheduleError> {
        let key = (settings.max_coefficient, component.to_vec());
        if let Some(known) = self.solved.borrow().get(&key) {
            return Ok(known.clone());
        }
        let members: Vec<Member<'_>> = component
            .iter()
            .map(|&s| Member {
                stmt: s,
                n_iters: self.program.statements[s].iterators.len(),
                found: &self.found[s],
                needs_more: self.needs_more(s),
            })
            .collect();
        let inside = |d: &&BandDep| component.contains(&d.src) && component.contains(&d.dst);
        let deps: Vec<&BandDep> = band_deps.iter().filter(inside).collect();
        let reuse = self.reuse_deps(&deps, inside);
        // Statements of lower dimensionality first follow the others: only those with the
        // most loops among the ones that need a hyperplane must get an independent one, so
        // that a statement nested less deeply does not force its own iterators onto the
        // others (fdtd-2d's `ey[0][j] = fict[t]` beside the 3-deep ones). When that finds
        // nothing, every statement that needs one must get one.
        let deepest = (members.iter().filter(|m| m.needs_more))
            .map(|m| m.n_iters)
            .max()
            .unwrap_or(0);
        let lazy: Vec<Member<'_>> = (members.iter())
            .map(|m| Member {
                needs_more: m.needs_more && m.n_iters == deepest,
                ..*m
            })
            .collect();
        let lazy_differs = lazy
            .iter()
            .zip(&members)
            .any(|(l, m)| l.needs_more != m.needs_more);
        let attempts: Vec<&[Member<'_>]> = if lazy_differs {
            vec![&lazy, &members]
        } else {
            vec![&members]
        };
        let mut solution = None;
        'search: for attempt in attempts {
            for orientation in [1, -1] {
                let deps = (&deps[..], &reuse[..]);
                solution =
                    hyperplane::find(settings, self.view(), attempt, deps, orientation, None)?;
                if solution.is_some() {
                    break 'search;
                }
            }
        }
        self.solved.borrow_mut().insert(key, solution.clone());
        Ok(solution)
    }

    /// Appends a loop row, marking it coincident when no live dependence has a non-zero
    /// distance on it.
    fn push_loop(&mut self, mut row: Row) -> Result<(), ScheduleError> {
        let unordered = self.unordered_by(&self.live, &row)?;
        self.live_reuse = self.unordered_by(&self.live_reuse, &row)?;
        row.kind = RowKind::Loop {
            coincident: self.live.is_subset(&unordered)?,
        };
        for (s, f) in row.stmts.iter().enumerate() {
            self.found[s].push(f.iterators.clone());
        }
        self.solved.get_mut().clear();
        self.live = unordered;
        self.schedule.rows.push(row);
        Ok(())
    }

    /// Appends a scalar row and keeps live only the dependence instances it does not order.
    fn push_scalar(&mut self, row: Row) -> Result<(), ScheduleError> {
        self.live = self.unordered_by(&self.live, &row)?;
        self.live_reuse = self.unordered_by(&self.live_reuse, &row)?;
        self.solved.get_mut().clear();
        self.schedule.rows.push(row);
        Ok(())
    }

    /// The instances of `live` on which `row` has the same value at both ends
    /// (`isl_union_map_eq_at_multi_union_pw_aff`: only the live pairs of statements are
    /// looked at, not every pair).
    fn unordered_by(&self, live: &UnionMap, row: &Row) -> IslResult<UnionMap> {
        let single = AffineSchedule {
            rows: vec![row.clone()],
            bands: Vec::new(),
        };
        let function = single.to_union_map(self.program)?;
        live.pairs_where(&function, PairOrder::Equal)
    }

    fn close_band(&mut self) {
        let start = self.band_start;
        let len = self.schedule.rows.len() - start;
        if len > 0 {
            self.schedule.bands.push(Band { start, len });
        }
    }

    fn zero_row(&self) -> Vec<StmtRow> {
        self.program
            .statements
            .iter()
            .map(|s| StmtRow::zero(s.iterators.len(), self.n_params))
            .collect()
    }

    /// The dependences `live` (the live ones or the live input ones), one per pair of
    /// accesses, with their Farkas duals.
    ///
    /// Each is first split by the pair of accesses through which its instances conflict
    /// ([`Problem::conflicts`]; every dependence relates two accesses to one element, so the
    /// pieces cover it). The dual of a union is the intersection of the pieces' duals.
    ///
    /// Duals are cached by the dependence's text, across runs ([`Shared`]): a scalar cut
    /// leaves the dependences inside each group unchanged, and they would otherwise be
    /// recomputed at every band and in every run.
    fn band_deps(&self, live: &UnionMap) -> IslResult<Vec<BandDep>> {
        let pieces = live.intersect(&self.shared.conflicts)?.maps()?;
        let mut deps = Vec::with_capacity(pieces.len());
        for m in &pieces {
            deps.push(BandDep {
                src: self.stmt_of(m, End::Source)?,
                dst: self.stmt_of(m, End::Sink)?,
                relation: m.clone(),
                dual: self.dual(m)?,
            });
        }
        Ok(deps)
    }

    /// The Farkas dual of `dependence`, cached by its text across runs ([`Shared`]).
    fn dual(&self, dependence: &poly::isl::Map) -> IslResult<FarkasDual> {
        Ok(
            match self.shared.duals.borrow_mut().entry(dependence.to_string()) {
                Entry::Occupied(known) => known.get().clone(),
                Entry::Vacant(slot) => slot
                    .insert(FarkasDual::of(dependence, &self.program.context)?)
                    .clone(),
            },
        )
    }

    /// The statement graph of the live dependences.
    fn live_graph(&self) -> IslResult<Ddg> {
        let edges = self
            .live
            .maps()?
            .iter()
            .map(|m| Ok((self.stmt_of(m, End::Source)?, self.stmt_of(m, End::Sink)?)))
            .collect::<IslResult<Vec<_>>>()?;
        Ok(Ddg::new(self.program.statements.len(), edges))
    }

    fn stmt_of(&self, map: &poly::isl::Map, side: End) -> IslResult<usize> {
        let name = map.tuple_name_of(side);
        self.program
            .statements
            .iter()
            .position(|s| s.tuple == name)
            .ok_or_else(|| {
                poly::isl::IslError::Isl(format!("dependence on unknown statement `{name}`"))
            })
    }
}
