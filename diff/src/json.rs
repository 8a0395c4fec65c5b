//! The diff as one JSON document for tools, versioned like the Plan JSON and with every object's
//! keys sorted.
//!
//! ```text
//! { "format_version": "1.0",
//!   "base": { "label", "commit", "catalogue", "catalogue_digest" }, "head": { … },
//!   "verdict", "headline": [ the reviewer's headline, one part per string ],
//!   "summary": { "add", "change", "replace", "destroy", "unchanged", "unchanged_services",
//!                "infeasible", "infeasible_services", "errors" },
//!   "totals": [ per tenant, then the total: jobs' device-hours, cost, energy, carbon ],
//!   "service_totals": [ per tenant, then the total, per month: "services", "devices",
//!                       "cost_per_month", "energy_mwh_per_month", "carbon_t_per_month" ],
//!   "jobs": [ { "job", "file", "actions": ["update"], "previous_job", "previous_file", "note",
//!               "changes": [ { "attribute", "before", "after", "delta", "delta_pct" } ],
//!               "before": Plan, "after": Plan, "manifests_diff",
//!               "classification": { "backend", "reasons": [ { "file", "object", "field", "at",
//!                                   "change", "effect": "replace" | "update" | "cluster",
//!                                   "why" } ] } | null } ],
//!   "services": [ { "service", "file", "actions", "note", "changes", "before": ServicePlan,
//!                   "after": ServicePlan } ],
//!   "broken_files": [ { "file", "errors" } ],
//!   "catalogue_changes": [ "specs/pools/x.yaml sites[a].node_groups[b].price: 32.0 CNY → 40.0 CNY" ]
//!                       (since 3.0: what changed in the catalogue, at most 8 lines and a count),
//!   "catalogue_errors": [ { "file", "errors" } ] (since 3.0: the catalogue's files that do
//!                       not load at head; the plans of the specs that use them, or every
//!                       plan when nothing of the catalogue loads, are `unplanned` in the
//!                       summary),
//!   "schedule": { "deadlines_met": [base, head], "deadlines": [base, head],
//!                 "deadlines_lost": [job], "deadlines_won": [job], "wait_h": [base, head],
//!                 "delayed", "max_delay_h",
//!                 "jobs": [ { "job", "file", "change": "moved" | "added" | "removed",
//!                             "start_h": [base, head], "finish_h": [base, head], "delay_h",
//!                             "deadline": [base verdict, head verdict] } ],
//!                 "utilisation": [ { "site", "device", "utilisation": [base, head] } ] } | null
//!               (since 3.1: every job of each side scheduled together, docs/scheduling.md;
//!               null when nothing moves),
//!   "diagnostics": [ { "side": "base" | "head", …diagnostic } ] }
//! ```
//!
//! Unchanged jobs are listed with `"actions": ["no-op"]` and neither plans nor changes.
//! Services (since 3.0) are listed the same way, without manifests or classification: a
//! service's Deployment takes every change in place. A replacement is counted as `replace`
//! (since 3.0), no longer as one add and one destroy.
//! `classification` (since 1.1) says what the manifests' changes do on the backend of a job on
//! both sides; it is `null` for created, destroyed, renamed and unplanned jobs.

use super::classify::Verdict;
use super::compare::PlanDiff;
use super::side::Side;
use crate::ShowDiagnostics;
use loam_ir::diff::Action;
use loam_ir::plan::json::sort_keys;
use serde_json::{Map, Value, json};

/// The version of the diff JSON format (Terraform's rules: a minor bump adds fields).
pub const DIFF_FORMAT_VERSION: &str = "3.1";

fn classification(verdict: &Verdict) -> Value {
    let reasons: Vec<Value> = verdict
        .reasons
        .iter()
        .map(|r| {
            json!({
                "file": r.file,
                "object": r.object,
                "field": r.field,
                "at": r.at,
                "change": r.change,
                "effect": r.effect.name(),
                "why": r.why,
            })
        })
        .collect();
    json!({"backend": verdict.backend, "reasons": reasons})
}

/// A change list: `[ { "attribute", "unit", "before", "after", "delta", "delta_pct" } ]`.
fn changes_json(changes: &[loam_ir::diff::values::Change]) -> Value {
    Value::Array(
        changes
            .iter()
            .map(|c| {
                let (delta, pct) = c.delta_json();
                json!({
                    "attribute": c.key,
                    "unit": c.unit(),
                    "before": c.before.as_ref().map(loam_ir::diff::values::Value::to_json),
                    "after": c.after.as_ref().map(loam_ir::diff::values::Value::to_json),
                    "delta": delta,
                    "delta_pct": pct,
                })
            })
            .collect(),
    )
}

fn side_json(side: &Side) -> Value {
    json!({
        "label": side.label,
        "commit": side.commit,
        "catalogue": side.catalogue_origin,
        "catalogue_digest": side.catalogue_digest,
    })
}

/// The diff document; its diagnostics written by `shown`.
pub fn render(diff: &PlanDiff, base: &Side, head: &Side, shown: &dyn ShowDiagnostics) -> Value {
    let summary = diff.summary();
    let jobs: Vec<Value> = diff
        .jobs
        .iter()
        .map(|job| {
            let mut entry = Map::new();
            entry.insert("job".into(), json!(job.job));
            entry.insert("file".into(), json!(job.file));
            entry.insert("actions".into(), json!(job.action.terraform_actions()));
            if job.action == Action::NoOp {
                return Value::Object(entry);
            }
            entry.insert("previous_job".into(), json!(job.old_job));
            entry.insert("previous_file".into(), json!(job.old_file));
            entry.insert("note".into(), json!(job.note));
            entry.insert("changes".into(), changes_json(&job.changes));
            entry.insert(
                "before".into(),
                serde_json::to_value(&job.before).unwrap_or(Value::Null),
            );
            entry.insert(
                "after".into(),
                serde_json::to_value(&job.after).unwrap_or(Value::Null),
            );
            entry.insert("manifests_diff".into(), json!(job.manifests));
            entry.insert(
                "classification".into(),
                job.verdict.as_ref().map_or(Value::Null, classification),
            );
            Value::Object(entry)
        })
        .collect();
    let services: Vec<Value> = diff
        .services
        .iter()
        .map(|service| {
            let mut entry = Map::new();
            entry.insert("service".into(), json!(service.service));
            entry.insert("file".into(), json!(service.file));
            entry.insert("actions".into(), json!(service.action.terraform_actions()));
            if service.action == Action::NoOp {
                return Value::Object(entry);
            }
            entry.insert("note".into(), json!(service.note));
            entry.insert("changes".into(), changes_json(&service.changes));
            entry.insert(
                "before".into(),
                serde_json::to_value(&service.before).unwrap_or(Value::Null),
            );
            entry.insert(
                "after".into(),
                serde_json::to_value(&service.after).unwrap_or(Value::Null),
            );
            Value::Object(entry)
        })
        .collect();
    let service_totals: Vec<Value> = super::services::totals(&diff.services, base, head)
        .iter()
        .map(super::services::MonthRow::to_json)
        .collect();
    let broken: Vec<Value> = diff
        .broken
        .iter()
        .map(|b| json!({"file": b.file, "errors": b.errors}))
        .collect();
    let mut diagnostics = Vec::new();
    for (name, side) in [("base", base), ("head", head)] {
        for d in side
            .specs
            .diagnostics
            .iter()
            .chain(side.planner_diagnostics())
        {
            if name == "base" && !d.is_error() {
                continue;
            }
            let mut value = shown.json(d, &side.specs.sources);
            if let Value::Object(map) = &mut value {
                map.insert("side".into(), json!(name));
            }
            diagnostics.push(value);
        }
    }
    let totals: Vec<Value> = super::totals::totals(diff, base, head)
        .iter()
        .map(super::totals::Cells::to_json)
        .collect();
    sort_keys(json!({
        "format_version": DIFF_FORMAT_VERSION,
        "base": side_json(base),
        "head": side_json(head),
        "verdict": summary.verdict(),
        "headline": super::headline::parts(diff, base, head),
        "summary": {
            "add": summary.add, "change": summary.change, "replace": summary.replace,
            "destroy": summary.destroy, "unchanged": summary.unchanged,
            "unchanged_services": summary.unchanged_services,
            "infeasible": summary.infeasible,
            "infeasible_services": summary.infeasible_services,
            "errors": summary.errors,
            "unplanned": summary.unplanned,
        },
        "catalogue_changes": super::catalogue_changes::lines(base, head),
        "catalogue_errors": diff.catalogue.iter()
            .map(|b| json!({"file": b.file, "errors": b.errors}))
            .collect::<Vec<_>>(),
        "totals": totals,
        "service_totals": service_totals,
        "services": services,
        "admission_changes": serde_json::to_value(&diff.admission).unwrap_or(Value::Null),
        "schedule": diff.schedule.as_ref().map_or(Value::Null, |s| serde_json::to_value(s).unwrap_or(Value::Null)),
        "jobs": jobs,
        "broken_files": broken,
        "diagnostics": diagnostics,
    }))
}
