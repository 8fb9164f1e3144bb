//! The fused attention program, differentially: each compiled program runs in the simulator
//! (strict semantics, race detector, unwritten outputs) on the interpreter's random inputs
//! and must give its output within the tolerance of a reordered f32 sum; the timing oracle
//! must agree on the values; the scores and probabilities have no GM tensor; kernels the
//! program cannot compute are refused with the reason.

// worst_error is for the tests that measure an error rather than compare
#[allow(dead_code)]
mod common;

use common::{example, kernel, sizes_of};

use codegen::npu::attention::{self, tiles::Tiles};
use codegen::npu::{compile, Compiled, NpuError, Plan};
use codegen::runner::{disagreements, Comparison};
use npu_sim::Machine;

/// Compiles `text` at `sizes` for `machine`, checks that no GM tensor but the kernel's
/// inputs and output exists (none for the scores or the probabilities), runs it against the
/// interpreter (and the timing oracle) and returns the plan.
fn differential(text: &str, sizes: &[(&str, i64)], machine: &str) -> codegen::npu::attention::Plan {
    let k = kernel(text);
    let (params, all) = sizes_of(&k, sizes);
    let m = Machine::load(machine).unwrap();
    let at = format!("{machine} {sizes:?}");
    let compiled = compile(&k, &all, &m, true).unwrap_or_else(|e| panic!("{at}: {e}"));
    let mut tensors: Vec<&str> = (compiled.program.tensors.iter())
        .map(|t| t.name.as_str())
        .collect();
    let mut arrays: Vec<&str> = (k.arrays.iter())
        .filter(|a| a.role != frontend::ir::Role::Temp)
        .map(|a| a.name.as_str())
        .collect();
    tensors.sort_unstable();
    arrays.sort_unstable();
    assert_eq!(tensors, arrays, "{at}: the scores went to GM");
    let (want, got) = common::interpreted_and_simulated(&k, &params, &compiled, &m, 2, &at);
    let bad = disagreements(&k, &want, &got, Comparison::Tolerant).unwrap();
    assert!(bad.is_empty(), "{at}: {bad:?}");
    match compiled.plan {
        Plan::Attention(plan) => plan,
        other => panic!("{at}: not an attention program: {other:?}"),
    }
}

/// Compiles `text` at `sizes` for `machine` with the sizes `tiles`, runs it against the
/// interpreter (and the timing oracle), or returns why the sizes were refused.
fn forced_sizes(
    text: &str,
    sizes: &[(&str, i64)],
    machine: &str,
    tiles: Tiles,
) -> Result<(), NpuError> {
    let k = kernel(text);
    let (params, all) = sizes_of(&k, sizes);
    let m = Machine::load(machine).unwrap();
    let (program, plan) = attention::compile_ranked(&k, &all, &m, true, (1, Some(tiles)))?
        .expect("an attention block")
        .remove(0);
    assert_eq!(plan.tiles, tiles);
    let compiled = Compiled {
        program,
        plan: Plan::Attention(plan),
    };
    let at = format!("{machine} {sizes:?} {tiles:?}");
    let (want, got) = common::interpreted_and_simulated(&k, &params, &compiled, &m, 2, &at);
    let bad = disagreements(&k, &want, &got, Comparison::Tolerant).unwrap();
    assert!(bad.is_empty(), "{at}: {bad:?}");
    Ok(())
}

fn refusal(text: &str, sizes: &[(&str, i64)], machine: &str, reorder: bool) -> NpuError {
    let k = kernel(text);
    let (_, all) = sizes_of(&k, sizes);
    let m = Machine::load(machine).unwrap();
    compile(&k, &all, &m, reorder).expect_err("compiled")
}

#[test]
fn the_example_matches_the_interpreter_on_every_preset() {
    let text = example("attention-f16.pk");
    // several heads per core, a head over several cores, fewer blocks than cores
    for (machine, sizes) in [
        ("ascend-like", vec![("H", 3), ("L", 64), ("D", 32)]),
        ("ascend-like", vec![("H", 2), ("L", 128), ("D", 64)]),
        ("ascend-like-halfgm", vec![("H", 5), ("L", 48), ("D", 16)]),
        // three heads a core, one block each, and blocks of a head split over cores
        ("ascend-like", vec![("H", 24), ("L", 16), ("D", 16)]),
        ("ascend-like", vec![("H", 13), ("L", 48), ("D", 16)]),
    ] {
        differential(&text, &sizes, machine);
    }
}

/// Without the scaling, with two batch loops and values of another depth.
const VARIANT: &str = "kernel attn(Q: f16[B, H, L, D], K: f16[B, H, L, D], V: f16[B, H, L, E]) -> (O: f32[B, H, L, E])
  params B = 2, H = 2, L = 32, D = 16, E = 48
{
  let S: f32[B, H, L, L]; let m: f32[B, H, L]; let s: f32[B, H, L]; let P: f16[B, H, L, L];
  S[b, h, i, j] = sum(d) f32(Q[b, h, i, d]) * f32(K[b, h, j, d]);
  m[b, h, i] = max(j) S[b, h, i, j];
  s[b, h, i] = sum(j) exp(S[b, h, i, j] - m[b, h, i]);
  P[b, h, i, j] = f16(exp(S[b, h, i, j] - m[b, h, i]) / s[b, h, i]);
  O[b, h, i, e] = sum(j) f32(P[b, h, i, j]) * f32(V[b, h, j, e]);
}";

#[test]
fn a_variant_without_scaling_with_two_batch_loops_matches() {
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        differential(VARIANT, &[], machine);
    }
}

/// Queries and keys of different lengths, values of another depth, no scaling.
const RECTANGULAR: &str =
    "kernel attn(Q: f16[H, M, D], K: f16[H, N, D], V: f16[H, N, E]) -> (O: f32[H, M, E])
  params H = 3, M = 48, N = 80, D = 32, E = 16
{
  let S: f32[H, M, N]; let m: f32[H, M]; let s: f32[H, M]; let P: f16[H, M, N];
  S[h, i, j] = sum(d) f32(Q[h, i, d]) * f32(K[h, j, d]);
  m[h, i] = max(j) S[h, i, j];
  s[h, i] = sum(j) exp(S[h, i, j] - m[h, i]);
  P[h, i, j] = f16(exp(S[h, i, j] - m[h, i]) / s[h, i]);
  O[h, i, e] = sum(j) f32(P[h, i, j]) * f32(V[h, j, e]);
}";

#[test]
fn probabilities_rounded_by_a_statement_of_their_own_match() {
    // `P` f32 as in attention.pk, multiplied through an f16 copy `P16`
    let text = example("attention.pk")
        .replace(
            "let P: f32[H, L, L];  // attention probabilities",
            "let P: f32[H, L, L]; let P16: f16[H, L, L];",
        )
        .replace(
            "O[h, i, d] = sum(j) P[h, i, j] * f32(V[h, j, d]);",
            "P16[h, i, j] = f16(P[h, i, j]); O[h, i, d] = sum(j) f32(P16[h, i, j]) * f32(V[h, j, d]);",
        );
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        differential(&text, &[("H", 2), ("L", 64), ("D", 32)], machine);
    }
}

#[test]
fn queries_and_keys_of_different_lengths_match() {
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        differential(RECTANGULAR, &[], machine);
        differential(RECTANGULAR, &[("M", 16), ("N", 160), ("H", 9)], machine);
    }
}

#[test]
fn one_block_of_scores_in_l0c_and_forced_sizes_match() {
    // the model keeps two blocks of scores at these sizes; one (the 1024 x 64 choice, for
    // 32-row blocks) and short steps and stages are forced
    let text = example("attention-f16.pk");
    for (machine, sizes) in [
        ("ascend-like", [("H", 3), ("L", 64), ("D", 32)]),
        ("ascend-like-halfgm", [("H", 2), ("L", 96), ("D", 16)]),
    ] {
        let sizes16 = Tiles {
            rows: 16,
            keys: 32,
            stage: 16,
            scores: 1,
        };
        forced_sizes(&text, &sizes, machine, sizes16).unwrap();
    }
    // steps of keys that do not divide them are refused (blocks of rows need not divide
    // the queries)
    let k = kernel(&text);
    let (_, all) = sizes_of(&k, &[("H", 3), ("L", 64), ("D", 32)]);
    let m = Machine::load("ascend-like").unwrap();
    let odd = Tiles {
        rows: 48,
        keys: 48,
        stage: 16,
        scores: 1,
    };
    let e = attention::compile_ranked(&k, &all, &m, true, (1, Some(odd))).unwrap_err();
    assert!(e.to_string().contains("do not divide"), "{e}");
}

/// A per-key additive mask (BERT's padding mask for one sequence) and a scalar temperature,
/// both inputs of the softmax: loaded once per core, whole (the mask's row padded with
/// zeros in UB).
const MASKED: &str = "kernel masked(Q: f16[H, L, D], K: f16[H, L, D], V: f16[H, L, D], M: f32[L], t: f32) -> (O: f32[H, L, D])
  params H = 2, L = 197, D = 64
{
  let S: f32[H, L, L]; let m: f32[H, L]; let s: f32[H, L]; let P: f16[H, L, L];
  S[h, i, j] = sum(d) f32(Q[h, i, d]) * f32(K[h, j, d]);
  S[h, i, j] = S[h, i, j] * t + M[j];
  m[h, i] = max(j) S[h, i, j];
  s[h, i] = sum(j) exp(S[h, i, j] - m[h, i]);
  P[h, i, j] = f16(exp(S[h, i, j] - m[h, i]) / s[h, i]);
  O[h, i, d] = sum(j) f32(P[h, i, j]) * f32(V[h, j, d]);
}";

#[test]
fn a_per_key_mask_and_a_scalar_input_match() {
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        differential(MASKED, &[], machine);
        differential(MASKED, &[("H", 5), ("L", 48), ("D", 16)], machine);
        // an f16 mask, converted in the softmax
        let f16_mask = MASKED
            .replace("M: f32[L]", "M: f16[L]")
            .replace("+ M[j]", "+ f32(M[j])");
        differential(&f16_mask, &[("H", 3), ("L", 40), ("D", 32)], machine);
    }
}

/// `examples/attention-causal.pk` with a mask per head (an f32 bias such as ALiBi's,
/// `M[h, i, j]`), loaded per block of query rows into UB, its padding zeroed once.
fn per_head_mask() -> String {
    example("attention-causal.pk")
        .replace("M: f16[L, L]", "M: f32[H, L, L]")
        .replace("f32(M[i, j])", "M[h, i, j]")
}

#[test]
fn a_mask_of_the_scores_shape_matches() {
    let per_head = per_head_mask();
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        // 200 queries and keys: short last blocks, padded rows of the mask
        differential(&per_head, &[("H", 2), ("L", 200)], machine);
        differential(&per_head, &[("H", 5), ("L", 48), ("D", 16)], machine);
        // an f16 mask, converted in the softmax, with a per-key mask beside it
        let f16_mask = per_head
            .replace("M: f32[H, L, L])", "M: f16[H, L, L], Z: f32[L])")
            .replace("+ M[h, i, j]", "+ f32(M[h, i, j]) + Z[j]");
        differential(&f16_mask, &[("H", 3), ("L", 40), ("D", 32)], machine);
    }
    // blocks that do not divide the queries, one block of scores
    let blocks = Tiles {
        rows: 48,
        keys: 16,
        stage: 16,
        scores: 1,
    };
    forced_sizes(
        &per_head,
        &[("H", 3), ("L", 100), ("D", 32)],
        "ascend-like",
        blocks,
    )
    .unwrap();
    // ViT's 197 tokens: a head's rows of the mask (155,236 bytes) start off GM's blocks
    let e = refusal(&per_head, &[("H", 2), ("L", 197)], "ascend-like", true).to_string();
    assert!(
        e.contains("`M`, an input of the scores' shape") && e.contains("155236 bytes"),
        "{e}"
    );
}

/// A causal mask the heads share, `M[i, j]`: loaded a block of rows at a time from the one
/// mask, whatever the head.
#[test]
fn a_mask_the_heads_share_matches() {
    let shared = example("attention-causal.pk");
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        differential(&shared, &[("H", 3), ("L", 197)], machine);
        differential(&shared, &[("H", 5), ("L", 48), ("D", 16)], machine);
    }
    // two batch loops, the mask per sequence and shared by its heads: `M[b, i, j]`
    let per_sequence = "kernel k(Q: f16[B, H, L, D], K: f16[B, H, L, D], V: f16[B, H, L, D], M: f16[B, L, L]) -> (O: f32[B, H, L, D])
      params B = 2, H = 3, L = 64, D = 32
    {
      let S: f32[B, H, L, L]; let m: f32[B, H, L]; let s: f32[B, H, L]; let P: f16[B, H, L, L];
      S[b, h, i, j] = sum(d) f32(Q[b, h, i, d]) * f32(K[b, h, j, d]);
      S[b, h, i, j] += f32(M[b, i, j]);
      m[b, h, i] = max(j) S[b, h, i, j];
      s[b, h, i] = sum(j) exp(S[b, h, i, j] - m[b, h, i]);
      P[b, h, i, j] = f16(exp(S[b, h, i, j] - m[b, h, i]) / s[b, h, i]);
      O[b, h, i, d] = sum(j) f32(P[b, h, i, j]) * f32(V[b, h, j, d]);
    }";
    differential(per_sequence, &[], "ascend-like");
    // a mask wider than the keys it is read at is not a tile of the scores' shape
    let wide = shared.replace("M: f16[L, L]", "M: f16[L, D]");
    let e = refusal(
        &wide,
        &[("H", 2), ("L", 32), ("D", 64)],
        "ascend-like",
        true,
    )
    .to_string();
    assert!(e.contains("`M` is indexed [i, j]"), "{e}");
}

/// ViT's 197 tokens and other counts off multiples of 16: the cube computes the queries
/// and keys rounded up to fractals (zero queries, zero keys written once into L1), the
/// softmax reads the real keys only, the probabilities of the zero keys are zero (`nd2nz`),
/// and a head's last block may be shorter than the others, storing only its queries.
#[test]
fn queries_and_keys_off_multiples_of_16_match() {
    let text = example("attention-f16.pk");
    for machine in ["ascend-like", "ascend-like-halfgm"] {
        let plan = differential(&text, &[("H", 2), ("L", 197), ("D", 64)], machine);
        assert_eq!(plan.sizes, (197, 197, 64, 64));
        // one head's single block of 5 queries (computed as 16), a key fractal of 5 keys
        differential(&text, &[("H", 3), ("L", 5), ("D", 16)], machine);
        // 37 queries by 45 keys, values of depth 16
        differential(RECTANGULAR, &[("M", 37), ("N", 45)], machine);
    }
    // blocks that do not divide the queries: 100 = 48 + 48 + 4 (the last block computes
    // 16 rows), with one block of scores, steps and stages of 16 keys (the last 4 keys and
    // 4 values in their own fractal)
    for rows in [48, 64, 112] {
        let blocks = Tiles {
            rows,
            keys: 16,
            stage: 16,
            scores: 1,
        };
        let sizes = [("H", 3), ("L", 100), ("D", 32)];
        forced_sizes(&text, &sizes, "ascend-like", blocks).unwrap();
    }
}

#[test]
fn blocks_are_balanced_over_the_cores() {
    let k = kernel(&example("attention-f16.pk"));
    let (_, all) = sizes_of(&k, &[("H", 3), ("L", 64), ("D", 32)]);
    let m = Machine::load("ascend-like").unwrap();
    let Plan::Attention(plan) = compile(&k, &all, &m, true).unwrap().plan else {
        panic!("not an attention program")
    };
    let blocks = 3 * 64 / plan.tiles.rows;
    assert_eq!(plan.choice.blocks, (blocks + 7) / 8, "{plan:?}");
}

#[test]
fn the_f32_example_and_other_kernels_are_refused_with_the_reason() {
    let why = |e: NpuError| e.to_string();
    // f32 probabilities: the cube cannot multiply them exactly
    let e = why(refusal(&example("attention.pk"), &[], "ascend-like", true));
    assert!(e.contains("statement S10") && e.contains("f16"), "{e}");
    let text = example("attention-f16.pk");
    let small = [("H", 2), ("L", 64), ("D", 32)];
    assert_eq!(
        refusal(&text, &small, "ascend-like", false),
        NpuError::ReorderNotAllowed
    );
    // queries and keys may be any number (`queries_and_keys_off_multiples_of_16_match`),
    // the depths are the cube's fractals
    let e = why(refusal(&text, &[("L", 40), ("D", 40)], "ascend-like", true));
    assert!(
        e.contains("depths 40 and 40") && e.contains("multiples of 16"),
        "{e}"
    );
    // no block fits the tiny machine: 16 rows' per-row values spread over a repeat of f32
    // lanes alone take its 4 KiB of UB
    let e = why(refusal(&text, &[("L", 16), ("D", 16)], "mini", true));
    assert!(e.contains("no block of query rows fits `mini`"), "{e}");
    // the keys laid out [h, d, j]: not what the program reads
    let kt = text
        .replace("K: f16[H, L, D]", "K: f16[H, D, L]")
        .replace("K[h, j, d]", "K[h, d, j]");
    let e = why(refusal(&kt, &small, "ascend-like", true));
    assert!(e.contains("`K` is not laid out"), "{e}");
    // an input per query row read by the softmax
    let per_query = text
        .replace("V: f16[H, L, D])", "V: f16[H, L, D], r: f32[H, L])")
        .replace(
            "S[h, i, j] *= scale;",
            "S[h, i, j] *= scale; S[h, i, j] += r[h, i];",
        );
    let e = why(refusal(&per_query, &small, "ascend-like", true));
    assert!(e.contains("`r` is an input per query row"), "{e}");
    // the scores an output: they would have to go to GM
    let stored = text
        .replace(
            "-> (O: f32[H, L, D])",
            "-> (O: f32[H, L, D], S: f32[H, L, L])",
        )
        .replace("  let S: f32[H, L, L];  // scaled scores\n", "");
    let e = why(refusal(&stored, &small, "ascend-like", true));
    assert!(e.contains("`S` is not a temporary"), "{e}");
    // the output read between the products (as a tile: D = L)
    let early = text.replace(
        "S[h, i, j] *= scale;",
        "S[h, i, j] *= scale; S[h, i, j] += O[h, i, j];",
    );
    let square = [("H", 2), ("L", 64), ("D", 64)];
    let e = why(refusal(&early, &square, "ascend-like", true));
    assert!(e.contains("`O` is the output"), "{e}");
}

mod random_sizes {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Random heads, queries, keys and depths (multiples of 16) on both presets, with
        /// the model's sizes or with forced blocks of rows, steps of keys and stages of
        /// values (whichever fit): every program matches the interpreter. Some draws are
        /// the masked kernels (a per-key mask and a temperature; a mask of the scores'
        /// shape), queries as many as keys.
        #[test]
        fn any_attention_block_matches(
            heads in 1i64..6, m in 1i64..120, n in 1i64..120, d in 1i64..4, e in 1i64..4,
            halfgm in any::<bool>(), forced in proptest::option::of((1i64..9, 1usize..4, 1i64..3)),
            masked in any::<bool>(),
        ) {
            let machine = if halfgm { "ascend-like-halfgm" } else { "ascend-like" };
            if masked {
                differential(MASKED, &[("H", heads), ("L", n), ("D", 16 * d)], machine);
                // a mask of the scores' shape, its head's rows on whole 32-byte blocks
                let l = if heads > 1 { (n + 3) / 4 * 4 } else { n };
                differential(&per_head_mask(), &[("H", heads), ("L", l), ("D", 16 * d)], machine);
                return Ok(());
            }
            let sizes = [("H", heads), ("M", m), ("N", n), ("D", 16 * d), ("E", 16 * e)];
            let Some((rows, step, scores)) = forced else {
                differential(RECTANGULAR, &sizes, machine);
                return Ok(());
            };
            // a divisor of the keys rounded up to fractals, for the steps and the stages
            let fractals = (n + 15) / 16;
            let divisors: Vec<i64> = (1..=fractals).filter(|f| fractals % f == 0).collect();
            let keys = 16 * divisors[step % divisors.len()];
            let tiles = Tiles { rows: 16 * rows.min((m + 15) / 16), keys, stage: keys, scores };
            match forced_sizes(RECTANGULAR, &sizes, machine, tiles) {
                Ok(()) => {}
                Err(NpuError::Unsupported(why)) => prop_assert!(why.contains("do not fit"), "{why}"),
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }
    }
}
