//! Tests of the layout search.

use super::*;
use crate::calibrate::tests::test_device;
use crate::cost::{estimate, usable_memory};
use loam_ir::types::{Arch, Mlp, Optimizer, Precision};

pub(super) fn h100s(nodes: u32) -> ClusterFigures {
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

/// A job of the property tests: `layers` blocks of `heads · 128` wide (a quarter of the heads
/// as KV heads, the MLP `ffn_factor` times wider), a top-2 MoE when `experts` is above 0, on
/// `nodes` nodes of `devices_per_node` H100s of `2^memory_log2` bytes each.
pub(super) fn random_job(
    (layers, heads, ffn_factor): (u32, u32, u32),
    seq_len: u32,
    global_batch: u32,
    experts: u32,
    (devices_per_node, nodes): (u32, u32),
    memory_log2: u32,
) -> (ModelDims, TrainSetup, ClusterFigures) {
    let hidden = heads * 128;
    let mut model = ModelDims::dense(
        layers,
        hidden,
        hidden * ffn_factor,
        heads,
        heads / 4,
        32_000,
        seq_len,
        Mlp::Swiglu,
    );
    if experts > 0 {
        model.arch = Arch::Moe;
        model.experts = experts;
        model.top_k = 2;
    }
    let setup = TrainSetup {
        global_batch,
        tokens: 1e10,
        ..setup(global_batch)
    };
    let mut cluster = ClusterFigures {
        devices_per_node,
        ..h100s(nodes)
    };
    cluster.device.memory_bytes = (1u64 << memory_log2) as f64;
    (model, setup, cluster)
}

/// A search of `model` trained as `setup` on every device of `cluster`, keeping `keep`, with
/// every layout field on auto.
pub(super) fn search_of<'a>(
    model: &'a ModelDims,
    setup: &'a TrainSetup,
    cluster: &'a ClusterFigures,
    keep: usize,
) -> SearchSpec<'a> {
    SearchSpec {
        model,
        setup,
        cluster,
        pins: Pins::default(),
        max_devices: cluster.devices(),
        keep,
    }
}

pub(super) fn setup(batch: u32) -> TrainSetup {
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

fn time(c: &Candidate) -> f64 {
    c.train_time_s
}

/// Llama-3.1-405B dims.
pub(crate) fn llama405b() -> ModelDims {
    ModelDims::dense(126, 16384, 53248, 128, 8, 128_256, 8192, Mlp::Swiglu)
}

#[test]
fn plans_405b_on_16k_h100_within_memory_and_deterministically() {
    let model = llama405b();
    let train = setup(2048);
    let cluster = h100s(2048);
    let spec = SearchSpec {
        model: &model,
        setup: &train,
        cluster: &cluster,
        pins: Pins::default(),
        max_devices: 16384,
        keep: 5,
    };
    let a = search(&spec, &time);
    let b = search(&spec, &time);
    assert_eq!(a, b);
    assert_eq!(a.ranked.len(), 5);
    let best = &a.ranked[0];
    assert!(best.estimate.memory_per_device_bytes <= usable_memory(&cluster.device));
    assert!(best.layout.tensor <= 8);
    assert!(best.devices <= 16384);
    // Meta trained on 16K H100 at 38–43 % MFU (Llama 3 paper, Table 4).
    assert!(
        (0.3..0.6).contains(&best.estimate.mfu),
        "{}",
        best.estimate.mfu
    );
    assert!(a.scores.windows(2).all(|w| w[0] <= w[1]));
    assert!(a.stats.evaluated < a.stats.enumerated * 4);
    assert!(a.stats.raw_space > 1e15);
    assert!(
        a.rejected
            .iter()
            .any(|r| matches!(r.reason, Rejection::OutOfMemory { .. }))
    );
}

#[test]
fn pinned_tensor_that_does_not_divide_heads_is_rejected_with_numbers() {
    let model = ModelDims::dense(32, 4096, 14336, 32, 8, 128_256, 8192, Mlp::Swiglu);
    let train = setup(64);
    let cluster = h100s(2);
    let pins = Pins {
        tensor: Some(3),
        ..Pins::default()
    };
    let spec = SearchSpec {
        model: &model,
        setup: &train,
        cluster: &cluster,
        pins,
        max_devices: 16,
        keep: 3,
    };
    let r = search(&spec, &time);
    assert!(r.ranked.is_empty());
    assert_eq!(
        r.rejected[0].reason,
        Rejection::Indivisible {
            what: "heads % tensor",
            value: 32,
            by: 3
        }
    );
}

#[test]
fn out_of_memory_reports_the_closest_deficit() {
    // 70B on 8 devices without sharding: 16 bytes × 70.6B / 8 ≈ 141 GB per device.
    let model = ModelDims::dense(80, 8192, 28672, 64, 8, 128_256, 8192, Mlp::Swiglu);
    let train = setup(64);
    let cluster = h100s(1);
    let pins = Pins {
        tensor: Some(8),
        pipeline: Some(1),
        zero: Some(0),
        ..Pins::default()
    };
    let spec = SearchSpec {
        model: &model,
        setup: &train,
        cluster: &cluster,
        pins,
        max_devices: 8,
        keep: 3,
    };
    let r = search(&spec, &time);
    assert!(r.ranked.is_empty());
    match &r.rejected[0].reason {
        Rejection::OutOfMemory {
            need_bytes,
            have_bytes,
        } => {
            assert!(*need_bytes > 16.0 * 70e9 / 8.0, "{need_bytes}");
            // 80 GB less the CUDA context (512 MiB), NCCL's buffers (32 channels over 450 GB/s ×
            // 9,633,792 B × 3 connections × 2 communicators = 1,849,688,064 B) and 2.3 %
            // fragmentation (1.84e9 B): 75,773,441,024 B.
            assert!((*have_bytes - 75_773_441_024.0).abs() < 1.0, "{have_bytes}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn objective_is_pluggable() {
    let model = ModelDims::dense(32, 4096, 14336, 32, 8, 128_256, 8192, Mlp::Swiglu);
    let train = setup(256);
    let cluster = h100s(16);
    let spec = SearchSpec {
        model: &model,
        setup: &train,
        cluster: &cluster,
        pins: Pins::default(),
        max_devices: 128,
        keep: 1,
    };
    let fastest = search(&spec, &time);
    let fewest = search(&spec, &|c: &Candidate| {
        c.devices as f64 * 1e9 + c.train_time_s
    });
    assert!(fewest.ranked[0].devices < fastest.ranked[0].devices);
    let cheap = Economics {
        optimize: Optimize::Cost,
        price_per_device_hour: 2.0,
        watts_per_device: 1000.0,
        carbon_g_per_kwh: 400.0,
        failures: crate::plan::goodput::Failures::NONE,
    };
    let by_cost = search(&spec, &cheap);
    let c = &by_cost.ranked[0];
    assert!((cheap.cost(c) - 2.0 * c.device_hours).abs() < 1e-6);
}

/// A score that ranks layouts in an order unrelated to their cost, so the kept candidates come
/// from every corner of the space (ZeRO stages, recomputation, micro-batches …).
fn scattered(c: &Candidate) -> f64 {
    let l = c.layout;
    let mix = l.tensor * 7
        + l.pipeline * 13
        + l.data * 17
        + l.context * 19
        + l.virtual_stages * 23
        + l.micro_batch * 29
        + u32::from(l.zero) * 31
        + l.recompute as u32 * 37;
    f64::from(mix % 101)
}

#[test]
fn every_ranked_estimate_equals_costing_its_layout_alone() {
    // The search reuses cost stages across the layouts it visits; each result must still be
    // bit for bit what `estimate` and `memory_per_device` give for the layout on its own.
    let mut gpt = ModelDims::dense(24, 2048, 8192, 16, 16, 50257, 2048, Mlp::Gelu);
    gpt.dropout = true;
    let mut moe = ModelDims::dense(32, 4096, 14336, 32, 8, 32000, 4096, Mlp::Swiglu);
    moe.arch = Arch::Moe;
    moe.experts = 8;
    moe.top_k = 2;
    let llama = ModelDims::dense(32, 4096, 14336, 32, 8, 128_256, 8192, Mlp::Swiglu);
    for (model, flash, batch, nodes) in [
        (gpt, false, 64, 2),
        (moe, true, 128, 4),
        (llama, true, 96, 8),
    ] {
        let train = TrainSetup {
            flash_attention: flash,
            ..setup(batch)
        };
        let cluster = h100s(nodes);
        let spec = SearchSpec {
            model: &model,
            setup: &train,
            cluster: &cluster,
            pins: Pins::default(),
            max_devices: cluster.devices(),
            keep: 64,
        };
        let objectives: [&dyn Objective; 2] = [&time, &scattered];
        for objective in objectives {
            let result = search(&spec, objective);
            assert_eq!(result.ranked.len(), 64);
            for cand in &result.ranked {
                let alone = estimate(&model, &train, &cand.layout, &cluster).unwrap();
                assert_eq!(alone, cand.estimate, "{:?}", cand.layout);
                let memory = crate::workload::memory_per_device(&model, &train, &cand.layout);
                assert_eq!(memory, cand.estimate.memory, "{:?}", cand.layout);
            }
        }
    }
}

/// The name each region had when regions were keyed by text; reports list regions in the
/// alphabetical order of these names.
fn region_name(reason: &Rejection) -> String {
    match reason {
        Rejection::Indivisible { what, .. } => format!("indivisible: {what}"),
        Rejection::TensorBeyondNode { .. } => "tensor beyond node".into(),
        Rejection::TooManyDevices { .. } => "too many devices".into(),
        Rejection::InterleaveNeedsMicroBatches { .. } => "interleave needs micro-batches".into(),
        Rejection::OutOfMemory { .. } => "out of memory".into(),
        Rejection::StagesWithoutBlocks { .. } => "stages without blocks".into(),
        Rejection::Unsupported { .. } => "unsupported".into(),
    }
}

#[test]
fn rejected_regions_come_in_the_alphabetical_order_of_their_names() {
    let model = llama405b();
    let train = setup(96);
    let cluster = h100s(4);
    let cases = [
        Pins {
            virtual_stages: Some(2),
            data: Some(64),
            ..Pins::default()
        },
        Pins {
            tensor: Some(16),
            ..Pins::default()
        },
        Pins {
            context: Some(3),
            expert: Some(2),
            micro_batch: Some(5),
            ..Pins::default()
        },
        Pins::default(),
    ];
    let mut kinds = std::collections::BTreeSet::new();
    for pins in cases {
        let spec = SearchSpec {
            model: &model,
            setup: &train,
            cluster: &cluster,
            pins,
            max_devices: 32,
            keep: 2,
        };
        let names: Vec<String> = search(&spec, &time)
            .rejected
            .iter()
            .map(|r| region_name(&r.reason))
            .collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
        kinds.extend(names);
    }
    assert!(kinds.len() >= 5, "{kinds:?}");
}

#[test]
fn expert_parallelism_folds_onto_tensor_context_and_data() {
    // Mixtral-8x22B (56 layers, hidden 6144, FFN 16384, 48 heads, 8 KV heads, 8 experts, top 2)
    // with the published TP2 CP8 DP4 EP8: the expert degree is twice the data degree, which a
    // layout whose experts are carved out of the data ranks cannot express.
    let model =
        ModelDims::dense(56, 6144, 16384, 48, 8, 32768, 65536, Mlp::Swiglu).with_experts(8, 2);
    let train = setup(64);
    let cluster = h100s(64);
    let spec = SearchSpec {
        model: &model,
        setup: &train,
        cluster: &cluster,
        pins: Pins {
            tensor: Some(2),
            context: Some(8),
            data: Some(4),
            expert: Some(8),
            ..Pins::default()
        },
        max_devices: cluster.devices(),
        keep: 4,
    };
    let result = search(&spec, &time);
    assert!(!result.ranked.is_empty(), "{:?}", result.rejected);
    for cand in &result.ranked {
        let l = cand.layout;
        assert_eq!((l.tensor, l.context, l.data, l.expert), (2, 8, 4, 8));
    }
}

/// A 13B dense model (40 blocks of 5,120 with a 13,824 SwiGLU FFN, 4,096-token sequences).
fn thirteen_b() -> ModelDims {
    ModelDims::dense(40, 5120, 13824, 40, 40, 32_000, 4096, Mlp::Swiglu)
}

#[test]
fn one_capped_walk_ranks_each_objective_and_cap_as_its_own_search() {
    // A 13B model on 16 nodes of 8 H100 (128 devices), ranked by time and by a score unrelated
    // to cost in one walk, under the caps 128, 64, 24 and 8 (24: a cap no power of two). Each
    // list must be exactly what a plain search of that objective with that `max_devices` keeps:
    // the walk skips the memory of shapes whose model states alone overflow and records no
    // rejected regions, neither of which may change a kept candidate.
    let model = thirteen_b();
    let (train, cluster) = (setup(512), h100s(16));
    let spec = search_of(&model, &train, &cluster, 4);
    let caps = [128, 64, 24, 8];
    let objectives: [&dyn Objective; 2] = [&time, &scattered];
    let lists = search_capped(&spec, &objectives, &caps, Scores::Any, None, u64::MAX).0;
    assert_eq!(lists.len(), 2);
    for (objective, by_cap) in objectives.iter().zip(&lists) {
        assert_eq!(by_cap.len(), caps.len());
        for (&cap, kept) in caps.iter().zip(by_cap) {
            let alone = search(
                &SearchSpec {
                    max_devices: cap,
                    ..spec.clone()
                },
                *objective,
            );
            assert_eq!(kept, &alone.ranked, "cap {cap}");
            // 8 devices hold a 13B model (16 bytes a parameter under AdamW: 208 GB of states,
            // 26 GB a device under ZeRO-3), so every cap keeps its four.
            assert_eq!(kept.len(), 4, "cap {cap}");
            assert!(kept.iter().all(|c| c.devices <= cap));
        }
    }
    // No objective, no lists; no cap, an empty list per objective.
    assert!(
        search_capped(&spec, &[], &caps, Scores::Any, None, u64::MAX)
            .0
            .is_empty()
    );
    assert_eq!(
        search_capped(&spec, &objectives, &[], Scores::Any, None, u64::MAX).0,
        vec![Vec::<Vec<Candidate>>::new(); 2]
    );
}

#[test]
fn a_walk_stops_at_its_allowance_with_what_it_kept_by_then() {
    // The 13B job of the test above, on 128 H100 under two caps. Its whole walk spends some
    // units (shapes visited and layouts costed); given exactly that many it keeps the same and
    // does not stop; given half it stops within a shape's costings of half (a shape costs at
    // most one layout per ZeRO stage), and keeps no candidate the whole walk would not have
    // offered: each of its lists is at best as good as the whole walk's.
    let model = thirteen_b();
    let (train, cluster) = (setup(512), h100s(16));
    let spec = search_of(&model, &train, &cluster, 4);
    let caps = [128, 16];
    let walk = |allowance| search_capped(&spec, &[&time], &caps, Scores::Any, None, allowance);
    let (whole, all) = walk(u64::MAX);
    assert!(!all.stopped);
    assert!(all.units() > 1_000, "{all:?}");
    assert_eq!(all.units(), all.shapes + all.evaluated);
    let (same, exact) = walk(all.units());
    assert_eq!(same, whole);
    assert!(!exact.stopped);
    let half = all.units() / 2;
    let (part, cut) = walk(half);
    assert!(cut.stopped);
    assert!(
        (half..=half + 4).contains(&cut.units()),
        "{} units of {half}",
        cut.units()
    );
    for (kept, best) in part[0].iter().zip(&whole[0]) {
        let (Some(k), Some(b)) = (kept.first(), best.first()) else {
            continue;
        };
        assert!(k.train_time_s >= b.train_time_s);
    }
    // Nothing to spend: it stops at its first shape, with nothing kept.
    let (none, at_once) = walk(0);
    assert!(at_once.stopped);
    assert_eq!(at_once.units(), 0);
    assert!(none.iter().flatten().all(Vec::is_empty));
}

#[test]
fn walks_that_share_their_kernels_keep_what_walks_of_their_own_keep() {
    // The data split's walks of one group on each share of the batch, in turn, with one
    // kernel share: each keeps exactly what a walk with no share keeps, whichever walks ran
    // before it. A MoE job (its kernels vary with the expert degree and the micro-batch) on 8
    // nodes of 8 H100, ranked by time under the caps 64 and 16. Then an fp8 walk of the same
    // job with the share the bf16 walks filled: its kernels run at other rates, so it must not
    // read theirs (it keeps what its own walk keeps, and differs from the bf16 walk).
    let (model, _, cluster) = random_job((8, 16, 4), 2048, 256, 8, (8, 8), 37);
    let caps = [64, 16];
    let share = crate::cost::KernelShare::default();
    let walk = |train: &TrainSetup, kernels| {
        let spec = SearchSpec {
            model: &model,
            setup: train,
            cluster: &cluster,
            pins: Pins::default(),
            max_devices: 64,
            keep: 3,
        };
        search_capped(
            &spec,
            &[&time],
            &caps,
            Scores::ByTimeAndDevices,
            kernels,
            u64::MAX,
        )
        .0
    };
    let mut kept = 0;
    for sequences in [64, 128, 192, 32, 256] {
        let train = TrainSetup {
            global_batch: sequences,
            tokens: 1e10 * f64::from(sequences) / 256.0,
            ..setup(sequences)
        };
        let alone = walk(&train, None);
        assert_eq!(walk(&train, Some(&share)), alone, "{sequences} sequences");
        kept += alone.iter().flatten().map(Vec::len).sum::<usize>();
    }
    assert!(kept >= 20, "only {kept} candidates kept");
    let fp8 = TrainSetup {
        precision: Precision::Fp8,
        tokens: 1e10,
        ..setup(256)
    };
    let bf16 = TrainSetup {
        tokens: 1e10,
        ..setup(256)
    };
    let alone = walk(&fp8, None);
    assert!(!alone.iter().flatten().all(Vec::is_empty));
    assert_eq!(walk(&fp8, Some(&share)), alone);
    assert_ne!(alone, walk(&bf16, None));
}
