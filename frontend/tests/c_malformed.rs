//! The C front end's malformed-input corpus: `c_malformed/CODE_NAME.c` beside the
//! diagnostics rendered for it (`CODE_NAME.stderr`), as `polyc c` prints them (warnings for
//! regions left unchanged, errors for a file whose pragmas do not pair), the first of the
//! code its name starts with. Regenerate with `UPDATE_EXPECT=1`.
//!
//! The files go through the system preprocessor (`cpp`): without one the test fails,
//! unless `POLYC_ALLOW_SKIP=1` allows it to be skipped.

use frontend::c::cpp::Cpp;
use frontend::diagnostics::Severity;
use frontend::SourceFile;
use std::path::{Path, PathBuf};

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c_malformed");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    files.sort();
    files
}

/// Whether the preprocessor runs; if not, whether the test may be skipped (else it fails).
fn preprocessor_available() -> bool {
    let probe = std::process::Command::new(&Cpp::command()[0])
        .arg("--version")
        .output();
    if probe.is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(
        std::env::var("POLYC_ALLOW_SKIP").is_ok_and(|v| v == "1"),
        "no C preprocessor (`{}`): install one, or set POLYC_ALLOW_SKIP=1 to skip",
        Cpp::command().join(" ")
    );
    eprintln!("no C preprocessor: skipped");
    false
}

/// What `polyc c` reports for `path`.
fn rendered(path: &Path) -> String {
    let name = path.file_name().expect("file name").to_string_lossy();
    let file =
        SourceFile::from_bytes(&name, std::fs::read(path).expect("readable")).expect("UTF-8");
    let preprocessed = Cpp::default().run(path).expect("preprocessed");
    match frontend::c::translate(&file, &preprocessed) {
        Err(d) => d.render(&file, false),
        Ok(regions) => regions
            .iter()
            .filter_map(|r| r.kernel.as_ref().err())
            .map(|d| d.render_as(&file, false, Severity::Warning))
            .collect(),
    }
}

#[test]
fn each_construct_outside_the_subset_is_reported_where_it_is() {
    if !preprocessor_available() {
        return;
    }
    let files = corpus();
    assert!(files.len() >= 30, "too few malformed programs");
    for path in files {
        let stem = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let code = stem.split('_').next().expect("code prefix");
        let out = rendered(&path);
        assert!(
            out.starts_with(&format!("warning[{code}]"))
                || out.starts_with(&format!("error[{code}]")),
            "{}: expected first diagnostic {code}, got:\n{out}",
            path.display()
        );
        expect_test::expect_file![path.with_extension("stderr")].assert_eq(&out);
    }
}
