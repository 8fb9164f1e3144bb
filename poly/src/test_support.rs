//! Helpers of the crate's unit tests.

use crate::isl::Ctx;
use crate::model::Program;

/// The first kernel of `source`, lifted with the parameters of `fixed` fixed.
pub fn program(source: &str, fixed: &[(&str, i64)]) -> Program {
    let file = frontend::SourceFile::new("test.pk", source);
    let kernel = frontend::compile(&file)
        .expect("test kernel compiles")
        .remove(0);
    let fixed = fixed.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    Program::build(&Ctx::default(), &kernel, &fixed).expect("test kernel lifts")
}
