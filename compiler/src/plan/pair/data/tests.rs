//! The data-parallel split: its share grid, and the layouts it keeps per group and share against
//! a search keeping ten times as many, on small pools.

use super::{KEEP_PER_SHARE, Pruning, search_splits, shares};
use crate::catalogue::Catalogue;
use crate::check::check_file;
use crate::check::{model_dims, train_setup};
use crate::cost::usable_memory;
use crate::plan::pair::PairInput;
use crate::plan::placement::options;
use crate::plan::request::objective;
use crate::plan::stages::job_graph;
use crate::plan::tests::{node_group, one_site_catalogue};
use crate::syntax::parse;
use crate::workload::Pins;
use loam_ir::span::FileId;
use proptest::prelude::*;

#[test]
fn shares_are_whole_sequences_and_leave_both_groups_some() {
    assert_eq!(shares(16), (1..16).collect::<Vec<_>>());
    assert_eq!(shares(1024).len(), 15);
    assert!(shares(1024).iter().all(|s| s % 64 == 0));
    assert_eq!(shares(4), vec![1, 2, 3]);
    assert!(shares(1).is_empty());
}

/// A one-site pool, `small`, of 64 devices: 16 H100, 32 A100 and 16 L40S, all with fp32
/// arithmetic, the tenant's quota the whole of each.
fn small_catalogue() -> Catalogue {
    let groups = [
        node_group("H100_SXM", 2, 8, "400Gbps", 30),
        node_group("A100_SXM_80GB", 4, 4, "200Gbps", 14),
        node_group("L40S", 2, 2, "100Gbps", 7),
    ];
    let quota = [
        "{ device: H100_SXM, guaranteed: 16, elastic: 0 }",
        "{ device: A100_SXM_80GB, guaranteed: 32, elastic: 0 }",
        "{ device: L40S, guaranteed: 16, elastic: 0 }",
    ];
    one_site_catalogue("small", "1.6Tbps", &groups, &quota)
}

/// A job on the [`small_catalogue`] pool.
fn lab_job(layers: u32, hidden: u32, heads: u32, batch: u32, goal: &str, extra: &str) -> String {
    format!(
        r#"job "split" {{
  tenant = "lab"
  model {{
    layers  = {layers}
    hidden  = {hidden}
    ffn     = {}
    heads   = {heads}
    vocab   = 32000
    seq_len = 2048
  }}
  train {{
    tokens       = 20B
    global_batch = {batch}
    precision    = bf16
  }}
  resources {{
    pool = small
    {extra}
  }}
  goal {{
    {goal}
  }}
}}
"#,
        hidden * 4
    )
}

/// Layouts per group and share in the wide search: ten times the planner's.
const WIDE_KEEP: usize = 10 * KEEP_PER_SHARE;

/// Runs `f` on the pairing input of the first job in `text`, planned on `catalogue`.
fn with_input<T>(
    catalogue: &Catalogue,
    text: &str,
    f: impl FnOnce(&PairInput<'_, '_>) -> Option<T>,
) -> Option<T> {
    let parsed = parse(FileId(0), text);
    let job = check_file(&parsed.file?).jobs.into_iter().next()?;
    let pool = catalogue.pool(&job.resources.pool.value)?;
    let (options, _) = options(&job, pool, catalogue);
    let checkpoint = crate::plan::single::CheckpointNeeds::of(&job, pool);
    let objectives: Vec<_> = options
        .iter()
        .map(|o| objective(&job, pool, o, &checkpoint))
        .collect();
    let single_scores = vec![None; options.len()];
    let model = model_dims(&job.model);
    let setup = train_setup(&job);
    let graph = job_graph(&job);
    let convert = |x: f64| x;
    let budget = crate::plan::search::budget::WorkBudget::new(u64::MAX);
    let walks = crate::plan::search::budget::WalkBudget::new(u64::MAX);
    f(&PairInput {
        job: &job,
        pool,
        options: &options,
        objectives: &objectives,
        single_scores: &single_scores,
        model: &model,
        setup: &setup,
        graph: &graph,
        checkpoint: &checkpoint,
        pins: Pins::default(),
        convert: &convert,
        incumbent: f64::INFINITY,
        budget: &budget,
        walks: &walks,
        threads: 2,
    })
}

/// The best score of the planner's search and of the wide one.
fn best_scores(catalogue: &Catalogue, text: &str) -> Option<(f64, f64)> {
    with_input(catalogue, text, |input| {
        let fast = search_splits(input, &mut Vec::new(), KEEP_PER_SHARE, Pruning::Floors);
        let all = search_splits(input, &mut Vec::new(), WIDE_KEEP, Pruning::None);
        Some((fast.first()?.score, all.first()?.score))
    })
}

#[test]
fn the_kept_layouts_come_within_eight_percent_of_ten_times_as_many() {
    let catalogue = small_catalogue();
    let mut compared = 0;
    let mut worst: f64 = 1.0;
    for (layers, hidden, heads) in [(16, 2048, 16)] {
        for batch in [96, 256] {
            for goal in [
                "optimize = time",
                "optimize = cost",
                "optimize = cost\n    deadline = 20d",
            ] {
                for extra in ["", "max_devices = 24", "devices = [A100_SXM_80GB, L40S]"] {
                    let text = lab_job(layers, hidden, heads, batch, goal, extra);
                    let Some((fast, exact)) = best_scores(&catalogue, &text) else {
                        continue;
                    };
                    compared += 1;
                    assert!(fast >= exact * (1.0 - 1e-12), "{text}: {fast} < {exact}");
                    worst = worst.max(fast / exact);
                }
            }
        }
    }
    assert!(compared >= 12, "only {compared} pools had a split");
    // Measured: 9 of 18 pools within 0.01 %, median 1.1 %, worst 6.9 % (a time goal with 24
    // devices for both groups, where a layout outside each group's best few pairs better).
    assert!(worst <= 1.08, "the kept layouts are {worst} times the best");
}

/// The plans of the search that skips shares by their floor, as (score, shares, layouts).
fn kept(catalogue: &Catalogue, text: &str, pruning: Pruning) -> Option<Vec<String>> {
    with_input(catalogue, text, |input| {
        let splits = search_splits(input, &mut Vec::new(), KEEP_PER_SHARE, pruning);
        Some(
            splits
                .iter()
                .map(|s| format!("{} {:?} {:?}", s.score, s.batches, s.replicas))
                .collect(),
        )
    })
}

#[test]
fn skipping_shares_below_their_floor_keeps_the_plans_every_share_gives() {
    let catalogue = small_catalogue();
    let mut compared = 0;
    for batch in [96, 256] {
        for goal in [
            "optimize = time",
            "optimize = cost",
            "optimize = balanced",
            "optimize = carbon",
            // Missed by every plan: the floors of late shares are late too.
            "optimize = time\n    deadline = 1d",
            "optimize = cost\n    budget = 10 CNY",
        ] {
            for extra in ["", "max_devices = 24", "devices = [A100_SXM_80GB, L40S]"] {
                let text = lab_job(16, 2048, 16, batch, goal, extra);
                let Some(every) = kept(&catalogue, &text, Pruning::None) else {
                    continue;
                };
                let skipping = kept(&catalogue, &text, Pruning::Floors);
                assert_eq!(skipping.as_ref(), Some(&every), "{text}");
                compared += usize::from(!every.is_empty());
            }
        }
    }
    assert!(compared >= 30, "only {compared} pools had a split");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn splits_share_the_batch_fit_memory_and_oversubscribe_nothing(
        layers in 4u32..24,
        hidden in prop::sample::select(vec![1024u32, 2048, 3072]),
        batch in prop::sample::select(vec![32u32, 48, 64, 96, 128]),
        goal in prop::sample::select(vec!["optimize = time", "optimize = cost", "optimize = carbon"]),
        cap in prop::sample::select(vec!["", "max_devices = 20", "max_devices = 40"]),
    ) {
        let catalogue = small_catalogue();
        let text = lab_job(layers, hidden, 16, batch, goal, cap);
        let checked = with_input(&catalogue, &text, |input| {
            let max = input.job.resources.max_devices.as_ref().map_or(u64::MAX, |m| m.value);
            let splits = search_splits(input, &mut Vec::new(), KEEP_PER_SHARE, Pruning::Floors);
            // Three types that all host these small models: every pool pairs some of them.
            assert!(!splits.is_empty());
            for split in splits {
                let mut sequences = 0;
                for ((p, r), share) in split.placements.iter().zip(&split.replicas).zip(split.batches) {
                    let l = &r.layout;
                    let degrees = u64::from(l.tensor) * u64::from(l.pipeline) * u64::from(l.data)
                        * u64::from(l.context) * u64::from(l.expert);
                    assert_eq!(degrees, r.devices);
                    assert!(r.devices <= p.available);
                    assert_eq!(share % (l.data * l.micro_batch), 0);
                    assert!(r.estimate.memory_per_device_bytes <= usable_memory(&p.cluster.device));
                    sequences += share;
                }
                assert_eq!(sequences, batch);
                assert!(split.devices()[0] + split.devices()[1] <= max);
                assert!(split.step_time_s >= split.exchange_s);
            }
            Some(())
        });
        prop_assert!(checked.is_some());
    }
}

#[test]
fn a_job_past_its_walk_cap_stops_at_the_same_place_on_any_number_of_threads() {
    // A job over the small pool's three device types: its single-type search of each node group
    // and its data split's search of each group on each batch share are layout walks under one
    // cap. Planned without a cap it spends some units and says nothing of a cap; under a third
    // of them it stops, says so (L3010, naming the layouts visited), spends at most the cap and
    // a shape's costings per walk over it, and gives the same plan on one, two or three threads
    // (the walks run in rounds that do not depend on the threads, each charged in order).
    use crate::plan::planner::plan_job_walking;
    use crate::plan::search::budget::WalkBudget;
    let catalogue = small_catalogue();
    // A budget no plan meets: the pairs are searched, the data split's shares each walked.
    let text = lab_job(
        16,
        2048,
        16,
        256,
        "optimize = cost\n    budget = 10 CNY",
        "",
    );
    let parsed = parse(FileId(0), &text);
    let job = check_file(&parsed.file.unwrap())
        .jobs
        .into_iter()
        .next()
        .unwrap();
    let walks = WalkBudget::new(u64::MAX);
    let whole = plan_job_walking(&job, "split.loam", &catalogue, 2, &walks);
    let needed = walks.spent();
    assert!(!walks.reached());
    // Measured: 39,820 units, and data splits among the alternatives.
    assert!(needed > 20_000, "{needed} units");
    assert!(
        whole
            .alternatives
            .iter()
            .any(|a| a.shape == "heterogeneous-data")
    );
    let capped_codes = |plan: &loam_ir::plan::Plan| -> Vec<String> {
        plan.diagnostics
            .iter()
            .filter(|d| d.code.as_str() == "L3010")
            .map(|d| d.message.clone())
            .collect()
    };
    assert!(
        capped_codes(&whole).is_empty(),
        "{:?}",
        capped_codes(&whole)
    );
    let cap = needed / 3;
    let runs: Vec<(String, u64)> = [1, 2, 3]
        .into_iter()
        .map(|threads| {
            let walks = WalkBudget::new(cap);
            let plan = plan_job_walking(&job, "split.loam", &catalogue, threads, &walks);
            assert!(walks.reached());
            // Three groups, fifteen shares each, and the regions of each group once more: at
            // most 48 walks, each over its allowance by at most a shape's four ZeRO stages.
            assert!(walks.spent() <= cap + 4 * 48, "{} of {cap}", walks.spent());
            let said = capped_codes(&plan);
            assert_eq!(said.len(), 1, "{said:?}");
            assert!(said[0].contains("layouts visited"), "{said:?}");
            (serde_json::to_string(&plan).unwrap(), walks.spent())
        })
        .collect();
    assert!(runs.windows(2).all(|w| w[0] == w[1]));
    assert_ne!(runs[0].0, serde_json::to_string(&whole).unwrap());
}
