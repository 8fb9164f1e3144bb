//! Schedule trees node by node (`isl_schedule_node`): reading a tree's bands, sequences
//! and filters, and building one. Every method takes `&self` and returns a new node where
//! isl moves or changes one.

use super::{IslError, IslResult, Obj, Schedule, ScheduleNode, UnionMap, UnionSet};
use isl_rs::{MultiUnionPwAff, ScheduleNodeType, UnionSetList};

/// What a schedule-tree node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// The root: the instances scheduled.
    Domain,
    /// Consecutive loops.
    Band,
    /// Children run one after the other.
    Sequence,
    /// Children run in any order.
    Set,
    /// The instances of one child of a sequence or set.
    Filter,
    /// Nothing more is ordered.
    Leaf,
    /// A named mark.
    Mark,
    /// A node kind polyc does not produce (context, guard, extension, expansion).
    Other,
}

impl Schedule {
    /// The root (domain) node.
    pub fn root(&self) -> IslResult<ScheduleNode> {
        self.apply(|s| s.get_root())
    }
    /// A schedule of `domain` with no order yet (a domain node over a leaf).
    pub fn from_domain(domain: &UnionSet) -> IslResult<Schedule> {
        domain.apply(isl_rs::Schedule::from_domain)
    }
}

impl ScheduleNode {
    /// The node's kind.
    pub fn kind(&self) -> IslResult<NodeKind> {
        Ok(match self.query(|n| n.get_type())? {
            ScheduleNodeType::Domain => NodeKind::Domain,
            ScheduleNodeType::Band => NodeKind::Band,
            ScheduleNodeType::Sequence => NodeKind::Sequence,
            ScheduleNodeType::Set => NodeKind::Set,
            ScheduleNodeType::Filter => NodeKind::Filter,
            ScheduleNodeType::Leaf => NodeKind::Leaf,
            ScheduleNodeType::Mark => NodeKind::Mark,
            ScheduleNodeType::Error => return Err(IslError::Isl("invalid schedule node".into())),
            _ => NodeKind::Other,
        })
    }
    /// The number of children.
    pub fn n_children(&self) -> IslResult<usize> {
        self.query(|n| n.n_children()).map(|n| n.max(0) as usize)
    }
    /// Child `k`.
    pub fn child(&self, k: usize) -> IslResult<ScheduleNode> {
        self.apply(|n| n.child(k as i32))
    }
    /// The parent.
    pub fn parent(&self) -> IslResult<ScheduleNode> {
        self.apply(|n| n.parent())
    }
    /// The whole tree the node is in.
    pub fn schedule(&self) -> IslResult<Schedule> {
        self.query(|n| n.get_schedule())
            .map(|s| Obj::from_raw(self.ctx(), s))
    }
    /// The instances a domain node schedules.
    pub fn domain_instances(&self) -> IslResult<UnionSet> {
        self.query(|n| n.domain_get_domain())
            .map(|s| Obj::from_raw(self.ctx(), s))
    }
    /// The instances that reach this node.
    pub fn instances(&self) -> IslResult<UnionSet> {
        self.query(|n| n.get_domain())
            .map(|s| Obj::from_raw(self.ctx(), s))
    }
    /// The schedule of the bands above this node, on the instances that reach it.
    pub fn prefix_schedule(&self) -> IslResult<UnionMap> {
        self.query(|n| n.get_prefix_schedule_union_map())
            .map(|m| Obj::from_raw(self.ctx(), m))
    }
    /// The number of schedule dimensions above this node.
    pub fn schedule_depth(&self) -> IslResult<usize> {
        self.query(|n| n.get_schedule_depth())
            .map(|d| d.max(0) as usize)
    }
    /// A filter node's instances.
    pub fn filter(&self) -> IslResult<UnionSet> {
        self.query(|n| n.filter_get_filter())
            .map(|s| Obj::from_raw(self.ctx(), s))
    }
    /// A band's members, one union map `S[i] -> [t]` each, outermost first.
    pub fn band_members(&self) -> IslResult<Vec<UnionMap>> {
        let ctx = self.ctx();
        let n = self.query(|n| n.band_n_member())?;
        let partial = self.query(|n| n.band_get_partial_schedule())?;
        (0..n)
            .map(|k| {
                let upa = ctx.check(partial.get_at(k))?;
                let map = ctx.check(isl_rs::UnionMap::from_union_pw_aff(upa))?;
                Ok(Obj::from_raw(ctx, map))
            })
            .collect()
    }
    /// Per band member: whether it is marked coincident (parallel).
    pub fn band_coincident(&self) -> IslResult<Vec<bool>> {
        let n = self.query(|n| n.band_n_member())?;
        (0..n)
            .map(|k| self.query(|n| n.band_member_get_coincident(k)))
            .collect()
    }
    /// Whether a band is marked permutable.
    pub fn band_permutable(&self) -> IslResult<bool> {
        self.query(|n| n.band_get_permutable())
    }
    /// A band inserted here, scheduling by `schedule` (`S[i] -> [t1, .., tn]`); the result
    /// is the new band node.
    pub fn insert_band(&self, schedule: &UnionMap) -> IslResult<ScheduleNode> {
        let ctx = self.ctx();
        let mupa = ctx.check(MultiUnionPwAff::from_union_map(schedule.to_raw()))?;
        self.apply(|n| n.insert_partial_schedule(mupa))
    }
    /// The band marked permutable or not.
    pub fn with_permutable(&self, permutable: bool) -> IslResult<ScheduleNode> {
        self.apply(|n| n.band_set_permutable(permutable as i32))
    }
    /// The band with member `k` marked coincident or not.
    pub fn with_coincident(&self, k: usize, coincident: bool) -> IslResult<ScheduleNode> {
        self.apply(|n| n.band_member_set_coincident(k as i32, coincident as i32))
    }
    /// A sequence (`ordered`) or set of children with these filters inserted here; the
    /// result is the new sequence or set node.
    pub fn insert_children(&self, filters: &[&UnionSet], ordered: bool) -> IslResult<ScheduleNode> {
        let ctx = self.ctx();
        let mut list = ctx.check(UnionSetList::alloc(ctx.raw(), filters.len() as i32))?;
        for f in filters {
            list = ctx.check(list.add(f.to_raw()))?;
        }
        if ordered {
            self.apply(|n| n.insert_sequence(list))
        } else {
            self.apply(|n| n.insert_set(list))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::isl::Ctx;

    use super::*;

    #[test]
    fn a_tree_is_read_and_built_node_by_node() {
        let ctx = Ctx::default();
        let text = "{ domain: \"{ S[i] : 0 <= i < 4; T[i] : 0 <= i < 4 }\", \
                    child: { schedule: \"[{ S[i] -> [(i)]; T[i] -> [(i)] }]\", permutable: 1, \
                    coincident: [ 1 ], child: { sequence: [ { filter: \"{ S[i] }\" }, \
                    { filter: \"{ T[i] }\" } ] } } }";
        let schedule = ctx.schedule(text).unwrap();
        let root = schedule.root().unwrap();
        assert_eq!(root.kind().unwrap(), NodeKind::Domain);
        let band = root.child(0).unwrap();
        assert_eq!(band.kind().unwrap(), NodeKind::Band);
        assert_eq!(band.band_members().unwrap().len(), 1);
        assert_eq!(band.band_coincident().unwrap(), vec![true]);
        assert!(band.band_permutable().unwrap());
        let seq = band.child(0).unwrap();
        assert_eq!(seq.kind().unwrap(), NodeKind::Sequence);
        assert_eq!(seq.n_children().unwrap(), 2);
        let t = seq.child(1).unwrap();
        assert_eq!(t.filter().unwrap(), ctx.union_set("{ T[i] }").unwrap());
        assert_eq!(t.child(0).unwrap().schedule_depth().unwrap(), 1);

        // The same tree, built.
        let built = Schedule::from_domain(&root.domain_instances().unwrap()).unwrap();
        let leaf = built.root().unwrap().child(0).unwrap();
        let band2 = leaf
            .insert_band(&band.band_members().unwrap()[0])
            .unwrap()
            .with_permutable(true)
            .unwrap()
            .with_coincident(0, true)
            .unwrap();
        let filters = [
            &ctx.union_set("{ S[i] }").unwrap(),
            &ctx.union_set("{ T[i] }").unwrap(),
        ];
        let seq2 = band2
            .child(0)
            .unwrap()
            .insert_children(&filters, true)
            .unwrap();
        let again = seq2.schedule().unwrap();
        assert_eq!(again.map().unwrap(), schedule.map().unwrap());
    }
}
