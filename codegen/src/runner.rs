//! Running a compiled harness on the interpreter's inputs and reading its outputs back, so
//! that the C back end and `poly::interp` can be compared value by value, bit for bit or
//! within a documented tolerance ([`Comparison`]).

use crate::toolchain::{self, CCompiler, RunOutput, ToolchainError};
use frontend::ir::{ElemType, Kernel, Role};
use poly::interp::{ArrayValues, InputFiles, InterpError, Memory, ParamValues};
use std::fmt;
use std::path::Path;

/// How a compiled kernel's outputs must agree with the reference's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// Bit for bit (NaNs equal): the same operations in the same order, no contraction.
    Exact,
    /// For runs that round differently from the reference (reductions reordered, FMA
    /// contraction): each floating-point output array within its element type's
    /// [`tolerance`] normwise, `max |got - expected| <= tolerance * max |expected|`, with
    /// NaNs and infinities exactly where the reference has them; integer arrays exact
    /// (wrapping integer arithmetic is associative).
    Tolerant,
}

/// The normwise relative tolerance of [`Comparison::Tolerant`] for an element type: about
/// `2^20` units in the last place of `f64` and `2^13` of `f32` (a reordered reduction of
/// `n` terms may be off by `n` rounding errors of its partial sums, relative to the sum of
/// their magnitudes), a few units of `f16`/`bf16` (every operation rounds to the type).
pub fn tolerance(elem: ElemType) -> f64 {
    match elem {
        ElemType::F64 => 1e-9,
        ElemType::F32 => 1e-3,
        ElemType::F16 => 5e-2,
        ElemType::BF16 => 2e-1,
        ElemType::I32 | ElemType::I8 => 0.0,
    }
}

/// The largest finite value of a floating-point element type; infinity for integers, which
/// have no infinities to overflow to.
fn max_finite(elem: ElemType) -> f64 {
    match elem {
        ElemType::F64 => f64::MAX,
        ElemType::F32 => f64::from(f32::MAX),
        ElemType::F16 => half::f16::MAX.to_f64(),
        ElemType::BF16 => half::bf16::MAX.to_f64(),
        ElemType::I32 | ElemType::I8 => f64::INFINITY,
    }
}

/// An output array that does not agree with the reference.
#[derive(Clone, Debug, PartialEq)]
pub struct Disagreement {
    /// The array.
    pub array: String,
    /// How it differs.
    pub reason: String,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` {}", self.array, self.reason)
    }
}

/// The output arrays of `kernel` in `got` that do not agree with `expected` under
/// `comparison` (both memories hold the kernel's arrays in the same shapes).
pub fn disagreements(
    kernel: &Kernel,
    expected: &Memory,
    got: &Memory,
    comparison: Comparison,
) -> Result<Vec<Disagreement>, InterpError> {
    let diffs = expected.compare(got)?;
    let mut out = Vec::new();
    for (d, (e, g)) in diffs.iter().zip(expected.arrays().iter().zip(got.arrays())) {
        let is_output = kernel
            .array_by_name(&d.name)
            .is_some_and(|a| kernel.array(a).role.is_output());
        if !is_output || d.is_identical() {
            continue;
        }
        let reason = match comparison {
            Comparison::Exact => format!(
                "differs in {} elements (max abs {:e})",
                d.mismatches, d.max_abs
            ),
            Comparison::Tolerant => match normwise_error(e, g) {
                Some(err) if err <= tolerance(e.elem()) => continue,
                Some(err) => format!(
                    "differs by {err:e} relative to its largest magnitude (tolerance {:e}; {} elements differ)",
                    tolerance(e.elem()),
                    d.mismatches
                ),
                None => format!(
                    "has NaNs or infinities where the reference has other values ({} elements differ)",
                    d.mismatches
                ),
            },
        };
        out.push(Disagreement {
            array: d.name.clone(),
            reason,
        });
    }
    Ok(out)
}

/// The outputs of `kernel` in `got` (a run that reorders sums) that disagree with the
/// interpreter's `expected` within [`Comparison::Tolerant`]'s tolerance **and** are further
/// than `expected` from the kernel's exact result: the interpreter's run of the kernel
/// widened to `f64` ([`frontend::widen`]) on the same `inputs`, rounded once to each
/// output's type (a value beyond an `f16`'s range is an infinity, as a correctly rounded
/// computation gives it; a run that has it there, where the reference has a finite value,
/// is the closer). A sum with cancellation (a
/// few `f16` values adding to nearly zero) differs from itself reordered by far more than
/// the tolerance of its small result, while both are within their roundings of the exact
/// sum; the reordered run is then accepted when it is no further from it than the
/// reference order.
pub fn judged(
    kernel: &Kernel,
    params: &ParamValues,
    inputs: &Memory,
    expected: &Memory,
    got: &Memory,
) -> Result<Vec<Disagreement>, InterpError> {
    let wrong = disagreements(kernel, expected, got, Comparison::Tolerant)?;
    if wrong.is_empty() {
        return Ok(wrong);
    }
    let wide = frontend::widen::widened(kernel);
    let mut start = Memory::zeroed(&wide, params)?;
    for a in inputs.arrays() {
        if let Some(w) = start.array_mut(&a.name) {
            w.set_values(a.values())?;
        }
    }
    let exact = interpreted(&wide, params, &start)?;
    let closer = |name: &str| -> Option<Result<(), String>> {
        // the exact result rounded once to the output's type: beyond its range, the
        // infinity a correctly rounded computation gives
        let mut rounded = expected.array(name)?.clone();
        rounded.set_values(exact.array(name)?.values()).ok()?;
        Some(no_further(
            &rounded,
            got.array(name)?,
            expected.array(name)?,
        ))
    };
    Ok(wrong
        .into_iter()
        .filter_map(|d| match closer(&d.array) {
            Some(Ok(())) => None,
            Some(Err(why)) => Some(Disagreement {
                reason: format!(
                    "{}, and is further from the exact result than the reference ({why})",
                    d.reason
                ),
                ..d
            }),
            None => Some(d),
        })
        .collect())
}

/// Whether `got` is no further than `reference` from `exact` (the three of one array's
/// shape): where `got` is not finite and `exact` is, or the other way round (or both are
/// different non-finite values), `reference` has `got`'s value, unless it is an infinity
/// against a finite value of its sign within the type's tolerance of overflowing (a
/// reordered `f16` sum may overflow where the exact result is 64,000); and over the
/// elements all three have finite, `got`'s normwise error is at most the reference's. Else
/// why not.
fn no_further(
    exact: &ArrayValues,
    got: &ArrayValues,
    reference: &ArrayValues,
) -> Result<(), String> {
    // an infinity against a finite value of its sign within the tolerance of overflowing
    let edge = max_finite(exact.elem()) * (1.0 - tolerance(exact.elem()));
    let overflow =
        |inf: f64, v: f64| inf.is_infinite() && v.is_finite() && v * inf.signum() >= edge;
    let off = |e: f64, v: f64| {
        (!e.is_finite() || !v.is_finite())
            && !same_value(e, v)
            && !overflow(e, v)
            && !overflow(v, e)
    };
    let (mut finite, mut new_off) = (Vec::new(), 0usize);
    let values = exact
        .values()
        .iter()
        .zip(got.values())
        .zip(reference.values());
    for ((&e, &g), &r) in values {
        if off(e, g) && !same_value(g, r) {
            new_off += 1;
        }
        if e.is_finite() && g.is_finite() && r.is_finite() {
            finite.push((e, g, r));
        }
    }
    if new_off > 0 {
        return Err(format!(
            "{new_off} elements not finite where the exact result is, or the other way round, with another value than the reference's"
        ));
    }
    let g = normwise(finite.iter().map(|&(e, g, _)| (e, g)));
    let r = normwise(finite.iter().map(|&(e, _, r)| (e, r)));
    match g <= r {
        true => Ok(()),
        false => Err(format!("{g:e} against {r:e}")),
    }
}

/// The memory after the interpreter runs `kernel` in its original order from `memory`.
pub fn interpreted(
    kernel: &Kernel,
    params: &ParamValues,
    memory: &Memory,
) -> Result<Memory, InterpError> {
    let mut out = memory.clone();
    poly::interp::Interpreter::new(kernel, params)?.run_original(&mut out)?;
    Ok(out)
}

/// `max |got - expected| / max |expected|` over the finite elements (0 when both maxima are
/// 0, infinite when only the difference is not), or `None` when a non-finite element of
/// one array is not the same non-finite value in the other.
fn normwise_error(expected: &ArrayValues, got: &ArrayValues) -> Option<f64> {
    let pairs = || {
        expected
            .values()
            .iter()
            .copied()
            .zip(got.values().iter().copied())
    };
    let finite = |&(e, g): &(f64, f64)| e.is_finite() && g.is_finite();
    if pairs().any(|(e, g)| !finite(&(e, g)) && !same_value(e, g)) {
        return None;
    }
    Some(normwise(pairs().filter(finite)))
}

/// `max |got - expected| / max |expected|` over `(expected, got)` pairs of finite values
/// (0 when every difference is 0).
fn normwise(pairs: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (mut diff, mut scale) = (0.0f64, 0.0f64);
    for (e, g) in pairs {
        diff = diff.max((g - e).abs());
        scale = scale.max(e.abs());
    }
    if diff == 0.0 {
        0.0
    } else {
        diff / scale
    }
}

/// The same value, NaNs alike.
fn same_value(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

/// Writes every input and in-out array of `memory` to `dir/NAME.npy`.
pub fn write_inputs(memory: &Memory, dir: &Path) -> Result<(), InterpError> {
    let mut inputs = memory.clone();
    let names: Vec<String> = memory.arrays().iter().map(|a| a.name.clone()).collect();
    for name in names {
        if let Some(a) = inputs.array_mut(&name) {
            // `save_outputs` writes the arrays the caller receives: make those the inputs.
            a.role = if a.role.is_input() {
                Role::InOut
            } else {
                Role::Temp
            };
        }
    }
    inputs.save_outputs(dir)
}

/// The outputs a harness wrote to `dir` (other arrays zero), as a memory comparable with
/// the interpreter's.
pub fn read_outputs(
    kernel: &Kernel,
    params: &ParamValues,
    dir: &Path,
) -> Result<Memory, InterpError> {
    let mut outputs = kernel.clone();
    for a in &mut outputs.arrays {
        a.role = if a.role.is_output() {
            Role::InOut
        } else {
            Role::Temp
        };
    }
    let files = InputFiles::read_dir(&outputs, dir)?;
    Memory::load_inputs(&outputs, params, &files, 0)
}

/// The harness's arguments for `params`, reading inputs from `inputs` (none: the harness's
/// own values) and writing outputs to `outputs`.
pub fn harness_args(
    params: &ParamValues,
    inputs: Option<&Path>,
    outputs: Option<&Path>,
) -> Vec<String> {
    let mut args: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
    for (flag, dir) in [("--in", inputs), ("--out", outputs)] {
        if let Some(dir) = dir {
            args.push(flag.into());
            args.push(dir.display().to_string());
        }
    }
    args
}

/// Runs a compiled harness on `memory`'s inputs (written to `scratch/in`).
pub fn run_on(
    exe: &Path,
    memory: &Memory,
    params: &ParamValues,
    scratch: &Path,
    outputs: Option<&Path>,
) -> Result<RunOutput, RunError> {
    let inputs = scratch.join("in");
    write_inputs(memory, &inputs)?;
    Ok(toolchain::run(
        exe,
        &harness_args(params, Some(&inputs), outputs),
    )?)
}

/// Compiles `code` (a file with a harness) with `compiler` in a temporary directory and runs
/// it on `memory`'s inputs.
pub fn compile_and_run(
    compiler: &CCompiler,
    code: &str,
    memory: &Memory,
    params: &ParamValues,
    outputs: Option<&Path>,
) -> Result<RunOutput, RunError> {
    let dir = tempfile::tempdir().map_err(ToolchainError::Io)?;
    let exe = compiler.build(code, dir.path(), "kernel")?;
    run_on(&exe, memory, params, dir.path(), outputs)
}

/// Why a run failed before the program could report anything.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Writing or reading `.npy` files.
    #[error(transparent)]
    Files(#[from] InterpError),
    /// Starting the program.
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontend::SourceFile;

    /// A kernel with an `f64` and an `i32` output of four elements, and memories of it whose
    /// outputs hold `x` and `n`.
    fn setup(x: [f64; 4], n: [f64; 4]) -> (Kernel, Memory) {
        let text = "kernel k(A: f64[4], X: out f64[4], N: out i32[4]) {\n  for i in 0..4 {\n    X[i] = A[i];\n    N[i] = 1;\n  }\n}\n";
        let kernel = frontend::compile(&SourceFile::new("k.pk", text))
            .unwrap()
            .remove(0);
        let params =
            ParamValues::resolve(&kernel, &Default::default(), &Default::default()).unwrap();
        let mut memory = Memory::zeroed(&kernel, &params).unwrap();
        memory.array_mut("X").unwrap().set_values(&x).unwrap();
        memory.array_mut("N").unwrap().set_values(&n).unwrap();
        (kernel, memory)
    }

    fn disagree(expected: [f64; 4], got: [f64; 4], comparison: Comparison) -> Vec<String> {
        let (kernel, e) = setup(expected, [1.0; 4]);
        let (_, g) = setup(got, [1.0; 4]);
        disagreements(&kernel, &e, &g, comparison)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn exact_comparison_rejects_any_bit() {
        let x = [1.0, 2.0, -3.0, 0.5];
        assert!(disagree(x, x, Comparison::Exact).is_empty());
        let off = [1.0, 2.0, -3.0, 0.5 + 1e-16];
        assert_eq!(
            disagree(x, off, Comparison::Exact),
            ["`X` differs in 1 elements (max abs 1.1102230246251565e-16)"]
        );
    }

    #[test]
    fn tolerant_comparison_is_normwise() {
        let x = [1000.0, 2.0, -3.0, 0.0];
        // 1e-7 off an element of 0 is within 1e-9 of the largest magnitude, 1000.
        assert!(disagree(x, [1000.0, 2.0, -3.0, 1e-7], Comparison::Tolerant).is_empty());
        let far = disagree(x, [1000.0, 2.0, -3.0, 1e-5], Comparison::Tolerant);
        assert_eq!(far.len(), 1);
        assert!(
            far[0].starts_with("`X` differs by 1e-8 relative"),
            "{far:?}"
        );
    }

    #[test]
    fn tolerant_comparison_wants_non_finite_values_in_place() {
        let x = [f64::NAN, f64::INFINITY, 1.0, 2.0];
        assert!(disagree(x, x, Comparison::Tolerant).is_empty());
        let moved = disagree(x, [1.0, f64::INFINITY, f64::NAN, 2.0], Comparison::Tolerant);
        assert_eq!(moved.len(), 1);
        assert!(moved[0].contains("NaNs or infinities"), "{moved:?}");
    }

    #[test]
    fn integer_outputs_stay_exact_under_tolerance() {
        let (kernel, e) = setup([0.0; 4], [1.0; 4]);
        let (_, g) = setup([0.0; 4], [1.0, 1.0, 1.0, 2.0]);
        let found = disagreements(&kernel, &e, &g, Comparison::Tolerant).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].array, "N");
    }

    #[test]
    fn harness_arguments_name_only_the_given_directories() {
        let (kernel, _) = setup([0.0; 4], [0.0; 4]);
        let params =
            ParamValues::resolve(&kernel, &Default::default(), &Default::default()).unwrap();
        assert!(harness_args(&params, None, None).is_empty());
        assert_eq!(
            harness_args(&params, None, Some(Path::new("/o"))),
            ["--out", "/o"]
        );
    }

    /// The kernel `r = sum(i) X[i]` over `f16`, its parameters, inputs `x` and the
    /// interpreter's memory after it.
    fn f16_sum(x: &[f64]) -> (Kernel, ParamValues, Memory, Memory) {
        let text = format!(
            "kernel k(X: f16[N]) -> (r: f16)\n  params N = {}\n{{\n  r = sum(i) X[i];\n}}\n",
            x.len()
        );
        let kernel = frontend::compile(&frontend::SourceFile::new("k.pk", text.as_str()))
            .unwrap()
            .remove(0);
        let params =
            ParamValues::resolve(&kernel, &Default::default(), &Default::default()).unwrap();
        let mut inputs = Memory::random(&kernel, &params, 1).unwrap();
        inputs.array_mut("X").unwrap().set_values(x).unwrap();
        let expected = interpreted(&kernel, &params, &inputs).unwrap();
        (kernel, params, inputs, expected)
    }

    /// `memory` with `r` in place of its sum.
    fn with_sum(memory: &Memory, r: f64) -> Memory {
        let mut m = memory.clone();
        m.array_mut("r").unwrap().set_values(&[r]).unwrap();
        m
    }

    /// A sum past `f16`'s range: the reference order stays at 65504 (each 8 is under half
    /// an ulp), while the exact sum, 65536, rounds to infinity; a reordered run that gives
    /// infinity is the closer and passes, one that gives -infinity or NaN fails.
    #[test]
    fn a_reordered_sum_that_overflows_as_the_exact_one_does_passes() {
        let (kernel, params, inputs, expected) = f16_sum(&[65504.0, 8.0, 8.0, 8.0, 8.0]);
        assert_eq!(expected.array("r").unwrap().values(), [65504.0]);
        let verdict = |r: f64| {
            judged(
                &kernel,
                &params,
                &inputs,
                &expected,
                &with_sum(&expected, r),
            )
            .unwrap()
        };
        assert!(verdict(f64::INFINITY).is_empty());
        assert_eq!(verdict(f64::NEG_INFINITY).len(), 1);
        assert_eq!(verdict(f64::NAN).len(), 1);
    }

    /// An infinity where the exact result is finite passes only within the tolerance of
    /// overflowing (5% of 65504 for `f16`), and with the exact result's sign.
    #[test]
    fn an_infinity_passes_only_at_the_edge_of_the_range() {
        let verdict = |x: [f64; 3], r: f64| {
            let (kernel, params, inputs, expected) = f16_sum(&x);
            let got = with_sum(&expected, r);
            judged(&kernel, &params, &inputs, &expected, &got)
                .unwrap()
                .len()
        };
        // exact 64,500: within 5% of overflowing
        assert_eq!(verdict([32000.0, 32000.0, 500.0], f64::INFINITY), 0);
        assert_eq!(verdict([32000.0, 32000.0, 500.0], f64::NEG_INFINITY), 1);
        // exact 48,500: not
        assert_eq!(verdict([32000.0, 16000.0, 500.0], f64::INFINITY), 1);
    }

    /// A sum with cancellation: the reference order in f16 loses the small terms (1024 +
    /// 0.5 rounds back to 1024), a reordered run that keeps them is beyond the tolerance of
    /// the reference's result but exact, and passes; a run further from the exact sum fails.
    #[test]
    fn a_reordered_sum_closer_to_the_exact_result_passes() {
        let (kernel, params, inputs, expected) = f16_sum(&[1024.0, 0.5, 0.5, -1024.0]);
        assert_eq!(expected.array("r").unwrap().values(), [0.0]);
        let with = |r: f64| with_sum(&expected, r);
        let verdict = |r: f64| judged(&kernel, &params, &inputs, &expected, &with(r)).unwrap();
        assert!(verdict(1.0).is_empty());
        let wrong = verdict(3.0);
        assert_eq!(wrong.len(), 1);
        assert!(
            wrong[0].reason.contains("further from the exact result"),
            "{wrong:?}"
        );
        let plain = disagreements(&kernel, &expected, &with(1.0), Comparison::Tolerant).unwrap();
        assert_eq!(plain.len(), 1, "the tolerance alone refuses the exact sum");
    }
}
