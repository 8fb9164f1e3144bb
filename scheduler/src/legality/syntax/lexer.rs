//! Tokens of isl's set and map notation (`[N] -> { S0[i, j] -> [i + 1] : i < N }`), with
//! their byte spans in the schedule file.

use super::{SyntaxError, What};
use std::ops::Range;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A name or a keyword (`and`, `floor`, ...); isl's names may end in primes (`i'`).
    Ident,
    /// An integer literal.
    Number,
    /// An operator or a bracket, as written.
    Punct(&'static str),
    /// The end of the text.
    End,
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: Kind,
    /// Its bytes in the file.
    pub span: Range<usize>,
}

/// The operators and brackets, longest first so that `->` is not read as `-`.
const PUNCTS: [&str; 33] = [
    "<<=", ">>=", "->", "<=", ">=", "==", "!=", "<<", ">>", "&&", "||", "/\\", "\\/", "//", "{",
    "}", "[", "]", "(", ")", ",", ";", ":", "+", "-", "*", "/", "%", "=", "<", ">", "&", "|",
];

/// The tokens of `text`, which starts at byte `base` of the file, ending with
/// [`Kind::End`]; `#` starts a comment to the end of its line, as in isl.
pub fn tokens(text: &str, base: usize) -> Result<Vec<Token>, SyntaxError> {
    let mut out = Vec::new();
    let mut rest = text;
    let at = |rest: &str| base + text.len() - rest.len();
    while let Some(c) = rest.chars().next() {
        let start = at(rest);
        let len = if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
            continue;
        } else if c == '#' {
            rest = rest.find('\n').map_or("", |n| &rest[n..]);
            continue;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '\''))
                .unwrap_or(rest.len());
            out.push(Token {
                kind: Kind::Ident,
                span: start..start + end,
            });
            end
        } else if c.is_ascii_digit() {
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            out.push(Token {
                kind: Kind::Number,
                span: start..start + end,
            });
            end
        } else if let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            out.push(Token {
                kind: Kind::Punct(p),
                span: start..start + p.len(),
            });
            p.len()
        } else {
            return Err(SyntaxError {
                span: start..start + c.len_utf8(),
                what: What::UnexpectedChar(c),
                opened: None,
            });
        };
        rest = &rest[len..];
    }
    // The end of the text is reported just after its last token, not after blank lines.
    let end = base + text.trim_end().len();
    out.push(Token {
        kind: Kind::End,
        span: end..end,
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_operators_names_and_numbers() {
        let kinds: Vec<Kind> = tokens("{ S0[i'] -> [2i] } # c", 10)
            .unwrap()
            .into_iter()
            .map(|t| t.kind)
            .collect();
        use Kind::*;
        assert_eq!(
            kinds,
            [
                Punct("{"),
                Ident,
                Punct("["),
                Ident,
                Punct("]"),
                Punct("->"),
                Punct("["),
                Number,
                Ident,
                Punct("]"),
                Punct("}"),
                End
            ]
        );
        let bad = tokens("{ S0[i] -> [i $ 1] }", 10).unwrap_err();
        assert_eq!((bad.span, bad.what), (24..25, What::UnexpectedChar('$')));
    }
}
