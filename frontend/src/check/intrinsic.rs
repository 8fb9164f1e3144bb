//! Declaration kinds and intrinsic files: a kernel file holds kernels only (no tier
//! annotations), an intrinsic file intrinsics only, each operand with its tier, no
//! parameters, no temporaries and constant extents. An intrinsic is then checked and
//! lowered exactly like a kernel.

use crate::ast::{self, DeclKind, Item};
use crate::diagnostics::{Code, Diagnostic};
use crate::ir::{Intrinsic, Kernel};

/// Diagnostics for declarations of the wrong kind, and for tiers where they do not belong
/// (in a kernel) or are missing (in an intrinsic).
pub(super) fn decl_kinds(file: &ast::File, expected: DeclKind) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for decl in &file.kernels {
        if decl.kind != expected {
            let (message, label, note) = match expected {
                DeclKind::Kernel => (
                    "an `intrinsic` in a kernel file",
                    "this is an intrinsic",
                    "intrinsics belong in an intrinsic file (`--intrinsics FILE`)",
                ),
                DeclKind::Intrinsic => (
                    "a `kernel` in an intrinsic file",
                    "this is a kernel",
                    "an intrinsic file declares intrinsics only",
                ),
            };
            diags.push(
                Diagnostic::new(Code::WrongDeclKind, message, decl.name.span, label)
                    .with_note(note),
            );
            continue;
        }
        let arrays = decl.args.iter().map(|a| &a.decl).chain(&decl.outputs);
        match expected {
            DeclKind::Kernel => {
                let lets = lets(&decl.body);
                for d in arrays.chain(lets) {
                    if let Some(t) = &d.tier {
                        diags.push(
                            Diagnostic::new(
                                Code::TierOutsideIntrinsic,
                                format!("array `{}` of a kernel has a tier annotation", d.name.name),
                                t.span,
                                "tiers are for intrinsic operands",
                            )
                            .with_note("a kernel's arrays live in global memory; the compiler places their tiles in tiers"),
                        );
                    }
                }
            }
            DeclKind::Intrinsic => {
                for d in arrays {
                    if d.tier.is_none() {
                        diags.push(Diagnostic::new(
                            Code::MissingTier,
                            format!("operand `{}` has no tier", d.name.name),
                            d.span,
                            "write `@ TIER` after the type, e.g. `@ L0A`",
                        ));
                    }
                }
                if let Some(p) = decl.params.first() {
                    diags.push(Diagnostic::new(
                        Code::IntrinsicShape,
                        "an intrinsic has no parameters",
                        p.name.span,
                        "an intrinsic's sizes are constants",
                    ));
                }
                if let Some(l) = lets(&decl.body).next() {
                    diags.push(Diagnostic::new(
                        Code::IntrinsicShape,
                        "an intrinsic has no temporaries",
                        l.span,
                        "`let` is not allowed here",
                    ));
                }
            }
        }
    }
    diags
}

fn lets(items: &[Item]) -> impl Iterator<Item = &ast::ArrayDecl> {
    let mut out = Vec::new();
    ast::walk_items(items, &mut |i| {
        if let Item::Let(d) = i {
            out.push(d)
        }
    });
    out.into_iter()
}

/// Pairs each checked intrinsic with the tiers written on its operands; diagnostics for
/// extents that are not constants.
pub(super) fn with_tiers(
    file: &ast::File,
    kernels: Vec<Kernel>,
) -> (Vec<Intrinsic>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut out = Vec::new();
    for (decl, kernel) in file.kernels.iter().zip(kernels) {
        let decls: Vec<&ast::ArrayDecl> = decl
            .args
            .iter()
            .map(|a| &a.decl)
            .chain(&decl.outputs)
            .collect();
        let mut tiers = Vec::new();
        for a in &kernel.arrays {
            let d = decls.iter().find(|d| d.name.name == a.name);
            if a.dims
                .iter()
                .any(|e| !matches!(e, crate::ir::AffExpr::Const(_)))
            {
                diags.push(Diagnostic::new(
                    Code::IntrinsicShape,
                    format!("operand `{}` has an extent that is not a constant", a.name),
                    a.span,
                    "an intrinsic's sizes are constants",
                ));
            }
            match d.and_then(|d| d.tier.as_ref()) {
                Some(t) => tiers.push((t.name.clone(), t.span)),
                None => tiers.push((String::new(), a.span)),
            }
        }
        out.push(Intrinsic {
            kernel,
            tiers,
            span: decl.span,
        });
    }
    (out, diags)
}
