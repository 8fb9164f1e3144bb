//! Dependences checked against a brute-force oracle on every example.
//!
//! With every parameter fixed to a small value, the oracle walks all statement instances in
//! the original order (the interpreter's enumeration) and records, element by element, the
//! last writer (flow, value-based) and every earlier reader and writer (anti and output,
//! memory-based), the last reader (input dependences, which writes do not kill), and the
//! accesses since the last write (to the next write only). The pairs must be exactly those
//! of the relations isl computes.

use poly::deps::{DepKind, Dependences, Reuse};
use poly::interp::{Interpreter, ParamValues};
use poly::isl::{Ctx, Map, UnionMap};
use poly::model::Program;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// A statement instance: statement index and iteration vector.
type Instance = (usize, Vec<i64>);
/// An array element: array name and index.
type Element = (String, Vec<i64>);
type Pairs = BTreeSet<(Instance, Instance)>;

/// For one access relation with fixed parameters, the element each instance touches.
fn touched(relation: &Map, n_iters: usize) -> HashMap<Vec<i64>, Element> {
    let _analysis = relation.ctx().analysis();
    let array = relation.range().unwrap().tuple_name().unwrap_or_default();
    relation
        .wrap()
        .unwrap()
        .points()
        .unwrap()
        .into_iter()
        .map(|p| {
            (
                p[..n_iters].to_vec(),
                (array.clone(), p[n_iters..].to_vec()),
            )
        })
        .collect()
}

/// Per statement, per read access, the element each instance reads.
fn read_elements(program: &Program) -> Vec<Vec<HashMap<Vec<i64>, Element>>> {
    program
        .statements
        .iter()
        .map(|s| {
            s.reads
                .iter()
                .map(|a| touched(&a.relation, s.iterators.len()))
                .collect()
        })
        .collect()
}

fn oracle(program: &Program, order: &[Instance]) -> BTreeMap<DepKind, Pairs> {
    let reads = read_elements(program);
    let writes: Vec<HashMap<Vec<i64>, Element>> = program
        .statements
        .iter()
        .map(|s| touched(&s.write.relation, s.iterators.len()))
        .collect();
    let mut last_writer: HashMap<Element, Instance> = HashMap::new();
    let mut readers: HashMap<Element, Vec<Instance>> = HashMap::new();
    let mut writers: HashMap<Element, Vec<Instance>> = HashMap::new();
    let mut out: BTreeMap<DepKind, Pairs> =
        DepKind::ALL.iter().map(|k| (*k, Pairs::new())).collect();
    for inst in order {
        let (s, iv) = inst;
        for access in &reads[*s] {
            let e = &access[iv];
            if let Some(w) = last_writer.get(e) {
                out.get_mut(&DepKind::Flow)
                    .unwrap()
                    .insert((w.clone(), inst.clone()));
            }
        }
        let e = &writes[*s][iv];
        for r in readers.get(e).into_iter().flatten().filter(|r| *r != inst) {
            out.get_mut(&DepKind::Anti)
                .unwrap()
                .insert((r.clone(), inst.clone()));
        }
        for w in writers.get(e).into_iter().flatten() {
            out.get_mut(&DepKind::Output)
                .unwrap()
                .insert((w.clone(), inst.clone()));
        }
        for access in &reads[*s] {
            readers
                .entry(access[iv].clone())
                .or_default()
                .push(inst.clone());
        }
        last_writer.insert(e.clone(), inst.clone());
        writers.entry(e.clone()).or_default().push(inst.clone());
    }
    out
}

/// Input dependences: each read instance and the last earlier instance that read the same
/// element (an instance reading an element twice depends on nothing through it).
fn input_oracle(program: &Program, order: &[Instance]) -> Pairs {
    let reads = read_elements(program);
    let mut last_reader: HashMap<Element, Instance> = HashMap::new();
    let mut out = Pairs::new();
    for inst in order {
        let (s, iv) = inst;
        let elements: BTreeSet<&Element> = reads[*s].iter().map(|a| &a[iv]).collect();
        for e in &elements {
            if let Some(r) = last_reader.get(*e) {
                out.insert((r.clone(), inst.clone()));
            }
        }
        for e in elements {
            last_reader.insert(e.clone(), inst.clone());
        }
    }
    out
}

/// Anti and output dependences to the next write only: each write and the accesses of its
/// element since the last write before it (that write included).
fn next_write_oracle(program: &Program, order: &[Instance]) -> Pairs {
    let reads = read_elements(program);
    let writes: Vec<HashMap<Vec<i64>, Element>> = (program.statements.iter())
        .map(|s| touched(&s.write.relation, s.iterators.len()))
        .collect();
    let mut since_write: HashMap<Element, Vec<Instance>> = HashMap::new();
    let mut out = Pairs::new();
    for inst in order {
        let (s, iv) = inst;
        let e = &writes[*s][iv];
        for a in since_write.remove(e).into_iter().flatten() {
            if &a != inst {
                out.insert((a, inst.clone()));
            }
        }
        for access in &reads[*s] {
            let accessed = since_write.entry(access[iv].clone()).or_default();
            if accessed.last() != Some(inst) {
                accessed.push(inst.clone());
            }
        }
        since_write.insert(e.clone(), vec![inst.clone()]);
    }
    out
}

fn isl_pairs(program: &Program, relation: &UnionMap) -> Pairs {
    let index = |tuple: Option<String>| {
        let t = tuple.unwrap_or_default();
        program
            .statements
            .iter()
            .position(|s| s.tuple == t)
            .unwrap()
    };
    let mut pairs = Pairs::new();
    for map in relation.maps().unwrap() {
        let src = index(map.domain().unwrap().tuple_name());
        let dst = index(map.range().unwrap().tuple_name());
        let n = program.statements[src].iterators.len();
        let _analysis = program.ctx.analysis();
        let points = map
            .wrap()
            .unwrap()
            .points()
            .unwrap_or_else(|e| panic!("{e}: enumerating {map}"));
        for p in points {
            pairs.insert(((src, p[..n].to_vec()), (dst, p[n..].to_vec())));
        }
    }
    pairs
}

/// Small parameter values that satisfy the kernel's constraints.
fn small_params(kernel: &frontend::ir::Kernel) -> Option<BTreeMap<String, i64>> {
    let valid = |v: i64| {
        let fixed: BTreeMap<String, i64> =
            kernel.params.iter().map(|p| (p.name.clone(), v)).collect();
        let params = ParamValues::resolve(kernel, &fixed, &BTreeMap::new()).ok()?;
        let instances = Interpreter::new(kernel, &params)
            .ok()?
            .original_instances()
            .len();
        Some((fixed, instances))
    };
    // the oracle pairs every two instances of a statement: deep nests (a convolution's seven
    // loops) take smaller values, so that no example has more than 20,000 instances
    let (first, n) = [5, 6, 7, 9, 12, 16, 20].into_iter().find_map(valid)?;
    if n <= 20_000 {
        return Some(first);
    }
    let mut smaller = [4, 3, 2].into_iter().filter_map(valid);
    Some(
        smaller
            .find(|(_, n)| *n <= 20_000)
            .map_or(first, |(fixed, _)| fixed),
    )
}

fn example_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files = Vec::new();
    for dir in [root.clone(), root.join("polybench")] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "pk") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn dependences_equal_the_brute_force_oracle_on_every_example() {
    let files = example_files();
    assert!(files.len() >= 36, "examples missing: found {}", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let source = frontend::read_source(file.to_str().unwrap()).unwrap();
        let kernel = frontend::compile(&source).unwrap().remove(0);
        let fixed = small_params(&kernel)
            .unwrap_or_else(|| panic!("{}: no small parameters", file.display()));
        // Enumerating every dependence pair takes far more isl operations than computing the
        // relations: give this test's context a large budget.
        let program = Program::build(&Ctx::new(1_000_000_000), &kernel, &fixed).unwrap();
        let start = std::time::Instant::now();
        let deps = match Dependences::compute(&program) {
            Ok(d) => d,
            Err(e) => {
                failures.push(format!(
                    "{}: {e} after {:?}",
                    file.display(),
                    start.elapsed()
                ));
                continue;
            }
        };
        let params = ParamValues::resolve(&kernel, &fixed, &BTreeMap::new()).unwrap();
        let order = Interpreter::new(&kernel, &params)
            .unwrap()
            .original_instances();
        let expected = oracle(&program, &order);
        for kind in DepKind::ALL {
            let got = isl_pairs(&program, deps.of_kind(kind));
            let want = &expected[&kind];
            if &got != want {
                let extra: Vec<_> = got.difference(want).take(3).collect();
                let missing: Vec<_> = want.difference(&got).take(3).collect();
                failures.push(format!(
                    "{} {kind:?}: {} pairs from isl, {} from the oracle; extra {extra:?}; missing {missing:?}",
                    file.display(),
                    got.len(),
                    want.len()
                ));
            }
        }
        let reuse = Reuse::compute(&program).unwrap();
        let apart = [
            ("input", &reuse.input, input_oracle(&program, &order)),
            (
                "next write",
                &reuse.next_write,
                next_write_oracle(&program, &order),
            ),
        ];
        for (name, relation, want) in apart {
            let got = isl_pairs(&program, relation);
            if got != want {
                let extra: Vec<_> = got.difference(&want).take(3).collect();
                let missing: Vec<_> = want.difference(&got).take(3).collect();
                failures.push(format!(
                    "{} {name}: extra {extra:?}; missing {missing:?}",
                    file.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
