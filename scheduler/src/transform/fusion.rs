//! Loop distribution and fusion.
//!
//! - Distribution splits the outermost band of each nest into a sequence of copies, one
//!   per strongly connected component of the statements' live dependences, in a
//!   topological order.
//! - Fusion merges adjacent children of a sequence that both start with a band of the same
//!   depth into one band over both, followed by a sequence of their subtrees.
//!
//! Each candidate is checked on the instances it concerns (the dependences still live
//! where it happens); an illegal one is refused with the reason.

use super::analysis::{self, live_below, live_in, TreeDeps};
use super::note::{Note, Refusal, Step};
use super::tree::{BandKind, BandNode, Filtered, Node, Tree};
use crate::legality::tree_order::unordered;
use crate::FusePolicy;
use poly::isl::{IslResult, UnionMap, UnionSet};

/// What a fusion or distribution pass did.
#[derive(Clone, Debug, Default)]
pub struct FusionReport {
    /// How many bands were split or merged.
    pub applied: usize,
    /// The candidates refused, and why.
    pub refused: Vec<Note>,
}

/// Applies a fusion policy: `None` distributes, `Max` fuses whatever is legal, `Smart`
/// fuses when the fused band keeps as many parallel members as the better of the two.
pub fn apply_policy(
    tree: &Tree,
    deps: &TreeDeps,
    policy: FusePolicy,
) -> IslResult<(Tree, FusionReport)> {
    let mut report = FusionReport::default();
    let root = match policy {
        FusePolicy::None => distribute(&tree.root, &deps.validity, &mut report)?,
        FusePolicy::Smart | FusePolicy::Max => {
            fuse(&tree.root, &deps.validity, deps, policy, &mut report)?
        }
    };
    let mut out = Tree {
        domain: tree.domain.clone(),
        root,
    };
    analysis::annotate(&mut out, deps)?;
    Ok((out, report))
}

fn distribute(node: &Node, live: &UnionMap, report: &mut FusionReport) -> IslResult<Node> {
    match node {
        Node::Leaf => Ok(Node::Leaf),
        Node::Band(b) => {
            let domain = band_domain(b)?;
            let groups = components(&domain, &live_in(live, &domain)?)?;
            if groups.len() < 2 {
                return Ok(node.clone());
            }
            let children = groups
                .iter()
                .map(|g| {
                    Ok(Filtered {
                        filter: g.clone(),
                        child: node.restrict(g)?,
                    })
                })
                .collect::<IslResult<Vec<_>>>()?;
            let split = Tree {
                domain,
                root: Node::Sequence(children),
            };
            match unordered(&split, live)? {
                None => {
                    report.applied += 1;
                    Ok(split.root)
                }
                Some(pairs) => {
                    (report.refused)
                        .push(Note::Refused(Step::Distribution, Refusal::Illegal(pairs)));
                    Ok(node.clone())
                }
            }
        }
        Node::Sequence(cs) => Ok(Node::Sequence(super::map_children_live(
            cs,
            live,
            |c, l| distribute(c, l, report),
        )?)),
        Node::Set(cs) => Ok(Node::Set(super::map_children_live(cs, live, |c, l| {
            distribute(c, l, report)
        })?)),
    }
}

fn fuse(
    node: &Node,
    live: &UnionMap,
    deps: &TreeDeps,
    policy: FusePolicy,
    report: &mut FusionReport,
) -> IslResult<Node> {
    match node {
        Node::Leaf => Ok(Node::Leaf),
        Node::Band(b) => Ok(Node::Band(BandNode {
            child: Box::new(fuse(
                &b.child,
                &live_below(live, &b.members)?,
                deps,
                policy,
                report,
            )?),
            ..b.clone()
        })),
        Node::Set(cs) => Ok(Node::Set(super::map_children_live(cs, live, |c, l| {
            fuse(c, l, deps, policy, report)
        })?)),
        Node::Sequence(cs) => {
            let mut out: Vec<Filtered> = Vec::new();
            for c in cs {
                let merged = match out.last() {
                    Some(prev) => try_fuse(prev, c, live, deps, policy, report)?,
                    None => None,
                };
                match merged {
                    Some(m) => *out.last_mut().expect("checked above") = m,
                    None => out.push(c.clone()),
                }
            }
            let out =
                super::map_children_live(&out, live, |c, l| fuse(c, l, deps, policy, report))?;
            Ok(if out.len() == 1 {
                out.into_iter().next().expect("one child").child
            } else {
                Node::Sequence(out)
            })
        }
    }
}

/// The fusion of two adjacent sequence children, if both start with bands of one depth and
/// fusing them is legal (and, under `Smart`, costs no parallel member).
fn try_fuse(
    a: &Filtered,
    b: &Filtered,
    live: &UnionMap,
    deps: &TreeDeps,
    policy: FusePolicy,
    report: &mut FusionReport,
) -> IslResult<Option<Filtered>> {
    let (Node::Band(ba), Node::Band(bb)) = (&a.child, &b.child) else {
        return Ok(None);
    };
    if ba.members.len() != bb.members.len() {
        return Ok(None);
    }
    let members = ba
        .members
        .iter()
        .zip(&bb.members)
        .map(|(x, y)| x.union(y))
        .collect::<IslResult<Vec<_>>>()?;
    let filter = a.filter.union(&b.filter)?;
    let mut fused = Tree {
        domain: filter.clone(),
        root: Node::Band(BandNode {
            members,
            permutable: false,
            coincident: Vec::new(),
            kind: BandKind::Loop,
            child: Box::new(Node::Sequence(vec![
                Filtered {
                    filter: a.filter.clone(),
                    child: (*ba.child).clone(),
                },
                Filtered {
                    filter: b.filter.clone(),
                    child: (*bb.child).clone(),
                },
            ])),
        }),
    };
    if let Some(pairs) = unordered(&fused, &live_in(live, &filter)?)? {
        (report.refused).push(Note::Refused(Step::Fusion, Refusal::Illegal(pairs)));
        return Ok(None);
    }
    let local = TreeDeps {
        validity: live_in(live, &filter)?,
        all: live_in(&deps.all, &filter)?,
    };
    analysis::annotate(&mut fused, &local)?;
    if policy == FusePolicy::Smart {
        let parallel = |n: &Node| match n {
            Node::Band(b) => analysis::coincident_count(b),
            _ => 0,
        };
        let before = parallel(&a.child).max(parallel(&b.child));
        if parallel(&fused.root) < before {
            (report.refused).push(Note::Refused(Step::Fusion, Refusal::CostsParallelism));
            return Ok(None);
        }
        // Nor a band that could be tiled deeper apart (ludcmp's `(i, j, k)` once its
        // scalar is expanded, fused with the copies into the expanded array at `(i, j)`).
        let deepest =
            |child: &Node, filter: &UnionSet| deepest_band(child, filter, &live_in(live, filter)?);
        let apart = deepest(&a.child, &a.filter)?.max(deepest(&b.child, &b.filter)?);
        if deepest(&fused.root, &filter)? < apart {
            (report.refused).push(Note::Refused(Step::Fusion, Refusal::ShallowerBands));
            return Ok(None);
        }
    }
    report.applied += 1;
    Ok(Some(Filtered {
        filter,
        child: fused.root,
    }))
}

/// The instances a band schedules.
pub(super) fn band_domain(b: &BandNode) -> IslResult<UnionSet> {
    b.members[0].domain()
}

/// The statements of `domain` grouped into strongly connected components of `live`, in a
/// topological order (textual order among independent components).
fn components(domain: &UnionSet, live: &UnionMap) -> IslResult<Vec<UnionSet>> {
    let sets = domain.sets()?;
    let names: Vec<String> = sets
        .iter()
        .map(|s| s.tuple_name().unwrap_or_default())
        .collect();
    let n = sets.len();
    let mut reach = vec![vec![false; n]; n];
    for m in live.maps()? {
        let from = m.domain()?.tuple_name();
        let to = m.range()?.tuple_name();
        let pos = |t: &Option<String>| names.iter().position(|x| Some(x) == t.as_ref());
        if let (Some(i), Some(j)) = (pos(&from), pos(&to)) {
            reach[i][j] = true;
        }
    }
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                if reach[i][k] && reach[k][j] {
                    reach[i][j] = true;
                }
            }
        }
    }
    // Components, each named by its members; ordered so that no component precedes one it
    // depends on.
    let mut comps: Vec<Vec<usize>> = Vec::new();
    for (i, from_i) in reach.iter().enumerate() {
        if !comps.iter().any(|c| c.contains(&i)) {
            comps.push(
                (0..n)
                    .filter(|&j| j == i || (from_i[j] && reach[j][i]))
                    .collect(),
            );
        }
    }
    let mut ordered: Vec<Vec<usize>> = Vec::new();
    while !comps.is_empty() {
        let ready = comps
            .iter()
            .position(|c| {
                !comps.iter().any(|d| {
                    !std::ptr::eq(c, d) && d.iter().any(|&x| c.iter().any(|&y| reach[x][y]))
                })
            })
            .expect("the condensation of a graph is acyclic");
        ordered.push(comps.remove(ready));
    }
    ordered
        .iter()
        .map(|c| {
            let mut u = sets[c[0]].to_union()?;
            for &k in &c[1..] {
                u = u.union(&sets[k].to_union()?)?;
            }
            Ok(u)
        })
        .collect()
}

/// Distributes, at any depth, each band whose strongly connected components, each in its
/// own copy of the band, have more parallel members between them than the band has fused
/// (the `smart` policy's rule inside the nests: a reduction in one statement no longer
/// makes the loop of the others serial), or, when the whole band cannot be distributed so,
/// its inner members alone under a band of its outer ones. Returns the tree and how many
/// bands were split.
pub fn distribute_for_parallelism(tree: &Tree, deps: &TreeDeps) -> IslResult<(Tree, usize)> {
    let mut split = 0;
    let root = split_where_parallel(&tree.root, &deps.validity, &deps.all, 0, &mut split)?;
    Ok((
        Tree {
            domain: tree.domain.clone(),
            root,
        },
        split,
    ))
}

/// `b` with its members from the `p`-th on distributed ([`distribute`]) under a band of
/// the first `p` (the whole band when `p` is 0); `live` is what is live at `b`.
fn distribute_after(
    b: &BandNode,
    p: usize,
    live: &UnionMap,
    report: &mut FusionReport,
) -> IslResult<Node> {
    if p == 0 {
        return distribute(&Node::Band(b.clone()), live, report);
    }
    let part = |members: &[UnionMap], coincident: &[bool], child: Node| BandNode {
        members: members.to_vec(),
        coincident: coincident.to_vec(),
        child: Box::new(child),
        ..b.clone()
    };
    let inner = Node::Band(part(
        &b.members[p..],
        &b.coincident[p..],
        (*b.child).clone(),
    ));
    let below = live_below(live, &b.members[..p])?;
    let distributed = distribute(&inner, &below, report)?;
    Ok(Node::Band(part(
        &b.members[..p],
        &b.coincident[..p],
        distributed,
    )))
}

/// The most members of a band under `node` once its bands are merged ([`super::merge_bands`]).
fn deepest_band(node: &Node, domain: &UnionSet, live: &UnionMap) -> IslResult<usize> {
    fn most(node: &Node) -> usize {
        let below = node.children().into_iter().map(|(_, c)| most(c)).max();
        let here = match node {
            Node::Band(b) => b.members.len(),
            _ => 0,
        };
        here.max(below.unwrap_or(0))
    }
    let tree = Tree {
        domain: domain.clone(),
        root: node.clone(),
    };
    Ok(most(&super::merge_bands(&tree, live)?.root))
}

/// [`distribute_for_parallelism`] on `node`, below `depth` band members.
fn split_where_parallel(
    node: &Node,
    valid: &UnionMap,
    all: &UnionMap,
    depth: usize,
    split: &mut usize,
) -> IslResult<Node> {
    match node {
        Node::Leaf => Ok(Node::Leaf),
        Node::Band(b) => {
            let domain = band_domain(b)?;
            let local = TreeDeps {
                validity: live_in(valid, &domain)?,
                all: live_in(all, &domain)?,
            };
            // The fused band's figures, computed once and only for a candidate (most bands
            // have no component to distribute and need neither).
            let (mut fused, mut fused_depth) = (None, None);
            // The whole band distributed, else cut after its first `p` members with only
            // the rest distributed (gramschmidt's `(k, j)`: the column loop `j` of its
            // updates is parallel once the pivot column's statements, at `j = k`, have a
            // copy of their own; the whole band cannot be split, `k` carries a cycle). A
            // cut must leave a band as deep as the fused one, once merged: cutting lu's
            // `(i, j, k)` after `i` gains parallel loops but loses the 3-d tiles, and ran
            // 2x slower.
            for p in 0..b.members.len() {
                let mut attempt = FusionReport::default();
                let distributed = distribute_after(b, p, valid, &mut attempt)?;
                if attempt.applied == 0 {
                    continue;
                }
                let fused = match fused {
                    Some(n) => n,
                    None => *fused.insert(parallel_members(node, &domain, &local, depth)?),
                };
                if parallel_members(&distributed, &domain, &local, depth)? <= fused {
                    continue;
                }
                let deep_enough = p == 0 || {
                    let before = match fused_depth {
                        Some(d) => d,
                        None => *fused_depth.insert(deepest_band(node, &domain, &local.validity)?),
                    };
                    deepest_band(&distributed, &domain, &local.validity)? >= before
                };
                if deep_enough {
                    *split += 1;
                    return split_where_parallel(&distributed, valid, all, depth, split);
                }
            }
            Ok(Node::Band(BandNode {
                child: Box::new(split_where_parallel(
                    &b.child,
                    &live_below(valid, &b.members)?,
                    &live_below(all, &b.members)?,
                    depth + b.members.len(),
                    split,
                )?),
                ..b.clone()
            }))
        }
        Node::Sequence(cs) => Ok(Node::Sequence(super::map_children_live_both(
            cs,
            valid,
            all,
            |c, valid, all| split_where_parallel(c, valid, all, depth, split),
        )?)),
        Node::Set(cs) => Ok(Node::Set(super::map_children_live_both(
            cs,
            valid,
            all,
            |c, valid, all| split_where_parallel(c, valid, all, depth, split),
        )?)),
    }
}

/// The parallel loops under `node` ([`analysis::parallel_loops`]), marked from `deps`;
/// `depth` band members lie above it.
pub(super) fn parallel_members(
    node: &Node,
    domain: &UnionSet,
    deps: &TreeDeps,
    depth: usize,
) -> IslResult<usize> {
    let mut tree = Tree {
        domain: domain.clone(),
        root: node.clone(),
    };
    analysis::annotate(&mut tree, deps)?;
    analysis::parallel_loops(&tree, depth)
}
