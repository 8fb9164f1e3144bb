//! A new scheduling heuristic in a few lines: Pluto's search with an objective that keeps
//! each statement's innermost loop innermost (its coefficient is avoided in outer
//! hyperplanes, which keeps stride-1 accesses in the inner loop), then Pluto's own terms.
//!
//! Run: `cargo run -p scheduler --example custom_objective [FILE.pk]` (default: gemm).

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::ilp::LinExpr;
use scheduler::pluto::{Objective, Pluto, PlutoObjective, Vars};
use scheduler::{Options, Problem, Scheduler};
use std::collections::BTreeMap;

/// Minimise first the use of innermost iterators, then what Pluto minimises.
struct KeepInnermost;

impl Objective for KeepInnermost {
    fn terms(&self, vars: &Vars<'_>) -> Vec<LinExpr> {
        let innermost: Vec<LinExpr> = vars
            .statements()
            .filter(|&s| vars.n_iterators(s) > 1)
            .map(|s| vars.magnitude(s, vars.n_iterators(s) - 1))
            .collect();
        let mut terms = vec![LinExpr::sum(&innermost)];
        terms.extend(PlutoObjective.terms(vars));
        terms
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let default = format!(
        "{}/../examples/polybench/gemm.pk",
        env!("CARGO_MANIFEST_DIR")
    );
    let path = std::env::args().nth(1).unwrap_or(default);
    let kernels = frontend::compile(&frontend::read_source(&path)?)
        .map_err(|_| format!("{path} does not compile (run `polyc check {path}`)"))?;
    let program = Program::build(&Ctx::default(), &kernels[0], &BTreeMap::new())?;
    let deps = Dependences::compute(&program)?;
    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Options::default(),
    };
    for (name, pluto) in [
        ("pluto", Pluto::default()),
        ("keep-innermost", Pluto::with_objective(KeepInnermost)),
    ] {
        let schedule = pluto.affine(&problem)?;
        println!("{name}: {}", schedule.to_union_map(&program)?);
        // Any `Scheduler` hands back an isl schedule tree.
        let _tree = pluto.schedule(&problem)?;
    }
    Ok(())
}
