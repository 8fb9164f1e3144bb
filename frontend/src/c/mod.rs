//! The C front end: the static control parts of a C file (the statements between
//! `#pragma scop` and `#pragma endscop`), each lowered to the checked IR
//! ([`ir::Kernel`](crate::ir::Kernel)) that the kernel language also produces. See
//! `docs/c-frontend.md` for the subset.
//!
//! The pipeline: the system preprocessor ([`cpp`], the only code of the front end that
//! starts a process) -> [`linemap`] (its tokens, each mapped back to the original file) ->
//! [`unit`](mod@unit) (file-scope declarations and functions, skimmed) -> [`parser`] (the region's
//! statements, [`syntax`]) -> `lower` (the kernel) -> `alias` (arrays that may overlap).
//! Every diagnostic points into the original file.

mod alias;
pub mod cpp;
pub mod lexer;
pub mod linemap;
mod liveness;
mod lower;
pub mod parser;
pub mod syntax;
pub mod unit;

use crate::diagnostics::{Code, Construct, Diagnostic, Diagnostics};
use crate::ir::{ArrayId, Kernel};
use crate::source::SourceFile;
use crate::span::Span;
use lexer::{lex, Tok};
use linemap::{LineStarts, PpToken};
use lower::vars::Scopes;
use parser::Parser;
use unit::Unit;

/// A `#pragma scop` region of the original file.
#[derive(Clone, Debug)]
pub struct Region {
    /// Its text in the original file: from the start of the `#pragma scop` line to the end
    /// of the `#pragma endscop` line (its line break excluded).
    pub span: Span,
    /// The lines of its two pragmas (1-based).
    pub lines: (usize, usize),
    /// The function it is in, if it is in one.
    pub function: Option<String>,
    /// The region as a kernel, or why it is outside the subset.
    pub kernel: Result<Kernel, Diagnostics>,
    /// The kernel's arrays whose values the function never reads after the region (its
    /// automatic locals named nowhere else): see `liveness`.
    pub dead_after: Vec<ArrayId>,
}

/// What a pragma line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    Scop,
    EndScop,
}

fn marker(directive: &str) -> Option<Marker> {
    let words: Vec<&str> = directive
        .trim_start_matches('#')
        .split_whitespace()
        .collect();
    match words.as_slice() {
        ["pragma", "scop"] => Some(Marker::Scop),
        ["pragma", "endscop"] => Some(Marker::EndScop),
        _ => None,
    }
}

/// The regions of a C file: `original` is the file as written, `preprocessed` the system
/// preprocessor's output for it (with line markers). A region that the preprocessor left
/// out (in an inactive `#if`) is not listed. Unbalanced pragmas are an error of the file.
pub fn translate(original: &SourceFile, preprocessed: &str) -> Result<Vec<Region>, Diagnostics> {
    crate::on_big_stack(|| translate_here(original, preprocessed))
}

fn translate_here(original: &SourceFile, preprocessed: &str) -> Result<Vec<Region>, Diagnostics> {
    let lines = LineStarts::new(&original.text);
    let pairs = pragma_pairs(&original.text, &lines).map_err(|d| Diagnostics::new(vec![d]))?;
    let toks = linemap::tokens(preprocessed, &original.text);
    let unit = Unit::scan(&toks);
    let mut regions = Vec::new();
    for (scop, endscop) in pairs {
        let Some((s, e)) = pp_region(&toks, scop, endscop) else {
            continue;
        };
        let span = match (lines.line(scop), lines.line(endscop)) {
            // A CRLF line's carriage return stays outside the region, with its newline.
            (Some((start, _)), Some((_, end))) if original.text[..end].ends_with('\r') => {
                Span::new(start, end - 1)
            }
            (Some((start, _)), Some((_, end))) => Span::new(start, end),
            _ => Span::default(),
        };
        let function = unit.function_at(s);
        regions.push(Region {
            span,
            lines: (scop, endscop),
            function: function.map(|f| f.decl.name.clone()),
            kernel: Err(Diagnostics::new(Vec::new())),
            dead_after: Vec::new(),
        });
        let region = regions.last_mut().expect("just pushed");
        let Some(function) = function.filter(|f| f.body.contains(&e)) else {
            let error = match unit.unreadable_at(s) {
                // The region is in an item the unit's parser skipped: say why it did.
                Some(item) if function.is_none() => Diagnostic {
                    message: format!(
                        "the function around the region cannot be read: {}",
                        item.why.message
                    ),
                    ..item.why.clone()
                }
                .with_secondary(span, "region"),
                _ => Diagnostic::new(
                    Code::Outside(Construct::Region),
                    "the region is not inside one function body",
                    span,
                    "region",
                ),
            };
            region.kernel = Err(Diagnostics::new(vec![error]));
            continue;
        };
        match region_kernel(original, &toks, &unit, function, s, e, span) {
            Ok((kernel, dead)) => {
                region.kernel = Ok(kernel);
                region.dead_after = dead;
            }
            Err(d) => region.kernel = Err(d),
        }
    }
    // Kernels are named after their functions, numbered when a function has several.
    for k in 0..regions.len() {
        let Some(f) = regions[k].function.clone() else {
            continue;
        };
        let same: Vec<usize> = (0..regions.len())
            .filter(|&j| regions[j].function.as_deref() == Some(f.as_str()))
            .collect();
        if let Ok(kernel) = &mut regions[k].kernel {
            kernel.name = if same.len() == 1 {
                f.clone()
            } else {
                let n = same.iter().position(|&j| j == k).unwrap_or(0) + 1;
                format!("{f}_{n}")
            };
        }
    }
    Ok(regions)
}

/// The kernels of every region of a C file; an error if a region is outside the subset or
/// there is none.
pub fn compile(original: &SourceFile, preprocessed: &str) -> Result<Vec<Kernel>, Diagnostics> {
    let regions = translate(original, preprocessed)?;
    if regions.is_empty() {
        let end = original.text.len();
        return Err(Diagnostics::new(vec![Diagnostic::new(
            Code::Outside(Construct::Region),
            "the file has no `#pragma scop` region",
            Span::new(end, end),
            "expected `#pragma scop` ... `#pragma endscop` around the code to optimise",
        )]));
    }
    let mut kernels = Vec::new();
    let mut errors = Vec::new();
    for r in regions {
        match r.kernel {
            Ok(k) => kernels.push(k),
            Err(d) => errors.extend(d.list),
        }
    }
    if errors.is_empty() {
        Ok(kernels)
    } else {
        Err(Diagnostics::new(errors))
    }
}

/// The lines of each `#pragma scop` and its `#pragma endscop` in the original text.
fn pragma_pairs(text: &str, lines: &LineStarts) -> Result<Vec<(usize, usize)>, Diagnostic> {
    let mut pairs = Vec::new();
    let mut open: Option<(usize, Span)> = None;
    for t in lex(text) {
        let Tok::Directive(d) = &t.tok else { continue };
        let span = Span::new(t.start, t.end);
        let line = lines.line_of(t.start);
        match (marker(d), open) {
            (Some(Marker::Scop), None) => open = Some((line, span)),
            (Some(Marker::EndScop), Some((start, _))) => {
                pairs.push((start, line));
                open = None;
            }
            (Some(Marker::Scop), Some((_, first))) => {
                return Err(unbalanced("`#pragma scop` inside a region", span)
                    .with_secondary(first, "the region starts here"))
            }
            (Some(Marker::EndScop), None) => {
                return Err(unbalanced("`#pragma endscop` without `#pragma scop`", span))
            }
            (None, _) => {}
        }
    }
    match open {
        Some((_, span)) => Err(unbalanced("`#pragma scop` without `#pragma endscop`", span)),
        None => Ok(pairs),
    }
}

fn unbalanced(message: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::Outside(Construct::Region),
        message.to_owned(),
        span,
        "unbalanced region",
    )
}

/// The token indices of the region's two pragmas in the preprocessed tokens.
fn pp_region(toks: &[PpToken], scop: usize, endscop: usize) -> Option<(usize, usize)> {
    let is = |t: &PpToken, m: Marker, line: usize| {
        t.line == Some(line) && matches!(&t.tok, Tok::Directive(d) if marker(d) == Some(m))
    };
    let s = toks.iter().position(|t| is(t, Marker::Scop, scop))?;
    let e = s + toks[s..]
        .iter()
        .position(|t| is(t, Marker::EndScop, endscop))?;
    Some((s, e))
}

/// The kernel of the region between tokens `s` and `e` of `function`, and its arrays that
/// are dead after it.
fn region_kernel(
    original: &SourceFile,
    toks: &[PpToken],
    unit: &Unit,
    function: &unit::Function,
    s: usize,
    e: usize,
    span: Span,
) -> Result<(Kernel, Vec<ArrayId>), Diagnostics> {
    let one = |d: Diagnostic| Diagnostics::new(vec![d]);
    let stmts = Parser::new(&toks[s + 1..e], &unit.typedefs)
        .statements()
        .map_err(one)?;
    if stmts.is_empty() {
        return Err(one(Diagnostic::new(
            Code::Outside(Construct::Region),
            "the region holds no statement",
            span,
            "empty region",
        )));
    }
    let locals = unit::locals_before(toks, function.body.start, s, &unit.typedefs);
    let params = function.decl.params.as_deref().unwrap_or(&[]);
    let lowered = lower::lower(lower::Region {
        name: function.decl.name.clone(),
        stmts: &stmts,
        scopes: Scopes {
            locals: &locals,
            params,
            globals: &unit.globals,
        },
        text: &original.text,
    })
    .map_err(Diagnostics::new)?;
    alias::check(toks, unit, function, &lowered.kernel, &lowered.origins).map_err(one)?;
    let dead = liveness::dead_after(
        toks,
        function.body.clone(),
        s..e + 1,
        &lowered.kernel,
        &lowered.origins,
    );
    Ok((lowered.kernel, dead))
}
