//! Transformations of schedule trees: tiling, wavefront, intra-tile reordering, parallel
//! marking, distribution and fusion.
//!
//! Each works on a [`Tree`]. [`optimize`] chains them in the usual order (fusion policy,
//! band merging, tiling, wavefront, reordering), recomputes the parallel marks after each
//! step, and keeps a step only if the result is still legal; a refused step is reported
//! with its reason.

pub mod analysis;
pub mod fusion;
pub mod reorder;
pub mod summary;
pub mod tile;
pub mod tile_size;
pub mod tree;
pub mod wavefront;

pub use analysis::TreeDeps;
pub use tree::{BandKind, BandNode, Filtered, Node, Tree};

use crate::{FusePolicy, Problem};
use poly::isl::{IslResult, UnionMap};
use std::num::NonZeroU32;

/// Which transformations to apply.
#[derive(Clone, Debug, Default)]
pub struct TransformOptions {
    /// Re-decide fusion with this policy (`None`: keep the scheduler's decisions).
    pub fuse: Option<FusePolicy>,
    /// Tile permutable bands with these sizes, one per member; members beyond the list get
    /// the cache model's choice ([`tile_size`]) (`None`: no tiling).
    pub tile: Option<Vec<NonZeroU32>>,
    /// The caches the model sizes tiles for.
    pub machine: tile_size::Machine,
    /// Tile the tile loops again with these sizes.
    pub tile2: Option<Vec<NonZeroU32>>,
    /// Expose parallelism: wavefront where no outer loop is parallel, then move a stride-1
    /// parallel loop innermost.
    pub parallel: bool,
}

/// The result of [`optimize`].
#[derive(Clone, Debug)]
pub struct Optimized {
    /// The transformed tree, with permutability and parallel marks computed.
    pub tree: Tree,
    /// What was done and what was refused, one line each.
    pub notes: Vec<String>,
}

/// Applies the selected transformations to a schedule.
pub fn optimize(
    problem: &Problem,
    schedule: &poly::isl::Schedule,
    options: &TransformOptions,
) -> IslResult<Optimized> {
    // An independent analysis: it gets a fresh isl operation budget.
    problem.program.ctx.reset_budget();
    let deps = TreeDeps::of(problem)?;
    let mut tree = Tree::from_schedule(schedule)?;
    analysis::annotate(&mut tree, &deps)?;
    let mut notes = Vec::new();
    if let Some(policy) = options.fuse {
        let (fused, report) = fusion::apply_policy(&tree, &deps, policy)?;
        notes.push(format!("fusion ({policy:?}): {} change(s)", report.applied));
        notes.extend(report.refused);
        tree = fused;
    }
    let mut step = |name: &str, f: &dyn Fn(&Tree) -> IslResult<Tree>| -> IslResult<()> {
        let mut next = f(&tree)?;
        analysis::annotate(&mut next, &deps)?;
        match analysis::violation(&next, &deps.validity)? {
            None => {
                notes.push(format!("{name}: applied"));
                tree = next;
            }
            Some(why) => notes.push(format!("{name} refused: {why}")),
        }
        Ok(())
    };
    step("merge permutable bands", &|t| {
        merge_bands(t, &deps.validity)
    })?;
    let sizer = (options.tile.as_deref())
        .map(|sizes| tile_size::TileSizer::new(problem.program, options.machine, sizes));
    if let Some(sizer) = &sizer {
        step("tiling", &|t| {
            tile::tile_by(t, problem.program, &|b, at| Ok(sizer.sizes(b, at)))
        })?;
        if let Some(sizes2) = &options.tile2 {
            step("second-level tiling", &|t| tile::tile_tiles(t, sizes2))?;
        }
    }
    if options.parallel {
        step("wavefront", &wavefront::wavefront)?;
        step("intra-tile reordering", &|t| {
            reorder::reorder_for_stride(t, problem.program)
        })?;
    }
    notes.extend(sizer.iter().flat_map(|s| s.notes()));
    Ok(Optimized { tree, notes })
}

/// Merges each band with a band child when all their members together are permutable
/// (one-row bands from Feautrier's scheduler or the original loop nest become one band).
pub fn merge_bands(tree: &Tree, validity: &UnionMap) -> IslResult<Tree> {
    Ok(Tree {
        domain: tree.domain.clone(),
        root: merge_node(&tree.root, validity)?,
    })
}

fn merge_node(node: &Node, live: &UnionMap) -> IslResult<Node> {
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) => {
            let mut band = b.clone();
            if analysis::permutable(live, &band.members)? {
                while let Node::Band(inner) = &*band.child {
                    let mut members = band.members.clone();
                    members.extend(inner.members.iter().cloned());
                    if inner.kind != band.kind || !analysis::permutable(live, &members)? {
                        break;
                    }
                    let mut coincident = band.coincident.clone();
                    coincident.extend(&inner.coincident);
                    band = BandNode {
                        members,
                        permutable: true,
                        coincident,
                        kind: band.kind.clone(),
                        child: inner.child.clone(),
                    };
                }
            }
            let below = analysis::live_below(live, &band.members)?;
            band.child = Box::new(merge_node(&band.child, &below)?);
            Node::Band(band)
        }
        Node::Sequence(cs) => Node::Sequence(map_children_live(cs, live, merge_node)?),
        Node::Set(cs) => Node::Set(map_children_live(cs, live, merge_node)?),
    })
}

/// The same children with `f` applied to each subtree and the live pairs within it.
fn map_children_live(
    children: &[Filtered],
    live: &UnionMap,
    mut f: impl FnMut(&Node, &UnionMap) -> IslResult<Node>,
) -> IslResult<Vec<Filtered>> {
    map_children_filtered(children, |filter, c| {
        f(c, &analysis::live_in(live, filter)?)
    })
}

/// The same children with `f` applied to each subtree.
fn map_children(
    children: &[Filtered],
    mut f: impl FnMut(&Node) -> IslResult<Node>,
) -> IslResult<Vec<Filtered>> {
    map_children_filtered(children, |_, c| f(c))
}

fn map_children_filtered(
    children: &[Filtered],
    mut f: impl FnMut(&poly::isl::UnionSet, &Node) -> IslResult<Node>,
) -> IslResult<Vec<Filtered>> {
    children
        .iter()
        .map(|c| {
            Ok(Filtered {
                filter: c.filter.clone(),
                child: f(&c.filter, &c.child)?,
            })
        })
        .collect()
}
