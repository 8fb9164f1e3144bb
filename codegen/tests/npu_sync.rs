//! Flags placed by the dependence analysis (`codegen::npu::sync`), on small programs
//! written without flags: each must race without them, and with them run race-free in the
//! strict semantics, agree with itself on every machine of the timing oracle, and compute
//! what the same program with hand-placed flags computes. The placed flags are golden
//! (regenerate with `UPDATE_EXPECT=1`).

use codegen::npu::sync::place;
use expect_test::{expect, Expect};
use npu_sim::oracle::check_timing;
use npu_sim::{Code, Machine, Program, Semantics};

fn machine() -> Machine {
    Machine::load("ascend-like").unwrap()
}

/// The program without any `set_flag` or `wait_flag` line.
fn without_flags(text: &str) -> String {
    (text.lines())
        .filter(|l| {
            !l.trim_start().starts_with("set_flag") && !l.trim_start().starts_with("wait_flag")
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A program's statements without its declarations and notes: its instructions and loops
/// with the flags placed among them (what the golden tests compare).
fn synchronisation(p: &Program) -> String {
    let declaration = |l: &str| ["tensor ", "buffer ", "#"].iter().any(|d| l.starts_with(d));
    (npu_sim::print(p).lines())
        .filter(|l| !l.is_empty() && !declaration(l.trim_start()))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Places flags in `text` (which has none), checks the result as the module doc says and
/// against `golden`; returns the synchronised program.
fn check(text: &str, golden: Expect) -> Program {
    let m = machine();
    let bare = npu_sim::assemble(text).unwrap();
    let err = npu_sim::run(&bare, &m, &Default::default(), 0).unwrap_err();
    assert_eq!(err.code, Code::Race, "{}", err.message);
    let synced = place(bare, &m).unwrap();
    golden.assert_eq(&synchronisation(&synced));
    if let Err(e) = npu_sim::run(&synced, &m, &Default::default(), 7) {
        panic!("{}\n{}", e.message, npu_sim::print(&synced));
    }
    let oracle = check_timing(&synced, &m, &Default::default(), 7, Semantics::Strict, 6);
    assert!(oracle.agreed(), "{oracle:?}");
    synced
}

/// Runs `p` and a reference program on the same seeded inputs; their outputs must be equal.
fn same_outputs(p: &Program, reference: &str) {
    let m = machine();
    let reference = npu_sim::assemble(reference).unwrap();
    let a = npu_sim::run(p, &m, &Default::default(), 7).unwrap().outputs;
    let b = npu_sim::run(&reference, &m, &Default::default(), 7)
        .unwrap()
        .outputs;
    assert_eq!(a, b);
}

#[test]
fn a_double_buffered_ring_gets_its_full_and_free_flags() {
    let hand = include_str!("../../examples/npu/double_buffer.npu");
    let p = check(
        &without_flags(hand),
        expect![[r#"
            set_flag MTE3, V, 0
            set_flag MTE3, V, 1
            set_flag V, MTE2, 0
            set_flag V, MTE2, 1
            loop t in 0..8 {
              wait_flag V, MTE2, (t%2)
              dma xin[t%2, 0], x[core, 1024*t], len=1024
              set_flag MTE2, V, (t%2)
              wait_flag MTE2, V, (t%2)
              wait_flag MTE3, V, (t%2)
              vmuls yout[t%2, 0], xin[t%2, 0], 2.0, repeat=8
              set_flag V, MTE2, (t%2)
              set_flag V, MTE3, (t%2)
              wait_flag V, MTE3, (t%2)
              dma y[core, 1024*t], yout[t%2, 0], len=1024
              set_flag MTE3, V, (t%2)
            }
            wait_flag MTE3, V, 0
            wait_flag MTE3, V, 1
            wait_flag V, MTE2, 0
            wait_flag V, MTE2, 1
        "#]],
    );
    same_outputs(&p, hand);
}

#[test]
fn a_producer_that_never_reuses_a_buffer_gets_a_credit() {
    // MTE2 fills a new slot every iteration: nothing it depends on holds it back, so the
    // flag to V would be set again before V took it; the planner adds the flag back
    let text = "\
tensor x : f16[8, 4096] in
tensor y : f16[8, 4096] out
buffer xin : ub f16[4, 1024]
buffer yout : ub f16[4, 1024]
loop t in 0..4 {
  dma xin[t, 0], x[core, t*1024], len=1024
  vmuls yout[t, 0], xin[t, 0], 2.0, repeat=8
}
dma y[core, 0], yout[0, 0], len=4096
";
    let p = check(
        text,
        expect![[r#"
            set_flag V, MTE2, 0
            set_flag V, MTE2, 1
            loop t in 0..4 {
              dma xin[t, 0], x[core, 1024*t], len=1024
              wait_flag V, MTE2, (t%2)
              set_flag MTE2, V, (t%2)
              wait_flag MTE2, V, (t%2)
              set_flag V, MTE2, (t%2)
              vmuls yout[t, 0], xin[t, 0], 2.0, repeat=8
            }
            set_flag V, MTE3, 0
            wait_flag V, MTE3, 0
            wait_flag V, MTE2, 0
            wait_flag V, MTE2, 1
            dma y[core, 0], yout[0, 0], len=4096
        "#]],
    );
    let printed = npu_sim::print(&p);
    assert!(printed.contains("frees ids for"), "{printed}");
    // without the credit, the flag from MTE2 to V is set twice before V waits
    let cut: String = (printed.lines())
        .scan(false, |credit, l| {
            let keep = !*credit;
            *credit = l.contains("frees ids for");
            Some((keep && !l.contains("frees ids for")).then(|| format!("{l}\n")))
        })
        .flatten()
        .collect();
    let err = npu_sim::run(
        &npu_sim::assemble(&cut).unwrap(),
        &machine(),
        &Default::default(),
        0,
    )
    .unwrap_err();
    assert_eq!(err.code, Code::FlagSetTwice, "{}\n{cut}", err.message);
}

#[test]
fn a_prefetch_for_the_next_iteration_is_waited_for_one_iteration_later() {
    // V reads `xin` while MTE2 loads the next row into it (after V is done with it): the
    // load is a dependence carried one iteration, the read before it one within it
    let text = "\
tensor x : f16[8, 8192] in
tensor y : f16[8, 8192] out
buffer xin : ub f16[1024]
buffer yout : ub f16[2, 1024]
dma xin[0], x[core, 0], len=1024
loop t in 0..8 {
  vmuls yout[t%2, 0], xin[0], 2.0, repeat=8
  loop n in 0..(t < 7) {
    dma xin[0], x[core, (t + 1)*1024], len=1024
  }
  dma y[core, t*1024], yout[t%2, 0], len=1024
}
";
    check(
        text,
        expect![[r#"
            dma xin[0], x[core, 0], len=1024
            set_flag MTE2, V, 0
            set_flag MTE3, V, 0
            set_flag MTE3, V, 1
            set_flag MTE2, V, 1
            wait_flag MTE2, V, 1
            loop t in 0..8 {
              wait_flag MTE2, V, 0
              wait_flag MTE3, V, (t%2)
              vmuls yout[t%2, 0], xin[0], 2.0, repeat=8
              set_flag V, MTE2, (t%2)
              set_flag V, MTE3, (t%2)
              wait_flag V, MTE2, (t%2)
              loop n in 0..(t < 7) {
                dma xin[0], x[core, 1024*(t + 1)], len=1024
              }
              set_flag MTE2, V, 0
              wait_flag V, MTE3, (t%2)
              dma y[core, 1024*t], yout[t%2, 0], len=1024
              set_flag MTE3, V, (t%2)
            }
            wait_flag MTE2, V, 0
            wait_flag MTE3, V, 0
            wait_flag MTE3, V, 1
        "#]],
    );
}

/// Random programs of loads, vector operations and stores over four UB buffers (each loaded
/// whole first), in loops whose offsets move with the iteration, some under guards: whatever the pass places, the program runs
/// race-free (no flag set twice, no deadlock) and computes what the same program does with
/// every instruction drained before the next (`barrier ALL` after each: its sequential
/// meaning).
mod random_programs {
    use super::*;
    use proptest::prelude::*;

    /// One instruction: (kind, buffers, offsets in units of 128 elements, size, GM offset).
    #[derive(Clone, Debug)]
    struct Ins {
        kind: u8,
        bufs: [u8; 3],
        offs: [u8; 3],
        size: u8,
        gm: u16,
        moves: bool,
    }

    fn ins() -> impl Strategy<Value = Ins> {
        (
            0u8..4,
            [0u8..4, 0u8..4, 0u8..4],
            [0u8..4, 0u8..4, 0u8..4],
            1u8..3,
            0u16..60,
            any::<bool>(),
        )
            .prop_map(|(kind, bufs, offs, size, gm, moves)| Ins {
                kind,
                bufs,
                offs,
                size,
                gm,
                moves,
            })
    }

    /// Top-level instructions, or a loop of 1 to 4 iterations around some, its body
    /// possibly under a guard (a loop of one iteration in the loop's first few).
    type Item = (Option<u8>, Vec<Ins>, Option<u8>);

    fn items() -> impl Strategy<Value = Vec<Item>> {
        let item = (
            prop::option::of(1u8..5),
            prop::collection::vec(ins(), 1..5),
            prop::option::of(1u8..4),
        );
        prop::collection::vec(item, 1..5)
    }

    /// The program's text; `drained` puts `barrier ALL` after every instruction.
    fn text(items: &[Item], drained: bool) -> String {
        let mut s = String::from(
            "tensor x : f16[8, 8192] in\ntensor y : f16[8, 8192] out\n\
             buffer b0 : ub f16[1024]\nbuffer b1 : ub f16[1024]\n\
             buffer b2 : ub f16[1024]\nbuffer b3 : ub f16[1024]\n",
        );
        // every buffer written whole first (the simulator refuses reads of unwritten bytes)
        for b in 0..4 {
            s += &format!("dma b{b}[0], x[core, {}], len=1024\n", 1024 * b);
            if drained {
                s += "barrier ALL\n";
            }
        }
        for (n, (trips, body, guard)) in items.iter().enumerate() {
            let var = format!("t{n}");
            let guard = guard.filter(|_| trips.is_some());
            let indent = match (trips, guard) {
                (None, _) => "",
                (Some(_), None) => "  ",
                (Some(_), Some(_)) => "    ",
            };
            if let Some(t) = trips {
                s += &format!("loop {var} in 0..{t} {{\n");
            }
            if let Some(g) = guard {
                s += &format!("  loop g{n} in 0..({var} < {g}) {{\n");
            }
            for i in body {
                // offsets move by 128 elements an iteration (at most 3 of them)
                let at = |k: usize| match (trips.is_some() && i.moves, k) {
                    (true, 0) => format!("{} + 128*({var}%2)", 128 * i.offs[k] as u32),
                    _ => format!("{}", 128 * i.offs[k] as u32),
                };
                let len = 128 * i.size as u32;
                let gm = 128 * i.gm as u32;
                let line = match i.kind {
                    0 => format!("dma b{}[{}], x[core, {gm}], len={len}", i.bufs[0], at(0)),
                    1 => format!(
                        "vmuls b{}[{}], b{}[{}], 2.0, repeat={}",
                        i.bufs[0],
                        at(0),
                        i.bufs[1],
                        at(1),
                        i.size
                    ),
                    2 => format!(
                        "vadd b{}[{}], b{}[{}], b{}[{}], repeat={}",
                        i.bufs[0],
                        at(0),
                        i.bufs[1],
                        at(1),
                        i.bufs[2],
                        at(2),
                        i.size
                    ),
                    _ => format!("dma y[core, {gm}], b{}[{}], len={len}", i.bufs[0], at(0)),
                };
                s += &format!("{indent}{line}\n");
                if drained {
                    s += &format!("{indent}barrier ALL\n");
                }
            }
            if guard.is_some() {
                s += "  }\n";
            }
            if trips.is_some() {
                s += "}\n";
            }
        }
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn placed_flags_give_the_sequential_meaning(items in items()) {
            let m = machine();
            let bare = npu_sim::assemble(&text(&items, false)).unwrap();
            let reference = npu_sim::assemble(&text(&items, true)).unwrap();
            let want = npu_sim::run(&reference, &m, &Default::default(), 3)
                .unwrap_or_else(|e| panic!("{}", e.message))
                .outputs;
            let synced = place(bare, &m).unwrap_or_else(|e| panic!("{e}"));
            let got = npu_sim::run(&synced, &m, &Default::default(), 3)
                .unwrap_or_else(|e| panic!("{}\n{}", e.message, npu_sim::print(&synced)))
                .outputs;
            prop_assert_eq!(want, got);
        }
    }
}
