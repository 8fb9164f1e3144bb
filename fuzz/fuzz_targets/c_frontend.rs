#![no_main]
//! libFuzzer target: `cargo +nightly fuzz run c_frontend` (see docs/testing.md).

// Each target calls one function of the shared harness.
#[allow(dead_code)]
#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::c_frontend(data));
