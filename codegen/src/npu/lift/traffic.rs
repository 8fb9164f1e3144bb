//! What a program's executions move: counted and marked by walking its loops with the
//! values of its expressions (no isl), for what isl's emptiness questions cannot say.

use super::{executions, Kind};
use npu_sim::program::{elements, Program, TensorId};

/// Per tensor, the elements its stores write and which elements its loads read.
pub struct Traffic {
    /// Elements stored (not added) into each tensor over every execution, an element as
    /// often as it is stored.
    pub stored: Vec<u64>,
    /// One bit per element of each tensor: read by a load.
    loaded: Vec<Vec<u64>>,
}

impl Traffic {
    /// The traffic of `program` on `cores` cores.
    pub fn of(program: &Program, cores: i64) -> Traffic {
        let mut stored = vec![0; program.tensors.len()];
        let mut loaded: Vec<Vec<u64>> = (program.tensors.iter())
            .map(|t| vec![0; elements(&t.shape).div_ceil(64) as usize])
            .collect();
        executions(program, cores, &mut |x| {
            let t = x.tensor.0 as usize;
            match x.kind {
                Kind::Store => stored[t] += (x.count * x.len).max(0) as u64,
                Kind::Add => {}
                Kind::Load => {
                    for b in 0..x.count {
                        let from = x.start + b * x.stride;
                        mark(&mut loaded[t], from, from + x.len);
                    }
                }
            }
        });
        Traffic { stored, loaded }
    }

    /// Whether a load reads element `f` of tensor `t`.
    pub fn is_loaded(&self, t: TensorId, f: i64) -> bool {
        let bits = &self.loaded[t.0 as usize];
        (0..bits.len() as i64 * 64).contains(&f) && bits[f as usize / 64] >> (f % 64) & 1 == 1
    }

    /// The first of the `size` elements of tensor `t` no load reads, if any.
    pub fn first_unloaded(&self, t: TensorId, size: u64) -> Option<i64> {
        let bits = &self.loaded[t.0 as usize];
        let word = bits.iter().position(|&w| w != u64::MAX)?;
        let f = word as i64 * 64 + bits[word].trailing_ones() as i64;
        (f < size as i64).then_some(f)
    }
}

/// Sets the bits `[from, to)` of `bits` (those within it).
fn mark(bits: &mut [u64], from: i64, to: i64) {
    let (from, to) = (
        from.max(0) as usize,
        (to.max(0) as usize).min(bits.len() * 64),
    );
    let mut f = from;
    while f < to {
        let (word, bit) = (f / 64, f % 64);
        let n = (64 - bit).min(to - f);
        let run = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << bit
        };
        bits[word] |= run;
        f += n;
    }
}

#[cfg(test)]
mod tests {
    use super::mark;

    #[test]
    fn ranges_set_exactly_their_bits() {
        for (from, to) in [
            (0, 0),
            (3, 70),
            (64, 128),
            (0, 200),
            (130, 131),
            (-5, 10),
            (190, 400),
        ] {
            let mut bits = vec![0u64; 3];
            mark(&mut bits, from, to);
            for f in 0..192i64 {
                let set = bits[f as usize / 64] >> (f % 64) & 1 == 1;
                assert_eq!(set, (from..to).contains(&f), "[{from}, {to}) at {f}");
            }
        }
    }
}
