//! `--isl-option NAME=VALUE`: isl's scheduler options reach the `isl` baseline, and a
//! mistyped one is a user error naming the options there are.

mod common;

use common::{passing, polyc};

/// The summary `polyc schedule` prints for 2mm under isl's scheduler with `extra` flags.
fn two_mm(extra: &[&str]) -> String {
    let mut args = vec![
        "schedule",
        "examples/polybench/2mm.pk",
        "--scheduler",
        "isl",
    ];
    args.extend(["--no-tile", "--no-parallel"]);
    args.extend(extra);
    passing(&args)
}

#[test]
fn serialize_sccs_distributes_2mm_into_deep_parallel_bands() {
    let deep = "band 3: depth 0, 3 members, permutable, parallel members [0, 1]";
    let serialized = two_mm(&["--isl-option", "serialize-sccs=true"]);
    assert!(serialized.contains(deep), "{serialized}");
    let default = two_mm(&[]);
    assert!(!default.contains(deep), "{default}");
    let feautrier = two_mm(&["--isl-option", "algorithm=feautrier"]);
    assert_ne!(feautrier, default);
}

#[test]
fn a_mistyped_isl_option_is_a_user_error() {
    let out = polyc(&[
        "schedule",
        "examples/polybench/2mm.pk",
        "--isl-option",
        "serialize_sccs=1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not one of isl's scheduler options") && err.contains("serialize-sccs"),
        "{err}"
    );
}
