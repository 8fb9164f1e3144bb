//! Element-type arithmetic: the exact value semantics of the kernel language (see the module
//! documentation of [`crate::interp`]). Every value is held as an `f64` that is exactly
//! representable in its type; each operation here returns such a value.

use super::error::Fault;
use super::eval::{computed, map1, map2, Operand};
use frontend::ir::{BinOp, CmpOp, ElemType, Func};
use half::{bf16, f16};
use std::marker::PhantomData;

/// The operations of one element type, as builders of compiled expressions (so that each
/// operation is inlined into its closure).
pub(crate) trait Arith: Sync {
    /// `a op b`.
    fn binary(&self, op: BinOp, a: Operand, b: Operand) -> Operand;
    /// `-x`.
    fn neg(&self, x: Operand) -> Operand;
    /// A built-in function applied to `args`, or why it cannot be.
    fn call(&self, func: Func, args: Vec<Operand>) -> Result<Operand, String>;
    /// The value of an integer index expression, converted to this type.
    fn index_value(&self, v: i64) -> f64;
    /// Conversion of `x`, of a float (`from_float`) or integer/boolean type, to this type.
    fn cast(&self, from_float: bool, x: Operand) -> Operand;
    /// The value of this type nearest to `x` (floats: ties to even; integers: `x` truncated,
    /// wrapped).
    fn round(&self, x: f64) -> f64;
    /// The bit pattern of `x` in this type (NaNs canonicalised to the positive quiet NaN).
    fn to_bits(&self, x: f64) -> u64;
}

/// `[x]` or `[x, y]` from `args`, or why not.
fn unpack<const K: usize>(func: Func, args: Vec<Operand>) -> Result<[Operand; K], String> {
    let n = args.len();
    args.try_into()
        .map_err(|_| format!("`{}` takes {K} argument(s), {n} given", func.name()))
}

/// The arithmetic of an element type.
pub(crate) fn arith(ty: ElemType) -> &'static dyn Arith {
    match ty {
        ElemType::F64 => &Float::<Binary64>(PhantomData),
        ElemType::F32 => &Float::<Binary32>(PhantomData),
        ElemType::F16 => &Float::<Binary16>(PhantomData),
        ElemType::BF16 => &Float::<BFloat16>(PhantomData),
        ElemType::I32 => &Int::<Int32>(PhantomData),
        ElemType::I8 => &Int::<Int8>(PhantomData),
    }
}

/// The comparison `a op b` (for floats, IEEE semantics: every comparison with NaN is false
/// except `!=`).
pub(crate) fn compare<T: PartialOrd>(op: CmpOp) -> fn(T, T) -> bool {
    match op {
        CmpOp::Lt => |a, b| a < b,
        CmpOp::Le => |a, b| a <= b,
        CmpOp::Gt => |a, b| a > b,
        CmpOp::Ge => |a, b| a >= b,
        CmpOp::Eq => |a, b| a == b,
        CmpOp::Ne => |a, b| a != b,
    }
}

/// A binary floating-point format.
trait FloatFormat: Sync + 'static {
    /// Whether the type is `f64` (math functions in `f64`); otherwise they are computed by the
    /// `f32` functions and rounded.
    const IS_F64: bool;
    /// The positive quiet NaN's bits.
    const NAN_BITS: u64;
    /// Nearest value, ties to even.
    fn round(x: f64) -> f64;
    /// Bits of a value of the type.
    fn bits(x: f64) -> u64;
    /// Applies a C math function (`f64` version for `f64`, `f32` version otherwise).
    fn libm(x: f64, y: f64, in_f32: fn(f32, f32) -> f32, in_f64: fn(f64, f64) -> f64) -> f64 {
        if Self::IS_F64 {
            in_f64(x, y)
        } else {
            Self::round(in_f32(x as f32, y as f32) as f64)
        }
    }
}

struct Binary64;
struct Binary32;
struct Binary16;
struct BFloat16;

impl FloatFormat for Binary64 {
    const IS_F64: bool = true;
    const NAN_BITS: u64 = 0x7ff8_0000_0000_0000;
    fn round(x: f64) -> f64 {
        x
    }
    fn bits(x: f64) -> u64 {
        x.to_bits()
    }
}
impl FloatFormat for Binary32 {
    const IS_F64: bool = false;
    const NAN_BITS: u64 = 0x7fc0_0000;
    fn round(x: f64) -> f64 {
        x as f32 as f64
    }
    fn bits(x: f64) -> u64 {
        (x as f32).to_bits().into()
    }
}
impl FloatFormat for Binary16 {
    const IS_F64: bool = false;
    const NAN_BITS: u64 = 0x7e00;
    fn round(x: f64) -> f64 {
        round_to_format(x, 11, -14, 15)
    }
    fn bits(x: f64) -> u64 {
        f16::from_f64(x).to_bits().into()
    }
}
impl FloatFormat for BFloat16 {
    const IS_F64: bool = false;
    const NAN_BITS: u64 = 0x7fc0;
    fn round(x: f64) -> f64 {
        round_to_format(x, 8, -126, 127)
    }
    fn bits(x: f64) -> u64 {
        bf16::from_f64(x).to_bits().into()
    }
}

/// Rounds `x` to the nearest value, ties to even, of the binary format with `p` significand
/// bits and normal exponents `emin..=emax` (subnormals included, overflow to ±∞): one correct
/// rounding, independently of the CPU (`half`'s `from_f64` rounds twice on some machines).
fn round_to_format(x: f64, p: i32, emin: i32, emax: i32) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let biased = ((x.to_bits() >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // An f64 subnormal is far below half the target's smallest subnormal.
        return 0.0f64.copysign(x);
    }
    let quantum = (biased - 1023).max(emin) - (p - 1);
    let rounded = (x * 2f64.powi(-quantum)).round_ties_even() * 2f64.powi(quantum);
    let max = (2.0 - 2f64.powi(1 - p)) * 2f64.powi(emax);
    if rounded.abs() > max {
        f64::INFINITY.copysign(x)
    } else {
        rounded
    }
}

struct Float<T>(PhantomData<T>);

impl<T: FloatFormat> Arith for Float<T> {
    fn binary(&self, op: BinOp, a: Operand, b: Operand) -> Operand {
        // The exact result rounded once: what computing in f32 (or f64) and rounding to the
        // type gives, since f32 has more than twice the precision of f16/bf16 plus two bits.
        match op {
            BinOp::Add => map2(a, b, |a, b| T::round(a + b)),
            BinOp::Sub => map2(a, b, |a, b| T::round(a - b)),
            BinOp::Mul => map2(a, b, |a, b| T::round(a * b)),
            BinOp::Div => map2(a, b, |a, b| T::round(a / b)),
        }
    }
    fn neg(&self, x: Operand) -> Operand {
        map1(x, |x| -x)
    }
    fn call(&self, func: Func, args: Vec<Operand>) -> Result<Operand, String> {
        Ok(match func {
            Func::Abs | Func::Sqrt | Func::Exp | Func::Log | Func::Tanh | Func::Floor => {
                let [x] = unpack(func, args)?;
                match func {
                    Func::Abs => map1(x, f64::abs),
                    // The floor of a value of the type is a value of the type.
                    Func::Floor => map1(x, f64::floor),
                    Func::Sqrt => map1(x, |x| T::round(x.sqrt())),
                    Func::Exp => map1(x, |x| T::libm(x, 0.0, |a, _| a.exp(), |a, _| a.exp())),
                    Func::Log => map1(x, |x| T::libm(x, 0.0, |a, _| a.ln(), |a, _| a.ln())),
                    _ => map1(x, |x| T::libm(x, 0.0, |a, _| a.tanh(), |a, _| a.tanh())),
                }
            }
            Func::Pow | Func::Max | Func::Min => {
                let [x, y] = unpack(func, args)?;
                match func {
                    Func::Pow => map2(x, y, |x, y| T::libm(x, y, f32::powf, f64::powf)),
                    Func::Max => map2(x, y, float_max),
                    _ => map2(x, y, float_min),
                }
            }
        })
    }
    fn index_value(&self, v: i64) -> f64 {
        T::round(v as f64)
    }
    fn cast(&self, _from_float: bool, x: Operand) -> Operand {
        map1(x, T::round)
    }
    fn round(&self, x: f64) -> f64 {
        T::round(x)
    }
    fn to_bits(&self, x: f64) -> u64 {
        if x.is_nan() {
            T::NAN_BITS
        } else {
            T::bits(x)
        }
    }
}

/// `max(a, b)`: a NaN operand is ignored; on ties (including `-0` vs `+0`) the first operand.
fn float_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b > a {
        b
    } else {
        a
    }
}

/// `min(a, b)`: a NaN operand is ignored; on ties (including `-0` vs `+0`) the first operand.
fn float_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b < a {
        b
    } else {
        a
    }
}

/// A two's-complement integer type.
trait IntFormat: Sync + 'static {
    /// The type's name.
    const NAME: &'static str;
    /// Smallest value.
    const MIN: i64;
    /// Largest value.
    const MAX: i64;
    /// `x` modulo 2^bits, as a value of the type.
    fn wrap(x: i64) -> f64;
    /// Bits of a value of the type.
    fn bits(x: f64) -> u64;
}

struct Int32;
struct Int8;

impl IntFormat for Int32 {
    const NAME: &'static str = "i32";
    const MIN: i64 = i32::MIN as i64;
    const MAX: i64 = i32::MAX as i64;
    fn wrap(x: i64) -> f64 {
        x as i32 as f64
    }
    fn bits(x: f64) -> u64 {
        (x as i32 as u32).into()
    }
}
impl IntFormat for Int8 {
    const NAME: &'static str = "i8";
    const MIN: i64 = i8::MIN as i64;
    const MAX: i64 = i8::MAX as i64;
    fn wrap(x: i64) -> f64 {
        x as i8 as f64
    }
    fn bits(x: f64) -> u64 {
        (x as i8 as u8).into()
    }
}

struct Int<T>(PhantomData<T>);

impl<T: IntFormat> Arith for Int<T> {
    fn binary(&self, op: BinOp, a: Operand, b: Operand) -> Operand {
        // Operands are at most 32 bits wide, so the i64 results are exact before wrapping.
        match op {
            BinOp::Add => map2(a, b, |a, b| T::wrap(a as i64 + b as i64)),
            BinOp::Sub => map2(a, b, |a, b| T::wrap(a as i64 - b as i64)),
            BinOp::Mul => map2(a, b, |a, b| T::wrap(a as i64 * b as i64)),
            BinOp::Div => computed(move |env| {
                let (a, b) = (a.get(env), b.get(env));
                if b == 0.0 {
                    env.fail(Fault::DivisionByZero)
                } else {
                    T::wrap(a as i64 / b as i64)
                }
            }),
        }
    }
    fn neg(&self, x: Operand) -> Operand {
        map1(x, |x| T::wrap(-(x as i64)))
    }
    fn call(&self, func: Func, args: Vec<Operand>) -> Result<Operand, String> {
        match func {
            Func::Abs => {
                let [x] = unpack(func, args)?;
                Ok(map1(x, |x| T::wrap((x as i64).abs())))
            }
            Func::Max | Func::Min => {
                let [x, y] = unpack(func, args)?;
                Ok(match func {
                    Func::Max => map2(x, y, f64::max),
                    _ => map2(x, y, f64::min),
                })
            }
            Func::Sqrt | Func::Exp | Func::Log | Func::Tanh | Func::Pow | Func::Floor => {
                Err(format!("`{}` is not defined on {}", func.name(), T::NAME))
            }
        }
    }
    fn index_value(&self, v: i64) -> f64 {
        T::wrap(v)
    }
    fn cast(&self, from_float: bool, x: Operand) -> Operand {
        if !from_float {
            return map1(x, |x| T::wrap(x as i64));
        }
        computed(move |env| {
            let v = x.get(env);
            let t = v.trunc();
            if t >= T::MIN as f64 && t <= T::MAX as f64 {
                t
            } else {
                env.fail(Fault::BadConversion {
                    value: v,
                    target: T::NAME,
                })
            }
        })
    }
    fn round(&self, x: f64) -> f64 {
        T::wrap(x as i64)
    }
    fn to_bits(&self, x: f64) -> u64 {
        T::bits(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ElemType::*;

    use crate::interp::eval::{constant, Env};

    fn eval(e: Operand) -> Result<f64, Fault> {
        let env = Env::new(&[], &[], &[]);
        let v = e.get(&env);
        env.fault().map_or(Ok(v), Err)
    }

    fn bin(ty: ElemType, op: BinOp, a: f64, b: f64) -> Result<f64, Fault> {
        eval(arith(ty).binary(op, constant(a), constant(b)))
    }

    fn call1(ty: ElemType, f: Func, x: f64) -> f64 {
        eval(arith(ty).call(f, vec![constant(x)]).unwrap()).unwrap()
    }

    fn cast(ty: ElemType, from_float: bool, x: f64) -> Result<f64, Fault> {
        eval(arith(ty).cast(from_float, constant(x)))
    }

    #[test]
    fn f16_rounds_after_every_operation() {
        // 2048 + 1 is not representable in f16 (11 significant bits): ties to even gives 2048.
        assert_eq!(bin(F16, BinOp::Add, 2048.0, 1.0), Ok(2048.0));
        assert_eq!(bin(F16, BinOp::Add, 2048.0, 3.0), Ok(2052.0));
        // (2048 + 1) + 1 rounds twice, unlike the exact 2050.
        let once = bin(F16, BinOp::Add, 2048.0, 1.0).unwrap();
        assert_eq!(bin(F16, BinOp::Add, once, 1.0), Ok(2048.0));
        assert_eq!(
            bin(F16, BinOp::Div, 1.0, 3.0),
            Ok(f16::from_f32(1.0 / 3.0).to_f64())
        );
        assert_eq!(bin(F16, BinOp::Mul, 300.0, 300.0), Ok(f64::INFINITY));
    }

    #[test]
    fn bf16_and_f32_round_after_every_operation() {
        assert_eq!(bin(BF16, BinOp::Add, 256.0, 1.0), Ok(256.0));
        assert_eq!(bin(BF16, BinOp::Add, 256.0, 3.0), Ok(260.0));
        let third = bin(F32, BinOp::Div, 1.0, 3.0).unwrap();
        assert_eq!(third, (1.0f32 / 3.0) as f64);
        assert_eq!(bin(F32, BinOp::Add, 16777216.0, 1.0), Ok(16777216.0));
        assert_eq!(bin(F64, BinOp::Add, 16777216.0, 1.0), Ok(16777217.0));
    }

    #[test]
    fn rounding_matches_half_for_f32_inputs() {
        // half's f32 conversions are correctly rounded; ours must agree on every f32 input,
        // including subnormal and overflowing ones.
        let mut bits: u32 = 1;
        for _ in 0..200_000 {
            bits = bits.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let x = f32::from_bits(bits);
            if x.is_nan() {
                continue;
            }
            let r16 = arith(F16).round(x as f64);
            assert_eq!(
                r16.to_bits(),
                f16::from_f32(x).to_f64().to_bits(),
                "f16 of {x:e}"
            );
            let rb = arith(BF16).round(x as f64);
            assert_eq!(
                rb.to_bits(),
                bf16::from_f32(x).to_f64().to_bits(),
                "bf16 of {x:e}"
            );
        }
    }

    #[test]
    fn casts_from_f64_round_once() {
        // 1 + 2^-11 + 2^-40 lies just above the midpoint between two f16 neighbours: rounding
        // once goes up, rounding via f32 first would drop the 2^-40 and tie to even (down).
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(cast(F16, true, x), Ok(1.0 + 2f64.powi(-10)));
        assert_eq!(arith(F16).round(65520.0), f64::INFINITY);
        assert_eq!(arith(F16).round(65519.0), 65504.0);
        assert_eq!(arith(F16).round(2f64.powi(-25)), 0.0);
        assert_eq!(arith(F16).round(-3.0 * 2f64.powi(-26)), -(2f64.powi(-24)));
    }

    #[test]
    fn integers_wrap() {
        assert_eq!(bin(I8, BinOp::Add, 127.0, 1.0), Ok(-128.0));
        assert_eq!(bin(I8, BinOp::Mul, 16.0, 16.0), Ok(0.0));
        assert_eq!(bin(I32, BinOp::Add, 2147483647.0, 1.0), Ok(-2147483648.0));
        assert_eq!(bin(I32, BinOp::Div, -2147483648.0, -1.0), Ok(-2147483648.0));
        assert_eq!(eval(arith(I8).neg(constant(-128.0))), Ok(-128.0));
        assert_eq!(call1(I8, Func::Abs, -128.0), -128.0);
        assert_eq!(cast(I8, false, 300.0), Ok(44.0));
    }

    #[test]
    fn integer_division_truncates_and_rejects_zero() {
        assert_eq!(bin(I32, BinOp::Div, -7.0, 2.0), Ok(-3.0));
        assert_eq!(bin(I32, BinOp::Div, 7.0, -2.0), Ok(-3.0));
        assert_eq!(bin(I32, BinOp::Div, 7.0, 0.0), Err(Fault::DivisionByZero));
        assert_eq!(bin(I8, BinOp::Div, 0.0, 0.0), Err(Fault::DivisionByZero));
        // Float division by zero is IEEE.
        assert_eq!(bin(F32, BinOp::Div, 1.0, 0.0), Ok(f64::INFINITY));
    }

    #[test]
    fn float_to_int_conversion_truncates_or_fails() {
        let to_i8 = |x| cast(I8, true, x);
        assert_eq!(to_i8(-3.9), Ok(-3.0));
        assert_eq!(to_i8(127.9), Ok(127.0));
        assert_eq!(
            to_i8(128.0),
            Err(Fault::BadConversion {
                value: 128.0,
                target: "i8"
            })
        );
        assert!(to_i8(f64::NAN).is_err());
        assert!(cast(I32, true, f64::INFINITY).is_err());
    }

    #[test]
    fn math_functions_use_the_types_libm() {
        // black_box: in release builds the compiler would otherwise fold `x.tanh()` at compile
        // time, with a rounding that need not be libm's.
        let x = std::hint::black_box(0.7f32);
        assert_eq!(call1(F32, Func::Exp, x as f64), x.exp() as f64);
        assert_eq!(call1(F32, Func::Tanh, x as f64), x.tanh() as f64);
        assert_eq!(
            call1(F64, Func::Log, 0.7),
            std::hint::black_box(0.7f64).ln()
        );
        let h = f16::from_f32(0.7).to_f64();
        assert_eq!(
            call1(F16, Func::Exp, h),
            f16::from_f32(std::hint::black_box(h as f32).exp()).to_f64()
        );
        assert_eq!(
            arith(I32)
                .call(Func::Exp, vec![constant(1.0)])
                .err()
                .as_deref(),
            Some("`exp` is not defined on i32")
        );
        assert!(arith(F32).call(Func::Pow, vec![constant(1.0)]).is_err());
    }

    #[test]
    fn max_and_min_ignore_nan_and_keep_the_first_on_ties() {
        assert_eq!(float_max(f64::NAN, 1.0), 1.0);
        assert_eq!(float_max(1.0, f64::NAN), 1.0);
        assert_eq!(float_max(-0.0, 0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(float_min(0.0, -0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(float_min(2.0, 1.0), 1.0);
    }

    #[test]
    fn bits_are_those_of_the_type() {
        assert_eq!(arith(F16).to_bits(1.0), 0x3c00);
        assert_eq!(arith(BF16).to_bits(1.0), 0x3f80);
        assert_eq!(arith(F32).to_bits(f64::NAN), 0x7fc0_0000);
        assert_eq!(arith(I8).to_bits(-1.0), 0xff);
        assert_eq!(arith(I32).to_bits(-1.0), 0xffff_ffff);
    }
}
