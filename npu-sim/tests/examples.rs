//! The hand-written programs of `examples/npu/`: they assemble, run, and compute the right values.

use npu_sim::{assemble, run, Machine, TensorData};
use std::collections::HashMap;

fn example(name: &str) -> String {
    let path = format!("{}/../examples/npu/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn vadd_adds() {
    let p = assemble(&example("vadd.npu")).unwrap();
    let m = Machine::preset("ascend-like").unwrap();
    let x: Vec<f64> = (0..16384).map(|i| (i % 100) as f64 * 0.25).collect();
    let y: Vec<f64> = (0..16384).map(|i| -((i % 7) as f64)).collect();
    let inputs = HashMap::from([
        (
            "x".to_string(),
            TensorData::from_values(npu_sim::program::DType::F16, &[16384], &x),
        ),
        (
            "y".to_string(),
            TensorData::from_values(npu_sim::program::DType::F16, &[16384], &y),
        ),
    ]);
    let r = run(&p, &m, &inputs, 0)
        .unwrap_or_else(|d| panic!("{}", d.render("vadd.npu", &example("vadd.npu"))));
    let z = r.outputs[0].1.values();
    for i in 0..16384 {
        assert_eq!(z[i], x[i] + y[i], "element {i}");
    }
    println!("{}", r.report);
}
