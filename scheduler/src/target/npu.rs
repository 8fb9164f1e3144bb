//! NPU targets, read from the simulator's machine descriptions.

use super::{ComputeUnit, Memory, MemoryLevel, Target};
use npu_sim::machine::{Machine, MachineError, Mem};

impl Target {
    /// The NPU that the simulator's machine `name_or_path` describes (a preset such as
    /// `ascend-like`, or a TOML file): the same capacities, alignments and bandwidths, so
    /// that a program sized for the target fits the machine that runs it.
    pub fn npu(name_or_path: &str) -> Result<Target, MachineError> {
        Ok(Target::of_npu(&Machine::load(name_or_path)?))
    }

    /// The target of a simulator machine description.
    pub fn of_npu(m: &Machine) -> Target {
        let into = |to: Mem| {
            (m.paths.iter())
                .filter(|p| p.to == to)
                .map(|p| p.bytes_per_cycle)
                .reduce(f64::max)
        };
        let gm = MemoryLevel {
            name: Memory::Gm,
            capacity: None,
            align: m.gm.align,
            bytes_per_cycle: Some(m.gm.bytes_per_cycle_total),
        };
        let tiers = m.tiers.iter().map(|(&mem, spec)| MemoryLevel {
            name: memory(mem),
            capacity: Some(spec.capacity),
            align: spec.align,
            bytes_per_cycle: into(mem),
        });
        Target {
            name: m.name.clone(),
            memory: std::iter::once(gm).chain(tiers).collect(),
            compute: vec![
                ComputeUnit::Matrix {
                    m: m.cube.m0,
                    n: m.cube.n0,
                    k: m.cube.k0,
                    k_i8: m.cube.k0_i8,
                    operands: [memory(m.cube.a), memory(m.cube.b), memory(m.cube.c)],
                },
                ComputeUnit::Vector {
                    bytes_per_repeat: m.vector.bytes_per_repeat,
                    max_repeat: m.vector.max_repeat,
                    reads: Memory::Ub,
                },
            ],
            cores: m.cores,
        }
    }
}

/// The target's name of a simulator memory.
fn memory(mem: Mem) -> Memory {
    match mem {
        Mem::Gm => Memory::Gm,
        Mem::L1 => Memory::L1,
        Mem::L0a => Memory::L0a,
        Mem::L0b => Memory::L0b,
        Mem::L0c => Memory::L0c,
        Mem::Ub => Memory::Ub,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_agrees_with_the_simulator() {
        for name in Machine::preset_names() {
            let machine = Machine::preset(name).unwrap();
            let target = Target::npu(name).unwrap();
            assert_eq!(target.cores, machine.cores);
            assert_eq!(target.cache_model(), None);
            for (&mem, spec) in &machine.tiers {
                let level = target.level(memory(mem)).unwrap();
                assert_eq!(
                    (level.capacity, level.align),
                    (Some(spec.capacity), spec.align)
                );
            }
            assert_eq!(target.memory.len(), machine.tiers.len() + 1);
        }
    }

    #[test]
    fn ascend_like_has_a_16_cube_fed_from_l0() {
        let t = Target::npu("ascend-like").unwrap();
        assert!(t.compute.contains(&ComputeUnit::Matrix {
            m: 16,
            n: 16,
            k: 16,
            k_i8: 32,
            operands: [Memory::L0a, Memory::L0b, Memory::L0c],
        }));
        assert_eq!(t.level(Memory::L0a).unwrap().bytes_per_cycle, Some(512.0));
        assert!(Target::npu("no-such-machine").is_err());
    }
}
