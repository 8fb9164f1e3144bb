//! The checked kernel: what the front end hands to the polyhedral stage.
//!
//! Everything here has already been checked: names are resolved, types agree, every index,
//! bound and guard is (quasi-)affine in the loop variables and parameters. Tensor-expression
//! kernels are lowered to this same form (a reduction becomes an initialisation statement and
//! an update statement), so later stages see one kind of program only.
//!
//! The IR knows nothing of isl: affine expressions are small trees that `poly` prints in isl's
//! syntax.

use crate::span::Span;
use std::fmt;

/// A whole checked kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The kernel's name (`kernel gemm(...)`).
    pub name: String,
    /// Symbolic size parameters in declaration order.
    pub params: Vec<Param>,
    /// Constraints on the parameters (`where N >= 16`), all of which must hold.
    pub param_constraints: Vec<Cond>,
    /// Every array: arguments, outputs and `let` temporaries. Indexed by [`ArrayId`].
    pub arrays: Vec<Array>,
    /// The loop tree, in textual order.
    pub body: Vec<Node>,
}

/// A checked intrinsic: a small kernel whose arrays are the operands of a hardware
/// instruction, each in a memory tier.
#[derive(Clone, Debug, PartialEq)]
pub struct Intrinsic {
    /// The intrinsic as a kernel (its arrays are its operands, its loops its iteration
    /// space).
    pub kernel: Kernel,
    /// For each array of `kernel` (indexed by [`ArrayId`]), the tier it lives in as written
    /// (`L0A`, `UB`, ...) and where that was written. Tier names are resolved against a
    /// machine description by the stage that knows one.
    pub tiers: Vec<(String, Span)>,
    /// Where the intrinsic was declared.
    pub span: Span,
}

/// A symbolic size parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// The parameter's name.
    pub name: String,
    /// Its default value, used when `-D` does not fix it and no input shape implies it.
    pub default: Option<i64>,
    /// Where it was declared.
    pub span: Span,
}

/// Index of an array in [`Kernel::arrays`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArrayId(pub usize);

/// How data flows through an array at the kernel's boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Read only; supplied by the caller.
    In,
    /// Written by the kernel; its initial contents are not read by the caller's contract.
    Out,
    /// Supplied by the caller, updated by the kernel.
    InOut,
    /// A kernel-local temporary (`let`).
    Temp,
}

impl Role {
    /// Whether the caller supplies this array's initial contents.
    pub fn is_input(self) -> bool {
        matches!(self, Role::In | Role::InOut)
    }
    /// Whether the caller receives this array's final contents.
    pub fn is_output(self) -> bool {
        matches!(self, Role::Out | Role::InOut)
    }
}

/// An element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// Signed 8-bit integer.
    I8,
    /// Signed 32-bit integer.
    I32,
}

impl ElemType {
    /// All element types, in a fixed order.
    pub const ALL: [ElemType; 6] = [
        ElemType::F16,
        ElemType::BF16,
        ElemType::F32,
        ElemType::F64,
        ElemType::I8,
        ElemType::I32,
    ];
    /// The keyword that names the type in the language.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F16 => "f16",
            ElemType::BF16 => "bf16",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
            ElemType::I8 => "i8",
            ElemType::I32 => "i32",
        }
    }
    /// Whether the type is a floating-point type.
    pub fn is_float(self) -> bool {
        !matches!(self, ElemType::I8 | ElemType::I32)
    }
    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            ElemType::I8 => 1,
            ElemType::F16 | ElemType::BF16 => 2,
            ElemType::F32 | ElemType::I32 => 4,
            ElemType::F64 => 8,
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An array (a scalar is an array with no dimensions).
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// The array's name.
    pub name: String,
    /// Its element type.
    pub elem: ElemType,
    /// Extent of each dimension, affine in the parameters only.
    pub dims: Vec<AffExpr>,
    /// Its role at the kernel boundary.
    pub role: Role,
    /// Where it was declared.
    pub span: Span,
}

/// A (quasi-)affine integer expression over loop variables and parameters.
///
/// `Mul` has a constant factor, `FloorDiv`/`CeilDiv`/`Mod` a positive constant divisor: the
/// checker guarantees affinity, so the type does not need to re-check it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AffExpr {
    /// An integer constant.
    Const(i64),
    /// A loop variable or parameter.
    Var(Var),
    /// Sum.
    Add(Box<AffExpr>, Box<AffExpr>),
    /// Difference.
    Sub(Box<AffExpr>, Box<AffExpr>),
    /// Negation.
    Neg(Box<AffExpr>),
    /// Product with a constant.
    Mul(i64, Box<AffExpr>),
    /// `floor(e / c)`, `c > 0`.
    FloorDiv(Box<AffExpr>, i64),
    /// `ceil(e / c)`, `c > 0`.
    CeilDiv(Box<AffExpr>, i64),
    /// `e % c` with the mathematical (non-negative) result, `c > 0`.
    Mod(Box<AffExpr>, i64),
    /// Minimum of two expressions (allowed in loop bounds).
    Min(Box<AffExpr>, Box<AffExpr>),
    /// Maximum of two expressions (allowed in loop bounds).
    Max(Box<AffExpr>, Box<AffExpr>),
}

/// A name an affine expression may refer to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Var {
    /// A loop variable of an enclosing loop (names are unique within a statement's nest).
    Loop(String),
    /// A kernel parameter.
    Param(String),
}

impl Var {
    /// The variable's name.
    pub fn name(&self) -> &str {
        match self {
            Var::Loop(n) | Var::Param(n) => n,
        }
    }
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl CmpOp {
    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
}

/// An affine condition (guards, parameter constraints). Negation has been pushed into the
/// comparisons, so there is no `Not`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cond {
    /// A comparison of two affine expressions.
    Cmp(AffExpr, CmpOp, AffExpr),
    /// Both hold.
    And(Box<Cond>, Box<Cond>),
    /// Either holds.
    Or(Box<Cond>, Box<Cond>),
}

/// A node of the loop tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// A `for` loop.
    Loop(Loop),
    /// An `if` (the `else` branch, if any, has been turned into a second `If` with the
    /// negated condition).
    If(If),
    /// A statement.
    Stmt(Stmt),
}

/// `for var in lower..upper [step s]`, or `.rev()` of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// The loop variable (unique among the loops enclosing any statement).
    pub var: String,
    /// Inclusive lower bound.
    pub lower: AffExpr,
    /// Exclusive upper bound.
    pub upper: AffExpr,
    /// Step, at least 1. The values taken are `lower, lower + step, ...` below `upper`.
    pub step: i64,
    /// Whether the values are visited in decreasing order (`(lo..hi).rev()`): the same set of
    /// values as the forward loop, visited backwards.
    pub reverse: bool,
    /// The loop body.
    pub body: Vec<Node>,
    /// Where the loop was written.
    pub span: Span,
}

/// A guard around some nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct If {
    /// The condition.
    pub cond: Cond,
    /// What runs where it holds.
    pub then: Vec<Node>,
    /// Where the `if` was written.
    pub span: Span,
}

/// An assignment operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssignOp {
    /// `=`
    Assign,
    /// `+=`
    Add,
    /// `-=`
    Sub,
    /// `*=`
    Mul,
    /// `/=`
    Div,
    /// `max=`
    Max,
    /// `min=`
    Min,
}

impl AssignOp {
    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            AssignOp::Assign => "=",
            AssignOp::Add => "+=",
            AssignOp::Sub => "-=",
            AssignOp::Mul => "*=",
            AssignOp::Div => "/=",
            AssignOp::Max => "max=",
            AssignOp::Min => "min=",
        }
    }
    /// Whether repeated updates with this operator form an associative, commutative reduction
    /// (so that their order may be changed when the user allows it).
    pub fn is_reduction(self) -> bool {
        matches!(
            self,
            AssignOp::Add | AssignOp::Mul | AssignOp::Max | AssignOp::Min
        )
    }
}

/// An array element, `A[i, j + 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    /// The array.
    pub array: ArrayId,
    /// One affine index per dimension (none for a scalar).
    pub indices: Vec<AffExpr>,
    /// Where the access was written.
    pub span: Span,
}

/// A polyhedral statement: `target op rhs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// The label (`S1:`), or `S<k>` in textual order when unlabelled; unique in the kernel.
    pub name: String,
    /// The element written.
    pub target: Access,
    /// The assignment operator.
    pub op: AssignOp,
    /// The value combined into the target.
    pub rhs: Expr,
    /// Where the statement was written.
    pub span: Span,
}

/// A value type: an element type, or a boolean (comparisons, the condition of `?:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A number of the given element type.
    Elem(ElemType),
    /// A truth value.
    Bool,
}

/// A binary arithmetic operator in value expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (truncating for integers)
    Div,
}

/// A logical connective in value expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogicOp {
    /// `and`
    And,
    /// `or`
    Or,
}

/// A built-in function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    /// e^x
    Exp,
    /// natural logarithm
    Log,
    /// square root
    Sqrt,
    /// absolute value
    Abs,
    /// hyperbolic tangent
    Tanh,
    /// maximum of two values
    Max,
    /// minimum of two values
    Min,
    /// x^y
    Pow,
    /// the largest integral value not above x (a float)
    Floor,
}

impl Func {
    /// The function's name in the language.
    pub fn name(self) -> &'static str {
        match self {
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Sqrt => "sqrt",
            Func::Abs => "abs",
            Func::Tanh => "tanh",
            Func::Max => "max",
            Func::Min => "min",
            Func::Pow => "pow",
            Func::Floor => "floor",
        }
    }
    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            Func::Max | Func::Min | Func::Pow => 2,
            _ => 1,
        }
    }
}

/// A typed value expression (a statement's right-hand side).
///
/// Arithmetic on `f16`/`bf16` is computed in `f32` and rounded to the type after every
/// operation; integer arithmetic wraps in the type's width.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What the expression computes.
    pub kind: ExprKind,
    /// Its type.
    pub ty: Type,
}

/// The forms of [`Expr`].
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A numeric literal, already converted to the expression's type (exact for integers).
    Literal(f64),
    /// The value of a loop variable or parameter, converted to the expression's type.
    Index(AffExpr),
    /// An array element.
    Read(Access),
    /// Negation.
    Neg(Box<Expr>),
    /// Arithmetic on two operands of the expression's type.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// A comparison of two operands of the same type; the expression is `Bool`.
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    /// `and`/`or` of two booleans.
    Logic(LogicOp, Box<Expr>, Box<Expr>),
    /// `not` of a boolean.
    Not(Box<Expr>),
    /// `cond ? a : b`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A built-in function applied to arguments of the expression's type.
    Call(Func, Vec<Expr>),
    /// A conversion of the operand to the expression's type.
    Cast(Box<Expr>),
}

impl Expr {
    /// Its operands (none for a literal, an index or a read).
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Literal(_) | ExprKind::Index(_) | ExprKind::Read(_) => Vec::new(),
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Cast(x) => vec![x],
            ExprKind::Binary(_, x, y) | ExprKind::Compare(_, x, y) | ExprKind::Logic(_, x, y) => {
                vec![x, y]
            }
            ExprKind::Select(c, x, y) => vec![c, x, y],
            ExprKind::Call(_, args) => args.iter().collect(),
        }
    }
    /// Its operands, to rewrite them.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match &mut self.kind {
            ExprKind::Literal(_) | ExprKind::Index(_) | ExprKind::Read(_) => Vec::new(),
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Cast(x) => vec![x],
            ExprKind::Binary(_, x, y) | ExprKind::Compare(_, x, y) | ExprKind::Logic(_, x, y) => {
                vec![x, y]
            }
            ExprKind::Select(c, x, y) => vec![c, x, y],
            ExprKind::Call(_, args) => args.iter_mut().collect(),
        }
    }
}

impl Kernel {
    /// The array with the given id.
    pub fn array(&self, id: ArrayId) -> &Array {
        &self.arrays[id.0]
    }
    /// Looks an array up by name.
    pub fn array_by_name(&self, name: &str) -> Option<ArrayId> {
        self.arrays.iter().position(|a| a.name == name).map(ArrayId)
    }
    /// All statements in textual order, each with the loops and guards around it
    /// (outermost first).
    pub fn statements(&self) -> Vec<StmtContext<'_>> {
        let mut out = Vec::new();
        let mut enclosing = Vec::new();
        collect_statements(&self.body, &mut enclosing, &mut out);
        out
    }
}

/// A statement with what surrounds it.
#[derive(Clone, Debug)]
pub struct StmtContext<'k> {
    /// The statement.
    pub stmt: &'k Stmt,
    /// Enclosing loops and guards, outermost first.
    pub enclosing: Vec<Enclosing<'k>>,
    /// For each level of the tree, the position of the branch taken among its siblings
    /// (length = number of enclosing loops + guards + 1); this is the "2d+1" textual
    /// position used for the original schedule.
    pub position: Vec<usize>,
}

/// A loop or a guard around a statement.
#[derive(Clone, Copy, Debug)]
pub enum Enclosing<'k> {
    /// An enclosing loop.
    Loop(&'k Loop),
    /// An enclosing guard.
    If(&'k If),
}

impl<'k> StmtContext<'k> {
    /// The enclosing loops, outermost first.
    pub fn loops(&self) -> impl Iterator<Item = &'k Loop> + '_ {
        self.enclosing.iter().filter_map(|e| match e {
            Enclosing::Loop(l) => Some(*l),
            Enclosing::If(_) => None,
        })
    }
}

fn collect_statements<'k>(
    nodes: &'k [Node],
    enclosing: &mut Vec<Enclosing<'k>>,
    out: &mut Vec<StmtContext<'k>>,
) {
    fn go<'k>(
        nodes: &'k [Node],
        enclosing: &mut Vec<Enclosing<'k>>,
        position: &mut Vec<usize>,
        out: &mut Vec<StmtContext<'k>>,
    ) {
        for (k, node) in nodes.iter().enumerate() {
            position.push(k);
            match node {
                Node::Stmt(s) => out.push(StmtContext {
                    stmt: s,
                    enclosing: enclosing.clone(),
                    position: position.clone(),
                }),
                Node::Loop(l) => {
                    enclosing.push(Enclosing::Loop(l));
                    go(&l.body, enclosing, position, out);
                    enclosing.pop();
                }
                Node::If(i) => {
                    enclosing.push(Enclosing::If(i));
                    go(&i.then, enclosing, position, out);
                    enclosing.pop();
                }
            }
            position.pop();
        }
    }
    go(nodes, enclosing, &mut Vec::new(), out);
}
