//! Reading a schedule from text: an isl schedule tree (YAML, as `polyc show --emit schedule`
//! prints it) or a flat union map `{ S0[i, j] -> [i, j] }`.

use super::syntax::{self, SyntaxError, What};
use poly::isl::{Ctx, IslError};
use poly::order::AnySchedule;

/// Why a schedule text could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Nothing but blanks.
    #[error("the schedule is empty")]
    Empty,
    /// Looks like a schedule tree (it has a `domain` key) but isl rejects it.
    #[error("not a valid isl schedule tree: {0}")]
    Tree(IslError),
    /// Isl rejects it as a union map.
    #[error("not a valid isl union map or schedule tree: {0}")]
    Relation(IslError),
    /// Not isl's notation: the first wrong token, with its position.
    #[error("{0}")]
    Syntax(SyntaxError),
    /// Something no schedule holds, found before isl reads the text (isl's reader would
    /// take unbounded time or memory on it).
    #[error("{line}:{column}: {what}")]
    Refused {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong there.
        what: Refusal,
    },
}

/// What `screen` refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A digit where a schedule starts: isl would read a PolyLib matrix, whose first two
    /// numbers size it.
    PolyLib,
    /// `^`: isl evaluates powers of integer literals while reading them.
    Power,
    /// An integer literal of more digits than a 64-bit value has.
    HugeLiteral,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::PolyLib => "a schedule starts with `{`, `[` (parameters) or a YAML key, not a number (isl would read a PolyLib matrix)",
            Refusal::Power => "`^` (a power) has no place in a schedule",
            Refusal::HugeLiteral => "an integer literal beyond 64 bits has no place in a schedule",
        })
    }
}

/// The longest integer literal a schedule may hold (`i64::MAX` has 19 digits).
const MAX_DIGITS: usize = 19;

/// Refuses, with a position, the text on which isl's reader would not return in bounded
/// time and memory: a PolyLib matrix sized by its first numbers, powers, huge literals.
/// `#` starts a comment to the end of its line.
fn screen(text: &str) -> Result<(), InputError> {
    let mut started = false;
    let mut digits = 0;
    for (l, line) in text.lines().enumerate() {
        let code = line.split('#').next().unwrap_or("");
        for (c, ch) in code.chars().enumerate() {
            let refuse = |what| {
                Err(InputError::Refused {
                    line: l + 1,
                    column: c + 1,
                    what,
                })
            };
            if !started && !ch.is_whitespace() {
                started = true;
                if !(ch == '{' || ch == '[' || ch.is_alphabetic()) {
                    return refuse(Refusal::PolyLib);
                }
            }
            if ch == '^' {
                return refuse(Refusal::Power);
            }
            digits = if ch.is_ascii_digit() { digits + 1 } else { 0 };
            if digits > MAX_DIGITS {
                return refuse(Refusal::HugeLiteral);
            }
        }
        digits = 0;
    }
    Ok(())
}

impl InputError {
    /// The error as the command line shows it for the file `name` holding `text`: a syntax
    /// error rustc-style with the line and caret, any other on one line.
    pub fn render(&self, name: &str, text: &str, color: bool) -> String {
        match self {
            InputError::Syntax(e) => e.render(name, text, color),
            other => format!("error: {name}: {other}\n"),
        }
    }
}

/// Parses `text` as a schedule tree if it has a `domain:` key (every tree's root is a domain
/// node), else as a union map.
pub fn parse_schedule(ctx: &Ctx, text: &str) -> Result<AnySchedule, InputError> {
    if text.trim().is_empty() {
        return Err(InputError::Empty);
    }
    screen(text)?;
    syntax::check(text).map_err(InputError::Syntax)?;
    if text.contains("domain:") {
        ctx.schedule(text)
            .map(AnySchedule::Tree)
            .map_err(InputError::Tree)
    } else {
        ctx.union_map(text)
            .map(AnySchedule::Relation)
            .map_err(|e| locate(ctx, text).map_or(InputError::Relation(e), InputError::Syntax))
    }
}

/// The first piece of the union map `text` that isl refuses when it reads it alone (with
/// the parameters), as a syntax error at that piece; `None` if each piece reads alone.
fn locate(ctx: &Ctx, text: &str) -> Option<SyntaxError> {
    let outline = syntax::notation::outline(text, text, 0).ok()?;
    let params = outline.params.map(|p| format!("{} -> ", &text[p]));
    outline.pieces.into_iter().find_map(|piece| {
        let one = format!(
            "{}{{ {} }}",
            params.as_deref().unwrap_or(""),
            &text[piece.clone()]
        );
        ctx.union_map(&one).is_err().then_some(SyntaxError {
            span: piece,
            what: What::Refused,
            opened: None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_trees_and_relations() {
        let ctx = Ctx::default();
        let tree =
            "{ domain: \"{ S0[i] : 0 <= i < 4 }\", child: { schedule: \"[{ S0[i] -> [(i)] }]\" } }";
        assert!(matches!(
            parse_schedule(&ctx, tree),
            Ok(AnySchedule::Tree(_))
        ));
        let map = "[N] -> { S0[i] -> [N - i] }";
        assert!(matches!(
            parse_schedule(&ctx, map),
            Ok(AnySchedule::Relation(_))
        ));
    }

    /// Found by the `schedule_text` fuzz target: each made isl's reader run for minutes or
    /// allocate gigabytes.
    #[test]
    fn text_isl_cannot_read_in_bounded_time_is_refused_with_its_position() {
        let ctx = Ctx::default();
        let refused = |text: &str| match parse_schedule(&ctx, text) {
            Err(InputError::Refused { line, column, what }) => (line, column, what),
            other => panic!("{text:?}: {other:?}"),
        };
        assert_eq!(refused("   \r\r 0888 0888799"), (1, 7, Refusal::PolyLib));
        assert_eq!(
            refused("{ S0[i] -> [8^886123522 i] }"),
            (1, 14, Refusal::Power)
        );
        assert_eq!(
            refused("# a comment 99999999999999999999\n{ S0[i] -> [88888888888888888888 i] }"),
            (2, 32, Refusal::HugeLiteral)
        );
        assert!(
            parse_schedule(&ctx, "# 12\n[N] -> { S0[i] -> [9223372036854775807 - i] }").is_ok()
        );
    }

    #[test]
    fn bad_text_is_an_error() {
        let ctx = Ctx::default();
        assert!(matches!(
            parse_schedule(&ctx, " \n"),
            Err(InputError::Empty)
        ));
        assert!(matches!(
            parse_schedule(&ctx, "{ domain: \"{ S0[i : }\" }"),
            Err(InputError::Syntax(_))
        ));
        assert!(matches!(
            parse_schedule(&ctx, "{ S0[i] -> [i }"),
            Err(InputError::Syntax(_))
        ));
        // Well formed, but isl refuses a piece (not affine): that piece is pointed at.
        match parse_schedule(&ctx, "[N] -> { S0[i] -> [i];\n S1[i] -> [i * N] }") {
            Err(InputError::Syntax(e)) => assert_eq!((e.span, e.what), (24..40, What::Refused)),
            other => panic!("{other:?}"),
        }
    }
}
