//! A whole simulation: layout, expansion on every core, flag matching, happens-before from
//! the program ([`crate::order`]), timing, the race check in happens-before order, then the
//! functional execution in the order the timing produced.
//!
//! The race verdict never depends on the timing. The values do only through the order of
//! execution, which for a race-free program cannot change them (the timing-randomisation
//! oracle, [`crate::oracle`], checks exactly that).

use crate::diag::{Code, Diagnostic};
use crate::expand::{expand, Budget, Cost, Inst, Space};
use crate::func;
use crate::hazards::{Hazards, Race, BLOCK};
use crate::layout::{layout, Layout};
use crate::machine::Machine;
use crate::memory::Memory;
use crate::order::{self, Semantics};
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

/// Runs `p` on `m` in the strict semantics. Inputs not given get seeded random values in
/// [-1, 1) (integers in -8..8).
pub fn run<'p>(
    p: &'p Program,
    m: &Machine,
    inputs: &HashMap<String, TensorData>,
    seed: u64,
) -> Result<Run<'p>, Diagnostic> {
    run_timed(p, m, inputs, seed, Semantics::Strict).map_err(|s| s.diagnostic)
}

/// [`run`] in either semantics, keeping the timeline of a run that stops on a race or a
/// fault.
pub fn run_timed<'p>(
    p: &'p Program,
    m: &Machine,
    inputs: &HashMap<String, TensorData>,
    seed: u64,
    semantics: Semantics,
) -> Result<Run<'p>, Box<Stopped<'p>>> {
    run_checked(p, m, inputs, seed, semantics).map_err(|mut stopped| {
        stopped.diagnostic = with_origins(p, stopped.diagnostic);
        stopped
    })
}

/// Adds, for every instruction the diagnostic points into, the origin the compiler gave it.
fn with_origins(p: &Program, mut d: Diagnostic) -> Diagnostic {
    let spans: Vec<Span> = d
        .span
        .into_iter()
        .chain(d.related.iter().map(|r| r.0))
        .collect();
    let mut notes = vec![];
    p.for_each_instr(&mut |i| {
        let at = |s: &Span| i.span.start <= s.start && s.end <= i.span.end;
        if let Some(note) = i.origin.note().filter(|_| spans.iter().any(at)) {
            let line = format!("`{}` comes from: {note}", i.op.mnemonic());
            if !notes.contains(&line) {
                notes.push(line);
            }
        }
    });
    d.notes.extend(notes);
    d
}

/// A program walked on every core, timing apart.
pub struct Walked<'p> {
    /// Where its buffers are.
    pub layout: Layout,
    /// Per core, its executed instructions in program order.
    pub insts: Vec<Vec<Inst<'p>>>,
    /// Per core, the set each wait matches.
    pub matches: Vec<Vec<Option<usize>>>,
    /// Happens-before.
    pub order: order::Order,
}

/// Walks `p` on every core of `m`: the executed instructions, the flags' matching and
/// happens-before, and in the strict semantics no flag set again before its wait. What
/// stops it is the program's own diagnostic (a fault, a deadlock naming the blocked
/// instructions, a flag set twice).
pub fn walk<'p>(
    p: &'p Program,
    m: &Machine,
    semantics: Semantics,
) -> Result<Walked<'p>, Diagnostic> {
    let layout = layout(p, m)?;
    let mut budget = Budget::default();
    let insts: Vec<Vec<Inst>> = (0..m.cores)
        .map(|c| expand(p, m, &layout, c, &mut budget))
        .collect::<Result<_, _>>()?;
    let matches: Vec<Vec<Option<usize>>> = insts
        .iter()
        .map(|c| match_flags(c))
        .collect::<Result<_, _>>()?;
    let order = order::order(&insts, &matches, semantics)
        .map_err(|b| deadlock_diagnostic(&insts, b.core, &b.insts))?;
    if semantics == Semantics::Strict {
        order::single_event_flags(&insts, &matches, &order)?;
    }
    Ok(Walked {
        layout,
        insts,
        matches,
        order,
    })
}

fn run_checked<'p>(
    p: &'p Program,
    m: &Machine,
    inputs: &HashMap<String, TensorData>,
    seed: u64,
    semantics: Semantics,
) -> Result<Run<'p>, Box<Stopped<'p>>> {
    let untimed = |diagnostic| {
        Box::new(Stopped {
            diagnostic,
            timed: None,
        })
    };
    let Walked {
        layout: lay,
        insts,
        matches,
        order,
    } = walk(p, m, semantics).map_err(untimed)?;
    let deadlock = |core: u32, blocked: &[usize]| deadlock_diagnostic(&insts, core, blocked);
    let timeline = timing::simulate(m, &insts, &matches, semantics)
        .map_err(|d| untimed(deadlock(d.core, &d.blocked)))?;
    let initial = initial_values(p, inputs, seed).map_err(untimed)?;
    let checked = check_races(p, &lay, &insts, &order)
        .and_then(|()| execute_in_order(p, m, &lay, &insts, &timeline, initial));
    let memory = match checked {
        Ok(memory) => memory,
        Err(diagnostic) => {
            return Err(Box::new(Stopped {
                diagnostic,
                timed: Some((insts, timeline)),
            }))
        }
    };
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

/// "deadlock on core C: `wait_flag` waits forever", with every blocked instruction.
fn deadlock_diagnostic(insts: &[Vec<Inst>], core: u32, blocked: &[usize]) -> Diagnostic {
    let insts = &insts[core as usize];
    let first = insts[blocked[0]].instr;
    let mut diag = Diagnostic::new(
        Code::Deadlock,
        first.span,
        format!(
            "deadlock on core {core}: `{}` waits forever",
            first.op.mnemonic()
        ),
    );
    for &b in &blocked[1..] {
        diag = diag.with_related(insts[b].instr.span, "also blocked");
    }
    diag.with_note(
        "every pipe is blocked on a wait whose set can only come after it (or a `sync_all` some core never reaches)",
    )
}

/// The k-th wait of each flag matches its k-th set; a wait with no set is a deadlock, a set
/// with no wait an error.
fn match_flags(core: &[Inst]) -> Result<Vec<Option<usize>>, Diagnostic> {
    let mut sets: BTreeMap<FlagKey, Vec<usize>> = BTreeMap::new();
    let mut waits: BTreeMap<FlagKey, Vec<usize>> = BTreeMap::new();
    for (i, inst) in core.iter().enumerate() {
        match (&inst.instr.op, inst.flag) {
            (Op::SetFlag(_), Some(f)) => sets.entry(f).or_default().push(i),
            (Op::WaitFlag(_), Some(f)) => waits.entry(f).or_default().push(i),
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
                    "deadlock: flag {key} is waited for {} time(s) but set only {} time(s); this wait never returns",
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
                    "flag {key} is set {} time(s) but waited for only {n}",
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
            let late = matches!(inst.cost, Cost::Wait | Cost::BarrierAll | Cost::SyncAll) as u8;
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

/// Checks every access against happens-before, in an order that respects it.
fn check_races(
    p: &Program,
    lay: &Layout,
    insts: &[Vec<Inst>],
    order: &order::Order,
) -> Result<(), Diagnostic> {
    let mut hazards = Hazards::default();
    for &(c, i) in &order.logical {
        let inst = &insts[c as usize][i];
        hazards
            .step(c, i, inst, &order.stamps[c as usize][i])
            .map_err(|r| race_diagnostic(p, lay, insts, c, inst, &r))?;
    }
    Ok(())
}

/// Executes every instruction in the order the timing finished them. A read of unwritten
/// bytes (an atomic add reads its destination) is an error; a race-free program reads the
/// same bytes in every order that respects happens-before.
fn execute_in_order(
    p: &Program,
    m: &Machine,
    lay: &Layout,
    insts: &[Vec<Inst>],
    timeline: &Timeline,
    initial: Vec<Option<Vec<u8>>>,
) -> Result<Memory, Diagnostic> {
    let mut memory = Memory::new(p, m, initial);
    for (c, i) in execution_order(insts, timeline) {
        let inst = &insts[c as usize][i];
        let atomic = matches!(&inst.instr.op, Op::Dma(d) if d.atomic);
        for a in inst.accesses.iter().filter(|a| !a.write || atomic) {
            if let Some(byte) = memory.first_unwritten(c, a.space, &a.pattern) {
                let what = place(p, lay, a.space, byte, 1);
                let mnemonic = inst.instr.op.mnemonic();
                let message =
                    format!("`{mnemonic}` on core {c} reads {what}, which nothing has written");
                return Err(Diagnostic::new(
                    Code::Uninitialised,
                    inst.instr.span,
                    message,
                ));
            }
        }
        func::execute(&mut memory, c, inst, p, m);
    }
    Ok(memory)
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
    let e = r.earlier;
    let earlier = &insts[e.core as usize][e.inst as usize];
    let who = format!(
        "`{}` on {} of core {}",
        earlier.instr.op.mnemonic(),
        e.pipe,
        e.core
    );
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
    )
    .with_related(
        earlier.instr.span,
        format!("the other access ({} on {})", verb(r.earlier_write), e.pipe),
    );
    if e.core == core && e.pipe == inst.pipe {
        diag.with_note(format!(
            "dependent instructions of one pipe need `barrier {}` between them (or `--relaxed`, where a pipe runs in order)",
            inst.pipe
        ))
    } else {
        diag.with_note("order them with set_flag/wait_flag between the two pipes (or barrier ALL); cores are ordered only by sync_all")
    }
}
