//! Golden dependence tests: for each `deps/NAME.deps`, the dependences polyc computes for the
//! named example must equal the hand-derived relations in the file, by isl set equality.
//! A kind the file does not list is not compared.

use poly::deps::{DepKind, Dependences};
use poly::isl::Ctx;
use poly::model::Program;
use std::collections::BTreeMap;
use std::path::Path;

/// The kernel file and the expected relation text of each kind listed.
fn parse_expectations(text: &str) -> (String, Vec<(DepKind, String)>) {
    let mut kernel = String::new();
    let mut kinds: Vec<(DepKind, String)> = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let key = |k: &str| line.strip_prefix(k).map(str::to_owned);
        if let Some(k) = key("kernel:") {
            kernel = k.trim().to_owned();
        } else if let Some(r) = key("flow:") {
            kinds.push((DepKind::Flow, r));
        } else if let Some(r) = key("anti:") {
            kinds.push((DepKind::Anti, r));
        } else if let Some(r) = key("output:") {
            kinds.push((DepKind::Output, r));
        } else if let Some((_, r)) = kinds.last_mut() {
            r.push('\n');
            r.push_str(line);
        }
    }
    (kernel, kinds)
}

#[test]
fn dependences_match_hand_derived_relations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/deps");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "expected the golden files for gemm, jacobi-1d, seidel-2d, lu, trisolv"
    );
    let mut failures = Vec::new();
    for file in files {
        let (kernel_file, expected) = parse_expectations(&std::fs::read_to_string(&file).unwrap());
        let source = frontend::read_source(examples.join(&kernel_file).to_str().unwrap()).unwrap();
        let kernel = frontend::compile(&source).unwrap().remove(0);
        let ctx = Ctx::default();
        let program = Program::build(&ctx, &kernel, &BTreeMap::new()).unwrap();
        let deps = Dependences::compute(&program).unwrap();
        for (kind, text) in expected {
            let want = ctx
                .union_map(&text)
                .unwrap_or_else(|e| panic!("{}: bad {kind:?} text: {e}", file.display()));
            let got = deps.of_kind(kind);
            if !got.is_equal(&want).unwrap() {
                failures.push(format!(
                    "{} {kind:?}:\n  computed but not expected: {}\n  expected but not computed: {}",
                    kernel_file,
                    got.subtract(&want).unwrap().coalesce().unwrap(),
                    want.subtract(got).unwrap().coalesce().unwrap()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
