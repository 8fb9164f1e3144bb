//! The figures of a run: cycles, pipe utilisation, bytes per path, buffer occupancy, work done,
//! and the roofline: the largest of the lower bounds every unit, data path and GM budget sets,
//! named, with the achieved fraction.

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
    /// Bytes moved.
    pub bytes: u64,
    /// Bytes charged (on a GM path every segment each burst touches, whole; elsewhere `bytes`).
    pub charged: u64,
    /// Transfers.
    pub transfers: u64,
    /// Bursts of those transfers.
    pub bursts: u64,
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

/// A lower bound on the cycles of a run: what one unit, data path or GM budget needs. Shown
/// and serialised by its name (`cube`, `vector`, `gm->l1`, `core-gm`, `total-gm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The busiest core's cube: its MACs at the cube's peak rate.
    Cube,
    /// The busiest core's vector unit: its repeats, one a cycle.
    Vector,
    /// One data path of the busiest core: its charged bytes at the path's bandwidth, plus its
    /// bursts' cycles on a GM path (both take its pipe one transfer at a time).
    Path {
        /// Source.
        from: Mem,
        /// Destination.
        to: Mem,
    },
    /// The busiest core's GM budget: its charged GM bytes (MTE2 and MTE3 together) at
    /// `gm.bytes_per_cycle_per_core`.
    CoreGm,
    /// All cores' charged GM bytes at `gm.bytes_per_cycle_total`.
    TotalGm,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Cube => f.write_str("cube"),
            Bound::Vector => f.write_str("vector"),
            Bound::Path { from, to } => write!(f, "{from}->{to}"),
            Bound::CoreGm => f.write_str("core-gm"),
            Bound::TotalGm => f.write_str("total-gm"),
        }
    }
}

impl serde::Serialize for Bound {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One lower bound and the core it was reached on.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BoundFigure {
    /// Which.
    pub bound: Bound,
    /// Cycles.
    pub cycles: f64,
    /// The busiest core (None for the total GM bandwidth).
    pub core: Option<u32>,
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
    /// Bytes charged to GM (whole segments per burst).
    pub gm_charged: u64,
    /// Bytes of the kernel's own inputs and outputs, each once (inout twice).
    pub min_gm_bytes: u64,
    /// Every lower bound: cube, vector, each data path, the core GM budget, the total GM
    /// bandwidth, in that order.
    pub bounds: Vec<BoundFigure>,
    /// The largest bound (the first of equals).
    pub binding: Bound,
    /// Its cycles: the program's roofline.
    pub roofline: f64,
    /// Cycles the cube and the vector units need with the work spread evenly over all cores.
    pub spread_compute_bound: f64,
    /// Cycles the minimum GM traffic needs: the kernel's tensors, each rounded up to whole
    /// segments, at the smaller of the total GM bandwidth and all cores' budgets together.
    pub min_gm_bound: f64,
    /// max(spread compute, minimum GM traffic): the bound of the kernel itself.
    pub kernel_roofline: f64,
}

/// Per-core work, for the bounds.
#[derive(Default)]
struct CoreWork {
    macs16: u64,
    macs8: u64,
    repeats: u64,
    charged: Vec<u64>,
    bursts: Vec<u64>,
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
        let mut paths: Vec<PathFigure> = (m.paths.iter())
            .map(|s| PathFigure {
                path: format!("{}->{}", s.from, s.to),
                bytes: 0,
                charged: 0,
                transfers: 0,
                bursts: 0,
            })
            .collect();
        let (mut vector_ops, mut instructions) = (0u64, 0u64);
        let mut work: Vec<CoreWork> = vec![];
        for core in insts {
            let mut w = CoreWork {
                charged: vec![0; m.paths.len()],
                bursts: vec![0; m.paths.len()],
                ..CoreWork::default()
            };
            for inst in core {
                instructions += 1;
                if let Cost::Transfer {
                    path,
                    bytes,
                    charged,
                    bursts,
                } = inst.cost
                {
                    let f = &mut paths[path];
                    f.bytes += bytes;
                    f.charged += charged;
                    f.transfers += 1;
                    f.bursts += bursts;
                    w.charged[path] += charged;
                    w.bursts[path] += bursts;
                }
                match &inst.exec {
                    Exec::Mmad(_, z, _) if inst.operands[1].dtype == DType::I8 => {
                        w.macs8 += z.m * z.k * z.n
                    }
                    Exec::Mmad(_, z, _) => w.macs16 += z.m * z.k * z.n,
                    Exec::Vector(v, z) => {
                        w.repeats += z.repeat;
                        let lanes = crate::layout::lanes(p, m, v);
                        vector_ops += z.repeat * z.mask.unwrap_or(lanes);
                    }
                    _ => {}
                }
            }
            work.push(w);
        }
        let is_gm = |i: usize| m.paths[i].touches_gm();
        let cube = |w: &CoreWork| {
            w.macs16 as f64 / m.macs_per_cycle(false) + w.macs8 as f64 / m.macs_per_cycle(true)
        };
        let busiest = |bound: Bound, of: &dyn Fn(&CoreWork) -> f64| {
            let (core, cycles) =
                (work.iter().map(of).enumerate()).fold((0, 0.0), |best, (c, x)| {
                    if x > best.1 {
                        (c, x)
                    } else {
                        best
                    }
                });
            BoundFigure {
                bound,
                cycles,
                core: Some(core as u32),
            }
        };
        let mut bounds = vec![
            busiest(Bound::Cube, &cube),
            busiest(Bound::Vector, &|w| w.repeats as f64),
        ];
        for (i, spec) in m.paths.iter().enumerate() {
            bounds.push(busiest(
                Bound::Path {
                    from: spec.from,
                    to: spec.to,
                },
                &|w| w.charged[i] as f64 / spec.bytes_per_cycle + m.burst_setup(i, w.bursts[i]),
            ));
        }
        let gm_charged_of = |w: &CoreWork| -> u64 {
            (w.charged.iter().enumerate())
                .filter(|(i, _)| is_gm(*i))
                .map(|(_, b)| b)
                .sum()
        };
        bounds.push(busiest(Bound::CoreGm, &|w| {
            gm_charged_of(w) as f64 / m.gm.bytes_per_cycle_per_core
        }));
        let gm_charged: u64 = work.iter().map(gm_charged_of).sum();
        bounds.push(BoundFigure {
            bound: Bound::TotalGm,
            cycles: gm_charged as f64 / m.gm.bytes_per_cycle_total,
            core: None,
        });
        let top = (bounds.iter()).fold(&bounds[0], |a, b| if b.cycles > a.cycles { b } else { a });
        let (binding, roofline) = (top.bound, top.cycles);
        let gm_bytes: u64 = (paths.iter().enumerate())
            .filter(|(i, _)| is_gm(*i))
            .map(|(_, f)| f.bytes)
            .sum();
        // a workspace is the program's own traffic, not the kernel's
        let passes = |d: Direction| match d {
            Direction::In | Direction::Out => 1,
            Direction::InOut => 2,
            Direction::Scratch => 0,
        };
        let tensor_bytes = |t: &TensorDecl| elements(&t.shape) * t.dtype.size();
        let min_gm_bytes: u64 = (p.tensors.iter())
            .map(|t| tensor_bytes(t) * passes(t.dir))
            .sum();
        let min_gm_charged: u64 = (p.tensors.iter())
            .map(|t| m.gm.charged(0, tensor_bytes(t)) * passes(t.dir))
            .sum();
        let min_gm_bound = min_gm_charged as f64
            / (m.gm.bytes_per_cycle_total).min(cores * m.gm.bytes_per_cycle_per_core);
        let spread_compute_bound = (work.iter().map(cube).sum::<f64>() / cores)
            .max(work.iter().map(|w| w.repeats).sum::<u64>() as f64 / cores);
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
            macs: work.iter().map(|w| w.macs16 + w.macs8).sum(),
            vector_ops,
            vector_repeats: work.iter().map(|w| w.repeats).sum(),
            gm_bytes,
            gm_charged,
            min_gm_bytes,
            bounds,
            binding,
            roofline,
            spread_compute_bound,
            min_gm_bound,
            kernel_roofline: spread_compute_bound.max(min_gm_bound),
        }
    }

    /// The cycles of one bound, if the machine has it (a path it lacks has none).
    pub fn bound(&self, bound: Bound) -> Option<f64> {
        (self.bounds.iter())
            .find(|b| b.bound == bound)
            .map(|b| b.cycles)
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
            "roofline        {:.0} cycles, bound by {}; achieved {:.1}%",
            self.roofline,
            self.binding,
            100.0 * self.fraction()
        )?;
        let bounds: Vec<String> = (self.bounds.iter())
            .filter(|b| b.cycles > 0.0 || matches!(b.bound, Bound::Cube | Bound::Vector))
            .map(|b| match b.core {
                Some(c) if b.cycles > 0.0 => format!("{} {:.0} (core {c})", b.bound, b.cycles),
                _ => format!("{} {:.0}", b.bound, b.cycles),
            })
            .collect();
        writeln!(f, "bounds          {}", bounds.join(", "))?;
        writeln!(
            f,
            "kernel roofline {:.0} cycles = max(compute spread over all cores {:.0}, minimum GM traffic {:.0}); achieved {:.1}%",
            self.kernel_roofline,
            self.spread_compute_bound,
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
            "GM traffic      {} bytes, charged {} (minimum {} bytes)",
            self.gm_bytes, self.gm_charged, self.min_gm_bytes
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
        writeln!(f, "path        bytes      charged  transfers     bursts")?;
        for p in self.paths.iter().filter(|p| p.transfers > 0) {
            writeln!(
                f,
                "{:<8} {:>12} {:>12} {:>10} {:>10}",
                p.path, p.bytes, p.charged, p.transfers, p.bursts
            )?;
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
