//! The NPU back end: kernels compiled into programs for the simulated Ascend-like machine
//! (`npu_sim`), with the cube work mapped through a mapping proved by
//! `scheduler::mapping` and every datum moved explicitly through GM, L1, L0A/L0B/L0C and UB.
//!
//! What it compiles today: matrix products, batched or not (`recognise`), as tiled,
//! double-buffered, multi-core programs in the strict synchronisation semantics
//! (`matmul`). Everything else is refused with the reason. See `docs/npu-backend.md`.

pub mod conv;
pub mod matmul;
pub mod recognise;

use frontend::ir::Kernel;
use npu_sim::Machine;
use scheduler::target::Target;
use std::collections::BTreeMap;

/// Why a kernel was not compiled for the NPU.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NpuError {
    /// The kernel is outside what the back end compiles (the reason says what).
    #[error("the NPU back end does not compile this kernel: {0}")]
    Unsupported(String),
    /// The matrix unit would sum in its own order, which the user has not allowed.
    #[error("the matrix unit sums each product's terms in its own order: allow it with --reorder-reductions")]
    ReorderNotAllowed,
    /// A bug.
    #[error("NPU code generation failed: {0}")]
    Internal(String),
}

/// What kind of program a kernel became, with the decisions taken for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// A matrix product on the cube unit.
    Matmul {
        /// The tile sizes chosen.
        tiles: matmul::Tiles,
        /// The proved mapping it follows, in the mapping text format.
        mapping: String,
    },
    /// A 2-D convolution on the cube unit, its im2col built by `load3d`.
    Conv {
        /// What was recognised (sizes, stride, padding, layouts).
        summary: String,
        /// The tile sizes chosen.
        tiles: conv::tiles::Tiles,
        /// The proved mapping it follows, in the mapping text format.
        mapping: String,
    },
}

impl Plan {
    /// The program's header: what was compiled and how, one comment line each.
    pub fn describe(&self) -> Vec<String> {
        match self {
            Plan::Matmul { tiles: t, mapping } => {
                let panel = if t.panel {
                    " A's rows of a tile stay in L1 while a core works on their band."
                } else {
                    ""
                };
                let mut lines = vec![
                    format!(
                        "C tiles of {} x {}, K in chunks of {} through L1 and steps of {} through L0.{panel}",
                        t.tm, t.tn, t.kc, t.tk
                    ),
                    "The matrix unit's mapping, proved:".to_string(),
                ];
                lines.extend(mapping.lines().map(|l| format!("  {l}")));
                lines
            }
            Plan::Conv {
                summary,
                tiles: t,
                mapping,
            } => {
                let mut lines = vec![
                    summary.clone(),
                    format!(
                        "Slabs of {} output channels by {} pixels, one at a time per core; tiles of {} pixels; sub-steps of {} window position(s) by {} block(s) of 16 input channels.",
                        t.ks, t.ps, t.mp, t.nrs, t.kc1
                    ),
                    if t.streamed {
                        "A slab's input rows and weights stream into L1 while the cube works.".to_string()
                    } else {
                        "A prologue brings a slab's input rows and weights into L1 (converted through the cube where their layout needs it).".to_string()
                    },
                    "The matrix unit's mapping, proved (the program may run a call transposed and sums each call's reduction in load3d's order, channel blocks then window positions):".to_string(),
                ];
                lines.extend(mapping.lines().map(|l| format!("  {l}")));
                lines
            }
        }
    }
}

/// A kernel compiled for the NPU.
#[derive(Debug)]
pub struct Compiled {
    /// The program.
    pub program: npu_sim::Program,
    /// What the program is and the decisions taken for it.
    pub plan: Plan,
}

/// Compiles `kernel` at the sizes `params` for `machine`. `reorder` says whether the user
/// allows floating-point sums to be reordered (the matrix unit does).
pub fn compile(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    reorder: bool,
) -> Result<Compiled, NpuError> {
    let target = Target::of_npu(machine);
    if let Some(cv) = conv::recognise::convolution(kernel, params, &target)? {
        if !reorder {
            return Err(NpuError::ReorderNotAllowed);
        }
        return conv::compile(cv, machine);
    }
    let mm = recognise::matmul(kernel, params, &target)?;
    if !reorder {
        return Err(NpuError::ReorderNotAllowed);
    }
    let elems = [&mm.a, &mm.b, &mm.c].map(|o| kernel.array(o.tensor).elem);
    let c_bytes = kernel.array(mm.c.tensor).elem.size_bytes() as i64;
    let tiles = matmul::Tiles::choose(&mm, machine, c_bytes).ok_or_else(|| {
        NpuError::Unsupported(format!(
            "no tile of the product fits `{}`'s buffers",
            machine.name
        ))
    })?;
    let program = matmul::program(&mm, elems, machine.cores as i64, tiles)?;
    Ok(Compiled {
        program,
        plan: Plan::Matmul {
            tiles,
            mapping: mm.mapping,
        },
    })
}

/// The outputs of a compiled program run in the simulator on a memory's inputs.
#[derive(Debug)]
pub struct Simulated {
    /// The memory with every output the program wrote replaced by the program's values.
    pub memory: poly::interp::Memory,
    /// Cycles the run took.
    pub cycles: u64,
    /// The report's summary line (roofline, binding unit).
    pub summary: String,
}

/// The simulator's input tensors: the kernel's input arrays as `memory` holds them.
pub fn inputs(
    kernel: &Kernel,
    memory: &poly::interp::Memory,
) -> Result<std::collections::HashMap<String, npu_sim::TensorData>, NpuError> {
    (kernel.arrays.iter())
        .filter(|a| a.role.is_input())
        .map(|a| {
            let v = (memory.array(&a.name))
                .ok_or_else(|| NpuError::Internal(format!("no array `{}`", a.name)))?;
            let shape: Vec<u64> = v.shape().iter().map(|&s| s as u64).collect();
            let data = npu_sim::TensorData::from_values(matmul::dtype(a.elem)?, &shape, v.values());
            Ok((a.name.clone(), data))
        })
        .collect()
}

/// Runs `compiled` on `machine` in the strict semantics, its inputs taken from `memory`
/// (the interpreter's arrays), and returns the memory with the outputs the program wrote.
/// A race, a fault or an unwritten output is an error carrying the simulator's message.
pub fn simulate(
    compiled: &Compiled,
    kernel: &Kernel,
    memory: &poly::interp::Memory,
    machine: &Machine,
) -> Result<Simulated, NpuError> {
    let inputs = inputs(kernel, memory)?;
    let run = npu_sim::run(&compiled.program, machine, &inputs, 0).map_err(|d| {
        NpuError::Internal(format!("the simulator refused the program: {}", d.message))
    })?;
    if let Some(name) = run.unwritten_outputs.first() {
        return Err(NpuError::Internal(format!(
            "the program never wrote output `{name}`"
        )));
    }
    let mut out = memory.clone();
    for (name, data) in &run.outputs {
        let array = out
            .array_mut(name)
            .ok_or_else(|| NpuError::Internal(format!("no array `{name}`")))?;
        array
            .set_values(&data.values())
            .map_err(|e| NpuError::Internal(e.to_string()))?;
    }
    let r = &run.report;
    Ok(Simulated {
        memory: out,
        cycles: r.cycles,
        summary: format!(
            "{} cycles on `{}` ({:.1}% of its roofline)",
            r.cycles,
            machine.name,
            100.0 * r.fraction()
        ),
    })
}
