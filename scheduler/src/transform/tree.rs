//! A schedule tree as a Rust value, converted from and to isl's `isl_schedule`.
//!
//! Transformations rebuild subtrees freely (split a band, fuse two siblings, permute
//! members), which isl's node cursor API makes awkward; here a tree is an ordinary enum and
//! each band member is a union map from statement instances to one time coordinate.

use isl_rs::{MultiUnionPwAff, ScheduleNode, ScheduleNodeType, UnionSetList};
use poly::isl::{Ctx, IslError, IslResult, Obj, Schedule, UnionMap, UnionSet};

/// How a band came to be (for summaries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BandKind {
    /// Loops as the scheduler made them.
    Loop,
    /// The tile loops of a tiled band, with the tile sizes.
    Tile(Vec<std::num::NonZeroU32>),
    /// The point (intra-tile) loops of a tiled band.
    Point,
}

/// A band: consecutive loops over the same statement instances.
#[derive(Clone, Debug)]
pub struct BandNode {
    /// One union map per member, `S[i] -> [t]`, outermost first (never empty).
    pub members: Vec<UnionMap>,
    /// Whether the members may be permuted (and so tiled).
    pub permutable: bool,
    /// Per member: whether it carries no dependence left by the outer dimensions.
    pub coincident: Vec<bool>,
    /// How the band came to be.
    pub kind: BandKind,
    /// What is scheduled below.
    pub child: Box<Node>,
}

impl BandNode {
    /// All its members as one map, `S[i] -> [t1, .., tn]`.
    pub fn schedule(&self) -> IslResult<UnionMap> {
        let mut all = self.members[0].clone();
        for m in &self.members[1..] {
            all = all.apply2(m, |a, m| a.flat_range_product(m))?;
        }
        Ok(all)
    }
}

/// One child of a sequence or set: the statement instances it selects and their subtree.
#[derive(Clone, Debug)]
pub struct Filtered {
    /// The selected instances.
    pub filter: UnionSet,
    /// Their schedule.
    pub child: Node,
}

/// A schedule tree node.
#[derive(Clone, Debug)]
pub enum Node {
    /// Nothing more is ordered.
    Leaf,
    /// A band of loops.
    Band(BandNode),
    /// Children executed one after the other.
    Sequence(Vec<Filtered>),
    /// Children executed in any order.
    Set(Vec<Filtered>),
}

/// A schedule tree: the instances it schedules and their order.
#[derive(Clone, Debug)]
pub struct Tree {
    /// Every scheduled statement instance.
    pub domain: UnionSet,
    /// The order.
    pub root: Node,
}

impl Tree {
    /// Reads an isl schedule tree. Only domain, band, sequence, set, filter and leaf nodes
    /// are supported (the nodes every scheduler here produces).
    pub fn from_schedule(schedule: &Schedule) -> IslResult<Tree> {
        let ctx = schedule.ctx();
        let root = schedule.query(|s| s.get_root())?;
        let domain = Obj::from_raw(ctx, ctx.check(root.domain_get_domain())?);
        let root = if ctx.check(root.n_children())? == 0 {
            Node::Leaf
        } else {
            read_node(ctx, &ctx.check(root.get_child(0))?)?
        };
        Ok(Tree { domain, root })
    }

    /// Builds the isl schedule tree.
    pub fn to_schedule(&self) -> IslResult<Schedule> {
        let ctx = self.domain.ctx();
        let sched = ctx.check(isl_rs::Schedule::from_domain(self.domain.to_raw()))?;
        let node = ctx.check(sched.get_root())?;
        let node = ctx.check(node.child(0))?;
        let node = write_node(ctx, node, &self.root)?;
        Ok(Obj::from_raw(ctx, ctx.check(node.get_schedule())?))
    }
}

impl Node {
    /// The children of this node with the instances each one is restricted to
    /// (`None`: the node's own instances).
    pub fn children(&self) -> Vec<(Option<&UnionSet>, &Node)> {
        match self {
            Node::Leaf => Vec::new(),
            Node::Band(b) => vec![(None, &*b.child)],
            Node::Sequence(cs) | Node::Set(cs) => {
                cs.iter().map(|c| (Some(&c.filter), &c.child)).collect()
            }
        }
    }

    /// Whether a band occurs in this subtree.
    pub fn has_band(&self) -> bool {
        matches!(self, Node::Band(_)) || self.children().iter().any(|(_, c)| c.has_band())
    }

    /// Whether `other` is this very subtree: the same shape over the same isl objects
    /// (shared, not merely equal), as a transformation that changed nothing hands it back.
    /// Cheap, and conservative: equal subtrees built anew are not the same.
    pub fn is_same(&self, other: &Node) -> bool {
        let same_children = |a: &[Filtered], b: &[Filtered]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.filter.ptr() == y.filter.ptr() && x.child.is_same(&y.child))
        };
        match (self, other) {
            (Node::Leaf, Node::Leaf) => true,
            (Node::Band(a), Node::Band(b)) => {
                a.kind == b.kind
                    && a.members.len() == b.members.len()
                    && a.members
                        .iter()
                        .zip(&b.members)
                        .all(|(x, y)| x.ptr() == y.ptr())
                    && a.child.is_same(&b.child)
            }
            (Node::Sequence(a), Node::Sequence(b)) | (Node::Set(a), Node::Set(b)) => {
                same_children(a, b)
            }
            _ => false,
        }
    }

    /// The same subtree restricted to the instances in `filter` (empty children dropped).
    pub fn restrict(&self, filter: &UnionSet) -> IslResult<Node> {
        Ok(match self {
            Node::Leaf => Node::Leaf,
            Node::Band(b) => Node::Band(BandNode {
                members: b
                    .members
                    .iter()
                    .map(|m| m.intersect_domain(filter))
                    .collect::<IslResult<_>>()?,
                child: Box::new(b.child.restrict(filter)?),
                ..b.clone()
            }),
            Node::Sequence(cs) => Node::Sequence(restrict_children(cs, filter)?),
            Node::Set(cs) => Node::Set(restrict_children(cs, filter)?),
        })
    }
}

fn restrict_children(children: &[Filtered], filter: &UnionSet) -> IslResult<Vec<Filtered>> {
    let mut out = Vec::new();
    for c in children {
        let f = c.filter.intersect(filter)?;
        if !f.is_empty()? {
            out.push(Filtered {
                child: c.child.restrict(&f)?,
                filter: f,
            });
        }
    }
    Ok(out)
}

fn unsupported(what: &str) -> IslError {
    IslError::Isl(format!(
        "schedule trees with {what} nodes are not supported"
    ))
}

fn read_node(ctx: &Ctx, node: &ScheduleNode) -> IslResult<Node> {
    let first_child = || -> IslResult<Node> {
        if ctx.check(node.n_children())? == 0 {
            Ok(Node::Leaf)
        } else {
            read_node(ctx, &ctx.check(node.get_child(0))?)
        }
    };
    match ctx.check(node.get_type())? {
        ScheduleNodeType::Leaf => Ok(Node::Leaf),
        ScheduleNodeType::Band => {
            let n = ctx.check(node.band_n_member())?;
            if n == 0 {
                return first_child();
            }
            let mupa = ctx.check(node.band_get_partial_schedule())?;
            let mut members = Vec::new();
            let mut coincident = Vec::new();
            for k in 0..n {
                let upa = ctx.check(mupa.get_at(k))?;
                members.push(Obj::from_raw(
                    ctx,
                    ctx.check(isl_rs::UnionMap::from_union_pw_aff(upa))?,
                ));
                coincident.push(ctx.check(node.band_member_get_coincident(k))?);
            }
            Ok(Node::Band(BandNode {
                members,
                permutable: ctx.check(node.band_get_permutable())?,
                coincident,
                kind: BandKind::Loop,
                child: Box::new(first_child()?),
            }))
        }
        ty @ (ScheduleNodeType::Sequence | ScheduleNodeType::Set) => {
            let mut children = Vec::new();
            for k in 0..ctx.check(node.n_children())? {
                let f = ctx.check(node.get_child(k))?;
                let filter = Obj::from_raw(ctx, ctx.check(f.filter_get_filter())?);
                let child = if ctx.check(f.n_children())? == 0 {
                    Node::Leaf
                } else {
                    read_node(ctx, &ctx.check(f.get_child(0))?)?
                };
                children.push(Filtered { filter, child });
            }
            Ok(if ty == ScheduleNodeType::Sequence {
                Node::Sequence(children)
            } else {
                Node::Set(children)
            })
        }
        ScheduleNodeType::Filter => Err(unsupported("stray filter")),
        ScheduleNodeType::Mark => Err(unsupported("mark")),
        ScheduleNodeType::Context => Err(unsupported("context")),
        ScheduleNodeType::Guard => Err(unsupported("guard")),
        ScheduleNodeType::Extension => Err(unsupported("extension")),
        ScheduleNodeType::Expansion => Err(unsupported("expansion")),
        ScheduleNodeType::Domain => Err(unsupported("nested domain")),
        ScheduleNodeType::Error => Err(IslError::Isl("invalid schedule node".into())),
    }
}

/// Writes `tree` at `node` (a leaf); returns the node positioned at the written subtree's
/// root.
fn write_node(ctx: &Ctx, node: ScheduleNode, tree: &Node) -> IslResult<ScheduleNode> {
    match tree {
        Node::Leaf => Ok(node),
        Node::Band(b) => {
            let mupa = ctx.check(MultiUnionPwAff::from_union_map(b.schedule()?.to_raw()))?;
            let mut node = ctx.check(node.insert_partial_schedule(mupa))?;
            node = ctx.check(node.band_set_permutable(b.permutable as i32))?;
            for (k, &c) in b.coincident.iter().enumerate() {
                node = ctx.check(node.band_member_set_coincident(k as i32, c as i32))?;
            }
            let child = write_node(ctx, ctx.check(node.child(0))?, &b.child)?;
            ctx.check(child.parent())
        }
        Node::Sequence(cs) | Node::Set(cs) => {
            let mut list = ctx.check(UnionSetList::alloc(ctx.raw(), cs.len() as i32))?;
            for c in cs {
                list = ctx.check(list.add(c.filter.to_raw()))?;
            }
            let mut node = if matches!(tree, Node::Sequence(_)) {
                ctx.check(node.insert_sequence(list))?
            } else {
                ctx.check(node.insert_set(list))?
            };
            for (k, c) in cs.iter().enumerate() {
                let leaf = ctx.check(ctx.check(node.child(k as i32))?.child(0))?;
                let written = write_node(ctx, leaf, &c.child)?;
                node = ctx.check(ctx.check(written.parent())?.parent())?;
            }
            Ok(node)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_the_flat_schedule() {
        let ctx = Ctx::default();
        let text = "{ domain: \"[N] -> { S[i, j] : 0 <= i, j < N; T[i] : 0 <= i < N }\", \
                    child: { schedule: \"[{ S[i, j] -> [(i)]; T[i] -> [(i)] }]\", \
                    child: { sequence: [ { filter: \"{ S[i, j] }\", child: { schedule: \"[{ S[i, j] -> [(j)] }]\" } }, \
                    { filter: \"{ T[i] }\" } ] } } }";
        let sched = ctx.schedule(text).unwrap();
        let tree = Tree::from_schedule(&sched).unwrap();
        let Node::Band(b) = &tree.root else {
            panic!("expected a band")
        };
        assert_eq!(b.members.len(), 1);
        assert!(matches!(*b.child, Node::Sequence(ref cs) if cs.len() == 2));
        let again = tree.to_schedule().unwrap();
        assert_eq!(again.map().unwrap(), sched.map().unwrap());
    }
}
