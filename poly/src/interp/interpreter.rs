//! The interpreter proper: a kernel compiled for given parameter values, run in the original
//! order or in any order of instances.

use super::error::InterpError;
use super::memory::Memory;
use super::params::{array_extents, ParamValues};
use super::stmt::CompiledStmt;
use super::tree::{self, Node};
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
        let mut addrs = vec![0; self.max_accesses];
        tree::walk(&self.tree, &mut Vec::new(), &mut |k, iv| {
            let stmt = &self.stmts[k];
            stmt.execute(iv, &mut memory.arrays, &mut addrs)
                .map_err(|fault| stmt.error(fault, iv, &memory.arrays))
        })
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
    pub fn for_each_original_instance(&self, mut f: impl FnMut(usize, &[i64])) {
        let walked: Result<(), std::convert::Infallible> =
            tree::walk(&self.tree, &mut Vec::new(), &mut |k, iv| {
                f(k, iv);
                Ok(())
            });
        match walked {
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
