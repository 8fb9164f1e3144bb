//! Register tiling (unroll-and-jam) of innermost permutable bands that carry a reduction.
//!
//! In an innermost permutable band with a stride-1 parallel last member `j`, a member `k`
//! that carries dependences, and a statement whose target stays the same along `k` (gemm's
//! `C[i, j] += A[i, k] * B[k, j]`), the band `(.., i, .., k, .., j)` becomes
//! `(.., i / RI, .., j / RJ, k)` followed by a point band `(i, j)`: for each small block of
//! `RI x RJ` targets, `k` runs innermost but for that block, whose targets the C printer then
//! keeps in local accumulators (`c::accumulate`) that the compiler holds in vector registers.
//! `i` is the innermost other parallel member (none: only `j` is blocked).
//!
//! Permuting and strip-mining the members of a permutable band is always legal; the caller
//! still checks the result against the dependences and keeps the band unchanged otherwise.

use poly::isl::{IslResult, UnionMap};
use poly::model::Program;
use scheduler::transform::analysis::same_value;
use scheduler::transform::{BandKind, BandNode, Filtered, Node, Tree};
use std::num::NonZeroU32;

/// The register block: `rows` of the outer parallel member, `bytes` of the stride-1 member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterBlock {
    /// Iterations of the outer parallel member per block.
    pub rows: u32,
    /// Bytes of the target array along the stride-1 member per block (divided by the
    /// element size: 256 bytes are 32 `f64`, four AVX-512 registers).
    pub bytes: u32,
}

impl Default for RegisterBlock {
    fn default() -> Self {
        RegisterBlock {
            rows: 4,
            bytes: 256,
        }
    }
}

/// `tree` with every qualifying innermost band register-tiled (see the module doc).
///
/// An analysis of its own: it starts a fresh isl operation budget (which the legality check
/// of the result then shares). Without it, kernels with many statements (deriche: 47) ran
/// out of the budget the scheduler and the other transformations had left, and isl's parser
/// reports an exhausted budget while reading a relation as a "syntax error".
pub fn register_tile(tree: &Tree, program: &Program, block: RegisterBlock) -> IslResult<Tree> {
    program.ctx.reset_budget();
    Ok(Tree {
        domain: tree.domain.clone(),
        root: visit(&tree.root, program, block)?,
    })
}

fn visit(node: &Node, program: &Program, block: RegisterBlock) -> IslResult<Node> {
    let children = |cs: &[Filtered]| -> IslResult<Vec<Filtered>> {
        cs.iter()
            .map(|c| {
                Ok(Filtered {
                    filter: c.filter.clone(),
                    child: visit(&c.child, program, block)?,
                })
            })
            .collect()
    };
    Ok(match node {
        Node::Leaf => Node::Leaf,
        Node::Band(b) if !b.child.has_band() => match blocked(b, program, block)? {
            Some(n) => n,
            None => node.clone(),
        },
        Node::Band(b) => Node::Band(BandNode {
            child: Box::new(visit(&b.child, program, block)?),
            ..b.clone()
        }),
        Node::Sequence(cs) => Node::Sequence(children(cs)?),
        Node::Set(cs) => Node::Set(children(cs)?),
    })
}

/// The register-tiled band, or `None` when `b` does not qualify.
fn blocked(b: &BandNode, program: &Program, block: RegisterBlock) -> IslResult<Option<Node>> {
    let n = b.members.len();
    if !b.permutable || n < 2 || !b.coincident[n - 1] {
        return Ok(None);
    }
    let j = n - 1;
    let Some(k) = (0..n).rev().find(|&m| !b.coincident[m]) else {
        return Ok(None);
    };
    let Some(elem_bytes) = reused_target_bytes(b, k, program)? else {
        return Ok(None);
    };
    let i = (0..j).rev().find(|&m| b.coincident[m]);
    let ctx = b.members[0].ctx();
    let strip = |m: usize, size: u32| -> IslResult<UnionMap> {
        let floor = ctx.union_map(&format!("{{ [x] -> [floor(x / {size})] }}"))?;
        b.members[m].apply_range(&floor)
    };
    let cols = (block.bytes / elem_bytes).max(1);
    let mut outer = Vec::new();
    let mut sizes = Vec::new();
    for m in 0..n {
        if m == k {
            continue;
        }
        let size = match m {
            _ if m == j => cols,
            _ if Some(m) == i => block.rows,
            _ => 1,
        };
        outer.push(if size == 1 {
            b.members[m].clone()
        } else {
            strip(m, size)?
        });
        sizes.push(NonZeroU32::new(size).expect("sizes are at least 1"));
    }
    outer.push(b.members[k].clone());
    sizes.push(NonZeroU32::MIN);
    let inner: Vec<UnionMap> = i
        .iter()
        .chain([&j])
        .map(|&m| b.members[m].clone())
        .collect();
    let point = BandNode {
        coincident: vec![false; inner.len()],
        members: inner,
        permutable: true,
        kind: BandKind::Point,
        child: b.child.clone(),
    };
    Ok(Some(Node::Band(BandNode {
        coincident: vec![false; outer.len()],
        members: outer,
        permutable: true,
        kind: BandKind::Tile(sizes),
        child: Box::new(Node::Band(point)),
    })))
}

/// The element size of the target of a statement of the band whose target element stays the
/// same while member `k` advances and every other member is fixed (`None`: no such
/// statement, so blocking would not save any load or store).
fn reused_target_bytes(b: &BandNode, k: usize, program: &Program) -> IslResult<Option<u32>> {
    let mut others: Option<UnionMap> = None;
    for (m, member) in b.members.iter().enumerate() {
        if m != k {
            let same = same_value(member)?;
            others = Some(match others {
                None => same,
                Some(o) => o.intersect(&same)?,
            });
        }
    }
    let member = &b.members[k];
    let before = member.ctx().union_map("{ [a] -> [b] : a < b }")?;
    let advances = member
        .apply_range(&before)?
        .apply_range(&member.reverse()?)?;
    let along_k = match others {
        Some(o) => o.intersect(&advances)?,
        None => advances,
    };
    for s in &program.statements {
        let write = s.write.relation.apply(isl_rs::UnionMap::from_map)?;
        let same_element = write.apply_range(&write.reverse()?)?;
        if !same_element.intersect(&along_k)?.is_empty()? {
            let elem = program.kernel.arrays[s.write.array.0].elem;
            return Ok(Some(elem.size_bytes() as u32));
        }
    }
    Ok(None)
}
