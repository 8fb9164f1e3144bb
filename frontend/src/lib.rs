//! polyc's front ends: the kernel language (documented in `docs/language.md`) and the
//! static control parts of C files ([`c`], `docs/c-frontend.md`), from source text to the
//! checked [`ir::Kernel`].
//!
//! The front end knows nothing of isl: it checks affinity syntactically and hands over
//! affine expression trees. The kernel language's pipeline is [`lexer`] -> [`parser`] (surface [`ast`]) ->
//! [`check`] (names, types, shapes, affinity, lowering of tensor expressions) -> [`ir`].

#![warn(missing_docs)]

pub mod ast;
pub mod c;
pub mod check;
pub mod diagnostics;
pub mod ir;
pub mod ir_display;
pub mod lexer;
pub mod parser;
pub mod printer;
pub mod source;
pub mod span;
pub mod widen;

pub use diagnostics::{Code, Diagnostic, Diagnostics};
pub use source::{read_source, SourceFile};

/// Stack size of the thread the front end runs on: unoptimised builds use over 10 KiB of
/// stack per nesting level, and [`parser::MAX_DEPTH`] levels must fit.
const STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a thread with a stack of [`STACK_BYTES`] (the recursion in the parser and
/// checker is bounded by [`parser::MAX_DEPTH`], not by the caller's stack).
pub(crate) fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, f)
        {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(err) => panic!("cannot start the front-end thread: {err}"),
        }
    })
}

/// Parses a file into its surface syntax tree (what [`printer`] prints back).
pub fn parse(file: &SourceFile) -> Result<ast::File, Diagnostics> {
    on_big_stack(|| parse_here(file))
}

fn parse_here(file: &SourceFile) -> Result<ast::File, Diagnostics> {
    let (tokens, mut diags) = lexer::lex(&file.text);
    let (ast, parse_diags) = parser::parse_tokens(&tokens);
    diags.extend(parse_diags);
    if diags.is_empty() {
        Ok(ast)
    } else {
        Err(Diagnostics::new(diags))
    }
}

/// Parses and checks an intrinsic file: every `intrinsic` it holds, lowered like a kernel,
/// with its operands' tiers.
pub fn compile_intrinsics(file: &SourceFile) -> Result<Vec<ir::Intrinsic>, Diagnostics> {
    on_big_stack(|| {
        let ast = parse_here(file)?;
        let (intrinsics, diags) = check::check_intrinsics(&ast, file.text.len());
        if diags.is_empty() {
            Ok(intrinsics)
        } else {
            Err(Diagnostics::new(diags))
        }
    })
}

/// Parses and checks a file: every kernel it holds, lowered to the checked IR.
pub fn compile(file: &SourceFile) -> Result<Vec<ir::Kernel>, Diagnostics> {
    on_big_stack(|| compile_here(file))
}

fn compile_here(file: &SourceFile) -> Result<Vec<ir::Kernel>, Diagnostics> {
    let ast = parse_here(file)?;
    let (kernels, diags) = check::check_file(&ast, file.text.len());
    if diags.is_empty() {
        Ok(kernels)
    } else {
        Err(Diagnostics::new(diags))
    }
}
