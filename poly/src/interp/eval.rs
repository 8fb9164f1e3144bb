//! Compiled value expressions: operands that are constants, array reads, or closures over an
//! evaluation environment.
//!
//! Values are returned directly (in a register); a fault (division by zero, bad conversion)
//! is recorded in the environment, the first one winning, and checked once per statement
//! instance before anything is written.

use super::error::Fault;
use super::memory::ArrayValues;
use std::cell::Cell;

/// What a right-hand side sees while it is evaluated.
pub(crate) struct Env<'a> {
    /// The instance's iteration vector.
    pub(crate) iv: &'a [i64],
    /// The address of each access of the statement.
    addrs: &'a [usize],
    /// All arrays.
    arrays: &'a [ArrayValues],
    fault: Cell<Option<Fault>>,
}

impl<'a> Env<'a> {
    /// An environment with no fault yet.
    pub(crate) fn new(iv: &'a [i64], addrs: &'a [usize], arrays: &'a [ArrayValues]) -> Env<'a> {
        Env {
            iv,
            addrs,
            arrays,
            fault: Cell::new(None),
        }
    }

    /// Records `fault` unless an earlier one is recorded; returns a placeholder value.
    #[cold]
    pub(crate) fn fail(&self, fault: Fault) -> f64 {
        if self.fault.get().is_none() {
            self.fault.set(Some(fault));
        }
        0.0
    }

    /// The first fault recorded, if any.
    pub(crate) fn fault(&self) -> Option<Fault> {
        self.fault.get()
    }
}

/// A compiled value expression. Constants and reads, the most common leaves, are matched on
/// rather than called through a closure.
pub(crate) enum Operand {
    /// A constant.
    Const(f64),
    /// The element of `array` at the address of the statement's access number `slot`.
    Read {
        /// The array.
        array: usize,
        /// The access.
        slot: usize,
    },
    /// Anything else.
    Computed(Box<dyn Fn(&Env<'_>) -> f64 + Send + Sync>),
}

impl Operand {
    /// The value in `env`.
    #[inline(always)]
    pub(crate) fn get(&self, env: &Env<'_>) -> f64 {
        match self {
            Operand::Const(v) => *v,
            Operand::Read { array, slot } => env.arrays[*array].values[env.addrs[*slot]],
            Operand::Computed(f) => f(env),
        }
    }
}

/// A computed operand.
pub(crate) fn computed(f: impl Fn(&Env<'_>) -> f64 + Send + Sync + 'static) -> Operand {
    Operand::Computed(Box::new(f))
}

/// `f(x)`.
pub(crate) fn map1(x: Operand, f: impl Fn(f64) -> f64 + Send + Sync + 'static) -> Operand {
    computed(move |env| f(x.get(env)))
}

/// `f(x, y)` (`x` evaluated first).
pub(crate) fn map2(
    x: Operand,
    y: Operand,
    f: impl Fn(f64, f64) -> f64 + Send + Sync + 'static,
) -> Operand {
    computed(move |env| {
        let a = x.get(env);
        f(a, y.get(env))
    })
}

/// A constant.
pub(crate) fn constant(v: f64) -> Operand {
    Operand::Const(v)
}
