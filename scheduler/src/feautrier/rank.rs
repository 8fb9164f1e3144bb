//! The linear span of a statement's schedule rows (iterator coefficients only), to complete
//! a schedule with independent rows.

use num_rational::Rational64;
use num_traits::Zero;

/// A basis in echelon form of the rows inserted so far.
pub struct Span {
    dim: usize,
    /// Reduced rows, each with its pivot column.
    basis: Vec<(usize, Vec<Rational64>)>,
}

impl Span {
    /// The empty span in `dim` dimensions.
    pub fn new(dim: usize) -> Span {
        Span {
            dim,
            basis: Vec::new(),
        }
    }
    /// The number of dimensions.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// Whether the span is the whole space.
    pub fn is_full(&self) -> bool {
        self.basis.len() == self.dim
    }
    /// Adds a row; returns whether it was independent of the span.
    pub fn insert(&mut self, row: &[i64]) -> bool {
        let mut v: Vec<Rational64> = row.iter().map(|&c| Rational64::from_integer(c)).collect();
        for (pivot, b) in &self.basis {
            if !v[*pivot].is_zero() {
                let f = v[*pivot] / b[*pivot];
                for (x, y) in v.iter_mut().zip(b) {
                    *x -= f * y;
                }
            }
        }
        match v.iter().position(|x| !x.is_zero()) {
            Some(pivot) => {
                self.basis.push((pivot, v));
                true
            }
            None => false,
        }
    }
    /// The first unit vector outside the span.
    pub fn next_unit(&self) -> Option<usize> {
        (0..self.dim).find(|&k| {
            let mut probe = Span {
                dim: self.dim,
                basis: self.basis.clone(),
            };
            let mut unit = vec![0; self.dim];
            unit[k] = 1;
            probe.insert(&unit)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_a_skewed_row() {
        let mut s = Span::new(2);
        assert!(s.insert(&[1, 1]));
        assert!(!s.insert(&[2, 2]));
        assert_eq!(s.next_unit(), Some(0));
        assert!(s.insert(&[1, 0]));
        assert!(s.is_full());
        assert_eq!(s.next_unit(), None);
    }
}
