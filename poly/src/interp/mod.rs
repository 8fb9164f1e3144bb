//! The reference interpreter.
