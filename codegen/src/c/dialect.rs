//! The two kinds of C the printer writes.
//!
//! - [`Dialect::Kernel`]: polyc's own function (`kernel_function`): arrays are flat buffers
//!   indexed through hoisted extents, names that could collide are renamed, and arithmetic
//!   is the interpreter's exactly, through the runtime's helpers (`polyc_runtime.h`).
//! - [`Dialect::Source`]: loops put back into the user's C file in place of a
//!   `#pragma scop` region (`scop_block`): the user's own variables by their own names,
//!   their arrays indexed as C arrays (`A[i][j]`), and C's arithmetic in C's types, which is
//!   what the region computed (the C front end made every conversion an explicit cast). No
//!   runtime is included: the few index helpers the loops use are macros of the block.

use super::names::c_name;
use super::types;
use frontend::ir::ElemType;

/// Which C the printer writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// polyc's kernel function, with the runtime's exact arithmetic.
    #[default]
    Kernel,
    /// A loop nest in the user's C file, over the user's variables.
    Source,
}

impl Dialect {
    /// The C spelling of a name of the kernel.
    pub fn name(self, name: &str) -> String {
        match self {
            Dialect::Kernel => c_name(name),
            Dialect::Source => name.to_owned(),
        }
    }

    /// The C type elements of `elem` are stored as.
    pub fn storage(self, elem: ElemType) -> &'static str {
        match (self, elem) {
            (Dialect::Kernel, _) => types::storage(elem),
            (Dialect::Source, ElemType::I32) => "int",
            (Dialect::Source, ElemType::I8) => "signed char",
            (Dialect::Source, ElemType::F32) => "float",
            (Dialect::Source, _) => "double",
        }
    }
}
