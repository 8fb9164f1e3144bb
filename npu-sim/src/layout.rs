//! Placing buffers in their tiers, and the checks of a program against a machine that need no
//! execution: tiers present, capacity, alignment, data paths, cube tiers, vector limits, flags.

use crate::diag::{Code, Diagnostic};
use crate::machine::{Machine, Mem};
use crate::program::*;
use std::collections::BTreeMap;

/// Where every buffer sits.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Byte offset of each buffer in its tier, by [`BufferId`].
    pub base: Vec<u64>,
    /// Highest allocated byte (exclusive) per tier.
    pub peak: BTreeMap<Tier, u64>,
}

impl Layout {
    /// Bytes of a buffer.
    pub fn size(p: &Program, b: BufferId) -> u64 {
        let b = p.buffer(b);
        elements(&b.shape) * b.dtype.size()
    }
}

/// Places buffers and checks the program against the machine.
pub fn layout(p: &Program, m: &Machine) -> Result<Layout, Diagnostic> {
    let mut base = vec![];
    let mut next: BTreeMap<Tier, u64> = BTreeMap::new();
    let mut peak: BTreeMap<Tier, u64> = BTreeMap::new();
    for (i, b) in p.buffers.iter().enumerate() {
        let spec = m.tier(b.tier).ok_or_else(|| {
            Diagnostic::new(
                Code::NoTier,
                b.span,
                format!("machine `{}` has no {} tier", m.name, b.tier),
            )
        })?;
        let size = Layout::size(p, BufferId(i as u32));
        let offset = match b.placement {
            Placement::At(o) if o % spec.align != 0 => {
                return Err(Diagnostic::new(
                    Code::Misaligned,
                    b.span,
                    format!(
                        "buffer `{}` at byte {o} is not aligned to {} bytes ({})",
                        b.name, spec.align, b.tier
                    ),
                ));
            }
            Placement::At(o) => o,
            Placement::Auto => next
                .get(&b.tier)
                .copied()
                .unwrap_or(0)
                .next_multiple_of(spec.align),
        };
        let end = offset + size;
        if end > spec.capacity {
            return Err(Diagnostic::new(
                Code::Capacity,
                b.span,
                format!(
                    "buffer `{}` needs bytes {offset}..{end} of {}, which holds {} bytes",
                    b.name, b.tier, spec.capacity
                ),
            ));
        }
        let n = next.entry(b.tier).or_insert(0);
        *n = (*n).max(end);
        let pk = peak.entry(b.tier).or_insert(0);
        *pk = (*pk).max(end);
        base.push(offset);
    }
    let mut err = None;
    p.for_each_instr(&mut |i| {
        if err.is_none() {
            err = check_instr(p, m, i).err();
        }
    });
    err.map_or(Ok(Layout { base, peak }), Err)
}

/// The memory endpoint a reference lives in.
pub fn mem_of(p: &Program, r: &MemRef) -> Mem {
    match r.target {
        Target::Tensor(_) => Mem::Gm,
        Target::Buffer(b) => Mem::of(Some(p.buffer(b).tier)),
    }
}

/// Lanes of a vector instruction: the vector width over its widest element.
pub fn lanes(p: &Program, m: &Machine, v: &Vector) -> u64 {
    let widest = std::iter::once(&v.dst)
        .chain(v.op.sources())
        .map(|r| p.target_info(r.target).1.size())
        .max();
    m.vector.bytes_per_repeat / widest.unwrap_or(1)
}

fn check_instr(p: &Program, m: &Machine, i: &Instr) -> Result<(), Diagnostic> {
    let no_path = |from: Mem, to: Mem| {
        Diagnostic::new(
            Code::NoPath,
            i.span,
            format!("machine `{}` has no data path {from} -> {to}", m.name),
        )
    };
    match &i.op {
        Op::Dma(d) => {
            let (from, to) = (mem_of(p, &d.src), mem_of(p, &d.dst));
            m.path(from, to).ok_or_else(|| no_path(from, to))?;
        }
        Op::Load3d(op) => {
            let (from, to) = (mem_of(p, &op.src), mem_of(p, &op.dst));
            m.path(from, to).ok_or_else(|| no_path(from, to))?;
        }
        Op::Mmad(op) => {
            for (r, want, what) in [
                (&op.a, m.cube.a, "A"),
                (&op.b, m.cube.b, "B"),
                (&op.c, m.cube.c, "C"),
            ] {
                let got = mem_of(p, r);
                if got != want {
                    return Err(Diagnostic::new(
                        Code::WrongTier,
                        r.span,
                        format!(
                            "the cube reads {what} from {want} on `{}`, not from {got}",
                            m.name
                        ),
                    ));
                }
            }
        }
        Op::SetFlag(f) | Op::WaitFlag(f) => {
            if let Expr::Const(id) = f.id {
                check_flag_id(id, m, i.span)?;
            }
        }
        Op::Vector(_) | Op::Barrier(_) | Op::SyncAll => {}
    }
    Ok(())
}

/// A flag id must be one of the machine's (E0020).
pub fn check_flag_id(id: i64, m: &Machine, span: Span) -> Result<u32, Diagnostic> {
    match u32::try_from(id) {
        Ok(id) if id < m.flag_ids => Ok(id),
        _ => Err(Diagnostic::new(
            Code::BadFlag,
            span,
            format!(
                "flag id {id} is out of range: `{}` has flag ids 0..{}",
                m.name, m.flag_ids
            ),
        )),
    }
}
