//! A safe layer over isl-rs.
//!
//! isl-rs mirrors isl's C API: every operation consumes its arguments, returns a `Result`
//! whose error kind is private, and nothing bounds the work isl may do. This module handles
//! those once for the whole project:
//! - [`Ctx`] owns one isl context, sets isl to return errors silently (no printing) and to
//!   stop after a budget of operations, so that no analysis hangs;
//! - [`Obj`] wraps any isl object with its context: objects are `Clone` (a reference-count
//!   increment), methods take `&self`, and the context outlives every object made in it;
//! - [`IslError`] tells a budget overrun from any other isl failure.
//!
//! - [`Analysis`] scopes the budget: each analysis starts with a fresh one, and so does
//!   whatever runs after it.
//!
//! This is the only place that touches isl: no other crate depends on isl-rs, every isl
//! function isl-rs lacks is declared here (`ffi.rs`), and other crates see typed wrappers
//! only (sets, maps, schedule trees and their nodes, the AST builder, integer programs).

pub mod ast;
mod ast_build;
mod budget;
mod constraints;
mod dims;
mod ffi;
mod lp;
mod node;
mod objects;
mod pairs;
mod sampled;
mod scheduler_options;
mod split;

pub use ast_build::{build as build_ast, prepare as prepare_ast, pseudo_c, AstOptions, LoopType};
pub use budget::{Analysis, ScaledAnalysis, ISL_ALGORITHM_FACTOR};
pub use constraints::Constraints;
pub use dims::End;
pub use lp::LpMax;
pub use node::NodeKind;
pub use objects::{
    BasicSet, Map, Obj, Point, Schedule, ScheduleNode, Set, UnionMap, UnionSet, Val,
};
pub(crate) use objects::{Parse, RawIsl};
pub use pairs::PairOrder;
pub use scheduler_options::{SchedulerOption, SchedulerOptions};
pub use split::SplitPairs;

use isl_rs::{Context, LibISLError, Options};
use std::cell::Cell;
use std::fmt;
use std::rc::Rc;

/// The default operation budget of one analysis. isl does roughly 100,000 operations a
/// second on hard problems here, so this stops a runaway computation within about half a
/// minute, while every example kernel needs far less (see `docs/performance.md`).
pub const DEFAULT_MAX_OPERATIONS: u64 = 3_000_000;

/// An isl failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IslError {
    /// isl stopped because the operation budget of the context ran out.
    #[error(
        "isl gave up after its budget of {0} operations (the problem is too hard or too large)"
    )]
    OperationLimit(u64),
    /// isl reported an error (invalid input, unsupported operation, internal failure).
    #[error("isl error: {0}")]
    Isl(String),
    /// A value the input implies does not fit 64 bits (a point's coordinate, say).
    #[error("a value beyond 64 bits: {0}")]
    TooLarge(String),
}

impl IslError {
    fn from_lib(err: LibISLError, budget: u64) -> IslError {
        // isl-rs keeps the error kind private; its derived Debug output names it.
        let text = format!("{err:?}");
        if text.contains("kind: Quota") {
            IslError::OperationLimit(budget)
        } else {
            IslError::Isl(err.to_string())
        }
    }
}

/// Result of an isl operation.
pub type IslResult<T> = Result<T, IslError>;

/// isl's `ISL_ON_ERROR_CONTINUE`: return NULL and record the error, print nothing.
const ISL_ON_ERROR_CONTINUE: i32 = 1;

struct CtxInner {
    // Declared before `raw` so that the objects they keep are freed before the context.
    pairs: pairs::Memo,
    duals: lp::DualMemo,
    raw: Context,
    budget: Cell<u64>,
}

/// An isl context with an operation budget. Cheap to clone (shared).
#[derive(Clone)]
pub struct Ctx {
    inner: Rc<CtxInner>,
}

impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ctx(budget {})", self.inner.budget.get())
    }
}

impl Ctx {
    /// A new context whose computations stop after `max_operations` isl operations
    /// (counted from the start of the current [`Analysis`]).
    pub fn new(max_operations: u64) -> Ctx {
        let raw = Context::alloc();
        // ISL_ON_ERROR_CONTINUE: return NULL and record the error, print nothing.
        let _ = Options::set_on_error(&raw, ISL_ON_ERROR_CONTINUE);
        raw.set_max_operations(max_operations);
        Ctx {
            inner: Rc::new(CtxInner {
                pairs: pairs::Memo::default(),
                duals: lp::DualMemo::default(),
                raw,
                budget: Cell::new(max_operations),
            }),
        }
    }

    /// Starts an analysis with a fresh operation budget; the computation after it gets a
    /// fresh one too (see [`Analysis`]).
    pub fn analysis(&self) -> Analysis<'_> {
        Analysis::start(self)
    }

    /// Changes the budget of every analysis from now on (tests that want a computation to
    /// run out of it).
    pub fn set_budget(&self, max_operations: u64) {
        self.inner.budget.set(max_operations);
        self.inner.raw.set_max_operations(max_operations);
    }

    /// The operation budget of an analysis.
    pub fn budget(&self) -> u64 {
        self.inner.budget.get()
    }

    /// The operations counted since the current budget started.
    pub(crate) fn operations(&self) -> u64 {
        // SAFETY: the context is live for as long as `self`; the call only reads a counter.
        unsafe { ffi::isl_ctx_get_operations(self.inner.raw.ptr) }
    }

    /// Starts a fresh operation budget.
    pub(crate) fn reset_budget(&self) {
        self.inner.raw.reset_operations();
    }

    /// The isl-rs context, for calling isl-rs functions directly.
    pub(crate) fn raw(&self) -> &Context {
        &self.inner.raw
    }

    /// Converts an isl-rs result into ours, classifying the error.
    pub(crate) fn check<T>(&self, r: Result<T, LibISLError>) -> IslResult<T> {
        r.map_err(|e| IslError::from_lib(e, self.inner.budget.get()))
    }

    /// Parses a set in isl's notation.
    pub fn set(&self, text: &str) -> IslResult<Set> {
        self.read(text)
    }
    /// Parses a map in isl's notation.
    pub fn map(&self, text: &str) -> IslResult<Map> {
        self.read(text)
    }
    /// Parses a union set in isl's notation.
    pub fn union_set(&self, text: &str) -> IslResult<UnionSet> {
        self.read(text)
    }
    /// Parses a union map in isl's notation.
    pub fn union_map(&self, text: &str) -> IslResult<UnionMap> {
        self.read(text)
    }
    /// Parses a schedule tree in isl's YAML notation.
    pub fn schedule(&self, text: &str) -> IslResult<Schedule> {
        self.read(text)
    }

    /// Parses any isl object from text.
    #[allow(private_bounds)]
    pub fn read<T: Parse>(&self, text: &str) -> IslResult<Obj<T>> {
        if text.contains('\0') {
            return Err(IslError::Isl("text contains a NUL byte".into()));
        }
        let raw = self.check(T::read(self.raw(), text))?;
        // isl's parser can give up without recording an error (`{ [F9[x] -> #x+ }`)
        if raw.ptr() == 0 {
            return Err(IslError::Isl("isl could not read the text".into()));
        }
        Ok(Obj::from_raw(self, raw))
    }

    /// The empty union set (no parameters).
    pub fn empty_union_set(&self) -> IslResult<UnionSet> {
        self.union_set("{ }")
    }
    /// The empty union map (no parameters).
    pub fn empty_union_map(&self) -> IslResult<UnionMap> {
        self.union_map("{ }")
    }
}

impl Default for Ctx {
    fn default() -> Self {
        Ctx::new(DEFAULT_MAX_OPERATIONS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_print_roundtrip() {
        let ctx = Ctx::default();
        let s = ctx
            .set("[N] -> { S[i, j] : 0 <= i < N and 0 <= j <= i }")
            .unwrap();
        let again = ctx.set(&s.to_string()).unwrap();
        assert!(s.is_equal(&again).unwrap());
    }

    /// isl's parser returns nothing for these without recording an error (found by the
    /// `schedule_text` fuzz target: the empty object then crashed isl-rs on its first use).
    #[test]
    fn text_isl_reads_as_nothing_is_an_error() {
        let ctx = Ctx::default();
        for text in ["{ [F9[x] -> #x+ }", "{ [F9[x] -> #x+ }\n"] {
            match ctx.union_map(text) {
                Err(IslError::Isl(_)) => {}
                Ok(m) => panic!("`{text}` read as {m}"),
                Err(e) => panic!("{e}"),
            }
        }
        assert!(ctx.union_map("{ S[i] -> [i] }").is_ok());
    }

    /// A coordinate beyond 64 bits is an error, not 0 (found by the `schedule_text` fuzz
    /// target: isl recorded the error, and the next operation failed on it).
    #[test]
    fn a_point_beyond_64_bits_is_an_error() {
        let ctx = Ctx::default();
        let huge = ctx.set("{ [x] : x = 1180591620717411303424 }").unwrap();
        assert!(matches!(huge.points(), Err(IslError::TooLarge(_))));
        let small = ctx.set("{ [x] : 0 <= x < 3 }").unwrap();
        assert_eq!(small.points().unwrap().len(), 3);
    }

    #[test]
    fn syntax_error_is_an_error_not_a_crash() {
        let ctx = Ctx::default();
        assert!(matches!(ctx.set("{ S[i : }"), Err(IslError::Isl(_))));
        // The context stays usable afterwards.
        assert!(ctx.set("{ S[i] : 0 <= i < 3 }").is_ok());
    }

    #[test]
    fn operation_budget_stops_hard_problems() {
        // isl must give up, not hang.
        let ctx = Ctx::new(100_000);
        assert_eq!(
            budget::tests::exhaust(&ctx),
            Some(IslError::OperationLimit(100_000))
        );
        // A fresh budget makes the same context usable again.
        let _fresh = ctx.analysis();
        assert!(ctx
            .set("{ [a] : 0 <= a < 4 }")
            .and_then(|s| s.lexmin())
            .is_ok());
    }

    #[test]
    fn objects_are_values() {
        let ctx = Ctx::default();
        let a = ctx.union_map("{ S[i] -> A[i] : 0 <= i < 10 }").unwrap();
        let b = a.clone();
        let c = a.reverse().unwrap();
        assert!(a.is_equal(&b).unwrap());
        assert!(!a.is_equal(&c).unwrap());
        assert_eq!(c.reverse().unwrap(), a);
    }
}
