//! A recognizer of isl's set and map notation, as schedules use it: a union set or map
//! (`[N] -> { S0[i, j] -> [j, i] : i < N }`) or a multi-union piecewise affine expression
//! (`[N] -> [{ S0[i] -> [(i)] }, { S0[i] -> [(0)] }]`, a tree's band). It only finds the
//! first place where the text cannot be isl's notation; isl reads the text itself.

use super::lexer::{tokens, Kind, Token};
use super::{Expected, SyntaxError, What};
use std::ops::Range;

/// Nesting deeper than this is refused (isl's own reader recurses too).
const MAX_DEPTH: usize = 100;

/// Words that are operators or functions, never names.
const KEYWORDS: [&str; 15] = [
    "and", "or", "not", "implies", "exists", "mod", "floor", "ceil", "floord", "ceild", "min",
    "max", "true", "false", "infty",
];

/// Functions written `f(e, ...)`.
const FUNCTIONS: [&str; 6] = ["floor", "ceil", "floord", "ceild", "min", "max"];

/// Checks that `text` (bytes from `base` of `file`) is isl's notation for a union set, map
/// or multi-union piecewise affine expression.
pub fn check(file: &str, text: &str, base: usize) -> Result<(), SyntaxError> {
    outline(file, text, base).map(|_| ())
}

/// Where the parts of a well-formed text are, for locating what isl refuses in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outline {
    /// The parameter tuple, `[N, M]`, if any.
    pub params: Option<Range<usize>>,
    /// Each piece between `{`, `;` and `}` (`S0[i] -> [i] : i > 0`), in order.
    pub pieces: Vec<Range<usize>>,
}

/// Checks `text` as [`check`] does and returns its [`Outline`].
pub fn outline(file: &str, text: &str, base: usize) -> Result<Outline, SyntaxError> {
    let tokens = tokens(text, base)?;
    let mut p = Parser {
        file,
        tokens,
        pos: 0,
        depth: 0,
        names: Vec::new(),
        outline: Outline {
            params: None,
            pieces: Vec::new(),
        },
    };
    p.object()?;
    p.expect_end()?;
    Ok(p.outline)
}

struct Parser<'a> {
    file: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    /// The names in scope: parameters, tuple variables, `exists` variables.
    names: Vec<String>,
    outline: Outline,
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn peek_at(&self, ahead: usize) -> &Token {
        &self.tokens[(self.pos + ahead).min(self.tokens.len() - 1)]
    }

    fn text(&self, t: &Token) -> &str {
        &self.file[t.span.clone()]
    }

    fn is(&self, punct: &str) -> bool {
        matches!(self.peek().kind, Kind::Punct(p) if p == punct)
    }

    fn is_word(&self, word: &str) -> bool {
        self.peek().kind == Kind::Ident && self.text(self.peek()) == word
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        self.pos += 1;
        t
    }

    fn eat(&mut self, punct: &str) -> bool {
        let yes = self.is(punct);
        if yes {
            self.pos += 1;
        }
        yes
    }

    /// An error at the next token: `expected` was expected there.
    fn unexpected(&self, expected: Expected) -> SyntaxError {
        let t = self.peek();
        SyntaxError {
            span: t.span.clone(),
            what: What::Expected {
                expected,
                found: self.found(),
            },
            opened: None,
        }
    }

    fn found(&self) -> Option<String> {
        let t = self.peek();
        (t.kind != Kind::End).then(|| self.text(t).to_string())
    }

    fn expect(&mut self, punct: &'static str) -> Result<(), SyntaxError> {
        if self.eat(punct) {
            Ok(())
        } else {
            Err(self.unexpected(Expected::Token(punct)))
        }
    }

    /// Expects `close`, naming `open` (the token that opened the group) when it is missing.
    fn close(&mut self, close: &'static str, open: &Token) -> Result<(), SyntaxError> {
        self.expect(close).map_err(|mut e| {
            e.opened = Some(open.span.clone());
            e
        })
    }

    fn expect_end(&self) -> Result<(), SyntaxError> {
        match self.peek().kind {
            Kind::End => Ok(()),
            _ => Err(self.unexpected(Expected::End)),
        }
    }

    fn deeper(&mut self) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(SyntaxError {
                span: self.peek().span.clone(),
                what: What::TooDeep,
                opened: None,
            });
        }
        Ok(())
    }

    /// `[params ->] { pieces }` or `[params ->] [{ pieces }, ...]`.
    fn object(&mut self) -> Result<(), SyntaxError> {
        if self.is("[") && self.peek_at(1).kind != Kind::Punct("{") {
            let open = self.bump();
            if !self.is("]") {
                loop {
                    let name = self.name()?;
                    self.names.push(name);
                    if !self.eat(",") {
                        break;
                    }
                }
            }
            self.close("]", &open)?;
            self.outline.params = Some(open.span.start..self.tokens[self.pos - 1].span.end);
            self.expect("->")?;
        }
        if self.is("[") {
            let open = self.bump();
            if !self.is("]") {
                loop {
                    self.braces()?;
                    if !self.eat(",") {
                        break;
                    }
                }
            }
            return self.close("]", &open);
        }
        self.braces()
    }

    fn name(&mut self) -> Result<String, SyntaxError> {
        let t = self.peek().clone();
        if t.kind == Kind::Ident && !KEYWORDS.contains(&self.text(&t)) {
            self.pos += 1;
            return Ok(self.text(&t).to_string());
        }
        Err(self.unexpected(Expected::Name))
    }

    /// `{ piece; piece }`; a piece's tuple names stay in scope only in that piece.
    fn braces(&mut self) -> Result<(), SyntaxError> {
        if !self.is("{") {
            return Err(self.unexpected(Expected::Token("{")));
        }
        let open = self.bump();
        if !self.is("}") {
            loop {
                let scope = self.names.len();
                let start = self.pos;
                self.piece()?;
                if self.pos > start {
                    let span = self.tokens[start].span.start..self.tokens[self.pos - 1].span.end;
                    self.outline.pieces.push(span);
                }
                self.names.truncate(scope);
                if !self.eat(";") {
                    break;
                }
            }
        }
        self.close("}", &open)
    }

    /// `tuple [-> tuple] [: condition]`, or `: condition` alone (a parameter set).
    fn piece(&mut self) -> Result<(), SyntaxError> {
        if !self.is(":") {
            self.relation_tuple()?;
        }
        if self.eat(":") {
            self.condition()?;
        }
        Ok(())
    }

    fn starts_tuple(&self) -> bool {
        self.is("[")
            || (self.peek().kind == Kind::Ident && self.peek_at(1).kind == Kind::Punct("["))
    }

    /// `tuple [-> tuple]`.
    fn relation_tuple(&mut self) -> Result<(), SyntaxError> {
        self.tuple()?;
        if self.eat("->") {
            self.tuple()?;
        }
        Ok(())
    }

    /// `[Name] [element, ...]`: an element is a new name (a variable), an expression, or a
    /// nested (wrapped) tuple.
    fn tuple(&mut self) -> Result<(), SyntaxError> {
        if !self.starts_tuple() {
            return Err(self.unexpected(Expected::Tuple));
        }
        if self.peek().kind == Kind::Ident {
            self.name()?;
        }
        self.deeper()?;
        let open = self.bump();
        if !self.is("]") {
            loop {
                self.element()?;
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.close("]", &open)?;
        self.depth -= 1;
        Ok(())
    }

    fn element(&mut self) -> Result<(), SyntaxError> {
        if self.starts_tuple() {
            return self.relation_tuple();
        }
        let t = self.peek().clone();
        let next = self.peek_at(1).kind;
        let new_name = t.kind == Kind::Ident
            && !KEYWORDS.contains(&self.text(&t))
            && !self.names.iter().any(|n| n == self.text(&t));
        // `S3[i, j = 1 + i]`: a variable defined by an expression, as isl prints it.
        if new_name && next == Kind::Punct("=") {
            self.pos += 2;
            self.names.push(self.text(&t).to_string());
            return self.sum();
        }
        // A name not in scope declares a variable unless an expression goes on after it
        // (then it is an unknown name).
        let continues = matches!(next, Kind::Ident | Kind::Number)
            || [
                "+", "-", "*", "/", "%", "//", "(", "<", "<=", ">", ">=", "=", "==", "!=",
            ]
            .iter()
            .any(|p| next == Kind::Punct(p));
        if new_name && !continues {
            self.pos += 1;
            self.names.push(self.text(&t).to_string());
            return Ok(());
        }
        self.condition()
    }

    /// Conditions and expressions alike: `a or b`, `a and b`, `not a`, chained
    /// comparisons, sums, products; isl tells them apart, this only checks their form.
    fn condition(&mut self) -> Result<(), SyntaxError> {
        self.deeper()?;
        loop {
            while self.is_word("not") {
                self.pos += 1;
            }
            self.sum()?;
            let joins = ["or", "and", "implies"];
            let word = self.peek().kind == Kind::Ident && joins.contains(&self.text(self.peek()));
            let op = [
                "<", "<=", ">", ">=", "=", "==", "!=", "<<", ">>", "<<=", ">>=", "&", "&&", "|",
                "||", "/\\", "\\/",
            ]
            .iter()
            .any(|p| self.is(p));
            if !(word || op) {
                break;
            }
            self.pos += 1;
        }
        self.depth -= 1;
        Ok(())
    }

    fn sum(&mut self) -> Result<(), SyntaxError> {
        loop {
            while self.eat("-") {}
            self.product()?;
            if !(self.eat("+") || self.eat("-")) {
                return Ok(());
            }
        }
    }

    fn product(&mut self) -> Result<(), SyntaxError> {
        loop {
            let number = self.peek().kind == Kind::Number;
            self.primary()?;
            // `2i`, `2(i + 1)`: a constant times what follows it.
            let juxtaposed =
                number && (self.is("(") || (self.peek().kind == Kind::Ident && !self.at_keyword()));
            let op = ["*", "/", "%", "//"].iter().any(|p| self.is(p)) || self.is_word("mod");
            if op {
                self.pos += 1;
            } else if !juxtaposed {
                return Ok(());
            }
            while self.eat("-") {}
        }
    }

    fn at_keyword(&self) -> bool {
        KEYWORDS.contains(&self.text(self.peek())) && !FUNCTIONS.contains(&self.text(self.peek()))
    }

    /// A number, a name in scope, `true`/`false`/`infty`, a function call, `exists (...)`,
    /// or a parenthesised group (pieces `(e : c; e : c)` allowed, as in piecewise
    /// expressions).
    fn primary(&mut self) -> Result<(), SyntaxError> {
        let t = self.peek().clone();
        match t.kind {
            Kind::Number => {
                self.pos += 1;
                Ok(())
            }
            Kind::Punct("(") => {
                self.pos += 1;
                self.deeper()?;
                loop {
                    self.condition()?;
                    if self.eat(":") {
                        self.condition()?;
                    }
                    if !self.eat(";") {
                        break;
                    }
                }
                self.close(")", &t)?;
                self.depth -= 1;
                Ok(())
            }
            Kind::Ident => {
                let word = self.text(&t).to_string();
                if ["true", "false", "infty"].contains(&word.as_str()) {
                    self.pos += 1;
                    return Ok(());
                }
                if FUNCTIONS.contains(&word.as_str()) {
                    self.pos += 1;
                    let open = self.peek().clone();
                    self.expect("(")?;
                    loop {
                        self.condition()?;
                        if !self.eat(",") {
                            break;
                        }
                    }
                    return self.close(")", &open);
                }
                if word == "exists" {
                    return self.exists();
                }
                if KEYWORDS.contains(&word.as_str()) {
                    return Err(self.unexpected(Expected::Operand));
                }
                if !self.names.contains(&word) {
                    return Err(SyntaxError {
                        span: t.span,
                        what: What::UnknownName(word),
                        opened: None,
                    });
                }
                self.pos += 1;
                Ok(())
            }
            _ => Err(self.unexpected(Expected::Operand)),
        }
    }

    /// `exists (e, f : condition)`, its names in scope inside only.
    fn exists(&mut self) -> Result<(), SyntaxError> {
        self.pos += 1;
        let open = self.peek().clone();
        self.expect("(")?;
        let scope = self.names.len();
        loop {
            let name = self.name()?;
            self.names.push(name);
            // `exists (e = floor(i / 2) : ...)`: a name defined by an expression.
            if self.eat("=") {
                self.sum()?;
            }
            if !self.eat(",") {
                break;
            }
        }
        self.expect(":")?;
        self.condition()?;
        self.names.truncate(scope);
        self.close(")", &open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> (std::ops::Range<usize>, What) {
        let e = check(text, text, 0).unwrap_err();
        (e.span, e.what)
    }

    #[test]
    fn accepts_what_isl_prints() {
        for text in [
            "[N] -> { S0[i, j] -> [j, i] : 0 <= i < N and j >= 0 }",
            "{ S0[i] -> [2i + 1, 0]; S1[i, k] -> [i, 1 + k] }",
            "[N] -> [{ S0[i] -> [(i)]; S1[i, k] -> [(floor((i)/32))] }, { S0[i] -> [(0)] }]",
            "[N] -> { S0[t, i] : exists (e0 = floor((t)/2): 2e0 = t) and i mod 4 = 0 }",
            "{ }",
            "[N] -> { : N >= 1 }",
            "{ [S0[i] -> A[i]] -> [i] }",
            "[N] -> { S3[i, j = 1 + i] -> [-i, 1 + i] : 0 <= i <= -2 + N }",
            "[N] -> { S0[i, o1] : o1 = i - 1 or (i >= 1 and -i < N - 2) }",
        ] {
            assert_eq!(check(text, text, 0), Ok(()), "{text}");
        }
    }

    #[test]
    fn finds_the_first_wrong_token() {
        let missing = What::Expected {
            expected: Expected::Token("]"),
            found: Some("}".into()),
        };
        assert_eq!(error("{ S0[i, j] -> [i, j }"), (20..21, missing));
        assert_eq!(
            error("{ S0[i] -> [k + 1] }"),
            (12..13, What::UnknownName("k".into()))
        );
        // A new name alone is an output variable, as in isl.
        assert_eq!(check("{ S0[i] -> [k] }", "{ S0[i] -> [k] }", 0), Ok(()));
        assert_eq!(
            error("{ S0[i] -> [i] "),
            (
                14..14,
                What::Expected {
                    expected: Expected::Token("}"),
                    found: None
                }
            )
        );
        assert_eq!(
            error("{ S0[i] [i] }"),
            (
                8..9,
                What::Expected {
                    expected: Expected::Token("}"),
                    found: Some("[".into())
                }
            )
        );
        let deep = format!("{{ S0[i] -> [{}i{}] }}", "(".repeat(500), ")".repeat(500));
        assert_eq!(error(&deep).1, What::TooDeep);
    }
}
