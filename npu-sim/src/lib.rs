//! The simulated NPU: an Ascend-DaVinci-like accelerator, simulated functionally (real values)
//! and in time (cycles), with a race detector. See `docs/npu.md` for the program format, the
//! machine files, the timing model and the checks.
//!
//! ```
//! let program = npu_sim::assemble("tensor x : f16[128] in\ntensor y : f16[128] out\n\
//!     buffer a : ub f16[128]\n\
//!     dma a[0], x[0], len=128\nset_flag MTE2, MTE3, 0\nwait_flag MTE2, MTE3, 0\ndma y[0], a[0], len=128\n").unwrap();
//! let machine = npu_sim::Machine::preset("ub-only").unwrap();
//! let run = npu_sim::run(&program, &machine, &Default::default(), 0).unwrap();
//! assert_eq!(run.outputs[0].0, "y");
//! ```
#![warn(missing_docs)]

pub mod asm;
pub mod builder;
pub mod diag;
pub mod elem;
pub mod expand;
pub mod func;
pub mod hazards;
pub mod layout;
pub mod machine;
pub mod memory;
pub mod mutate;
pub mod oracle;
pub mod order;
pub mod program;
pub mod report;
pub mod run;
pub mod simplify;
pub mod tensor;
pub mod timing;
pub mod trace;

pub use asm::{assemble, print};
pub use diag::{Code, Diagnostic};
pub use machine::Machine;
pub use order::Semantics;
pub use program::Program;
pub use run::{run, run_timed, Run, Stopped};
pub use tensor::TensorData;
