//! The stage times the Plan IR carries ([`stage_seconds`]) against the step they pace and
//! against the forward/backward split derived by hand.

use super::tests::llama70b;
use super::*;
use loam_ir::types::Recompute;

/// An H100 cluster of 16 nodes with 3.2 Tb/s of NICs each: the cost model's test cluster.
fn cluster() -> ClusterFigures {
    super::tests::cluster("H100_SXM", 16, 3200.0)
}

fn setup(batch: u32) -> TrainSetup {
    super::tests::setup(batch, Precision::Bf16)
}

fn pipeline_of_four(recompute: Recompute, virtual_stages: u32) -> Layout {
    Layout {
        tensor: 8,
        pipeline: 4,
        data: 4,
        virtual_stages,
        recompute,
        sequence_parallel: true,
        ..Layout::single()
    }
}

#[test]
fn the_slowest_stage_paces_the_step() {
    // Four ranks of 20 blocks: the last holds the head, more than the first's embedding, so it
    // paces the step, and it sends nothing on. m of its micro-batches are the step's compute and
    // tensor communication as `estimate` breaks them down.
    let (model, c, s) = (llama70b(), cluster(), setup(128));
    let m = 128.0 / 4.0;
    for recompute in [Recompute::None, Recompute::Selective, Recompute::Full] {
        let layout = pipeline_of_four(recompute, 1);
        let e = estimate(&model, &s, &layout, &c).unwrap();
        let last = stage_seconds(&model, &s, &layout, &c, 20, false, true).unwrap();
        let steady = e.breakdown.compute + e.breakdown.tensor_comm;
        assert!(
            (m * last.seconds / steady - 1.0).abs() < 1e-12,
            "{recompute:?}: {} × {m} against {steady}",
            last.seconds
        );
        assert!((m * last.tensor_comm / e.breakdown.tensor_comm - 1.0).abs() < 1e-12);
        assert!(last.forward < last.seconds && last.tensor_comm < last.seconds);
    }
}

#[test]
fn a_stage_that_sends_on_carries_the_send_both_ways() {
    // The same 20 blocks with no pipeline send nothing; on a middle rank of four they send a
    // micro-batch's activations, `1 × 8192 tokens × 8192 × 2 bytes / 8` under sequence
    // parallelism, to a rank `8 × 4 = 32` places away, over the node's NICs (400 GB/s shared
    // by 8 devices at the links' efficiency, 5 µs latency), and receive their gradients back:
    // twice that. Half of it, the activations, is the forward's.
    let (model, c, s) = (llama70b(), cluster(), setup(128));
    let middle = pipeline_of_four(Recompute::Selective, 1);
    let alone = Layout {
        pipeline: 1,
        data: 16,
        ..middle
    };
    let sending = stage_seconds(&model, &s, &middle, &c, 20, false, false).unwrap();
    let quiet = stage_seconds(&model, &s, &alone, &c, 20, false, false).unwrap();
    let bytes = 8192.0 * 8192.0 * 2.0 / 8.0;
    let one_way = bytes / (400e9 * LINK_EFFICIENCY / 8.0) + 5e-6;
    let send = sending.seconds - quiet.seconds;
    assert!(
        (send / (2.0 * one_way) - 1.0).abs() < 1e-9,
        "{send} against {one_way}"
    );
    let forward_send = sending.forward - quiet.forward;
    assert!((forward_send / one_way - 1.0).abs() < 1e-9);
    // The rank with the embedding sends too; the last, with the head, does not.
    let first = stage_seconds(&model, &s, &middle, &c, 20, true, false).unwrap();
    assert!(first.seconds > sending.seconds);
}

#[test]
fn the_forward_is_a_third_of_a_block_and_a_quarter_under_full_recomputation() {
    // By hand: a block's GEMMs run their forward once and twice in the backward (input and
    // weight gradients); flash attention's backward is 2.5 forwards at a rate of its own; the
    // element-wise work is a third forward. So the forward is about a third of a kept block,
    // and with the forward replayed in the backward about a quarter. One rank, no tensor
    // parallelism, no pipeline: nothing else in the stage.
    let (model, c, s) = (llama70b(), cluster(), setup(64));
    let share = |recompute| {
        let layout = Layout {
            recompute,
            data: 8,
            zero: 3,
            ..Layout::single()
        };
        let t = stage_seconds(&model, &s, &layout, &c, 1, false, false).unwrap();
        assert_eq!(t.tensor_comm, 0.0);
        t.forward / t.seconds
    };
    let plain = share(Recompute::None);
    assert!((0.28..=0.34).contains(&plain), "no recomputation: {plain}");
    let full = share(Recompute::Full);
    assert!((0.22..=0.26).contains(&full), "full recomputation: {full}");
    // Selective replays the attention core only: between the two.
    let selective = share(Recompute::Selective);
    assert!(full < selective && selective < plain, "{selective}");
}

#[test]
fn interleaved_chunks_add_up_to_their_rank() {
    // A rank of 20 blocks in two chunks of 10: each chunk costs half the rank's blocks and
    // sends its own activations on, so the two chunks are the rank plus one more send. The
    // head's chunk sends nothing: with the head, one chunk of 10 and one of 10 plus the head
    // are the rank of 20 with the head plus one send.
    let (model, c, s) = (llama70b(), cluster(), setup(128));
    let time = |layout: &Layout, blocks: u64, head: bool| {
        stage_seconds(&model, &s, layout, &c, blocks, false, head).unwrap()
    };
    let (whole, chunks) = (
        pipeline_of_four(Recompute::Selective, 1),
        pipeline_of_four(Recompute::Selective, 2),
    );
    let (rank, rank_head) = (time(&whole, 20, false), time(&whole, 20, true));
    let (chunk, chunk_head) = (time(&chunks, 10, false), time(&chunks, 10, true));
    let one_send = 2.0 * chunk.seconds - rank.seconds;
    assert!(one_send > 0.0);
    let with_head = chunk.seconds + chunk_head.seconds;
    assert!(
        (with_head - rank_head.seconds - one_send).abs() < 1e-12 * rank_head.seconds,
        "{with_head} against {} + {one_send}",
        rank_head.seconds
    );
}

#[test]
fn overlapped_tensor_collectives_expose_one_chunk_and_the_contention_of_the_rest() {
    // Llama 70B at tensor degree 8 with sequence parallelism and no recomputation, a rank of 20
    // blocks that neither embeds nor ends the model. Blocking, each block's four collectives
    // are its tensor communication. Overlapped, each pass's collectives run in eight chunks
    // beside that pass's tensor-split GEMMs, which on this shape outlast them (checked below):
    // one chunk stays exposed and the other seven slow the GEMMs by the contention, so the
    // communication is 1/8 + contention × 7/8 of the blocking one, and nothing else changes.
    let (model, c, s) = (llama70b(), cluster(), setup(128));
    let blocking = Layout {
        tensor: 8,
        data: 16,
        sequence_parallel: true,
        ..Layout::single()
    };
    let overlapped = Layout {
        tensor_overlap: true,
        ..blocking
    };
    let off = stage_seconds(&model, &s, &blocking, &c, 20, false, false).unwrap();
    let on = stage_seconds(&model, &s, &overlapped, &c, 20, false, false).unwrap();
    let contention = c.fitted.overlap_contention;
    let share = 1.0 / 8.0 + contention * 7.0 / 8.0;
    assert!(
        (on.tensor_comm / off.tensor_comm - share).abs() < 1e-12,
        "{} of {} against {share}",
        on.tensor_comm,
        off.tensor_comm
    );
    assert!(((off.seconds - on.seconds) - (off.tensor_comm - on.tensor_comm)).abs() < 1e-12);
    // The forward pass runs half of the collectives, and saves half of it.
    let forward_saving = off.forward - on.forward;
    assert!((forward_saving / (off.tensor_comm - on.tensor_comm) - 0.5).abs() < 1e-12);
    // The regime the share holds in: each pass's collectives are shorter than its GEMMs.
    let rates = super::compute::Rates::new(&c, s.precision).unwrap();
    let block = super::compute::block_time(&model, &blocking, &rates, s.flash_attention);
    let per_pass = off.tensor_comm / 20.0 / 2.0;
    assert!(per_pass < block.tensor_gemm_forward, "{per_pass} {block:?}");
    assert!(per_pass < block.tensor_gemm_backward);
    // Without tensor parallelism there is nothing to overlap.
    let alone = Layout {
        tensor: 1,
        data: 128,
        sequence_parallel: false,
        ..Layout::single()
    };
    let a = stage_seconds(&model, &s, &alone, &c, 20, false, false).unwrap();
    assert_eq!(a.tensor_comm, 0.0);
}
