//! The lexer: source text to tokens with spans. Never fails: bad input becomes a diagnostic
//! and lexing goes on.

use crate::diagnostics::{Code, Diagnostic};
use crate::span::Span;

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A name.
    Ident(String),
    /// A non-negative integer literal.
    Int(i64),
    /// A non-negative, finite float literal.
    Float(f64),
    /// `kernel`
    Kernel,
    /// `intrinsic`
    Intrinsic,
    /// `params`
    Params,
    /// `where`
    Where,
    /// `let`
    Let,
    /// `for`
    For,
    /// `in`
    In,
    /// `out`
    Out,
    /// `inout`
    InOut,
    /// `step`
    Step,
    /// `if`
    If,
    /// `else`
    Else,
    /// `and`
    And,
    /// `or`
    Or,
    /// `not`
    Not,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `;`
    Semi,
    /// `:`
    Colon,
    /// `@`
    At,
    /// `->`
    Arrow,
    /// `..`
    DotDot,
    /// `.`
    Dot,
    /// `?`
    Question,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `=`
    Assign,
    /// `+=`
    PlusAssign,
    /// `-=`
    MinusAssign,
    /// `*=`
    StarAssign,
    /// `/=`
    SlashAssign,
    /// `==`
    EqEq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// End of input.
    Eof,
}

/// The keywords and their tokens.
pub const KEYWORDS: [(&str, Tok); 15] = [
    ("kernel", Tok::Kernel),
    ("intrinsic", Tok::Intrinsic),
    ("params", Tok::Params),
    ("where", Tok::Where),
    ("let", Tok::Let),
    ("for", Tok::For),
    ("in", Tok::In),
    ("out", Tok::Out),
    ("inout", Tok::InOut),
    ("step", Tok::Step),
    ("if", Tok::If),
    ("else", Tok::Else),
    ("and", Tok::And),
    ("or", Tok::Or),
    ("not", Tok::Not),
];

const PUNCTUATION: [(&str, Tok); 30] = [
    ("->", Tok::Arrow),
    ("..", Tok::DotDot),
    ("+=", Tok::PlusAssign),
    ("-=", Tok::MinusAssign),
    ("*=", Tok::StarAssign),
    ("/=", Tok::SlashAssign),
    ("==", Tok::EqEq),
    ("!=", Tok::NotEq),
    ("<=", Tok::Le),
    (">=", Tok::Ge),
    ("(", Tok::LParen),
    (")", Tok::RParen),
    ("[", Tok::LBracket),
    ("]", Tok::RBracket),
    ("{", Tok::LBrace),
    ("}", Tok::RBrace),
    (",", Tok::Comma),
    (";", Tok::Semi),
    (":", Tok::Colon),
    ("@", Tok::At),
    (".", Tok::Dot),
    ("?", Tok::Question),
    ("+", Tok::Plus),
    ("-", Tok::Minus),
    ("*", Tok::Star),
    ("/", Tok::Slash),
    ("%", Tok::Percent),
    ("=", Tok::Assign),
    ("<", Tok::Lt),
    (">", Tok::Gt),
];

impl Tok {
    /// How the token is described in "expected ..., found ..." messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(name) => format!("`{name}`"),
            Tok::Int(n) => format!("number `{n}`"),
            Tok::Float(x) => format!("number `{x:?}`"),
            Tok::Eof => "end of file".to_string(),
            other => format!("`{}`", other.spelling()),
        }
    }

    /// The fixed spelling of a keyword or punctuation token (empty for the others).
    pub fn spelling(&self) -> &'static str {
        KEYWORDS
            .iter()
            .chain(PUNCTUATION.iter())
            .find(|(_, t)| t == self)
            .map_or("", |(s, _)| s)
    }
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What it is.
    pub tok: Tok,
    /// Where it is.
    pub span: Span,
}

/// Splits `text` into tokens (ending with [`Tok::Eof`]) and the lexical errors found.
pub fn lex(text: &str) -> (Vec<Token>, Vec<Diagnostic>) {
    let mut lexer = Lexer {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        tokens: Vec::new(),
        diags: Vec::new(),
    };
    lexer.run();
    (lexer.tokens, lexer.diags)
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tokens: Vec<Token>,
    diags: Vec<Diagnostic>,
}

impl Lexer<'_> {
    fn peek_at(&self, k: usize) -> u8 {
        self.bytes.get(self.pos + k).copied().unwrap_or(0)
    }

    fn run(&mut self) {
        while self.pos < self.bytes.len() {
            let start = self.pos;
            let c = self.bytes[start];
            if c.is_ascii_whitespace() {
                self.pos += 1;
            } else if self.bytes[start..].starts_with(b"//") {
                while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else if self.bytes[start..].starts_with(b"/*") {
                self.block_comment(start);
            } else if c.is_ascii_alphabetic() || c == b'_' {
                self.word(start);
            } else if c.is_ascii_digit() {
                self.number(start);
            } else if let Some((s, tok)) = PUNCTUATION
                .iter()
                .find(|(s, _)| self.bytes[start..].starts_with(s.as_bytes()))
            {
                self.pos += s.len();
                self.push(tok.clone(), start);
            } else {
                let ch = self.text[start..].chars().next().unwrap_or('\u{fffd}');
                self.pos += ch.len_utf8();
                self.diags.push(Diagnostic::new(
                    Code::UnexpectedChar,
                    format!("unexpected character {ch:?}"),
                    Span::new(start, self.pos),
                    "no token starts with this character",
                ));
            }
        }
        let end = self.bytes.len();
        self.tokens.push(Token {
            tok: Tok::Eof,
            span: Span::new(end, end),
        });
    }

    fn push(&mut self, tok: Tok, start: usize) {
        self.tokens.push(Token {
            tok,
            span: Span::new(start, self.pos),
        });
    }

    fn block_comment(&mut self, start: usize) {
        match self.text[start + 2..].find("*/") {
            Some(k) => self.pos = start + 2 + k + 2,
            None => {
                self.pos = self.bytes.len();
                self.diags.push(Diagnostic::new(
                    Code::UnterminatedComment,
                    "unterminated block comment",
                    Span::new(start, start + 2),
                    "this comment is never closed with `*/`",
                ));
            }
        }
    }

    fn word(&mut self, start: usize) {
        while self.peek_at(0).is_ascii_alphanumeric() || self.peek_at(0) == b'_' {
            self.pos += 1;
        }
        let word = &self.text[start..self.pos];
        let tok = KEYWORDS
            .iter()
            .find(|(k, _)| *k == word)
            .map_or_else(|| Tok::Ident(word.to_string()), |(_, t)| t.clone());
        self.push(tok, start);
    }

    fn digits(&mut self) {
        while self.peek_at(0).is_ascii_digit() {
            self.pos += 1;
        }
    }

    fn number(&mut self, start: usize) {
        self.digits();
        let mut is_float = false;
        if self.peek_at(0) == b'.' && self.peek_at(1).is_ascii_digit() {
            is_float = true;
            self.pos += 1;
            self.digits();
        }
        if matches!(self.peek_at(0), b'e' | b'E') {
            is_float = true;
            self.pos += 1;
            if matches!(self.peek_at(0), b'+' | b'-') {
                self.pos += 1;
            }
            if !self.peek_at(0).is_ascii_digit() {
                self.diags.push(Diagnostic::new(
                    Code::MalformedNumber,
                    "malformed number: exponent without digits",
                    Span::new(start, self.pos),
                    "expected digits after the exponent",
                ));
                self.push(Tok::Float(0.0), start);
                return;
            }
            self.digits();
        }
        let text = &self.text[start..self.pos];
        let span = Span::new(start, self.pos);
        let tok = if is_float {
            match text.parse::<f64>() {
                Ok(x) if x.is_finite() => Tok::Float(x),
                _ => {
                    self.diags.push(Diagnostic::new(
                        Code::LiteralOutOfRange,
                        format!("float literal `{text}` is out of range"),
                        span,
                        "larger than the largest f64",
                    ));
                    Tok::Float(0.0)
                }
            }
        } else {
            match text.parse::<i64>() {
                Ok(n) => Tok::Int(n),
                Err(_) => {
                    self.diags.push(Diagnostic::new(
                        Code::LiteralOutOfRange,
                        format!("integer literal `{text}` is out of range"),
                        span,
                        "larger than 9223372036854775807",
                    ));
                    Tok::Int(0)
                }
            }
        };
        self.push(tok, start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let (t, d) = lex(s);
        assert!(d.is_empty(), "{d:?}");
        t.into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn range_is_not_a_float() {
        assert_eq!(
            toks("0..N"),
            vec![Tok::Int(0), Tok::DotDot, Tok::Ident("N".into()), Tok::Eof]
        );
    }

    #[test]
    fn floats_and_comments() {
        assert_eq!(
            toks("1.5 /* x */ 2e-3 // y\n max="),
            vec![
                Tok::Float(1.5),
                Tok::Float(2e-3),
                Tok::Ident("max".into()),
                Tok::Assign,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn errors_do_not_stop_lexing() {
        let (t, d) = lex("a # 99999999999999999999 1e /* ");
        let codes: Vec<Code> = d.iter().map(|d| d.code).collect();
        assert_eq!(
            codes,
            vec![
                Code::UnexpectedChar,
                Code::LiteralOutOfRange,
                Code::MalformedNumber,
                Code::UnterminatedComment
            ]
        );
        assert_eq!(t.last().map(|t| &t.tok), Some(&Tok::Eof));
    }
}
