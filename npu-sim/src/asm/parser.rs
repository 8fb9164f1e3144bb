//! The parser: tokens to a typed, name-resolved [`Program`], with the machine-independent
//! checks (operand kinds, element types, tiers an instruction accepts).

use super::lexer::{lex, Tok};
use crate::diag::{Code, Diagnostic};
use crate::program::*;
use std::collections::HashMap;

/// Parses a whole `.npu` source.
pub fn parse(source: &str) -> Result<Program, Diagnostic> {
    let mut p = Parser {
        toks: lex(source)?,
        pos: 0,
        prog: Program::default(),
        names: HashMap::new(),
        scope: vec![],
    };
    while p.peek() != &Tok::Eof {
        if p.is_keyword("tensor") {
            p.tensor()?;
        } else if p.is_keyword("buffer") {
            p.buffer()?;
        } else {
            let s = p.stmt()?;
            p.prog.body.push(s);
        }
    }
    Ok(p.prog)
}

type PResult<T> = Result<T, Diagnostic>;

struct Parser {
    toks: Vec<(Tok, Span)>,
    pos: usize,
    prog: Program,
    names: HashMap<String, Target>,
    scope: Vec<(String, VarId)>,
}

/// A number operand or option value.
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

enum Arg {
    Ref(MemRef),
    Num(Num, Span),
    /// `(expr)`: an expression operand (a flag id).
    Expr(Expr, Span),
    Pipe(Pipe, Span),
    All(Span),
}

impl Arg {
    fn span(&self) -> Span {
        match self {
            Arg::Ref(r) => r.span,
            Arg::Num(_, s) | Arg::Expr(_, s) | Arg::Pipe(_, s) | Arg::All(s) => *s,
        }
    }
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }
    fn span(&self) -> Span {
        self.toks[self.pos].1
    }
    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1)].1
    }
    fn bump(&mut self) -> (Tok, Span) {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn is_keyword(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == kw)
    }
    fn unexpected(&self, what: &str) -> Diagnostic {
        Diagnostic::new(
            Code::Syntax,
            self.span(),
            format!("expected {what}, found {}", self.peek().describe()),
        )
    }
    fn punct(&mut self, c: char) -> PResult<Span> {
        if self.peek() == &Tok::Punct(c) {
            Ok(self.bump().1)
        } else {
            Err(self.unexpected(&format!("`{c}`")))
        }
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == &Tok::Punct(c) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn keyword(&mut self, kw: &str) -> PResult<Span> {
        if self.is_keyword(kw) {
            Ok(self.bump().1)
        } else {
            Err(self.unexpected(&format!("`{kw}`")))
        }
    }
    fn ident(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident(s) => Ok((s, self.bump().1)),
            _ => Err(self.unexpected(what)),
        }
    }
    fn int(&mut self) -> PResult<(u64, Span)> {
        match *self.peek() {
            Tok::Int(i) => Ok((i, self.bump().1)),
            _ => Err(self.unexpected("an integer")),
        }
    }
    fn keyword_of<K>(&mut self, what: &str, from: fn(&str) -> Option<K>) -> PResult<(K, Span)> {
        let (name, span) = self.ident(what)?;
        from(&name).map(|k| (k, span)).ok_or_else(|| {
            Diagnostic::new(
                Code::UnknownKeyword,
                span,
                format!("unknown {what} `{name}`"),
            )
        })
    }

    fn declare(&mut self, name: &str, span: Span, target: Target) -> PResult<()> {
        if name == "core"
            || name == "cores"
            || self.names.insert(name.to_string(), target).is_some()
        {
            return Err(Diagnostic::new(
                Code::Duplicate,
                span,
                format!("`{name}` is already declared"),
            ));
        }
        Ok(())
    }

    fn shape(&mut self) -> PResult<Vec<u64>> {
        self.punct('[')?;
        let mut dims = vec![];
        loop {
            let (d, span) = self.int()?;
            if d == 0 || d > 1 << 32 {
                return Err(Diagnostic::new(
                    Code::BadValue,
                    span,
                    "a dimension must be in 1..=2^32",
                ));
            }
            dims.push(d);
            if !self.eat(',') {
                break;
            }
        }
        self.punct(']')?;
        if dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .is_none_or(|n| n > 1 << 36)
        {
            return Err(Diagnostic::new(
                Code::BadValue,
                self.prev_span(),
                "the shape has more than 2^36 elements",
            ));
        }
        Ok(dims)
    }

    /// `tensor NAME : DTYPE [dims] in|out|inout|scratch`
    fn tensor(&mut self) -> PResult<()> {
        let start = self.keyword("tensor")?;
        let (name, nspan) = self.ident("a tensor name")?;
        self.punct(':')?;
        let (dtype, _) = self.keyword_of("element type", DType::from_name)?;
        let shape = self.shape()?;
        let (dir, end) =
            self.keyword_of("direction (in, out, inout, scratch)", Direction::from_name)?;
        let id = TensorId(self.prog.tensors.len() as u32);
        self.declare(&name, nspan, Target::Tensor(id))?;
        self.prog.tensors.push(TensorDecl {
            name,
            dtype,
            shape,
            dir,
            span: start.to(end),
        });
        Ok(())
    }

    /// `buffer NAME : TIER DTYPE [dims] (@ OFFSET)?`
    fn buffer(&mut self) -> PResult<()> {
        let start = self.keyword("buffer")?;
        let (name, nspan) = self.ident("a buffer name")?;
        self.punct(':')?;
        let (tier, _) = self.keyword_of("tier", Tier::from_name)?;
        let (dtype, _) = self.keyword_of("element type", DType::from_name)?;
        let shape = self.shape()?;
        let placement = if self.eat('@') {
            Placement::At(self.int()?.0)
        } else {
            Placement::Auto
        };
        let id = BufferId(self.prog.buffers.len() as u32);
        self.declare(&name, nspan, Target::Buffer(id))?;
        let span = start.to(self.prev_span());
        self.prog.buffers.push(BufferDecl {
            name,
            tier,
            dtype,
            shape,
            placement,
            span,
        });
        Ok(())
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        if self.is_keyword("loop") {
            return self.loop_stmt().map(Stmt::Loop);
        }
        if self.is_keyword("tensor") || self.is_keyword("buffer") {
            return Err(Diagnostic::new(
                Code::Syntax,
                self.span(),
                "declarations belong at the top level",
            ));
        }
        self.instr().map(|i| Stmt::Instr(Box::new(i)))
    }

    /// `loop VAR in LO..HI (step S)? { stmts }`
    fn loop_stmt(&mut self) -> PResult<Loop> {
        let start = self.keyword("loop")?;
        let (name, nspan) = self.ident("a loop variable")?;
        if name == "core" || name == "cores" {
            return Err(Diagnostic::new(
                Code::Duplicate,
                nspan,
                format!("`{name}` is a built-in name"),
            ));
        }
        self.keyword("in")?;
        let lo = self.expr()?;
        if self.peek() != &Tok::DotDot {
            return Err(self.unexpected("`..`"));
        }
        self.bump();
        let hi = self.expr()?;
        let step = if self.is_keyword("step") {
            self.bump();
            let (s, span) = self.int()?;
            if s == 0 || s > i32::MAX as u64 {
                return Err(Diagnostic::new(
                    Code::BadValue,
                    span,
                    "a loop step must be positive",
                ));
            }
            s
        } else {
            1
        };
        let span = start.to(self.prev_span());
        self.punct('{')?;
        let var = VarId(self.prog.vars.len() as u32);
        self.prog.vars.push(name.clone());
        self.scope.push((name, var));
        let mut body = vec![];
        while !self.eat('}') {
            if self.peek() == &Tok::Eof {
                self.scope.pop();
                return Err(self.unexpected("`}`"));
            }
            body.push(self.stmt()?);
        }
        self.scope.pop();
        Ok(Loop {
            var,
            lo,
            hi,
            step,
            body,
            span,
        })
    }

    /// `sum (OP sum)?` with OP one of `== != < <= > >=`.
    fn expr(&mut self) -> PResult<Expr> {
        let lhs = self.sum()?;
        let Some(op) = self.comparison() else {
            return Ok(lhs);
        };
        Ok(Expr::Cmp(op, Box::new(lhs), Box::new(self.sum()?)))
    }

    /// Consumes a comparison operator (two adjacent characters for `==`, `!=`, `<=`, `>=`).
    fn comparison(&mut self) -> Option<CmpOp> {
        let first = match self.peek() {
            Tok::Punct(c @ ('=' | '!' | '<' | '>')) => *c,
            _ => return None,
        };
        let second = self.toks.get(self.pos + 1).and_then(|(t, s)| match t {
            Tok::Punct('=') if s.start == self.span().end => Some(()),
            _ => None,
        });
        let op = match (first, second) {
            ('=', Some(())) => CmpOp::Eq,
            ('!', Some(())) => CmpOp::Ne,
            ('<', Some(())) => CmpOp::Le,
            ('>', Some(())) => CmpOp::Ge,
            ('<', None) => CmpOp::Lt,
            ('>', None) => CmpOp::Gt,
            _ => return None,
        };
        self.pos += 1 + second.is_some() as usize;
        Some(op)
    }

    /// `min(a, b)`, `max(a, b)` or `select(c, a, b)`, with the name already read.
    fn call(&mut self, name: &str) -> PResult<Expr> {
        self.punct('(')?;
        let mut args = vec![self.expr()?];
        while self.eat(',') {
            args.push(self.expr()?);
        }
        let close = self.punct(')')?;
        let want = if name == "select" { 3 } else { 2 };
        if args.len() != want {
            return Err(Diagnostic::new(
                Code::Operands,
                close,
                format!("`{name}` takes {want} arguments, found {}", args.len()),
            ));
        }
        let mut args = args.into_iter().map(Box::new);
        let mut next = || args.next().expect("counted");
        Ok(match name {
            "min" => Expr::Min(next(), next()),
            "max" => Expr::Max(next(), next()),
            _ => Expr::Select(next(), next(), next()),
        })
    }

    fn sum(&mut self) -> PResult<Expr> {
        let mut e = self.term()?;
        loop {
            if self.eat('+') {
                e = Expr::Add(Box::new(e), Box::new(self.term()?));
            } else if self.eat('-') {
                e = Expr::Sub(Box::new(e), Box::new(self.term()?));
            } else {
                return Ok(e);
            }
        }
    }

    fn term(&mut self) -> PResult<Expr> {
        let start = self.span();
        let mut e = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Punct(c @ ('*' | '/' | '%')) => *c,
                _ => return Ok(e),
            };
            self.bump();
            let rhs = self.unary()?;
            let span = start.to(self.prev_span());
            e = match (op, e, rhs) {
                ('*', Expr::Const(c), r) => Expr::Mul(c, Box::new(r)),
                ('*', l, Expr::Const(c)) => Expr::Mul(c, Box::new(l)),
                ('*', _, _) => {
                    return Err(Diagnostic::new(
                        Code::NonAffine,
                        span,
                        "a product needs a constant factor",
                    ));
                }
                (_, l, Expr::Const(c)) if c > 0 => {
                    if op == '/' {
                        Expr::Div(Box::new(l), c)
                    } else {
                        Expr::Mod(Box::new(l), c)
                    }
                }
                (_, _, Expr::Const(_)) => {
                    return Err(Diagnostic::new(
                        Code::BadValue,
                        span,
                        "division by a non-positive constant",
                    ));
                }
                _ => {
                    return Err(Diagnostic::new(
                        Code::NonAffine,
                        span,
                        "a divisor must be a constant",
                    ))
                }
            };
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        if self.eat('-') {
            return Ok(match self.unary()? {
                Expr::Const(c) => Expr::Const(-c),
                e => Expr::Mul(-1, Box::new(e)),
            });
        }
        match self.peek().clone() {
            Tok::Int(i) => {
                let span = self.bump().1;
                i64::try_from(i)
                    .ok()
                    .filter(|i| *i < 1 << 48)
                    .map(Expr::Const)
                    .ok_or_else(|| {
                        Diagnostic::new(Code::BadValue, span, "integer too large for an address")
                    })
            }
            Tok::Ident(name) => {
                let span = self.bump().1;
                match name.as_str() {
                    "min" | "max" | "select" if self.peek() == &Tok::Punct('(') => self.call(&name),
                    "core" => Ok(Expr::Core),
                    "cores" => Ok(Expr::Cores),
                    _ => self
                        .scope
                        .iter()
                        .rev()
                        .find(|(n, _)| *n == name)
                        .map(|(_, v)| Expr::Var(*v))
                        .ok_or_else(|| {
                            Diagnostic::new(
                                Code::UnknownVar,
                                span,
                                format!("unknown variable `{name}`"),
                            )
                        }),
                }
            }
            Tok::Punct('(') => {
                self.bump();
                let e = self.expr()?;
                self.punct(')')?;
                Ok(e)
            }
            _ => Err(self.unexpected("an expression")),
        }
    }

    /// `NAME[e, ...]` with `NAME` already read.
    fn memref(&mut self, name: String, start: Span) -> PResult<MemRef> {
        let target = *self.names.get(&name).ok_or_else(|| {
            Diagnostic::new(
                Code::UnknownName,
                start,
                format!("unknown tensor or buffer `{name}`"),
            )
        })?;
        self.punct('[')?;
        let mut index = vec![self.expr()?];
        while self.eat(',') {
            index.push(self.expr()?);
        }
        self.punct(']')?;
        let span = start.to(self.prev_span());
        let rank = self.prog.target_info(target).2.len();
        if index.len() != rank {
            return Err(Diagnostic::new(
                Code::Rank,
                span,
                format!(
                    "`{name}` has {rank} dimension(s), the index has {}",
                    index.len()
                ),
            ));
        }
        Ok(MemRef {
            target,
            index,
            span,
        })
    }

    fn number(&mut self, negative: bool) -> PResult<(Num, Span)> {
        let (tok, span) = self.bump();
        let sign = if negative { -1.0 } else { 1.0 };
        match tok {
            Tok::Int(i) if i < 1 << 53 => Ok((
                Num::Int(if negative { -(i as i64) } else { i as i64 }),
                span,
            )),
            Tok::Float(f) => Ok((Num::Float(sign * f), span)),
            Tok::Int(_) => Err(Diagnostic::new(Code::BadValue, span, "number too large")),
            tok => match tok {
                Tok::Ident(name) if let Some(v) = non_finite(&name) => {
                    Ok((Num::Float(sign * v), span))
                }
                _ => {
                    self.pos -= 1;
                    Err(self.unexpected("a number"))
                }
            },
        }
    }

    fn instr(&mut self) -> PResult<Instr> {
        let (opcode, op_span) = self.ident("an instruction or `loop`")?;
        let mut args = Args {
            opcode: opcode.clone(),
            span: op_span,
            pos: vec![],
            opts: vec![],
        };
        // `sync_all` takes no operands: newlines only separate tokens, so what follows it is
        // the next instruction.
        let takes_operands = opcode != "sync_all";
        if takes_operands && !matches!(self.peek(), Tok::Eof | Tok::Punct('}')) {
            loop {
                self.arg(&mut args)?;
                if !self.eat(',') {
                    break;
                }
            }
        }
        args.span = op_span.to(self.prev_span());
        let op = self.build(&opcode, op_span, &mut args)?;
        args.finish()?;
        Ok(Instr {
            op,
            span: args.span,
            origin: Origin::default(),
        })
    }

    fn arg(&mut self, args: &mut Args) -> PResult<()> {
        match self.peek().clone() {
            Tok::Ident(name) => {
                let span = self.bump().1;
                if self.peek() == &Tok::Punct('[') {
                    let r = self.memref(name, span)?;
                    args.pos.push(Arg::Ref(r));
                } else if self.eat('=') {
                    let v = self.expr()?;
                    args.opts.push((name, Some(v), span.to(self.prev_span())));
                } else if name == "ALL" {
                    args.pos.push(Arg::All(span));
                } else if let Some(v) = non_finite(&name) {
                    // the printer writes infinite and NaN immediates as `inf` and `NaN`
                    args.pos.push(Arg::Num(Num::Float(v), span));
                } else if let Some(p) = Pipe::from_name(&name) {
                    args.pos.push(Arg::Pipe(p, span));
                } else {
                    args.opts.push((name, None, span));
                }
            }
            Tok::Punct('(') => {
                let start = self.span();
                let e = self.expr()?;
                args.pos.push(Arg::Expr(e, start.to(self.prev_span())));
            }
            Tok::Punct('-') => {
                let start = self.bump().1;
                let (n, span) = self.number(true)?;
                args.pos.push(Arg::Num(n, start.to(span)));
            }
            Tok::Int(_) | Tok::Float(_) => {
                let (n, span) = self.number(false)?;
                args.pos.push(Arg::Num(n, span));
            }
            _ => return Err(self.unexpected("an operand")),
        }
        Ok(())
    }

    fn build(&mut self, opcode: &str, op_span: Span, a: &mut Args) -> PResult<Op> {
        let prog = &self.prog;
        let op = match opcode {
            "dma" => {
                a.arity(&["destination", "source"])?;
                let (dst, src) = (a.mref(0)?, a.mref(1)?);
                let len = a.req("len")?;
                let dma = Dma {
                    sizes: DmaSizes {
                        count: a.expr_or("count", 1)?,
                        src_stride: a.expr_or("src_stride", len.clone())?,
                        dst_stride: a.expr_or("dst_stride", len.clone())?,
                        len,
                    },
                    mode: a.dma_mode()?,
                    relu: a.flag("relu")?,
                    atomic: a.flag("atomic")?,
                    dst,
                    src,
                };
                check_dma(prog, &dma, a.span)?;
                Op::Dma(dma)
            }
            "load3d" => {
                a.arity(&["destination", "source"])?;
                let op = Load3d {
                    dst: a.mref(0)?,
                    src: a.mref(1)?,
                    sizes: Load3dSizes {
                        h: a.req("h")?,
                        w: a.req("w")?,
                        c: a.req("c")?,
                        kh: a.req("kh")?,
                        kw: a.req("kw")?,
                        stride: a.expr_or("stride", 1)?,
                        pad_top: a.expr_or("pad_top", 0)?,
                        pad_bottom: a.expr_or("pad_bottom", 0)?,
                        pad_left: a.expr_or("pad_left", 0)?,
                        pad_right: a.expr_or("pad_right", 0)?,
                        m_start: a.expr_or("m_start", 0)?,
                        m_ext: a.req("m_ext")?,
                        k_start: a.expr_or("k_start", 0)?,
                        k_ext: a.req("k_ext")?,
                    },
                };
                check_load3d(prog, &op, a.span)?;
                Op::Load3d(op)
            }
            "mmad" => {
                a.arity(&["accumulator C", "A", "B"])?;
                let op = Mmad {
                    c: a.mref(0)?,
                    a: a.mref(1)?,
                    b: a.mref(2)?,
                    sizes: MmadSizes {
                        m: a.req("m")?,
                        k: a.req("k")?,
                        n: a.req("n")?,
                    },
                    init: a.expr_flag("init"),
                };
                check_mmad(prog, &op)?;
                Op::Mmad(op)
            }
            "set_flag" | "wait_flag" => {
                a.arity(&["source pipe", "destination pipe", "flag id"])?;
                let flag = Flag {
                    src: a.pipe(0)?,
                    dst: a.pipe(1)?,
                    id: a.flag_id(2)?,
                };
                if flag.src == flag.dst {
                    return Err(Diagnostic::new(
                        Code::BadFlag,
                        a.span,
                        "a flag must join two different pipes",
                    ));
                }
                if opcode == "set_flag" {
                    Op::SetFlag(flag)
                } else {
                    Op::WaitFlag(flag)
                }
            }
            "sync_all" => {
                a.arity(&[])?;
                Op::SyncAll
            }
            "barrier" => {
                a.arity(&["pipe or ALL"])?;
                match &a.pos[0] {
                    Arg::All(_) => Op::Barrier(BarrierScope::All),
                    _ => Op::Barrier(BarrierScope::Pipe(a.pipe(0)?)),
                }
            }
            _ => Op::Vector(self.vector(opcode, op_span, a)?),
        };
        Ok(op)
    }

    fn vector(&self, opcode: &str, op_span: Span, a: &mut Args) -> PResult<Vector> {
        let unknown = || {
            Diagnostic::new(
                Code::UnknownOpcode,
                op_span,
                format!("unknown instruction `{opcode}`"),
            )
        };
        let suffix = |prefix: &str| opcode.strip_prefix(prefix);
        let op = if let Some(op) = BinaryOp::from_name(opcode) {
            a.arity(&["destination", "a", "b"])?;
            VecOp::Binary {
                op,
                a: a.mref(1)?,
                b: a.mref(2)?,
            }
        } else if let Some(op) = UnaryOp::from_name(opcode) {
            a.arity(&["destination", "source"])?;
            VecOp::Unary { op, a: a.mref(1)? }
        } else if let Some(op) = ScalarOp::from_name(opcode) {
            a.arity(&["destination", "source", "scalar"])?;
            VecOp::Scalar {
                op,
                a: a.mref(1)?,
                value: a.num(2)?,
            }
        } else if opcode == "vdup" {
            a.arity(&["destination", "scalar"])?;
            VecOp::Dup { value: a.num(1)? }
        } else if opcode == "vbcast" {
            a.arity(&["destination", "source"])?;
            VecOp::Bcast { a: a.mref(1)? }
        } else if let Some(op) = suffix("vcmp.").map(|s| CmpOp::from_name(s).ok_or_else(unknown)) {
            a.arity(&["destination", "a", "b"])?;
            VecOp::Cmp {
                op: op?,
                a: a.mref(1)?,
                b: a.mref(2)?,
            }
        } else if opcode == "vsel" {
            a.arity(&["destination", "condition", "a", "b"])?;
            VecOp::Select {
                cond: a.mref(1)?,
                a: a.mref(2)?,
                b: a.mref(3)?,
            }
        } else if opcode == "vconv" {
            a.arity(&["destination", "source"])?;
            VecOp::Conv { a: a.mref(1)? }
        } else if let Some(op) =
            suffix("vreduce.").map(|s| ReduceOp::from_name(s).ok_or_else(unknown))
        {
            a.arity(&["destination", "source"])?;
            VecOp::Reduce {
                op: op?,
                a: a.mref(1)?,
            }
        } else {
            return Err(unknown());
        };
        let nsrc = op.sources().len();
        let mut src_rs = [None, None, None];
        for (i, rs) in src_rs.iter_mut().enumerate().take(nsrc) {
            *rs = a.opt_expr(&format!("src{i}_rs"))?;
        }
        let v = Vector {
            dst: a.mref(0)?,
            sizes: VectorSizes {
                repeat: a.expr_or("repeat", 1)?,
                mask: a.opt_expr("mask")?,
                dst_rs: a.opt_expr("dst_rs")?,
                src_rs,
            },
            op,
        };
        check_vector(&self.prog, &v, a.span)?;
        Ok(v)
    }
}

/// The operands and options of one instruction, consumed as the instruction is built.
struct Args {
    opcode: String,
    span: Span,
    pos: Vec<Arg>,
    opts: Vec<(String, Option<Expr>, Span)>,
}

impl Args {
    fn arity(&self, names: &[&str]) -> PResult<()> {
        if self.pos.len() != names.len() {
            return Err(Diagnostic::new(
                Code::Operands,
                self.span,
                format!(
                    "`{}` takes {} operand(s) ({}), found {}",
                    self.opcode,
                    names.len(),
                    names.join(", "),
                    self.pos.len()
                ),
            ));
        }
        Ok(())
    }
    fn wrong(&self, i: usize, what: &str) -> Diagnostic {
        Diagnostic::new(
            Code::Operands,
            self.pos[i].span(),
            format!("operand {} of `{}` must be {what}", i + 1, self.opcode),
        )
    }
    fn mref(&self, i: usize) -> PResult<MemRef> {
        match &self.pos[i] {
            Arg::Ref(r) => Ok(r.clone()),
            _ => Err(self.wrong(i, "a memory reference `name[index]`")),
        }
    }
    fn pipe(&self, i: usize) -> PResult<Pipe> {
        match &self.pos[i] {
            Arg::Pipe(p, _) => Ok(*p),
            _ => Err(self.wrong(i, "a pipe (S, MTE1, MTE2, MTE3, M, V)")),
        }
    }
    fn num(&self, i: usize) -> PResult<f64> {
        match &self.pos[i] {
            Arg::Num(n, _) => Ok(n.as_f64()),
            _ => Err(self.wrong(i, "a number")),
        }
    }
    fn flag_id(&self, i: usize) -> PResult<Expr> {
        match &self.pos[i] {
            Arg::Num(Num::Int(n), _) if (0..1 << 16).contains(n) => Ok(Expr::Const(*n)),
            Arg::Expr(e, _) => Ok(e.clone()),
            Arg::Num(_, span) => Err(Diagnostic::new(
                Code::BadFlag,
                *span,
                "a flag id must be a small non-negative integer",
            )),
            _ => Err(self.wrong(i, "a flag id")),
        }
    }
    fn take(&mut self, name: &str) -> Option<(Option<Expr>, Span)> {
        let i = self.opts.iter().position(|(n, _, _)| n == name)?;
        let (_, v, s) = self.opts.remove(i);
        Some((v, s))
    }
    /// `name=EXPR` (its range is checked where an instance executes).
    fn opt_expr(&mut self, name: &str) -> PResult<Option<Expr>> {
        match self.take(name) {
            None => Ok(None),
            Some((Some(e), _)) => Ok(Some(e)),
            Some((None, span)) => Err(Diagnostic::new(
                Code::BadValue,
                span,
                format!("`{name}` needs a value: `{name}=EXPR`"),
            )),
        }
    }
    fn expr_or(&mut self, name: &str, default: impl Into<Expr>) -> PResult<Expr> {
        Ok(self.opt_expr(name)?.unwrap_or_else(|| default.into()))
    }
    fn req(&mut self, name: &str) -> PResult<Expr> {
        match self.opt_expr(name)? {
            Some(v) => Ok(v),
            None => Err(Diagnostic::new(
                Code::MissingOption,
                self.span,
                format!("`{}` needs the option `{name}=`", self.opcode),
            )),
        }
    }
    /// At most one of the layout options `transpose`, `nd2nz`, `nz2nd`.
    fn dma_mode(&mut self) -> PResult<DmaMode> {
        let mut mode = DmaMode::Plain;
        for &m in &DmaMode::ALL[1..] {
            if !self.flag(m.name())? {
                continue;
            }
            if mode != DmaMode::Plain {
                return Err(Diagnostic::new(
                    Code::BadValue,
                    self.span,
                    format!("`{mode}` and `{m}` exclude each other"),
                ));
            }
            mode = m;
        }
        Ok(mode)
    }
    fn flag(&mut self, name: &str) -> PResult<bool> {
        match self.take(name) {
            None => Ok(false),
            Some((None, _)) => Ok(true),
            Some((Some(_), span)) => Err(Diagnostic::new(
                Code::BadValue,
                span,
                format!("`{name}` takes no value"),
            )),
        }
    }
    /// `name` alone (1), `name=EXPR`, or absent (0).
    fn expr_flag(&mut self, name: &str) -> Expr {
        match self.take(name) {
            None => Expr::Const(0),
            Some((None, _)) => Expr::Const(1),
            Some((Some(e), _)) => e,
        }
    }
    fn finish(&self) -> PResult<()> {
        match self.opts.first() {
            Some((name, _, span)) => Err(Diagnostic::new(
                Code::UnknownOption,
                *span,
                format!("`{}` takes no option `{name}`", self.opcode),
            )),
            None => Ok(()),
        }
    }
}

fn tier_of(prog: &Program, r: &MemRef) -> Option<Tier> {
    match r.target {
        Target::Buffer(b) => Some(prog.buffer(b).tier),
        Target::Tensor(_) => None,
    }
}

fn dtype_of(prog: &Program, r: &MemRef) -> DType {
    prog.target_info(r.target).1
}

fn tier_name(t: Option<Tier>) -> &'static str {
    t.map_or("gm", Tier::name)
}

fn check_dma(prog: &Program, d: &Dma, span: Span) -> PResult<()> {
    let (st, dt) = (tier_of(prog, &d.src), tier_of(prog, &d.dst));
    let (sd, dd) = (dtype_of(prog, &d.src), dtype_of(prog, &d.dst));
    let converting =
        st == Some(Tier::L0c) && sd == DType::F32 && matches!(dd, DType::F16 | DType::Bf16);
    if sd != dd && !converting {
        return Err(Diagnostic::new(
            Code::DType,
            span,
            format!("`dma` copies {sd} to {dd}; only l0c f32 -> f16/bf16 converts"),
        ));
    }
    if d.relu && st != Some(Tier::L0c) {
        return Err(Diagnostic::new(
            Code::WrongTier,
            span,
            "`relu` applies only to copies out of l0c",
        ));
    }
    if d.atomic && !(st == Some(Tier::Ub) && dt.is_none()) {
        return Err(Diagnostic::new(
            Code::WrongTier,
            span,
            format!(
                "`atomic` applies only to ub -> gm, not {} -> {}",
                tier_name(st),
                tier_name(dt)
            ),
        ));
    }
    if d.atomic && !matches!(dd, DType::F16 | DType::F32 | DType::I32) {
        return Err(Diagnostic::new(
            Code::DType,
            span,
            format!("`atomic` adds f16, f32 or i32, not {dd}"),
        ));
    }
    let (from, to, fits) = match d.mode {
        DmaMode::Plain => return Ok(()),
        DmaMode::Transpose => (
            "l1",
            "l0a/l0b",
            st == Some(Tier::L1) && matches!(dt, Some(Tier::L0a | Tier::L0b)),
        ),
        DmaMode::Nd2nz => (
            "gm/ub",
            "l1",
            matches!(st, None | Some(Tier::Ub)) && dt == Some(Tier::L1),
        ),
        DmaMode::Nz2nd => ("l0c", "ub", st == Some(Tier::L0c) && dt == Some(Tier::Ub)),
    };
    if !fits {
        return Err(Diagnostic::new(
            Code::WrongTier,
            span,
            format!(
                "`{}` applies only to {from} -> {to}, not {} -> {}",
                d.mode,
                tier_name(st),
                tier_name(dt)
            ),
        ));
    }
    if d.mode == DmaMode::Transpose && dd.size() != 2 {
        return Err(Diagnostic::new(
            Code::DType,
            span,
            format!("`transpose` moves 16-bit fractals, not {dd}"),
        ));
    }
    Ok(())
}

fn check_load3d(prog: &Program, op: &Load3d, span: Span) -> PResult<()> {
    let (st, dt) = (tier_of(prog, &op.src), tier_of(prog, &op.dst));
    if st != Some(Tier::L1) || dt != Some(Tier::L0a) {
        return Err(Diagnostic::new(
            Code::WrongTier,
            span,
            format!(
                "`load3d` reads l1 and writes l0a, not {} -> {}",
                tier_name(st),
                tier_name(dt)
            ),
        ));
    }
    if dtype_of(prog, &op.src) != dtype_of(prog, &op.dst) {
        return Err(Diagnostic::new(
            Code::DType,
            span,
            "`load3d` needs equal element types",
        ));
    }
    Ok(())
}

fn check_mmad(prog: &Program, op: &Mmad) -> PResult<()> {
    for r in [&op.c, &op.a, &op.b] {
        if tier_of(prog, r).is_none() {
            return Err(Diagnostic::new(
                Code::WrongTier,
                r.span,
                "`mmad` operands are buffers, not GM tensors",
            ));
        }
    }
    let types = (
        dtype_of(prog, &op.a),
        dtype_of(prog, &op.b),
        dtype_of(prog, &op.c),
    );
    match types {
        (DType::F16, DType::F16, DType::F32) | (DType::Bf16, DType::Bf16, DType::F32) | (DType::I8, DType::I8, DType::I32) => {
            Ok(())
        }
        (a, b, c) => Err(Diagnostic::new(
            Code::DType,
            op.c.span.to(op.b.span),
            format!("`mmad` takes f16 x f16 -> f32, bf16 x bf16 -> f32 or i8 x i8 -> i32, not {a} x {b} -> {c}"),
        )),
    }
}

fn check_vector(prog: &Program, v: &Vector, span: Span) -> PResult<()> {
    let srcs = v.op.sources();
    for r in std::iter::once(&v.dst).chain(srcs.iter().copied()) {
        if tier_of(prog, r) != Some(Tier::Ub) {
            return Err(Diagnostic::new(
                Code::WrongTier,
                r.span,
                "vector operands must be in ub",
            ));
        }
    }
    let dt = dtype_of(prog, &v.dst);
    let bad = |msg: String| Err(Diagnostic::new(Code::DType, span, msg));
    if let VecOp::Conv { a } = &v.op {
        let st = dtype_of(prog, a);
        return if st == dt {
            bad(format!("`vconv` from {st} to {dt} converts nothing"))
        } else {
            Ok(())
        };
    }
    if let Some(r) = srcs.iter().find(|r| dtype_of(prog, r) != dt) {
        return bad(format!(
            "`{}` needs one element type, found {dt} and {}",
            v.op.mnemonic(),
            dtype_of(prog, r)
        ));
    }
    let float_only = matches!(&v.op, VecOp::Unary { op, .. } if !matches!(op, UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Mov))
        || matches!(
            &v.op,
            VecOp::Binary {
                op: BinaryOp::Div,
                ..
            }
        );
    if dt == DType::I8 || (float_only && dt.is_int()) {
        return bad(format!("`{}` does not take {dt}", v.op.mnemonic()));
    }
    Ok(())
}

/// The value of a non-finite immediate as the printer writes it (`inf`, `NaN`).
fn non_finite(name: &str) -> Option<f64> {
    match name {
        "inf" => Some(f64::INFINITY),
        "NaN" => Some(f64::NAN),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_declarations_loops_and_instructions() {
        let p = parse(
            "tensor x : f16[4, 128] in\nbuffer a : ub f16[128] @ 64\n\
             loop i in 0..4 step 2 { dma a[0], x[i + 1, 0], len=128\n vadds a[0], a[0], -1.5, repeat=1 }",
        )
        .unwrap();
        assert_eq!(p.tensors[0].shape, vec![4, 128]);
        assert_eq!(p.buffers[0].placement, Placement::At(64));
        let Stmt::Loop(l) = &p.body[0] else { panic!() };
        assert_eq!(l.step, 2);
        assert_eq!(l.body.len(), 2);
        let Stmt::Instr(i) = &l.body[1] else { panic!() };
        let Op::Vector(v) = &i.op else { panic!() };
        assert!(matches!(v.op, VecOp::Scalar { value, .. } if value == -1.5));
    }

    /// The printer writes non-finite immediates as `inf`, `-inf` and `NaN`; they read back
    /// (a compiled max reduction starts from -inf).
    #[test]
    fn non_finite_immediates_read_back_as_printed() {
        let text = "buffer a : ub f32[64]\nvdup a[0], -inf, mask=64\nvmaxs a[0], a[0], inf\nvadds a[0], a[0], NaN";
        let p = parse(text).unwrap();
        let values: Vec<f64> = (p.body.iter())
            .map(|s| match s {
                Stmt::Instr(i) => match &i.op {
                    Op::Vector(v) => match v.op {
                        VecOp::Dup { value } | VecOp::Scalar { value, .. } => value,
                        _ => panic!("{v:?}"),
                    },
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(values[..2], [f64::NEG_INFINITY, f64::INFINITY]);
        assert!(values[2].is_nan());
        let printed = crate::asm::printer::print(&p);
        assert!(
            printed.contains("-inf") && printed.contains("NaN"),
            "{printed}"
        );
        assert_eq!(
            crate::asm::printer::print(&parse(&printed).unwrap()),
            printed
        );
    }

    #[test]
    fn affine_expressions_normalise_constant_factors() {
        let p = parse("buffer a : ub f16[64]\nloop i in 0..2 { vmov a[i*3 - (i+1)/2 % 5], a[0] }")
            .unwrap();
        let Stmt::Loop(l) = &p.body[0] else { panic!() };
        let Stmt::Instr(i) = &l.body[0] else { panic!() };
        let Op::Vector(v) = &i.op else { panic!() };
        assert_eq!(v.dst.index[0].eval(&[3], 0, 1), 9 - 2);
        assert!(matches!(&v.dst.index[0], Expr::Sub(a, _) if matches!(**a, Expr::Mul(3, _))));
    }

    #[test]
    fn min_max_comparisons_and_select_evaluate() {
        let p = parse(
            "buffer a : ub f16[64]\nloop i in 0..2 { vmov a[0], a[0], \
             repeat=select(i >= 1, min(i, 7), max(i - 5, 3)) + (i != 0) + (i < 1)*2 }",
        )
        .unwrap();
        let Stmt::Loop(l) = &p.body[0] else { panic!() };
        let Stmt::Instr(i) = &l.body[0] else { panic!() };
        let Op::Vector(v) = &i.op else { panic!() };
        let repeat = |i| v.sizes.repeat.eval(&[i], 0, 1);
        // select(..) + (i != 0) + 2*(i < 1)
        assert_eq!(repeat(0), 5); // 3 + 0 + 2
        assert_eq!(repeat(1), 2); // 1 + 1 + 0
        assert_eq!(repeat(9), 8); // 7 + 1 + 0
        let q =
            parse("buffer a : ub f16[64]\nvmov a[0], a[0], repeat=(1 <= 2) + (2 > 1) + (3 == 3)");
        let Stmt::Instr(i) = &q.unwrap().body[0] else {
            panic!()
        };
        let Op::Vector(v) = &i.op else { panic!() };
        assert_eq!(v.sizes.repeat.eval(&[], 0, 1), 3);
    }

    #[test]
    fn errors_carry_their_codes() {
        let code = |s: &str| parse(s).unwrap_err().code;
        assert_eq!(
            code("buffer a : ub f16[8]\nloop i in 0..2 { vmov a[i*i], a[0] }"),
            Code::NonAffine
        );
        assert_eq!(code("vfoo"), Code::UnknownOpcode);
        assert_eq!(
            code("buffer a : ub f16[8]\nvmov a[j], a[0]"),
            Code::UnknownVar
        );
        assert_eq!(
            code("buffer a : ub f16[8]\nvmov b[0], a[0]"),
            Code::UnknownName
        );
        assert_eq!(
            code("buffer a : ub f16[8]\nbuffer a : ub f16[8]"),
            Code::Duplicate
        );
        assert_eq!(code("set_flag V, V, 0"), Code::BadFlag);
        assert_eq!(
            code("buffer a : ub f16[8]\nvmov a[0], a[0], bogus=1"),
            Code::UnknownOption
        );
    }
}
