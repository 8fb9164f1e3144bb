//! Shared by the scheduler's integration tests: load an example, check a schedule.

#![allow(dead_code)]

use poly::deps::Dependences;
use poly::isl::{Ctx, Schedule};
use poly::model::Program;
use scheduler::legality::tree_order::unordered;
use scheduler::transform::{Tree, TreeDeps};
use scheduler::{Options, Problem};
use std::collections::BTreeMap;

/// An example program with its dependences.
pub struct Loaded {
    pub program: Program,
    pub deps: Dependences,
}

impl Loaded {
    pub fn problem(&self) -> Problem<'_> {
        Problem {
            program: &self.program,
            deps: &self.deps,
            options: Options::default(),
        }
    }
}

/// Loads `examples/<name>.pk` with its parameters symbolic.
pub fn load(name: &str) -> Loaded {
    load_path(&format!(
        "{}/../examples/{name}.pk",
        env!("CARGO_MANIFEST_DIR")
    ))
}

pub fn load_path(path: &str) -> Loaded {
    let file = frontend::read_source(path).unwrap();
    let kernels = frontend::compile(&file).unwrap_or_else(|_| panic!("{path} compiles"));
    let program = Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new()).unwrap();
    let deps = Dependences::compute(&program).unwrap();
    Loaded { program, deps }
}

/// Every example kernel file.
pub fn all_examples() -> Vec<String> {
    let dir = format!("{}/../examples", env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pk"))
        .map(|p| p.display().to_string())
        .collect();
    out.sort();
    out
}

/// Panics unless every validity dependence goes lexicographically forward in the flat map.
pub fn assert_legal(loaded: &Loaded, schedule: &Schedule) {
    let tree = Tree::from_schedule(schedule).unwrap();
    let deps = TreeDeps::of(&loaded.problem()).unwrap();
    let wrong = unordered(&tree, &deps.validity).unwrap();
    assert!(wrong.is_none(), "{}", wrong.unwrap());
    let flat = schedule.map().unwrap();
    let forward = flat.lex_lt_union_map(&flat).unwrap();
    assert!(deps.validity.is_subset(&forward).unwrap());
}
