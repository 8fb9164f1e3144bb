//! `polyc show`: print a kernel as the compiler sees it at one stage.

use super::input::KernelArgs;
use crate::error::CliError;
use poly::deps::{DepKind, Dependences};
use poly::model::Program;

/// What `polyc show` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Emit {
    /// The checked and lowered kernel (loops, statements, types).
    Ast,
    /// Iteration domains, access relations and the parameter context, in isl notation.
    Isl,
    /// Dependences: relations and distance/direction summaries per loop level.
    Deps,
    /// The original schedule tree (isl YAML), as `polyc verify --schedule` reads it.
    Schedule,
}

/// Arguments of `polyc show`.
#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// What to print.
    #[arg(long, value_enum, default_value = "ast")]
    emit: Emit,
}

/// Runs `polyc show`.
pub fn run(args: &ShowArgs) -> Result<(), CliError> {
    if let Emit::Ast = args.emit {
        print!("{}", args.kernel.load_kernel()?);
        return Ok(());
    }
    let program = args.kernel.load_program()?;
    let text = match args.emit {
        Emit::Ast => unreachable!("handled above"),
        Emit::Isl => show_isl(&program),
        Emit::Deps => show_deps(&program),
        Emit::Schedule => Ok(format!("{}\n", program.schedule)),
    };
    print!("{}", text?);
    Ok(())
}

fn show_isl(program: &Program) -> poly::isl::IslResult<String> {
    let mut out = format!("context: {}\n", program.context);
    for s in &program.statements {
        out += &format!("\n{}:\n  domain: {}\n", s.name, s.domain);
        out += &format!("  write:  {}\n", s.write.relation);
        for r in &s.reads {
            out += &format!("  read:   {}\n", r.relation);
        }
        if let Some(op) = s.reduction {
            out += &format!("  reduction update ({})\n", op.symbol());
        }
    }
    out += &format!("\nschedule: {}\n", program.schedule_map()?);
    Ok(out)
}

fn show_deps(program: &Program) -> poly::isl::IslResult<String> {
    let deps = Dependences::compute(program)?;
    let mut out = String::new();
    for kind in DepKind::ALL {
        out += &format!("{} ({:?}): {}\n", kind.short(), kind, deps.of_kind(kind));
    }
    out += &format!("reduction: {}\n\nsummary:\n", deps.reduction);
    for s in deps.summaries(program)? {
        out += &format!("  {s}\n");
    }
    Ok(out)
}
