//! The translation unit around the regions: typedefs, file-scope variables, function
//! definitions, the declarations visible where a region starts, and the calls of a function.
//!
//! Only what a region needs is understood. The rest of the file (system headers included)
//! is skimmed: a top-level item this parser cannot read (a `struct`, a prototype with
//! unusual attributes) is skipped, which is harmless unless a region uses a name it
//! declares (then the region reports that name as unknown).

use super::lexer::{Punct, Tok};
use super::linemap::PpToken;
use super::parser::{Parser, Typedefs};
use super::syntax::{Declarator, Expr, ExprKind};
use crate::diagnostics::Diagnostic;
use std::ops::Range;

/// A function definition.
#[derive(Clone, Debug)]
pub struct Function {
    /// Its declarator (name, parameters).
    pub decl: Declarator,
    /// Declared `static` (so every call is in this file).
    pub is_static: bool,
    /// The token range of its body, braces included.
    pub body: Range<usize>,
}

/// What the file declares at file scope.
#[derive(Clone, Debug, Default)]
pub struct Unit {
    /// Type names and their types.
    pub typedefs: Typedefs,
    /// File-scope variables, in order.
    pub globals: Vec<Declarator>,
    /// Function definitions, in order.
    pub functions: Vec<Function>,
    /// The top-level items skipped, in order.
    pub unreadable: Vec<Unreadable>,
}

/// A top-level item this parser cannot read, skipped.
#[derive(Clone, Debug)]
pub struct Unreadable {
    /// Its tokens (a function body included).
    pub tokens: Range<usize>,
    /// Why it cannot be read: the parser's error.
    pub why: Diagnostic,
}

impl Unit {
    /// Reads the file-scope items of `toks`.
    pub fn scan(toks: &[PpToken]) -> Unit {
        let mut unit = Unit::default();
        let mut at = 0;
        while at < toks.len() {
            if matches!(toks[at].tok, Tok::Directive(_) | Tok::P(Punct::Semi)) {
                at += 1;
                continue;
            }
            let parsed = {
                let mut p = Parser::new(&toks[at..], &unit.typedefs);
                p.declaration().map(|d| (d, at + p.position()))
            };
            match parsed {
                Ok((d, next))
                    if d.declarators.len() == 1
                        && d.declarators[0].params.is_some()
                        && toks.get(next).map(|t| &t.tok) == Some(&Tok::P(Punct::LBrace)) =>
                {
                    let end = matching_brace(toks, next);
                    unit.functions.push(Function {
                        decl: d.declarators.into_iter().next().expect("one declarator"),
                        is_static: d.is_static,
                        body: next..end,
                    });
                    at = end;
                }
                Ok((d, next)) => {
                    for decl in d.declarators {
                        if d.is_typedef {
                            unit.typedefs.insert(decl.name.clone(), decl.ty);
                        } else if decl.params.is_none() {
                            unit.globals.push(decl);
                        }
                    }
                    at = next;
                }
                Err(why) => {
                    let end = skip_item(toks, at);
                    unit.unreadable.push(Unreadable {
                        tokens: at..end,
                        why,
                    });
                    at = end;
                }
            }
        }
        unit
    }

    /// The function whose body holds token `k`.
    pub fn function_at(&self, k: usize) -> Option<&Function> {
        self.functions.iter().find(|f| f.body.contains(&k))
    }

    /// The skipped item that holds token `k` (a function whose header this parser cannot
    /// read, around a region).
    pub fn unreadable_at(&self, k: usize) -> Option<&Unreadable> {
        self.unreadable.iter().find(|u| u.tokens.contains(&k))
    }
}

/// One past the `}` matching the `{` at `open` (the end of the tokens if unbalanced).
pub fn matching_brace(toks: &[PpToken], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.tok {
            Tok::P(Punct::LBrace) => depth += 1,
            Tok::P(Punct::RBrace) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// The start of the next top-level item after an unreadable one starting at `at`: after
/// its `;`, or after a function body (a brace group after a `)`).
fn skip_item(toks: &[PpToken], at: usize) -> usize {
    let mut depth = 0usize;
    let mut k = at;
    while k < toks.len() {
        match toks[k].tok {
            Tok::P(Punct::LParen | Punct::LBracket) => depth += 1,
            Tok::P(Punct::RParen | Punct::RBracket) => depth = depth.saturating_sub(1),
            Tok::P(Punct::LBrace) if depth == 0 => {
                let after_paren = k > at && toks[k - 1].tok == Tok::P(Punct::RParen);
                k = matching_brace(toks, k);
                if after_paren {
                    return k;
                }
                continue;
            }
            Tok::P(Punct::Semi) if depth == 0 => return k + 1,
            _ => {}
        }
        k += 1;
    }
    toks.len().max(at + 1)
}

/// The declarations of the function body starting at token `body_start` (its `{`) that are
/// in scope at token `at`, outermost first (inner ones shadow outer ones: search from the
/// end). Declarations in a `for` clause count in the enclosing block.
pub fn locals_before(
    toks: &[PpToken],
    body_start: usize,
    at: usize,
    typedefs: &Typedefs,
) -> Vec<Declarator> {
    let mut blocks: Vec<Vec<Declarator>> = vec![Vec::new()];
    let mut statement_start = true;
    let mut k = body_start + 1;
    let mut parens = 0usize;
    while k < at {
        let for_clause = parens == 1
            && k >= 2
            && toks[k - 1].tok == Tok::P(Punct::LParen)
            && toks[k - 2].tok == Tok::Ident("for".into());
        if statement_start && parens == 0 || for_clause {
            let mut p = Parser::new(&toks[k..at], typedefs);
            if p.starts_declaration() {
                if let Ok(d) = p.declaration() {
                    if !d.is_typedef {
                        if let Some(block) = blocks.last_mut() {
                            block.extend(d.declarators);
                        }
                    }
                    k += p.position();
                    statement_start = parens == 0;
                    continue;
                }
            }
        }
        statement_start = false;
        match toks[k].tok {
            Tok::P(Punct::LBrace) => {
                blocks.push(Vec::new());
                statement_start = true;
            }
            Tok::P(Punct::RBrace) => {
                if blocks.len() > 1 {
                    blocks.pop();
                }
                statement_start = true;
            }
            Tok::P(Punct::LParen) => parens += 1,
            Tok::P(Punct::RParen) => parens = parens.saturating_sub(1),
            Tok::P(Punct::Semi) => statement_start = parens == 0,
            Tok::Directive(_) => statement_start = parens == 0,
            _ => {}
        }
        k += 1;
    }
    blocks.into_iter().flatten().collect()
}

/// How a function is used in the file: the arguments of each call, or `Err` with the token
/// index of a use that is not a call (its address is taken).
pub fn calls_of(
    toks: &[PpToken],
    unit: &Unit,
    name: &str,
) -> Result<Vec<Vec<Expr>>, Option<usize>> {
    let mut calls = Vec::new();
    for f in &unit.functions {
        for k in f.body.clone() {
            if !matches!(&toks[k].tok, Tok::Ident(s) if s == name) {
                continue;
            }
            let end = matching_close(toks, k + 1, f.body.end);
            let mut p = Parser::new(&toks[k..end], &unit.typedefs);
            match p.assignment() {
                Ok(Expr {
                    kind: ExprKind::Call(callee, args),
                    ..
                }) if matches!(&callee.kind, ExprKind::Ident(s) if s == name) => calls.push(args),
                _ => return Err(Some(k)),
            }
        }
    }
    Ok(calls)
}

/// One past the `)` matching the `(` at `open`, within `limit` (`open` itself if it is not a
/// `(`).
fn matching_close(toks: &[PpToken], open: usize, limit: usize) -> usize {
    if toks.get(open).map(|t| &t.tok) != Some(&Tok::P(Punct::LParen)) {
        return open;
    }
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().take(limit).skip(open) {
        match t.tok {
            Tok::P(Punct::LParen) => depth += 1,
            Tok::P(Punct::RParen) => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    limit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::c::lexer::lex;
    use crate::span::Span;

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
    fn file_scope_items_are_read_and_the_rest_skipped() {
        let toks = pp("typedef double DT; struct s { int a; } v; DT g[10];\n\
             static void k(int n, DT A[n]) { int i; { double t; } for (int j = 0;;) {} x; }\n\
             int main() { k(3, g); return 0; }");
        let unit = Unit::scan(&toks);
        assert_eq!(unit.typedefs.len(), 1);
        assert_eq!(unit.globals.len(), 1);
        assert_eq!(unit.globals[0].name, "g");
        assert_eq!(unit.functions.len(), 2);
        let k = &unit.functions[0];
        assert!(k.is_static);
        let x = (k.body.clone())
            .find(|&i| toks[i].tok == Tok::Ident("x".into()))
            .unwrap();
        let names: Vec<String> = locals_before(&toks, k.body.start, x, &unit.typedefs)
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["i", "j"]);
        let calls = calls_of(&toks, &unit, "k").unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].len(), 2);
    }
}
