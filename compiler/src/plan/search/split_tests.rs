//! Tests of uneven pipeline splits in the layout search: the layouts the largest published runs
//! used plan, fit in memory and cost the head on the last rank only.

use super::tests::llama405b;
use super::*;
use crate::calibrate::tests::test_device;
use crate::cost::usable_memory;
use loam_ir::types::{Mlp, Optimizer, Precision, Recompute, SplitRule};

fn h100s(nodes: u32) -> ClusterFigures {
    ClusterFigures {
        device: test_device("H100_SXM").unwrap(),
        devices_per_node: 8,
        nodes,
        node_network_bandwidth: 400e9,
        nics_per_node: 8,
        network_latency_s: 5e-6,
        block: None,
        fitted: crate::cost::FittedConstants::SHIPPED,
    }
}

fn setup(batch: u32) -> TrainSetup {
    TrainSetup {
        global_batch: batch,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 15e12,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    }
}

fn fastest(c: &Candidate) -> f64 {
    c.train_time_s
}

/// Meta's layout for Llama 3.1 405B on 16,384 H100: TP8 CP1 PP16 DP128, 126 blocks
/// (Llama 3 paper, Table 4; 16M-token batches of 8,192-token sequences).
fn meta_pins(recompute: Recompute) -> Pins {
    Pins {
        tensor: Some(8),
        pipeline: Some(16),
        data: Some(128),
        context: Some(1),
        micro_batch: Some(1),
        recompute: Some(recompute),
        ..Pins::default()
    }
}

#[test]
fn meta_405b_layout_plans_and_fits_on_80gb() {
    let model = llama405b();
    let train = setup(2048);
    let cluster = h100s(2048);
    for recompute in [Recompute::Full, Recompute::Selective] {
        let spec = SearchSpec {
            model: &model,
            setup: &train,
            cluster: &cluster,
            pins: meta_pins(recompute),
            max_devices: 16384,
            keep: 3,
        };
        let result = search(&spec, &fastest);
        let best = result
            .ranked
            .first()
            .unwrap_or_else(|| panic!("{recompute}: {:?}", result.rejected));
        assert_eq!(best.devices, 16384);
        let m = &best.estimate.memory;
        assert!(
            m.total <= usable_memory(&cluster.device),
            "{recompute}: {m:?}"
        );
        // 126 blocks on 16 ranks: the first and last hold 7, the middle ones 8.
        let split = best.layout.split;
        assert_eq!((split.first, split.last, split.max_blocks()), (7, 7, 8));
        // Meta measured 38–43 % MFU (about 151 tokens/s per GPU at 16K GPUs); loam predicts
        // 125 (full recomputation, eight chunks per rank) and 75 (selective, which fits only
        // without interleaving, so its bubble is 15/16 of a step's compute): an
        // under-prediction, not a refusal.
        let per_gpu = best.estimate.tokens_per_s_per_device;
        println!(
            "405B TP8 PP16 DP128 {recompute}: {:?} VP{} {per_gpu:.1} tokens/s/GPU, MFU {:.3}, {:.1} GiB ({:?})",
            split.rule,
            best.layout.virtual_stages,
            best.estimate.mfu,
            m.total / 1024f64.powi(3),
            m
        );
        assert!(
            (60.0..200.0).contains(&per_gpu),
            "{recompute}: {per_gpu} tokens/s per GPU"
        );
    }
}

#[test]
fn a_layer_count_that_no_degree_divides_plans_over_16_ranks() {
    // DeepSeek-V3's 61 blocks on PP16 (a dense stand-in of its width).
    let model = ModelDims::dense(61, 7168, 18432, 128, 128, 129_280, 4096, Mlp::Swiglu);
    let train = setup(1024);
    let cluster = h100s(256);
    let pins = Pins {
        pipeline: Some(16),
        ..Pins::default()
    };
    let spec = SearchSpec {
        model: &model,
        setup: &train,
        cluster: &cluster,
        pins,
        max_devices: 2048,
        keep: 1,
    };
    let result = search(&spec, &fastest);
    let best = result.ranked.first().expect("61 blocks plan over 16 ranks");
    assert_eq!(best.layout.pipeline, 16);
    assert!(best.layout.split.max_blocks() >= 4);
}

#[test]
fn the_head_is_charged_to_the_last_rank_only() {
    // Llama 3 8B's width with 31 blocks on 4 ranks: balanced (7, 8, 8, 8), the last rank paces the
    // step with its head, whose logits GEMM (`2·h·vocab` = 1.05 GFLOP per token) weighs about two
    // blocks. Counting the embedding and the head as layers, 33 units give (7, 8, 9, 7): the last
    // rank sheds a block to a middle one.
    let model = ModelDims::dense(31, 4096, 14336, 32, 8, 128_256, 8192, Mlp::Swiglu);
    let train = setup(512);
    let cluster = h100s(16);
    let pinned = |rule| Pins {
        tensor: Some(2),
        pipeline: Some(4),
        virtual_stages: Some(1),
        data: Some(16),
        micro_batch: Some(1),
        zero: Some(1),
        recompute: Some(Recompute::Selective),
        pipeline_split: Some(rule),
        ..Pins::default()
    };
    let step = |rule| {
        let spec = SearchSpec {
            model: &model,
            setup: &train,
            cluster: &cluster,
            pins: pinned(rule),
            max_devices: 128,
            keep: 1,
        };
        let r = search(&spec, &fastest);
        r.ranked.first().map(|c| c.estimate.step_time_s).unwrap()
    };
    let balanced = step(SplitRule::Balanced);
    let accounted = step(SplitRule::EmbeddingAndLoss);
    assert!(accounted < balanced, "{accounted} vs {balanced}");
    // The auto search tries both on an uneven split and picks the faster.
    let spec = SearchSpec {
        model: &model,
        setup: &train,
        cluster: &cluster,
        pins: Pins {
            pipeline_split: None,
            ..pinned(SplitRule::Balanced)
        },
        max_devices: 128,
        keep: 1,
    };
    let auto = search(&spec, &fastest);
    let chosen = auto.ranked.first().unwrap();
    assert_eq!(chosen.layout.split.rule, SplitRule::EmbeddingAndLoss);
    assert_eq!(chosen.estimate.step_time_s, accounted);
}
