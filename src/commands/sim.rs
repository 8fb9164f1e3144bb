//! `polyc sim`: run a `.npu` program on the simulated NPU.

use crate::error::CliError;
use npu_sim::{Machine, Program, Semantics, TensorData};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Arguments of `polyc sim`.
#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// The program (`.npu` assembly), or `-` for standard input.
    pub program: String,
    /// A preset (ascend-like, ascend-like-halfgm, ub-only, mini) or a machine TOML file.
    #[arg(long, default_value = "ascend-like")]
    pub machine: String,
    /// Directory with an `NAME.npy` per input tensor; inputs without a file get seeded random
    /// values.
    #[arg(long)]
    pub inputs: Option<PathBuf>,
    /// Directory to write every output tensor to, as `NAME.npy`.
    #[arg(long)]
    pub outputs: Option<PathBuf>,
    /// Print the full report (pipes, paths, buffers, roofline).
    #[arg(long)]
    pub report: bool,
    /// Write the timeline in Chrome trace-event JSON (opens in Perfetto).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The relaxed (teaching) semantics: counting flags, a `set_flag` drains its pipe, every
    /// pipe in program order (no `barrier` needed between dependent instructions of one pipe).
    #[arg(long)]
    pub relaxed: bool,
    /// Also run on N machines with every latency, bandwidth and start-up scaled by up to 10x
    /// either way: the verdict and every output bit must be the same on all of them.
    #[arg(long, value_name = "N")]
    pub check_timing: Option<usize>,
}

/// A `.npu` program given on the command line, assembled, and the machine it is for.
pub(super) struct Loaded {
    /// Its name in diagnostics (the path, or `<stdin>`).
    pub name: String,
    /// Its text.
    pub source: String,
    /// The program.
    pub program: Program,
    /// The machine.
    pub machine: Machine,
}

/// Reads and assembles `program` (a path, or `-` for standard input) and loads `machine`;
/// a program that does not assemble is the user's error, rendered with its place.
pub(super) fn load(program: &str, machine: &str) -> Result<Loaded, CliError> {
    let (name, source) = read_source(program)?;
    let program =
        npu_sim::assemble(&source).map_err(|d| CliError::User(d.render(&name, &source)))?;
    let machine = Machine::load(machine).map_err(|e| CliError::User(e.to_string()))?;
    Ok(Loaded {
        name,
        source,
        program,
        machine,
    })
}

/// Runs `polyc sim`.
pub fn run(args: &SimArgs) -> Result<(), CliError> {
    let Loaded {
        name,
        source,
        program,
        machine,
    } = load(&args.program, &args.machine)?;
    let inputs = read_inputs(&program, args.inputs.as_deref())?;
    let semantics = match args.relaxed {
        true => Semantics::Relaxed,
        false => Semantics::Strict,
    };
    let timing_check = (args.check_timing).map(|n| {
        npu_sim::oracle::check_timing(&program, &machine, &inputs, args.seed, semantics, n)
    });
    if let Some(outcome) = timing_check.as_ref().filter(|o| !o.agreed()) {
        return Err(CliError::Internal(format!(
            "{outcome}: the simulator's verdict depends on the timing"
        )));
    }
    let run = match npu_sim::run_timed(&program, &machine, &inputs, args.seed, semantics) {
        Ok(run) => run,
        Err(stopped) => {
            // A run that stops on a race or a fault still has its timeline: write the trace,
            // so that the failure can be looked at.
            if let (Some(path), Some((insts, timeline))) = (&args.trace, &stopped.timed) {
                write_trace(path, insts, timeline, &source)?;
            }
            if let Some(outcome) = &timing_check {
                eprintln!("{outcome}");
            }
            return Err(CliError::User(stopped.diagnostic.render(&name, &source)));
        }
    };
    if let Some(dir) = &args.outputs {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::User(format!("{}: {e}", dir.display())))?;
    }
    for tensor in &run.unwritten_outputs {
        eprintln!("warning: output `{tensor}` was never written (its values are zeros)");
    }
    for (tensor, data) in &run.outputs {
        let (sum, hash) = data.checksum();
        println!(
            "{tensor}: {}{:?} sum={sum:.6} fnv1a={hash:016x}",
            data.dtype, data.shape
        );
        if let Some(dir) = &args.outputs {
            data.write_npy(&dir.join(format!("{tensor}.npy")))
                .map_err(|e| CliError::User(e.to_string()))?;
        }
    }
    if args.report {
        print!("{}", run.report);
    } else {
        println!(
            "cycles {} ({:.1}% of the roofline bound {:.0})",
            run.report.cycles,
            100.0 * run.report.fraction(),
            run.report.roofline
        );
    }
    if let Some(outcome) = &timing_check {
        println!("{outcome}");
    }
    if let Some(path) = &args.trace {
        write_trace(path, &run.insts, &run.timeline, &source)?;
    }
    Ok(())
}

/// Writes the Chrome trace of a timeline to `path`.
pub(crate) fn write_trace(
    path: &Path,
    insts: &[Vec<npu_sim::expand::Inst>],
    timeline: &npu_sim::timing::Timeline,
    source: &str,
) -> Result<(), CliError> {
    let trace = npu_sim::trace::chrome_trace(insts, timeline, source);
    std::fs::write(path, trace).map_err(|e| CliError::User(format!("{}: {e}", path.display())))
}

/// The name and text of a `.npu` program given as a path, or `-` for standard input.
fn read_source(arg: &str) -> Result<(String, String), CliError> {
    if arg == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .map_err(|e| CliError::User(format!("<stdin>: {e}")))?;
        return Ok(("<stdin>".into(), s));
    }
    let s = std::fs::read_to_string(arg).map_err(|e| CliError::User(format!("{arg}: {e}")))?;
    Ok((arg.to_string(), s))
}

fn read_inputs(p: &Program, dir: Option<&Path>) -> Result<HashMap<String, TensorData>, CliError> {
    let mut inputs = HashMap::new();
    let Some(dir) = dir else { return Ok(inputs) };
    if !dir.is_dir() {
        return Err(CliError::User(format!(
            "{}: not a directory",
            dir.display()
        )));
    }
    for t in p.tensors.iter().filter(|t| t.dir.is_input()) {
        let path = dir.join(format!("{}.npy", t.name));
        if path.exists() {
            let data =
                TensorData::read_npy(&path, t.dtype).map_err(|e| CliError::User(e.to_string()))?;
            inputs.insert(t.name.clone(), data);
        }
    }
    Ok(inputs)
}
