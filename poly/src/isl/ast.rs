//! The loop AST of a schedule, as plain Rust values read from isl's AST
//! (`isl_ast_node`/`isl_ast_expr`, through isl-rs's accessors).
//!
//! isl builds the AST ([`super::build_ast`]); this module only converts it, so that back
//! ends work on ordinary enums and never touch isl.

use super::ffi::isl_ast_node_get_type;
use super::{Ctx, IslError, IslResult};
use isl_rs::{ASTExpr, ASTExprOpType, ASTExprType, ASTNode};
use libc::c_int;

/// An integer expression of the AST (loop bounds, conditions, iteration vectors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A constant.
    Int(i64),
    /// A loop iterator or a parameter.
    Id(String),
    /// An operation on its arguments.
    Op(Op, Vec<Expr>),
}

/// The operations of [`Expr`] (isl's `isl_ast_expr_op_type`, without the C-only ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `a && b`.
    And,
    /// `a || b`.
    Or,
    /// Maximum of the arguments.
    Max,
    /// Minimum of the arguments.
    Min,
    /// `-a`.
    Minus,
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// Exact division.
    Div,
    /// Floor division.
    FloorDiv,
    /// Division of a non-negative dividend.
    PosDiv,
    /// Remainder of a non-negative dividend.
    PosRem,
    /// Remainder only compared with zero.
    ZeroRem,
    /// `c ? a : b`.
    Select,
    /// `a == b`.
    Eq,
    /// `a <= b`.
    Le,
    /// `a < b`.
    Lt,
    /// `a >= b`.
    Ge,
    /// `a > b`.
    Gt,
}

/// A `for` loop: `for (iterator = init; cond; iterator += step) body`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct For {
    /// The iterator's name.
    pub iterator: String,
    /// Its first value.
    pub init: Expr,
    /// The condition to keep iterating.
    pub cond: Expr,
    /// The increment (positive).
    pub step: i64,
    /// Whether the schedule marks this loop as parallel (no dependence carried).
    pub parallel: bool,
    /// The body.
    pub body: Box<Node>,
}

/// A node of the AST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A loop.
    For(For),
    /// A guard, with an optional else branch.
    If(Expr, Box<Node>, Option<Box<Node>>),
    /// Nodes in order.
    Block(Vec<Node>),
    /// One statement instance: the statement's tuple name and its iteration vector.
    User(String, Vec<Expr>),
}

/// The prefix of the marks that tell the converter a loop below is parallel.
pub const PARALLEL_MARK: &str = "parallel";

/// The mark placed above a band whose members at the schedule depths `depths` are
/// parallel: it names those members' loop iterators (the loop of depth `d` is named `c<d>`,
/// a name no other loop below the mark has: `ast_build` gives isl these names), because a member with a single value
/// gets no loop, and the loops then found below the mark are other members' (which the
/// mark must not make parallel).
pub fn parallel_mark(depths: &[usize]) -> String {
    let names: Vec<String> = depths.iter().map(|d| format!("_c{d}")).collect();
    format!("{PARALLEL_MARK}{}", names.concat())
}

/// The loop iterators a mark designates as parallel (none for any other mark).
fn marked_iterators(mark: &str) -> Vec<String> {
    match mark.strip_prefix(PARALLEL_MARK) {
        Some(rest) => (rest.split('_').filter(|n| !n.is_empty()))
            .map(str::to_owned)
            .collect(),
        None => Vec::new(),
    }
}

/// isl's `enum isl_ast_node_type` (isl-rs's `ASTNodeType` numbers the node types from 0,
/// isl from 1, so its `get_type` misreads every node: the raw value is read instead).
const NODE_FOR: c_int = 1;
const NODE_IF: c_int = 2;
const NODE_BLOCK: c_int = 3;
const NODE_MARK: c_int = 4;
const NODE_USER: c_int = 5;

impl Expr {
    /// Whether the identifier `name` occurs in the expression.
    pub fn mentions(&self, name: &str) -> bool {
        match self {
            Expr::Int(_) => false,
            Expr::Id(n) => n == name,
            Expr::Op(_, args) => args.iter().any(|a| a.mentions(name)),
        }
    }
}

impl Node {
    /// Whether a loop runs somewhere below (or at) this node.
    pub fn has_loop(&self) -> bool {
        match self {
            Node::For(_) => true,
            Node::If(_, t, e) => t.has_loop() || e.as_ref().is_some_and(|e| e.has_loop()),
            Node::Block(cs) => cs.iter().any(Node::has_loop),
            Node::User(..) => false,
        }
    }
}

/// Converts an isl AST into ours.
pub(crate) fn convert(ctx: &Ctx, node: &ASTNode) -> IslResult<Node> {
    convert_node(ctx, node, &[])
}

/// `parallel`: the iterators of the loops that parallel marks above designate.
fn convert_node(ctx: &Ctx, node: &ASTNode, parallel: &[String]) -> IslResult<Node> {
    // SAFETY: `node` is a live AST node.
    Ok(match unsafe { isl_ast_node_get_type(node.ptr) } {
        NODE_FOR => {
            let inc = expr(ctx, &ctx.check(node.for_get_inc())?)?;
            let Expr::Int(step) = inc else {
                return Err(IslError::Isl(format!("loop step {inc:?} is not constant")));
            };
            let iterator = match expr(ctx, &ctx.check(node.for_get_iterator())?)? {
                Expr::Id(name) => name,
                other => return Err(IslError::Isl(format!("loop iterator {other:?}"))),
            };
            let body = convert_node(ctx, &ctx.check(node.for_get_body())?, parallel)?;
            Node::For(For {
                parallel: parallel.contains(&iterator),
                iterator,
                init: expr(ctx, &ctx.check(node.for_get_init())?)?,
                cond: expr(ctx, &ctx.check(node.for_get_cond())?)?,
                step,
                body: Box::new(body),
            })
        }
        NODE_IF => {
            let cond = expr(ctx, &ctx.check(node.if_get_cond())?)?;
            let then = convert_node(ctx, &ctx.check(node.if_get_then_node())?, parallel)?;
            let otherwise = if ctx.check(node.if_has_else_node())? {
                Some(Box::new(convert_node(
                    ctx,
                    &ctx.check(node.if_get_else_node())?,
                    parallel,
                )?))
            } else {
                None
            };
            Node::If(cond, Box::new(then), otherwise)
        }
        NODE_BLOCK => {
            let list = ctx.check(node.block_get_children())?;
            let n = ctx.check(list.size())?;
            let children = (0..n)
                .map(|k| convert_node(ctx, &ctx.check(list.get_at(k))?, parallel))
                .collect::<IslResult<Vec<_>>>()?;
            Node::Block(children)
        }
        NODE_MARK => {
            let id = ctx.check(node.mark_get_id())?;
            let name = ctx.check(id.get_name())?.to_owned();
            let mut marked = parallel.to_vec();
            marked.extend(marked_iterators(&name));
            convert_node(ctx, &ctx.check(node.mark_get_node())?, &marked)?
        }
        NODE_USER => user(ctx, node)?,
        _ => return Err(IslError::Isl("invalid AST node".into())),
    })
}

/// A user node `S(e1, ..., en)`.
fn user(ctx: &Ctx, node: &ASTNode) -> IslResult<Node> {
    let call = ctx.check(node.user_get_expr())?;
    let n = ctx.check(call.op_get_n_arg())?;
    let name = match expr(ctx, &ctx.check(call.op_get_arg(0))?)? {
        Expr::Id(name) => name,
        other => return Err(IslError::Isl(format!("user node calls {other:?}"))),
    };
    let args = (1..n)
        .map(|k| expr(ctx, &ctx.check(call.op_get_arg(k))?))
        .collect::<IslResult<Vec<_>>>()?;
    Ok(Node::User(name, args))
}

fn expr(ctx: &Ctx, e: &ASTExpr) -> IslResult<Expr> {
    Ok(match ctx.check(e.get_type())? {
        ASTExprType::Int => {
            let v = ctx.check(e.get_val())?;
            Expr::Int(ctx.check(v.get_num_si())?)
        }
        ASTExprType::Id => Expr::Id(ctx.check(ctx.check(e.get_id())?.get_name())?.to_owned()),
        ASTExprType::Op => {
            let op = match ctx.check(e.op_get_type())? {
                ASTExprOpType::And | ASTExprOpType::AndThen => Op::And,
                ASTExprOpType::Or | ASTExprOpType::OrElse => Op::Or,
                ASTExprOpType::Max => Op::Max,
                ASTExprOpType::Min => Op::Min,
                ASTExprOpType::Minus => Op::Minus,
                ASTExprOpType::Add => Op::Add,
                ASTExprOpType::Sub => Op::Sub,
                ASTExprOpType::Mul => Op::Mul,
                ASTExprOpType::Div => Op::Div,
                ASTExprOpType::FdivQ => Op::FloorDiv,
                ASTExprOpType::PdivQ => Op::PosDiv,
                ASTExprOpType::PdivR => Op::PosRem,
                ASTExprOpType::ZdivR => Op::ZeroRem,
                ASTExprOpType::Cond | ASTExprOpType::Select => Op::Select,
                ASTExprOpType::Eq => Op::Eq,
                ASTExprOpType::Le => Op::Le,
                ASTExprOpType::Lt => Op::Lt,
                ASTExprOpType::Ge => Op::Ge,
                ASTExprOpType::Gt => Op::Gt,
                other => {
                    return Err(IslError::Isl(format!(
                        "unsupported AST operation {other:?}"
                    )))
                }
            };
            let n = ctx.check(e.op_get_n_arg())?;
            let args = (0..n)
                .map(|k| expr(ctx, &ctx.check(e.op_get_arg(k))?))
                .collect::<IslResult<Vec<_>>>()?;
            Expr::Op(op, args)
        }
        ASTExprType::Error => return Err(IslError::Isl("invalid AST expression".into())),
    })
}
