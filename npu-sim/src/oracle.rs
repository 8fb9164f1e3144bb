//! The timing-randomisation oracle: a program runs on machines whose latencies, bandwidths
//! (per path, per core and in total), burst cycles, start-ups and scalar costs are each scaled
//! by a random factor between 1/10 and 10 (the GM segment, a layout property, stays). The race
//! verdict, and for a race-free program every output bit, must be the same on all of them:
//! what the program computes may not depend on how fast the machine is.
//!
//! The one tolerated difference: float atomic adds of several pipes or cores into the same
//! bytes may land in any order, so their sums may differ in rounding (as on the hardware).
//! Such tensors are compared within rounding and named in the outcome.

use crate::diag::Code;
use crate::machine::Machine;
use crate::order::Semantics;
use crate::program::{Op, Program, Target};
use crate::tensor::TensorData;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

/// The largest factor by which a figure is scaled, either way.
pub const SPREAD: f64 = 10.0;

/// What the oracle found.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every machine gave the same verdict and outputs.
    Agreed {
        /// Machines run (the original included).
        machines: usize,
        /// Whether the program was accepted (else every machine rejected it with `code`).
        accepted: Option<Code>,
        /// Output tensors accumulated by float atomic adds that differed only within rounding.
        rounding: Vec<String>,
    },
    /// Two machines disagree on whether the program is accepted, or on why not.
    Verdicts {
        /// The varied machine (its index, from 1).
        machine: usize,
        /// The original's error code, if any.
        original: Option<Code>,
        /// The varied machine's.
        varied: Option<Code>,
    },
    /// A race-free program computed different values on a varied machine.
    Outputs {
        /// The varied machine (its index, from 1).
        machine: usize,
        /// The first tensor that differs.
        tensor: String,
        /// The first element that differs.
        element: usize,
    },
}

impl Outcome {
    /// Whether the program's meaning is independent of the timing.
    pub fn agreed(&self) -> bool {
        matches!(self, Outcome::Agreed { .. })
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Agreed {
                machines,
                accepted,
                rounding,
            } => {
                match accepted {
                    None => write!(f, "timing check: {machines} machines, same outputs")?,
                    Some(c) => write!(f, "timing check: {machines} machines, all reject ({c})")?,
                }
                if !rounding.is_empty() {
                    write!(f, " ({} differ only in the rounding of atomic adds)", rounding.join(", "))?;
                }
                Ok(())
            }
            Outcome::Verdicts {
                machine,
                original,
                varied,
            } => {
                let say = |c: &Option<Code>| c.map_or("accepts".to_string(), |c| format!("rejects ({c})"));
                write!(
                    f,
                    "timing check FAILED: the machine as given {}, varied machine {machine} {}",
                    say(original),
                    say(varied)
                )
            }
            Outcome::Outputs {
                machine,
                tensor,
                element,
            } => write!(
                f,
                "timing check FAILED: varied machine {machine} computes a different `{tensor}` (first at element {element})"
            ),
        }
    }
}

/// `count` machines like `m` with every latency, bandwidth (per path, per core, total), the
/// burst cycles, every start-up and scalar cost scaled by its own factor in [1/SPREAD, SPREAD]
/// (log-uniform), from `seed`. The GM segment stays: it is a layout property.
pub fn varied_machines(m: &Machine, count: usize, seed: u64) -> Vec<Machine> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x7113_0b5e_55ed_0f7e);
    (1..=count)
        .map(|k| {
            let mut v = m.clone();
            let mut scale = |x: &mut f64| *x *= SPREAD.powf(rng.random_range(-1.0..=1.0));
            for p in &mut v.paths {
                scale(&mut p.latency);
                scale(&mut p.bytes_per_cycle);
            }
            scale(&mut v.gm.bytes_per_cycle_total);
            scale(&mut v.gm.bytes_per_cycle_per_core);
            scale(&mut v.gm.burst_cycles);
            scale(&mut v.cube.startup);
            scale(&mut v.vector.startup);
            scale(&mut v.scalar.issue_cycles);
            scale(&mut v.scalar.loop_cycles);
            scale(&mut v.scalar.flag_cycles);
            v.name = format!("{} (varied {k})", m.name);
            v
        })
        .collect()
}

/// Runs `p` on `m` and on `count` varied machines and compares.
pub fn check_timing(
    p: &Program,
    m: &Machine,
    inputs: &HashMap<String, TensorData>,
    seed: u64,
    semantics: Semantics,
    count: usize,
) -> Outcome {
    let outputs = |machine: &Machine| {
        crate::run::run_timed(p, machine, inputs, seed, semantics)
            .map(|r| r.outputs)
            .map_err(|s| s.diagnostic.code)
    };
    let original = outputs(m);
    let atomic = atomic_float_tensors(p);
    let mut rounding: Vec<String> = vec![];
    for (k, machine) in varied_machines(m, count, seed).iter().enumerate() {
        let varied = outputs(machine);
        let (want, got) = match (&original, &varied) {
            (Ok(want), Ok(got)) => (want, got),
            (Err(a), Err(b)) if a == b => continue,
            _ => {
                return Outcome::Verdicts {
                    machine: k + 1,
                    original: original.as_ref().err().copied(),
                    varied: varied.as_ref().err().copied(),
                }
            }
        };
        for ((name, a), (_, b)) in want.iter().zip(got) {
            if a.bytes == b.bytes {
                continue;
            }
            let (va, vb) = (a.values(), b.values());
            let first = va
                .iter()
                .zip(&vb)
                .position(|(x, y)| x.to_bits() != y.to_bits());
            let within = |x: &f64, y: &f64| (x - y).abs() <= 1e-3 * x.abs().max(y.abs()) + 1e-6;
            if atomic.contains(name) && va.iter().zip(&vb).all(|(x, y)| within(x, y)) {
                if !rounding.contains(name) {
                    rounding.push(name.clone());
                }
                continue;
            }
            return Outcome::Outputs {
                machine: k + 1,
                tensor: name.clone(),
                element: first.unwrap_or(0),
            };
        }
    }
    Outcome::Agreed {
        machines: count + 1,
        accepted: original.err(),
        rounding,
    }
}

/// The tensors some float atomic add accumulates into.
fn atomic_float_tensors(p: &Program) -> Vec<String> {
    let mut names = vec![];
    p.for_each_instr(&mut |i| {
        if let Op::Dma(d) = &i.op {
            if let (true, Target::Tensor(t)) = (d.atomic, d.dst.target) {
                let t = p.tensor(t);
                if !t.dtype.is_int() {
                    names.push(t.name.clone());
                }
            }
        }
    });
    names
}
