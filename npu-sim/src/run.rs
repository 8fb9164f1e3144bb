//! A whole simulation: layout, expansion on every core, flag matching, timing, then the
//! functional execution and the checks in an order that respects happens-before.

use crate::diag::{Code, Diagnostic};
use crate::expand::{expand, Budget, Cost, Inst, Space};
use crate::func;
use crate::hazards::{Hazards, Race, BLOCK};
use crate::layout::{layout, Layout};
use crate::machine::Machine;
use crate::memory::Memory;
use crate::program::*;
use crate::report::Report;
use crate::tensor::TensorData;
use crate::timing::{self, Timeline};
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};

/// What a successful run produced.
#[derive(Debug)]
pub struct Run<'p> {
    /// Output tensors, in declaration order.
    pub outputs: Vec<(String, TensorData)>,
    /// The figures.
    pub report: Report,
    /// When every instruction ran.
    pub timeline: Timeline,
    /// The executed instructions per core (indices match the timeline).
    pub insts: Vec<Vec<Inst<'p>>>,
    /// The output tensors the program never wrote (their zeros are not results).
    pub unwritten_outputs: Vec<String>,
}

/// Why a run stopped, with the timeline when the timing simulation had finished (a race or a
/// fault is found afterwards), so that the failure can be looked at in a trace.
#[derive(Debug)]
pub struct Stopped<'p> {
    /// What went wrong.
    pub diagnostic: Diagnostic,
    /// The executed instructions per core and when each ran, if the timing was simulated.
    pub timed: Option<(Vec<Vec<Inst<'p>>>, Timeline)>,
}

/// Runs `p` on `m`. Inputs not given get seeded random values in [-1, 1) (integers in -8..8).
pub fn run<'p>(
    p: &'p Program,
    m: &Machine,
    inputs: &HashMap<String, TensorData>,
    seed: u64,
) -> Result<Run<'p>, Diagnostic> {
    run_timed(p, m, inputs, seed).map_err(|s| s.diagnostic)
}

/// [`run`], keeping the timeline of a run that stops on a race or a fault.
pub fn run_timed<'p>(
    p: &'p Program,
    m: &Machine,
    inputs: &HashMap<String, TensorData>,
    seed: u64,
) -> Result<Run<'p>, Box<Stopped<'p>>> {
    let untimed = |diagnostic| {
        Box::new(Stopped {
            diagnostic,
            timed: None,
        })
    };
    let lay = layout(p, m).map_err(untimed)?;
    let mut budget = Budget::default();
    let insts: Vec<Vec<Inst>> = (0..m.cores)
        .map(|c| expand(p, m, &lay, c, &mut budget))
        .collect::<Result<_, _>>()
        .map_err(untimed)?;
    let matches: Vec<Vec<Option<usize>>> = insts
        .iter()
        .map(|c| match_flags(c))
        .collect::<Result<_, _>>()
        .map_err(untimed)?;
    let timeline = timing::simulate(m, &insts, &matches).map_err(|d| {
        let core = &insts[d.core as usize];
        let first = core[d.blocked[0]].instr;
        let mut diag = Diagnostic::new(
            Code::Deadlock,
            first.span,
            format!(
                "deadlock on core {}: `{}` waits forever",
                d.core,
                first.op.mnemonic()
            ),
        );
        for &b in &d.blocked[1..] {
            diag = diag.with_related(core[b].instr.span, "also blocked");
        }
        untimed(diag.with_note("every pipe is blocked on a wait whose set can only come after it"))
    })?;
    let mut memory = Memory::new(p, m, initial_values(p, inputs, seed).map_err(untimed)?);
    if let Err(diagnostic) = execute_in_order(p, m, &lay, &insts, &matches, &timeline, &mut memory)
    {
        return Err(Box::new(Stopped {
            diagnostic,
            timed: Some((insts, timeline)),
        }));
    }
    let outputs = p
        .tensors
        .iter()
        .enumerate()
        .filter(|(_, t)| t.dir.is_output())
        .map(|(i, t)| {
            let data = TensorData {
                dtype: t.dtype,
                shape: t.shape.clone(),
                bytes: memory.tensor(TensorId(i as u32)).to_vec(),
            };
            (t.name.clone(), data)
        })
        .collect();
    let unwritten_outputs = (p.tensors.iter().enumerate())
        .filter(|(i, t)| t.dir.is_output() && !memory.holds_any(TensorId(*i as u32)))
        .map(|(_, t)| t.name.clone())
        .collect();
    let report = Report::new(p, m, &lay, &insts, &timeline);
    Ok(Run {
        outputs,
        report,
        timeline,
        insts,
        unwritten_outputs,
    })
}

/// The k-th wait of each flag matches its k-th set; a wait with no set is a deadlock, a set
/// with no wait an error.
fn match_flags(core: &[Inst]) -> Result<Vec<Option<usize>>, Diagnostic> {
    let mut sets: BTreeMap<(Pipe, Pipe, u32), Vec<usize>> = BTreeMap::new();
    let mut waits: BTreeMap<(Pipe, Pipe, u32), Vec<usize>> = BTreeMap::new();
    for (i, inst) in core.iter().enumerate() {
        match inst.instr.op {
            Op::SetFlag(f) => sets.entry((f.src, f.dst, f.id)).or_default().push(i),
            Op::WaitFlag(f) => waits.entry((f.src, f.dst, f.id)).or_default().push(i),
            _ => {}
        }
    }
    let mut matched = vec![None; core.len()];
    for (key, ws) in &waits {
        let ss = sets.get(key).map_or(&[][..], Vec::as_slice);
        if ws.len() > ss.len() {
            let w = core[ws[ss.len()]].instr;
            return Err(Diagnostic::new(
                Code::Deadlock,
                w.span,
                format!(
                    "deadlock: flag {} -> {} id {} is waited for {} time(s) but set only {} time(s); this wait never returns",
                    key.0,
                    key.1,
                    key.2,
                    ws.len(),
                    ss.len()
                ),
            ));
        }
        for (w, s) in ws.iter().zip(ss) {
            matched[*w] = Some(*s);
        }
    }
    for (key, ss) in &sets {
        let n = waits.get(key).map_or(0, Vec::len);
        if ss.len() > n {
            let s = core[ss[n]].instr;
            return Err(Diagnostic::new(
                Code::UnwaitedFlag,
                s.span,
                format!(
                    "flag {} -> {} id {} is set {} time(s) but waited for only {n}",
                    key.0,
                    key.1,
                    key.2,
                    ss.len()
                ),
            )
            .with_note("every set_flag needs a matching wait_flag before the program ends"));
        }
    }
    Ok(matched)
}

fn initial_values(
    p: &Program,
    inputs: &HashMap<String, TensorData>,
    seed: u64,
) -> Result<Vec<Option<Vec<u8>>>, Diagnostic> {
    if let Some(name) = inputs
        .keys()
        .find(|n| !p.tensors.iter().any(|t| &t.name == *n && t.dir.is_input()))
    {
        return Err(Diagnostic::global(
            Code::Io,
            format!("`{name}` is not an input tensor of the program"),
        ));
    }
    p.tensors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if !t.dir.is_input() {
                return Ok(None);
            }
            if let Some(d) = inputs.get(&t.name) {
                if d.dtype != t.dtype || d.shape != t.shape {
                    return Err(Diagnostic::new(
                        Code::Io,
                        t.span,
                        format!(
                            "input `{}` is {}{:?}, the program declares {}{:?}",
                            t.name, d.dtype, d.shape, t.dtype, t.shape
                        ),
                    ));
                }
                return Ok(Some(d.bytes.clone()));
            }
            Ok(Some(random_input(t, i, seed).bytes))
        })
        .collect()
}

/// The seeded random values a run gives input tensor number `index` when none is supplied:
/// uniform in [-1, 1) for floats, in -8..8 for integers.
pub fn random_input(t: &TensorDecl, index: usize, seed: u64) -> TensorData {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
        seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index as u64,
    );
    let vals: Vec<f64> = (0..elements(&t.shape))
        .map(|_| {
            if t.dtype.is_int() {
                rng.random_range(-8..8) as f64
            } else {
                rng.random_range(-1.0..1.0)
            }
        })
        .collect();
    TensorData::from_values(t.dtype, &t.shape, &vals)
}

/// The random values of every input tensor, in declaration order.
pub fn random_inputs(p: &Program, seed: u64) -> Vec<TensorData> {
    p.tensors
        .iter()
        .enumerate()
        .filter(|(_, t)| t.dir.is_input())
        .map(|(i, t)| random_input(t, i, seed))
        .collect()
}

/// Sorted by end time; a wait or barrier ends together with what it waited for, so at equal
/// times it comes after. Every instruction lasts at least a cycle, so if A happens before B,
/// A ends before B ends.
fn execution_order(insts: &[Vec<Inst>], timeline: &Timeline) -> Vec<(u32, usize)> {
    let mut order: Vec<(f64, u8, u32, usize)> = vec![];
    for (c, core) in insts.iter().enumerate() {
        for (i, inst) in core.iter().enumerate() {
            let late = matches!(inst.cost, Cost::Wait | Cost::BarrierAll) as u8;
            order.push((timeline.cores[c].end[i], late, c as u32, i));
        }
    }
    order.sort_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    order.into_iter().map(|(_, _, c, i)| (c, i)).collect()
}

fn execute_in_order(
    p: &Program,
    m: &Machine,
    lay: &Layout,
    insts: &[Vec<Inst>],
    matches: &[Vec<Option<usize>>],
    timeline: &Timeline,
    memory: &mut Memory,
) -> Result<(), Diagnostic> {
    let s_preds: Vec<Vec<Option<usize>>> = insts
        .iter()
        .map(|core| {
            let mut last = None;
            core.iter()
                .enumerate()
                .map(|(i, inst)| {
                    let pred = last;
                    if inst.pipe == Pipe::S {
                        last = Some(i);
                    }
                    pred
                })
                .collect()
        })
        .collect();
    let mut hazards = Hazards::new(m.cores);
    // A read of unwritten bytes is reported at the end unless a race explains it: a read that
    // ran before an unordered write is a race first.
    let mut uninitialised = None;
    for (c, i) in execution_order(insts, timeline) {
        let inst = &insts[c as usize][i];
        let barrier = inst.cost == Cost::BarrierAll;
        hazards
            .step(
                c,
                i,
                inst,
                s_preds[c as usize][i],
                matches[c as usize][i],
                barrier,
            )
            .map_err(|r| race_diagnostic(p, lay, insts, c, inst, &r))?;
        for a in inst.accesses.iter().filter(|a| !a.write) {
            if let (None, Some(byte)) = (
                &uninitialised,
                memory.first_unwritten(c, a.space, &a.pattern),
            ) {
                let what = place(p, lay, a.space, byte, 1);
                let mnemonic = inst.instr.op.mnemonic();
                let message =
                    format!("`{mnemonic}` on core {c} reads {what}, which nothing has written");
                uninitialised = Some(Diagnostic::new(
                    Code::Uninitialised,
                    inst.instr.span,
                    message,
                ));
            }
        }
        func::execute(memory, c, inst, p, m);
    }
    uninitialised.map_or(Ok(()), Err)
}

/// "ub bytes 64..96 (buffer `a`)" or "bytes 0..32 of GM tensor `x`".
fn place(p: &Program, lay: &Layout, space: Space, byte: u64, len: u64) -> String {
    match space {
        Space::Gm(t) => format!(
            "bytes {byte}..{} of GM tensor `{}`",
            byte + len,
            p.tensor(t).name
        ),
        Space::Tier(tier) => {
            let owner = p.buffers.iter().enumerate().find(|(i, b)| {
                let base = lay.base[*i];
                b.tier == tier
                    && (base..base + Layout::size(p, BufferId(*i as u32))).contains(&byte)
            });
            let name = owner.map_or(String::new(), |(_, b)| format!(" (buffer `{}`)", b.name));
            format!("{tier} bytes {byte}..{}{name}", byte + len)
        }
    }
}

fn race_diagnostic(
    p: &Program,
    lay: &Layout,
    insts: &[Vec<Inst>],
    core: u32,
    inst: &Inst,
    r: &Race,
) -> Diagnostic {
    let verb = |w: bool| if w { "writes" } else { "reads" };
    let pipe = |i: u8| Pipe::ALL[i as usize];
    let earlier = insts
        .get(r.earlier.core as usize)
        .and_then(|c| c.get(r.earlier.inst as usize));
    let who = match earlier {
        Some(e) => format!(
            "`{}` on {} of core {}",
            e.instr.op.mnemonic(),
            pipe(r.earlier.pipe),
            r.earlier.core
        ),
        None => format!("core {}", r.earlier.core),
    };
    let diag = Diagnostic::new(
        Code::Race,
        inst.instr.span,
        format!(
            "race: `{}` on {} of core {core} {} {}, which {who} {}, with no flag or barrier ordering them",
            inst.instr.op.mnemonic(),
            inst.pipe,
            verb(r.write),
            place(p, lay, r.space, r.byte, BLOCK),
            verb(r.earlier_write)
        ),
    );
    let diag = match earlier {
        Some(e) => diag.with_related(
            e.instr.span,
            format!(
                "the other access ({} on {})",
                verb(r.earlier_write),
                pipe(r.earlier.pipe)
            ),
        ),
        None => diag,
    };
    diag.with_note("order them with set_flag/wait_flag between the two pipes (or barrier ALL); cores are never ordered")
}
