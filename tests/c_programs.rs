//! The C test programs of `tests/c/` (written for this project in PolyBench's style: an
//! initialisation, a kernel function whose loops are a `#pragma scop` region, a dump of the
//! arrays; one program per construct of the C subset) through the C front end and
//! `polyc c`:
//!
//! * `programs_lower_to_the_expected_ir`: each region's kernel as `polyc show` prints it
//!   (or the codes of the diagnostics of a region outside the subset), beside the program
//!   (`NAME.ir`; regenerate with `UPDATE_EXPECT=1`);
//! * `optimised_programs_print_what_the_originals_print`: each program and its `polyc c`
//!   output (default flags, then `--tile --parallel`), built with `gcc -O2` (plus
//!   `-fopenmp` when the output has OpenMP loops, as `polyc c` says) and run on two
//!   threads, print the same bytes (every element with `%.17g`: no reduction is reordered,
//!   so the results are bit for bit the same);
//! * `text_outside_the_regions_is_kept_byte_for_byte`: the output is the original with each
//!   region replaced by one block (or left as it is);
//! * `a_c_file_is_benchmarked_as_it_is`: `polyc bench` on a C file checks the variants'
//!   dumps and prints its table and geometric means;
//! * `strict_refuses_a_file_with_a_region_left_unchanged`: `--strict` exits 1, writing
//!   nothing.
//!
//! They need `cpp` and `gcc`: without them they fail, unless `POLYC_ALLOW_SKIP=1` allows
//! them to be skipped.

use frontend::c::cpp::Cpp;
use frontend::SourceFile;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

fn programs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/c")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "too few test programs");
    files
}

/// Whether `program --version` runs; if not, whether the test may be skipped (else it
/// fails).
fn available(program: &str) -> bool {
    let runs = Command::new(program).arg("--version").output();
    if runs.is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(
        std::env::var("POLYC_ALLOW_SKIP").is_ok_and(|v| v == "1"),
        "`{program}` is needed: install it, or set POLYC_ALLOW_SKIP=1 to skip"
    );
    eprintln!("no `{program}`: skipped");
    false
}

/// `polyc c PROGRAM -o OUT FLAGS...`: its standard error, or why it failed.
fn polyc_c(program: &Path, out: &Path, flags: &[&str]) -> Result<String, String> {
    let run = Command::new(env!("CARGO_BIN_EXE_polyc"))
        .arg("c")
        .arg(program)
        .arg("-o")
        .arg(out)
        .args(flags)
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    if run.status.success() {
        Ok(stderr)
    } else {
        Err(format!("polyc c {} failed:\n{stderr}", program.display()))
    }
}

/// `source` built with `gcc -O2 FLAGS` and run on two threads: its standard output.
fn build_and_run(source: &Path, exe: &Path, flags: &[&str]) -> Result<Vec<u8>, String> {
    let build = Command::new("gcc")
        .arg("-O2")
        .args(flags)
        .arg("-o")
        .arg(exe)
        .arg(source)
        .arg("-lm")
        .output()
        .map_err(|e| e.to_string())?;
    if !build.status.success() {
        return Err(format!(
            "gcc {} failed:\n{}",
            source.display(),
            String::from_utf8_lossy(&build.stderr)
        ));
    }
    let run = Command::new(exe)
        .env("OMP_NUM_THREADS", "2")
        .output()
        .map_err(|e| e.to_string())?;
    if !run.status.success() {
        return Err(format!("{} failed", exe.display()));
    }
    Ok(run.stdout)
}

#[test]
fn programs_lower_to_the_expected_ir() {
    if !available(&Cpp::command()[0]) {
        return;
    }
    for path in programs() {
        let name = path.file_name().expect("name").to_string_lossy();
        let file =
            SourceFile::from_bytes(&name, std::fs::read(&path).expect("readable")).expect("UTF-8");
        let preprocessed = Cpp::default().run(&path).expect("preprocessed");
        let regions = frontend::c::translate(&file, &preprocessed)
            .unwrap_or_else(|d| panic!("{name}:\n{}", d.render(&file, false)));
        let text: String = regions
            .iter()
            .map(|r| match &r.kernel {
                Ok(k) => format!("// lines {}-{}\n{k}", r.lines.0, r.lines.1),
                Err(d) => {
                    let codes: Vec<String> = d.list.iter().map(|d| d.code.as_string()).collect();
                    format!(
                        "// lines {}-{}: outside the subset ({})\n",
                        r.lines.0,
                        r.lines.1,
                        codes.join(", ")
                    )
                }
            })
            .collect();
        expect_test::expect_file![path.with_extension("ir")].assert_eq(&text);
    }
}

#[test]
fn optimised_programs_print_what_the_originals_print() {
    if !available(&Cpp::command()[0]) || !available("gcc") {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    // The default pipeline (tiled, parallel) and the scheduler's schedule alone.
    let configurations: [&[&str]; 2] = [&[], &["--no-tile", "--no-parallel"]];
    let jobs: Vec<(PathBuf, usize)> = programs()
        .into_iter()
        .flat_map(|p| (0..configurations.len()).map(move |c| (p.clone(), c)))
        .collect();
    let next = Mutex::new(0usize);
    let failures = Mutex::new(Vec::new());
    let run_job = |(program, config): &(PathBuf, usize)| -> Result<(), String> {
        let stem = program.file_stem().expect("stem").to_string_lossy();
        let original = dir.path().join(format!("{stem}_{config}_original"));
        let expected = build_and_run(program, &original, &[])?;
        let out = dir.path().join(format!("{stem}_{config}.c"));
        let report = polyc_c(program, &out, configurations[*config])?;
        if !report.contains("region optimised") {
            return Err(format!("{stem}: no region optimised:\n{report}"));
        }
        let openmp = report.contains("-fopenmp");
        let flags: &[&str] = if openmp { &["-fopenmp"] } else { &[] };
        let got = build_and_run(&out, &dir.path().join(format!("{stem}_{config}")), flags)?;
        if got != expected {
            return Err(format!(
                "{stem} with {:?}: the output prints differently from the original",
                configurations[*config]
            ));
        }
        Ok(())
    };
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let k = {
                    let mut n = next.lock().expect("lock");
                    *n += 1;
                    *n - 1
                };
                let Some(job) = jobs.get(k) else { break };
                if let Err(e) = run_job(job) {
                    failures.lock().expect("lock").push(e);
                }
            });
        }
    });
    let failures = failures.into_inner().expect("lock");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The byte ranges of the `#pragma scop` regions of `text`: from the start of the
/// `#pragma scop` line to the end of the `#pragma endscop` line.
fn regions(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        match line.trim() {
            "#pragma scop" => start = Some(at),
            "#pragma endscop" => {
                let s = start.take().expect("paired pragmas");
                out.push((s, at + line.trim_end_matches('\n').len()));
            }
            _ => {}
        }
        at += line.len();
    }
    out
}

/// Checks that `output` is `original` with each region either kept or replaced by one
/// block (`/* polyc: ... */`, `{`, ..., `}` at the region's indentation).
fn check_outside_regions(name: &str, original: &str, output: &str) {
    let mut kept = 0;
    let mut at = 0;
    for (start, end) in regions(original) {
        let before = &original[kept..start];
        assert!(
            output[at..].starts_with(before),
            "{name}: the text before byte {start} of the original changed"
        );
        at += before.len();
        let region = &original[start..end];
        if output[at..].starts_with(region) {
            at += region.len();
        } else {
            let indent: String = region
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            let rest = &output[at..];
            assert!(
                rest.starts_with(&format!("{indent}/* polyc: ")),
                "{name}: the region at byte {start} is neither kept nor replaced by a block"
            );
            let close = format!("\n{indent}}}");
            let end_of_block = rest
                .match_indices(&close)
                .map(|(k, _)| k + close.len())
                .find(|&k| rest[k..].starts_with('\n') || k == rest.len())
                .unwrap_or_else(|| panic!("{name}: the block at byte {at} is not closed"));
            at += end_of_block;
        }
        kept = end;
    }
    assert_eq!(
        &output[at..],
        &original[kept..],
        "{name}: the text after the last region changed"
    );
}

#[test]
fn text_outside_the_regions_is_kept_byte_for_byte() {
    if !available(&Cpp::command()[0]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    for program in programs() {
        let name = program
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let out = dir.path().join(&name);
        polyc_c(&program, &out, &[]).unwrap_or_else(|e| panic!("{e}"));
        let original = std::fs::read_to_string(&program).expect("readable");
        let output = std::fs::read_to_string(&out).expect("written");
        assert_ne!(original, output, "{name}: nothing was replaced");
        check_outside_regions(&name, &original, &output);
    }
}

#[test]
fn the_byte_check_sees_a_changed_byte() {
    let original = "int a;\n#pragma scop\nx = 1;\n#pragma endscop\nint b;\n";
    let good = "int a;\n/* polyc: r */\n{\n    x = 1;\n}\nint b;\n";
    check_outside_regions("good", original, good);
    let bad = "int a;\n/* polyc: r */\n{\n    x = 1;\n}\nint c;\n";
    let caught = std::panic::catch_unwind(|| check_outside_regions("bad", original, bad));
    assert!(caught.is_err());
}

#[test]
fn a_c_file_is_benchmarked_as_it_is() {
    if !available(&Cpp::command()[0]) || !available("gcc") {
        return;
    }
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/gemm.c");
    let out = Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(["bench", "--rounds", "1"])
        .arg(&program)
        .output()
        .expect("polyc runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let polyc = stdout
        .lines()
        .find(|l| l.contains("polyc c (gcc -O3 -fopenmp)"))
        .unwrap_or_else(|| panic!("no polyc variant:\n{stdout}"));
    // The program prints every element with %.17g: the builds (with GCC's default
    // contraction) agree to the last digit or within it.
    assert!(polyc.contains("dumps "), "{stdout}");
    assert!(stdout.contains("geometric mean"), "{stdout}");
}

#[test]
fn strict_refuses_a_file_with_a_region_left_unchanged() {
    if !available(&Cpp::command()[0]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/globals.c");
    let out = dir.path().join("globals.c");
    let err = polyc_c(&program, &out, &["--strict"]).expect_err("a region is outside the subset");
    assert!(err.contains("warning[E0700]"), "{err}");
    assert!(err.contains("left unchanged (--strict)"), "{err}");
    assert!(!out.exists(), "nothing is written");
    // Without --strict the same file is rewritten, the region kept.
    let report = polyc_c(&program, &out, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        report.contains("globals.c:38-44: region left unchanged"),
        "{report}"
    );
}

#[test]
fn expansion_gives_each_web_an_array_of_its_own() {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/expand.c");
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = dir.path().join("expand.c");
    let report = polyc_c(&program, &out, &[]).expect("polyc c");
    let notes: String = (report.lines())
        .filter(|l| l.contains("expanded"))
        .map(|l| format!("{l}\n"))
        .collect();
    expect_test::expect![[r#"
        note: kernel_expand: `w` expanded along (i, j) into `pc_w_0`
        note: kernel_expand: `w` expanded along (i, j) into `pc_w_1`
        note: kernel_expand: `w` expanded along (i) into `pc_w_2`
        note: kernel_expand: `s` expanded along (r, i) into `pc_s_0`, its final contents copied back from the last iteration
        note: kernel_expand: `after` expanded along (i) into `pc_after_0`, its final contents copied back from the last iteration
    "#]]
    .assert_eq(&notes);
    let kept = polyc_c(&program, &out, &["--no-expand"]).expect("polyc c --no-expand");
    assert!(!kept.contains("expanded"), "{kept}");
}

#[test]
fn expanded_arrays_that_cannot_be_allocated_leave_the_region_as_written() {
    if !available(&Cpp::command()[0]) || !available("gcc") {
        return;
    }
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/expand.c");
    let dir = tempfile::tempdir().expect("temporary directory");
    let expected = build_and_run(&program, &dir.path().join("original"), &[]).expect("original");
    let out = dir.path().join("expand.c");
    let report = polyc_c(&program, &out, &[]).expect("polyc c");
    assert!(report.contains("expanded"), "{report}");
    // Every allocation fails: the heap arrays are null, and the statements as written run.
    let failing = ["-D__builtin_malloc(n)=((void *)0)"];
    let got = build_and_run(&out, &dir.path().join("failing"), &failing).expect("rewrite");
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&expected)
    );
    let text = std::fs::read_to_string(&out).expect("rewrite");
    assert!(
        text.contains("out of memory: the region as written"),
        "{text}"
    );
}
