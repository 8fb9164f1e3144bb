//! `polyc c`: a C file with each `#pragma scop` region replaced by its optimised loop nest,
//! everything else byte for byte.

use super::compile::{optimize_lifted, CodegenArgs, Compilation};
use super::input::Lifted;
use super::schedule::DEFAULT_SCHEDULER;
use super::schedule::{Fuse, ScheduleOptions};
use crate::error::CliError;
use codegen::c::{ScopBlock, RESERVED_PREFIX};
use frontend::c::cpp::Cpp;
use frontend::c::lexer::{lex, Tok};
use frontend::c::Region;
use frontend::diagnostics::Severity;
use frontend::ir::ArrayId;
use frontend::SourceFile;
use poly::deps::Dependences;
use poly::isl::Ctx;
use poly::model::Program;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Arguments of `polyc c`.
#[derive(clap::Args, Debug)]
pub struct CFileArgs {
    /// The C file.
    pub file: String,
    /// Where to write the result (`-`: standard output).
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
    /// The scheduling algorithm: pluto (the default everywhere), feautrier, isl or identity
    /// (the original order). `pluto` falls back to `isl`, and any to the original order,
    /// when it fails.
    #[arg(long, default_value = DEFAULT_SCHEDULER)]
    pub scheduler: String,
    /// Tile permutable bands; sizes per band member, comma-separated; members without a size
    /// (all of them for `--tile` alone) get sizes chosen by a cache model of this machine.
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "SIZES")]
    pub tile: Option<String>,
    /// Tile the tile loops again with these sizes (needs --tile).
    #[arg(long, value_name = "SIZES", requires = "tile")]
    pub tile2: Option<String>,
    /// Re-decide loop fusion after scheduling.
    #[arg(long, value_enum)]
    pub fuse: Option<Fuse>,
    /// Expose parallelism: wavefront when no outer loop is parallel, stride-1 parallel loop
    /// innermost.
    #[arg(long)]
    pub parallel: bool,
    /// Allow reduction updates to be reordered among themselves (results may then differ in
    /// the last bits).
    #[arg(long)]
    pub reorder_reductions: bool,
    /// An include directory of the preprocessor, as for the C compiler (repeatable).
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<String>,
    /// A macro the preprocessor defines, `NAME` or `NAME=VALUE`, as for the C compiler
    /// (repeatable).
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub define: Vec<String>,
    /// Exit 1 (writing nothing) when a region is left unchanged.
    #[arg(long)]
    pub strict: bool,
    /// Keep every array as it is: no copy per loop iteration of scalars and arrays whose
    /// values never cross iterations (array expansion, on by default).
    #[arg(long)]
    pub no_expand: bool,
    #[command(flatten)]
    pub codegen: CodegenArgs,
}

/// Whether regions get array expansion (see `scheduler::expand`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expand {
    /// Expand what may be expanded.
    Yes,
    /// Keep every array.
    No,
}

/// What became of one region.
enum Outcome {
    /// Replaced by this block.
    Optimised(ScopBlock),
    /// Left as it was, for the reason given (already printed).
    Unchanged,
}

/// A C file with its regions optimised.
pub struct Rewritten {
    /// The new text.
    pub text: String,
    /// How many regions were left unchanged.
    pub unchanged: usize,
    /// Whether some block has OpenMP loops.
    pub openmp: bool,
}

/// The C file `path` with each region that `compilation` can optimise replaced by its
/// block; per region, what became of it (and why, for a region left unchanged) is printed
/// on standard error.
pub fn rewrite_file(
    path: &str,
    cpp: &Cpp,
    compilation: &Compilation,
    expand: Expand,
) -> Result<Rewritten, CliError> {
    let bytes =
        std::fs::read(path).map_err(|e| CliError::User(format!("cannot read `{path}`: {e}")))?;
    let file = SourceFile::from_bytes(path, bytes).map_err(|message| {
        eprint!("{message}");
        CliError::User(format!("could not read `{path}`"))
    })?;
    let preprocessed = cpp.run(Path::new(path)).map_err(CliError::User)?;
    let color = std::io::stderr().is_terminal();
    let regions = frontend::c::translate(&file, &preprocessed).map_err(|d| {
        eprint!("{}", d.render(&file, color));
        CliError::User(format!("`{path}` has errors"))
    })?;
    if regions.is_empty() {
        eprintln!("warning: `{path}` has no `#pragma scop` region");
    }
    let reserved = reserved_name(&file.text).or_else(|| reserved_name(&preprocessed));
    let mut outcomes = Vec::new();
    for region in &regions {
        let where_ = format!("{path}:{}-{}", region.lines.0, region.lines.1);
        let outcome = match (&region.kernel, &reserved) {
            (Err(diags), _) => {
                eprint!("{}", diags.render_as(&file, color, Severity::Warning));
                Outcome::Unchanged
            }
            (Ok(_), Some(name)) => {
                eprintln!(
                    "warning: `{name}` begins with `{RESERVED_PREFIX}`, which polyc reserves for the names it declares"
                );
                Outcome::Unchanged
            }
            (Ok(kernel), None) => match optimise(kernel, &region.dead_after, expand, compilation) {
                Ok(block) => Outcome::Optimised(block),
                Err(e) => {
                    eprintln!("warning: {where_}: {e}");
                    Outcome::Unchanged
                }
            },
        };
        match &outcome {
            Outcome::Optimised(_) => eprintln!("{where_}: region optimised"),
            Outcome::Unchanged => eprintln!("{where_}: region left unchanged"),
        }
        outcomes.push(outcome);
    }
    Ok(Rewritten {
        text: rewrite(&file.text, &regions, &outcomes),
        unchanged: (outcomes.iter())
            .filter(|o| matches!(o, Outcome::Unchanged))
            .count(),
        openmp: (outcomes.iter()).any(|o| matches!(o, Outcome::Optimised(b) if b.openmp)),
    })
}

/// Runs `polyc c`.
pub fn run(args: &CFileArgs) -> Result<(), CliError> {
    let cpp = Cpp {
        include: args.include.clone(),
        define: args.define.clone(),
    };
    let schedule = ScheduleOptions {
        tile: args.tile.clone(),
        tile2: args.tile2.clone(),
        fuse: args.fuse,
        parallel: args.parallel,
        reorder_reductions: args.reorder_reductions,
        max_coefficient: None,
        define: Vec::new(),
        given: None,
        machine: None,
        c: Default::default(),
        rar: false,
    };
    let compilation = Compilation {
        file: &args.file,
        kernel: None,
        scheduler: &args.scheduler,
        schedule: &schedule,
        register: args.codegen.register(),
        passes: &[],
        codegen: args.codegen.options(false),
    };
    let expand = if args.no_expand {
        Expand::No
    } else {
        Expand::Yes
    };
    let rewritten = rewrite_file(&args.file, &cpp, &compilation, expand)?;
    let unchanged = rewritten.unchanged;
    if args.strict && unchanged > 0 {
        return Err(CliError::User(format!(
            "{unchanged} region{} of `{}` left unchanged (--strict)",
            if unchanged == 1 { "" } else { "s" },
            args.file
        )));
    }
    if rewritten.openmp {
        eprintln!(
            "note: the output has OpenMP loops: compile it with -fopenmp to run them in parallel"
        );
    }
    if args.output.as_os_str() == "-" {
        print!("{}", rewritten.text);
        Ok(())
    } else {
        std::fs::write(&args.output, rewritten.text)
            .map_err(|e| CliError::User(format!("cannot write `{}`: {e}", args.output.display())))
    }
}

/// The first identifier of `text` that begins with the reserved prefix.
fn reserved_name(text: &str) -> Option<String> {
    lex(text).into_iter().find_map(|t| match t.tok {
        Tok::Ident(name) if name.starts_with(RESERVED_PREFIX) => Some(name),
        _ => None,
    })
}

/// The region's kernel lifted, expanded (`dead_after`: its arrays the function does not
/// read after it), optimised and printed as a block of the file. When the expanded kernel
/// cannot be optimised (its larger scheduling problem may exceed isl's budget), the
/// kernel as written is.
fn optimise(
    kernel: &frontend::ir::Kernel,
    dead_after: &[ArrayId],
    expand: Expand,
    c: &Compilation,
) -> Result<ScopBlock, CliError> {
    let ctx = Ctx::default();
    let program = Program::build(&ctx, kernel, &BTreeMap::new())?;
    if expand == Expand::Yes {
        if let Some((expanded, done)) =
            scheduler::expand::expand(&program, dead_after, RESERVED_PREFIX)?
        {
            match Program::build(&ctx, &expanded, &BTreeMap::new())
                .map_err(CliError::from)
                .and_then(|p| generate(p, c))
            {
                Ok(block) => {
                    for e in &done {
                        eprintln!("note: {}: {e}", kernel.name);
                    }
                    return Ok(block);
                }
                Err(e) => eprintln!(
                    "note: {}: optimised without array expansion, which failed: {e}",
                    kernel.name
                ),
            }
        }
    }
    generate(program, c)
}

/// `program` optimised and printed as a block of the file.
fn generate(program: Program, c: &Compilation) -> Result<ScopBlock, CliError> {
    let deps = Dependences::compute(&program)?;
    let lifted = Lifted { program, deps };
    let optimized = optimize_lifted(&lifted, c)?;
    Ok(codegen::generate_scop(
        &lifted.program,
        &optimized.schedule,
        &c.codegen,
    )?)
}

/// The lines of `region` (from its `#pragma scop` line to its `#pragma endscop` line)
/// between the two pragmas, each without the `indent` of the pragma line.
fn statements(region: &str, indent: &str) -> String {
    let lines: Vec<&str> = region.lines().collect();
    let inner = lines.get(1..lines.len().saturating_sub(1)).unwrap_or(&[]);
    (inner.iter())
        .map(|l| format!("{}\n", l.strip_prefix(indent).unwrap_or(l)))
        .collect()
}

/// `text` with each optimised region replaced by its block, indented as its `#pragma scop`
/// line was.
fn rewrite(text: &str, regions: &[Region], outcomes: &[Outcome]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (region, outcome) in regions.iter().zip(outcomes) {
        let Outcome::Optimised(block) = outcome else {
            continue;
        };
        let (start, end) = (region.span.start, region.span.end);
        out.push_str(&text[at..start]);
        let line = &text[start..end];
        let indent = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
        let comment = format!(
            "/* polyc: the loops of the #pragma scop region of lines {}-{}, optimised */",
            region.lines.0, region.lines.1
        );
        let text = block.text(&statements(line, indent));
        let body: Vec<String> = std::iter::once(comment.as_str())
            .chain(text.lines())
            .map(|l| {
                if l.is_empty() {
                    String::new()
                } else {
                    format!("{indent}{l}")
                }
            })
            .collect();
        let newline = if line.contains("\r\n") { "\r\n" } else { "\n" };
        out.push_str(&body.join(newline));
        at = end;
    }
    out.push_str(&text[at..]);
    out
}
