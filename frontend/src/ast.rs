//! The surface syntax tree, as written (before name resolution and lowering).

use crate::ir::{AssignOp, CmpOp, ElemType, LogicOp};
use crate::span::Span;

/// A parsed file: its kernels in order.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    /// The kernels.
    pub kernels: Vec<KernelDecl>,
}

/// A name and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// What a top-level declaration declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeclKind {
    /// `kernel`: a program to compile.
    Kernel,
    /// `intrinsic`: a hardware instruction described as a small kernel whose arrays are its
    /// operands, each in a tier of the machine (`@ TIER`).
    Intrinsic,
}

impl DeclKind {
    /// The keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            DeclKind::Kernel => "kernel",
            DeclKind::Intrinsic => "intrinsic",
        }
    }
}

/// `kernel NAME(args) -> (outputs) params ... where ... { body }` (or `intrinsic ...`).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelDecl {
    /// `kernel` or `intrinsic`.
    pub kind: DeclKind,
    /// The kernel's name.
    pub name: Ident,
    /// The arguments.
    pub args: Vec<Arg>,
    /// The `-> (...)` outputs.
    pub outputs: Vec<ArrayDecl>,
    /// The parameters.
    pub params: Vec<ParamDecl>,
    /// The `where` constraint.
    pub constraint: Option<Expr>,
    /// The body.
    pub body: Vec<Item>,
    /// The whole kernel.
    pub span: Span,
}

/// A role qualifier as written on an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qualifier {
    /// `in`
    In,
    /// `out`
    Out,
    /// `inout`
    InOut,
}

impl Qualifier {
    /// The keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            Qualifier::In => "in",
            Qualifier::Out => "out",
            Qualifier::InOut => "inout",
        }
    }
}

/// An argument: an array declaration with an optional role qualifier.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// `in`/`out`/`inout`, if written.
    pub qualifier: Option<Qualifier>,
    /// The array.
    pub decl: ArrayDecl,
}

/// `NAME: TYPE[extents]` (no extents: a scalar).
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayDecl {
    /// The array's name.
    pub name: Ident,
    /// Its element type.
    pub elem: ElemType,
    /// Its extents.
    pub dims: Vec<Expr>,
    /// `@ TIER`: the memory tier an intrinsic's operand lives in.
    pub tier: Option<Ident>,
    /// The whole declaration.
    pub span: Span,
}

/// `NAME [= DEFAULT]` in `params`.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    /// The parameter's name.
    pub name: Ident,
    /// Its default value.
    pub default: Option<i64>,
}

/// An item of a block.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `let NAME: TYPE[...];`
    Let(ArrayDecl),
    /// A `for` loop.
    For(ForLoop),
    /// An `if`.
    If(IfItem),
    /// A statement.
    Stmt(StmtDecl),
}

/// Calls `f` on every item of `items` and of the blocks nested in them, in textual order.
pub fn walk_items<'a>(items: &'a [Item], f: &mut impl FnMut(&'a Item)) {
    for item in items {
        f(item);
        match item {
            Item::Let(_) | Item::Stmt(_) => {}
            Item::For(l) => walk_items(&l.body, f),
            Item::If(i) => walk_if(i, f),
        }
    }
}

fn walk_if<'a>(i: &'a IfItem, f: &mut impl FnMut(&'a Item)) {
    walk_items(&i.then, f);
    match &i.otherwise {
        None => {}
        Some(Else::Block(b)) => walk_items(b, f),
        Some(Else::If(inner)) => walk_if(inner, f),
    }
}

/// `for VAR in LO..HI [step S] { ... }` or `for VAR in (LO..HI).rev() ...`.
#[derive(Clone, Debug, PartialEq)]
pub struct ForLoop {
    /// The loop variable.
    pub var: Ident,
    /// Inclusive lower bound.
    pub lower: Expr,
    /// Exclusive upper bound.
    pub upper: Expr,
    /// Whether written `(LO..HI).rev()`.
    pub reverse: bool,
    /// The `step` literal and its span, if written.
    pub step: Option<(i64, Span)>,
    /// The body.
    pub body: Vec<Item>,
    /// The whole loop.
    pub span: Span,
}

/// `if COND { ... } [else ...]`.
#[derive(Clone, Debug, PartialEq)]
pub struct IfItem {
    /// The condition.
    pub cond: Expr,
    /// The `then` block.
    pub then: Vec<Item>,
    /// The `else` part.
    pub otherwise: Option<Else>,
    /// The whole `if`.
    pub span: Span,
}

/// What follows `else`.
#[derive(Clone, Debug, PartialEq)]
pub enum Else {
    /// `else { ... }`
    Block(Vec<Item>),
    /// `else if ...`
    If(Box<IfItem>),
}

/// `[LABEL:] TARGET OP RHS;`
#[derive(Clone, Debug, PartialEq)]
pub struct StmtDecl {
    /// The label, if written.
    pub label: Option<Ident>,
    /// The array written.
    pub target: Ident,
    /// The target's indices.
    pub indices: Vec<Expr>,
    /// The assignment operator.
    pub op: AssignOp,
    /// The right-hand side.
    pub rhs: Expr,
    /// The whole statement.
    pub span: Span,
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where.
    pub span: Span,
}

/// An arithmetic operator as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%` (affine expressions only)
    Mod,
}

impl ArithOp {
    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Mod => "%",
        }
    }
}

/// A reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// `sum`
    Sum,
    /// `prod`
    Prod,
    /// `max`
    Max,
    /// `min`
    Min,
}

impl ReduceOp {
    /// The keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
    /// The operator named by `word`, if any.
    pub fn from_keyword(word: &str) -> Option<ReduceOp> {
        [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min]
            .into_iter()
            .find(|r| r.keyword() == word)
    }
    /// The assignment operator of the update statement it lowers to.
    pub fn update_op(self) -> AssignOp {
        match self {
            ReduceOp::Sum => AssignOp::Add,
            ReduceOp::Prod => AssignOp::Mul,
            ReduceOp::Max => AssignOp::Max,
            ReduceOp::Min => AssignOp::Min,
        }
    }
}

/// The forms of [`Expr`].
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal (non-negative; `-3` is a negation).
    Int(i64),
    /// A float literal (non-negative, finite).
    Float(f64),
    /// A bare name.
    Name(String),
    /// `A[i, j]`
    Index(Ident, Vec<Expr>),
    /// `f(a, b)`: a built-in function, a cast `f32(x)`, or `floor`/`ceil`.
    Call(Ident, Vec<Expr>),
    /// `-e`
    Neg(Box<Expr>),
    /// `not e`
    Not(Box<Expr>),
    /// `a + b` etc.
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    /// `a < b` etc.
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    /// `a and b`, `a or b`
    Logic(LogicOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `sum(k, l) body`
    Reduce(ReduceOp, Vec<Ident>, Box<Expr>),
}

impl Expr {
    /// Calls `f` on this expression and every sub-expression, parents first.
    pub fn walk(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Name(_) => {}
            ExprKind::Index(_, args) | ExprKind::Call(_, args) => {
                args.iter().for_each(|a| a.walk(f))
            }
            ExprKind::Neg(e) | ExprKind::Not(e) | ExprKind::Reduce(_, _, e) => e.walk(f),
            ExprKind::Arith(_, a, b) | ExprKind::Compare(_, a, b) | ExprKind::Logic(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Select(c, a, b) => {
                c.walk(f);
                a.walk(f);
                b.walk(f);
            }
        }
    }
}
