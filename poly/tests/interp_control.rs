//! Control flow of the original order, from kernel source text: reverse loops, steps, guards,
//! quasi-affine bounds, typed arithmetic. Every run also checks that `run_instances` over the
//! original enumeration gives bit-identical memory.

use frontend::ir::Kernel;
use half::f16;
use poly::interp::{Interpreter, Memory, ParamValues};
use std::collections::BTreeMap;

fn compile(source: &str) -> Kernel {
    let file = frontend::SourceFile::new("test.pk", source);
    match frontend::compile(&file) {
        Ok(mut kernels) => kernels.remove(0),
        Err(d) => panic!("{d:?}"),
    }
}

/// Runs `source` on seeded random inputs both ways, checks they agree, returns the memory.
fn run(source: &str) -> Memory {
    let kernel = compile(source);
    let params = ParamValues::resolve(&kernel, &BTreeMap::new(), &BTreeMap::new()).unwrap();
    let interp = Interpreter::new(&kernel, &params).unwrap();
    let mut walked = Memory::random(&kernel, &params, 3).unwrap();
    let mut listed = walked.clone();
    interp.run_original(&mut walked).unwrap();
    let instances = interp.original_instances();
    assert_eq!(instances.len() as u64, interp.instance_count());
    interp.run_instances(&mut listed, instances).unwrap();
    assert!(walked.bit_identical(&listed));
    walked
}

fn ints(memory: &Memory, name: &str) -> Vec<i64> {
    memory
        .array(name)
        .unwrap()
        .values()
        .iter()
        .map(|&v| v as i64)
        .collect()
}

/// A kernel recording the order in which `LOOP` visits `i`: `T[i]` = visit number.
fn visit_order(header: &str) -> Vec<i64> {
    let source = format!(
        "kernel order() -> (T: i32[N]) params N = 10 {{
           let c: i32;
           {header} {{ c += 1; T[i] = c; }}
         }}"
    );
    ints(&run(&source), "T")
}

#[test]
fn forward_reverse_and_step() {
    assert_eq!(
        visit_order("for i in 0..N"),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    );
    assert_eq!(
        visit_order("for i in (0..N).rev()"),
        [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]
    );
    assert_eq!(
        visit_order("for i in 1..N step 3"),
        [0, 1, 0, 0, 2, 0, 0, 3, 0, 0]
    );
    assert_eq!(
        visit_order("for i in (1..N).rev() step 3"),
        [0, 3, 0, 0, 2, 0, 0, 1, 0, 0]
    );
    assert_eq!(visit_order("for i in 4..2"), [0; 10]);
}

#[test]
fn guards_and_else() {
    let memory = run("kernel g() -> (T: i32[N]) params N = 10 {
        for i in 0..N {
          if i % 3 == 0 or i >= 8 { T[i] = 1; }
          else if not (i < 4) { T[i] = 2; }
          else { T[i] = 3; }
        }
      }");
    assert_eq!(ints(&memory, "T"), [1, 3, 3, 1, 2, 2, 1, 2, 1, 1]);
}

#[test]
fn quasi_affine_bounds() {
    let memory = run("kernel b() -> (T: i32[N], U: i32[N]) params N = 9 {
        for i in 0..N {
          for j in max(0, i - 2)..min(N, i + 3) { T[i] += 1; }
          for j in floor(i / 2)..ceil((i + 5) / 3) step 2 { U[i] += j; }
        }
      }");
    let n = 9i64;
    let t: Vec<i64> = (0..n)
        .map(|i| (0.max(i - 2)..n.min(i + 3)).count() as i64)
        .collect();
    let u: Vec<i64> = (0..n)
        .map(|i| {
            (i.div_euclid(2)..(i + 5 + 2).div_euclid(3))
                .step_by(2)
                .sum()
        })
        .collect();
    assert_eq!(ints(&memory, "T"), t);
    assert_eq!(ints(&memory, "U"), u);
}

#[test]
fn triangular_imperfect_nest_with_index_values() {
    // Lower triangle: L[i, j] = i - j for j <= i, then row sums.
    let memory = run("kernel t() -> (L: i32[N, N], R: i32[N]) params N = 6 {
        for i in 0..N {
          R[i] = 0;
          for j in 0..i + 1 { L[i, j] = i - j; R[i] += L[i, j]; }
        }
      }");
    let n = 6;
    assert_eq!(
        ints(&memory, "R"),
        (0..n).map(|i| i * (i + 1) / 2).collect::<Vec<i64>>()
    );
    assert_eq!(ints(&memory, "L")[5 * 6..], [5, 4, 3, 2, 1, 0]);
}

#[test]
fn f16_rounds_after_each_operation() {
    let memory = run(
        "kernel h(A: f16[N]) -> (B: f16[N], C: f32[N]) params N = 64 {
        for i in 0..N { B[i] = A[i] * A[i] + A[i] / 3; C[i] = f32(B[i]) * 2; }
      }",
    );
    let a = memory.array("A").unwrap().values();
    let r = |x: f32| f16::from_f32(x).to_f32();
    for (i, &x) in a.iter().enumerate() {
        let x = x as f32;
        let b = r(r(x * x) + r(x / 3.0));
        assert_eq!(memory.array("B").unwrap().values()[i], b as f64, "i = {i}");
        assert_eq!(memory.array("C").unwrap().values()[i], (b * 2.0) as f64);
    }
}

#[test]
fn tensor_expression_reductions() {
    let memory = run(
        "kernel s(X: f32[B, L]) -> (M: f32[B], S: f32[B]) params B = 3, L = 17 {
        M[b] = max(l) X[b, l];
        S[b] = sum(l) X[b, l] - M[b];
      }",
    );
    let x = memory.array("X").unwrap().values();
    for b in 0..3 {
        let row = &x[b * 17..(b + 1) * 17];
        let m = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v as f32));
        let s = row.iter().fold(0f32, |s, &v| s + (v as f32 - m));
        assert_eq!(memory.array("M").unwrap().values()[b], m as f64);
        assert_eq!(memory.array("S").unwrap().values()[b], s as f64);
    }
}
