//! Planner tests on the shipped examples and the built-in catalogue.

use super::{plan_job, stage_ranges};
use crate::catalogue::builtin;
use crate::check::{Job, check_file};
use crate::syntax::parse;
use loam_ir::plan::Plan;
use loam_ir::span::FileId;
use loam_ir::types::{Hetero, Precision};

fn jobs(text: &str) -> Vec<Job> {
    let parsed = parse(FileId(0), text);
    check_file(&parsed.file.unwrap()).jobs
}

fn plan_text(text: &str) -> Plan {
    plan_with(text, &builtin())
}

/// The plan of the first job of `text` against `catalogue`.
pub(crate) fn plan_with(text: &str, catalogue: &crate::catalogue::Catalogue) -> Plan {
    let job = jobs(text).remove(0);
    plan_job(&job, "job.loam", catalogue)
}

/// The text of a shipped example.
pub(crate) fn example(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn stage_ranges_cover_every_layer_once() {
    for layers in 1..40u64 {
        for stages in 1..=layers {
            let ranges = stage_ranges(layers, stages);
            assert_eq!(ranges.len() as u64, stages);
            let mut next = 0;
            for [a, b] in &ranges {
                assert_eq!(*a, next);
                assert!(b > a);
                next = *b;
            }
            assert_eq!(next, layers);
            let sizes: Vec<u64> = ranges.iter().map(|[a, b]| b - a).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        }
    }
}

#[test]
fn every_example_plans_deterministically() {
    for name in [
        "llama3-70b-pretrain.loam",
        "llama3-8b-finetune.loam",
        "pinned-layout-13b.loam",
    ] {
        let first = plan_text(&example(name));
        assert!(first.feasible, "{name}: {:?}", first.reasons);
        assert_eq!(first, plan_text(&example(name)));
    }
}

#[test]
fn pinned_fields_are_kept() {
    let plan = plan_text(&example("pinned-layout-13b.loam"));
    let layout = plan.layout.unwrap();
    assert_eq!((layout.tensor, layout.pipeline, layout.data), (4, 2, 16));
}

/// The hours a plan takes, from its estimate.
fn hours(plan: &Plan) -> f64 {
    plan.estimate.as_ref().unwrap().train_time_h
}

#[test]
fn the_heterogeneous_example_beats_every_single_type_plan() {
    let plan = plan_text(&example("hetero-70b-guiyang.loam"));
    assert!(plan.feasible, "{:?}", plan.reasons);
    let devices: Vec<&str> = plan.groups.iter().map(|g| g.device.as_str()).collect();
    assert_eq!(devices.len(), 2);
    assert_ne!(devices[0], devices[1]);
    // Every group runs some stage; together the stages cover every block once.
    for g in 0..2 {
        assert!(plan.stages.iter().any(|s| s.group == g));
    }
    let mut next = 0;
    for s in &plan.stages {
        assert_eq!(s.layers[0], next);
        next = s.layers[1];
    }
    assert_eq!(next, 80);
    // The sensitive ops run on the group whose devices have fp32 arithmetic.
    let catalogue = builtin();
    let head = plan
        .stages
        .iter()
        .find(|s| s.ops.iter().any(|o| o == "lm_head"))
        .unwrap();
    assert!(head.sensitive_ops.iter().any(|o| o.starts_with("lm_head")));
    let host = &plan.groups[head.group as usize].device;
    assert!(
        catalogue
            .device(host)
            .unwrap()
            .peak(Precision::Fp32)
            .is_some(),
        "{host}"
    );
    // The best single-type plan is listed, slower, with a typed reason.
    assert!(!beaten_single_type(&plan).lost_on.is_empty());
}

#[test]
fn the_data_parallel_example_splits_the_batch_over_two_types() {
    let plan = plan_text(&example("hetero-data-70b-shanghai.loam"));
    assert!(plan.feasible, "{:?}", plan.reasons);
    assert_eq!(plan.hetero, Some(Hetero::Data));
    assert_eq!(plan.groups.len(), 2);
    assert_ne!(plan.groups[0].device, plan.groups[1].device);
    let mut sequences = 0;
    for (k, g) in plan.groups.iter().enumerate() {
        let l = g.layout.as_ref().expect("each group has its layout");
        // The layout uses exactly the group's devices, and its share is whole micro-batches.
        assert_eq!(
            l.tensor * l.pipeline * l.data * l.context * l.expert,
            g.devices,
            "{g:?}"
        );
        let share = g.sequences_per_step.expect("each group has its share");
        assert_eq!(share % (l.data * l.micro_batch), 0, "{g:?}");
        sequences += share;
        // One replica's stages cover every block once, on this group.
        let mut next = 0;
        for s in &g.stages {
            assert_eq!((s.group, s.layers[0]), (k as u64, next));
            next = s.layers[1];
        }
        assert_eq!(next, 80);
        assert_eq!(g.stages.len() as u64, l.pipeline * l.virtual_stages);
    }
    assert_eq!(sequences, plan.workload.global_batch);
    assert_eq!(plan.stages, plan.groups[0].stages);
    assert_eq!(beaten_single_type(&plan).lost_on, "slower");
}

/// The best single-type plan among the alternatives of `plan`, a time-goal plan over two
/// groups, after checking that it is slower and that `why` says by how much.
fn beaten_single_type(plan: &Plan) -> &loam_ir::plan::AlternativeIr {
    let single = plan
        .alternatives
        .iter()
        .find(|a| a.shape == "single-type")
        .expect("a single-type alternative");
    assert!(single.objective > hours(plan) * 3600.0, "{single:?}");
    assert!(
        plan.why.contains("better than the best single-type plan"),
        "{}",
        plan.why
    );
    single
}

#[test]
fn a_type_without_fp32_is_never_given_whole_replicas_beside_one_with_it() {
    // Ascend 910B publishes no fp32 rate and H800 does: only pipelines pair them.
    let plan = plan_text(&example("hetero-70b-guiyang.loam"));
    assert_eq!(plan.hetero, Some(Hetero::Pipeline));
    assert!(
        plan.alternatives
            .iter()
            .filter(|a| a.shape == "heterogeneous-data")
            .all(|a| !(a.summary.contains("Ascend910B") && a.summary.contains("H800_SXM"))),
        "{:?}",
        plan.alternatives
    );
}

fn lab_job(extra_resources: &str, goal: &str) -> String {
    format!(
        r#"job "lab-13b" {{
  tenant = "nlp"
  model {{
    layers   = 40
    hidden   = 5120
    ffn      = 13824
    heads    = 40
    vocab    = 32000
    seq_len  = 4096
  }}
  train {{
    tokens       = 100B
    global_batch = 256
    precision    = bf16
  }}
  data "tiny" {{
    site = alpha
    size = 2TB
  }}
  resources {{
    pool = lab
    {extra_resources}
  }}
  goal {{
    {goal}
  }}
  checkpoint {{
    path = "/ckpt/nlp/lab-13b"
  }}
}}
"#
    )
}

#[test]
fn a_pipeline_crosses_sites_only_within_the_latency_budget() {
    // The alpha–beta link has 15 ms of latency.
    let tight = plan_text(&lab_job("max_latency = 5ms", "optimize = time"));
    let loose = plan_text(&lab_job("max_latency = 50ms", "optimize = time"));
    let sites = |p: &Plan| -> Vec<String> { p.groups.iter().map(|g| g.site.clone()).collect() };
    assert!(tight.feasible && loose.feasible);
    let spans = |p: &Plan| {
        let s = sites(p);
        s.windows(2).any(|w| w[0] != w[1])
            || p.alternatives
                .iter()
                .any(|a| a.summary.contains("alpha") && a.summary.contains("beta"))
    };
    assert!(!spans(&tight), "{:?}", tight);
    assert!(hours(&loose) <= hours(&tight) + 1e-9);
    // The data comparison lists the strategies the alternatives stand for.
    let data = tight.data.unwrap();
    assert!(
        data.options.iter().filter(|o| o.chosen).count() == 1,
        "{data:?}"
    );
    assert!(data.options.iter().any(|o| o.strategy == "move-compute"));
}

/// A dense bf16 job `name` of `tenant` with `model`'s layers, hidden, ffn, heads, vocab and
/// seq_len, `tokens` and `batch`, and `rest` (its further blocks) after its `train` block.
fn dense_job(
    name: &str,
    tenant: &str,
    model: [u64; 6],
    tokens: &str,
    batch: u32,
    rest: &str,
) -> String {
    let [layers, hidden, ffn, heads, vocab, seq_len] = model;
    format!(
        r#"job "{name}" {{
  tenant = "{tenant}"
  model {{
    layers   = {layers}
    hidden   = {hidden}
    ffn      = {ffn}
    heads    = {heads}
    vocab    = {vocab}
    seq_len  = {seq_len}
  }}
  train {{
    tokens       = {tokens}
    global_batch = {batch}
    precision    = bf16
  }}
{rest}}}
"#
    )
}

/// A `resources` block of at most 8 H100 on `xirang`.
const ON_EIGHT_H100: &str = "  resources {\n    pool        = xirang\n    devices     = [H100_SXM]\n    max_devices = 8\n  }\n";

#[test]
fn a_one_device_cost_job_runs_on_a_slice_and_a_time_job_does_not() {
    let job = |goal: &str| {
        let rest = format!(
            "  resources {{\n    pool    = xirang\n    devices = [A100_SXM_80GB]\n    max_devices = 1\n  }}\n  goal {{\n    {goal}\n  }}\n  checkpoint {{\n    path = \"/ckpt/vision/tiny\"\n  }}\n"
        );
        let gpt2_small = [12, 768, 3072, 12, 50257, 1024];
        dense_job("tiny", "vision", gpt2_small, "200M", 32, &rest)
    };
    let whole = plan_text(&job("optimize = time"));
    let sliced = plan_text(&job("optimize = cost\n    deadline = 3d"));
    assert_eq!(whole.groups[0].slice, None);
    let slice = sliced.groups[0].slice.clone().expect("a slice profile");
    let profile = builtin()
        .device("A100_SXM_80GB")
        .unwrap()
        .slice_profiles
        .iter()
        .find(|p| p.name == slice)
        .cloned()
        .unwrap();
    let e = sliced.estimate.as_ref().unwrap();
    assert!(e.memory_per_device_gib * 1024f64.powi(3) <= profile.memory_bytes);
    assert!(e.train_time_h <= 72.0);
    assert!(hours(&sliced) > hours(&whole));
}

#[test]
fn an_interruptible_job_gets_its_cheapest_hours_within_the_deadline() {
    let plan = plan_text(&example("interruptible-cost-7b.loam"));
    let schedule = plan.schedule.clone().expect("a run window");
    assert!(schedule.saving > 0.0);
    assert!(schedule.hours_per_day < 24);
    assert!(schedule.train_time_h <= 60.0 * 24.0);
    assert!(schedule.train_time_h > hours(&plan));
    // A job that cannot be interrupted runs around the clock.
    let steady = plan_text(
        &example("interruptible-cost-7b.loam")
            .replace("interruptible = true", "interruptible = false"),
    );
    assert_eq!(steady.schedule, None);
}

/// The note of `plan` that contains `text`.
fn note_with<'p>(plan: &'p Plan, text: &str) -> &'p str {
    plan.notes
        .iter()
        .find(|n| n.contains(text))
        .unwrap_or_else(|| panic!("no note with {text:?} in {:?}", plan.notes))
}

#[test]
fn borrowed_devices_say_who_may_take_them() {
    let plan = plan_text(&example("hetero-70b-guiyang.loam"));
    let borrowed = note_with(&plan, "above the tenant's guaranteed quota");
    // The example is `high`: only `critical` jobs outrank it.
    assert!(borrowed.contains("critical jobs may preempt"), "{borrowed}");
    assert!(!borrowed.contains("normal"), "{borrowed}");
}

/// One node group of a generated pool: `nodes` nodes of 8 `device`, `nics` NICs of `nic`
/// each, at `price` CNY per device-hour.
pub(super) fn node_group(device: &str, nodes: u32, nics: u32, nic: &str, price: u32) -> String {
    let name = device.to_lowercase().replace('_', "-");
    format!(
        "{{ name: {name}, device: {device}, nodes: {nodes}, devices_per_node: 8, free_devices: {}, nics: {{ count: {nics}, bandwidth: {nic} }}, price: {price} CNY, software: {{ driver: \"1\", version: \"12.4\" }}, slurm_partition: {name}, node_labels: {{ loam.io/node-group: {name} }} }}",
        nodes * 8
    )
}

/// The shipped devices with a generated pool `id`: one site, `alpha`, whose nodes sit in
/// switch blocks of 4 behind `uplink`, with `groups` (from [`node_group`]) and a tenant `lab`
/// with `quota` (flow-style entries; none means no quotas).
pub(super) fn one_site_catalogue(
    id: &str,
    uplink: &str,
    groups: &[String],
    quota: &[&str],
) -> crate::catalogue::Catalogue {
    let list = |items: Vec<String>| {
        if items.is_empty() {
            " []".to_string()
        } else {
            items.iter().map(|i| format!("\n      - {i}")).collect()
        }
    };
    let pool = format!(
        r#"id: {id}
name: "Generated"
currency:
  base: CNY
sites:
  - name: alpha
    region: r0
    city: c0
    carbon_intensity: 500
    pue: 1.3
    storage_bandwidth: 50GB/s
    power_price:
      currency: CNY
      per_kwh: [{}]
    topology:
      nodes_per_block: 4
      block_uplink: {uplink}
      latency: 5us
    node_groups:{}
links: []
tenants:
  - name: lab
    checkpoint_root: /ckpt/lab
    kubernetes_namespace: lab
    slurm_account: lab
    queue: lab
    quota:{}
"#,
        vec!["0.5"; 24].join(", "),
        list(groups.to_vec()),
        list(quota.iter().map(|q| q.to_string()).collect()),
    );
    let path = format!("specs/pools/{id}.yaml");
    let (catalogue, diagnostics) = crate::catalogue::builtin_devices_with_pool(&path, &pool);
    catalogue.unwrap_or_else(|| panic!("{diagnostics:?}\n{pool}"))
}

/// One site of 32 H100 nodes in blocks of 4, whose uplinks carry `uplink` (12.8Tbps is full
/// bisection for 4 nodes of 8 × 400 Gb/s).
fn blocked_catalogue(uplink: &str) -> crate::catalogue::Catalogue {
    let h100 = node_group("H100_SXM", 32, 8, "400Gbps", 30);
    one_site_catalogue("blocks", uplink, &[h100], &[])
}

#[test]
fn oversubscribed_switch_block_uplinks_slow_data_parallelism_across_blocks() {
    let job = jobs(
        r#"job "wide" {
  tenant = "lab"
  model {
    layers  = 40
    hidden  = 5120
    ffn     = 13824
    heads   = 40
    vocab   = 32000
    seq_len = 4096
  }
  train {
    tokens       = 100B
    global_batch = 512
    precision    = bf16
  }
  resources {
    pool        = blocks
    max_devices = 256
  }
  goal {
    optimize = time
  }
}
"#,
    )
    .remove(0);
    let full = plan_job(&job, "wide.loam", &blocked_catalogue("12.8Tbps"));
    let thin = plan_job(&job, "wide.loam", &blocked_catalogue("0.4Tbps"));
    assert!(full.feasible && thin.feasible);
    // 256 devices take 8 blocks, so data-parallel traffic crosses them: a 32:1 oversubscribed
    // uplink makes the best plan slower, and no plan can hide it entirely.
    assert!(
        hours(&thin) > hours(&full),
        "{} vs {}",
        hours(&thin),
        hours(&full)
    );
    let comm = |p: &Plan| p.estimate.as_ref().unwrap().breakdown_s.data_comm;
    assert!(
        comm(&thin) > comm(&full) || thin.layout != full.layout,
        "{:?} vs {:?}",
        thin.estimate,
        full.estimate
    );
    assert!(
        full.groups[0]
            .topology
            .as_deref()
            .unwrap_or("")
            .contains("8 switch blocks")
    );
}

#[test]
fn a_job_no_node_group_may_run_gets_l3002_from_the_planner_alone() {
    // `loam check` reports the missing quota (L2111) first; the planner, asked directly, says
    // which node groups it skipped and why.
    let mut plan = plan_text(
        &example("llama3-8b-finetune.loam").replace("max_devices = 16", "devices = [MI300X]"),
    );
    assert!(!plan.feasible);
    let finding = plan.diagnostics.remove(0);
    assert_eq!(finding.code, "L3002");
    insta::assert_snapshot!(finding.message);
}

#[test]
fn a_plan_is_the_same_on_any_number_of_threads() {
    // A data split and a pipeline over two types: every node group's single-type search and
    // the data split's searches of each group and share run on threads when given them.
    for (name, hetero) in [
        ("hetero-data-70b-shanghai.loam", Hetero::Data),
        ("hetero-70b-guiyang.loam", Hetero::Pipeline),
    ] {
        let job = jobs(&example(name)).remove(0);
        let serial = plan_job(&job, name, &builtin());
        assert_eq!(serial.hetero, Some(hetero), "{name}");
        for threads in [2, 3, 8] {
            let spread = super::plan_job_on(&job, name, &builtin(), threads);
            assert_eq!(
                serde_json::to_string(&spread).unwrap(),
                serde_json::to_string(&serial).unwrap(),
                "{name} on {threads} threads"
            );
        }
    }
}

#[test]
fn a_plan_whose_blocks_wait_for_their_launches_says_so() {
    // 8 blocks 512 wide on 512 tokens: a block's forward is about 8 µs of an H100's work at one
    // sequence per micro-batch, under the 60 µs of its 12 launches (cost::tests).
    let job = |parallel: &str| {
        let rest = format!("{parallel}{ON_EIGHT_H100}");
        let model = [8, 512, 2048, 8, 8192, 512];
        dense_job("small", "nlp", model, "2B", 64, &rest)
    };
    let pinned = plan_text(&job("  parallel {\n    micro_batch = 1\n  }\n"));
    let note = note_with(&pinned, "kernel launches");
    assert!(
        note.contains("12 kernel launches (60 µs at 5 µs each)"),
        "{note}"
    );
    assert!(note.contains("at 1 sequence per micro-batch"), "{note}");
    // On auto the search takes micro-batches whose work outlasts the launches, and says
    // nothing.
    let auto = plan_text(&job(""));
    let layout = auto.layout.expect("a layout");
    assert!(layout.micro_batch > 1, "{layout:?}");
    assert!(
        !auto.notes.iter().any(|n| n.contains("kernel launches")),
        "{:?}",
        auto.notes
    );
}

#[test]
fn a_job_of_short_sequences_plans_without_context_parallelism() {
    // Context parallelism keeps at least 1,024 tokens a rank; one rank is no context
    // parallelism and needs none. Sequences of 256 tokens once left the search no context
    // degree at all, and every such job was refused as fitting no layout.
    let model = [12, 768, 3072, 12, 50257, 256];
    let plan = plan_text(&dense_job("short", "nlp", model, "20B", 512, ON_EIGHT_H100));
    assert!(plan.feasible, "{:?}", plan.reasons);
    assert_eq!(plan.layout.expect("a layout").context, 1);
}
