//! The C printer: a kernel's loop AST and statement bodies as one readable, deterministic
//! C99 function (see `docs/codegen.md` for its ABI).
//!
//! Plan, then print. The modules, each depending only on those listed before it (no
//! cycle):
//! - `names`, `types`, [`stmt`]: C names, types and exact arithmetic, statement bodies;
//! - `instances` ([`Instances`], [`LoopOptions`]): what the loop printer asks of statements;
//! - `cexpr`: AST expressions as C, hoistable bounds, constant trip counts;
//! - the deciding modules, each a pure function of the AST and the statements:
//!   `accumulate` (accumulator blocks), `pack` (packed panels), `promote` (promoted
//!   elements), `team` (whether a thread team shares work);
//! - `plan`: what is done with every loop, decided in one pass (`Plan`, `LoopPlan`);
//! - `print`: the loops as C, as the plan says (the only module that writes C for loops).

mod accumulate;
mod cexpr;
pub mod dialect;
mod instances;
pub mod names;
mod pack;
mod plan;
mod print;
mod promote;
mod scop;
pub mod stmt;
mod stride;
mod team;
pub mod types;

pub use dialect::Dialect;
pub use instances::{Instances, LoopOptions};
pub use print::print_loops;
pub use scop::{scop_block, ScopBlock, RESERVED_PREFIX};

use crate::ast;
use crate::CodegenError;
use frontend::ir::Kernel;
use names::c_name;
use poly::isl::IslResult;
use poly::model::isl_text::{aff, isl_name};
use poly::model::Program;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use stmt::{by_value, extent_name, Arrays};

/// The helpers every generated file starts with.
pub const RUNTIME: &str = include_str!("../../runtime/polyc_runtime.h");

/// The name of the generated function of `kernel`.
pub fn function_name(kernel: &Kernel) -> String {
    format!("kernel_{}", kernel.name)
}

/// The generated function's parameter list: the size parameters as `long`, then every
/// non-temporary array (inputs `const`), scalar inputs by value.
pub fn signature(kernel: &Kernel) -> String {
    let mut parts: Vec<String> = kernel
        .params
        .iter()
        .map(|p| format!("long {}", c_name(&p.name)))
        .collect();
    for (k, a) in kernel.arrays.iter().enumerate() {
        let ty = types::storage(a.elem);
        let name = c_name(&a.name);
        parts.push(match a.role {
            frontend::ir::Role::Temp => continue,
            _ if by_value(kernel, k) => format!("{ty} {name}"),
            frontend::ir::Role::In => format!("const {ty} *restrict {name}"),
            _ => format!("{ty} *restrict {name}"),
        });
    }
    format!(
        "int {}({})",
        function_name(kernel),
        if parts.is_empty() {
            "void".into()
        } else {
            parts.join(", ")
        }
    )
}

/// The kernel as a C function executing `ast`.
pub fn kernel_function(
    program: &Program,
    ast: &ast::Node,
    options: LoopOptions,
) -> Result<String, CodegenError> {
    let kernel = &program.kernel;
    let proven = in_bounds(program)?;
    let in_bounds = |stmt: &str, k: usize| proven.contains(&(stmt.to_owned(), k));
    let apart = apart(program)?;
    let arrays = Arrays {
        kernel,
        in_bounds: &in_bounds,
        apart: &apart,
        dialect: Dialect::Kernel,
    };
    let statements = Statements::new(program, &arrays)?;
    let params: BTreeMap<String, String> = kernel
        .params
        .iter()
        .map(|p| (isl_name(&p.name), c_name(&p.name)))
        .collect();
    let loops = print_loops(ast, 1, &params, &statements, options)?;

    let mut out = String::new();
    let _ = writeln!(out, "{}\n{{", signature(kernel));
    for (k, a) in kernel.arrays.iter().enumerate() {
        for (d, dim) in a.dims.iter().enumerate() {
            let _ = writeln!(
                out,
                "    const long {} = {};",
                extent_name(k, d),
                stmt::affine(dim)
            );
        }
    }
    let temps: Vec<(usize, &frontend::ir::Array)> = kernel
        .arrays
        .iter()
        .enumerate()
        .filter(|(_, a)| a.role == frontend::ir::Role::Temp)
        .collect();
    for &(k, a) in &temps {
        let ty = types::storage(a.elem);
        let size: Vec<String> = (0..a.dims.len()).map(|d| extent_name(k, d)).collect();
        let count = if size.is_empty() {
            "1".into()
        } else {
            format!("pc_max(1, {})", size.join(" * "))
        };
        let _ = writeln!(
            out,
            "    {ty} *restrict {} = ({ty} *)calloc({count}, sizeof({ty}));",
            c_name(&a.name)
        );
    }
    if !temps.is_empty() {
        let null: Vec<String> = temps
            .iter()
            .map(|(_, a)| format!("!{}", c_name(&a.name)))
            .collect();
        let _ = writeln!(out, "    if ({}) {{", null.join(" || "));
        free_temps(&mut out, &temps, 2);
        let _ = writeln!(out, "        return PC_FAULT_OUT_OF_MEMORY;\n    }}");
    }
    let _ = writeln!(out, "    pc_fault = 0;");
    out.push_str(&loops);
    free_temps(&mut out, &temps, 1);
    let _ = writeln!(out, "    return pc_fault;\n}}");
    Ok(out)
}

/// The kernel's statements as [`Instances`] for the loop printer.
pub(super) struct Statements<'a, 'k> {
    /// Each statement of the model and of the IR, by isl tuple name.
    by_tuple: BTreeMap<String, (&'a poly::model::Statement, &'k frontend::ir::Stmt)>,
    arrays: &'a Arrays<'k>,
    /// The statements whose targets can be accumulators, by tuple name.
    accumulable: BTreeMap<String, stmt::Accumulable>,
}

impl<'a, 'k> Statements<'a, 'k> {
    /// The statements of `program` (whose kernel `arrays` describes).
    pub(super) fn new(
        program: &'a Program,
        arrays: &'a Arrays<'k>,
    ) -> Result<Statements<'a, 'k>, CodegenError> {
        let mut by_tuple = BTreeMap::new();
        for sc in arrays.kernel.statements() {
            let s = program
                .statements
                .iter()
                .find(|s| s.name == sc.stmt.name)
                .ok_or_else(|| CodegenError::Internal(format!("{} is not lifted", sc.stmt.name)))?;
            by_tuple.insert(s.tuple.clone(), (s, sc.stmt));
        }
        Ok(Statements {
            accumulable: by_tuple
                .iter()
                .filter_map(|(tuple, (s, stmt))| {
                    let acc = stmt::accumulable(arrays, stmt, &s.iterators)?;
                    Some((tuple.clone(), acc))
                })
                .collect(),
            by_tuple,
            arrays,
        })
    }
}

impl Instances for Statements<'_, '_> {
    fn instance(
        &self,
        tuple: &str,
        args: &[String],
        replaced: &[stmt::Replacement<'_>],
    ) -> Result<String, CodegenError> {
        let (s, stmt) = self
            .by_tuple
            .get(tuple)
            .ok_or_else(|| CodegenError::Internal(format!("unknown statement {tuple}")))?;
        let body = stmt::statement(self.arrays, stmt, replaced)?;
        let dialect = self.arrays.dialect;
        // In the user's file, only the iterators the statement uses (no unused variables).
        let used = |name: &str| dialect == Dialect::Kernel || mentions(&body, name);
        let binds: Vec<String> = s
            .iterators
            .iter()
            .zip(args)
            .map(|(it, a)| (dialect.name(it), a))
            .filter(|(it, _)| used(it))
            .map(|(it, a)| format!("{it} = {a}"))
            .collect();
        if binds.is_empty() {
            return Ok(format!("{body} /* {} */", s.name));
        }
        Ok(format!(
            "{{ /* {} */\n    const long {};\n    {body}\n}}",
            s.name,
            binds.join(", ")
        ))
    }

    fn accumulable(&self, tuple: &str) -> Option<&stmt::Accumulable> {
        self.accumulable.get(tuple)
    }

    fn element_accesses(&self, tuple: &str, args: &[String]) -> Option<Vec<stmt::ElementAccess>> {
        let (s, stmt) = self.by_tuple.get(tuple)?;
        Some(stmt::element_accesses(
            self.arrays,
            stmt,
            &s.iterators,
            args,
        ))
    }

    fn input_expressions(
        &self,
        tuple: &str,
        args: &[String],
        accesses: &[stmt::ElementAccess],
    ) -> Option<Vec<stmt::InputExpression>> {
        let (s, stmt) = self.by_tuple.get(tuple)?;
        stmt::input_expressions(self.arrays, stmt, &s.iterators, args, accesses).ok()
    }
}

/// Whether the C text `text` mentions the identifier `name`.
fn mentions(text: &str, name: &str) -> bool {
    let word = |c: char| c == '_' || c.is_ascii_alphanumeric();
    text.match_indices(name)
        .any(|(at, _)| !text[..at].ends_with(word) && !text[at + name.len()..].starts_with(word))
}

fn free_temps(out: &mut String, temps: &[(usize, &frontend::ir::Array)], depth: usize) {
    for (_, a) in temps {
        let _ = writeln!(out, "{:w$}free({});", "", c_name(&a.name), w = depth * 4);
    }
}

/// The accesses `(statement, position)` proven within their array's extents for every
/// parameter value of the context (position 0 is the target, then the right-hand side's
/// reads left to right); the others are checked at run time.
fn in_bounds(program: &Program) -> IslResult<BTreeSet<(String, usize)>> {
    let kernel = &program.kernel;
    let prefix = if kernel.params.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = kernel.params.iter().map(|p| isl_name(&p.name)).collect();
        format!("[{}] -> ", names.join(", "))
    };
    let mut bounds = Vec::new();
    for a in &kernel.arrays {
        let dims: Vec<String> = (0..a.dims.len()).map(|d| format!("i{d}")).collect();
        let cons: Vec<String> = a
            .dims
            .iter()
            .enumerate()
            .map(|(d, e)| format!("0 <= i{d} < {}", aff(e)))
            .collect();
        let cons = if cons.is_empty() {
            "true".to_owned()
        } else {
            cons.join(" and ")
        };
        bounds.push(program.ctx.set(&format!(
            "{prefix}{{ {}[{}] : {cons} }}",
            isl_name(&a.name),
            dims.join(", ")
        ))?);
    }
    let mut proven = BTreeSet::new();
    for s in &program.statements {
        for (k, access) in std::iter::once(&s.write)
            .chain(rhs_reads(program, s))
            .enumerate()
        {
            let range = access.relation.range()?;
            if range.is_subset(&bounds[access.array.0])? {
                proven.insert((s.name.clone(), k));
            }
        }
    }
    Ok(proven)
}

/// The reads `(statement, position)` of the statement's own target array that never read
/// the element it writes: for no two instances writing the same element does one read what
/// they write (trisolv's `x[j]` in `x[i] = x[i] - L[i][j] * x[j]`, where `j < i`). Where
/// the element is held in a local across a loop (`promote`), such a read still reads memory.
pub(crate) fn apart(program: &Program) -> IslResult<BTreeSet<(String, usize)>> {
    let mut proven = BTreeSet::new();
    for s in &program.statements {
        let write = &s.write.relation;
        let same_element = write.apply_range(&write.reverse()?)?;
        for (k, read) in rhs_reads(program, s).iter().enumerate() {
            if read.array != s.write.array {
                continue;
            }
            let hits = write.apply_range(&read.relation.reverse()?)?;
            if hits.intersect(&same_element)?.is_empty()? {
                proven.insert((s.name.clone(), k + 1));
            }
        }
    }
    Ok(proven)
}

/// The access relations of the reads the statement's right-hand side makes, left to right
/// (the model lists them last, after any read of the target a compound assignment makes).
fn rhs_reads<'p>(program: &Program, s: &'p poly::model::Statement) -> &'p [poly::model::Access] {
    let count = (program.kernel.statements().iter())
        .find(|sc| sc.stmt.name == s.name)
        .map_or(0, |sc| poly::model::rhs_reads(sc.stmt).len());
    &s.reads[s.reads.len() - count..]
}
