//! The C types of the subset's values and how C converts between them.

use crate::c::syntax::Base;
use crate::ir::ElemType;

/// The type of a C value in the subset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CTy {
    /// `char` (signed here), promoted to `int` in arithmetic.
    Char,
    /// `int`.
    Int,
    /// `long` (iterators, parameters and affine expressions only).
    Long,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// The `int` 0 or 1 of a comparison or a logical operator.
    Bool,
}

impl CTy {
    /// The subset's type of a basic C type, if it has one.
    pub fn of(base: Base) -> Option<CTy> {
        Some(match base {
            Base::Char | Base::SChar => CTy::Char,
            Base::Int => CTy::Int,
            Base::Long => CTy::Long,
            Base::Float => CTy::Float,
            Base::Double => CTy::Double,
            _ => return None,
        })
    }

    /// Whether values of the type are integers.
    pub fn is_integer(self) -> bool {
        !matches!(self, CTy::Float | CTy::Double)
    }

    /// The type an operand of arithmetic has after C's integer promotions.
    pub fn promoted(self) -> CTy {
        match self {
            CTy::Char | CTy::Bool => CTy::Int,
            t => t,
        }
    }

    /// The common type of C's usual arithmetic conversions.
    pub fn usual(a: CTy, b: CTy) -> CTy {
        let rank = |t: CTy| match t.promoted() {
            CTy::Double => 3,
            CTy::Float => 2,
            CTy::Long => 1,
            _ => 0,
        };
        if rank(a) >= rank(b) {
            a.promoted()
        } else {
            b.promoted()
        }
    }

    /// The IR type of values of this type (`None` for `long`, which the IR has not).
    pub fn elem(self) -> Option<ElemType> {
        match self {
            CTy::Char => Some(ElemType::I8),
            CTy::Int | CTy::Bool => Some(ElemType::I32),
            CTy::Float => Some(ElemType::F32),
            CTy::Double => Some(ElemType::F64),
            CTy::Long => None,
        }
    }

    /// The C type of values of an IR type.
    pub fn from_elem(elem: ElemType) -> CTy {
        match elem {
            ElemType::I8 => CTy::Char,
            ElemType::I32 => CTy::Int,
            ElemType::F32 | ElemType::F16 | ElemType::BF16 => CTy::Float,
            ElemType::F64 => CTy::Double,
        }
    }
}

/// The element type of an array (or a scalar held as a 0-d array) of `ty`.
pub fn array_elem(ty: CTy) -> Option<ElemType> {
    match ty {
        CTy::Long | CTy::Bool => None,
        t => t.elem(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_arithmetic_conversions() {
        assert_eq!(CTy::usual(CTy::Char, CTy::Char), CTy::Int);
        assert_eq!(CTy::usual(CTy::Float, CTy::Int), CTy::Float);
        assert_eq!(CTy::usual(CTy::Float, CTy::Double), CTy::Double);
        assert_eq!(CTy::usual(CTy::Long, CTy::Int), CTy::Long);
        assert_eq!(CTy::usual(CTy::Bool, CTy::Long), CTy::Long);
    }
}
