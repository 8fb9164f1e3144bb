//! What most subcommands share: reading a kernel file (the kernel language, or the
//! `#pragma scop` regions of a C file), choosing a kernel, `-D` parameters, and lifting
//! kernels into the polyhedral model with their dependences. Every command loads kernels
//! through here.

use crate::error::CliError;
use frontend::c::cpp::Cpp;
use frontend::ir::Kernel;
use frontend::{Diagnostics, SourceFile};
use poly::deps::{Dependences, FlowPrecision};
use poly::isl::Ctx;
use poly::model::Program;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::OnceLock;

/// How a C file (`.c`) is preprocessed before its `#pragma scop` regions are read.
#[derive(clap::Args, serde::Serialize, Debug, Clone, Default)]
pub struct CArgs {
    /// For a C file: an include directory of the preprocessor (repeatable).
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<String>,
    /// For a C file: a macro the preprocessor defines, `NAME` or `NAME=VALUE` (repeatable;
    /// what `-D` is to a C compiler, since `-D` fixes parameters here).
    #[arg(long = "macro", value_name = "NAME[=VALUE]")]
    pub macros: Vec<String>,
}

impl CArgs {
    /// The preprocessor these flags ask for.
    pub fn cpp(&self) -> Cpp {
        Cpp {
            include: self.include.clone(),
            define: self.macros.clone(),
        }
    }
}

/// Whether `path` names a C file (read by the C front end).
pub fn is_c_file(path: &str) -> bool {
    Path::new(path).extension().is_some_and(|e| e == "c")
}

/// Arguments naming a kernel: the file, which kernel in it, fixed parameter values.
#[derive(clap::Args, serde::Serialize, Debug, Clone)]
pub struct KernelArgs {
    /// The kernel file (`.pk`; a `.c` file: its `#pragma scop` regions), or `-` for standard
    /// input.
    pub file: String,
    /// Which kernel of the file (needed when it holds several).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Fixes a parameter, e.g. `-D N=64` (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub define: Vec<(String, i64)>,
    #[command(flatten)]
    #[serde(flatten)]
    pub c: CArgs,
}

/// Parses a `-D NAME=VALUE` argument.
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

/// The `-D` values by name.
pub fn defines(define: &[(String, i64)]) -> BTreeMap<String, i64> {
    define.iter().cloned().collect()
}

impl KernelArgs {
    /// Reads, parses and checks the file and returns the chosen kernel; diagnostics are
    /// rendered to standard error.
    pub fn load_kernel(&self) -> Result<Kernel, CliError> {
        choose(
            read_kernels(&self.file, &self.c)?,
            |k| &k.name,
            self.kernel.as_deref(),
            &self.file,
        )
    }

    /// Loads the kernel and lifts it into the polyhedral model with the `-D` values fixed.
    pub fn load_program(&self) -> Result<Program, CliError> {
        let kernel = self.load_kernel()?;
        Ok(Program::build(
            &Ctx::default(),
            &kernel,
            &defines(&self.define),
        )?)
    }
}

/// Reads a kernel file. Standard input (`-`) is read once and remembered: commands read
/// their file more than once (`run --target cpu` to run and to compile it, `bench` for each
/// variant).
pub fn read_source(path: &str) -> Result<SourceFile, String> {
    if path != "-" {
        return frontend::read_source(path);
    }
    static STDIN: OnceLock<Result<SourceFile, String>> = OnceLock::new();
    STDIN.get_or_init(|| frontend::read_source(path)).clone()
}

/// Reads, parses and checks every kernel of a file (of a C file, the kernels of its
/// `#pragma scop` regions, preprocessed as `c` says); diagnostics are rendered to standard
/// error.
pub fn read_kernels(path: &str, c: &CArgs) -> Result<Vec<Kernel>, CliError> {
    let file = read_source(path).map_err(|message| {
        eprint!("{message}");
        CliError::User(format!("could not read `{path}`"))
    })?;
    compile(path, &file, c)?.map_err(|diags| {
        eprint!("{}", diags.render(&file, std::io::stderr().is_terminal()));
        CliError::User(format!("`{}` has errors", file.name))
    })
}

/// The kernels of `file`, read from `path`: the kernel language's, or a C file's regions
/// (preprocessed as `c` says); the outer error is a failure of the preprocessor.
pub fn compile(
    path: &str,
    file: &SourceFile,
    c: &CArgs,
) -> Result<Result<Vec<Kernel>, Diagnostics>, CliError> {
    Ok(if is_c_file(path) {
        let preprocessed = c.cpp().run(Path::new(path)).map_err(CliError::User)?;
        frontend::c::compile(file, &preprocessed)
    } else {
        frontend::compile(file)
    })
}

/// The item named `kernel` (`None`: the only one) of those a file holds.
pub fn choose<T>(
    mut items: Vec<T>,
    name: impl Fn(&T) -> &str,
    kernel: Option<&str>,
    file: &str,
) -> Result<T, CliError> {
    let names = |items: &[T]| items.iter().map(&name).collect::<Vec<_>>().join(", ");
    match kernel {
        Some(k) => match items.iter().position(|i| name(i) == k) {
            Some(i) => Ok(items.swap_remove(i)),
            None => Err(CliError::User(format!(
                "`{file}` has no kernel `{k}` (it has: {})",
                names(&items)
            ))),
        },
        None if items.len() == 1 => Ok(items.remove(0)),
        None => Err(CliError::User(format!(
            "`{file}` holds several kernels ({}): choose one with --kernel",
            names(&items)
        ))),
    }
}

/// A kernel lifted into the polyhedral model, with its dependences.
pub struct Lifted {
    /// The program.
    pub program: Program,
    /// Its dependences.
    pub deps: Dependences,
}

/// Reads, checks and lifts every kernel of a file with the `-D` values fixed.
pub fn lift_file(path: &str, define: &[(String, i64)], c: &CArgs) -> Result<Vec<Lifted>, CliError> {
    let fixed = defines(define);
    let ctx = Ctx::default();
    read_kernels(path, c)?
        .iter()
        .map(|k| {
            let program = Program::build(&ctx, k, &fixed).map_err(|e| match e {
                poly::model::ModelError::Isl(e) => CliError::from(e),
                other => CliError::User(format!("{path}: {other}")),
            })?;
            let deps = Dependences::compute(&program)?;
            if deps.flow_precision == FlowPrecision::MemoryBased {
                eprintln!(
                    "note: {}: the read-after-write dependences are memory-based (every earlier \
                     write of an element, not only the last): isl's value-based analysis ran \
                     out of its budget or failed; schedules stay legal, with fewer choices",
                    program.kernel.name
                );
            }
            Ok(Lifted { program, deps })
        })
        .collect()
}

/// The kernel of a file that the user chose, lifted.
pub fn lift_one(
    path: &str,
    kernel: Option<&str>,
    define: &[(String, i64)],
    c: &CArgs,
) -> Result<Lifted, CliError> {
    choose(
        lift_file(path, define, c)?,
        |l| &l.program.kernel.name,
        kernel,
        path,
    )
}
