//! Re-checks a Plan JSON that was read from a file, before anything is emitted from it (L4012):
//! a hand-edited plan must not reach the manifests (review finding L8: `tensor: 0` and
//! `data: 2^63` became `--data-parallel=9223372036854775808`, an unknown pool a Kueue cohort).
//!
//! A plan `loam plan` writes always passes: every rule here is one the planner keeps by
//! construction (`tests/tests/hostile_trust.rs` checks it on every example). Plans the backends
//! refuse anyway are left to them, so each problem is reported once: infeasible plans (L4001)
//! and plans without a layout, estimate, checkpoint or groups (L4002).

use crate::catalogue::{Catalogue, NodeGroup, Pool};
use loam_ir::diagnostics::{Diagnostic, codes};
use loam_ir::plan::{GroupIr, LayoutIr, NodeShape, Plan, PlanDocument, ServicePlan};
use loam_ir::types::{Hetero, Recompute};
use std::collections::BTreeMap;

/// The longest checkpoint interval a plan may have: a year, in minutes. The planner's
/// interval is hours at most; a larger one is an edit that would switch checkpoints off.
pub const MAX_CHECKPOINT_INTERVAL_MIN: f64 = 525_600.0;

/// The longest checkpoint write a plan may have: a week, in seconds (it sets the grace period
/// between a stop signal and the kill).
pub const MAX_CHECKPOINT_WRITE_S: f64 = 604_800.0;

/// The longest train time a plan may have, in hours (about 114 years): it becomes Slurm time
/// limits and restart budgets, which must stay far inside their integer types.
pub const MAX_TRAIN_TIME_H: f64 = 1_000_000.0;

/// What the help of every L4012 says.
const HELP: &str = "emit from the spec (`loam emit SPEC`), or plan again (`loam plan --format json`) instead of editing the plan";

/// Every way `doc` disagrees with `catalogue` or with itself, one L4012 error each (no span:
/// the plan is generated data). Empty for every plan `loam plan` writes with this catalogue.
pub fn check_document(doc: &PlanDocument, catalogue: &Catalogue) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    for plan in &doc.plans {
        let what = format!("the plan of job `{}`", plan.job.escape_debug());
        for (against, problem) in plan_problems(plan, catalogue) {
            found.push(diagnostic(&what, against, &problem));
        }
    }
    for service in &doc.services {
        let what = format!("the plan of service `{}`", service.service.escape_debug());
        for (against, problem) in service_problems(service, catalogue) {
            found.push(diagnostic(&what, against, &problem));
        }
    }
    found
}

/// What a problem contradicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Against {
    Catalogue,
    Itself,
}

fn diagnostic(what: &str, against: Against, problem: &str) -> Diagnostic {
    let against = match against {
        Against::Catalogue => "the catalogue",
        Against::Itself => "itself",
    };
    Diagnostic::unlocated(
        codes::emit::INCONSISTENT_PLAN,
        format!("{what} does not agree with {against}: {problem}"),
    )
    .with_help(HELP)
}

type Problems = Vec<(Against, String)>;

/// The problems of one job's plan.
fn plan_problems(plan: &Plan, catalogue: &Catalogue) -> Problems {
    let mut problems = Problems::new();
    let (Some(layout), Some(estimate), Some(checkpoint)) =
        (&plan.layout, &plan.estimate, &plan.checkpoint)
    else {
        return problems;
    };
    if !plan.feasible || plan.groups.is_empty() {
        return problems;
    }
    if let Some(pool) = pool_and_tenant(&plan.pool, &plan.tenant, catalogue, &mut problems) {
        let groups: Vec<&GroupIr> = plan.groups.iter().collect();
        groups_fit(&groups, pool, true, &mut problems);
    }
    let devices = plan
        .groups
        .iter()
        .fold(0u64, |sum, g| sum.saturating_add(g.devices));
    let degrees_ok = degrees(layout, devices, "layout", &mut problems);
    if degrees_ok && layout.micro_batch > plan.workload.global_batch {
        problems.push((
            Against::Itself,
            format!(
                "the micro-batch of {} sequences is larger than the global batch of {}",
                layout.micro_batch, plan.workload.global_batch
            ),
        ));
    }
    for stage in &plan.stages {
        if usize::try_from(stage.group).map_or(true, |g| g >= plan.groups.len()) {
            problems.push((
                Against::Itself,
                format!(
                    "stage {} runs on group {}, and the plan has {} groups",
                    stage.index,
                    stage.group,
                    plan.groups.len()
                ),
            ));
        }
    }
    // A group whose devices are not its nodes' is L4002's, left to the backends.
    let complete = plan
        .groups
        .iter()
        .all(|g| NodeShape::of(g).holds(g.devices));
    if degrees_ok && complete {
        match plan.hetero {
            None => {
                let product = product(layout);
                if product != Some(devices) {
                    problems.push((
                        Against::Itself,
                        format!(
                            "the layout's degrees (tensor × pipeline × data × context) make {} devices, and its groups place {devices}",
                            shown(product)
                        ),
                    ));
                }
            }
            Some(Hetero::Data) => data_pair(plan, layout, &mut problems),
            Some(Hetero::Pipeline) => pipeline_pair(plan, layout, &mut problems),
        }
    }
    let interval = checkpoint.interval_min;
    if !(interval > 0.0 && interval <= MAX_CHECKPOINT_INTERVAL_MIN) {
        problems.push((
            Against::Itself,
            format!(
                "the checkpoint interval is {} min; it must be above 0 and at most {MAX_CHECKPOINT_INTERVAL_MIN} (a year)",
                number(interval)
            ),
        ));
    }
    let write = checkpoint.write_s;
    if !(0.0..=MAX_CHECKPOINT_WRITE_S).contains(&write) {
        problems.push((
            Against::Itself,
            format!(
                "a checkpoint write takes {} s; it must take 0 to {MAX_CHECKPOINT_WRITE_S} s (a week)",
                number(write)
            ),
        ));
    }
    let train = estimate.train_time_h;
    if !(0.0..=MAX_TRAIN_TIME_H).contains(&train) {
        problems.push((
            Against::Itself,
            format!(
                "the train time is {} h; it must be 0 to {MAX_TRAIN_TIME_H} h",
                number(train)
            ),
        ));
    }
    if !(estimate.step_time_s >= 0.0 && estimate.step_time_s.is_finite()) {
        problems.push((
            Against::Itself,
            format!(
                "the step time is {} s; it must be 0 or more",
                number(estimate.step_time_s)
            ),
        ));
    }
    if let Some(schedule) = &plan.schedule
        && (schedule.start_hour > 23 || !(1..=24).contains(&schedule.hours_per_day))
    {
        problems.push((
            Against::Itself,
            format!(
                "its cheap-hours window starts at hour {} and lasts {} hours; it must start at 0–23 and last 1–24",
                schedule.start_hour, schedule.hours_per_day
            ),
        ));
    }
    problems
}

/// A plan over two groups that each run whole replicas: each group's own layout places its
/// devices, and the plan's `data` counts the replicas of both.
fn data_pair(plan: &Plan, layout: &LayoutIr, problems: &mut Problems) {
    let mut replicas = 0u64;
    for (index, group) in plan.groups.iter().enumerate() {
        let Some(own) = &group.layout else {
            problems.push((
                Against::Itself,
                format!("group {index} of a `data` plan has no layout of its own"),
            ));
            continue;
        };
        if degrees(
            own,
            group.devices,
            &format!("group {index}'s layout"),
            problems,
        ) && product(own) != Some(group.devices)
        {
            problems.push((
                Against::Itself,
                format!(
                    "group {index}'s layout makes {} devices, and the group has {}",
                    shown(product(own)),
                    group.devices
                ),
            ));
        }
        replicas = replicas.saturating_add(own.data);
    }
    if replicas != layout.data {
        problems.push((
            Against::Itself,
            format!(
                "the layout's data degree is {}, and its groups run {replicas} replicas",
                layout.data
            ),
        ));
    }
}

/// A plan over two groups that each run some pipeline stages of every replica: each group's
/// tensor degree times its stages times the data degree is its devices.
fn pipeline_pair(plan: &Plan, layout: &LayoutIr, problems: &mut Problems) {
    for (index, group) in plan.groups.iter().enumerate() {
        let stages = plan
            .stages
            .iter()
            .filter(|s| usize::try_from(s.group).is_ok_and(|g| g == index))
            .count() as u64;
        let tensor = group.tensor.unwrap_or(layout.tensor);
        let placed = tensor
            .checked_mul(stages)
            .and_then(|n| n.checked_mul(layout.data));
        if tensor == 0 || placed != Some(group.devices) {
            problems.push((
                Against::Itself,
                format!(
                    "group {index} runs {stages} stages at tensor degree {tensor} for {} replicas: {} devices, and the group has {}",
                    layout.data,
                    shown(placed),
                    group.devices
                ),
            ));
        }
    }
}

/// The problems of one service's plan.
fn service_problems(service: &ServicePlan, catalogue: &Catalogue) -> Problems {
    let mut problems = Problems::new();
    if !service.feasible || service.roles.is_empty() {
        return problems;
    }
    if let Some(pool) = pool_and_tenant(&service.pool, &service.tenant, catalogue, &mut problems) {
        let groups: Vec<&GroupIr> = service.roles.iter().map(|r| &r.group).collect();
        groups_fit(&groups, pool, false, &mut problems);
    }
    for role in &service.roles {
        let name = role.role.escape_debug().to_string();
        let mut ok = true;
        for (degree, value) in [
            ("replicas", role.replicas),
            ("tensor", role.tensor),
            ("pipeline", role.pipeline),
            ("expert", role.expert),
            ("devices per replica", role.devices_per_replica),
        ] {
            if value == 0 || value > role.group.devices {
                ok = false;
                problems.push((
                    Against::Itself,
                    format!(
                        "role `{name}`'s {degree} is {value}; it must be 1 to its {} devices",
                        role.group.devices
                    ),
                ));
            }
        }
        let per_replica = role.tensor.checked_mul(role.pipeline);
        if ok && per_replica != Some(role.devices_per_replica) {
            problems.push((
                Against::Itself,
                format!(
                    "role `{name}` runs tensor {} × pipeline {} per replica, and says {} devices per replica",
                    role.tensor, role.pipeline, role.devices_per_replica
                ),
            ));
        }
        let placed = role.replicas.checked_mul(role.devices_per_replica);
        if ok && placed != Some(role.group.devices) {
            problems.push((
                Against::Itself,
                format!(
                    "role `{name}` runs {} replicas of {} devices, and its group has {}",
                    role.replicas, role.devices_per_replica, role.group.devices
                ),
            ));
        }
    }
    problems
}

/// The pool `pool`, when the catalogue has it; a problem for it, or for a tenant it lacks.
fn pool_and_tenant<'c>(
    pool: &str,
    tenant: &str,
    catalogue: &'c Catalogue,
    problems: &mut Problems,
) -> Option<&'c Pool> {
    let Some(found) = catalogue.pool(pool) else {
        problems.push((
            Against::Catalogue,
            format!("pool `{}` is not in the catalogue", pool.escape_debug()),
        ));
        return None;
    };
    if found.tenant(tenant).is_none() {
        problems.push((
            Against::Catalogue,
            format!(
                "tenant `{}` is not a tenant of pool `{}`",
                tenant.escape_debug(),
                pool.escape_debug()
            ),
        ));
    }
    Some(found)
}

/// Each group names a node group of `pool` at its site, with that node group's device, at most
/// its devices per node, and all groups on one node group at most its nodes. `training`: a
/// training group fills its nodes (`devices = nodes × devices per node` is L4002's rule, left
/// to the backends); a service role may pack fewer devices on a node.
fn groups_fit(groups: &[&GroupIr], pool: &Pool, training: bool, problems: &mut Problems) {
    let mut nodes: BTreeMap<(&str, &str), (u64, &NodeGroup)> = BTreeMap::new();
    for (index, group) in groups.iter().enumerate() {
        let Some(site) = pool.site(&group.site) else {
            problems.push((
                Against::Catalogue,
                format!(
                    "group {index}'s site `{}` is not in pool `{}`",
                    group.site.escape_debug(),
                    pool.id.value
                ),
            ));
            continue;
        };
        let Some(node_group) = site
            .node_groups
            .iter()
            .find(|n| n.name.value == group.node_group)
        else {
            problems.push((
                Against::Catalogue,
                format!(
                    "group {index}'s node group `{}` is not at site `{}`",
                    group.node_group.escape_debug(),
                    site.name.value
                ),
            ));
            continue;
        };
        if node_group.device.value != group.device {
            problems.push((
                Against::Catalogue,
                format!(
                    "group {index} runs on `{}` devices, and node group `{}` has `{}`",
                    group.device.escape_debug(),
                    node_group.name.value,
                    node_group.device.value
                ),
            ));
        }
        let per_node = u64::from(node_group.devices_per_node.value);
        if group.devices_per_node == 0 && !training || group.devices_per_node > per_node {
            problems.push((
                Against::Catalogue,
                format!(
                    "group {index} puts {} devices on a node of node group `{}`, which has {per_node}",
                    group.devices_per_node, node_group.name.value
                ),
            ));
        }
        let entry = nodes
            .entry((site.name.value.as_str(), node_group.name.value.as_str()))
            .or_insert((0, node_group));
        entry.0 = entry.0.saturating_add(group.nodes);
    }
    for ((_, name), (used, node_group)) in nodes {
        if used > u64::from(node_group.nodes) {
            problems.push((
                Against::Catalogue,
                format!(
                    "its groups use {used} nodes of node group `{name}`, which has {}",
                    node_group.nodes
                ),
            ));
        }
    }
}

/// Checks every degree of `layout` (named `what`) is 1 to `devices` (the micro-batch at least
/// 1, ZeRO 0–3); whether all are.
fn degrees(layout: &LayoutIr, devices: u64, what: &str, problems: &mut Problems) -> bool {
    let before = problems.len();
    for (degree, value) in [
        ("tensor", layout.tensor),
        ("pipeline", layout.pipeline),
        ("data", layout.data),
        ("context", layout.context),
        ("expert", layout.expert),
    ] {
        if value == 0 {
            problems.push((
                Against::Itself,
                format!("{what} degree `{degree}` is 0; it must be at least 1"),
            ));
        } else if value > devices {
            problems.push((
                Against::Itself,
                format!(
                    "{what} degree `{degree}` is {value}, more than the plan's {devices} devices"
                ),
            ));
        }
    }
    if layout.virtual_stages == 0 || layout.micro_batch == 0 {
        problems.push((
            Against::Itself,
            format!(
                "{what} has {} virtual stages and a micro-batch of {}; both must be at least 1",
                layout.virtual_stages, layout.micro_batch
            ),
        ));
    }
    if layout.zero > 3 {
        problems.push((
            Against::Itself,
            format!("{what} has ZeRO stage {}; stages are 0 to 3", layout.zero),
        ));
    }
    // The trainer is told to overlap the expert all-to-alls only where its framework runs the
    // overlap (`workload::expert_overlap_runs`): Megatron-Core refuses it at start-up otherwise.
    let allowed = crate::workload::expert_overlap_runs(
        crate::workload::ExpertOverlap::MegatronCore,
        None,
        u32::try_from(layout.pipeline).unwrap_or(u32::MAX),
        u32::try_from(layout.virtual_stages).unwrap_or(u32::MAX),
        u32::try_from(layout.expert).unwrap_or(u32::MAX),
        layout.recompute == Recompute::Full,
    );
    if layout.expert_overlap && !allowed {
        problems.push((
            Against::Itself,
            format!(
                "{what} overlaps the expert all-to-alls (`expert_overlap`), which runs only on a \
                 pipeline with virtual stages and expert parallelism, without full recomputation"
            ),
        ));
    }
    problems.len() == before
}

/// tensor × pipeline × data × context, when it fits a `u64`.
fn product(layout: &LayoutIr) -> Option<u64> {
    layout
        .tensor
        .checked_mul(layout.pipeline)?
        .checked_mul(layout.data)?
        .checked_mul(layout.context)
}

/// `x` as people read it: `1e308` rather than 309 digits.
fn number(x: f64) -> String {
    if x.abs() >= 1e9 {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

fn shown(n: Option<u64>) -> String {
    n.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string())
}

/// L4012 when `plan` is not the plan loam makes now for the spec it names: `fresh` are the plans
/// of every job of that spec, made with the same catalogue. `None` when one of them is `plan`,
/// field for field.
pub fn check_against_spec(plan: &Plan, fresh: &[Plan]) -> Option<Diagnostic> {
    let what = format!("the plan of job `{}`", plan.job.escape_debug());
    let file = plan.file.escape_debug();
    let Some(now) = fresh.iter().find(|p| p.job == plan.job) else {
        return Some(
            Diagnostic::unlocated(
                codes::emit::INCONSISTENT_PLAN,
                format!("{what} does not agree with its spec: `{file}` has no job of that name"),
            )
            .with_help(HELP),
        );
    };
    if now == plan {
        return None;
    }
    let differs = first_difference(plan, now).unwrap_or_else(|| "a field".to_string());
    Some(
        Diagnostic::unlocated(
            codes::emit::INCONSISTENT_PLAN,
            format!(
                "{what} does not agree with its spec: loam plans `{file}` differently now ({differs} differs); the spec changed since the plan was made, or the plan was edited"
            ),
        )
        .with_help(HELP),
    )
}

/// The first top-level field (in the Plan JSON's order, keys sorted) whose value differs
/// between `a` and `b`, as `` `name` ``.
fn first_difference(a: &Plan, b: &Plan) -> Option<String> {
    let (serde_json::Value::Object(a), serde_json::Value::Object(b)) =
        (serde_json::to_value(a).ok()?, serde_json::to_value(b).ok()?)
    else {
        return None;
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .find(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("`{k}`"))
}
