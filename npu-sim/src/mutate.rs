//! Mutants of a program: the synchronisation mistakes a person or a compiler makes, one at a
//! time. The mutation corpus (tests/mutation.rs) runs them to measure what the race detector
//! catches: a mutant whose result can change with the timing must be rejected.

use crate::program::*;

/// What a mutant changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Every set and wait of one flag deleted.
    DeleteFlag,
    /// A `wait_flag` moved below the instruction after it (the one it guards).
    WaitBelow,
    /// A `set_flag` moved above the instruction before it (its producer).
    SetAbove,
    /// One memory reference's slot index `e % n` turned into `(e + 1) % n`.
    SwapSlot,
    /// One flag's setting pipe changed, on its sets and its waits alike.
    RetargetFlag,
    /// A `barrier` deleted.
    DropBarrier,
    /// One GM reference's `core` replaced by 0: two cores' partitions overlap.
    OverlapCores,
    /// One side's burst stride of a multi-burst DMA one element longer.
    StrideOffByOne,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 8] = [
        Kind::DeleteFlag,
        Kind::WaitBelow,
        Kind::SetAbove,
        Kind::SwapSlot,
        Kind::RetargetFlag,
        Kind::DropBarrier,
        Kind::OverlapCores,
        Kind::StrideOffByOne,
    ];
}

/// Where an instruction sits: the indices of the statements from the top level down.
type Path = Vec<usize>;

/// Every mutant of `p`, with its kind.
pub fn mutants(p: &Program) -> Vec<(Kind, Program)> {
    let paths = instr_paths(&p.body, &mut vec![]);
    let mut out = vec![];
    for path in &paths {
        let op = &instr_at(&p.body, path).op;
        match op {
            Op::WaitFlag(_) => out.extend(swap_with(p, path, 1).map(|m| (Kind::WaitBelow, m))),
            Op::SetFlag(f) => {
                out.extend(swap_with(p, path, -1).map(|m| (Kind::SetAbove, m)));
                out.push((Kind::DeleteFlag, delete_flag(p, f)));
                out.extend(retarget(p, f).map(|m| (Kind::RetargetFlag, m)));
            }
            Op::Barrier(_) => out.push((Kind::DropBarrier, delete_at(p, path))),
            Op::Dma(d) if d.sizes.count != Expr::Const(1) => {
                for side in [Side::Src, Side::Dst] {
                    let mut m = p.clone();
                    if let Op::Dma(d) = &mut instr_at_mut(&mut m.body, path).op {
                        let stride = match side {
                            Side::Src => &mut d.sizes.src_stride,
                            Side::Dst => &mut d.sizes.dst_stride,
                        };
                        *stride = Expr::Add(Box::new(stride.clone()), Box::new(Expr::Const(1)));
                    }
                    out.push((Kind::StrideOffByOne, m));
                }
            }
            _ => {}
        }
        for r in 0..refs(op).len() {
            if let Some(m) = rewrite_ref(p, path, r, swap_slot) {
                out.push((Kind::SwapSlot, m));
            }
            let gm = matches!(refs(op)[r].target, Target::Tensor(_));
            if let Some(m) = rewrite_ref(p, path, r, no_core).filter(|_| gm) {
                out.push((Kind::OverlapCores, m));
            }
        }
    }
    out
}

enum Side {
    Src,
    Dst,
}

fn instr_paths(body: &[Stmt], prefix: &mut Path) -> Vec<Path> {
    let mut out = vec![];
    for (i, s) in body.iter().enumerate() {
        prefix.push(i);
        match s {
            Stmt::Instr(_) => out.push(prefix.clone()),
            Stmt::Loop(l) => out.extend(instr_paths(&l.body, prefix)),
        }
        prefix.pop();
    }
    out
}

/// The block that holds the statement at `path`, and its index there.
fn block_mut<'a>(body: &'a mut Vec<Stmt>, path: &[usize]) -> (&'a mut Vec<Stmt>, usize) {
    match path {
        [i] => (body, *i),
        [i, rest @ ..] => match &mut body[*i] {
            Stmt::Loop(l) => block_mut(&mut l.body, rest),
            Stmt::Instr(_) => unreachable!("a path goes through loops"),
        },
        [] => unreachable!("a path is not empty"),
    }
}

fn instr_at<'a>(body: &'a [Stmt], path: &[usize]) -> &'a Instr {
    match (&body[path[0]], &path[1..]) {
        (Stmt::Instr(i), []) => i,
        (Stmt::Loop(l), rest) => instr_at(&l.body, rest),
        _ => unreachable!("paths lead to instructions"),
    }
}

fn instr_at_mut<'a>(body: &'a mut [Stmt], path: &[usize]) -> &'a mut Instr {
    match (&mut body[path[0]], &path[1..]) {
        (Stmt::Instr(i), []) => i,
        (Stmt::Loop(l), rest) => instr_at_mut(&mut l.body, rest),
        _ => unreachable!("paths lead to instructions"),
    }
}

/// The instruction at `path` swapped with its neighbour `by` (±1) in the same block, if that
/// neighbour is an instruction.
fn swap_with(p: &Program, path: &[usize], by: isize) -> Option<Program> {
    let mut m = p.clone();
    let (block, i) = block_mut(&mut m.body, path);
    let j = i.checked_add_signed(by)?;
    if !matches!(block.get(j), Some(Stmt::Instr(_))) {
        return None;
    }
    block.swap(i, j);
    Some(m)
}

fn delete_at(p: &Program, path: &[usize]) -> Program {
    let mut m = p.clone();
    let (block, i) = block_mut(&mut m.body, path);
    block.remove(i);
    m
}

/// Applies `f` to every flag instruction of `body`; `None` deletes it.
fn edit_flags(body: &mut Vec<Stmt>, f: &mut impl FnMut(&mut Op) -> bool) {
    body.retain_mut(|s| match s {
        Stmt::Loop(l) => {
            edit_flags(&mut l.body, f);
            true
        }
        Stmt::Instr(i) => f(&mut i.op),
    });
}

fn delete_flag(p: &Program, flag: &Flag) -> Program {
    let mut m = p.clone();
    edit_flags(
        &mut m.body,
        &mut |op| !matches!(op, Op::SetFlag(g) | Op::WaitFlag(g) if g == flag),
    );
    m
}

/// The flag set from another pipe (the first that is neither end of it), sets and waits.
fn retarget(p: &Program, flag: &Flag) -> Option<Program> {
    let other = [Pipe::Mte2, Pipe::V, Pipe::Mte3, Pipe::Mte1, Pipe::M]
        .into_iter()
        .find(|&q| q != flag.src && q != flag.dst)?;
    let mut m = p.clone();
    edit_flags(&mut m.body, &mut |op| {
        if let Op::SetFlag(g) | Op::WaitFlag(g) = op {
            if g == flag {
                g.src = other;
            }
        }
        true
    });
    Some(m)
}

/// The memory references of an instruction, destination first.
fn refs(op: &Op) -> Vec<&MemRef> {
    crate::expand::operand_refs(op)
}

/// The program with reference `r` of the instruction at `path` rewritten by `f` (which
/// returns `None` when it finds nothing to change).
fn rewrite_ref(
    p: &Program,
    path: &[usize],
    r: usize,
    f: fn(&Expr) -> Option<Expr>,
) -> Option<Program> {
    let mut m = p.clone();
    let target = Op::refs_mut(&mut instr_at_mut(&mut m.body, path).op)
        .into_iter()
        .nth(r)?;
    let mut changed = false;
    for e in &mut target.index {
        if let Some(new) = f(e) {
            *e = new;
            changed = true;
            break;
        }
    }
    changed.then_some(m)
}

/// `e % n` -> `(e + 1) % n`, the first one found.
fn swap_slot(e: &Expr) -> Option<Expr> {
    match e {
        Expr::Mod(inner, n) => Some(Expr::Mod(
            Box::new(Expr::Add(inner.clone(), Box::new(Expr::Const(1)))),
            *n,
        )),
        _ => rebuild(e, swap_slot),
    }
}

/// `core` -> 0, everywhere in the expression.
fn no_core(e: &Expr) -> Option<Expr> {
    match e {
        Expr::Core => Some(Expr::Const(0)),
        _ => rebuild(e, no_core),
    }
}

/// `e` with `f` applied to its first operand it changes.
fn rebuild(e: &Expr, f: fn(&Expr) -> Option<Expr>) -> Option<Expr> {
    let children = e.children();
    children.iter().enumerate().find_map(|(k, x)| {
        let new = f(x)?;
        let mut all: Vec<Expr> = children.iter().map(|c| (*c).clone()).collect();
        all[k] = new;
        Some(e.with_children(all))
    })
}
