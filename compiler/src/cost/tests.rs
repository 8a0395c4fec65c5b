//! Tests of the cost model's physics (not of its calibrated outputs).

use super::*;
use crate::calibrate::tests::test_device;
use crate::workload::ExpertDispatch;
use loam_ir::types::{Mlp, Optimizer, Recompute};

pub(super) fn cluster(device: &str, nodes: u32, nic_gbps: f64) -> ClusterFigures {
    ClusterFigures {
        device: test_device(device).unwrap(),
        devices_per_node: 8,
        nodes,
        node_network_bandwidth: nic_gbps * 1e9 / 8.0,
        nics_per_node: 8,
        network_latency_s: 5e-6,
        block: None,
        fitted: crate::cost::FittedConstants::SHIPPED,
    }
}

pub(super) fn setup(batch: u32, precision: Precision) -> TrainSetup {
    TrainSetup {
        global_batch: batch,
        precision,
        optimizer: Optimizer::Adamw,
        tokens: 1e12,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    }
}

pub(super) fn llama70b() -> ModelDims {
    ModelDims::dense(80, 8192, 28672, 64, 8, 128_256, 8192, Mlp::Swiglu)
}

#[test]
fn pipeline_bubble_is_p_minus_1_over_v_m() {
    let model = llama70b();
    let c = cluster("H100_SXM", 16, 3200.0);
    for v in [1, 2, 5] {
        let layout = Layout {
            tensor: 8,
            pipeline: 4,
            data: 4,
            virtual_stages: v,
            recompute: Recompute::Full,
            sequence_parallel: true,
            ..Layout::single()
        };
        let s = setup(128, Precision::Bf16);
        let e = estimate(&model, &s, &layout, &c).unwrap();
        let m = 128.0 / 4.0;
        let steady = e.breakdown.compute + e.breakdown.tensor_comm;
        let expect = 3.0 / (f64::from(v) * m);
        assert!(
            (e.breakdown.pipeline_bubble / steady - expect).abs() < 1e-12,
            "v={v}"
        );
    }
}

#[test]
fn fp8_speeds_up_gemms_only() {
    let model = llama70b();
    let c = cluster("H100_SXM", 8, 3200.0);
    let layout = Layout {
        tensor: 8,
        pipeline: 2,
        data: 4,
        recompute: Recompute::Selective,
        sequence_parallel: true,
        ..Layout::single()
    };
    let bf16 = estimate(&model, &setup(64, Precision::Bf16), &layout, &c).unwrap();
    let fp8 = estimate(&model, &setup(64, Precision::Fp8), &layout, &c).unwrap();
    assert!(fp8.step_time_s < bf16.step_time_s);
    assert!(fp8.step_time_s > 0.5 * bf16.step_time_s);
    assert!((fp8.breakdown.tensor_comm - bf16.breakdown.tensor_comm).abs() < 1e-12);
}

#[test]
fn bigger_gemms_run_closer_to_peak() {
    let c = cluster("A100_SXM_80GB", 1, 1600.0);
    let layout = Layout {
        recompute: Recompute::Full,
        ..Layout::single()
    };
    let mfu = |hidden: u32| {
        let m = ModelDims::dense(
            4,
            hidden,
            4 * hidden,
            hidden / 128,
            hidden / 128,
            32000,
            2048,
            Mlp::Gelu,
        );
        estimate(&m, &setup(8, Precision::Bf16), &layout, &c)
            .unwrap()
            .mfu
    };
    assert!(mfu(1024) < mfu(4096));
    assert!(mfu(4096) < mfu(8192));
    // Datasheet peak is never reached.
    assert!(mfu(8192) < 0.8);
}

#[test]
fn h100_sustains_a_lower_share_of_peak_than_a100() {
    // H100's FLOP/byte balance is twice A100's, so the same GEMMs are more memory-bound.
    let model = ModelDims::dense(8, 4096, 16384, 32, 32, 50368, 2048, Mlp::Gelu);
    let layout = Layout {
        micro_batch: 4,
        ..Layout::single()
    };
    let a = estimate(
        &model,
        &setup(4, Precision::Bf16),
        &layout,
        &cluster("A100_SXM_80GB", 1, 1600.0),
    )
    .unwrap();
    let h = estimate(
        &model,
        &setup(4, Precision::Bf16),
        &layout,
        &cluster("H100_SXM", 1, 3200.0),
    )
    .unwrap();
    assert!(h.mfu < a.mfu);
    assert!(h.tokens_per_s > 2.0 * a.tokens_per_s);
}

#[test]
fn slower_nics_expose_fsdp_traffic() {
    let model = ModelDims::dense(32, 4096, 11008, 32, 32, 32000, 4096, Mlp::Swiglu);
    let layout = Layout {
        data: 128,
        micro_batch: 2,
        zero: 3,
        ..Layout::single()
    };
    let fast = estimate(
        &model,
        &setup(256, Precision::Bf16),
        &layout,
        &cluster("H100_SXM", 16, 3200.0),
    )
    .unwrap();
    let slow = estimate(
        &model,
        &setup(256, Precision::Bf16),
        &layout,
        &cluster("H100_SXM", 16, 200.0),
    )
    .unwrap();
    assert!(slow.breakdown.data_comm > fast.breakdown.data_comm);
    assert!(slow.step_time_s > 1.2 * fast.step_time_s);
    assert_eq!(fast.flops_convention, FlopConvention::ModelCausal);
}

#[test]
fn unsupported_precision_is_an_error() {
    let model = llama70b();
    let err = estimate(
        &model,
        &setup(8, Precision::Fp8),
        &Layout::single(),
        &cluster("A100_SXM_80GB", 1, 1600.0),
    );
    assert!(matches!(err, Err(CostError::UnsupportedPrecision { .. })));
}

#[test]
fn expert_all_to_all_runs_on_the_tier_it_crosses() {
    // A Mixtral-8x7B-shaped model with 16 experts at TP1 DP16 over two 8-GPU nodes: folded
    // with expert tensor parallelism 1, an expert group is `expert` consecutive ranks, so EP8
    // stays on NVLink and EP16 sends half of every all-to-all over the 400 Gb/s NICs.
    let model =
        ModelDims::dense(32, 4096, 14336, 32, 8, 32000, 4096, Mlp::Swiglu).with_experts(16, 2);
    let s = setup(256, Precision::Bf16);
    let c = cluster("H100_SXM", 2, 400.0);
    let layout = |expert| Layout {
        data: 16,
        expert,
        micro_batch: 1,
        recompute: Recompute::Full,
        zero: 1,
        ..Layout::single()
    };
    let exposed = |expert| {
        let with = estimate(&model, &s, &layout(expert), &c).unwrap();
        let without = estimate(&model, &s, &layout(1), &c).unwrap();
        with.breakdown.tensor_comm - without.breakdown.tensor_comm
    };
    // Dispatch and combine, forward and backward, of 4096 tokens · 2 copies · 4096 · 2 bytes,
    // in each of 32 blocks and 16 micro-batches, fully exposed.
    let bytes = 4096.0 * 2.0 * 4096.0 * 2.0;
    let up = c.device.scale_up_bandwidth * LINK_EFFICIENCY;
    let net = c.node_network_bandwidth * LINK_EFFICIENCY / 8.0;
    let rounds = 16.0 * 32.0 * 4.0;
    let inside = rounds * (7.0 / 8.0 * bytes / up + SCALE_UP_HOP_LATENCY_S);
    let across = rounds * (7.0 / 16.0 * bytes / up + 8.0 / 16.0 * bytes / net + 5e-6);
    assert!((exposed(8) / inside - 1.0).abs() < 1e-9, "{}", exposed(8));
    assert!((exposed(16) / across - 1.0).abs() < 1e-9, "{}", exposed(16));
    assert!(exposed(16) > 5.0 * exposed(8));
}

#[test]
fn a_pipeline_hides_the_all_to_alls_only_where_its_schedule_overlaps_them() {
    // The Mixtral-shaped model of the test above at EP16 over four 8-GPU nodes, PP2 DP16: the
    // expert group is 16 consecutive ranks, two nodes, so every exchange sends half its bytes
    // over the NICs. Megatron-Core runs its EP overlap only on an interleaved pipeline without
    // full recomputation (`TransformerConfig.__post_init__`); elsewhere the all-to-alls of the
    // rank's 16 blocks are exposed whole, in each of 16 micro-batches, dispatch and combine,
    // forward and backward.
    let model =
        ModelDims::dense(32, 4096, 14336, 32, 8, 32000, 4096, Mlp::Swiglu).with_experts(16, 2);
    let c = cluster("H100_SXM", 4, 400.0);
    let exposed = |virtual_stages, recompute, overlap, framework| {
        let mut s = setup(256, Precision::Bf16);
        s.expert_overlap = overlap;
        s.states.framework = framework;
        let layout = |expert| Layout {
            pipeline: 2,
            virtual_stages,
            data: 16,
            expert,
            micro_batch: 1,
            recompute,
            zero: 1,
            ..Layout::single()
        };
        estimate(&model, &s, &layout(16), &c)
            .unwrap()
            .breakdown
            .tensor_comm
            - estimate(&model, &s, &layout(1), &c)
                .unwrap()
                .breakdown
                .tensor_comm
    };
    let bytes = 4096.0 * 2.0 * 4096.0 * 2.0;
    let up = c.device.scale_up_bandwidth * LINK_EFFICIENCY;
    let net = c.node_network_bandwidth * LINK_EFFICIENCY / 8.0;
    let whole = 16.0 * 16.0 * 4.0 * (7.0 / 16.0 * bytes / up + 8.0 / 16.0 * bytes / net + 5e-6);
    let megatron = crate::workload::ExpertOverlap::MegatronCore;
    let dualpipe = crate::workload::ExpertOverlap::DualPipe;
    let none = Recompute::None;
    // One chunk per rank: Megatron-Core refuses the overlap, and nothing hides.
    let plain = exposed(1, none, megatron, None);
    assert!((plain / whole - 1.0).abs() < 1e-9, "{plain} vs {whole}");
    // Two chunks per rank: the all-to-alls run beside the other micro-batch's compute.
    let interleaved = exposed(2, none, megatron, None);
    assert!(interleaved < 0.9 * whole, "{interleaved} vs {whole}");
    // ... but not under full recomputation, nor under a framework that has no such schedule.
    let full = exposed(2, Recompute::Full, megatron, None);
    assert!((full / whole - 1.0).abs() < 1e-9, "{full} vs {whole}");
    let fsdp = exposed(2, none, megatron, Some(crate::workload::Framework::Fsdp));
    assert!((fsdp / whole - 1.0).abs() < 1e-9, "{fsdp} vs {whole}");
    // DualPipe pairs a forward and a backward chunk on every rank without virtual stages.
    let paired = exposed(1, none, dualpipe, None);
    assert!(paired < 0.9 * whole, "{paired} vs {whole}");
}

#[test]
fn a_deduplicated_dispatch_sends_a_token_once_to_each_node_it_reaches() {
    // DeepSeek-V3's routing on a 64-expert-rank group over eight 8-GPU nodes: 256 experts, top-8,
    // 8 groups (one per node's 32 experts) of which a token picks 4. The all-to-all sends 7 of
    // its 8 copies over the NICs; the deduplicated dispatch one per node reached, `8 · (1 −
    // C(7,4)/C(8,4)) = 4` nodes of which 3.5 remote (`workload::routing`), and forwards every
    // copy not on the receiving GPU over NVLink: 7/8 of them.
    let mut model =
        ModelDims::dense(8, 7168, 18432, 128, 128, 129280, 4096, Mlp::Swiglu).with_experts(256, 8);
    model.expert_groups = Some(crate::workload::ExpertGroups {
        groups: 8,
        per_token: 4,
    });
    let c = cluster("H100_SXM", 8, 400.0);
    let layout = |expert, dispatch| {
        let mut s = setup(512, Precision::Bf16);
        s.expert_dispatch = dispatch;
        let l = Layout {
            data: 64,
            expert,
            micro_batch: 1,
            recompute: Recompute::Full,
            zero: 1,
            ..Layout::single()
        };
        (s, l)
    };
    let exposed = |dispatch| {
        let (s, with) = layout(64, dispatch);
        let (s1, without) = layout(1, dispatch);
        estimate(&model, &s, &with, &c)
            .unwrap()
            .breakdown
            .tensor_comm
            - estimate(&model, &s1, &without, &c)
                .unwrap()
                .breakdown
                .tensor_comm
    };
    // Dispatch and combine, forward and backward, of 4096 tokens · 8 copies · 7168 · 2 bytes, in
    // each of 8 blocks and 8 micro-batches, fully exposed (no pipeline).
    let bytes = 4096.0 * 8.0 * 7168.0 * 2.0;
    let up = c.device.scale_up_bandwidth * LINK_EFFICIENCY;
    let net = c.node_network_bandwidth * LINK_EFFICIENCY / 8.0;
    let rounds = 8.0 * 8.0 * 4.0;
    let all_to_all = rounds * (7.0 / 64.0 * bytes / up + 56.0 / 64.0 * bytes / net + 5e-6);
    let deduplicated = rounds * (7.0 / 8.0 * bytes / up + 3.5 / 8.0 * bytes / net + 5e-6);
    let a = exposed(ExpertDispatch::AllToAll);
    let d = exposed(ExpertDispatch::Deduplicated);
    assert!((a / all_to_all - 1.0).abs() < 1e-9, "{a} {all_to_all}");
    assert!((d / deduplicated - 1.0).abs() < 1e-9, "{d} {deduplicated}");
    // The NICs carry half the bytes: about half the time, since they are the bottleneck.
    assert!(d < 0.55 * a && d > 0.45 * a, "{d} {a}");
    // Inside one node both send the same copies over NVLink.
    let inside = |dispatch| {
        let (s, l) = layout(8, dispatch);
        estimate(&model, &s, &l, &c).unwrap().breakdown.tensor_comm
    };
    assert_eq!(
        inside(ExpertDispatch::AllToAll),
        inside(ExpertDispatch::Deduplicated)
    );
}

#[test]
fn hidden_communication_costs_only_its_contention() {
    use super::stages::exposed;
    // Fully hidden: only the slowdown of the compute it overlaps.
    assert!((exposed(1.0, 3.0, 0.3) - 0.3).abs() < 1e-12);
    // Longer than its window: the excess plus the slowdown over the window.
    assert!((exposed(5.0, 2.0, 0.3) - (3.0 + 0.6)).abs() < 1e-12);
    // Nothing to hide under: all of it.
    assert!((exposed(2.0, 0.0, 0.3) - 2.0).abs() < 1e-12);
    // Without contention, overlap is free.
    assert_eq!(exposed(1.0, 3.0, 0.0), 0.0);
}

#[test]
fn a_precision_without_a_gemm_figure_takes_the_sixteen_bit_one() {
    use crate::hardware::Efficiency;
    use loam_ir::types::Precision;
    let e = Efficiency {
        gemm: std::collections::BTreeMap::from([(Precision::Bf16, 0.8), (Precision::Fp32, 0.9)]),
        attention_forward: 0.4,
        attention_backward: 0.3,
        uncertainty: 0.0,
    };
    assert_eq!(e.gemm(Precision::Fp32), 0.9);
    assert_eq!(e.gemm(Precision::Fp8), 0.8);
    assert_eq!(e.gemm(Precision::Fp16), 0.8);
    let only_fp32 = Efficiency {
        gemm: std::collections::BTreeMap::from([(Precision::Fp32, 0.7)]),
        ..e
    };
    assert_eq!(only_fp32.gemm(Precision::Bf16), 0.7);
}

#[test]
fn gemms_run_at_the_devices_measured_share_of_peak() {
    // A large square GEMM is compute-bound: its rate is the device's measured share of peak,
    // sustained by the fitted constant, whatever the device; reading its operands once costs
    // a few per cent more.
    let c = cluster("H100_SXM", 1, 3200.0);
    let rates = super::compute::Rates::new(&c, loam_ir::types::Precision::Bf16).unwrap();
    let n = 16384.0;
    let seconds = rates.gemm(n, n, n);
    let achieved = 2.0 * n * n * n / seconds;
    let expected = c.device.peak_flops[&loam_ir::types::Precision::Bf16]
        * c.device.efficiency.gemm(loam_ir::types::Precision::Bf16)
        * c.fitted.gemm_sustained;
    assert!(
        achieved < expected && achieved > 0.95 * expected,
        "{achieved} vs {expected}"
    );
}

/// Llama-3-70B at TP8 PP4 DP4 (80 blocks, 20 per rank) with sequence parallelism, under ZeRO
/// stage `zero`, `virtual_stages` chunks per rank and `recompute`.
pub(super) fn layout_70b(zero: u8, virtual_stages: u32, recompute: Recompute) -> Layout {
    Layout {
        tensor: 8,
        pipeline: 4,
        data: 4,
        virtual_stages,
        zero,
        recompute,
        sequence_parallel: true,
        ..Layout::single()
    }
}

/// Exposed data-parallel seconds of [`layout_70b`] under full recomputation, batch 128 (32
/// micro-batches of one sequence), on 16 nodes whose NICs give `nic_gbps`.
fn data_comm_70b(nic_gbps: f64, zero: u8, virtual_stages: u32) -> f64 {
    let layout = layout_70b(zero, virtual_stages, Recompute::Full);
    let c = cluster("H100_SXM", 16, nic_gbps);
    estimate(&llama70b(), &setup(128, Precision::Bf16), &layout, &c)
        .unwrap()
        .breakdown
        .data_comm
}

#[test]
fn interleaving_hides_earlier_chunks_reductions_under_later_backwards() {
    // Megatron-Core's interleaved schedule ends a step with the backwards of chunk 1 for the
    // last group of p = 4 micro-batches, then chunk 0's: chunk 1's gradients are final 4 · 10
    // block-backwards before the step ends, chunk 0's at its last block. At 25 Gb/s per node
    // neither window covers its reduction, so the exposed time falls by the window gained:
    // v = 1 hides the whole reduction under 19 block-backwards, v = 2 hides half of it under
    // 40 and half under 9 (49 in all).
    let slow_v1 = data_comm_70b(25.0, 1, 1);
    let slow_v2 = data_comm_70b(25.0, 1, 2);
    assert!(slow_v2 < slow_v1, "{slow_v2} vs {slow_v1}");
    // The same holds with whole optimizer states (ZeRO-0's all-reduce).
    assert!(data_comm_70b(25.0, 0, 2) < data_comm_70b(25.0, 0, 1));
}

#[test]
fn zero1_gathers_updated_weights_under_the_next_forward() {
    // A reduce-scatter plus an all-gather moves the bytes of one all-reduce; ZeRO-1 gathers
    // the updated weights under the next step's forward (Megatron-Core's
    // `overlap_param_gather`), a window ZeRO-0's all-reduce does not have. On a network too
    // slow for either to hide, ZeRO-1 exposes less; never more on a fast one.
    assert!(data_comm_70b(25.0, 1, 1) < data_comm_70b(25.0, 0, 1));
    assert!(data_comm_70b(3200.0, 1, 1) <= data_comm_70b(3200.0, 0, 1) + 1e-9);
}

#[test]
fn a_sites_fixed_step_cost_is_added_once_in_other() {
    // A calibration's `fixed_s` (here 0.5 s) lengthens the step by exactly 0.5 s, shows in the
    // breakdown's `other` and nowhere else, and leaves the tokens per step as they were, so the
    // throughput falls as step / (step + 0.5).
    let model = llama70b();
    let layout = Layout {
        tensor: 8,
        pipeline: 4,
        data: 4,
        recompute: Recompute::Full,
        sequence_parallel: true,
        ..Layout::single()
    };
    let s = setup(128, Precision::Bf16);
    let shipped = cluster("H100_SXM", 16, 3200.0);
    let mut site = shipped.clone();
    site.fitted.step_overhead_s = 0.5;
    let a = estimate(&model, &s, &layout, &shipped).unwrap();
    let b = estimate(&model, &s, &layout, &site).unwrap();
    assert!((b.step_time_s - a.step_time_s - 0.5).abs() < 1e-9);
    assert!((b.breakdown.other - a.breakdown.other - 0.5).abs() < 1e-9);
    assert_eq!(
        (b.breakdown.compute, b.breakdown.tensor_comm),
        (a.breakdown.compute, a.breakdown.tensor_comm)
    );
    assert_eq!(
        (b.breakdown.pipeline_bubble, b.breakdown.data_comm),
        (a.breakdown.pipeline_bubble, a.breakdown.data_comm)
    );
    let expect = a.tokens_per_s * a.step_time_s / (a.step_time_s + 0.5);
    assert!((b.tokens_per_s - expect).abs() < 1e-9 * expect);
}

/// GPT-2 small (124M: 12 blocks of 768 wide, 12 heads, GeLU MLP of 3,072, 1,024 tokens).
fn gpt2_small() -> ModelDims {
    ModelDims::dense(12, 768, 3072, 12, 12, 50_257, 1024, Mlp::Gelu)
}

#[test]
fn a_small_block_at_one_sequence_waits_for_the_hosts_launches() {
    // On an H100 (bf16 GEMMs at 989 × 0.803 × 0.86 = 683 TFLOP/s), one block of GPT-2 small
    // forward on 1,024 tokens runs 2 · 1,024 · (4 · 768² + 2 · 768 · 3,072) = 14.5 GFLOP of GEMMs
    // (21 µs, 33 µs with reading their operands and writing their outputs), 1.6 GFLOP of causal
    // attention at 346 TFLOP/s (5 µs) and 10 µs of norms and activations (a third of
    // 1,024 · 2 B · (42 · 768 + 5 · 3,072) at 3.35 TB/s): 47 µs, under the 60 µs the host takes to
    // launch its 12 kernels, so the forward takes the launches' time. Its backward (twice the
    // GEMMs, 66 µs, 2.5 times the attention's FLOPs at 297 TFLOP/s, 14 µs, and twice the norms,
    // 19 µs: 99 µs) passes the 95 µs of its 19 launches.
    let c = cluster("H100_SXM", 1, 3200.0);
    let rates = compute::Rates::new(&c, Precision::Bf16).unwrap();
    let one = Layout::single();
    let block = compute::block_time(&gpt2_small(), &one, &rates, true);
    assert_eq!(block.forward, 12.0 * 5e-6, "{block:?}");
    assert!(
        block.backward > 19.0 * 5e-6 && block.backward < 105e-6,
        "{block:?}"
    );
    assert!(block.tensor_gemm_forward < 40e-6, "{block:?}");
    // Sixteen sequences per micro-batch give the device about sixteen times the forward work,
    // well above the launches: the device's time, and far less per token.
    let sixteen = Layout {
        micro_batch: 16,
        ..one
    };
    let wide = compute::block_time(&gpt2_small(), &sixteen, &rates, true);
    assert!(wide.forward > 5.0 * 12.0 * 5e-6, "{wide:?}");
    assert!(
        wide.forward / 16.0 < 0.8 * block.forward,
        "{wide:?} {block:?}"
    );
    // A block of realistic size never meets the floor: Llama 3 70B's forward on 8,192 tokens
    // takes tens of milliseconds.
    let big = compute::block_time(&llama70b(), &one, &rates, true);
    assert!(big.forward > 100.0 * 12.0 * 5e-6, "{big:?}");
}

#[test]
fn a_launch_bound_model_trains_faster_on_larger_micro_batches() {
    // A model of 8 blocks 512 wide on 512 tokens: a block's forward is about 8 µs of device work
    // (2 · 512 · 3.1 M = 3.2 GFLOP of GEMMs at 683 TFLOP/s, and its weights read once), its
    // backward about twice that, against 60 and 95 µs of launches: at one sequence per
    // micro-batch the step runs at the host's pace, 155 µs a block, where the device alone would
    // take about 25. At 32 sequences the device's work passes the launches. So a step of the same
    // 64 sequences runs several times faster, where the device's work alone would differ only by
    // what a micro-batch pays once (the head's weight reads).
    let model = ModelDims::dense(8, 512, 2048, 8, 8, 8192, 512, Mlp::Gelu);
    let c = cluster("H100_SXM", 1, 3200.0);
    let s = setup(64, Precision::Bf16);
    let at = |micro_batch: u32| {
        let layout = Layout {
            micro_batch,
            ..Layout::single()
        };
        estimate(&model, &s, &layout, &c).unwrap().tokens_per_s
    };
    let (one, wide) = (at(1), at(32));
    assert!(wide > 3.0 * one, "{one} tokens/s at 1, {wide} at 32");
}

#[test]
fn a_blocks_launches_count_its_experts_collectives_and_casts() {
    // Counted by hand: a dense block launches 12 kernels forward and 19 backward. An MoE block
    // at tensor degree 2 with sequence parallelism under FP8 adds the MoE MLP's 6 and 7, two
    // all-gathers and two reduce-scatters each way, and the casts of 2 inputs forward and of 4
    // output gradients backward: 24 and 34.
    let dense = crate::workload::BlockKind {
        moe: false,
        sliding: false,
    };
    let moe = crate::workload::BlockKind {
        moe: true,
        sliding: false,
    };
    let one = Layout::single();
    assert_eq!(compute::block_kernels(dense, &one, false), (12.0, 19.0));
    let split = Layout {
        tensor: 2,
        sequence_parallel: true,
        ..one
    };
    assert_eq!(compute::block_kernels(moe, &split, true), (24.0, 34.0));
    // Without sequence parallelism the two collectives of each pass are all-reduces.
    let reduced = Layout {
        sequence_parallel: false,
        ..split
    };
    assert_eq!(compute::block_kernels(dense, &reduced, false), (14.0, 21.0));
}
