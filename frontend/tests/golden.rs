//! Data-driven golden tests: `ok/NAME.pk` beside its lowered IR (`NAME.ir`), and
//! `malformed/CODE_NAME.pk` beside its rendered diagnostics (`CODE_NAME.stderr`), where the
//! first diagnostic must carry the code `CODE`. Regenerate with `UPDATE_EXPECT=1`.

use frontend::{compile, compile_intrinsics, SourceFile};
use std::path::{Path, PathBuf};

fn sources(dir: &str) -> Vec<PathBuf> {
    files_with(dir, "pk")
}

fn files_with(dir: &str, extension: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("test directory")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Result<SourceFile, String> {
    let name = path.file_name().expect("file name").to_string_lossy();
    SourceFile::from_bytes(&name, std::fs::read(path).expect("readable test file"))
}

#[test]
fn well_formed_programs_lower_to_the_expected_ir() {
    let files = sources("ok");
    assert!(files.len() >= 5, "too few golden programs");
    for path in files {
        let file = load(&path).expect("UTF-8");
        let out = match compile(&file) {
            Ok(kernels) => kernels
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
            Err(d) => panic!(
                "{} does not compile:\n{}",
                path.display(),
                d.render(&file, false)
            ),
        };
        expect_test::expect_file![path.with_extension("ir")].assert_eq(&out);
    }
}

/// Each file must fail `check` with its rendered diagnostics, the first of the code its name
/// starts with.
fn assert_malformed<T>(
    files: Vec<PathBuf>,
    check: impl Fn(&SourceFile) -> Result<T, frontend::Diagnostics>,
) {
    for path in files {
        let stem = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let code = stem.split('_').next().expect("code prefix");
        let rendered = match load(&path) {
            Err(message) => message,
            Ok(file) => match check(&file) {
                Ok(_) => panic!("{} compiles but should not", path.display()),
                Err(d) => format!("{}{}\n", d.render(&file, false), d.summary(&file)),
            },
        };
        assert!(
            rendered.starts_with(&format!("error[{code}]")),
            "{}: expected first error {code}, got:\n{rendered}",
            path.display()
        );
        expect_test::expect_file![path.with_extension("stderr")].assert_eq(&rendered);
    }
}

#[test]
fn malformed_programs_give_their_specific_diagnostics() {
    let files = sources("malformed");
    assert!(files.len() >= 40, "too few malformed programs");
    assert_malformed(files, compile);
}

#[test]
fn intrinsic_files_lower_to_kernels_with_tiers() {
    let files = files_with("ok", "pki");
    assert!(!files.is_empty());
    for path in files {
        let file = load(&path).expect("UTF-8");
        let out = match compile_intrinsics(&file) {
            Ok(intrinsics) => intrinsics
                .iter()
                .map(|i| {
                    let tiers: Vec<String> = (i.kernel.arrays.iter().zip(&i.tiers))
                        .map(|(a, (t, _))| format!("{} @ {t}", a.name))
                        .collect();
                    format!("{}tiers: {}\n", i.kernel, tiers.join(", "))
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Err(d) => panic!(
                "{} does not check:\n{}",
                path.display(),
                d.render(&file, false)
            ),
        };
        expect_test::expect_file![path.with_extension("ir")].assert_eq(&out);
    }
}

#[test]
fn malformed_intrinsic_files_give_their_specific_diagnostics() {
    let files = files_with("malformed", "pki");
    assert!(files.len() >= 3);
    assert_malformed(files, compile_intrinsics);
}
