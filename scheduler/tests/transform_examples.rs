//! Transformations on example kernels keep schedules legal and do what they promise.

mod transform_support;

use scheduler::legality::tree_order::unordered;
use scheduler::transform::tile::DEFAULT_TILE_SIZE;
use scheduler::transform::{analysis, reorder, tile, wavefront, Node, Tree, TreeDeps};
use transform_support::{assert_legal, load, Loaded};

/// gemm's update statement alone in one (i, j, k) band, as a tree with flags computed.
fn gemm_ijk(loaded: &Loaded) -> Tree {
    let ctx = &loaded.program.ctx;
    let domain = loaded.program.domains().unwrap();
    let text = format!(
        "{{ domain: \"{domain}\", child: {{ sequence: [ \
         {{ filter: \"{{ S0[i, j] }}\", child: {{ schedule: \"[{{ S0[i, j] -> [(i)] }}, {{ S0[i, j] -> [(j)] }}]\" }} }}, \
         {{ filter: \"{{ S1[i, k, j] }}\", child: {{ schedule: \"[{{ S1[i, k, j] -> [(i)] }}, {{ S1[i, k, j] -> [(j)] }}, {{ S1[i, k, j] -> [(k)] }}]\" }} }} ] }} }}"
    );
    let mut tree = Tree::from_schedule(&ctx.schedule(&text).unwrap()).unwrap();
    analysis::annotate(&mut tree, &TreeDeps::of(&loaded.problem()).unwrap()).unwrap();
    tree
}

fn update_band(tree: &Tree) -> &scheduler::transform::BandNode {
    let Node::Sequence(cs) = &tree.root else {
        panic!("expected a sequence")
    };
    let Node::Band(b) = &cs[1].child else {
        panic!("expected a band")
    };
    b
}

fn depth(node: &Node) -> usize {
    match node {
        Node::Band(b) => b.members.len() + depth(&b.child),
        other => other
            .children()
            .iter()
            .map(|(_, c)| depth(c))
            .max()
            .unwrap_or(0),
    }
}

#[test]
fn tiling_gemm_gives_a_legal_six_deep_schedule() {
    let loaded = load("polybench/gemm");
    let tree = gemm_ijk(&loaded);
    assert!(update_band(&tree).permutable);
    let tiled = tile::tile(&tree, &[DEFAULT_TILE_SIZE]).unwrap();
    let Node::Sequence(cs) = &tiled.root else {
        panic!()
    };
    assert_eq!(depth(&cs[1].child), 6);
    assert_legal(&loaded, &tiled.to_schedule().unwrap());
}

#[test]
fn intra_tile_reordering_puts_j_innermost_in_gemm() {
    let loaded = load("polybench/gemm");
    let tree = gemm_ijk(&loaded);
    let b = update_band(&tree);
    assert_eq!(b.coincident, vec![true, true, false]);
    let reordered = reorder::reorder_for_stride(&tree, &loaded.program).unwrap();
    let j = loaded
        .program
        .ctx
        .union_map("{ S1[i, k, j] -> [j] }")
        .unwrap();
    let last = update_band(&reordered).members.last().unwrap();
    assert!(
        last.is_subset(&j).unwrap() && !last.is_empty().unwrap(),
        "{last}"
    );
    assert_legal(&loaded, &reordered.to_schedule().unwrap());
}

#[test]
fn wavefront_on_jacobi_1d_tiles_gives_a_parallel_tile_loop() {
    let loaded = load("polybench/jacobi-1d");
    let ctx = &loaded.program.ctx;
    let domain = loaded.program.domains().unwrap();
    // The time-skewed band (t, 2t + i), S1 one step after S0: permutable, nothing parallel.
    let text = format!(
        "{{ domain: \"{domain}\", child: {{ schedule: \"[{{ S0[t, i] -> [(2t)]; S1[t, i] -> [(2t + 1)] }}, {{ S0[t, i] -> [(2t + i)]; S1[t, i] -> [(2t + i + 1)] }}]\" }} }}"
    );
    let deps = TreeDeps::of(&loaded.problem()).unwrap();
    let mut tree = Tree::from_schedule(&ctx.schedule(&text).unwrap()).unwrap();
    analysis::annotate(&mut tree, &deps).unwrap();
    assert_legal(&loaded, &tree.to_schedule().unwrap());
    let mut tiled = tile::tile(&tree, &[DEFAULT_TILE_SIZE]).unwrap();
    analysis::annotate(&mut tiled, &deps).unwrap();
    let Node::Band(tiles) = &tiled.root else {
        panic!()
    };
    assert!(tiles.permutable);
    assert_eq!(tiles.coincident, vec![false, false]);
    let mut wave = wavefront::wavefront(&tiled, &deps.all).unwrap();
    analysis::annotate(&mut wave, &deps).unwrap();
    let Node::Band(tiles) = &wave.root else {
        panic!()
    };
    assert_eq!(tiles.coincident, vec![false, true]);
    assert_legal(&loaded, &wave.to_schedule().unwrap());
}

#[test]
fn illegal_orders_are_reported() {
    let loaded = load("polybench/jacobi-1d");
    let ctx = &loaded.program.ctx;
    let domain = loaded.program.domains().unwrap();
    // Interchanging t and i runs the stencil's dependences backwards.
    let text = format!(
        "{{ domain: \"{domain}\", child: {{ schedule: \"[{{ S0[t, i] -> [(i)]; S1[t, i] -> [(i)] }}, {{ S0[t, i] -> [(2t)]; S1[t, i] -> [(2t + 1)] }}]\" }} }}"
    );
    let tree = Tree::from_schedule(&ctx.schedule(&text).unwrap()).unwrap();
    let deps = TreeDeps::of(&loaded.problem()).unwrap();
    assert!(unordered(&tree, &deps.validity).unwrap().is_some());
}

/// heat-3d's untiled Pluto band `(t, 2t+i, 2t+j, 2t+k)` is parallel only on `2t+k`, inside
/// the others: the wavefront must not move that stride-1 member outermost (where it carries
/// dependences again) but skew, so that an outer member is parallel and `2t+k` stays last.
#[test]
fn wavefront_keeps_the_stride_1_member_innermost_in_heat_3d() {
    let loaded = load("polybench/heat-3d");
    let ctx = &loaded.program.ctx;
    let domain = loaded.program.domains().unwrap();
    let member =
        |e: &str| format!("{{ S0[t, i, j, k] -> [({e})]; S1[t, i, j, k] -> [(1 + {e})] }}");
    let text = format!(
        "{{ domain: \"{domain}\", child: {{ schedule: \"[{}, {}, {}, {}]\", child: {{ sequence: [ \
         {{ filter: \"{{ S0[t, i, j, k] }}\" }}, {{ filter: \"{{ S1[t, i, j, k] }}\" }} ] }} }} }}",
        "{ S0[t, i, j, k] -> [(t)]; S1[t, i, j, k] -> [(t)] }",
        member("2t + i"),
        member("2t + j"),
        member("2t + k"),
    );
    let deps = TreeDeps::of(&loaded.problem()).unwrap();
    let mut tree = Tree::from_schedule(&ctx.schedule(&text).unwrap()).unwrap();
    analysis::annotate(&mut tree, &deps).unwrap();
    let Node::Band(band) = &tree.root else {
        panic!("expected a band")
    };
    assert_eq!(band.coincident, vec![false, false, false, true]);
    let mut wave = wavefront::wavefront(&tree, &deps.all).unwrap();
    analysis::annotate(&mut wave, &deps).unwrap();
    let Node::Band(band) = &wave.root else {
        panic!("expected a band")
    };
    assert_eq!(band.coincident, vec![false, true, false, true]);
    assert!(
        band.members[0].to_string().contains("3t + i"),
        "{}",
        band.members[0]
    );
    assert!(
        band.members[3].to_string().contains("2t + k"),
        "{}",
        band.members[3]
    );
    assert_legal(&loaded, &wave.to_schedule().unwrap());
}
