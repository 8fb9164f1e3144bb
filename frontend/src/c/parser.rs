//! A recursive-descent parser of C over preprocessed tokens: expressions, statements,
//! declarations and type names. It parses more than the subset (so that the lowering can
//! name what lies outside it); it stops at the first syntax error.

use super::lexer::{NumberFault, Punct, Tok};
use super::linemap::PpToken;
use super::syntax::{
    Base, BinOp, CType, Declaration, Declarator, Expr, ExprKind, ForInit, Jump, Stmt, StmtKind,
    UnOp,
};
use crate::diagnostics::{Code, Construct, Diagnostic};
use crate::span::Span;
use std::collections::HashMap;

/// The type names a `typedef` introduced, with their types.
pub type Typedefs = HashMap<String, CType>;

/// At most this many nested expressions or statements.
pub const MAX_DEPTH: usize = 200;

type PResult<T> = Result<T, Diagnostic>;

/// A parser over a slice of tokens.
pub struct Parser<'t> {
    toks: &'t [PpToken],
    at: usize,
    typedefs: &'t Typedefs,
    depth: usize,
}

/// Identifiers that qualify a type or a declaration and change nothing here.
const IGNORED_SPECIFIERS: [&str; 16] = [
    "auto",
    "register",
    "inline",
    "__inline",
    "__inline__",
    "volatile",
    "__volatile__",
    "restrict",
    "__restrict",
    "__restrict__",
    "_Noreturn",
    "_Thread_local",
    "__thread",
    "__extension__",
    "__signed__",
    "signed",
];

/// Identifiers that start a type specifier.
const TYPE_WORDS: [&str; 10] = [
    "void", "_Bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
];

/// Identifiers this parser cannot take as a type (reported as syntax errors where a type is
/// expected).
const UNSUPPORTED_TYPES: [&str; 7] = [
    "struct",
    "union",
    "enum",
    "_Complex",
    "__int128",
    "_Atomic",
    "__builtin_va_list",
];

impl<'t> Parser<'t> {
    /// A parser of `toks` that knows the type names of `typedefs`.
    pub fn new(toks: &'t [PpToken], typedefs: &'t Typedefs) -> Parser<'t> {
        Parser {
            toks,
            at: 0,
            typedefs,
            depth: 0,
        }
    }

    /// Whether every token was read.
    pub fn at_end(&self) -> bool {
        self.at >= self.toks.len()
    }

    /// The index of the next token.
    pub fn position(&self) -> usize {
        self.at
    }

    fn peek(&self) -> Option<&'t Tok> {
        self.toks.get(self.at).map(|t| &t.tok)
    }

    fn peek_at(&self, k: usize) -> Option<&'t Tok> {
        self.toks.get(self.at + k).map(|t| &t.tok)
    }

    /// The span of token `k`, or of the nearest token before it that has one.
    fn span_of(&self, k: usize) -> Span {
        let k = k.min(self.toks.len());
        (self.toks[..k].iter().rev())
            .chain(self.toks.get(k))
            .find_map(|t| t.span)
            .or_else(|| self.toks[k..].iter().find_map(|t| t.span))
            .unwrap_or_default()
    }

    fn here(&self) -> Span {
        match self.toks.get(self.at).and_then(|t| t.span) {
            Some(s) => s,
            None => {
                let s = self.span_of(self.at);
                Span::new(s.end, s.end)
            }
        }
    }

    /// The span from token `start` to the last token read.
    fn since(&self, start: usize) -> Span {
        let first = self.toks.get(start).and_then(|t| t.span);
        let last = self.at.checked_sub(1).and_then(|k| self.toks[k].span);
        match (first, last) {
            (Some(a), Some(b)) if b.end >= a.start => a.to(b),
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => self.span_of(start),
        }
    }

    fn is(&self, p: Punct) -> bool {
        self.peek() == Some(&Tok::P(p))
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s == w)
    }

    fn eat(&mut self, p: Punct) -> bool {
        let found = self.is(p);
        if found {
            self.at += 1;
        }
        found
    }

    fn eat_word(&mut self, w: &str) -> bool {
        let found = self.is_word(w);
        if found {
            self.at += 1;
        }
        found
    }

    fn error(&self, what: &str) -> Diagnostic {
        let found = match self.peek() {
            None => "the end of the region".to_owned(),
            Some(t) => format!("`{}`", describe(t)),
        };
        Diagnostic::new(
            Code::Syntax,
            format!("expected {what}, found {found}"),
            self.here(),
            format!("expected {what}"),
        )
    }

    fn expect(&mut self, p: Punct) -> PResult<()> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.error(&format!("`{}`", p.spelling())))
        }
    }

    fn ident(&mut self) -> PResult<(String, Span)> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let span = self.here();
                self.at += 1;
                Ok((s.clone(), span))
            }
            _ => Err(self.error("a name")),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::new(
                Code::TooDeep,
                format!("nesting too deep (more than {MAX_DEPTH} levels)"),
                self.here(),
                "too deep",
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Skips a balanced group starting at the current opening token.
    pub fn skip_group(&mut self) -> PResult<()> {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return Err(self.error("a closing bracket")),
                Some(Tok::P(Punct::LParen | Punct::LBracket | Punct::LBrace)) => depth += 1,
                Some(Tok::P(Punct::RParen | Punct::RBracket | Punct::RBrace)) => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.at += 1;
                        return Ok(());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
    }

    /// Skips GNU attributes and asm labels (`__attribute__((...))`, `__asm__("x")`).
    fn skip_attributes(&mut self) -> PResult<()> {
        while matches!(self.peek(), Some(Tok::Ident(s))
            if matches!(s.as_str(), "__attribute__" | "__attribute" | "__asm__" | "__asm" | "asm" | "__declspec"))
        {
            self.at += 1;
            if self.is(Punct::LParen) {
                self.skip_group()?;
            }
        }
        Ok(())
    }

    // ---- types and declarations ----

    /// Whether the next tokens start a declaration (or a type name).
    pub fn starts_declaration(&self) -> bool {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                TYPE_WORDS.contains(&s.as_str())
                    || IGNORED_SPECIFIERS.contains(&s.as_str())
                    || UNSUPPORTED_TYPES.contains(&s.as_str())
                    || matches!(
                        s.as_str(),
                        "typedef" | "static" | "extern" | "const" | "__const" | "__attribute__"
                    )
                    || (self.typedefs.contains_key(s) && !self.next_is_operator_after_name())
            }
            _ => false,
        }
    }

    /// Whether the token after a typedef name makes it an expression (`T = 1`, `T[0]`).
    fn next_is_operator_after_name(&self) -> bool {
        !matches!(
            self.peek_at(1),
            Some(Tok::Ident(_) | Tok::P(Punct::Star | Punct::LParen | Punct::RParen))
        )
    }

    /// Declaration specifiers: the base type and storage class (`typedef`, `static`,
    /// `extern`).
    fn specifiers(&mut self) -> PResult<(CType, bool, bool, bool)> {
        let (mut is_typedef, mut is_static, mut is_extern) = (false, false, false);
        let mut words: Vec<&str> = Vec::new();
        let mut named: Option<CType> = None;
        let start = self.at;
        loop {
            self.skip_attributes()?;
            let Some(Tok::Ident(w)) = self.peek() else {
                break;
            };
            match w.as_str() {
                "typedef" => is_typedef = true,
                "static" => is_static = true,
                "extern" => is_extern = true,
                "const" | "__const" => {}
                w if IGNORED_SPECIFIERS.contains(&w) && w != "signed" && w != "__signed__" => {}
                w if TYPE_WORDS.contains(&w) || w == "__signed__" => words.push(match w {
                    "__signed__" => "signed",
                    w => w,
                }),
                w if UNSUPPORTED_TYPES.contains(&w) => {
                    return Err(Diagnostic::new(
                        Code::Outside(Construct::Type),
                        format!("`{w}` types are outside the C subset"),
                        self.here(),
                        "not a basic type",
                    ))
                }
                w if words.is_empty() && named.is_none() => match self.typedefs.get(w) {
                    Some(t) => named = Some(t.clone()),
                    None => break,
                },
                _ => break,
            }
            self.at += 1;
        }
        let ty = match named {
            Some(t) if words.is_empty() => t,
            Some(_) => return Err(self.error("a declaration")),
            None if words.is_empty() && self.at == start => {
                return Err(self.error("a type"));
            }
            None => CType::scalar(base_of(&words).ok_or_else(|| {
                Diagnostic::new(
                    Code::Syntax,
                    format!("`{}` is not a C type", words.join(" ")),
                    self.since(start),
                    "invalid type",
                )
            })?),
        };
        Ok((ty, is_typedef, is_static, is_extern))
    }

    /// A declarator over `base`: pointers, a name (unless `abstract_ok`), array dimensions,
    /// a parameter list.
    fn declarator(&mut self, base: &CType, abstract_ok: bool) -> PResult<Declarator> {
        self.enter()?;
        let mut ty = base.clone();
        while self.eat(Punct::Star) {
            ty.pointers += 1;
            while let Some(Tok::Ident(s)) = self.peek() {
                match s.as_str() {
                    "restrict" | "__restrict" | "__restrict__" => ty.restrict = true,
                    "const" | "__const" | "volatile" => {}
                    _ => break,
                }
                self.at += 1;
            }
        }
        self.skip_attributes()?;
        let mut inner: Option<Declarator> = None;
        let mut name = (String::new(), self.here());
        if self.is(Punct::LParen)
            && matches!(self.peek_at(1), Some(Tok::P(Punct::Star | Punct::LParen)))
        {
            // A grouped declarator: `(*p)[N]`, `(*f)(int)`.
            self.at += 1;
            let d = self.declarator(&CType::scalar(ty.base), abstract_ok)?;
            self.expect(Punct::RParen)?;
            name = (d.name.clone(), d.name_span);
            inner = Some(d);
        } else if let Some(Tok::Ident(s)) = self.peek() {
            if !self.typedefs.contains_key(s) || !abstract_ok {
                name = self.ident()?;
            }
        } else if !abstract_ok {
            return Err(self.error("a name"));
        }
        let mut params = None;
        loop {
            if self.eat(Punct::LBracket) {
                while let Some(Tok::Ident(s)) = self.peek() {
                    match s.as_str() {
                        "restrict" | "__restrict" | "__restrict__" => ty.restrict = true,
                        "const" | "volatile" | "static" => {}
                        _ => break,
                    }
                    self.at += 1;
                }
                if self.eat(Punct::RBracket) {
                    ty.dims.push(None);
                } else {
                    let e = self.assignment()?;
                    self.expect(Punct::RBracket)?;
                    ty.dims.push(Some(e));
                }
            } else if self.is(Punct::LParen) && params.is_none() {
                self.at += 1;
                params = Some(self.parameters()?);
            } else {
                break;
            }
        }
        if let Some(d) = inner {
            // What the group declares is a pointer to (or a function returning) the rest.
            ty.pointers += d.ty.pointers;
            ty.restrict |= d.ty.restrict;
            ty.dims.extend(d.ty.dims);
            params = params.or(d.params);
        }
        self.skip_attributes()?;
        self.leave();
        Ok(Declarator {
            name: name.0,
            name_span: name.1,
            ty,
            params,
            init: None,
            braced: false,
        })
    }

    /// A parameter list after its `(`, through its `)`.
    fn parameters(&mut self) -> PResult<Vec<Declarator>> {
        let mut params = Vec::new();
        if self.eat(Punct::RParen) {
            return Ok(params);
        }
        if self.is_word("void") && self.peek_at(1) == Some(&Tok::P(Punct::RParen)) {
            self.at += 2;
            return Ok(params);
        }
        loop {
            if self.eat(Punct::Ellipsis) {
                self.expect(Punct::RParen)?;
                return Ok(params);
            }
            let (base, ..) = self.specifiers()?;
            params.push(self.declarator(&base, true)?);
            if self.eat(Punct::RParen) {
                return Ok(params);
            }
            self.expect(Punct::Comma)?;
        }
    }

    /// A declaration through its `;`, or a function definition's header (then the next
    /// token is its body's `{`).
    pub fn declaration(&mut self) -> PResult<Declaration> {
        let start = self.at;
        let (base, is_typedef, is_static, is_extern) = self.specifiers()?;
        let mut declarators = Vec::new();
        if !self.eat(Punct::Semi) {
            loop {
                let mut d = self.declarator(&base, false)?;
                if d.params.is_some() && declarators.is_empty() && self.is(Punct::LBrace) {
                    declarators.push(d);
                    return Ok(Declaration {
                        declarators,
                        is_typedef,
                        is_static,
                        is_extern,
                        span: self.since(start),
                    });
                }
                if self.eat(Punct::Assign) {
                    if self.is(Punct::LBrace) {
                        self.skip_group()?;
                        d.braced = true;
                    } else {
                        d.init = Some(self.assignment()?);
                    }
                }
                declarators.push(d);
                if self.eat(Punct::Semi) {
                    break;
                }
                self.expect(Punct::Comma)?;
            }
        }
        Ok(Declaration {
            declarators,
            is_typedef,
            is_static,
            is_extern,
            span: self.since(start),
        })
    }

    /// A type name, as in a cast: `double`, `double *`.
    fn type_name(&mut self) -> PResult<CType> {
        let (base, ..) = self.specifiers()?;
        Ok(self.declarator(&base, true)?.ty)
    }

    // ---- expressions ----

    /// A full expression (commas included).
    pub fn expr(&mut self) -> PResult<Expr> {
        let start = self.at;
        let first = self.assignment()?;
        if self.eat(Punct::Comma) {
            let rest = self.expr()?;
            return Ok(Expr {
                kind: ExprKind::Comma(Box::new(first), Box::new(rest)),
                span: self.since(start),
            });
        }
        Ok(first)
    }

    /// An assignment expression.
    pub fn assignment(&mut self) -> PResult<Expr> {
        self.enter()?;
        let start = self.at;
        let lhs = self.conditional()?;
        let op = match self.peek() {
            Some(Tok::P(p)) => match p {
                Punct::Assign => Some(None),
                Punct::PlusAssign => Some(Some(BinOp::Add)),
                Punct::MinusAssign => Some(Some(BinOp::Sub)),
                Punct::StarAssign => Some(Some(BinOp::Mul)),
                Punct::SlashAssign => Some(Some(BinOp::Div)),
                Punct::PercentAssign => Some(Some(BinOp::Mod)),
                Punct::AmpAssign => Some(Some(BinOp::BitAnd)),
                Punct::PipeAssign => Some(Some(BinOp::BitOr)),
                Punct::CaretAssign => Some(Some(BinOp::BitXor)),
                Punct::ShlAssign => Some(Some(BinOp::Shl)),
                Punct::ShrAssign => Some(Some(BinOp::Shr)),
                _ => None,
            },
            _ => None,
        };
        let out = match op {
            Some(op) => {
                self.at += 1;
                let rhs = self.assignment()?;
                Expr {
                    kind: ExprKind::Assign(op, Box::new(lhs), Box::new(rhs)),
                    span: self.since(start),
                }
            }
            None => lhs,
        };
        self.leave();
        Ok(out)
    }

    fn conditional(&mut self) -> PResult<Expr> {
        let start = self.at;
        let c = self.binary(1)?;
        if !self.eat(Punct::Question) {
            return Ok(c);
        }
        self.enter()?;
        let a = self.expr()?;
        self.expect(Punct::Colon)?;
        let b = self.conditional()?;
        self.leave();
        Ok(Expr {
            kind: ExprKind::Cond(Box::new(c), Box::new(a), Box::new(b)),
            span: self.since(start),
        })
    }

    fn binary(&mut self, min: u8) -> PResult<Expr> {
        let start = self.at;
        let mut lhs = self.unary()?;
        while let Some((op, prec)) = self.peek().and_then(binary_op) {
            if prec < min {
                break;
            }
            self.at += 1;
            self.enter()?;
            let rhs = self.binary(prec + 1)?;
            self.leave();
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span: self.since(start),
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let start = self.at;
        let op = match self.peek() {
            Some(Tok::P(Punct::Minus)) => Some(UnOp::Neg),
            Some(Tok::P(Punct::Plus)) => Some(UnOp::Plus),
            Some(Tok::P(Punct::Bang)) => Some(UnOp::Not),
            Some(Tok::P(Punct::Tilde)) => Some(UnOp::BitNot),
            Some(Tok::P(Punct::Star)) => Some(UnOp::Deref),
            Some(Tok::P(Punct::Amp)) => Some(UnOp::AddrOf),
            _ => None,
        };
        let out = if let Some(op) = op {
            self.at += 1;
            let x = self.unary()?;
            Expr {
                kind: ExprKind::Unary(op, Box::new(x)),
                span: self.since(start),
            }
        } else if self.is(Punct::PlusPlus) || self.is(Punct::MinusMinus) {
            let inc = self.is(Punct::PlusPlus);
            self.at += 1;
            let x = self.unary()?;
            Expr {
                kind: ExprKind::IncDec(Box::new(x), inc, true),
                span: self.since(start),
            }
        } else if self.is_word("sizeof") || self.is_word("_Alignof") || self.is_word("__alignof__")
        {
            self.at += 1;
            if self.is(Punct::LParen) {
                self.skip_group()?;
            } else {
                self.unary()?;
            }
            Expr {
                kind: ExprKind::SizeOf,
                span: self.since(start),
            }
        } else if self.is(Punct::LParen) && self.cast_follows() {
            self.at += 1;
            let ty = self.type_name()?;
            self.expect(Punct::RParen)?;
            if self.is(Punct::LBrace) {
                return Err(Diagnostic::new(
                    Code::Syntax,
                    "compound literals are outside the C subset",
                    self.since(start),
                    "compound literal",
                ));
            }
            let x = self.unary()?;
            Expr {
                kind: ExprKind::Cast(ty, Box::new(x)),
                span: self.since(start),
            }
        } else {
            self.postfix()?
        };
        self.leave();
        Ok(out)
    }

    /// Whether the `(` at the current token opens a type name.
    fn cast_follows(&self) -> bool {
        match self.peek_at(1) {
            Some(Tok::Ident(s)) => {
                TYPE_WORDS.contains(&s.as_str())
                    || matches!(s.as_str(), "const" | "volatile" | "__extension__")
                    || UNSUPPORTED_TYPES.contains(&s.as_str())
                    || (self.typedefs.contains_key(s)
                        && matches!(self.peek_at(2), Some(Tok::P(Punct::RParen | Punct::Star))))
            }
            _ => false,
        }
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let start = self.at;
        let mut e = self.primary()?;
        loop {
            let kind = if self.eat(Punct::LBracket) {
                let i = self.expr()?;
                self.expect(Punct::RBracket)?;
                ExprKind::Index(Box::new(e), Box::new(i))
            } else if self.eat(Punct::LParen) {
                let mut args = Vec::new();
                if !self.eat(Punct::RParen) {
                    loop {
                        args.push(self.assignment()?);
                        if self.eat(Punct::RParen) {
                            break;
                        }
                        self.expect(Punct::Comma)?;
                    }
                }
                ExprKind::Call(Box::new(e), args)
            } else if self.eat(Punct::Dot) || self.eat(Punct::Arrow) {
                let (m, _) = self.ident()?;
                ExprKind::Member(Box::new(e), m)
            } else if self.is(Punct::PlusPlus) || self.is(Punct::MinusMinus) {
                let inc = self.is(Punct::PlusPlus);
                self.at += 1;
                ExprKind::IncDec(Box::new(e), inc, false)
            } else {
                return Ok(e);
            };
            e = Expr {
                kind,
                span: self.since(start),
            };
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let start = self.at;
        let kind = match self.peek() {
            Some(Tok::Ident(s)) => {
                self.at += 1;
                ExprKind::Ident(s.clone())
            }
            Some(Tok::Int(v)) => {
                self.at += 1;
                ExprKind::Int(*v)
            }
            Some(Tok::Float(v)) => {
                self.at += 1;
                ExprKind::Float(*v)
            }
            Some(Tok::Char(v)) => {
                self.at += 1;
                ExprKind::Char(*v)
            }
            Some(Tok::Str) => {
                while self.peek() == Some(&Tok::Str) {
                    self.at += 1;
                }
                ExprKind::Str
            }
            Some(Tok::P(Punct::LParen)) => {
                self.at += 1;
                if self.is(Punct::LBrace) {
                    return Err(Diagnostic::new(
                        Code::Syntax,
                        "statement expressions are outside the C subset",
                        self.here(),
                        "GNU statement expression",
                    ));
                }
                let e = self.expr()?;
                self.expect(Punct::RParen)?;
                return Ok(Expr {
                    kind: e.kind,
                    span: self.since(start),
                });
            }
            Some(Tok::BadNumber(text, fault)) => return Err(bad_number(text, *fault, self.here())),
            _ => return Err(self.error("an expression")),
        };
        Ok(Expr {
            kind,
            span: self.since(start),
        })
    }

    // ---- statements ----

    /// Statements up to the end of the tokens.
    pub fn statements(&mut self) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        while !self.at_end() {
            out.push(self.statement()?);
        }
        Ok(out)
    }

    /// One statement (or declaration).
    pub fn statement(&mut self) -> PResult<Stmt> {
        self.enter()?;
        let start = self.at;
        let keyword = self.here();
        let kind = match self.peek() {
            Some(Tok::Directive(text)) => {
                self.at += 1;
                StmtKind::Pragma(text.clone())
            }
            Some(Tok::P(Punct::Semi)) => {
                self.at += 1;
                StmtKind::Empty
            }
            Some(Tok::P(Punct::LBrace)) => {
                self.at += 1;
                let mut items = Vec::new();
                while !self.eat(Punct::RBrace) {
                    if self.at_end() {
                        return Err(self.error("`}`"));
                    }
                    items.push(self.statement()?);
                }
                StmtKind::Block(items)
            }
            Some(Tok::Ident(w)) => match w.as_str() {
                "for" => self.for_statement()?,
                "if" => {
                    self.at += 1;
                    self.expect(Punct::LParen)?;
                    let cond = self.expr()?;
                    self.expect(Punct::RParen)?;
                    let then = Box::new(self.statement()?);
                    let otherwise = if self.eat_word("else") {
                        Some(Box::new(self.statement()?))
                    } else {
                        None
                    };
                    StmtKind::If {
                        cond,
                        then,
                        otherwise,
                    }
                }
                "while" | "switch" => {
                    self.at += 1;
                    self.expect(Punct::LParen)?;
                    self.expr()?;
                    self.expect(Punct::RParen)?;
                    self.statement()?;
                    let jump = if w == "while" {
                        Jump::While
                    } else {
                        Jump::Switch
                    };
                    StmtKind::Jump(jump, keyword)
                }
                "do" => {
                    self.at += 1;
                    self.statement()?;
                    if !self.eat_word("while") {
                        return Err(self.error("`while`"));
                    }
                    self.expect(Punct::LParen)?;
                    self.expr()?;
                    self.expect(Punct::RParen)?;
                    self.expect(Punct::Semi)?;
                    StmtKind::Jump(Jump::While, keyword)
                }
                "break" | "continue" => {
                    self.at += 1;
                    self.expect(Punct::Semi)?;
                    let jump = if w == "break" {
                        Jump::Break
                    } else {
                        Jump::Continue
                    };
                    StmtKind::Jump(jump, keyword)
                }
                "goto" => {
                    self.at += 1;
                    self.ident()?;
                    self.expect(Punct::Semi)?;
                    StmtKind::Jump(Jump::Goto, keyword)
                }
                "return" => {
                    self.at += 1;
                    if !self.eat(Punct::Semi) {
                        self.expr()?;
                        self.expect(Punct::Semi)?;
                    }
                    StmtKind::Jump(Jump::Return, keyword)
                }
                "case" | "default" => {
                    self.at += 1;
                    if w == "case" {
                        self.conditional()?;
                    }
                    self.expect(Punct::Colon)?;
                    StmtKind::Jump(Jump::Switch, keyword)
                }
                _ if self.peek_at(1) == Some(&Tok::P(Punct::Colon)) => {
                    self.at += 2;
                    StmtKind::Jump(Jump::Goto, keyword)
                }
                _ if self.starts_declaration() => StmtKind::Decl(self.declaration()?),
                _ => self.expression_statement()?,
            },
            _ => self.expression_statement()?,
        };
        self.leave();
        Ok(Stmt {
            kind,
            span: self.since(start),
        })
    }

    fn expression_statement(&mut self) -> PResult<StmtKind> {
        let e = self.expr()?;
        self.expect(Punct::Semi)?;
        Ok(StmtKind::Expr(e))
    }

    fn for_statement(&mut self) -> PResult<StmtKind> {
        self.at += 1;
        self.expect(Punct::LParen)?;
        let init = if self.eat(Punct::Semi) {
            ForInit::None
        } else if self.starts_declaration() {
            ForInit::Decl(self.declaration()?)
        } else {
            let e = self.expr()?;
            self.expect(Punct::Semi)?;
            ForInit::Expr(e)
        };
        let cond = if self.is(Punct::Semi) {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect(Punct::Semi)?;
        let step = if self.is(Punct::RParen) {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect(Punct::RParen)?;
        let body = Box::new(self.statement()?);
        Ok(StmtKind::For {
            init,
            cond,
            step,
            body,
        })
    }
}

/// The basic type a list of type words names.
fn base_of(words: &[&str]) -> Option<Base> {
    let count = |w: &str| words.iter().filter(|x| **x == w).count();
    let (longs, unsigned, signed) = (count("long"), count("unsigned") > 0, count("signed") > 0);
    let others: Vec<&str> = (words.iter().copied())
        .filter(|w| !matches!(*w, "long" | "unsigned" | "signed"))
        .collect();
    if unsigned && signed || longs > 2 {
        return None;
    }
    Some(match (others.as_slice(), longs) {
        (["void"], 0) if !unsigned && !signed => Base::Void,
        (["_Bool"], 0) if !unsigned && !signed => Base::Bool,
        (["char"], 0) if unsigned => Base::UChar,
        (["char"], 0) if signed => Base::SChar,
        (["char"], 0) => Base::Char,
        (["short"] | ["short", "int"] | ["int", "short"], 0) if unsigned => Base::UShort,
        (["short"] | ["short", "int"] | ["int", "short"], 0) => Base::Short,
        ([] | ["int"], 0) if unsigned => Base::UInt,
        ([] | ["int"], 0) => Base::Int,
        ([] | ["int"], _) if unsigned => Base::ULong,
        ([] | ["int"], _) => Base::Long,
        (["float"], 0) if !unsigned && !signed => Base::Float,
        (["double"], 0) if !unsigned && !signed => Base::Double,
        (["double"], 1) if !unsigned && !signed => Base::LongDouble,
        _ => return None,
    })
}

/// The binary operator a token is, with its precedence (higher binds tighter).
fn binary_op(t: &Tok) -> Option<(BinOp, u8)> {
    let Tok::P(p) = t else { return None };
    Some(match p {
        Punct::PipePipe => (BinOp::Or, 1),
        Punct::AmpAmp => (BinOp::And, 2),
        Punct::Pipe => (BinOp::BitOr, 3),
        Punct::Caret => (BinOp::BitXor, 4),
        Punct::Amp => (BinOp::BitAnd, 5),
        Punct::EqEq => (BinOp::Eq, 6),
        Punct::Ne => (BinOp::Ne, 6),
        Punct::Lt => (BinOp::Lt, 7),
        Punct::Gt => (BinOp::Gt, 7),
        Punct::Le => (BinOp::Le, 7),
        Punct::Ge => (BinOp::Ge, 7),
        Punct::Shl => (BinOp::Shl, 8),
        Punct::Shr => (BinOp::Shr, 8),
        Punct::Plus => (BinOp::Add, 9),
        Punct::Minus => (BinOp::Sub, 9),
        Punct::Star => (BinOp::Mul, 10),
        Punct::Slash => (BinOp::Div, 10),
        Punct::Percent => (BinOp::Mod, 10),
        _ => return None,
    })
}

/// The error for a number that is no valid C literal, at `span`.
fn bad_number(text: &str, fault: NumberFault, span: Span) -> Diagnostic {
    match fault {
        NumberFault::OutOfRange => Diagnostic::new(
            Code::LiteralOutOfRange,
            format!("the literal `{text}` is out of range (integers beyond 64 bits, floating-point literals beyond their type)"),
            span,
            "out of range",
        ),
        NumberFault::Malformed => Diagnostic::new(
            Code::MalformedNumber,
            format!("`{text}` is not a C number"),
            span,
            "malformed number",
        ),
    }
}

/// A token as the user would recognise it in an error message.
fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) | Tok::Other(s) | Tok::BadNumber(s, _) => s.clone(),
        Tok::Int(v) => v.value.to_string(),
        Tok::Float(v) => v.value.to_string(),
        Tok::Char(_) => "character literal".into(),
        Tok::Str => "string literal".into(),
        Tok::P(p) => p.spelling().into(),
        Tok::Directive(d) => d.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::c::lexer::lex;

    fn pp(text: &str) -> Vec<PpToken> {
        lex(text)
            .into_iter()
            .map(|t| PpToken {
                tok: t.tok,
                span: Some(Span::new(t.start, t.end)),
                line: Some(1),
            })
            .collect()
    }

    #[test]
    fn precedence_and_casts() {
        let toks = pp("a = b + c * (double) d[i][j] < e ? f : g");
        let typedefs = Typedefs::new();
        let e = Parser::new(&toks, &typedefs).expr().unwrap();
        let ExprKind::Assign(None, _, rhs) = e.kind else {
            panic!("an assignment")
        };
        let ExprKind::Cond(c, ..) = rhs.kind else {
            panic!("a conditional")
        };
        let ExprKind::Binary(BinOp::Lt, sum, _) = c.kind else {
            panic!("a comparison")
        };
        let ExprKind::Binary(BinOp::Add, _, product) = sum.kind else {
            panic!("a sum")
        };
        let ExprKind::Binary(BinOp::Mul, _, cast) = product.kind else {
            panic!("a product")
        };
        assert!(matches!(
            cast.kind,
            ExprKind::Cast(
                CType {
                    base: Base::Double,
                    ..
                },
                _
            )
        ));
        assert_eq!(rhs.span, Span::new(4, 40));
    }

    #[test]
    fn declarations() {
        let mut typedefs = Typedefs::new();
        typedefs.insert("DT".into(), CType::scalar(Base::Double));
        let toks = pp("static void k(int n, DT A[10][n], double *restrict p, long double x) {");
        let mut p = Parser::new(&toks, &typedefs);
        let d = p.declaration().unwrap();
        assert!(d.is_static);
        let params = d.declarators[0].params.as_ref().unwrap();
        assert_eq!(params.len(), 4);
        assert_eq!(params[1].ty.base, Base::Double);
        assert_eq!(params[1].ty.dims.len(), 2);
        assert_eq!(params[2].ty.pointers, 1);
        assert_eq!(params[3].ty.base, Base::LongDouble);
        assert!(p.is(Punct::LBrace));
        let toks = pp("unsigned long long x = 1, y[3] = {1, 2, 3}; double (*q)[4][5];");
        let mut p = Parser::new(&toks, &typedefs);
        let d = p.declaration().unwrap();
        assert_eq!(d.declarators[0].ty.base, Base::ULong);
        assert!(d.declarators[1].braced);
        let d = p.declaration().unwrap();
        assert_eq!(d.declarators[0].ty.pointers, 1);
        assert_eq!(d.declarators[0].ty.dims.len(), 2);
    }

    #[test]
    fn statements_outside_the_subset_are_recognised() {
        let toks = pp("while (x) x--; for (int i = 0; i < n; i++) { if (i) break; else y = 1; }");
        let typedefs = Typedefs::new();
        let s = Parser::new(&toks, &typedefs).statements().unwrap();
        assert!(matches!(s[0].kind, StmtKind::Jump(Jump::While, _)));
        assert!(matches!(
            s[1].kind,
            StmtKind::For {
                init: ForInit::Decl(_),
                ..
            }
        ));
        let toks = pp("x = ;");
        let err = Parser::new(&toks, &typedefs).statements().unwrap_err();
        assert_eq!(err.message, "expected an expression, found `;`");
    }
}
