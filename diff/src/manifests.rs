//! The manifests a job's plan turns into on each side, rendered by `loam-backends` as
//! `loam emit` writes them, and their unified diff.

use super::side::Side;
use loam_backends::{Options, Target};
use loam_compiler::catalogue::{builtin, facts};
use loam_ir::cluster::vendor::Vendors;
use loam_ir::plan::{FORMAT_VERSION, Plan, PlanDocument};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The manifests of one plan, by path; empty when the backend refuses the plan (an infeasible
/// plan has none).
pub fn render(plan: &Plan, side: &Side, target: Target) -> BTreeMap<String, String> {
    let doc = PlanDocument {
        format_version: FORMAT_VERSION.to_string(),
        catalogue_digest: side.catalogue_digest.clone().unwrap_or_default(),
        plans: vec![plan.clone()],
        services: Vec::new(),
    };
    let options = match &side.specs.catalogue {
        Some(catalogue) => Options {
            tenants: facts::tenancies(&doc, catalogue),
            node_groups: facts::node_group_devices(&doc, catalogue),
            // Every node group of the plan's sites, as `loam emit` passes them: without them
            // the diff's prerequisites held only the node groups the diffed job uses.
            sites: facts::site_node_groups(&doc, catalogue),
            ..Options::new(facts::vendors(catalogue))
        },
        None => Options::new(shipped_vendors()),
    };
    match loam_backends::render(&doc, target, &options) {
        Ok(manifests) => manifests
            .into_iter()
            .map(|m| (m.path, m.contents))
            .collect(),
        Err(_) => BTreeMap::new(),
    }
}

/// The unified diff of two sets of rendered manifests, file by file in path order; `None` when
/// they are the same.
pub fn diff(old: &BTreeMap<String, String>, new: &BTreeMap<String, String>) -> Option<String> {
    let mut paths: Vec<&String> = old.keys().chain(new.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut out = String::new();
    for path in paths {
        let a = old.get(path).map_or("", String::as_str);
        let b = new.get(path).map_or("", String::as_str);
        if a == b {
            continue;
        }
        let text = similar::TextDiff::from_lines(a, b)
            .unified_diff()
            .context_radius(2)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        out.push_str(&text);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The shipped catalogue's vendors, loaded once: what a side without a catalogue renders with.
fn shipped_vendors() -> Vendors {
    static SHIPPED: OnceLock<Vendors> = OnceLock::new();
    SHIPPED.get_or_init(|| facts::vendors(&builtin())).clone()
}
