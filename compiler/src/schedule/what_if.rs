//! Capacity what-ifs: the catalogue with devices added at a site (`256xH100_SXM@shanghai`) or
//! a site's node groups removed, and the schedule's change against the unchanged pool.

use super::{Options, Submits, schedule_with_services};
use crate::catalogue::Catalogue;
use loam_ir::display::significant;
use loam_ir::plan::{Plan, ServicePlan};
use loam_ir::schedule::{MovedJob, Schedule, WhatIf};
use std::collections::BTreeMap;

/// One `--add`: devices of a type at a site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addition {
    /// Devices to add.
    pub devices: u64,
    /// Device type id.
    pub device: String,
    /// Site name.
    pub site: String,
}

impl Addition {
    /// Reads `256xH100_SXM@shanghai`, or says what is wrong.
    pub fn parse(text: &str) -> Result<Addition, String> {
        let bad = || format!("`{text}`: write COUNTxDEVICE@SITE, e.g. 256xH100_SXM@shanghai");
        let (count, rest) = text.split_once(['x', '×']).ok_or_else(bad)?;
        let (device, site) = rest.split_once('@').ok_or_else(bad)?;
        let devices: u64 = count.trim().parse().map_err(|_| bad())?;
        if devices == 0 || device.is_empty() || site.is_empty() {
            return Err(bad());
        }
        Ok(Addition {
            devices,
            device: device.to_string(),
            site: site.to_string(),
        })
    }
}

/// The catalogue with `additions` and without the node groups of `removed` sites, and each
/// change in words; or what cannot be changed (an unknown site or device type).
pub fn changed_catalogue(
    catalogue: &Catalogue,
    additions: &[Addition],
    removed: &[String],
) -> Result<(Catalogue, Vec<String>), String> {
    let mut changed = catalogue.clone();
    let mut words = Vec::new();
    for add in additions {
        let mut applied = false;
        for pool in changed.pools.values_mut() {
            for site in pool.sites.iter_mut().filter(|s| s.name.value == add.site) {
                let Some(group) = site
                    .node_groups
                    .iter_mut()
                    .find(|g| g.device.value == add.device)
                else {
                    continue;
                };
                let per_node = u64::from(group.devices_per_node.value.max(1));
                let nodes = add.devices.div_ceil(per_node);
                group.nodes = group
                    .nodes
                    .saturating_add(u32::try_from(nodes).unwrap_or(u32::MAX));
                words.push(format!(
                    "+{} {} at {} ({} nodes on node group {})",
                    nodes * per_node,
                    add.device,
                    add.site,
                    nodes,
                    group.name.value
                ));
                applied = true;
            }
        }
        if !applied {
            return Err(format!(
                "no node group of {} at a site `{}`: --add grows a node group the plans may use",
                add.device, add.site
            ));
        }
    }
    for name in removed {
        let mut found = false;
        for pool in changed.pools.values_mut() {
            for site in pool.sites.iter_mut().filter(|s| &s.name.value == name) {
                let devices: u64 = site.node_groups.iter().map(|g| g.devices()).sum();
                site.node_groups.clear();
                words.push(format!("-{devices} devices: site {name} removed"));
                found = true;
            }
        }
        if !found {
            return Err(format!("no site `{name}` in the catalogue's pools"));
        }
    }
    Ok((changed, words))
}

/// The schedule on the changed catalogue, with `what_if` comparing it to the unchanged one.
pub fn compare(
    plans: &[Plan],
    services: &[ServicePlan],
    submits: &Submits,
    before_catalogue: &Catalogue,
    after_catalogue: &Catalogue,
    changes: Vec<String>,
    options: &Options,
) -> Schedule {
    let before = schedule_with_services(plans, services, submits, before_catalogue, options);
    let mut after = schedule_with_services(plans, services, submits, after_catalogue, options);
    // (file, job) → (finish, deadline verdict) of the unchanged pool.
    type Before<'a> = BTreeMap<(&'a str, &'a str), (Option<f64>, Option<&'a str>)>;
    let finishes: Before<'_> = before
        .jobs
        .iter()
        .map(|j| {
            (
                (j.file.as_str(), j.job.as_str()),
                (j.finish_h, j.deadline.as_ref().map(|d| d.verdict.as_str())),
            )
        })
        .collect();
    let mut moved = Vec::new();
    for j in &after.jobs {
        let Some(&(finish, verdict)) = finishes.get(&(j.file.as_str(), j.job.as_str())) else {
            continue;
        };
        let now = j.deadline.as_ref().map(|d| d.verdict.as_str());
        let change = match (finish, j.finish_h) {
            (Some(a), Some(b)) => Some(significant(b - a)),
            _ => None,
        };
        let finish_moved = finish != j.finish_h;
        if finish_moved || verdict != now {
            moved.push(MovedJob {
                job: j.job.clone(),
                file: j.file.clone(),
                finish_change_h: change,
                verdict_change: match (verdict, now) {
                    (Some(a), Some(b)) if a != b => format!("{a} → {b}"),
                    _ => String::new(),
                },
            });
        }
    }
    let mut cost_change: BTreeMap<String, f64> = after.totals.cost.clone();
    for (currency, amount) in &before.totals.cost {
        *cost_change.entry(currency.clone()).or_default() -= amount;
    }
    let what_if = WhatIf {
        changes,
        deadlines_met_change: after.totals.met as i64 - before.totals.met as i64,
        wait_change_h: significant(after.totals.wait_h - before.totals.wait_h),
        cost_change: cost_change
            .into_iter()
            .map(|(k, v)| (k, significant(v)))
            .collect(),
        moved,
        before: before.totals,
        after: after.totals.clone(),
    };
    after.what_if = Some(what_if);
    after
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_addition_reads_count_device_and_site() {
        assert_eq!(
            Addition::parse("256xH100_SXM@shanghai"),
            Ok(Addition {
                devices: 256,
                device: "H100_SXM".to_string(),
                site: "shanghai".to_string()
            })
        );
        assert!(Addition::parse("H100@shanghai").is_err());
        assert!(Addition::parse("0xH100@shanghai").is_err());
        assert!(Addition::parse("12xH100").is_err());
    }
}
