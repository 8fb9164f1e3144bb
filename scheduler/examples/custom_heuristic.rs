//! A new scheduling heuristic in a few lines: Pluto's search with a heuristic that keeps
//! each statement's innermost loop innermost (its coefficient is avoided in outer
//! hyperplanes, which keeps stride-1 accesses in the inner loop), then Pluto's own terms.
//!
//! Run: `cargo run -p scheduler --example custom_heuristic [FILE.pk]` (default: gemm).

use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use scheduler::ilp::LinExpr;
use scheduler::pluto::{Heuristic, Pluto, PlutoHeuristic, RowIlp};
use scheduler::{Options, Problem, ScheduleError, Scheduler};
use std::collections::BTreeMap;

/// Minimise first the use of innermost iterators, then what Pluto minimises.
struct KeepInnermost;

impl Heuristic for KeepInnermost {
    fn name(&self) -> &'static str {
        "keep-innermost"
    }

    fn hyperplane(&self, ilp: &mut RowIlp<'_>) -> Result<Vec<LinExpr>, ScheduleError> {
        let innermost: Vec<LinExpr> = ilp
            .statements()
            .filter(|&s| ilp.n_iterators(s) > 1)
            .map(|s| ilp.magnitude(s, ilp.n_iterators(s) - 1))
            .collect();
        let mut terms = vec![LinExpr::sum(&innermost)];
        terms.extend(PlutoHeuristic.hyperplane(ilp)?);
        Ok(terms)
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
    for pluto in [Pluto::default(), Pluto::with_heuristic(KeepInnermost)] {
        let schedule = pluto.affine(&problem)?;
        println!("{}: {}", pluto.name(), schedule.to_union_map(&program)?);
        // Any `Scheduler` hands back an isl schedule tree.
        let _tree = pluto.schedule(&problem)?;
    }
    Ok(())
}
