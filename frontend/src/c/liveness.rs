//! Which of a region's variables the function never reads after the region: locals with
//! automatic storage that the function names nowhere but in their declaration and the
//! region. Their values at the end of the region are dead, so that later stages may give
//! them storage of their own (array expansion).

use super::lexer::Tok;
use super::linemap::PpToken;
use super::lower::vars::Origin;
use crate::ir::{ArrayId, Kernel};
use std::ops::Range;

/// The arrays of `kernel` (one per variable, `origins` saying where each is declared) that
/// are locals of the function whose body is `body`, named outside the region `region`
/// (token ranges of `toks`) only in their own declaration, and not `static`.
pub fn dead_after(
    toks: &[PpToken],
    body: Range<usize>,
    region: Range<usize>,
    kernel: &Kernel,
    origins: &[Origin],
) -> Vec<ArrayId> {
    let outside = |k: &usize| !region.contains(k);
    (kernel.arrays.iter().zip(origins).enumerate())
        .filter(|(_, (_, origin))| **origin == Origin::Local)
        .filter(|(_, (array, _))| {
            let named: Vec<usize> = (body.clone())
                .filter(outside)
                .filter(|&k| matches!(&toks[k].tok, Tok::Ident(n) if *n == array.name))
                .collect();
            matches!(named.as_slice(), [only] if !is_static(toks, body.start, *only))
        })
        .map(|(a, _)| ArrayId(a))
        .collect()
}

/// Whether the declaration holding token `at` says `static` (looking back to the end of the
/// previous statement or block, at `floor` at the latest).
fn is_static(toks: &[PpToken], floor: usize, at: usize) -> bool {
    use super::lexer::Punct;
    toks[floor..at]
        .iter()
        .rev()
        .take_while(|t| !matches!(t.tok, Tok::P(Punct::Semi | Punct::LBrace | Punct::RBrace)))
        .any(|t| matches!(&t.tok, Tok::Ident(n) if n == "static"))
}
