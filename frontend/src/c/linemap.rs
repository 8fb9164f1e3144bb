//! From the preprocessor's output back to the original file.
//!
//! The preprocessed text says with line markers (`# 42 "file.c"`) which line of which file
//! each of its lines comes from. Within a line of the original file, its tokens and the
//! preprocessed tokens marked with that line are aligned (a longest common subsequence of
//! their spellings): a token the user wrote gets its exact span, and a token a macro
//! produced gets the span of the macro invocation it came from (the original tokens between
//! the aligned tokens around it). Tokens from other files (headers, the command line) have
//! no span in the original.

use super::lexer::{lex, Tok, Token};
use crate::span::Span;
use std::collections::BTreeMap;

/// A token of the preprocessed translation unit.
#[derive(Clone, Debug, PartialEq)]
pub struct PpToken {
    /// The token.
    pub tok: Tok,
    /// Where the user wrote it (or the macro invocation that produced it); `None` for tokens
    /// of other files.
    pub span: Option<Span>,
    /// Its line in the original file (1-based), for tokens of the original file.
    pub line: Option<usize>,
}

/// The tokens of a preprocessed translation unit, pragmas included as [`Tok::Directive`]
/// tokens (`#pragma ...`); line markers are consumed.
pub fn tokens(preprocessed: &str, original: &str) -> Vec<PpToken> {
    let lines = LineStarts::new(original);
    let by_line = original_tokens_by_line(original, &lines);
    let mut out: Vec<PpToken> = Vec::new();
    // The original line of each preprocessed token of the main file, grouped by line.
    let mut pending: BTreeMap<usize, Vec<(usize, String)>> = BTreeMap::new();
    let mut main_file: Option<String> = None;
    let mut in_main = false;
    let mut line = 1usize;
    for pp_line in preprocessed.split_inclusive('\n') {
        let text = pp_line.trim_end_matches(['\n', '\r']);
        let trimmed = text.trim_start();
        if let Some(directive) = trimmed.strip_prefix('#') {
            if let Some((number, file)) = line_marker(directive) {
                in_main = *main_file.get_or_insert_with(|| file.clone()) == file;
                line = number;
            } else {
                let at = out.len();
                out.push(PpToken {
                    tok: Tok::Directive(trimmed.to_owned()),
                    span: None,
                    line: in_main.then_some(line),
                });
                if in_main {
                    // A pragma spans its whole original line.
                    out[at].span = lines.line(line).map(|(s, e)| Span::new(s, e));
                }
                line += 1;
            }
        } else {
            for t in lex(text) {
                if in_main {
                    let spelling = text[t.start..t.end].to_owned();
                    pending.entry(line).or_default().push((out.len(), spelling));
                }
                out.push(PpToken {
                    tok: t.tok,
                    span: None,
                    line: in_main.then_some(line),
                });
            }
            line += 1;
        }
    }
    let empty = Vec::new();
    for (line, tokens) in pending {
        let originals = by_line.get(&line).unwrap_or(&empty);
        let spellings: Vec<&str> = tokens.iter().map(|(_, s)| s.as_str()).collect();
        let spans = align(&spellings, originals, original);
        for ((k, _), span) in tokens.into_iter().zip(spans) {
            out[k].span = span;
        }
    }
    out
}

/// `(line, file)` of a line marker's text after its `#` (`# 12 "a.c" 1`, `#line 12 "a.c"`).
fn line_marker(directive: &str) -> Option<(usize, String)> {
    let rest = directive.trim_start();
    let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        return None;
    }
    let number = digits.parse().ok()?;
    Some((number, marker_file(directive).unwrap_or_default()))
}

/// The file name of a line marker, unescaped.
fn marker_file(directive: &str) -> Option<String> {
    let start = directive.find('"')?;
    let mut name = String::new();
    let mut chars = directive[start + 1..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(name),
            '\\' => name.extend(chars.next()),
            c => name.push(c),
        }
    }
    None
}

/// The original file's tokens (directives excluded), by line.
fn original_tokens_by_line(original: &str, lines: &LineStarts) -> BTreeMap<usize, Vec<Token>> {
    let mut by_line: BTreeMap<usize, Vec<Token>> = BTreeMap::new();
    for t in lex(original) {
        if !matches!(t.tok, Tok::Directive(_)) {
            by_line.entry(lines.line_of(t.start)).or_default().push(t);
        }
    }
    by_line
}

/// Beyond this many pairs of tokens, a line is not aligned token by token.
const MAX_ALIGNED_PAIRS: usize = 1 << 22;

/// The span of each preprocessed token of one original line: that of the original token
/// it is aligned with, else the original tokens between its aligned neighbours (a macro
/// invocation), else the nearest aligned token before it, else the line's first token.
fn align(pp: &[&str], originals: &[Token], text: &str) -> Vec<Option<Span>> {
    let same = |p: &str, o: &Token| p == &text[o.start..o.end];
    let (n, m) = (pp.len(), originals.len());
    if n.saturating_mul(m) > MAX_ALIGNED_PAIRS {
        // A huge line: every token gets the line's span rather than a quadratic alignment.
        let line = (m > 0).then(|| Span::new(originals[0].start, originals[m - 1].end));
        return vec![line; n];
    }
    // lcs[i][j]: the longest common subsequence of pp[i..] and originals[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if same(pp[i], &originals[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut matched: Vec<Option<usize>> = vec![None; n];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if same(pp[i], &originals[j]) && lcs[i][j] == lcs[i + 1][j + 1] + 1 {
            matched[i] = Some(j);
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    let span_of = |a: usize, b: usize| Span::new(originals[a].start, originals[b].end);
    (0..n)
        .map(|i| {
            if let Some(j) = matched[i] {
                return Some(span_of(j, j));
            }
            let before = matched[..i].iter().rev().find_map(|m| *m);
            let after = matched[i + 1..].iter().find_map(|m| *m);
            let first = before.map_or(0, |b| b + 1);
            let last = after.unwrap_or(m);
            if first < last {
                Some(span_of(first, last - 1))
            } else if let Some(b) = before {
                Some(span_of(b, b))
            } else {
                (m > 0).then(|| span_of(0, 0))
            }
        })
        .collect()
}

/// The byte offsets where the lines of a text start.
#[derive(Clone, Debug)]
pub struct LineStarts {
    starts: Vec<usize>,
    len: usize,
}

impl LineStarts {
    /// The line starts of `text`.
    pub fn new(text: &str) -> LineStarts {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(k, _)| k + 1));
        LineStarts {
            starts,
            len: text.len(),
        }
    }

    /// The 1-based line holding byte `at`.
    pub fn line_of(&self, at: usize) -> usize {
        self.starts.partition_point(|&s| s <= at)
    }

    /// The byte range of line `line` (1-based), its newline excluded.
    pub fn line(&self, line: usize) -> Option<(usize, usize)> {
        let start = *self.starts.get(line.checked_sub(1)?)?;
        let end = self.starts.get(line).map_or(self.len, |&next| next - 1);
        Some((start, end.max(start)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macro_expansions_map_to_their_invocation() {
        let original = "#define N 10\nint x;\nx = SCALE(y) + N;\n";
        let pp = "# 0 \"a.c\"\n# 1 \"a.c\"\n\nint x;\nx = (2.0 * y) + 10;\n";
        let toks = tokens(pp, original);
        let at = |s: &str| original.find(s).unwrap();
        let text = |t: &PpToken| {
            let s = t.span.unwrap();
            &original[s.start..s.end]
        };
        let x = &toks[3];
        assert_eq!((x.line, text(x)), (Some(3), "x"));
        // `(2.0 * y)` came from `SCALE(y)`: its parentheses and `y` are aligned with the
        // user's, what the macro added points next to them.
        assert_eq!(text(&toks[5]), "(");
        assert_eq!(text(&toks[6]), "(");
        assert_eq!(text(&toks[8]), "y");
        assert_eq!(toks[8].span.unwrap().start, at("y)"));
        assert_eq!(text(&toks[11]), "N");
    }

    #[test]
    fn other_files_have_no_span() {
        let pp = "# 1 \"a.c\"\n# 1 \"h.h\" 1\nint h;\n# 2 \"a.c\" 2\nint a;\n";
        let toks = tokens(pp, "#include \"h.h\"\nint a;\n");
        assert_eq!(toks[0].span, None);
        assert_eq!(toks[3].line, Some(2));
        assert!(toks[3].span.is_some());
    }
}
