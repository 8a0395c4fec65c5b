//! Unit tests of the schedule: small pools whose every start, finish and lost hour is worked
//! out by hand in the comments.

use super::*;
use crate::admission::tests::{catalogue, plan};

pub(super) const H100: &str = "H100_SXM";

/// A plan of `job` on 8 devices of node group `ng-a` that trains for `hours`, with the fields
/// the schedule reads merged in from `extra` (checkpoint, schedule, goal).
fn timed(job: &str, tenant: &str, priority: &str, hours: f64, extra: serde_json::Value) -> Plan {
    timed_on(job, tenant, priority, 8, hours, extra)
}

/// As [`timed`], on `devices` devices of `ng-a`.
pub(super) fn timed_on(
    job: &str,
    tenant: &str,
    priority: &str,
    devices: u64,
    hours: f64,
    extra: serde_json::Value,
) -> Plan {
    let base = plan(job, tenant, priority, &[("ng-a", H100, devices)]);
    let mut value = serde_json::to_value(base).unwrap();
    value["estimate"] = serde_json::json!({
        "step_time_s": 1.0, "tokens_per_s": 1000.0, "model_tflops_per_device": 400.0,
        "mfu": 0.4, "flops_convention": "model", "memory_per_device_gib": 60.0,
        "train_time_h": hours, "cost": {"amount": 10.0 * hours, "currency": "CNY"},
        "energy_kwh": 100.0, "carbon_kg": 50.0,
        "breakdown_s": {"compute": 1.0, "tensor_comm": 0.0, "pipeline_bubble": 0.0,
                        "data_comm": 0.0, "other": 0.0}
    });
    if let serde_json::Value::Object(fields) = extra {
        for (k, v) in fields {
            value[k] = v;
        }
    }
    serde_json::from_value(value).unwrap()
}

pub(super) fn options(horizon_h: f64) -> Options {
    Options {
        start: "2026-01-05".to_string(),
        horizon_h,
        samples: 0,
        seed: DEFAULT_SEED,
        threads: 1,
        rules: Rules::Kueue,
    }
}

pub(super) fn find<'a>(s: &'a Schedule, name: &str) -> &'a ScheduledJob {
    s.jobs.iter().find(|j| j.job == name).unwrap()
}

#[test]
fn two_jobs_on_eight_devices_the_second_waits_exactly_the_firsts_duration() {
    // One node of 8 H100; nlp is guaranteed all 8. `a.loam` sorts before `b.loam` (rule 2's
    // tie-break by file), so a runs 0–10 h and b, needing the same 8 devices, waits the 10 h
    // and runs 10–16 h.
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let plans = [
        timed("b", "nlp", "normal", 6.0, serde_json::json!({})),
        timed("a", "nlp", "normal", 10.0, serde_json::json!({})),
    ];
    let s = schedule(&plans, &Submits::new(), &cat, &options(48.0));
    let a = find(&s, "a");
    let b = find(&s, "b");
    assert_eq!(
        (a.start_h, a.finish_h, a.wait_h),
        (Some(0.0), Some(10.0), 0.0)
    );
    assert_eq!(
        (b.start_h, b.finish_h, b.wait_h),
        (Some(10.0), Some(16.0), 10.0)
    );
    assert_eq!(s.totals.wait_h, 10.0);
    // Why: nlp's 8 guaranteed + 0 elastic H100 are all held by a (the quota is checked first).
    assert_eq!(
        b.reason,
        "waited until hour 10: needs 8 H100_SXM, 0 left of tenant `nlp`'s guaranteed + elastic quota"
    );
    // 8 devices × (10 + 6) h held.
    assert_eq!(s.totals.device_hours, 128.0);
    // Day 0: 8 devices busy for 16 of 24 h = 2/3; b waited 0–10 h with 0 free, so nothing was
    // fragmented; after 16 h all 8 are free, but the day's busiest instant had 0 free.
    let day0 = &s.utilisation["only"][H100][0];
    assert!((day0.utilisation - 2.0 / 3.0).abs() < 1e-4, "{day0:?}");
    assert_eq!((day0.free_devices, day0.fragmentation), (0, 0));
    // The queue: one waiting and one running from 0, none waiting from 10, none at all from 16.
    let points: Vec<(f64, usize, usize)> = s
        .queue
        .iter()
        .map(|p| (p.at_h, p.queued, p.running))
        .collect();
    assert_eq!(points, vec![(0.0, 1, 1), (10.0, 0, 1), (16.0, 0, 0)]);
}

#[test]
fn a_higher_priority_job_preempts_a_low_one_which_loses_exactly_the_work_since_its_checkpoint() {
    // `low` checkpoints every 60 min and trains 20 h from hour 0. `high` (same tenant, same 8
    // devices) is submitted at 2.5 h and preempts it (Kueue withinClusterQueue: LowerPriority).
    // The last checkpoint was at 2.0 h, so 0.5 h is lost (no restart time: no goodput model).
    // high runs 2.5–7.5 h; low resumes at 7.5 h with 20 − 2.5 + 0.5 = 18 h left: done at 25.5.
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let checkpoint = serde_json::json!({
        "checkpoint": {"interval_min": 60.0, "write_s": 10.0, "path": "/ckpt/nlp/low"}
    });
    let plans = [
        timed("low", "nlp", "low", 20.0, checkpoint),
        timed("high", "nlp", "high", 5.0, serde_json::json!({})),
    ];
    let submits: Submits = [(("high.loam".to_string(), "high".to_string()), 2.5)].into();
    let s = schedule(&plans, &submits, &cat, &options(72.0));
    let low = find(&s, "low");
    let high = find(&s, "high");
    assert_eq!((high.start_h, high.finish_h), (Some(2.5), Some(7.5)));
    assert_eq!(low.preemptions.len(), 1);
    let p = &low.preemptions[0];
    assert_eq!(
        (p.at_h, p.by.as_str(), p.rule.as_str()),
        (2.5, "high", "priority")
    );
    assert!((p.lost_work_h - 0.5).abs() < 1e-9, "{p:?}");
    assert_eq!(low.finish_h, Some(25.5));
    let runs: Vec<(f64, f64)> = low.runs.iter().map(|r| (r.from_h, r.to_h)).collect();
    assert_eq!(runs, vec![(0.0, 2.5), (7.5, 25.5)]);
    // The low job waited nothing before its first start.
    assert_eq!(low.wait_h, 0.0);
}

#[test]
fn a_borrowing_job_is_preempted_when_the_lender_reclaims_its_guaranteed_quota() {
    // research is guaranteed the 8 devices and idle; nlp has none guaranteed, 8 elastic, and
    // borrows them from hour 0 for 10 h, checkpointing every 30 min. research's job arrives at
    // 4.75 h and reclaims (rule 7): nlp's last checkpoint was at 4.5 h, so 0.25 h is lost;
    // research runs 4.75–6.75 h, then nlp resumes with 10 − 4.75 + 0.25 = 5.5 h: done at 12.25.
    let cat = catalogue(
        &[("ng-a", H100, 1)],
        &[("nlp", &[(H100, 0, 8)]), ("research", &[(H100, 8, 0)])],
    );
    let checkpoint = serde_json::json!({
        "checkpoint": {"interval_min": 30.0, "write_s": 10.0, "path": "/ckpt/nlp/borrower"}
    });
    let plans = [
        timed("borrower", "nlp", "normal", 10.0, checkpoint),
        timed("owner", "research", "normal", 2.0, serde_json::json!({})),
    ];
    let submits: Submits = [(("owner.loam".to_string(), "owner".to_string()), 4.75)].into();
    let s = schedule(&plans, &submits, &cat, &options(48.0));
    let borrower = find(&s, "borrower");
    assert_eq!(borrower.preemptions.len(), 1);
    assert_eq!(borrower.preemptions[0].rule, "reclaim");
    assert!((borrower.preemptions[0].lost_work_h - 0.25).abs() < 1e-9);
    assert_eq!(find(&s, "owner").finish_h, Some(6.75));
    assert_eq!(borrower.finish_h, Some(12.25));
}

#[test]
fn a_higher_priority_of_another_tenant_preempts_a_borrowing_job_only_while_both_borrow() {
    // One node of 8 H100, all of it the pool's unreserved rest: nlp and research are guaranteed
    // none and may each borrow all 8 (elastic 8). nlp's low job borrows the 8 from hour 0 for
    // 20 h, checkpointing every 60 min; research's high job (5 h) arrives at 2.5 h. It cannot
    // reclaim (it would borrow too), but Kueue's `borrowWithinCohort: LowerPriority` lets it
    // preempt a lower priority of a borrowing tenant: nlp loses the 0.5 h since its checkpoint
    // at 2.0 h; high runs 2.5–7.5 h; low resumes with 20 − 2.5 + 0.5 = 18 h: done at 25.5.
    let checkpoint = serde_json::json!({
        "checkpoint": {"interval_min": 60.0, "write_s": 10.0, "path": "/ckpt/nlp/low"}
    });
    let plans = [
        timed("low", "nlp", "low", 20.0, checkpoint),
        timed("high", "research", "high", 5.0, serde_json::json!({})),
    ];
    let submits: Submits = [(("high.loam".to_string(), "high".to_string()), 2.5)].into();
    let borrowed = catalogue(
        &[("ng-a", H100, 1)],
        &[("nlp", &[(H100, 0, 8)]), ("research", &[(H100, 0, 8)])],
    );
    let s = schedule(&plans, &submits, &borrowed, &options(72.0));
    let (low, high) = (find(&s, "low"), find(&s, "high"));
    assert_eq!((high.start_h, high.finish_h), (Some(2.5), Some(7.5)));
    assert_eq!(low.preemptions.len(), 1);
    let p = &low.preemptions[0];
    assert_eq!(
        (p.at_h, p.by.as_str(), p.rule.as_str()),
        (2.5, "high", "priority")
    );
    assert!((p.lost_work_h - 0.5).abs() < 1e-9, "{p:?}");
    assert_eq!(low.finish_h, Some(25.5));
    // When nlp holds the 8 within its guaranteed quota, research (elastic 8 of nothing lent)
    // may not preempt it by priority: it waits the 20 h.
    let owned = catalogue(
        &[("ng-a", H100, 1)],
        &[("nlp", &[(H100, 8, 0)]), ("research", &[(H100, 0, 8)])],
    );
    let s = schedule(&plans, &submits, &owned, &options(72.0));
    let (low, high) = (find(&s, "low"), find(&s, "high"));
    assert!(low.preemptions.is_empty(), "{:?}", low.preemptions);
    assert_eq!((high.start_h, high.finish_h), (Some(20.0), Some(25.0)));
}

#[test]
fn a_window_job_runs_only_inside_its_hours() {
    // An interruptible job with a window 22:00 for 8 h (22:00–06:00, across midnight) and 10 h
    // of training, submitted at hour 0 (00:00, inside the window): it runs 0–6 h (6 h), gives
    // its devices back 06:00–22:00, runs 22–26 h (4 h): done at 26. Outside the window it is
    // not queued (it gave its devices back by design).
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let window = serde_json::json!({
        "interruptible": true,
        "schedule": {"start_hour": 22, "hours_per_day": 8, "power_price_per_kwh": 0.3,
                     "saving": 10.0, "train_time_h": 30.0}
    });
    let plans = [timed("night", "nlp", "low", 10.0, window)];
    let s = schedule(&plans, &Submits::new(), &cat, &options(96.0));
    let night = find(&s, "night");
    let runs: Vec<(f64, f64)> = night.runs.iter().map(|r| (r.from_h, r.to_h)).collect();
    assert_eq!(runs, vec![(0.0, 6.0), (22.0, 26.0)]);
    assert_eq!(night.finish_h, Some(26.0));
    assert!(night.preemptions.is_empty());
    // Submitted at 07:00 instead, it waits for 22:00 and runs 22–30 h and 46–48 h.
    let submits: Submits = [(("night.loam".to_string(), "night".to_string()), 7.0)].into();
    let s = schedule(&plans, &submits, &cat, &options(96.0));
    let night = find(&s, "night");
    let runs: Vec<(f64, f64)> = night.runs.iter().map(|r| (r.from_h, r.to_h)).collect();
    assert_eq!(runs, vec![(22.0, 30.0), (46.0, 48.0)]);
    assert_eq!((night.start_h, night.finish_h), (Some(22.0), Some(48.0)));
    // Its wait counts from submission to first start: 22 − 7 = 15 h.
    assert_eq!(night.wait_h, 15.0);
}

#[test]
fn a_deadline_is_judged_from_submission_and_the_samples_give_it_a_probability() {
    // Two 10 h jobs share 8 devices; b (deadline 15 h) waits for a and finishes at 20 h: missed.
    // a (deadline 12 h) finishes at 10 h: met. With ±0 uncertainty and no failures every
    // sample is the expected schedule, so P(met) is 1 for a and 0 for b, P50 = P90 = finish.
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let goal = |d: f64| serde_json::json!({"goal": {"optimize": "time", "deadline_h": d}});
    let plans = [
        timed("a", "nlp", "normal", 10.0, goal(12.0)),
        timed("b", "nlp", "normal", 10.0, goal(15.0)),
    ];
    let mut o = options(48.0);
    o.samples = 20;
    let s = schedule(&plans, &Submits::new(), &cat, &o);
    let a = find(&s, "a").deadline.as_ref().unwrap();
    let b = find(&s, "b").deadline.as_ref().unwrap();
    assert_eq!((a.verdict.as_str(), a.probability_met), ("met", Some(1.0)));
    assert_eq!(
        (b.verdict.as_str(), b.probability_met),
        ("missed", Some(0.0))
    );
    assert_eq!((b.finish_p50_h, b.finish_p90_h), (Some(20.0), Some(20.0)));
    assert_eq!((s.totals.met, s.totals.missed), (1, 1));
}

#[test]
fn the_same_input_gives_byte_identical_json() {
    let cat = catalogue(&[("ng-a", H100, 2)], &[("nlp", &[(H100, 8, 8)])]);
    let mut plans = Vec::new();
    for (i, p) in ["low", "normal", "high", "low", "normal"]
        .iter()
        .enumerate()
    {
        let extra = serde_json::json!({
            "estimate_unused": null,
            "checkpoint": {"interval_min": 45.0, "write_s": 10.0, "path": "/c"}
        });
        plans.push(timed(&format!("j{i}"), "nlp", p, 5.0 + i as f64, extra));
    }
    let submits: Submits = (0..5)
        .map(|i| ((format!("j{i}.loam"), format!("j{i}")), i as f64 * 1.5))
        .collect();
    let mut o = options(72.0);
    o.samples = 50;
    let one = serde_json::to_string(&schedule(&plans, &submits, &cat, &o)).unwrap();
    let two = serde_json::to_string(&schedule(&plans, &submits, &cat, &o)).unwrap();
    assert_eq!(one, two);
    // Samples spread over threads draw from per-sample seeds: the same bytes on 3 threads.
    o.threads = 3;
    let three = serde_json::to_string(&schedule(&plans, &submits, &cat, &o)).unwrap();
    assert_eq!(one, three);
}

#[test]
fn adding_a_node_removes_the_wait_and_the_what_if_says_so() {
    // The two-job pool of the first test: b waits 10 h for a. One more node of 8 H100 at the
    // site lets b start at 0 (the cohort holds every device; nlp's 8 guaranteed + 8 elastic
    // cover 16), so the total wait drops by 10 h and b finishes 10 h earlier (16 → 6 h);
    // the same device-hours are bought, so the cost does not change.
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 8)])]);
    let plans = [
        timed("a", "nlp", "normal", 10.0, serde_json::json!({})),
        timed("b", "nlp", "normal", 6.0, serde_json::json!({})),
    ];
    let add = what_if::Addition::parse("8xH100_SXM@only").unwrap();
    let (bigger, words) = what_if::changed_catalogue(&cat, &[add], &[]).unwrap();
    assert_eq!(
        words,
        vec!["+8 H100_SXM at only (1 nodes on node group ng-a)"]
    );
    let s = what_if::compare(
        &plans,
        &[],
        &Submits::new(),
        &cat,
        &bigger,
        words,
        &options(48.0),
    );
    let w = s.what_if.as_ref().unwrap();
    assert_eq!(
        (w.before.wait_h, w.after.wait_h, w.wait_change_h),
        (10.0, 0.0, -10.0)
    );
    assert_eq!(w.cost_change["CNY"], 0.0);
    assert_eq!(w.moved.len(), 1);
    assert_eq!(
        (w.moved[0].job.as_str(), w.moved[0].finish_change_h),
        ("b", Some(-10.0))
    );
    // Removing the only site leaves nothing to run on: both jobs are never admissible.
    let (empty, _) = what_if::changed_catalogue(&cat, &[], &["only".to_string()]).unwrap();
    let s = schedule(&plans, &Submits::new(), &empty, &options(48.0));
    assert!(s.jobs.iter().all(|j| j.status == "never"), "{:?}", s.jobs);
}

#[test]
fn jobs_of_one_priority_start_in_the_order_they_were_submitted() {
    // x holds the 8 devices 0–10 h. b is submitted at 1 h, a at 5 h, both normal and needing
    // the 8 devices for 4 h: Kueue orders by priority, then creation time, so b (earlier) runs
    // 10–14 h and a 14–18 h, although a's file sorts first.
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let plans = [
        timed("x", "nlp", "normal", 10.0, serde_json::json!({})),
        timed("a", "nlp", "normal", 4.0, serde_json::json!({})),
        timed("b", "nlp", "normal", 4.0, serde_json::json!({})),
    ];
    let submits: Submits = [
        (("a.loam".to_string(), "a".to_string()), 5.0),
        (("b.loam".to_string(), "b".to_string()), 1.0),
    ]
    .into();
    let s = schedule(&plans, &submits, &cat, &options(48.0));
    assert_eq!(find(&s, "b").start_h, Some(10.0));
    assert_eq!(find(&s, "a").start_h, Some(14.0));
    // Waits count from submission: b 10 − 1 = 9 h, a 14 − 5 = 9 h.
    assert_eq!((find(&s, "b").wait_h, find(&s, "a").wait_h), (9.0, 9.0));
}

#[test]
fn sampled_throughput_gives_the_percentiles_worked_out_by_hand() {
    // One 100 h job alone, throughput uncertain by ±20 %, no failure model: each sample trains
    // 100 / m hours with m uniform in [0.8, 1.2]. P50: m = 1.0, 100 h. P90 of the time is P10 of
    // m: 0.8 + 0.4 × 0.1 = 0.84, so 100 / 0.84 = 119.05 h. A 110 h deadline is met when
    // m ≥ 100/110 = 0.9091: probability (1.2 − 0.9091) / 0.4 = 0.727. With 2,000 samples the
    // percentiles are within about 1 h and the probability within 0.03.
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let mut job = timed(
        "alone",
        "nlp",
        "normal",
        100.0,
        serde_json::json!({"goal": {"optimize": "time", "deadline_h": 110.0}}),
    );
    if let Some(e) = job.estimate.as_mut() {
        e.throughput_uncertainty = Some(0.2);
    }
    let mut o = options(400.0);
    o.samples = 2000;
    let s = schedule(&[job], &Submits::new(), &cat, &o);
    let d = find(&s, "alone").deadline.clone().unwrap();
    let (p50, p90, p) = (
        d.finish_p50_h.unwrap(),
        d.finish_p90_h.unwrap(),
        d.probability_met.unwrap(),
    );
    assert!((p50 - 100.0).abs() < 1.5, "{p50}");
    assert!((p90 - 119.05).abs() < 1.5, "{p90}");
    assert!((p - 0.727).abs() < 0.03, "{p}");
    // Met at P50 but not at P90: at risk.
    assert_eq!(d.verdict, "at-risk");
}

const H800: &str = "H800_SXM";

/// `b`, 12 h on 8 H100 of `ng-a` (its plan costs 10 × 12 = 120 CNY), with one alternative: 8
/// H800 of `ng-b` for `alt_hours` at 150 CNY (+25 % against 120); `extra` as in [`timed`].
fn movable(alt_hours: f64, extra: serde_json::Value) -> Plan {
    let mut fields = serde_json::json!({
        "alternatives": [{
            "shape": "single-type", "lost_on": "slower",
            "summary": "TP8 PP1 DP1 on 8 × H800_SXM at only (ng-b)", "objective": alt_hours,
            "why_not": "slower", "time_h": alt_hours, "cost": 150.0, "carbon_kg": 10.0,
            "placement": [{"site": "only", "node_group": "ng-b", "device": "H800_SXM",
                           "devices": 8}]
        }]
    });
    if let (serde_json::Value::Object(f), serde_json::Value::Object(e)) = (&mut fields, extra) {
        f.extend(e);
    }
    timed("b", "nlp", "normal", 12.0, fields)
}

/// One node of H100 (`ng-a`) and one of H800 (`ng-b`); nlp is guaranteed all 8 of each.
fn two_groups() -> Catalogue {
    catalogue(
        &[("ng-a", H100, 1), ("ng-b", H800, 1)],
        &[("nlp", &[(H100, 8, 0), (H800, 8, 0)])],
    )
}

#[test]
fn a_job_waiting_behind_another_starts_at_once_on_its_alternative() {
    // a (a.loam sorts first) holds all 8 H100 of ng-a for 100 h from hour 0. b cannot start
    // there before a finishes at 100, so by waiting it would finish at 100 + 12 = 112 at the
    // earliest. Its alternative on ng-b's 8 H800 fits at 0 and finishes at 0 + 20 = 20: 100 h
    // (4.2 days) earlier start, 112 − 20 = 92 h (3.8 days) earlier finish, 150 / 120 − 1 =
    // +25 % cost.
    let plans = [
        movable(20.0, serde_json::json!({})),
        timed("a", "nlp", "normal", 100.0, serde_json::json!({})),
    ];
    let s = schedule(&plans, &Submits::new(), &two_groups(), &options(240.0));
    let b = find(&s, "b");
    assert_eq!(
        (b.start_h, b.finish_h, b.wait_h),
        (Some(0.0), Some(20.0), 0.0)
    );
    assert_eq!(
        (b.placement.site.as_str(), b.placement.device.as_str()),
        ("only", H800)
    );
    assert_eq!(b.placement.node_groups, ["ng-b"]);
    let moved = b.placement.replaced.clone().unwrap();
    assert_eq!(moved.planned_site, "only");
    assert_eq!(moved.earlier_h, 92.0);
    assert_eq!(moved.cost_change, 0.25);
    assert_eq!(
        moved.why,
        "starts 4.2 days earlier at only (8 × H800_SXM on ng-b), finishes at least 3.8 days \
         earlier, +25.0 % cost"
    );
    // a stays on its plan.
    assert_eq!(find(&s, "a").placement.replaced, None);
    // Held: 8 × 100 (a) + 8 × 20 (b) device-hours; cost 10 CNY per hour for a's 100 h, and
    // the alternative's 150 CNY over its 20 h for b: 1,000 + 150.
    assert_eq!(s.totals.device_hours, 960.0);
    assert_eq!(s.totals.cost["CNY"], 1150.0);
}

#[test]
fn a_job_keeps_its_plan_when_waiting_finishes_earlier() {
    // The same, but the alternative takes 200 h: 0 + 200 is later than waiting's 112, so b
    // waits for ng-a and runs 100–112.
    let plans = [
        movable(200.0, serde_json::json!({})),
        timed("a", "nlp", "normal", 100.0, serde_json::json!({})),
    ];
    let s = schedule(&plans, &Submits::new(), &two_groups(), &options(240.0));
    let b = find(&s, "b");
    assert_eq!((b.start_h, b.finish_h), (Some(100.0), Some(112.0)));
    assert_eq!(b.placement.replaced, None);
    assert_eq!(b.placement.node_groups, ["ng-a"]);
}

#[test]
fn a_move_that_still_misses_the_deadline_says_so_and_samples_move_alike() {
    // b's deadline is 10 h after submission. Waiting finishes at 112 at the earliest, the
    // alternative at 20: both miss, the alternative by 20 − 10 = 10 h, so it moves and says
    // it misses all the same. Without throughput uncertainty or a failure model every sample
    // draws the expected hours, so every sample moves b too and finishes it at 20.
    let plans = [
        movable(
            20.0,
            serde_json::json!({"goal": {"optimize": "time", "deadline_h": 10.0}}),
        ),
        timed("a", "nlp", "normal", 100.0, serde_json::json!({})),
    ];
    let mut o = options(240.0);
    o.samples = 20;
    let s = schedule(&plans, &Submits::new(), &two_groups(), &o);
    let b = find(&s, "b");
    assert_eq!(b.finish_h, Some(20.0));
    let why = &b.placement.replaced.as_ref().unwrap().why;
    assert!(
        why.ends_with("; misses its deadline there too, by 10.0 h, but by less than waiting"),
        "{why}"
    );
    let d = b.deadline.clone().unwrap();
    assert_eq!((d.finish_p50_h, d.finish_p90_h), (Some(20.0), Some(20.0)));
    assert_eq!(
        (d.verdict.as_str(), d.probability_met),
        ("missed", Some(0.0))
    );
    // Deterministic: the same input gives the same bytes, on any number of threads.
    o.threads = 2;
    let again = schedule(&plans, &Submits::new(), &two_groups(), &o);
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
}

#[test]
fn a_sample_scales_the_alternatives_hours_by_its_own_draw() {
    // One sample's draw doubles every job's hours: a 200 h, b 24 h (of 12 expected). Waiting,
    // b would finish at 200 + 24 = 224 at the earliest; its alternative, scaled by the same
    // factor 24 / 12 = 2, takes 2 × 20 = 40 h: it moves and finishes at 40.
    let plans = [
        movable(20.0, serde_json::json!({})),
        timed("a", "nlp", "normal", 100.0, serde_json::json!({})),
    ];
    let cat = two_groups();
    let run = pool_run(
        plans.iter().collect(),
        &[],
        cat.pool("t"),
        &Submits::new(),
        480.0,
    );
    // The rules' order: a.loam before b.loam.
    assert_eq!(run.plans[0].job, "a");
    let pool = sim::Pool {
        rules: &run.rules,
        demands: &run.demands,
        jobs: &run.jobs,
        alternatives: &run.alternatives,
        slurm: false,
    };
    let outcome = sim::run(&pool, &[200.0, 24.0], 480.0, None);
    assert_eq!(outcome.traces[1].finish_h, Some(40.0));
    assert_eq!(outcome.traces[0].finish_h, Some(200.0));
}

/// `a`, interruptible, 100 h on 8 H100 of `ng-a` with a checkpoint every hour, whose plan costs
/// 10 × 100 = 1,000 CNY; one alternative, 8 H800 of `ng-b`, taking `alt_hours` for 1,100 CNY
/// (+10 %).
fn migratable(alt_hours: f64, interruptible: bool) -> Plan {
    timed(
        "a",
        "nlp",
        "normal",
        100.0,
        serde_json::json!({
            "interruptible": interruptible,
            "checkpoint": {"interval_min": 60.0, "write_s": 10.0, "path": "/ckpt/nlp/a"},
            "alternatives": [{
                "shape": "single-type", "lost_on": "slower",
                "summary": "on 8 × H800_SXM at only (ng-b)", "objective": alt_hours,
                "why_not": "slower", "time_h": alt_hours, "cost": 1100.0, "carbon_kg": 10.0,
                "placement": [{"site": "only", "node_group": "ng-b", "device": "H800_SXM",
                               "devices": 8}]
            }]
        }),
    )
}

#[test]
fn a_running_interruptible_job_migrates_from_its_checkpoint_to_let_a_waiting_one_start() {
    // a runs on ng-a from 0. b (12 h on the same 8 H100, same priority, no alternative) is
    // submitted at 10.5: it cannot fit, preempt or move, and waiting it would start at 100.
    // a has done 10.5 h, checkpointed at 10, so 0.5 h is redone: 90 % of its work is left, which
    // takes 0.9 × 120 = 108 h on its alternative (no restart in this plan), 108 − 89.5 = 18.5 h
    // more than staying; b starts 100 − 10.5 = 89.5 h (3.7 days) sooner. 18.5 < 89.5: a
    // migrates at 10.5 and finishes at 10.5 + 108 = 118.5; b runs 10.5–22.5.
    let plans = [
        migratable(120.0, true),
        timed("b", "nlp", "normal", 12.0, serde_json::json!({})),
    ];
    let submits: Submits = [(("b.loam".to_string(), "b".to_string()), 10.5)].into();
    let s = schedule(&plans, &submits, &two_groups(), &options(240.0));
    let b = find(&s, "b");
    assert_eq!((b.start_h, b.finish_h), (Some(10.5), Some(22.5)));
    let a = find(&s, "a");
    assert_eq!(a.finish_h, Some(118.5));
    let runs: Vec<(f64, f64)> = a.runs.iter().map(|r| (r.from_h, r.to_h)).collect();
    assert_eq!(runs, [(0.0, 10.5), (10.5, 118.5)]);
    assert!(a.preemptions.is_empty());
    assert_eq!(a.placement.node_groups, ["ng-b"]);
    let moved = a.placement.replaced.clone().unwrap();
    // Negative: it finishes 18.5 h later than staying.
    assert_eq!((moved.earlier_h, moved.cost_change), (-18.5, 0.1));
    assert_eq!(moved.migrated_at_h, Some(10.5));
    // Held: 8 devices each throughout, 10.5 + 108 h for a and 12 h for b: 1,044 device-hours.
    // Cost: a's plan costs 10 CNY per hour held until the move, the alternative 1,100 / 120 per
    // hour after it; b 10 per hour: 105 + 990 + 120 = 1,215 CNY.
    assert_eq!(s.totals.device_hours, 1044.0);
    assert_eq!(s.totals.cost["CNY"], 1215.0);
    assert_eq!(
        moved.why,
        "migrated at hour 10.5 from its last checkpoint to only (8 × H800_SXM on ng-b) so that \
         `b` could start 3.7 days sooner; finishes 18.5 h later (0.5 h of work redone and a \
         restart), +10.0 % cost"
    );
}

#[test]
fn no_migration_when_it_costs_more_than_it_gains_or_the_job_is_not_interruptible() {
    // On an alternative of 1,000 h, a would need 0.9 × 1000 = 900 h more from 10.5, 810.5 h
    // later than staying, for b's 89.5 h: no migration, b waits until a finishes at 100. And a
    // job that is not interruptible never migrates, however much it would help.
    for a in [migratable(1000.0, true), migratable(120.0, false)] {
        let plans = [a, timed("b", "nlp", "normal", 12.0, serde_json::json!({}))];
        let submits: Submits = [(("b.loam".to_string(), "b".to_string()), 10.5)].into();
        let s = schedule(&plans, &submits, &two_groups(), &options(240.0));
        assert_eq!(find(&s, "b").start_h, Some(100.0));
        assert_eq!(find(&s, "a").placement.replaced, None);
        assert_eq!(find(&s, "a").finish_h, Some(100.0));
    }
}

/// A feasible service of one role on `replicas` × `per_replica` devices of node group `ng-a`,
/// costing 5 CNY an hour: the shipped RAG example's plan with its deployment replaced.
fn service(name: &str, priority: &str, replicas: u64, per_replica: u64) -> ServicePlan {
    use crate::check::check_file;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/rag-llama31-8b-service.loam"
    ))
    .unwrap();
    let parsed = crate::syntax::parse(loam_ir::span::FileId(0), &text);
    let checked = check_file(&parsed.file.unwrap());
    let spec = checked.services.into_iter().next().unwrap();
    let mut s = crate::plan::service::plan_service(&spec, "x.loam", &crate::catalogue::builtin());
    assert!(s.feasible, "{:?}", s.reasons);
    s.service = name.to_string();
    s.file = format!("{name}.loam");
    s.pool = "t".to_string();
    s.priority = serde_json::from_value(serde_json::json!(priority)).unwrap();
    s.roles.truncate(1);
    let role = &mut s.roles[0];
    role.replicas = replicas;
    role.devices_per_replica = per_replica;
    role.group.node_group = "ng-a".to_string();
    role.group.site = "only".to_string();
    role.group.device = H100.to_string();
    role.group.devices = replicas * per_replica;
    if let Some(e) = &mut s.estimate {
        e.cost_per_hour.amount = 5.0;
        e.cost_per_hour.currency = "CNY".to_string();
    }
    s
}

#[test]
fn a_service_holds_its_devices_for_the_whole_horizon_and_jobs_run_beside_it() {
    // One node of 8 H100. The service holds 1 replica × 4 devices from hour 0 to the horizon
    // (rule 15), so job a (8 devices) can never run, and job b (4 devices, 6 h) runs 0–6 h
    // beside it. Day 0 of a 24 h horizon: busy 4 × 24 (service) + 4 × 6 (b) = 120 of
    // 8 × 24 = 192 device-hours, 0.625; no device free while b runs. Cost: the service
    // 5 CNY × 24 h = 120, b 10 CNY × 6 h = 60: 180 CNY.
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let mut b = plan("b", "nlp", "normal", &[("ng-a", H100, 4)]);
    b.estimate = timed("b", "nlp", "normal", 6.0, serde_json::json!({})).estimate;
    let plans = [timed("a", "nlp", "normal", 10.0, serde_json::json!({})), b];
    let services = [service("svc", "normal", 1, 4)];
    let s = schedule_with_services(&plans, &services, &Submits::new(), &cat, &options(24.0));
    let svc = find(&s, "svc");
    assert_eq!(
        (
            svc.kind.as_str(),
            svc.status.as_str(),
            svc.devices,
            svc.start_h
        ),
        ("service", "running", 4, Some(0.0))
    );
    assert_eq!(svc.runs.len(), 1);
    assert_eq!((svc.runs[0].from_h, svc.runs[0].to_h), (0.0, 24.0));
    let a = find(&s, "a");
    assert_eq!(a.status, "never", "{a:?}");
    let b = find(&s, "b");
    assert_eq!((b.start_h, b.finish_h), (Some(0.0), Some(6.0)));
    let day = &s.utilisation["only"][H100][0];
    assert_eq!(
        (day.devices, day.utilisation, day.free_devices),
        (8, 0.625, 0)
    );
    assert_eq!((s.totals.jobs, s.totals.services), (1, 1));
    assert_eq!(s.totals.device_hours, 120.0);
    assert_eq!(s.totals.cost["CNY"], 180.0);
    // Without the service, a runs first (rule 2: a.loam before b.loam) and b waits for it.
    let alone = schedule(&plans, &Submits::new(), &cat, &options(24.0));
    assert_eq!(find(&alone, "a").status, "finished");
    assert_eq!(find(&alone, "b").start_h, Some(10.0));
}

#[test]
fn services_are_placed_highest_priority_first_and_one_that_does_not_fit_never_runs() {
    // One node of 8 H100: `high` (4 devices) is placed before `low` (6 devices) whatever their
    // files' order; 4 are left, so `low` never runs, and the day is half busy (4 × 24 of 192).
    let cat = catalogue(&[("ng-a", H100, 1)], &[("nlp", &[(H100, 8, 0)])]);
    let services = [
        service("a-low", "low", 3, 2),
        service("b-high", "high", 2, 2),
    ];
    let s = schedule_with_services(&[], &services, &Submits::new(), &cat, &options(24.0));
    assert_eq!(find(&s, "b-high").status, "running");
    let low = find(&s, "a-low");
    assert_eq!(low.status, "never");
    assert_eq!(
        low.reason,
        "node group `ng-a` has 4 of its 8 devices left beside the services before it; it needs 6"
    );
    assert_eq!(s.utilisation["only"][H100][0].utilisation, 0.5);
    assert_eq!((s.totals.services, s.totals.never_started), (1, 1));
}
