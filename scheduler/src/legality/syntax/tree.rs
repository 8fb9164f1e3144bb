//! A recognizer of isl's schedule trees in YAML (block style, as `polyc show --emit
//! schedule` prints them, or flow style `{ domain: "...", child: { ... } }`): brackets that
//! match, strings that end, keys that isl's trees have, and isl's notation inside the
//! strings of the keys that hold sets, maps and bands.

use super::{notation, Expected, SyntaxError, What};
use std::ops::Range;

/// The keys of isl's schedule-tree nodes.
pub(super) const KEYS: [&str; 15] = [
    "domain",
    "context",
    "child",
    "schedule",
    "permutable",
    "coincident",
    "options",
    "sequence",
    "set",
    "filter",
    "mark",
    "extension",
    "guard",
    "expansion",
    "contraction",
];

/// The keys whose strings are isl's set and map notation (`mark` names a mark).
const NOTATION: [&str; 9] = [
    "domain",
    "context",
    "schedule",
    "options",
    "filter",
    "extension",
    "guard",
    "expansion",
    "contraction",
];

/// A token of the YAML text.
#[derive(Debug)]
enum Token {
    /// `{ } [ ] , : -`.
    Punct(char),
    /// A double-quoted string; the span holds its contents, without the quotes.
    Str(Range<usize>),
    /// A plain word (a key or a scalar such as `1`).
    Word(Range<usize>),
}

/// Checks the YAML tree `text` (the whole file).
pub fn check(text: &str) -> Result<(), SyntaxError> {
    let tokens = tokens(text)?;
    let mut open: Vec<(char, Range<usize>)> = Vec::new();
    let mut key: Option<&str> = None;
    for (i, (token, span)) in tokens.iter().enumerate() {
        match token {
            Token::Punct(c @ ('{' | '[')) => open.push((*c, span.clone())),
            Token::Punct(c @ ('}' | ']')) => {
                let want = if *c == '}' { '{' } else { '[' };
                match open.pop() {
                    Some((o, _)) if o == want => {}
                    other => {
                        return Err(SyntaxError {
                            span: span.clone(),
                            what: What::Expected {
                                expected: match other {
                                    Some(('{', _)) => Expected::Token("}"),
                                    Some(_) => Expected::Token("]"),
                                    None => Expected::End,
                                },
                                found: Some(c.to_string()),
                            },
                            opened: other.map(|(_, s)| s),
                        })
                    }
                }
            }
            Token::Word(w) => {
                let is_key = matches!(tokens.get(i + 1), Some((Token::Punct(':'), _)));
                if is_key {
                    let word = &text[w.clone()];
                    if !KEYS.contains(&word) {
                        return Err(SyntaxError {
                            span: w.clone(),
                            what: What::UnknownKey(word.to_string()),
                            opened: None,
                        });
                    }
                    key = Some(word);
                }
            }
            Token::Str(s) => {
                if key.is_some_and(|k| NOTATION.contains(&k)) {
                    notation::check(text, &text[s.clone()], s.start)?;
                }
                key = None;
            }
            Token::Punct(_) => {}
        }
    }
    match open.pop() {
        Some((o, span)) => Err(SyntaxError {
            span: text.trim_end().len()..text.trim_end().len(),
            what: What::Expected {
                expected: Expected::Token(if o == '{' { "}" } else { "]" }),
                found: None,
            },
            opened: Some(span),
        }),
        None => Ok(()),
    }
}

/// The tokens of `text` with their spans; `#` starts a comment outside strings.
fn tokens(text: &str) -> Result<Vec<(Token, Range<usize>)>, SyntaxError> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let end = text[i + 1..].find(['"', '\n']).map(|n| i + 1 + n);
                match end {
                    Some(e) if text.as_bytes()[e] == b'"' => {
                        out.push((Token::Str(i + 1..e), i..e + 1));
                        while chars.next_if(|&(j, _)| j <= e).is_some() {}
                    }
                    _ => {
                        return Err(SyntaxError {
                            span: i..i + 1,
                            what: What::UnterminatedString,
                            opened: None,
                        })
                    }
                }
            }
            '#' => while chars.next_if(|&(_, c)| c != '\n').is_some() {},
            '{' | '}' | '[' | ']' | ',' | ':' | '-' => out.push((Token::Punct(c), i..i + 1)),
            c if c.is_whitespace() => {}
            c if c.is_ascii_alphanumeric() || c == '_' => {
                let mut end = i + 1;
                while let Some((j, _)) =
                    chars.next_if(|&(_, c)| c.is_ascii_alphanumeric() || c == '_')
                {
                    end = j + 1;
                }
                out.push((Token::Word(i..end), i..end));
            }
            c => {
                return Err(SyntaxError {
                    span: i..i + c.len_utf8(),
                    what: What::UnexpectedChar(c),
                    opened: None,
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_block_and_flow_trees() {
        let block = "domain: \"[N] -> { S0[i] : 0 <= i < N }\"\nchild:\n  schedule: \"[N] -> [{ S0[i] -> [(i)] }]\"\n  permutable: 1\n  coincident: [ 1 ]\n  child:\n    sequence:\n    - filter: \"{ S0[i] }\"\n";
        assert_eq!(check(block), Ok(()));
        let flow =
            "{ domain: \"{ S0[i] : 0 <= i < 4 }\", child: { schedule: \"[{ S0[i] -> [(i)] }]\" } }";
        assert_eq!(check(flow), Ok(()));
    }

    #[test]
    fn points_into_strings_and_at_keys() {
        let text = "domain: \"{ S0[i : }\"";
        let e = check(text).unwrap_err();
        assert_eq!(e.span, 16..17);
        let e = check("domian: \"{ S0[i] }\"").unwrap_err();
        assert_eq!(e.what, What::UnknownKey("domian".into()));
        let e = check("{ domain: \"{ S0[i] }\"").unwrap_err();
        assert_eq!(e.opened, Some(0..1));
        let e = check("domain: \"{ S0[i] }").unwrap_err();
        assert_eq!(e.what, What::UnterminatedString);
    }
}
