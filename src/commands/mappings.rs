//! `polyc mappings`: every mapping of a kernel's statements onto the machine's intrinsics,
//! each proved or refuted condition by condition (Z3; isl with `--second-opinion`).

use super::input::{read_source, KernelArgs};
use crate::error::CliError;
use frontend::ir::{Access, Kernel};
use scheduler::mapping::intrinsic::{bind, Intrinsic};
use scheduler::mapping::physical::Mapping;
use scheduler::mapping::software::{Sizes, Software};
use scheduler::mapping::verify::{Options, Outcome, Report};
use scheduler::mapping::{enumerate, library, text};
use scheduler::target::Target;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// What both mapping commands need besides the kernel.
#[derive(clap::Args, Debug)]
pub struct MappingOptions {
    /// An intrinsic file (`intrinsic` declarations with `@ TIER` operands, see
    /// docs/mapping.md); default: the machine's built-in library.
    #[arg(long, value_name = "FILE")]
    intrinsics: Option<String>,
    /// The NPU machine whose tiers hold the operands (a preset or a TOML file).
    #[arg(long, default_value = "ascend-like")]
    machine: String,
    /// Let an intrinsic reorder floating-point sums and products.
    #[arg(long)]
    reorder_reductions: bool,
    /// Prove for every size allowed (parameters at least 1 and the kernel's `where`) of the
    /// parameters not fixed by `-D`, instead of the default sizes.
    #[arg(long)]
    symbolic: bool,
    /// Also decide every condition with isl; a disagreement with Z3 is an internal error.
    #[arg(long)]
    second_opinion: bool,
    /// Z3's time limit per query in milliseconds; a timeout is reported as unknown.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
}

/// The output format of `polyc mappings`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// One line per mapping (with `--all`, the mappings and every verdict).
    Text,
    /// Everything, machine-readable.
    Json,
}

/// Arguments of `polyc mappings`.
#[derive(clap::Args, Debug)]
pub struct MappingsArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    #[command(flatten)]
    options: MappingOptions,
    /// Only this intrinsic.
    #[arg(long)]
    intrinsic: Option<String>,
    /// Print every mapping in the text format with every condition's verdict and
    /// counterexample.
    #[arg(long)]
    all: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    emit: Emit,
}

/// The machine, its intrinsics and the decision options.
pub(super) struct Context {
    pub target: Target,
    pub intrinsics: Vec<Intrinsic>,
    pub options: Options,
    pub allow_reorder: bool,
    pub symbolic: bool,
}

impl MappingOptions {
    /// Loads the machine and the intrinsics.
    pub(super) fn context(&self) -> Result<Context, CliError> {
        let target = Target::npu(&self.machine).map_err(|e| CliError::User(e.to_string()))?;
        let intrinsics = match &self.intrinsics {
            None => library::builtin(&target),
            Some(path) => {
                let file =
                    read_source(path).map_err(|m| CliError::User(m.trim_end().to_string()))?;
                library::parse(&file, &target)
            }
        }
        .map_err(|e| CliError::User(e.to_string()))?;
        Ok(Context {
            target,
            intrinsics,
            options: Options {
                timeout: Duration::from_millis(self.timeout_ms),
                second_opinion: self.second_opinion,
            },
            allow_reorder: self.reorder_reductions,
            symbolic: self.symbolic,
        })
    }
}

impl Context {
    /// The sizes to prove for.
    pub(super) fn sizes(
        &self,
        kernel: &Kernel,
        define: &[(String, i64)],
    ) -> Result<Sizes, CliError> {
        let fixed: BTreeMap<String, i64> = define.iter().cloned().collect();
        if self.symbolic {
            return Ok(Sizes::Symbolic(fixed));
        }
        let mut out = BTreeMap::new();
        for p in &kernel.params {
            let v = fixed.get(&p.name).copied().or(p.default).ok_or_else(|| {
                CliError::User(format!(
                    "parameter `{}` has no value: give one with -D {}=VALUE, or prove for all sizes with --symbolic",
                    p.name, p.name
                ))
            })?;
            out.insert(p.name.clone(), v);
        }
        Ok(Sizes::Concrete(out))
    }

    /// Decides a mapping; a layout that cannot be linearised is an error message.
    pub(super) fn check(
        &self,
        sw: &Software,
        intr: &Intrinsic,
        binding: &[Access],
        m: &Mapping,
    ) -> Result<Report, String> {
        scheduler::mapping::check(
            sw,
            intr,
            binding,
            m,
            &self.target,
            self.allow_reorder,
            &self.options,
        )
        .map_err(|e| e.to_string())
    }
}

/// A verdict in a word or two.
pub(super) fn verdict_word(o: &Outcome) -> String {
    match o {
        Outcome::Proved => "proved".into(),
        Outcome::Refuted(_) => "refuted".into(),
        Outcome::Unknown(r) => format!("unknown ({r})"),
    }
}

/// Every verdict of a report, one line each indented by `indent`, with counterexamples.
pub(super) fn verdict_lines(r: &Report, indent: &str) -> String {
    let mut s = String::new();
    for v in &r.verdicts {
        s.push_str(&format!(
            "{indent}{:<17} {}",
            v.condition.to_string(),
            verdict_word(&v.outcome)
        ));
        if let Outcome::Refuted(c) = &v.outcome {
            s.push_str(&format!(": {}", c.text));
        }
        s.push('\n');
    }
    s
}

/// The second opinion's disagreements as an internal error.
pub(super) fn disagreement(r: &Report) -> Result<(), CliError> {
    match r.disagreements.first() {
        None => Ok(()),
        Some(d) => Err(CliError::Internal(format!(
            "Z3 and isl disagree on condition {}: Z3 says {}, isl says {}",
            d.condition, d.answers.0, d.answers.1
        ))),
    }
}

fn short(sw: &Software, intr: &Intrinsic, m: &Mapping) -> String {
    (m.groups.iter().zip(&intr.loops))
        .map(|(g, x)| {
            let names: Vec<&str> = g.iter().map(|&l| sw.loops[l].var.as_str()).collect();
            format!("{} <- {}", x.name, names.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs `polyc mappings`.
pub fn run(args: &MappingsArgs) -> Result<(), CliError> {
    let kernel = args.kernel.load_kernel()?;
    let ctx = args.options.context()?;
    if let Some(name) = &args.intrinsic {
        if !ctx.intrinsics.iter().any(|i| &i.name == name) {
            let names: Vec<&str> = ctx.intrinsics.iter().map(|i| i.name.as_str()).collect();
            return Err(CliError::User(format!(
                "no intrinsic `{name}` (there are: {})",
                names.join(", ")
            )));
        }
    }
    let sizes = ctx.sizes(&kernel, &args.kernel.define)?;
    let stmts = kernel.statements();
    let mut json_out = Vec::new();
    let mut any = false;
    for stmt in &stmts {
        let sw = Software::new(&kernel, stmt, sizes.clone());
        for intr in &ctx.intrinsics {
            if args.intrinsic.as_ref().is_some_and(|n| n != &intr.name) {
                continue;
            }
            let Some(binding) = bind(intr, stmt.stmt, &kernel) else {
                continue;
            };
            any = true;
            let mut rows = Vec::new();
            for groups in enumerate::mappings(&sw, intr, &binding) {
                let m = Mapping::derive(&sw, intr, &binding, groups);
                let result = m.map_err(|e| e.to_string()).and_then(|m| {
                    let r = ctx.check(&sw, intr, &binding, &m)?;
                    Ok((m, r))
                });
                if let Ok((_, r)) = &result {
                    disagreement(r)?;
                }
                rows.push(result);
            }
            let proved = rows
                .iter()
                .filter(|r| r.as_ref().is_ok_and(|(_, r)| r.proved()))
                .count();
            let refuted = rows
                .iter()
                .filter(|r| r.as_ref().is_ok_and(|(_, r)| !r.refuted().is_empty()))
                .count();
            match args.emit {
                Emit::Text => {
                    println!(
                        "{} onto {}: {} mappings, {proved} proved, {refuted} refuted, {} undecided",
                        stmt.stmt.name,
                        intr.name,
                        rows.len(),
                        rows.len() - proved - refuted
                    );
                    let kinds: Vec<String> = (sw.loops.iter().zip(sw.kinds()))
                        .map(|(l, k)| format!("{} {}", l.var, k.name()))
                        .collect();
                    println!("  loops: {}", kinds.join(", "));
                    let reordering_only = rows.iter().any(|r| {
                        r.as_ref().is_ok_and(|(_, r)| {
                            r.refuted() == [scheduler::mapping::conditions::Condition::Reordering]
                        })
                    });
                    if reordering_only && !ctx.allow_reorder && sw.reordering_inexact() {
                        println!("  (the intrinsic sums in its own order: allow that with --reorder-reductions)");
                    }
                    for (k, row) in rows.iter().enumerate() {
                        match row {
                            Ok((m, r)) => {
                                let word = if r.proved() {
                                    "proved".to_string()
                                } else if r.refuted().is_empty() {
                                    "unknown".to_string()
                                } else {
                                    let cs: Vec<String> =
                                        r.refuted().iter().map(|c| c.to_string()).collect();
                                    format!("refuted {}", cs.join(", "))
                                };
                                println!("  {:>3}  {word:<9} {}", k + 1, short(&sw, intr, m));
                                if args.all {
                                    for line in text::print(&sw, intr, m).lines() {
                                        println!("         {line}");
                                    }
                                    for (op, slot) in
                                        intr.operands.iter().zip(m.slots(intr, &ctx.target))
                                    {
                                        println!("         # {} in {slot}", op.name);
                                    }
                                    print!("{}", verdict_lines(r, "         "));
                                }
                            }
                            Err(e) => println!("  {:>3}  not decided: {e}", k + 1),
                        }
                    }
                }
                Emit::Json => json_out.push(json!({
                    "statement": stmt.stmt.name,
                    "intrinsic": intr.name,
                    "loops": (sw.loops.iter().zip(sw.kinds()))
                        .map(|(l, k)| json!({ "name": l.var, "kind": k.name() }))
                        .collect::<Vec<Value>>(),
                    "mappings": rows.iter().map(|row| match row {
                        Ok((m, r)) => mapping_json(&sw, intr, m, r),
                        Err(e) => json!({ "error": e }),
                    }).collect::<Vec<Value>>(),
                })),
            }
        }
    }
    if args.emit == Emit::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&Value::Array(json_out)).unwrap_or_default()
        );
    } else if !any {
        println!(
            "no statement of `{}` matches an intrinsic of `{}`",
            kernel.name, ctx.target.name
        );
    }
    Ok(())
}

fn mapping_json(sw: &Software, intr: &Intrinsic, m: &Mapping, r: &Report) -> Value {
    let groups: serde_json::Map<String, Value> = (intr.loops.iter().zip(&m.groups))
        .map(|(x, g)| {
            (
                x.name.clone(),
                json!(g
                    .iter()
                    .map(|&l| sw.loops[l].var.clone())
                    .collect::<Vec<_>>()),
            )
        })
        .collect();
    let verdicts: serde_json::Map<String, Value> = (r.verdicts.iter())
        .map(|v| {
            let value = match &v.outcome {
                Outcome::Proved => json!({ "verdict": "proved" }),
                Outcome::Refuted(c) => json!({
                    "verdict": "refuted",
                    "counterexample": c.text,
                    "instances": c.instances,
                }),
                Outcome::Unknown(reason) => json!({ "verdict": "unknown", "reason": reason }),
            };
            (v.condition.name().to_string(), value)
        })
        .collect();
    json!({
        "proved": r.proved(),
        "groups": groups,
        "text": text::print(sw, intr, m),
        "conditions": verdicts,
        "queries": r.queries,
    })
}
