//! Properties on concrete instances (small fixed parameters):
//! - any topological order of the dependence graph keeps the results bit-identical,
//!   and the checker accepts it written as a union map;
//! - moving the sink of a random dependence just before its source is always rejected.

use frontend::ir::Kernel;
use poly::deps::Dependences;
use poly::interp::{Interpreter, Memory, ParamValues};
use poly::isl::Ctx;
use poly::isl::End;
use poly::model::Program;
use poly::order::{instance_text, AnySchedule};
use proptest::prelude::*;
use scheduler::legality::{check, Rule, Violation};
use std::collections::{BTreeMap, HashMap};

/// A kernel with its instances in the original order and its dependences between them.
struct Concrete {
    kernel: Kernel,
    values: ParamValues,
    program: Program,
    deps: Dependences,
    /// Every instance, in the original order.
    instances: Vec<(usize, Vec<i64>)>,
    /// Dependences as (source, sink) indices into `instances`.
    edges: Vec<(usize, usize)>,
}

fn concrete(name: &str, params: &[(&str, i64)]) -> Concrete {
    let path = format!("{}/../examples/{name}.pk", env!("CARGO_MANIFEST_DIR"));
    let file = frontend::read_source(&path).unwrap();
    let kernel = frontend::compile(&file).unwrap().remove(0);
    let fixed: BTreeMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let values = ParamValues::resolve(&kernel, &fixed, &BTreeMap::new()).unwrap();
    let program = Program::build(&Ctx::default(), &kernel, &fixed).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    let instances = Interpreter::new(&kernel, &values)
        .unwrap()
        .original_instances();
    let index: HashMap<(usize, Vec<i64>), usize> = instances
        .iter()
        .cloned()
        .enumerate()
        .map(|(k, inst)| (inst, k))
        .collect();
    let stmt = |tuple: String| {
        program
            .statements
            .iter()
            .position(|s| s.tuple == tuple)
            .unwrap()
    };
    let mut edges = Vec::new();
    for map in deps.validity(false).unwrap().maps().unwrap() {
        let source = stmt(map.tuple_name_of(End::Source));
        let sink = stmt(map.tuple_name_of(End::Sink));
        let n = program.statements[source].iterators.len();
        for mut pair in map.wrap().unwrap().points().unwrap() {
            let sink_point = pair.split_off(n);
            edges.push((index[&(source, pair)], index[&(sink, sink_point)]));
        }
    }
    assert!(!edges.is_empty(), "{name} has no dependences");
    Concrete {
        kernel,
        values,
        program,
        deps,
        instances,
        edges,
    }
}

impl Concrete {
    /// A topological order of the dependence graph (as indices into `instances`), the
    /// instance taken at step `n` among those ready chosen by `choices[n % len]`.
    fn topological_order(&self, choices: &[prop::sample::Index]) -> Vec<usize> {
        let mut preds = vec![0usize; self.instances.len()];
        let mut succs = vec![Vec::new(); self.instances.len()];
        for &(s, t) in &self.edges {
            preds[t] += 1;
            succs[s].push(t);
        }
        let mut ready: Vec<usize> = (0..preds.len()).filter(|&k| preds[k] == 0).collect();
        let mut order = Vec::new();
        while !ready.is_empty() {
            let choice = choices[order.len() % choices.len()].index(ready.len());
            let k = ready.swap_remove(choice);
            order.push(k);
            for &t in &succs[k] {
                preds[t] -= 1;
                if preds[t] == 0 {
                    ready.push(t);
                }
            }
        }
        assert_eq!(order.len(), self.instances.len(), "dependence cycle");
        order
    }

    /// The order as a union map giving each instance its position.
    fn as_schedule(&self, order: &[usize]) -> AnySchedule {
        let pieces: Vec<String> = order
            .iter()
            .enumerate()
            .map(|(time, &k)| {
                let (stmt, point) = &self.instances[k];
                let tuple = &self.program.statements[*stmt].tuple;
                format!("{} -> [{time}]", instance_text(tuple, point))
            })
            .collect();
        let text = format!("{{ {} }}", pieces.join("; "));
        AnySchedule::Relation(self.program.ctx.union_map(&text).unwrap())
    }

    fn run(&self, order: &[usize]) -> Memory {
        let interp = Interpreter::new(&self.kernel, &self.values).unwrap();
        let mut memory = Memory::random(&self.kernel, &self.values, 3).unwrap();
        let instances = order.iter().map(|&k| self.instances[k].clone());
        interp.run_instances(&mut memory, instances).unwrap();
        memory
    }
}

fn kernels() -> Vec<Concrete> {
    vec![
        concrete("polybench/gemm", &[("NI", 2), ("NJ", 3), ("NK", 2)]),
        concrete("polybench/jacobi-1d", &[("TSTEPS", 2), ("N", 5)]),
        concrete("polybench/seidel-2d", &[("TSTEPS", 2), ("N", 4)]),
        concrete("polybench/trisolv", &[("N", 4)]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn topological_orders_keep_results_and_are_legal(
        choices in prop::collection::vec(any::<prop::sample::Index>(), 1..64)
    ) {
        for c in kernels() {
            let original: Vec<usize> = (0..c.instances.len()).collect();
            let order = c.topological_order(&choices);
            prop_assert!(c.run(&order).bit_identical(&c.run(&original)), "{}", c.kernel.name);
            let report = check(&c.program, &c.deps, &c.as_schedule(&order), &Default::default())
                .unwrap();
            prop_assert!(report.is_legal(), "{}:\n{report}", c.kernel.name);
        }
    }

    #[test]
    fn moving_a_sink_before_its_source_is_rejected(pick in any::<prop::sample::Index>()) {
        for c in kernels() {
            let (source, sink) = c.edges[pick.index(c.edges.len())];
            let mut order: Vec<usize> = (0..c.instances.len()).filter(|&k| k != sink).collect();
            let at = order.iter().position(|&k| k == source).unwrap();
            order.insert(at, sink);
            let report = check(&c.program, &c.deps, &c.as_schedule(&order), &Default::default())
                .unwrap();
            prop_assert!(!report.is_legal(), "{}: {:?} before {:?} accepted", c.kernel.name,
                c.instances[sink], c.instances[source]);
            let reversed = |v: &Violation| matches!(v, Violation::Dependence(d) if matches!(d.rule, Rule::Order(_)));
            prop_assert!(report.violations.iter().all(reversed), "{report}");
        }
    }
}
