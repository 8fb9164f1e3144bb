//! A product's (or an NHWC convolution's) vector epilogue in its program
//! ([`VectorEpilogue`]): the statement's values as a vector-path graph over a span of an
//! output tile's rows in UB, the f32 sums a value given in place, the result stored into the
//! tile's output slot.
//!
//! Per core, before the tiles: MTE2 loads the per-column vectors and scalars (whole), and V
//! computes what depends on them only (a bias converted to f32) over all the columns. Per
//! span of rows drained from L0C: MTE2 loads the span of each input of the output's shape
//! (a residual) into the span's slot of a ring of two (the schedule picks the slot: any
//! choice keeps the flags paired, alternating ones let a load overlap the span before),
//! once V has freed it (flag ids 1 + slot both ways, `SECOND`); a `barrier V` (the copy
//! out of L0C is on V too), the graph's instructions, the per-column values read at the
//! tile's first column, and a `barrier V` (the next copy may write the sums they read: only
//! V touches them, so the schedules keep one slot of sums where their flags do not tell
//! slots apart). Where the tiles do not divide C's columns, the last tile's columns past
//! C's are computed on padding (zeroed once per core: the sums, the second tiles' rings, the
//! per-column vectors past their end) and never stored.

use super::dtype;
use crate::npu::epilogue::VectorEpilogue;
use crate::npu::vector::alloc::{self, Class, Temps};
use crate::npu::vector::emit::{Emitter, Place, Rows, Unit};
use crate::npu::vector::graph::{Graph, Layout, Op, Val};
use crate::npu::vector::group::{self, Group};
use crate::npu::vector::lower::Frame;
use crate::npu::vector::recognise::Kind;
use crate::npu::NpuError;
use frontend::ir::ArrayId;
use npu_sim::builder::Builder;
use npu_sim::program::{BufferId, DType, Direction, Dma, Expr, Pipe, TensorId, Tier};
use npu_sim::Machine;
use std::collections::BTreeMap;

/// The flag id of (MTE2, V) that orders the per-core loads before V reads them. The
/// prologue comes before any other use of the pair in the program (a convolution's streams
/// use it later), so its set and wait are the flag's first, which match each other.
const LOADED: i64 = 0;

/// The first flag id of (MTE2, V) and (V, MTE2) that orders a span's second tiles (a
/// residual) between MTE2's load and V's use, one per slot: the products' schedules use
/// neither pair otherwise, a convolution's streams only when they spread its channels
/// through V (and its epilogue then reads no second tile: `conv::recognise`).
const SECOND: i64 = 1;

/// Where a span of an output tile is in GM: the index of its first element (in the output,
/// and in every input of the output's shape), its columns and the output's row stride; and
/// the slot (0 or 1) its second tiles go to.
pub struct SpanAt {
    /// The first element's index.
    pub index: Vec<Expr>,
    /// The span's columns.
    pub cols: Expr,
    /// Elements between consecutive rows in GM.
    pub row_stride: i64,
    /// The second tiles' slot.
    pub slot: Expr,
}

/// A vector epilogue laid out for tiles `tn` columns wide.
pub struct Tail<'e> {
    epi: &'e VectorEpilogue,
    group: Group,
    temps: Temps,
    /// The temporary the sums occupy (the tile's sums buffer), if they are read.
    sums: Option<(Class, usize)>,
    /// Rows of `tn` columns.
    unit: Unit,
    /// All of C's columns, for the values computed once per core.
    wide: Unit,
    flag_cycles: f64,
}

/// Where a value of the tail lives.
#[derive(Clone, Copy, Debug)]
enum Home {
    /// A buffer of the tail's own (per-core values, temporaries).
    Own(BufferId),
    /// A ring of two slots of this many elements (a second tile's spans).
    Ring(BufferId, i64),
    /// The span's f32 sums.
    Sums,
    /// The span's result.
    Out,
    /// Nowhere: never computed or read.
    Unused,
}

/// The UB buffers a tail declares (besides the tile's sums and result), and where each value
/// lives.
pub struct Buffers {
    homes: Vec<Home>,
    /// Each second tile's or per-row vector's GM tensor, UB ring, elements per slot and
    /// whether it is a per-row vector.
    seconds: Vec<(TensorId, BufferId, i64, bool)>,
}

/// Bytes of `elems` elements of `d`, rounded up to `align`.
pub(super) fn bytes(elems: i64, d: npu_sim::program::DType, align: i64) -> i64 {
    (elems * d.size() as i64 + align - 1) / align * align
}

impl<'e> Tail<'e> {
    /// The tail of `epi` for tiles `tn` columns wide on `machine` (when `tn` does not divide
    /// C's columns, the last tile's columns past C's are computed on padding and never
    /// stored).
    pub fn new(epi: &'e VectorEpilogue, machine: &Machine, tn: i64) -> Option<Tail<'e>> {
        let cols = epi.vk.cols?;
        let group = group::build(&epi.vk, &epi.kernel, Frame::of(machine, tn)).ok()?;
        let sums = (group.loaded.iter()).find(|(_, a)| *a == epi.acc)?.0;
        // the sums' slot is the first operation's to compute in place
        let temps = alloc::temps(&group.graph, &group.live, &|v| {
            let n = &group.graph.nodes[v];
            n.home.is_some() || (n.op == Op::Given && v != sums)
        });
        let sums = temps.slot[sums];
        Some(Tail {
            epi,
            group,
            temps,
            sums,
            unit: Unit::of(machine, tn),
            wide: Unit::of(machine, crate::npu::up(cols, tn)),
            flag_cycles: machine.scalar.flag_cycles,
        })
    }

    fn graph(&self) -> &Graph {
        &self.group.graph
    }

    /// The values loaded once per core (per-column vectors, scalars), with their arrays.
    fn given(&self) -> impl Iterator<Item = (Val, ArrayId)> + '_ {
        (self.group.loaded.iter().copied()).filter(|(_, a)| {
            *a != self.epi.acc && matches!(self.epi.vk.arrays[a], Kind::Col | Kind::Scalar)
        })
    }

    /// The values loaded with every span (second tiles, per-row vectors), with their arrays.
    fn seconds(&self) -> impl Iterator<Item = (Val, ArrayId)> + '_ {
        (self.group.loaded.iter().copied()).filter(|(_, a)| {
            *a != self.epi.acc && matches!(self.epi.vk.arrays[a], Kind::Tile | Kind::Row)
        })
    }

    /// Elements of a span's slot of a value of `layout` and type `d`, `rows` rows.
    fn span_elems(&self, layout: Layout, d: npu_sim::program::DType, rows: i64) -> i64 {
        let f = &self.unit.frame;
        alloc::LayoutKey::of(layout).elements(rows, f.width, f.lanes(d))
    }

    /// The element sizes in bytes of the second tiles (a residual), one each.
    pub fn second_sizes(&self) -> Vec<i64> {
        let g = self.graph();
        (self.seconds())
            .map(|(v, _)| g.nodes[v].dtype.size() as i64)
            .collect()
    }

    /// The values computed once per core (per-column values and constants).
    fn invariants(&self) -> impl Iterator<Item = Val> + '_ {
        let g = self.graph();
        (0..g.nodes.len())
            .filter(move |&v| self.group.live[v] && g.nodes[v].op != Op::Given)
            .filter(move |&v| g.invariant(v))
    }

    /// The values computed per span of rows, in order.
    fn per_span(&self) -> impl Iterator<Item = Val> + '_ {
        let g = self.graph();
        (0..g.nodes.len())
            .filter(move |&v| self.group.live[v] && g.nodes[v].op != Op::Given)
            .filter(move |&v| !g.invariant(v))
    }

    /// Elements of a per-core value of `layout` and type `d`.
    fn core_elems(&self, layout: Layout, d: npu_sim::program::DType) -> i64 {
        let f = &self.wide.frame;
        alloc::LayoutKey::of(layout).elements(1, f.width, f.lanes(d))
    }

    /// The buffers' UB sizes for spans of at most `rows` rows, in bytes.
    fn sizes(&self, rows: i64) -> Vec<(i64, npu_sim::program::DType)> {
        let g = self.graph();
        let mut out = Vec::new();
        for (v, _) in self.given() {
            let n = &g.nodes[v];
            out.push((self.core_elems(n.layout, n.dtype), n.dtype));
        }
        for v in self.invariants() {
            let n = &g.nodes[v];
            out.push((self.core_elems(n.layout, n.dtype), n.dtype));
        }
        for (v, _) in self.seconds() {
            let n = &g.nodes[v];
            out.push((2 * self.span_elems(n.layout, n.dtype, rows), n.dtype));
        }
        let f = &self.unit.frame;
        for (&class, &count) in &self.temps.count {
            let elems = class.layout.elements(rows, f.width, f.lanes(class.dtype));
            let own = (0..count)
                .filter(|&i| self.sums != Some((class, i)))
                .count();
            out.extend(std::iter::repeat_n((elems, class.dtype), own));
        }
        out
    }

    /// UB bytes of the tail's own buffers for spans of at most `rows` rows.
    pub fn ub_bytes(&self, rows: i64) -> i64 {
        let align = self.unit.frame.align;
        (self.sizes(rows).iter())
            .map(|&(elems, d)| bytes(elems, d, align))
            .sum()
    }

    /// Vector cycles of a span of `rows` rows (a flag cycle per instruction's barrier,
    /// counted generously).
    pub fn cycles(&self, rows: i64) -> f64 {
        (self.per_span())
            .map(|v| self.unit.cycles(self.graph(), v, rows) + self.flag_cycles)
            .sum::<f64>()
            + self.flag_cycles
    }

    /// Declares the tail's buffers for spans of at most `rows` rows, and the GM tensors of
    /// the per-core inputs.
    pub fn declare(&self, b: &mut Builder, rows: i64) -> Result<(Buffers, Vec<Dma>), NpuError> {
        let g = self.graph();
        let k = &self.epi.kernel;
        let mut homes = vec![Home::Unused; g.nodes.len()];
        // an input's GM tensor and its UB buffer of `elems` elements
        let input = |b: &mut Builder, (v, a): (Val, ArrayId), elems: i64| {
            let array = k.array(a);
            let shape = (self.epi.shapes.get(&a))
                .ok_or_else(|| NpuError::Internal(format!("no shape for `{}`", array.name)))?;
            let tensor = b.tensor(&array.name, dtype(array.elem)?, shape, Direction::In);
            let name = format!("ub_{}", array.name);
            let id = b.buffer(&name, Tier::Ub, g.nodes[v].dtype, &[elems as u64]);
            Ok::<_, NpuError>((tensor, id, shape.len()))
        };
        let mut loads = Vec::new();
        for (v, a) in self.given() {
            let n = &g.nodes[v];
            let (tensor, id, rank) = input(b, (v, a), self.core_elems(n.layout, n.dtype))?;
            let len = match self.epi.vk.arrays[&a] {
                Kind::Col => self.epi.vk.cols.unwrap_or(1),
                _ => 1,
            };
            loads.push(Dma::new(
                b.at(id, [Expr::Const(0)]),
                b.at(tensor, vec![Expr::Const(0); rank]),
                1,
                len,
            ));
            homes[v] = Home::Own(id);
        }
        let mut seconds = Vec::new();
        for (v, a) in self.seconds() {
            let n = &g.nodes[v];
            let elems = self.span_elems(n.layout, n.dtype, rows);
            let (tensor, id, _) = input(b, (v, a), 2 * elems)?;
            seconds.push((tensor, id, elems, self.epi.vk.arrays[&a] == Kind::Row));
            homes[v] = Home::Ring(id, elems);
        }
        for v in self.invariants() {
            let n = &g.nodes[v];
            let elems = self.core_elems(n.layout, n.dtype);
            let id = b.buffer(&format!("epi{v}"), Tier::Ub, n.dtype, &[elems as u64]);
            homes[v] = Home::Own(id);
        }
        let f = &self.unit.frame;
        let mut temps: BTreeMap<(Class, usize), Home> = BTreeMap::new();
        for (&class, &count) in &self.temps.count {
            let elems = class.layout.elements(rows, f.width, f.lanes(class.dtype));
            for i in 0..count {
                let home = if self.sums == Some((class, i)) {
                    Home::Sums
                } else {
                    Home::Own(b.buffer(
                        &format!("epi_{}_{i}", class.dtype),
                        Tier::Ub,
                        class.dtype,
                        &[elems as u64],
                    ))
                };
                temps.insert((class, i), home);
            }
        }
        for v in self.per_span() {
            let n = &g.nodes[v];
            homes[v] = if n.home == Some(self.epi.out.0) {
                Home::Out
            } else {
                let slot = self.temps.slot[v].and_then(|s| temps.get(&s));
                *slot.ok_or_else(|| {
                    NpuError::Internal(format!("epilogue value {v} has no buffer"))
                })?
            };
        }
        for (v, a) in &self.group.loaded {
            if *a == self.epi.acc {
                homes[*v] = Home::Sums;
            }
        }
        Ok((Buffers { homes, seconds }, loads))
    }

    /// Whether the tiles do not divide C's columns: the last tile's columns past C's are
    /// computed from padding, which must be written.
    fn padded(&self) -> bool {
        self.epi
            .vk
            .cols
            .is_some_and(|cols| self.wide.frame.width > cols)
    }

    /// Per core, before the tiles: with padded rows, the tiles' sums (`sums`: buffer, type
    /// and elements) and the second tiles' rings zeroed (the copies out of L0C and the loads
    /// write C's columns only); the per-core inputs loaded (`loads`, from
    /// [`Tail::declare`]) and the values that depend on them only computed; the second
    /// tiles' slots free.
    pub fn prologue(
        &self,
        b: &mut Builder,
        bufs: &Buffers,
        loads: Vec<Dma>,
        sums: (BufferId, DType, i64),
    ) {
        if self.padded() {
            let mut e = Emitter::new(b, self.unit);
            let rings = (self.seconds().zip(&bufs.seconds))
                .map(|((v, _), &(_, buf, elems, _))| (buf, self.graph().nodes[v].dtype, 2 * elems));
            for (buf, dtype, elems) in rings.chain([sums]) {
                let place = Place {
                    buf,
                    offset: Expr::Const(0),
                };
                e.fill(&place, dtype, elems);
            }
            e.barrier();
        }
        if !bufs.seconds.is_empty() {
            b.set_flag(Pipe::V, Pipe::Mte2, SECOND);
            b.set_flag(Pipe::V, Pipe::Mte2, SECOND + 1);
        }
        if !loads.is_empty() {
            // per-column vectors shorter than the rows in UB: the rest zero, so that the
            // padding's values are computed from written bytes
            let short: Vec<(Val, BufferId)> = (self.given())
                .filter(|(v, _)| self.padded() && self.graph().nodes[*v].layout == Layout::Col)
                .filter_map(|(v, _)| match bufs.homes[v] {
                    Home::Own(id) => Some((v, id)),
                    _ => None,
                })
                .collect();
            if !short.is_empty() {
                let mut e = Emitter::new(b, self.wide);
                for (v, id) in short {
                    let n = &self.graph().nodes[v];
                    let place = Place {
                        buf: id,
                        offset: Expr::Const(0),
                    };
                    e.fill(&place, n.dtype, self.core_elems(n.layout, n.dtype));
                }
                b.set_flag(Pipe::V, Pipe::Mte2, LOADED);
                b.wait_flag(Pipe::V, Pipe::Mte2, LOADED);
            }
            b.origin(Some(&format!("{}: per-core inputs", self.epi.statement)));
            for d in loads {
                b.push(d);
            }
            b.origin(None);
            b.set_flag(Pipe::Mte2, Pipe::V, LOADED);
            b.wait_flag(Pipe::Mte2, Pipe::V, LOADED);
        }
        let none = Place {
            buf: BufferId(0),
            offset: Expr::Const(0),
        };
        let zero = Expr::Const(0);
        let place = |v: Val| self.place(bufs, v, (&none, &none), (&zero, &zero));
        let once = Rows {
            count: Expr::Const(1),
            max: 1,
        };
        let mut e = Emitter::new(b, self.wide);
        e.b.origin(Some(&format!("{}: per-core values", self.epi.statement)));
        for v in self.invariants() {
            e.node(self.graph(), v, &|w| place(w), &once);
        }
        e.b.origin(None);
    }

    /// Where value `v` is: the span's sums and result at `tile` (sums, result), a
    /// per-column value at the tile's first column `col0`, a second tile in slot `slot`.
    fn place(
        &self,
        bufs: &Buffers,
        v: Val,
        (sums, out): (&Place, &Place),
        (col0, slot): (&Expr, &Expr),
    ) -> Place {
        let col = self.graph().nodes[v].layout == Layout::Col;
        match bufs.homes[v] {
            Home::Own(buf) => Place {
                buf,
                offset: if col { col0.clone() } else { Expr::Const(0) },
            },
            Home::Ring(buf, elems) => Place {
                buf,
                offset: slot.clone() * elems,
            },
            Home::Sums => sums.clone(),
            Home::Out => out.clone(),
            // never read: `per_span` and `invariants` hold live values only
            Home::Unused => sums.clone(),
        }
    }

    /// After the tiles: the last "free" of the second tiles' slots waited for.
    pub fn finish(&self, b: &mut Builder, bufs: &Buffers) {
        if !bufs.seconds.is_empty() {
            b.wait_flag(Pipe::V, Pipe::Mte2, SECOND);
            b.wait_flag(Pipe::V, Pipe::Mte2, SECOND + 1);
        }
    }

    /// V: the epilogue over `rows` rows of a tile whose f32 sums are at `sums` and whose
    /// result goes to `out`, the tile's first column `col0`; the span's second tiles loaded
    /// first by MTE2 from `at`.
    pub fn span(
        &self,
        b: &mut Builder,
        bufs: &Buffers,
        (sums, out): (&Place, &Place),
        (rows, at): (Rows, &SpanAt),
        col0: &Expr,
    ) {
        let id = at.slot.clone() + SECOND;
        if !bufs.seconds.is_empty() {
            b.wait_flag(Pipe::V, Pipe::Mte2, id.clone());
            b.origin(Some(&format!("{}: the tile's inputs", self.epi.statement)));
            for &(tensor, buf, elems, row) in &bufs.seconds {
                let dst = b.at(buf, [at.slot.clone() * elems]);
                if row {
                    // the span's rows of a per-row vector: its index is the tile's without
                    // the column
                    let index = &at.index[..at.index.len() - 1];
                    let src = b.at(tensor, index.to_vec());
                    b.push(Dma::new(dst, src, 1, rows.count.clone()));
                } else {
                    let src = b.at(tensor, at.index.clone());
                    b.push(
                        Dma::new(dst, src, rows.count.clone(), at.cols.clone())
                            .strides(at.row_stride, self.unit.frame.width),
                    );
                }
            }
            b.origin(None);
            b.set_flag(Pipe::Mte2, Pipe::V, id.clone());
            b.wait_flag(Pipe::Mte2, Pipe::V, id.clone());
        }
        let mut e = Emitter::new(b, self.unit);
        e.barrier();
        e.b.origin(Some(&format!("{} on the tile", self.epi.statement)));
        for v in self.per_span() {
            e.node(
                self.graph(),
                v,
                &|w| self.place(bufs, w, (sums, out), (col0, &at.slot)),
                &rows,
            );
        }
        // the next copy out of L0C may write the sums these read
        e.barrier();
        e.b.origin(None);
        if !bufs.seconds.is_empty() {
            b.set_flag(Pipe::V, Pipe::Mte2, id);
        }
    }
}
