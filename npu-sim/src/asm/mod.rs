//! The `.npu` text assembly: lexer, parser and printer.

pub mod lexer;
pub mod parser;
pub mod printer;

pub use printer::print;

/// Parses `.npu` source into a program (machine-independent checks included).
pub fn assemble(source: &str) -> Result<crate::Program, crate::Diagnostic> {
    parser::parse(source)
}
