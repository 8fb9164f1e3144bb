//! What the loop printer needs to know: how statements print and what can be done with
//! them ([`Instances`]), and how loops print ([`LoopOptions`]). The bottom of the printer's
//! modules: the deciding modules and the printer read these, nothing here reads them.

use super::dialect::Dialect;
use super::stmt::{Accumulable, ElementAccess, InputExpression, Replacement};
use crate::CodegenError;

/// The statements the loops execute, as the printer needs them.
pub trait Instances {
    /// A statement instance as C: the statement's tuple name and its iteration vector (C
    /// expressions) to one C statement or block, with the parts of `replaced` spelled as
    /// the C lvalues given there (an accumulator for the target, a panel for a read or for
    /// a subexpression).
    fn instance(
        &self,
        tuple: &str,
        args: &[String],
        replaced: &[Replacement<'_>],
    ) -> Result<String, CodegenError>;

    /// How the statement's target can be held in a local accumulator (`None`, the default:
    /// it cannot, and its loops are printed as they are).
    fn accumulable(&self, _tuple: &str) -> Option<&Accumulable> {
        None
    }

    /// Every access of a statement instance (its tuple name and iteration vector), each
    /// element spelled in the C expressions of `args`, for packing and promotion (`None`,
    /// the default: nothing is known of them, so neither applies).
    fn element_accesses(&self, _tuple: &str, _args: &[String]) -> Option<Vec<ElementAccess>> {
        None
    }

    /// The subexpressions of a statement instance computed from inputs alone, each value
    /// spelled in the C expressions of `args`, given the instance's [`element_accesses`]
    /// (`accesses`), for packing (`None`, the default: nothing is known of them).
    ///
    /// [`element_accesses`]: Instances::element_accesses
    fn input_expressions(
        &self,
        _tuple: &str,
        _args: &[String],
        _accesses: &[ElementAccess],
    ) -> Option<Vec<InputExpression>> {
        None
    }
}

/// How loops are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopOptions {
    /// Loops with a constant trip count up to this are unrolled (0: never).
    pub unroll_limit: u32,
    /// Whether to emit OpenMP pragmas (`parallel for`, `simd`).
    pub openmp: bool,
    /// Whether to copy strided input reads of accumulator blocks into packed panels
    /// (`c::pack`).
    pub pack: bool,
    /// The C written (how panels are allocated and what runs when they cannot be).
    pub dialect: Dialect,
}

impl Default for LoopOptions {
    fn default() -> Self {
        LoopOptions {
            unroll_limit: 4,
            openmp: true,
            pack: true,
            dialect: Dialect::Kernel,
        }
    }
}
