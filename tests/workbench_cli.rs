//! What a researcher's scripts read: the commit in `polyc --version` (so that a published
//! figure can say which polyc made it), and `polyc compare` as CSV and JSON (the report's
//! other fields: `tests/studies_cli.rs`).

use serde_json::Value;
use std::process::Command;

mod common;

#[test]
fn the_version_names_the_commit() {
    let out = common::polyc(&["--version"]);
    assert!(out.status.success());
    let version = String::from_utf8_lossy(&out.stdout).into_owned();
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let expected = match head {
        Some(hash) => format!("polyc {} (commit {hash}", env!("CARGO_PKG_VERSION")),
        None => format!("polyc {} (commit unknown)", env!("CARGO_PKG_VERSION")),
    };
    assert!(
        version.starts_with(&expected),
        "{version:?} against {expected:?}"
    );
}

#[test]
fn compare_prints_csv_and_json_with_every_run() {
    let csv = common::polyc(&["compare", "examples/polybench/gemm.pk", "--format", "csv"]);
    assert!(csv.status.success());
    let csv = String::from_utf8_lossy(&csv.stdout).into_owned();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0], "kernel,scheduler,bands,band depths,parallel,tiles,ms",
        "{csv}"
    );
    let schedulers: Vec<&str> = (lines[1..].iter())
        .map(|l| l.split(',').nth(1).unwrap_or_default())
        .collect();
    assert_eq!(
        schedulers,
        ["pluto", "feautrier", "isl", "identity"],
        "{csv}"
    );

    let json = common::polyc(&[
        "compare",
        "examples/polybench/gemm.pk",
        "--schedulers",
        "pluto,identity",
        "--format",
        "json",
        "--repeat",
        "3",
    ]);
    assert!(json.status.success());
    let report: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let rows = report["results"].as_array().expect("an array of rows");
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["kernel"], "gemm", "{row}");
        assert!(row["error"].is_null(), "{row}");
        assert!(row["parallel_loops"].as_u64().is_some(), "{row}");
        let bands = row["bands"].as_array().expect("bands");
        assert!(!bands.is_empty() && bands.iter().all(|b| b["members"].as_u64() >= Some(1)));
        let mut runs: Vec<f64> = (row["ms_runs"].as_array().expect("runs").iter())
            .map(|t| t.as_f64().expect("a time"))
            .collect();
        assert_eq!(runs.len(), 3, "{row}");
        runs.sort_by(f64::total_cmp);
        assert_eq!(row["ms"].as_f64(), Some(runs[1]), "{row}");
    }
    assert_eq!(rows[0]["scheduler"], "pluto");
    assert_eq!(rows[1]["scheduler"], "identity");
}
