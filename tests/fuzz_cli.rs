//! `polyc fuzz-schedules` end to end on one random program: every scheduler and setting,
//! executed by the interpreter and compiled to C, agrees with the original order.

mod common;

use common::polyc;

#[test]
fn one_random_program_agrees_under_every_schedule() {
    let out = polyc(&[
        "fuzz-schedules",
        "--count",
        "1",
        "--seed",
        "1",
        "--compile",
        "--show",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("kernel fuzz1("), "{stdout}");
    assert!(
        stdout.contains("16 schedules checked and compiled: 0 failing program(s)"),
        "{stdout}"
    );
}
