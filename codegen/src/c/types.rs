//! How each element type is stored and computed with in C.
//!
//! | type | storage | computed as | after each operation |
//! |---|---|---|---|
//! | `f64` | `double` | `double` | (exact IEEE) |
//! | `f32` | `float` | `float` | (exact IEEE, no contraction) |
//! | `f16` | `pc_f16_t` (`_Float16`) | `float` | `pc_rf16` (one rounding from `double`) |
//! | `bf16` | `pc_bf16_t` (`uint16_t`) | `float` | `pc_rbf16` |
//! | `i32` | `int32_t` | `int32_t` | wrap through `uint32_t` |
//! | `i8` | `int8_t` | `int8_t` | wrap through `uint32_t`/`uint8_t` |

use frontend::ir::ElemType;

/// The C type arrays of `elem` are stored as.
pub fn storage(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F64 => "double",
        ElemType::F32 => "float",
        ElemType::F16 => "pc_f16_t",
        ElemType::BF16 => "pc_bf16_t",
        ElemType::I32 => "int32_t",
        ElemType::I8 => "int8_t",
    }
}

/// The C type values of `elem` are computed as.
pub fn compute(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F64 => "double",
        ElemType::F32 | ElemType::F16 | ElemType::BF16 => "float",
        ElemType::I32 => "int32_t",
        ElemType::I8 => "int8_t",
    }
}

/// `value` (a C expression of the storage type) as a computed value.
pub fn load(elem: ElemType, value: &str) -> String {
    match elem {
        ElemType::F16 => format!("pc_f16_load({value})"),
        ElemType::BF16 => format!("pc_bf16_load({value})"),
        _ => value.to_owned(),
    }
}

/// `value` (a computed value, exactly representable) in the storage type.
pub fn store(elem: ElemType, value: &str) -> String {
    match elem {
        ElemType::F16 => format!("pc_f16_store({value})"),
        ElemType::BF16 => format!("pc_bf16_store({value})"),
        _ => value.to_owned(),
    }
}

/// `value`, a `double` C expression, rounded once to `elem` (wrapped for integers, whose
/// values are integral here), as a computed value.
pub fn round_double(elem: ElemType, value: &str) -> String {
    match elem {
        ElemType::F64 => value.to_owned(),
        ElemType::F32 => format!("((float)({value}))"),
        ElemType::F16 => format!("pc_rf16({value})"),
        ElemType::BF16 => format!("pc_rbf16({value})"),
        ElemType::I32 => format!("((int32_t)(int64_t)({value}))"),
        ElemType::I8 => format!("((int8_t)(int64_t)({value}))"),
    }
}

/// A C literal of type `double` for `v` (exact: Rust prints the shortest representation that
/// reads back as the same `f64`).
pub fn double_literal(v: f64) -> String {
    if v.is_nan() {
        "NAN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "INFINITY".into()
        } else {
            "(-INFINITY)".into()
        }
    } else {
        format!("{v:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_exact() {
        assert_eq!(double_literal(0.1), "1e-1");
        assert_eq!(double_literal(-0.0), "-0e0");
        assert_eq!(double_literal(f64::NEG_INFINITY), "(-INFINITY)");
        let x = 0.1f32 as f64;
        assert_eq!(double_literal(x).parse::<f64>().unwrap(), x);
    }
}
