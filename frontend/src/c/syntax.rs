//! The C syntax the parser recognises: all expressions, the statements and declarations a
//! function body may hold. Constructs outside the subset are parsed too, so that the
//! lowering can name them and say where they are.

use crate::span::Span;

pub use super::lexer::{FloatKind, FloatLit, IntLit};

/// A basic C type (after `signed`/`unsigned`/`long` are combined).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // named after the C types
pub enum Base {
    Void,
    Bool,
    Char,
    SChar,
    UChar,
    Short,
    UShort,
    Int,
    UInt,
    Long,
    ULong,
    Float,
    Double,
    LongDouble,
}

impl Base {
    /// The type as C spells it.
    pub fn name(self) -> &'static str {
        match self {
            Base::Void => "void",
            Base::Bool => "_Bool",
            Base::Char => "char",
            Base::SChar => "signed char",
            Base::UChar => "unsigned char",
            Base::Short => "short",
            Base::UShort => "unsigned short",
            Base::Int => "int",
            Base::UInt => "unsigned int",
            Base::Long => "long",
            Base::ULong => "unsigned long",
            Base::Float => "float",
            Base::Double => "double",
            Base::LongDouble => "long double",
        }
    }
}

/// A C object type: a basic type, pointers to it, arrays of it.
#[derive(Clone, Debug, PartialEq)]
pub struct CType {
    /// The element type.
    pub base: Base,
    /// Levels of pointers (`double **p`: 2), applied before the array dimensions.
    pub pointers: usize,
    /// Array dimensions, outermost first (`None`: not given, `A[]`).
    pub dims: Vec<Option<Expr>>,
    /// Declared `restrict` (`double *restrict p`, `double A[restrict N]`).
    pub restrict: bool,
}

impl CType {
    /// A scalar of `base`.
    pub fn scalar(base: Base) -> CType {
        CType {
            base,
            pointers: 0,
            dims: Vec::new(),
            restrict: false,
        }
    }
}

/// A unary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the C operators
pub enum UnOp {
    Neg,
    Plus,
    Not,
    BitNot,
    Deref,
    AddrOf,
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the C operators
pub enum BinOp {
    Mul,
    Div,
    Mod,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
}

impl BinOp {
    /// The operator as C spells it.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Lt => "<",
            BinOp::Gt => ">",
            BinOp::Le => "<=",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::BitAnd => "&",
            BinOp::BitXor => "^",
            BinOp::BitOr => "|",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

/// An expression with its span in the original file.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it was written.
    pub span: Span,
}

/// The forms of [`Expr`].
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A name.
    Ident(String),
    /// An integer literal.
    Int(IntLit),
    /// A floating-point literal.
    Float(FloatLit),
    /// A character literal (its `int` value).
    Char(i64),
    /// A string literal.
    Str,
    /// A unary operator applied.
    Unary(UnOp, Box<Expr>),
    /// `++x`, `x--`, ...: the operand, whether it increments, whether it is a prefix.
    IncDec(Box<Expr>, bool, bool),
    /// A binary operator applied.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `a = b` (no operator) or `a op= b`.
    Assign(Option<BinOp>, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `(type) x`.
    Cast(CType, Box<Expr>),
    /// `f(args)`.
    Call(Box<Expr>, Vec<Expr>),
    /// `a[i]`.
    Index(Box<Expr>, Box<Expr>),
    /// `a.m` or `a->m`.
    Member(Box<Expr>, String),
    /// `a, b`.
    Comma(Box<Expr>, Box<Expr>),
    /// `sizeof x`, `sizeof(type)`, `_Alignof(type)`.
    SizeOf,
}

/// One declared name: `*name[dims] = init`.
#[derive(Clone, Debug, PartialEq)]
pub struct Declarator {
    /// The name declared.
    pub name: String,
    /// Where the name was written.
    pub name_span: Span,
    /// Its full type.
    pub ty: CType,
    /// For a function: its parameters (`None`: not a function).
    pub params: Option<Vec<Declarator>>,
    /// Its initialiser, if any (`None` also for a brace-enclosed list, see `braced`).
    pub init: Option<Expr>,
    /// Whether it is initialised with a brace-enclosed list.
    pub braced: bool,
}

/// A declaration: specifiers and the names they declare.
#[derive(Clone, Debug, PartialEq)]
pub struct Declaration {
    /// The names declared, in order.
    pub declarators: Vec<Declarator>,
    /// `typedef`.
    pub is_typedef: bool,
    /// `static` (at file scope: internal linkage; in a block: static storage).
    pub is_static: bool,
    /// `extern`.
    pub is_extern: bool,
    /// The whole declaration.
    pub span: Span,
}

/// What a statement outside the subset is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jump {
    /// `while (...)` or `do ... while (...)`.
    While,
    /// `break;`
    Break,
    /// `continue;`
    Continue,
    /// `goto l;` or a label `l:`.
    Goto,
    /// `return ...;`
    Return,
    /// `switch`, `case`, `default`.
    Switch,
}

/// The first clause of a `for`.
#[derive(Clone, Debug, PartialEq)]
pub enum ForInit {
    /// Nothing.
    None,
    /// An expression.
    Expr(Expr),
    /// A declaration (`int i = 0`).
    Decl(Declaration),
}

/// A statement with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// What it is.
    pub kind: StmtKind,
    /// Where it was written.
    pub span: Span,
}

/// The forms of [`Stmt`].
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `e;`
    Expr(Expr),
    /// `;`
    Empty,
    /// `{ ... }`
    Block(Vec<Stmt>),
    /// A declaration.
    Decl(Declaration),
    /// `for (init; cond; step) body`.
    For {
        /// The first clause.
        init: ForInit,
        /// The condition.
        cond: Option<Expr>,
        /// The step.
        step: Option<Expr>,
        /// The body.
        body: Box<Stmt>,
    },
    /// `if (cond) then else otherwise`.
    If {
        /// The condition.
        cond: Expr,
        /// The `then` branch.
        then: Box<Stmt>,
        /// The `else` branch.
        otherwise: Option<Box<Stmt>>,
    },
    /// A statement outside the subset, parsed only to be reported (`span` is its keyword).
    Jump(Jump, Span),
    /// A `#pragma` line inside the region.
    Pragma(String),
}
