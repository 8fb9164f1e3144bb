//! What a program's executions move: counted and marked from the simulator's own walk of
//! the program (`npu_sim::expand`), for what isl's emptiness questions cannot say.

use crate::npu::NpuError;
use npu_sim::expand::{expand, Budget, Space};
use npu_sim::program::{elements, Op, Program, TensorId};
use npu_sim::Machine;

/// Per tensor, the elements its stores write and which elements its loads read.
pub struct Traffic {
    /// Elements stored (not added) into each tensor over every execution, an element as
    /// often as it is stored.
    pub stored: Vec<u64>,
    /// One bit per element of each tensor: read by a load.
    loaded: Vec<Vec<u64>>,
}

impl Traffic {
    /// The traffic of `program` on `machine`.
    pub fn of(program: &Program, machine: &Machine) -> Result<Traffic, NpuError> {
        let refused = crate::npu::refused_by_simulator;
        let mut stored = vec![0; program.tensors.len()];
        let mut loaded: Vec<Vec<u64>> = (program.tensors.iter())
            .map(|t| vec![0; elements(&t.shape).div_ceil(64) as usize])
            .collect();
        let layout = npu_sim::layout::layout(program, machine).map_err(refused)?;
        let mut budget = Budget::default();
        for core in 0..machine.cores {
            for inst in expand(program, machine, &layout, core, &mut budget).map_err(refused)? {
                let atomic = matches!(&inst.instr.op, Op::Dma(d) if d.atomic);
                for a in &inst.accesses {
                    let Space::Gm(t) = a.space else { continue };
                    // bytes to elements
                    let size = program.tensor(t).dtype.size();
                    let p = a.pattern;
                    let (start, len, stride) = (p.start / size, p.len / size, p.stride / size);
                    let t = t.0 as usize;
                    match (a.write, atomic) {
                        (true, false) => stored[t] += p.count * len,
                        (true, true) => {}
                        (false, _) => {
                            for b in 0..p.count {
                                let from = (start + b * stride) as i64;
                                mark(&mut loaded[t], from, from + len as i64);
                            }
                        }
                    }
                }
            }
        }
        Ok(Traffic { stored, loaded })
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
