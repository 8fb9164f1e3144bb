//! `polyc demo`: the whole pipeline on an embedded example, as `make run` shows it.
//!
//! gemm is parsed and checked, lifted into isl, its dependences computed; Pluto schedules it,
//! the schedule is tiled and its parallel loops marked; the legality checker verifies it; the
//! interpreter runs it in the new order (ties shuffled) and must agree bit for bit with the
//! original order; finally the generated C, compiled with the system compiler, must agree too.

use crate::error::CliError;
use codegen::toolchain::CCompiler;
use codegen::{runner, CodegenOptions};
use frontend::SourceFile;
use poly::deps::Dependences;
use poly::interp::{InputFiles, Interpreter, Memory, ParamValues};
use poly::isl::Ctx;
use poly::model::Program;
use poly::order::{execution_order, AnySchedule, Ties};
use scheduler::optimizer::optimize;
use scheduler::pluto::Pluto;
use scheduler::transform::TransformOptions;
use scheduler::{legality, Options, Problem};
use std::collections::BTreeMap;
use std::num::NonZeroU32;

/// The embedded default example: PolyBench's gemm.
const GEMM: &str = include_str!("../../examples/polybench/gemm.pk");

/// Arguments of `polyc demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Size used for every parameter of the example.
    #[arg(long, default_value_t = 64)]
    size: i64,
}

/// Runs `polyc demo`. Any disagreement between the stages is an internal error (exit 2).
pub fn run(args: &DemoArgs) -> Result<(), CliError> {
    let file = SourceFile::new("examples/polybench/gemm.pk (embedded)", GEMM);
    let kernel = frontend::compile(&file)
        .map_err(|d| CliError::Internal(d.render(&file, false)))?
        .remove(0);
    let fixed: BTreeMap<String, i64> = kernel
        .params
        .iter()
        .map(|p| (p.name.clone(), args.size))
        .collect();
    println!(
        "== 1. front end: kernel `{}`, {} statements",
        kernel.name,
        kernel.statements().len()
    );

    let program = Program::build(&Ctx::default(), &kernel, &fixed)?;
    println!("== 2. polyhedral model");
    for s in &program.statements {
        println!("   {}: {}", s.name, s.domain);
    }
    let deps = Dependences::compute(&program)?;
    println!("== 3. exact dependences");
    for s in deps.summaries(&program)? {
        println!("   {s}");
    }

    let problem = Problem {
        program: &program,
        deps: &deps,
        options: Options::default(),
    };
    let transforms = TransformOptions {
        tile: Some(vec![NonZeroU32::new(16).expect("16 is not zero"); 3]),
        parallel: true,
        ..TransformOptions::default()
    };
    let optimized = optimize(&problem, &Pluto::default(), &transforms, &[])?;
    let schedule = optimized.schedule;
    println!("== 4. Pluto schedule, tiled 16x16x16, parallel loops marked");
    for note in &optimized.notes {
        println!("   {note}");
    }
    print!(
        "{}",
        indent(&poly::isl::pseudo_c(&schedule, &program.context)?)
    );

    let any = AnySchedule::Tree(schedule.clone());
    let report = legality::check(&program, &deps, &any, &Options::default())
        .map_err(|e| CliError::Internal(e.to_string()))?;
    if !report.is_legal() {
        return Err(CliError::Internal(format!(
            "Pluto's schedule is illegal:\n{report}"
        )));
    }
    println!(
        "== 5. legality: every dependence respected, parallel loops carry none, bands permutable"
    );

    let params = ParamValues::resolve(&kernel, &fixed, &BTreeMap::new()).map_err(interp_error)?;
    let initial =
        Memory::load_inputs(&kernel, &params, &InputFiles::default(), 0).map_err(interp_error)?;
    let interpreter = Interpreter::new(&kernel, &params).map_err(interp_error)?;
    let mut original = initial.clone();
    interpreter
        .run_original(&mut original)
        .map_err(interp_error)?;
    let order = execution_order(&program, &any, &fixed, Ties::Shuffled(1))
        .map_err(|e| CliError::Internal(e.to_string()))?;
    let mut rescheduled = initial.clone();
    interpreter
        .run_instances(
            &mut rescheduled,
            order.iter().map(|(s, iv)| (*s, iv.as_slice())),
        )
        .map_err(interp_error)?;
    if !original.bit_identical(&rescheduled) {
        return Err(CliError::Internal(
            "the new order changed the results".into(),
        ));
    }
    println!(
        "== 6. interpreter: {} instances in the new order give bit-identical outputs",
        order.len()
    );
    let checksums: Vec<String> = original
        .checksums()
        .iter()
        .filter(|c| {
            kernel
                .array_by_name(&c.name)
                .is_some_and(|a| kernel.array(a).role.is_output())
        })
        .map(|c| c.to_string())
        .collect();
    for c in &checksums {
        println!("   {c}");
    }

    let compiler = CCompiler::system("-O2");
    if !compiler.is_available() {
        println!("== 7. no C compiler found: skipping the compiled run");
        return Ok(());
    }
    let options = CodegenOptions {
        harness: true,
        ..CodegenOptions::default()
    };
    let code = codegen::generate(&program, &schedule, &options)
        .map_err(|e| CliError::Internal(e.to_string()))?;
    let out = runner::compile_and_run(&compiler, &code, &initial, &params, None)
        .map_err(|e| CliError::Internal(e.to_string()))?;
    let compiled: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| {
            checksums
                .iter()
                .any(|c| c.split(' ').next() == l.split(' ').next())
        })
        .collect();
    if !out.success || compiled != checksums.iter().map(String::as_str).collect::<Vec<_>>() {
        return Err(CliError::Internal(format!(
            "the compiled C disagrees with the interpreter:\n{}{}",
            out.stdout, out.stderr
        )));
    }
    println!(
        "== 7. generated C ({} lines, OpenMP), compiled with cc -O2: same checksums",
        code.lines().count()
    );
    Ok(())
}

fn interp_error(e: poly::interp::InterpError) -> CliError {
    CliError::Internal(e.to_string())
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("   {l}\n")).collect()
}
