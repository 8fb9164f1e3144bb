//! A kernel's exact-arithmetic twin: every floating-point array, temporary, operation and
//! conversion widened to `f64`, integers untouched. Run by the interpreter on the same
//! input values it approximates the real-number result the kernel's own types round, so
//! that two differently rounded runs of a kernel (the reference order and a reordered one)
//! can be judged by which is closer to it.

use crate::ir::{ElemType, Expr, Kernel, Node, Type};

/// `kernel` with `f16`, `bf16` and `f32` replaced by `f64` everywhere.
pub fn widened(kernel: &Kernel) -> Kernel {
    let mut k = kernel.clone();
    for a in &mut k.arrays {
        a.elem = wide(a.elem);
    }
    widen_nodes(&mut k.body);
    k
}

fn wide(e: ElemType) -> ElemType {
    match e.is_float() {
        true => ElemType::F64,
        false => e,
    }
}

fn widen_nodes(nodes: &mut [Node]) {
    for node in nodes {
        match node {
            Node::Loop(l) => widen_nodes(&mut l.body),
            Node::If(i) => widen_nodes(&mut i.then),
            Node::Stmt(s) => widen_expr(&mut s.rhs),
        }
    }
}

fn widen_expr(e: &mut Expr) {
    if let Type::Elem(t) = e.ty {
        e.ty = Type::Elem(wide(t));
    }
    for c in e.children_mut() {
        widen_expr(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SourceFile;

    #[test]
    fn floats_become_f64_and_integers_stay() {
        let text = "kernel k(X: f16[N], I: i32[N]) -> (Y: f32[N])\n  params N = 4\n{\n  for i in 0..N { Y[i] = f32(X[i] * 2.0) + f32(I[i]); }\n}\n";
        let k = crate::compile(&SourceFile::new("k.pk", text))
            .unwrap()
            .remove(0);
        let w = widened(&k);
        let elems: Vec<ElemType> = w.arrays.iter().map(|a| a.elem).collect();
        assert_eq!(elems, [ElemType::F64, ElemType::I32, ElemType::F64]);
        let Node::Loop(l) = &w.body[0] else { panic!() };
        let Node::Stmt(s) = &l.body[0] else { panic!() };
        let mut types = vec![];
        fn walk(e: &Expr, out: &mut Vec<Type>) {
            out.push(e.ty);
            e.children().into_iter().for_each(|c| walk(c, out));
        }
        walk(&s.rhs, &mut types);
        assert!(types.contains(&Type::Elem(ElemType::I32)), "{types:?}");
        assert!(
            (types.iter()).all(|t| matches!(t, Type::Elem(ElemType::F64 | ElemType::I32))),
            "{types:?}"
        );
    }
}
