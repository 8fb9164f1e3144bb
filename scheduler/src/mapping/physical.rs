//! A complete mapping: the compute mapping (groups), its div/mod tiling onto calls of the
//! intrinsic, and each operand's memory mapping (which tensor element every operand element
//! holds, and what pads the tails).
//!
//! Definitions (also in `docs/mapping.md`): a software loop `l` in group `x` has position
//! `idx_l = (l - lower_l) / step_l` in `[0, ext_l)`; the fused index is
//! `L_x = sum(idx_l * w_l)` with mixed-radix weights `w_l` = product of the extents of the
//! loops after `l` in the group; `E_x` = product of the group's extents. An instance runs in
//! the call `(outer loops, t)` with `t_x = L_x / T_x` at the point `p_x = L_x % T_x`, where
//! `T_x` is the intrinsic loop's extent. Calls run in the order of the outer loops (as
//! written), then `t` lexicographically. A memory mapping is written over the outer loops,
//! the parameters and the fused indices `L_x` (named after the intrinsic loops), an operand
//! element at position `a` of call `t` having `L_x = T_x * t_x + a_j`; an intrinsic loop
//! that does not index the operand stands for `T_x * t_x`, its tile's first value.

use super::intrinsic::Intrinsic;
use super::qexpr::QExpr;
use super::software::{Box1, Software};
use crate::target::{Memory, Target};
use frontend::ir::{Access, ArrayId};
use std::collections::BTreeMap;

/// What fills an operand's positions beyond the fused extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pad {
    /// The identity element that makes a padded point contribute nothing (zero for a factor
    /// of a sum of products).
    Identity,
    /// Nothing: whatever the buffer held.
    Garbage,
}

/// Which tensor element each element of one operand holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperandMap {
    /// The software array.
    pub tensor: ArrayId,
    /// One index expression per tensor dimension.
    pub index: Vec<QExpr>,
    /// What pads the tails.
    pub pad: Pad,
}

/// A mapping of one statement onto one intrinsic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// For each intrinsic loop, the software loops fused onto it, outer to inner.
    pub groups: Vec<Vec<usize>>,
    /// For each intrinsic operand, its memory mapping.
    pub operands: Vec<OperandMap>,
    /// For each intrinsic loop, how many of its values one resident block of an operand
    /// spans (a multiple of the intrinsic's extent).
    pub blocks: Vec<i64>,
    /// Copies of each operand's block kept in its tier (2: double buffering).
    pub buffers: i64,
}

/// The linearisation a mapping implies, computed from the software loops' boxes.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Per software loop: its box if it is in a group.
    pub boxes: Vec<Option<Box1>>,
    /// Per software loop in a group: its mixed-radix weight.
    pub weights: Vec<i64>,
    /// Per intrinsic loop: the fused extent `E_x`.
    pub extents: Vec<QExpr>,
    /// Software loops in no group, outermost first.
    pub outer: Vec<usize>,
}

/// Why a mapping cannot be linearised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// A grouped loop's bounds mention another loop, or a guard mentions it.
    NotRectangular(String),
    /// A grouped loop other than the first of its group has a size given by parameters,
    /// which would make the linearisation non-linear.
    SymbolicInnerExtent(String),
    /// A loop appears in two groups.
    TwoGroups(String),
    /// The fused extent up to a loop does not fit 64 bits.
    TooLarge(String),
    /// A loop outside the intrinsic has the name of an intrinsic loop, which memory mappings
    /// could not tell apart.
    NameClash(String),
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::NotRectangular(l) => write!(
                f,
                "loop `{l}` cannot be fused onto an intrinsic loop: its bounds depend on other loops or a guard mentions it"
            ),
            LayoutError::SymbolicInnerExtent(l) => write!(
                f,
                "loop `{l}` is fused after another loop and its size depends on parameters: the linearisation is not linear (give concrete sizes with -D)"
            ),
            LayoutError::TwoGroups(l) => write!(f, "loop `{l}` is given to two intrinsic loops"),
            LayoutError::TooLarge(l) => write!(
                f,
                "fusing loop `{l}` makes the intrinsic loop's extent exceed 64 bits"
            ),
            LayoutError::NameClash(l) => write!(
                f,
                "loop `{l}` stays outside the intrinsic but has the name of one of its loops: rename it"
            ),
        }
    }
}

impl Layout {
    /// The layout of `groups` over the statement.
    pub fn new(sw: &Software, groups: &[Vec<usize>]) -> Result<Layout, LayoutError> {
        let n = sw.loops.len();
        let mut boxes: Vec<Option<Box1>> = vec![None; n];
        let mut weights = vec![0; n];
        let mut extents = Vec::new();
        for g in groups {
            let mut weight = 1i64;
            let mut extent = QExpr::Const(1);
            for (pos, &l) in g.iter().enumerate().rev() {
                let name = &sw.loops[l].var;
                if boxes[l].is_some() {
                    return Err(LayoutError::TwoGroups(name.clone()));
                }
                let b = sw
                    .rectangular(l)
                    .ok_or_else(|| LayoutError::NotRectangular(name.clone()))?;
                let too_large = || LayoutError::TooLarge(name.clone());
                weights[l] = weight;
                extent = match b.extent {
                    QExpr::Const(e) => {
                        QExpr::Const(weight.checked_mul(e.max(0)).ok_or_else(too_large)?)
                    }
                    ref e => QExpr::scale(weight, e.clone()),
                };
                if pos > 0 {
                    match b.extent {
                        QExpr::Const(e) => {
                            weight = weight.checked_mul(e.max(0)).ok_or_else(too_large)?
                        }
                        _ => return Err(LayoutError::SymbolicInnerExtent(name.clone())),
                    }
                }
                boxes[l] = Some(b);
            }
            extents.push(extent);
        }
        let outer = (0..n).filter(|&l| boxes[l].is_none()).collect();
        Ok(Layout {
            boxes,
            weights,
            extents,
            outer,
        })
    }

    /// The value of grouped loop `l` as an expression of its group's fused index `fused`.
    pub fn value_of(&self, l: usize, group: &[usize], fused: QExpr) -> QExpr {
        let b = self.boxes[l].as_ref().expect("a grouped loop");
        let mut idx = QExpr::floor_div(fused, self.weights[l]);
        if group.first() != Some(&l) {
            if let QExpr::Const(e) = b.extent {
                idx = QExpr::modulo(idx, e);
            }
        }
        QExpr::sum(b.lower.clone(), QExpr::scale(b.step, idx))
    }
}

impl Mapping {
    /// The mapping of `groups` with every operand's memory mapping derived from the
    /// statement's accesses: a loop fused onto an intrinsic loop that indexes the operand is
    /// recovered from that fused index; a loop fused onto one that does not is fixed at its
    /// lower bound; outer loops and parameters stay as they are. Tails are padded with the
    /// identity; one block of one intrinsic tile per operand, double-buffered.
    pub fn derive(
        sw: &Software,
        intr: &Intrinsic,
        binding: &[Access],
        groups: Vec<Vec<usize>>,
    ) -> Result<Mapping, LayoutError> {
        let layout = Layout::new(sw, &groups)?;
        let operands = (intr.operands.iter().enumerate())
            .map(|(o, _)| {
                let mine: Vec<usize> = intr.loops_of(o).collect();
                let subst = |v: &frontend::ir::Var| -> QExpr {
                    match v {
                        frontend::ir::Var::Param(p) => sw
                            .sizes
                            .value(p)
                            .map_or_else(|| QExpr::var(p), QExpr::Const),
                        frontend::ir::Var::Loop(name) => {
                            let Some(l) = sw.loop_index(name) else {
                                return QExpr::var(name);
                            };
                            match groups.iter().position(|g| g.contains(&l)) {
                                None => QExpr::var(name),
                                Some(x) if mine.contains(&x) => {
                                    layout.value_of(l, &groups[x], QExpr::var(&intr.loops[x].name))
                                }
                                Some(_) => layout.boxes[l]
                                    .as_ref()
                                    .map_or(QExpr::Const(0), |b| b.lower.clone()),
                            }
                        }
                    }
                };
                let index = (binding[o].indices.iter())
                    .map(|e| QExpr::from_aff(e, &subst).unwrap_or(QExpr::Const(0)))
                    .collect();
                OperandMap {
                    tensor: binding[o].array,
                    index,
                    pad: Pad::Identity,
                }
            })
            .collect();
        Ok(Mapping {
            groups,
            operands,
            blocks: intr.loops.iter().map(|l| l.extent).collect(),
            buffers: 2,
        })
    }

    /// Where an instance runs: its outer loop values, its call's tile indices and its
    /// point, for concrete sizes.
    pub fn place(
        &self,
        layout: &Layout,
        intr: &Intrinsic,
        loops: &[i64],
        params: &BTreeMap<String, i64>,
    ) -> Placement {
        let fused: Vec<i64> = (self.groups.iter())
            .map(|g| {
                g.iter()
                    .map(|&l| {
                        let b = layout.boxes[l].as_ref().expect("a grouped loop");
                        let lower = b.lower.eval(&|p| params.get(p).copied().unwrap_or(0));
                        (loops[l] - lower) / b.step * layout.weights[l]
                    })
                    .sum()
            })
            .collect();
        Placement {
            outer: layout.outer.iter().map(|&l| loops[l]).collect(),
            tiles: (fused.iter().zip(&intr.loops))
                .map(|(f, x)| f.div_euclid(x.extent))
                .collect(),
            point: (fused.iter().zip(&intr.loops))
                .map(|(f, x)| f.rem_euclid(x.extent))
                .collect(),
            fused,
        }
    }

    /// The tensor element operand `o` holds at the position the intrinsic touches at a
    /// placement (concrete sizes); an intrinsic loop that does not index the operand stands
    /// for its tile's first value.
    pub fn held(
        &self,
        sw: &Software,
        layout: &Layout,
        intr: &Intrinsic,
        o: usize,
        at: &Placement,
        params: &BTreeMap<String, i64>,
    ) -> Vec<i64> {
        let mine: Vec<usize> = intr.loops_of(o).collect();
        let env = |name: &str| -> i64 {
            if let Some(x) = intr.loops.iter().position(|l| l.name == name) {
                return if mine.contains(&x) {
                    at.fused[x]
                } else {
                    at.tiles[x] * intr.loops[x].extent
                };
            }
            if let Some(k) = layout.outer.iter().position(|&l| sw.loops[l].var == name) {
                return at.outer[k];
            }
            params.get(name).copied().unwrap_or(0)
        };
        self.operands[o]
            .index
            .iter()
            .map(|e| e.eval(&env))
            .collect()
    }
}

/// Where one instance runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Values of the outer loops.
    pub outer: Vec<i64>,
    /// The call's tile index per intrinsic loop.
    pub tiles: Vec<i64>,
    /// The point within the call per intrinsic loop.
    pub point: Vec<i64>,
    /// The fused index per intrinsic loop.
    pub fused: Vec<i64>,
}

/// Where one operand's blocks sit in its tier: `copies` blocks, `pitch` bytes apart from
/// `base`, each row-major over the operand's dimensions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The tier.
    pub tier: Memory,
    /// Extent of the block along each operand dimension.
    pub block: Vec<i64>,
    /// Element strides of the block (row-major).
    pub strides: Vec<i64>,
    /// Bytes of one element.
    pub elem_bytes: i64,
    /// Byte offset of the first copy in the tier.
    pub base: i64,
    /// Bytes from one copy to the next (the block's size rounded up to the alignment).
    pub pitch: i64,
    /// Copies kept.
    pub copies: i64,
    /// The tier's capacity in bytes (per core).
    pub capacity: i64,
    /// The tier's alignment in bytes.
    pub align: i64,
}

impl Mapping {
    /// The operands' places in their tiers: operands sharing a tier follow one another in
    /// declaration order, every copy starting on the tier's alignment.
    pub fn slots(&self, intr: &Intrinsic, target: &Target) -> Vec<Slot> {
        let mut next: BTreeMap<Memory, i64> = BTreeMap::new();
        (intr.operands.iter())
            .map(|op| {
                let level = target.level(op.tier);
                let capacity = level.and_then(|l| l.capacity).map_or(0, |c| c as i64);
                let align = level.map_or(1, |l| l.align.max(1) as i64);
                let block: Vec<i64> = (op.dims.iter().zip(&op.extents))
                    .map(|(d, &e)| d.map_or(e, |x| self.blocks[x]))
                    .collect();
                let mut strides = vec![1; block.len()];
                for j in (0..block.len().saturating_sub(1)).rev() {
                    strides[j] = strides[j + 1] * block[j + 1];
                }
                let elem_bytes = op.elem.size_bytes() as i64;
                let size = block.iter().product::<i64>() * elem_bytes;
                let pitch = (size + align - 1) / align * align;
                let base = *next.get(&op.tier).unwrap_or(&0);
                next.insert(op.tier, base + pitch * self.buffers);
                Slot {
                    tier: op.tier,
                    block,
                    strides,
                    elem_bytes,
                    base,
                    pitch,
                    copies: self.buffers,
                    capacity,
                    align,
                }
            })
            .collect()
    }
}

impl std::fmt::Display for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dims: Vec<String> = self.block.iter().map(|e| e.to_string()).collect();
        let strides: Vec<String> = self.strides.iter().map(|e| e.to_string()).collect();
        let copies: Vec<String> = (0..self.copies)
            .map(|k| (self.base + k * self.pitch).to_string())
            .collect();
        write!(
            f,
            "{}: block {} ({} B), element strides {}, copies at bytes {} of {}",
            self.tier,
            dims.join(" x "),
            self.block.iter().product::<i64>() * self.elem_bytes,
            strides.join(", "),
            copies.join(", "),
            self.capacity
        )
    }
}
