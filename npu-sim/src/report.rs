//! The figures of a run: cycles, pipe utilisation, bytes per path, buffer occupancy, work done,
//! and the roofline bounds with the achieved fraction.

use crate::expand::{Cost, Exec, Inst};
use crate::layout::Layout;
use crate::machine::{Machine, Mem};
use crate::program::*;
use crate::timing::Timeline;
use std::fmt;

/// Busy cycles of one pipe summed over cores.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PipeFigure {
    /// The pipe.
    pub pipe: String,
    /// Busy cycles over all cores.
    pub busy: f64,
    /// `busy / (cycles * cores)`.
    pub utilisation: f64,
}

/// Bytes moved on one path over all cores.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PathFigure {
    /// `from->to`.
    pub path: String,
    /// Bytes.
    pub bytes: u64,
    /// Transfers.
    pub transfers: u64,
}

/// Allocation of one tier (the same on every core).
#[derive(Clone, Debug, serde::Serialize)]
pub struct TierFigure {
    /// The tier.
    pub tier: String,
    /// Highest allocated byte.
    pub peak: u64,
    /// Capacity.
    pub capacity: u64,
    /// The buffers in it: name and bytes.
    pub buffers: Vec<(String, u64)>,
}

/// Everything the report shows.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    /// Machine name.
    pub machine: String,
    /// Cores.
    pub cores: u32,
    /// Total cycles (the last end, rounded up).
    pub cycles: u64,
    /// Instructions executed over all cores.
    pub instructions: u64,
    /// Per pipe.
    pub pipes: Vec<PipeFigure>,
    /// Per data path.
    pub paths: Vec<PathFigure>,
    /// Per tier.
    pub tiers: Vec<TierFigure>,
    /// Cube multiply-accumulates.
    pub macs: u64,
    /// Vector element operations (active lanes times repeats).
    pub vector_ops: u64,
    /// Vector repeats.
    pub vector_repeats: u64,
    /// Bytes moved to or from GM.
    pub gm_bytes: u64,
    /// Bytes of the kernel's own inputs and outputs, each once.
    pub min_gm_bytes: u64,
    /// Cycles the cube needs with every core busy.
    pub cube_bound: f64,
    /// Cycles the vector units need with every core busy.
    pub vector_bound: f64,
    /// Cycles the program's GM traffic needs (total bandwidth, and each core's paths).
    pub gm_bound: f64,
    /// Cycles the minimum GM traffic needs.
    pub min_gm_bound: f64,
    /// max(compute, program GM traffic).
    pub roofline: f64,
    /// max(compute, minimum GM traffic).
    pub kernel_roofline: f64,
}

impl Report {
    /// Computes the figures of a finished run.
    pub fn new(
        p: &Program,
        m: &Machine,
        lay: &Layout,
        insts: &[Vec<Inst>],
        t: &Timeline,
    ) -> Report {
        let cycles = t.cycles.ceil() as u64;
        let cores = m.cores as f64;
        let pipes = Pipe::ALL
            .iter()
            .map(|pipe| {
                let busy: f64 = t.cores.iter().map(|c| c.busy[pipe.index()]).sum();
                PipeFigure {
                    pipe: pipe.to_string(),
                    busy,
                    utilisation: busy / (cycles.max(1) as f64 * cores),
                }
            })
            .collect();
        let mut path_bytes = vec![(0u64, 0u64); m.paths.len()];
        let mut per_core_path_bound = 0.0f64;
        let (mut macs16, mut macs8, mut vector_ops, mut vector_repeats, mut instructions) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        for core in insts {
            let mut core_bytes = vec![0u64; m.paths.len()];
            for inst in core {
                instructions += 1;
                if let Cost::Transfer { path, bytes } = inst.cost {
                    path_bytes[path].0 += bytes;
                    path_bytes[path].1 += 1;
                    core_bytes[path] += bytes;
                }
                match &inst.exec {
                    Exec::Mmad(_, z, _) if inst.operands[1].dtype == DType::I8 => {
                        macs8 += z.m * z.k * z.n
                    }
                    Exec::Mmad(_, z, _) => macs16 += z.m * z.k * z.n,
                    Exec::Vector(v, z) => {
                        vector_repeats += z.repeat;
                        let lanes = crate::layout::lanes(p, m, v);
                        vector_ops += z.repeat * z.mask.unwrap_or(lanes);
                    }
                    _ => {}
                }
            }
            for (path, bytes) in core_bytes.iter().enumerate() {
                let spec = &m.paths[path];
                if spec.from == Mem::Gm || spec.to == Mem::Gm {
                    per_core_path_bound =
                        per_core_path_bound.max(*bytes as f64 / spec.bytes_per_cycle);
                }
            }
        }
        let is_gm = |i: usize| m.paths[i].from == Mem::Gm || m.paths[i].to == Mem::Gm;
        let gm_bytes: u64 = path_bytes
            .iter()
            .enumerate()
            .filter(|(i, _)| is_gm(*i))
            .map(|(_, b)| b.0)
            .sum();
        let passes = |d: Direction| if d == Direction::InOut { 2 } else { 1 };
        let min_gm_bytes: u64 = p
            .tensors
            .iter()
            .map(|t| elements(&t.shape) * t.dtype.size() * passes(t.dir))
            .sum();
        let cube_bound = (macs16 as f64 / m.macs_per_cycle(false)
            + macs8 as f64 / m.macs_per_cycle(true))
            / cores;
        let vector_bound = vector_repeats as f64 / cores;
        let gm_bound = (gm_bytes as f64 / m.gm.bytes_per_cycle_total).max(per_core_path_bound);
        let min_gm_bound = min_gm_bytes as f64 / m.gm.bytes_per_cycle_total;
        let compute = cube_bound.max(vector_bound);
        let paths = m
            .paths
            .iter()
            .zip(&path_bytes)
            .map(|(s, (bytes, transfers))| PathFigure {
                path: format!("{}->{}", s.from, s.to),
                bytes: *bytes,
                transfers: *transfers,
            })
            .collect();
        let tiers = Tier::ALL
            .iter()
            .filter_map(|tier| {
                let spec = m.tier(*tier)?;
                let buffers = p
                    .buffers
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.tier == *tier)
                    .map(|(i, b)| (b.name.clone(), Layout::size(p, BufferId(i as u32))))
                    .collect();
                let peak = lay.peak.get(tier).copied().unwrap_or(0);
                Some(TierFigure {
                    tier: tier.to_string(),
                    peak,
                    capacity: spec.capacity,
                    buffers,
                })
            })
            .collect();
        Report {
            machine: m.name.clone(),
            cores: m.cores,
            cycles,
            instructions,
            pipes,
            paths,
            tiers,
            macs: macs16 + macs8,
            vector_ops,
            vector_repeats,
            gm_bytes,
            min_gm_bytes,
            cube_bound,
            vector_bound,
            gm_bound,
            min_gm_bound,
            roofline: compute.max(gm_bound),
            kernel_roofline: compute.max(min_gm_bound),
        }
    }

    /// `roofline / cycles`: how close the run came to the program's own bound.
    pub fn fraction(&self) -> f64 {
        self.roofline / self.cycles.max(1) as f64
    }

    /// `kernel_roofline / cycles`: how close it came to the bound of the kernel itself.
    pub fn kernel_fraction(&self) -> f64 {
        self.kernel_roofline / self.cycles.max(1) as f64
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "machine {} ({} cores), {} instructions",
            self.machine, self.cores, self.instructions
        )?;
        writeln!(f, "cycles          {}", self.cycles)?;
        writeln!(
            f,
            "roofline        {:.0} cycles = max(cube {:.0}, vector {:.0}, GM traffic {:.0}); achieved {:.1}%",
            self.roofline,
            self.cube_bound,
            self.vector_bound,
            self.gm_bound,
            100.0 * self.fraction()
        )?;
        writeln!(
            f,
            "kernel roofline {:.0} cycles = max(compute, minimum GM traffic {:.0}); achieved {:.1}%",
            self.kernel_roofline,
            self.min_gm_bound,
            100.0 * self.kernel_fraction()
        )?;
        writeln!(
            f,
            "work            {} MACs, {} vector element ops in {} repeats",
            self.macs, self.vector_ops, self.vector_repeats
        )?;
        writeln!(
            f,
            "GM traffic      {} bytes (minimum {} bytes)",
            self.gm_bytes, self.min_gm_bytes
        )?;
        writeln!(f, "pipe   busy cycles (all cores)  utilisation")?;
        for p in &self.pipes {
            writeln!(
                f,
                "{:<6} {:>24.0}  {:>10.1}%",
                p.pipe,
                p.busy,
                100.0 * p.utilisation
            )?;
        }
        writeln!(f, "path        bytes  transfers")?;
        for p in self.paths.iter().filter(|p| p.transfers > 0) {
            writeln!(f, "{:<8} {:>12} {:>10}", p.path, p.bytes, p.transfers)?;
        }
        writeln!(f, "tier   peak bytes / capacity  buffers")?;
        for t in &self.tiers {
            let bufs: Vec<String> = t.buffers.iter().map(|(n, b)| format!("{n} {b}")).collect();
            writeln!(
                f,
                "{:<6} {:>9} / {:<9} {:>5.1}%  {}",
                t.tier,
                t.peak,
                t.capacity,
                100.0 * t.peak as f64 / t.capacity as f64,
                bufs.join(", ")
            )?;
        }
        Ok(())
    }
}
