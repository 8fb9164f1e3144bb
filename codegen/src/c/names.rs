//! C identifiers for the kernel's names.
//!
//! The generated code reserves the prefix `pc_` (runtime helpers, hoisted bounds), the loop
//! iterators `c0`, `c1`, ... (isl's) and every C keyword and C library name it uses; a user
//! name that collides with one of them gets a `_` suffix (and so does a user name already
//! ending in `_` that would collide after renaming).

/// C keywords and library names the generated code relies on.
const RESERVED: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Bool",
    "_Complex",
    "_Imaginary",
    "main",
    "exp",
    "expf",
    "log",
    "logf",
    "sqrt",
    "sqrtf",
    "tanh",
    "tanhf",
    "pow",
    "powf",
    "fabs",
    "fabsf",
    "floor",
    "floorf",
    "trunc",
    "isnan",
    "isfinite",
    "INFINITY",
    "NAN",
    "int8_t",
    "int32_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "memcpy",
    "calloc",
    "malloc",
    "free",
    "printf",
    "fprintf",
    "stderr",
    "stdout",
    "argc",
    "argv",
    "errno",
    "kernel",
    "bool",
    "true",
    "false",
];

fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
        || name.starts_with("pc_")
        || name.starts_with("PC_")
        || name.starts_with("kernel_")
        || (name.len() > 1
            && name.starts_with('c')
            && name[1..].bytes().all(|b| b.is_ascii_digit()))
}

/// The C spelling of a user-chosen name.
pub fn c_name(name: &str) -> String {
    let base = name.trim_end_matches('_');
    if is_reserved(name) || (base != name && is_reserved(base)) {
        format!("{name}_")
    } else {
        name.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collisions_are_renamed_consistently() {
        assert_eq!(c_name("A"), "A");
        assert_eq!(c_name("c0"), "c0_");
        assert_eq!(c_name("c0_"), "c0__");
        assert_eq!(c_name("double"), "double_");
        assert_eq!(c_name("pc_x"), "pc_x_");
        assert_eq!(c_name("cx"), "cx");
        assert_eq!(c_name("c"), "c");
    }
}
