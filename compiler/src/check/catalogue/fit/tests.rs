//! The memory pre-check against the planner's search: the same space, the same memory, the same
//! verdict.

use super::{Verdict, least_memory};
use crate::calibrate::tests::test_device;
use crate::cost::usable_memory;
use crate::hardware::ClusterFigures;
use crate::plan::search::{Bounds, Rejection, SearchSpec, search};
use crate::workload::Pins;
use crate::workload::{ModelDims, TrainSetup, memory_per_device};
use loam_ir::types::{Mlp, Optimizer, Precision, Recompute};
use proptest::prelude::*;

fn cluster(devices_per_node: u32, nodes: u32, memory_bytes: f64) -> ClusterFigures {
    let mut device = test_device("H100_SXM").unwrap();
    device.memory_bytes = memory_bytes;
    ClusterFigures {
        device,
        devices_per_node,
        nodes,
        node_network_bandwidth: 400e9,
        nics_per_node: 8,
        network_latency_s: 5e-6,
        block: None,
        fitted: crate::cost::FittedConstants::SHIPPED,
    }
}

fn setup(global_batch: u32, flash_attention: bool) -> TrainSetup {
    TrainSetup {
        global_batch,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 1e9,
        flash_attention,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    }
}

fn time(c: &crate::plan::search::Candidate) -> f64 {
    c.train_time_s
}

/// A small dense or MoE model: `heads` of width 64, `kv_heads` dividing them.
fn small_model(
    layers: u32,
    heads: u32,
    kv_pick: usize,
    ffn_factor: u32,
    seq_len: u32,
    experts: Option<u32>,
) -> ModelDims {
    let kv_choices: Vec<u32> = (1..=heads).filter(|g| heads.is_multiple_of(*g)).collect();
    let kv_heads = kv_choices[kv_pick % kv_choices.len()];
    let hidden = heads * 64;
    let model = ModelDims::dense(
        layers,
        hidden,
        hidden * ffn_factor,
        heads,
        kv_heads,
        32_000,
        seq_len,
        Mlp::Swiglu,
    );
    match experts {
        Some(e) => model.with_experts(e, 2),
        None => model,
    }
}

fn pins() -> impl Strategy<Value = Pins> {
    let p = |values: Vec<u32>| prop::option::weighted(0.15, prop::sample::select(values));
    (
        p(vec![1, 2, 3, 4]),
        p(vec![1, 2, 3, 4]),
        p(vec![1, 2, 4]),
        p(vec![1, 2, 4]),
        p(vec![1, 2]),
        p(vec![1, 2]),
        prop::option::weighted(0.25, 0u8..4),
        prop::option::weighted(
            0.25,
            prop::sample::select(vec![Recompute::None, Recompute::Selective, Recompute::Full]),
        ),
        prop::option::weighted(0.2, any::<bool>()),
        prop::option::weighted(0.2, 1u32..5),
    )
        .prop_map(
            |(
                tensor,
                pipeline,
                data,
                context,
                micro_batch,
                virtual_stages,
                zero,
                recompute,
                sequence_parallel,
                recompute_layers,
            )| Pins {
                tensor,
                pipeline,
                data,
                context,
                micro_batch,
                virtual_stages,
                zero,
                // Blocks replayed per chunk imply full recomputation, as a spec's pins read.
                recompute: recompute_layers.map(|_| Recompute::Full).or(recompute),
                recompute_layers,
                sequence_parallel,
                ..Pins::default()
            },
        )
}

proptest! {
    // 160 cases: 46 fit, 70 are refused for memory and 44 have no layout at all (pins or node
    // shapes that break a rule), counted when the test was written.
    #![proptest_config(ProptestConfig::with_cases(160))]

    /// The pre-check accepts exactly when the planner's search on the same node group finds a
    /// layout that fits; when it refuses, the least memory it reports is the memory of a layout
    /// of the space (by the one memory function) and the search's closest memory miss.
    #[test]
    fn the_pre_check_accepts_exactly_what_the_search_can_place(
        (layers, heads, kv_pick, ffn_factor) in (1u32..10, prop::sample::select(vec![1u32, 2, 4, 6, 8, 12, 16]), 0usize..8, 2u32..5),
        seq_len in prop::sample::select(vec![1024u32, 2048, 4096, 8192, 32_768, 131_072]),
        experts in prop::option::weighted(0.3, prop::sample::select(vec![4u32, 8])),
        (global_batch, flash) in (1u32..49, any::<bool>()),
        (devices_per_node, nodes, max_devices) in (prop::sample::select(vec![1u32, 2, 4, 8]), 1u32..5, 1u64..33),
        memory_log2 in 27u32..37,
        pins in pins(),
    ) {
        let model = small_model(layers, heads, kv_pick, ffn_factor, seq_len, experts);
        let setup = setup(global_batch, flash);
        let cluster = cluster(devices_per_node, nodes, (1u64 << memory_log2) as f64);
        let spec = SearchSpec { model: &model, setup: &setup, cluster: &cluster, pins, max_devices, keep: 1 };
        let usable = usable_memory(&cluster.device);
        let verdict = least_memory(&Bounds::of_search(&spec), &setup, usable);
        let result = search(&spec, &time);
        let closest_miss = result.rejected.iter().find_map(|r| match r.reason {
            Rejection::OutOfMemory { need_bytes, .. } => Some(need_bytes),
            _ => None,
        });
        match verdict {
            Verdict::Fits => prop_assert!(!result.ranked.is_empty(), "{:?}", result.rejected),
            Verdict::Short(layout, bytes) => {
                prop_assert!(result.ranked.is_empty(), "{:?}", result.ranked[0].layout);
                prop_assert!(bytes > usable);
                prop_assert_eq!(memory_per_device(&model, &setup, &layout).total, bytes);
                prop_assert_eq!(closest_miss, Some(bytes));
            }
            Verdict::NoLayout => {
                prop_assert!(result.ranked.is_empty());
                prop_assert_eq!(closest_miss, None);
            }
        }
    }
}
