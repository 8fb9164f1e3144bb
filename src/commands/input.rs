//! What most subcommands share: reading a kernel file, choosing a kernel, `-D` parameters,
//! and lifting it into the polyhedral model.

use crate::error::CliError;
use frontend::ir::Kernel;
use poly::isl::Ctx;
use poly::model::Program;
use std::collections::BTreeMap;
use std::io::IsTerminal;

/// Arguments naming a kernel: the file, which kernel in it, fixed parameter values.
#[derive(clap::Args, Debug, Clone)]
pub struct KernelArgs {
    /// The kernel file (`.pk`), or `-` for standard input.
    pub file: String,
    /// Which kernel of the file (needed when it holds several).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Fixes a parameter, e.g. `-D N=64` (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub define: Vec<(String, i64)>,
}

pub(crate) fn parse_define(text: &str) -> Result<(String, i64), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, found `{text}`"))?;
    let value = value
        .trim()
        .parse::<i64>()
        .map_err(|e| format!("the value of `{name}` is not an integer: {e}"))?;
    Ok((name.trim().to_owned(), value))
}

impl KernelArgs {
    /// The `-D` values by name.
    pub fn defines(&self) -> BTreeMap<String, i64> {
        self.define.iter().cloned().collect()
    }

    /// Reads, parses and checks the file and returns the chosen kernel; diagnostics are
    /// rendered to standard error.
    pub fn load_kernel(&self) -> Result<Kernel, CliError> {
        let file = frontend::read_source(&self.file).map_err(|message| {
            eprint!("{message}");
            CliError::User(format!("could not read `{}`", self.file))
        })?;
        let mut kernels = frontend::compile(&file).map_err(|diags| {
            eprint!("{}", diags.render(&file, std::io::stderr().is_terminal()));
            CliError::User(format!("`{}` has errors", file.name))
        })?;
        let names = || {
            kernels
                .iter()
                .map(|k| k.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.kernel {
            Some(name) => match kernels.iter().position(|k| &k.name == name) {
                Some(k) => Ok(kernels.swap_remove(k)),
                None => Err(CliError::User(format!(
                    "`{}` has no kernel `{name}` (it has: {})",
                    file.name,
                    names()
                ))),
            },
            None if kernels.len() == 1 => Ok(kernels.remove(0)),
            None => Err(CliError::User(format!(
                "`{}` holds several kernels ({}): choose one with --kernel",
                file.name,
                names()
            ))),
        }
    }

    /// Loads the kernel and lifts it into the polyhedral model with the `-D` values fixed.
    pub fn load_program(&self) -> Result<Program, CliError> {
        let kernel = self.load_kernel()?;
        let ctx = Ctx::default();
        Program::build(&ctx, &kernel, &self.defines()).map_err(model_error)
    }
}

/// Maps a model-building error to the CLI's error classes.
pub fn model_error(err: poly::model::ModelError) -> CliError {
    match err {
        poly::model::ModelError::Isl(e) => isl_error(e),
        other => CliError::User(other.to_string()),
    }
}

/// Maps an isl failure: a budget overrun is the input's fault (too hard), anything else ours.
pub fn isl_error(err: poly::isl::IslError) -> CliError {
    match err {
        e @ poly::isl::IslError::OperationLimit(_) => CliError::User(e.to_string()),
        e => CliError::Internal(e.to_string()),
    }
}
