//! Random token soup inside a `#pragma scop` region never makes the C front end panic: it
//! lowers the region or reports diagnostics.

use frontend::SourceFile;
use proptest::prelude::*;

const WORDS: [&str; 48] = [
    "for", "if", "else", "while", "int", "double", "float", "long", "char", "unsigned", "(", ")",
    "{", "}", "[", "]", ";", "=", "+=", "-=", "*", "+", "-", "/", "%", "<", "<=", ">", "==", "!",
    "&&", "||", "?", ":", ",", "++", "--", "i", "j", "n", "A", "B", "x", "0", "1", "2.5", "sqrt",
    "\"s\"",
];

fn program(body: &[usize]) -> String {
    let body: Vec<&str> = body.iter().map(|&k| WORDS[k % WORDS.len()]).collect();
    format!(
        "static void f(int n, double A[10][10], double B[10], double x)\n{{\n  int i, j;\n#pragma scop\n  {}\n#pragma endscop\n}}\n",
        body.join(" ")
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn random_regions_never_panic(body in proptest::collection::vec(0usize..1000, 0..60)) {
        let text = program(&body);
        let file = SourceFile::new("f.c", text.clone());
        let preprocessed = format!("# 1 \"f.c\"\n{text}");
        let regions = frontend::c::translate(&file, &preprocessed).expect("the pragmas pair");
        prop_assert_eq!(regions.len(), 1);
        if let Err(d) = &regions[0].kernel {
            prop_assert!(!d.list.is_empty());
            let _ = d.render(&file, false);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let file = SourceFile::new("f.c", text.clone());
        let _ = frontend::c::translate(&file, &format!("# 1 \"f.c\"\n{text}"));
    }
}

#[test]
fn a_well_formed_region_lowers() {
    let text = program(&[]).replace(
        "  \n#pragma endscop",
        "  for (i = 0; i < n; i++) B[i] = B[i] * x;\n#pragma endscop",
    );
    let file = SourceFile::new("f.c", text.clone());
    let regions = frontend::c::translate(&file, &format!("# 1 \"f.c\"\n{text}")).unwrap();
    assert!(regions[0].kernel.is_ok(), "{text}");
}
