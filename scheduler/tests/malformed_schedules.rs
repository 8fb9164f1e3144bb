//! Corpus of malformed schedule files: each `malformed_schedules/NAME.schedule` is refused
//! with a syntax error rendered rustc-style (file, line, column, reason and caret), as its
//! `NAME.stderr` holds; never accepted, never a panic. Regenerate with `UPDATE_EXPECT=1`.

use poly::isl::Ctx;
use scheduler::legality::input::{parse_schedule, InputError};
use std::path::{Path, PathBuf};

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/malformed_schedules");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "schedule"))
        .collect();
    files.sort();
    files
}

#[test]
fn malformed_schedules_get_a_position_and_a_reason() {
    let files = corpus();
    assert!(files.len() >= 8, "too few malformed schedules");
    let ctx = Ctx::default();
    for path in files {
        let name = path.file_name().expect("file name").to_string_lossy();
        let text = std::fs::read_to_string(&path).expect("readable");
        let rendered = match parse_schedule(&ctx, &text) {
            Err(e @ InputError::Syntax(_)) => e.render(&name, &text, false),
            other => panic!("{name}: not a syntax error: {other:?}"),
        };
        expect_test::expect_file![path.with_extension("stderr")].assert_eq(&rendered);
    }
}
