//! What the NPU back end's differential tests share: a compiled program run in the simulator
//! (strict semantics, race detector) and the interpreter on the same random inputs, with the
//! timing oracle's machines agreeing on the simulator's values.

use codegen::npu::{simulate, Compiled};
use frontend::ir::Kernel;
use frontend::SourceFile;
use npu_sim::Machine;
use poly::interp::{Interpreter, Memory, ParamValues};
use std::collections::BTreeMap;

/// The first kernel of `text` (a failure shows the text).
pub fn kernel(text: &str) -> Kernel {
    frontend::compile(&SourceFile::new("k.pk", text.to_string()))
        .unwrap_or_else(|e| panic!("{e:?}\n{text}"))
        .remove(0)
}

/// The text of `examples/NAME`.
// (not every test file reads an example)
#[allow(dead_code)]
pub fn example(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Every parameter's value: the kernel's defaults with `sizes` overriding them.
// (not every test file sizes kernels this way)
#[allow(dead_code)]
pub fn sizes_of(k: &Kernel, sizes: &[(&str, i64)]) -> (ParamValues, BTreeMap<String, i64>) {
    let fixed: BTreeMap<String, i64> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let params = ParamValues::resolve(k, &fixed, &BTreeMap::new()).unwrap();
    let all = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
    (params, all)
}

/// The interpreter's memory and the simulator's after running `compiled` on the same random
/// inputs (seed 7); the timing oracle must agree on `oracle` other machines. `at` names the
/// case in failure messages.
// (not every test file runs programs)
#[allow(dead_code)]
pub fn interpreted_and_simulated(
    k: &Kernel,
    params: &ParamValues,
    compiled: &Compiled,
    m: &Machine,
    oracle: usize,
    at: &str,
) -> (Memory, Memory) {
    let mut memory = Memory::random(k, params, 7).unwrap();
    let sim = simulate(compiled, k, &memory, m)
        .unwrap_or_else(|e| panic!("{at}: {e}\n{}", npu_sim::print(&compiled.program)));
    let inputs = codegen::npu::inputs(k, &memory).unwrap();
    Interpreter::new(k, params)
        .unwrap()
        .run_original(&mut memory)
        .unwrap();
    let report = npu_sim::oracle::check_timing(
        &compiled.program,
        m,
        &inputs,
        1,
        npu_sim::Semantics::Strict,
        oracle,
    );
    assert!(report.agreed(), "{at}: timing oracle: {report:?}");
    (memory, sim.memory)
}

/// The largest normwise error of any output of `k`: the largest difference over the largest
/// magnitude of the interpreter's values.
// (not every test file runs programs)
#[allow(dead_code)]
pub fn worst_error(k: &Kernel, want: &Memory, got: &Memory) -> f64 {
    let mut worst: f64 = 0.0;
    for array in k.arrays.iter().filter(|a| a.role.is_output()) {
        let want = want.array(&array.name).unwrap().values();
        let got = got.array(&array.name).unwrap().values();
        let scale = want
            .iter()
            .fold(0.0f64, |a, v| a.max(v.abs()))
            .max(f64::MIN_POSITIVE);
        let err = (got.iter().zip(want)).fold(0.0f64, |a, (g, w)| a.max((g - w).abs())) / scale;
        worst = worst.max(err);
    }
    worst
}
