//! The interpreter proper: a kernel compiled for given parameter values, run in the original
//! order or in any order of instances.

use super::error::InterpError;
use super::memory::ArrayValues;
use super::memory::Memory;
use super::params::{array_extents, ParamValues};
use super::stmt::CompiledStmt;
use super::tree::{self, LoopValues, Node, Visitor};
use frontend::ir::Kernel;

/// A kernel compiled for fixed parameter values.
pub struct Interpreter {
    stmts: Vec<CompiledStmt>,
    tree: Vec<Node>,
    /// Extent of every array, in [`Kernel::arrays`] order.
    extents: Vec<Vec<usize>>,
    /// Address scratch needed by the statement with the most accesses.
    max_accesses: usize,
}

impl Interpreter {
    /// Compiles `kernel` for `params` (from [`ParamValues::resolve`]).
    pub fn new(kernel: &Kernel, params: &ParamValues) -> Result<Interpreter, InterpError> {
        let extents = array_extents(kernel, params)?;
        let stmts = kernel
            .statements()
            .iter()
            .map(|ctx| CompiledStmt::compile(ctx, kernel, params, &extents))
            .collect::<Result<Vec<_>, _>>()?;
        let tree = tree::compile(&kernel.body, params, &mut Vec::new(), &mut 0)?;
        let max_accesses = stmts
            .iter()
            .map(CompiledStmt::access_count)
            .max()
            .unwrap_or(0);
        Ok(Interpreter {
            stmts,
            tree,
            extents,
            max_accesses,
        })
    }

    /// Executes the kernel in its original (textual, lexicographic) order.
    pub fn run_original(&self, memory: &mut Memory) -> Result<(), InterpError> {
        self.check_memory(memory)?;
        let mut executor = Executor {
            stmts: &self.stmts,
            arrays: &mut memory.arrays,
            addrs: vec![0; self.max_accesses],
        };
        tree::walk(&self.tree, &mut Vec::new(), &mut executor)
    }

    /// Executes the given instances in the given order: `(statement, iteration vector)`, the
    /// statement numbered in [`Kernel::statements`] order, the vector holding the values of
    /// its enclosing loops, outermost first. Instances are trusted to lie in the statement's
    /// domain (the loop bounds and guards are not re-checked), but every access is
    /// bounds-checked.
    pub fn run_instances<I, V>(&self, memory: &mut Memory, instances: I) -> Result<(), InterpError>
    where
        I: IntoIterator<Item = (usize, V)>,
        V: AsRef<[i64]>,
    {
        self.check_memory(memory)?;
        let mut addrs = vec![0; self.max_accesses];
        for (k, iv) in instances {
            let iv = iv.as_ref();
            let stmt = self.stmts.get(k).ok_or_else(|| InterpError::BadInstance {
                reason: format!("statement number {k}, the kernel has {}", self.stmts.len()),
            })?;
            if iv.len() != stmt.loop_vars.len() {
                return Err(InterpError::BadInstance {
                    reason: format!(
                        "statement {} has {} enclosing loop(s), iteration vector {iv:?} given",
                        stmt.name,
                        stmt.loop_vars.len()
                    ),
                });
            }
            stmt.execute(iv, &mut memory.arrays, &mut addrs)
                .map_err(|fault| stmt.error(fault, iv, &memory.arrays))?;
        }
        Ok(())
    }

    /// Calls `f` on every instance of the original program, in the original order, with the
    /// arguments [`Interpreter::run_instances`] takes.
    pub fn for_each_original_instance(&self, f: impl FnMut(usize, &[i64])) {
        match tree::walk(&self.tree, &mut Vec::new(), &mut Enumerator(f)) {
            Ok(()) => {}
            Err(never) => match never {},
        }
    }

    /// Every instance of the original program in the original order, in the format of
    /// [`Interpreter::run_instances`] (meant for tests on small sizes).
    pub fn original_instances(&self) -> Vec<(usize, Vec<i64>)> {
        let mut out = Vec::new();
        self.for_each_original_instance(|k, iv| out.push((k, iv.to_vec())));
        out
    }

    /// The number of statement instances of the original program.
    pub fn instance_count(&self) -> u64 {
        let mut count = 0;
        self.for_each_original_instance(|_, _| count += 1);
        count
    }

    fn check_memory(&self, memory: &Memory) -> Result<(), InterpError> {
        let same = memory.arrays.len() == self.extents.len()
            && memory
                .arrays
                .iter()
                .zip(&self.extents)
                .all(|(a, e)| &a.shape == e);
        if same {
            Ok(())
        } else {
            Err(InterpError::MemoryMismatch {
                reason: "it was built for another kernel or other parameter values".into(),
            })
        }
    }
}

/// Calls a function on every instance.
struct Enumerator<F>(F);

impl<F: FnMut(usize, &[i64])> Visitor for Enumerator<F> {
    type Error = std::convert::Infallible;

    fn instance(&mut self, stmt: usize, iv: &[i64]) -> Result<(), Self::Error> {
        (self.0)(stmt, iv);
        Ok(())
    }
}

/// Executes every instance.
struct Executor<'a> {
    stmts: &'a [CompiledStmt],
    arrays: &'a mut [ArrayValues],
    /// Address scratch: one entry per access of a statement, or of all statements of an
    /// innermost loop.
    addrs: Vec<usize>,
}

impl Visitor for Executor<'_> {
    type Error = InterpError;

    fn instance(&mut self, stmt: usize, iv: &[i64]) -> Result<(), InterpError> {
        let s = &self.stmts[stmt];
        s.execute(iv, self.arrays, &mut self.addrs)
            .map_err(|fault| s.error(fault, iv, self.arrays))
    }

    /// When every index of every statement is linear and the accesses are in bounds at the
    /// first and the last value (hence at all values in between), the addresses are checked
    /// once and then advanced by constant steps; otherwise one checked instance at a time.
    fn innermost(
        &mut self,
        stmts: &[usize],
        iv: &mut [i64],
        values: LoopValues,
    ) -> Result<(), InterpError> {
        let last = iv.len() - 1;
        let total: usize = stmts.iter().map(|&k| self.stmts[k].access_count()).sum();
        if self.addrs.len() < 2 * total {
            self.addrs.resize(2 * total, 0);
        }
        let (base, end) = self.addrs.split_at_mut(total);
        let mut offset = 0;
        for &k in stmts {
            let s = &self.stmts[k];
            let n = s.access_count();
            let checked = s.innermost_deltas().is_some() && {
                iv[last] = values.nth(values.count - 1);
                let at_end = s.addresses(iv, &mut end[offset..offset + n]).is_ok();
                iv[last] = values.nth(0);
                at_end && s.addresses(iv, &mut base[offset..offset + n]).is_ok()
            };
            if !checked {
                return tree::each_instance(self, stmts, iv, values);
            }
            offset += n;
        }
        // The checks are done: `end` now holds each access's address step.
        let mut offset = 0;
        for &k in stmts {
            let deltas = self.stmts[k].innermost_deltas().unwrap_or(&[]);
            for (step, delta) in end[offset..].iter_mut().zip(deltas) {
                *step = (delta * values.stride()) as usize;
            }
            offset += deltas.len();
        }
        for n in 0..values.count {
            iv[last] = values.nth(n);
            let mut offset = 0;
            for &k in stmts {
                let s = &self.stmts[k];
                let range = offset..offset + s.access_count();
                if n > 0 {
                    for (addr, step) in base[range.clone()].iter_mut().zip(&end[range.clone()]) {
                        *addr = addr.wrapping_add(*step);
                    }
                }
                s.evaluate(iv, self.arrays, &base[range.clone()])
                    .map_err(|fault| s.error(fault, iv, self.arrays))?;
                offset = range.end;
            }
        }
        Ok(())
    }
}
