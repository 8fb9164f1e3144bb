//! `--iss` end to end: the mirror kernels (`tests/kernels/mirror*.pk`, whose loops carry
//! dependences from one half of the array to the other only) are split into two parallel
//! loops, and the compiled C computes what the interpreter computes at odd, even and tiny
//! sizes (the middle element, which reads itself, is in the second part).

mod common;

use common::{passing, polyc};

/// The checksum lines (`A f64[..] sum=.. hash=..`) of a `polyc run`.
fn checksums(stdout: &str) -> Vec<String> {
    (stdout.lines())
        .filter(|l| l.contains(" hash="))
        .map(str::to_owned)
        .collect()
}

#[test]
fn mirror_kernels_are_split_into_parallel_halves() {
    for (kernel, split_summary) in [
        (
            "tests/kernels/mirror.pk",
            "band 1: depth 1, 1 member, permutable, parallel members [0]",
        ),
        (
            "tests/kernels/mirror-rows.pk",
            "band 1: depth 0, 2 members, permutable, parallel members [0, 1]",
        ),
    ] {
        let out = polyc(&["schedule", kernel, "--iss"]);
        let notes = String::from_utf8_lossy(&out.stderr);
        let summary = String::from_utf8_lossy(&out.stdout);
        assert!(notes.contains("index-set splitting: applied"), "{notes}");
        assert!(summary.contains(split_summary), "{summary}");
        let without = polyc(&["schedule", kernel]);
        assert!(!String::from_utf8_lossy(&without.stderr).contains("index-set"));
    }
}

#[test]
fn split_mirror_kernels_compute_the_interpreters_outputs() {
    let cases: [(&str, &[&str]); 2] = [
        ("tests/kernels/mirror.pk", &["T=1", "T=4"]),
        ("tests/kernels/mirror-rows.pk", &["M=3"]),
    ];
    for (kernel, fixed) in cases {
        // One element depends on nothing else: nothing to split.
        for (size, split) in [("N=1", false), ("N=2", true), ("N=7", true), ("N=50", true)] {
            for f in fixed {
                let defines = ["-D", size, "-D", f];
                let mut interp = vec!["run", kernel];
                interp.extend(defines);
                let mut compiled = vec!["run", kernel, "--target", "cpu", "--iss"];
                compiled.extend(defines);
                let mut schedule = vec!["schedule", kernel, "--iss"];
                schedule.extend(defines);
                let notes = String::from_utf8_lossy(&polyc(&schedule).stderr).into_owned();
                assert_eq!(
                    notes.contains("index-set splitting: applied"),
                    split,
                    "{notes}"
                );
                let expected = checksums(&passing(&interp));
                assert!(!expected.is_empty());
                assert_eq!(
                    checksums(&passing(&compiled)),
                    expected,
                    "{kernel} {size} {f}"
                );
            }
        }
    }
}
