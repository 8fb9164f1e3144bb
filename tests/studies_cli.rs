//! Studies as data: the JSON reports of `schedule`, `verify`, `compare` and `bench` carry the
//! fields `docs/studies.md` documents; `--machine FILE` sizes tiles; `polyc study` runs
//! independent, resumable jobs into a JSON-lines file; `polyc plot` draws one.

use serde_json::Value;
use std::path::Path;

mod common;

/// The JSON report a successful `polyc ARGS` prints.
fn report(args: &[&str]) -> Value {
    let out = common::polyc(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// The envelope every report has (`docs/studies.md`, "The reports"), with the tile
/// machine's figures when the command sizes tiles.
fn check_envelope(r: &Value, command: &str, machine: Option<&str>) {
    if let Some(name) = machine {
        check_machine(r, name);
    }
    assert_eq!(r["schema"], "polyc-report/1", "{r}");
    assert_eq!(r["command"], command, "{r}");
    assert_eq!(r["polyc"]["version"], env!("CARGO_PKG_VERSION"), "{r}");
    // a checkout: twelve hex digits, and whether the tree had changes
    let commit = r["polyc"]["commit"].as_str().unwrap_or_default();
    assert!(
        commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit()),
        "{r}"
    );
    assert!(r["polyc"]["modified"].is_boolean(), "{r}");
    assert!(r["host"]["threads"].as_u64() >= Some(1), "{r}");
    assert!(r["host"].get("cpu").is_some(), "{r}");
    assert!(r["options"].is_object(), "{r}");
}

fn check_machine(r: &Value, name: &str) {
    let m = &r["machine"];
    assert_eq!(m["name"], name, "{r}");
    for field in ["l1d_bytes", "l2_bytes", "l3_bytes", "vector_bytes", "cores"] {
        assert!(m[field].as_u64() >= Some(1), "{field}: {r}");
    }
}

#[test]
fn schedule_verify_and_compare_print_documented_reports() {
    let r = report(&[
        "schedule",
        "examples/polybench/gemm.pk",
        "--tile",
        "--emit",
        "json",
    ]);
    check_envelope(&r, "schedule", Some("host"));
    assert_eq!(r["options"]["tile"], "", "{r}");
    assert_eq!(r["options"]["scheduler"], "pluto", "{r}");
    let k = &r["results"][0];
    assert_eq!(k["kernel"], "gemm", "{r}");
    assert_eq!(k["scheduler"], "pluto", "{r}");
    assert!(k["parallel_loops"].as_u64() >= Some(1), "{r}");
    assert!(k["schedule"].as_str().unwrap().contains("domain"), "{r}");
    let bands = k["bands"].as_array().unwrap();
    assert!(
        bands
            .iter()
            .any(|b| b["tiling"].as_str().unwrap().contains('x')),
        "{r}"
    );
    assert!(k["notes"].is_array(), "{r}");

    // an illegal schedule: the report, and exit 1 as without `--emit json`
    let out = common::polyc(&[
        "verify",
        "examples/polybench/jacobi-1d.pk",
        "--schedule",
        "scheduler/tests/wrong/jacobi-1d.illegal-fusion.schedule",
        "--emit",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    check_envelope(&r, "verify", None);
    assert!(r["machine"].is_null(), "{r}");
    assert_eq!(r["results"]["verdict"], "illegal", "{r}");
    assert_eq!(
        r["results"]["violations"].as_array().unwrap().len(),
        2,
        "{r}"
    );

    // `--format` is the older name of `--emit`
    for flag in ["--emit", "--format"] {
        let r = report(&[
            "compare",
            "examples/polybench/gemm.pk",
            "--schedulers",
            "pluto,identity",
            flag,
            "json",
        ]);
        check_envelope(&r, "compare", Some("host"));
        assert_eq!(r["options"]["repeat"], 1, "{r}");
        let rows = r["results"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{r}");
        assert!(rows.iter().all(|row| row["run"].is_null()), "{r}");
    }
}

#[test]
fn compare_run_times_each_schedule() {
    let r = report(&[
        "compare",
        "examples/polybench/gemm.pk",
        "--schedulers",
        "pluto,identity",
        "-D",
        "NI=40",
        "-D",
        "NJ=30",
        "-D",
        "NK=20",
        "--run",
        "--repeat",
        "3",
        "--emit",
        "json",
    ]);
    let rows = r["results"].as_array().unwrap();
    let checksums: Vec<&Value> = rows.iter().map(|row| &row["run"]["checksums"]).collect();
    assert_eq!(checksums[0], checksums[1], "{r}");
    for row in rows {
        let run = &row["run"];
        assert!(run["error"].is_null(), "{r}");
        let mut runs: Vec<f64> = (run["runs_ms"].as_array().unwrap().iter())
            .map(|t| t.as_f64().unwrap())
            .collect();
        assert_eq!(runs.len(), 3, "{r}");
        runs.sort_by(f64::total_cmp);
        assert_eq!(run["median_ms"].as_f64(), Some(runs[1]), "{r}");
        assert_eq!(run["min_ms"].as_f64(), Some(runs[0]), "{r}");
        assert_eq!(run["max_ms"].as_f64(), Some(runs[2]), "{r}");
        assert_eq!(run["params"]["NK"], 20, "{r}");
    }
    // the table gets the run's columns
    let table = common::polyc(&[
        "compare",
        "examples/polybench/atax.pk",
        "--schedulers",
        "identity",
        "-D",
        "M=20",
        "-D",
        "N=30",
        "--run",
    ]);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    let words = |n: usize| -> Vec<String> {
        let line = table.lines().nth(n).unwrap_or_default();
        line.split_whitespace().map(str::to_owned).collect()
    };
    let header = words(0);
    assert_eq!(
        header[header.len() - 4..],
        ["ms", "min", "max", "speed-up"],
        "{table}"
    );
    assert_eq!(words(1).last().map(String::as_str), Some("1.00"), "{table}");
}

#[test]
fn bench_prints_a_report_with_every_variant() {
    let r = report(&[
        "bench",
        "examples/polybench/atax.pk",
        "-D",
        "M=40",
        "-D",
        "N=50",
        "--rounds",
        "1",
        "--emit",
        "json",
    ]);
    check_envelope(&r, "bench", Some("host"));
    let k = &r["results"][0];
    assert_eq!(k["kernel"], "atax", "{r}");
    let variants = k["variants"].as_array().unwrap();
    assert!(variants.len() >= 2, "{r}");
    assert_eq!(variants[0]["speedup"], 1.0, "{r}");
    assert!(
        variants.iter().all(|v| v["median_s"].as_f64() > Some(0.0)),
        "{r}"
    );
}

#[test]
fn bench_times_the_also_variants_beside_polyc() {
    let r = report(&[
        "bench",
        "examples/polybench/atax.pk",
        "-D",
        "M=40",
        "-D",
        "N=50",
        "--rounds",
        "1",
        "--also=--no-tile",
        "--also",
        "--scheduler isl --no-parallel",
        "--emit",
        "json",
    ]);
    let names: Vec<&str> = (r["results"][0]["variants"].as_array().unwrap().iter())
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    for name in [
        "polyc --no-tile (gcc -O3 -fopenmp)",
        "polyc --scheduler isl --no-parallel (gcc -O3 -fopenmp)",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    let bad = common::polyc(&["bench", "examples/polybench/atax.pk", "--also=--tiles 4"]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("--also --tiles 4"), "{stderr}");
}

#[test]
fn a_machine_file_sizes_the_tiles() {
    let dir = tempfile::tempdir().unwrap();
    let machine = |name: &str, l1d: &str, l2: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\ncores = 4\nl1d = \"{l1d}\"\nl2 = \"{l2}\"\nvector_bytes = 32\n"
            ),
        )
        .unwrap();
        path.to_string_lossy().into_owned()
    };
    let tiles = |file: &str| {
        let r = report(&[
            "schedule",
            "examples/polybench/gemm.pk",
            "--tile",
            "--machine",
            file,
            "--emit",
            "json",
        ]);
        check_machine(&r, Path::new(file).file_stem().unwrap().to_str().unwrap());
        assert_eq!(r["machine"]["cores"], 4, "{r}");
        r["results"][0]["bands"].to_string()
    };
    let small = tiles(&machine("small", "4K", "16K"));
    let large = tiles(&machine("large", "64K", "8M"));
    assert_ne!(small, large);

    let bad = machine("bad", "lots", "1M");
    let out = common::polyc(&["schedule", "examples/polybench/gemm.pk", "--machine", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`l1d` is not a size: `lots`"), "{err}");
}

#[test]
fn a_study_runs_independent_resumable_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("study.jsonl");
    let out = out.to_str().unwrap();
    let sizes = dir.path().join("sizes.toml");
    std::fs::write(&sizes, "atax = { M = 30, N = 40 }\n").unwrap();
    let sizes = sizes.to_str().unwrap();
    let study = |extra: &[&str]| {
        let mut args = vec![
            "study",
            "examples/polybench/atax.pk",
            "--schedulers",
            "pluto,isl,identity",
            "--sizes",
            sizes,
            "--repeat",
            "2",
        ];
        args.extend(extra);
        common::polyc(&args)
    };
    let list = study(&["--list-jobs"]);
    assert_eq!(
        String::from_utf8_lossy(&list.stdout),
        "0 examples/polybench/atax.pk pluto\n1 examples/polybench/atax.pk isl\n\
         2 examples/polybench/atax.pk identity\n"
    );
    assert!(study(&["--out", out, "--job", "1"]).status.success());
    let lines = || std::fs::read_to_string(out).unwrap();
    assert_eq!(lines().lines().count(), 1);
    // without --resume, a file with lines is refused; with it, only the missing jobs run
    assert_eq!(study(&["--out", out]).status.code(), Some(1));
    assert!(study(&["--out", out, "--resume"]).status.success());
    assert!(study(&["--out", out, "--resume"]).status.success());
    let text = lines();
    let mut jobs: Vec<u64> = Vec::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        check_envelope(&r, "study", Some("host"));
        assert_eq!(r["options"]["repeat"], 2, "{r}");
        let res = &r["results"];
        assert_eq!(res["kernel"], "atax", "{r}");
        assert_eq!(res["job"]["define"]["M"], 30, "{r}");
        assert!(res["run"]["median_ms"].as_f64() > Some(0.0), "{r}");
        jobs.push(res["job"]["index"].as_u64().unwrap());
    }
    assert_eq!(jobs, [1, 0, 2]);
    assert_eq!(study(&["--out", out, "--job", "3"]).status.code(), Some(1));

    // the plot of the study: one bar per kernel and scheduler but the baseline
    let svg = dir.path().join("study.svg");
    let plot = common::polyc(&["plot", out, "-o", svg.to_str().unwrap()]);
    assert!(plot.status.success());
    let svg = std::fs::read_to_string(svg).unwrap();
    assert_eq!(svg.matches("<rect class=\"bar\"").count(), 2, "{svg}");
}

#[test]
fn the_plot_of_a_study_is_stable() {
    let out = common::polyc(&["plot", "tests/studies/small.jsonl"]);
    assert!(out.status.success());
    let svg = String::from_utf8_lossy(&out.stdout);
    // gemm: pluto 4x, isl 8x (its last line); jacobi_2d: pluto failed, isl 0.5x
    assert_eq!(svg.matches("<rect class=\"bar\"").count(), 3, "{svg}");
    assert_eq!(svg.matches("<text class=\"missing\"").count(), 1, "{svg}");
    expect_test::expect_file!["studies/small.svg"].assert_eq(&svg);
}
