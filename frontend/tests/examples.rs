//! Every example kernel of the repository (`examples/**/*.pk`) must compile.

use frontend::{compile, read_source};
use std::path::{Path, PathBuf};

fn pk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            pk_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "pk") {
            out.push(path);
        }
    }
}

#[test]
fn all_examples_compile() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files = Vec::new();
    pk_files(&root, &mut files);
    files.sort();
    assert!(
        !files.is_empty(),
        "no examples found under {}",
        root.display()
    );
    let mut failures = String::new();
    for path in &files {
        let file = match read_source(&path.to_string_lossy()) {
            Ok(f) => f,
            Err(message) => {
                failures.push_str(&message);
                continue;
            }
        };
        if let Err(d) = compile(&file) {
            failures.push_str(&d.render(&file, false));
        }
    }
    assert!(
        failures.is_empty(),
        "examples that do not compile:\n{failures}"
    );
}
