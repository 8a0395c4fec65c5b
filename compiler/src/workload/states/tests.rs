//! The state recipes against the frameworks' own tables and the figures, each worked out
//! by hand.

use super::*;
use crate::workload::{
    Layout, Mla, ModelDims, StageHolding, StageStates, model_state_bytes, param_count,
};
use loam_ir::types::{Mlp, Optimizer, Precision, StateFormat};

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

fn setup(precision: Precision, states: StateOverrides) -> TrainSetup {
    TrainSetup {
        global_batch: 1024,
        precision,
        optimizer: Optimizer::Adamw,
        tokens: 1e12,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states,
    }
}

/// Bytes per parameter of `recipe` under ZeRO `zero` over `d` ranks.
fn per_param(recipe: &StateRecipe, zero: u8, d: f64) -> f64 {
    let (w, g, o) = model_state_bytes(1.0, zero, d, recipe, Optimizer::Adamw);
    w + g + o
}

#[test]
fn megatron_recipes_match_the_distributed_optimizer_table() {
    // Megatron-LM docs/api-guide/dist_optimizer.md, bytes per parameter, d = 8:
    // bf16 params, fp32 grads: 18 plain, 6 + 12/8 = 7.5 distributed; fp8 parameters
    // (`fp8_param_gather`) save one byte: 17 and 6.5;
    // fp16 params, fp16 grads: 20 plain, 4 + 16/8 = 6;
    // fp32 params, fp32 grads: 16 plain, 8 + 8/8 = 9.
    for (precision, plain, distributed) in [
        (Precision::Bf16, 18.0, 7.5),
        (Precision::Fp8, 17.0, 6.5),
        (Precision::Fp16, 20.0, 6.0),
        (Precision::Fp32, 16.0, 9.0),
    ] {
        let r = StateRecipe::megatron(precision);
        assert_eq!(per_param(&r, 0, 8.0), plain, "{precision}");
        assert_eq!(per_param(&r, 1, 8.0), distributed, "{precision}");
    }
    // bf16 gradients are accumulated and all-reduced in fp32 (Megatron's arguments.py).
    assert_eq!(
        StateRecipe::megatron(Precision::Bf16).reduced_gradients,
        4.0
    );
    assert_eq!(
        StateRecipe::megatron(Precision::Fp16).reduced_gradients,
        2.0
    );
}

#[test]
fn deepspeed_recipe_reproduces_the_zero_paper_7_5b_on_64_ranks() {
    // Rajbhandari et al. Fig. 1: Ψ = 7.5B, N_d = 64, K = 12: stage 0 (2+2+12)·7.5 = 120 GB,
    // stage 1 4·7.5 + 12·7.5/64 = 31.4 GB, stage 2 2·7.5 + 14·7.5/64 = 16.6 GB,
    // stage 3 16·7.5/64 = 1.9 GB.
    let recipe = StateRecipe::deepspeed(Precision::Bf16);
    for (zero, gb) in [120.0, 31.4, 16.6, 1.9].into_iter().enumerate() {
        let (w, g, o) = model_state_bytes(7.5e9, zero as u8, 64.0, &recipe, Optimizer::Adamw);
        let total = (w + g + o) / 1e9;
        assert!(
            (total - gb).abs() < 0.05,
            "stage {zero}: {total} GB vs {gb}"
        );
    }
    assert_eq!(recipe.reduced_gradients, 2.0);
}

#[test]
fn fsdp_shards_sixteen_bytes_and_keeps_the_gathered_copy_under_shard_grad_op() {
    // FULL_SHARD: fp32 shard (4) + fp32 gradient shard (4) + fp32 m, v (8) = 16/N: 2 bytes per
    // parameter over 8 ranks. SHARD_GRAD_OP: the bf16 parameters stay gathered (2, whole) and
    // the fp32 shard is the master: 2 + (4 + 4 + 8)/8 = 4.
    assert_eq!(
        per_param(&StateRecipe::fsdp(Precision::Bf16, 3), 3, 8.0),
        2.0
    );
    assert_eq!(
        per_param(&StateRecipe::fsdp(Precision::Bf16, 2), 2, 8.0),
        4.0
    );
    assert_eq!(StateRecipe::fsdp(Precision::Bf16, 3).reduced_gradients, 4.0);
}

#[test]
fn the_default_framework_follows_the_zero_stage() {
    let s = setup(Precision::Bf16, StateOverrides::NONE);
    assert_eq!(
        StateRecipe::for_setup(&s, 0).framework,
        Framework::MegatronCore
    );
    assert_eq!(
        StateRecipe::for_setup(&s, 1).framework,
        Framework::MegatronCore
    );
    assert_eq!(StateRecipe::for_setup(&s, 2).framework, Framework::Fsdp);
    assert_eq!(StateRecipe::for_setup(&s, 3).framework, Framework::Fsdp);
}

#[test]
fn the_reduced_gradient_format_does_not_depend_on_the_zero_stage() {
    // The step time reads one reduce format per job (`reduced_gradient_bytes`), so every recipe
    // loam picks must reduce the same way at every stage, overrides included.
    let formats = [None, Some(StateFormat::Fp32), Some(StateFormat::Bf16)];
    for precision in Precision::ALL {
        for gradients in formats {
            for moments in formats {
                let states = StateOverrides {
                    gradients,
                    moments,
                    ..StateOverrides::NONE
                };
                let s = setup(*precision, states);
                let at0 = StateRecipe::reduced_gradient_bytes(&s);
                for zero in 0..=3 {
                    assert_eq!(
                        StateRecipe::for_setup(&s, zero).reduced_gradients,
                        at0,
                        "{precision} {states:?} ZeRO-{zero}"
                    );
                }
            }
        }
    }
}

#[test]
fn overrides_replace_the_recipe_formats() {
    // bf16 gradients under Megatron-Core: 2 + 2 + 12 = 16 bytes, DeepSpeed's figure; bf16 moments
    // drop 4 of the 12 optimizer bytes.
    let s = setup(
        Precision::Bf16,
        StateOverrides {
            gradients: Some(StateFormat::Bf16),
            moments: Some(StateFormat::Bf16),
            ..StateOverrides::NONE
        },
    );
    let r = StateRecipe::for_setup(&s, 1);
    assert_eq!((r.gradients, r.reduced_gradients), (2.0, 2.0));
    assert_eq!(r.optimizer_bytes(Optimizer::Adamw), 4.0 + 2.0 * 2.0);
    // A master format where FSDP's fp32 shard is the master sets the shard's format.
    let bf16_master = StateOverrides {
        master_weights: Some(StateFormat::Bf16),
        ..StateOverrides::NONE
    };
    let fsdp = StateRecipe::for_setup(&setup(Precision::Bf16, bf16_master), 3);
    assert_eq!((fsdp.weights, fsdp.master), (2.0, 0.0));
}

#[test]
fn fsdp_gathers_two_blocks_of_weights_one_of_gradients_and_one_reduce_input() {
    // One Llama 3.1 8B block on one device, TP1: attention 4096·(4096 + 2·1024 + 4096) = 41.9M,
    // SwiGLU 3·4096·14336 = 176.2M, 218.1M in all. bf16: 2 + 2 bytes of weights (running and
    // prefetched blocks), 2 of gradients, 4 of the fp32 reduce-scatter input = 10 bytes each.
    let block = 4096.0 * (4096.0 + 2.0 * 1024.0 + 4096.0) + 3.0 * 4096.0 * 14336.0;
    let fsdp = StateRecipe::fsdp(Precision::Bf16, 3);
    assert!(rel(fsdp.gathered_bytes(block, Precision::Bf16), 10.0 * block) < 1e-12);
    // DeepSpeed holds the sub-module it runs plus a 5e7-element prefetch bucket, at most 1e9
    // live, and a 5e8-element bf16 gradient bucket: (218.1M + 50M)·2 + 5e8·2 = 1.536 GB.
    let ds = StateRecipe::deepspeed(Precision::Bf16);
    let expect = (block + 5e7) * 2.0 + 5e8 * 2.0;
    assert!(rel(ds.gathered_bytes(block, Precision::Bf16), expect) < 1e-12);
    assert!(rel(expect, 1.536e9) < 1e-3);
    // A 2B-parameter share is capped by the live limit: 1e9·2 + 1e9 = 3 GB.
    assert!(rel(ds.gathered_bytes(2e9, Precision::Bf16), 3e9) < 1e-12);
}

/// DeepSeek-V3 (`config.json`), as `workload::frontier_tests` writes it.
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

#[test]
fn deepseek_v3_states_under_its_fp8_recipe_are_1_8_gb_above_16_bit_gradients() {
    // examples/deepseek-v3-pretrain.loam: TP1 PP16 DP128 EP64, ZeRO-1; a middle rank holds 4 MoE
    // blocks. Per block on one device: MLA 7168·1536 + 1536·128·192 + 7168·576 + 512·128·256 +
    // 128·128·7168 = 187.1M, shared expert 3·7168·2048 = 44.0M, router 7168·256 = 1.8M (dense,
    // sharded over 128 data ranks), and 256/64 = 4 routed experts of 44.0M = 176.2M (sharded
    // over 2048/(16·64) = 2 expert-data ranks). 4 blocks: 932M dense, 705M routed.
    // 16-bit gradients (loam's figure before the recipes): 2 + 2 bytes, 12/N optimizer.
    // DeepSeek's recipe (fp32 gradients and master, bf16 moments): 2 + 4 bytes, 8/N optimizer.
    // Difference: 2·1637M − 4·(932M/128 + 705M/2) = 3.274 − 1.439 = 1.835 GB.
    let model = deepseek_v3();
    let layout = Layout {
        pipeline: 16,
        data: 128,
        expert: 64,
        zero: 1,
        ..Layout::single()
    };
    let holding = StageHolding {
        blocks: 4.0,
        embedding: false,
        head: false,
        in_flight: 1.0,
    };
    let count = param_count(&model);
    let states_of = |states: StateOverrides| {
        let s = setup(Precision::Fp8, states);
        let [_, zero1, ..] = StageStates::new(&model, &count, &s, &layout).bytes_by_zero(&holding);
        zero1.iter().sum::<f64>()
    };
    let sixteen_bit = states_of(StateOverrides {
        gradients: Some(StateFormat::Bf16),
        ..StateOverrides::NONE
    });
    let deepseek = states_of(StateOverrides {
        moments: Some(StateFormat::Bf16),
        ..StateOverrides::NONE
    });
    let delta = deepseek - sixteen_bit;
    assert!(rel(delta, 1.835e9) < 0.02, "{delta}");
    // The named recipe has Megatron-Core's fp8 gradients and master with bf16 moments, and
    // 16-bit weights (the report states no fp8 weight copy).
    let named = StateRecipe::DEEPSEEK_V3_FP8;
    let overridden = StateRecipe::for_setup(
        &setup(
            Precision::Fp8,
            StateOverrides {
                moments: Some(StateFormat::Bf16),
                ..StateOverrides::NONE
            },
        ),
        1,
    );
    assert_eq!(
        (named.gradients, named.master, named.moment, named.weights),
        (
            overridden.gradients,
            overridden.master,
            overridden.moment,
            2.0
        )
    );
}
