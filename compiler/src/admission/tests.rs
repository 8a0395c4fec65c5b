//! Unit tests of the admission preview: one small pool per verdict, the expected verdict worked
//! out from the quotas and devices written in the test.

use super::*;
use crate::catalogue::{builtin_sources, load};
use loam_ir::span::FileId;

/// A tenant and its quotas: `(device, guaranteed, elastic)`.
type TenantQuotas<'a> = (&'a str, &'a [(&'a str, u32, u32)]);

/// A one-site pool `t` with node groups `(name, device, nodes)` of 8 devices per node and
/// tenants `(name, [(device, guaranteed, elastic)])`.
pub(crate) fn catalogue(groups: &[(&str, &str, u32)], tenants: &[TenantQuotas<'_>]) -> Catalogue {
    let mut yaml = String::from(
        "id: t\nname: test\ncurrency:\n  base: CNY\nsites:\n  - name: only\n    region: r\n    city: c\n    carbon_intensity: 500\n    pue: 1.3\n    storage_bandwidth: 10GB/s\n    power_price:\n      currency: CNY\n      per_kwh: [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]\n    topology:\n      nodes_per_block: 4\n      block_uplink: 800Gbps\n      latency: 5us\n    node_groups:\n",
    );
    for (name, device, nodes) in groups {
        yaml.push_str(&format!(
            "      - {{ name: {name}, device: {device}, nodes: {nodes}, devices_per_node: 8, free_devices: 0, nics: {{ count: 2, bandwidth: 100Gbps }}, price: 7.0 CNY, software: {{ driver: \"550.90.07\", version: \"12.4\" }}, slurm_partition: {name}, node_labels: {{}} }}\n"
        ));
    }
    yaml.push_str("links: []\ntenants:\n");
    for (name, quotas) in tenants {
        yaml.push_str(&format!("  - name: {name}\n    checkpoint_root: /ckpt/{name}\n    kubernetes_namespace: team-{name}\n    slurm_account: {name}\n    queue: {name}\n"));
        if !quotas.is_empty() {
            yaml.push_str("    quota:\n");
            for (device, g, e) in *quotas {
                yaml.push_str(&format!(
                    "      - {{ device: {device}, guaranteed: {g}, elastic: {e} }}\n"
                ));
            }
        }
    }
    let mut texts: Vec<(String, String)> = builtin_sources()
        .into_iter()
        .filter(|(path, _)| path.contains("devices/"))
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    texts.push(("specs/pools/t.yaml".to_string(), yaml));
    let sources: Vec<(FileId, &str, &str)> = texts
        .iter()
        .enumerate()
        .map(|(i, (p, t))| (FileId(i as u32), p.as_str(), t.as_str()))
        .collect();
    let (catalogue, diagnostics) = load(&sources);
    assert!(diagnostics.is_empty(), "{diagnostics:#?}");
    catalogue.unwrap()
}

/// A feasible plan of `job` in pool `t` on `(node group, device, devices)`.
pub(crate) fn plan(job: &str, tenant: &str, priority: &str, groups: &[(&str, &str, u64)]) -> Plan {
    let groups: Vec<serde_json::Value> = groups
        .iter()
        .map(|(ng, device, devices)| {
            serde_json::json!({
                "site": "only", "device": device, "nodes": devices.div_ceil(8),
                "devices": devices, "node_group": ng, "devices_per_node": (*devices).min(8),
                "k8s_resource": "nvidia.com/gpu"
            })
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "job": job, "file": format!("{job}.loam"), "feasible": true, "tenant": tenant,
        "priority": priority, "interruptible": false, "pool": "t",
        "workload": {"params": 1e9, "layers": 2, "hidden": 64, "heads": 2, "seq_len": 64,
                     "global_batch": 8, "tokens": 1e9, "precision": "bf16"},
        "groups": groups
    }))
    .unwrap()
}

fn job<'a>(preview: &'a AdmissionPreview, name: &str) -> &'a JobAdmission {
    preview.jobs().find(|j| j.job == name).unwrap()
}

const H100: &str = "H100_SXM";

#[test]
fn a_job_inside_its_guaranteed_quota_is_admitted_on_its_flavor() {
    let cat = catalogue(&[("ng-a", H100, 4)], &[("nlp", &[(H100, 16, 0)])]);
    let preview = preview(
        &[plan("small", "nlp", "normal", &[("ng-a", H100, 8)])],
        &cat,
    );
    let small = job(&preview, "small");
    assert_eq!(small.status, AdmissionStatus::Admitted);
    assert_eq!(small.flavors_text(), "8 × H100_SXM on ng-a");
    let pool = &preview.pools["t"];
    assert_eq!(pool.node_groups["ng-a"].used, 8);
    assert_eq!(pool.node_groups["ng-a"].free, 32 - 8);
    assert_eq!(pool.tenants["nlp"][H100].guaranteed_used, 8);
    assert_eq!(pool.tenants["nlp"][H100].borrowed, 0);
    assert_eq!(pool.counts.admitted, 1);
}

#[test]
fn a_job_above_its_guaranteed_quota_borrows_and_names_who_may_reclaim() {
    // nlp is guaranteed 8 and may borrow 8; research's 16 guaranteed lie idle.
    let cat = catalogue(
        &[("ng-a", H100, 4)],
        &[("nlp", &[(H100, 8, 8)]), ("research", &[(H100, 16, 0)])],
    );
    let preview = preview(&[plan("big", "nlp", "normal", &[("ng-a", H100, 16)])], &cat);
    let AdmissionStatus::Borrows {
        borrowed,
        preempted_by,
    } = &job(&preview, "big").status
    else {
        panic!("{:?}", job(&preview, "big").status);
    };
    assert_eq!(borrowed[H100], 16 - 8);
    assert!(preempted_by.contains(&Preemptor::Reclaim {
        tenant: "research".to_string(),
        device: H100.to_string(),
        unused_guaranteed: 16,
    }));
    assert!(preempted_by.contains(&Preemptor::HigherPriority {
        above: Priority::Normal
    }));
    let pool = &preview.pools["t"];
    assert_eq!(pool.node_groups["ng-a"].borrowed, 8);
    assert_eq!(pool.tenants["nlp"][H100].guaranteed_used, 8);
    assert_eq!(pool.tenants["nlp"][H100].borrowed, 8);
}

#[test]
fn a_critical_borrower_is_preempted_only_by_reclaiming_lenders() {
    let cat = catalogue(
        &[("ng-a", H100, 4)],
        &[("nlp", &[(H100, 8, 8)]), ("research", &[(H100, 16, 0)])],
    );
    let preview = preview(
        &[plan("big", "nlp", "critical", &[("ng-a", H100, 16)])],
        &cat,
    );
    let AdmissionStatus::Borrows { preempted_by, .. } = &job(&preview, "big").status else {
        panic!();
    };
    assert!(
        preempted_by
            .iter()
            .all(|p| matches!(p, Preemptor::Reclaim { .. }))
    );
}

#[test]
fn a_lower_priority_job_of_the_same_tenant_queues_behind_the_higher_one() {
    let cat = catalogue(&[("ng-a", H100, 4)], &[("nlp", &[(H100, 8, 0)])]);
    let plans = [
        plan("second", "nlp", "normal", &[("ng-a", H100, 8)]),
        plan("first", "nlp", "high", &[("ng-a", H100, 8)]),
    ];
    let preview = preview(&plans, &cat);
    assert_eq!(job(&preview, "first").status, AdmissionStatus::Admitted);
    let AdmissionStatus::Queues { behind, reason } = &job(&preview, "second").status else {
        panic!("{:?}", job(&preview, "second").status);
    };
    assert_eq!(behind, &["first".to_string()]);
    assert!(reason.contains("needs 8 H100_SXM"), "{reason}");
    assert!(reason.contains("0 left"), "{reason}");
    // The high job is considered first, whatever the input order.
    assert_eq!(preview.pools["t"].jobs[0].job, "first");
}

#[test]
fn a_job_queues_behind_the_jobs_that_fill_its_node_group() {
    // Quota is left (ng-b is idle), but the plan chose ng-a, which the first job fills.
    let cat = catalogue(
        &[("ng-a", H100, 1), ("ng-b", H100, 1)],
        &[("nlp", &[(H100, 8, 0)]), ("research", &[(H100, 8, 0)])],
    );
    let plans = [
        plan("a", "nlp", "normal", &[("ng-a", H100, 8)]),
        plan("b", "research", "normal", &[("ng-a", H100, 4)]),
    ];
    let preview = preview(&plans, &cat);
    let AdmissionStatus::Queues { behind, reason } = &job(&preview, "b").status else {
        panic!();
    };
    assert_eq!(behind, &["a".to_string()]);
    assert_eq!(reason, "needs 4 H100_SXM on `ng-a`, 0 free");
    assert_eq!(preview.pools["t"].node_groups["ng-a"].free, 0);
}

#[test]
fn a_job_above_its_tenants_whole_quota_or_its_node_group_is_never_admissible() {
    let cat = catalogue(&[("ng-a", H100, 2)], &[("nlp", &[(H100, 8, 8)])]);
    let plans = [
        plan("greedy", "nlp", "normal", &[("ng-a", H100, 16 + 8)]),
        plan("nowhere", "nlp", "normal", &[("ng-z", H100, 8)]),
    ];
    let preview = preview(&plans, &cat);
    let AdmissionStatus::NeverAdmissible { reason } = &job(&preview, "greedy").status else {
        panic!();
    };
    // 24 devices: above the node group's 16 before any quota is looked at.
    assert!(reason.contains("which has 16"), "{reason}");
    let AdmissionStatus::NeverAdmissible { reason } = &job(&preview, "nowhere").status else {
        panic!();
    };
    assert!(reason.contains("`ng-z` is not in pool `t`"), "{reason}");
    let cat = catalogue(&[("ng-a", H100, 4)], &[("nlp", &[(H100, 8, 8)])]);
    let preview = super::preview(
        &[plan("greedy", "nlp", "normal", &[("ng-a", H100, 24)])],
        &cat,
    );
    let AdmissionStatus::NeverAdmissible { reason } = &job(&preview, "greedy").status else {
        panic!();
    };
    assert!(reason.contains("8 guaranteed + 8 elastic"), "{reason}");
    assert_eq!(preview.pools["t"].node_groups["ng-a"].used, 0);
}

#[test]
fn a_tenant_reclaims_its_guaranteed_quota_from_a_higher_priority_borrower() {
    // research borrows nlp's idle 8; nlp's normal job fits in its own guaranteed 8, so Kueue's
    // reclaimWithinCohort: Any evicts the high-priority borrower.
    let cat = catalogue(
        &[("ng-a", H100, 2)],
        &[("nlp", &[(H100, 8, 0)]), ("research", &[(H100, 8, 8)])],
    );
    let plans = [
        plan("borrower", "research", "high", &[("ng-a", H100, 16)]),
        plan("owner", "nlp", "normal", &[("ng-a", H100, 8)]),
    ];
    let preview = preview(&plans, &cat);
    assert_eq!(job(&preview, "owner").status, AdmissionStatus::Admitted);
    let AdmissionStatus::Queues { behind, reason } = &job(&preview, "borrower").status else {
        panic!("{:?}", job(&preview, "borrower").status);
    };
    assert!(behind.contains(&"owner".to_string()), "{behind:?}");
    assert!(reason.starts_with("preempted by `owner`"), "{reason}");
    assert_eq!(preview.pools["t"].tenants["research"][H100].borrowed, 0);
}

#[test]
fn infeasible_plans_are_listed_and_hold_nothing() {
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let mut broken = plan("broken", "nlp", "critical", &[("ng-a", H100, 8)]);
    broken.feasible = false;
    broken.reasons = vec!["no layout fits".to_string()];
    let plans = [broken, plan("fine", "nlp", "low", &[("ng-a", H100, 8)])];
    let preview = preview(&plans, &cat);
    assert_eq!(
        job(&preview, "broken").status,
        AdmissionStatus::NotPlanned {
            reasons: vec!["no layout fits".to_string()]
        }
    );
    assert_eq!(job(&preview, "fine").status, AdmissionStatus::Admitted);
    assert_eq!(preview.counts().not_planned, 1);
}

#[test]
fn windowed_jobs_come_after_around_the_clock_jobs() {
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let mut night = plan("night", "nlp", "critical", &[("ng-a", H100, 8)]);
    night.interruptible = true;
    night.schedule = serde_json::from_value(serde_json::json!({
        "start_hour": 22, "hours_per_day": 8, "power_price_per_kwh": 0.3, "saving": 0.1,
        "train_time_h": 30.0
    }))
    .unwrap();
    let plans = [night, plan("day", "nlp", "low", &[("ng-a", H100, 8)])];
    let preview = preview(&plans, &cat);
    assert_eq!(job(&preview, "day").status, AdmissionStatus::Admitted);
    let night = job(&preview, "night");
    assert!(matches!(night.status, AdmissionStatus::Queues { .. }));
    assert_eq!(night.window.map(|w| w.start_hour), Some(22));
}

#[test]
fn a_tenant_without_quotas_gets_the_emitted_queues_nominal_quota() {
    let cat = catalogue(&[("ng-a", H100, 4)], &[("lab", &[])]);
    let plans = [
        plan("one", "lab", "high", &[("ng-a", H100, 16)]),
        plan("two", "lab", "normal", &[("ng-a", H100, 8)]),
    ];
    let preview = preview(&plans, &cat);
    // The ClusterQueue's nominal quota is the largest job's need (16): the second waits.
    let usage = &preview.pools["t"].tenants["lab"][H100];
    assert!(usage.derived);
    assert_eq!(usage.guaranteed, 16);
    assert!(matches!(
        job(&preview, "two").status,
        AdmissionStatus::Queues { .. }
    ));
}

#[test]
fn pools_are_previewed_apart_and_the_order_of_plans_does_not_matter() {
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let mut elsewhere = plan("elsewhere", "nlp", "normal", &[("ng-a", H100, 8)]);
    elsewhere.pool = "gone".to_string();
    let plans = vec![
        plan("a", "nlp", "normal", &[("ng-a", H100, 8)]),
        plan("b", "nlp", "normal", &[("ng-a", H100, 8)]),
        elsewhere,
    ];
    let forward = preview(&plans, &cat);
    let mut reversed = plans.clone();
    reversed.reverse();
    let backward = preview(&reversed, &cat);
    assert_eq!(forward, backward);
    assert_eq!(
        serde_json::to_string(&forward).unwrap(),
        serde_json::to_string(&backward).unwrap()
    );
    // Same priority: the file name breaks the tie (`a.loam` before `b.loam`).
    assert_eq!(job(&forward, "a").status, AdmissionStatus::Admitted);
    assert!(matches!(
        job(&forward, "b").status,
        AdmissionStatus::Queues { .. }
    ));
    assert!(matches!(
        job(&forward, "elsewhere").status,
        AdmissionStatus::NeverAdmissible { .. }
    ));
}

#[test]
fn changes_say_which_job_now_queues_behind_which() {
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let base = preview(
        &[plan("qwen-7b", "nlp", "normal", &[("ng-a", H100, 8)])],
        &cat,
    );
    let head = preview(
        &[
            plan("qwen-7b", "nlp", "normal", &[("ng-a", H100, 8)]),
            plan("llama3-70b", "nlp", "high", &[("ng-a", H100, 8)]),
        ],
        &cat,
    );
    let found = changes(&base, &head);
    assert_eq!(found.len(), 2, "{found:#?}");
    let qwen = found.iter().find(|c| c.job == "qwen-7b").unwrap();
    assert_eq!(qwen.before, Some(AdmissionStatus::Admitted));
    assert!(
        qwen.sentence
            .starts_with("this change makes `qwen-7b` queue behind `llama3-70b`"),
        "{}",
        qwen.sentence
    );
    let llama = found.iter().find(|c| c.job == "llama3-70b").unwrap();
    assert_eq!(llama.before, None);
    assert!(
        llama
            .sentence
            .starts_with("new job: this change admits `llama3-70b`")
    );
    assert!(changes(&head, &head).is_empty());
}
