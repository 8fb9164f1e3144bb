//! The parser: tokens to the surface [`ast`](crate::ast), with error recovery at statement
//! and kernel boundaries and a nesting limit so that no input can overflow the stack.

use crate::ast::*;
use crate::diagnostics::{Code, Diagnostic};
use crate::ir::{AssignOp, CmpOp, ElemType, LogicOp};
use crate::lexer::{Tok, Token};
use crate::span::Span;

/// Deepest nesting of blocks, parentheses, prefix operators and operator chains accepted.
pub const MAX_DEPTH: usize = 200;

type PResult<T> = Result<T, Diagnostic>;

/// Parses a token stream (ending with [`Tok::Eof`]) into a file and the syntax errors found.
pub fn parse_tokens(tokens: &[Token]) -> (File, Vec<Diagnostic>) {
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
        diags: Vec::new(),
        fatal: false,
    };
    let file = p.file();
    // Unwinding from one error (say, at the end of the file) can meet it again in every
    // enclosing block: report it once.
    p.diags
        .dedup_by(|a, b| a.span == b.span && a.message == b.message);
    (file, p.diags)
}

struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
    depth: usize,
    diags: Vec<Diagnostic>,
    /// Set after a nesting-limit error: parsing stops.
    fatal: bool,
}

/// Binding power of the infix operators (higher binds tighter).
#[derive(Clone, Copy)]
enum Infix {
    Select,
    Logic(LogicOp),
    Compare(CmpOp),
    Arith(ArithOp),
}

impl Infix {
    fn of(tok: &Tok) -> Option<(Infix, u8)> {
        Some(match tok {
            Tok::Question => (Infix::Select, 1),
            Tok::Or => (Infix::Logic(LogicOp::Or), 2),
            Tok::And => (Infix::Logic(LogicOp::And), 3),
            Tok::Lt => (Infix::Compare(CmpOp::Lt), 5),
            Tok::Le => (Infix::Compare(CmpOp::Le), 5),
            Tok::Gt => (Infix::Compare(CmpOp::Gt), 5),
            Tok::Ge => (Infix::Compare(CmpOp::Ge), 5),
            Tok::EqEq => (Infix::Compare(CmpOp::Eq), 5),
            Tok::NotEq => (Infix::Compare(CmpOp::Ne), 5),
            Tok::Plus => (Infix::Arith(ArithOp::Add), 6),
            Tok::Minus => (Infix::Arith(ArithOp::Sub), 6),
            Tok::Star => (Infix::Arith(ArithOp::Mul), 7),
            Tok::Slash => (Infix::Arith(ArithOp::Div), 7),
            Tok::Percent => (Infix::Arith(ArithOp::Mod), 7),
            _ => return None,
        })
    }
}

/// Binding power of the operand of `not`.
pub const NOT_OPERAND: u8 = 4;
/// Binding power of the operand of unary `-` (no infix operator binds this tightly).
pub const NEG_OPERAND: u8 = 8;

impl<'t> Parser<'t> {
    // ---- token helpers ----

    fn peek(&self) -> &'t Tok {
        &self.tokens[self.pos].tok
    }
    fn peek_at(&self, k: usize) -> &'t Tok {
        let i = (self.pos + k).min(self.tokens.len() - 1);
        &self.tokens[i].tok
    }
    fn span(&self) -> Span {
        self.tokens[self.pos].span
    }
    fn prev_span(&self) -> Span {
        self.tokens[self.pos.saturating_sub(1)].span
    }
    fn bump(&mut self) -> &'t Token {
        let t = &self.tokens[self.pos];
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        t
    }
    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == tok {
            self.bump();
            true
        } else {
            false
        }
    }
    fn error_expected(&self, what: &str) -> Diagnostic {
        Diagnostic::new(
            Code::Syntax,
            format!("expected {what}, found {}", self.peek().describe()),
            self.span(),
            format!("expected {what}"),
        )
    }
    fn expect(&mut self, tok: &Tok) -> PResult<Span> {
        if self.peek() == tok {
            Ok(self.bump().span)
        } else {
            Err(self.error_expected(&format!("`{}`", tok.spelling())))
        }
    }
    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek() {
            Tok::Ident(name) => {
                let span = self.bump().span;
                Ok(Ident {
                    name: name.clone(),
                    span,
                })
            }
            _ => Err(self.error_expected(what)),
        }
    }
    /// Enters one nesting level; fails (fatally) past [`MAX_DEPTH`].
    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.fatal = true;
            return Err(Diagnostic::new(
                Code::TooDeep,
                format!("nesting too deep (more than {MAX_DEPTH} levels)"),
                self.span(),
                "nesting limit reached here",
            ));
        }
        Ok(())
    }
    fn leave(&mut self, levels: usize) {
        self.depth -= levels;
    }

    // ---- file and kernels ----

    fn file(&mut self) -> File {
        let mut kernels = Vec::new();
        while self.peek() != &Tok::Eof && !self.fatal {
            let start = self.pos;
            match self.kernel() {
                Ok(k) => kernels.push(k),
                Err(d) => {
                    self.diags.push(d);
                    self.depth = 0;
                    if self.pos == start {
                        self.bump();
                    }
                    while !matches!(self.peek(), Tok::Kernel | Tok::Intrinsic | Tok::Eof) {
                        self.bump();
                    }
                }
            }
        }
        File { kernels }
    }

    fn kernel(&mut self) -> PResult<KernelDecl> {
        let start = self.span();
        let kind = match self.peek() {
            Tok::Kernel => DeclKind::Kernel,
            Tok::Intrinsic => DeclKind::Intrinsic,
            _ => return Err(self.error_expected("`kernel` or `intrinsic`")),
        };
        self.bump();
        let name = self.ident("the kernel's name")?;
        self.expect(&Tok::LParen)?;
        let args = self.comma_list(&Tok::RParen, |p| p.arg())?;
        let mut outputs = Vec::new();
        if self.eat(&Tok::Arrow) {
            self.expect(&Tok::LParen)?;
            outputs = self.comma_list(&Tok::RParen, |p| p.array_decl())?;
            if outputs.is_empty() {
                return Err(Diagnostic::new(
                    Code::Syntax,
                    "empty output list",
                    self.prev_span(),
                    "`->` needs at least one output",
                ));
            }
        }
        let mut params = Vec::new();
        let mut constraint = None;
        if self.eat(&Tok::Params) {
            loop {
                params.push(self.param()?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            if self.eat(&Tok::Where) {
                constraint = Some(self.expr()?);
            }
        }
        let body = self.block()?;
        Ok(KernelDecl {
            kind,
            name,
            args,
            outputs,
            params,
            constraint,
            body,
            span: start.to(self.prev_span()),
        })
    }

    /// `item, item, ... close` with an optional trailing comma; consumes `close`.
    fn comma_list<T>(
        &mut self,
        close: &Tok,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        let mut items = Vec::new();
        while self.peek() != close {
            items.push(item(self)?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(close)?;
        Ok(items)
    }

    fn arg(&mut self) -> PResult<Arg> {
        let name = self.ident("an argument name")?;
        self.expect(&Tok::Colon)?;
        let qualifier = match self.peek() {
            Tok::In => Some(Qualifier::In),
            Tok::Out => Some(Qualifier::Out),
            Tok::InOut => Some(Qualifier::InOut),
            _ => None,
        };
        if qualifier.is_some() {
            self.bump();
        }
        let decl = self.array_decl_after_colon(name)?;
        Ok(Arg { qualifier, decl })
    }

    fn array_decl(&mut self) -> PResult<ArrayDecl> {
        let name = self.ident("an array name")?;
        self.expect(&Tok::Colon)?;
        self.array_decl_after_colon(name)
    }

    fn array_decl_after_colon(&mut self, name: Ident) -> PResult<ArrayDecl> {
        let elem = self.elem_type()?;
        let dims = if self.eat(&Tok::LBracket) {
            self.nonempty_exprs(&Tok::RBracket)?
        } else {
            Vec::new()
        };
        let tier = if self.eat(&Tok::At) {
            Some(self.ident("a memory tier (`L0A`, `UB`, ...)")?)
        } else {
            None
        };
        let span = name.span.to(self.prev_span());
        Ok(ArrayDecl {
            name,
            elem,
            dims,
            tier,
            span,
        })
    }

    fn elem_type(&mut self) -> PResult<ElemType> {
        if let Tok::Ident(name) = self.peek() {
            if let Some(t) = ElemType::ALL.into_iter().find(|t| t.name() == name) {
                self.bump();
                return Ok(t);
            }
        }
        Err(self.error_expected("an element type (f16, bf16, f32, f64, i8, i32)"))
    }

    fn param(&mut self) -> PResult<ParamDecl> {
        let name = self.ident("a parameter name")?;
        let default = if self.eat(&Tok::Assign) {
            let negative = self.eat(&Tok::Minus);
            match self.peek() {
                Tok::Int(n) => {
                    self.bump();
                    Some(if negative { -n } else { *n })
                }
                _ => return Err(self.error_expected("an integer default value")),
            }
        } else {
            None
        };
        Ok(ParamDecl { name, default })
    }

    // ---- blocks and items ----

    fn block(&mut self) -> PResult<Vec<Item>> {
        self.expect(&Tok::LBrace)?;
        self.enter()?;
        let mut items = Vec::new();
        // A `kernel` inside a block means a `}` is missing: let the file level resync there.
        while !matches!(
            self.peek(),
            Tok::RBrace | Tok::Eof | Tok::Kernel | Tok::Intrinsic
        ) && !self.fatal
        {
            let start = self.pos;
            let depth = self.depth;
            match self.item() {
                Ok(item) => items.push(item),
                Err(d) => {
                    self.diags.push(d);
                    if self.fatal {
                        return Err(self.diags.pop().expect("just pushed"));
                    }
                    self.depth = depth;
                    self.skip_item(start);
                }
            }
        }
        self.leave(1);
        self.expect(&Tok::RBrace)?;
        Ok(items)
    }

    /// Skips the rest of a broken item: through the next `;` or balanced `{...}` at this
    /// level, or up to the `}` that closes the enclosing block. Always makes progress.
    fn skip_item(&mut self, start: usize) {
        let mut depth = 0usize;
        if self.pos == start && self.peek() != &Tok::RBrace {
            if self.peek() == &Tok::LBrace {
                depth += 1;
            }
            self.bump();
        }
        loop {
            match self.peek() {
                Tok::Eof => return,
                Tok::Kernel | Tok::Intrinsic if depth == 0 => return,
                Tok::Semi if depth == 0 => {
                    self.bump();
                    return;
                }
                Tok::LBrace => depth += 1,
                Tok::RBrace if depth == 0 => return,
                Tok::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        self.bump();
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    fn item(&mut self) -> PResult<Item> {
        match self.peek() {
            Tok::Let => {
                self.bump();
                let decl = self.array_decl()?;
                self.expect(&Tok::Semi)?;
                Ok(Item::Let(decl))
            }
            Tok::For => self.for_loop().map(Item::For),
            Tok::If => self.if_item().map(Item::If),
            _ => self.statement().map(Item::Stmt),
        }
    }

    fn for_loop(&mut self) -> PResult<ForLoop> {
        let start = self.bump().span;
        let var = self.ident("a loop variable")?;
        self.expect(&Tok::In)?;
        let reverse = self.peek() == &Tok::LParen && self.paren_holds_range();
        let (lower, upper) = if reverse {
            self.bump();
            let lower = self.expr()?;
            self.expect(&Tok::DotDot)?;
            let upper = self.expr()?;
            self.expect(&Tok::RParen)?;
            self.expect(&Tok::Dot)?;
            match self.peek() {
                Tok::Ident(n) if n == "rev" => {
                    self.bump();
                }
                _ => return Err(self.error_expected("`rev`")),
            }
            self.expect(&Tok::LParen)?;
            self.expect(&Tok::RParen)?;
            (lower, upper)
        } else {
            let lower = self.expr()?;
            self.expect(&Tok::DotDot)?;
            (lower, self.expr()?)
        };
        let step = if self.eat(&Tok::Step) {
            match self.peek() {
                Tok::Int(n) => {
                    let n = *n;
                    Some((n, self.bump().span))
                }
                _ => return Err(self.error_expected("an integer step")),
            }
        } else {
            None
        };
        let body = self.block()?;
        Ok(ForLoop {
            var,
            lower,
            upper,
            reverse,
            step,
            body,
            span: start.to(self.prev_span()),
        })
    }

    /// Whether the parenthesis at the cursor holds `..` at its own level: `(lo..hi).rev()`.
    fn paren_holds_range(&self) -> bool {
        let mut depth = 0usize;
        for t in &self.tokens[self.pos..] {
            match t.tok {
                Tok::LParen | Tok::LBracket => depth += 1,
                Tok::RParen | Tok::RBracket => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return false;
                    }
                }
                Tok::DotDot if depth == 1 => return true,
                Tok::LBrace | Tok::RBrace | Tok::Semi | Tok::Eof => return false,
                _ => {}
            }
        }
        false
    }

    fn if_item(&mut self) -> PResult<IfItem> {
        let start = self.bump().span;
        let cond = self.expr()?;
        let then = self.block()?;
        let otherwise = if self.eat(&Tok::Else) {
            if self.peek() == &Tok::If {
                self.enter()?;
                let inner = self.if_item()?;
                self.leave(1);
                Some(Else::If(Box::new(inner)))
            } else {
                Some(Else::Block(self.block()?))
            }
        } else {
            None
        };
        Ok(IfItem {
            cond,
            then,
            otherwise,
            span: start.to(self.prev_span()),
        })
    }

    fn statement(&mut self) -> PResult<StmtDecl> {
        let start = self.span();
        let label = if matches!(self.peek(), Tok::Ident(_)) && self.peek_at(1) == &Tok::Colon {
            let l = self.ident("a label")?;
            self.bump();
            Some(l)
        } else {
            None
        };
        let target = self.ident("a statement")?;
        let indices = if self.eat(&Tok::LBracket) {
            self.nonempty_exprs(&Tok::RBracket)?
        } else {
            Vec::new()
        };
        let op = self.assign_op()?;
        let rhs = self.expr()?;
        self.expect(&Tok::Semi)?;
        Ok(StmtDecl {
            label,
            target,
            indices,
            op,
            rhs,
            span: start.to(self.prev_span()),
        })
    }

    fn assign_op(&mut self) -> PResult<AssignOp> {
        let op = match self.peek() {
            Tok::Assign => AssignOp::Assign,
            Tok::PlusAssign => AssignOp::Add,
            Tok::MinusAssign => AssignOp::Sub,
            Tok::StarAssign => AssignOp::Mul,
            Tok::SlashAssign => AssignOp::Div,
            Tok::Ident(n) if (n == "max" || n == "min") && self.peek_at(1) == &Tok::Assign => {
                self.bump();
                if n == "max" {
                    AssignOp::Max
                } else {
                    AssignOp::Min
                }
            }
            _ => {
                return Err(self.error_expected(
                    "an assignment operator (`=`, `+=`, `-=`, `*=`, `/=`, `max=`, `min=`)",
                ))
            }
        };
        self.bump();
        Ok(op)
    }

    // ---- expressions ----

    /// `e, e, ... close` with at least one expression; consumes `close`.
    fn nonempty_exprs(&mut self, close: &Tok) -> PResult<Vec<Expr>> {
        let mut items = vec![self.expr()?];
        while self.eat(&Tok::Comma) {
            items.push(self.expr()?);
        }
        self.expect(close)?;
        Ok(items)
    }

    /// A whole expression.
    fn expr(&mut self) -> PResult<Expr> {
        self.expr_bp(0)
    }

    /// An expression whose infix operators all bind at least as tightly as `min`.
    fn expr_bp(&mut self, min: u8) -> PResult<Expr> {
        self.enter()?;
        let mut lhs = self.prefix()?;
        let mut levels = 1;
        let mut lhs_is_comparison = false;
        while let Some((op, bp)) = Infix::of(self.peek()) {
            if bp < min {
                break;
            }
            let op_span = self.span();
            self.enter()?;
            levels += 1;
            self.bump();
            let kind = match op {
                Infix::Select => {
                    let then = self.expr_bp(0)?;
                    self.expect(&Tok::Colon)?;
                    let otherwise = self.expr_bp(1)?;
                    ExprKind::Select(Box::new(lhs), Box::new(then), Box::new(otherwise))
                }
                Infix::Logic(l) => {
                    ExprKind::Logic(l, Box::new(lhs), Box::new(self.expr_bp(bp + 1)?))
                }
                Infix::Compare(c) => {
                    if lhs_is_comparison {
                        return Err(Diagnostic::new(
                            Code::ChainedComparison,
                            "comparison operators cannot be chained",
                            op_span,
                            "second comparison",
                        )
                        .with_note("write `a < b and b < c`"));
                    }
                    ExprKind::Compare(c, Box::new(lhs), Box::new(self.expr_bp(bp + 1)?))
                }
                Infix::Arith(a) => {
                    ExprKind::Arith(a, Box::new(lhs), Box::new(self.expr_bp(bp + 1)?))
                }
            };
            lhs_is_comparison = matches!(kind, ExprKind::Compare(..));
            let span = expr_span(&kind).unwrap_or(op_span);
            lhs = Expr { kind, span };
        }
        self.leave(levels);
        Ok(lhs)
    }

    fn prefix(&mut self) -> PResult<Expr> {
        let start = self.span();
        let (kind, operand) = match self.peek() {
            Tok::Minus => (ExprKind::Neg as fn(Box<Expr>) -> ExprKind, NEG_OPERAND),
            Tok::Not => (ExprKind::Not as fn(Box<Expr>) -> ExprKind, NOT_OPERAND),
            _ => return self.primary(),
        };
        self.bump();
        let e = self.expr_bp(operand)?;
        let span = start.to(e.span);
        Ok(Expr {
            kind: kind(Box::new(e)),
            span,
        })
    }

    fn primary(&mut self) -> PResult<Expr> {
        let start = self.span();
        let kind = match self.peek() {
            Tok::Int(n) => {
                self.bump();
                ExprKind::Int(*n)
            }
            Tok::Float(x) => {
                self.bump();
                ExprKind::Float(*x)
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(&Tok::RParen)?;
                return Ok(Expr {
                    kind: e.kind,
                    span: start.to(self.prev_span()),
                });
            }
            Tok::Ident(name) => {
                if let Some(op) = self.reduction_here(name) {
                    return self.reduction(op);
                }
                let id = self.ident("a name")?;
                if self.eat(&Tok::LBracket) {
                    ExprKind::Index(id, self.nonempty_exprs(&Tok::RBracket)?)
                } else if self.eat(&Tok::LParen) {
                    ExprKind::Call(id, self.comma_list(&Tok::RParen, |p| p.expr())?)
                } else {
                    ExprKind::Name(id.name)
                }
            }
            _ => return Err(self.error_expected("an expression")),
        };
        Ok(Expr {
            kind,
            span: start.to(self.prev_span()),
        })
    }

    /// Whether the name at the cursor starts a reduction: `sum(`/`prod(` always; `max(`/`min(`
    /// when the parentheses hold only names and are followed by the start of an operand.
    fn reduction_here(&self, name: &str) -> Option<ReduceOp> {
        let op = ReduceOp::from_keyword(name)?;
        if self.peek_at(1) != &Tok::LParen {
            return None;
        }
        if matches!(op, ReduceOp::Sum | ReduceOp::Prod) {
            return Some(op);
        }
        let mut k = 2;
        loop {
            if !matches!(self.peek_at(k), Tok::Ident(_)) {
                return None;
            }
            match self.peek_at(k + 1) {
                Tok::Comma => k += 2,
                Tok::RParen => break,
                _ => return None,
            }
        }
        starts_operand(self.peek_at(k + 2)).then_some(op)
    }

    fn reduction(&mut self, op: ReduceOp) -> PResult<Expr> {
        let start = self.bump().span;
        self.expect(&Tok::LParen)?;
        let mut vars = vec![self.ident("a reduction variable")?];
        while self.eat(&Tok::Comma) {
            vars.push(self.ident("a reduction variable")?);
        }
        self.expect(&Tok::RParen)?;
        let body = self.expr()?;
        let span = start.to(body.span);
        Ok(Expr {
            kind: ExprKind::Reduce(op, vars, Box::new(body)),
            span,
        })
    }
}

/// Whether a token can start the body of a `max(..)`/`min(..)` reduction (anything that
/// starts an expression except `-`, which would make `max(a) - b` ambiguous).
pub fn starts_operand(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::Ident(_) | Tok::Int(_) | Tok::Float(_) | Tok::LParen | Tok::Not
    )
}

fn expr_span(kind: &ExprKind) -> Option<Span> {
    match kind {
        ExprKind::Select(a, _, b)
        | ExprKind::Logic(_, a, b)
        | ExprKind::Compare(_, a, b)
        | ExprKind::Arith(_, a, b) => Some(a.span.to(b.span)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;

    fn parse(s: &str) -> (File, Vec<Code>) {
        let (t, d) = lex(s);
        assert!(d.is_empty());
        let (f, d) = parse_tokens(&t);
        (f, d.iter().map(|d| d.code).collect())
    }

    fn rhs(s: &str) -> ExprKind {
        let (f, codes) = parse(&format!("kernel k() {{ x = {s}; }}"));
        assert!(codes.is_empty(), "{codes:?}");
        match &f.kernels[0].body[0] {
            Item::Stmt(st) => st.rhs.kind.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn max_call_versus_reduction() {
        assert!(matches!(rhs("max(a, b) + 1"), ExprKind::Arith(..)));
        assert!(matches!(
            rhs("max(l) X[l]"),
            ExprKind::Reduce(ReduceOp::Max, ..)
        ));
        assert!(matches!(
            rhs("max(l) - X[l]"),
            ExprKind::Arith(ArithOp::Sub, ..)
        ));
        assert!(matches!(
            rhs("sum(k) a + b"),
            ExprKind::Reduce(ReduceOp::Sum, ..)
        ));
    }

    #[test]
    fn precedence() {
        match rhs("-a * b + c") {
            ExprKind::Arith(ArithOp::Add, l, _) => match l.kind {
                ExprKind::Arith(ArithOp::Mul, n, _) => assert!(matches!(n.kind, ExprKind::Neg(_))),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            rhs("not a < b and c"),
            ExprKind::Logic(LogicOp::And, ..)
        ));
    }

    #[test]
    fn chained_comparison_is_an_error() {
        assert_eq!(
            parse("kernel k() { x = a < b < c; }").1,
            vec![Code::ChainedComparison]
        );
        assert!(parse("kernel k() { x = (a < b) < c; }").1.is_empty());
    }

    #[test]
    fn recovers_at_statement_boundaries() {
        let (f, codes) = parse("kernel k() { x = ; y = 1; z = + ; } kernel j() { }");
        assert_eq!(codes, vec![Code::Syntax, Code::Syntax]);
        assert_eq!(f.kernels.len(), 2);
        assert_eq!(f.kernels[0].body.len(), 1);
    }

    #[test]
    fn reverse_loops() {
        let (f, codes) =
            parse("kernel k() { for i in (0..N).rev() step 2 { } for j in (1)..N { } }");
        assert!(codes.is_empty(), "{codes:?}");
        let rev: Vec<bool> = f.kernels[0]
            .body
            .iter()
            .map(|i| matches!(i, Item::For(l) if l.reverse))
            .collect();
        assert_eq!(rev, vec![true, false]);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let codes = |s: String| -> Vec<Code> {
            let file = crate::SourceFile::new("deep.pk", s);
            crate::parse(&file)
                .unwrap_err()
                .list
                .iter()
                .map(|d| d.code)
                .collect()
        };
        let parens = format!(
            "kernel k() {{ x = {}1{}; }}",
            "(".repeat(5000),
            ")".repeat(5000)
        );
        assert_eq!(codes(parens), vec![Code::TooDeep]);
        let chain = format!("kernel k() {{ x = 1{}; }}", " + 1".repeat(5000));
        assert_eq!(codes(chain), vec![Code::TooDeep]);
        let blocks = format!(
            "kernel k() {}{}",
            "{ if 1 < 2 ".repeat(5000),
            "}".repeat(5000)
        );
        assert_eq!(codes(blocks), vec![Code::TooDeep]);
    }
}
