//! The timeline in Chrome's trace-event JSON format (opens in Perfetto and chrome://tracing):
//! one process per core, one thread per pipe, one complete event per instruction; one cycle is
//! shown as one microsecond.

use crate::diag::line_of;
use crate::expand::Inst;
use crate::program::Pipe;
use crate::timing::Timeline;
use serde_json::{json, Value};

/// The trace as JSON text. `source` gives line numbers (empty for built programs).
pub fn chrome_trace(insts: &[Vec<Inst>], timeline: &Timeline, source: &str) -> String {
    let mut events = vec![];
    for (c, core) in insts.iter().enumerate() {
        events.push(json!({"ph": "M", "name": "process_name", "pid": c, "args": {"name": format!("core {c}")}}));
        for pipe in Pipe::ALL {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": c, "tid": pipe.index(), "args": {"name": pipe.name()}}));
            events.push(json!({"ph": "M", "name": "thread_sort_index", "pid": c, "tid": pipe.index(), "args": {"sort_index": pipe.index()}}));
        }
        let times = &timeline.cores[c];
        for (i, inst) in core.iter().enumerate() {
            let line = line_of(source, inst.instr.span.start);
            events.push(json!({
                "ph": "X",
                "name": inst.instr.op.mnemonic(),
                "pid": c,
                "tid": inst.pipe.index(),
                "ts": times.start[i],
                "dur": times.end[i] - times.start[i],
                "args": {"line": line},
            }));
        }
    }
    let trace: Value = json!({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"unit": "1 us = 1 cycle"}});
    trace.to_string()
}
