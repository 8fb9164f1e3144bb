//! Records the commit polyc is built from, for `polyc --version`: the short hash of `HEAD`,
//! with ", modified" when tracked files differ from it, or "commit unknown" outside a git
//! checkout (a source archive, or git refusing the directory).

use std::process::Command;

/// The workspace's sources: a change to any of them may change what is built.
const SOURCES: [&str; 8] = [
    "src",
    "frontend",
    "poly",
    "scheduler",
    "codegen",
    "npu-sim",
    "progen",
    "Cargo.toml",
];

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    let hash = git(&["rev-parse", "--short=12", "HEAD"]);
    let modified = hash.is_some()
        && git(&["status", "--porcelain", "--untracked-files=no"])
            .is_some_and(|changes| !changes.is_empty());
    let commit = match (&hash, modified) {
        (Some(hash), true) => format!("commit {hash}, modified"),
        (Some(hash), false) => format!("commit {hash}"),
        (None, _) => "commit unknown".to_owned(),
    };
    println!("cargo:rustc-env=POLYC_COMMIT={commit}");
    // the same for machine-readable reports: the bare hash (empty when unknown) and the flag
    println!(
        "cargo:rustc-env=POLYC_COMMIT_HASH={}",
        hash.unwrap_or_default()
    );
    println!("cargo:rustc-env=POLYC_MODIFIED={modified}");
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{branch}");
        }
    }
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
    }
}
