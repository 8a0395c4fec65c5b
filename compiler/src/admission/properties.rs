//! Properties of the admission preview on random pools, tenants, quotas and jobs: no node group
//! gives more devices than it has, no tenant uses more than its guaranteed + elastic quota of a
//! device type, the guaranteed part never exceeds the guaranteed quota, and the pool never holds
//! more than the cohort's guaranteed total.

use crate::admission::{AdmissionStatus, preview};
use crate::catalogue::{Catalogue, builtin_sources, load};
use loam_ir::plan::Plan;
use loam_ir::span::FileId;
use proptest::prelude::*;
use std::collections::BTreeMap;

const DEVICES: [&str; 2] = ["H100_SXM", "A100_SXM_80GB"];

/// A job: (tenant, priority, [(node group, devices)]).
type JobCase = (usize, usize, Vec<(usize, u64)>);

#[derive(Debug, Clone)]
struct Case {
    /// Nodes (8 devices each) of each node group; group i holds DEVICES[i % 2].
    groups: Vec<u32>,
    /// Per tenant, per device type: (guaranteed share in eighths of the pool, elastic).
    tenants: Vec<[(u32, u32); 2]>,
    /// (tenant, priority, [(group, devices)]).
    jobs: Vec<JobCase>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(1u32..4, 1..4),
        prop::collection::vec([(0u32..4, 0u32..40), (0u32..4, 0u32..40)], 1..4),
        prop::collection::vec(
            (
                0usize..3,
                0usize..4,
                prop::collection::vec((0usize..3, 1u64..30), 1..3),
            ),
            1..9,
        ),
    )
        .prop_map(|(groups, tenants, jobs)| Case {
            groups,
            tenants,
            jobs,
        })
}

fn catalogue(case: &Case) -> Catalogue {
    let mut yaml = String::from(
        "id: t\nname: test\ncurrency:\n  base: CNY\nsites:\n  - name: only\n    region: r\n    city: c\n    carbon_intensity: 500\n    pue: 1.3\n    storage_bandwidth: 10GB/s\n    power_price:\n      currency: CNY\n      per_kwh: [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]\n    topology:\n      nodes_per_block: 4\n      block_uplink: 800Gbps\n      latency: 5us\n    node_groups:\n",
    );
    let mut capacity: BTreeMap<&str, u32> = BTreeMap::new();
    for (i, nodes) in case.groups.iter().enumerate() {
        let device = DEVICES[i % 2];
        *capacity.entry(device).or_default() += nodes * 8;
        yaml.push_str(&format!(
            "      - {{ name: g{i}, device: {device}, nodes: {nodes}, devices_per_node: 8, free_devices: 0, nics: {{ count: 2, bandwidth: 100Gbps }}, price: 7.0 CNY, software: {{ driver: \"550.90.07\", version: \"12.4\" }}, slurm_partition: g{i}, node_labels: {{}} }}\n"
        ));
    }
    yaml.push_str("links: []\ntenants:\n");
    // Guaranteed shares in eighths of the pool's devices, scaled down so they fit the pool
    // (the catalogue refuses guaranteed quotas above it).
    let tenants = case.tenants.len() as u32;
    for (t, quotas) in case.tenants.iter().enumerate() {
        yaml.push_str(&format!(
            "  - name: t{t}\n    checkpoint_root: /ckpt/t{t}\n    kubernetes_namespace: t{t}\n    slurm_account: t{t}\n    queue: t{t}\n    quota:\n"
        ));
        for (d, (share, elastic)) in quotas.iter().enumerate() {
            let device = DEVICES[d];
            let Some(&total) = capacity.get(device) else {
                continue;
            };
            let guaranteed = total * share / 4 / tenants;
            yaml.push_str(&format!(
                "      - {{ device: {device}, guaranteed: {guaranteed}, elastic: {elastic} }}\n"
            ));
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

fn plans(case: &Case) -> Vec<Plan> {
    let priorities = ["low", "normal", "high", "critical"];
    case.jobs
        .iter()
        .enumerate()
        .map(|(j, (tenant, priority, groups))| {
            let groups: Vec<serde_json::Value> = groups
                .iter()
                .map(|(g, devices)| {
                    let g = g % case.groups.len();
                    serde_json::json!({
                        "site": "only", "device": DEVICES[g % 2], "nodes": devices.div_ceil(8),
                        "devices": devices, "node_group": format!("g{g}"),
                        "devices_per_node": (*devices).min(8), "k8s_resource": "nvidia.com/gpu"
                    })
                })
                .collect();
            serde_json::from_value(serde_json::json!({
                "job": format!("j{j}"), "file": format!("j{j}.loam"), "feasible": true,
                "tenant": format!("t{}", tenant % case.tenants.len()),
                "priority": priorities[*priority], "interruptible": false, "pool": "t",
                "workload": {"params": 1e9, "layers": 2, "hidden": 64, "heads": 2, "seq_len": 64,
                             "global_batch": 8, "tokens": 1e9, "precision": "bf16"},
                "groups": groups
            }))
            .unwrap()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_placement_exceeds_a_node_group_or_a_quota(case in case()) {
        let catalogue = catalogue(&case);
        let pool = catalogue.pool("t").unwrap();
        let plans = plans(&case);
        let preview = preview(&plans, &catalogue);
        let result = &preview.pools["t"];
        prop_assert_eq!(result.jobs.len(), plans.len());

        // What the running jobs take, recomputed from the jobs themselves.
        let mut per_group: BTreeMap<String, u64> = BTreeMap::new();
        let mut per_tenant: BTreeMap<(String, String), u64> = BTreeMap::new();
        let mut per_device: BTreeMap<String, u64> = BTreeMap::new();
        for job in result.jobs.iter().filter(|j| j.status.runs()) {
            for f in &job.flavors {
                *per_group.entry(f.node_group.clone()).or_default() += f.devices;
                *per_tenant.entry((job.tenant.clone(), f.device.clone())).or_default() += f.devices;
                *per_device.entry(f.device.clone()).or_default() += f.devices;
            }
            let borrowed: u64 = job.flavors.iter().map(|f| f.borrowed).sum();
            match &job.status {
                AdmissionStatus::Admitted => prop_assert_eq!(borrowed, 0),
                AdmissionStatus::Borrows { borrowed: by_device, .. } => {
                    prop_assert!(borrowed > 0);
                    prop_assert_eq!(by_device.values().sum::<u64>(), borrowed);
                }
                _ => {}
            }
        }
        for (_, group) in pool.node_groups() {
            let used = per_group.get(&group.name.value).copied().unwrap_or(0);
            prop_assert!(used <= group.devices(), "{} uses {used} of {}", group.name.value, group.devices());
            let usage = &result.node_groups[&group.name.value];
            prop_assert_eq!(usage.used, used);
            prop_assert_eq!(usage.used + usage.free, usage.devices);
            prop_assert!(usage.borrowed <= usage.used);
        }
        let mut cohort: BTreeMap<String, u64> = BTreeMap::new();
        for tenant in &pool.tenants {
            for q in &tenant.quota {
                let (g, e) = (u64::from(q.guaranteed.value), u64::from(q.elastic.value));
                *cohort.entry(q.device.value.clone()).or_default() += g;
                let key = (tenant.name.value.clone(), q.device.value.clone());
                let used = per_tenant.get(&key).copied().unwrap_or(0);
                prop_assert!(used <= g + e, "{key:?} uses {used} of {g} + {e}");
                let usage = &result.tenants[&tenant.name.value][&q.device.value];
                prop_assert!(usage.guaranteed_used <= g);
                prop_assert_eq!(usage.guaranteed_used + usage.borrowed, used);
            }
        }
        // The cohort holds the pool's devices of each type (the lender queue lends the
        // unreserved ones), or the guaranteed total where that is more.
        let mut devices: BTreeMap<String, u64> = BTreeMap::new();
        for (_, group) in pool.node_groups() {
            *devices.entry(group.device.value.clone()).or_default() += group.devices();
        }
        for (device, used) in &per_device {
            let bound = cohort
                .get(device)
                .copied()
                .unwrap_or(0)
                .max(devices.get(device).copied().unwrap_or(0));
            prop_assert!(*used <= bound);
            prop_assert!(*used <= devices.get(device).copied().unwrap_or(0));
        }
        let counts = result.counts;
        prop_assert_eq!(
            counts.admitted + counts.borrows + counts.queues + counts.never_admissible + counts.not_planned,
            plans.len()
        );
    }
}
