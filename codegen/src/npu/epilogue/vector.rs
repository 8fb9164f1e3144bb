//! Epilogues the vector unit computes on each tile of the product in UB: any element-wise
//! statement the vector path compiles (`crate::npu::vector`), over the accumulator's tile,
//! inputs of the output's shape read at the element it writes (a residual `r[i, j]`),
//! per-row f32 vectors (a scale per token `s[i]`), per-column vectors (a bias `b[j]`) and
//! scalars, such as
//! `C[i, j] = f16(max(acc[i, j] + f32(b[j]), 0.0))` or `C[i, j] = acc[i, j] + r[i, j]`.
//!
//! The statement is recognised as the vector path would recognise a kernel made of it alone
//! whose input is the accumulator: its rows are the product's batches and rows, its columns
//! the product's columns. The tile then never leaves UB between the matrix unit and the
//! store of the result.

use super::super::recognise::{extents, Dim, Operand};
use super::super::vector::group::build;
use super::super::vector::lower::Frame;
use super::super::vector::recognise::{recognise, Kind, VectorKernel};
use super::super::NpuError;
use frontend::ir::{ArrayId, ElemType, Kernel, Node, Role, StmtContext};
use std::collections::BTreeMap;

/// An element-wise statement after the product, computed by the vector unit.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorEpilogue {
    /// The statement alone, as a kernel whose input is the accumulator.
    pub kernel: Kernel,
    /// Its vector form: rows are the product's batches and rows, columns its columns.
    pub vk: VectorKernel,
    /// The accumulator (an input of [`Self::kernel`]).
    pub acc: ArrayId,
    /// The stored result.
    pub out: ArrayId,
    /// The statement's name.
    pub statement: String,
    /// The GM shapes of the inputs other than the accumulator (a scalar's is `[1]`).
    pub shapes: BTreeMap<ArrayId, Vec<u64>>,
}

impl VectorEpilogue {
    /// The inputs read at the element the statement writes besides the accumulator (a
    /// residual): a tile of each is loaded with every tile of the product.
    pub fn second_tiles(&self) -> Vec<ArrayId> {
        (self.vk.arrays.iter())
            .filter(|(a, k)| **k == Kind::Tile && **a != self.acc && **a != self.out)
            .map(|(a, _)| *a)
            .collect()
    }

    /// The inputs read once per row (a scale per token): each tile's span of them is loaded
    /// with the tile.
    pub fn row_vectors(&self) -> Vec<ArrayId> {
        (self.vk.arrays.iter())
            .filter(|(_, k)| **k == Kind::Row)
            .map(|(a, _)| *a)
            .collect()
    }

    /// The epilogue statement `ctx` over the product's accumulator `acc`, or why the vector
    /// unit does not compute it on the product's tiles.
    pub fn recognise(
        kernel: &Kernel,
        ctx: &StmtContext,
        acc: &Operand,
        sizes: &BTreeMap<String, i64>,
    ) -> Result<VectorEpilogue, String> {
        let stmt = ctx.stmt;
        let mut alone = kernel.clone();
        alone.body = only(&kernel.body, &stmt.name);
        alone.arrays[acc.tensor.0].role = Role::In;
        let vk = recognise(&alone, sizes).map_err(|e| e.to_string())?;
        // the tile in UB is row-major: batches, rows, then columns
        let rank = acc.dims.len();
        let row_major = acc.dims.iter().enumerate().all(|(d, dim)| match dim {
            Dim::Batch(j) => *j == d,
            Dim::Row => d + 2 == rank,
            Dim::Col => d + 1 == rank,
        });
        let (rows, cols) = acc.shape.split_at(rank.saturating_sub(1));
        if !row_major || vk.rows != rows || vk.cols.as_slice() != cols {
            return Err(format!(
                "it does not run over `{}`'s rows and columns as the product computes them",
                acc.name
            ));
        }
        if vk.reduces() {
            return Err("it reduces; an epilogue is element by element".into());
        }
        let out = stmt.target.array;
        let out_shape = extents(kernel, out, sizes).map_err(|e| e.to_string())?;
        for (&a, &kind) in &vk.arrays {
            let array = kernel.array(a);
            let name = &array.name;
            // a second tile (a residual) is an input of the output's shape, read at the
            // element the statement writes
            let second = || {
                array.role == Role::In && extents(kernel, a, sizes).is_ok_and(|e| e == out_shape)
            };
            // a per-row vector: an f32 input of the output's rows (its spans start on GM
            // blocks wherever a tile's rows do, 8 rows apart at least), each batch's on a
            // block
            let per_row = || {
                let rows = &out_shape[..out_shape.len().saturating_sub(1)];
                array.role == Role::In
                    && array.elem == ElemType::F32
                    && extents(kernel, a, sizes).is_ok_and(|e| e == rows)
                    && (rows.len() < 2 || rows.last().is_some_and(|m| (m * 4) % 32 == 0))
            };
            let fits = match kind {
                Kind::Tile => a == acc.tensor || a == out || second(),
                Kind::Col | Kind::Scalar => a != acc.tensor && a != out,
                Kind::Row => per_row(),
            };
            if !fits {
                let what = match kind {
                    Kind::Tile => {
                        "a tile that is neither the accumulator nor an input of the output's shape"
                    }
                    Kind::Row => {
                        "one value per row, but not an f32 input of the output's rows whose batches start on 32-byte GM blocks"
                    }
                    Kind::Col | Kind::Scalar => "not element by element",
                };
                return Err(format!(
                    "it reads `{name}`, {what}; an epilogue reads the accumulator, inputs of the output's shape at the element it writes, f32 per-row vectors, per-column vectors and scalars"
                ));
            }
        }
        if vk.arrays.get(&acc.tensor) != Some(&Kind::Tile)
            || vk.arrays.get(&out) != Some(&Kind::Tile)
        {
            return Err(format!(
                "it does not read `{}` at the element it writes",
                acc.name
            ));
        }
        // what the vector unit cannot compute exactly (a truncating conversion, a function
        // it lacks) is refused here; the refusals of an element-wise statement depend on its
        // types and operations only, not on the frame's sizes
        let frame = Frame {
            width: cols.iter().product(),
            bytes_per_repeat: 256,
            max_repeat: 255,
            align: 32,
        };
        build(&vk, &alone, frame).map_err(|e| match e {
            NpuError::Unsupported(why) => why,
            other => other.to_string(),
        })?;
        let mut shapes = BTreeMap::new();
        for (&a, _) in vk
            .arrays
            .iter()
            .filter(|(a, _)| **a != acc.tensor && **a != out)
        {
            let extents = extents(kernel, a, sizes).map_err(|e| e.to_string())?;
            let shape: Vec<u64> = extents.iter().map(|&e| e as u64).collect();
            shapes.insert(a, if shape.is_empty() { vec![1] } else { shape });
        }
        Ok(VectorEpilogue {
            shapes,
            kernel: alone,
            vk,
            acc: acc.tensor,
            out,
            statement: stmt.name.clone(),
        })
    }
}

/// The nodes of `body` that lead to statement `name`, and nothing else.
fn only(body: &[Node], name: &str) -> Vec<Node> {
    let mut out = Vec::new();
    for n in body {
        match n {
            Node::Stmt(s) if s.name == name => out.push(n.clone()),
            Node::Stmt(_) => {}
            Node::Loop(l) => {
                let inner = only(&l.body, name);
                if !inner.is_empty() {
                    let mut l = l.clone();
                    l.body = inner;
                    out.push(Node::Loop(l));
                }
            }
            Node::If(i) => {
                let inner = only(&i.then, name);
                if !inner.is_empty() {
                    let mut i = i.clone();
                    i.then = inner;
                    out.push(Node::If(i));
                }
            }
        }
    }
    out
}
