//! Finding where a schedule's text goes wrong: isl's reader says only "syntax error", so
//! the text is first read by recognizers of isl's notation ([`notation`]) and of its YAML
//! schedule trees ([`tree`]), which report the first wrong token with its position and what
//! was expected there, rendered rustc-style ([`SyntaxError::render`]).

mod lexer;
pub mod notation;
pub mod tree;

use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::Buffer, Config};
use std::fmt;
use std::ops::Range;

/// The first place where a schedule's text cannot be isl's notation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// The bytes of the file at fault (empty at the end of the text).
    pub span: Range<usize>,
    /// What is wrong there.
    pub what: What,
    /// The bracket that a missing closing bracket would close.
    pub opened: Option<Range<usize>>,
}

/// What a [`SyntaxError`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum What {
    /// A character that starts no token.
    UnexpectedChar(char),
    /// A string without its closing `"` on its line.
    UnterminatedString,
    /// Something else than what the notation has there (`found`: the token as written,
    /// `None` at the end of the text).
    Expected {
        /// What could come there.
        expected: Expected,
        /// What came.
        found: Option<String>,
    },
    /// A name that is neither a parameter nor a variable of its tuple.
    UnknownName(String),
    /// A key that no node of isl's schedule trees has.
    UnknownKey(String),
    /// Brackets or parentheses nested too deeply.
    TooDeep,
    /// Well formed, but isl's reader refuses this piece (a product of variables, say).
    Refused,
}

/// What a [`What::Expected`] wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// This token.
    Token(&'static str),
    /// A name.
    Name,
    /// A tuple, `S0[i, j]` or `[i, j]`.
    Tuple,
    /// A number, a name, a function or a parenthesised expression.
    Operand,
    /// Nothing more.
    End,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Token(t) => write!(f, "`{t}`"),
            Expected::Name => f.write_str("a name"),
            Expected::Tuple => f.write_str("a tuple such as `S0[i, j]`"),
            Expected::Operand => f.write_str("a number, a name or `(`"),
            Expected::End => f.write_str("the end of the schedule"),
        }
    }
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::UnexpectedChar(c) => write!(f, "unexpected character `{c}`"),
            What::UnterminatedString => f.write_str("unterminated string"),
            What::Expected { expected, found } => match found {
                Some(t) => write!(f, "expected {expected}, found `{t}`"),
                None => write!(f, "expected {expected}, found the end of the text"),
            },
            What::UnknownName(n) => write!(f, "unknown name `{n}`"),
            What::UnknownKey(k) => write!(f, "`{k}` is not a key of isl's schedule trees"),
            What::TooDeep => f.write_str("nested too deeply"),
            What::Refused => f.write_str("isl's reader refuses this piece"),
        }
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed schedule: {}", self.what)
    }
}

impl What {
    /// The text under the caret.
    fn label(&self) -> String {
        match self {
            What::UnexpectedChar(_) => "no token of isl's notation starts with it".into(),
            What::UnterminatedString => "this string has no closing `\"` on its line".into(),
            What::Expected { expected, .. } => format!("expected {expected}"),
            What::UnknownName(_) => {
                "not a parameter (`[N] -> { ... }`) nor a tuple variable".into()
            }
            What::UnknownKey(_) => format!("the keys are {}", tree::KEYS.join(", ")),
            What::TooDeep => "isl's reader would recurse too deep".into(),
            What::Refused => "is every expression affine (no product of two variables)?".into(),
        }
    }
}

impl SyntaxError {
    /// 1-based line and column (in characters) of the error in `text`.
    pub fn position(&self, text: &str) -> (usize, usize) {
        let before = &text[..self.span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    /// The error rustc-style, `error: ...` then `┌─ name:line:column` and the line with a
    /// caret (ANSI colours if `color`).
    pub fn render(&self, name: &str, text: &str, color: bool) -> String {
        let files = SimpleFile::new(name, text);
        let mut labels =
            vec![Label::primary((), self.span.clone()).with_message(self.what.label())];
        if let Some(open) = &self.opened {
            labels.push(Label::secondary((), open.clone()).with_message("opened here"));
        }
        let diagnostic = Diagnostic::error()
            .with_message(format!("malformed schedule: {}", self.what))
            .with_labels(labels);
        let mut buffer = if color {
            Buffer::ansi()
        } else {
            Buffer::no_color()
        };
        if term::emit_to_write_style(&mut buffer, &Config::default(), &files, &diagnostic).is_err()
        {
            let (line, column) = self.position(text);
            return format!(
                "error: malformed schedule: {}\n  --> {name}:{line}:{column}\n",
                self.what
            );
        }
        String::from_utf8_lossy(buffer.as_slice()).into_owned()
    }
}

/// Checks `text`, a schedule tree if it has a `domain:` key, else a union map.
pub fn check(text: &str) -> Result<(), SyntaxError> {
    if text.contains("domain:") {
        tree::check(text)
    } else {
        notation::check(text, text, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text: an answer, never a panic, and an error's span inside the text.
        #[test]
        fn any_text_gets_an_answer_with_a_span_inside_it(
            text in prop_oneof!["[ -~\n]{0,60}", "\\PC{0,30}", "[{}\\[\\]():;,>=a-z0-9 \"-]{0,60}"]
        ) {
            if let Err(e) = check(&text) {
                prop_assert!(e.span.start <= e.span.end && e.span.end <= text.len());
                prop_assert!(e.render("f", &text, false).contains("malformed schedule"));
            }
        }
    }
}
