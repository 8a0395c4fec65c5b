//! A reviewer's headline: the one line after the verdict that says what the change costs, when
//! it runs and where it is at risk, in every format (the markdown's third line, the text's and
//! the GitHub notice's last, the JSON's `headline`):
//!
//! - the cost delta of the jobs (per currency, with the relative change of the total) and of
//!   the services per month;
//! - the admission outcome of the jobs the change touches: how many run now, how many queue
//!   (behind whom, for the first) and how many will not run;
//! - the tightest deadline inside its uncertainty: a changed job whose time to spare before its
//!   deadline is smaller than its time's stated uncertainty (`0.5 days spare on 59.5 days ±30 %`);
//! - the top cost driver: the changed job or service whose cost moves most.
//!
//! Parts with nothing to say are left out; with nothing at all the headline is empty.

use super::compare::PlanDiff;
use super::services::totals as service_totals;
use super::side::Side;
use super::totals::totals;
use loam_compiler::admission::AdmissionStatus;
use loam_ir::diff::Action;
use loam_ir::display::{hours_or_days, money, plus_minus, signed};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The headline's parts, in order; empty when there is nothing to say.
pub fn parts(diff: &PlanDiff, base: &Side, head: &Side) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(cost) = jobs_cost(diff, base, head) {
        parts.push(cost);
    }
    if let Some(cost) = services_cost(diff, base, head) {
        parts.push(cost);
    }
    if let Some(admission) = admission(diff) {
        parts.push(admission);
    }
    if let Some(slack) = tightest(diff) {
        parts.push(slack);
    }
    if let Some(schedule) = diff
        .schedule
        .as_ref()
        .and_then(super::schedule::headline_part)
    {
        parts.push(schedule);
    }
    if let Some(driver) = driver(diff) {
        parts.push(driver);
    }
    parts
}

/// The headline as one line, parts joined by ` · `.
pub fn line(diff: &PlanDiff, base: &Side, head: &Side) -> String {
    parts(diff, base, head).join(" · ")
}

/// `+1,669 CNY (+48.9 %)`: a signed amount, with its relative change when there was one.
fn delta(before: f64, after: f64, currency: &str) -> String {
    let change = after - before;
    let sign = if change < 0.0 { "-" } else { "+" };
    let pct = if before == 0.0 {
        String::new()
    } else {
        format!(" ({} %)", signed(change / before.abs() * 100.0, 1))
    };
    format!("{sign}{}{pct}", money(change.abs(), currency))
}

/// The deltas per currency of two sums whose currencies differ, joined by ` + `; `None` when
/// no amount moves by a whole unit.
fn deltas(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> Option<String> {
    let mut currencies: Vec<&String> = before.keys().chain(after.keys()).collect();
    currencies.sort();
    currencies.dedup();
    let moved: Vec<String> = currencies
        .into_iter()
        .filter_map(|c| {
            let (b, a) = (
                before.get(c).copied().unwrap_or(0.0),
                after.get(c).copied().unwrap_or(0.0),
            );
            // Below one unit of money the change is rounding, not a bill.
            ((a - b).abs() >= 1.0).then(|| delta(b, a, c))
        })
        .collect();
    (!moved.is_empty()).then(|| moved.join(" + "))
}

/// `jobs +17,731,000 CNY (+39.2 %)`.
fn jobs_cost(diff: &PlanDiff, base: &Side, head: &Side) -> Option<String> {
    diff.changed().next()?;
    let rows = totals(diff, base, head);
    let total = rows.last()?;
    deltas(&total.before.cost, &total.after.cost).map(|d| format!("jobs {d}"))
}

/// `services +146,400 CNY (+148.8 %) per month, +17 devices`.
fn services_cost(diff: &PlanDiff, base: &Side, head: &Side) -> Option<String> {
    diff.changed_services().next()?;
    let rows = service_totals(&diff.services, base, head);
    let total = rows.last()?;
    let devices = total.after.devices as i64 - total.before.devices as i64;
    let cost = deltas(&total.before.cost, &total.after.cost);
    let devices = (devices != 0).then(|| format!("{devices:+} devices"));
    match (cost, devices) {
        (Some(c), Some(d)) => Some(format!("services {c} per month, {d}")),
        (Some(c), None) => Some(format!("services {c} per month")),
        (None, Some(d)) => Some(format!("services {d}")),
        (None, None) => None,
    }
}

/// `admission: 2 run now, 3 queue (`a` behind `b`), 1 will not run`, over the jobs whose
/// admission changes and that are still there at head.
fn admission(diff: &PlanDiff) -> Option<String> {
    let (mut now, mut queue, mut never) = (0usize, 0usize, 0usize);
    let mut first_queued: Option<(&str, &[String])> = None;
    for change in &diff.admission {
        match &change.after {
            Some(AdmissionStatus::Admitted | AdmissionStatus::Borrows { .. }) => now += 1,
            Some(AdmissionStatus::Queues { behind, .. }) => {
                queue += 1;
                first_queued.get_or_insert((change.job.as_str(), behind.as_slice()));
            }
            Some(AdmissionStatus::NeverAdmissible { .. } | AdmissionStatus::NotPlanned { .. }) => {
                never += 1
            }
            None => {}
        }
    }
    let mut said = Vec::new();
    if now > 0 {
        said.push(format!("{now} run now"));
    }
    if queue > 0 {
        let who = match first_queued {
            Some((job, behind)) if !behind.is_empty() => {
                let names: Vec<String> = behind.iter().take(2).map(|b| code(b)).collect();
                let more = if behind.len() > 2 { " …" } else { "" };
                format!(" ({} behind {}{more})", code(job), names.join(", "))
            }
            _ => String::new(),
        };
        said.push(format!("{queue} queue{who}"));
    }
    if never > 0 {
        said.push(format!("{never} will not run"));
    }
    (!said.is_empty()).then(|| format!("admission: {}", said.join(", ")))
}

/// The changed job with the least time to spare before its deadline, when that time is within
/// its time's stated uncertainty: `⚠ `x` 0.5 days spare on 59.5 days ±30 % (deadline 60.0
/// days)`.
fn tightest(diff: &PlanDiff) -> Option<String> {
    let mut found: Option<(f64, String)> = None;
    for job in diff.changed().filter(|j| j.action != Action::Infeasible) {
        let Some(plan) = &job.after else { continue };
        let (Some(estimate), Some(deadline)) = (
            &plan.estimate,
            plan.goal.as_ref().and_then(|g| g.deadline_h),
        ) else {
            continue;
        };
        let time = plan.wall_time_h().unwrap_or(estimate.train_time_h);
        let uncertainty = estimate.throughput_uncertainty.unwrap_or(0.0);
        let spare = deadline - time;
        // A plan whose spare time is less than its time's uncertainty may miss the deadline.
        if uncertainty <= 0.0 || spare > time * uncertainty {
            continue;
        }
        let share = spare / deadline;
        if found.as_ref().is_none_or(|(best, _)| share < *best) {
            found = Some((
                share,
                format!(
                    "⚠ {} {} spare on {} {} (deadline {})",
                    code(&job.job),
                    hours_or_days(spare),
                    hours_or_days(time),
                    plus_minus(uncertainty),
                    hours_or_days(deadline)
                ),
            ));
        }
    }
    found.map(|(_, text)| text)
}

/// One job's or service's cost on both sides, for the driver.
struct Move {
    name: String,
    currency: String,
    before: f64,
    after: f64,
    /// ` per month` for a service.
    per: &'static str,
    /// How much of the change is WAN egress (the chosen data strategy's: data moved before
    /// training, or a split job's activations crossing the WAN).
    egress: f64,
}

/// The WAN egress a job's chosen data strategy pays.
fn egress(plan: Option<&loam_ir::plan::Plan>) -> f64 {
    plan.and_then(|p| p.data.as_ref())
        .and_then(|d| d.options.iter().find(|o| o.chosen))
        .map_or(0.0, |o| o.egress)
}

/// `most from `x`: +14,615,000 CNY (+141.0 %), +14,770,000 CNY of it WAN egress`: the changed job
/// or service whose cost (a service's per month) moves by the largest amount, compared within
/// one currency, with the share of WAN egress when it is a tenth of the change or more; `None`
/// when only one thing changed and egress does not explain it (the cost part already says it).
fn driver(diff: &PlanDiff) -> Option<String> {
    let mut moves: Vec<Move> = Vec::new();
    // A spec that does not check at head has no cost there: it is unknown, not saved.
    for job in diff.changed().filter(|j| j.action != Action::Error) {
        let cost = |p: &Option<loam_ir::plan::Plan>| {
            p.as_ref()
                .and_then(|p| p.estimate.as_ref())
                .map(|e| (e.cost.amount, e.cost.currency.clone()))
        };
        if let Some((currency, before, after)) = amounts(cost(&job.before), cost(&job.after)) {
            moves.push(Move {
                name: job.job.clone(),
                currency,
                before,
                after,
                per: "",
                egress: egress(job.after.as_ref()) - egress(job.before.as_ref()),
            });
        }
    }
    for service in diff
        .changed_services()
        .filter(|s| s.action != Action::Error)
    {
        let cost = |p: &Option<loam_ir::plan::ServicePlan>| {
            p.as_ref()
                .and_then(|p| p.estimate.as_ref())
                .map(|e| (e.cost_per_month.amount, e.cost_per_month.currency.clone()))
        };
        if let Some((currency, before, after)) =
            amounts(cost(&service.before), cost(&service.after))
        {
            moves.push(Move {
                name: service.service.clone(),
                currency,
                before,
                after,
                per: " per month",
                egress: 0.0,
            });
        }
    }
    let several = moves.len() >= 2;
    let top = moves.into_iter().max_by(|x, y| {
        (x.after - x.before)
            .abs()
            .total_cmp(&(y.after - y.before).abs())
    })?;
    let change = top.after - top.before;
    let egress_share = top.egress.abs() >= 1.0 && top.egress.abs() >= 0.1 * change.abs();
    if change.abs() < 1.0 || !(several || egress_share) {
        return None;
    }
    let mut text = format!(
        "most from {}: {}{}",
        code(&top.name),
        delta(top.before, top.after, &top.currency),
        top.per
    );
    if egress_share {
        let sign = if top.egress < 0.0 { "-" } else { "+" };
        let _ = write!(
            text,
            ", {sign}{} of it WAN egress",
            money(top.egress.abs(), &top.currency)
        );
    }
    Some(text)
}

/// Both sides' amounts in the one currency they share (a missing side is zero).
fn amounts(
    before: Option<(f64, String)>,
    after: Option<(f64, String)>,
) -> Option<(String, f64, f64)> {
    match (before, after) {
        (Some((b, cb)), Some((a, ca))) if cb == ca => Some((ca, b, a)),
        (None, Some((a, c))) => Some((c, 0.0, a)),
        (Some((b, c)), None) => Some((c, b, 0.0)),
        _ => None,
    }
}

/// A name from the pull request in backticks, unable to close them early.
fn code(name: &str) -> String {
    format!("`{}`", name.replace('`', "'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::JobDiff;
    use loam_ir::plan::{DataIr, DataOptionIr, Plan};

    /// A shipped plan (a 2-group pipeline) with its cost and its chosen data option's egress set.
    fn plan(cost: f64, egress: f64) -> Plan {
        let text = include_str!("../../tests/cases/emit/plans/hetero-h100-ascend.json");
        let doc: loam_ir::plan::PlanDocument = serde_json::from_str(text).unwrap();
        let mut plan = doc.plans.into_iter().next().unwrap();
        if let Some(e) = plan.estimate.as_mut() {
            e.cost.amount = cost;
        }
        plan.data = Some(DataIr {
            strategy: "split".into(),
            transfer_gb: 0.0,
            transfer_h: 0.0,
            options: vec![DataOptionIr {
                strategy: "split".into(),
                site: "a+b".into(),
                transfer_gb: 0.0,
                transfer_h: 0.0,
                egress,
                time_h: 1.0,
                cost,
                objective: 1.0,
                chosen: true,
                carbon_kg: None,
            }],
            sources: Vec::new(),
        });
        plan
    }

    fn update(before: Plan, after: Plan) -> JobDiff {
        JobDiff {
            action: Action::Update,
            job: after.job.clone(),
            old_job: None,
            file: after.file.clone(),
            old_file: None,
            before: Some(before),
            after: Some(after),
            changes: Vec::new(),
            note: None,
            manifests: None,
            verdict: None,
        }
    }

    /// The plan with a deadline, a train time and the stated uncertainty of its device figures.
    fn timed(deadline_h: f64, train_h: f64, uncertainty: f64) -> Plan {
        let mut plan = plan(1_000.0, 0.0);
        plan.goal = Some(loam_ir::plan::GoalIr {
            optimize: loam_ir::types::Optimize::Time,
            deadline_h: Some(deadline_h),
            budget: None,
        });
        plan.schedule = None;
        plan.data = None;
        if let Some(e) = plan.estimate.as_mut() {
            e.train_time_h = train_h;
            e.throughput_uncertainty = Some(uncertainty);
        }
        plan
    }

    #[test]
    fn a_deadline_inside_the_plans_uncertainty_is_flagged() {
        // The review's pr8c: 59.5 days ±30 % against a 60-day deadline. 12 h spare is far less
        // than 30 % of 1,428 h (428 h), so the plan may well miss it.
        let tight = PlanDiff {
            jobs: vec![update(
                timed(1_440.0, 1_000.0, 0.3),
                timed(1_440.0, 1_428.0, 0.3),
            )],
            ..PlanDiff::default()
        };
        assert_eq!(
            tightest(&tight).unwrap(),
            format!(
                "⚠ `{}` 12.0 h spare on 59.5 days ±30 % (deadline 60.0 days)",
                tight.jobs[0].job
            )
        );
        // 40 days of 60 at ±30 %: 20 days spare against 12 days of uncertainty, no flag.
        let loose = PlanDiff {
            jobs: vec![update(
                timed(1_440.0, 900.0, 0.3),
                timed(1_440.0, 960.0, 0.3),
            )],
            ..PlanDiff::default()
        };
        assert_eq!(tightest(&loose), None);
        // Measured device figures (no uncertainty): nothing to weigh the slack against.
        let measured = PlanDiff {
            jobs: vec![update(
                timed(1_440.0, 1_000.0, 0.0),
                timed(1_440.0, 1_428.0, 0.0),
            )],
            ..PlanDiff::default()
        };
        assert_eq!(tightest(&measured), None);
    }

    #[test]
    fn the_admission_outcome_counts_who_runs_queues_or_never_runs() {
        use loam_compiler::admission::AdmissionChange;
        let change = |job: &str, after: AdmissionStatus| AdmissionChange {
            job: job.into(),
            pool: "xirang".into(),
            before: None,
            after: Some(after),
            sentence: String::new(),
        };
        let queues = |behind: &[&str]| AdmissionStatus::Queues {
            behind: behind.iter().map(|b| (*b).to_string()).collect(),
            reason: String::new(),
        };
        // The review's pr8c: three 70B jobs now queue behind the 8B fine-tune and Mixtral.
        let diff = PlanDiff {
            admission: vec![
                change("a", AdmissionStatus::Admitted),
                change(
                    "llama3-70b-h100-h20",
                    queues(&["llama3-8b-sft", "mixtral-8x7b"]),
                ),
                change(
                    "llama3-70b-mixed",
                    queues(&["llama3-8b-sft", "mixtral-8x7b"]),
                ),
                change(
                    "llama3-70b-pretrain",
                    queues(&["llama3-8b-sft", "mixtral-8x7b", "x"]),
                ),
                change(
                    "z",
                    AdmissionStatus::NeverAdmissible {
                        reason: String::new(),
                    },
                ),
            ],
            ..PlanDiff::default()
        };
        assert_eq!(
            admission(&diff).unwrap(),
            "admission: 1 run now, 3 queue (`llama3-70b-h100-h20` behind `llama3-8b-sft`, \
             `mixtral-8x7b`), 1 will not run"
        );
        assert_eq!(admission(&PlanDiff::default()), None);
    }

    #[test]
    fn the_driver_says_how_much_of_a_cost_change_is_wan_egress() {
        // The review's pr8c: 10,368,000 -> 24,983,000 CNY (+14,615,000, +141.0 %), of which the
        // egress of the activations crossing the WAN went from 0 to 14,770,000 CNY.
        let diff = PlanDiff {
            jobs: vec![update(
                plan(10_368_000.0, 0.0),
                plan(24_983_000.0, 14_770_000.0),
            )],
            ..PlanDiff::default()
        };
        let currency = diff.jobs[0]
            .after
            .as_ref()
            .and_then(|p| p.estimate.as_ref())
            .map(|e| e.cost.currency.clone())
            .unwrap();
        assert_eq!(
            driver(&diff).unwrap(),
            format!(
                "most from `{}`: +14,615,000 {currency} (+141.0 %), +14,770,000 {currency} of it WAN egress",
                diff.jobs[0].job
            )
        );
        // Without egress, one job's change is the cost part's alone.
        let plain = PlanDiff {
            jobs: vec![update(plan(100.0, 0.0), plan(200.0, 0.0))],
            ..PlanDiff::default()
        };
        assert_eq!(driver(&plain), None);
    }
}
