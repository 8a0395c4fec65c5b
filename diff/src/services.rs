//! What changes between the service plans of two sides (`services[]` of the Plan JSON): services
//! matched by name, per service the attributes a reviewer decides on (traffic and targets,
//! replicas and devices at the busiest hour, latency, cost per month), and the totals per
//! tenant per month.
//!
//! A service changes when anything that decides how it is served differs: file, tenant,
//! priority, pool, feasibility and reasons, model, traffic, engine, mode, roles, group,
//! estimates and autoscaling. The explanations (`why`, `notes`) and the Pareto front it was chosen
//! from are not compared, as a job's alternatives are not.
//!
//! A service's cost is per month (30 days, following its hourly profile), a job's is for the
//! whole run: the two are never added up, so services have their own totals.

use super::compare::{Attr, shown_whole};
use super::side::Side;
use loam_ir::diff::Action;
use loam_ir::diff::values::{Change, Metric, Value};
use loam_ir::display::significant;
use loam_ir::plan::ServicePlan;
use serde_json::json;
use std::collections::BTreeMap;

/// A service's change between the sides.
#[derive(Debug, Clone)]
pub struct ServiceDiff {
    /// What happens to it: create, update, delete, infeasible, error or no change (a service
    /// is a Deployment or a LeaderWorkerSet that takes changes in place, never a replacement).
    pub action: Action,
    /// Its name (at head; at base when deleted).
    pub service: String,
    /// Its file (at head; at base when deleted).
    pub file: String,
    /// The plan at base.
    pub before: Option<ServicePlan>,
    /// The plan at head.
    pub after: Option<ServicePlan>,
    /// The attributes that differ (for creates and deletes, the main attributes of the one side).
    pub changes: Vec<Change>,
    /// A remark: `examples/chat.loam does not check at work tree`.
    pub note: Option<String>,
}

impl ServiceDiff {
    /// The plan shown: head's, else base's.
    pub fn shown(&self) -> Option<&ServicePlan> {
        self.after.as_ref().or(self.before.as_ref())
    }

    /// The tenant, from the plan shown.
    pub fn tenant(&self) -> &str {
        self.shown().map_or("", |p| p.tenant.as_str())
    }
}

/// Milliseconds, for latencies (a TPOT of 32 ms reads badly as `0.03 s`).
const MS: Metric = Metric::Amount("ms");

/// The main attributes of a service plan, in display order.
pub fn attributes(plan: &ServicePlan) -> Vec<Attr> {
    let mut attrs = Vec::new();
    let mut push = |key: &str, value: Value| {
        attrs.push(Attr {
            key: key.to_string(),
            value,
        });
    };
    let text = |value: String| Value::Text(value);
    push("service", text(plan.service.clone()));
    push("file", text(plan.file.clone()));
    push("tenant", text(plan.tenant.clone()));
    push("priority", text(plan.priority.to_string()));
    push("pool", text(plan.pool.clone()));
    push("feasible", Value::Bool(plan.feasible));
    push("model.weights", text(plan.model.weights.clone()));
    push("model.precision", text(plan.model.precision.to_string()));
    push("engine", text(plan.engine.to_string()));
    let t = &plan.traffic;
    push(
        "traffic.peak_rate",
        Value::Number(t.peak_rate, Metric::Amount("requests/s")),
    );
    if let Some(c) = t.concurrency {
        push("traffic.concurrency", Value::Count(c));
    }
    push(
        "traffic.input_mean",
        Value::Number(t.input_mean, Metric::Amount("tokens")),
    );
    push(
        "traffic.output_mean",
        Value::Number(t.output_mean, Metric::Amount("tokens")),
    );
    for (key, target) in [
        ("targets.ttft", t.ttft_s),
        ("targets.tpot", t.tpot_s),
        ("targets.e2e", t.e2e_s),
    ] {
        if let Some(s) = target {
            push(key, Value::Number(s * 1000.0, MS));
        }
    }
    if let Some(mode) = plan.mode {
        push("mode", text(mode.to_string()));
    }
    if !plan.roles.is_empty() {
        let mut sites: Vec<&str> = plan.roles.iter().map(|r| r.group.site.as_str()).collect();
        sites.sort_unstable();
        sites.dedup();
        let mut devices: Vec<&str> = plan.roles.iter().map(|r| r.group.device.as_str()).collect();
        devices.sort_unstable();
        devices.dedup();
        push("placement.sites", text(sites.join(", ")));
        push("placement.devices", text(devices.join(", ")));
    }
    let mut list = |key: &str, items: Vec<String>| {
        if !items.is_empty() {
            attrs.push(Attr {
                key: key.to_string(),
                value: Value::List(items),
            });
        }
    };
    list("reasons", plan.reasons.clone());
    list(
        "roles",
        plan.roles
            .iter()
            .map(|r| {
                format!(
                    "{}: {} × tp{}{} on {} × {} at {} ({})",
                    r.role,
                    r.replicas,
                    r.tensor,
                    if r.pipeline > 1 {
                        format!(" pp{}", r.pipeline)
                    } else {
                        String::new()
                    },
                    r.replicas * r.devices_per_replica,
                    r.group.device,
                    r.group.site,
                    r.group.node_group
                )
            })
            .collect(),
    );
    if let Some(a) = &plan.autoscaling {
        let bounds: Vec<String> = a
            .min_replicas
            .iter()
            .zip(&a.max_replicas)
            .map(|(lo, hi)| format!("{lo}..{hi}"))
            .collect();
        list(
            "autoscaling.replicas",
            if bounds.is_empty() {
                Vec::new()
            } else {
                vec![bounds.join(", ")]
            },
        );
    }
    let mut number = |key: &str, value: Value| {
        attrs.push(Attr {
            key: key.to_string(),
            value,
        });
    };
    if let Some(e) = &plan.estimate {
        number("estimate.devices", Value::Count(e.devices));
        number(
            "estimate.device_hours_per_day",
            Value::Number(e.device_hours_per_day, Metric::Amount("device-h")),
        );
        number(
            "estimate.cost_per_month",
            Value::Number(
                e.cost_per_month.amount,
                Metric::Money(e.cost_per_month.currency.clone()),
            ),
        );
        number(
            "estimate.cost_per_million_tokens",
            Value::Number(
                e.cost_per_million_tokens.amount,
                Metric::Money(e.cost_per_million_tokens.currency.clone()),
            ),
        );
        number("estimate.ttft", Value::Number(e.ttft_s * 1000.0, MS));
        number("estimate.tpot", Value::Number(e.tpot_s * 1000.0, MS));
        number(
            "estimate.output_tokens_per_s",
            Value::Number(e.output_tokens_per_s, Metric::Rate),
        );
        number(
            "estimate.energy_per_month",
            Value::Number(e.energy_kwh_per_month, Metric::Energy),
        );
        number(
            "estimate.carbon_per_month",
            Value::Number(e.carbon_kg_per_month, Metric::Carbon),
        );
    }
    attrs
}

/// The attributes shown for a created or destroyed service: the ones a reviewer looks at first.
const SHOWN_WHOLE: [&str; 9] = [
    "reasons",
    "file",
    "tenant",
    "pool",
    "traffic.peak_rate",
    "roles",
    "estimate.devices",
    "estimate.cost_per_month",
    "estimate.tpot",
];

/// The attributes that differ, in display order; when none of them does but the plans still
/// differ in what decides how the service runs (a node label, an hourly replica count), the
/// first Plan JSON path that differs.
pub fn changes(before: &ServicePlan, after: &ServicePlan) -> Vec<Change> {
    let old = attributes(before);
    let new = attributes(after);
    let old_map: BTreeMap<&str, &Value> = old.iter().map(|a| (a.key.as_str(), &a.value)).collect();
    let new_map: BTreeMap<&str, &Value> = new.iter().map(|a| (a.key.as_str(), &a.value)).collect();
    let mut keys: Vec<&str> = new.iter().map(|a| a.key.as_str()).collect();
    keys.extend(
        old.iter()
            .map(|a| a.key.as_str())
            .filter(|k| !new_map.contains_key(k)),
    );
    let mut found: Vec<Change> = keys
        .into_iter()
        .filter(|key| old_map.get(key) != new_map.get(key))
        .map(|key| Change {
            key: key.to_string(),
            before: old_map.get(key).map(|v| (*v).clone()),
            after: new_map.get(key).map(|v| (*v).clone()),
        })
        .collect();
    if found.is_empty() && differs(before, after) {
        found.push(Change {
            key: "plan".into(),
            before: Some(Value::Text("as planned at base".into())),
            after: Some(Value::Text(
                "differs outside the shown attributes (the JSON report has both plans)".into(),
            )),
        });
    }
    found
}

/// Whether two plans of one service differ in anything that decides how it runs.
fn differs(before: &ServicePlan, after: &ServicePlan) -> bool {
    stripped(before) != stripped(after)
}

/// The plan without its explanations and the front it was chosen from.
fn stripped(plan: &ServicePlan) -> ServicePlan {
    let mut plan = plan.clone();
    plan.why.clear();
    plan.notes.clear();
    plan.pareto.clear();
    plan
}

/// The attributes of one side shown for a created or destroyed service.
fn whole(plan: &ServicePlan, created: bool) -> Vec<Change> {
    let attrs = attributes(plan);
    shown_whole(&attrs, &SHOWN_WHOLE, created)
}

/// Matches the services of the two sides by name and lists what changes, sorted by file then
/// name (unchanged ones included). A service whose file does not check on the other side is
/// shown against that side's diagnostics: an error at head, the whole plan at base.
pub fn compare(base: &Side, head: &Side) -> Vec<ServiceDiff> {
    let base_names: BTreeMap<&str, &ServicePlan> = base
        .services()
        .iter()
        .map(|p| (p.service.as_str(), p))
        .collect();
    let head_names: BTreeMap<&str, &ServicePlan> = head
        .services()
        .iter()
        .map(|p| (p.service.as_str(), p))
        .collect();
    let mut out = Vec::new();
    for after in head.services() {
        let entry = match base_names.get(after.service.as_str()) {
            Some(before) => {
                let moved = before.file != after.file;
                let changed = moved || differs(before, after);
                ServiceDiff {
                    action: if changed {
                        Action::Update
                    } else {
                        Action::NoOp
                    },
                    service: after.service.clone(),
                    file: after.file.clone(),
                    before: Some((*before).clone()),
                    after: Some(after.clone()),
                    changes: if changed {
                        changes(before, after)
                    } else {
                        Vec::new()
                    },
                    note: moved.then(|| format!("moved from {}", before.file)),
                }
            }
            None => {
                let broken = base.is_broken(&after.file);
                ServiceDiff {
                    action: if broken {
                        Action::Update
                    } else {
                        Action::Create
                    },
                    service: after.service.clone(),
                    file: after.file.clone(),
                    before: None,
                    after: Some(after.clone()),
                    changes: whole(after, true),
                    note: broken.then(|| {
                        format!(
                            "at {} its spec does not check; the whole plan is shown",
                            base.label
                        )
                    }),
                }
            }
        };
        out.push(entry);
    }
    for before in base
        .services()
        .iter()
        .filter(|p| !head_names.contains_key(p.service.as_str()))
    {
        let broken = head.is_broken(&before.file);
        out.push(ServiceDiff {
            action: if broken {
                Action::Error
            } else {
                Action::Delete
            },
            service: before.service.clone(),
            file: before.file.clone(),
            before: Some(before.clone()),
            after: None,
            changes: if broken {
                Vec::new()
            } else {
                whole(before, false)
            },
            note: broken.then(|| head.broken_note(&before.file)),
        });
    }
    // A service no deployment serves within its targets and budget at head is its own verdict,
    // whatever else changed, as an infeasible job is.
    for service in &mut out {
        if service.after.as_ref().is_some_and(|p| !p.feasible) {
            service.action = Action::Infeasible;
            if service.changes.is_empty()
                && let Some(after) = &service.after
            {
                service.changes = whole(after, true)
                    .into_iter()
                    .filter(|c| c.key == "reasons")
                    .collect();
            }
        }
    }
    out.sort_by(|a, b| (&a.file, &a.service).cmp(&(&b.file, &b.service)));
    out
}

/// The sums over one side's services, per month.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MonthFigures {
    /// Services planned.
    pub services: usize,
    /// Devices at the busiest hour.
    pub devices: u64,
    /// Money per month, per currency.
    pub cost: BTreeMap<String, f64>,
    /// Energy per month, kWh.
    pub energy_kwh: f64,
    /// Carbon per month, kg CO2.
    pub carbon_kg: f64,
}

impl MonthFigures {
    fn add(&mut self, plan: &ServicePlan) {
        self.services += 1;
        let Some(e) = &plan.estimate else { return };
        self.devices += e.devices;
        *self
            .cost
            .entry(e.cost_per_month.currency.clone())
            .or_default() += e.cost_per_month.amount;
        self.energy_kwh += e.energy_kwh_per_month;
        self.carbon_kg += e.carbon_kg_per_month;
    }
}

/// One row of the services' totals per month: a tenant's services, or all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct MonthRow {
    /// The tenant; `None` for the total.
    pub tenant: Option<String>,
    /// Services that change (any verdict but no change).
    pub changed: usize,
    /// At base.
    pub before: MonthFigures,
    /// At head.
    pub after: MonthFigures,
}

/// The services' totals per month: one row per tenant with a service on either side (sorted),
/// then the total. A service whose spec does not check at head counts with its base plan on
/// both sides, as a job does: its cost is not saved, only unknown.
pub fn totals(services: &[ServiceDiff], base: &Side, head: &Side) -> Vec<MonthRow> {
    let mut rows: BTreeMap<String, MonthRow> = BTreeMap::new();
    let new_row = |tenant: Option<String>| MonthRow {
        tenant,
        changed: 0,
        before: MonthFigures::default(),
        after: MonthFigures::default(),
    };
    let mut total = new_row(None);
    let unchecked = services
        .iter()
        .filter(|s| s.action == Action::Error)
        .filter_map(|s| s.before.as_ref());
    for plan in base.services() {
        rows.entry(plan.tenant.clone())
            .or_insert_with(|| new_row(Some(plan.tenant.clone())))
            .before
            .add(plan);
        total.before.add(plan);
    }
    for plan in head.services().iter().chain(unchecked) {
        rows.entry(plan.tenant.clone())
            .or_insert_with(|| new_row(Some(plan.tenant.clone())))
            .after
            .add(plan);
        total.after.add(plan);
    }
    for service in services.iter().filter(|s| s.action != Action::NoOp) {
        let tenant = service.tenant().to_string();
        rows.entry(tenant.clone())
            .or_insert_with(|| new_row(Some(tenant)))
            .changed += 1;
        total.changed += 1;
    }
    let mut out: Vec<MonthRow> = rows.into_values().collect();
    out.push(total);
    out
}

impl MonthRow {
    /// The row's name: the tenant, or `total`.
    pub fn name(&self) -> &str {
        self.tenant.as_deref().unwrap_or("total")
    }

    /// Devices at the busiest hour, before → after.
    pub fn devices(&self) -> String {
        super::totals::cell_text(
            self.before.devices as f64,
            self.after.devices as f64,
            &loam_ir::display::thousands,
        )
    }

    /// Money per month per currency, before → after.
    pub fn cost(&self) -> String {
        super::totals::cost_cells(&self.before.cost, &self.after.cost)
    }

    /// Energy per month in MWh, before → after.
    pub fn energy(&self) -> String {
        super::totals::mwh(self.before.energy_kwh, self.after.energy_kwh)
    }

    /// Carbon per month in t CO2, before → after.
    pub fn carbon(&self) -> String {
        super::totals::tonnes(self.before.carbon_kg, self.after.carbon_kg)
    }

    /// The row as JSON, per month, rounded to 5 significant digits.
    pub fn to_json(&self) -> serde_json::Value {
        let side = |f: &MonthFigures| {
            let cost: BTreeMap<&String, f64> =
                f.cost.iter().map(|(c, a)| (c, significant(*a))).collect();
            json!({
                "services": f.services,
                "devices": f.devices,
                "cost_per_month": cost,
                "energy_mwh_per_month": significant(f.energy_kwh / 1000.0),
                "carbon_t_per_month": significant(f.carbon_kg / 1000.0),
            })
        };
        let mut currencies: Vec<&String> = self
            .before
            .cost
            .keys()
            .chain(self.after.cost.keys())
            .collect();
        currencies.sort();
        currencies.dedup();
        let cost_delta: BTreeMap<&String, f64> = currencies
            .into_iter()
            .map(|c| {
                let get = |f: &MonthFigures| f.cost.get(c).copied().unwrap_or(0.0);
                (c, significant(get(&self.after) - get(&self.before)))
            })
            .collect();
        json!({
            "tenant": self.tenant,
            "services_changed": self.changed,
            "before": side(&self.before),
            "after": side(&self.after),
            "delta": {
                "services": self.after.services as i64 - self.before.services as i64,
                "devices": self.after.devices as i64 - self.before.devices as i64,
                "cost_per_month": cost_delta,
                "energy_mwh_per_month": significant((self.after.energy_kwh - self.before.energy_kwh) / 1000.0),
                "carbon_t_per_month": significant((self.after.carbon_kg - self.before.carbon_kg) / 1000.0),
            },
        })
    }
}
