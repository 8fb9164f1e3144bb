//! Which arrays of known kernels are expanded, and which are refused and why.

use super::expand;
use crate::test_support::{inline, program};
use frontend::ir::Kernel;
use poly::model::Program;
use std::collections::BTreeMap;

/// What expanding `program` reports, one line per new array.
fn expansions(program: &Program) -> String {
    match expand(program, &[], "pc_").unwrap() {
        None => "nothing\n".into(),
        Some((_, done)) => done.iter().map(|e| format!("{e}\n")).collect(),
    }
}

#[test]
fn ludcmp_gives_each_nest_its_own_scalar() {
    expect_test::expect![[r#"
        `w` expanded along (i, j) into `pc_w_0`
        `w` expanded along (i, j) into `pc_w_1`
        `w` expanded along (i) into `pc_w_2`
        `w` expanded along (i) into `pc_w_3`
    "#]]
    .assert_eq(&expansions(&program("polybench/ludcmp.pk")));
}

#[test]
fn doitgen_copies_its_output_row_back_from_the_last_iteration() {
    expect_test::expect![[r#"
        `sum_` expanded along (r, q) into `pc_sum__0`, its final contents copied back from the last iteration
    "#]]
    .assert_eq(&expansions(&program("polybench/doitgen.pk")));
}

#[test]
fn durbin_expands_its_sum_but_not_a_vector_into_a_matrix() {
    // `z` along `k` would be N x N in a kernel of vectors; `alpha` and `beta` carry
    // values from one `k` to the next.
    expect_test::expect![[r#"
        `sum_` expanded along (k) into `pc_sum__0`
    "#]]
    .assert_eq(&expansions(&program("polybench/durbin.pk")));
}

/// Asserts that nothing of the kernel `text` is expanded.
fn nothing_expanded(text: &str) {
    assert_eq!(expansions(&inline(text)), "nothing\n", "{text}");
}

#[test]
fn a_read_of_the_value_from_before_the_region_blocks_expansion() {
    // Every flow stays within an iteration of `i`, but at `i = 0` the read sees `t` as it
    // was before the loop.
    nothing_expanded(
        "kernel k(a: f64[N], b: out f64[N]) params N = 8 {
           let t: f64;
           for i in 0..N { if i > 0 { t = a[i]; } b[i] = t; }
         }",
    );
}

#[test]
fn an_output_written_in_part_per_iteration_is_not_expanded() {
    nothing_expanded(
        "kernel k(a: f64[N, N], c: inout f64[N]) params N = 8 {
           for i in 0..N {
             for j in 0..i { c[j] = a[i, j]; }
             for j in 0..i { c[j] = c[j] + 1.0; }
           }
         }",
    );
}

#[test]
fn the_expanded_kernel_computes_what_the_original_does() {
    use poly::interp::{Interpreter, Memory, ParamValues};
    for example in [
        "polybench/ludcmp.pk",
        "polybench/doitgen.pk",
        "polybench/durbin.pk",
    ] {
        let p = program(example);
        let (kernel, _) = expand(&p, &[], "pc_").unwrap().unwrap();
        let small: BTreeMap<String, i64> = (p.kernel.params.iter())
            .map(|q| (q.name.clone(), 7))
            .collect();
        let run = |k: &Kernel| {
            let params = ParamValues::resolve(k, &small, &BTreeMap::new()).unwrap();
            let mut memory = Memory::random(k, &params, 1).unwrap();
            Interpreter::new(k, &params)
                .unwrap()
                .run_original(&mut memory)
                .unwrap();
            memory
        };
        let (before, after) = (run(&p.kernel), run(&kernel));
        for a in p.kernel.arrays.iter().filter(|a| a.role.is_output()) {
            let values = |m: &Memory| m.array(&a.name).unwrap().values().to_vec();
            assert_eq!(values(&before), values(&after), "{example}: {}", a.name);
        }
    }
}
