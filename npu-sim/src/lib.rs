//! The simulated NPU.
