//! A statement's body as C: its right-hand side with the exact semantics of
//! `poly::interp` (see [`super::types`] and `docs/codegen.md`), or in the user's C (see
//! [`Dialect::Source`]), and the store into its target.

use super::dialect::Dialect;
use super::types::{compute, double_literal, load, round_double, store};
use crate::CodegenError;
use frontend::ir::{
    Access, AffExpr, AssignOp, BinOp, ElemType, Expr, ExprKind, Func, Kernel, LogicOp, Role, Stmt,
    Type,
};
use std::collections::BTreeSet;
use std::ops::Range;

/// Whether an array is passed by value (a 0-d input) and how its accesses are checked.
pub struct Arrays<'k> {
    /// The kernel.
    pub kernel: &'k Kernel,
    /// Per statement, per access (the target first, then the right-hand side's reads left
    /// to right): whether its indices are proven within the array's extents.
    pub in_bounds: &'k dyn Fn(&str, usize) -> bool,
    /// The reads `(statement, access position)` of a statement's own target array proven
    /// never to read the element it writes, at the instances writing that element.
    pub apart: &'k BTreeSet<(String, usize)>,
    /// The C written.
    pub dialect: Dialect,
}

/// Whether array number `k` is passed by value (a scalar input).
pub fn by_value(kernel: &Kernel, k: usize) -> bool {
    let a = &kernel.arrays[k];
    a.dims.is_empty() && a.role == Role::In
}

/// The name of the hoisted extent of dimension `d` of array number `k`.
pub fn extent_name(k: usize, d: usize) -> String {
    format!("pc_ext{k}_{d}")
}

/// An affine expression as a C `long` expression (loop variables and parameters by their C
/// names).
pub fn affine(e: &AffExpr) -> String {
    affine_with(e, Dialect::Kernel, &|_| None)
}

/// An affine expression as a C `long` expression in `dialect` (loop variables and
/// parameters by their names there).
pub fn affine_in(dialect: Dialect, e: &AffExpr) -> String {
    affine_with(e, dialect, &|_| None)
}

/// An affine expression as a C `long` expression, with the loop variables that `loop_var`
/// spells (by their IR names) spelled so, the others and the parameters by their names in
/// `dialect`.
fn affine_with(e: &AffExpr, dialect: Dialect, loop_var: &dyn Fn(&str) -> Option<String>) -> String {
    let f = |a: &AffExpr| affine_with(a, dialect, loop_var);
    match e {
        AffExpr::Const(c) => format!("({c}L)"),
        AffExpr::Var(frontend::ir::Var::Loop(v)) => match loop_var(v) {
            None => dialect.name(v),
            Some(s) if s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => s,
            Some(s) => format!("({s})"),
        },
        AffExpr::Var(v) => dialect.name(v.name()),
        AffExpr::Add(a, b) => format!("({} + {})", f(a), f(b)),
        AffExpr::Sub(a, b) => format!("({} - {})", f(a), f(b)),
        AffExpr::Neg(a) => format!("(-({}))", f(a)),
        AffExpr::Mul(c, a) => format!("({c}L * {})", f(a)),
        AffExpr::FloorDiv(a, c) => format!("pc_floord({}, {c}L)", f(a)),
        AffExpr::CeilDiv(a, c) => format!("pc_ceild({}, {c}L)", f(a)),
        AffExpr::Mod(a, c) => format!("pc_mod({}, {c}L)", f(a)),
        AffExpr::Min(a, b) => format!("pc_min({}, {})", f(a), f(b)),
        AffExpr::Max(a, b) => format!("pc_max({}, {})", f(a), f(b)),
    }
}

/// One access of a statement instance, its element spelled in the enclosing loops' terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementAccess {
    /// The access position (see [`Replacement`]).
    pub position: usize,
    /// The array.
    pub array: usize,
    /// Whether it is the statement's target.
    pub write: bool,
    /// Whether the array is an input the kernel never writes.
    pub read_only: bool,
    /// Whether its indices are proven within the array's extents.
    pub in_bounds: bool,
    /// Whether it is a read of the statement's target array proven never to read the element
    /// written, at the instances writing that element ([`Arrays::apart`]).
    pub apart: bool,
    /// The positions of the statement iterators its indices mention.
    pub iterators: Vec<usize>,
    /// The positions of the statement iterators its last (contiguous) index mentions.
    pub last_index_iterators: Vec<usize>,
    /// The element as a C lvalue with each statement iterator replaced by its argument.
    pub element: String,
    /// The C storage type of the array's elements.
    pub storage: &'static str,
    /// The size of one element in bytes.
    pub bytes: usize,
}

/// Every access of an instance of `stmt` (target first, then the reads left to right), where
/// `iterators` are the statement's loop variables and `args` the C expressions they take.
pub fn element_accesses(
    arrays: &Arrays<'_>,
    stmt: &Stmt,
    iterators: &[String],
    args: &[String],
) -> Vec<ElementAccess> {
    let kernel = arrays.kernel;
    let reads = poly::model::rhs_reads(stmt);
    let arg = spelling(iterators, args);
    std::iter::once(&stmt.target)
        .chain(reads)
        .enumerate()
        .map(|(position, access)| {
            let k = access.array.0;
            let array = &kernel.arrays[k];
            let positions = |indices: &[AffExpr]| {
                let mut names = Vec::new();
                indices.iter().for_each(|i| loop_vars(i, &mut names));
                (names.iter())
                    .filter_map(|n| iterators.iter().position(|it| it == n))
                    .collect()
            };
            let indices: Vec<String> = (access.indices.iter())
                .map(|i| affine_with(i, arrays.dialect, &arg))
                .collect();
            ElementAccess {
                position,
                array: k,
                write: position == 0,
                read_only: array.role == Role::In,
                in_bounds: (arrays.in_bounds)(&stmt.name, position),
                apart: (arrays.apart).contains(&(stmt.name.clone(), position)),
                iterators: positions(&access.indices),
                last_index_iterators: positions(
                    &access.indices[access.indices.len().saturating_sub(1)..],
                ),
                element: element(arrays, k, indices),
                storage: arrays.dialect.storage(array.elem),
                bytes: array.elem.size_bytes(),
            }
        })
        .collect()
}

/// Array `k`'s element at `indices` (C expressions) as a C lvalue: in the kernel dialect
/// flattened in C order, in the source dialect subscripted as a C array.
fn element(arrays: &Arrays<'_>, k: usize, indices: Vec<String>) -> String {
    let kernel = arrays.kernel;
    let name = arrays.dialect.name(&kernel.arrays[k].name);
    if arrays.dialect == Dialect::Source {
        return indices.iter().fold(name, |e, i| format!("{e}[{i}]"));
    }
    if indices.is_empty() {
        return if by_value(kernel, k) {
            name
        } else {
            format!("{name}[0]")
        };
    }
    let mut flat = String::new();
    for (d, i) in indices.into_iter().enumerate() {
        flat = if d == 0 {
            i
        } else {
            format!("({flat}) * {} + {i}", extent_name(k, d))
        };
    }
    format!("{name}[{flat}]")
}

/// A part of a statement that a C lvalue can stand for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// An access, by position: the target 0, the right-hand side's reads from 1, left to
    /// right (an accumulator held in a local for the target, a packed panel for a read).
    Access(usize),
    /// A subexpression of the right-hand side, by its number in a pre-order walk from 0 (a
    /// panel of [`InputExpression`] values); the reads inside it are not made.
    Expression(usize),
}

/// A C lvalue that stands for a part of a statement.
pub type Replacement<'s> = (Part, &'s str);

/// A subexpression of a statement's right-hand side that computes from inputs alone: an
/// operation on floating-point values whose leaves are literals and reads of inputs the
/// kernel never writes, proven in bounds (gemm's `alpha * A[i, k]`). It has the same value
/// wherever and however often it is evaluated, and evaluating it cannot fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputExpression {
    /// Its nodes' numbers in a pre-order walk of the right-hand side, its own first (see
    /// [`Part::Expression`]).
    pub nodes: Range<usize>,
    /// The access positions of its reads.
    pub reads: Range<usize>,
    /// The positions of the statement iterators its reads' indices mention.
    pub iterators: Vec<usize>,
    /// Its value as a C expression with each statement iterator replaced by its argument.
    pub value: String,
    /// The C type of its value.
    pub storage: &'static str,
    /// The size of its value in bytes.
    pub bytes: usize,
}

/// Every [`InputExpression`] of an instance of `stmt` whose root is an operation, outermost
/// first (an expression and the ones inside it are all listed), where `iterators` are the
/// statement's loop variables, `args` the C expressions they take and `accesses` the
/// instance's [`element_accesses`].
pub fn input_expressions(
    arrays: &Arrays<'_>,
    stmt: &Stmt,
    iterators: &[String],
    args: &[String],
    accesses: &[ElementAccess],
) -> Result<Vec<InputExpression>, CodegenError> {
    let arg = spelling(iterators, args);
    // Pre-order: every node with its first access position and its node count.
    let mut nodes: Vec<(&Expr, usize, usize)> = Vec::new();
    let mut position = 1;
    walk(&stmt.rhs, &mut nodes, &mut position);
    let mut out = Vec::new();
    for (node, &(e, first, size)) in nodes.iter().enumerate() {
        let float = matches!(e.ty, Type::Elem(ElemType::F64 | ElemType::F32));
        let subtree = &nodes[node..node + size];
        let reads: Vec<&ElementAccess> = (subtree.iter())
            .filter(|(e, ..)| matches!(e.kind, ExprKind::Read(_)))
            .map(|&(_, p, _)| &accesses[p])
            .collect();
        let pure = subtree.iter().all(|(e, ..)| {
            matches!(
                e.kind,
                ExprKind::Literal(_) | ExprKind::Read(_) | ExprKind::Neg(_) | ExprKind::Binary(..)
            )
        });
        if !float
            || !matches!(e.kind, ExprKind::Binary(..) | ExprKind::Neg(_))
            || !pure
            || !reads.iter().all(|a| a.read_only && a.in_bounds)
        {
            continue;
        }
        let mut used: Vec<usize> = reads.iter().flat_map(|a| a.iterators.clone()).collect();
        used.sort_unstable();
        used.dedup();
        let mut emitter = Emitter {
            next_access: first,
            next_node: node,
            spelled: &arg,
            ..Emitter::new(arrays, stmt, &[])
        };
        let value = emitter.expr(e)?;
        let Type::Elem(t) = e.ty else { continue };
        out.push(InputExpression {
            nodes: node..node + size,
            reads: first..first + reads.len(),
            iterators: used,
            value,
            storage: arrays.dialect.storage(t),
            bytes: t.size_bytes(),
        });
    }
    Ok(out)
}
/// The C statement `target = value;` of `stmt`, with the accesses of `replaced` spelled as
/// the lvalues given there instead of the array elements.
pub fn statement(
    arrays: &Arrays<'_>,
    stmt: &Stmt,
    replaced: &[Replacement<'_>],
) -> Result<String, CodegenError> {
    let mut e = Emitter::new(arrays, stmt, replaced);
    let target = e.lvalue(&stmt.target);
    let elem = arrays.kernel.array(stmt.target.array).elem;
    let rhs = e.expr(&stmt.rhs)?;
    let current = || load(elem, &target);
    let d = arrays.dialect;
    let value = match stmt.op {
        AssignOp::Assign => rhs,
        AssignOp::Add => binary(d, elem, BinOp::Add, &current(), &rhs),
        AssignOp::Sub => binary(d, elem, BinOp::Sub, &current(), &rhs),
        AssignOp::Mul => binary(d, elem, BinOp::Mul, &current(), &rhs),
        AssignOp::Div => binary(d, elem, BinOp::Div, &current(), &rhs),
        AssignOp::Max => {
            call(d, elem, Func::Max, &[current(), rhs]).map_err(|r| e.unsupported(r))?
        }
        AssignOp::Min => {
            call(d, elem, Func::Min, &[current(), rhs]).map_err(|r| e.unsupported(r))?
        }
    };
    Ok(format!("{target} = {};", store(elem, &value)))
}

/// A statement whose target element can live in a local accumulator while a loop runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accumulable {
    /// The C storage type of the target's elements.
    pub storage: &'static str,
    /// Per target index: the position of the statement iterator that is exactly that index
    /// (every index is one, and no iterator twice: the target is injective in them).
    pub index_iterators: Vec<usize>,
    /// The C names of those iterators, in the same order.
    pub index_names: Vec<String>,
    /// The target element as a C lvalue in the C names of the statement's iterators.
    pub lvalue: String,
    /// The access positions (see [`Part::Access`]) of the right-hand side's reads of the
    /// target element itself (atax's `tmp[i] = tmp[i] + A[i][j] * x[j]`), which read the
    /// accumulator too.
    pub self_reads: Vec<usize>,
}

/// How `stmt`'s target can be held in an accumulator: only when each of its indices is a
/// distinct iterator, it is proven within the array's extents, and the right-hand side
/// reads nothing of the target's array but the target element itself (so the accumulator
/// is the only copy read while it lives). `iterators` are the names of the statement's
/// enclosing loop variables, outermost first.
pub fn accumulable(arrays: &Arrays<'_>, stmt: &Stmt, iterators: &[String]) -> Option<Accumulable> {
    let target = &stmt.target;
    if !(arrays.in_bounds)(&stmt.name, 0) || target.indices.is_empty() {
        return None;
    }
    let mut index_iterators = Vec::new();
    for index in &target.indices {
        let AffExpr::Var(frontend::ir::Var::Loop(v)) = index else {
            return None;
        };
        let p = iterators.iter().position(|it| it == v)?;
        if index_iterators.contains(&p) {
            return None;
        }
        index_iterators.push(p);
    }
    let mut self_reads = Vec::new();
    for (k, read) in poly::model::rhs_reads(stmt).iter().enumerate() {
        if read.array == target.array {
            if read.indices != target.indices {
                return None;
            }
            self_reads.push(k + 1);
        }
    }
    let mut e = Emitter::new(arrays, stmt, &[]);
    Some(Accumulable {
        storage: (arrays.dialect).storage(arrays.kernel.array(target.array).elem),
        index_names: index_iterators
            .iter()
            .map(|&p| arrays.dialect.name(&iterators[p]))
            .collect(),
        index_iterators,
        lvalue: e.lvalue(target),
        self_reads,
    })
}

/// How the loop variables named `iterators` are spelled when they take the C expressions
/// `args`.
fn spelling<'a>(
    iterators: &'a [String],
    args: &'a [String],
) -> impl Fn(&str) -> Option<String> + 'a {
    |v: &str| {
        let p = iterators.iter().position(|it| it == v)?;
        args.get(p).cloned()
    }
}

/// Appends the nodes of `e` in pre-order to `nodes`, each with the position of its first
/// access (`position`: the next read's) and its node count.
fn walk<'e>(e: &'e Expr, nodes: &mut Vec<(&'e Expr, usize, usize)>, position: &mut usize) {
    let at = nodes.len();
    nodes.push((e, *position, 1));
    if matches!(e.kind, ExprKind::Read(_)) {
        *position += 1;
    }
    // Left to right: the order [`Emitter`] prints them in.
    for c in e.children() {
        walk(c, nodes, position);
    }
    nodes[at].2 = nodes.len() - at;
}

/// The loop variables `e` mentions, each once, added to `out` in order of appearance.
fn loop_vars(e: &AffExpr, out: &mut Vec<String>) {
    match e {
        AffExpr::Const(_) | AffExpr::Var(frontend::ir::Var::Param(_)) => {}
        AffExpr::Var(frontend::ir::Var::Loop(v)) => {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
        AffExpr::Neg(a)
        | AffExpr::Mul(_, a)
        | AffExpr::FloorDiv(a, _)
        | AffExpr::CeilDiv(a, _)
        | AffExpr::Mod(a, _) => loop_vars(a, out),
        AffExpr::Add(a, b) | AffExpr::Sub(a, b) | AffExpr::Min(a, b) | AffExpr::Max(a, b) => {
            loop_vars(a, out);
            loop_vars(b, out);
        }
    }
}

struct Emitter<'a, 'k> {
    arrays: &'a Arrays<'k>,
    stmt: &'a Stmt,
    /// The position of the next access printed.
    next_access: usize,
    /// The pre-order number of the next right-hand side node printed.
    next_node: usize,
    /// Parts spelled otherwise.
    replaced: &'a [Replacement<'a>],
    /// How loop variables are spelled in indices (`None`: by their C names).
    spelled: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a, 'k> Emitter<'a, 'k> {
    /// An emitter of `stmt` from its target on, spelling `replaced` as given and loop
    /// variables by their C names.
    fn new(arrays: &'a Arrays<'k>, stmt: &'a Stmt, replaced: &'a [Replacement<'a>]) -> Self {
        Emitter {
            arrays,
            stmt,
            next_access: 0,
            next_node: 0,
            replaced,
            spelled: &|_| None,
        }
    }
    fn unsupported(&self, reason: String) -> CodegenError {
        CodegenError::Unsupported(format!("statement {}: {reason}", self.stmt.name))
    }

    /// The element accessed, as a C lvalue of the storage type.
    fn lvalue(&mut self, access: &Access) -> String {
        let k = access.array.0;
        let position = self.next_access;
        let checked = !(self.arrays.in_bounds)(&self.stmt.name, position);
        self.next_access += 1;
        if let Some((_, lvalue)) =
            (self.replaced.iter()).find(|(p, _)| *p == Part::Access(position))
        {
            return (*lvalue).to_owned();
        }
        let dialect = self.arrays.dialect;
        let indices = (access.indices.iter().enumerate())
            .map(|(d, index)| {
                let index = affine_with(index, dialect, self.spelled);
                match checked {
                    true => format!("pc_check({index}, {})", extent_name(k, d)),
                    false => index,
                }
            })
            .collect();
        element(self.arrays, k, indices)
    }

    fn elem(&self, e: &Expr) -> Result<ElemType, CodegenError> {
        match e.ty {
            Type::Elem(t) => Ok(t),
            Type::Bool => Err(self.unsupported("a boolean where a number is expected".into())),
        }
    }

    fn expr(&mut self, e: &Expr) -> Result<String, CodegenError> {
        let dialect = self.arrays.dialect;
        if dialect == Dialect::Source && matches!(e.ty, Type::Elem(ElemType::F16 | ElemType::BF16))
        {
            return Err(self.unsupported(format!("{} has no C type", self.elem(e)?)));
        }
        let node = self.next_node;
        self.next_node += 1;
        if let Some((_, lvalue)) =
            (self.replaced.iter()).find(|(p, _)| *p == Part::Expression(node))
        {
            // The subexpression's reads are not made: skip their positions and its nodes.
            let mut nodes = Vec::new();
            let mut after = self.next_access;
            walk(e, &mut nodes, &mut after);
            self.next_access = after;
            self.next_node = node + nodes.len();
            return Ok((*lvalue).to_owned());
        }
        Ok(match &e.kind {
            ExprKind::Literal(v) => match e.ty {
                Type::Bool => (if *v != 0.0 { "1" } else { "0" }).to_owned(),
                Type::Elem(t) if dialect == Dialect::Source => source_literal(t, *v),
                // Rounded to the type once, as the interpreter does.
                Type::Elem(t) => round_double(t, &double_literal(*v)),
            },
            ExprKind::Index(index) => {
                let index = affine_with(index, dialect, self.spelled);
                match self.elem(e)? {
                    t if dialect == Dialect::Source => {
                        format!("(({})({index}))", dialect.storage(t))
                    }
                    t @ (ElemType::I32 | ElemType::I8) => format!("(({})({index}))", compute(t)),
                    t => round_double(t, &format!("(double)({index})")),
                }
            }
            ExprKind::Read(access) => {
                let t = self.arrays.kernel.array(access.array).elem;
                load(t, &self.lvalue(access))
            }
            ExprKind::Neg(x) => {
                let t = self.elem(e)?;
                let x = self.expr(x)?;
                match t {
                    ElemType::I8 if dialect == Dialect::Source => {
                        format!("((signed char)(-({x})))")
                    }
                    _ if dialect == Dialect::Source => format!("(-({x}))"),
                    ElemType::I32 => format!("((int32_t)(0u - (uint32_t)({x})))"),
                    ElemType::I8 => format!("((int8_t)(uint8_t)(0u - (uint32_t)({x})))"),
                    _ => format!("(-({x}))"),
                }
            }
            ExprKind::Binary(op, x, y) => {
                let t = self.elem(e)?;
                let (x, y) = (self.expr(x)?, self.expr(y)?);
                binary(dialect, t, *op, &x, &y)
            }
            ExprKind::Compare(op, x, y) => {
                let (x, y) = (self.expr(x)?, self.expr(y)?);
                format!("({x} {} {y})", op.symbol())
            }
            ExprKind::Logic(op, x, y) => {
                let (x, y) = (self.expr(x)?, self.expr(y)?);
                let sym = match op {
                    LogicOp::And => "&&",
                    LogicOp::Or => "||",
                };
                format!("({x} {sym} {y})")
            }
            ExprKind::Not(x) => format!("(!{})", self.expr(x)?),
            ExprKind::Select(c, x, y) => {
                let (c, x, y) = (self.expr(c)?, self.expr(x)?, self.expr(y)?);
                format!("({c} ? {x} : {y})")
            }
            ExprKind::Call(func, args) => {
                let t = self.elem(e)?;
                let args = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Result<Vec<_>, _>>()?;
                call(dialect, t, *func, &args).map_err(|r| self.unsupported(r))?
            }
            ExprKind::Cast(x) => {
                let t = self.elem(e)?;
                let from_float = matches!(x.ty, Type::Elem(s) if s.is_float());
                let x = self.expr(x)?;
                match t {
                    _ if dialect == Dialect::Source => format!("(({})({x}))", dialect.storage(t)),
                    ElemType::I32 if from_float => format!("pc_to_i32((double)({x}))"),
                    ElemType::I8 if from_float => format!("pc_to_i8((double)({x}))"),
                    _ => round_double(t, &format!("(double)({x})")),
                }
            }
        })
    }
}

/// A literal of type `t` in the source dialect: C's own literal of that type.
fn source_literal(t: ElemType, v: f64) -> String {
    match t {
        ElemType::F32 if v.is_finite() => format!("{:e}f", v as f32),
        ElemType::I32 if v == f64::from(i32::MIN) => "(-2147483647 - 1)".to_owned(),
        ElemType::I32 => format!("{}", v as i32),
        ElemType::I8 => format!("((signed char){})", v as i8),
        _ => double_literal(v),
    }
}

/// `x op y` in type `t`.
fn binary(dialect: Dialect, t: ElemType, op: BinOp, x: &str, y: &str) -> String {
    let sym = match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
    };
    if dialect == Dialect::Source {
        // C's own arithmetic (the C front end made every conversion explicit); only `char`
        // arithmetic, which C does not have, is converted back.
        return match t {
            ElemType::I8 => format!("((signed char)({x} {sym} {y}))"),
            _ => format!("({x} {sym} {y})"),
        };
    }
    match (t, op) {
        (ElemType::F64 | ElemType::F32, _) => format!("({x} {sym} {y})"),
        (ElemType::F16 | ElemType::BF16, _) => {
            round_double(t, &format!("(double)({x}) {sym} (double)({y})"))
        }
        (ElemType::I32, BinOp::Div) => format!("pc_div_i32({x}, {y})"),
        (ElemType::I8, BinOp::Div) => format!("pc_div_i8({x}, {y})"),
        (ElemType::I32, _) => format!("((int32_t)((uint32_t)({x}) {sym} (uint32_t)({y})))"),
        (ElemType::I8, _) => {
            format!("((int8_t)(uint8_t)((uint32_t)({x}) {sym} (uint32_t)({y})))")
        }
    }
}

/// A built-in function in type `t`, or why it is not defined there.
fn call(dialect: Dialect, t: ElemType, func: Func, args: &[String]) -> Result<String, String> {
    if args.len() != func.arity() {
        return Err(format!(
            "`{}` takes {} argument(s), {} given",
            func.name(),
            func.arity(),
            args.len()
        ));
    }
    if dialect == Dialect::Source {
        return source_call(t, func, args);
    }
    let x = &args[0];
    let int = !t.is_float();
    Ok(match func {
        Func::Max | Func::Min => {
            let y = &args[1];
            let which = if func == Func::Max { "max" } else { "min" };
            match t {
                ElemType::F64 => format!("pc_f{which}_d({x}, {y})"),
                ElemType::F32 | ElemType::F16 | ElemType::BF16 => {
                    format!("pc_f{which}_f({x}, {y})")
                }
                _ => format!("(({})pc_{which}_i32({x}, {y}))", compute(t)),
            }
        }
        Func::Abs => match t {
            ElemType::F64 => format!("fabs({x})"),
            ElemType::I32 => format!("pc_abs_i32({x})"),
            ElemType::I8 => format!("pc_abs_i8({x})"),
            _ => format!("fabsf({x})"),
        },
        _ if int => return Err(format!("`{}` is not defined on {t}", func.name())),
        Func::Floor => match t {
            ElemType::F64 => format!("floor({x})"),
            // The floor of a value of the type is a value of the type.
            _ => format!("floorf({x})"),
        },
        Func::Sqrt => match t {
            ElemType::F64 => format!("sqrt({x})"),
            ElemType::F32 => format!("sqrtf({x})"),
            _ => round_double(t, &format!("sqrt((double)({x}))")),
        },
        Func::Exp | Func::Log | Func::Tanh | Func::Pow => {
            let name = match func {
                Func::Exp => "exp",
                Func::Log => "log",
                Func::Tanh => "tanh",
                _ => "pow",
            };
            let call_args = args.join(", ");
            match t {
                ElemType::F64 => format!("{name}({call_args})"),
                ElemType::F32 => format!("{name}f({call_args})"),
                _ => round_double(t, &format!("(double){name}f({call_args})")),
            }
        }
    })
}

/// A built-in function in type `t` in the source dialect: C's math functions of that type.
fn source_call(t: ElemType, func: Func, args: &[String]) -> Result<String, String> {
    let x = &args[0];
    let int = !t.is_float();
    Ok(match func {
        Func::Max | Func::Min if int => {
            let y = &args[1];
            let op = if func == Func::Max { ">" } else { "<" };
            format!("({x} {op} {y} ? {x} : {y})")
        }
        Func::Abs if int => format!("abs({x})"),
        _ if int => return Err(format!("`{}` is not defined on {t}", func.name())),
        _ => {
            let name = match func {
                Func::Max => "fmax",
                Func::Min => "fmin",
                Func::Abs => "fabs",
                Func::Exp => "exp",
                Func::Log => "log",
                Func::Sqrt => "sqrt",
                Func::Tanh => "tanh",
                Func::Pow => "pow",
                Func::Floor => "floor",
            };
            let suffix = if t == ElemType::F64 { "" } else { "f" };
            format!("{name}{suffix}({})", args.join(", "))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `examples/polybench/gemm.pk`'s kernel.
    fn gemm() -> Kernel {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/polybench/gemm.pk");
        let file = frontend::read_source(path).unwrap();
        frontend::compile(&file).unwrap().remove(0)
    }

    /// An input expression's nodes, reads, iterators and value.
    type Found = (Range<usize>, Range<usize>, Vec<usize>, String);

    /// The input expressions of gemm's update at `(c0, c1, c2)`, with the reads of `A`
    /// (access position 2) proven in bounds or not.
    fn gemm_inputs(a_in_bounds: bool) -> Vec<Found> {
        let kernel = gemm();
        let in_bounds = |_: &str, position: usize| a_in_bounds || position != 2;
        let arrays = Arrays {
            kernel: &kernel,
            in_bounds: &in_bounds,
            apart: &BTreeSet::new(),
            dialect: Dialect::Kernel,
        };
        let statements = kernel.statements();
        let update = statements.iter().find(|s| s.enclosing.len() == 3).unwrap();
        let iterators = ["i", "k", "j"].map(String::from);
        let args = ["c0", "c1", "c2"].map(String::from);
        let accesses = element_accesses(&arrays, update.stmt, &iterators, &args);
        let found = input_expressions(&arrays, update.stmt, &iterators, &args, &accesses);
        (found.unwrap().into_iter())
            .map(|e| (e.nodes, e.reads, e.iterators, e.value))
            .collect()
    }

    #[test]
    fn products_of_inputs_are_found_outermost_first() {
        // `(alpha * A[i, k]) * B[k, j]`: nodes 0 (the whole), 1 (`alpha * A`), 2 (`alpha`),
        // 3 (`A`), 4 (`B`); reads at positions 1 (`alpha`), 2 (`A`) and 3 (`B`).
        let alpha_a = "(alpha * A[(c0) * pc_ext3_1 + c1])";
        assert_eq!(
            gemm_inputs(true),
            [
                (
                    0..5,
                    1..4,
                    vec![0, 1, 2],
                    format!("({alpha_a} * B[(c1) * pc_ext4_1 + c2])")
                ),
                (1..4, 1..3, vec![0, 1], alpha_a.to_owned()),
            ]
        );
        // A read that could fault makes every expression around it unfit.
        assert_eq!(gemm_inputs(false), []);
    }

    #[test]
    fn a_replaced_expression_skips_its_reads() {
        let kernel = gemm();
        let in_bounds = |_: &str, _: usize| true;
        let arrays = Arrays {
            kernel: &kernel,
            in_bounds: &in_bounds,
            apart: &BTreeSet::new(),
            dialect: Dialect::Kernel,
        };
        let statements = kernel.statements();
        let update = statements.iter().find(|s| s.enclosing.len() == 3).unwrap();
        let replaced = [
            (Part::Expression(1), "pa[k][i]"),
            (Part::Access(3), "pb[k][j]"),
        ];
        let c = statement(&arrays, update.stmt, &replaced).unwrap();
        // `B` keeps its position 3 although `alpha` and `A` (1 and 2) were not printed.
        assert!(
            c.ends_with("= (C[(i) * pc_ext2_1 + j] + (pa[k][i] * pb[k][j]));"),
            "{c}"
        );
    }

    #[test]
    fn arithmetic_follows_each_type() {
        assert_eq!(
            binary(Dialect::Kernel, ElemType::F64, BinOp::Add, "a", "b"),
            "(a + b)"
        );
        assert_eq!(
            binary(Dialect::Kernel, ElemType::F16, BinOp::Mul, "a", "b"),
            "pc_rf16((double)(a) * (double)(b))"
        );
        assert_eq!(
            binary(Dialect::Kernel, ElemType::I8, BinOp::Add, "a", "b"),
            "((int8_t)(uint8_t)((uint32_t)(a) + (uint32_t)(b)))"
        );
        assert_eq!(
            binary(Dialect::Kernel, ElemType::I32, BinOp::Div, "a", "b"),
            "pc_div_i32(a, b)"
        );
        assert!(call(Dialect::Kernel, ElemType::I32, Func::Exp, &["x".into()]).is_err());
        assert_eq!(
            call(Dialect::Kernel, ElemType::BF16, Func::Exp, &["x".into()]).unwrap(),
            "pc_rbf16((double)expf(x))"
        );
    }
}
