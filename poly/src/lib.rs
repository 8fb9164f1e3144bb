//! The polyhedral model.
