//! The schedule: every planned job of a repository run together on its pools over weeks, with
//! the admission preview's own rules at every event (quotas, cohort borrowing, node groups,
//! priority order, reclaiming and priority preemption), windows for interruptible jobs, and
//! expected failures; optionally a seeded Monte Carlo over durations. The rules are numbered in
//! docs/scheduling.md.
//!
//! Pure: plans, submit hours and the catalogue in, a `loam_ir::schedule::Schedule` out. Plans
//! stay clock-free: hour 0 is the caller's start date, which this module only copies.

mod capacity;
pub mod date;
mod job;
mod project;
mod replace;
mod sample;
mod service;
mod sim;
#[cfg(test)]
mod slurm_tests;
#[cfg(test)]
mod tests;
mod usage;
pub mod what_if;

use crate::admission::place::{Demand, PoolRules, rule_order};
use crate::catalogue::Catalogue;
use job::{EPS_H, SimJob};
use loam_ir::display::significant;
use loam_ir::plan::{GroupIr, Plan, ServicePlan};
use loam_ir::schedule::{
    DeadlineVerdict, MonteCarlo, Placement, Preemption, QueuePoint, Replacement, RunInterval,
    Schedule, ScheduleTotals, ScheduledJob,
};
pub use project::of_project;
use sample::{Rng, Spread};
use std::collections::{BTreeMap, BTreeSet};

/// The seed when none is given. Counted: any fixed number; this one is the year the schedule
/// was written, so it reads as a choice rather than a magic value.
pub const DEFAULT_SEED: u64 = 2026;

/// What the caller decides.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The start date (`YYYY-MM-DD`), copied into the result; hour 0.
    pub start: String,
    /// Hours to simulate.
    pub horizon_h: f64,
    /// Monte Carlo samples (0: the expected schedule only).
    pub samples: u64,
    /// The Monte Carlo seed.
    pub seed: u64,
    /// Threads the samples may run on (the result does not depend on it).
    pub threads: usize,
    /// Whose rules admit the jobs: Kueue's (the default) or Slurm's (rule 16).
    pub rules: Rules,
}

/// The scheduler whose rules the schedule follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rules {
    /// Kueue's: BestEffortFIFO admission, reclaiming and priority preemption, re-placement and
    /// migration (rules 1–15).
    #[default]
    Kueue,
    /// Slurm's multifactor priority with backfill and no preemption (rule 16): a job that fits
    /// starts only when it delays no reservation of a higher-priority job that does not fit.
    Slurm,
}

/// Submit hours by (spec file, job name); a job not listed is submitted at hour 0.
pub type Submits = BTreeMap<(String, String), f64>;

/// One pool's jobs, in the rules' order.
struct PoolRun<'a> {
    rules: PoolRules,
    plans: Vec<&'a Plan>,
    /// The preview's verdict for jobs that can never be placed (`None` = placeable).
    never: Vec<Option<String>>,
    demands: Vec<Option<Demand>>,
    jobs: Vec<Option<SimJob>>,
    /// Per job, the alternatives it may move to (rule 13), in the planner's order.
    alternatives: Vec<Vec<replace::Alternative>>,
    /// Whose rules admit the jobs.
    discipline: Rules,
    /// What the pool's services hold (rule 15), already taken out of `rules`' node groups.
    held: service::Held,
}

/// Schedules `plans` on their pools from hour 0 to `options.horizon_h`, with no service.
pub fn schedule(
    plans: &[Plan],
    submits: &Submits,
    catalogue: &Catalogue,
    options: &Options,
) -> Schedule {
    schedule_with_services(plans, &[], submits, catalogue, options)
}

/// Schedules `plans` and `services` on their pools from hour 0 to `options.horizon_h`: the
/// services hold their devices first (rule 15), the jobs run on the rest.
pub fn schedule_with_services(
    plans: &[Plan],
    services: &[ServicePlan],
    submits: &Submits,
    catalogue: &Catalogue,
    options: &Options,
) -> Schedule {
    let horizon_h = if options.horizon_h.is_finite() && options.horizon_h > 0.0 {
        options.horizon_h
    } else {
        24.0
    };
    let mut by_pool: BTreeMap<&str, (Vec<&Plan>, Vec<&ServicePlan>)> = BTreeMap::new();
    for plan in plans {
        by_pool.entry(plan.pool.as_str()).or_default().0.push(plan);
    }
    for service in services {
        by_pool
            .entry(service.pool.as_str())
            .or_default()
            .1
            .push(service);
    }
    let mut seeder = Rng::new(options.seed);
    let mut jobs: Vec<ScheduledJob> = Vec::new();
    let mut utilisation = BTreeMap::new();
    let mut queues: Vec<Vec<(f64, usize, usize)>> = Vec::new();
    let mut moves: BTreeMap<(String, String), MovedAt> = BTreeMap::new();
    for (id, (pool_plans, pool_services)) in by_pool {
        let mut run = pool_run(
            pool_plans,
            &pool_services,
            catalogue.pool(id),
            submits,
            horizon_h,
        );
        run.discipline = options.rules;
        let expected: Vec<f64> = run
            .jobs
            .iter()
            .map(|j| j.as_ref().map_or(0.0, |j| j.work_h))
            .collect();
        let mut usage = usage::Usage::new(&run.rules, &run.held.per_group, horizon_h);
        let outcome = sim::run(
            &sim::Pool {
                rules: &run.rules,
                demands: &run.demands,
                jobs: &run.jobs,
                alternatives: &run.alternatives,
                slurm: run.discipline == Rules::Slurm,
            },
            &expected,
            horizon_h,
            Some(&mut usage),
        );
        // One seed per sample, drawn in order, so the draws do not depend on the threads.
        let seeds: Vec<u64> = (0..options.samples).map(|_| seeder.next_u64()).collect();
        let sampled = sample_finishes(&run, &expected, horizon_h, &seeds, options.threads);
        for (site, devices) in usage.finish() {
            let entry: &mut BTreeMap<_, _> = utilisation.entry(site).or_default();
            entry.extend(devices);
        }
        queues.push(outcome.queue.clone());
        for (i, plan) in run.plans.iter().enumerate() {
            let finishes = sampled.get(i).map(Vec::as_slice).unwrap_or(&[]);
            jobs.push(scheduled_job(&run, i, plan, &outcome, finishes, horizon_h));
            // From its move on, a moved job holds its alternative's devices at its cost per
            // hour held.
            if let Some(moved) = outcome.traces.get(i).and_then(|t| t.moved.as_ref())
                && let Some(a) = run
                    .alternatives
                    .get(i)
                    .and_then(|a| a.get(moved.alternative))
            {
                moves.insert(
                    (plan.file.clone(), plan.job.clone()),
                    MovedAt {
                        at_h: moved.at_h,
                        planned_devices: run
                            .jobs
                            .get(i)
                            .and_then(Option::as_ref)
                            .map_or(0, |j| j.devices),
                        per_h: a.cost.map(|c| c / a.hours),
                    },
                );
            }
        }
        jobs.extend(run.held.entries);
    }
    jobs.sort_by(|a, b| (&a.file, &a.job).cmp(&(&b.file, &b.job)));
    let totals = totals(&jobs, plans, services, &moves);
    Schedule {
        start: options.start.clone(),
        horizon_h: significant(horizon_h),
        totals,
        jobs,
        utilisation,
        queue: merge_queues(&queues),
        monte_carlo: (options.samples > 0).then_some(MonteCarlo {
            samples: options.samples,
            seed: options.seed,
        }),
        what_if: None,
    }
}

/// The rules, demands and simulated jobs of one pool, in the rules' order.
fn pool_run<'a>(
    mut plans: Vec<&'a Plan>,
    services: &[&ServicePlan],
    pool: Option<&crate::catalogue::Pool>,
    submits: &Submits,
    horizon_h: f64,
) -> PoolRun<'a> {
    plans.sort_by_key(|p| rule_order(p));
    let mut rules = PoolRules::new(&plans, pool);
    let held = service::place(services, &mut rules, horizon_h);
    let mut never = Vec::new();
    let mut demands = Vec::new();
    let mut jobs = Vec::new();
    let mut alternatives = Vec::new();
    for plan in &plans {
        let (admission, demand) = rules.demand(plan);
        let submit_h = submits
            .get(&(plan.file.clone(), plan.job.clone()))
            .copied()
            .unwrap_or(0.0)
            .max(0.0);
        let sim_job = demand.as_ref().and_then(|_| SimJob::of(plan, submit_h));
        never.push(demand.is_none().then(|| status_reason(&admission.status)));
        alternatives.push(if sim_job.is_some() {
            replace::alternatives_of(&rules, plan)
        } else {
            Vec::new()
        });
        demands.push(if sim_job.is_some() { demand } else { None });
        jobs.push(sim_job);
    }
    PoolRun {
        rules,
        plans,
        never,
        demands,
        jobs,
        alternatives,
        discipline: Rules::Kueue,
        held,
    }
}

/// The preview's reason for a job it can never place.
fn status_reason(status: &crate::admission::AdmissionStatus) -> String {
    use crate::admission::AdmissionStatus as S;
    match status {
        S::NeverAdmissible { reason } => reason.clone(),
        S::NotPlanned { reasons } => reasons.join("; "),
        _ => "no estimate to schedule".to_string(),
    }
}

/// Per job, its finish in every sample (`f64::INFINITY` when it does not finish), one sample
/// per seed, spread over `threads`.
fn sample_finishes(
    run: &PoolRun<'_>,
    expected: &[f64],
    horizon_h: f64,
    seeds: &[u64],
    threads: usize,
) -> Vec<Vec<f64>> {
    let spreads: Vec<Spread> = run
        .plans
        .iter()
        .zip(expected)
        .map(|(p, &e)| Spread::of(p, e))
        .collect();
    let per_sample: Vec<Vec<f64>> = crate::parallel::map_ordered(seeds, threads, |&seed| {
        let mut rng = Rng::new(seed);
        let work: Vec<f64> = spreads
            .iter()
            .zip(&run.jobs)
            .map(|(s, j)| j.as_ref().map_or(0.0, |_| s.draw(&mut rng)))
            .collect();
        let pool = sim::Pool {
            rules: &run.rules,
            demands: &run.demands,
            jobs: &run.jobs,
            alternatives: &run.alternatives,
            slurm: run.discipline == Rules::Slurm,
        };
        let outcome = sim::run(&pool, &work, horizon_h, None);
        outcome
            .traces
            .iter()
            .map(|t| t.finish_h.unwrap_or(f64::INFINITY))
            .collect()
    });
    let mut finishes: Vec<Vec<f64>> = vec![Vec::with_capacity(seeds.len()); run.plans.len()];
    for sample in per_sample {
        for (f, x) in finishes.iter_mut().zip(sample) {
            f.push(x);
        }
    }
    finishes
}

/// The nearest-rank percentile `p` (0–1) of `sorted`; `None` when empty or not finite.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
    sorted.get(rank - 1).copied().filter(|x| x.is_finite())
}

/// One job's entry.
fn scheduled_job(
    run: &PoolRun<'_>,
    i: usize,
    plan: &Plan,
    outcome: &sim::Outcome,
    finishes: &[f64],
    horizon_h: f64,
) -> ScheduledJob {
    let trace = outcome.traces.get(i).cloned().unwrap_or_default();
    let job = run.jobs.get(i).and_then(Option::as_ref);
    let submit_h = job.map_or(0.0, |j| j.submit_h);
    let name_of = |k: usize| run.plans.get(k).map_or(String::new(), |p| p.job.clone());
    let preemptions: Vec<Preemption> = trace
        .evictions
        .iter()
        .map(|e| Preemption {
            at_h: significant(e.at_h),
            by: name_of(e.by),
            rule: match e.rule {
                sim::Rule::Reclaim => "reclaim",
                sim::Rule::Priority => "priority",
            }
            .to_string(),
            lost_work_h: significant(e.lost_h),
        })
        .collect();
    let never = run.never.get(i).cloned().flatten();
    let (status, reason) = match (&never, trace.finish_h, trace.running_at_end) {
        (Some(reason), _, _) => (
            if plan.feasible {
                "never"
            } else {
                "not-planned"
            },
            reason.clone(),
        ),
        (None, Some(_), _) => ("finished", String::new()),
        (None, None, true) => ("running", "still running at the horizon".to_string()),
        (None, None, false) if job.is_some_and(|j| j.ready_h() > horizon_h) => {
            ("pending", "submitted after the horizon".to_string())
        }
        (None, None, false) => ("queued", "still queued at the horizon".to_string()),
    };
    let reason = match (&trace.blocked_by, trace.first_start_h) {
        (Some(blocked), Some(start)) if reason.is_empty() => {
            let blocked = blocked.words(&plan.tenant);
            format!("waited until hour {}: {blocked}", significant(start))
        }
        (Some(blocked), None) if status == "queued" => {
            format!("{reason}: {}", blocked.words(&plan.tenant))
        }
        _ => reason,
    };
    let ready_h = job.map_or(0.0, SimJob::ready_h);
    let wait_h = match trace.first_start_h {
        Some(s) => (s - ready_h).max(0.0),
        None => (horizon_h - ready_h).max(0.0),
    };
    let deadline = job
        .and_then(|j| j.deadline_h)
        .map(|d| verdict(submit_h + d, trace.finish_h, finishes, horizon_h));
    // Rule 13: a job moved to one of its plan's alternatives holds that alternative's devices.
    let moved = trace.moved.as_ref().and_then(|m| {
        let a = run.alternatives.get(i)?.get(m.alternative)?;
        Some((m, a))
    });
    let mut place = placement(plan);
    if let Some((m, a)) = moved {
        place = Placement {
            site: a.site.clone(),
            device: a.device.clone(),
            node_groups: a.node_groups.clone(),
            replaced: Some(Replacement {
                planned_site: place.site,
                earlier_h: significant(m.earlier_h()),
                cost_change: significant(a.cost_change.unwrap_or(0.0)),
                why: m.why(a, &name_of),
                migrated_at_h: m.migrated_for.map(|_| significant(m.at_h)),
            }),
        };
    }
    ScheduledJob {
        job: plan.job.clone(),
        file: plan.file.clone(),
        kind: "job".to_string(),
        tenant: plan.tenant.clone(),
        priority: plan.priority,
        pool: plan.pool.clone(),
        devices: match (moved, job) {
            (Some((_, a)), _) => a.devices,
            (None, Some(j)) => j.devices,
            (None, None) => plan.groups.iter().map(|g| g.devices).sum(),
        },
        submit_h: significant(submit_h),
        start_h: trace.first_start_h.map(significant),
        finish_h: trace.finish_h.map(significant),
        wait_h: significant(if never.is_some() { 0.0 } else { wait_h }),
        lost_work_h: significant(trace.evictions.iter().map(|e| e.lost_h).sum()),
        preemptions,
        deadline,
        placement: place,
        status: status.to_string(),
        reason,
        runs: trace
            .runs
            .iter()
            .map(|&(from, to)| RunInterval {
                from_h: significant(from),
                to_h: significant(to),
            })
            .collect(),
    }
}

/// The deadline verdict: with samples, met when the P90 finish meets it, at risk when only the
/// expected or median finish does; without, met or missed by the expected finish.
fn verdict(
    deadline_h: f64,
    finish_h: Option<f64>,
    samples: &[f64],
    horizon_h: f64,
) -> DeadlineVerdict {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let p50 = percentile(&sorted, 0.5);
    let p90 = percentile(&sorted, 0.9);
    let meets = |f: Option<f64>| f.is_some_and(|f| f <= deadline_h + EPS_H);
    let verdict = if sorted.is_empty() {
        if meets(finish_h) {
            "met"
        } else if finish_h.is_none() && deadline_h > horizon_h {
            "at-risk"
        } else {
            "missed"
        }
    } else if meets(p90) {
        "met"
    } else if meets(p50) || meets(finish_h) {
        "at-risk"
    } else {
        "missed"
    };
    let probability_met = (!sorted.is_empty()).then(|| {
        let met = sorted.iter().filter(|&&f| f <= deadline_h + EPS_H).count();
        significant(met as f64 / sorted.len() as f64)
    });
    DeadlineVerdict {
        deadline_h: significant(deadline_h),
        verdict: verdict.to_string(),
        finish_h: finish_h.map(significant),
        finish_p50_h: p50.map(significant),
        finish_p90_h: p90.map(significant),
        probability_met,
    }
}

/// Where the plan puts the job.
fn placement(plan: &Plan) -> Placement {
    placement_of(&plan.groups.iter().collect::<Vec<_>>())
}

/// The placement on `groups` (a job's groups, or a service's roles' groups): their sites and
/// device types in first-seen order, joined by `+`, and their node groups.
fn placement_of(groups: &[&GroupIr]) -> Placement {
    let mut sites: Vec<&str> = Vec::new();
    let mut devices: Vec<&str> = Vec::new();
    for g in groups {
        if !sites.contains(&g.site.as_str()) {
            sites.push(&g.site);
        }
        if !devices.contains(&g.device.as_str()) {
            devices.push(&g.device);
        }
    }
    Placement {
        site: sites.join("+"),
        device: devices.join("+"),
        node_groups: groups.iter().map(|g| g.node_group.clone()).collect(),
        replaced: None,
    }
}

/// Where a job moved to an alternative (rules 13 and 14) changed its devices and cost.
struct MovedAt {
    at_h: f64,
    /// Devices it held before, on its plan's node groups.
    planned_devices: u64,
    /// The alternative's cost per hour held, when it states a cost.
    per_h: Option<f64>,
}

/// The totals over `jobs`; a job in `moves` holds its plan's devices at its plan's cost per
/// hour before its move, and its alternative's after.
fn totals(
    jobs: &[ScheduledJob],
    plans: &[Plan],
    services: &[ServicePlan],
    moves: &BTreeMap<(String, String), MovedAt>,
) -> ScheduleTotals {
    // Keyed by (is a service, spec file, name): a job and a service may share a name.
    let mut cost_of: BTreeMap<(bool, &str, &str), (f64, &str)> = plans
        .iter()
        .filter_map(|p| {
            let e = p.estimate.as_ref()?;
            let per_h = if e.train_time_h > 0.0 {
                e.cost.amount / e.train_time_h
            } else {
                0.0
            };
            Some((
                (false, p.file.as_str(), p.job.as_str()),
                (per_h, e.cost.currency.as_str()),
            ))
        })
        .collect();
    // A service costs its busiest hour's price for every hour it holds those replicas.
    for s in services {
        if let Some(e) = &s.estimate {
            cost_of.insert(
                (true, s.file.as_str(), s.service.as_str()),
                (e.cost_per_hour.amount, e.cost_per_hour.currency.as_str()),
            );
        }
    }
    let mut t = ScheduleTotals::default();
    let mut wait = 0.0;
    let mut device_hours = 0.0;
    let mut lost = 0.0;
    let mut cost: BTreeMap<String, f64> = BTreeMap::new();
    for j in jobs {
        if j.status != "never" && j.status != "not-planned" {
            if j.kind == "service" {
                t.services += 1;
            } else {
                t.jobs += 1;
            }
        }
        if matches!(
            j.status.as_str(),
            "never" | "not-planned" | "queued" | "pending"
        ) {
            t.never_started += 1;
        }
        wait += j.wait_h;
        t.max_wait_h = t.max_wait_h.max(j.wait_h);
        let held: f64 = j.runs.iter().map(|r| r.to_h - r.from_h).sum();
        let service = j.kind == "service";
        let moved = moves
            .get(&(j.file.clone(), j.job.clone()))
            .filter(|_| !service);
        // Hours held, and work lost to preemptions, before the move (none without one).
        let (held_before, lost_before) = moved.map_or((0.0, 0.0), |m| {
            (
                j.runs
                    .iter()
                    .map(|r| (r.to_h.min(m.at_h) - r.from_h).max(0.0))
                    .sum::<f64>(),
                j.preemptions
                    .iter()
                    .filter(|p| p.at_h <= m.at_h + EPS_H)
                    .map(|p| p.lost_work_h)
                    .sum::<f64>(),
            )
        });
        let before_devices = moved.map_or(0, |m| m.planned_devices) as f64;
        device_hours += held_before * before_devices + (held - held_before) * j.devices as f64;
        lost += lost_before * before_devices + (j.lost_work_h - lost_before) * j.devices as f64;
        t.preemptions += j.preemptions.len();
        if let Some(&(per_h, currency)) = cost_of.get(&(service, j.file.as_str(), j.job.as_str())) {
            let after_per_h = moved.and_then(|m| m.per_h).unwrap_or(per_h);
            *cost.entry(currency.to_string()).or_default() +=
                held_before * per_h + (held - held_before) * after_per_h;
        }
        if let Some(d) = &j.deadline {
            t.deadlines += 1;
            match d.verdict.as_str() {
                "met" => t.met += 1,
                "at-risk" => t.at_risk += 1,
                _ => t.missed += 1,
            }
        }
    }
    t.wait_h = significant(wait);
    t.device_hours = significant(device_hours);
    t.lost_device_hours = significant(lost);
    t.cost = cost.into_iter().map(|(k, v)| (k, significant(v))).collect();
    t
}

/// The pools' queue lengths summed at every instant any of them changes.
fn merge_queues(queues: &[Vec<(f64, usize, usize)>]) -> Vec<QueuePoint> {
    let mut instants: BTreeSet<u64> = BTreeSet::new();
    for q in queues {
        for &(t, _, _) in q {
            instants.insert(t.to_bits());
        }
    }
    let mut times: Vec<f64> = instants.into_iter().map(f64::from_bits).collect();
    times.sort_by(f64::total_cmp);
    let mut cursors = vec![0usize; queues.len()];
    let mut out: Vec<QueuePoint> = Vec::new();
    for t in times {
        let mut queued = 0;
        let mut running = 0;
        for (q, cursor) in queues.iter().zip(cursors.iter_mut()) {
            while q.get(*cursor + 1).is_some_and(|&(u, _, _)| u <= t) {
                *cursor += 1;
            }
            if let Some(&(u, qd, r)) = q.get(*cursor)
                && u <= t
            {
                queued += qd;
                running += r;
            }
        }
        if out
            .last()
            .is_none_or(|p| p.queued != queued || p.running != running)
        {
            out.push(QueuePoint {
                at_h: significant(t),
                queued,
                running,
            });
        }
    }
    out
}
