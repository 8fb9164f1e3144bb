//! Transformations of schedule trees: tiling, wavefront, intra-tile reordering, parallel
//! marking, distribution and fusion.
//!
//! Each works on a [`Tree`]. [`optimize`] chains them in the usual order (fusion policy,
//! band merging, tiling, wavefront, reordering), recomputes the parallel marks after each
//! step, and keeps a step only if the result is still legal; a refused step is reported
//! with its reason.

pub mod analysis;
pub mod diamond;
pub mod fusion;
pub mod interleave;
pub mod iss;
pub mod note;
pub mod register_tile;
pub mod reorder;
pub mod summary;
pub mod tile;
pub mod tile_size;
pub mod tree;
pub mod wavefront;

pub use analysis::TreeDeps;
pub use note::{KeepOriginal, Note, Refusal, Step};
pub use tree::{BandKind, BandNode, Filtered, Node, Tree};

use crate::legality::tree_order::unordered;
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
    /// The register blocks of innermost reduction bands ([`register_tile`]), for which the model then sizes those it holds in
    /// registers (`None`: no register tiling follows).
    pub register: Option<tile_size::RegisterBlocks>,
    /// Index-set splitting: bands whose carried dependences all run from one part of
    /// their instances to another split into a sequence of the two ([`iss`]).
    pub iss: bool,
    /// Diamond tiling: in tiled bands that would start their tiles in a pipeline, the
    /// time loop's tiles replaced by those of its cone complement ([`diamond`]).
    pub diamond: bool,
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
    /// What was done and what was refused.
    pub notes: Vec<Note>,
    /// The dependences the tree was checked against, for steps that follow.
    pub deps: TreeDeps,
}

/// Applies the selected transformations to a schedule: the optimizer's transformation
/// stage alone, with no cost decision, no register tiling and no final legality check (what
/// `polyc compare` tabulates). What a back end compiles comes from
/// [`crate::optimizer::optimize`].
pub fn optimize(
    problem: &Problem,
    schedule: &poly::isl::Schedule,
    options: &TransformOptions,
) -> IslResult<Optimized> {
    let mut staged = Staged::merged(problem, schedule, options)?;
    staged.tile()?;
    staged.finish()
}

/// A tree part-way through [`optimize`], whose steps it takes in order: [`Staged::merged`]
/// (fusion policy, band merging), [`Staged::tile`], [`Staged::finish`] (wavefront,
/// intra-tile reordering). A caller that weighs the tree between steps (the back end's
/// pipeline asks whether the wavefront would have to skew it) goes on from there instead
/// of starting over.
#[derive(Clone)]
pub struct Staged<'a> {
    problem: &'a Problem<'a>,
    options: &'a TransformOptions,
    deps: TreeDeps,
    sizer: Option<tile_size::TileSizer<'a>>,
    tree: Tree,
    notes: Vec<Note>,
}

impl<'a> Staged<'a> {
    /// Applies the fusion policy of `options` to `schedule`, then merges bands.
    pub fn merged(
        problem: &'a Problem<'a>,
        schedule: &poly::isl::Schedule,
        options: &'a TransformOptions,
    ) -> IslResult<Staged<'a>> {
        // An independent analysis: it gets a fresh isl operation budget.
        let _analysis = problem.program.ctx.analysis();
        let deps = TreeDeps::of(problem)?;
        let mut tree = Tree::from_schedule(schedule)?;
        analysis::annotate(&mut tree, &deps)?;
        let mut notes = Vec::new();
        if let Some(policy) = options.fuse {
            let (fused, report) = fusion::apply_policy(&tree, &deps, policy)?;
            notes.push(Note::FusionPolicy {
                policy,
                changes: report.applied,
            });
            notes.extend(report.refused);
            tree = fused;
        }
        let sizer = (options.tile.as_deref()).map(|sizes| {
            tile_size::TileSizer::new(problem.program, options.machine, sizes, options.register)
        });
        let mut staged = Staged {
            problem,
            options,
            deps,
            sizer,
            tree,
            notes,
        };
        staged.step(Step::MergeBands, &|t, deps| merge_bands(t, &deps.validity))?;
        if options.iss {
            staged.step(Step::IndexSetSplitting, &iss::split_index_sets)?;
        }
        Ok(staged)
    }

    /// Tiles with the sizes of the options (and again with the second-level sizes), if they
    /// ask for tiles.
    pub fn tile(&mut self) -> IslResult<()> {
        let program = self.problem.program;
        if let Some(sizer) = &self.sizer {
            let _analysis = self.problem.program.ctx.analysis();
            let tiled = tile::tile_by(&self.tree, program, &|b, at| Ok(sizer.sizes(b, at)))?;
            self.accept(Step::Tiling, tiled)?;
            if self.options.diamond {
                self.step(Step::DiamondTiling, &|t, deps| {
                    diamond::diamond(t, &deps.validity)
                })?;
            }
            if let Some(sizes2) = &self.options.tile2 {
                self.step(Step::SecondLevelTiling, &|t, _| tile::tile_tiles(t, sizes2))?;
            }
        }
        Ok(())
    }

    /// The tree so far, annotated.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// Exposes parallelism if the options ask for it (wavefront, then intra-tile
    /// reordering) and hands over the result.
    pub fn finish(self) -> IslResult<Optimized> {
        self.finish_with(true)
    }

    /// [`Staged::finish`] without the wavefront: the loop order kept as it is, with the
    /// parallel loops it has (what the optimizer does with the original order it falls back
    /// on: skewed, a serial loop over parallel rows becomes a diagonal walk).
    pub fn finish_unskewed(self) -> IslResult<Optimized> {
        self.finish_with(false)
    }

    fn finish_with(mut self, wavefront: bool) -> IslResult<Optimized> {
        if self.options.parallel {
            let _analysis = self.problem.program.ctx.analysis();
            if wavefront {
                self.step(Step::Wavefront, &|t, deps| {
                    wavefront::wavefront(t, &deps.all)
                })?;
            }
            let program = self.problem.program;
            self.step(Step::IntraTileReordering, &|t, _| {
                reorder::reorder_for_stride(t, program)
            })?;
        }
        let mut notes = self.notes;
        notes.extend(
            (self.sizer.iter())
                .flat_map(|s| s.notes())
                .map(Note::TileSizes),
        );
        Ok(Optimized {
            tree: self.tree,
            notes,
            deps: self.deps,
        })
    }

    /// Applies `f` to the tree and keeps the result if it is legal.
    fn step(
        &mut self,
        name: Step,
        f: &dyn Fn(&Tree, &TreeDeps) -> IslResult<Tree>,
    ) -> IslResult<()> {
        let next = f(&self.tree, &self.deps)?;
        self.accept(name, next)
    }

    /// Keeps `next` in place of the tree if it is legal, with a note either way; a tree
    /// that is the current one unchanged is neither analysed again nor noted.
    fn accept(&mut self, name: Step, mut next: Tree) -> IslResult<()> {
        if next.root.is_same(&self.tree.root) {
            return Ok(());
        }
        analysis::annotate(&mut next, &self.deps)?;
        match unordered(&next, &self.deps.validity)? {
            None => {
                self.notes.push(Note::Applied(name));
                self.tree = next;
            }
            Some(pairs) => (self.notes).push(Note::Refused(name, Refusal::Illegal(pairs))),
        }
        Ok(())
    }
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
    let inside = analysis::live_in_children(live, children)?;
    let mut inside = inside.iter();
    map_children_filtered(children, |_, c| {
        f(c, inside.next().expect("one live relation per child"))
    })
}

/// The same children with `f` applied to each subtree, the pairs of `valid` and of `all`
/// live within it (one pass over each relation).
fn map_children_live_both(
    children: &[Filtered],
    valid: &UnionMap,
    all: &UnionMap,
    mut f: impl FnMut(&Node, &UnionMap, &UnionMap) -> IslResult<Node>,
) -> IslResult<Vec<Filtered>> {
    let valid_in = analysis::live_in_children(valid, children)?;
    let all_in = analysis::live_in_children(all, children)?;
    let mut inside = valid_in.iter().zip(&all_in);
    map_children_filtered(children, |_, c| {
        let (valid, all) = inside.next().expect("one live relation per child");
        f(c, valid, all)
    })
}

/// The same children with `f` applied to each subtree.
pub(crate) fn map_children(
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
