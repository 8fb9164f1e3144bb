//! The machine description: capacities, alignments, data paths, bandwidths, latencies and unit
//! throughputs, read from TOML, with the built-in presets `ascend-like`, `ascend-like-halfgm`,
//! `ub-only` and `mini`.

use crate::program::{Pipe, Tier};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// Why a machine file was rejected.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// Not TOML, an unknown key, a wrong type.
    #[error("{0}")]
    Parse(String),
    /// Well-formed but inconsistent.
    #[error("invalid machine description: {0}")]
    Invalid(String),
    /// Neither a preset nor a readable file.
    #[error("unknown machine `{0}` (presets: ascend-like, ascend-like-halfgm, ub-only, mini)")]
    Unknown(String),
}

/// A memory endpoint of a data path: GM or an on-chip tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Mem {
    /// Global memory.
    Gm,
    /// L1.
    L1,
    /// L0A.
    L0a,
    /// L0B.
    L0b,
    /// L0C.
    L0c,
    /// Unified buffer.
    Ub,
}

impl Mem {
    /// The on-chip tier, or None for GM.
    pub fn tier(self) -> Option<Tier> {
        match self {
            Mem::Gm => None,
            Mem::L1 => Some(Tier::L1),
            Mem::L0a => Some(Tier::L0a),
            Mem::L0b => Some(Tier::L0b),
            Mem::L0c => Some(Tier::L0c),
            Mem::Ub => Some(Tier::Ub),
        }
    }
    /// The endpoint of a tier (GM for None).
    pub fn of(tier: Option<Tier>) -> Mem {
        match tier {
            None => Mem::Gm,
            Some(Tier::L1) => Mem::L1,
            Some(Tier::L0a) => Mem::L0a,
            Some(Tier::L0b) => Mem::L0b,
            Some(Tier::L0c) => Mem::L0c,
            Some(Tier::Ub) => Mem::Ub,
        }
    }
}

impl fmt::Display for Mem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.tier().map_or("gm", Tier::name))
    }
}

/// Capacity and alignment of one on-chip tier.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierSpec {
    /// Bytes.
    pub capacity: u64,
    /// Every buffer and access starts at a multiple of this many bytes.
    pub align: u64,
}

/// Global memory.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GmSpec {
    /// Bandwidth shared by every GM transfer of every core.
    pub bytes_per_cycle_total: f64,
    /// Bandwidth shared by the GM transfers of one core (its MTE2 and MTE3 together).
    pub bytes_per_cycle_per_core: f64,
    /// Every GM access starts at a multiple of this many bytes.
    pub align: u64,
    /// GM is read and written in aligned segments of this many bytes: a burst is charged for
    /// every whole segment it touches.
    pub segment: u64,
    /// Cycles each burst of a GM transfer adds to its data phase.
    pub burst_cycles: f64,
}

impl GmSpec {
    /// The bytes a burst of `len` bytes at byte `start` of a GM tensor is charged for: every
    /// segment it touches, whole (a tensor starts on a segment).
    pub fn charged(&self, start: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let first = start / self.segment;
        let last = (start + len - 1) / self.segment;
        (last - first + 1) * self.segment
    }
}

/// One data path: which pipe drives it and what a transfer costs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Source.
    pub from: Mem,
    /// Destination.
    pub to: Mem,
    /// The pipe whose queue holds its transfers.
    #[serde(deserialize_with = "de_pipe")]
    pub pipe: Pipe,
    /// Bandwidth of one transfer on one core.
    pub bytes_per_cycle: f64,
    /// Fixed cycles per transfer before data moves.
    pub latency: f64,
}

impl PathSpec {
    /// Whether it reads or writes GM (and so shares the GM budgets and pays burst cycles).
    pub fn touches_gm(&self) -> bool {
        self.from == Mem::Gm || self.to == Mem::Gm
    }
}

fn de_pipe<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Pipe, D::Error> {
    let s = String::deserialize(d)?;
    Pipe::from_name(&s).ok_or_else(|| {
        serde::de::Error::custom(format!("unknown pipe `{s}` (S, MTE1, MTE2, MTE3, M, V)"))
    })
}

/// The cube unit.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CubeSpec {
    /// Where A is read.
    pub a: Mem,
    /// Where B is read.
    pub b: Mem,
    /// Where C is accumulated.
    pub c: Mem,
    /// Rows per cycle.
    pub m0: u64,
    /// Reduction depth per cycle for 16-bit inputs.
    pub k0: u64,
    /// Columns per cycle.
    pub n0: u64,
    /// Reduction depth per cycle for i8 inputs.
    pub k0_i8: u64,
    /// Cycles added to every `mmad`.
    pub startup: f64,
}

/// The vector unit.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorSpec {
    /// Bytes of the widest operand processed per repeat (one repeat per cycle).
    pub bytes_per_repeat: u64,
    /// Most repeats per instruction.
    pub max_repeat: u64,
    /// Cycles added to every vector instruction.
    pub startup: f64,
}

/// The scalar unit and synchronisation.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalarSpec {
    /// Cycles to issue one instruction.
    pub issue_cycles: f64,
    /// Cycles per loop iteration (counter update and branch).
    pub loop_cycles: f64,
    /// Cycles of a `set_flag`, `wait_flag` (once satisfied) or `barrier` on its pipe.
    pub flag_cycles: f64,
}

/// A whole machine description.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// Its name.
    pub name: String,
    /// AI cores; each runs the program with its own `core` index.
    pub cores: u32,
    /// Flag ids per (source pipe, destination pipe) pair.
    pub flag_ids: u32,
    /// Global memory.
    pub gm: GmSpec,
    /// On-chip tiers present on each core.
    pub tiers: BTreeMap<Mem, TierSpec>,
    /// Data paths.
    pub paths: Vec<PathSpec>,
    /// The cube.
    pub cube: CubeSpec,
    /// The vector unit.
    pub vector: VectorSpec,
    /// The scalar unit.
    pub scalar: ScalarSpec,
}

const PRESETS: &[(&str, &str)] = &[
    ("ascend-like", include_str!("../presets/ascend-like.toml")),
    (
        "ascend-like-halfgm",
        include_str!("../presets/ascend-like-halfgm.toml"),
    ),
    ("ub-only", include_str!("../presets/ub-only.toml")),
    ("mini", include_str!("../presets/mini.toml")),
];

impl Machine {
    /// The names of the built-in presets.
    pub fn preset_names() -> impl Iterator<Item = &'static str> {
        PRESETS.iter().map(|(n, _)| *n)
    }

    /// A built-in preset.
    pub fn preset(name: &str) -> Result<Machine, MachineError> {
        let (_, text) = PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| MachineError::Unknown(name.into()))?;
        Machine::from_toml(text)
    }

    /// A preset by name, or else a TOML file at that path.
    pub fn load(name_or_path: &str) -> Result<Machine, MachineError> {
        if PRESETS.iter().any(|(n, _)| *n == name_or_path) {
            return Machine::preset(name_or_path);
        }
        let text = std::fs::read_to_string(name_or_path)
            .map_err(|_| MachineError::Unknown(name_or_path.into()))?;
        Machine::from_toml(&text).map_err(|e| match e {
            MachineError::Parse(m) => MachineError::Parse(format!("{name_or_path}: {m}")),
            e => e,
        })
    }

    /// Parses and validates a machine description.
    pub fn from_toml(text: &str) -> Result<Machine, MachineError> {
        let m: Machine = toml::from_str(text).map_err(|e| MachineError::Parse(e.to_string()))?;
        m.validate()?;
        Ok(m)
    }

    fn validate(&self) -> Result<(), MachineError> {
        let bad = |m: String| Err(MachineError::Invalid(m));
        if !(1..=64).contains(&self.cores) {
            return bad(format!("cores = {} must be in 1..=64", self.cores));
        }
        if self.flag_ids == 0 {
            return bad("flag_ids must be positive".into());
        }
        if self.tiers.contains_key(&Mem::Gm) {
            return bad("gm is not an on-chip tier; describe it under [gm]".into());
        }
        for (mem, t) in &self.tiers {
            if t.capacity == 0 || t.capacity > 1 << 32 {
                return bad(format!("tiers.{mem}.capacity must be in 1..=2^32"));
            }
            if !t.align.is_power_of_two() {
                return bad(format!(
                    "tiers.{mem}.align = {} must be a power of two",
                    t.align
                ));
            }
        }
        if !self.gm.align.is_power_of_two() {
            return bad("gm.align must be a power of two".into());
        }
        if !positive(self.gm.bytes_per_cycle_total) {
            return bad("gm.bytes_per_cycle_total must be positive".into());
        }
        if !positive(self.gm.bytes_per_cycle_per_core) {
            return bad("gm.bytes_per_cycle_per_core must be positive".into());
        }
        if !self.gm.segment.is_power_of_two() {
            return bad(format!(
                "gm.segment = {} must be a power of two",
                self.gm.segment
            ));
        }
        if !(self.gm.burst_cycles >= 0.0 && self.gm.burst_cycles.is_finite()) {
            return bad("gm.burst_cycles must be non-negative".into());
        }
        for (i, p) in self.paths.iter().enumerate() {
            for end in [p.from, p.to] {
                if end != Mem::Gm && !self.tiers.contains_key(&end) {
                    return bad(format!(
                        "paths[{i}] ({} -> {}) names the absent tier {end}",
                        p.from, p.to
                    ));
                }
            }
            if p.from == p.to || p.pipe == Pipe::S || p.pipe == Pipe::M {
                return bad(format!("paths[{i}] ({} -> {}) must join two memories and be driven by an MTE or V pipe", p.from, p.to));
            }
            if !(positive(p.bytes_per_cycle) && p.latency >= 0.0 && p.latency.is_finite()) {
                return bad(format!(
                    "paths[{i}] needs a positive bytes_per_cycle and a non-negative latency"
                ));
            }
            if self.paths[..i]
                .iter()
                .any(|q| q.from == p.from && q.to == p.to)
            {
                return bad(format!(
                    "paths[{i}] ({} -> {}) is described twice",
                    p.from, p.to
                ));
            }
        }
        for (key, mem) in [("a", self.cube.a), ("b", self.cube.b), ("c", self.cube.c)] {
            if !self.tiers.contains_key(&mem) {
                return bad(format!(
                    "cube.{key} = {mem} is not an on-chip tier of this machine"
                ));
            }
        }
        let c = &self.cube;
        if [c.m0, c.k0, c.n0, c.k0_i8].contains(&0) {
            return bad("cube.m0, k0, n0 and k0_i8 must be positive".into());
        }
        let v = &self.vector;
        if v.bytes_per_repeat == 0 || !v.bytes_per_repeat.is_multiple_of(32) || v.max_repeat == 0 {
            return bad(
                "vector.bytes_per_repeat must be a positive multiple of 32 and max_repeat positive"
                    .into(),
            );
        }
        let s = &self.scalar;
        let costs = [
            c.startup,
            v.startup,
            s.issue_cycles,
            s.loop_cycles,
            s.flag_cycles,
        ];
        if costs.iter().any(|x| !(*x >= 0.0 && x.is_finite())) {
            return bad("startup and scalar costs must be non-negative".into());
        }
        Ok(())
    }

    /// The tier spec, if the machine has that tier.
    pub fn tier(&self, tier: Tier) -> Option<&TierSpec> {
        self.tiers.get(&Mem::of(Some(tier)))
    }

    /// The index of the path from `from` to `to`, if any.
    pub fn path(&self, from: Mem, to: Mem) -> Option<usize> {
        self.paths.iter().position(|p| p.from == from && p.to == to)
    }

    /// Cycles `bursts` bursts of a transfer on path `path` add before its data moves: the GM
    /// burst cost on a GM path, none on an on-chip one.
    pub fn burst_setup(&self, path: usize, bursts: u64) -> f64 {
        if self.paths[path].touches_gm() {
            bursts as f64 * self.gm.burst_cycles
        } else {
            0.0
        }
    }

    /// Cube MACs per cycle for 16-bit (false) or i8 (true) inputs.
    pub fn macs_per_cycle(&self, int8: bool) -> f64 {
        let k0 = if int8 { self.cube.k0_i8 } else { self.cube.k0 };
        (self.cube.m0 * k0 * self.cube.n0) as f64
    }
}

fn positive(x: f64) -> bool {
    x > 0.0 && x.is_finite()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_load() {
        for name in Machine::preset_names() {
            let m = Machine::preset(name).unwrap();
            assert_eq!(m.name, name);
        }
        let m = Machine::preset("ascend-like").unwrap();
        assert_eq!(m.cores, 8);
        assert_eq!(m.tier(Tier::L1).unwrap().capacity, 1 << 20);
        assert_eq!(m.macs_per_cycle(false), 4096.0);
        assert!(m.path(Mem::Gm, Mem::L0a).is_none());
        // The cube reads 16x16 f16 of A (and of B) a cycle: 512 bytes.
        let l0a = &m.paths[m.path(Mem::L1, Mem::L0a).unwrap()];
        assert_eq!(l0a.bytes_per_cycle, 512.0);
        assert_eq!(
            (m.gm.bytes_per_cycle_total, m.gm.bytes_per_cycle_per_core),
            (512.0, 64.0)
        );
    }

    #[test]
    fn halfgm_is_ascend_like_with_half_the_gm_bandwidth() {
        let (full, half) = (
            Machine::preset("ascend-like").unwrap(),
            Machine::preset("ascend-like-halfgm").unwrap(),
        );
        assert_eq!(
            half.gm.bytes_per_cycle_total,
            full.gm.bytes_per_cycle_total / 2.0
        );
        assert_eq!(
            half.gm.bytes_per_cycle_per_core,
            full.gm.bytes_per_cycle_per_core / 2.0
        );
        let mut same = half.clone();
        same.name = full.name.clone();
        same.gm = full.gm.clone();
        assert_eq!(format!("{same:?}"), format!("{full:?}"));
    }

    #[test]
    fn a_burst_is_charged_whole_segments() {
        let gm = Machine::preset("ascend-like").unwrap().gm;
        assert_eq!(gm.charged(0, 1024), 1024);
        assert_eq!(gm.charged(32, 1024), 1536);
        assert_eq!(gm.charged(0, 256), 512);
        assert_eq!(gm.charged(480, 64), 1024);
        assert_eq!(gm.charged(512, 512), 512);
    }

    fn with(edit: &str, replacement: &str) -> Result<Machine, MachineError> {
        let text = include_str!("../presets/mini.toml").replacen(edit, replacement, 1);
        Machine::from_toml(&text)
    }

    #[test]
    fn rejects_bad_files_with_the_key() {
        let err = |r: Result<Machine, MachineError>| r.unwrap_err().to_string();
        assert!(err(with("cores = 2", "cores = 0")).contains("cores"));
        assert!(err(with("align = 512", "align = 500")).contains("power of two"));
        assert!(err(with("cores = 2", "cores = 2\nbogus = 1")).contains("bogus"));
        assert!(err(with("pipe = \"MTE2\"", "pipe = \"X\"")).contains("unknown pipe"));
        assert!(err(with("to = \"l1\"", "to = \"l2\"")).contains("l2"));
        assert!(err(with("a = \"l0a\"", "a = \"gm\"")).contains("cube.a"));
        assert!(err(with("segment = 512", "segment = 500")).contains("gm.segment"));
        assert!(err(with("burst_cycles = 1", "burst_cycles = -1")).contains("gm.burst_cycles"));
        let per_core = "bytes_per_cycle_per_core = 32";
        assert!(err(with(per_core, "bytes_per_cycle_per_core = 0")).contains("per_core"));
        assert!(err(with(per_core, "")).contains("bytes_per_cycle_per_core"));
        assert!(matches!(
            Machine::load("no-such-machine"),
            Err(MachineError::Unknown(_))
        ));
    }
}
