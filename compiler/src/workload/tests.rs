//! Tests of the workload model against published numbers.

use super::*;
use loam_ir::types::{Mlp, Optimizer, Precision, Recompute};

fn llama3_70b() -> ModelDims {
    ModelDims::dense(80, 8192, 28672, 64, 8, 128_256, 8192, Mlp::Swiglu)
}

fn llama3_8b() -> ModelDims {
    ModelDims::dense(32, 4096, 14336, 32, 8, 128_256, 8192, Mlp::Swiglu)
}

/// GPT-3-style block as in Korthikanti et al.: MHA, 4h GeLU MLP, dropout.
fn gpt(layers: u32, hidden: u32, heads: u32, seq: u32) -> ModelDims {
    let mut m = ModelDims::dense(
        layers,
        hidden,
        4 * hidden,
        heads,
        heads,
        51200,
        seq,
        Mlp::Gelu,
    );
    m.dropout = true;
    m.tied_embeddings = true;
    m
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

#[test]
fn llama3_parameter_counts_match_meta() {
    // Meta's model cards: Llama-3-70B has 70.6B parameters, Llama-3-8B 8.03B.
    let p70 = param_count(&llama3_70b()).total;
    assert!(rel(p70, 70.6e9) < 0.002, "{p70}");
    let p8 = param_count(&llama3_8b()).total;
    assert!(rel(p8, 8.03e9) < 0.001, "{p8}");
}

#[test]
fn gpt_parameter_count_matches_sc21_eq2() {
    // SC21 Eq. (2): P = 12·l·h²·(1 + 13/(12h) + (V + s)/(12·l·h)); our models carry no learned
    // position embedding, so drop the `s` term.
    let m = gpt(96, 12288, 96, 2048);
    let (l, h, v) = (96.0, 12288.0, 51200.0);
    let eq2 = 12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + v / (12.0 * l * h));
    assert!(rel(param_count(&m).total, eq2) < 1e-4);
}

#[test]
fn moe_counts_total_and_active_experts() {
    // Mixtral-8x7B: 46.7B total, 12.9B active (Mistral AI announcement).
    let mut m = ModelDims::dense(32, 4096, 14336, 32, 8, 32000, 4096, Mlp::Swiglu);
    m.arch = loam_ir::types::Arch::Moe;
    m.experts = 8;
    m.top_k = 2;
    let c = param_count(&m);
    assert!(rel(c.total, 46.7e9) < 0.005, "{}", c.total);
    assert!(rel(c.active, 12.9e9) < 0.005, "{}", c.active);
}

#[test]
fn model_flops_match_sc21_without_recompute_and_eq3_with_full_recompute() {
    let m = gpt(96, 12288, 96, 2048);
    let (l, h, s, v) = (96.0, 12288.0, 2048.0, 51200.0);
    // Narayanan et al. (SC21) with the attention term halved: loam counts the causal core,
    // the unmasked half a flash kernel computes (s/12h instead of s/6h).
    let model = 72.0 * l * h * h * (1.0 + s / (12.0 * h) + v / (12.0 * l * h));
    let eq3 = 96.0 * l * h * h * (1.0 + s / (12.0 * h) + v / (16.0 * l * h));
    let f = flops_per_token(&m, Recompute::Full);
    // Biases and norms are not GEMMs; the counts are exact for the GEMM terms.
    assert!(rel(f.model, model) < 1e-9, "{} vs {model}", f.model);
    assert!(rel(f.hardware, eq3) < 1e-9, "{} vs {eq3}", f.hardware);
    assert!(rel(flops_per_token(&m, Recompute::None).hardware, model) < 1e-9);
}

#[test]
fn zero_paper_example_7_5b_on_64_ranks() {
    // Rajbhandari et al. Fig. 1: Ψ = 7.5B, N_d = 64 → 120 / 31.4 / 16.6 / 1.9 GB.
    let expect = [120.0, 31.4, 16.6, 1.9];
    // The paper's 2 + 2 + 12 bytes are DeepSpeed's recipe.
    let deepspeed = crate::workload::StateRecipe::deepspeed(Precision::Bf16);
    for (zero, gb) in expect.iter().enumerate() {
        let (w, g, o) = model_state_bytes(7.5e9, zero as u8, 64.0, &deepspeed, Optimizer::Adamw);
        let total = (w + g + o) / 1e9;
        assert!(
            (total - gb).abs() < 0.05,
            "stage {zero}: {total} GB vs {gb}"
        );
    }
}

#[test]
fn activations_match_korthikanti_table_2_without_score_terms() {
    // Korthikanti et al. Table 2; flash attention removes the 5as/h term.
    let m = gpt(96, 12288, 96, 2048);
    let (s, b, h, t) = (2048.0, 1.0, 12288.0, 8.0);
    let mut layout = Layout::single();
    layout.tensor = 8;
    let tp = activation_bytes_per_layer(
        &m,
        &layout,
        Precision::Bf16,
        GemmInputs::AsActivations,
        Recompute::None,
    );
    assert!(rel(tp, s * b * h * (10.0 + 24.0 / t)) < 1e-12);
    layout.sequence_parallel = true;
    let sp = activation_bytes_per_layer(
        &m,
        &layout,
        Precision::Bf16,
        GemmInputs::AsActivations,
        Recompute::Selective,
    );
    assert!(rel(sp, 34.0 * s * b * h / t) < 1e-12);
    layout.tensor = 1;
    layout.sequence_parallel = false;
    let none = activation_bytes_per_layer(
        &m,
        &layout,
        Precision::Bf16,
        GemmInputs::AsActivations,
        Recompute::None,
    );
    assert!(rel(none, 34.0 * s * b * h) < 1e-12);
    let full = activation_bytes_per_layer(
        &m,
        &layout,
        Precision::Bf16,
        GemmInputs::AsActivations,
        Recompute::Full,
    );
    assert!(rel(full, 2.0 * s * b * h) < 1e-12);
}

#[test]
fn korthikanti_175b_fits_on_80gb_with_seqpar_selective() {
    // Korthikanti Table 5 ran 175B on 64 A100-80GB with t = 8, p = 8, v = 3, b = 1, B = 64.
    let m = gpt(96, 12288, 96, 2048);
    let setup = TrainSetup {
        global_batch: 64,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 0.0,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    };
    let layout = Layout {
        tensor: 8,
        pipeline: 8,
        virtual_stages: 3,
        recompute: Recompute::Selective,
        sequence_parallel: true,
        ..Layout::single()
    };
    let mem = memory_per_device(&m, &setup, &layout);
    // Model states: 175B/64 · 18 bytes (bf16 weights, fp32 `main_grad`, 12 bytes of Adam state)
    // ≈ 49.2 GB; activations: 96 layers' worth of
    // 34·sbh/t ≈ 10.3 GB times the interleaving factor 1 + 7/24.
    assert!(
        rel(
            mem.weights + mem.gradients + mem.optimizer,
            175e9 / 64.0 * 18.0
        ) < 0.05
    );
    let act = 96.0 * 34.0 * 2048.0 * 12288.0 / 8.0 * (1.0 + 7.0 / 24.0);
    // The running micro-batch's twelve blocks, and the stash of the other micro-batches in flight.
    assert!(rel(mem.activations, act / 8.0 / (1.0 + 7.0 / 24.0)) < 1e-9);
    assert!(rel(mem.activations + mem.pipeline_stash, act) < 1e-9);
    // One data-parallel rank reduces no gradient bucket; the logits are on the last rank, which
    // needs less.
    assert_eq!((mem.comm_buffers, mem.logits), (0.0, 0.0));
    assert!(mem.total < 80e9);
}

#[test]
fn comm_sizes_follow_sc21() {
    let m = gpt(96, 12288, 96, 2048);
    let setup = TrainSetup {
        global_batch: 64,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 0.0,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    };
    let layout = Layout {
        tensor: 8,
        pipeline: 8,
        micro_batch: 1,
        ..Layout::single()
    };
    let c = comm_sizes(&m, &setup, &layout);
    // SC21 §3.2: each TP all-reduce carries b·s·h elements; 4 per block without recompute.
    assert_eq!(c.tp_buffer, 2048.0 * 12288.0 * 2.0);
    assert_eq!(c.tp_per_layer, 4.0);
    assert_eq!(c.pp_buffer, 2048.0 * 12288.0 * 2.0 / 8.0);
}

#[test]
fn the_405b_h800_stage_holds_every_micro_batch_in_flight_at_full_size() {
    // The heterogeneous plan of examples/llama3-405b-pretrain.loam put 15 blocks of Llama 3.1
    // 405B on the first of 11 stages (TP8 with sequence parallelism, DP4, ZeRO-1, micro-batch 1,
    // 512 micro-batches) with no recomputation, and reported 60.2 GiB: the in-flight activations
    // were divided by the tensor degree twice. Derived here by hand:
    // per token and block, h·8/8 replicated (norm, QKV and MLP inputs) plus
    // (4h + 4·kv + 6·ffn)/8 = 65,024 bytes; 8,192 tokens; 15 blocks; 11 micro-batches in flight.
    let m = ModelDims::dense(126, 16384, 53248, 128, 8, 128_256, 8192, Mlp::Swiglu);
    let setup = TrainSetup {
        global_batch: 2048,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 0.0,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    };
    let layout = Layout {
        tensor: 8,
        pipeline: 11,
        data: 4,
        zero: 1,
        sequence_parallel: true,
        ..Layout::single()
    };
    let holding = StageHolding {
        blocks: 15.0,
        embedding: true,
        head: false,
        in_flight: layout.in_flight(0, layout.micro_batches(2048)),
    };
    let mem = stage_memory(&m, &setup, &layout, &holding);
    let per_block = 65_024.0 * 8192.0;
    assert!(
        rel(
            mem.activations + mem.pipeline_stash,
            15.0 * 11.0 * per_block
        ) < 1e-12
    );
    // Weights and fp32 gradients 2 + 4 bytes, Adam's 12 bytes over 4 ranks: 9 bytes per parameter of
    // 15 blocks of 3,187.7M parameters and the 2,101M embedding, split over 8 tensor ranks.
    let block = 16384.0 * (2.0 * 16384.0 + 2.0 * 1024.0) + 3.0 * 16384.0 * 53248.0 + 2.0 * 16384.0;
    let params = (15.0 * block + 128_256.0 * 16384.0) / 8.0;
    assert!(rel(mem.weights + mem.gradients + mem.optimizer, 9.0 * params) < 1e-12);
    assert_eq!(mem.comm_buffers, DP_BUCKET_BYTES);
    // ≈ 143 GB (131 GB with 16-bit gradients, + 2 · 6.24e9): this stage does not fit an 80 GB
    // H800 without recomputation.
    assert!((140e9..147e9).contains(&mem.total), "{}", mem.total);
}
