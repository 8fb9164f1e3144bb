//! The mutation corpus: every synchronisation mistake of `npu_sim::mutate` applied to the
//! examples and to generated ring-buffer pipelines (the two-core atomic sum runs on `mini`). The originals must be accepted with the
//! same outputs on every machine of the timing oracle; a mutant is killed when the simulator
//! rejects it, and a mutant it accepts must still compute the same bits on every varied
//! machine (else the race detector missed a race). Prints the kill rate per kind
//! (`cargo test --release -p npu-sim --test mutation -- --nocapture`).

use npu_sim::mutate::{mutants, Kind};
use npu_sim::oracle::{check_timing, Outcome};
use npu_sim::{assemble, run, Machine, Program, Semantics};
use std::collections::BTreeMap;

/// Varied machines per accepted mutant.
const MACHINES: usize = 6;

fn example(name: &str) -> String {
    let path = format!("{}/../examples/npu/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A ring of `slots` UB slots per stage on every core: load (two bursts), `ops` dependent
/// vector operations separated by barriers, store; one flag id per slot and direction.
fn ring(slots: i64, tiles: i64, ops: usize) -> String {
    let s = format!("(t%{slots})");
    let slot = format!("t%{slots}");
    let mut p = format!(
        "tensor x : f16[2, {n}] in\ntensor y : f16[2, {n}] out\n\
         buffer xin : ub f16[{slots}, 128]\nbuffer tmp : ub f16[{slots}, 128]\nbuffer yout : ub f16[{slots}, 128]\n",
        n = tiles * 128
    );
    for k in 0..slots {
        p += &format!("set_flag V, MTE2, {k}\nset_flag MTE3, V, {k}\n");
    }
    p += &format!("loop t in 0..{tiles} {{\n  wait_flag V, MTE2, {s}\n");
    p += &format!("  dma xin[{slot}, 0], x[core, t*128], len=64, count=2\n");
    p += &format!("  set_flag MTE2, V, {s}\n  wait_flag MTE2, V, {s}\n  wait_flag MTE3, V, {s}\n");
    let mut src = "xin";
    for i in 0..ops {
        let dst = if i + 1 == ops { "yout" } else { "tmp" };
        if i > 0 {
            p += "  barrier V\n";
        }
        let (op, v) = if i % 2 == 0 {
            ("vmuls", "2.0")
        } else {
            ("vadds", "1.0")
        };
        p += &format!("  {op} {dst}[{slot}, 0], {src}[{slot}, 0], {v}\n");
        src = dst;
    }
    p += &format!("  set_flag V, MTE2, {s}\n  set_flag V, MTE3, {s}\n  wait_flag V, MTE3, {s}\n");
    p += &format!("  dma y[core, t*128], yout[{slot}, 0], len=128\n  set_flag MTE3, V, {s}\n}}\n");
    for k in 0..slots {
        p += &format!("wait_flag V, MTE2, {k}\nwait_flag MTE3, V, {k}\n");
    }
    p
}

fn corpus() -> Vec<(String, String, Machine)> {
    let ascend = Machine::preset("ascend-like").unwrap();
    let mini = Machine::preset("mini").unwrap();
    let mut c: Vec<(String, String, Machine)> = ["vadd.npu", "softmax.npu", "double_buffer.npu"]
        .into_iter()
        .map(|n| (n.to_string(), example(n), ascend.clone()))
        .collect();
    for (slots, tiles, ops) in [(2, 6, 1), (2, 5, 2), (3, 7, 3)] {
        let name = format!("ring {slots} slots, {tiles} tiles, {ops} ops");
        c.push((name, ring(slots, tiles, ops), mini.clone()));
    }
    c.push(("split_sum.npu".into(), example("split_sum.npu"), mini));
    c
}

#[derive(Default)]
struct Tally {
    mutants: usize,
    killed: usize,
    /// Accepted, computing other values than the original on every machine alike (a wrong
    /// program, but not a race: the stride or partition mistakes the values tests catch).
    different: usize,
}

#[test]
fn every_mutant_that_depends_on_timing_is_killed_and_no_original_is_rejected() {
    let mut tally: BTreeMap<Kind, Tally> = BTreeMap::new();
    let mut missed = vec![];
    for (name, src, machine) in corpus() {
        let p: Program = assemble(&src).unwrap_or_else(|d| panic!("{}", d.render(&name, &src)));
        let original = match run(&p, &machine, &Default::default(), 0) {
            Ok(r) => r.outputs,
            Err(d) => panic!("a correct program is rejected:\n{}", d.render(&name, &src)),
        };
        let outcome = check_timing(
            &p,
            &machine,
            &Default::default(),
            0,
            Semantics::Strict,
            MACHINES,
        );
        assert!(
            matches!(outcome, Outcome::Agreed { accepted: None, .. }),
            "{name}: {outcome}"
        );
        for (kind, m) in mutants(&p) {
            let t = tally.entry(kind).or_default();
            t.mutants += 1;
            match run(&m, &machine, &Default::default(), 0) {
                Err(_) => {
                    t.killed += 1;
                    continue;
                }
                Ok(r) => t.different += (r.outputs != original) as usize,
            }
            let outcome = check_timing(
                &m,
                &machine,
                &Default::default(),
                0,
                Semantics::Strict,
                MACHINES,
            );
            if !outcome.agreed() {
                missed.push(format!(
                    "{name}, {kind:?}: {outcome}\n{}",
                    npu_sim::print(&m)
                ));
            }
        }
    }
    println!(
        "{:<16} {:>8} {:>7} {:>10} {:>22}",
        "mutation", "mutants", "killed", "kill rate", "survivors, other values"
    );
    for (kind, t) in &tally {
        let rate = 100.0 * t.killed as f64 / t.mutants.max(1) as f64;
        println!(
            "{:<16} {:>8} {:>7} {:>9.0}% {:>22}",
            format!("{kind:?}"),
            t.mutants,
            t.killed,
            rate,
            t.different
        );
    }
    for kind in Kind::ALL {
        assert!(
            tally.get(&kind).is_some_and(|t| t.mutants > 0),
            "no {kind:?} mutant in the corpus"
        );
    }
    assert!(
        missed.is_empty(),
        "accepted mutants whose outputs depend on the timing:\n{}",
        missed.join("\n")
    );
}
