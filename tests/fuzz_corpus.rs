//! Every seed of the fuzz targets' corpora (`fuzz/corpus/TARGET/`) and every input a fuzzing
//! run found failing (`fuzz/regressions/TARGET/`) goes through the target's harness, on the
//! stable toolchain, as part of the suite. The fuzzing itself (`cargo +nightly fuzz run`)
//! is not: docs/testing.md gives the commands and the runs' figures.

#[allow(dead_code)]
#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::Path;

/// Runs `harness` on every file of `fuzz/corpus/NAME` and `fuzz/regressions/NAME`; returns
/// how many there were.
fn replay(name: &str, harness: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut count = 0;
    for dir in [
        root.join("corpus").join(name),
        root.join("regressions").join(name),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| harness(&data));
            assert!(outcome.is_ok(), "{} fails its harness", path.display());
            count += 1;
        }
    }
    count
}

#[test]
fn every_seed_and_regression_passes_its_harness() {
    let counts = [
        (
            "kernel_language",
            replay("kernel_language", harness::kernel_language),
        ),
        (
            "npu_assembler",
            replay("npu_assembler", harness::npu_assembler),
        ),
        (
            "machine_toml",
            replay("machine_toml", harness::machine_toml),
        ),
        ("npy", replay("npy", harness::npy)),
        (
            "schedule_text",
            replay("schedule_text", harness::schedule_text),
        ),
        ("c_frontend", replay("c_frontend", harness::c_frontend)),
    ];
    for (name, count) in counts {
        assert!(count > 0, "no corpus for {name}");
    }
}
