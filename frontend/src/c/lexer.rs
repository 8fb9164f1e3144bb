//! C tokens: the lexer shared by the preprocessed text and the original file.
//!
//! It never fails: what starts no C token becomes [`Tok::Other`], for the parser to report
//! if it ever reads it. Comments are skipped; a line whose first non-blank character is `#`
//! is one [`Tok::Directive`] (with its continuation lines), which the callers interpret
//! (line markers and pragmas in preprocessed text, `#pragma scop` in the original).

/// A C punctuator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // each variant is named after its spelling, given by `spelling`
pub enum Punct {
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Semi,
    Colon,
    Question,
    Dot,
    Ellipsis,
    Arrow,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    PlusPlus,
    MinusMinus,
    Amp,
    Pipe,
    Caret,
    Tilde,
    Bang,
    AmpAmp,
    PipePipe,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    EqEq,
    Ne,
    Assign,
    PlusAssign,
    MinusAssign,
    StarAssign,
    SlashAssign,
    PercentAssign,
    AmpAssign,
    PipeAssign,
    CaretAssign,
    ShlAssign,
    ShrAssign,
    Hash,
}

/// Every punctuator with its spelling, longest first (the lexer takes the first that
/// matches).
const PUNCTS: [(&str, Punct); 47] = {
    use Punct::*;
    [
        ("...", Ellipsis),
        ("<<=", ShlAssign),
        (">>=", ShrAssign),
        ("->", Arrow),
        ("++", PlusPlus),
        ("--", MinusMinus),
        ("&&", AmpAmp),
        ("||", PipePipe),
        ("<<", Shl),
        (">>", Shr),
        ("<=", Le),
        (">=", Ge),
        ("==", EqEq),
        ("!=", Ne),
        ("+=", PlusAssign),
        ("-=", MinusAssign),
        ("*=", StarAssign),
        ("/=", SlashAssign),
        ("%=", PercentAssign),
        ("&=", AmpAssign),
        ("|=", PipeAssign),
        ("^=", CaretAssign),
        ("(", LParen),
        (")", RParen),
        ("[", LBracket),
        ("]", RBracket),
        ("{", LBrace),
        ("}", RBrace),
        (",", Comma),
        (";", Semi),
        (":", Colon),
        ("?", Question),
        (".", Dot),
        ("+", Plus),
        ("-", Minus),
        ("*", Star),
        ("/", Slash),
        ("%", Percent),
        ("&", Amp),
        ("|", Pipe),
        ("^", Caret),
        ("~", Tilde),
        ("!", Bang),
        ("<", Lt),
        (">", Gt),
        ("=", Assign),
        ("#", Hash),
    ]
};

impl Punct {
    /// The punctuator as written.
    pub fn spelling(self) -> &'static str {
        PUNCTS
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("?", |(s, _)| s)
    }
}

/// An integer literal: its value and what its suffix says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntLit {
    /// The value (literals beyond `u64` are [`Tok::BadNumber`]).
    pub value: u64,
    /// A `u`/`U` suffix.
    pub unsigned: bool,
    /// An `l`/`L` (or `ll`/`LL`) suffix.
    pub long: bool,
    /// Written in octal or hexadecimal (which may make it unsigned in C).
    pub based: bool,
}

/// A floating-point literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatLit {
    /// The value, correctly rounded to the literal's type.
    pub value: f64,
    /// Its type.
    pub kind: FloatKind,
}

/// The type of a floating-point literal, from its suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatKind {
    /// `f`/`F`: `float`.
    Float,
    /// No suffix: `double`.
    Double,
    /// `l`/`L`: `long double`.
    LongDouble,
}

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier or keyword.
    Ident(String),
    /// An integer literal.
    Int(IntLit),
    /// A floating-point literal.
    Float(FloatLit),
    /// A character literal, with its value as an `int`.
    Char(i64),
    /// A string literal.
    Str,
    /// A punctuator.
    P(Punct),
    /// A whole preprocessing directive line (`#...`), continuation lines included.
    Directive(String),
    /// A number that is no valid C literal, with its text and why.
    BadNumber(String, NumberFault),
    /// Text that starts no token.
    Other(String),
}

/// Why a number is no valid C literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumberFault {
    /// An integer beyond 64 bits, or a floating-point literal beyond its type's range.
    OutOfRange,
    /// Not a number C knows (`1e`, `08`, `1uu`, `1.2.3`).
    Malformed,
}

/// A token and its byte range in the text lexed.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// Lexes `text`: tokens in order, comments skipped, directive lines as single tokens.
pub fn lex(text: &str) -> Vec<Token> {
    let mut lexer = Lexer {
        text,
        bytes: text.as_bytes(),
        at: 0,
        line_start: true,
        out: Vec::new(),
    };
    lexer.run();
    lexer.out
}

struct Lexer<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    /// Whether only blanks were seen since the last newline.
    line_start: bool,
    out: Vec<Token>,
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> u8 {
        self.bytes.get(self.at + k).copied().unwrap_or(0)
    }

    fn push(&mut self, tok: Tok, start: usize) {
        self.out.push(Token {
            tok,
            start,
            end: self.at,
        });
        self.line_start = false;
    }

    fn run(&mut self) {
        while self.at < self.bytes.len() {
            let c = self.peek(0);
            let start = self.at;
            match c {
                b'\n' => {
                    self.at += 1;
                    self.line_start = true;
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => self.at += 1,
                b'\\' if self.peek(1) == b'\n' => self.at += 2,
                b'\\' if self.peek(1) == b'\r' && self.peek(2) == b'\n' => self.at += 3,
                b'/' if self.peek(1) == b'/' => self.line_comment(),
                b'/' if self.peek(1) == b'*' => self.block_comment(),
                b'#' if self.line_start => self.directive(),
                b'"' => {
                    self.quoted(b'"');
                    self.push(Tok::Str, start);
                }
                b'\'' => {
                    self.quoted(b'\'');
                    let tok = char_value(&self.text[start..self.at])
                        .map_or_else(|| Tok::Other(self.text[start..self.at].into()), Tok::Char);
                    self.push(tok, start);
                }
                b'0'..=b'9' => self.number(),
                b'.' if self.peek(1).is_ascii_digit() => self.number(),
                c if c == b'_' || c.is_ascii_alphabetic() => {
                    while self.peek(0) == b'_' || self.peek(0).is_ascii_alphanumeric() {
                        self.at += 1;
                    }
                    let word = &self.text[start..self.at];
                    // A prefixed string or character literal (`L"..."`, `u8'x'`).
                    if matches!(word, "L" | "u" | "U" | "u8") && matches!(self.peek(0), b'"') {
                        self.quoted(b'"');
                        self.push(Tok::Str, start);
                    } else {
                        self.push(Tok::Ident(word.to_owned()), start);
                    }
                }
                _ => self.punct(),
            }
        }
    }

    fn line_comment(&mut self) {
        while self.at < self.bytes.len() && self.peek(0) != b'\n' {
            // A backslash-newline continues the comment.
            if self.peek(0) == b'\\' && self.peek(1) == b'\n' {
                self.at += 1;
            }
            self.at += 1;
        }
    }

    fn block_comment(&mut self) {
        self.at += 2;
        while self.at < self.bytes.len() && !(self.peek(0) == b'*' && self.peek(1) == b'/') {
            self.at += 1;
        }
        self.at = (self.at + 2).min(self.bytes.len());
    }

    /// A directive: up to the end of its line, continuation lines and comments included.
    fn directive(&mut self) {
        let start = self.at;
        while self.at < self.bytes.len() && self.peek(0) != b'\n' {
            match self.peek(0) {
                b'\\' if self.peek(1) == b'\n' => self.at += 2,
                b'/' if self.peek(1) == b'*' => self.block_comment(),
                b'/' if self.peek(1) == b'/' => self.line_comment(),
                _ => self.at += 1,
            }
        }
        let text = self.text[start..self.at].to_owned();
        self.push(Tok::Directive(text), start);
        self.line_start = true;
    }

    /// A string or character literal up to its closing quote (or the end of the line).
    fn quoted(&mut self, quote: u8) {
        self.at += 1;
        while self.at < self.bytes.len() && self.peek(0) != quote && self.peek(0) != b'\n' {
            if self.peek(0) == b'\\' {
                self.at += 1;
            }
            self.at += 1;
        }
        if self.peek(0) == quote {
            self.at += 1;
        }
        self.at = self.at.min(self.bytes.len());
    }

    /// A preprocessing number, then what it means.
    fn number(&mut self) {
        let start = self.at;
        loop {
            let c = self.peek(0);
            if matches!(c, b'e' | b'E' | b'p' | b'P') && matches!(self.peek(1), b'+' | b'-') {
                self.at += 2;
            } else if c == b'.' || c == b'_' || c.is_ascii_alphanumeric() {
                self.at += 1;
            } else {
                break;
            }
        }
        let text = &self.text[start..self.at];
        let tok = number(text).unwrap_or_else(|fault| Tok::BadNumber(text.to_owned(), fault));
        self.push(tok, start);
    }

    fn punct(&mut self) {
        let start = self.at;
        let rest = &self.text[self.at..];
        if let Some((s, p)) = PUNCTS.iter().find(|(s, _)| rest.starts_with(s)) {
            self.at += s.len();
            self.push(Tok::P(*p), start);
        } else {
            let c = rest.chars().next().unwrap_or('\0');
            self.at += c.len_utf8().max(1);
            self.push(Tok::Other(c.to_string()), start);
        }
    }
}

/// The meaning of a preprocessing number, or why it is no valid C literal.
fn number(text: &str) -> Result<Tok, NumberFault> {
    let lower = text.to_ascii_lowercase();
    let hex = lower.starts_with("0x");
    let is_float = if hex {
        lower.contains('.') || lower.contains('p')
    } else {
        lower.contains('.') || lower.contains('e')
    };
    if is_float {
        float(&lower, hex).map(Tok::Float)
    } else {
        integer(&lower, hex).map(Tok::Int)
    }
}

fn integer(text: &str, hex: bool) -> Result<IntLit, NumberFault> {
    let digits_end = text
        .find(|c: char| c == 'u' || c == 'l' || (!hex && !c.is_ascii_digit()))
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    let (unsigned, long) = match suffix {
        "" => (false, false),
        "u" => (true, false),
        "l" | "ll" => (false, true),
        "ul" | "lu" | "ull" | "llu" => (true, true),
        _ => return Err(NumberFault::Malformed),
    };
    let (radix, body) = if hex {
        (16, &digits[2..])
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    let value = u64::from_str_radix(body, radix).map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => NumberFault::OutOfRange,
        _ => NumberFault::Malformed,
    })?;
    Ok(IntLit {
        value,
        unsigned,
        long,
        based: radix != 10,
    })
}

fn float(text: &str, hex: bool) -> Result<FloatLit, NumberFault> {
    let (body, kind) = match text.as_bytes().last() {
        Some(b'f') if !hex || text.contains('p') => (&text[..text.len() - 1], FloatKind::Float),
        Some(b'l') => (&text[..text.len() - 1], FloatKind::LongDouble),
        _ => (text, FloatKind::Double),
    };
    let value = if hex {
        hex_float(&body[2..])
    } else if body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-'))
    {
        match kind {
            // Rounded once, from the decimal text, to the literal's own type.
            FloatKind::Float => body.parse::<f32>().ok().map(f64::from),
            _ => body.parse::<f64>().ok(),
        }
    } else {
        None
    };
    match value {
        None => Err(NumberFault::Malformed),
        Some(v) if !v.is_finite() => Err(NumberFault::OutOfRange),
        Some(value) => Ok(FloatLit { value, kind }),
    }
}

/// A hexadecimal float's value (`1.8p3`), exact when its digits fit a double.
fn hex_float(text: &str) -> Option<f64> {
    let (mantissa, exponent) = text.split_once('p')?;
    let exponent: i32 = exponent.parse().ok()?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut value = 0f64;
    for c in int.chars().chain(frac.chars()) {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let shift = exponent - 4 * i32::try_from(frac.len()).ok()?;
    Some(value * 2f64.powi(shift))
}

/// The value of a character literal (`'a'`, `'\n'`, `'\x41'`) as a C `int` (plain `char`
/// is signed here).
fn char_value(text: &str) -> Option<i64> {
    let inner = text.strip_prefix('\'')?.strip_suffix('\'')?;
    let value = match inner.as_bytes() {
        [c] => i64::from(*c),
        [b'\\', rest @ ..] => match rest {
            [b'n'] => 10,
            [b't'] => 9,
            [b'r'] => 13,
            [b'0'] => 0,
            [b'a'] => 7,
            [b'b'] => 8,
            [b'f'] => 12,
            [b'v'] => 11,
            [b'\\'] => 92,
            [b'\''] => 39,
            [b'"'] => 34,
            [b'?'] => 63,
            [b'x', hex @ ..] => i64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?,
            octal if octal.iter().all(|b| (b'0'..=b'7').contains(b)) && octal.len() <= 3 => {
                i64::from_str_radix(std::str::from_utf8(octal).ok()?, 8).ok()?
            }
            _ => return None,
        },
        _ => return None,
    };
    // A plain `char` is signed: values above 127 wrap.
    Some(i64::from(value as u8 as i8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn literals_have_their_types_and_values() {
        let t = toks("1 0x10u 010 3L 1.5 .5f 2.e1 0x1.8p1 'a' '\\n'");
        assert_eq!(
            t[..4],
            [
                Tok::Int(IntLit {
                    value: 1,
                    unsigned: false,
                    long: false,
                    based: false
                }),
                Tok::Int(IntLit {
                    value: 16,
                    unsigned: true,
                    long: false,
                    based: true
                }),
                Tok::Int(IntLit {
                    value: 8,
                    unsigned: false,
                    long: false,
                    based: true
                }),
                Tok::Int(IntLit {
                    value: 3,
                    unsigned: false,
                    long: true,
                    based: false
                }),
            ]
        );
        let f = |value, kind| Tok::Float(FloatLit { value, kind });
        assert_eq!(
            t[4..8],
            [
                f(1.5, FloatKind::Double),
                f(0.5, FloatKind::Float),
                f(20.0, FloatKind::Double),
                f(3.0, FloatKind::Double)
            ]
        );
        assert_eq!(t[8..], [Tok::Char(97), Tok::Char(10)]);
        // A float literal is rounded once to float, not through double.
        let Tok::Float(x) = &toks("0.1f")[0] else {
            panic!("a float")
        };
        assert_eq!(x.value, 0.1f32 as f64);
    }

    #[test]
    fn comments_directives_and_punctuators() {
        let t = toks("a /* x */ += b // c\n  # pragma scop\\\n more\nc<<=d->e");
        assert_eq!(t[0], Tok::Ident("a".into()));
        assert_eq!(t[1], Tok::P(Punct::PlusAssign));
        assert_eq!(t[2], Tok::Ident("b".into()));
        assert_eq!(t[3], Tok::Directive("# pragma scop\\\n more".into()));
        assert_eq!(t[5], Tok::P(Punct::ShlAssign));
        assert_eq!(t[7], Tok::P(Punct::Arrow));
        assert!(matches!(toks("@")[0], Tok::Other(_)));
    }

    #[test]
    fn bad_numbers_say_why() {
        let fault = |text: &str| match &toks(text)[0] {
            Tok::BadNumber(t, f) => {
                assert_eq!(t, text);
                *f
            }
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(fault("1e"), NumberFault::Malformed);
        assert_eq!(fault("08"), NumberFault::Malformed);
        assert_eq!(fault("1uu"), NumberFault::Malformed);
        assert_eq!(fault("18446744073709551616"), NumberFault::OutOfRange);
        assert_eq!(fault("0x1ffffffffffffffff"), NumberFault::OutOfRange);
        assert_eq!(fault("1e999"), NumberFault::OutOfRange);
        assert_eq!(fault("1e39f"), NumberFault::OutOfRange);
        assert!(matches!(toks("18446744073709551615")[0], Tok::Int(_)));
    }
}
