//! The reference interpreter: executes a checked kernel, in its original order or in any order
//! of statement instances, with the exact value semantics every back end must reproduce bit
//! for bit.
//!
//! # Use
//!
//! 1. [`InputFiles::read_dir`] reads the inputs present as `.npy` files;
//! 2. [`ParamValues::resolve`] fixes the parameters (overrides, else input shapes, else
//!    defaults) and checks constraints and shapes;
//! 3. [`Memory::load_inputs`] (or [`Memory::random`]) builds the arrays;
//! 4. [`Interpreter::new`] compiles the kernel; [`Interpreter::run_original`] or
//!    [`Interpreter::run_instances`] executes it;
//! 5. [`Memory::save_outputs`], [`Memory::checksums`], [`Memory::compare`] report results.
//!
//! # Value semantics
//!
//! Every value is an element of its type; each operation computes the exact result of its
//! operands and rounds it to the type **after every operation** (including each intermediate
//! of an expression, and the final combination of `+=`, `*=`, ...):
//!
//! * `f64`, `f32`, `f16`, `bf16`: `+ - * /` and `sqrt` are correctly rounded to the type
//!   (round to nearest, ties to even; overflow gives ±∞, gradual underflow). For `f16`/`bf16`
//!   this equals computing in `f32` and rounding to the type (f32 has enough precision that
//!   the double rounding is innocuous); for `f32` it equals C's `float` arithmetic.
//! * `exp`, `log`, `tanh`, `pow`: `f64` uses C's `exp`, `log`, `tanh`, `pow`; `f32` uses
//!   `expf`, `logf`, `tanhf`, `powf`; `f16`/`bf16` convert to `f32`, apply the `f32` function,
//!   and round to the type. (Bit-exactness with C holds with the same C math library; the
//!   interpreter calls the platform's `libm` through Rust's `f32`/`f64` methods.)
//! * `abs` and negation are exact; `max(a, b)`/`min(a, b)` (and `max=`/`min=`, with the target
//!   as `a`) ignore a NaN operand and return `a` on ties (so `max(-0, +0)` is `-0`):
//!   `isnan(a) || b > a ? b : a`.
//! * Comparisons follow IEEE 754 (false with NaN, except `!=`); `and`/`or` short-circuit and
//!   `c ? x : y` evaluates only the branch taken, as in C (so a fault in the other operand
//!   does not happen).
//! * `i32`, `i8`: two's-complement, wrapping after every operation (`i8` arithmetic wraps to
//!   8 bits after each operation, unlike C's promotion to `int`); `/` truncates towards zero,
//!   `i32::MIN / -1` wraps to `i32::MIN`; division by zero (also `/=`) is an error
//!   ([`InterpError::DivisionByZero`]). `abs(i8::MIN)` is `i8::MIN`. `exp`, `log`, `tanh`,
//!   `sqrt`, `pow` are not defined on integers.
//! * Conversions (`f32(x)`, index values, literals): to a float type, one correct rounding of
//!   the exact value; integer to integer wraps; float to integer truncates towards zero and is
//!   an error ([`InterpError::BadConversion`]) for NaN, infinities and values whose truncation
//!   does not fit the type. Booleans convert to 0 and 1.
//!
//! # Memory
//!
//! Each array is one `Vec<f64>` in C order, holding values exactly representable in its
//! element type. Inputs not given are seeded random (see [`Memory::load_inputs`]); outputs and
//! temporaries start at zero; scalars are 0-d arrays. Every access is bounds-checked
//! ([`InterpError::OutOfBounds`] names the statement, the instance, the array, the dimension
//! and the index). Checksums hash each element's bits in its own type, with NaNs
//! canonicalised to the positive quiet NaN. For the file formats see [`npy`].
//!
//! # Speed
//!
//! Statements are compiled once into closure trees whose leaves (constants, array reads) are
//! matched on, over precomputed addresses: each index is a linear function of the iteration
//! vector with the parameters folded in, times the dimension's C-order stride. The original
//! order is a walk of the compiled loop tree; in an innermost loop whose statements index
//! linearly, the accesses are bounds-checked at the first and last iteration only (enough, as
//! each index is linear in the loop variable) and the addresses then advance by constant
//! steps; otherwise every instance is checked. `run_instances` checks every instance.
//!
//! Measured with `cargo bench -p poly --bench interp` on gemm (`examples/polybench/gemm.pk`, f64) at
//! NI = NJ = NK = 256 (16.8 million instances), on a shared 2-core machine under a load
//! average of about 6: `run_original` 49 million instances per second of CPU time
//! (group `interp_gemm_cpu`, 45-54 M/s), `run_instances` 22 M/s (at 64). Wall-clock figures
//! (group `interp_gemm`) were 13-18 M/s at that load, as the benchmark got about 40% of a core.

mod affine;
mod arith;
mod error;
mod eval;
mod interpreter;
mod memory;
pub mod npy;
mod params;
mod stmt;
mod tree;

pub use error::InterpError;
pub use interpreter::Interpreter;
pub use memory::{ArrayDiff, ArrayValues, Checksum, Memory};
pub use npy::{InputArray, InputFiles};
pub use params::ParamValues;
