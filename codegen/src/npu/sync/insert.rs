//! Writing a plan into the program: flags and barriers inserted into the loop bodies at
//! their gaps, each with a note naming the instructions it orders.

use super::internal;
use super::plan::{Plan, Reach, Sync};
use super::shape::Shape;
use crate::npu::NpuError;
use npu_sim::program::{Expr, Flag, Instr, Op, Origin, Program, Span, Stmt};
use std::collections::HashMap;
use std::sync::Arc;

/// What goes into one gap of one body: (rank in the gap, the instruction).
type Gaps = HashMap<(Vec<usize>, usize), Vec<(u8, Instr)>>;

/// `p` with `plan` inserted, reassembled.
pub fn apply(p: &Program, shape: &Shape, plan: &Plan) -> Result<Program, NpuError> {
    let mut gaps: Gaps = HashMap::new();
    let note = |s: &Sync| {
        let of = |i: usize| {
            let mut text = None;
            let path = &shape.paths[i];
            visit(&p.body, path, &mut |ins| {
                text = Some(match ins.origin.note() {
                    Some(n) => format!("'{n}'"),
                    None => format!("`{}`", ins.op.mnemonic()),
                })
            });
            text.unwrap_or_default()
        };
        let what = if s.credit { "frees ids for" } else { "orders" };
        format!(
            "flag placed by the dependence analysis: {what} {} before {}",
            of(s.orders.0),
            of(s.orders.1)
        )
    };
    for s in &plan.syncs {
        let id = match (s.m, s.reach) {
            (1, _) => Expr::Const(s.base as i64),
            _ => {
                let k = shape.counter(&s.level).ok_or_else(|| {
                    internal("a flag in a loop whose iterations have no closed form")
                })?;
                k % s.m as i64 + s.base as i64
            }
        };
        let flag = Flag {
            src: s.from,
            dst: s.to,
            id,
        };
        let origin = Origin(Some(Arc::from(note(s).as_str())));
        let instr = |op| Instr {
            op,
            span: Span::default(),
            origin: origin.clone(),
        };
        let (g, r) = s.set_at();
        let at = |gaps: &mut Gaps, level: &[usize], g, r, op| {
            gaps.entry((level.to_vec(), g))
                .or_default()
                .push((r, instr(op)));
        };
        at(&mut gaps, &s.level, g, r, Op::SetFlag(flag.clone()));
        let (g, r) = s.wait_at();
        at(&mut gaps, &s.level, g, r, Op::WaitFlag(flag));
        if s.reach == Reach::Across {
            // every id set once before the outermost loop, waited for once after it
            let outer = s.level[0];
            for id in s.base..s.base + s.m {
                let f = Flag {
                    src: s.from,
                    dst: s.to,
                    id: Expr::Const(id as i64),
                };
                at(&mut gaps, &[], outer, 1, Op::SetFlag(f.clone()));
                at(&mut gaps, &[], outer + 1, 2, Op::WaitFlag(f));
            }
        }
    }
    for b in &plan.barriers {
        let instr = Instr {
            op: Op::Barrier(b.scope),
            span: Span::default(),
            origin: Origin(Some(Arc::from("barrier placed by the dependence analysis"))),
        };
        gaps.entry((b.level.clone(), b.gap))
            .or_default()
            .push((2, instr));
    }
    for v in gaps.values_mut() {
        v.sort_by_key(|(r, _)| *r);
    }
    let mut out = p.clone();
    out.body = rebuild(&p.body, &mut vec![], &mut gaps);
    npu_sim::builder::reassemble(out).map_err(|d| {
        internal(&format!(
            "the synchronised program does not assemble: {}",
            d.message
        ))
    })
}

/// Calls `f` on the instruction at `path`.
fn visit<'a>(body: &'a [Stmt], path: &[usize], f: &mut impl FnMut(&'a Instr)) {
    match (body.get(path[0]), path.len()) {
        (Some(Stmt::Instr(i)), 1) => f(i),
        (Some(Stmt::Loop(l)), n) if n > 1 => visit(&l.body, &path[1..], f),
        _ => {}
    }
}

fn rebuild(body: &[Stmt], path: &mut Vec<usize>, gaps: &mut Gaps) -> Vec<Stmt> {
    let mut out = vec![];
    for (g, st) in body.iter().enumerate() {
        take(gaps, path, g, &mut out);
        out.push(match st {
            Stmt::Instr(i) => Stmt::Instr(i.clone()),
            Stmt::Loop(l) => {
                path.push(g);
                let body = rebuild(&l.body, path, gaps);
                path.pop();
                Stmt::Loop(npu_sim::program::Loop {
                    var: l.var,
                    lo: l.lo.clone(),
                    hi: l.hi.clone(),
                    step: l.step,
                    body,
                    span: l.span,
                })
            }
        });
    }
    take(gaps, path, body.len(), &mut out);
    out
}

/// Moves what goes into gap `g` of the body at `path` to `out`.
fn take(gaps: &mut Gaps, path: &[usize], g: usize, out: &mut Vec<Stmt>) {
    for (_, i) in gaps.remove(&(path.to_vec(), g)).unwrap_or_default() {
        out.push(Stmt::Instr(Box::new(i)));
    }
}
