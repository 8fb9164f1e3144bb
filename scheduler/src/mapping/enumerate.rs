//! Enumeration of compute mappings: which software loops each intrinsic loop receives.
//!
//! A *match point* gives every intrinsic loop one software loop of the same kind. It is
//! index-compatible when, with every other loop held fixed, each index of each operand is
//! exactly one software index dimension and the remaining dimensions are constant (so
//! `p -> i1` with `r -> r1` is not: the image index `p + r` is neither). A compute mapping
//! is a union of compatible match points: each intrinsic loop receives the software loops
//! its points give it, fused (linearised, outer to inner) onto it. The loops no point
//! uses stay outside the intrinsic, as ordinary loops.

use super::intrinsic::Intrinsic;
use super::software::{linear_coefficients, Software};
use frontend::ir::Access;
use std::collections::BTreeMap;

/// The software loops (indices into [`Software::loops`]) each intrinsic loop receives.
pub type Groups = Vec<Vec<usize>>;

/// Whether a match point (`point[x]`: the software loop of intrinsic loop `x`) is
/// index-compatible for the bound accesses.
pub fn compatible(sw: &Software, intr: &Intrinsic, binding: &[Access], point: &[usize]) -> bool {
    let mapped: Vec<&str> = point.iter().map(|&l| sw.loops[l].var.as_str()).collect();
    intr.operands.iter().enumerate().all(|(o, op)| {
        let access = &binding[o];
        // each software dimension's coefficients on the mapped loops
        let coeffs: Option<Vec<BTreeMap<String, i64>>> = (access.indices.iter())
            .map(|e| {
                linear_coefficients(e).map(|mut c| {
                    c.retain(|v, _| mapped.contains(&v.as_str()));
                    c
                })
            })
            .collect();
        let Some(coeffs) = coeffs else {
            return false;
        };
        let mut used = vec![false; coeffs.len()];
        for x in op.dims.iter().flatten() {
            let want = BTreeMap::from([(mapped[*x].to_string(), 1)]);
            match (0..coeffs.len()).find(|&d| !used[d] && coeffs[d] == want) {
                Some(d) => used[d] = true,
                None => return false,
            }
        }
        (0..coeffs.len()).all(|d| used[d] || coeffs[d].is_empty())
    })
}

/// Every compute mapping of the statement onto the intrinsic, in a fixed order. Loops whose
/// values depend on other loops (or on guards) are never mapped.
pub fn mappings(sw: &Software, intr: &Intrinsic, binding: &[Access]) -> Vec<Groups> {
    let kinds = sw.kinds();
    let choices: Vec<Vec<Option<usize>>> = (0..sw.loops.len())
        .map(|l| {
            let mut c = vec![None];
            if sw.rectangular(l).is_some() {
                c.extend(
                    (0..intr.loops.len())
                        .filter(|&x| intr.loops[x].kind == kinds[l])
                        .map(Some),
                );
            }
            c
        })
        .collect();
    let mut out = Vec::new();
    let mut assign = vec![None; sw.loops.len()];
    search(0, &choices, &mut assign, &mut |assign| {
        let mut groups: Groups = vec![Vec::new(); intr.loops.len()];
        for (l, x) in assign.iter().enumerate() {
            if let Some(x) = x {
                groups[*x].push(l);
            }
        }
        if groups.iter().all(|g| !g.is_empty()) && is_union_of_points(sw, intr, binding, &groups) {
            out.push(groups);
        }
    });
    out
}

fn search(
    l: usize,
    choices: &[Vec<Option<usize>>],
    assign: &mut Vec<Option<usize>>,
    visit: &mut dyn FnMut(&[Option<usize>]),
) {
    if l == choices.len() {
        visit(assign);
        return;
    }
    for &c in &choices[l] {
        assign[l] = c;
        search(l + 1, choices, assign, visit);
    }
}

/// Whether every loop of every group lies on a compatible match point inside the groups.
fn is_union_of_points(
    sw: &Software,
    intr: &Intrinsic,
    binding: &[Access],
    groups: &Groups,
) -> bool {
    let points = points_within(groups);
    let good: Vec<&Vec<usize>> = points
        .iter()
        .filter(|p| compatible(sw, intr, binding, p))
        .collect();
    groups
        .iter()
        .enumerate()
        .all(|(x, g)| g.iter().all(|l| good.iter().any(|p| p[x] == *l)))
}

/// Every match point choosing one loop from each group.
fn points_within(groups: &Groups) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for g in groups {
        out = out
            .into_iter()
            .flat_map(|p: Vec<usize>| {
                g.iter().map(move |&l| {
                    let mut q = p.clone();
                    q.push(l);
                    q
                })
            })
            .collect();
    }
    out
}
