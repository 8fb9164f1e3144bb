//! The mapping text format (`polyc mappings` prints it, `polyc verify-mapping` reads it):
//!
//! ```text
//! statement S1
//! intrinsic mmad_f16
//! i1 <- n, p, q
//! i2 <- k
//! r1 <- c, r, s
//! A <- I[i1 / 9, r1 / 9, i1 / 3 % 3 + r1 / 3 % 3, i1 % 3 + r1 % 3]
//! B <- Wt[i2, r1 / 9, r1 / 3 % 3, r1 % 3]
//! C <- O[i1 / 9, i2, i1 / 3 % 3, i1 % 3]
//! blocks i1 = 16, i2 = 16, r1 = 16
//! buffers 2
//! ```
//!
//! A group line gives an intrinsic loop the software loops fused onto it, outer to inner.
//! An operand line gives the tensor element each operand element holds, over the fused
//! indices (named after the intrinsic loops), the outer loops and the parameters; an
//! optional `pad garbage` says the tails are not filled with the identity. `blocks` and
//! `buffers` are optional (one intrinsic tile per block, double-buffered). `#` starts a
//! comment.

use super::intrinsic::Intrinsic;
use super::physical::{Mapping, Pad};
use super::qexpr::QExpr;
use super::software::Software;
use std::fmt;

/// A mapping as written, before it is resolved against a statement and an intrinsic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingText {
    /// The statement's label.
    pub statement: String,
    /// The intrinsic's name.
    pub intrinsic: String,
    /// The mapping itself.
    pub body: Vec<(usize, Line)>,
}

/// One line of the body, with its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// `x <- l1, l2`.
    Group(String, Vec<String>),
    /// `A <- T[e, ...] [pad identity|garbage]`.
    Operand(String, String, Vec<QExpr>, Pad),
    /// `blocks x = n, ...`.
    Blocks(Vec<(String, i64)>),
    /// `buffers n`.
    Buffers(i64),
}

/// A syntax or resolution error, with its position (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    /// Line.
    pub line: usize,
    /// Column.
    pub column: usize,
    /// Why.
    pub message: String,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

fn err(line: usize, column: usize, message: impl Into<String>) -> TextError {
    TextError {
        line,
        column,
        message: message.into(),
    }
}

/// Parses a mapping file.
pub fn parse(text: &str) -> Result<MappingText, TextError> {
    let mut statement = None;
    let mut intrinsic = None;
    let mut body = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        let content = raw.split('#').next().unwrap_or("");
        let indent = content.len() - content.trim_start().len();
        let content = content.trim();
        if content.is_empty() {
            continue;
        }
        let col = indent + 1;
        if let Some(rest) = content.strip_prefix("statement ") {
            statement = Some(rest.trim().to_string());
        } else if let Some(rest) = content.strip_prefix("intrinsic ") {
            intrinsic = Some(rest.trim().to_string());
        } else if let Some(rest) = content.strip_prefix("buffers ") {
            let n = rest.trim().parse::<i64>().ok().filter(|&n| n > 0);
            let n = n.ok_or_else(|| err(line, col + 8, "`buffers` takes a positive integer"))?;
            body.push((line, Line::Buffers(n)));
        } else if let Some(rest) = content.strip_prefix("blocks ") {
            let mut out = Vec::new();
            for part in rest.split(',') {
                let (name, value) = part
                    .split_once('=')
                    .ok_or_else(|| err(line, col, "expected `blocks NAME = SIZE, ...`"))?;
                let v = value.trim().parse::<i64>().ok().filter(|&v| v > 0);
                let v = v.ok_or_else(|| {
                    err(
                        line,
                        col,
                        format!("the block of `{}` must be a positive integer", name.trim()),
                    )
                })?;
                out.push((name.trim().to_string(), v));
            }
            body.push((line, Line::Blocks(out)));
        } else if let Some((lhs, rhs)) = content.split_once("<-") {
            let lhs = lhs.trim().to_string();
            let rhs_col = col + content.find("<-").unwrap_or(0) + 2;
            let rhs = rhs.trim();
            if let Some(open) = rhs.find('[') {
                let close = (rhs.rfind(']'))
                    .filter(|&c| c > open)
                    .ok_or_else(|| err(line, rhs_col, "missing `]` after `[`"))?;
                let tensor = rhs[..open].trim().to_string();
                let inside = &rhs[open + 1..close];
                let index = split_top(inside)
                    .into_iter()
                    .map(|(off, e)| {
                        parse_expr(e)
                            .map_err(|(c, m)| err(line, rhs_col + 1 + open + 1 + off + c, m))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let pad = match rhs[close + 1..].trim() {
                    "" | "pad identity" => Pad::Identity,
                    "pad garbage" => Pad::Garbage,
                    other => {
                        return Err(err(
                            line,
                            rhs_col + close + 2,
                            format!("expected `pad identity` or `pad garbage`, found `{other}`"),
                        ))
                    }
                };
                body.push((line, Line::Operand(lhs, tensor, index, pad)));
            } else {
                let loops: Vec<String> = rhs.split(',').map(|s| s.trim().to_string()).collect();
                if loops.iter().any(|l| l.is_empty() || !is_ident(l)) {
                    return Err(err(
                        line,
                        rhs_col,
                        "expected loop names separated by commas",
                    ));
                }
                body.push((line, Line::Group(lhs, loops)));
            }
        } else {
            return Err(err(
                line,
                col,
                "expected `statement`, `intrinsic`, `X <- ...`, `blocks` or `buffers`",
            ));
        }
    }
    Ok(MappingText {
        statement: statement.ok_or_else(|| err(1, 1, "missing `statement NAME`"))?,
        intrinsic: intrinsic.ok_or_else(|| err(1, 1, "missing `intrinsic NAME`"))?,
        body,
    })
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_alphabetic() || f == '_')
        && c.all(|x| x.is_alphanumeric() || x == '_')
}

/// Splits at top-level commas, with each part's byte offset.
fn split_top(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, ch) in s.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push((start, &s[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push((start, &s[start..]));
    out
}

/// Parses a quasi-affine expression; an error carries a 0-based column.
pub fn parse_expr(s: &str) -> Result<QExpr, (usize, String)> {
    let toks = tokens(s)?;
    let mut p = ExprParser {
        toks,
        pos: 0,
        len: s.len(),
    };
    let e = p.sum()?;
    match p.toks.get(p.pos) {
        None => Ok(e),
        Some((c, t)) => Err((*c, format!("unexpected `{t}`"))),
    }
}

fn tokens(s: &str) -> Result<Vec<(usize, String)>, (usize, String)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((start, s[start..i].to_string()));
        } else if "+-*/%()".contains(c) {
            out.push((i, c.to_string()));
            i += 1;
        } else {
            return Err((i, format!("unexpected character `{c}`")));
        }
    }
    Ok(out)
}

struct ExprParser {
    toks: Vec<(usize, String)>,
    pos: usize,
    len: usize,
}

impl ExprParser {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(|(_, t)| t.as_str())
    }
    fn col(&self) -> usize {
        self.toks.get(self.pos).map_or(self.len, |(c, _)| *c)
    }
    fn sum(&mut self) -> Result<QExpr, (usize, String)> {
        let mut e = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek() {
            let neg = op == "-";
            self.pos += 1;
            let rhs = self.product()?;
            e = QExpr::sum(e, if neg { QExpr::scale(-1, rhs) } else { rhs });
        }
        Ok(e)
    }
    fn product(&mut self) -> Result<QExpr, (usize, String)> {
        let mut e = self.unary()?;
        while let Some(op @ ("*" | "/" | "%")) = self.peek() {
            let op = op.to_string();
            self.pos += 1;
            let col = self.col();
            let rhs = self.unary()?;
            e = match (op.as_str(), &e, &rhs) {
                ("*", _, QExpr::Const(k)) => QExpr::scale(*k, e),
                ("*", QExpr::Const(k), _) => QExpr::scale(*k, rhs),
                ("*", _, _) => return Err((col, "a product needs a constant factor".into())),
                ("/", _, QExpr::Const(k)) if *k > 0 => QExpr::floor_div(e, *k),
                ("%", _, QExpr::Const(k)) if *k > 0 => QExpr::modulo(e, *k),
                _ => {
                    return Err((
                        col,
                        format!("`{op}` needs a positive integer constant on its right"),
                    ))
                }
            };
        }
        Ok(e)
    }
    fn unary(&mut self) -> Result<QExpr, (usize, String)> {
        let col = self.col();
        match self.peek() {
            Some("-") => {
                self.pos += 1;
                Ok(QExpr::scale(-1, self.unary()?))
            }
            Some("(") => {
                self.pos += 1;
                let e = self.sum()?;
                if self.peek() != Some(")") {
                    return Err((self.col(), "expected `)`".into()));
                }
                self.pos += 1;
                Ok(e)
            }
            Some(t) if t.chars().all(|c| c.is_ascii_digit()) => {
                let v = t.parse::<i64>().map_err(|e| (col, e.to_string()))?;
                self.pos += 1;
                Ok(QExpr::Const(v))
            }
            Some(t) if is_ident(t) => {
                let v = QExpr::var(t);
                self.pos += 1;
                Ok(v)
            }
            Some(t) => Err((col, format!("unexpected `{t}`"))),
            None => Err((col, "expected an expression".into())),
        }
    }
}

/// Prints a mapping in the text format.
pub fn print(sw: &Software, intr: &Intrinsic, m: &Mapping) -> String {
    let mut s = format!("statement {}\nintrinsic {}\n", sw.stmt.name, intr.name);
    for (x, g) in m.groups.iter().enumerate() {
        let names: Vec<&str> = g.iter().map(|&l| sw.loops[l].var.as_str()).collect();
        s.push_str(&format!("{} <- {}\n", intr.loops[x].name, names.join(", ")));
    }
    for (o, op) in m.operands.iter().enumerate() {
        let idx: Vec<String> = op.index.iter().map(|e| e.to_string()).collect();
        let pad = if op.pad == Pad::Garbage {
            " pad garbage"
        } else {
            ""
        };
        s.push_str(&format!(
            "{} <- {}[{}]{pad}\n",
            intr.operands[o].name,
            sw.kernel.array(op.tensor).name,
            idx.join(", ")
        ));
    }
    let blocks: Vec<String> = (intr.loops.iter().zip(&m.blocks))
        .map(|(x, b)| format!("{} = {b}", x.name))
        .collect();
    s.push_str(&format!(
        "blocks {}\nbuffers {}\n",
        blocks.join(", "),
        m.buffers
    ));
    s
}

/// Resolves a parsed mapping against the statement and intrinsic it names: every
/// intrinsic loop needs a group and every operand a memory mapping.
pub fn resolve(t: &MappingText, sw: &Software, intr: &Intrinsic) -> Result<Mapping, TextError> {
    let mut groups: Vec<Option<Vec<usize>>> = vec![None; intr.loops.len()];
    let mut operands = vec![None; intr.operands.len()];
    let mut blocks: Vec<i64> = intr.loops.iter().map(|l| l.extent).collect();
    let mut buffers = 2;
    for (line, l) in &t.body {
        let line = *line;
        match l {
            Line::Group(x, loops) => {
                let xi = intr
                    .loops
                    .iter()
                    .position(|l| &l.name == x)
                    .ok_or_else(|| err(line, 1, format!("`{}` has no loop `{x}`", intr.name)))?;
                let ls = loops
                    .iter()
                    .map(|n| {
                        sw.loop_index(n).ok_or_else(|| {
                            err(
                                line,
                                1,
                                format!("statement {} has no loop `{n}`", sw.stmt.name),
                            )
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                groups[xi] = Some(ls);
            }
            Line::Operand(o, tensor, index, pad) => {
                let oi = intr
                    .operands
                    .iter()
                    .position(|op| &op.name == o)
                    .ok_or_else(|| err(line, 1, format!("`{}` has no operand `{o}`", intr.name)))?;
                let array = sw.kernel.array_by_name(tensor).ok_or_else(|| {
                    err(
                        line,
                        1,
                        format!("kernel {} has no array `{tensor}`", sw.kernel.name),
                    )
                })?;
                if index.len() != sw.kernel.array(array).dims.len() {
                    return Err(err(
                        line,
                        1,
                        format!(
                            "`{tensor}` has {} dimensions, the mapping gives {}",
                            sw.kernel.array(array).dims.len(),
                            index.len()
                        ),
                    ));
                }
                let mut names = Vec::new();
                index.iter().for_each(|e| e.vars(&mut names));
                for n in names {
                    let known = intr.loops.iter().any(|l| l.name == n)
                        || sw.loop_index(&n).is_some()
                        || sw.kernel.params.iter().any(|p| p.name == n);
                    if !known {
                        return Err(err(
                            line,
                            1,
                            format!(
                                "`{n}` is neither an intrinsic loop, a loop of {} nor a parameter",
                                sw.stmt.name
                            ),
                        ));
                    }
                }
                operands[oi] = Some(super::physical::OperandMap {
                    tensor: array,
                    index: index.clone(),
                    pad: *pad,
                });
            }
            Line::Blocks(bs) => {
                for (x, b) in bs {
                    let xi = intr
                        .loops
                        .iter()
                        .position(|l| &l.name == x)
                        .ok_or_else(|| {
                            err(line, 1, format!("`{}` has no loop `{x}`", intr.name))
                        })?;
                    blocks[xi] = *b;
                }
            }
            Line::Buffers(n) => buffers = *n,
        }
    }
    let groups = (groups.into_iter().zip(&intr.loops))
        .map(|(g, l)| {
            g.filter(|g| !g.is_empty()).ok_or_else(|| {
                err(
                    1,
                    1,
                    format!("intrinsic loop `{}` receives no software loop", l.name),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let operands = (operands.into_iter().zip(&intr.operands))
        .map(|(m, op)| {
            m.ok_or_else(|| err(1, 1, format!("operand `{}` has no memory mapping", op.name)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Mapping {
        groups,
        operands,
        blocks,
        buffers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn qexpr() -> impl Strategy<Value = QExpr> {
        let leaf = prop_oneof![
            (-20i64..20).prop_map(QExpr::Const),
            prop::sample::select(vec!["i1", "r1", "n", "N"]).prop_map(QExpr::var),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| QExpr::sum(a, b)),
                (-4i64..5, inner.clone()).prop_map(|(k, e)| QExpr::scale(k, e)),
                (inner.clone(), 1i64..7).prop_map(|(e, c)| QExpr::floor_div(e, c)),
                (inner, 1i64..7).prop_map(|(e, c)| QExpr::modulo(e, c)),
            ]
        })
    }

    proptest! {
        #[test]
        fn printed_expressions_parse_back_to_the_same_function(e in qexpr(), vals in prop::collection::vec(-50i64..50, 4)) {
            let text = e.to_string();
            let back = parse_expr(&text).map_err(|(c, m)| TestCaseError::fail(format!("{text}: {c}: {m}")))?;
            let env = |v: &str| match v { "i1" => vals[0], "r1" => vals[1], "n" => vals[2], _ => vals[3] };
            prop_assert_eq!(back.eval(&env), e.eval(&env), "{}", text);
        }

        #[test]
        fn any_text_is_parsed_or_refused_with_a_position(text in "[a-z0-9<\\-\\[\\], */%()#\n]{0,80}") {
            if let Err(e) = parse(&text) {
                prop_assert!(e.line >= 1 && e.column >= 1);
            }
        }
    }
}
