//! The serving model's physics: monotonic where it must be, rooflines where they bind.

use super::*;
use crate::catalogue::{Device, builtin};
use crate::workload::{Mla, ModelDims};
use loam_ir::types::{Engine, KvCache, Mlp, ServePrecision};

fn device(id: &str) -> Device {
    builtin().device(id).cloned().unwrap()
}

fn llama_70b() -> ModelDims {
    ModelDims::dense(80, 8192, 28672, 64, 8, 128_256, 4096, Mlp::Swiglu)
}

fn llama_8b() -> ModelDims {
    ModelDims::dense(32, 4096, 14336, 32, 8, 128_256, 4096, Mlp::Swiglu)
}

fn served(dims: ModelDims, precision: ServePrecision) -> ServedModel {
    ServedModel::new(dims, precision, precision.default_kv_cache(), Engine::Vllm)
}

fn shape(device: &Device, tensor: u32) -> ReplicaShape<'_> {
    ReplicaShape {
        device,
        tensor,
        pipeline: 1,
        expert: 1,
        max_batch: 256,
        max_model_len: 8192,
        devices_per_node: 8,
        scale_out_bandwidth: 50e9,
        efficiency: 1.0,
    }
}

#[test]
fn decode_at_batch_one_reads_the_weights_once() {
    let h100 = device("H100_SXM");
    let model = served(llama_8b(), ServePrecision::Bf16);
    let s = shape(&h100, 1);
    let step = decode_step_s(&model, &s, 1.0, 512.0);
    let weights = model.params * 2.0 / h100.memory_bandwidth;
    // Bandwidth-bound: at least the weights over the bandwidth, and within the engine's
    // efficiency and per-block overhead of it.
    assert!(step >= weights, "{step} < {weights}");
    assert!(step < 3.0 * weights, "{step} vs {weights}");
}

#[test]
fn decode_steps_grow_with_batch_and_context_but_per_token_cost_falls() {
    let h100 = device("H100_SXM");
    let model = served(llama_70b(), ServePrecision::Fp8);
    let s = shape(&h100, 4);
    let mut last = 0.0;
    let mut last_per_token = f64::INFINITY;
    for b in [1.0, 2.0, 8.0, 32.0, 128.0, 512.0] {
        let step = decode_step_s(&model, &s, b, 2048.0);
        assert!(step >= last, "batch {b}: {step} < {last}");
        assert!(step / b <= last_per_token, "batch {b}");
        last = step;
        last_per_token = step / b;
    }
    assert!(decode_step_s(&model, &s, 64.0, 8192.0) > decode_step_s(&model, &s, 64.0, 512.0));
}

#[test]
fn large_batches_become_compute_bound() {
    let h100 = device("H100_SXM");
    let model = served(llama_8b(), ServePrecision::Bf16);
    let s = shape(&h100, 1);
    let small = decode_step_s(&model, &s, 1.0, 16.0);
    let huge = decode_step_s(&model, &s, 4096.0, 16.0);
    let compute = 2.0 * model.active_params * 4096.0 / 989.4e12;
    assert!(huge > compute, "{huge} vs {compute}");
    assert!(huge > 5.0 * small);
}

#[test]
fn prefill_attention_is_quadratic_in_the_prompt() {
    let h100 = device("H100_SXM");
    let model = served(llama_8b(), ServePrecision::Bf16);
    let s = shape(&h100, 1);
    // Per prompt token, a 32k prompt costs more than an 8k one (attention), and both more
    // than the linear layers alone.
    let short = prefill_s(&model, &s, 8192.0, 8192.0) / 8192.0;
    let long = prefill_s(&model, &s, 32768.0, 32768.0) / 32768.0;
    assert!(long > 1.2 * short, "{long} vs {short}");
}

#[test]
fn fp8_halves_the_weights_and_fp4_quarters_them() {
    let h100 = device("H100_SXM");
    let s = shape(&h100, 2);
    let bf16 = replica_memory(&served(llama_70b(), ServePrecision::Bf16), &s);
    let fp8 = replica_memory(&served(llama_70b(), ServePrecision::Fp8), &s);
    let fp4 = replica_memory(&served(llama_70b(), ServePrecision::Fp4), &s);
    assert!((fp8.weights_bytes / bf16.weights_bytes - 0.5).abs() < 1e-9);
    assert!(fp4.weights_bytes < 0.3 * bf16.weights_bytes);
    assert!(
        fp8.kv_tokens > 2.0 * bf16.kv_tokens,
        "fp8 weights and fp8 KV"
    );
}

#[test]
fn kv_capacity_is_the_free_memory_over_the_bytes_per_token() {
    let h200 = device("H200_SXM");
    let model = served(llama_8b(), ServePrecision::Bf16);
    let s = shape(&h200, 1);
    let m = replica_memory(&model, &s);
    // Llama 3 8B: 32 layers × 8 KV heads × 128 × 2 (K and V) × 2 bytes = 128 KiB per token.
    assert_eq!(kv_bytes_per_token(&model), 131_072.0);
    let expected = (h200.memory_bytes.value * 0.9 - m.weights_bytes - m.overhead_bytes) / 131_072.0;
    assert!((m.kv_tokens - expected).abs() < 1.0);
    assert!(m.fits);
    // Tensor parallelism over the 8 KV heads splits the cache: twice the tokens and more.
    let tp2 = replica_memory(&model, &shape(&h200, 2));
    assert!(tp2.kv_tokens > 2.0 * m.kv_tokens);
}

#[test]
fn mla_caches_a_latent_smaller_than_gqa() {
    let mut mla = llama_70b();
    mla.mla = Some(Mla {
        q_lora_rank: 1536,
        kv_lora_rank: 512,
        qk_nope_head_dim: 128,
        qk_rope_head_dim: 64,
        v_head_dim: 128,
    });
    let gqa = served(llama_70b(), ServePrecision::Bf16);
    let latent = ServedModel::new(mla, ServePrecision::Bf16, KvCache::Bf16, Engine::Sglang);
    assert!(kv_bytes_per_token(&latent) < 0.5 * kv_bytes_per_token(&gqa));
}

#[test]
fn sliding_windows_bound_the_context_read() {
    let mut dims = llama_8b();
    dims.sliding_window = Some(4096);
    let windowed = served(dims, ServePrecision::Bf16);
    let full = served(llama_8b(), ServePrecision::Bf16);
    assert_eq!(windowed.attended_context(65536.0), 4096.0);
    let h100 = device("H100_SXM");
    let s = shape(&h100, 1);
    assert!(decode_step_s(&windowed, &s, 32.0, 65536.0) < decode_step_s(&full, &s, 32.0, 65536.0));
}

#[test]
fn moe_decode_reads_more_experts_as_the_batch_grows() {
    let dims =
        ModelDims::dense(32, 4096, 14336, 32, 8, 32_000, 4096, Mlp::Swiglu).with_experts(8, 2);
    let model = served(dims, ServePrecision::Bf16);
    let h200 = device("H200_SXM");
    let s = shape(&h200, 2);
    let one = decode_step_s(&model, &s, 1.0, 256.0);
    let many = decode_step_s(&model, &s, 64.0, 256.0);
    let weights_all = model.params * 2.0 / 2.0 / h200.memory_bandwidth;
    assert!(one < weights_all, "batch 1 touches 2 of 8 experts");
    assert!(many > one);
}

#[test]
fn tensor_parallel_across_nodes_pays_the_network() {
    let h100 = device("H100_SXM");
    let model = served(llama_70b(), ServePrecision::Bf16);
    let inside = shape(&h100, 8);
    let mut across = shape(&h100, 8);
    across.devices_per_node = 4;
    assert!(
        decode_step_s(&model, &across, 64.0, 1024.0) > decode_step_s(&model, &inside, 64.0, 1024.0)
    );
}

#[test]
fn queueing_raises_latency_with_the_rate() {
    let h100 = device("H100_SXM");
    let model = served(llama_8b(), ServePrecision::Bf16);
    let s = shape(&h100, 1);
    let traffic = Traffic::fixed(1000.0, 200.0);
    let low = operating_point(&model, &s, &traffic, Load::Rate(1.0), 0.99);
    let high = operating_point(&model, &s, &traffic, Load::Rate(8.0), 0.99);
    assert!(low.stable && high.stable, "{high:?}");
    assert!(high.ttft_s >= low.ttft_s && high.tpot_p50_s > low.tpot_p50_s);
    assert!(low.ttft_s >= low.ttft_p50_s && low.tpot_s >= low.tpot_p50_s);
    let overload = operating_point(&model, &s, &traffic, Load::Rate(1e4), 0.99);
    assert!(!overload.stable);
    let offline = operating_point(&model, &s, &traffic, Load::Offline, 0.99);
    assert!(offline.output_tokens_per_s > high.output_tokens_per_s);
}

#[test]
fn disaggregation_moves_the_kv_cache_once() {
    let h100 = device("H100_SXM");
    let model = served(llama_70b(), ServePrecision::Fp8);
    let s = shape(&h100, 4);
    let traffic = Traffic::fixed(4000.0, 300.0);
    let slow = disaggregated_point(&model, &s, &s, 1, 1, &traffic, 0.5, 1e9, 0.99);
    let fast = disaggregated_point(&model, &s, &s, 1, 1, &traffic, 0.5, 100e9, 0.99);
    let bytes = 4000.0 * kv_bytes_per_token(&model);
    assert!((slow.ttft_s - fast.ttft_s - (bytes / 1e9 - bytes / 100e9)).abs() < 1e-9);
}

#[test]
fn the_wait_quantile_is_zero_below_the_share_that_waits() {
    assert_eq!(wait_quantile_s(0.3, 1.0, 0.5), 0.0);
    assert!(wait_quantile_s(0.9, 1.0, 0.99) > wait_quantile_s(0.9, 1.0, 0.5));
    assert!(wait_quantile_s(1.0, 1.0, 0.5).is_infinite());
}

#[test]
fn decode_reads_the_kv_cache_after_the_weight_gemms_even_when_they_are_compute_bound() {
    // Llama 3 8B in bf16 on one H100, 1,024 sequences. The weight GEMMs are compute-bound:
    // 2 × 8.0e9 × 1,024 = 1.6e13 FLOP at 989.4 TFLOP/s × 0.803 × 0.82 = 651.5 TFLOP/s is
    // 25 ms, against 16 GB of weights at 3.35 TB/s × 0.86 = 2.88 TB/s, 5.6 ms. The attention
    // kernel then reads each sequence's cache: 131,072 B per token (32 layers × 2 × 8 heads ×
    // 128 × 2 B); its FLOPs, 4 × 32 × 4,096 × 128 × 1,024 = 6.9e10 per 128 tokens of context
    // at 989.4 × 0.35 × 0.82 = 284 TFLOP/s (0.24 ms), stay below the read. So 128 more tokens
    // of context add 1,024 × 128 × 131,072 B = 17.2 GB over 2.88 TB/s = 5.96 ms, although the
    // weight GEMMs alone take longer than the weights and the KV cache together take to read.
    let d = device("H100_SXM");
    let s = shape(&d, 1);
    let model = served(llama_8b(), ServePrecision::Bf16);
    let short = decode_step_s(&model, &s, 1024.0, 128.0);
    let long = decode_step_s(&model, &s, 1024.0, 256.0);
    let read = 3.35e12 * ServeFitted::SHIPPED.bandwidth_share;
    let expected = 1024.0 * 128.0 * 131_072.0 / read;
    assert!(
        ((long - short) - expected).abs() < 1e-6,
        "{} vs {expected}",
        long - short
    );
    assert!((expected - 5.96e-3).abs() < 0.05e-3, "{expected}");
}

#[test]
fn prefill_attention_runs_at_the_flash_attention_rate() {
    // Llama 3 8B on one H100, one chunk of 8,192 prompt tokens: the GEMMs are the same for
    // prompts of 1,024 and 8,192 tokens, the attention grows with the context each token sees:
    // 2 × 32 layers × 4,096 × (8,192 − 1,024) × 8,192 tokens = 1.54e13 FLOP at the catalogue's
    // flash-attention forward share, 989.4 TFLOP/s × 0.35 × 0.82 = 284 TFLOP/s: 54.2 ms.
    let d = device("H100_SXM");
    let s = shape(&d, 1);
    let model = served(llama_8b(), ServePrecision::Bf16);
    let short = prefill_s(&model, &s, 8192.0, 1024.0);
    let long = prefill_s(&model, &s, 8192.0, 8192.0);
    let rate = 989.4e12 * 0.35 * ServeFitted::SHIPPED.gemm_share;
    let expected = 2.0 * 32.0 * 4096.0 * 7168.0 * 8192.0 / rate;
    assert!(
        ((long - short) - expected).abs() < 1e-6,
        "{} vs {expected}",
        long - short
    );
    assert!((expected - 54.2e-3).abs() < 0.1e-3, "{expected}");
}

#[test]
fn fp4_gemms_run_at_the_measured_share_of_the_fp4_peak() {
    // Llama 3 70B in fp4 on one B200, prefilling 8,192 more prompt tokens of 128-token
    // prompts: compute-bound (39 GB of weights read in 5.7 ms against 0.34 s of GEMMs), so
    // the extra time is 8,192 × 2 × active / (9,000 TFLOP/s × 0.46 × 0.82) for the GEMMs plus
    // 8,192 × 2 × 80 × 8,192 × 128 / (2,250 TFLOP/s × 0.35 × 0.82) for the attention. The
    // former rule, the fp4 peak at the fp8 GEMM efficiency (9,000 × 0.763 = 6,867 TFLOP/s),
    // made these GEMMs 40 % shorter than the measured NVFP4 share does (4,140 TFLOP/s).
    let d = device("B200");
    let s = shape(&d, 1);
    let model = served(llama_70b(), ServePrecision::Fp4);
    let one = prefill_s(&model, &s, 8192.0, 128.0);
    let two = prefill_s(&model, &s, 16384.0, 128.0);
    let share = ServeFitted::SHIPPED.gemm_share;
    let gemm = 8192.0 * 2.0 * model.active_params / (9000e12 * FP4_GEMM_SHARE * share);
    let attention = 8192.0 * 2.0 * 80.0 * 8192.0 * 128.0 / (2250e12 * 0.35 * share);
    assert!(
        ((two - one) - (gemm + attention)).abs() < 1e-6,
        "{} vs {}",
        two - one,
        gemm + attention
    );
}
