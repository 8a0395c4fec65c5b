//! Partial recomputation (Megatron's block method): which blocks a rank replays, and the
//! memory it then holds, derived by hand.

use super::*;
use loam_ir::types::{Mlp, Optimizer, Precision, Recompute};

/// Llama 3.1 405B (Meta's model card dimensions).
fn llama31_405b() -> ModelDims {
    ModelDims::dense(126, 16384, 53248, 128, 8, 128_256, 8192, Mlp::Swiglu)
}

fn setup() -> TrainSetup {
    TrainSetup {
        global_batch: 2048,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 0.0,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: StateOverrides::NONE,
    }
}

fn full(per_chunk: Option<u32>, virtual_stages: u32) -> Layout {
    Layout {
        tensor: 8,
        pipeline: 11,
        data: 4,
        zero: 1,
        virtual_stages,
        recompute: Recompute::Full,
        recompute_layers: per_chunk,
        sequence_parallel: true,
        ..Layout::single()
    }
}

#[test]
fn the_first_blocks_of_each_chunk_are_replayed() {
    // Megatron's block method replays layers `l < recompute_num_layers` of every model chunk:
    // 3 per chunk on a rank of 4 chunks of 5 blocks is 12 of its 20 blocks; 6 per chunk is all 20.
    assert_eq!(full(Some(3), 4).recomputed_blocks(20.0), 12.0);
    assert_eq!(full(Some(6), 4).recomputed_blocks(20.0), 20.0);
    // Plain full recomputation replays every block; selective and none replay no block whole.
    assert_eq!(full(None, 4).recomputed_blocks(20.0), 20.0);
    let selective = Layout {
        recompute: Recompute::Selective,
        ..full(Some(3), 4)
    };
    assert_eq!(selective.recomputed_blocks(20.0), 0.0);
    // The share for a rank of the mean size: 126 blocks over 11 stages are 11.45 per rank, of
    // which 2 per chunk × 1 chunk are replayed.
    let share = full(Some(2), 1).recomputed_share(126);
    assert!((share - 2.0 / (126.0 / 11.0)).abs() < 1e-12, "{share}");
}

#[test]
fn a_rank_keeps_the_inputs_of_replayed_blocks_and_everything_of_the_others() {
    // The first rank of an 11-stage pipeline of Llama 3.1 405B with 15 blocks and the embedding,
    // TP8 with sequence parallelism, micro-batch 1, 11 micro-batches in flight (1F1B).
    // Per token, a block kept whole stashes h·8/8 replicated bytes plus (4h + 4·kv + 6·ffn)/8:
    // 65,024 bytes, so 65,024 · 8,192 = 532,676,608 bytes a micro-batch. A replayed block keeps
    // its input, 2 bytes · h / 8 per token: 4,096 · 8,192 = 33,554,432 bytes.
    // With 5 blocks replayed (5 per chunk, one chunk): one micro-batch holds
    // 5 · 33,554,432 + 10 · 532,676,608 = 5,494,538,240 bytes; 11 are in flight, and the block
    // being replayed holds its whole stash once more: 11 · 5,494,538,240 + 532,676,608
    // = 60,972,597,248 bytes.
    let (m, setup) = (llama31_405b(), setup());
    let layout = full(Some(5), 1);
    let holding = StageHolding {
        blocks: 15.0,
        embedding: true,
        head: false,
        in_flight: layout.in_flight(0, layout.micro_batches(2048)),
    };
    assert_eq!(holding.in_flight, 11.0);
    let partial = stage_memory(&m, &setup, &layout, &holding);
    assert_eq!(
        partial.activations + partial.pipeline_stash,
        60_972_597_248.0
    );
    // Every block replayed: 11 · 15 · 33,554,432 + 532,676,608 = 5,536,481,280 + 532,676,608
    // = 6,069,157,888 bytes.
    let every = stage_memory(&m, &setup, &full(None, 1), &holding);
    assert_eq!(every.activations + every.pipeline_stash, 6_069_157_888.0);
    // No block replayed: 11 · 15 · 532,676,608 = 87,891,640,320 bytes, no working set.
    let none = Layout {
        recompute: Recompute::None,
        recompute_layers: None,
        ..layout
    };
    let kept = stage_memory(&m, &setup, &none, &holding);
    assert_eq!(kept.activations + kept.pipeline_stash, 87_891_640_320.0);
    // The model states do not depend on recomputation.
    assert_eq!(partial.weights, kept.weights);
    assert_eq!(partial.optimizer, every.optimizer);
}

#[test]
fn memory_falls_as_more_blocks_are_replayed() {
    let (m, setup) = (llama31_405b(), setup());
    let holding = StageHolding {
        blocks: 12.0,
        embedding: false,
        head: true,
        in_flight: 7.0,
    };
    let mut last = f64::INFINITY;
    for k in 1..=12 {
        let mem = stage_memory(&m, &setup, &full(Some(k), 1), &holding).total;
        assert!(mem < last, "{k} blocks per chunk: {mem} after {last}");
        last = mem;
    }
    // Replaying all 12 is plain full recomputation.
    let every = stage_memory(&m, &setup, &full(None, 1), &holding).total;
    assert_eq!(last, every);
}
