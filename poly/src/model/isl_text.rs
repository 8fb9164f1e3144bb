//! Printing the front end's affine expressions and conditions in isl's notation.
//!
//! Names the user chose may be isl keywords (`min`, `mod`, `exists`...): every name goes
//! through [`isl_name`], which renames those consistently.

use frontend::ir::{AffExpr, CmpOp, Cond};

/// Words isl's parser treats specially; user names equal to one of them get a `_` suffix.
const ISL_KEYWORDS: &[&str] = &[
    "and", "or", "not", "implies", "exists", "min", "max", "floor", "ceil", "mod", "true", "false",
    "infty", "NaN", "domain", "range", "rat", "cst", "div", "fdiv", "cdiv", "list", "if", "then",
    "else",
];

/// The isl spelling of a user-chosen name.
pub fn isl_name(name: &str) -> String {
    if ISL_KEYWORDS.contains(&name)
        || name.ends_with('_') && ISL_KEYWORDS.contains(&&name[..name.len() - 1])
    {
        format!("{name}_")
    } else {
        name.to_owned()
    }
}

/// An affine expression in isl's notation.
pub fn aff(e: &AffExpr) -> String {
    match e {
        AffExpr::Const(c) => format!("({c})"),
        AffExpr::Var(v) => isl_name(v.name()),
        AffExpr::Add(a, b) => format!("({} + {})", aff(a), aff(b)),
        AffExpr::Sub(a, b) => format!("({} - {})", aff(a), aff(b)),
        AffExpr::Neg(a) => format!("(-{})", aff(a)),
        AffExpr::Mul(c, a) => format!("({c} * {})", aff(a)),
        AffExpr::FloorDiv(a, c) => format!("floor(({}) / {c})", aff(a)),
        AffExpr::CeilDiv(a, c) => format!("ceil(({}) / {c})", aff(a)),
        AffExpr::Mod(a, c) => format!("(({}) mod {c})", aff(a)),
        AffExpr::Min(a, b) => format!("min({}, {})", aff(a), aff(b)),
        AffExpr::Max(a, b) => format!("max({}, {})", aff(a), aff(b)),
    }
}

/// A condition in isl's notation.
pub fn cond(c: &Cond) -> String {
    match c {
        Cond::Cmp(a, CmpOp::Ne, b) => {
            let (a, b) = (aff(a), aff(b));
            format!("({a} < {b} or {a} > {b})")
        }
        Cond::Cmp(a, op, b) => {
            let op = match op {
                CmpOp::Eq => "=",
                other => other.symbol(),
            };
            format!("{} {op} {}", aff(a), aff(b))
        }
        Cond::And(a, b) => format!("({} and {})", cond(a), cond(b)),
        Cond::Or(a, b) => format!("({} or {})", cond(a), cond(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isl::Ctx;
    use frontend::ir::Var;

    fn var(n: &str) -> Box<AffExpr> {
        Box::new(AffExpr::Var(Var::Loop(n.into())))
    }

    #[test]
    fn quasi_affine_forms_are_understood_by_isl() {
        let ctx = Ctx::default();
        let e = AffExpr::Add(
            Box::new(AffExpr::FloorDiv(var("i"), 4)),
            Box::new(AffExpr::Mod(var("i"), 3)),
        );
        let m = AffExpr::Min(var("i"), Box::new(AffExpr::CeilDiv(var("j"), 2)));
        let text = format!(
            "{{ S[i, j] : 0 <= i, j < 20 and {} <= 5 and j < {} + 8 }}",
            aff(&e),
            aff(&m)
        );
        let s = ctx.set(&text).unwrap();
        let expected = (0..20i64)
            .flat_map(|i| (0..20i64).map(move |j| (i, j)))
            .filter(|&(i, j)| i / 4 + i % 3 <= 5 && j < i.min((j + 1) / 2) + 8)
            .count();
        assert_eq!(s.points().unwrap().len(), expected);
    }

    #[test]
    fn keywords_are_renamed() {
        assert_eq!(isl_name("min"), "min_");
        assert_eq!(isl_name("min_"), "min__");
        assert_eq!(isl_name("N"), "N");
        let ctx = Ctx::default();
        let s = ctx.set(&format!(
            "[{0}] -> {{ S[{1}] : 0 <= {1} < {0} }}",
            isl_name("max"),
            isl_name("mod")
        ));
        assert!(s.is_ok());
    }

    #[test]
    fn not_equal_is_a_union() {
        let ctx = Ctx::default();
        let c = Cond::Cmp(*var("i"), CmpOp::Ne, AffExpr::Const(3));
        let s = ctx
            .set(&format!("{{ S[i] : 0 <= i < 6 and {} }}", cond(&c)))
            .unwrap();
        assert_eq!(s.points().unwrap().len(), 5);
    }
}
