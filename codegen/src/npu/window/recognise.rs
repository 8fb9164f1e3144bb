//! A window reduction found in a kernel: an initialisation `O[n, p, q, c] = V` over all of
//! `O`, then `O[n, p, q, c] op= T` with `op` one of `+=`, `max=`, `min=`, inside loops over
//! the output and the window, where the term `T` reads `X[n, sh*p + r, sw*q + s, c]`:
//! `X` itself, converted to `O`'s type, times a per-channel weight `W[.., c]` indexed by the
//! window's loops (a depthwise convolution), or times a constant. `X` is an input or a copy
//! of one padded by the two statements before (`npu::padded`). Global pooling is the case
//! `O[n, c]` from `X[n, r, s, c]`: one output pixel per image, its window the image; and
//! its views ([`View`]) of arrays with fewer dimensions, `O[c]` or `O[n, c]` from
//! `X[(n,) r, (s,) c]` (a column sum), or over the images as well, `O[c]` from
//! `X[n, r, s, c]` (the images' rows merged into one image's), read from an input (not a
//! padded copy).
//!
//! A kernel is a window reduction when every loop of the update that does not index the
//! output indexes `X` only next to an output loop (`sh*p + r`), or is global pooling's: a
//! loop reading `X` alone otherwise
//! (a convolution's channels, a product's depth, a row's columns) makes it something else,
//! and [`window`] answers `Ok(None)` for another recogniser to take it.

use super::{footprint, Combine, Dim, Term, View, Window};
use crate::npu::conv::Pad;
use crate::npu::padded;
use crate::npu::read::{refuse, Linear, Reader};
use crate::npu::NpuError;
use frontend::ir::{
    Access, ArrayId, AssignOp, BinOp, ElemType, Expr, ExprKind, Kernel, Role, StmtContext, Type,
};
use std::collections::BTreeMap;

/// The window reduction of `kernel` at the given sizes, `Ok(None)` when the kernel is not
/// one, or a refusal naming the statement and the reason.
pub fn window(kernel: &Kernel, sizes: &BTreeMap<String, i64>) -> Result<Option<Window>, NpuError> {
    let stmts = kernel.statements();
    let Some(update) = stmts.last() else {
        return Ok(None);
    };
    let rd = Reader { kernel, sizes };
    let Some(target) = rd.indices(&update.stmt.target) else {
        return Ok(None);
    };
    let outer: Vec<&str> = target.iter().filter_map(|e| e.bare()).collect();
    let names: Vec<String> = update.loops().map(|l| l.var.clone()).collect();
    let reduction: Vec<&String> = names
        .iter()
        .filter(|l| !target.iter().any(|e| e.coefs.contains_key(*l)))
        .collect();
    let mut reads = Vec::new();
    visit_reads(&update.stmt.rhs, &mut |a| reads.push(a));
    // the array read at `sh*p + r`: the input of the window
    let windowed = |ix: &[Linear]| {
        !reduction.is_empty()
            && ix.iter().any(|e| {
                reduction.iter().any(|r| e.coefs.contains_key(*r))
                    && e.coefs.keys().any(|l| outer.contains(&l.as_str()))
            })
            && reduction.iter().all(|r| {
                ix.iter().all(|e| {
                    !e.coefs.contains_key(*r) || e.coefs.keys().any(|l| outer.contains(&l.as_str()))
                })
            })
    };
    // global pooling: `O[n, c]` from `X[n, r, s, c]`, the window the whole image, or a view
    // of it with fewer dimensions (`O[c]` or `O[n, c]` from `X[(n,) r, (s,) c]`) or with the
    // images' and rows' dimensions merged (`O[c]` from `X[n, h, w, c]`), `View`
    let global = |ix: &[Linear], array: ArrayId| -> Option<View> {
        let bare: Vec<&str> = ix.iter().map(|e| e.bare()).collect::<Option<_>>()?;
        let (&c, rest) = bare.split_last()?;
        if target.len() != outer.len() || outer.last() != Some(&c) {
            return None;
        }
        let batch = match outer.len() {
            1 => None,
            2 => Some(outer[0]),
            _ => return None,
        };
        let window = match batch {
            Some(n) => rest.split_first().filter(|(first, _)| **first == n)?.1,
            None => rest,
        };
        let reduced = |l: &&str| reduction.iter().any(|r| r.as_str() == *l);
        let distinct = window
            .iter()
            .enumerate()
            .all(|(i, l)| !window[..i].contains(l));
        if !(1..=3).contains(&window.len())
            || window.len() != reduction.len()
            || !window.iter().all(reduced)
            || !distinct
        {
            return None;
        }
        let first = usize::from(batch.is_some());
        let at = |k: usize| Dim::At(first + k);
        let (rows, cols) = match window.len() {
            1 => (at(0), Dim::Absent),
            2 => (at(0), at(1)),
            _ => (
                Dim::Merged {
                    at: first,
                    inner: rd.shape(array).ok()?[first + 1],
                },
                at(2),
            ),
        };
        Some(View {
            input: [
                batch.map_or(Dim::Absent, |_| Dim::At(0)),
                rows,
                cols,
                Dim::At(bare.len() - 1),
            ],
            output: vec![
                batch.map_or(Dim::Absent, |_| Dim::At(0)),
                Dim::At(outer.len() - 1),
            ],
        })
    };
    // the input and, for global pooling, its view of the NHWC form
    let Some((xa, global_view)) = reads.iter().copied().find_map(|a| {
        let ix = rd.indices(a)?;
        match global(&ix, a.array) {
            Some(view) => Some((a, Some(view))),
            None => windowed(&ix).then_some((a, None)),
        }
    }) else {
        return Ok(None);
    };
    let stmt = &update.stmt.name;
    let combine = match update.stmt.op {
        AssignOp::Add => Combine::Sum,
        AssignOp::Max => Combine::Max,
        AssignOp::Min => Combine::Min,
        op => {
            return refuse(format!(
                "statement {stmt} combines a window's terms with `{}`: the vector unit reduces windows with `+=`, `max=` or `min=`",
                op.symbol()
            ))
        }
    };
    let shape_error = || {
        refuse(format!(
            "statement {stmt} is not a window reduction the NPU back end reads: the output must be `O[n, p, q, c]` and the input `X[n, sh*p + r, sw*q + s, c]` (channels innermost), or for global pooling `O[n, c]` and `X[n, r, s, c]` (or `O[c]`, `O[n, c]` from `X[r, c]`, `X[r, s, c]`, `X[n, r, c]`), each output loop and window loop once"
        ))
    };
    let Some(xi) = rd.indices(xa) else {
        return shape_error();
    };
    let view = global_view.unwrap_or_else(|| View::nhwc(true));
    let spatial = view.output.len() == 4;
    // the loops of the batch and channels, of the window's rows (two when a view merges
    // them, the outer first) and columns, the strides, and the output's rows and columns
    // (none in global pooling)
    let (n, c, rows, s, (sh, sw), pixels) = if spatial {
        if target.len() != 4 || outer.len() != 4 || xi.len() != 4 {
            return shape_error();
        }
        let [n, p, q, c] = [outer[0], outer[1], outer[2], outer[3]];
        let n = Some(n);
        // X[j] = stride * (output loop j) + (a window loop or nothing)
        let mut strides = [0i64; 4];
        let mut taps: [Option<String>; 4] = Default::default();
        for (j, e) in xi.iter().enumerate() {
            let Some(&stride) = e.coefs.get(outer[j]) else {
                return shape_error();
            };
            let others: Vec<(&String, &i64)> =
                e.coefs.iter().filter(|(l, _)| *l != outer[j]).collect();
            taps[j] = match others.as_slice() {
                [] => None,
                [(l, 1)] if reduction.contains(l) => Some((*l).clone()),
                _ => return shape_error(),
            };
            if stride < 1 || e.constant != 0 {
                return shape_error();
            }
            strides[j] = stride;
        }
        if taps[3].is_some() || strides[3] != 1 {
            return refuse(format!(
                "statement {stmt} is a window reduction (pooling, a depthwise convolution) whose window slides along `{}`'s innermost dimension: the vector unit's operands start on 32-byte blocks, so the window must slide along outer dimensions, with the channels innermost (NHWC)",
                rd.name(xa.array)
            ));
        }
        if taps[0].is_some() || strides[0] != 1 {
            return shape_error();
        }
        let rows: Vec<String> = taps[1].clone().into_iter().collect();
        (
            n,
            c,
            rows,
            taps[2].clone(),
            (strides[1], strides[2]),
            Some((p, q)),
        )
    } else {
        let bare = |j: usize| xi[j].bare().map(str::to_string);
        let n = (view.output[0] != Dim::Absent).then_some(outer[0]);
        let c = outer[outer.len() - 1];
        let rows = match view.input[1] {
            Dim::Absent => vec![],
            Dim::At(j) => bare(j).into_iter().collect(),
            Dim::Merged { at, .. } => [bare(at), bare(at + 1)].into_iter().flatten().collect(),
        };
        let cols = match view.input[2] {
            Dim::At(j) => bare(j),
            _ => None,
        };
        (n, c, rows, cols, (1, 1), None)
    };
    let used = reduction
        .iter()
        .all(|l| rows.contains(l) || s.as_ref() == Some(*l));
    if !used || s.as_ref().is_some_and(|s| rows.contains(s)) {
        return shape_error();
    }
    // the loops in the order the kernel nests them, outermost first
    let depth = |l: &String| names.iter().position(|m| m == l);
    if let [outer_rows, inner_rows] = rows.as_slice() {
        let between = |l: &String| depth(outer_rows) < depth(l) && depth(l) < depth(inner_rows);
        if depth(outer_rows) > depth(inner_rows) || s.as_ref().is_some_and(between) {
            return refuse(format!(
                "statement {stmt} reduces over `{outer_rows}` and `{inner_rows}` as one image of their rows, so they must be nested in that order with no other loop of the reduction between them: the vector unit combines a global reduction's terms in the kernel's order"
            ));
        }
    }
    let extents = rd.extents(update)?;
    let rr: i64 = rows.iter().map(|l| extents[l]).product();
    let ss = s.as_ref().map_or(1, |l| extents[l]);
    let output = rd.tensor(update.stmt.target.array)?;
    let (batch, ch) = (n.map_or(1, |n| extents[n]), extents[c]);
    let (oh, ow) = pixels.map_or((1, 1), |(p, q)| (extents[p], extents[q]));
    let want: Vec<i64> = match spatial {
        true => vec![batch, oh, ow, ch],
        false => (view.output.iter().zip([batch, ch]))
            .filter_map(|(d, e)| (*d != Dim::Absent).then_some(e))
            .collect(),
    };
    if output.shape != want {
        return refuse(format!(
            "statement {stmt}'s loops do not run over the whole of `{}`",
            output.name
        ));
    }
    let x_shape = View::extents(&view.input, &rd.shape(xa.array)?);
    if x_shape[0] != batch
        || x_shape[3] != ch
        || sh * (oh - 1) + rr > x_shape[1]
        || sw * (ow - 1) + ss > x_shape[2]
    {
        return refuse(format!(
            "statement {stmt} reads `{}` outside its extent or over part of its batch or channels",
            rd.name(xa.array)
        ));
    }
    let o_type = elem(kernel, update.stmt.target.array);
    let term = term(&rd, &update.stmt.rhs, xa, o_type, c, &rows, &s, &extents)?
        .ok_or_else(|| {
            NpuError::Unsupported(format!(
                "statement {stmt}'s term is not one the vector unit computes in one instruction from `{}`: write it as `X`, `{}(X)`, `X * W[.., c]` or `X * constant`",
                rd.name(xa.array),
                o_type.name()
            ))
        })?;
    let before = &stmts[..stmts.len() - 1];
    let Some((init_stmt, before)) = before.split_last() else {
        return refuse(format!(
            "statement {stmt} has no initialisation: write `{}[..] = V` over all of it first",
            output.name
        ));
    };
    let init = initial(&rd, init_stmt, update, &output)?;
    let (input, pad, fill) = match (before.len(), kernel.array(xa.array).role) {
        (0, Role::In) => (rd.tensor(xa.array)?, Pad::default(), None),
        (2, Role::Temp) if view.is_nhwc() => {
            let padded = padded::copy(&rd, &before[0], &before[1], xa.array, [0, 1, 2, 3])?;
            (padded.input, padded.pad, Some(padded.fill))
        }
        (k, _) => {
            return refuse(format!(
                "{} statements: a window reduction is its initialisation and update, reading an input or, after two statements making it, a padded copy of one (`{}`)",
                k + 2,
                rd.name(xa.array)
            ))
        }
    };
    let in_shape = View::extents(&view.input, &input.shape);
    let (h, w) = (in_shape[1], in_shape[2]);
    if pad.top >= rr || pad.left >= ss || pad.bottom >= rr || pad.right >= ss {
        return refuse(format!(
            "statement {stmt}'s window ({rr} x {ss}) is no larger than its padding: some windows would read only the border"
        ));
    }
    if let Some(v) = fill {
        let skipped = match combine {
            Combine::Sum => v == 0.0,
            Combine::Max => v <= init,
            Combine::Min => v >= init,
        };
        if !skipped {
            return refuse(format!(
                "statement {stmt} reads a border of {v} that can change its result ({}= from {init}): the vector unit skips the border, which is exact for a sum's zeros, and for a maximum (minimum) of a border no larger (no smaller) than the initial value",
                match combine {
                    Combine::Sum => "+",
                    Combine::Max => "max",
                    Combine::Min => "min",
                }
            ));
        }
    }
    let in_type = elem(kernel, input.id);
    for (name, t) in [(&input.name, in_type), (&output.name, o_type)]
        .into_iter()
        .chain(match &term {
            Term::Product { weights, elem, .. } => Some((&weights.name, *elem)),
            _ => None,
        })
    {
        if (ch * t.size_bytes() as i64) % npu_sim::hazards::BLOCK as i64 != 0 {
            return refuse(format!(
                "the {ch} channels of `{name}` ({t}) are not whole 32-byte blocks: the vector unit's operands start on them"
            ));
        }
    }
    let r_outer = match (rows.last(), &s) {
        (Some(r), Some(s)) => depth(r) < depth(s),
        _ => true,
    };
    let reads = footprint::Reads::of(
        &crate::npu::lifted::Source {
            kernel,
            sizes,
            update: stmt,
            x: xa.array,
            input: input.id,
        },
        &view,
    )?;
    Ok(Some(Window {
        reads: std::sync::Arc::new(reads),
        stmt: stmt.clone(),
        types: (in_type, o_type),
        input,
        output,
        batch,
        h,
        w,
        c: ch,
        oh,
        ow,
        r: rr,
        s: ss,
        stride: (sh, sw),
        pad,
        init,
        combine,
        term,
        r_outer,
        view,
    }))
}

fn elem(kernel: &Kernel, a: ArrayId) -> ElemType {
    kernel.array(a).elem
}

fn visit_reads<'e>(e: &'e Expr, f: &mut impl FnMut(&'e Access)) {
    if let ExprKind::Read(a) = &e.kind {
        f(a);
    }
    for child in e.children() {
        visit_reads(child, f);
    }
}

/// The read of `x`, bare or converted to `to`.
fn is_input(e: &Expr, x: &Access, to: ElemType) -> bool {
    match &e.kind {
        ExprKind::Read(a) => a == x,
        ExprKind::Cast(inner) => e.ty == Type::Elem(to) && is_input(inner, x, to),
        _ => false,
    }
}

/// The term of the update: `X`, `X * W[.., c]` or `X * constant` (either operand first),
/// each `X` and `W` bare or converted to the output's type `to`; `Ok(None)` for any other.
#[allow(clippy::too_many_arguments)]
fn term(
    rd: &Reader,
    e: &Expr,
    x: &Access,
    to: ElemType,
    c: &str,
    r: &[String],
    s: &Option<String>,
    extents: &BTreeMap<String, i64>,
) -> Result<Option<Term>, NpuError> {
    if e.ty != Type::Elem(to) {
        return Ok(None);
    }
    if is_input(e, x, to) {
        return Ok(Some(Term::Input));
    }
    let ExprKind::Binary(BinOp::Mul, a, b) = &e.kind else {
        return Ok(None);
    };
    let other = match (is_input(a, x, to), is_input(b, x, to)) {
        (true, false) => b,
        (false, true) => a,
        _ => return Ok(None),
    };
    if let ExprKind::Literal(v) = other.kind {
        return Ok(Some(Term::Scaled(v)));
    }
    let weight = match &other.kind {
        ExprKind::Cast(inner) => inner,
        _ => other,
    };
    let ExprKind::Read(wa) = &weight.kind else {
        return Ok(None);
    };
    if rd.kernel.array(wa.array).role != Role::In {
        return Ok(None);
    }
    let Some(wi) = rd.indices(wa) else {
        return Ok(None);
    };
    if let [outer_rows, inner_rows] = r {
        return refuse(format!(
            "`{}` weights a reduction over `{outer_rows}` and `{inner_rows}` merged into one image's rows: the vector unit steps through a window's weights by a row's, which merged rows do not have",
            rd.name(wa.array)
        ));
    }
    // W[.., c]: the window's loops in any order, then the channels
    let window: Vec<&String> = r.iter().chain(s).collect();
    let bare: Option<Vec<&str>> = wi.iter().map(|e| e.bare()).collect();
    let Some(bare) = bare else { return Ok(None) };
    let Some((&last, first)) = bare.split_last() else {
        return Ok(None);
    };
    if last != c
        || first.len() != window.len()
        || !window.iter().all(|l| first.contains(&l.as_str()))
    {
        return Ok(None);
    }
    let weights = rd.tensor(wa.array)?;
    let want: Vec<i64> = bare.iter().map(|l| extents[*l]).collect();
    if weights.shape != want {
        return Ok(None);
    }
    // elements between the weights of consecutive window rows and columns
    let stride_of = |l: Option<&String>| {
        l.map_or(0, |l| {
            let at = bare.iter().position(|b| b == l).unwrap_or(0);
            weights.shape[at + 1..].iter().product()
        })
    };
    Ok(Some(Term::Product {
        elem: rd.kernel.array(wa.array).elem,
        weights: weights.clone(),
        steps: (stride_of(r.first()), stride_of(s.as_ref())),
    }))
}

/// The initial value: the statement before the update sets all of the output to a constant.
fn initial(
    rd: &Reader,
    init: &StmtContext,
    update: &StmtContext,
    output: &crate::npu::conv::Tensor,
) -> Result<f64, NpuError> {
    let value = match init.stmt.rhs.kind {
        ExprKind::Literal(v) => Some(v),
        _ => None,
    };
    let whole = rd.extents(init).is_ok_and(|ext| {
        rd.indices(&init.stmt.target).is_some_and(|ix| {
            ix.len() == ext.len()
                && ix
                    .iter()
                    .zip(&output.shape)
                    .all(|(e, &d)| e.bare().is_some_and(|l| ext.get(l) == Some(&d)))
        })
    });
    match value {
        Some(v)
            if init.stmt.op == AssignOp::Assign
                && init.stmt.target.array == update.stmt.target.array
                && whole =>
        {
            Ok(v)
        }
        _ => refuse(format!(
            "statement {} does not set all of `{}` to a constant before {} reduces into it",
            init.stmt.name, output.name, update.stmt.name
        )),
    }
}
