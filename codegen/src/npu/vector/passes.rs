//! The passes over the columns of rows too long for UB.
//!
//! When no group of whole rows fits UB, a row goes through it in column chunks, and a
//! statement can only run chunk by chunk once every per-row value it reads is complete: the
//! statements split into *steps*, alternately over the columns (a pass: every chunk of the
//! group's rows loaded, computed, stored) and over the rows alone (per-row statements run
//! between passes, on values the earlier passes completed). A reduction's target is
//! complete after its pass; `s += exp(X - m)` reads `m`, so it runs in the pass after the
//! one that reduced `m`. Steps keep program order. What a pass computes over its chunks
//! stays in that pass: a tile (an output or a temporary) is used in one pass only, and a
//! per-row value carried from pass to pass lives in UB for the whole group.
//!
//! Refused (each with the statement and the reason): a tile a pass computed read in a later
//! pass (its rows would have to go through GM), a per-row input read outside a pass or
//! updated in place (it is loaded with each chunk), a per-row output no statement writes.

use super::recognise::{visit, Kind, VectorKernel};
use frontend::ir::{ArrayId, AssignOp, ExprKind, Kernel};
use std::collections::BTreeMap;

/// A step of a chunked program: statements by their index among the kernel's row
/// statements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Per-row statements, once per group of rows.
    Rows(Vec<usize>),
    /// A pass: statements with the column loop, chunk by chunk.
    Columns(Vec<usize>),
}

/// The steps of `vk`'s statements, or why the kernel cannot run in column chunks.
pub fn split(vk: &VectorKernel, kernel: &Kernel) -> Result<Vec<Step>, String> {
    // Positions: per-row statements between passes at even ones (2k before pass k), pass k
    // at 2k + 1. A per-row array is complete from `ready` on; a tile lives at one position.
    let mut ready: BTreeMap<ArrayId, usize> = BTreeMap::new();
    let mut tile_at: BTreeMap<ArrayId, usize> = BTreeMap::new();
    let mut at: Vec<usize> = Vec::new();
    let mut pos = 0;
    for s in &vk.stmts {
        let refuse = |why: String| format!("statement {}: {why}", s.name);
        let name = |a: ArrayId| kernel.array(a).name.clone();
        let columns = s.reduce.is_some() || vk.arrays[&s.target] == Kind::Tile;
        let mut reads = Vec::new();
        visit(&s.rhs, &mut |e| {
            if let ExprKind::Read(a) = &e.kind {
                reads.push(a.array);
            }
        });
        if s.reduce.is_some() || s.op != AssignOp::Assign {
            reads.push(s.target);
        }
        let mut need = pos;
        for &a in &reads {
            let input = kernel.array(a).role.is_input();
            match vk.arrays[&a] {
                Kind::Row if input && !columns => {
                    return Err(refuse(format!(
                        "reads `{}`, an input per row, outside the column loop (rows too long for UB load it with each chunk)",
                        name(a)
                    )));
                }
                Kind::Row => need = need.max(ready.get(&a).copied().unwrap_or(0)),
                _ => {}
            }
        }
        let p = if columns { need | 1 } else { (need + 1) & !1 };
        if columns {
            let tiles = (reads.iter().chain([&s.target])).filter(|a| vk.arrays[a] == Kind::Tile);
            for &a in tiles {
                if tile_at.get(&a).is_some_and(|&q| q != p) {
                    return Err(refuse(format!(
                        "reads `{}` in a later pass over the columns than the one that computed it (rows too long for UB keep no tile from pass to pass)",
                        name(a)
                    )));
                }
            }
            if vk.arrays[&s.target] == Kind::Tile {
                tile_at.insert(s.target, p);
            }
        }
        if vk.arrays[&s.target] == Kind::Row {
            if kernel.array(s.target).role.is_input() {
                return Err(refuse(format!(
                    "updates `{}`, an input per row, which rows too long for UB load with each chunk",
                    name(s.target)
                )));
            }
            ready.insert(s.target, if columns { p + 1 } else { p });
        }
        at.push(p);
        pos = p;
    }
    let written: Vec<ArrayId> = vk.stmts.iter().map(|s| s.target).collect();
    if let Some((&a, _)) = (vk.arrays.iter()).find(|(a, &k)| {
        k == Kind::Row && kernel.array(**a).role.is_output() && !written.contains(a)
    }) {
        return Err(format!(
            "no statement writes `{}`, an output per row",
            kernel.array(a).name
        ));
    }
    let mut steps = Vec::new();
    for p in 0..=pos {
        let stmts: Vec<usize> = (0..at.len()).filter(|&i| at[i] == p).collect();
        if stmts.is_empty() {
            continue;
        }
        steps.push(if p % 2 == 1 {
            Step::Columns(stmts)
        } else {
            Step::Rows(stmts)
        });
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npu::vector::recognise::recognise;
    use frontend::source::SourceFile;

    /// The steps of a kernel of `X: f32[B, L]` into `Y` with the statements `body`.
    fn steps(body: &str) -> Result<Vec<Step>, String> {
        let src =
            format!("kernel k(X: f32[B, L]) -> (Y: f32[B, L]) params B = 4, L = 8 {{ {body} }}");
        let kernel = frontend::compile(&SourceFile::new("k.pk", src))
            .expect("compiles")
            .remove(0);
        let params = [("B", 4), ("L", 8)].map(|(n, v)| (n.to_string(), v)).into();
        let vk = recognise(&kernel, &params).expect("qualifies");
        split(&vk, &kernel)
    }

    #[test]
    fn softmax_takes_three_passes_with_inits_between() {
        let s = steps(
            "let m: f32[B]; let s: f32[B];
             m[b] = max(l) X[b, l];
             s[b] = sum(l) exp(X[b, l] - m[b]);
             Y[b, l] = exp(X[b, l] - m[b]) / s[b];",
        );
        use Step::*;
        // m = -inf | m max= | s = 0 | s += | Y =
        let want = vec![
            Rows(vec![0]),
            Columns(vec![1]),
            Rows(vec![2]),
            Columns(vec![3]),
            Columns(vec![4]),
        ];
        assert_eq!(s, Ok(want));
    }

    #[test]
    fn a_tile_read_in_a_later_pass_is_refused() {
        let e = steps(
            "let t: f32[B, L]; let s: f32[B];
             t[b, l] = X[b, l] * 2.0;
             s[b] = sum(l) t[b, l];
             Y[b, l] = t[b, l] / s[b];",
        )
        .unwrap_err();
        assert!(
            e.starts_with("statement S") && e.contains("reads `t` in a later pass"),
            "{e}"
        );
    }

    #[test]
    fn layernorm_divides_between_passes() {
        let s = steps(
            "let mean: f32[B]; let var: f32[B];
             mean[b] = sum(l) X[b, l];
             mean[b] /= f32(L);
             var[b] = sum(l) (X[b, l] - mean[b]) * (X[b, l] - mean[b]);
             var[b] /= f32(L);
             Y[b, l] = (X[b, l] - mean[b]) / sqrt(var[b] + 1e-5);",
        )
        .unwrap();
        let passes = s.iter().filter(|x| matches!(x, Step::Columns(_))).count();
        assert_eq!(passes, 3, "{s:?}");
    }
}
