//! The NPU back end: kernels compiled into programs for the simulated Ascend-like machine
//! (`npu_sim`), with the cube work mapped through a mapping proved by
//! `scheduler::mapping` and every datum moved explicitly through GM, L1, L0A/L0B/L0C and UB.
//!
//! What it compiles today: matrix products, batched or not, with an element-wise epilogue
//! (a conversion, ReLU) fused into the copy out of L0C or computed by the vector unit on
//! each tile in UB (a bias, a scale: `recognise`, `epilogue`, `matmul::tail`), as tiled,
//! multi-core programs in the strict synchronisation semantics (`matmul`); element-wise,
//! broadcast and row-reduction kernels on the vector unit (`vector`); 2-D convolutions
//! (`conv`); the attention block fused on chip (`attention`). Everything else is refused
//! with the reason. See `docs/npu-backend.md`.

pub mod attention;
pub mod conv;
pub mod epilogue;
pub mod lift;
pub mod lifted;
pub mod matmul;
pub mod padded;
pub mod read;
pub mod recognise;
pub mod shares;
pub mod sync;
pub mod vector;
pub mod window;

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
    #[error("the NPU sums in its own order (the matrix unit each product's terms, the vector unit each row's reduction): allow it with --reorder-reductions")]
    ReorderNotAllowed,
    /// A bug.
    #[error("NPU code generation failed: {0}")]
    Internal(String),
}

/// What kind of program a kernel became, with the decisions taken for it.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// A matrix product on the cube unit.
    Matmul {
        /// The schedule and sizes chosen.
        schedule: matmul::Schedule,
        /// What becomes of the sums on their way out.
        epilogue: epilogue::Epilogue,
        /// The model's cycles for the busiest core (`matmul::model`).
        predicted: f64,
        /// The proved mapping it follows, in the mapping text format.
        mapping: String,
    },
    /// Element-wise, broadcast and row-reduction statements on the vector unit.
    Vector(vector::Plan),
    /// A 2-D convolution on the cube unit, its im2col built by `load3d`.
    Conv {
        /// What was recognised (sizes, stride, padding, layouts).
        summary: String,
        /// The tile sizes chosen.
        tiles: conv::tiles::Tiles,
        /// The model's cycles for the busiest core (`conv::model`).
        predicted: f64,
        /// The proved mapping it follows, in the mapping text format.
        mapping: String,
    },
    /// An attention block, its scores and probabilities kept on chip.
    Attention(attention::Plan),
    /// A window reduction (pooling, a depthwise convolution) on the vector unit.
    Window(window::Plan),
}

impl Plan {
    /// Whether the program computes every output with the kernel's operations in the
    /// kernel's order, so that it must equal the interpreter's bit for bit (the window
    /// reductions, but global pooling combined pairwise); the others reorder sums.
    pub fn exact(&self) -> bool {
        matches!(self, Plan::Window(p) if p.order == window::Order::Kernel)
    }

    /// The program's header: what was compiled and how, one comment line each.
    pub fn describe(&self) -> Vec<String> {
        match self {
            Plan::Matmul {
                schedule,
                epilogue,
                predicted,
                mapping,
            } => {
                let mut lines = vec![
                    schedule.describe(),
                    epilogue.describe(),
                    format!("The cost model predicts {predicted:.0} cycles."),
                    "The matrix unit's mapping, proved:".to_string(),
                ];
                lines.extend(mapping.lines().map(|l| format!("  {l}")));
                lines
            }
            Plan::Vector(plan) => plan.describe(),
            Plan::Attention(plan) => plan.describe(),
            Plan::Window(plan) => plan.describe(),
            Plan::Conv {
                summary,
                tiles: t,
                predicted,
                mapping,
            } => {
                let mut lines = vec![
                    summary.clone(),
                    format!(
                        "Slabs of {} output channels by {} pixels, one at a time per core; tiles of {} pixels; sub-steps of {} window position(s) by {} block(s) of 16 input channels.",
                        t.ks, t.ps, t.mp, t.nrs, t.kc1
                    ),
                    if t.window_group > 0 {
                        format!("A slab's input rows and weights stream into L1 while the cube works, the weights by groups of {} window positions, which its first tile goes through as they arrive (sub-steps of one group).", t.window_group)
                    } else if t.streamed {
                        "A slab's input rows and weights stream into L1 while the cube works.".to_string()
                    } else {
                        "A prologue brings a slab's input rows and weights into L1 (converted through the cube where their layout needs it).".to_string()
                    },
                    format!("The cost model predicts {predicted:.0} cycles."),
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
/// allows floating-point sums to be reordered (the matrix unit does). The program's GM
/// accesses are proved against the kernel's before it is returned ([`lift::check`]).
pub fn compile(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    reorder: bool,
) -> Result<Compiled, NpuError> {
    let compiled = compile_unchecked(kernel, params, machine, reorder)?;
    lift::check(kernel, params, &compiled.program, machine)?;
    Ok(compiled)
}

/// [`compile`] without the check of the program's GM accesses.
fn compile_unchecked(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    reorder: bool,
) -> Result<Compiled, NpuError> {
    // before any path's own reasons: a kernel of f64 arrays is refused for that alone
    if let Some(a) = (kernel.arrays.iter()).find(|a| a.elem == frontend::ir::ElemType::F64) {
        return Err(NpuError::Unsupported(format!(
            "`{}` is f64, and the NPU computes in f16, bf16, f32, i8 and i32 only; declare it f32 (or f16)",
            a.name
        )));
    }
    let target = Target::of_npu(machine);
    if let Some(w) = window::recognise(kernel, params)? {
        let order = window::Order::of(&w, reorder);
        let (program, plan) = window::compile(&w, machine, order, None)?;
        return Ok(Compiled {
            program,
            plan: Plan::Window(plan),
        });
    }
    if let Some(cv) = conv::recognise::convolution(kernel, params, &target)? {
        if !reorder {
            return Err(NpuError::ReorderNotAllowed);
        }
        return conv::compile(cv, machine);
    }
    if let Some((program, plan)) = attention::compile(kernel, params, machine, reorder)? {
        return Ok(Compiled {
            program,
            plan: Plan::Attention(plan),
        });
    }
    let mm = match recognise::matmul(kernel, params, &target) {
        Ok(mm) => mm,
        Err(NpuError::Unsupported(not_a_product)) => {
            return match vector::compile(kernel, params, machine, reorder) {
                Ok((program, plan)) => Ok(Compiled {
                    program,
                    plan: Plan::Vector(plan),
                }),
                Err(NpuError::Unsupported(why)) => Err(NpuError::Unsupported(format!(
                    "{why} (and as a matrix product: {not_a_product})"
                ))),
                Err(other) => Err(other),
            }
        }
        Err(other) => return Err(other),
    };
    if !reorder {
        return Err(NpuError::ReorderNotAllowed);
    }
    let schedule = matmul::Schedule::choose(&mm, machine).ok_or_else(|| {
        let beside = match mm.epilogue.vector() {
            Some(_) => " beside the vector epilogue's",
            None => "",
        };
        let row_bytes = mm.product.n * mm.c.elem.size_bytes() as i64;
        NpuError::Unsupported(if row_bytes % 32 != 0 && mm.product.m > 1 {
            // only tiles of whole rows store into GM blocks of their own
            format!(
                "no tile of the product fits `{}`'s buffers{beside}: C's rows ({} values, {row_bytes} bytes) do not start on 32-byte GM blocks, so only tiles of whole rows may store them, and a tile {} wide does not fit",
                machine.name,
                mm.product.n,
                (mm.product.n + 15) / 16 * 16
            )
        } else {
            format!("no tile of the product fits `{}`'s buffers{beside}", machine.name)
        })
    })?;
    let program = matmul::program(&mm, machine, schedule)?;
    Ok(Compiled {
        program,
        plan: Plan::Matmul {
            schedule,
            predicted: schedule.predict(&mm, machine),
            epilogue: mm.epilogue,
            mapping: mm.product.mapping,
        },
    })
}

/// A name for a program's own tensor (a workspace): `base`, with `_` appended until no
/// kernel array is `taken` by it.
pub(crate) fn name_apart(mut base: String, taken: impl Fn(&str) -> bool) -> String {
    while taken(&base) {
        base.push('_');
    }
    base
}

/// `x` rounded up to a multiple of `to` (sizes padded to fractals, blocks, repeats).
pub(crate) fn up(x: i64, to: i64) -> i64 {
    (x + to - 1) / to * to
}

/// The program `b` built, or an internal error: every path emits only what assembles.
pub fn finish(b: npu_sim::builder::Builder) -> Result<npu_sim::Program, NpuError> {
    b.finish().map_err(|d| {
        NpuError::Internal(format!(
            "the generated program does not assemble: {}",
            d.message
        ))
    })
}

/// Why the simulator will not walk a generated program: one longer than it walks is refused
/// as too large for it, not as our bug; anything else is ours.
pub(crate) fn refused_by_simulator(d: npu_sim::Diagnostic) -> NpuError {
    match d.code {
        npu_sim::diag::Code::TooLong => NpuError::Unsupported(format!(
            "the program for these sizes is too long for the simulator: {}",
            d.message
        )),
        _ => NpuError::Internal(format!("the simulator refuses the program: {}", d.message)),
    }
}

/// One way of compiling a kernel, with the model's cycles for it.
#[derive(Debug)]
pub struct Candidate {
    /// What distinguishes it (its schedule and sizes).
    pub label: String,
    /// The model's cycles for the busiest core.
    pub predicted: f64,
    /// The program.
    pub compiled: Compiled,
}

/// How a vector plan's per-row outputs are stored, for a candidate's label ("" when it has
/// none, or stores them from its rings).
fn row_stores(plan: &vector::Plan) -> String {
    plan.row_stores
        .map_or(String::new(), |s| format!(", {}", s.label()))
}

/// Several ways of compiling `kernel`, cheapest first by the back end's model, at most
/// `limit` of them; the first is what [`compile`] returns. For a matrix product, the
/// schedules and sizes the model costed; for the vector path, groups of other sizes around
/// the chosen one (with rows in column chunks, the model's cheapest chunk widths, groups
/// and ways of loading the inputs); for the attention block, the sizes its model ranks first; for a
/// convolution, its cheapest tilings or their variants as `offer` says ([`conv::ranked`]:
/// one mapping, the orientation its output's layout needs). Each program is checked as
/// [`compile`]'s is ([`lift::check`]).
pub fn candidates(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    machine: &Machine,
    reorder: bool,
    limit: usize,
    offer: conv::Offer,
) -> Result<Vec<Candidate>, NpuError> {
    let chosen = compile(kernel, params, machine, reorder)?;
    let mut out = Vec::new();
    match &chosen.plan {
        Plan::Matmul { epilogue, .. } => {
            let mm = recognise::matmul(kernel, params, &Target::of_npu(machine))?;
            for (cost, schedule) in matmul::Schedule::ranked(&mm, machine)
                .into_iter()
                .take(limit)
            {
                out.push(Candidate {
                    label: schedule.describe(),
                    predicted: cost,
                    compiled: Compiled {
                        program: matmul::program(&mm, machine, schedule)?,
                        plan: Plan::Matmul {
                            schedule,
                            epilogue: epilogue.clone(),
                            predicted: cost,
                            mapping: mm.product.mapping.clone(),
                        },
                    },
                });
            }
        }
        Plan::Conv { .. } => {
            let cv = conv::recognise(kernel, params, machine)?
                .ok_or_else(|| NpuError::Internal("the convolution is gone".into()))?;
            for compiled in conv::ranked(&cv, machine, limit, offer)? {
                let Plan::Conv {
                    tiles, predicted, ..
                } = &compiled.plan
                else {
                    return Err(NpuError::Internal("a convolution's plan changed".into()));
                };
                let (label, predicted) = (tiles.describe(), *predicted);
                out.push(Candidate {
                    label,
                    predicted,
                    compiled,
                });
            }
        }
        Plan::Attention(_) => {
            let ranked =
                attention::compile_ranked(kernel, params, machine, reorder, (limit, None))?;
            for (program, plan) in ranked.into_iter().flatten() {
                let t = plan.tiles;
                out.push(Candidate {
                    label: format!(
                        "blocks of {} rows, steps of {} keys, stages of {} values, {} block(s) of scores in L0C",
                        t.rows, t.keys, t.stage, t.scores
                    ),
                    predicted: plan.choice.cycles,
                    compiled: Compiled {
                        program,
                        plan: Plan::Attention(plan),
                    },
                });
            }
        }
        Plan::Window(chosen) => {
            let w = window::recognise(kernel, params)?
                .ok_or_else(|| NpuError::Internal("the window reduction is gone".into()))?;
            for (program, plan) in window::ranked(&w, machine, chosen.order, limit)? {
                let c = &plan.choice;
                out.push(Candidate {
                    label: format!(
                        "tiles of {} x {} output pixels{}{}{}",
                        c.size.rows,
                        c.size.cols,
                        match c.size.chans == plan.channels {
                            true => String::new(),
                            false => format!(", {} channels", c.size.chans),
                        },
                        match c.size.part {
                            0 => String::new(),
                            rows => format!(", loaded {rows} image row(s) at a time"),
                        },
                        match plan.meet {
                            None => String::new(),
                            Some(window::tiles::Meet::Atomic) => {
                                format!(", in {} pieces added atomically", c.size.spread)
                            }
                            Some(window::tiles::Meet::Workspace) => {
                                format!(", in {} pieces meeting in GM", c.size.spread)
                            }
                        }
                    ),
                    predicted: c.cycles,
                    compiled: Compiled {
                        program,
                        plan: Plan::Window(plan),
                    },
                });
            }
        }
        Plan::Vector(plan) if plan.chunks.is_some() => {
            for (program, plan) in vector::chunked(kernel, params, machine, limit)? {
                let Some(c) = plan.chunks else { continue };
                out.push(Candidate {
                    label: format!(
                        "chunks of {} columns, groups of {} row(s), inputs {}{}{}",
                        c.width,
                        plan.group_rows,
                        if c.resident {
                            "whole per group"
                        } else {
                            "per chunk"
                        },
                        row_stores(&plan),
                        match c.spread {
                            1 => String::new(),
                            s => format!(", each group's chunks over {s} cores"),
                        }
                    ),
                    predicted: plan.predicted as f64,
                    compiled: Compiled {
                        program,
                        plan: Plan::Vector(plan),
                    },
                });
            }
        }
        Plan::Vector(plan) => {
            // groups start on the cores' granule, unless per-row outputs are kept for the
            // core's rows (sizes groups may not have are refused, and left out)
            let g = match plan.row_stores {
                Some(vector::program::RowStores::OncePerCore) => 1,
                _ => plan.granule,
            };
            let mut sizes = vec![plan.group_rows];
            for r in [
                plan.group_rows / 2,
                plan.group_rows * 2,
                g,
                plan.group_rows / 4,
                plan.group_rows * 4,
            ] {
                let r = r / g * g;
                if r >= g && !sizes.contains(&r) {
                    sizes.push(r);
                }
            }
            for r in sizes {
                if let Ok((program, plan)) =
                    vector::compile_with(kernel, params, machine, reorder, Some(r))
                {
                    out.push(Candidate {
                        label: format!("groups of {r} row(s){}", row_stores(&plan)),
                        predicted: plan.predicted as f64,
                        compiled: Compiled {
                            program,
                            plan: Plan::Vector(plan),
                        },
                    });
                }
            }
        }
    }
    // the model's choice first, the others cheapest first by the model
    if out.len() > 1 {
        out[1..].sort_by(|a, b| a.predicted.total_cmp(&b.predicted));
    }
    out.truncate(limit.max(1));
    for c in &out {
        lift::check(kernel, params, &c.compiled.program, machine)?;
    }
    if out.is_empty() {
        out.push(Candidate {
            label: "chosen".into(),
            predicted: f64::NAN,
            compiled: chosen,
        });
    }
    Ok(out)
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
    /// The simulator's whole report.
    pub report: npu_sim::report::Report,
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
            // a scalar is a one-element tensor in the program
            let shape: Vec<u64> = match v.shape() {
                [] => vec![1],
                s => s.iter().map(|&s| s as u64).collect(),
            };
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
        report: r.clone(),
        cycles: r.cycles,
        summary: format!(
            "{} cycles on `{}` ({:.1}% of its roofline)",
            r.cycles,
            machine.name,
            100.0 * r.fraction()
        ),
    })
}
