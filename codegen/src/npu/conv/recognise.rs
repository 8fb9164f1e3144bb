//! A 2-D convolution found in a kernel, with the im2col mapping onto the matrix unit proved
//! by the mapping layer.
//!
//! The statement is `O[..] += f32(X[..]) * f32(W[..])` with its initialisation `O[..] = 0`,
//! where (loops named freely, dimensions in either order below):
//! - `O` is `[n, k, p, q]` (NCHW) or `[n, p, q, k]` (NHWC);
//! - `X` is `[n, c, sh*p + r, sw*q + s]` (NCHW) or `[n, sh*p + r, sw*q + s, c]` (NHWC), where
//!   a 1x1 convolution may leave `r` and `s` out;
//! - `W` is `[k, c, r, s]` (KCRS, PyTorch's OIHW), `[k, r, s, c]` (KRSC) or `[k, c]` (1x1).
//!
//! `X` is either the kernel's input, read as it is (a "valid" convolution, or an input the
//! caller padded), or a zero-padded copy of the input made by two statements before it:
//! `X[..] = 0` over all of `X`, then `X[.., h + PT, w + PL, ..] = I[.., h, w, ..]` over all of
//! `I`. The back end never builds `X`: it reads `I` and zero-pads on the fly (`load3d`'s
//! padding).

use super::{footprint, Activations, Conv, Pad, Tensor, Weights};
use crate::npu::epilogue::Epilogue;
use crate::npu::padded;
use crate::npu::read::{refuse, Linear, Reader};
use crate::npu::recognise::{mmad, prove, Dim, Operand};
use crate::npu::NpuError;
use frontend::ir::{Access, ArrayId, AssignOp, ElemType, ExprKind, Kernel, Role, StmtContext};
use scheduler::mapping::physical::Mapping;
use scheduler::mapping::software::{Sizes, Software};
use scheduler::mapping::text;
use scheduler::target::Target;
use std::collections::BTreeMap;

/// The loops of the convolution statement, by role, and how the weights order theirs.
struct Loops {
    weights: Weights,
    n: String,
    k: String,
    p: String,
    q: String,
    c: String,
    r: Option<String>,
    s: Option<String>,
}

/// Finds a convolution in `kernel` at the given sizes and proves its im2col mapping onto
/// `target`'s matrix intrinsic. `Ok(None)`: the kernel does not have a convolution's shape
/// (its last statement is not a multiply-accumulate with at least two loops indexing only
/// the output and the first operand), so another recogniser may take it.
pub fn convolution(
    kernel: &Kernel,
    sizes: &BTreeMap<String, i64>,
    target: &Target,
) -> Result<Option<Conv>, NpuError> {
    let all = kernel.statements();
    // an element-wise statement after the multiply-accumulate is its epilogue
    let (stmts, after) = match all.split_last() {
        Some((last, rest))
            if mmad(kernel, last, target).is_err()
                && rest.last().is_some_and(|u| mmad(kernel, u, target).is_ok()) =>
        {
            (rest, Some(last))
        }
        _ => (&all[..], None),
    };
    let Some(update) = stmts.last() else {
        return Ok(None);
    };
    let Ok((intr, binding)) = mmad(kernel, update, target) else {
        return Ok(None);
    };
    let rd = Reader { kernel, sizes };
    let (xa, wa, oa) = (&binding[0], &binding[1], &binding[2]);
    let (Some(xi), Some(wi), Some(oi)) = (rd.indices(xa), rd.indices(wa), rd.indices(oa)) else {
        return Ok(None);
    };
    let mentions = |ix: &[Linear], l: &str| ix.iter().any(|e| e.coefs.contains_key(l));
    let names: Vec<String> = update.loops().map(|l| l.var.clone()).collect();
    let pixel_like = (names.iter())
        .filter(|l| mentions(&oi, l) && mentions(&xi, l) && !mentions(&wi, l))
        .count();
    if pixel_like < 2 {
        return Ok(None);
    }
    let stmt = &update.stmt.name;
    if let Some(l) =
        (names.iter()).find(|l| mentions(&oi, l) && mentions(&xi, l) && mentions(&wi, l))
    {
        return refuse(format!(
            "statement {stmt} is a depthwise (grouped) convolution: loop `{l}` indexes the output, the input and the weights, so there is no reduction over channels for the matrix unit's 16-deep reduction (each 16 x 16 block of weights would be diagonal); the NPU back end does not compile it"
        ));
    }
    let loops = roles(stmt, &names, &xi, &wi, &oi)?;
    let extents = rd.extents(update)?;
    let ext = |l: &str| extents.get(l).copied().unwrap_or(1);
    let output = rd.tensor(oa.array)?;
    let weights = rd.tensor(wa.array)?;
    let output_layout = match oi.iter().position(|e| e.bare() == Some(&loops.k)) {
        Some(1) => Activations::Nchw,
        _ => Activations::Nhwc,
    };
    let weight_layout = loops.weights;
    let (batch, c, k, oh, ow) = (
        ext(&loops.n),
        ext(&loops.c),
        ext(&loops.k),
        ext(&loops.p),
        ext(&loops.q),
    );
    let r = loops.r.as_deref().map_or(1, ext);
    let s = loops.s.as_deref().map_or(1, ext);
    // the image's rows and columns in X, and the stride
    let (hdim, wdim, cdim) = match oi.iter().position(|e| e.bare() == Some(&loops.k)) {
        Some(1) => (2, 3, 1),
        _ => (1, 2, 3),
    };
    let (sh, sw) = (xi[hdim].coefs[&loops.p], xi[wdim].coefs[&loops.q]);
    if sh != sw {
        return refuse(format!(
            "statement {stmt} has strides {sh} and {sw}: `load3d` takes one stride for both directions"
        ));
    }
    if xi[hdim].constant != 0 || xi[wdim].constant != 0 {
        return refuse(format!(
            "statement {stmt} reads `{}` at a constant offset: write the padding as a zero-padded copy of the input (docs/npu-backend.md, \"Convolutions\")",
            rd.name(xa.array)
        ));
    }
    let x_shape = rd.shape(xa.array)?;
    let want_w = match (weight_layout, wi.len()) {
        (Weights::Kcrs, _) => vec![k, c, r, s],
        (Weights::Krsc, 4) => vec![k, r, s, c],
        (Weights::Rsck, 4) => vec![r, s, c, k],
        (Weights::Rsck, _) => vec![c, k],
        _ => vec![k, c],
    };
    let want_o = match output_layout {
        Activations::Nchw => vec![batch, k, oh, ow],
        Activations::Nhwc => vec![batch, oh, ow, k],
    };
    if weights.shape != want_w
        || output.shape != want_o
        || x_shape[0] != batch
        || x_shape[cdim] != c
    {
        return refuse(format!(
            "statement {stmt}'s loops do not run over whole dimensions of `{}`, `{}` and `{}`",
            output.name,
            weights.name,
            rd.name(xa.array)
        ));
    }
    let (xh, xw) = (x_shape[hdim], x_shape[wdim]);
    if sh * (oh - 1) + r > xh || sw * (ow - 1) + s > xw {
        return refuse(format!(
            "statement {stmt} reads `{}` past its last row or column",
            rd.name(xa.array)
        ));
    }
    let (input, pad) = padding(&rd, stmts, xa.array, [0, hdim, wdim, cdim])?;
    let (h, w) = (input.shape[hdim], input.shape[wdim]);
    if (w + pad.left + pad.right - s) / sw + 1 != ow {
        return refuse(format!(
            "statement {stmt} computes {ow} output columns where the stride gives {}: the output's rows must line up with the im2col matrix's",
            (w + pad.left + pad.right - s) / sw + 1
        ));
    }
    init(stmts, update)?;
    let (output, epilogue) = match after {
        Some(ctx) => epilogue(kernel, ctx, output, output_layout, sizes)?,
        None => (output, Epilogue::None),
    };
    if let Some((v, row)) = (epilogue.vector()).and_then(|v| Some((v, *v.row_vectors().first()?))) {
        // a convolution's spans are pixels, not rows of a product
        return refuse(format!(
            "statement {} after the convolution reads `{}` once per output pixel; an epilogue after a convolution reads the sums, inputs of the output's shape, per-channel vectors and scalars",
            v.statement,
            kernel.array(row).name
        ));
    }
    let second = (epilogue.vector()).and_then(|v| Some((v, *v.second_tiles().first()?)));
    if let Some((v, second)) = second.filter(|_| c % 16 != 0) {
        // the streams spread such channels through the vector unit, with the flags the
        // epilogue would load the residual with
        return refuse(format!(
            "statement {} after the convolution reads `{}`, a tile of the output's shape (a residual), and its {c} input channels are not a multiple of 16: the streams that spread them over blocks of 16 use the flags the residual's loads need",
            v.statement,
            kernel.array(second).name
        ));
    }
    let elem = super::output_elem(&epilogue);
    let bytes = elem.size_bytes() as i64;
    let per_block = npu_sim::hazards::BLOCK as i64 / bytes;
    if batch > 1 && (oh * ow * k) % per_block != 0 {
        return refuse(format!(
            "statement {stmt}'s output images of {oh} x {ow} x {k} {elem} values do not start on 32-byte GM blocks (a store's first element must): with more than one image, OH * OW * K must be a multiple of {per_block}"
        ));
    }
    let input_layout = if cdim == 1 {
        Activations::Nchw
    } else {
        Activations::Nhwc
    };
    let mapping = prove_im2col(
        kernel,
        update,
        sizes,
        target,
        &intr,
        &binding,
        &loops,
        weight_layout,
    )?;
    let src = footprint::Source {
        at: crate::npu::lifted::Source {
            kernel,
            sizes,
            update: &update.stmt.name,
            x: xa.array,
            input: input.id,
        },
        output_layout,
        input_layout,
        out_rows: oh,
        out_cols: ow,
    };
    let rows = std::sync::Arc::new(footprint::RowReads::of(&src)?);
    Ok(Some(Conv {
        batch,
        c,
        k,
        h,
        w,
        r,
        s,
        oh,
        ow,
        stride: sh,
        pad,
        input,
        input_layout,
        weights,
        weight_layout,
        output,
        epilogue,
        output_layout,
        mapping,
        rows,
    }))
}

/// The output written by `ctx`, an epilogue statement after the convolution whose sums are
/// the temporary `sums` (laid out as `layout`), and what the back end makes of it: a ReLU or
/// plain copy out of L0C, or (NHWC, the channels a tile's columns) an element-wise statement
/// for the vector unit (into an output of any type it computes), or (NHWC) the sums rounded
/// to f16 or bf16 by that copy, with or without the ReLU.
fn epilogue(
    kernel: &Kernel,
    ctx: &StmtContext,
    sums: Tensor,
    layout: Activations,
    sizes: &BTreeMap<String, i64>,
) -> Result<(Tensor, Epilogue), NpuError> {
    let acc = Operand {
        tensor: sums.id,
        name: sums.name.clone(),
        shape: sums.shape.clone(),
        // NHWC: the pixels are the tile's rows, the channels its columns
        dims: vec![Dim::Batch(0), Dim::Batch(1), Dim::Row, Dim::Col],
        elem: ElemType::F32,
    };
    let (out, e) = super::super::epilogue::recognise(kernel, ctx, &acc, sizes)?;
    let fits = match &e {
        Epilogue::None | Epilogue::Relu(ElemType::F32) => true,
        // rounded by the copy out of L0C into pixel rows of the output's type
        Epilogue::Cast(_) | Epilogue::Relu(_) => layout == Activations::Nhwc,
        Epilogue::Vector(_) => layout == Activations::Nhwc,
    };
    if !fits {
        return refuse(format!(
            "statement {} after the convolution is fused as \"{}\", but only an NHWC convolution's output can be rounded to 16 bits on its way out of L0C or have an epilogue on the vector unit",
            ctx.stmt.name,
            e.describe()
        ));
    }
    Ok((
        Tensor {
            id: out.tensor,
            name: out.name,
            shape: out.shape,
        },
        e,
    ))
}

/// The loops of the statement by role, read from the accesses.
fn roles(
    stmt: &str,
    names: &[String],
    xi: &[Linear],
    wi: &[Linear],
    oi: &[Linear],
) -> Result<Loops, NpuError> {
    let shape_error = || {
        refuse(format!(
            "statement {stmt} is not a 2-D convolution the NPU back end reads: the output must be [n, k, p, q] or [n, p, q, k], the input [n, c, sh*p + r, sw*q + s] or [n, sh*p + r, sw*q + s, c], the weights [k, c, r, s], [k, r, s, c], [r, s, c, k], [k, c] or [c, k]"
        ))
    };
    if oi.len() != 4 || xi.len() != 4 || !(wi.len() == 4 || wi.len() == 2) {
        return shape_error();
    }
    let bare: Option<Vec<&str>> = oi.iter().map(|e| e.bare()).collect();
    let Some(o) = bare else { return shape_error() };
    let in_weights = |l: &str| wi.iter().any(|e| e.bare() == Some(l));
    let (n, k, p, q) = match o.as_slice() {
        [n, k, p, q] if in_weights(k) => (*n, *k, *p, *q),
        [n, p, q, k] if in_weights(k) => (*n, *k, *p, *q),
        _ => return shape_error(),
    };
    let nchw = oi[1].bare() == Some(k);
    let (hdim, wdim, cdim) = if nchw { (2, 3, 1) } else { (1, 2, 3) };
    let Some(c) = xi[cdim].bare() else {
        return shape_error();
    };
    if xi[0].bare() != Some(n) {
        return shape_error();
    }
    // sh*p + r: the row loop with any positive stride, and at most one other loop with 1
    let window = |e: &Linear, pixel: &str| -> Option<Option<String>> {
        let stride = *e.coefs.get(pixel)?;
        let others: Vec<(&String, &i64)> = e.coefs.iter().filter(|(l, _)| *l != pixel).collect();
        match others.as_slice() {
            [] if stride >= 1 => Some(None),
            [(l, 1)] if stride >= 1 => Some(Some((*l).clone())),
            _ => None,
        }
    };
    let (Some(r), Some(s)) = (window(&xi[hdim], p), window(&xi[wdim], q)) else {
        return shape_error();
    };
    let w: Vec<Option<&str>> = wi.iter().map(|e| e.bare()).collect();
    let layout = match (w.as_slice(), &r, &s) {
        ([a, b], None, None) if *a == Some(k) && *b == Some(c) => Some(Weights::Krsc),
        ([a, b], None, None) if *a == Some(c) && *b == Some(k) => Some(Weights::Rsck),
        (_, Some(r), Some(s)) => {
            let (k, c, r, s) = (Some(k), Some(c), Some(r.as_str()), Some(s.as_str()));
            [
                ([k, c, r, s], Weights::Kcrs),
                ([k, r, s, c], Weights::Krsc),
                ([r, s, c, k], Weights::Rsck),
            ]
            .into_iter()
            .find(|(order, _)| w.as_slice() == order)
            .map(|(_, layout)| layout)
        }
        _ => None,
    };
    let Some(weights) = layout else {
        return shape_error();
    };
    let mut used = vec![n, k, p, q, c];
    used.extend(r.iter().map(|x| x.as_str()));
    used.extend(s.iter().map(|x| x.as_str()));
    let distinct = (0..used.len()).all(|i| !used[..i].contains(&used[i]));
    if !distinct || names.len() != used.len() {
        return shape_error();
    }
    Ok(Loops {
        weights,
        n: n.into(),
        k: k.into(),
        p: p.into(),
        q: q.into(),
        c: c.into(),
        r,
        s,
    })
}

/// The input tensor and its padding: `X` itself with none, or the input `X` is a
/// zero-padded copy of (two statements before the convolution's two).
fn padding(
    rd: &Reader,
    stmts: &[StmtContext],
    x: ArrayId,
    dims: [usize; 4],
) -> Result<(Tensor, Pad), NpuError> {
    let xname = rd.name(x).to_string();
    match (stmts.len(), rd.kernel.array(x).role) {
        (2, Role::In) => return Ok((rd.tensor(x)?, Pad::default())),
        (4, Role::Temp) => {}
        (n, _) => {
            return refuse(format!(
                "{n} statements: a convolution is its initialisation and multiply-accumulate, reading an input or, after two statements making it, a zero-padded copy of one (`{xname}`)"
            ))
        }
    }
    let padded = padded::copy(rd, &stmts[0], &stmts[1], x, dims)?;
    if padded.fill != 0.0 {
        return refuse(format!(
            "statement {} pads `{xname}` with {}: a convolution's padding is zeros",
            stmts[0].stmt.name, padded.fill
        ));
    }
    Ok((padded.input, padded.pad))
}

/// The statement before the update sets the update's element to 0.
fn init(stmts: &[StmtContext], update: &StmtContext) -> Result<(), NpuError> {
    let init = &stmts[stmts.len() - 2];
    let zero = matches!(init.stmt.rhs.kind, ExprKind::Literal(v) if v == 0.0);
    if init.stmt.op != AssignOp::Assign || !zero || init.stmt.target != update.stmt.target {
        return refuse(format!(
            "statement {} does not set the output's element to 0 before {} accumulates into it",
            init.stmt.name, update.stmt.name
        ));
    }
    Ok(())
}

/// The im2col mapping, picked directly rather than enumerated (a large convolution has
/// many), and proved: the output pixels `p, q` fused onto the intrinsic's rows, the output
/// channels `k` onto its columns, the reduction loops onto its reduction in the order the
/// weights store them.
#[allow(clippy::too_many_arguments)]
fn prove_im2col(
    kernel: &Kernel,
    update: &StmtContext,
    sizes: &BTreeMap<String, i64>,
    target: &Target,
    intr: &scheduler::mapping::intrinsic::Intrinsic,
    binding: &[Access],
    loops: &Loops,
    weights: Weights,
) -> Result<String, NpuError> {
    let sw = Software::new(kernel, update, Sizes::Concrete(sizes.clone()));
    let at = |name: &str| {
        sw.loop_index(name)
            .ok_or_else(|| NpuError::Internal(format!("no loop `{name}`")))
    };
    let (rows, red) = match intr.operands[0].dims.as_slice() {
        [Some(a), Some(b)] => (*a, *b),
        _ => return Err(NpuError::Internal("operand A is not a matrix".into())),
    };
    let cols = match intr.operands[1].dims.as_slice() {
        [_, Some(b)] => *b,
        _ => return Err(NpuError::Internal("operand B is not a matrix".into())),
    };
    let window: Vec<&String> = loops.r.iter().chain(&loops.s).collect();
    let reduction: Vec<&String> = match weights {
        Weights::Kcrs => std::iter::once(&loops.c).chain(window).collect(),
        Weights::Krsc | Weights::Rsck => window
            .into_iter()
            .chain(std::iter::once(&loops.c))
            .collect(),
    };
    let mut groups = vec![vec![]; intr.loops.len()];
    groups[rows] = vec![at(&loops.p)?, at(&loops.q)?];
    groups[cols] = vec![at(&loops.k)?];
    groups[red] = reduction.iter().map(|l| at(l)).collect::<Result<_, _>>()?;
    let mapping = Mapping::derive(&sw, intr, binding, groups)
        .map_err(|e| NpuError::Unsupported(e.to_string()))?;
    prove(&sw, intr, binding, &mapping, target)?;
    Ok(text::print(&sw, intr, &mapping))
}
