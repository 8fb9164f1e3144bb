//! The built-in intrinsics of an NPU target, written in the kernel language: the matrix
//! unit for f16 and i8 operands, and the vector unit's element-wise operations and
//! reductions, sized from the target description (tile shape, bytes per repeat).

use super::intrinsic::{Intrinsic, IntrinsicError};
use crate::target::{ComputeUnit, Memory, Target};
use frontend::SourceFile;
use std::fmt;

/// Why a library could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LibraryError {
    /// The text did not check (rendered diagnostics).
    Syntax(String),
    /// An intrinsic is not usable (position, name, reason).
    Intrinsic(String, String, IntrinsicError),
    /// A tier the target does not have (position, tier, target).
    Tier(String, String, String),
    /// The target has no matrix or no vector unit.
    NoUnit(&'static str),
}

impl fmt::Display for LibraryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LibraryError::Syntax(d) => f.write_str(d.trim_end()),
            LibraryError::Intrinsic(at, name, e) => write!(f, "{at}: intrinsic `{name}`: {e}"),
            LibraryError::Tier(at, tier, target) => {
                write!(
                    f,
                    "{at}: `{target}` has no on-chip tier `{tier}` (L1, L0A, L0B, L0C, UB)"
                )
            }
            LibraryError::NoUnit(u) => write!(f, "the target has no {u} unit"),
        }
    }
}

/// The kernel-language text of the built-in library of `target`.
pub fn builtin_text(target: &Target) -> Result<String, LibraryError> {
    let (m, n, k, k8) = (target.compute.iter())
        .find_map(|c| match c {
            ComputeUnit::Matrix { m, n, k, k_i8, .. } => Some((*m, *n, *k, *k_i8)),
            _ => None,
        })
        .ok_or(LibraryError::NoUnit("matrix"))?;
    let bytes = (target.compute.iter())
        .find_map(|c| match c {
            ComputeUnit::Vector {
                bytes_per_repeat, ..
            } => Some(*bytes_per_repeat),
            _ => None,
        })
        .ok_or(LibraryError::NoUnit("vector"))?;
    let mut s = String::new();
    for (name, a, c, depth) in [("mmad_f16", "f16", "f32", k), ("mmad_i8", "i8", "i32", k8)] {
        s.push_str(&format!(
            "intrinsic {name}(A: {a}[{m}, {depth}] @ L0A, B: {a}[{depth}, {n}] @ L0B, C: inout {c}[{m}, {n}] @ L0C) {{\n  \
             for i1 in 0..{m} {{ for i2 in 0..{n} {{ for r1 in 0..{depth} {{\n    \
             C[i1, i2] += {c}(A[i1, r1]) * {c}(B[r1, i2]);\n  }} }} }}\n}}\n"
        ));
    }
    for ty in ["f16", "f32"] {
        let lanes = bytes / if ty == "f16" { 2 } else { 4 };
        for (op, body) in [
            ("vadd", "X[l] + Y[l]"),
            ("vsub", "X[l] - Y[l]"),
            ("vmul", "X[l] * Y[l]"),
            ("vmax", "max(X[l], Y[l])"),
            ("vmin", "min(X[l], Y[l])"),
        ] {
            s.push_str(&format!(
                "intrinsic {op}_{ty}(X: {ty}[{lanes}] @ UB, Y: {ty}[{lanes}] @ UB) -> (Z: {ty}[{lanes}] @ UB) {{ Z[l] = {body}; }}\n"
            ));
        }
        for (op, body) in [
            ("vexp", "exp(X[l])"),
            ("vabs", "abs(X[l])"),
            ("vsqrt", "sqrt(X[l])"),
        ] {
            s.push_str(&format!(
                "intrinsic {op}_{ty}(X: {ty}[{lanes}] @ UB) -> (Z: {ty}[{lanes}] @ UB) {{ Z[l] = {body}; }}\n"
            ));
        }
        for (op, assign) in [("vredsum", "+="), ("vredmax", "max="), ("vredmin", "min=")] {
            s.push_str(&format!(
                "intrinsic {op}_{ty}(X: {ty}[{lanes}] @ UB, S: inout {ty}[1] @ UB) {{ for l in 0..{lanes} {{ S[0] {assign} X[l]; }} }}\n"
            ));
        }
    }
    Ok(s)
}

/// The built-in intrinsics of `target`.
pub fn builtin(target: &Target) -> Result<Vec<Intrinsic>, LibraryError> {
    parse(
        &SourceFile::new("<built-in intrinsics>", builtin_text(target)?),
        target,
    )
}

/// Reads an intrinsic file (`intrinsic` declarations whose operands carry `@ TIER`), with
/// tier names resolved against `target`.
pub fn parse(file: &SourceFile, target: &Target) -> Result<Vec<Intrinsic>, LibraryError> {
    let checked = frontend::compile_intrinsics(file)
        .map_err(|d| LibraryError::Syntax(d.render(file, false)))?;
    let at = |span: frontend::span::Span| {
        let before = &file.text[..span.start.min(file.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |k| k + 1) + 1;
        format!("{}:{line}:{column}", file.name)
    };
    checked
        .into_iter()
        .map(|i| {
            let name = i.kernel.name.clone();
            let tiers = (i.tiers.iter())
                .map(|(t, span)| {
                    let known = (target.memory.iter())
                        .map(|l| l.name)
                        .filter(|m| *m != Memory::Gm)
                        .find(|m| m.to_string().eq_ignore_ascii_case(t));
                    known.ok_or_else(|| {
                        LibraryError::Tier(at(*span), t.clone(), target.name.clone())
                    })
                })
                .collect::<Result<Vec<Memory>, _>>()?;
            Intrinsic::new(i.kernel, &tiers)
                .map_err(|e| LibraryError::Intrinsic(at(i.span), name, e))
        })
        .collect()
}
