//! The checks that need a run: a race is caught even when the timing happened to make the
//! values right, and ordering the pipes with a flag removes it.

use npu_sim::{assemble, run, Code, Machine};

const LUCKY: &str = "tensor x : f16[128] in\ntensor y : f16[128] out\n\
    buffer a : ub f16[128]\nbuffer b : ub f16[128]\nbuffer w : ub f16[128]\n\
    dma a[0], x[0], len=128\n\
    vdup w[0], 0.0, repeat=255, dst_rs=0\n\
    vmuls b[0], a[0], 2.0\n\
    set_flag V, MTE3, 0\nwait_flag V, MTE3, 0\ndma y[0], b[0], len=128\n";

fn one_core_mini() -> Machine {
    let mut m = Machine::preset("mini").unwrap();
    m.cores = 1;
    m
}

#[test]
fn a_race_is_caught_even_when_the_timing_gives_the_right_values() {
    // On mini the load lands by cycle 1 + 10 + 256/32 = 19, while the vector unit is busy
    // with the vdup until 2 + 4 + 255 = 261: the vmuls reads the loaded values, yet nothing
    // orders the two pipes.
    let m = one_core_mini();
    let err = run(&assemble(LUCKY).unwrap(), &m, &Default::default(), 0).unwrap_err();
    assert_eq!(err.code, Code::Race, "{}", err.render("lucky.npu", LUCKY));
    let fixed = LUCKY.replace("vmuls", "set_flag MTE2, V, 0\nwait_flag MTE2, V, 0\nvmuls");
    let p = assemble(&fixed).unwrap();
    let r = run(&p, &m, &Default::default(), 0).unwrap();
    let x = npu_sim::run::random_inputs(&p, 0)[0].values();
    assert_eq!(
        r.outputs[0].1.values(),
        x.iter().map(|v| 2.0 * v).collect::<Vec<_>>()
    );
}

#[test]
fn a_barrier_all_orders_everything_before_it() {
    let m = one_core_mini();
    let src = LUCKY.replace("vmuls", "barrier ALL\nvmuls");
    assert!(run(&assemble(&src).unwrap(), &m, &Default::default(), 0).is_ok());
}

#[test]
fn inputs_of_the_wrong_shape_are_rejected() {
    let m = one_core_mini();
    let p = assemble(LUCKY).unwrap();
    let bad = npu_sim::TensorData::from_values(npu_sim::program::DType::F16, &[64], &[0.0; 64]);
    let err = run(&p, &m, &[("x".to_string(), bad)].into(), 0).unwrap_err();
    assert_eq!(err.code, Code::Io);
}

/// examples/npu/split_sum.npu on the two cores of `mini`: core 0 zeroes y, `sync_all` orders
/// the zeroing before both atomic adds, and the adds do not race with each other.
#[test]
fn atomic_adds_of_two_cores_after_a_sync_all_sum_their_rows() {
    let m = Machine::preset("mini").unwrap();
    assert_eq!(m.cores, 2);
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/npu/split_sum.npu"
    ))
    .unwrap();
    let p = assemble(&src).unwrap();
    assert_eq!(
        assemble(&npu_sim::print(&p)).unwrap(),
        p,
        "sync_all and atomic print back"
    );
    let r = run(&p, &m, &Default::default(), 0)
        .unwrap_or_else(|d| panic!("{}", d.render("split_sum.npu", &src)));
    let x = npu_sim::run::random_inputs(&p, 0)[0].values();
    let want: Vec<f64> = (0..64).map(|j| x[j] + x[64 + j]).collect();
    let got = r.outputs[0].1.values();
    for j in 0..64 {
        assert!(
            (got[j] - want[j]).abs() <= 1e-6,
            "y[{j}] = {}, want {}",
            got[j],
            want[j]
        );
    }
    let outcome = npu_sim::oracle::check_timing(
        &p,
        &m,
        &Default::default(),
        0,
        npu_sim::Semantics::Strict,
        10,
    );
    assert!(outcome.agreed(), "{outcome}");
    // Without the sync_all, core 1's add may come before core 0's zeroing: a race.
    races_without_sync_all(&src, &m);
}

/// `src` without its `sync_all` lines is refused on `m` as a race.
fn races_without_sync_all(src: &str, m: &Machine) {
    let unsynced = src.replace("sync_all\n", "");
    let err = run(&assemble(&unsynced).unwrap(), m, &Default::default(), 0).unwrap_err();
    assert_eq!(
        err.code,
        Code::Race,
        "{}",
        err.render("unsynced.npu", &unsynced)
    );
}

/// A `scratch` tensor on the two cores of `mini`: each core writes its row of `x` doubled
/// into the workspace, `sync_all`, then reads the other core's row back and stores it: the
/// workspace is neither an input nor among the outputs, and without the `sync_all` the read
/// races with the other core's write.
#[test]
fn a_scratch_tensor_carries_values_between_cores_across_a_sync_all() {
    let m = Machine::preset("mini").unwrap();
    assert_eq!(m.cores, 2);
    let src = "tensor x : f32[2, 64] in\n\
               tensor w : f32[2, 64] scratch\n\
               tensor y : f32[2, 64] out\n\
               buffer a : ub f32[64]\n\
               dma a[0], x[core, 0], len=64\n\
               set_flag MTE2, V, 0\nwait_flag MTE2, V, 0\n\
               vadd a[0], a[0], a[0]\n\
               set_flag V, MTE3, 0\nwait_flag V, MTE3, 0\n\
               dma w[core, 0], a[0], len=64\n\
               sync_all\n\
               dma a[0], w[1 - core, 0], len=64\n\
               set_flag MTE2, MTE3, 0\nwait_flag MTE2, MTE3, 0\n\
               dma y[core, 0], a[0], len=64\n";
    let p = assemble(src).unwrap_or_else(|d| panic!("{}", d.render("scratch.npu", src)));
    assert_eq!(
        assemble(&npu_sim::print(&p)).unwrap(),
        p,
        "scratch prints back"
    );
    assert_eq!(
        npu_sim::run::random_inputs(&p, 0).len(),
        1,
        "the workspace is no input"
    );
    let r = run(&p, &m, &Default::default(), 0)
        .unwrap_or_else(|d| panic!("{}", d.render("scratch.npu", src)));
    let names: Vec<&str> = r.outputs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["y"]);
    let x = npu_sim::run::random_inputs(&p, 0)[0].values();
    let got = r.outputs[0].1.values();
    for j in 0..128 {
        assert_eq!(got[j], 2.0 * x[(j + 64) % 128], "y[{j}]");
    }
    assert_eq!(
        r.report.min_gm_bytes,
        2 * 128 * 4,
        "the workspace is not the kernel's"
    );
    races_without_sync_all(src, &m);
}

/// A built program: `y = x` through UB in tiles of 48 with a partial last tile, each
/// instruction noting the kernel statement it implements; `n` elements per core.
fn built_copy(n: i64) -> npu_sim::Program {
    use npu_sim::builder::Builder;
    use npu_sim::program::*;
    let mut b = Builder::new();
    let x = b.tensor("x", DType::F32, &[100], Direction::In);
    let y = b.tensor("y", DType::F32, &[100], Direction::Out);
    let a = b.buffer("a", Tier::Ub, DType::F32, &[48]);
    b.for_loop("t", 0.into(), 3.into(), 1, |b, t| {
        let len = Expr::from(48).min(Expr::from(n) - t.clone() * 48);
        b.origin(Some("S0: a[i] = x[i]"));
        b.dma(
            b.at(a, [0.into()]),
            b.at(x, [t.clone() * 48]),
            1,
            len.clone(),
        );
        b.origin(None);
        b.flag(true, Pipe::Mte2, Pipe::Mte3, 0);
        b.flag(false, Pipe::Mte2, Pipe::Mte3, 0);
        b.origin(Some("S1: y[i] = a[i]"));
        b.dma(b.at(y, [t * 48]), b.at(a, [0.into()]), 1, len);
        b.origin(None);
        b.barrier(BarrierScope::All);
    });
    b.finish().unwrap()
}

#[test]
fn a_built_instruction_names_its_origin_in_diagnostics_and_in_the_trace() {
    let m = one_core_mini();
    let p = built_copy(100);
    let r = run(&p, &m, &Default::default(), 0).unwrap();
    let x = npu_sim::run::random_inputs(&p, 0)[0].values();
    assert_eq!(r.outputs[0].1.values(), x);
    let text = npu_sim::print(&p);
    let trace = npu_sim::trace::chrome_trace(&r.insts, &r.timeline, &text);
    assert!(trace.contains(r#""origin":"S1: y[i] = a[i]""#), "{trace}");

    // 150 elements: the last tile reads past the end of x, and the error names the statement
    // and shows the line of the printed program.
    let p = built_copy(150);
    let err = run(&p, &m, &Default::default(), 0).unwrap_err();
    assert_eq!(err.code, Code::GmBounds);
    let shown = err.render("built.npu", &npu_sim::print(&p));
    assert!(
        shown.contains("`dma` comes from: S0: a[i] = x[i]"),
        "{shown}"
    );
    assert!(
        shown.contains("dma a[0], x[48*t], len=min(48, 150 - 48*t)"),
        "{shown}"
    );
}
