//! Tests of the architectures frontier runs use against their published configurations: every
//! expected figure is worked out by hand from the model's `config.json` (written out below) and
//! compared with the parameter counts the model cards publish.

use super::*;
use loam_ir::types::{Mlp, Optimizer, Precision, Recompute};

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// DeepSeek-V3 (`config.json` of deepseek-ai/DeepSeek-V3): 61 layers, hidden 7168, 128 heads,
/// MLA q/kv ranks 1536/512, nope 128, rope 64, v 128; dense FFN 18432 in the first 3 blocks;
/// 256 routed experts of 2048 (top 8) and 1 shared; vocabulary 129280, untied.
fn deepseek_v3() -> ModelDims {
    let mut m = ModelDims::dense(61, 7168, 18432, 128, 128, 129_280, 4096, Mlp::Swiglu)
        .with_experts(256, 8)
        .with_mla(Mla {
            q_lora_rank: 1536,
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
        });
    m.expert_ffn = Some(2048);
    m.shared_experts = 1;
    m.dense_layers = 3;
    m
}

/// Qwen3-235B-A22B (`config.json`): 94 layers, hidden 4096, 64 query heads of 128 and 4 KV
/// heads, 128 experts of 1536 (top 8), vocabulary 151936, untied.
fn qwen3_235b() -> ModelDims {
    let mut m = ModelDims::dense(94, 4096, 12288, 64, 4, 151_936, 4096, Mlp::Swiglu)
        .with_experts(128, 8)
        .with_head_dim(128);
    m.expert_ffn = Some(1536);
    m
}

/// gpt-oss-120b (`config.json`): 36 layers, hidden 2880, 64 heads of 64 and 8 KV heads, 128
/// experts of 2880 (top 4), sliding window 128 on every other block, vocabulary 201088.
fn gpt_oss_120b() -> ModelDims {
    let mut m = ModelDims::dense(36, 2880, 2880, 64, 8, 201_088, 4096, Mlp::Swiglu)
        .with_experts(128, 4)
        .with_head_dim(64);
    m.sliding_window = Some(128);
    m.global_every = Some(2);
    m
}

/// Nemotron-4 340B (technical report, Table 1): 96 layers, hidden 18432, 96 heads, 8 KV heads,
/// squared-ReLU MLP of 73728, vocabulary 256000, untied.
fn nemotron4_340b() -> ModelDims {
    ModelDims::dense(96, 18432, 73728, 96, 8, 256_000, 4096, Mlp::SquaredRelu)
}

/// Mixtral 8x7B: 32 layers, hidden 4096, FFN 14336, 32 heads, 8 KV heads, 8 experts (top 2).
fn mixtral_8x7b() -> ModelDims {
    ModelDims::dense(32, 4096, 14336, 32, 8, 32000, 4096, Mlp::Swiglu).with_experts(8, 2)
}

fn llama3_70b() -> ModelDims {
    ModelDims::dense(80, 8192, 28672, 64, 8, 128_256, 8192, Mlp::Swiglu)
}

#[test]
fn deepseek_v3_has_671b_parameters_37b_active() {
    let c = param_count(&deepseek_v3());
    // By hand: MLA q_a 7168·1536, q_b 1536·128·192, kv_a 7168·576, kv_b 512·128·256, o
    // 128·128·7168, latent norms 1536 + 512, two RMSNorms 2·7168.
    let attention = 7168.0 * 1536.0
        + 1536.0 * 128.0 * 192.0
        + 7168.0 * 576.0
        + 512.0 * 128.0 * 256.0
        + 128.0 * 128.0 * 7168.0
        + 2048.0
        + 2.0 * 7168.0;
    let expert = 3.0 * 7168.0 * 2048.0;
    let dense_block = attention + 3.0 * 7168.0 * 18432.0;
    let moe_block = attention + 257.0 * expert + 7168.0 * 256.0;
    let moe_active = attention + 9.0 * expert + 7168.0 * 256.0;
    let embedding = 2.0 * 129_280.0 * 7168.0 + 7168.0;
    let total = 3.0 * dense_block + 58.0 * moe_block + embedding;
    let active = 3.0 * dense_block + 58.0 * moe_active + embedding;
    assert!(rel(c.total, total) < 1e-12, "{} vs {total}", c.total);
    assert!(rel(c.active, active) < 1e-12, "{} vs {active}", c.active);
    // DeepSeek-V3 technical report: 671B total, 37B activated per token.
    assert!(rel(c.total, 671e9) < 0.001, "{}", c.total);
    assert!(rel(c.active, 37e9) < 0.02, "{}", c.active);
}

#[test]
fn qwen3_235b_a22b_counts_heads_wider_than_hidden() {
    let c = param_count(&qwen3_235b());
    // Q and O are 4096 × 64·128 (8192 wide, twice the hidden size), K and V 4096 × 4·128.
    let attention = 2.0 * 4096.0 * 8192.0 + 2.0 * 4096.0 * 512.0 + 2.0 * 4096.0;
    let expert = 3.0 * 4096.0 * 1536.0;
    let embedding = 2.0 * 151_936.0 * 4096.0 + 4096.0;
    let total = 94.0 * (attention + 128.0 * expert + 4096.0 * 128.0) + embedding;
    let active = 94.0 * (attention + 8.0 * expert + 4096.0 * 128.0) + embedding;
    assert!(rel(c.total, total) < 1e-12);
    assert!(rel(c.active, active) < 1e-12);
    // Qwen3 model card: 235B total, 22B activated (the QK norms, 256 per layer, are not counted).
    assert!(rel(c.total, 235e9) < 0.001, "{}", c.total);
    assert!(rel(c.active, 22e9) < 0.01, "{}", c.active);
}

#[test]
fn gpt_oss_120b_counts_117b_and_5_1b_active() {
    let m = gpt_oss_120b();
    let c = param_count(&m);
    // OpenAI's model card: 116.83B total; 5.13B active, counting the unembedding but not the
    // input embedding. loam leaves out the attention sinks and the biases (40M together).
    assert!(rel(c.total, 116.83e9) < 0.001, "{}", c.total);
    let input_embedding = 201_088.0 * 2880.0;
    assert!(
        rel(c.active - input_embedding, 5.13e9) < 0.002,
        "{}",
        c.active
    );
}

#[test]
fn nemotron4_340b_splits_like_its_report() {
    let m = nemotron4_340b();
    let c = param_count(&m);
    // Nemotron-4 340B report: 9.4B embedding and 331.6B non-embedding parameters.
    assert!(rel(c.embedding, 9.4e9) < 0.005, "{}", c.embedding);
    assert!(rel(c.total - c.embedding, 331.6e9) < 0.001, "{}", c.total);
    // Two matrices per MLP, no biases: one block is 2·h² + 2·h·1536 + 2·h·73728 + 2h.
    let h = 18432.0;
    let block = 2.0 * h * h + 2.0 * h * 1536.0 + 2.0 * h * 73728.0 + 2.0 * h;
    assert!(rel(c.per_layer, block) < 1e-12);
}

#[test]
fn mixtral_8x7b_is_46_7b_with_12_9b_active() {
    let c = param_count(&mixtral_8x7b());
    assert!(rel(c.total, 46.7e9) < 0.005, "{}", c.total);
    assert!(rel(c.active, 12.9e9) < 0.005, "{}", c.active);
}

#[test]
fn deepseek_v3_model_flops_follow_mla_and_active_experts() {
    let m = deepseek_v3();
    let f = flops_per_token(&m, Recompute::None);
    // Matmul weights a token runs: the MLA matrices, the dense MLP in 3 blocks, 8 routed + 1
    // shared experts and the router in 58, and the head.
    let attention = 7168.0 * 1536.0
        + 1536.0 * 128.0 * 192.0
        + 7168.0 * 576.0
        + 512.0 * 128.0 * 256.0
        + 128.0 * 128.0 * 7168.0;
    let dense_mlp = 3.0 * 7168.0 * 18432.0;
    let moe_mlp = 9.0 * 3.0 * 7168.0 * 2048.0 + 7168.0 * 256.0;
    let matmul = 61.0 * attention + 3.0 * dense_mlp + 58.0 * moe_mlp + 129_280.0 * 7168.0;
    // QKᵀ over 192 and AV over 128 per head, causal: 2048 keys on average, 61 blocks.
    let core = 61.0 * 2.0 * 128.0 * (192.0 + 128.0) * 2048.0;
    let expected = 6.0 * matmul + 3.0 * core;
    assert!(rel(f.model, expected) < 1e-12, "{} vs {expected}", f.model);
    // About 250 GFLOP per token: 6 × 36.6B matmul weights plus the causal attention core.
    assert!(rel(f.model, 250.45e9) < 0.001, "{}", f.model);
}

#[test]
fn sliding_window_blocks_attend_over_their_window() {
    let m = gpt_oss_120b();
    let f = flops_per_token(&m, Recompute::None);
    // 18 global blocks over 2048 keys on average (causal, 4096 tokens), 18 sliding over
    // 128 − 128²/(2·4096) (a query sees the whole window once past its first 128 tokens), head
    // width 64 for QK and V.
    let sliding = 128.0 - 128.0 * 128.0 / (2.0 * 4096.0);
    let expected = 18.0 * 2.0 * 64.0 * 128.0 * 2048.0 + 18.0 * 2.0 * 64.0 * 128.0 * sliding;
    assert!(rel(f.attention_forward, expected) < 1e-12);
    // KV cache: 2 · 8 heads · 64 · 2 bytes per block and token; at 128K tokens the sliding
    // blocks keep 128.
    let per_block = 2.0 * 8.0 * 64.0 * 2.0;
    assert_eq!(kv_cache_bytes_per_token(&m, 2.0), 36.0 * per_block);
    let long = kv_cache_bytes(&m, 131_072.0, 2.0);
    assert_eq!(
        long,
        18.0 * per_block * 131_072.0 + 18.0 * per_block * 128.0
    );
}

#[test]
fn kv_cache_of_gqa_and_mla() {
    // Llama-3-70B: 80 blocks · 2 · 8 KV heads · 128 · 2 bytes = 320 KiB per token.
    assert_eq!(kv_cache_bytes_per_token(&llama3_70b(), 2.0), 327_680.0);
    // DeepSeek-V3 caches the 512-wide latent and the 64-wide rotary key: 61 · 576 · 2 bytes.
    assert_eq!(
        kv_cache_bytes_per_token(&deepseek_v3(), 2.0),
        61.0 * 576.0 * 2.0
    );
}

#[test]
fn capacity_factor_pads_hardware_flops_not_model_flops() {
    let mut m = mixtral_8x7b();
    let dropless = flops_per_token(&m, Recompute::None);
    m.capacity_factor = Some(1.25);
    let padded = flops_per_token(&m, Recompute::None);
    assert_eq!(padded.model, dropless.model);
    // A quarter more of the two routed experts' forward, backward and weight gradient.
    let routed = 32.0 * 2.0 * 3.0 * 4096.0 * 14336.0;
    let expected = 0.25 * 6.0 * routed;
    assert!(rel(padded.hardware - dropless.hardware, expected) < 1e-9);
}

#[test]
fn lora_on_70b_trains_207m_adapters_at_four_flops_per_frozen_weight() {
    let lora = Trainable::lora(Lora {
        rank: 16,
        attention: true,
        mlp: true,
    });
    let m = llama3_70b().with_trainable(lora);
    let c = param_count(&m);
    // Per block: q 8192→8192, k and v 8192→1024, o 8192→8192, gate and up 8192→28672, down
    // 28672→8192, each `16 · (in + out)`.
    let per_block =
        16.0 * ((8192.0 + 8192.0) * 2.0 + (8192.0 + 1024.0) * 2.0 + (8192.0 + 28672.0) * 3.0);
    assert_eq!(c.trainable, 80.0 * per_block);
    assert!(rel(c.trainable, 207.09e6) < 1e-3);
    let base = param_count(&llama3_70b());
    assert_eq!(c.total, base.total + c.trainable);
    // FLOPs: the frozen base costs 4 per weight, adapters 6, the attention core 3× forward.
    let full = flops_per_token(&llama3_70b(), Recompute::None);
    let tuned = flops_per_token(&m, Recompute::None);
    let matmul = full.block_gemm_forward / 2.0 + full.head_forward / 2.0;
    let expected = 4.0 * matmul + 6.0 * c.trainable + 3.0 * full.attention_forward;
    assert!(
        rel(tuned.model, expected) < 1e-12,
        "{} vs {expected}",
        tuned.model
    );
}

#[test]
fn lora_70b_keeps_only_its_weights_and_the_adapters_state() {
    let lora = Trainable::lora(Lora {
        rank: 16,
        attention: true,
        mlp: true,
    });
    let m = llama3_70b().with_trainable(lora);
    let setup = TrainSetup {
        global_batch: 64,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 1e9,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    };
    let layout = Layout {
        tensor: 8,
        data: 1,
        micro_batch: 1,
        recompute: Recompute::Full,
        sequence_parallel: true,
        ..Layout::single()
    };
    let mem = memory_per_device(&m, &setup, &layout);
    let c = param_count(&m);
    // Every weight in bf16 over 8 tensor ranks, adapters' fp32 gradients (Megatron-Core's
    // `main_grad`) and 12-byte state.
    assert!(rel(mem.weights, 2.0 * c.total / 8.0) < 1e-3);
    assert!(rel(mem.gradients, 4.0 * c.trainable / 8.0) < 1e-3);
    assert!(rel(mem.optimizer, 12.0 * c.trainable / 8.0) < 1e-3);
    // Full fine-tuning at the same layout needs 18 bytes per weight: 159 GB per device.
    let full = memory_per_device(&llama3_70b(), &setup, &layout);
    assert!(
        full.total > 140e9 && mem.total < 40e9,
        "{} {}",
        full.total,
        mem.total
    );
}

#[test]
fn frozen_parts_train_no_weights() {
    let frozen = Trainable::freezing(&[Part::Embedding, Part::Attention]);
    let m = llama3_70b().with_trainable(frozen);
    let c = param_count(&m);
    let attention = 2.0 * 8192.0 * 8192.0 + 2.0 * 8192.0 * 1024.0;
    let expected = c.total - 128_256.0 * 8192.0 - 80.0 * attention;
    assert!(rel(c.trainable, expected) < 1e-12);
    // The frozen attention projections skip their weight gradient: 2 FLOPs per weight.
    let full = flops_per_token(&llama3_70b(), Recompute::None);
    let f = flops_per_token(&m, Recompute::None);
    assert!(rel(full.model - f.model, 2.0 * 80.0 * attention) < 1e-12);
}

#[test]
fn mixtral_ep8_zero1_shards_expert_state_over_the_expert_data_group() {
    // EP 8 = DP 8 at TP 1: each device holds one whole expert per layer, and no other rank holds
    // it, so its optimizer state is not sharded at all; the rest is sharded 8 ways.
    let m = mixtral_8x7b();
    let setup = TrainSetup {
        global_batch: 256,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 1e12,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    };
    let layout = Layout {
        data: 8,
        expert: 8,
        zero: 1,
        micro_batch: 1,
        recompute: Recompute::Full,
        ..Layout::single()
    };
    let experts = 32.0 * 8.0 * 3.0 * 4096.0 * 14336.0;
    let rest = 32.0 * (2.0 * 4096.0 * 4096.0 + 2.0 * 4096.0 * 1024.0 + 2.0 * 4096.0 + 4096.0 * 8.0)
        + 2.0 * 32000.0 * 4096.0
        + 4096.0;
    let held = experts / 8.0 + rest;
    // bf16 weights and fp32 gradients (Megatron-Core's recipe): 6 bytes per held parameter.
    let states = 6.0 * held + 12.0 * experts / 8.0 + 12.0 * rest / 8.0;
    let mem = memory_per_device(&m, &setup, &layout);
    let got = mem.weights + mem.gradients + mem.optimizer;
    assert!(rel(got, states) < 1e-9, "{got} vs {states}");
    // 105.7 GiB of model states (50.6 GiB if the expert state were sharded over all 8 ranks).
    assert!((got / (1u64 << 30) as f64 - 105.7).abs() < 0.1);
    let sizes = comm_sizes(&m, &setup, &layout);
    // Expert gradients are reduced over one rank (nothing to do); the rest over eight, in fp32.
    assert!(rel(sizes.dp_expert_grad_buffer, 4.0 * experts / 8.0) < 1e-12);
    assert!(rel(sizes.per_step[2], 2.0 * 4.0 * rest * 7.0 / 8.0) < 1e-9);
}

#[test]
fn expert_all_to_all_buffer_grows_with_the_capacity_factor() {
    let mut m = mixtral_8x7b();
    let setup = TrainSetup {
        global_batch: 256,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 1e12,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    };
    let layout = Layout {
        tensor: 2,
        data: 8,
        expert: 8,
        micro_batch: 1,
        ..Layout::single()
    };
    // 4096 tokens split over 2 tensor ranks, 2 copies of each, 4096 wide, 2 bytes.
    let dropless = comm_sizes(&m, &setup, &layout).ep_buffer;
    assert_eq!(dropless, 2048.0 * 2.0 * 4096.0 * 2.0);
    m.capacity_factor = Some(1.5);
    assert_eq!(comm_sizes(&m, &setup, &layout).ep_buffer, 1.5 * dropless);
}

#[test]
fn activations_follow_the_head_width() {
    // Qwen3: Q and the attention output are 64·128 wide, K and V 4·128, over 2 bytes.
    let m = qwen3_235b();
    let mut dense = m.clone();
    dense.arch = loam_ir::types::Arch::Dense;
    dense.ffn = 1536;
    let layout = Layout::single();
    let per_token = activation_bytes_per_layer(
        &dense,
        &layout,
        Precision::Bf16,
        GemmInputs::AsActivations,
        Recompute::None,
    ) / f64::from(dense.seq_len);
    let expected = 2.0 * (4.0 * 4096.0 + 2.0 * 8192.0 + 2.0 * 512.0 + 3.0 * 1536.0);
    assert_eq!(per_token, expected);
}
