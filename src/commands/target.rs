//! `polyc target`: the target description the optimizer and the back ends read.

use crate::error::CliError;
use scheduler::target::Target;

/// Arguments of `polyc target`.
#[derive(clap::Args, Debug)]
pub struct TargetArgs {
    /// `host` (this machine's CPU, as probed), an NPU preset of the simulator
    /// (`ascend-like`, `ascend-like-halfgm`, `ub-only`, `mini`) or an NPU machine file.
    #[arg(default_value = "host")]
    name: String,
}

/// Runs `polyc target`.
pub fn run(args: &TargetArgs) -> Result<(), CliError> {
    let target = match args.name.as_str() {
        "host" => Target::host().clone(),
        name => Target::npu(name).map_err(|e| CliError::User(e.to_string()))?,
    };
    print!("{target}");
    Ok(())
}
