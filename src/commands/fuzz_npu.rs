//! The NPU leg of `polyc fuzz-schedules --npu`, per seed four kernels, each compiled by the
//! NPU back end for two machines, simulated in the strict semantics and compared with the
//! interpreter: bit for bit where the program keeps the kernel's order (the window
//! reductions), else within the output types' tolerance (the NPU reorders sums), or judged
//! no further than it from the exact result ([`runner::judged`]):
//!
//! - the random affine kernel, its `f64` arrays retyped to `f32` (the NPU has no `f64`):
//!   almost always refused (in-place updates, triangular and stepped loops are neither a
//!   product nor element-wise), which checks that refusals are clean;
//! - a random tensor kernel of the vector path's shape ([`progen::tensor`]), which checks
//!   what it compiles, and the same kernel with long rows of whole 32-byte blocks on
//!   `mini`, whose UB holds them only in column chunks;
//! - a random window reduction ([`progen::window`]: pooling, depthwise convolutions);
//! - a random global pooling ([`progen::window::global_spec`]: over a padded copy or not,
//!   of arrays with or without the images' and the columns' dimensions, combined pairwise
//!   where the back end may reorder).
//!
//! A refusal with its reason is an answer. An internal error, a program the simulator stops
//! (race, fault, unwritten output) or a wrong answer is a failure of polyc's.

use codegen::npu::{self, NpuError};
use codegen::runner;
use frontend::SourceFile;
use poly::interp::{Memory, ParamValues};
use std::collections::BTreeMap;

/// Which kernel of a seed goes to the NPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The affine kernel, retyped to `f32`.
    Affine,
    /// The seed's tensor kernel ([`progen::tensor::generate`]).
    Tensor,
    /// The seed's tensor kernel with its rows made long ([`long_rows`]).
    LongRows,
    /// The seed's window reduction ([`progen::window::generate`]).
    Window,
    /// The seed's global pooling ([`progen::window::global_spec`]).
    Global,
}

/// Every kind of kernel on every machine (the realistic preset and the tiny one whose
/// buffers force the smallest tiles), with the label failures name their setting by.
pub const LEGS: [(Kind, &str, &str); 9] = [
    (Kind::Affine, "ascend-like", "f32, ascend-like"),
    (Kind::Affine, "mini", "f32, mini"),
    (Kind::Tensor, "ascend-like", "tensor kernel, ascend-like"),
    (Kind::Tensor, "mini", "tensor kernel, mini"),
    (Kind::LongRows, "mini", "long-row tensor kernel, mini"),
    (Kind::Window, "ascend-like", "window reduction, ascend-like"),
    (Kind::Window, "mini", "window reduction, mini"),
    (Kind::Global, "ascend-like", "global pooling, ascend-like"),
    (Kind::Global, "mini", "global pooling, mini"),
];

/// What became of one kernel on one machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Compiled, simulated and within tolerance of the interpreter.
    Matched,
    /// Refused by the back end with a reason.
    Refused,
    /// Polyc's failure: what went wrong.
    Failed(String),
}

/// Whether the leg labelled `label` checks a kernel of the seed's own (a tensor kernel or a
/// window reduction, which the shrinker of affine kernels cannot reduce: it is reproduced
/// by its seed).
pub fn is_tensor(label: &str) -> bool {
    LEGS.iter()
        .any(|&(kind, _, l)| l == label && kind != Kind::Affine)
}

/// The kernel of `kind` for the affine kernel `text` of `seed`.
pub fn kernel_text(kind: Kind, seed: u64, text: &str) -> String {
    match kind {
        Kind::Affine => text.replace("f64", "f32"),
        Kind::Tensor => progen::tensor::generate(seed),
        Kind::LongRows => long_rows(&progen::tensor::generate(seed)),
        Kind::Window => progen::window::generate(seed),
        Kind::Global => progen::window::global_spec(seed).text(),
    }
}

/// A tensor kernel `text` (`params R = .., C = c`) with `C = 16 (20 + c)`: rows that small
/// machines' UB holds only in column chunks, of whole 32-byte blocks so that groups of a
/// few rows may fit.
pub fn long_rows(text: &str) -> String {
    let Some(at) = text.find(", C = ") else {
        return text.to_string();
    };
    let rest = &text[at + 6..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let c: i64 = digits.parse().unwrap_or(1);
    format!(
        "{}, C = {}{}",
        &text[..at],
        16 * (20 + c),
        &rest[digits.len()..]
    )
}

/// Compiles `text` for `machine`, simulates it on the interpreter's random inputs of `seed`
/// and compares. An error: the kernel could not be set up at all.
pub fn check(seed: u64, text: &str, machine: &str) -> Result<Outcome, String> {
    let file = SourceFile::new(format!("npu{seed}.pk"), text);
    let kernel = frontend::compile(&file)
        .map_err(|d| format!("the retyped kernel is invalid:\n{}", d.render(&file, false)))?
        .remove(0);
    let params = ParamValues::resolve(&kernel, &BTreeMap::new(), &BTreeMap::new())
        .map_err(|e| format!("parameters: {e}"))?;
    let sizes: BTreeMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
    let machine = npu_sim::Machine::load(machine).map_err(|e| e.to_string())?;
    let compiled = match npu::compile(&kernel, &sizes, &machine, true) {
        Ok(c) => c,
        Err(NpuError::Unsupported(_) | NpuError::ReorderNotAllowed) => return Ok(Outcome::Refused),
        Err(e @ NpuError::Internal(_)) => return Ok(Outcome::Failed(e.to_string())),
    };
    let inputs = Memory::random(&kernel, &params, seed).map_err(|e| e.to_string())?;
    let got = match npu::simulate(&compiled, &kernel, &inputs, &machine) {
        Ok(run) => run.memory,
        Err(e) => return Ok(Outcome::Failed(e.to_string())),
    };
    let expected =
        runner::interpreted(&kernel, &params, &inputs).map_err(|e| format!("interpreter: {e}"))?;
    let wrong = match compiled.plan.exact() {
        true => runner::disagreements(&kernel, &expected, &got, runner::Comparison::Exact),
        false => runner::judged(&kernel, &params, &inputs, &expected, &got),
    }
    .map_err(|e| e.to_string())?;
    Ok(match wrong.first() {
        None => Outcome::Matched,
        Some(d) => Outcome::Failed(format!("wrong answer: {d}")),
    })
}
