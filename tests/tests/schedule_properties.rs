//! Kueue's rules as properties of `loam schedule`'s core (issue 33, item 6): random small
//! workloads (two or three tenants with guaranteed and elastic H100 quota in the `lab` pool's one
//! cohort, 32 devices; jobs of one to four nodes, four priorities, 1-20 hours, with or without
//! checkpoints, all submitted at hour 0) scheduled by `loam_compiler::schedule::schedule`, and
//! at every instant of the result (the midpoint between any two consecutive events, where
//! nothing changes):
//! - **quota**: no tenant (ClusterQueue) holds more than its nominal + borrowing limit
//!   (guaranteed + elastic) and the pool no more than its cohort (every device);
//! - **work conservation**: no job waits that fits in the free devices within its tenant's
//!   quota (Kueue's BestEffortFIFO: a job that cannot be admitted does not block one that can);
//! - **priority**: no job waits while lower-priority jobs of its own tenant run whose devices
//!   would let it fit (`withinClusterQueue: LowerPriority`), nor while a lower-priority job of a
//!   borrowing tenant runs whose devices alone would (`borrowWithinCohort: LowerPriority`);
//! - **reclaim**: no job waits that would fit within its tenant's guaranteed quota if the jobs
//!   of tenants borrowing above their guaranteed quota were evicted (`reclaimWithinCohort: Any`);
//! - every job within its quota finishes, after exactly its hours of work when never preempted;
//! - the same workload gives the same schedule.
//!
//! Jobs that can never be admitted (more than their tenant's guaranteed + elastic) are left
//! out of the waiting checks: they wait forever by rule 3 of docs/admission.md.

use crate::schedule_workload::{LAB_H100_DEVICES, Quota, WorkJob, run};
use loam_ir::schedule::{Schedule, ScheduledJob};
use proptest::prelude::*;
use std::collections::BTreeMap;

const TENANTS: [&str; 3] = ["ta", "tb", "tc"];
const PRIORITIES: [&str; 4] = ["low", "normal", "high", "critical"];

/// A priority's rank: higher is more important.
fn rank(priority: &str) -> usize {
    PRIORITIES.iter().position(|p| *p == priority).unwrap()
}

/// A random workload: quotas and jobs.
fn workload() -> impl Strategy<Value = (Vec<Quota>, Vec<WorkJob>)> {
    let quotas = (2usize..=3)
        .prop_flat_map(|n| proptest::collection::vec((0u64..=2, 0u64..=4), n))
        .prop_map(|q| {
            // Guaranteed 0-16 devices each (at most 48 in all; the lab pool's cohort holds
            // 32, of which the lender queue has any unreserved rest), elastic 0-32.
            q.iter()
                .enumerate()
                // A tenant with neither gets one elastic node, so every tenant has a quota.
                .map(|(i, (g, e))| (TENANTS[i], g * 8, if g + e == 0 { 8 } else { e * 8 }))
                .collect::<Vec<Quota>>()
        });
    quotas.prop_flat_map(|quotas| {
        let n = quotas.len();
        let job = (0..n, 0usize..4, 1u64..=4, 1u32..=20, any::<bool>());
        (
            Just(quotas),
            proptest::collection::vec(job, 1..=8).prop_map(|jobs| {
                jobs.into_iter()
                    .enumerate()
                    .map(
                        |(k, (tenant, priority, nodes, hours, checkpointed))| WorkJob {
                            name: format!("j{k}"),
                            tenant: TENANTS[tenant].to_string(),
                            priority: PRIORITIES[priority],
                            nodes,
                            hours: f64::from(hours),
                            checkpoint_h: checkpointed.then_some(1.0),
                        },
                    )
                    .collect()
            }),
        )
    })
}

/// Guaranteed and the limit (guaranteed + elastic) of `tenant`.
fn quota_of(quotas: &[Quota], tenant: &str) -> (u64, u64) {
    quotas
        .iter()
        .find(|q| q.0 == tenant)
        .map_or((0, 0), |q| (q.1, q.1 + q.2))
}

/// Whether a job can ever be admitted: within its tenant's limit and the cohort. (The catalogue
/// must also be valid: guaranteed quotas above the pool's devices are refused by it.)
fn admissible(job: &ScheduledJob, quotas: &[Quota]) -> bool {
    job.devices <= quota_of(quotas, &job.tenant).1 && job.devices <= LAB_H100_DEVICES
}

/// Whether `job` holds devices at hour `t`.
fn running_at(job: &ScheduledJob, t: f64) -> bool {
    job.runs.iter().any(|r| r.from_h < t && t < r.to_h)
}

/// Whether `job` waits at hour `t`: submitted, not finished, not running.
fn waiting_at(job: &ScheduledJob, t: f64) -> bool {
    job.submit_h <= t && job.finish_h.is_none_or(|f| t < f) && !running_at(job, t)
}

/// The jobs that evicted `job` at hour `at`, the ones that evicted them then, and so on: the
/// schedule never has a job evict one of these at the same instant (a ring of evictions that
/// Kueue's emitted policies would run for ever).
fn evictors_at(s: &Schedule, job: &str, at: f64) -> Vec<String> {
    let mut chain: Vec<String> = Vec::new();
    let mut frontier = vec![job.to_string()];
    while let Some(victim) = frontier.pop() {
        let Some(v) = s.jobs.iter().find(|j| j.job == victim) else {
            continue;
        };
        for p in v.preemptions.iter().filter(|p| (p.at_h - at).abs() < 1e-9) {
            if p.by != job && !chain.contains(&p.by) {
                chain.push(p.by.clone());
                frontier.push(p.by.clone());
            }
        }
    }
    chain
}

/// Every interval between two consecutive events, where the state is constant: its start and
/// its midpoint.
fn intervals(s: &Schedule) -> Vec<(f64, f64)> {
    let mut events: Vec<f64> = vec![0.0, s.horizon_h];
    for j in &s.jobs {
        for r in &j.runs {
            events.push(r.from_h);
            events.push(r.to_h);
        }
    }
    events.sort_by(f64::total_cmp);
    events.dedup_by(|a, b| (*a - *b).abs() < 1e-6);
    events
        .windows(2)
        .map(|w| (w[0], (w[0] + w[1]) / 2.0))
        .collect()
}

/// Which rules [`violations`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rules {
    /// Quota, work conservation, reclaim, finishing.
    Kueue,
    /// Only `withinClusterQueue` and `borrowWithinCohort: LowerPriority`.
    Priority,
}

/// Every rule of `rules` broken, as sentences.
fn violations(s: &Schedule, quotas: &[Quota], rules: Rules) -> Vec<String> {
    let all = violations_all(s, quotas);
    all.into_iter()
        .filter(|v| v.contains("it could preempt") == (rules == Rules::Priority))
        .collect()
}

/// Every rule broken, as sentences.
fn violations_all(s: &Schedule, quotas: &[Quota]) -> Vec<String> {
    let mut out = Vec::new();
    for (since, t) in intervals(s) {
        let running: Vec<&ScheduledJob> = s.jobs.iter().filter(|j| running_at(j, t)).collect();
        let mut use_of: BTreeMap<&str, u64> = BTreeMap::new();
        for j in &running {
            *use_of.entry(j.tenant.as_str()).or_default() += j.devices;
        }
        let used: u64 = running.iter().map(|j| j.devices).sum();
        if used > LAB_H100_DEVICES {
            out.push(format!("t={t}: {used} devices held of {LAB_H100_DEVICES}"));
        }
        for (tenant, held) in &use_of {
            let limit = quota_of(quotas, tenant).1;
            if *held > limit {
                out.push(format!(
                    "t={t}: tenant {tenant} holds {held}, above guaranteed + elastic {limit}"
                ));
            }
        }
        let free = LAB_H100_DEVICES.saturating_sub(used);
        for j in s.jobs.iter().filter(|j| waiting_at(j, t)) {
            if !admissible(j, quotas) {
                continue;
            }
            let (guaranteed, limit) = quota_of(quotas, &j.tenant);
            let mine = use_of.get(j.tenant.as_str()).copied().unwrap_or(0);
            if j.devices <= free && mine + j.devices <= limit {
                out.push(format!(
                    "t={t}: {} ({} devices) waits though {free} are free and {} uses {mine} of {limit}",
                    j.job, j.devices, j.tenant
                ));
            }
            // No rule has it evict a job that evicted it at this instant, directly or through
            // others (a ring of evictions the emitted policies would run for ever).
            let chain = evictors_at(s, &j.job, since);
            let lower: u64 = running
                .iter()
                .filter(|k| {
                    k.tenant == j.tenant
                        && rank(k.priority.as_str()) < rank(j.priority.as_str())
                        && !chain.contains(&k.job)
                })
                .map(|k| k.devices)
                .sum();
            if lower > 0 && j.devices <= free + lower && mine - lower + j.devices <= limit {
                out.push(format!(
                    "t={t}: {} ({}) waits behind {lower} devices of lower-priority jobs of {} it could preempt",
                    j.job, j.priority, j.tenant
                ));
            }
            // `borrowWithinCohort: LowerPriority`: the lower-priority jobs of other tenants,
            // taken as Kueue takes candidates (lowest priority first; one stays a candidate only
            // while its tenant still borrows: `classical/candidate_generator.go`
            // `candidateIsValid`), until the job fits within its limit. Ties in either order:
            // the schedule breaks them by the cost to save, which the checker does not know.
            let mut candidates: Vec<&&ScheduledJob> = running
                .iter()
                .filter(|k| {
                    k.tenant != j.tenant
                        && rank(k.priority.as_str()) < rank(j.priority.as_str())
                        && !chain.contains(&k.job)
                })
                .collect();
            let fits_by_evicting = |order: &[&&ScheduledJob]| {
                let mut held = use_of.clone();
                let mut room = free;
                let mut evicted = Vec::new();
                for k in order {
                    let theirs = held.get(k.tenant.as_str()).copied().unwrap_or(0);
                    if theirs <= quota_of(quotas, &k.tenant).0 {
                        continue;
                    }
                    held.insert(k.tenant.as_str(), theirs - k.devices);
                    room += k.devices;
                    evicted.push(k.job.clone());
                    if j.devices <= room {
                        return Some(evicted);
                    }
                }
                None
            };
            if mine + j.devices <= limit && !candidates.is_empty() {
                candidates.sort_by_key(|k| (rank(k.priority.as_str()), k.job.clone()));
                let forward = fits_by_evicting(&candidates);
                candidates
                    .sort_by_key(|k| (rank(k.priority.as_str()), std::cmp::Reverse(k.job.clone())));
                let backward = fits_by_evicting(&candidates);
                if let (Some(evicted), Some(_)) = (forward, backward) {
                    out.push(format!(
                        "t={t}: {} ({}) waits behind {} of borrowing tenants, which it could preempt",
                        j.job,
                        j.priority,
                        evicted.join(", ")
                    ));
                }
            }
            // Reclaim: the devices held above their guaranteed quota by the other tenants, but
            // for those of the job's evictors at this instant.
            let mut evictable: BTreeMap<&str, u64> = BTreeMap::new();
            for k in running.iter().filter(|k| !chain.contains(&k.job)) {
                *evictable.entry(k.tenant.as_str()).or_default() += k.devices;
            }
            let borrowed_by_others: u64 = use_of
                .iter()
                .filter(|(tenant, _)| **tenant != j.tenant.as_str())
                .map(|(tenant, held)| {
                    let surplus = held.saturating_sub(quota_of(quotas, tenant).0);
                    surplus.min(evictable.get(*tenant).copied().unwrap_or(0))
                })
                .sum();
            if borrowed_by_others > 0
                && mine + j.devices <= guaranteed
                && j.devices <= free + borrowed_by_others
            {
                out.push(format!(
                    "t={t}: {} waits within {}'s guaranteed {guaranteed} while others borrow {borrowed_by_others}",
                    j.job, j.tenant
                ));
            }
        }
    }
    for j in &s.jobs {
        if !admissible(j, quotas) {
            continue;
        }
        match j.finish_h {
            None => out.push(format!("{} never finishes within the horizon", j.job)),
            Some(f) if j.preemptions.is_empty() => {
                let held: f64 = j.runs.iter().map(|r| r.to_h - r.from_h).sum();
                let start = j.start_h.unwrap_or(f);
                if (f - start - held).abs() > 1e-6 {
                    out.push(format!("{} is not preempted yet pauses", j.job));
                }
            }
            Some(_) => {}
        }
    }
    out
}

/// The test pool's guaranteed quotas must fit its 32 devices, or the catalogue refuses them:
/// those workloads are dropped.
fn valid(quotas: &[Quota]) -> bool {
    quotas.iter().map(|q| q.1).sum::<u64>() <= LAB_H100_DEVICES
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn kueue_quota_work_conservation_and_reclaim_hold_at_every_instant((quotas, jobs) in workload()) {
        prop_assume!(valid(&quotas));
        let horizon: f64 = jobs.iter().map(|j| j.hours).sum::<f64>() * 3.0 + 24.0;
        let s = run(&jobs, &quotas, horizon);
        let broken = violations(&s, &quotas, Rules::Kueue);
        prop_assert!(broken.is_empty(), "quotas {quotas:?}\njobs {jobs:#?}\n{}", broken.join("\n"));
        prop_assert_eq!(run(&jobs, &quotas, horizon), s);
    }

    /// Failed on the schedule core as of its first commit, which preempted only on an
    /// event's first pass: see `a_high_job_preempts_a_normal_one_admitted_in_the_same_pass`.
    #[test]
    fn a_higher_priority_job_never_waits_behind_a_lower_one_it_could_preempt((quotas, jobs) in workload()) {
        prop_assume!(valid(&quotas));
        let horizon: f64 = jobs.iter().map(|j| j.hours).sum::<f64>() * 3.0 + 24.0;
        let s = run(&jobs, &quotas, horizon);
        let broken = violations(&s, &quotas, Rules::Priority);
        prop_assert!(broken.is_empty(), "quotas {quotas:?}\njobs {jobs:#?}\n{}", broken.join("\n"));
    }
}

/// The property's smallest counterexample (proptest's shrink): 32 devices, `ta` guaranteed 8
/// and elastic 8, `tb` guaranteed 16 and elastic 32, one hour each:
/// j3 (critical, tb, 32 devices), j2 (high, ta, 16), j1 (normal, ta, 8), j0 (low, tb, 16).
/// At hour 0, in priority order: j3 takes all 32 (tb borrows 16); j2 fits nowhere and has
/// nothing lower of its own to preempt; j1, within ta's guaranteed 8, reclaims: j3 is evicted;
/// j0 takes 16. Now ta runs j1 (normal, 8) and j2 (high, 16) waits with 8 free: evicting j1
/// gives 16 free and ta 0 + 16 = 16 within its limit, so Kueue's next cycle
/// (`withinClusterQueue: LowerPriority`) preempts j1 and starts j2 at hour 0. The core lets j2
/// wait until hour 2 when it preempted only on the first pass over the queue at an event,
/// before j1 was admitted.
/// A one-hour job without checkpoints: `name` of `tenant` at `priority` on `nodes` nodes.
fn hour_job(name: &str, tenant: &str, priority: &'static str, nodes: u64) -> WorkJob {
    WorkJob {
        name: name.into(),
        tenant: tenant.into(),
        priority,
        nodes,
        hours: 1.0,
        checkpoint_h: None,
    }
}

#[test]
fn a_high_job_preempts_a_normal_one_admitted_in_the_same_pass() {
    let w = hour_job;
    let jobs = [
        w("j0", "tb", "low", 2),
        w("j1", "ta", "normal", 1),
        w("j2", "ta", "high", 2),
        w("j3", "tb", "critical", 4),
    ];
    let s = run(&jobs, &[("ta", 8, 8), ("tb", 16, 32)], 30.0);
    let j2 = s.jobs.iter().find(|j| j.job == "j2").unwrap();
    assert_eq!(j2.start_h, Some(0.0), "{:#?}", s.jobs);
}

/// A ring the emitted Kueue policies allow (the property suite's case): 32 devices, `ta` and
/// `tb` guaranteed 8 and elastic 32 each; one hour each: j2 (ta, high, 32 devices), j0 (tb,
/// normal, 32), j1 (tb, low, 8). At hour 0, in priority order: j2 takes all 32 (ta borrows
/// 24); j0 cannot preempt a higher priority; j1, within tb's guaranteed 8, reclaims from j2
/// (`reclaimWithinCohort: Any`, whatever j2's priority); j0 preempts j1 of its own tenant to
/// borrow 24 (`withinClusterQueue: LowerPriority`); j2 could preempt j0, a lower priority of a
/// borrowing tenant (`borrowWithinCohort`), but then j1 reclaims again, and so on for ever.
/// The schedule stops where the next eviction would close the ring: j0 runs 0-1, then j1
/// reclaims from j2 again at hour 1 (runs 1-2) and j2 runs 2-3; j2 and j1 are preempted once
/// at hour 0 each, and no job more than twice in all (the pass cap once let each be preempted
/// eight or nine times at hour 0).
#[test]
fn a_ring_of_preemptions_runs_once() {
    let w = hour_job;
    let jobs = [
        w("j0", "tb", "normal", 4),
        w("j1", "tb", "low", 1),
        w("j2", "ta", "high", 4),
    ];
    let s = run(&jobs, &[("ta", 8, 32), ("tb", 8, 32)], 30.0);
    let job = |n: &str| s.jobs.iter().find(|j| j.job == n).unwrap();
    let spans = |n: &str| -> Vec<(f64, f64)> {
        job(n)
            .runs
            .iter()
            .map(|r| (r.from_h, r.to_h))
            .filter(|(a, b)| b > a)
            .collect()
    };
    assert_eq!(spans("j0"), vec![(0.0, 1.0)], "{:#?}", s.jobs);
    assert_eq!(spans("j1"), vec![(1.0, 2.0)], "{:#?}", s.jobs);
    assert_eq!(spans("j2"), vec![(2.0, 3.0)], "{:#?}", s.jobs);
    for n in ["j0", "j1", "j2"] {
        assert!(
            job(n).preemptions.len() <= 2,
            "{n}: {:#?}",
            job(n).preemptions
        );
    }
    assert!(violations_all(&s, &[("ta", 8, 32), ("tb", 8, 32)]).is_empty());
}

/// The checker itself, on a hand-made schedule: one tenant guaranteed 8 and elastic 0, a job
/// of 16 devices running beside one of 8 breaks the quota (24 > 8); a waiting 8-device job
/// beside 16 free breaks work conservation.
#[test]
fn the_checker_finds_a_quota_overrun_and_an_idle_device() {
    let quotas = [("ta", 8, 0)];
    let jobs = [
        WorkJob {
            name: "big".into(),
            tenant: "ta".into(),
            priority: "normal",
            nodes: 1,
            hours: 4.0,
            checkpoint_h: None,
        },
        WorkJob {
            name: "small".into(),
            tenant: "ta".into(),
            priority: "normal",
            nodes: 1,
            hours: 2.0,
            checkpoint_h: None,
        },
    ];
    let mut s = run(&jobs, &quotas, 24.0);
    // As scheduled: big 0-4, small 4-6 (one 8-device quota): no violation.
    assert_eq!(violations(&s, &quotas, Rules::Kueue), Vec::<String>::new());
    // Made to run at once: 16 devices > 8.
    let small = s.jobs.iter_mut().find(|j| j.job == "small").unwrap();
    small.runs[0].from_h = 0.0;
    small.runs[0].to_h = 2.0;
    small.start_h = Some(0.0);
    small.finish_h = Some(2.0);
    let found = violations(&s, &quotas, Rules::Kueue);
    assert!(
        found
            .iter()
            .any(|v| v.contains("tenant ta holds 16, above guaranteed + elastic 8")),
        "{found:#?}"
    );
    // Made to wait past big's end: at t=5 it waits with 32 free and ta using 0 of 8.
    let mut s = run(&jobs, &quotas, 24.0);
    let small = s.jobs.iter_mut().find(|j| j.job == "small").unwrap();
    small.runs[0].from_h = 6.0;
    small.runs[0].to_h = 8.0;
    small.start_h = Some(6.0);
    small.finish_h = Some(8.0);
    let found = violations(&s, &quotas, Rules::Kueue);
    assert!(
        found
            .iter()
            .any(|v| v.contains("small (8 devices) waits though 32 are free")),
        "{found:#?}"
    );
}
