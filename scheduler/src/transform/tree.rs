//! A schedule tree as a Rust value, converted from and to isl's `isl_schedule`.
//!
//! Transformations rebuild subtrees freely (split a band, fuse two siblings, permute
//! members), which isl's node cursor API makes awkward; here a tree is an ordinary enum and
//! each band member is a union map from statement instances to one time coordinate.

use poly::isl::{IslError, IslResult, NodeKind, Schedule, ScheduleNode, UnionMap, UnionSet};

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
            all = all.flat_range_product(m)?;
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
        let root = schedule.root()?;
        Ok(Tree {
            domain: root.domain_instances()?,
            root: first_child(&root)?,
        })
    }

    /// Builds the isl schedule tree.
    pub fn to_schedule(&self) -> IslResult<Schedule> {
        let leaf = Schedule::from_domain(&self.domain)?.root()?.child(0)?;
        write_node(&leaf, &self.root)?.schedule()
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
                    .all(|(x, y)| x.filter.is_same_object(&y.filter) && x.child.is_same(&y.child))
        };
        match (self, other) {
            (Node::Leaf, Node::Leaf) => true,
            (Node::Band(a), Node::Band(b)) => {
                a.kind == b.kind
                    && a.members.len() == b.members.len()
                    && a.members
                        .iter()
                        .zip(&b.members)
                        .all(|(x, y)| x.is_same_object(y))
                    && a.child.is_same(&b.child)
            }
            (Node::Sequence(a), Node::Sequence(b)) | (Node::Set(a), Node::Set(b)) => {
                same_children(a, b)
            }
            _ => false,
        }
    }

    /// The same subtree restricted to the instances in `filter` (empty children dropped, a
    /// sequence or set left with one child replaced by that child).
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
            Node::Sequence(cs) | Node::Set(cs) => {
                let mut kept = restrict_children(cs, filter)?;
                match (kept.len(), self) {
                    // One child left: its filter holds every instance left, and a band
                    // above can merge with a band below.
                    (1, _) => kept.remove(0).child,
                    (_, Node::Sequence(_)) => Node::Sequence(kept),
                    _ => Node::Set(kept),
                }
            }
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

/// The subtree below `node` (a leaf if it has no child).
fn first_child(node: &ScheduleNode) -> IslResult<Node> {
    if node.n_children()? == 0 {
        Ok(Node::Leaf)
    } else {
        read_node(&node.child(0)?)
    }
}

fn read_node(node: &ScheduleNode) -> IslResult<Node> {
    match node.kind()? {
        NodeKind::Leaf => Ok(Node::Leaf),
        NodeKind::Band => {
            let members = node.band_members()?;
            if members.is_empty() {
                return first_child(node);
            }
            Ok(Node::Band(BandNode {
                members,
                permutable: node.band_permutable()?,
                coincident: node.band_coincident()?,
                kind: BandKind::Loop,
                child: Box::new(first_child(node)?),
            }))
        }
        kind @ (NodeKind::Sequence | NodeKind::Set) => {
            let children = (0..node.n_children()?)
                .map(|k| {
                    let f = node.child(k)?;
                    Ok(Filtered {
                        filter: f.filter()?,
                        child: first_child(&f)?,
                    })
                })
                .collect::<IslResult<Vec<_>>>()?;
            Ok(if kind == NodeKind::Sequence {
                Node::Sequence(children)
            } else {
                Node::Set(children)
            })
        }
        NodeKind::Filter => Err(unsupported("stray filter")),
        NodeKind::Mark => Err(unsupported("mark")),
        NodeKind::Domain => Err(unsupported("nested domain")),
        NodeKind::Other => Err(unsupported("context, guard, extension or expansion")),
    }
}

/// Writes `tree` at `node` (a leaf); returns the node positioned at the written subtree's
/// root.
fn write_node(node: &ScheduleNode, tree: &Node) -> IslResult<ScheduleNode> {
    match tree {
        Node::Leaf => Ok(node.clone()),
        Node::Band(b) => {
            let mut band = node
                .insert_band(&b.schedule()?)?
                .with_permutable(b.permutable)?;
            for (k, &c) in b.coincident.iter().enumerate() {
                band = band.with_coincident(k, c)?;
            }
            write_node(&band.child(0)?, &b.child)?.parent()
        }
        Node::Sequence(cs) | Node::Set(cs) => {
            let filters: Vec<&UnionSet> = cs.iter().map(|c| &c.filter).collect();
            let mut node = node.insert_children(&filters, matches!(tree, Node::Sequence(_)))?;
            for (k, c) in cs.iter().enumerate() {
                let leaf = node.child(k)?.child(0)?;
                node = write_node(&leaf, &c.child)?.parent()?.parent()?;
            }
            Ok(node)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poly::isl::Ctx;

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
