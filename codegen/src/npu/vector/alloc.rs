//! Places for the temporaries of a group of rows: every value that the caller does not place
//! (the vector path places what it loads and what it stores into an array's home; the
//! attention program lets its scores be temporaries) and that is not invariant gets a
//! buffer of its class (type and layout) while it lives, from its definition to its last use. An element-wise
//! operation may write the buffer of an operand that dies with it (same class, so the same
//! element positions): `exp(x - m)` computes in place.

use super::graph::{Graph, Layout, Val};
use npu_sim::program::DType;
use std::collections::BTreeMap;

/// A kind of temporary buffer: values of one type and layout are interchangeable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Class {
    /// Element type.
    pub dtype: DType,
    /// Layout.
    pub layout: LayoutKey,
}

/// A [`Layout`] as an ordered key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LayoutKey {
    /// [`Layout::Tile`] with its pitch.
    Tile(i64),
    /// [`Layout::Row`].
    Row,
    /// [`Layout::Spread`].
    Spread,
    /// [`Layout::Col`].
    Col,
    /// [`Layout::Splat`].
    Splat,
    /// [`Layout::One`].
    One,
    /// [`Layout::Part`] with its pitch.
    Part(i64),
}

impl LayoutKey {
    /// The key of a layout.
    pub fn of(l: Layout) -> LayoutKey {
        match l {
            Layout::Tile { pitch } => LayoutKey::Tile(pitch),
            Layout::Row => LayoutKey::Row,
            Layout::Spread => LayoutKey::Spread,
            Layout::Col => LayoutKey::Col,
            Layout::Splat => LayoutKey::Splat,
            Layout::One => LayoutKey::One,
            Layout::Part { pitch } => LayoutKey::Part(pitch),
        }
    }
    /// Elements of a value of this layout for groups of `rows` rows of `width` elements,
    /// `lanes` per repeat.
    pub fn elements(self, rows: i64, width: i64, lanes: i64) -> i64 {
        match self {
            LayoutKey::Tile(p) | LayoutKey::Part(p) => rows * p,
            LayoutKey::Row => rows,
            LayoutKey::Spread => rows * lanes,
            LayoutKey::Col => width,
            LayoutKey::Splat => lanes,
            LayoutKey::One => 1,
        }
    }
}

/// Where the temporaries go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Temps {
    /// For each value, its temporary (class and index within the class), if it has one.
    pub slot: Vec<Option<(Class, usize)>>,
    /// How many buffers each class needs (the most of its values alive at once).
    pub count: BTreeMap<Class, usize>,
}

/// Places the temporaries of `graph`'s live per-group values; `fixed(v)` says which values
/// the caller places (the others, a loaded value or a home's included, get a temporary, so
/// that operations can compute in place over them). Invariant values (per core) are fixed
/// too: they live for the whole program.
pub fn temps(graph: &Graph, live: &[bool], fixed: &dyn Fn(Val) -> bool) -> Temps {
    let last = graph.last_uses(live);
    let mut t = Temps {
        slot: vec![None; graph.nodes.len()],
        count: BTreeMap::new(),
    };
    let mut free: BTreeMap<Class, Vec<usize>> = BTreeMap::new();
    let release = |t: &Temps, free: &mut BTreeMap<Class, Vec<usize>>, v: Val, at: Val| {
        if let (Some((class, k)), Some(l)) = (t.slot[v], last[v]) {
            if l == at {
                free.entry(class).or_default().push(k);
            }
        }
    };
    for (i, n) in graph.nodes.iter().enumerate().filter(|(i, _)| live[*i]) {
        let mut operands = n.op.operands();
        operands.dedup();
        operands.sort_unstable();
        operands.dedup();
        let needs = !fixed(i) && !graph.invariant(i);
        if n.op.elementwise() {
            operands.iter().for_each(|&a| release(&t, &mut free, a, i));
        }
        if needs {
            let class = Class {
                dtype: n.dtype,
                layout: LayoutKey::of(n.layout),
            };
            let k = free.entry(class).or_default().pop().unwrap_or_else(|| {
                let c = t.count.entry(class).or_insert(0);
                *c += 1;
                *c - 1
            });
            t.slot[i] = Some((class, k));
            if last[i].is_none() {
                free.entry(class).or_default().push(k);
            }
        }
        if !n.op.elementwise() {
            operands.iter().for_each(|&a| release(&t, &mut free, a, i));
        }
    }
    t
}
