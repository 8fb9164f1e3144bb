//! Cycle counts worked out by hand, mostly from the `mini` machine (one core unless a test says
//! otherwise): GM paths 32 B/cycle after 10 cycles of latency, then 1 cycle per burst; a core's
//! GM transfers share 32 B/cycle, all cores' 64; GM is charged in 512-byte segments; L1 -> L0
//! 64 B/cycle after 2; issue 1 cycle per instruction plus 1 per loop iteration, flags 1 cycle,
//! cube 4 + ceil(m/16)*ceil(k/16)*ceil(n/16), vector 4 + repeats.

use npu_sim::machine::Mem;
use npu_sim::report::{Bound, Report};
use npu_sim::{assemble, run_timed, Machine, Semantics};

fn cycles(src: &str) -> u64 {
    cycles_in(src, Semantics::Strict)
}

fn cycles_in(src: &str, semantics: Semantics) -> u64 {
    report_on("mini", src, semantics, |m| m.cores = 1).cycles
}

/// The report of `src` on a preset after `edit`.
fn report_on(
    preset: &str,
    src: &str,
    semantics: Semantics,
    edit: impl FnOnce(&mut Machine),
) -> Report {
    let p = assemble(src).unwrap_or_else(|d| panic!("{}", d.render("t.npu", src)));
    let mut m = Machine::preset(preset).unwrap();
    edit(&mut m);
    let report = run_timed(&p, &m, &Default::default(), 0, semantics)
        .unwrap_or_else(|s| panic!("{}", s.diagnostic.render("t.npu", src)))
        .report;
    assert!(report.roofline <= report.cycles as f64, "{report}");
    report
}

/// The report of `src` on one core of `mini`.
fn mini(src: &str) -> Report {
    report_on("mini", src, Semantics::Strict, |m| m.cores = 1)
}

#[test]
fn dma_bound_copy_pays_latency_once_when_transfers_queue() {
    // Four 1 KiB loads issued at cycles 2, 4, 6, 8 (a loop step and an issue each): the first
    // bursts from 12 to 13 and moves data from 13 to 45, each next one (its latency
    // overlapped) bursts and moves 1 + 32 cycles later.
    let src = "tensor x : f16[2048] in\nbuffer u : ub f16[2048]\n\
               loop i in 0..4 {\n  dma u[i*512], x[i*512], len=512\n}\n";
    assert_eq!(cycles(src), 1 + 1 + 10 + 4 * (1 + 32));
}

#[test]
fn cube_bound_loop_costs_startup_plus_fractal_steps() {
    // Loads: A 2 KiB lands at 1+10+1+64 = 76, B at 76+1+64 = 141; set 141..142, MTE1 wait
    // 142..143; L1 -> L0: A 143+2+32 = 177, B 177+32 = 209; set 209..210; M wait 210..211;
    // then ten 32x32x32 mmads of 4 + 2*2*2 = 12 cycles each.
    let src = "tensor a : f16[1024] in\ntensor b : f16[1024] in\n\
        buffer a1 : l1 f16[1024]\nbuffer b1 : l1 f16[1024]\nbuffer a0 : l0a f16[1024]\nbuffer b0 : l0b f16[1024]\n\
        buffer c0 : l0c f32[1024]\n\
        dma a1[0], a[0], len=1024\ndma b1[0], b[0], len=1024\nset_flag MTE2, MTE1, 0\nwait_flag MTE2, MTE1, 0\n\
        dma a0[0], a1[0], len=1024\ndma b0[0], b1[0], len=1024\nset_flag MTE1, M, 0\nwait_flag MTE1, M, 0\n\
        loop i in 0..10 {\n  mmad c0[0], a0[0], b0[0], m=32, k=32, n=32, init=(i == 0)\n}\n";
    assert_eq!(cycles(src), 211 + 10 * 12);
}

fn pipeline(tiles: u64, double: bool, semantics: Semantics) -> u64 {
    // Per tile: a 1 KiB load (D = 10 + 1 + 1024/32 = 43 cycles) and a vector op of 100
    // repeats (C = 4 + 100 = 104 cycles).
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
        assert_eq!(tiles(false, semantics), 4 * (43 + 104 + 4), "{semantics:?}");
    }
    // Double buffered, the vector unit is the bottleneck. Strict: C plus its wait (the set
    // leaves the pipe at once and fires while the next wait runs). Relaxed: the set also
    // occupies the pipe for its cycle.
    assert_eq!(tiles(true, Semantics::Strict), 4 * (104 + 1));
    assert_eq!(tiles(true, Semantics::Relaxed), 4 * (104 + 2));
}

/// Each core loads 1 KiB (MTE2) while it stores another 1 KiB (MTE3) written by a `vdup`.
const LOAD_AND_STORE: &str = "tensor x : f16[2, 512] in\ntensor y : f16[2, 512] out\n\
    buffer a : ub f16[512]\nbuffer b : ub f16[512]\n\
    vdup b[0], 1.0, repeat=4\nset_flag V, MTE3, 0\nwait_flag V, MTE3, 0\n\
    dma a[0], x[core, 0], len=512\ndma y[core, 0], b[0], len=512\n";

#[test]
fn a_cores_loads_and_stores_share_its_gm_budget() {
    // Two cores, GM total raised to 256 so that only each core's 32 B/cycle binds. Per core:
    // vdup 1..9 (4 + 4 repeats), its set fires at 10, MTE3's wait runs 10..11. The load is
    // issued at 4: latency to 14, a burst to 15, then alone at 32 B/cycle until the store
    // (latency 11..21, burst 21..22) starts moving at 22: 7 * 32 = 224 bytes moved. Then the
    // two share 32 B/cycle, 16 each: the load's last 800 bytes take 50 cycles (to 72), during
    // which the store moves 800; its last 224 bytes alone take 7 more. The core's 2 KiB pass
    // at its budget of 32 B/cycle from 15 to 79 without a gap.
    let r = report_on("mini", LOAD_AND_STORE, Semantics::Strict, |m| {
        m.gm.bytes_per_cycle_total = 256.0
    });
    assert_eq!(r.cycles, 79);
    // Each path alone would take 1 + 1024/32 = 33 cycles of data; the core's budget needs
    // 2048 / 32 = 64: the binding bound.
    assert_eq!(r.binding, Bound::CoreGm);
    assert_eq!(r.roofline, 64.0);
    assert_eq!(
        r.bound(Bound::Path {
            from: Mem::Gm,
            to: Mem::Ub
        }),
        Some(33.0)
    );
    assert_eq!(r.bound(Bound::TotalGm), Some(4096.0 / 256.0));

    // The total at 48 B/cycle binds as well. From 15 to 22 the two cores' loads share 48: 24
    // each, 168 bytes. From 22 the four transfers are capped at 16 by their cores and share
    // 48: 12 each; the loads' last 856 bytes take 71 1/3 cycles (to 93 1/3). Then the two
    // stores' last 168 bytes at 24 each: 7 more, 100 1/3. The 4 KiB pass at 48 B/cycle from
    // 15 without a gap: 15 + 4096/48.
    let r = report_on("mini", LOAD_AND_STORE, Semantics::Strict, |m| {
        m.gm.bytes_per_cycle_total = 48.0
    });
    assert_eq!(r.cycles, (15.0f64 + 4096.0 / 48.0).ceil() as u64);
    assert_eq!(r.binding, Bound::TotalGm);
    assert_eq!(r.roofline, 4096.0 / 48.0);
}

#[test]
fn a_gm_burst_is_charged_every_segment_it_touches() {
    let load = |offset: u64, len: u64| {
        mini(&format!(
            "tensor x : f16[4096] in\nbuffer u : ub f16[1024]\ndma u[0], x[{offset}], len={len}\n"
        ))
    };
    // Aligned, 1 KiB: two 512-byte segments, 1024 bytes: issue 1, latency 10, burst 1, then
    // 1024/32 = 32.
    let r = load(0, 512);
    assert_eq!(
        (r.cycles, r.gm_bytes, r.gm_charged),
        (1 + 10 + 1 + 32, 1024, 1024)
    );
    // The same 1 KiB from byte 32: it touches bytes 32..1056, three segments, 1536 bytes:
    // 1536/32 = 48 cycles of data.
    let r = load(16, 512);
    assert_eq!(
        (r.cycles, r.gm_bytes, r.gm_charged),
        (1 + 10 + 1 + 48, 1024, 1536)
    );
    // A short burst, 256 bytes: a whole segment, 512/32 = 16 cycles instead of 8.
    let r = load(0, 128);
    assert_eq!(
        (r.cycles, r.gm_bytes, r.gm_charged),
        (1 + 10 + 1 + 16, 256, 512)
    );
    // The roofline counts what is charged: the path needs 1 + 16, the core 512 / 32 = 16.
    assert_eq!(
        r.binding,
        Bound::Path {
            from: Mem::Gm,
            to: Mem::Ub
        }
    );
    assert_eq!(r.roofline, 17.0);
}

#[test]
fn every_burst_costs_its_cycles_after_the_previous_transfer() {
    // Four aligned 512-byte bursts 1 KiB apart in GM: 2048 bytes charged, 64 cycles of data,
    // and 4 burst cycles. The second copy is issued at 2 and its latency (2..12) hides behind
    // the first; its bursts start when the first has finished (at 1 + 10 + 4 + 64 = 79).
    let src = |copies: usize| {
        let dma = |k| {
            format!(
                "dma u[{}], x[0], len=256, count=4, src_stride=512\n",
                k * 1024
            )
        };
        let dmas: String = (0..copies).map(dma).collect();
        format!("tensor x : f16[2048] in\nbuffer u : ub f16[2048]\n{dmas}")
    };
    let r = mini(&src(1));
    assert_eq!(r.cycles, 1 + 10 + 4 + 64);
    let gm_ub = r.paths.iter().find(|p| p.path == "gm->ub").unwrap();
    assert_eq!((gm_ub.bursts, gm_ub.charged), (4, 2048));
    assert_eq!(mini(&src(2)).cycles, 1 + 10 + 2 * (4 + 64));
    // At 5 cycles a burst, each copy pays 4 * 4 more.
    let r = report_on("mini", &src(2), Semantics::Strict, |m| {
        m.cores = 1;
        m.gm.burst_cycles = 5.0
    });
    assert_eq!(r.cycles, 1 + 10 + 2 * (20 + 64));
}

#[test]
fn l1_feeds_l0a_at_512_bytes_a_cycle_on_ascend_like() {
    // One core of ascend-like. 8 KiB GM -> L1: issue 1, latency 200, one burst, 8192/64 = 128
    // cycles: in L1 at 330. The set fires at 331, MTE1's wait runs 331..332, then L1 -> L0A:
    // latency 20 and 8192/512 = 16 cycles.
    let src = "tensor x : f16[4096] in\nbuffer a1 : l1 f16[4096]\nbuffer a0 : l0a f16[4096]\n\
        dma a1[0], x[0], len=4096\nset_flag MTE2, MTE1, 0\nwait_flag MTE2, MTE1, 0\n\
        dma a0[0], a1[0], len=4096\n";
    let r = report_on("ascend-like", src, Semantics::Strict, |m| m.cores = 1);
    assert_eq!(r.cycles, 332 + 20 + 16);
    assert_eq!(
        r.bound(Bound::Path {
            from: Mem::L1,
            to: Mem::L0a
        }),
        Some(16.0)
    );
    // The load binds: 1 burst cycle + 128 cycles of data on GM -> L1.
    assert_eq!(
        r.binding,
        Bound::Path {
            from: Mem::Gm,
            to: Mem::L1
        }
    );
    assert_eq!(r.roofline, 129.0);
}

#[test]
fn the_roofline_names_the_vector_unit_when_it_binds() {
    // 255 repeats of vdup on one core (4 + 255 cycles on V), then a 256-byte store: the
    // vector unit's 255 cycles beat the store's 1 + 512/32 = 17.
    let src = "tensor y : f16[128] out\nbuffer u : ub f16[128]\n\
        vdup u[0], 1.0, repeat=255, dst_rs=0\nset_flag V, MTE3, 0\nwait_flag V, MTE3, 0\n\
        dma y[0], u[0], len=128\n";
    let r = mini(src);
    assert_eq!(r.binding, Bound::Vector);
    assert_eq!(r.roofline, 255.0);
    // vdup 1..260, set fires 261, wait 261..262, store: 10 + 1 + 16.
    assert_eq!(r.cycles, 262 + 10 + 1 + 16);
}
