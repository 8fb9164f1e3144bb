//! What a name means at a point of a kernel.

use crate::ir::{Array, ArrayId, Param};

/// The names visible at a point: parameters, arrays, and the loop variables around it
/// (enclosing `for`s and the free index variables of the statement being checked).
#[derive(Clone, Debug)]
pub struct Scope<'k> {
    /// The kernel's parameters.
    pub params: &'k [Param],
    /// The kernel's arrays.
    pub arrays: &'k [Array],
    /// Loop variables in scope, outermost first.
    pub loops: Vec<String>,
}

/// What a name refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// A loop variable (bound by a `for`, or a free index variable).
    Loop,
    /// A parameter.
    Param,
    /// An array.
    Array(ArrayId),
    /// Nothing.
    Unknown,
}

impl<'k> Scope<'k> {
    /// A scope with no loop variables.
    pub fn new(params: &'k [Param], arrays: &'k [Array]) -> Scope<'k> {
        Scope {
            params,
            arrays,
            loops: Vec::new(),
        }
    }

    /// What `name` refers to.
    pub fn resolve(&self, name: &str) -> Resolved {
        if self.loops.iter().any(|l| l == name) {
            Resolved::Loop
        } else if self.params.iter().any(|p| p.name == name) {
            Resolved::Param
        } else if let Some(k) = self.arrays.iter().position(|a| a.name == name) {
            Resolved::Array(ArrayId(k))
        } else {
            Resolved::Unknown
        }
    }

    /// The array with the given id.
    pub fn array(&self, id: ArrayId) -> &'k Array {
        &self.arrays[id.0]
    }
}
