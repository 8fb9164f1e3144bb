//! Linear independence of a statement's hyperplanes (Pluto's orthogonal-subspace
//! constraints).
//!
//! With the iterator coefficients `H` (one row per hyperplane found so far) of a statement,
//! a new hyperplane `c` is independent of them if its projection on the orthogonal complement
//! of `H`'s rows is not zero. That is not a convex condition; like Pluto we ask for
//! `v . c >= 0` for every basis vector `v` of the complement and `sum_v v . c >= 1` (one
//! orthant of the complement), and also try the opposite orthant (`-v`) when that fails,
//! which covers loops that must run backwards.

use num_rational::Ratio;
use num_traits::{One, Zero};

type Q = Ratio<i128>;

/// An integer basis of the vectors orthogonal to every row of `rows` (each of length `n`),
/// i.e. of the null space of the matrix; empty when the rows have full rank `n`.
pub fn orthogonal_complement(rows: &[Vec<i64>], n: usize) -> Vec<Vec<i64>> {
    let mut m: Vec<Vec<Q>> = rows
        .iter()
        .map(|r| r.iter().map(|&x| Q::from_integer(i128::from(x))).collect())
        .collect();
    // Reduced row echelon form.
    let mut pivots = Vec::new();
    let mut r = 0;
    for c in 0..n {
        let Some(p) = (r..m.len()).find(|&i| !m[i][c].is_zero()) else {
            continue;
        };
        m.swap(r, p);
        let lead = m[r][c];
        m[r].iter_mut().for_each(|x| *x /= lead);
        for i in 0..m.len() {
            if i != r && !m[i][c].is_zero() {
                let f = m[i][c];
                let pivot_row = m[r].clone();
                m[i].iter_mut()
                    .zip(&pivot_row)
                    .for_each(|(x, &y)| *x -= f * y);
            }
        }
        pivots.push(c);
        r += 1;
    }
    (0..n)
        .filter(|c| !pivots.contains(c))
        .map(|free| {
            let mut v = vec![Q::zero(); n];
            v[free] = Q::one();
            for (row, &pc) in pivots.iter().enumerate() {
                v[pc] = -m[row][free];
            }
            integral(&v)
        })
        .collect()
}

/// The rank of a set of rows of length `n`.
pub fn rank(rows: &[Vec<i64>], n: usize) -> usize {
    n - orthogonal_complement(rows, n).len()
}

/// The smallest integer multiple of a rational vector with coprime entries.
fn integral(v: &[Q]) -> Vec<i64> {
    let lcm = v.iter().fold(1i128, |acc, x| lcm(acc, *x.denom()));
    let ints: Vec<i128> = v.iter().map(|x| (x * lcm).to_integer()).collect();
    let g = ints.iter().fold(0i128, |acc, x| gcd(acc, x.abs())).max(1);
    ints.iter().map(|x| (x / g) as i64).collect()
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: i128, b: i128) -> i128 {
    (a / gcd(a, b) * b).abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[i64], b: &[i64]) -> i64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn complement_is_orthogonal_and_completes_the_rank() {
        let rows = vec![vec![1, 1, 0], vec![2, 1, 1]];
        let comp = orthogonal_complement(&rows, 3);
        assert_eq!(comp.len(), 1);
        for r in &rows {
            assert_eq!(dot(r, &comp[0]), 0);
        }
        assert_eq!(rank(&rows, 3), 2);
        assert_eq!(rank(&[vec![1, 0], vec![2, 0]], 2), 1);
    }

    #[test]
    fn empty_rows_give_the_unit_basis() {
        assert_eq!(orthogonal_complement(&[], 2), vec![vec![1, 0], vec![0, 1]]);
        assert!(orthogonal_complement(&[vec![0, 3], vec![5, 0]], 2).is_empty());
    }

    #[test]
    fn basis_vectors_are_primitive_integers() {
        // x + 2y + 3z = 0: (-2, 1, 0), (-3, 0, 1)
        let comp = orthogonal_complement(&[vec![2, 4, 6]], 3);
        assert_eq!(comp, vec![vec![-2, 1, 0], vec![-3, 0, 1]]);
    }
}
