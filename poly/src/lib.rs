//! polyc's polyhedral model: a safe layer over isl, the program model built from the
//! front end's checked IR, exact dependences, and the reference interpreter.

#![warn(missing_docs)]

pub mod deps;
pub mod interp;
pub mod isl;
pub mod model;
pub mod order;
#[cfg(test)]
mod test_support;
