//! Tokens of the `.npu` assembly. `#` starts a comment to the end of the line; whitespace and
//! newlines only separate tokens.

use crate::diag::{Code, Diagnostic};
use crate::program::Span;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A name: letters, digits, `_` and `.`, not starting with a digit or `.`.
    Ident(String),
    /// A non-negative integer literal.
    Int(u64),
    /// A non-negative literal with a fraction or exponent.
    Float(f64),
    /// One punctuation character (`..` is [`Tok::DotDot`]).
    Punct(char),
    /// `..`
    DotDot,
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token reads in a message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(i) => format!("`{i}`"),
            Tok::Float(f) => format!("`{f:?}`"),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::DotDot => "`..`".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// Splits `source` into tokens with their spans, ending with [`Tok::Eof`].
pub fn lex(source: &str) -> Result<Vec<(Tok, Span)>, Diagnostic> {
    let bytes = source.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.')
            {
                // `a..b` is a range, not a name with dots.
                if bytes[i] == b'.' && bytes.get(i + 1) == Some(&b'.') {
                    break;
                }
                i += 1;
            }
            out.push((
                Tok::Ident(source[start..i].to_string()),
                Span::new(start, i),
            ));
        } else if c.is_ascii_digit() {
            i = lex_number(source, start, &mut out)?;
        } else if c == b'.' && bytes.get(i + 1) == Some(&b'.') {
            i += 2;
            out.push((Tok::DotDot, Span::new(start, i)));
        } else if b"[](){},:=@+-*/%<>!".contains(&c) {
            i += 1;
            out.push((Tok::Punct(c as char), Span::new(start, i)));
        } else {
            let ch = source[i..].chars().next().unwrap_or('?');
            return Err(Diagnostic::new(
                Code::BadChar,
                Span::new(i, i + ch.len_utf8()),
                format!("unexpected character `{}`", ch.escape_debug()),
            ));
        }
    }
    out.push((Tok::Eof, Span::new(source.len(), source.len())));
    Ok(out)
}

/// Lexes an integer or float starting at `start`; returns the offset after it.
fn lex_number(source: &str, start: usize, out: &mut Vec<(Tok, Span)>) -> Result<usize, Diagnostic> {
    let bytes = source.as_bytes();
    let mut i = start;
    let digits = |i: &mut usize| {
        while *i < bytes.len() && (bytes[*i].is_ascii_digit() || bytes[*i] == b'_') {
            *i += 1;
        }
    };
    digits(&mut i);
    let mut float = false;
    if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
        float = true;
        i += 1;
        digits(&mut i);
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            float = true;
            i = j;
            digits(&mut i);
        }
    }
    if i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
        return Err(Diagnostic::new(
            Code::Syntax,
            Span::new(start, i + 1),
            "a number runs into a name",
        ));
    }
    let text: String = source[start..i].chars().filter(|&c| c != '_').collect();
    let span = Span::new(start, i);
    let tok = if float {
        Tok::Float(
            text.parse()
                .map_err(|_| Diagnostic::new(Code::BadValue, span, "malformed number"))?,
        )
    } else {
        Tok::Int(
            text.parse()
                .map_err(|_| Diagnostic::new(Code::BadValue, span, "integer literal too large"))?,
        )
    };
    out.push((tok, span));
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn lexes_names_ranges_numbers_and_comments() {
        assert_eq!(
            kinds("loop i in 0..4 # hi\n vcmp.lt 1.5e3"),
            vec![
                Tok::Ident("loop".into()),
                Tok::Ident("i".into()),
                Tok::Ident("in".into()),
                Tok::Int(0),
                Tok::DotDot,
                Tok::Int(4),
                Tok::Ident("vcmp.lt".into()),
                Tok::Float(1500.0),
                Tok::Eof
            ]
        );
        assert_eq!(
            kinds("i..n"),
            vec![
                Tok::Ident("i".into()),
                Tok::DotDot,
                Tok::Ident("n".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn rejects_bad_characters_and_huge_literals() {
        assert_eq!(lex("a $").unwrap_err().code, Code::BadChar);
        assert_eq!(
            lex("99999999999999999999999").unwrap_err().code,
            Code::BadValue
        );
        assert_eq!(lex("12ab").unwrap_err().code, Code::Syntax);
    }
}
