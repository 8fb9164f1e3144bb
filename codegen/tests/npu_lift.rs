//! The check of a program's GM accesses (`codegen::npu::lift`) against programs made wrong:
//! the simulator's mutants that move a store, stores deleted or shifted by hand, loads
//! deleted. Every
//! one must be refused, whatever the kernel's path (product, epilogue, convolution, vector
//! unit, attention).

mod common;

use codegen::npu::{compile, lift, NpuError};
use npu_sim::mutate::{mutants, Kind};
use npu_sim::program::{Expr, Op, Program, Stmt, Target};
use npu_sim::Machine;
use std::collections::BTreeMap;

/// Examples with their sizes (small, so that the mutants are quick to check).
const CASES: &[(&str, &[(&str, i64)])] = &[
    ("matmul-f16.pk", &[("M", 96), ("N", 80), ("K", 64)]),
    ("batched-matmul.pk", &[]),
    ("matmul-bias-relu.pk", &[("M", 64), ("N", 128), ("K", 64)]),
    ("conv2d.pk", &[]),
    ("softmax.pk", &[("B", 64), ("L", 256)]),
    ("attention-f16.pk", &[]),
];

/// The kernel of an example, its sizes and its compiled program on `ascend-like`.
fn compiled(
    name: &str,
    sizes: &[(&str, i64)],
) -> (frontend::ir::Kernel, BTreeMap<String, i64>, Program) {
    let k = common::kernel(&common::example(name));
    let (_, params) = common::sizes_of(&k, sizes);
    let m = Machine::load("ascend-like").unwrap();
    let c = compile(&k, &params, &m, true).unwrap_or_else(|e| panic!("{name}: {e}"));
    (k, params, c.program)
}

/// The check's verdict on `p`, the kernel's program made wrong: the message of its refusal.
fn refused(
    k: &frontend::ir::Kernel,
    params: &BTreeMap<String, i64>,
    p: &Program,
) -> Option<String> {
    match lift::check(k, params, p, &Machine::load("ascend-like").unwrap()) {
        Ok(()) => None,
        Err(NpuError::Internal(why)) => Some(why),
        Err(other) => panic!("not an internal error: {other}"),
    }
}

/// The positions of the `dma`s under `body` whose GM side is `side` (`true`: the
/// destination, a store), in program order.
fn gm_under(body: &[Stmt], dst: bool, at: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    for (k, s) in body.iter().enumerate() {
        at.push(k);
        match s {
            Stmt::Loop(l) => gm_under(&l.body, dst, at, out),
            Stmt::Instr(i) => {
                if let Op::Dma(d) = &i.op {
                    let gm = if dst { &d.dst } else { &d.src };
                    if matches!(gm.target, Target::Tensor(_)) {
                        out.push(at.clone());
                    }
                }
            }
        }
        at.pop();
    }
}

/// The statement list holding the instruction at `path`, and its index there.
fn parent<'a>(body: &'a mut Vec<Stmt>, path: &[usize]) -> (&'a mut Vec<Stmt>, usize) {
    match path {
        [k] => (body, *k),
        [k, rest @ ..] => match &mut body[*k] {
            Stmt::Loop(l) => parent(&mut l.body, rest),
            Stmt::Instr(_) => unreachable!("an instruction has no body"),
        },
        [] => unreachable!("an empty path"),
    }
}

/// The positions of the program's stores into GM.
fn stores(p: &Program) -> Vec<Vec<usize>> {
    let mut out = vec![];
    gm_under(&p.body, true, &mut vec![], &mut out);
    out
}

/// The positions of the program's loads from GM.
fn loads(p: &Program) -> Vec<Vec<usize>> {
    let mut out = vec![];
    gm_under(&p.body, false, &mut vec![], &mut out);
    out
}

#[test]
fn a_store_deleted_or_moved_by_one_element_is_refused() {
    for (name, sizes) in CASES {
        let (k, params, p) = compiled(name, sizes);
        let all = stores(&p);
        assert!(!all.is_empty(), "{name} stores nothing");
        let m = Machine::load("ascend-like").unwrap();
        for path in all {
            let mut gone = p.clone();
            let (list, i) = parent(&mut gone.body, &path);
            list.remove(i);
            if lift::Traffic::of(&gone, &m).unwrap().stored
                == lift::Traffic::of(&p, &m).unwrap().stored
            {
                // never executed at these sizes
                continue;
            }
            let why = refused(&k, &params, &gone)
                .unwrap_or_else(|| panic!("{name}: the store at {path:?} deleted"));
            assert!(why.contains("where the kernel writes"), "{why}");
            let mut moved = p.clone();
            let (list, i) = parent(&mut moved.body, &path);
            let Stmt::Instr(instr) = &mut list[i] else {
                unreachable!()
            };
            let Op::Dma(d) = &mut instr.op else {
                unreachable!()
            };
            let last = d.dst.index.len() - 1;
            d.dst.index[last] = d.dst.index[last].clone() + Expr::Const(1);
            assert!(
                refused(&k, &params, &moved).is_some(),
                "{name}: the store at {path:?} moved by one element"
            );
        }
    }
}

#[test]
fn a_load_deleted_that_leaves_an_input_element_unread_is_refused() {
    let m = Machine::load("ascend-like").unwrap();
    let mut refusals = 0;
    for (name, sizes) in CASES {
        let (k, params, p) = compiled(name, sizes);
        for path in loads(&p) {
            let mut gone = p.clone();
            let (list, i) = parent(&mut gone.body, &path);
            list.remove(i);
            // every example reads the whole of each input
            let traffic = lift::Traffic::of(&gone, &m).unwrap();
            let unread = (p.tensors.iter().enumerate())
                .filter(|(_, t)| t.dir == npu_sim::program::Direction::In)
                .any(|(t, decl)| {
                    let id = npu_sim::program::TensorId(t as u32);
                    traffic
                        .first_unloaded(id, npu_sim::program::elements(&decl.shape))
                        .is_some()
                });
            match refused(&k, &params, &gone) {
                Some(why) => {
                    assert!(unread && why.contains("leave unread"), "{name}: {why}");
                    refusals += 1;
                }
                None => assert!(!unread, "{name}: the load at {path:?} deleted"),
            }
        }
    }
    assert!(refusals >= CASES.len(), "{refusals} refusals");
}

#[test]
fn the_simulators_mutants_that_move_a_store_are_refused() {
    let mut caught = BTreeMap::new();
    for (name, sizes) in CASES {
        let (k, params, p) = compiled(name, sizes);
        for (kind, m) in mutants(&p) {
            if !matches!(kind, Kind::OverlapCores | Kind::StrideOffByOne) {
                continue;
            }
            // only the mutants that change where a store writes
            if same_stores(&p, &m) {
                continue;
            }
            let entry = caught.entry((*name, kind)).or_insert((0, 0));
            entry.1 += 1;
            if refused(&k, &params, &m).is_some() {
                entry.0 += 1;
            }
        }
    }
    assert!(!caught.is_empty());
    for ((name, kind), (hit, all)) in &caught {
        assert_eq!(hit, all, "{name}: {kind:?} mutants caught");
    }
}

/// Whether the GM stores of `a` and `b` write the same elements, instance by instance (a
/// mutant can be the same program: `min(32 - 16*(core % 2), 16)` is 16 on any core).
fn same_stores(a: &Program, b: &Program) -> bool {
    let ctx = poly::isl::Ctx::default();
    let cores = Machine::load("ascend-like").unwrap().cores as i64;
    let of = |p: &Program| -> Vec<poly::isl::Map> {
        let all = lift::accesses(&ctx, p, cores).unwrap();
        (all.into_iter())
            .filter(|a| a.kind != lift::Kind::Load)
            .map(|a| a.map)
            .collect()
    };
    let (a, b) = (of(a), of(b));
    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.is_equal(y).unwrap())
}

/// The kernel's arrays are given or read back, and any other tensor must be a workspace: an
/// output declared `scratch`, or a tensor that is none of the kernel's declared `out`, is
/// refused.
#[test]
fn a_tensor_is_a_workspace_exactly_when_it_is_none_of_the_kernels_arrays() {
    use npu_sim::program::Direction;
    let (k, params, p) = compiled("softmax.pk", &[("B", 64), ("L", 256)]);
    assert_eq!(refused(&k, &params, &p), None);
    let out = p
        .tensors
        .iter()
        .position(|t| t.dir == Direction::Out)
        .unwrap();
    let mut scratch = p.clone();
    scratch.tensors[out].dir = Direction::Scratch;
    let why = refused(&k, &params, &scratch).expect("an output declared scratch");
    assert!(
        why.contains("is declared `scratch` but is one of the kernel's arrays"),
        "{why}"
    );
    let mut stray = p.clone();
    stray.tensors[out].name = "elsewhere".into();
    let why = refused(&k, &params, &stray).expect("an output renamed");
    assert!(
        why.contains("is declared `out` but is none of the kernel's arrays"),
        "{why}"
    );
}
