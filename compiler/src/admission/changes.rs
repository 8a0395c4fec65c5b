//! What a change to the specs or the catalogue does to admission: each job whose verdict or
//! flavors differ between two previews, with one sentence a pull-request reader understands
//! ("this change makes `qwen-7b` queue behind `llama3-70b`").

use super::{AdmissionPreview, AdmissionStatus, JobAdmission};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One job whose admission differs between base and head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdmissionChange {
    /// The job name (jobs are matched by name, as `loam diff` matches them).
    pub job: String,
    /// The pool at head, or at base for a removed job.
    pub pool: String,
    /// The verdict at base; `None` for a job only at head.
    pub before: Option<AdmissionStatus>,
    /// The verdict at head; `None` for a job only at base.
    pub after: Option<AdmissionStatus>,
    /// The change in one sentence.
    pub sentence: String,
}

/// Every job whose verdict, pool or flavors differ between `base` and `head`, sorted by job name.
pub fn changes(base: &AdmissionPreview, head: &AdmissionPreview) -> Vec<AdmissionChange> {
    let index = |preview: &'_ AdmissionPreview| {
        let mut found: BTreeMap<String, (String, JobAdmission)> = BTreeMap::new();
        for (pool, p) in &preview.pools {
            for job in &p.jobs {
                found
                    .entry(job.job.clone())
                    .or_insert_with(|| (pool.clone(), job.clone()));
            }
        }
        found
    };
    let before = index(base);
    let after = index(head);
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut found = Vec::new();
    for name in names {
        match (before.get(name), after.get(name)) {
            (Some((pool, old)), None) => found.push(AdmissionChange {
                job: name.clone(),
                pool: pool.clone(),
                before: Some(old.status.clone()),
                after: None,
                sentence: format!("`{name}` is removed; it was {}", was(old)),
            }),
            (None, Some((pool, new))) => found.push(AdmissionChange {
                job: name.clone(),
                pool: pool.clone(),
                before: None,
                after: Some(new.status.clone()),
                sentence: format!("new job: this change {}", makes(new)),
            }),
            (Some((old_pool, old)), Some((pool, new))) => {
                let same_flavors = old.flavors.len() == new.flavors.len()
                    && old.flavors.iter().zip(&new.flavors).all(|(a, b)| {
                        (&a.node_group, &a.device, a.devices)
                            == (&b.node_group, &b.device, b.devices)
                    });
                if old.status == new.status && same_flavors && old_pool == pool {
                    continue;
                }
                found.push(AdmissionChange {
                    job: name.clone(),
                    pool: pool.clone(),
                    before: Some(old.status.clone()),
                    after: Some(new.status.clone()),
                    sentence: format!("this change {} (it was {})", makes(new), was(old)),
                });
            }
            (None, None) => {}
        }
    }
    found
}

/// `… admits `x` on 8 × H100_SXM on lab-h100`, `makes `x` queue behind `y``: the verdict as
/// what the change does, for the object of "this change …".
fn makes(job: &JobAdmission) -> String {
    let name = &job.job;
    match &job.status {
        AdmissionStatus::Admitted => format!("admits `{name}` on {}", job.flavors_text()),
        AdmissionStatus::Borrows { borrowed, .. } => format!(
            "makes `{name}` borrow {} beyond its tenant's guaranteed quota (admitted on {}, may be preempted)",
            devices_text(borrowed),
            job.flavors_text()
        ),
        AdmissionStatus::Queues { behind, reason } if behind.is_empty() => {
            format!("makes `{name}` queue ({reason})")
        }
        AdmissionStatus::Queues { behind, reason } => {
            format!("makes `{name}` queue behind {} ({reason})", quoted(behind))
        }
        AdmissionStatus::NeverAdmissible { reason } => {
            format!("makes `{name}` never admissible: {reason}")
        }
        AdmissionStatus::NotPlanned { .. } => format!("leaves `{name}` without a feasible plan"),
    }
}

/// The verdict at base, short: `admitted`, `queued behind `y``.
fn was(job: &JobAdmission) -> String {
    match &job.status {
        AdmissionStatus::Admitted => format!("admitted on {}", job.flavors_text()),
        AdmissionStatus::Borrows { borrowed, .. } => {
            format!("borrowing {}", devices_text(borrowed))
        }
        AdmissionStatus::Queues { behind, .. } if behind.is_empty() => "queued".to_string(),
        AdmissionStatus::Queues { behind, .. } => format!("queued behind {}", quoted(behind)),
        AdmissionStatus::NeverAdmissible { .. } => "never admissible".to_string(),
        AdmissionStatus::NotPlanned { .. } => "not planned".to_string(),
    }
}

/// `8 H100_SXM and 16 Ascend910B`.
pub(crate) fn devices_text(devices: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = devices.iter().map(|(d, n)| format!("{n} {d}")).collect();
    parts.join(" and ")
}

/// `` `a`, `b` ``.
/// Most job names a sentence lists; the rest are counted, so a sentence stays one line when
/// hundreds of jobs hold a node group.
const MOST_NAMES: usize = 3;

fn quoted(names: &[String]) -> String {
    let mut parts: Vec<String> = names
        .iter()
        .take(MOST_NAMES)
        .map(|n| format!("`{n}`"))
        .collect();
    if names.len() > MOST_NAMES {
        parts.push(format!("{} more", names.len() - MOST_NAMES));
    }
    parts.join(", ")
}
