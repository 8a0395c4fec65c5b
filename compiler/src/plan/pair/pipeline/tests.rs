//! The heterogeneous pipeline search against an exhaustive search of the same space, and its
//! invariants on random small pools.

use super::*;
use crate::hardware::DeviceFigures;
use crate::workload::op_graph;
use loam_ir::types::{Mlp, Optimizer, Precision};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// A device from datasheet-like figures (TFLOP/s by precision, GB, TB/s, devices per node).
fn device(
    id: &str,
    peaks: &[(Precision, f64)],
    memory_gb: f64,
    bw_tb: f64,
    dpn: u32,
) -> DeviceFigures {
    DeviceFigures {
        id: id.into(),
        peak_flops: peaks.iter().map(|(p, t)| (*p, t * 1e12)).collect(),
        memory_bytes: memory_gb * 1e9,
        memory_bandwidth: bw_tb * 1e12,
        scale_up_bandwidth: 300e9,
        devices_per_node: dpn,
        scale_up_domain: dpn,
        tdp_watts: 500.0,
        efficiency: crate::hardware::Efficiency::unmeasured(),
    }
}

fn cluster(device: DeviceFigures, nodes: u32) -> ClusterFigures {
    let dpn = device.devices_per_node;
    ClusterFigures {
        device,
        devices_per_node: dpn,
        nodes,
        node_network_bandwidth: 100e9,
        nics_per_node: 4,
        network_latency_s: 5e-6,
        block: None,
        fitted: crate::cost::FittedConstants::SHIPPED,
    }
}

fn fast() -> DeviceFigures {
    device(
        "FAST",
        &[(Precision::Bf16, 900.0), (Precision::Fp8, 1800.0)],
        80.0,
        3.3,
        8,
    )
}

fn steady() -> DeviceFigures {
    device("STEADY", &[(Precision::Bf16, 300.0)], 40.0, 1.5, 4)
}

fn small_model(layers: u32) -> ModelDims {
    ModelDims::dense(layers, 2048, 5632, 16, 4, 32_000, 2048, Mlp::Swiglu)
}

fn setup(batch: u32, precision: Precision) -> TrainSetup {
    TrainSetup {
        global_batch: batch,
        precision,
        optimizer: Optimizer::Adamw,
        tokens: 5e9,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    }
}

/// Time, and money at 3 and 1 per device-hour.
fn by_time(_: [u64; 2], seconds: f64) -> f64 {
    seconds
}

fn by_cost(devices: [u64; 2], seconds: f64) -> f64 {
    (3.0 * devices[0] as f64 + devices[1] as f64) * seconds / 3600.0
}

/// A budget the tests' small searches never reach.
fn unbounded() -> WorkBudget {
    WorkBudget::new(u64::MAX)
}

/// A pipeline over the fast and the steady devices, with the fast group first.
fn pair_spec<'a>(
    model: &'a ModelDims,
    setup: &'a TrainSetup,
    graph: &'a OpGraph,
    groups: [&'a ClusterFigures; 2],
    sensitive_on_second: bool,
) -> PipelineSpec<'a> {
    let [a, b] = groups;
    PipelineSpec {
        model,
        setup,
        graph,
        first: PipelineGroup {
            cluster: a,
            available: a.devices(),
            hosts_sensitive: true,
        },
        second: PipelineGroup {
            cluster: b,
            available: b.devices(),
            hosts_sensitive: sensitive_on_second,
        },
        wan: None,
        max_devices: 256,
        keep: 2,
        sequence_parallel: None,
        tensor_overlap: None,
        side_costs: None,
    }
}

#[test]
fn the_partition_is_the_exhaustive_programmes_on_every_configuration_of_real_chains() {
    // Real stage costs (memory, recomputation, sends, the embedding and the head) on chains of
    // 1 to 96 blocks, dense and with a sensitive op only the first group runs: the search's
    // partition is the exhaustive programme's, ties included, and the old scan's wherever that
    // found the optimum (the scan stopped early where a stage's time dips as it grows).
    let (mut compared, mut scan_missed) = (0, 0);
    for layers in [1, 2, 5, 17, 40, 96] {
        let model = small_model(layers);
        for extra in [Vec::new(), vec!["attention".to_string()]] {
            let graph = op_graph(&model, &extra);
            let setup = setup(256, Precision::Bf16);
            let (a, b) = (cluster(fast(), 4), cluster(steady(), 8));
            let spec = pair_spec(&model, &setup, &graph, [&a, &b], extra.is_empty());
            for (shape, [fast, exhaustive, scan]) in
                compare_partitions_on_every_configuration(&spec, &by_cost)
            {
                assert_eq!(fast, exhaustive, "{layers} layers, {shape:?}");
                if fast != scan {
                    let pace = |p: &Option<(Vec<(usize, usize)>, f64)>| p.as_ref().map(|p| p.1);
                    assert!(
                        pace(&fast) < pace(&scan) || scan.is_none(),
                        "{layers} layers, {shape:?}: {fast:?} vs the scan's {scan:?}"
                    );
                    scan_missed += 1;
                }
                compared += 1;
            }
        }
    }
    assert!(compared > 1000, "only {compared} configurations compared");
    assert!(scan_missed * 10 < compared, "{scan_missed} of {compared}");
}

#[test]
fn stage_floors_hold_and_grow_with_the_stage_where_reductions_outweigh_the_backward() {
    // Sequences of 4 tokens: a stage's backward is microseconds while its gradient reduction
    // over 8 or 16 data ranks is milliseconds, so the floor counts `reduce − (1 − contention)
    // × backward` (the part no overlap hides) on every stage. With 2,048 tokens some stretch of
    // the chain adds more backward than its reduction, so that rule does not hold for every
    // stage; the reduction's lower hull (`floor::ReduceHull`) still counts the backward on some
    // stages of configurations whose whole reduction outweighs their backward. In both, every
    // floor is at most its stage's time and never falls as the stage grows, and the partition
    // the floors prune is the exhaustive programme's.
    let (mut checked, mut tight, mut compared) = ([0; 2], [0; 2], 0);
    for (regime, seq_len) in [(0, 4), (1, 2048)] {
        for layers in [5, 17] {
            let model = ModelDims::dense(layers, 2048, 5632, 16, 4, 32_000, seq_len, Mlp::Swiglu);
            let graph = op_graph(&model, &[]);
            let setup = setup(256, Precision::Bf16);
            let (a, b) = (cluster(fast(), 4), cluster(steady(), 8));
            let spec = pair_spec(&model, &setup, &graph, [&a, &b], true);
            let budget = unbounded();
            let prepared = prepare(&spec, &budget);
            for (_, shape) in configurations(&spec, &prepared, &by_cost, f64::INFINITY) {
                let Some(costing) = prepared.costing(&shape, &budget) else {
                    continue;
                };
                let (c, t) = partition::check_floors(&spec, &costing, shape);
                checked[regime] += c;
                tight[regime] += t;
                if shape.data > 1 {
                    let [fast, exhaustive, _] =
                        partition::compare_partitions(&spec, &costing, shape);
                    assert_eq!(
                        fast, exhaustive,
                        "{seq_len} tokens, {layers} layers, {shape:?}"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(
        checked.iter().all(|c| *c > 10_000),
        "{checked:?} floors checked"
    );
    assert!(
        tight[0] * 10 > checked[0],
        "{tight:?} of {checked:?} counted the backward"
    );
    assert!(
        tight[1] > 0 && tight[1] < tight[0],
        "{tight:?} of {checked:?} counted the backward"
    );
    assert!(compared > 100, "only {compared} partitions compared");
}

#[test]
fn a_configuration_refused_for_memory_has_no_partition_that_fits() {
    // Blocks as wide as Llama 2 70B's (about 0.86 G parameters, 14 GB of model states each
    // unsharded) on 80 GB and 40 GB devices: some configurations fit every stage, others none.
    // Where the memory test refuses one (`MemoryReach::admits`), the exhaustive programme finds
    // no partition either, and the search's partition is the exhaustive programme's everywhere.
    // The test with each stage's micro-batches in flight (`Stager::may_hold_stages`) refuses
    // every configuration the first does and some it lets through, never one that has a
    // partition.
    let (mut refused, mut partitioned, mut none, mut held_back) = (0, 0, 0, 0);
    let mut under_pace = 0;
    for layers in [3, 10, 24] {
        let model = ModelDims::dense(layers, 8192, 28672, 64, 8, 32_000, 4096, Mlp::Swiglu);
        let graph = op_graph(&model, &[]);
        let setup = setup(32, Precision::Bf16);
        let (a, b) = (cluster(fast(), 2), cluster(steady(), 4));
        let spec = pair_spec(&model, &setup, &graph, [&a, &b], true);
        let budget = unbounded();
        let prepared = prepare(&spec, &budget);
        // The configurations the search partitions: those its memory test admits.
        let admitted: BTreeSet<PipelineShape> =
            listed_configurations(&spec, &prepared, &by_cost, f64::INFINITY, Some(&budget))
                .into_iter()
                .map(|(_, shape)| shape)
                .collect();
        for (_, shape) in configurations(&spec, &prepared, &by_cost, f64::INFINITY) {
            let Some(costing) = prepared.costing(&shape, &budget) else {
                continue;
            };
            // One reach per configuration, one extended to every stage count, and the search's
            // (one per key, extended at its first configuration): the same answer.
            let stager = partition::stager(&spec, &costing, shape);
            let mut alone = MemoryReach::default();
            stager.reach_further(&mut alone, shape.stages);
            let mut widest = MemoryReach::default();
            stager.reach_further(&mut widest, [MAX_STAGES; 2]);
            let fits = alone.admits(shape.stages);
            assert_eq!(
                fits,
                widest.admits(shape.stages),
                "{layers} layers, {shape:?}"
            );
            assert_eq!(
                fits,
                Some(admitted.contains(&shape)),
                "{layers} layers, {shape:?}"
            );
            let fits = fits.expect("extended to its stages");
            let holds = stager.may_hold_stages(f64::INFINITY);
            assert!(
                fits || !holds,
                "{layers} layers, {shape:?}: held, yet refused"
            );
            let [fast, exhaustive, _] = partition::compare_partitions(&spec, &costing, shape);
            assert_eq!(fast, exhaustive, "{layers} layers, {shape:?}");
            // Under a cap on the pace, the test refuses only what no partition reaches: never
            // at the exhaustive programme's own pace, often a little under it.
            if let Some((_, pace)) = &exhaustive {
                assert!(
                    stager.may_hold_stages(*pace),
                    "{layers} layers, {shape:?}: refused at its own pace {pace}"
                );
                if !stager.may_hold_stages(pace * 0.95) {
                    under_pace += 1;
                }
            }
            match (fits, holds, exhaustive.is_some()) {
                (false, _, true) | (_, false, true) => {
                    panic!("{layers} layers, {shape:?}: refused, yet {exhaustive:?}")
                }
                (false, _, false) => refused += 1,
                (true, false, false) => held_back += 1,
                (true, true, true) => partitioned += 1,
                (true, true, false) => none += 1,
            }
        }
    }
    assert!(
        refused > 100 && partitioned > 100 && held_back > 100 && under_pace * 2 > partitioned,
        "{refused} refused, {held_back} held back by the micro-batches in flight, \
         {partitioned} partitioned ({under_pace} refused under 95 % of their pace), \
         {none} let through without a partition"
    );
}

#[test]
fn the_partitions_bound_answers_early_as_the_whole_bisection_would() {
    // Whether a configuration's floor bound is of use, and the cap found from the pace it
    // answers with, are those of the bound found by the whole bisection, on every configuration
    // of real chains and for limits at, next to and far from the bound
    // (`partition::check_least_slowest` asserts each). The spread bound the search asks first
    // is never above it, and within a fifth of it on most configurations.
    let (mut checked, mut close) = (0, 0);
    for layers in [1, 5, 17, 40, 96] {
        let model = small_model(layers);
        for extra in [Vec::new(), vec!["attention".to_string()]] {
            let graph = op_graph(&model, &extra);
            let setup = setup(256, Precision::Bf16);
            let (a, b) = (cluster(fast(), 4), cluster(steady(), 8));
            let spec = pair_spec(&model, &setup, &graph, [&a, &b], extra.is_empty());
            let budget = unbounded();
            let prepared = prepare(&spec, &budget);
            for (_, shape) in configurations(&spec, &prepared, &by_cost, f64::INFINITY) {
                let Some(costing) = prepared.costing(&shape, &budget) else {
                    continue;
                };
                let (least, spread) = partition::check_least_slowest(&spec, &costing, shape);
                if least.is_finite() {
                    checked += 1;
                    close += usize::from(spread >= 0.8 * least);
                }
            }
        }
    }
    assert!(
        checked > 1000 && close * 2 > checked,
        "only {checked} configurations with a finite bound, {close} of them spread within a fifth"
    );
}

#[test]
fn a_sites_fixed_step_cost_lengthens_every_pipeline_step_once() {
    // The steady group's site adds 0.5 s to every step (a calibration's `fixed_s`), the fast
    // group's 0.2 s: both run at once, so each plan's step grows by the larger, 0.5 s, and its
    // training time by 0.5 s per step; ranked by time, the same plans come out in the same order
    // (the same constant is added to each).
    let model = small_model(24);
    let graph = op_graph(&model, &[]);
    let setup = setup(256, Precision::Bf16);
    let (a, b) = (cluster(fast(), 4), cluster(steady(), 8));
    let (mut a_site, mut b_site) = (a.clone(), b.clone());
    a_site.fitted.step_overhead_s = 0.2;
    b_site.fitted.step_overhead_s = 0.5;
    let shipped = pair_spec(&model, &setup, &graph, [&a, &b], true);
    let calibrated = pair_spec(&model, &setup, &graph, [&a_site, &b_site], true);
    let plans = |spec| search_pipelines(spec, &by_time, f64::INFINITY, 1.0, &unbounded());
    let (before, after) = (plans(&shipped), plans(&calibrated));
    assert!(!before.is_empty());
    assert_eq!(before.len(), after.len());
    for ((_, x), (_, y)) in before.iter().zip(&after) {
        assert_eq!((&x.shape, &x.stages), (&y.shape, &y.stages));
        assert!((y.step_time_s - x.step_time_s - 0.5).abs() < 1e-9);
        assert_eq!(y.fixed_s, 0.5);
        let steps = x.train_time_s / x.step_time_s;
        assert!((y.train_time_s - steps * y.step_time_s).abs() < 1e-6 * y.train_time_s);
    }
}

#[test]
fn a_configurations_bound_counts_the_boundary_send_and_the_sites_fixed_seconds() {
    // Short sequences over a WAN (12 ms one way) between sites with fixed seconds per step: a
    // micro-batch computes in microseconds, so the send across the boundary (twice the
    // latency, forward and back) and the fixed seconds are most of every step. Every
    // configuration's bound stays at or below what its partition costs, under both
    // objectives; and the bound of the best plan's configuration is within a fifth of it
    // (counting compute alone it was a hundredth: nothing was left out of the search).
    let model = ModelDims::dense(12, 2048, 5632, 16, 4, 32_000, 64, Mlp::Swiglu);
    let graph = op_graph(&model, &[]);
    let setup = setup(128, Precision::Bf16);
    let (mut a, mut b) = (cluster(fast(), 4), cluster(steady(), 8));
    a.fitted.step_overhead_s = 0.05;
    b.fitted.step_overhead_s = 0.02;
    let mut spec = pair_spec(&model, &setup, &graph, [&a, &b], true);
    spec.wan = Some(WanLink {
        bandwidth: 12.5e9,
        latency_s: 0.012,
    });
    let budget = unbounded();
    let prepared = prepare(&spec, &budget);
    let mut costed = 0;
    for objective in [&by_time as &dyn Fn([u64; 2], f64) -> f64, &by_cost] {
        let mut best: Option<(f64, f64)> = None;
        for (bound, shape) in configurations(&spec, &prepared, objective, f64::INFINITY) {
            let Some(costing) = prepared.costing(&shape, &budget) else {
                continue;
            };
            let Some(plan) = cost_shape(&spec, &costing, shape, None) else {
                continue;
            };
            let score = objective(shape.devices(), plan.train_time_s);
            assert!(bound <= score, "{shape:?}: bound {bound} above {score}");
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, bound));
            }
            costed += 1;
        }
        let (score, bound) = best.expect("some configuration runs");
        assert!(
            bound >= 0.8 * score,
            "bound {bound} of the best plan's {score}"
        );
        let found = search_pipelines(&spec, objective, f64::INFINITY, 1.0, &unbounded());
        assert_eq!(found.first().map(|f| f.0), Some(score));
    }
    assert!(costed > 100, "only {costed} configurations costed");
}

#[test]
fn a_search_that_reaches_its_budget_stops_with_what_it_found() {
    let model = small_model(24);
    let graph = op_graph(&model, &[]);
    let setup = setup(256, Precision::Bf16);
    let (a, b) = (cluster(fast(), 4), cluster(steady(), 8));
    let spec = pair_spec(&model, &setup, &graph, [&a, &b], true);
    let full = unbounded();
    let everything = search_pipelines(&spec, &by_cost, f64::INFINITY, 1.0, &full);
    assert!(!full.reached() && !everything.is_empty());
    let needed = full.spent();
    // The same search with a tenth of what it needs: it stops, says so, and what it keeps is
    // a costed plan of the space, never better than the full search's best.
    let capped = WorkBudget::new(needed / 10);
    let some = search_pipelines(&spec, &by_cost, f64::INFINITY, 1.0, &capped);
    assert!(capped.reached());
    assert!(capped.spent() <= needed / 10);
    if let (Some((kept, _)), Some((best, _))) = (some.first(), everything.first()) {
        assert!(kept >= best);
    }
    // Too little even to cost the ops: nothing.
    let starved = WorkBudget::new(10);
    assert!(search_pipelines(&spec, &by_cost, f64::INFINITY, 1.0, &starved).is_empty());
    assert!(starved.reached());
    // The same cap stops at the same place.
    let again = WorkBudget::new(needed / 10);
    assert_eq!(
        search_pipelines(&spec, &by_cost, f64::INFINITY, 1.0, &again),
        some
    );
}

#[test]
fn the_budget_counts_every_evaluation_of_the_objective() {
    // Listing configurations bounds each with the plan's objective, and the checks before a
    // partition bisect the pace with it: a job of many configurations spends most of its
    // search there, so each evaluation is a unit of the budget, and the budget covers them all
    // (the objective is also asked once more for each plan kept, outside the count). A shallow
    // model with many stage counts to try is such a job: measured, 73,189 evaluations beside
    // 28,362 other units, so a budget that left them out would fall far below the count.
    let model = small_model(8);
    let graph = op_graph(&model, &[]);
    let setup = setup(256, Precision::Bf16);
    let (a, b) = (cluster(fast(), 4), cluster(steady(), 8));
    let spec = pair_spec(&model, &setup, &graph, [&a, &b], true);
    let calls = std::cell::Cell::new(0u64);
    let counted = |devices: [u64; 2], train_s: f64| {
        calls.set(calls.get() + 1);
        by_cost(devices, train_s)
    };
    let budget = unbounded();
    let found = search_pipelines(&spec, &counted, f64::INFINITY, 1.0, &budget);
    let kept = found.len() as u64;
    assert!(kept > 0);
    let evaluations = calls.get();
    assert!(evaluations > 10_000, "{evaluations} evaluations");
    assert!(budget.spent() >= evaluations - kept);
    // Most of this search is evaluations: the other units are fewer.
    assert!(budget.spent() - (evaluations - kept) < evaluations);
}

#[test]
fn pairs_that_share_op_costs_find_what_each_finds_alone() {
    // Three groups in every order, as a job's pair search runs them: with op costs shared
    // (each group's worked out at its first pair), every pair finds what it finds on its own,
    // spends the same work, and the groups' costs are worked out once per group and role.
    let model = small_model(12);
    let graph = op_graph(&model, &[]);
    let setup = setup(64, Precision::Bf16);
    let clusters = [
        cluster(fast(), 2),
        cluster(steady(), 4),
        cluster(steady(), 2),
    ];
    let shared = SideCosts::default();
    let (mut pairs, mut planned) = (0, 0);
    for (i, a) in clusters.iter().enumerate() {
        for (j, b) in clusters.iter().enumerate() {
            if i == j {
                continue;
            }
            let alone_spec = pair_spec(&model, &setup, &graph, [a, b], i == 0);
            let shared_spec = PipelineSpec {
                side_costs: Some(&shared),
                ..alone_spec.clone()
            };
            let (alone_budget, shared_budget) = (unbounded(), unbounded());
            let alone = search_pipelines(&alone_spec, &by_cost, f64::INFINITY, 1.0, &alone_budget);
            let with_shared =
                search_pipelines(&shared_spec, &by_cost, f64::INFINITY, 1.0, &shared_budget);
            assert_eq!(alone, with_shared, "{i} then {j}");
            assert_eq!(alone_budget.spent(), shared_budget.spent(), "{i} then {j}");
            pairs += 1;
            planned += usize::from(!alone.is_empty());
        }
    }
    assert_eq!(pairs, 6);
    assert!(planned >= 2, "{planned} pairs with a plan");
    // Each group first (hosting the sensitive ops) and second (hosting them only after the
    // first group): at most two entries per group.
    assert!(shared.groups.borrow().len() <= 6);
}

#[test]
fn the_search_is_within_one_percent_of_exhaustive_search_on_small_pools() {
    let pools = [(2, 4), (1, 8), (2, 2)];
    let mut compared = 0;
    for (layers, batch) in [(3, 8), (4, 16)] {
        let model = small_model(layers);
        let graph = op_graph(&model, &[]);
        let setup = setup(batch, Precision::Bf16);
        for &(fast_nodes, steady_nodes) in &pools {
            let (a, b) = (cluster(fast(), fast_nodes), cluster(steady(), steady_nodes));
            for (first, second) in [(&a, &b), (&b, &a)] {
                let spec = PipelineSpec {
                    model: &model,
                    setup: &setup,
                    graph: &graph,
                    first: PipelineGroup {
                        cluster: first,
                        available: first.devices(),
                        hosts_sensitive: true,
                    },
                    second: PipelineGroup {
                        cluster: second,
                        available: second.devices(),
                        hosts_sensitive: true,
                    },
                    wan: None,
                    max_devices: 64,
                    keep: 1,
                    sequence_parallel: None,
                    tensor_overlap: None,
                    side_costs: None,
                };
                for objective in [&by_time as &dyn Fn([u64; 2], f64) -> f64, &by_cost] {
                    let fast_result =
                        search_pipelines(&spec, objective, f64::INFINITY, 1.0, &unbounded());
                    let exhaustive = search_exhaustively(&spec, objective);
                    match (fast_result.first(), exhaustive) {
                        (Some((mine, _)), Some((best, _))) => {
                            assert!(
                                *mine <= best * 1.01,
                                "layers {layers}, pools {fast_nodes}/{steady_nodes}: {mine} vs exhaustive {best}"
                            );
                            assert!(
                                *mine >= best * (1.0 - 1e-9),
                                "{mine} beats exhaustive {best}"
                            );
                            compared += 1;
                        }
                        (None, None) => {}
                        (mine, theirs) => panic!("found {mine:?} vs exhaustive {theirs:?}"),
                    }
                }
            }
        }
    }
    assert!(compared >= 12, "only {compared} comparisons");
}

#[test]
fn sensitive_ops_stay_on_devices_that_run_them_at_their_precision() {
    // An fp8 job: STEADY has no fp8, so it may only run the sensitive ops (in bf16).
    let model = small_model(4);
    let graph = op_graph(&model, &[]);
    let setup = setup(16, Precision::Fp8);
    let (a, b) = (cluster(fast(), 1), cluster(steady(), 2));
    let spec = PipelineSpec {
        model: &model,
        setup: &setup,
        graph: &graph,
        first: PipelineGroup {
            cluster: &a,
            available: 8,
            hosts_sensitive: true,
        },
        second: PipelineGroup {
            cluster: &b,
            available: 8,
            hosts_sensitive: true,
        },
        wan: None,
        max_devices: 64,
        keep: 3,
        sequence_parallel: None,
        tensor_overlap: None,
        side_costs: None,
    };
    let found = search_pipelines(&spec, &by_time, f64::INFINITY, 1.0, &unbounded());
    assert!(!found.is_empty());
    let ops: Vec<&crate::workload::Op> = graph.ops().collect();
    for (_, plan) in &found {
        for stage in plan.stages.iter().filter(|s| s.side == 1) {
            for op in ops.get(stage.ops[0]..stage.ops[1]).unwrap() {
                assert!(op.sensitive, "{:?} on the device without fp8", op.kind);
            }
        }
    }
}

fn arbitrary_case() -> impl Strategy<Value = (u32, u32, u32, u32, u64, u64, bool)> {
    (
        2u32..6,
        prop::sample::select(vec![4u32, 8, 16]),
        1u32..3,
        1u32..4,
        8u64..40,
        4u64..24,
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn plans_cover_the_chain_once_fit_memory_and_oversubscribe_nothing(
        (layers, batch, fast_nodes, steady_nodes, avail_fast, avail_steady, sensitive_attention) in arbitrary_case()
    ) {
        let model = small_model(layers);
        let extra = if sensitive_attention { vec!["attention".to_string()] } else { Vec::new() };
        let graph = op_graph(&model, &extra);
        let setup = setup(batch, Precision::Bf16);
        let (a, b) = (cluster(fast(), fast_nodes), cluster(steady(), steady_nodes));
        let spec = PipelineSpec {
            model: &model,
            setup: &setup,
            graph: &graph,
            first: PipelineGroup { cluster: &a, available: avail_fast.min(a.devices()), hosts_sensitive: true },
            second: PipelineGroup { cluster: &b, available: avail_steady.min(b.devices()), hosts_sensitive: !sensitive_attention },
            wan: None,
            max_devices: 48,
            keep: 4,
            sequence_parallel: None,
            tensor_overlap: None,
            side_costs: None,
        };
        for (_, plan) in search_pipelines(&spec, &by_cost, f64::INFINITY, 1.0, &unbounded()) {
            let mut next = 0;
            for stage in &plan.stages {
                prop_assert_eq!(stage.ops[0], next);
                prop_assert!(stage.ops[1] > stage.ops[0]);
                next = stage.ops[1];
                let usable = usable_memory(if stage.side == 0 { &a.device } else { &b.device });
                prop_assert!(stage.memory_bytes <= usable, "{} > {}", stage.memory_bytes, usable);
            }
            prop_assert_eq!(next, graph.len());
            let devices = plan.shape.devices();
            prop_assert!(devices[0] <= spec.first.available);
            prop_assert!(devices[1] <= spec.second.available);
            prop_assert!(devices[0] + devices[1] <= spec.max_devices);
            let per_side = |side: usize| plan.stages.iter().filter(|s| s.side == side).count() as u32;
            prop_assert_eq!([per_side(0), per_side(1)], plan.shape.stages);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A pipeline over two groups of the same device type is a single-type layout with a pinned
    /// split: each stage's memory is what the single-type memory function gives that rank, and
    /// the heaviest stage's is the single-type plan's (±1 %).
    #[test]
    fn two_groups_of_one_type_report_the_single_type_memory(
        (layers, batch, nodes_a, nodes_b) in (3u32..9, prop::sample::select(vec![8u32, 16, 32]), 1u32..3, 1u32..3)
    ) {
        let model = small_model(layers);
        let graph = op_graph(&model, &[]);
        let setup = setup(batch, Precision::Bf16);
        let (a, b) = (cluster(fast(), nodes_a), cluster(fast(), nodes_b));
        let spec = PipelineSpec {
            model: &model,
            setup: &setup,
            graph: &graph,
            first: PipelineGroup { cluster: &a, available: a.devices(), hosts_sensitive: true },
            second: PipelineGroup { cluster: &b, available: b.devices(), hosts_sensitive: true },
            wan: None,
            max_devices: 48,
            keep: 4,
            sequence_parallel: None,
            tensor_overlap: None,
            side_costs: None,
        };
        let ops: Vec<&crate::workload::Op> = graph.ops().collect();
        for (_, plan) in search_pipelines(&spec, &by_cost, f64::INFINITY, 1.0, &unbounded()) {
            let shape = plan.shape;
            let p = shape.stages[0] + shape.stages[1];
            let m = f64::from(batch) / f64::from(shape.data * shape.micro_batch);
            let blocks: Vec<u32> = plan
                .stages
                .iter()
                .map(|s| {
                    ops[s.ops[0]..s.ops[1]]
                        .iter()
                        .filter(|o| o.kind == OpKind::Attention)
                        .count() as u32
                })
                .collect();
            let layout = |tensor: u32, recompute: Recompute| crate::workload::Layout {
                tensor,
                pipeline: p,
                data: shape.data,
                micro_batch: shape.micro_batch,
                zero: shape.zero,
                recompute,
                sequence_parallel: tensor > 1,
                ..crate::workload::Layout::single()
            };
            for (k, stage) in plan.stages.iter().enumerate() {
                let holding = crate::workload::StageHolding {
                    blocks: f64::from(blocks[k]),
                    embedding: k == 0,
                    head: k + 1 == plan.stages.len(),
                    in_flight: (f64::from(p) - k as f64).min(m).max(1.0),
                };
                let single = crate::workload::stage_memory(
                    &model,
                    &setup,
                    &layout(shape.tensor[stage.side], stage.recompute),
                    &holding,
                );
                prop_assert!(
                    (stage.memory_bytes - single.total).abs() <= 0.01 * single.total,
                    "stage {k}: {} vs single-type {}", stage.memory_bytes, single.total
                );
            }
            let recompute = plan.stages[0].recompute;
            if shape.tensor[0] == shape.tensor[1]
                && plan.stages.iter().all(|s| s.recompute == recompute)
                && blocks.iter().all(|&b| b > 0)
            {
                let split = crate::workload::StageSplit::of_chunks(
                    loam_ir::types::SplitRule::Pinned,
                    &blocks,
                    p,
                );
                let single = crate::workload::memory_per_device(
                    &model,
                    &setup,
                    &crate::workload::Layout { split, ..layout(shape.tensor[0], recompute) },
                );
                let pair = plan.stages.iter().map(|s| s.memory_bytes).fold(0.0, f64::max);
                prop_assert!(
                    (pair - single.total).abs() <= 0.01 * single.total,
                    "pair {pair} vs single-type {} ({blocks:?})", single.total
                );
            }
        }
    }
}
