//! `polyc bench FILE --target npu`: the kernel compiled for the simulated NPU in several
//! ways (the back end's candidates, its model's choice first), each simulated on random
//! inputs in the strict semantics; cycles, the fraction of the program's roofline, GM
//! traffic and each unit's utilisation side by side, with the model's prediction and how
//! often the model orders two candidates as the simulator does.

use super::input::{choose, defines, read_kernels};
use crate::error::CliError;
use codegen::npu::{candidates, simulate, NpuError};
use poly::interp::{Memory, ParamValues};
use std::collections::BTreeMap;

/// What `bench --target npu` needs of `bench`'s arguments.
pub struct NpuBench<'a> {
    /// The kernel files.
    pub files: &'a [String],
    /// `-D` values.
    pub define: &'a [(String, i64)],
    /// The machine (a preset or a TOML file).
    pub machine: &'a str,
    /// Whether reductions may be reordered.
    pub reorder: bool,
    /// How many candidates to simulate.
    pub candidates: usize,
}

/// Runs `polyc bench --target npu`.
pub fn run(b: &NpuBench) -> Result<(), CliError> {
    let machine = npu_sim::Machine::load(b.machine).map_err(|e| CliError::User(e.to_string()))?;
    let npu = |e: NpuError| match e {
        NpuError::Internal(_) => CliError::Internal(e.to_string()),
        _ => CliError::User(e.to_string()),
    };
    for file in b.files {
        let kernel = choose(
            read_kernels(file, &Default::default())?,
            |k| &k.name,
            None,
            file,
        )?;
        let params = ParamValues::resolve(&kernel, &defines(b.define), &BTreeMap::new())
            .map_err(|e| CliError::User(e.to_string()))?;
        let sizes: BTreeMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
        let found = candidates(&kernel, &sizes, &machine, b.reorder, b.candidates).map_err(npu)?;
        let memory =
            Memory::random(&kernel, &params, 1).map_err(|e| CliError::User(e.to_string()))?;
        println!(
            "{} on `{}` ({} cores): {} candidate(s), the model's choice first",
            kernel.name,
            machine.name,
            machine.cores,
            found.len()
        );
        println!(
            "{:>3}  {:>10}  {:>10}  {:>8}  {:>9}  {:>5} {:>5} {:>5} {:>5} {:>5}  candidate",
            "#",
            "predicted",
            "simulated",
            "roofline",
            "GM MiB",
            "cube",
            "vec",
            "mte1",
            "mte2",
            "mte3"
        );
        let mut pairs = Vec::new();
        for (k, c) in found.iter().enumerate() {
            let run = simulate(&c.compiled, &kernel, &memory, &machine).map_err(npu)?;
            let r = &run.report;
            let util = |pipe: &str| {
                (r.pipes.iter())
                    .find(|p| p.pipe == pipe)
                    .map_or(0.0, |p| 100.0 * p.utilisation)
            };
            println!(
                "{:>3}  {:>10.0}  {:>10}  {:>7.1}%  {:>9.2}  {:>4.0}% {:>4.0}% {:>4.0}% {:>4.0}% {:>4.0}%  {}",
                k + 1,
                c.predicted,
                r.cycles,
                100.0 * r.fraction(),
                r.gm_bytes as f64 / (1024.0 * 1024.0),
                util("M"),
                util("V"),
                util("MTE1"),
                util("MTE2"),
                util("MTE3"),
                c.label
            );
            pairs.push((c.predicted, r.cycles as f64));
        }
        let (agree, total) = ranking_agreement(&pairs);
        if total > 0 {
            println!(
                "the model orders {agree} of {total} candidate pairs as the simulator does ({:.0}%)",
                100.0 * agree as f64 / total as f64
            );
        }
    }
    Ok(())
}

/// Of the pairs of (predicted, simulated) whose simulated cycles differ, how many the
/// prediction orders the same way, and how many there are.
pub fn ranking_agreement(points: &[(f64, f64)]) -> (usize, usize) {
    let (mut agree, mut total) = (0, 0);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if a.1 == b.1 {
                continue;
            }
            total += 1;
            if (a.0 < b.0) == (a.1 < b.1) && a.0 != b.0 {
                agree += 1;
            }
        }
    }
    (agree, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_counted_when_the_simulator_tells_them_apart() {
        // (1, 10) < (2, 20) agree; (3, 15) is between them in simulation, last in prediction
        let points = [(1.0, 10.0), (2.0, 20.0), (3.0, 15.0), (4.0, 15.0)];
        assert_eq!(ranking_agreement(&points), (3, 5));
    }
}
