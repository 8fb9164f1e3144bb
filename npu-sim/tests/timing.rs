//! Cycle counts worked out by hand from the `mini` machine (one core): GM paths 32 B/cycle
//! after 10 cycles of latency, L1 -> L0 64 B/cycle after 2, issue 1 cycle per instruction plus
//! 1 per loop iteration, flags 1 cycle, cube 4 + ceil(m/16)*ceil(k/16)*ceil(n/16), vector
//! 4 + repeats.

use npu_sim::{assemble, run_timed, Machine, Semantics};

fn cycles(src: &str) -> u64 {
    cycles_in(src, Semantics::Strict)
}

fn cycles_in(src: &str, semantics: Semantics) -> u64 {
    let p = assemble(src).unwrap_or_else(|d| panic!("{}", d.render("t.npu", src)));
    let mut m = Machine::preset("mini").unwrap();
    m.cores = 1;
    run_timed(&p, &m, &Default::default(), 0, semantics)
        .unwrap_or_else(|s| panic!("{}", s.diagnostic.render("t.npu", src)))
        .report
        .cycles
}

#[test]
fn dma_bound_copy_pays_latency_once_when_transfers_queue() {
    // Four 1 KiB loads issued at cycles 2, 4, 6, 8 (a loop step and an issue each): the first
    // moves data from 12 to 44, each next
    // one (its latency overlapped) 32 cycles later.
    let src = "tensor x : f16[2048] in\nbuffer u : ub f16[2048]\n\
               loop i in 0..4 {\n  dma u[i*512], x[i*512], len=512\n}\n";
    assert_eq!(cycles(src), 1 + 1 + 10 + 4 * 32);
}

#[test]
fn cube_bound_loop_costs_startup_plus_fractal_steps() {
    // Loads: A 2 KiB lands at 1+10+64 = 75, B at 75+64 = 139; set 139..140, MTE1 wait
    // 140..141; L1 -> L0: A 141+2+32 = 175, B 175+32 = 207; set 207..208; M wait 208..209;
    // then ten 32x32x32 mmads of 4 + 2*2*2 = 12 cycles each.
    let src = "tensor a : f16[1024] in\ntensor b : f16[1024] in\n\
        buffer a1 : l1 f16[1024]\nbuffer b1 : l1 f16[1024]\nbuffer a0 : l0a f16[1024]\nbuffer b0 : l0b f16[1024]\n\
        buffer c0 : l0c f32[1024]\n\
        dma a1[0], a[0], len=1024\ndma b1[0], b[0], len=1024\nset_flag MTE2, MTE1, 0\nwait_flag MTE2, MTE1, 0\n\
        dma a0[0], a1[0], len=1024\ndma b0[0], b1[0], len=1024\nset_flag MTE1, M, 0\nwait_flag MTE1, M, 0\n\
        loop i in 0..10 {\n  mmad c0[0], a0[0], b0[0], m=32, k=32, n=32, init=(i == 0)\n}\n";
    assert_eq!(cycles(src), 209 + 10 * 12);
}

fn pipeline(tiles: u64, double: bool, semantics: Semantics) -> u64 {
    // Per tile: a 1 KiB load (D = 10 + 1024/32 = 42 cycles) and a vector op of 100 repeats
    // (C = 4 + 100 = 104 cycles).
    let compute = "vmaxs u[s, 0], u[s, 0], -1.0, repeat=100, dst_rs=0, src0_rs=0";
    let body = if double {
        format!(
            "set_flag V, MTE2, 0\nset_flag V, MTE2, 1\nloop t in 0..{tiles} {{\n  wait_flag V, MTE2, (t%2)\n  \
             dma u[t%2, 0], x[t*512], len=512\n  set_flag MTE2, V, (t%2)\n  wait_flag MTE2, V, (t%2)\n  {}\n  \
             set_flag V, MTE2, (t%2)\n}}\nwait_flag V, MTE2, 0\nwait_flag V, MTE2, 1\n",
            compute.replace("[s,", "[t%2,")
        )
    } else {
        format!(
            "loop t in 0..{tiles} {{\n  dma u[0, 0], x[t*512], len=512\n  set_flag MTE2, V, 0\n  wait_flag MTE2, V, 0\n  \
             {}\n  set_flag V, MTE2, 0\n  wait_flag V, MTE2, 0\n}}\n",
            compute.replace("[s,", "[0,")
        )
    };
    cycles_in(
        &format!("tensor x : f16[8192] in\nbuffer u : ub f16[2, 512]\n{body}"),
        semantics,
    )
}

#[test]
fn double_buffering_reaches_the_max_of_load_and_compute_not_their_sum() {
    let tiles = |double, semantics| pipeline(8, double, semantics) - pipeline(4, double, semantics);
    // Single buffered, each tile costs D + C plus four flag cycles: each set fires a cycle
    // after what precedes it on its pipe, each wait takes a cycle once its set has fired.
    for semantics in [Semantics::Strict, Semantics::Relaxed] {
        assert_eq!(tiles(false, semantics), 4 * (42 + 104 + 4), "{semantics:?}");
    }
    // Double buffered, the vector unit is the bottleneck. Strict: C plus its wait (the set
    // leaves the pipe at once and fires while the next wait runs). Relaxed: the set also
    // occupies the pipe for its cycle.
    assert_eq!(tiles(true, Semantics::Strict), 4 * (104 + 1));
    assert_eq!(tiles(true, Semantics::Relaxed), 4 * (104 + 2));
}
