//! Small workloads for `loam_compiler::schedule`: a catalogue whose test pool `lab` has the
//! tenants and quotas a test asks for, and plans made from the emit fixture `small-1-node`
//! with the fields the schedule reads set (tenant, priority, devices on the 32-device node group
//! `lab-h100`, hours of work, checkpoint interval).

use loam_compiler::catalogue::{Catalogue, builtin_sources};
use loam_compiler::schedule::{DEFAULT_SEED, Options, Rules, Submits, schedule};
use loam_ir::plan::Plan;
use loam_ir::schedule::Schedule;
use loam_tests::tools::plan_fixture;

/// Devices of `lab-h100` (4 nodes × 8): the pool's one H100 node group and its cohort.
pub const LAB_H100_DEVICES: u64 = 32;

/// A tenant's H100 quota: name, guaranteed, elastic.
pub type Quota = (&'static str, u64, u64);

/// The built-in catalogue with the `lab` pool's tenants replaced by `quotas` (H100 only).
pub fn catalogue(quotas: &[Quota]) -> Catalogue {
    let mut texts: Vec<(String, String)> = builtin_sources()
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    let lab = texts
        .iter_mut()
        .find(|(p, _)| p.ends_with("pools/lab.yaml"))
        .expect("the built-in catalogue has the lab pool");
    let cut = lab.1.find("\ntenants:").expect("lab.yaml has tenants");
    let mut text = lab.1[..cut].to_string();
    text.push_str("\ntenants:\n");
    for (name, guaranteed, elastic) in quotas {
        text.push_str(&format!(
            "  - name: {name}\n    checkpoint_root: /ckpt/{name}\n    kubernetes_namespace: team-{name}\n    slurm_account: {name}\n    queue: {name}\n    quota:\n      - {{ device: H100_SXM, guaranteed: {guaranteed}, elastic: {elastic} }}\n"
        ));
    }
    lab.1 = text;
    let checked = loam_compiler::project::load_catalogue(texts);
    let problems: Vec<String> = checked
        .diagnostics
        .iter()
        .map(|d| format!("{d:?}"))
        .collect();
    checked
        .catalogue
        .unwrap_or_else(|| panic!("the test catalogue loads: {problems:#?}"))
}

/// One job of a workload.
#[derive(Debug, Clone)]
pub struct WorkJob {
    /// Its name (also its file, `jobs/<name>.loam`, so the rules' file tie-break is by name).
    pub name: String,
    /// Its tenant.
    pub tenant: String,
    /// `critical`, `high`, `normal` or `low`.
    pub priority: &'static str,
    /// Nodes of 8 devices.
    pub nodes: u64,
    /// Hours of work.
    pub hours: f64,
    /// Hours of work between checkpoints (`None`: none).
    pub checkpoint_h: Option<f64>,
}

/// The plan of `job`: the fixture's, on `nodes` × 8 devices of `lab-h100`.
pub fn plan(job: &WorkJob) -> Plan {
    let fixture = plan_fixture("small-1-node");
    let mut value = serde_json::to_value(fixture.plans.first().expect("one plan")).unwrap();
    value["job"] = job.name.clone().into();
    value["file"] = format!("jobs/{}.loam", job.name).into();
    value["tenant"] = job.tenant.clone().into();
    value["priority"] = job.priority.into();
    value["interruptible"] = false.into();
    value["pool"] = "lab".into();
    let group = &mut value["groups"][0];
    group["site"] = "alpha".into();
    group["device"] = "H100_SXM".into();
    group["node_group"] = "lab-h100".into();
    group["nodes"] = job.nodes.into();
    group["devices"] = (job.nodes * 8).into();
    group["devices_per_node"] = 8.into();
    group["slurm_partition"] = "lab-h100".into();
    value["estimate"]["train_time_h"] = job.hours.into();
    value["data"] = serde_json::Value::Null;
    match job.checkpoint_h {
        Some(h) => value["checkpoint"]["interval_min"] = (h * 60.0).into(),
        None => value["checkpoint"] = serde_json::Value::Null,
    }
    serde_json::from_value(value).unwrap()
}

/// `loam schedule`'s core on `jobs` (all submitted at hour 0) over `horizon_h`.
pub fn run(jobs: &[WorkJob], quotas: &[Quota], horizon_h: f64) -> Schedule {
    run_submitted(jobs, &[], quotas, horizon_h)
}

/// `loam schedule`'s core on `jobs`, each submitted at the hour `submits` gives its name (else
/// hour 0), over `horizon_h`.
pub fn run_submitted(
    jobs: &[WorkJob],
    submits: &[(String, f64)],
    quotas: &[Quota],
    horizon_h: f64,
) -> Schedule {
    run_under(jobs, submits, quotas, horizon_h, Rules::Kueue)
}

/// As [`run_submitted`], under `rules`.
pub fn run_under(
    jobs: &[WorkJob],
    submits: &[(String, f64)],
    quotas: &[Quota],
    horizon_h: f64,
    rules: Rules,
) -> Schedule {
    let plans: Vec<Plan> = jobs.iter().map(plan).collect();
    let submits: Submits = submits
        .iter()
        .map(|(name, h)| ((format!("jobs/{name}.loam"), name.clone()), *h))
        .collect();
    schedule(
        &plans,
        &submits,
        &catalogue(quotas),
        &Options {
            start: "2026-01-05".to_string(),
            horizon_h,
            samples: 0,
            seed: DEFAULT_SEED,
            threads: 1,
            rules,
        },
    )
}
