//! The band rules of a schedule tree: coincident members carry no dependence, permutable
//! bands are permutable.

use super::report::{BandMember, DepViolation, Rule};
use super::witness::image;
use super::{CheckError, Facts, Pair};
use poly::deps::DepKind;
use poly::isl::{
    IslError, IslResult, NodeKind, PairOrder, Schedule, ScheduleNode, UnionMap, UnionSet,
};

/// Dependences as one relation and by kind (the same pairs).
pub(super) type ByKind<'a> = (&'a UnionMap, &'a [(DepKind, UnionMap)]);

/// The dependences the band rules are checked against.
pub(super) struct Rules<'a> {
    /// What permutable bands must respect.
    pub validity: ByKind<'a>,
    /// What coincident members must not carry: every dependence, reductions included.
    pub all: ByKind<'a>,
}

/// The violations of the band rules in `tree`: coincident members against all the
/// dependences, permutable bands against the validity ones.
pub(super) fn check(
    facts: &Facts<'_>,
    tree: &Schedule,
    rules: &Rules<'_>,
) -> Result<Vec<DepViolation>, CheckError> {
    let mut bands = Vec::new();
    let mut stack = vec![tree.root()?];
    while let Some(node) = stack.pop() {
        for k in (0..node.n_children()?).rev() {
            stack.push(node.child(k)?);
        }
        if node.kind()? == NodeKind::Band {
            bands.push(Band::read(&node, bands.len())?);
        }
    }
    // Each rule of each band is an analysis of its own, with a budget of its own: one budget
    // for the whole tree ran out on random programs of fifteen statements (fuzz seeds 51,
    // 96 and 5017), which were then reported as unverifiable.
    let ctx = &facts.program.ctx;
    let mut out = Vec::new();
    for band in &bands {
        let _analysis = ctx.analysis();
        out.extend(band.parallel_violations(facts, rules.all)?);
    }
    for band in &bands {
        let _analysis = ctx.analysis();
        out.extend(band.permutable_violations(facts, rules.validity)?);
    }
    Ok(out)
}

/// A band node, as the rules need it. Its functions are simplified on the band's
/// instances ([`UnionMap::gist_function`]) and compared only on pairs of them: with the
/// instances' constraints in every function, and the prefix compared whole, one band of
/// Feautrier's schedule of a random program of thirteen statements (fuzz seed 6737) ran
/// out of isl's budget.
struct Band {
    number: usize,
    /// The band's instances.
    domain: UnionSet,
    /// One schedule per member.
    members: Vec<UnionMap>,
    coincident: Vec<bool>,
    permutable: bool,
    /// The schedule of the outer bands (the prefix), a function per dimension.
    prefix: Vec<UnionMap>,
}

impl Band {
    fn read(node: &ScheduleNode, number: usize) -> IslResult<Band> {
        let domain = node.instances()?;
        let simple = |f: &UnionMap| f.intersect_domain(&domain)?.gist_function(&domain);
        let prefix = (node
            .prefix_schedule()?
            .intersect_domain(&domain)?
            .range_dims()?
            .iter())
        .map(simple)
        .collect::<IslResult<_>>()?;
        let members = (node.band_members()?.iter())
            .map(simple)
            .collect::<IslResult<Vec<_>>>()?;
        let coincident = node.band_coincident()?;
        Ok(Band {
            number,
            members,
            coincident,
            permutable: node.band_permutable()?,
            prefix,
            domain,
        })
    }

    /// The pairs of `deps` between instances of the band with the same outer loop values,
    /// the prefix compared one dimension at a time.
    fn at_band(&self, deps: &UnionMap) -> IslResult<UnionMap> {
        let mut live = (deps.intersect_domain(&self.domain)?).intersect_range(&self.domain)?;
        for dim in &self.prefix {
            if live.is_empty()? {
                break;
            }
            live = live.pairs_where(dim, PairOrder::Equal)?;
        }
        Ok(live)
    }

    /// Coincident members carrying one of `all` not ordered by outer dimensions.
    fn parallel_violations(
        &self,
        facts: &Facts<'_>,
        (all, by_kind): ByKind<'_>,
    ) -> Result<Vec<DepViolation>, CheckError> {
        if !self.coincident.contains(&true) {
            return Ok(Vec::new());
        }
        let mut carried = Vec::new();
        let mut live = self.at_band(all)?;
        for (m, member) in self.members.iter().enumerate() {
            if self.coincident[m] {
                let different = live
                    .pairs_where(member, PairOrder::Before)?
                    .union(&live.pairs_where(member, PairOrder::After)?)?;
                if !different.is_empty()? {
                    carried.push((m, different));
                }
            }
            live = live.pairs_where(member, PairOrder::Equal)?;
        }
        self.by_kind(facts, &carried, by_kind, &Rule::Parallel)
    }

    /// Members of a permutable band of several members running one of `validity`
    /// backwards.
    fn permutable_violations(
        &self,
        facts: &Facts<'_>,
        (validity, by_kind): ByKind<'_>,
    ) -> Result<Vec<DepViolation>, CheckError> {
        if !self.permutable || self.members.len() < 2 {
            return Ok(Vec::new());
        }
        let at_band = self.at_band(validity)?;
        let mut backwards = Vec::new();
        for (m, member) in self.members.iter().enumerate() {
            let wrong = at_band.pairs_where(member, PairOrder::After)?;
            if !wrong.is_empty()? {
                backwards.push((m, wrong));
            }
        }
        self.by_kind(facts, &backwards, by_kind, &Rule::Permutable)
    }

    /// The violations of the pairs `wrong` breaks at each of its members, kind by kind, as
    /// `rule` names them.
    fn by_kind(
        &self,
        facts: &Facts<'_>,
        wrong: &[(usize, UnionMap)],
        by_kind: &[(DepKind, UnionMap)],
        rule: &dyn Fn(BandMember) -> Rule,
    ) -> Result<Vec<DepViolation>, CheckError> {
        let mut out = Vec::new();
        if wrong.is_empty() {
            return Ok(out);
        }
        for (kind, deps) in by_kind {
            for (m, pairs) in wrong {
                out.extend(facts.dependence_violations(
                    *kind,
                    &pairs.intersect(deps)?,
                    &|pair| Ok(rule(self.member(facts, *m, pair)?)),
                )?);
            }
        }
        Ok(out)
    }

    /// Member `m` as seen by the dependence `pair`.
    fn member(&self, facts: &Facts<'_>, m: usize, pair: &Pair) -> IslResult<BandMember> {
        let member = &self.members[m];
        let value = |instance| -> IslResult<i64> {
            image(facts.program, member, instance, &pair.fixed)?
                .into_iter()
                .flat_map(|(_, points)| points)
                .next()
                .and_then(|p| p.first().copied())
                .ok_or_else(|| {
                    IslError::Isl(format!("band member {m} is not defined on {instance}"))
                })
        };
        let distance = value(&pair.sink)? - value(&pair.source)?;
        Ok(BandMember {
            band: self.number,
            member: m,
            members: self.members.len(),
            schedule: member_text(facts, member, &pair.source.tuple)?,
            distance,
        })
    }
}

/// A member's schedule for one statement, `{ S0[i, j] -> [(j)] }`, without its domain's
/// constraints.
fn member_text(facts: &Facts<'_>, member: &UnionMap, tuple: &str) -> IslResult<String> {
    let Some(stmt) = facts.program.statement_by_tuple(tuple) else {
        return Ok(member.to_string());
    };
    let domain = stmt.domain.to_union()?;
    let text = member
        .intersect_domain(&domain)?
        .gist_domain(&domain)?
        .to_string();
    // Drop the parameter list `[N, M] -> ` in front.
    Ok(match text.split_once("-> {") {
        Some((params, rest)) if params.starts_with('[') => format!("{{{rest}"),
        _ => text,
    })
}
