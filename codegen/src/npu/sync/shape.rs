//! The program's statements as positions in its loop tree, and, per executed instruction,
//! where it stands in every loop around it.
//!
//! A statement's *path* is the index of the top-level statement holding it, then its index
//! in that loop's body, and so on down to itself; the loops around an instruction are the
//! proper prefixes of its path. A loop's *counter* on one core counts its body's executions
//! since the program started (across every execution of the loops around it), so the
//! counters of two executed instructions at their innermost common loop say how many of its
//! iterations apart they are.

use super::internal;
use crate::npu::NpuError;
use npu_sim::expand::Inst;
use npu_sim::program::{Expr, Instr, Loop, Program, Stmt};
use std::collections::HashMap;

/// Where every instruction and loop of a program is.
pub struct Shape<'p> {
    /// Per instruction, in program order: its path.
    pub paths: Vec<Vec<usize>>,
    /// Per instruction: the index of the loop around it in `loops`, innermost last.
    loops_of: Vec<Vec<usize>>,
    /// Every loop, in program order, with its path.
    loops: Vec<(Vec<usize>, &'p Loop)>,
    index: HashMap<*const Instr, usize>,
    loop_index: HashMap<*const Loop, usize>,
}

/// One core's executed instructions, each with its static instruction and loop counters.
pub struct Trace {
    /// Per executed instruction: its index in [`Shape::paths`].
    pub stat: Vec<usize>,
    /// Per executed instruction: the counters of the loops around it, outermost first.
    pub counters: Vec<Vec<u64>>,
}

impl<'p> Shape<'p> {
    /// The shape of `p`.
    pub fn of(p: &'p Program) -> Shape<'p> {
        let mut s = Shape {
            paths: vec![],
            loops_of: vec![],
            loops: vec![],
            index: HashMap::new(),
            loop_index: HashMap::new(),
        };
        s.visit(&p.body, &mut vec![], &mut vec![]);
        s
    }

    fn visit(&mut self, body: &'p [Stmt], path: &mut Vec<usize>, around: &mut Vec<usize>) {
        for (i, st) in body.iter().enumerate() {
            path.push(i);
            match st {
                Stmt::Instr(ins) => {
                    self.index.insert(&**ins as *const Instr, self.paths.len());
                    self.paths.push(path.clone());
                    self.loops_of.push(around.clone());
                }
                Stmt::Loop(l) => {
                    around.push(self.loops.len());
                    self.loop_index.insert(l as *const Loop, self.loops.len());
                    self.loops.push((path.clone(), l));
                    self.visit(&l.body, path, around);
                    around.pop();
                }
            }
            path.pop();
        }
    }

    /// The loop at `path`.
    fn loop_at(&self, path: &[usize]) -> Option<&'p Loop> {
        (self.loops.iter()).find_map(|(p, l)| (p.as_slice() == path).then_some(*l))
    }

    /// The static instruction an executed one comes from.
    fn stat(&self, inst: &Inst) -> Result<usize, NpuError> {
        (self.index.get(&(inst.instr as *const Instr)).copied())
            .ok_or_else(|| internal("an executed instruction is not in the program"))
    }

    /// Walks the loops of `p` on `core` as the scalar unit does, giving each executed
    /// instruction's loop counters; `insts` is the simulator's expansion for the same core,
    /// which the walk must agree with.
    pub fn trace(
        &self,
        p: &'p Program,
        core: u32,
        cores: u32,
        insts: &[Inst],
    ) -> Result<Trace, NpuError> {
        let mut w = Walk {
            shape: self,
            vars: vec![0; p.vars.len()],
            core: core as i64,
            cores: cores as i64,
            count: vec![0; self.loops.len()],
            trace: Trace {
                stat: Vec::with_capacity(insts.len()),
                counters: Vec::with_capacity(insts.len()),
            },
        };
        w.stmts(&p.body);
        let agrees = w.trace.stat.len() == insts.len()
            && (insts.iter().zip(&w.trace.stat)).all(|(i, &s)| self.stat(i).ok() == Some(s));
        match agrees {
            true => Ok(w.trace),
            false => Err(internal(
                "the walk of the loops disagrees with the simulator's",
            )),
        }
    }

    /// The number of times `l`'s body runs per execution of `l`, if it is the same every
    /// time (constant bounds).
    fn trips(l: &Loop) -> Option<i64> {
        match (&l.lo, &l.hi) {
            (Expr::Const(lo), Expr::Const(hi)) => {
                Some(((hi - lo).max(0) as u64).div_ceil(l.step) as i64)
            }
            _ => None,
        }
    }

    /// The counter of the loop at `path` as an expression of the loop variables, when its
    /// program-wide count is one: every loop between the outermost around it and itself has
    /// constant bounds. (The outermost loop's iteration number, times the trips of those
    /// within, plus theirs.)
    pub fn counter(&self, path: &[usize]) -> Option<Expr> {
        let mut k: Option<Expr> = None;
        for depth in 1..=path.len() {
            let l = self.loop_at(&path[..depth])?;
            let mut n = Expr::Var(l.var) - l.lo.clone();
            if l.step > 1 {
                n = Expr::Div(Box::new(n), l.step as i64);
            }
            k = Some(match k {
                None => n,
                Some(outer) => outer * Self::trips(l)? + n,
            });
        }
        k
    }
}

struct Walk<'s, 'p> {
    shape: &'s Shape<'p>,
    vars: Vec<i64>,
    core: i64,
    cores: i64,
    count: Vec<u64>,
    trace: Trace,
}

impl Walk<'_, '_> {
    fn stmts(&mut self, body: &[Stmt]) {
        for st in body {
            match st {
                Stmt::Instr(ins) => {
                    if let Some(&s) = self.shape.index.get(&(&**ins as *const Instr)) {
                        let c = self.shape.loops_of[s].iter().map(|&l| self.count[l]);
                        self.trace.counters.push(c.collect());
                        self.trace.stat.push(s);
                    }
                }
                Stmt::Loop(l) => {
                    let ev = |e: &Expr, vars: &[i64]| e.eval(vars, self.core, self.cores);
                    let (lo, hi) = (ev(&l.lo, &self.vars), ev(&l.hi, &self.vars));
                    let id = self.shape.loop_index[&(l as *const Loop)];
                    let mut v = lo;
                    while v < hi {
                        self.vars[l.var.0 as usize] = v;
                        self.count[id] += 1;
                        self.stmts(&l.body);
                        v += l.step as i64;
                    }
                }
            }
        }
    }
}
