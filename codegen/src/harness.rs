//! A `main` for the generated kernel: parameters from the command line, inputs from `.npy`
//! files, the kernel timed, checksums printed as `polyc run` prints them, outputs written
//! as `.npy`.
//!
//! Usage of the compiled program: `PROG [NAME=VALUE]... [--in DIR] [--out DIR] [--repeat K]`.
//! Parameters not given take their defaults; an input without a file in `--in` gets
//! deterministic values (not the interpreter's: `polyc run --target cpu` passes files).
//! Each of the `K` runs starts from the same inputs; its time goes to standard error as
//! `polyc-time SECONDS`.

use crate::c::names::c_name;
use crate::c::stmt::{affine, by_value};
use crate::c::{function_name, types};
use crate::CodegenError;
use frontend::ir::{Cond, ElemType, Role};
use poly::model::Program;
use std::fmt::Write;

/// The harness runtime (npy I/O, checksums, timing).
pub const RUNTIME: &str = include_str!("../runtime/polyc_harness.h");

fn elem_code(e: ElemType) -> &'static str {
    match e {
        ElemType::F64 => "PC_F64",
        ElemType::F32 => "PC_F32",
        ElemType::F16 => "PC_F16",
        ElemType::BF16 => "PC_BF16",
        ElemType::I32 => "PC_I32",
        ElemType::I8 => "PC_I8",
    }
}

fn cond(c: &Cond) -> String {
    match c {
        Cond::Cmp(a, op, b) => format!("({} {} {})", affine(a), op.symbol(), affine(b)),
        Cond::And(a, b) => format!("({} && {})", cond(a), cond(b)),
        Cond::Or(a, b) => format!("({} || {})", cond(a), cond(b)),
    }
}

/// The harness's C text (after the runtime and the kernel function).
pub fn harness(program: &Program) -> Result<String, CodegenError> {
    let kernel = &program.kernel;
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "{RUNTIME}");
    let _ = writeln!(w, "int main(int argc, char **argv)\n{{");
    let _ = writeln!(
        w,
        "    const char *in_dir = NULL, *out_dir = NULL;\n    long repeat = 1;"
    );
    for p in &kernel.params {
        let name = c_name(&p.name);
        let _ = writeln!(
            w,
            "    long {name} = {}; int pc_has_{name} = {};",
            p.default.unwrap_or(0),
            p.default.is_some() as u8
        );
    }
    let _ = writeln!(w, "    for (int a = 1; a < argc; a++) {{");
    let _ = writeln!(
        w,
        "        if (!strcmp(argv[a], \"--in\") && a + 1 < argc) {{ in_dir = argv[++a]; continue; }}"
    );
    let _ = writeln!(
        w,
        "        if (!strcmp(argv[a], \"--out\") && a + 1 < argc) {{ out_dir = argv[++a]; continue; }}"
    );
    let _ = writeln!(
        w,
        "        if (!strcmp(argv[a], \"--repeat\") && a + 1 < argc) {{ repeat = atol(argv[++a]); continue; }}"
    );
    let _ = writeln!(
        w,
        "        char *eq = strchr(argv[a], '=');\n        if (!eq) pc_die(\"unexpected argument \", argv[a]);\n        *eq = '\\0';\n        char *end;\n        long v = strtol(eq + 1, &end, 10);\n        if (*end || end == eq + 1) pc_die(\"not an integer: \", eq + 1);"
    );
    for p in &kernel.params {
        let name = c_name(&p.name);
        let _ = writeln!(
            w,
            "        if (!strcmp(argv[a], \"{}\")) {{ {name} = v; pc_has_{name} = 1; continue; }}",
            p.name
        );
    }
    let _ = writeln!(
        w,
        "        pc_die(\"not a parameter of kernel {}: \", argv[a]);\n    }}",
        kernel.name
    );
    for p in &kernel.params {
        let name = c_name(&p.name);
        let _ = writeln!(
            w,
            "    if (!pc_has_{name}) pc_die(\"no value for parameter \", \"{}\");",
            p.name
        );
    }
    let mut constraints: Vec<String> = kernel.param_constraints.iter().map(cond).collect();
    constraints.extend(
        program
            .fixed
            .iter()
            .map(|(n, v)| format!("({} == {v}L)", c_name(n))),
    );
    if !constraints.is_empty() {
        let _ = writeln!(
            w,
            "    if (!({})) pc_die(\"the parameter values violate the kernel's constraints (or the values it was compiled for)\", \"\");",
            constraints.join(" && ")
        );
    }
    let arrays: Vec<(usize, &frontend::ir::Array)> = kernel
        .arrays
        .iter()
        .enumerate()
        .filter(|(_, a)| a.role != Role::Temp)
        .collect();
    for &(k, a) in &arrays {
        let dims: Vec<String> = a.dims.iter().map(affine).collect();
        let _ = writeln!(
            w,
            "    long pc_shape{k}[] = {{ {} }};\n    long pc_n{k} = 1;",
            if dims.is_empty() {
                "0".into()
            } else {
                dims.join(", ")
            }
        );
        let _ = writeln!(
            w,
            "    for (int d = 0; d < {}; d++) {{ if (pc_shape{k}[d] < 0) pc_die(\"negative extent of \", \"{}\"); pc_n{k} *= pc_shape{k}[d]; if (pc_n{k} > (1L << 31)) pc_die(\"too many elements in \", \"{}\"); }}",
            a.dims.len(),
            a.name,
            a.name
        );
        let ty = types::storage(a.elem);
        let _ = writeln!(
            w,
            "    {ty} *pc_a{k} = calloc((size_t)(pc_n{k} > 0 ? pc_n{k} : 1), sizeof({ty}));\n    {ty} *pc_init{k} = calloc((size_t)(pc_n{k} > 0 ? pc_n{k} : 1), sizeof({ty}));\n    if (!pc_a{k} || !pc_init{k}) pc_die(\"out of memory for \", \"{}\");",
            a.name
        );
        if a.role.is_input() {
            let _ = writeln!(
                w,
                "    if (!in_dir || !pc_read_npy(in_dir, \"{}\", {}, {}, pc_shape{k}, pc_init{k})) pc_fill_default({}, pc_n{k}, pc_init{k}, {k}u);",
                a.name,
                elem_code(a.elem),
                a.dims.len(),
                elem_code(a.elem)
            );
        }
    }
    // The call.
    let mut args: Vec<String> = kernel.params.iter().map(|p| c_name(&p.name)).collect();
    for &(k, _) in &arrays {
        args.push(if by_value(kernel, k) {
            format!("pc_a{k}[0]")
        } else {
            format!("pc_a{k}")
        });
    }
    let _ = writeln!(
        w,
        "    /* Start OpenMP's threads before timing (a no-op without OpenMP): the kernel time\n       is the kernel's, not the thread pool's creation. */\n    #pragma omp parallel\n    {{ }}\n    int fault = 0;\n    for (long r = 0; r < repeat; r++) {{"
    );
    for &(k, a) in &arrays {
        let _ = writeln!(
            w,
            "        memcpy(pc_a{k}, pc_init{k}, (size_t)pc_n{k} * sizeof({}));",
            types::storage(a.elem)
        );
    }
    let _ = writeln!(
        w,
        "        double t0 = pc_now();\n        fault = {}({});\n        fprintf(stderr, \"polyc-time %.9f\\n\", pc_now() - t0);\n        if (fault) {{ fprintf(stderr, \"error: kernel {}: %s\\n\", pc_fault_message(fault)); return 1; }}\n    }}",
        function_name(kernel),
        args.join(", "),
        kernel.name
    );
    let shown: Vec<String> = kernel
        .params
        .iter()
        .map(|p| format!("{}=%ld", p.name))
        .collect();
    let values: String = kernel
        .params
        .iter()
        .map(|p| format!(", {}", c_name(&p.name)))
        .collect();
    let _ = writeln!(
        w,
        "    printf(\"kernel {} ({})\\n\"{values});",
        kernel.name,
        shown.join(", ")
    );
    for &(k, a) in arrays.iter().filter(|(_, a)| a.role.is_output()) {
        let _ = writeln!(
            w,
            "    pc_print_checksum(\"{}\", {}, {}, pc_shape{k}, pc_a{k});\n    if (out_dir) pc_write_npy(out_dir, \"{}\", {}, {}, pc_shape{k}, pc_a{k});",
            a.name,
            elem_code(a.elem),
            a.dims.len(),
            a.name,
            elem_code(a.elem),
            a.dims.len()
        );
    }
    let _ = writeln!(w, "    return 0;\n}}");
    Ok(o)
}
