//! What can go wrong when setting up or running the interpreter.

use std::path::PathBuf;

/// An error of the reference interpreter: bad parameters, inputs that contradict the kernel,
/// or a statement instance that cannot be executed.
#[derive(Clone, Debug, thiserror::Error, PartialEq)]
pub enum InterpError {
    /// A `-D` override names no parameter of the kernel.
    #[error("unknown parameter `{name}` (the kernel's parameters are: {known})")]
    UnknownParam {
        /// The name given.
        name: String,
        /// The kernel's parameters, comma-separated.
        known: String,
    },
    /// A shape was given for an array the kernel does not have.
    #[error("unknown array `{name}`")]
    UnknownArray {
        /// The name given.
        name: String,
    },
    /// A parameter has no override, cannot be inferred from input shapes and has no default.
    #[error("parameter `{name}` has no value: give it with -D {name}=VALUE or supply an input whose shape implies it")]
    MissingParam {
        /// The parameter.
        name: String,
    },
    /// A parameter constraint (`where ...`) does not hold.
    #[error("parameter constraint `{constraint}` does not hold with {values}")]
    ConstraintViolated {
        /// The constraint, as written in the kernel.
        constraint: String,
        /// The parameter values, `N=4, M=5`.
        values: String,
    },
    /// An array's extent, computed from the parameters, is negative or too large.
    #[error("array `{array}`, dimension {dim}: extent {extent} is {reason}")]
    BadExtent {
        /// The array.
        array: String,
        /// The dimension (0-based).
        dim: usize,
        /// The extent computed from the parameters.
        extent: i64,
        /// Why it is unusable.
        reason: &'static str,
    },
    /// A given array has the wrong number of dimensions.
    #[error("array `{array}`: expected {expected} dimension(s), found {found}")]
    RankMismatch {
        /// The array.
        array: String,
        /// The kernel's rank.
        expected: usize,
        /// The given rank.
        found: usize,
    },
    /// A given array has the wrong extent in some dimension.
    #[error("array `{array}`, dimension {dim}: expected extent {expected}, found {found}")]
    ShapeMismatch {
        /// The array.
        array: String,
        /// The dimension (0-based).
        dim: usize,
        /// The extent the kernel and parameters require.
        expected: i64,
        /// The given extent.
        found: u64,
    },
    /// A given array has the wrong element type.
    #[error("array `{array}`: expected dtype {expected}, found {found}")]
    DtypeMismatch {
        /// The array.
        array: String,
        /// The NumPy dtype matching the kernel's element type.
        expected: String,
        /// The dtype found.
        found: String,
    },
    /// A `.npy` file could not be read or written.
    #[error("{path}: {message}")]
    Npy {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A memory was built for another kernel or other parameter values.
    #[error("memory does not match the kernel: {reason}")]
    MemoryMismatch {
        /// What differs.
        reason: String,
    },
    /// The kernel uses something the interpreter cannot evaluate (the checker should have
    /// rejected it).
    #[error("{context}: {reason}")]
    Unsupported {
        /// Where: a statement, an array, a loop.
        context: String,
        /// What is not supported.
        reason: String,
    },
    /// An instance given to `run_instances` does not exist.
    #[error("bad instance: {reason}")]
    BadInstance {
        /// What is wrong with it.
        reason: String,
    },
    /// An integer division (or `/=`) by zero.
    #[error("statement {stmt} at {instance}: integer division by zero")]
    DivisionByZero {
        /// The statement.
        stmt: String,
        /// Its instance, `(i=1, j=2)`.
        instance: String,
    },
    /// A float-to-integer conversion of NaN, an infinity or an out-of-range value.
    #[error("statement {stmt} at {instance}: cannot convert {value} to {target}")]
    BadConversion {
        /// The statement.
        stmt: String,
        /// Its instance, `(i=1, j=2)`.
        instance: String,
        /// The value converted.
        value: f64,
        /// The integer type converted to.
        target: &'static str,
    },
    /// An array index outside the array's extent.
    #[error("statement {stmt} at {instance}: index {index} out of bounds 0..{extent} in dimension {dim} of `{array}`")]
    OutOfBounds {
        /// The statement.
        stmt: String,
        /// Its instance, `(i=1, j=2)`.
        instance: String,
        /// The array accessed.
        array: String,
        /// The dimension (0-based).
        dim: usize,
        /// The index value.
        index: i64,
        /// The dimension's extent.
        extent: i64,
    },
}

/// A failure inside one statement instance, turned into an [`InterpError`] by the caller,
/// which knows the statement and the instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fault {
    /// Integer division by zero.
    DivisionByZero,
    /// Float-to-integer conversion of a value that has no integer image.
    BadConversion {
        /// The value.
        value: f64,
        /// The target type's name.
        target: &'static str,
    },
    /// Access number `access` of the statement (0 = the target) is out of bounds.
    OutOfBounds {
        /// Which access.
        access: usize,
        /// Which dimension.
        dim: usize,
        /// The index value.
        index: i64,
    },
}
