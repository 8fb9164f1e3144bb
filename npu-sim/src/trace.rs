//! The timeline in Chrome's trace-event JSON format (opens in Perfetto and chrome://tracing):
//! one process per core, one track per pipe, one complete event per instruction.
//!
//! - Time: one cycle is shown as one nanosecond (`ts` and `dur` are microseconds in the
//!   format, so cycles / 1000), which Perfetto and chrome://tracing display as such.
//! - Overlap: a pipe may start its next transfer while the current one moves, and a track
//!   must not hold partly overlapping events (viewers then nest or drop them). Such an
//!   instruction goes to the pipe's next lane, a track of its own (`MTE2 #2`), the first
//!   lane whose last event has ended.

use crate::diag::line_of;
use crate::expand::Inst;
use crate::program::Pipe;
use crate::timing::Timeline;
use serde_json::{json, Value};

/// Cycles per microsecond of the trace format: one cycle shows as one nanosecond.
const CYCLES_PER_US: f64 = 1000.0;

/// The trace as JSON text. `source` gives line numbers (for a built program, its printed
/// text); an instruction's origin, if it has one, is shown with it.
pub fn chrome_trace(insts: &[Vec<Inst>], timeline: &Timeline, source: &str) -> String {
    let mut events = vec![];
    for (c, core) in insts.iter().enumerate() {
        events.push(json!({"ph": "M", "name": "process_name", "pid": c, "args": {"name": format!("core {c}")}}));
        let times = &timeline.cores[c];
        // Lanes are given in order of start time (instructions of one pipe need not start
        // in program order); per pipe, the end of the last event of each lane.
        let mut order: Vec<usize> = (0..core.len()).collect();
        order.sort_by(|&a, &b| {
            (core[a].pipe.index().cmp(&core[b].pipe.index()))
                .then(times.start[a].total_cmp(&times.start[b]))
        });
        let mut lanes: Vec<Vec<f64>> = vec![Vec::new(); Pipe::COUNT];
        for i in order {
            let inst = &core[i];
            let (start, end) = (times.start[i], times.end[i]);
            let pipe = inst.pipe.index();
            let lane = match lanes[pipe].iter().position(|&free| free <= start) {
                Some(l) => l,
                None => {
                    lanes[pipe].push(start);
                    lanes[pipe].len() - 1
                }
            };
            lanes[pipe][lane] = end;
            let line = line_of(source, inst.instr.span.start);
            let mut args = json!({"line": line, "start_cycle": start, "end_cycle": end});
            if let Some(note) = inst.instr.origin.note() {
                args["origin"] = json!(note);
            }
            events.push(json!({
                "ph": "X",
                "name": inst.instr.op.mnemonic(),
                "pid": c,
                "tid": track(pipe, lane),
                "ts": start / CYCLES_PER_US,
                "dur": (end - start) / CYCLES_PER_US,
                "args": args,
            }));
        }
        for pipe in Pipe::ALL {
            let p = pipe.index();
            for lane in 0..lanes[p].len().max(1) {
                let name = match lane {
                    0 => pipe.name().to_string(),
                    l => format!("{} #{}", pipe.name(), l + 1),
                };
                let tid = track(p, lane);
                events.push(json!({"ph": "M", "name": "thread_name", "pid": c, "tid": tid, "args": {"name": name}}));
                events.push(json!({"ph": "M", "name": "thread_sort_index", "pid": c, "tid": tid, "args": {"sort_index": tid}}));
            }
        }
    }
    let trace: Value = json!({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"unit": "1 ns = 1 cycle"}});
    trace.to_string()
}

/// The track of `lane` of pipe `pipe`: lanes of one pipe are consecutive.
fn track(pipe: usize, lane: usize) -> usize {
    pipe * 100 + lane
}

#[cfg(test)]
mod tests {
    use crate::{assemble, run_timed, Machine, Semantics};
    use serde_json::Value;

    /// The complete events of a trace, as ((core, track), start, end) in cycles.
    fn events(trace: &str) -> Vec<((u64, u64), f64, f64)> {
        let v: Value = serde_json::from_str(trace).unwrap();
        (v["traceEvents"].as_array().unwrap().iter())
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                let (start, end) = (
                    e["args"]["start_cycle"].as_f64().unwrap(),
                    e["args"]["end_cycle"].as_f64().unwrap(),
                );
                assert!((e["ts"].as_f64().unwrap() * 1000.0 - start).abs() < 1e-6);
                let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
                (track, start, end)
            })
            .collect()
    }

    #[test]
    fn no_two_events_of_a_track_overlap() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/npu");
        // The gemm is not yet written for the strict semantics (docs/npu.md, "The examples").
        for (name, semantics) in [
            ("gemm", Semantics::Relaxed),
            ("softmax", Semantics::Strict),
            ("vadd", Semantics::Strict),
            ("double_buffer", Semantics::Strict),
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{name}.npu")).unwrap();
            let program = assemble(&text).unwrap();
            let machine = Machine::preset("ascend-like").unwrap();
            let run = run_timed(&program, &machine, &Default::default(), 0, semantics).unwrap();
            let mut all = events(&super::chrome_trace(&run.insts, &run.timeline, &text));
            assert!(!all.is_empty());
            all.sort_by(|a, b| (a.0, a.1).partial_cmp(&(b.0, b.1)).unwrap());
            for w in all.windows(2) {
                if w[0].0 == w[1].0 {
                    assert!(w[0].2 <= w[1].1, "{name}: {:?} overlaps {:?}", w[0], w[1]);
                }
            }
        }
    }
}
