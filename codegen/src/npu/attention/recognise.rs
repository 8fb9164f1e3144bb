//! Which kernels are an attention block, and what each part of one is.
//!
//! A kernel qualifies when its statements are, after any kernel-level scalars (`scale =
//! 1.0 / sqrt(f32(D))`): the scores `S = 0; S += f32(Q[.., i, d]) * f32(K[.., j, d])` (a
//! product with the keys read transposed), statements the vector path compiles over the
//! rows of `S` (a row softmax, with or without a scaling), and the output `O = 0; O +=
//! f32(P[.., i, j]) * f32(V[.., j, d])` (a product of the probabilities and the values).
//! Both products are proved onto the cube's intrinsic by the mapping layer
//! (`recognise::product`); the statements between them are recognised, folded and lowered
//! by the vector path itself, on the kernel restricted to them (`S` its input, `P` its
//! output); besides the scores they may read inputs of the scores' shape (a causal mask or
//! a per-head bias `M[.., i, j]`), loaded per block of query rows, and per-key vectors (a
//! padding mask `M[j]`) and scalars, loaded once per core. The cube's intrinsic multiplies
//! f16 operands, so `P` must be f16.

use crate::npu::recognise::{product, Dim, Operand, Product};
use crate::npu::vector::recognise::{recognise as vector_kernel, Kind, VectorKernel};
use crate::npu::NpuError;
use frontend::ir::{
    Access, AffExpr, ArrayId, AssignOp, BinOp, ElemType, ExprKind, Kernel, Node, Role, StmtContext,
    Var,
};
use scheduler::target::Target;
use std::collections::{BTreeMap, BTreeSet};

/// An attention block as the back end compiles it, per head (the batch loops):
/// `S = Q K^T`, `P = softmax-like(S)` on the vector unit, `O = P V`.
#[derive(Clone, Debug)]
pub struct Attention {
    /// The scores' product: `acc` is `S` (`m x n`), `a` is `Q` (`m x d`), `b` is `K` read
    /// transposed (`n x d` in memory).
    pub scores: Product,
    /// The output's product: `a` is `P` (`m x n`), `b` is `V` (`n x dv`), `acc` is `O`.
    pub output: Product,
    /// The kernel restricted to the statements between the products (and the kernel-level
    /// scalars), `S` its input and `P` its output.
    pub softmax: Kernel,
    /// Their vector form: rows the heads' query rows, columns the keys.
    pub vk: VectorKernel,
    /// Heads: the product of the batch extents.
    pub heads: i64,
    /// The inputs of the scores' shape that the kernel reads without some of the batch
    /// indices (`M[i, j]` in every head: a causal mask the heads share), rewritten in
    /// `softmax` as tiles of the scores' shape.
    pub shared: BTreeMap<ArrayId, Shared>,
    /// The scores' update statement's name.
    pub scores_stmt: String,
    /// The output's update statement's name.
    pub output_stmt: String,
}

/// An input of the scores' shape without some of the batch indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shared {
    /// The positions, among the batch loops, of the batch indices it keeps.
    pub kept: Vec<usize>,
    /// Its extents in the kernel.
    pub shape: Vec<i64>,
}

impl Attention {
    /// The inputs of the scores' shape the softmax reads (masks, biases), loaded per block.
    pub fn masks(&self) -> Vec<ArrayId> {
        let s = self.scores.acc.tensor;
        (self.vk.arrays.iter())
            .filter(|(&a, &k)| k == Kind::Tile && a != s && self.softmax.array(a).role.is_input())
            .map(|(&a, _)| a)
            .collect()
    }

    /// GM bytes of a query row of each input of the scores' shape.
    pub fn mask_row_bytes(&self) -> Vec<i64> {
        (self.masks().into_iter())
            .map(|a| {
                let e = crate::npu::matmul::dtype(self.softmax.array(a).elem);
                e.map_or(4, |d| d.size() as i64) * self.n()
            })
            .collect()
    }

    /// Query rows per head.
    pub fn m(&self) -> i64 {
        self.scores.m
    }
    /// Keys per head.
    pub fn n(&self) -> i64 {
        self.scores.n
    }
    /// The queries' and keys' depth.
    pub fn d(&self) -> i64 {
        self.scores.k
    }
    /// The values' depth.
    pub fn dv(&self) -> i64 {
        self.output.n
    }
    /// Query rows per head rounded up to whole fractals: the rows the cube computes (those
    /// past [`Self::m`] are zero queries, never stored).
    pub fn mp(&self) -> i64 {
        crate::npu::up(self.m(), super::tiles::F)
    }
    /// Keys per head rounded up to whole fractals: the scores' columns the cube computes
    /// (those past [`Self::n`] are zero keys, which the softmax does not read and whose
    /// probabilities are zero).
    pub fn np(&self) -> i64 {
        crate::npu::up(self.n(), super::tiles::F)
    }
}

/// Whether `ctx` is an update `X += a * b`.
fn is_update(ctx: &StmtContext) -> bool {
    ctx.stmt.op == AssignOp::Add && matches!(ctx.stmt.rhs.kind, ExprKind::Binary(BinOp::Mul, ..))
}

/// The attention block in `kernel` at the sizes `sizes`, `None` when the kernel does not
/// have its shape (two products with statements between them), or why it cannot be
/// compiled, naming the statement.
pub fn attention(
    kernel: &Kernel,
    sizes: &BTreeMap<String, i64>,
    target: &Target,
) -> Result<Option<Attention>, NpuError> {
    let all = kernel.statements();
    let scalars = all
        .iter()
        .take_while(|c| c.loops().next().is_none())
        .count();
    let stmts = &all[scalars..];
    let n = stmts.len();
    if n < 5 || !is_update(&stmts[1]) || !is_update(&stmts[n - 1]) {
        return Ok(None);
    }
    let refuse = |name: &str, why: String| {
        Err(NpuError::Unsupported(format!(
            "statement {name}: {why} (in the attention block)"
        )))
    };
    // the cube multiplies 16-bit operands: an f32 P cannot be multiplied exactly
    let out = &stmts[n - 1];
    let mut wide = None;
    crate::npu::vector::recognise::visit(&out.stmt.rhs, &mut |e| {
        if let ExprKind::Read(a) = &e.kind {
            let arr = kernel.array(a.array);
            if arr.elem != ElemType::F16 && wide.is_none() {
                wide = Some((arr.name.clone(), arr.elem));
            }
        }
    });
    if let Some((name, elem)) = wide {
        return refuse(
            &out.stmt.name,
            format!(
                "the cube multiplies f16 operands only and `{name}` is {}; declare it f16 (or multiply `f32(P16[..])` with `P16 = f16(P[..])`) so that the product computes what the kernel says",
                elem.name()
            ),
        );
    }
    let scores = product(kernel, (&stmts[0], &stmts[1]), sizes, target)?;
    let output = product(kernel, (&stmts[n - 2], &stmts[n - 1]), sizes, target)?;
    let (s, p) = (scores.acc.tensor, output.a.tensor);
    let name = |a: ArrayId| kernel.array(a).name.clone();
    // every tensor [batch.., row, col], the keys [batch.., col, row]
    let batch = scores.batch.len();
    let laid = |op: &Operand, transposed: bool| {
        let mut want: Vec<Dim> = (0..batch).map(Dim::Batch).collect();
        want.extend(if transposed {
            [Dim::Col, Dim::Row]
        } else {
            [Dim::Row, Dim::Col]
        });
        op.dims == want
    };
    let layouts = [
        (&scores.a, false, &stmts[1]),
        (&scores.b, true, &stmts[1]),
        (&scores.acc, false, &stmts[1]),
        (&output.a, false, &stmts[n - 1]),
        (&output.b, false, &stmts[n - 1]),
        (&output.acc, false, &stmts[n - 1]),
    ];
    for (op, transposed, ctx) in layouts {
        if !laid(op, transposed) {
            return refuse(
                &ctx.stmt.name,
                format!(
                    "`{}` is not laid out as the attention program reads it ([heads.., rows, columns]; the keys [heads.., keys, depth])",
                    op.name
                ),
            );
        }
    }
    if scores.batch != output.batch || output.m != scores.m || output.k != scores.n {
        return refuse(
            &stmts[n - 1].stmt.name,
            format!(
                "does not multiply `{}` (per head {} x {}) by the values",
                name(p),
                scores.m,
                scores.n
            ),
        );
    }
    for (a, ctx) in [(s, &stmts[1]), (p, &stmts[n - 1])] {
        if kernel.array(a).role != Role::Temp {
            return refuse(
                &ctx.stmt.name,
                format!(
                    "`{}` is not a temporary (`let`); the attention program keeps it out of GM",
                    name(a)
                ),
            );
        }
    }
    let middle: BTreeSet<&str> = (all[..scalars].iter().chain(&stmts[2..n - 2]))
        .map(|c| c.stmt.name.as_str())
        .collect();
    // the output is the products' business: to the softmax it is an unused temporary
    let o = output.acc.tensor;
    let mut softmax = restrict(
        kernel,
        &middle,
        &[(s, Role::In), (p, Role::Out), (o, Role::Temp)],
    );
    let shared = share(&mut softmax, s, sizes);
    let vk = vector_kernel(&softmax, sizes)?;
    let rows: Vec<i64> = (scores.batch.iter().map(|(_, e)| *e))
        .chain([scores.m])
        .collect();
    if vk.rows != rows || vk.cols != Some(scores.n) {
        return refuse(
            &stmts[2].stmt.name,
            format!(
                "the statements between the products do not run over the rows and columns of `{}`",
                name(s)
            ),
        );
    }
    for (&a, &kind) in &vk.arrays {
        let role = softmax.array(a).role;
        let what = if a == s || a == p {
            (kind != Kind::Tile).then_some("is not a tile of the scores' shape")
        } else if a == o {
            Some("is the output, used between the products")
        } else if role.is_input() {
            // tiles loaded per block, per-key vectors and scalars once per core, whole
            (kind == Kind::Row).then_some(
                "is an input per query row; the softmax between the products reads the scores, inputs of their shape, per-key vectors and scalars",
            )
        } else if role.is_output() {
            Some("is an output written between the products")
        } else {
            None
        };
        if let Some(why) = what {
            return refuse(&stmts[2].stmt.name, format!("`{}` {why}", name(a)));
        }
    }
    if !vk.arrays.contains_key(&s) {
        return refuse(
            &stmts[2].stmt.name,
            format!(
                "the statements between the products never read `{}`",
                name(s)
            ),
        );
    }
    let heads = scores.batch.iter().map(|(_, e)| e).product();
    Ok(Some(Attention {
        scores,
        output,
        softmax,
        vk,
        heads,
        shared,
        scores_stmt: stmts[1].stmt.name.clone(),
        output_stmt: stmts[n - 1].stmt.name.clone(),
    }))
}

/// The inputs other than `s` that every statement of `k` reads at its last two loops with
/// only some of the others before them (`M[i, j]` in `S[h, i, j] += M[i, j]`), rewritten as
/// tiles of `s`'s shape read at every loop; each with the loops it kept and its extents at
/// `sizes`.
fn share(k: &mut Kernel, s: ArrayId, sizes: &BTreeMap<String, i64>) -> BTreeMap<ArrayId, Shared> {
    // every read of an input other than `s`, with the statement's loop variables
    fn reads<'e>(
        body: &'e mut [Node],
        vars: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, &'e mut Access)>,
    ) {
        for n in body {
            match n {
                Node::Loop(l) => {
                    vars.push(l.var.clone());
                    reads(&mut l.body, vars, out);
                    vars.pop();
                }
                Node::If(i) => reads(&mut i.then, vars, out),
                Node::Stmt(st) => {
                    let mut stack = vec![&mut st.rhs];
                    while let Some(e) = stack.pop() {
                        if !matches!(e.kind, ExprKind::Read(_)) {
                            stack.extend(e.children_mut());
                        } else if let ExprKind::Read(a) = &mut e.kind {
                            out.push((vars.clone(), a));
                        }
                    }
                }
            }
        }
    }
    let inputs: BTreeSet<ArrayId> = (0..k.arrays.len())
        .map(ArrayId)
        .filter(|&a| a != s && k.array(a).role == Role::In)
        .collect();
    let s_dims = k.array(s).dims.clone();
    let mut body = std::mem::take(&mut k.body);
    let mut found = Vec::new();
    reads(&mut body, &mut Vec::new(), &mut found);
    // the batch positions each candidate keeps, `None` once an access does not fit
    let mut kept: BTreeMap<ArrayId, Option<Vec<usize>>> = BTreeMap::new();
    for (vars, a) in &found {
        if !inputs.contains(&a.array) {
            continue;
        }
        let n = vars.len();
        let at: Option<Vec<usize>> = (a.indices.iter())
            .map(|i| match i {
                AffExpr::Var(Var::Loop(v)) => vars.iter().position(|w| w == v),
                _ => None,
            })
            .collect();
        let fits = at.filter(|p| {
            n == s_dims.len()
                && p.len() >= 2
                && p.len() < n
                && p[p.len() - 2..] == [n - 2, n - 1]
                && p[..p.len() - 2].windows(2).all(|w| w[0] < w[1])
        });
        let batch = fits.map(|p| p[..p.len() - 2].to_vec());
        let entry = kept.entry(a.array).or_insert_with(|| batch.clone());
        if *entry != batch {
            *entry = None;
        }
    }
    let value = |dims: &[AffExpr]| -> Option<Vec<i64>> {
        (dims.iter())
            .map(|d| crate::npu::vector::recognise::aff_value(d, sizes))
            .collect()
    };
    let Some(s_shape) = value(&s_dims) else {
        return BTreeMap::new();
    };
    let mut shared = BTreeMap::new();
    for (a, keep) in kept {
        let Some(keep) = keep else { continue };
        // its extents must be the scores' at the indices it keeps (else it is left as
        // written, and the vector path refuses the access)
        let Some(shape) = value(&k.array(a).dims) else {
            continue;
        };
        let n = s_shape.len();
        let want: Vec<i64> = (keep.iter().chain(&[n - 2, n - 1]))
            .map(|&p| s_shape[p])
            .collect();
        if shape != want {
            continue;
        }
        for (vars, acc) in found.iter_mut().filter(|(_, acc)| acc.array == a) {
            acc.indices = (vars.iter())
                .map(|v| AffExpr::Var(Var::Loop(v.clone())))
                .collect();
        }
        k.arrays[a.0].dims = s_dims.clone();
        shared.insert(a, Shared { kept: keep, shape });
    }
    drop(found);
    k.body = body;
    shared
}

/// `kernel` with only the statements named in `keep` (loops left empty removed) and the
/// roles `roles` given to those arrays.
fn restrict(kernel: &Kernel, keep: &BTreeSet<&str>, roles: &[(ArrayId, Role)]) -> Kernel {
    fn nodes(body: &[Node], keep: &BTreeSet<&str>) -> Vec<Node> {
        (body.iter())
            .filter_map(|n| match n {
                Node::Stmt(s) => keep.contains(s.name.as_str()).then(|| n.clone()),
                Node::Loop(l) => {
                    let body = nodes(&l.body, keep);
                    (!body.is_empty()).then(|| {
                        let mut l = l.clone();
                        l.body = body;
                        Node::Loop(l)
                    })
                }
                Node::If(i) => {
                    let then = nodes(&i.then, keep);
                    (!then.is_empty()).then(|| {
                        let mut i = i.clone();
                        i.then = then;
                        Node::If(i)
                    })
                }
            })
            .collect()
    }
    let mut k = kernel.clone();
    k.body = nodes(&kernel.body, keep);
    for &(a, role) in roles {
        k.arrays[a.0].role = role;
    }
    k
}
