//! polyc's front end: the kernel language (`shared/specs/dsl.md`, documented in
//! `docs/language.md`), from source text to the checked [`ir::Kernel`].
//!
//! The front end knows nothing of isl: it checks affinity syntactically and hands over
//! affine expression trees.

pub mod ir;
pub mod span;
