#![no_main]
//! libFuzzer target: `cargo +nightly fuzz run schedule_text` (see docs/testing.md).

// Each target calls one function of the shared harness.
#[allow(dead_code)]
#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::schedule_text(data));
