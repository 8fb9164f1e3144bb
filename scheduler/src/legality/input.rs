//! Reading a schedule from text: an isl schedule tree (YAML, as `polyc show --emit schedule`
//! prints it) or a flat union map `{ S0[i, j] -> [i, j] }`.

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
}

/// Parses `text` as a schedule tree if it has a `domain:` key (every tree's root is a domain
/// node), else as a union map.
pub fn parse_schedule(ctx: &Ctx, text: &str) -> Result<AnySchedule, InputError> {
    if text.trim().is_empty() {
        return Err(InputError::Empty);
    }
    if text.contains("domain:") {
        ctx.schedule(text)
            .map(AnySchedule::Tree)
            .map_err(InputError::Tree)
    } else {
        ctx.union_map(text)
            .map(AnySchedule::Relation)
            .map_err(InputError::Relation)
    }
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

    #[test]
    fn bad_text_is_an_error() {
        let ctx = Ctx::default();
        assert!(matches!(
            parse_schedule(&ctx, " \n"),
            Err(InputError::Empty)
        ));
        assert!(matches!(
            parse_schedule(&ctx, "{ domain: \"{ S0[i : }\" }"),
            Err(InputError::Tree(_))
        ));
        assert!(matches!(
            parse_schedule(&ctx, "{ S0[i] -> [i }"),
            Err(InputError::Relation(_))
        ));
    }
}
