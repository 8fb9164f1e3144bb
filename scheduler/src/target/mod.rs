//! Target descriptions: what the optimizer and every back end know of the machine they
//! compile for, in one value.
//!
//! A [`Target`] lists memory levels (name, capacity, line or alignment, bandwidth), compute
//! units (a CPU's vector registers; an NPU's matrix and vector units) and cores. The host
//! CPU's is probed once per process ([`Target::host`]); an NPU's is read from the
//! simulator's own machine files ([`Target::npu`], `npu_sim::machine::Machine`), so that the
//! compiler and the simulator that judges its programs never disagree on a figure. Tests
//! build targets from fixed values ([`Target::cpu`] of a fixed
//! [`Machine`]), never the host's.
//!
//! The tile-size and register-block models read their figures through
//! [`Target::cache_model`] and [`Target::register_blocks`].

mod npu;

use crate::transform::tile_size::{Machine, RegisterBlocks};
use std::fmt;
use std::sync::OnceLock;

/// A memory level's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Memory {
    /// A CPU's level-1 data cache (per core).
    L1d,
    /// A CPU's level-2 cache.
    L2,
    /// A CPU's level-3 cache (shared).
    L3,
    /// An NPU's global memory (off chip, shared by the cores).
    Gm,
    /// An NPU core's L1 buffer.
    L1,
    /// An NPU core's buffer of the matrix unit's left operand.
    L0a,
    /// An NPU core's buffer of the matrix unit's right operand.
    L0b,
    /// An NPU core's buffer of the matrix unit's accumulators.
    L0c,
    /// An NPU core's unified buffer (the vector unit's operands).
    Ub,
}

/// One level of the memory hierarchy.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryLevel {
    /// Which level.
    pub name: Memory,
    /// Bytes (per core for private levels); `None`: large enough for any kernel's data.
    pub capacity: Option<u64>,
    /// A cache's line, or the alignment every buffer and access in the level needs, in bytes.
    pub align: u64,
    /// Bytes per cycle of the fastest data path into the level (for global memory, the
    /// bandwidth all cores share), where known.
    pub bytes_per_cycle: Option<f64>,
}

/// A unit that computes.
#[derive(Clone, Debug, PartialEq)]
pub enum ComputeUnit {
    /// A CPU core's SIMD unit.
    Simd {
        /// Bytes of one vector register.
        vector_bytes: u32,
        /// Vector registers in the register file.
        registers: u32,
    },
    /// A matrix unit: `C[m, n] += A[m, k] * B[k, n]` per cycle on tiles of these sizes.
    Matrix {
        /// Rows.
        m: u64,
        /// Columns.
        n: u64,
        /// Reduction depth for 16-bit inputs.
        k: u64,
        /// Reduction depth for 8-bit integer inputs.
        k_i8: u64,
        /// Where its operands A, B and C live.
        operands: [Memory; 3],
    },
    /// A vector unit that processes `bytes_per_repeat` bytes a cycle from the level `reads`.
    Vector {
        /// Bytes per repeat (one repeat a cycle).
        bytes_per_repeat: u64,
        /// Most repeats per instruction.
        max_repeat: u64,
        /// Where its operands live.
        reads: Memory,
    },
}

/// What the optimizer and a back end know of the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// Its name (`host`, a preset's name).
    pub name: String,
    /// Memory levels, innermost (closest to the compute units) first for a CPU; for an NPU,
    /// global memory first, then the on-chip tiers.
    pub memory: Vec<MemoryLevel>,
    /// Compute units of one core.
    pub compute: Vec<ComputeUnit>,
    /// Cores that run in parallel.
    pub cores: u32,
}

/// x86's 64-byte cache lines.
const CACHE_LINE: u64 = 64;

impl Target {
    /// The CPU running this process, probed once (caches from sysfs, vector width from the
    /// CPU's feature flags, cores from the threads this process may run).
    pub fn host() -> &'static Target {
        static HOST: OnceLock<Target> = OnceLock::new();
        HOST.get_or_init(|| Target::cpu("host", Machine::host()))
    }

    /// A CPU with the caches, vector width and cores of `machine`.
    pub fn cpu(name: &str, machine: Machine) -> Target {
        let cache = |name, bytes| MemoryLevel {
            name,
            capacity: Some(bytes),
            align: CACHE_LINE,
            bytes_per_cycle: None,
        };
        Target {
            name: name.to_owned(),
            memory: vec![
                cache(Memory::L1d, machine.l1d_bytes),
                cache(Memory::L2, machine.l2_bytes),
                cache(Memory::L3, machine.l3_bytes),
            ],
            compute: vec![ComputeUnit::Simd {
                vector_bytes: machine.vector_bytes,
                // AVX-512 has 32 vector registers, SSE and AVX2 16.
                registers: if machine.vector_bytes >= 64 { 32 } else { 16 },
            }],
            cores: machine.cores,
        }
    }

    /// The level named `name`, if the target has it.
    pub fn level(&self, name: Memory) -> Option<&MemoryLevel> {
        self.memory.iter().find(|l| l.name == name)
    }

    /// The figures the CPU tile-size model uses (`None` for a target without data caches).
    pub fn cache_model(&self) -> Option<Machine> {
        let bytes = |name| self.level(name).and_then(|l| l.capacity);
        let vector_bytes = self.compute.iter().find_map(|u| match u {
            ComputeUnit::Simd { vector_bytes, .. } => Some(*vector_bytes),
            _ => None,
        })?;
        Some(Machine {
            l1d_bytes: bytes(Memory::L1d)?,
            l2_bytes: bytes(Memory::L2)?,
            l3_bytes: bytes(Memory::L3).unwrap_or(Machine::FALLBACK.l3_bytes),
            vector_bytes,
            cores: self.cores,
        })
    }

    /// The register blocks of the target's register file (CPU targets).
    pub fn register_blocks(&self) -> Option<RegisterBlocks> {
        self.cache_model().map(|m| RegisterBlocks::for_machine(&m))
    }
}

impl fmt::Display for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Memory::L1d => "L1d",
            Memory::L2 => "L2",
            Memory::L3 => "L3",
            Memory::Gm => "GM",
            Memory::L1 => "L1",
            Memory::L0a => "L0A",
            Memory::L0b => "L0B",
            Memory::L0c => "L0C",
            Memory::Ub => "UB",
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "target {}: {} core(s)", self.name, self.cores)?;
        for l in &self.memory {
            let capacity = l
                .capacity
                .map_or("unbounded".to_string(), |c| format!("{c} bytes"));
            write!(
                f,
                "  memory {}: {capacity}, aligned to {} bytes",
                l.name, l.align
            )?;
            if let Some(b) = l.bytes_per_cycle {
                write!(f, ", {b} bytes/cycle in")?;
            }
            writeln!(f)?;
        }
        for u in &self.compute {
            match u {
                ComputeUnit::Simd {
                    vector_bytes,
                    registers,
                } => writeln!(f, "  simd: {registers} registers of {vector_bytes} bytes")?,
                ComputeUnit::Matrix {
                    m,
                    n,
                    k,
                    k_i8,
                    operands: [a, b, c],
                } => writeln!(
                    f,
                    "  matrix: {m}x{n}x{k} (i8: k {k_i8}) a cycle, A in {a}, B in {b}, C in {c}"
                )?,
                ComputeUnit::Vector {
                    bytes_per_repeat,
                    max_repeat,
                    reads,
                } => writeln!(
                    f,
                    "  vector: {bytes_per_repeat} bytes a repeat, at most {max_repeat} repeats, \
                     operands in {reads}"
                )?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ZEN3;

    #[test]
    fn a_cpu_target_gives_the_models_back_their_figures() {
        let t = Target::cpu("zen3", ZEN3);
        assert_eq!(t.cache_model(), Some(ZEN3));
        assert_eq!(
            t.register_blocks(),
            Some(RegisterBlocks::for_machine(&ZEN3))
        );
        assert_eq!(
            t.level(Memory::L2).and_then(|l| l.capacity),
            Some(512 << 10)
        );
        assert_eq!(t.level(Memory::Ub), None);
    }

    #[test]
    fn the_host_target_gives_back_the_probed_machine() {
        // Not a sizing test: it checks that no probed figure is lost on the way through
        // the target description.
        assert_eq!(Target::host().cache_model(), Some(Machine::host()));
    }
}
