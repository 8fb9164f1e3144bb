//! A generated program's data movement as polyhedral statements: each `dma` that reads or
//! writes GM, with its instances and the tensor elements they touch, as an isl relation.
//!
//! A program's loops and sizes are quasi-affine expressions of the loop variables and the
//! core's index (`npu_sim::program::Expr`), so its instances and accesses are exactly
//! integer sets and maps: the instances of a `dma` are the points `[core, v.., b, e]` (the
//! core, the enclosing loops' variables outermost first, the burst and the element in the
//! burst), its access `{ [core, v.., b, e] -> T[f] }` with `f` the flat index in tensor `T`.
//! [`check`] proves with them, for every compiled program and every instance at once, what
//! the back end's closed forms must give: each output element stored exactly once, nothing
//! outside a tensor touched; and, walking the program ([`Traffic`]), every element the
//! kernel reads loaded.
//!
//! What this does not see: on-chip buffers, the order of instructions and what they
//! compute. The simulator's race detector and the differential runs judge those.

mod check;
mod text;
mod traffic;

pub use check::check;
pub use traffic::Traffic;

use crate::npu::NpuError;
use npu_sim::program::{Dma, Expr, Loop, MemRef, Op, Program, Stmt, Target, TensorId};
use poly::isl::{Ctx, Map};
use text::Constraints;

/// What a `dma` does to a GM tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Reads it.
    Load,
    /// Writes it.
    Store,
    /// Adds into it (`atomic`).
    Add,
}

/// One instruction's access to a GM tensor.
#[derive(Clone, Debug)]
pub struct Access {
    /// The instruction: its number among the program's `dma`s, from 1, and its origin note.
    pub what: String,
    /// The tensor.
    pub tensor: TensorId,
    /// Load, store or add.
    pub kind: Kind,
    /// `{ I[core, v.., b, e] -> T[f] }`, `I` named after the instruction.
    pub map: Map,
}

/// The GM accesses of every `dma` of `program` on `cores` cores.
pub fn accesses(ctx: &Ctx, program: &Program, cores: i64) -> Result<Vec<Access>, NpuError> {
    let mut walk = Walk {
        ctx,
        program,
        cores,
        loops: Vec::new(),
        dmas: 0,
        out: Vec::new(),
    };
    walk.body(&program.body)?;
    Ok(walk.out)
}

/// The sides of `d` in GM: the tensor, the reference, its burst stride and what `d` does
/// to it (a store with `atomic` adds).
fn gm_sides(d: &Dma) -> impl Iterator<Item = (TensorId, &MemRef, &Expr, Kind)> {
    let z = &d.sizes;
    let store = if d.atomic { Kind::Add } else { Kind::Store };
    [
        (&d.src, &z.src_stride, Kind::Load),
        (&d.dst, &z.dst_stride, store),
    ]
    .into_iter()
    .filter_map(|(side, stride, kind)| match side.target {
        Target::Tensor(t) => Some((t, side, stride, kind)),
        Target::Buffer(_) => None,
    })
}

/// The walk down the program's loops.
struct Walk<'a> {
    ctx: &'a Ctx,
    program: &'a Program,
    cores: i64,
    /// The enclosing loops, outermost first.
    loops: Vec<&'a Loop>,
    /// The `dma`s met so far (an instruction is named by its number among them).
    dmas: usize,
    out: Vec<Access>,
}

impl<'a> Walk<'a> {
    fn body(&mut self, body: &'a [Stmt]) -> Result<(), NpuError> {
        for stmt in body {
            match stmt {
                Stmt::Loop(l) => {
                    self.loops.push(l);
                    self.body(&l.body)?;
                    self.loops.pop();
                }
                Stmt::Instr(i) => {
                    if let Op::Dma(d) = &i.op {
                        self.dmas += 1;
                        let what = match i.origin.note() {
                            Some(note) => format!("`dma` #{} ({note})", self.dmas),
                            None => format!("`dma` #{}", self.dmas),
                        };
                        self.dma(d, what)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The GM sides of `d`.
    fn dma(&mut self, d: &Dma, what: String) -> Result<(), NpuError> {
        let z = &d.sizes;
        for (tensor, side, stride, kind) in gm_sides(d) {
            let name = format!("I{}", self.out.len());
            let map = self.access(&name, (tensor, side), stride, &z.count, &z.len)?;
            self.out.push(Access {
                what: what.clone(),
                tensor,
                kind,
                map,
            });
        }
        Ok(())
    }

    /// `{ name[core, v.., b, e] -> T[f] }`: `count` bursts of `len` elements from `at` in
    /// tensor `t`, `stride` apart.
    fn access(
        &self,
        name: &str,
        (t, at): (TensorId, &MemRef),
        stride: &Expr,
        count: &Expr,
        len: &Expr,
    ) -> Result<Map, NpuError> {
        // one burst: the stride does not matter
        let stride = match (count.simplified(), stride.simplified()) {
            (Expr::Const(1), _) => 0,
            (_, Expr::Const(s)) if s >= 0 => s,
            _ => {
                return Err(NpuError::Internal(format!(
                    "the GM stride of {name} is not a constant of at least 0 ({stride:?}): its accesses are not affine"
                )))
            }
        };
        let shape = &self.program.tensor(t).shape;
        let mut c = Constraints::default();
        let mut dims = vec!["core".to_string()];
        c.require(format!("0 <= core < {}", self.cores));
        for l in &self.loops {
            let v = text::var(l.var);
            let (lo, hi) = (c.term(&l.lo, self.cores), c.term(&l.hi, self.cores));
            c.require(format!("{lo} <= {v} < {hi}"));
            if l.step > 1 {
                let k = c.fresh();
                c.require(format!("{v} = {lo} + {}*{k}", l.step));
            }
            dims.push(v);
        }
        // the flat index of the element, row-major
        let mut flat = Expr::Const(0);
        let mut weight = 1;
        for (e, &extent) in at.index.iter().zip(shape).rev() {
            flat = flat + e.clone() * weight;
            weight *= extent as i64;
        }
        let flat = c.term(&flat, self.cores);
        let (count, len) = (c.term(count, self.cores), c.term(len, self.cores));
        c.require(format!("0 <= b < {count} and 0 <= e < {len}"));
        c.require(match stride {
            0 => format!("f = {flat} + e"),
            s => format!("f = {flat} + {s}*b + e"),
        });
        let text = format!(
            "{{ {name}[{}, b, e] -> T{}[f] : {} }}",
            dims.join(", "),
            t.0,
            c.formula()
        );
        self.ctx
            .map(&text)
            .map_err(|e| NpuError::Internal(format!("lifting {name} into isl: {e}")))
    }
}
