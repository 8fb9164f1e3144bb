//! The original execution order as an isl schedule tree.
//!
//! Each loop becomes a one-dimensional band (`-i` for a reversed loop), each list of several
//! siblings a sequence node whose filters select the statements below each sibling. Guards
//! need no node: the domains already hold them. The tree is written in isl's YAML notation
//! and read back, which keeps this module free of schedule-node surgery.

use super::{tuple_text, Statement};
use crate::isl::{Ctx, IslResult, Schedule};
use frontend::ir::{Kernel, Node};

/// The schedule tree of the kernel's textual order.
pub fn original(ctx: &Ctx, kernel: &Kernel, statements: &[Statement]) -> IslResult<Schedule> {
    let domain_text = if statements.is_empty() {
        "{ }".to_string()
    } else {
        let mut u = statements[0].domain.apply(isl_rs::UnionSet::from_set)?;
        for s in &statements[1..] {
            u = u.union(&s.domain.apply(isl_rs::UnionSet::from_set)?)?;
        }
        u.to_string()
    };
    let mut next = 0;
    let child = subtree(&kernel.body, statements, &mut next);
    let text = match child {
        Some(c) => format!("{{ domain: \"{domain_text}\", child: {c} }}"),
        None => format!("{{ domain: \"{domain_text}\" }}"),
    };
    ctx.schedule(&text)
}

/// The statements (by index) below each node of a list, numbered in textual order from
/// `*next`.
fn subtree(nodes: &[Node], statements: &[Statement], next: &mut usize) -> Option<String> {
    let children: Vec<(Vec<usize>, Option<String>)> = nodes
        .iter()
        .map(|n| {
            let first = *next;
            let tree = node_tree(n, statements, next);
            ((first..*next).collect::<Vec<usize>>(), tree)
        })
        .filter(|(stmts, _)| !stmts.is_empty())
        .collect();
    match children.len() {
        0 => None,
        1 => children.into_iter().next().and_then(|(_, t)| t),
        _ => {
            let items: Vec<String> = children
                .into_iter()
                .map(|(stmts, tree)| {
                    let filter = filter_text(&stmts, statements);
                    match tree {
                        Some(t) => format!("{{ filter: \"{filter}\", child: {t} }}"),
                        None => format!("{{ filter: \"{filter}\" }}"),
                    }
                })
                .collect();
            Some(format!("{{ sequence: [ {} ] }}", items.join(", ")))
        }
    }
}

fn node_tree(node: &Node, statements: &[Statement], next: &mut usize) -> Option<String> {
    match node {
        Node::Stmt(_) => {
            *next += 1;
            None
        }
        Node::If(i) => subtree(&i.then, statements, next),
        Node::Loop(l) => {
            let first = *next;
            let below = subtree(&l.body, statements, next);
            let stmts: Vec<usize> = (first..*next).collect();
            if stmts.is_empty() {
                return None;
            }
            let var = super::isl_name(&l.var);
            let value = if l.reverse {
                format!("(-{var})")
            } else {
                format!("({var})")
            };
            let pieces: Vec<String> = stmts
                .iter()
                .map(|&k| {
                    let s = &statements[k];
                    format!("{} -> [{value}]", tuple_text(&s.tuple, &s.iterators))
                })
                .collect();
            let band = format!("schedule: \"[{{ {} }}]\"", pieces.join("; "));
            Some(match below {
                Some(c) => format!("{{ {band}, child: {c} }}"),
                None => format!("{{ {band} }}"),
            })
        }
    }
}

fn filter_text(stmts: &[usize], statements: &[Statement]) -> String {
    let parts: Vec<String> = stmts
        .iter()
        .map(|&k| tuple_text(&statements[k].tuple, &statements[k].iterators))
        .collect();
    format!("{{ {} }}", parts.join("; "))
}
