//! How well a model's predictions order candidate programs as their measured (simulated)
//! cycles order them: the share of candidate pairs ordered alike, with and without the
//! pairs that are essentially ties, and the recall of the fastest tenth. Used by `polyc
//! bench --target npu`; definitions in `docs/npu-backend.md`, "Comparing candidates".

use serde_json::{json, Value};

/// Two candidates whose measured cycles differ by less than this fraction of the smaller
/// are essentially tied.
pub const NEAR_TIE: f64 = 0.005;

/// The share of candidates the "top" sets hold: the fastest tenth.
pub const TOP_SHARE: f64 = 0.1;

/// The ranking figures of one kernel's candidates, or summed over several kernels (pairs
/// are only ever formed within a kernel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ranking {
    /// Pairs whose measured cycles differ.
    pub pairs: usize,
    /// Of those, the pairs the model orders the same way (a predicted tie orders nothing).
    pub agree: usize,
    /// Pairs whose measured cycles differ by at least [`NEAR_TIE`] of the smaller.
    pub pairs_apart: usize,
    /// Of those, the pairs the model orders the same way.
    pub agree_apart: usize,
    /// The size of the top sets: the ceiling of [`TOP_SHARE`] of the candidates.
    pub top: usize,
    /// How many of the model's `top` cheapest candidates are among the measured `top`
    /// fastest (a candidate tied with the `top`-th fastest counts as among them).
    pub top_found: usize,
}

/// `a` over `b` as a percentage (100 for an empty count).
pub fn percent(a: usize, b: usize) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

impl Ranking {
    /// The figures of one kernel's candidates, as (predicted, measured) cycles in the
    /// model's order (cheapest prediction first; the first is the model's choice).
    pub fn of(points: &[(f64, f64)]) -> Ranking {
        let mut r = Ranking::default();
        for (i, a) in points.iter().enumerate() {
            for b in &points[i + 1..] {
                if a.1 == b.1 {
                    continue;
                }
                let alike = a.0 != b.0 && (a.0 < b.0) == (a.1 < b.1);
                r.pairs += 1;
                r.agree += usize::from(alike);
                if (a.1 - b.1).abs() >= NEAR_TIE * a.1.min(b.1) {
                    r.pairs_apart += 1;
                    r.agree_apart += usize::from(alike);
                }
            }
        }
        if points.is_empty() {
            return r;
        }
        r.top = (TOP_SHARE * points.len() as f64).ceil() as usize;
        let mut measured: Vec<f64> = points.iter().map(|p| p.1).collect();
        measured.sort_by(f64::total_cmp);
        let bar = measured[r.top - 1];
        r.top_found = points[..r.top].iter().filter(|p| p.1 <= bar).count();
        r
    }

    /// The figures of `self` and `other` together.
    pub fn add(&mut self, other: &Ranking) {
        self.pairs += other.pairs;
        self.agree += other.agree;
        self.pairs_apart += other.pairs_apart;
        self.agree_apart += other.agree_apart;
        self.top += other.top;
        self.top_found += other.top_found;
    }

    /// The figures in a sentence.
    pub fn describe(&self) -> String {
        format!(
            "the model orders {} of {} candidate pairs as the simulator does ({:.0}%); \
             {} of the {} pairs {:.1}% or more apart ({:.0}%); \
             recall of the simulator's top 10%: {} of {} ({:.0}%)",
            self.agree,
            self.pairs,
            percent(self.agree, self.pairs),
            self.agree_apart,
            self.pairs_apart,
            100.0 * NEAR_TIE,
            percent(self.agree_apart, self.pairs_apart),
            self.top_found,
            self.top,
            percent(self.top_found, self.top),
        )
    }

    /// The figures as a JSON object.
    pub fn json(&self) -> Value {
        json!({
            "pairs": self.pairs,
            "agree": self.agree,
            "pairs_apart": self.pairs_apart,
            "agree_apart": self.agree_apart,
            "near_tie": NEAR_TIE,
            "top": self.top,
            "top_found": self.top_found,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_counted_when_the_simulator_tells_them_apart() {
        // (1, 10) < (2, 20) agree; (3, 15) is between them in simulation, last in prediction
        let points = [(1.0, 10.0), (2.0, 20.0), (3.0, 15.0), (4.0, 15.0)];
        let r = Ranking::of(&points);
        assert_eq!((r.agree, r.pairs), (3, 5));
        assert_eq!((r.agree_apart, r.pairs_apart), (3, 5));
    }

    #[test]
    fn near_ties_are_counted_apart() {
        // 1000 and 1004 are 0.4% apart: a pair, but not one of those apart
        let points = [(1.0, 1004.0), (2.0, 1000.0), (3.0, 1100.0)];
        let r = Ranking::of(&points);
        assert_eq!((r.agree, r.pairs), (2, 3));
        assert_eq!((r.agree_apart, r.pairs_apart), (2, 2));
    }

    #[test]
    fn the_top_tenth_counts_ties_with_its_last() {
        // eleven candidates: the top two; the model's first is the slowest, its second tied
        // with the simulator's second fastest (the fourth in the model's order)
        let mut points: Vec<(f64, f64)> = (0..11).map(|i| (i as f64, 100.0 + i as f64)).collect();
        points[0].1 = 200.0;
        points[1].1 = 102.0;
        points[2].1 = 101.0;
        points[3].1 = 102.0;
        let r = Ranking::of(&points);
        assert_eq!((r.top_found, r.top), (1, 2));
        let mut total = r;
        total.add(&Ranking::of(&[(1.0, 5.0)]));
        assert_eq!((total.top_found, total.top), (2, 3));
    }
}
