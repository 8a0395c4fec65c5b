//! The search's partial recomputation: the fewest blocks per chunk that fit, between selective
//! and full recomputation, and the time it costs.

use super::tests::{h100s, llama405b, setup};
use super::*;
use crate::cost::{estimate, usable_memory};
use crate::workload::memory_per_device;
use loam_ir::types::{Mlp, Recompute, SplitRule};

/// Meta's 405B degrees (TP8 PP16 DP128, interleaved over 4 chunks, ZeRO-1), recomputation left
/// to the search.
fn meta_degrees() -> Pins {
    Pins {
        tensor: Some(8),
        pipeline: Some(16),
        data: Some(128),
        context: Some(1),
        virtual_stages: Some(4),
        micro_batch: Some(1),
        zero: Some(1),
        pipeline_split: Some(SplitRule::EmbeddingAndLoss),
        ..Pins::default()
    }
}

#[test]
fn the_search_replays_the_fewest_blocks_per_chunk_that_fit() {
    let (model, train, cluster) = (llama405b(), setup(2048), h100s(2048));
    let usable = usable_memory(&cluster.device);
    let mut partial = 0;
    for (virtual_stages, micro_batch) in [(4, 1), (2, 1), (1, 1), (4, 2), (2, 2)] {
        let spec = SearchSpec {
            model: &model,
            setup: &train,
            cluster: &cluster,
            pins: Pins {
                virtual_stages: Some(virtual_stages),
                micro_batch: Some(micro_batch),
                ..meta_degrees()
            },
            max_devices: 16384,
            keep: 1,
        };
        let Some(best) = search(&spec, &|c: &Candidate| c.train_time_s).ranked.pop() else {
            continue;
        };
        let layout = best.layout;
        let Some(k) = layout.recompute_layers else {
            continue;
        };
        partial += 1;
        // It fits, and one block fewer per chunk (none at all for one) does not.
        assert_eq!(layout.recompute, Recompute::Full);
        assert!(memory_per_device(&model, &train, &layout).total <= usable);
        let one_fewer = if k > 1 {
            Layout {
                recompute_layers: Some(k - 1),
                ..layout
            }
        } else {
            Layout {
                recompute: Recompute::None,
                recompute_layers: None,
                ..layout
            }
        };
        assert!(
            memory_per_device(&model, &train, &one_fewer).total > usable,
            "VP{virtual_stages} mb{micro_batch}: {k} blocks per chunk is not the fewest"
        );
        // Replaying fewer blocks is faster than replaying them all.
        let every = Layout {
            recompute_layers: None,
            ..layout
        };
        let every = estimate(&model, &train, &every, &cluster).unwrap();
        assert!(best.estimate.step_time_s < every.step_time_s);
    }
    // Under ZeRO-1 the fp32 gradients stay whole (11.9 GiB a device): on these degrees no
    // recomputation overflows the H100, so most of the layouts replay some blocks, not all.
    assert!(partial >= 3, "{partial} layouts recompute partially");
}

#[test]
fn a_pinned_count_is_kept_and_refused_when_it_does_not_fit() {
    // Meta's degrees without interleaving and under ZeRO-0: rank 1 holds 8 blocks of
    // 3,187,703,808 parameters (h·(2h + 2·kv·128) + 3·h·ffn + 2h), 398.5M on each of 8 tensor
    // ranks, 3.19e9 in all, at 18 bytes (bf16 weights, fp32 gradients, fp32 master and two
    // moments): 57.4e9 bytes. 15 micro-batches are in flight on it (1F1B: p − 1 of 16).
    // One block replayed per chunk: 15 · (33.6M + 7 · 532.7M) + 532.7M = 57.0e9 bytes of
    // activations, 114e9 in all, far above an H100's 75.5 GiB (81e9): refused.
    // Every block replayed (8 per chunk): 15 · 8 · 33.6M + 532.7M = 4.56e9, 62e9 in all: fits.
    let (model, train, cluster) = (llama405b(), setup(2048), h100s(2048));
    let run = |recompute_layers: u32| {
        let spec = SearchSpec {
            model: &model,
            setup: &train,
            cluster: &cluster,
            pins: Pins {
                virtual_stages: Some(1),
                zero: Some(0),
                recompute: Some(Recompute::Full),
                recompute_layers: Some(recompute_layers),
                ..meta_degrees()
            },
            max_devices: 16384,
            keep: 1,
        };
        search(&spec, &|c: &Candidate| c.train_time_s)
    };
    let refused = run(1);
    assert!(refused.ranked.is_empty());
    assert!(
        refused
            .rejected
            .iter()
            .any(|r| matches!(r.reason, Rejection::OutOfMemory { .. }))
    );
    let kept = run(8);
    let layout = kept.ranked[0].layout;
    assert_eq!(
        (layout.recompute, layout.recompute_layers),
        (Recompute::Full, Some(8))
    );
    let gb = kept.ranked[0].estimate.memory_per_device_bytes / 1e9;
    assert!((61.0..63.0).contains(&gb), "{gb}");
}

#[test]
fn replaying_some_blocks_costs_their_share_of_full_recomputation() {
    // Llama 3 70B on 8 stages of 10 blocks each (80 layers, balanced): replaying 3 blocks of each
    // rank's one chunk adds 3/10 of what replaying all 10 adds to the compute — the forward of
    // the replayed blocks — on every rank alike.
    let model = ModelDims::dense(80, 8192, 28672, 64, 8, 128_256, 8192, Mlp::Swiglu);
    let (train, cluster) = (setup(1024), h100s(64));
    let base = Layout {
        tensor: 8,
        pipeline: 8,
        data: 8,
        zero: 1,
        sequence_parallel: true,
        ..Layout::single()
    }
    .with_split(80, SplitRule::Balanced);
    let with = |recompute: Recompute, recompute_layers: Option<u32>| {
        let layout = Layout {
            recompute,
            recompute_layers,
            ..base
        };
        estimate(&model, &train, &layout, &cluster)
            .unwrap()
            .breakdown
    };
    let none = with(Recompute::None, None);
    let partial = with(Recompute::Full, Some(3));
    let full = with(Recompute::Full, None);
    let share = (partial.compute - none.compute) / (full.compute - none.compute);
    assert!((share - 0.3).abs() < 1e-9, "{share}");
    // Its two tensor-parallel collectives a replayed block adds, likewise.
    let tp = (partial.tensor_comm - none.tensor_comm) / (full.tensor_comm - none.tensor_comm);
    assert!((tp - 0.3).abs() < 1e-9, "{tp}");
}
