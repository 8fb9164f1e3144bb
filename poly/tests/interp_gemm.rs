//! gemm (`examples/polybench/gemm.pk`): against a plain Rust triple loop, in reordered instance orders,
//! and with parameters inferred from input files.

use frontend::ir::Kernel;
use poly::interp::{InputFiles, Interpreter, Memory, ParamValues};
use std::collections::BTreeMap;

fn compile(source: &str) -> Kernel {
    let file = frontend::SourceFile::new("test.pk", source);
    match frontend::compile(&file) {
        Ok(mut kernels) => kernels.remove(0),
        Err(d) => panic!("{d:?}"),
    }
}

#[test]
fn gemm_matches_a_triple_loop() {
    let kernel = compile(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/polybench/gemm.pk"
        ))
        .unwrap(),
    );
    let overrides: BTreeMap<String, i64> = [("NI", 7), ("NJ", 5), ("NK", 6)]
        .map(|(n, v)| (n.to_string(), v))
        .into();
    let params = ParamValues::resolve(&kernel, &overrides, &BTreeMap::new()).unwrap();
    let mut memory = Memory::random(&kernel, &params, 42).unwrap();
    let get = |m: &Memory, n: &str| m.array(n).unwrap().values().to_vec();
    let (alpha, beta) = (get(&memory, "alpha")[0], get(&memory, "beta")[0]);
    let (a, b, mut c) = (get(&memory, "A"), get(&memory, "B"), get(&memory, "C"));
    let interp = Interpreter::new(&kernel, &params).unwrap();
    interp.run_original(&mut memory).unwrap();
    for i in 0..7 {
        for j in 0..5 {
            c[i * 5 + j] *= beta;
        }
        for k in 0..6 {
            for j in 0..5 {
                c[i * 5 + j] += alpha * a[i * 6 + k] * b[k * 5 + j];
            }
        }
    }
    assert_eq!(get(&memory, "C"), c);
}

/// gemm at the given sizes with seeded inputs.
fn gemm(ni: i64, nj: i64, nk: i64) -> (Kernel, ParamValues) {
    let kernel = compile(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/polybench/gemm.pk"
        ))
        .unwrap(),
    );
    let overrides: BTreeMap<String, i64> = [("NI", ni), ("NJ", nj), ("NK", nk)]
        .map(|(n, v)| (n.to_string(), v))
        .into();
    let params = ParamValues::resolve(&kernel, &overrides, &BTreeMap::new()).unwrap();
    (kernel, params)
}

#[test]
fn dependence_respecting_reorders_are_bit_identical() {
    let (kernel, params) = gemm(6, 5, 4);
    let interp = Interpreter::new(&kernel, &params).unwrap();
    let original = Memory::random(&kernel, &params, 1).unwrap();
    let mut walked = original.clone();
    interp.run_original(&mut walked).unwrap();

    // Rows i are independent: run them last to first, each in its original order.
    let instances = interp.original_instances();
    let mut rows_reversed = instances.clone();
    rows_reversed.sort_by_key(|(_, iv)| std::cmp::Reverse(iv[0]));
    let mut reordered = original.clone();
    interp.run_instances(&mut reordered, rows_reversed).unwrap();
    assert!(walked.bit_identical(&reordered));

    // Interchanging k and j keeps each C[i, j]'s updates in k order.
    let mut interchanged = instances.clone();
    interchanged.sort_by_key(|(s, iv)| (iv[0], *s, iv.get(2).copied(), iv.get(1).copied()));
    let mut reordered = original.clone();
    interp.run_instances(&mut reordered, interchanged).unwrap();
    assert!(walked.bit_identical(&reordered));

    // Reversing the k order of the reduction changes rounding: not identical, but close.
    let mut k_reversed = instances;
    k_reversed.sort_by_key(|(s, iv)| (iv[0], *s, iv.get(1).map(|k| -k), iv.get(2).copied()));
    let mut reordered = original.clone();
    interp.run_instances(&mut reordered, k_reversed).unwrap();
    let diff = walked.compare(&reordered).unwrap();
    let c = diff.iter().find(|d| d.name == "C").unwrap();
    assert!(c.max_rel < 1e-12, "{c:?}");
}

#[test]
fn parameters_inferred_from_input_files() {
    let (kernel, params) = gemm(3, 4, 5);
    let dir = tempfile::tempdir().unwrap();
    // Write A, B and C through a kernel memory whose arrays all count as outputs.
    let mut as_outputs = kernel.clone();
    for a in &mut as_outputs.arrays {
        a.role = frontend::ir::Role::InOut;
    }
    let given = Memory::random(&as_outputs, &params, 5).unwrap();
    given.save_outputs(dir.path()).unwrap();
    std::fs::remove_file(dir.path().join("alpha.npy")).unwrap();

    let inputs = InputFiles::read_dir(&kernel, dir.path()).unwrap();
    let inferred = ParamValues::resolve(&kernel, &BTreeMap::new(), &inputs.shapes()).unwrap();
    assert_eq!(inferred, params);
    let memory = Memory::load_inputs(&kernel, &inferred, &inputs, 5).unwrap();
    for name in ["A", "B", "C", "beta"] {
        assert_eq!(
            memory.array(name).unwrap().values(),
            given.array(name).unwrap().values()
        );
    }
    // alpha was not given: seeded random, the same as in a fully random memory.
    let random = Memory::random(&kernel, &inferred, 5).unwrap();
    assert_eq!(memory.array("alpha"), random.array("alpha"));
}

/// Not a test: a fixed amount of work (gemm at 256, 16.8 million instances) for measuring the
/// interpreter's speed with a CPU-time profiler, e.g.
/// `perf stat -e task-clock cargo test --release -p poly --test interp_gemm -- --ignored`.
#[test]
#[ignore]
fn gemm_256_workload() {
    let (kernel, params) = gemm(256, 256, 256);
    let interp = Interpreter::new(&kernel, &params).unwrap();
    let mut memory = Memory::random(&kernel, &params, 0).unwrap();
    interp.run_original(&mut memory).unwrap();
}
