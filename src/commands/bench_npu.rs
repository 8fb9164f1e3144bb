//! `polyc bench FILE... --target npu`: each kernel compiled for the simulated NPU in several
//! ways (the back end's candidates, its model's choice first), each simulated on random
//! inputs in the strict semantics; cycles, the fraction of the program's roofline, GM
//! traffic and each unit's utilisation side by side, with the model's prediction and how
//! well the model ranks the candidates as the simulator does (`ranking`), per kernel and
//! over all the kernels.

use super::format::Format;
use super::input::{choose, defines, read_kernels};
use super::ranking::Ranking;
use crate::error::CliError;
use codegen::npu::conv::Offer;
use codegen::npu::{candidates, simulate, NpuError};
use npu_sim::Machine;
use poly::interp::{Memory, ParamValues};
use scheduler::compare::csv_line;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What `bench --target npu` needs of `bench`'s arguments.
pub struct NpuBench<'a> {
    /// The kernel files.
    pub files: &'a [String],
    /// `-D` values.
    pub define: &'a [(String, i64)],
    /// The machine (a preset or a TOML file; `None`: the default).
    pub machine: Option<&'a str>,
    /// Whether reductions may be reordered.
    pub reorder: bool,
    /// How many candidates to simulate.
    pub candidates: usize,
    /// How the results are printed.
    pub format: Format,
    /// Which of a convolution's options are candidates.
    pub offer: Offer,
    /// Every option of `polyc bench`, for the JSON report.
    pub args: &'a super::bench::BenchArgs,
}

/// The pipes whose utilisation is printed, by the simulator's names, with their headings.
const PIPES: [(&str, &str); 5] = [
    ("M", "cube"),
    ("V", "vec"),
    ("MTE1", "mte1"),
    ("MTE2", "mte2"),
    ("MTE3", "mte3"),
];

/// One candidate program, simulated.
struct Row {
    predicted: f64,
    cycles: u64,
    /// The program's roofline over its cycles.
    fraction: f64,
    gm_bytes: u64,
    /// Per pipe of [`PIPES`], its utilisation (0 to 1).
    utilisation: [f64; 5],
    label: String,
}

/// One kernel's candidates, simulated.
struct Bench {
    kernel: String,
    rows: Vec<Row>,
    ranking: Ranking,
}

/// Runs `polyc bench --target npu`.
pub fn run(b: &NpuBench) -> Result<(), CliError> {
    let machine = super::compile::npu_machine(b.machine)?;
    let mut benches = Vec::new();
    if b.format == Format::Csv {
        print!("{}", csv_line(&CSV_HEADER.map(String::from)));
    }
    for file in b.files {
        let bench = bench(b, &machine, file)?;
        match b.format {
            Format::Table => print!("{}", table(&bench, &machine)),
            Format::Csv => print!("{}", csv(&bench, &machine)),
            Format::Json => {}
        }
        benches.push(bench);
    }
    let mut total = Ranking::default();
    benches.iter().for_each(|k| total.add(&k.ranking));
    match b.format {
        Format::Table if benches.len() > 1 => println!(
            "over the {} kernels (pairs within each kernel): {}",
            benches.len(),
            total.describe()
        ),
        Format::Json => {
            let all = json!({
                "machine": machine.name,
                "kernels": benches.iter().map(bench_json).collect::<Vec<_>>(),
                "total": total.json(),
            });
            super::report::Report::new("bench", None, b.args, all).print()?;
        }
        _ => {}
    }
    Ok(())
}

/// The candidates of the kernel in `file`, simulated.
fn bench(b: &NpuBench, machine: &Machine, file: &str) -> Result<Bench, CliError> {
    let npu = |e: NpuError| match e {
        NpuError::Internal(_) => CliError::Internal(e.to_string()),
        _ => CliError::User(format!("{file}: {e}")),
    };
    let kernel = choose(
        read_kernels(file, &Default::default())?,
        |k| &k.name,
        None,
        file,
    )?;
    let params = ParamValues::resolve(&kernel, &defines(b.define), &BTreeMap::new())
        .map_err(|e| CliError::User(e.to_string()))?;
    let sizes: BTreeMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), v)).collect();
    let found =
        candidates(&kernel, &sizes, machine, b.reorder, b.candidates, b.offer).map_err(npu)?;
    let memory = Memory::random(&kernel, &params, 1).map_err(|e| CliError::User(e.to_string()))?;
    let mut rows = Vec::new();
    for c in found {
        let r = simulate(&c.compiled, &kernel, &memory, machine)
            .map_err(npu)?
            .report;
        let util = |pipe: &str| {
            (r.pipes.iter())
                .find(|p| p.pipe == pipe)
                .map_or(0.0, |p| p.utilisation)
        };
        rows.push(Row {
            predicted: c.predicted,
            cycles: r.cycles,
            fraction: r.fraction(),
            gm_bytes: r.gm_bytes,
            utilisation: PIPES.map(|(pipe, _)| util(pipe)),
            label: c.label,
        });
    }
    let points: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.predicted, r.cycles as f64))
        .collect();
    Ok(Bench {
        kernel: kernel.name,
        ranking: Ranking::of(&points),
        rows,
    })
}

/// A kernel's candidates as an aligned table, then its ranking figures.
fn table(k: &Bench, machine: &Machine) -> String {
    let mut out = format!(
        "{} on `{}` ({} cores): {} candidate(s), the model's choice first\n",
        k.kernel,
        machine.name,
        machine.cores,
        k.rows.len()
    );
    let pipes: Vec<String> = PIPES.iter().map(|(_, h)| format!("{h:>5}")).collect();
    out += &format!(
        "{:>3}  {:>10}  {:>10}  {:>8}  {:>9}  {}  candidate\n",
        "#",
        "predicted",
        "simulated",
        "roofline",
        "GM MiB",
        pipes.join(" ")
    );
    for (i, r) in k.rows.iter().enumerate() {
        let util: Vec<String> = (r.utilisation.iter())
            .map(|u| format!("{:>4.0}%", 100.0 * u))
            .collect();
        out += &format!(
            "{:>3}  {:>10.0}  {:>10}  {:>7.1}%  {:>9.2}  {}  {}\n",
            i + 1,
            r.predicted,
            r.cycles,
            100.0 * r.fraction,
            r.gm_bytes as f64 / (1024.0 * 1024.0),
            util.join(" "),
            r.label
        );
    }
    if k.rows.len() > 1 {
        out += &format!("{}\n", k.ranking.describe());
    }
    out
}

/// The columns of the CSV form: a line per candidate.
const CSV_HEADER: [&str; 13] = [
    "kernel",
    "machine",
    "candidate",
    "predicted",
    "simulated",
    "roofline_fraction",
    "gm_bytes",
    "cube",
    "vec",
    "mte1",
    "mte2",
    "mte3",
    "label",
];

/// A kernel's candidates as CSV lines (no header).
fn csv(k: &Bench, machine: &Machine) -> String {
    (k.rows.iter().enumerate())
        .map(|(i, r)| {
            let mut fields = vec![
                k.kernel.clone(),
                machine.name.clone(),
                (i + 1).to_string(),
                format!("{:.0}", r.predicted),
                r.cycles.to_string(),
                format!("{:.4}", r.fraction),
                r.gm_bytes.to_string(),
            ];
            fields.extend(r.utilisation.iter().map(|u| format!("{u:.4}")));
            fields.push(r.label.clone());
            csv_line(&fields)
        })
        .collect()
}

/// A kernel's candidates and ranking figures as JSON.
fn bench_json(k: &Bench) -> Value {
    let rows: Vec<Value> = (k.rows.iter())
        .map(|r| {
            let util: serde_json::Map<String, Value> = (PIPES.iter().zip(&r.utilisation))
                .map(|((_, h), u)| (h.to_string(), json!(u)))
                .collect();
            json!({
                "label": r.label,
                "predicted": r.predicted,
                "simulated": r.cycles,
                "roofline_fraction": r.fraction,
                "gm_bytes": r.gm_bytes,
                "utilisation": util,
            })
        })
        .collect();
    json!({
        "kernel": k.kernel,
        "candidates": rows,
        "ranking": k.ranking.json(),
    })
}
