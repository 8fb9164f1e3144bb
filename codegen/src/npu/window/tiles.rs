//! The analytic model that tiles a window reduction: every tile of `rows x cols` output
//! pixels of one image is costed exactly as the program moves and computes it (its input
//! bursts and output bursts charged by GM segments at the core's bandwidth, its vector
//! instructions at start-up plus repeats), the tiles dealt to the cores as the program deals
//! them, and a core's tiles followed through the rings (`rings`: each load waits for its
//! slot, V for its tile's load and output slot, a load and a store share the core's GM
//! bandwidth while both move data). No tiling is tried in the simulator.

use super::{Combine, Order, Term, Window};
use crate::npu::matmul::dtype;
use crate::npu::NpuError;
use npu_sim::machine::Mem;
use npu_sim::program::{CmpOp, DType, Expr, Tier};
use npu_sim::Machine;

/// Flag ids per pipe pair the program uses: 0 and 1 for the rings' slots, 2 for the
/// weights' load.
pub const FLAG_IDS: u32 = 3;

/// Elements of the program's UB buffers (0: the buffer is not needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elems {
    /// A slot of the input ring: the tile's input rows and columns, border included.
    pub input: i64,
    /// A slot of the output ring: the tile's output pixels.
    pub output: i64,
    /// One output row of products (a weight or a constant times the input).
    pub temp: i64,
    /// The weights.
    pub weights: i64,
    /// The input tile converted to the output's type.
    pub converted: i64,
    /// The weights converted to the output's type.
    pub converted_weights: i64,
}

/// A tile's size: output rows, output columns, channels, and for global pooling the image
/// rows of each of its loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Output rows.
    pub rows: i64,
    /// Output columns.
    pub cols: i64,
    /// Channels (all of them, or an equal group).
    pub chans: i64,
    /// Global pooling: the image rows each load of a tile brings, its *parts* (the last may
    /// have fewer), each combined into the tile's outputs before the next (the input ring
    /// turns once a part), so that an image larger than UB is pooled and a part's load
    /// overlaps the work on the one before (an image without a border, whose rows are the
    /// outer loop of the window in the kernel's order). 0: the tile is loaded whole (a
    /// spatial window's tiles always are).
    pub part: i64,
    /// Global pooling combined pairwise, in parts: the *pieces* each tile's parts are dealt
    /// in (runs of parts as nearly equal as can be), each piece a work item of its own
    /// whose partial result meets the others' as [`Meet`] says; so that the pooling of a
    /// few channels over many pixels spreads over the cores. 1: each tile is one work item.
    pub spread: i64,
}

impl Size {
    /// Tiles of `rows x cols` output pixels and `chans` channels, loaded whole.
    pub fn whole(rows: i64, cols: i64, chans: i64) -> Size {
        Size {
            rows,
            cols,
            chans,
            part: 0,
            spread: 1,
        }
    }
}

/// How the partial results of a spread tile's pieces ([`Size::spread`]) meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meet {
    /// Sums into an `f32` output: each piece's partial sum (from zero) is added into the
    /// output by an atomic `dma`, after every core has stored the initial value over its
    /// share of the output and all have met at a `sync_all`.
    Atomic,
    /// Maxima, minima and sums into other types (the machine's atomic `dma` only adds, and
    /// an `f16` sum would round at every add): each piece stores its partial result into a
    /// GM workspace (a `scratch` tensor, a row per work item); after a `sync_all` each core
    /// loads the rows of its share of the tiles, combines them pairwise with the initial
    /// value and stores the tile's outputs.
    Workspace,
}

/// Piece `k` of a tile of `parts` parts dealt in `spread` pieces (at most one a part), as
/// [`Model::deal`] deals work items (runs as nearly equal as can be, the longer first): its
/// first part and how many, as expressions of `k`, which the program emits and
/// [`Model::piece`] evaluates.
pub fn piece_of(k: Expr, parts: i64, spread: i64) -> (Expr, Expr) {
    let (q, r) = (parts / spread, parts % spread);
    let first = match q {
        1 => k.clone(),
        _ => k.clone() * q,
    };
    match r {
        0 => (first, Expr::Const(q)),
        _ => (
            first + k.clone().min(r),
            Expr::Const(q) + k.cmp(CmpOp::Lt, r),
        ),
    }
}

/// One tile: its image, first output row, column and channel, and its size (edges
/// clipped; the pieces of a spread tile share it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    /// Image.
    pub n: i64,
    /// First output row.
    pub p0: i64,
    /// First output column.
    pub q0: i64,
    /// First channel.
    pub c0: i64,
    /// Its size.
    pub size: Size,
}

/// A tiling and the model's figures for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The tiles' size.
    pub size: Size,
    /// Work items in all: tiles, or their pieces ([`Size::spread`]).
    pub tiles: i64,
    /// Work items of the busiest core.
    pub per_core: i64,
    /// The busiest core's cycles.
    pub cycles: f64,
    /// Its GM cycles.
    pub gm_cycles: f64,
    /// Its vector cycles.
    pub vector_cycles: f64,
    /// UB bytes the program declares.
    pub ub_bytes: u64,
}

/// One element-wise instruction over consecutive pixels of a tile's channels (a pass of
/// [`Order::Pairwise`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Its operands' first element, from the pass's first.
    pub offset: i64,
    /// Repeats.
    pub repeats: i64,
    /// Active lanes of each repeat.
    pub mask: i64,
    /// Elements between consecutive repeats (of every operand).
    pub stride: i64,
}

/// When two transfers that become ready at `a` and `b` (after their latencies) and move
/// `x` and `y` cycles' worth of data at the core's whole GM bandwidth end, the core's GM
/// being free from `free`: each alone at the whole bandwidth, both together at half of it
/// each (the simulator shares a core's bandwidth fairly between its transfers moving data).
fn shared(free: f64, (a, x): (f64, f64), (b, y): (f64, f64)) -> (f64, f64) {
    let (a, b) = (a.max(free), b.max(free));
    // the first to start runs alone until the second starts, then they share
    let alone = |s0: f64, w0: f64, s1: f64, w1: f64| -> (f64, f64) {
        if s0 + w0 <= s1 {
            return (s0 + w0, s1 + w1);
        }
        let left = w0 - (s1 - s0);
        let both = s1 + 2.0 * left.min(w1);
        let end = s1 + left + w1;
        match left <= w1 {
            true => (both, end),
            false => (end, both),
        }
    };
    match a <= b {
        true => alone(a, x, b, y),
        false => {
            let (eb, ea) = alone(b, y, a, x);
            (ea, eb)
        }
    }
}

/// The end of a core's tiles (or parts of tiles), each a [`Step`] (no store: a part but
/// the last), through rings of two slots each way (one for the input when `one_in`), with
/// the paths' `latencies` (in, out). A load is ready when the vector unit has freed its
/// slot (computed the tile two back; with one slot, converted the tile before) and its
/// latency has passed; a store when its tile is computed and its latency has passed; a
/// load and the store of the tile before share the core's GM bandwidth where they overlap
/// ([`shared`]). The vector unit starts a tile when it is loaded, the tile before is
/// computed and the store two tiles back has freed the output slot.
fn rings(steps: &[Step], (lat_in, lat_out): (f64, f64), one_in: bool) -> f64 {
    let n = steps.len();
    let (mut loaded, mut computed, mut stored) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut started = vec![0.0; n];
    let mut gm_free: f64 = 0.0;
    for t in 0..n {
        let back = |v: &[f64], k: usize| if t >= k { v[t - k] } else { 0.0 };
        let free = match (one_in, t) {
            (true, 0) => 0.0,
            (true, _) => started[t - 1] + steps[t - 1].convert,
            (false, _) => back(&computed, 2),
        };
        let load = (free + lat_in, steps[t].load);
        if t > 0 {
            // a step without a store (a part of a tile but its last) frees its output slot
            // when computed
            let latency = if steps[t - 1].store > 0.0 {
                lat_out
            } else {
                0.0
            };
            let store = (computed[t - 1] + latency, steps[t - 1].store);
            (loaded[t], stored[t - 1]) = shared(gm_free, load, store);
            gm_free = loaded[t].max(stored[t - 1]);
        } else {
            loaded[t] = load.0.max(gm_free) + load.1;
            gm_free = loaded[t];
        }
        started[t] = loaded[t].max(back(&computed, 1)).max(back(&stored, 2));
        computed[t] = started[t] + steps[t].vector;
    }
    match n {
        0 => 0.0,
        _ => (computed[n - 1] + lat_out).max(gm_free) + steps[n - 1].store,
    }
}

/// One load of a core's tiles (a tile, or a part of one) as [`rings`] follows it, in cycles.
#[derive(Clone, Copy, Debug)]
struct Step {
    /// The load's data (its latency apart).
    load: f64,
    /// V's conversion of it, which frees a single input slot.
    convert: f64,
    /// V's work on it, the conversion included.
    vector: f64,
    /// The store after it (0: none, a part but the last of a tile).
    store: f64,
}

/// The machine's figures a window reduction's tiling depends on.
pub struct Model<'a> {
    /// The reduction.
    pub w: &'a Window,
    /// The machine.
    pub machine: &'a Machine,
    /// UB's capacity in bytes.
    pub ub_capacity: u64,
    /// UB's alignment in bytes.
    pub align: i64,
    /// Lanes of each vector instruction (the widest operand's).
    pub lanes: i64,
    /// Element types of the input, the output and the weights (the output's when none).
    pub types: (DType, DType, DType),
    /// The order the terms are combined in.
    pub order: Order,
}

fn size(d: DType) -> i64 {
    d.size() as i64
}

impl<'a> Model<'a> {
    /// The model of `w` on `machine` with its terms combined in `order`, or a refusal if the
    /// machine lacks what the program needs.
    pub fn new(w: &'a Window, machine: &'a Machine, order: Order) -> Result<Model<'a>, NpuError> {
        let unsupported = |why: String| Err(NpuError::Unsupported(why));
        let Some(ub) = machine.tier(Tier::Ub) else {
            return unsupported(format!("`{}` has no UB", machine.name));
        };
        for (from, to) in [(Mem::Gm, Mem::Ub), (Mem::Ub, Mem::Gm)] {
            if machine.path(from, to).is_none() {
                return unsupported(format!(
                    "`{}` has no data path {from} -> {to}",
                    machine.name
                ));
            }
        }
        if machine.flag_ids < FLAG_IDS {
            return unsupported(format!(
                "the window reductions use {FLAG_IDS} flag ids per pipe pair; `{}` has {}",
                machine.name, machine.flag_ids
            ));
        }
        let input = dtype(w.types.0)?;
        let output = dtype(w.types.1)?;
        let weights = match &w.term {
            Term::Product { elem, .. } => dtype(*elem)?,
            _ => output,
        };
        let widest = size(input).max(size(output)).max(size(weights));
        Ok(Model {
            w,
            machine,
            ub_capacity: ub.capacity,
            align: ub.align as i64,
            lanes: machine.vector.bytes_per_repeat as i64 / widest,
            types: (input, output, weights),
            order,
        })
    }

    /// Input rows a tile of `rows` output rows reads (border rows included).
    pub fn in_rows(&self, rows: i64) -> i64 {
        self.w.stride.0 * (rows - 1) + self.w.r
    }

    /// Input columns a tile of `cols` output columns reads (border columns included).
    pub fn in_cols(&self, cols: i64) -> i64 {
        self.w.stride.1 * (cols - 1) + self.w.s
    }

    /// Global pooling in parts ([`Size::part`]): the rows of a whole part, and how many
    /// parts a tile has; `None` when tiles of `z` are loaded whole.
    pub fn parted(&self, z: Size) -> Option<(i64, i64)> {
        let h = self.w.h;
        (self.partable() && (1..h).contains(&z.part)).then(|| (z.part, (h + z.part - 1) / z.part))
    }

    /// Whether tiles may go in parts: global pooling without a border, in the kernel's
    /// order only when the window's rows are its outer loop (a part's terms then all come
    /// before the next part's).
    fn partable(&self) -> bool {
        self.w.consecutive() && (self.order == Order::Pairwise || self.w.r_outer)
    }

    /// How the pieces of a spread tile meet ([`Size::spread`]), `None` when tiles may not be
    /// spread: only tiles that may go in parts, combined pairwise (the pieces reorder the
    /// terms); sums into `f32` atomically, the others through a workspace.
    pub fn meet(&self) -> Option<Meet> {
        let spreadable = self.partable() && self.order == Order::Pairwise;
        spreadable.then_some(
            match self.w.combine == Combine::Sum && self.types.1 == DType::F32 {
                true => Meet::Atomic,
                false => Meet::Workspace,
            },
        )
    }

    /// How the pieces of tiles of `z` meet: [`Model::meet`] when they are spread, else
    /// `None`.
    pub fn meeting(&self, z: Size) -> Option<Meet> {
        (z.spread > 1).then(|| self.meet()).flatten()
    }

    /// Piece `piece` of a tile of `z`: its first part and how many ([`piece_of`]; every
    /// part, or the whole tile, without a spread).
    pub fn piece(&self, z: Size, piece: i64) -> (i64, i64) {
        let parts = self.parted(z).map_or(1, |(_, n)| n);
        let (first, count) = piece_of(Expr::Const(piece), parts, z.spread);
        (first.eval(&[], 0, 1), count.eval(&[], 0, 1))
    }

    /// The image rows of each load of piece `piece` of a tile of `z`: `(first row, rows)`,
    /// one for the whole tile (its rows from `first`, `None`) unless it goes in parts.
    fn loads(&self, z: Size, piece: i64) -> Vec<Option<(i64, i64)>> {
        match self.parted(z) {
            None => vec![None],
            Some((rows, _)) => {
                let (first, n) = self.piece(z, piece);
                (first..first + n)
                    .map(|k| Some((k * rows, rows.min(self.w.h - k * rows))))
                    .collect()
            }
        }
    }

    /// Work items of `z`: its tiles, or their pieces.
    pub fn items(&self, z: Size) -> i64 {
        self.grid(z)[3] * z.spread
    }

    /// The elements of the output a core sets to the initial value before a spread's atomic
    /// adds (whole 32-byte blocks; the last core's share may be shorter or empty).
    pub fn share(&self) -> i64 {
        let total: i64 = self.w.output.shape.iter().product();
        crate::npu::shares::share(total, self.machine.cores as i64, size(self.types.1))
    }

    /// Cycles of a spread's start, the same for every core: each core's V writes the
    /// initial value over an output slot and its MTE3 stores it over the core's share of the
    /// output (a slot's worth a burst, charged at its offset), then the barrier across the
    /// cores (a GM round trip: the longest GM path's latency, as the simulator charges it)
    /// waits for the slowest.
    fn start_cycles(&self, z: Size) -> f64 {
        let m = self.machine;
        let (share, cores) = (self.share(), m.cores as i64);
        let total: i64 = self.w.output.shape.iter().product();
        let dup = self.pass_cycles(1, z.chans);
        let latency = m.path(Mem::Ub, Mem::Gm).map_or(0.0, |p| m.paths[p].latency);
        let core = |c: i64| -> f64 {
            let (from, to) = (c * share, (c * share + share).min(total));
            let stores: f64 = (from..to)
                .step_by(z.chans.max(1) as usize)
                .map(|at| self.burst(at, (to - at).min(z.chans)))
                .sum();
            dup + if to > from { latency + stores } else { 0.0 }
        };
        let slowest = (0..cores).map(core).fold(0.0, f64::max);
        slowest + self.round_trip()
    }

    /// GM cycles of one burst of `elems` elements of the output's type from element `at`
    /// of its tensor: the segments it touches at the core's bandwidth, and its set-up.
    fn burst(&self, at: i64, elems: i64) -> f64 {
        let (m, bytes) = (self.machine, size(self.types.1));
        m.gm.charged((at * bytes) as u64, (elems * bytes) as u64) as f64
            / m.gm.bytes_per_cycle_per_core
            + m.gm.burst_cycles
    }

    /// Cycles of a barrier across the cores (`sync_all`): a GM round trip, the longest GM
    /// path's latency, as the simulator charges it.
    fn round_trip(&self) -> f64 {
        (self.machine.paths.iter())
            .filter(|p| p.touches_gm())
            .map(|p| p.latency)
            .fold(1.0, f64::max)
    }

    /// A workspace meeting ([`Meet::Workspace`]) on core `core`, after its work items: the
    /// barrier across the cores, then each tile of the core's share (the tiles dealt to the
    /// cores like the work items), one after the other: the load of its pieces' rows (one
    /// burst), V's pairwise combination of them with the initial value, the store of its
    /// outputs, each transfer after its path's latency. Returns the whole, its GM cycles and
    /// its vector cycles.
    fn meet_cycles(&self, z: Size, core: i64) -> (f64, f64, f64) {
        let m = self.machine;
        let latency = |from, to| m.path(from, to).map_or(0.0, |p| m.paths[p].latency);
        let (first, count) = self.deal(self.grid(z)[3], core);
        let (mut gm, mut vector) = (0.0, 0.0);
        for g in first..first + count {
            let t = self.tile(z, g);
            gm += self.burst(g * z.spread * z.chans, z.spread * z.chans)
                + self.burst(t.n * self.w.c + t.c0, z.chans);
            vector += self.halvings(z.chans, z.spread, 2);
        }
        let latencies = count as f64 * (latency(Mem::Gm, Mem::Ub) + latency(Mem::Ub, Mem::Gm));
        (self.round_trip() + latencies + gm + vector, gm, vector)
    }

    /// Chunks of lanes that cover `chans` channels.
    pub fn chunks(&self, chans: i64) -> i64 {
        (chans + self.lanes - 1) / self.lanes
    }

    /// Whether the instructions of tiles of `z` walk the chunks of lanes with their repeats
    /// (a tile one output column wide, whole chunks: global pooling), rather than the
    /// output columns with one instruction per chunk.
    pub fn by_chunks(&self, z: Size) -> bool {
        z.cols == 1 && z.chans % self.lanes == 0 && z.chans > self.lanes
    }

    /// The instructions of one element-wise pass over `pixels` consecutive pixels of
    /// `chans` channels: whole repeats of the lanes over the pixels as one run of elements
    /// when the channels are whole chunks of lanes, else a repeat per pixel for each chunk;
    /// at most the machine's repeats an instruction.
    pub fn runs(&self, pixels: i64, chans: i64) -> Vec<Run> {
        let (lanes, max) = (self.lanes, self.machine.vector.max_repeat as i64);
        let mut out = Vec::new();
        let mut split = |offset: i64, repeats: i64, mask: i64, stride: i64| {
            for done in (0..repeats).step_by(max.max(1) as usize) {
                out.push(Run {
                    offset: offset + done * stride,
                    repeats: (repeats - done).min(max),
                    mask,
                    stride,
                });
            }
        };
        if chans % lanes == 0 {
            split(0, pixels * chans / lanes, lanes, lanes);
        } else {
            for k in 0..self.chunks(chans) {
                split(k * lanes, pixels, (chans - k * lanes).min(lanes), chans);
            }
        }
        out
    }

    fn aligned(&self, bytes: i64) -> i64 {
        (bytes + self.align - 1) / self.align * self.align
    }

    /// Whether the input (the weights) are converted to the output's type on chip first:
    /// the vector unit's arithmetic takes operands of one type.
    pub fn converts(&self) -> (bool, bool) {
        let (i, o, w) = self.types;
        (i != o, w != o)
    }

    /// Slots of the input ring: one when the input is converted on chip (the copy frees
    /// the slot as soon as the tile is loaded), else two.
    pub fn in_slots(&self) -> i64 {
        if self.converts().0 {
            1
        } else {
            2
        }
    }

    /// Elements of each UB buffer for tiles of `z` (0: none); a pixel holds the tile's
    /// channels.
    pub fn elems(&self, z: Size) -> Elems {
        let w = self.w;
        let input = match self.parted(z) {
            Some((rows, _)) => rows * w.w * z.chans,
            None => self.in_rows(z.rows) * self.in_cols(z.cols) * z.chans,
        };
        let weights = match w.term {
            Term::Product { .. } => w.r * w.s * w.c,
            _ => 0,
        };
        let (conv_in, conv_w) = self.converts();
        Elems {
            input,
            output: z.rows * z.cols * z.chans,
            temp: match (&w.term, self.order) {
                (Term::Input, _) | (_, Order::Pairwise) => 0,
                _ => z.cols * z.chans,
            },
            weights,
            converted: if conv_in { input } else { 0 },
            converted_weights: if conv_w { weights } else { 0 },
        }
    }

    /// UB bytes of tiles of `z`: both rings, the temporary, the weights, the converted
    /// copies, each buffer aligned.
    pub fn ub_bytes(&self, z: Size) -> u64 {
        let e = self.elems(z);
        let (i, o, wd) = self.types;
        let bytes = self.in_slots() * self.aligned(e.input * size(i))
            + 2 * self.aligned(e.output * size(o))
            + self.aligned(e.temp * size(o))
            + self.aligned(e.weights * size(wd))
            + self.aligned(e.converted * size(o))
            + self.aligned(e.converted_weights * size(o));
        bytes as u64
    }

    /// The range of image rows (columns) `lo..hi` a tile's window rows starting at `first`
    /// (in padded coordinates) reach, `extent` of them, in an image of `size`.
    fn clip(first: i64, extent: i64, size: i64) -> (i64, i64) {
        (first.max(0), (first + extent).min(size))
    }

    /// GM cycles of one tile's load (of the image rows `part`, `(first, rows)`, when it goes
    /// in parts) and of its store: their bursts (a row of pixels when the tile holds every
    /// channel, else a pixel's channels), each charged every segment it touches, at the
    /// core's bandwidth, plus each burst's set-up.
    fn gm_cycles(&self, t: &At, part: Option<(i64, i64)>) -> (f64, f64) {
        let (w, m) = (self.w, self.machine);
        let (i, o, _) = self.types;
        let z = t.size;
        let (hlo, hhi) = match part {
            Some((first, rows)) => (first, first + rows),
            None => Self::clip(w.stride.0 * t.p0 - w.pad.top, self.in_rows(z.rows), w.h),
        };
        let (wlo, whi) = Self::clip(w.stride.1 * t.q0 - w.pad.left, self.in_cols(z.cols), w.w);
        // the GM cycles of `rows` rows of `pixels` pixels from pixel `first(row)` of a tensor
        // of element size `e` over a path of latency `latency`: a burst per row in one
        // transfer when the tile holds every channel, else a burst per pixel (its group of
        // channels) and a transfer per row but for `one` (an image whose pixels follow each
        // other in GM). A transfer's latency runs while the one before moves data (the
        // pipelined latency of `docs/npu.md`), so each row but the last takes the longer of
        // its data and a latency; the first latency is the rings' (`rings`).
        let cycles = |rows: std::ops::Range<i64>,
                      pixels: i64,
                      first: &dyn Fn(i64) -> i64,
                      e,
                      (latency, one): (f64, bool)| {
            let whole = z.chans == w.c;
            let (per_row, len) = match whole {
                true => (1, pixels * w.c * e),
                false => (pixels, z.chans * e),
            };
            let row_cycles = rows.clone().map(|r| {
                let charged: u64 = (0..per_row)
                    .map(|k| {
                        let start = match whole {
                            true => first(r) * w.c * e,
                            false => ((first(r) + k) * w.c + t.c0) * e,
                        };
                        m.gm.charged(start as u64, len as u64)
                    })
                    .sum();
                charged as f64 / m.gm.bytes_per_cycle_per_core + per_row as f64 * m.gm.burst_cycles
            });
            match whole || one {
                true => row_cycles.sum(),
                false => {
                    let rows: Vec<f64> = row_cycles.collect();
                    let last = rows.last().copied().unwrap_or(0.0);
                    let before: f64 = rows.iter().rev().skip(1).map(|&d| d.max(latency)).sum();
                    before + last
                }
            }
        };
        let latency = |from, to| m.path(from, to).map_or(0.0, |p| m.paths[p].latency);
        let load = cycles(
            hlo..hhi,
            whi - wlo,
            &|h| (t.n * w.h + h) * w.w + wlo,
            size(i),
            (latency(Mem::Gm, Mem::Ub), w.consecutive()),
        );
        let store = cycles(
            t.p0..t.p0 + z.rows,
            z.cols,
            &|p| (t.n * w.oh + p) * w.ow + t.q0,
            size(o),
            (latency(Mem::Ub, Mem::Gm), false),
        );
        (load, store)
    }

    /// The output columns `lo..hi` of a tile (from `q0`, `cols` of them) whose window
    /// column `s` falls inside the image.
    pub fn cols_inside(&self, q0: i64, cols: i64, s: i64) -> (i64, i64) {
        let w = self.w;
        let sw = w.stride.1;
        let lo = ((w.pad.left - s).max(0) + sw - 1) / sw;
        let hi = (w.w - 1 + w.pad.left - s).div_euclid(sw) + 1;
        (lo.max(q0), hi.min(q0 + cols))
    }

    /// The window rows `lo..hi` of output row `p` that fall inside the image.
    pub fn rows_inside(&self, p: i64) -> (i64, i64) {
        let w = self.w;
        let first = w.stride.0 * p - w.pad.top;
        ((-first).max(0), (w.h - first).min(w.r))
    }

    /// Vector cycles of one tile (of the image rows `part`, `(first, rows)`, when it goes
    /// in parts; the initial value only when `initial`, with a work item's first): the
    /// conversion of its input rows (when converted), then per output row, the initial value
    /// and one instruction per window position inside the image (two with a weight or a
    /// constant: the product, then its sum), each per chunk of lanes with a repeat per output
    /// column, or (`by_chunks`) once with a repeat per chunk. Returns the conversion's cycles
    /// and the whole's.
    fn vector_cycles(&self, t: &At, part: Option<(i64, i64)>, initial: bool) -> (f64, f64) {
        let (w, m) = (self.w, self.machine);
        let z = t.size;
        let start = m.vector.startup;
        if self.order == Order::Pairwise {
            let rows = part.map_or(w.h, |(_, rows)| rows);
            return self.pairwise_cycles(z.chans, rows * w.w, initial);
        }
        // one pass over `n` pixels: its instructions' cycles
        let pass = |n: i64| match self.by_chunks(z) {
            true => (start + self.chunks(z.chans) as f64) * n as f64,
            false => (start + n as f64) * self.chunks(z.chans) as f64,
        };
        let mut convert = 0.0;
        if self.converts().0 {
            let (hlo, hhi) = match part {
                Some((first, rows)) => (first, first + rows),
                None => Self::clip(w.stride.0 * t.p0 - w.pad.top, self.in_rows(z.rows), w.h),
            };
            let (wlo, whi) = Self::clip(w.stride.1 * t.q0 - w.pad.left, self.in_cols(z.cols), w.w);
            // per loaded row and chunk, a repeat per pixel
            convert =
                (hhi - hlo) as f64 * (start + (whi - wlo) as f64) * self.chunks(z.chans) as f64;
        }
        let mut cycles = convert;
        let per_term = match w.term {
            Term::Input => 1.0,
            _ => 2.0,
        };
        for p in t.p0..t.p0 + z.rows {
            let (rlo, rhi) = match part {
                Some((first, rows)) => (first, first + rows),
                None => self.rows_inside(p),
            };
            if initial {
                cycles += pass(z.cols);
            }
            for s in 0..w.s {
                let (lo, hi) = self.cols_inside(t.q0, z.cols, s);
                if hi > lo {
                    cycles += (rhi - rlo) as f64 * per_term * pass(hi - lo);
                }
            }
        }
        (convert, cycles)
    }

    /// Vector cycles of one element-wise pass over `pixels` consecutive pixels of `chans`
    /// channels ([`Model::runs`]).
    fn pass_cycles(&self, pixels: i64, chans: i64) -> f64 {
        (self.runs(pixels, chans).iter())
            .map(|r| self.machine.vector.startup + r.repeats as f64)
            .sum()
    }

    /// Vector cycles of `pixels` pixels of a tile of `chans` channels combined pairwise:
    /// the conversion of its pixels (when converted) and their scaling (a term times a
    /// constant), a pass each, then a pass per halving, then the initial value (when
    /// `initial`) and the last pixel. Returns the conversion's cycles and the whole's.
    fn pairwise_cycles(&self, chans: i64, pixels: i64, initial: bool) -> (f64, f64) {
        let pass = |pixels: i64| self.pass_cycles(pixels, chans);
        let convert = match self.converts().0 {
            true => pass(pixels),
            false => 0.0,
        };
        let scale = match self.w.term {
            Term::Scaled(_) => pass(pixels),
            _ => 0.0,
        };
        let ends = 1 + usize::from(initial);
        (
            convert,
            convert + scale + self.halvings(chans, pixels, ends),
        )
    }

    /// Vector cycles of `pixels` pixels of `chans` channels halved until one is left, and
    /// `ends` passes over one pixel (the initial value, the last pixel combined into it).
    fn halvings(&self, chans: i64, pixels: i64, ends: usize) -> f64 {
        let pass = |pixels: i64| self.pass_cycles(pixels, chans);
        let mut cycles = ends as f64 * pass(1);
        let mut n = pixels;
        while n > 1 {
            cycles += pass(n / 2);
            n -= n / 2;
        }
        cycles
    }

    /// The grid of tiles of `z`: tiles per image in a column of tiles, in a row of tiles,
    /// per pixel (channel groups), and in all.
    pub fn grid(&self, z: Size) -> [i64; 4] {
        let w = self.w;
        let tp = (w.oh + z.rows - 1) / z.rows;
        let tq = (w.ow + z.cols - 1) / z.cols;
        let tc = w.c / z.chans;
        [tp, tq, tc, w.batch * tp * tq * tc]
    }

    /// Tile `g` of the grid of `z` (row-major: image, output rows, output columns, channel
    /// groups), edges clipped.
    pub fn tile(&self, z: Size, g: i64) -> At {
        let w = self.w;
        let [tp, tq, tc, _] = self.grid(z);
        let (p0, q0) = ((g / (tq * tc)) % tp * z.rows, (g / tc) % tq * z.cols);
        At {
            n: g / (tp * tq * tc),
            p0,
            q0,
            c0: g % tc * z.chans,
            size: Size {
                rows: z.rows.min(w.oh - p0),
                cols: z.cols.min(w.ow - q0),
                chans: z.chans,
                part: z.part,
                spread: z.spread,
            },
        }
    }

    /// The first tile and the number of tiles of core `core` among `tiles` (contiguous,
    /// balanced ranges).
    pub fn deal(&self, tiles: i64, core: i64) -> (i64, i64) {
        let cores = self.machine.cores as i64;
        let (q, rem) = (tiles / cores, tiles % cores);
        (core * q + core.min(rem), q + i64::from(core < rem))
    }

    /// The model's figures for tiles of `z`, `None` when they do not fit UB, a pass is more
    /// than an instruction's repeats, or the channels do not split into whole 32-byte blocks.
    pub fn cost(&self, z: Size) -> Option<Choice> {
        let (w, m) = (self.w, self.machine);
        let block = |t: DType| (z.chans * size(t)) % npu_sim::hazards::BLOCK as i64 == 0;
        let (i, o, _) = self.types;
        // a pairwise pass is split into instructions of at most the machine's repeats
        let repeats = match (self.order, self.by_chunks(z)) {
            (Order::Pairwise, _) => 1,
            (_, true) => self.chunks(z.chans),
            (_, false) if self.converts().0 => self.in_cols(z.cols),
            (_, false) => z.cols,
        };
        // a spatial window's tiles are loaded whole; global pooling's whole or (without a
        // border) in parts of fewer rows than the image's
        let part_ok = z.part == 0 || self.parted(z).is_some();
        // a spread: at most a piece a part; through a workspace, a tile's pieces' rows fit
        // the slot of a part they are loaded into
        let spread_ok = z.spread == 1
            || (self
                .parted(z)
                .is_some_and(|(_, n)| (2..=n).contains(&z.spread))
                && match self.meet() {
                    None => false,
                    Some(Meet::Atomic) => true,
                    Some(Meet::Workspace) => z.spread * z.chans <= self.elems(z).input,
                });
        let fits = part_ok
            && spread_ok
            && (1..=w.oh).contains(&z.rows)
            && (1..=w.ow).contains(&z.cols)
            && (1..=w.c).contains(&z.chans)
            && w.c % z.chans == 0
            && block(i)
            && block(o)
            && repeats <= m.vector.max_repeat as i64
            && self.ub_bytes(z) <= self.ub_capacity;
        if !fits {
            return None;
        }
        let tiles = self.items(z);
        let latency = |from, to| m.path(from, to).map_or(0.0, |p| m.paths[p].latency);
        let (load_latency, store_latency) = (latency(Mem::Gm, Mem::Ub), latency(Mem::Ub, Mem::Gm));
        let meet = self.meeting(z);
        let start = match meet {
            Some(Meet::Atomic) => self.start_cycles(z),
            _ => 0.0,
        };
        let mut busiest: Option<Choice> = None;
        for core in 0..(m.cores as i64).min(tiles) {
            let (first, count) = self.deal(tiles, core);
            // per load of a work item (a tile, or each part of its piece): its load, its
            // vector work (the initial value with the first) and, after the last, the
            // item's store
            let steps: Vec<Step> = (first..first + count)
                .flat_map(|g| {
                    let t = self.tile(z, g / z.spread);
                    let loads = self.loads(z, g % z.spread);
                    let last = loads.len() - 1;
                    (loads.into_iter().enumerate()).map(move |(k, part)| (t, k, k == last, part))
                })
                .map(|(t, k, last, part)| {
                    let (load, store) = self.gm_cycles(&t, part);
                    let (convert, vector) = self.vector_cycles(&t, part, k == 0);
                    Step {
                        load,
                        convert,
                        vector,
                        store: if last { store } else { 0.0 },
                    }
                })
                .collect();
            let (after, after_gm, after_vector) = match meet {
                Some(Meet::Workspace) => self.meet_cycles(z, core),
                _ => (0.0, 0.0, 0.0),
            };
            let cycles =
                start + rings(&steps, (load_latency, store_latency), self.in_slots() == 1) + after;
            let gm: f64 = after_gm + steps.iter().map(|s| s.load + s.store).sum::<f64>();
            let vector: f64 = after_vector + steps.iter().map(|s| s.vector).sum::<f64>();
            if busiest.as_ref().is_none_or(|b| cycles > b.cycles) {
                busiest = Some(Choice {
                    size: z,
                    tiles,
                    per_core: count,
                    cycles,
                    gm_cycles: gm,
                    vector_cycles: vector,
                    ub_bytes: self.ub_bytes(z),
                });
            }
        }
        busiest
    }

    /// Every tiling that fits, cheapest first by the model (ties: larger tiles first, then
    /// larger loads). The sizes tried are those that split the output rows (columns) into
    /// `k` nearly equal tiles for each `k`, and the channels into any number of equal
    /// groups; for global pooling without a border, each also in parts of the image rows
    /// that split them into `k` nearly equal parts for each `k` > 1, and, where tiles may be
    /// spread, in any number of pieces up to one a part that leaves each core at most two
    /// work items (more only balances the tail, at the price of the pieces' meeting).
    pub fn ranked(&self) -> Vec<Choice> {
        let splits = |extent: i64| {
            let mut sizes: Vec<i64> = (1..=extent).map(|k| (extent + k - 1) / k).collect();
            sizes.dedup();
            sizes
        };
        let c = self.w.c;
        let groups: Vec<i64> = (1..=c).filter(|k| c % k == 0).map(|k| c / k).collect();
        let h = self.w.h;
        let parts: Vec<i64> = match self.partable() {
            false => vec![0],
            true => std::iter::once(0)
                .chain(splits(h).into_iter().filter(|&p| p < h))
                .collect(),
        };
        let cores = self.machine.cores as i64;
        let mut out = Vec::new();
        for &rows in &splits(self.w.oh) {
            for &cols in &splits(self.w.ow) {
                for &chans in &groups {
                    for &part in &parts {
                        let z = Size {
                            rows,
                            cols,
                            chans,
                            part,
                            spread: 1,
                        };
                        let most = match (self.meet(), self.parted(z)) {
                            (Some(_), Some((_, n))) => n.min(2 * cores / self.grid(z)[3]).max(1),
                            _ => 1,
                        };
                        out.extend((1..=most).filter_map(|spread| self.cost(Size { spread, ..z })));
                    }
                }
            }
        }
        let loaded = |c: &Choice| match c.size.part {
            0 => h,
            part => part,
        };
        out.sort_by(|a, b| {
            let volume = |c: &Choice| c.size.rows * c.size.cols * c.size.chans;
            a.cycles
                .total_cmp(&b.cycles)
                .then(volume(b).cmp(&volume(a)))
                .then(loaded(b).cmp(&loaded(a)))
                .then(a.size.spread.cmp(&b.size.spread))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{piece_of, shared};
    use npu_sim::program::Expr;

    #[test]
    fn pieces_cover_a_tiles_parts_in_order_in_runs_at_most_one_apart() {
        for parts in 1..40 {
            for spread in 1..=parts {
                let runs: Vec<(i64, i64)> = (0..spread)
                    .map(|k| {
                        let (first, count) = piece_of(Expr::Const(k), parts, spread);
                        (first.eval(&[], 0, 1), count.eval(&[], 0, 1))
                    })
                    .collect();
                let mut next = 0;
                for &(first, count) in &runs {
                    assert_eq!(first, next, "{parts} parts in {spread}: {runs:?}");
                    next += count;
                }
                assert_eq!(next, parts);
                let counts = runs.iter().map(|r| r.1);
                let (lo, hi) = (counts.clone().min().unwrap(), counts.max().unwrap());
                assert!(
                    lo >= 1 && hi - lo <= 1,
                    "{parts} parts in {spread}: {runs:?}"
                );
            }
        }
    }

    #[test]
    fn transfers_share_the_cores_bandwidth_only_while_both_move_data() {
        // one after the other: each alone
        assert_eq!(shared(0.0, (0.0, 10.0), (20.0, 5.0)), (10.0, 25.0));
        // the store starts halfway through the load: 5 cycles alone, then half speed each
        assert_eq!(shared(0.0, (0.0, 10.0), (5.0, 10.0)), (15.0, 20.0));
        assert_eq!(shared(0.0, (5.0, 10.0), (0.0, 10.0)), (20.0, 15.0));
        // a short store inside a long load
        assert_eq!(shared(0.0, (0.0, 20.0), (5.0, 2.0)), (22.0, 9.0));
        // both waiting for the GM to be free
        assert_eq!(shared(30.0, (0.0, 10.0), (0.0, 10.0)), (50.0, 50.0));
    }
}
