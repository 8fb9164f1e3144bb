//! A kernel's loop nest as a block of the user's C file, in place of the `#pragma scop`
//! region it was read from ([`Dialect::Source`]).
//!
//! ```c
//! {
//! #define pc_min(a, b) ((a) < (b) ? (a) : (b))   /* only the helpers the loops use */
//!     double t;                                  /* the region's own variables */
//!     for (long pc_c0 = 0; pc_c0 < n; pc_c0++) {
//!         { /* S0 */
//!             const long i = pc_c0;
//!             y[i] = ...;
//!         }
//!     }
//! #undef pc_min
//! }
//! ```
//!
//! An expanded variable's arrays are on the heap: the loops run when every allocation
//! succeeds, else the region's statements as written (`ScopBlock::text` is given them), so
//! that a program short of memory computes what it computed before.
//!
//! The loops' iterators are isl's `c0, c1, ...` renamed `pc_c0, pc_c1, ...`, and each
//! statement binds the region's iterators to them, so the statements read as the user wrote
//! them. The caller makes sure that no name of the file starts with `pc_`.

use super::dialect::Dialect;
use super::instances::LoopOptions;
use super::print::print_loops;
use super::stmt::{affine_in, Arrays};
use super::Statements;
use crate::ast::{Expr, For, Node};
use crate::CodegenError;
use frontend::ir::Role;
use poly::model::isl_text::isl_name;
use poly::model::Program;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The block that replaces a region: the loops, with what they need around them. Its
/// text ([`ScopBlock::text`]) takes the region's statements as the file has them, which
/// run instead of the loops when the heap arrays of expanded variables cannot be allocated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopBlock {
    /// The index helpers' definitions, the region's own scalars and the heap arrays'
    /// allocations, one line each.
    head: Vec<String>,
    /// The loops, indented one level.
    loops: String,
    /// The heap arrays' names.
    heap: Vec<String>,
    /// The names of the helpers defined, undefined at the end.
    helpers: Vec<&'static str>,
    /// Whether it holds OpenMP pragmas (then the file needs `-fopenmp` to run in parallel).
    pub openmp: bool,
}

impl ScopBlock {
    /// The C text, a compound statement without a trailing newline; `original` is the
    /// region's text between its pragmas, run as it is when an allocation fails.
    pub fn text(&self, original: &str) -> String {
        let mut text = String::from("{\n");
        for line in &self.head {
            let _ = writeln!(text, "{line}");
        }
        if self.heap.is_empty() {
            text.push_str(&self.loops);
        } else {
            let _ = writeln!(text, "    if ({}) {{", self.heap.join(" && "));
            for line in self.loops.lines() {
                let _ = writeln!(text, "{}", indented(line));
            }
            text.push_str("    } else { /* out of memory: the region as written */\n");
            for line in original.lines() {
                let _ = writeln!(text, "{}", indented(&indented(line)));
            }
            text.push_str("    }\n");
        }
        for name in &self.heap {
            let _ = writeln!(text, "    __builtin_free({name});");
        }
        for name in &self.helpers {
            let _ = writeln!(text, "#undef {name}");
        }
        text.push('}');
        text
    }
}

/// `line` four columns further right (an empty line stays empty; a preprocessor line may
/// be indented).
fn indented(line: &str) -> String {
    if line.is_empty() {
        String::new()
    } else {
        format!("    {line}")
    }
}

/// The index helpers the loops may use, each as a macro of the block.
const HELPERS: [(&str, &str); 5] = [
    ("pc_min", "#define pc_min(a, b) ((a) < (b) ? (a) : (b))"),
    ("pc_max", "#define pc_max(a, b) ((a) > (b) ? (a) : (b))"),
    (
        "pc_floord",
        "#define pc_floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))",
    ),
    (
        "pc_ceild",
        "#define pc_ceild(n, d) (((n) < 0) ? -((-(n)) / (d)) : ((n) + (d) - 1) / (d))",
    ),
    ("pc_mod", "#define pc_mod(n, d) ((((n) % (d)) + (d)) % (d))"),
];

/// The prefix of the names the block declares (iterators, bounds, accumulators, panels).
pub const RESERVED_PREFIX: &str = "pc_";

/// The block executing `ast` (built from `program`'s schedule) over the user's variables.
pub fn scop_block(
    program: &Program,
    ast: &Node,
    options: LoopOptions,
) -> Result<ScopBlock, CodegenError> {
    let kernel = &program.kernel;
    // Every access of the region is made by the original program too, where it is within
    // its array or the program is undefined: none is checked.
    let in_bounds = |_: &str, _: usize| true;
    let apart = super::apart(program)?;
    let dialect = Dialect::Source;
    let arrays = Arrays {
        kernel,
        in_bounds: &in_bounds,
        apart: &apart,
        dialect,
    };
    let statements = Statements::new(program, &arrays)?;
    let params: BTreeMap<String, String> = (kernel.params.iter())
        .map(|p| (isl_name(&p.name), p.name.clone()))
        .collect();
    let ast = rename_iterators(ast, &params);
    let options = LoopOptions { dialect, ..options };
    let loops = print_loops(&ast, 1, &params, &statements, options)?;

    let mut head = Vec::new();
    let mut heap = Vec::new();
    for a in (kernel.arrays.iter()).filter(|a| a.role == Role::Temp) {
        let ty = dialect.storage(a.elem);
        if a.dims.is_empty() {
            head.push(format!("    {ty} {};", a.name));
            continue;
        }
        // On the heap: an expanded array may be as large as the kernel's largest. An
        // extent that is not positive (loops that do not run) allocates one element.
        let extents: Vec<String> = (a.dims.iter())
            .map(|d| format!("[pc_max(1, {})]", affine_in(dialect, d)))
            .collect();
        head.push(format!(
            "    {ty} (*restrict {}){} = __builtin_malloc(sizeof({ty}{}));",
            a.name,
            extents[1..].concat(),
            extents.concat()
        ));
        heap.push(a.name.clone());
    }
    let text = format!("{}{loops}", head.join("\n"));
    let used: Vec<&(&str, &str)> = (HELPERS.iter())
        .filter(|(name, _)| text.contains(&format!("{name}(")))
        .collect();
    let defines = used.iter().map(|(_, define)| define.to_string());
    Ok(ScopBlock {
        head: defines.chain(head).collect(),
        openmp: loops.contains("#pragma omp"),
        loops,
        heap,
        helpers: used.iter().map(|(name, _)| *name).collect(),
    })
}

/// `ast` with isl's iterators `cK` renamed `pc_cK` (the parameters, named in `params`, keep
/// their names).
fn rename_iterators(ast: &Node, params: &BTreeMap<String, String>) -> Node {
    let expr = |e: &Expr| rename_expr(e, params);
    match ast {
        Node::For(f) => Node::For(For {
            iterator: format!("{RESERVED_PREFIX}{}", f.iterator),
            init: expr(&f.init),
            cond: expr(&f.cond),
            step: f.step,
            parallel: f.parallel,
            body: Box::new(rename_iterators(&f.body, params)),
        }),
        Node::If(c, t, e) => Node::If(
            expr(c),
            Box::new(rename_iterators(t, params)),
            e.as_ref().map(|e| Box::new(rename_iterators(e, params))),
        ),
        Node::Block(children) => Node::Block(
            children
                .iter()
                .map(|c| rename_iterators(c, params))
                .collect(),
        ),
        Node::User(name, args) => Node::User(name.clone(), args.iter().map(expr).collect()),
    }
}

fn rename_expr(e: &Expr, params: &BTreeMap<String, String>) -> Expr {
    match e {
        Expr::Int(v) => Expr::Int(*v),
        Expr::Id(n) if params.contains_key(n) => Expr::Id(n.clone()),
        Expr::Id(n) => Expr::Id(format!("{RESERVED_PREFIX}{n}")),
        Expr::Op(op, args) => Expr::Op(*op, args.iter().map(|a| rename_expr(a, params)).collect()),
    }
}
