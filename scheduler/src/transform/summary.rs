//! One line per band: where it is, whether it may be tiled, which loops are parallel, how
//! it was tiled.

use super::tree::{BandKind, Node, Tree};
use std::fmt::Write;

/// What a band looks like, for summaries and comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandInfo {
    /// Number of loops (band members) enclosing the band.
    pub depth: usize,
    /// Number of members.
    pub members: usize,
    /// Whether the members may be permuted.
    pub permutable: bool,
    /// The positions of the parallel (coincident) members.
    pub parallel: Vec<usize>,
    /// How it came to be.
    pub kind: BandKind,
}

/// Every band of the tree, in depth-first order.
pub fn bands(tree: &Tree) -> Vec<BandInfo> {
    let mut out = Vec::new();
    collect(&tree.root, 0, &mut out);
    out
}

fn collect(node: &Node, depth: usize, out: &mut Vec<BandInfo>) {
    if let Node::Band(b) = node {
        out.push(BandInfo {
            depth,
            members: b.members.len(),
            permutable: b.permutable,
            parallel: (0..b.coincident.len())
                .filter(|&k| b.coincident[k])
                .collect(),
            kind: b.kind.clone(),
        });
        collect(&b.child, depth + b.members.len(), out);
    } else {
        for (_, c) in node.children() {
            collect(c, depth, out);
        }
    }
}

impl BandInfo {
    /// `32x32` for tile loops, `point` for point loops, `-` otherwise.
    pub fn tiling(&self) -> String {
        match &self.kind {
            BandKind::Loop => "-".into(),
            BandKind::Point => "point".into(),
            BandKind::Tile(sizes) => {
                let s: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
                s.join("x")
            }
        }
    }
}

/// The band summary as text, one line per band.
pub fn summary(tree: &Tree) -> String {
    let mut out = String::new();
    for (k, b) in bands(tree).iter().enumerate() {
        let parallel: Vec<String> = b.parallel.iter().map(|p| p.to_string()).collect();
        let _ = writeln!(
            out,
            "band {k}: depth {}, {} member{}, {}, parallel members [{}], tiles {}",
            b.depth,
            b.members,
            if b.members == 1 { "" } else { "s" },
            if b.permutable {
                "permutable"
            } else {
                "not permutable"
            },
            parallel.join(", "),
            b.tiling()
        );
    }
    if out.is_empty() {
        out.push_str("no bands (no loops)\n");
    }
    out
}
