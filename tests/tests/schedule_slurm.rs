//! `loam schedule`'s Slurm rules against the real slurmctld (issue 33, item 6): small workloads
//! of `sleep` jobs, each with a priority, a node count, a duration and a time limit in minutes, submitted
//! to a Slurm 22.05 cluster running `PriorityType=priority/multifactor` and
//! `SchedulerType=sched/backfill`, and the start order and start times Slurm gives them read
//! back and compared with the schedule derived by hand under Slurm's rules (in each workload's
//! comment): jobs start in priority order, ties in submission order; a job that does not fit
//! waits and reserves the earliest time it fits; a lower-priority job starts ahead of it only
//! when it ends (by its time limit) before that reservation (backfill).
//!
//! The cluster is `tests/backends/slurm-schedule-cluster.sh`: a second slurmctld with five
//! partitions of four nodes, each node a real slurmd on loopback, which
//! `scripts/backend-tools.sh` starts beside the suite's own cluster (whose priority/basic
//! first-in-first-out order the other Slurm tests keep). Each workload has a partition of its
//! own, so the five run at once: about five minutes in all.
//!
//! Time scale: one minute of Slurm per unit (one hour of loam), since Slurm keeps time limits in
//! whole minutes and backfill plans with the limit. In workloads a to d a job's limit is its
//! duration; in e each job's limit is the one `loam emit --target slurm` writes for its plan
//! (`loam_ir::slurm_limit`), longer than its run, which `loam schedule --rules slurm` plans with
//! too. A job sleeps its duration less one second, so it ends by itself, never by the limit's
//! kill (slurmctld checks limits every 30 s).
//!
//! With `CI` or `LOAM_REQUIRE_TOOLS` set a missing cluster fails the test; otherwise it is
//! skipped with a message.

use crate::schedule_workload::{self, WorkJob};
use loam_compiler::schedule::{DEFAULT_SEED, Options, Rules, Submits, schedule};
use loam_ir::plan::{CheckpointIr, Plan};
use loam_ir::slurm_limit::time_limit;
use loam_tests::tools::{ci_dir, have, scratch, text};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Seconds in one unit of a workload's durations: Slurm's time limits are whole minutes.
/// (counted)
const UNIT_S: u64 = 60;

/// How far a start may be from the derived one, in seconds: one main scheduling interval of
/// the cluster (`sched_interval=2` in its slurm.conf), the longest Slurm may take to notice a
/// freed node or a reached begin time when no event wakes it. (counted from the configuration;
/// measured on the test machine: every start within 1 s of the derived one: a job's end wakes
/// the scheduler at once, so the next starts at 59 or 60 s after a job sleeping 59 s, and a
/// begin time is met by the next periodic pass, d4 at 211 s for 210 s)
const SCHED_INTERVAL_S: f64 = 2.0;

/// The configuration file of the schedule cluster.
fn slurm_conf() -> PathBuf {
    ci_dir().join("slurm-schedule/slurm.conf")
}

/// A Slurm command run against the schedule cluster, times as seconds since the epoch.
fn slurm(program: &str, args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("SLURM_CONF", slurm_conf())
        .env("SLURM_TIME_FORMAT", "%s")
        .output()
        .unwrap()
}

/// Whether the schedule cluster's slurmctld answers.
fn have_schedule_cluster() -> bool {
    have(
        "the schedule test's slurmctld (tests/backends/slurm-schedule-cluster.sh)",
        slurm_conf().is_file()
            && Command::new("scontrol")
                .arg("ping")
                .env("SLURM_CONF", slurm_conf())
                .output()
                .is_ok_and(|o| {
                    o.status.success() && String::from_utf8_lossy(&o.stdout).contains("is UP")
                }),
    )
}

/// One job of a workload.
#[derive(Debug, Clone, Copy)]
struct Job {
    name: &'static str,
    nodes: u32,
    /// Duration in units (hours of loam, minutes of Slurm).
    units: f64,
    /// The time limit in units (Slurm's `--time` in minutes).
    limit_units: u64,
    /// Seconds loam's plan writes a checkpoint in, which with the duration sets the limit
    /// `loam emit` writes; `None`: the plan has no checkpoint and Slurm's limit is the duration.
    write_s: Option<f64>,
    /// loam's priority name.
    priority: &'static str,
    /// Seconds after the workload's release it is submitted (Slurm's `--begin`).
    submit_s: u64,
}

/// The nice that gives a loam priority its order under the cluster's multifactor weights
/// (priority = 10000 × partition factor − nice): critical 10000, high 9000, normal 8000, low 7000.
fn nice(priority: &str) -> u32 {
    match priority {
        "critical" => 0,
        "high" => 1000,
        "normal" => 2000,
        "low" => 3000,
        other => panic!("unknown priority {other}"),
    }
}

/// What Slurm did with one job: its start and end, in seconds after the workload's release.
#[derive(Debug, Clone)]
struct Observed {
    name: String,
    priority: i64,
    state: String,
    start_s: f64,
    end_s: f64,
}

/// `epoch` seconds as the controller's local date and time, as `--begin` reads it.
fn local_time(epoch: u64) -> String {
    let o = Command::new("date")
        .args(["-d", &format!("@{epoch}"), "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Submits `jobs` to `partition` held, releases them at once a few seconds later (so the
/// scheduler sees the whole workload together, as loam does at hour 0; a job with a later
/// submit time begins then), and returns their ids and the release time.
fn submit(partition: &str, jobs: &[Job], cwd: &Path) -> (Vec<String>, u64) {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    // Time enough for the submissions (a tenth of a second each here).
    let release_at = now() + 5;
    let mut ids = Vec::new();
    for job in jobs {
        let begin = if job.submit_s > 0 {
            format!("--begin={}", local_time(release_at + job.submit_s))
        } else {
            "--begin=now".to_string()
        };
        let sleep = (job.units * UNIT_S as f64).round() as u64 - 1;
        let o = slurm(
            "sbatch",
            &[
                "--parsable",
                "--hold",
                &format!("--partition={partition}"),
                &format!("--job-name={}", job.name),
                &format!("--nodes={}", job.nodes),
                "--exclusive",
                &format!("--time={}", job.limit_units * UNIT_S / 60),
                &format!("--nice={}", nice(job.priority)),
                &begin,
                "--output=/dev/null",
                &format!("--wrap=sleep {sleep}"),
            ],
            cwd,
        );
        assert!(o.status.success(), "sbatch {}: {}", job.name, text(&o));
        ids.push(String::from_utf8_lossy(&o.stdout).trim().to_string());
    }
    while now() < release_at {
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = slurm("scontrol", &["release", &ids.join(",")], cwd);
    assert!(o.status.success(), "scontrol release: {}", text(&o));
    (ids, release_at)
}

/// Waits until every job of `ids` has ended, then reads their start and end times.
fn observe(ids: &[String], released: u64, cwd: &Path, limit: Duration) -> Vec<Observed> {
    let begin = Instant::now();
    loop {
        let o = slurm(
            "squeue",
            &[
                "--states=all",
                "--noheader",
                &format!("--jobs={}", ids.join(",")),
                "--format=%j|%T|%Q|%S|%e",
            ],
            cwd,
        );
        assert!(o.status.success(), "squeue: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        let rows: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split('|').collect::<Vec<_>>())
            .collect();
        let finished = rows.len() == ids.len()
            && rows
                .iter()
                .all(|r| !matches!(r[1], "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING"));
        if finished {
            return rows
                .iter()
                .map(|r| Observed {
                    name: r[0].to_string(),
                    state: r[1].to_string(),
                    priority: r[2].parse().unwrap(),
                    start_s: r[3].parse::<f64>().unwrap() - released as f64,
                    end_s: r[4].parse::<f64>().unwrap() - released as f64,
                })
                .collect();
        }
        assert!(
            begin.elapsed() < limit,
            "the workload did not finish in {limit:?}:\n{out}"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// One workload: its partition, its jobs in submission order, and the start of each (in units)
/// as derived by hand under Slurm's rules.
struct Workload {
    partition: &'static str,
    jobs: Vec<Job>,
    expected_start_units: BTreeMap<&'static str, f64>,
}

/// A job whose time limit is its duration of `units` (whole minutes on the cluster).
fn job(name: &'static str, nodes: u32, units: u64, priority: &'static str) -> Job {
    Job {
        name,
        nodes,
        units: units as f64,
        limit_units: units,
        write_s: None,
        priority,
        submit_s: 0,
    }
}

/// A job of `units` whose plan writes a checkpoint in `write_s` seconds, with the time limit
/// `limit_units` derived by hand from loam's rule (checked against it by
/// `the_limits_of_workload_e_are_the_ones_loam_emit_writes`).
fn limited(
    name: &'static str,
    nodes: u32,
    units: f64,
    write_s: f64,
    limit_units: u64,
    priority: &'static str,
) -> Job {
    Job {
        name,
        nodes,
        units,
        limit_units,
        write_s: Some(write_s),
        priority,
        submit_s: 0,
    }
}

/// `job`, submitted `units` after the others.
fn later(job: Job, units: f64) -> Job {
    Job {
        submit_s: (units * UNIT_S as f64) as u64,
        ..job
    }
}

/// The workloads, each on four nodes.
fn workloads() -> Vec<Workload> {
    vec![
        // Priority first, then backfill into a hole that closes before the reservation.
        // t=0: a2 (high, 4 nodes) starts, alone; a1, a4 (normal) and a3 (low) wait.
        // t=1: a2 ends; a1 (3 nodes, 2 units) starts; a4 (2 nodes) finds 1 free node and
        //      reserves t=3 (a1's end); a3 (1 node, 1 unit) ends at 2 <= 3: backfilled at t=1.
        // t=3: a4 starts; ends at 5.
        Workload {
            partition: "sched-a",
            jobs: vec![
                job("a1", 3, 2, "normal"),
                job("a2", 4, 1, "high"),
                job("a3", 1, 1, "low"),
                job("a4", 2, 2, "normal"),
            ],
            expected_start_units: [("a1", 1.0), ("a2", 0.0), ("a3", 1.0), ("a4", 3.0)].into(),
        },
        // Priority over submission order, submission order among equals.
        // Order: b2, b3 (normal, b2 submitted first), then b1, b4 (low).
        // t=0: b2 (4 nodes) starts alone. t=1: b3 (2 nodes) and b1 (2 nodes) start; b4 waits
        // for 2 nodes and gets b3's at t=2.
        Workload {
            partition: "sched-b",
            jobs: vec![
                job("b1", 2, 2, "low"),
                job("b2", 4, 1, "normal"),
                job("b3", 2, 1, "normal"),
                job("b4", 2, 3, "low"),
            ],
            expected_start_units: [("b1", 1.0), ("b2", 0.0), ("b3", 1.0), ("b4", 2.0)].into(),
        },
        // Backfill refused when it would delay the reservation.
        // t=0: c1 (high, 3 nodes, 1 unit) starts; c2 (normal, 4 nodes) reserves t=1; c3 (low,
        //      1 node, 2 units) fits the free node but would end at 2 > 1: it waits.
        // t=1: c2 starts alone; t=2: c3 starts. A first-fit scheduler would start c3 at 0 and
        //      c2 only at 2.
        Workload {
            partition: "sched-c",
            jobs: vec![
                job("c1", 3, 1, "high"),
                job("c2", 4, 1, "normal"),
                job("c3", 1, 2, "low"),
            ],
            expected_start_units: [("c1", 0.0), ("c2", 1.0), ("c3", 2.0)].into(),
        },
        // Later submissions: a job waits for its submit time even with a node free.
        // t=0: d1 (normal, 4 nodes, 2 units) starts; d3 (low, 3 nodes) waits.
        // t=1: d2 (normal, 1 node) is submitted; nothing is free; it waits.
        // t=2: d1 ends; d2 (normal) starts on 1 node, then d3 (low) on the other 3.
        // t=3: d2 ends: 1 node free, but d4 (low, 1 node) is submitted only at 3.5, when it
        //      starts, with no other event to wake the scheduler (its periodic pass).
        Workload {
            partition: "sched-d",
            jobs: vec![
                job("d1", 4, 2, "normal"),
                later(job("d2", 1, 1, "normal"), 1.0),
                job("d3", 3, 2, "low"),
                later(job("d4", 1, 1, "low"), 3.5),
            ],
            expected_start_units: [("d1", 0.0), ("d2", 2.0), ("d3", 2.0), ("d4", 3.5)].into(),
        },
        // Time limits longer than the runs: backfill plans with the limits, and a job that
        // ends early lets the next pass re-plan. Each limit is loam's: ceil(1.1 × run minutes)
        // + ceil(2 × checkpoint write s / 60) + 10 minutes, one unit per loam hour.
        // - e1 high, 3 nodes, 2 units, write 2940 s: 132 + 98 + 10 = 240 min: 4 units.
        // - e2 normal, 4 nodes, 1 unit, write 1320 s: 66 + 44 + 10 = 120 min: 2 units.
        // - e3 low, 1 node, 1 unit, write 6720 s: 66 + 224 + 10 = 300 min: 5 units.
        // - e4 low, 1 node, 2.5 units, write 150 s: 165 + 5 + 10 = 180 min: 3 units.
        // t=0: e1 starts; e2 (4 nodes) reserves t=4, e1's limit. e3 would end at 1, before it,
        //      but its limit (to 5) would delay it: e3 waits. e4's limit ends at 3 < 4: e4 is
        //      backfilled at 0. (By the runs instead: e3 at 0, e4 waiting, e2 at 2.)
        // t=2: e1 ends early; e4's limit holds its node to 3: e2 re-plans to 3, e3 after it.
        // t=2.5: e4 ends early; e2 starts. t=3.5: e2 ends; e3 starts.
        Workload {
            partition: "sched-e",
            jobs: vec![
                limited("e1", 3, 2.0, 2940.0, 4, "high"),
                limited("e2", 4, 1.0, 1320.0, 2, "normal"),
                limited("e3", 1, 1.0, 6720.0, 5, "low"),
                limited("e4", 1, 2.5, 150.0, 3, "low"),
            ],
            expected_start_units: [("e1", 0.0), ("e2", 2.5), ("e3", 3.5), ("e4", 0.0)].into(),
        },
    ]
}

/// The start order as names: by start time, ties (one scheduling pass) by priority, highest
/// first, then name.
fn order(starts: &[(String, f64, i64)]) -> Vec<String> {
    let mut sorted: Vec<(String, f64, i64)> = starts.to_vec();
    sorted.sort_by(|a, b| {
        let same_pass = (a.1 - b.1).abs() <= SCHED_INTERVAL_S;
        if same_pass {
            b.2.cmp(&a.2).then(a.0.cmp(&b.0))
        } else {
            a.1.total_cmp(&b.1)
        }
    });
    sorted.into_iter().map(|s| s.0).collect()
}

/// Slurm's starts of every workload, and each compared with the hand-derived schedule: the same
/// order and every start within one scheduling interval.
#[test]
#[allow(clippy::print_stderr)] // the measured numbers are the test's record, shown with --nocapture
fn slurm_starts_jobs_in_the_order_and_at_the_times_of_its_rules() {
    if !have_schedule_cluster() {
        return;
    }
    let dir = scratch("schedule-slurm", "workloads");
    let workloads = workloads();
    let submitted: Vec<(Vec<String>, u64)> = workloads
        .iter()
        .map(|w| submit(w.partition, &w.jobs, &dir))
        .collect();
    let mut worst = 0.0_f64;
    let mut problems = Vec::new();
    for (w, (ids, released)) in workloads.iter().zip(&submitted) {
        let longest = (w.jobs.iter().map(|j| j.units).sum::<f64>() * UNIT_S as f64).ceil() as u64;
        let seen = observe(ids, *released, &dir, Duration::from_secs(longest + 120));
        for o in &seen {
            assert_eq!(
                o.state, "COMPLETED",
                "{o:?}: a job ended by its limit, not its sleep"
            );
        }
        let slurm_starts: Vec<(String, f64, i64)> = seen
            .iter()
            .map(|o| (o.name.clone(), o.start_s, o.priority))
            .collect();
        let derived: Vec<(String, f64, i64)> = seen
            .iter()
            .map(|o| {
                let units = w.expected_start_units[o.name.as_str()];
                (o.name.clone(), units * UNIT_S as f64, o.priority)
            })
            .collect();
        if order(&slurm_starts) != order(&derived) {
            problems.push(format!(
                "{}: Slurm's order {:?}, derived {:?}",
                w.partition,
                order(&slurm_starts),
                order(&derived)
            ));
        }
        for (o, d) in seen.iter().zip(&derived) {
            let allowed = SCHED_INTERVAL_S;
            let off = o.start_s - d.1;
            worst = worst.max(off.abs());
            eprintln!(
                "{} {}: priority {}, start {:.0} s (derived {:.0} s, {:+.0} s), end {:.0} s",
                w.partition, o.name, o.priority, o.start_s, d.1, off, o.end_s
            );
            if off.abs() > allowed {
                problems.push(format!(
                    "{} {}: starts at {:.0} s, derived {:.0} s (allowed ±{allowed:.0} s)",
                    w.partition, o.name, o.start_s, d.1
                ));
            }
        }
    }
    eprintln!("largest start difference: {worst:.0} s");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The test's own checks on the order function: one pass groups by priority, later passes
/// follow time.
#[test]
fn order_groups_one_pass_by_priority_then_follows_time() {
    let starts = vec![
        ("late".to_string(), 120.0, 9000),
        ("low".to_string(), 61.0, 7000),
        ("high".to_string(), 62.0, 9000),
        ("first".to_string(), 0.0, 1),
    ];
    assert_eq!(order(&starts), ["first", "high", "low", "late"]);
}

/// The workload's jobs as `loam schedule` sees them: one tenant guaranteed the node group's 32
/// devices (4 nodes × 8, as the Slurm partition's 4 nodes), one hour of work per unit.
fn loam_starts(w: &Workload) -> BTreeMap<String, f64> {
    loam_starts_under(w, Rules::Kueue)
}

/// The plan of `job` as `loam schedule` and `loam emit` read it: the workload fixture's, with
/// a checkpoint written in the job's `write_s` when it has one (every hour: Slurm's rules
/// preempt nothing, so the interval plays no part).
fn loam_plan(job: &Job) -> Plan {
    let mut plan = schedule_workload::plan(&WorkJob {
        name: job.name.to_string(),
        tenant: "slurm".to_string(),
        priority: job.priority,
        nodes: u64::from(job.nodes),
        hours: job.units,
        checkpoint_h: None,
    });
    plan.checkpoint = job.write_s.map(|write_s| CheckpointIr {
        interval_min: 60.0,
        write_s,
        path: format!("/ckpt/slurm/{}", job.name),
    });
    plan
}

/// As [`loam_starts`], under `rules`.
fn loam_starts_under(w: &Workload, rules: Rules) -> BTreeMap<String, f64> {
    let plans: Vec<Plan> = w.jobs.iter().map(loam_plan).collect();
    let submits: Submits = w
        .jobs
        .iter()
        .map(|j| {
            (
                (format!("jobs/{}.loam", j.name), j.name.to_string()),
                j.submit_s as f64 / UNIT_S as f64,
            )
        })
        .collect();
    let options = Options {
        start: "2026-01-05".to_string(),
        horizon_h: 48.0,
        samples: 0,
        seed: DEFAULT_SEED,
        threads: 1,
        rules,
    };
    let catalogue = schedule_workload::catalogue(&[("slurm", 32, 0)]);
    let s = schedule(&plans, &submits, &catalogue, &options);
    s.jobs
        .iter()
        .map(|j| (j.job.clone(), j.start_h.unwrap_or(f64::INFINITY)))
        .collect()
}

/// `loam schedule`'s core on the same workloads (no cluster needed): the start order and the
/// start times Slurm's real runs gave above (and the hand derivations in `workloads`).
/// - a, b, d: the same order and the same starts, in hours for Slurm's minutes;
/// - c: not the same. loam's core applies Kueue's rules at every event (BestEffortFIFO without
///   reservations, and `withinClusterQueue: LowerPriority` preemption): c3 (low, 1 node) starts
///   at 0 on the free node, then c2 (normal, 4 nodes) preempts it at 1 and c3 starts again at 2.
///   Slurm's backfill reserves t=1 for c2 and keeps c3 waiting until 2. Under Slurm's rules
///   (`--rules slurm`, rule 16) loam matches it: the next test.
/// - e: not the same. Kueue's rules know no time limits and no reservations: e1 (high, 3
///   nodes) and e3 (low, 1 node, 1 hour) start at 0, e4 (low, 1 node) at 1 when e3 ends, and
///   e2 (normal, 4 nodes) preempts e4 at 2 when e1 ends.
#[test]
fn loam_schedule_starts_the_slurm_workloads_as_slurm_does_except_backfill_reservations() {
    let all = workloads();
    let mut agree = 0;
    for w in &all {
        let loam = loam_starts(w);
        let slurm: BTreeMap<String, f64> = w
            .expected_start_units
            .iter()
            .map(|(name, units)| (name.to_string(), *units))
            .collect();
        let priority = |name: &str| {
            w.jobs
                .iter()
                .find(|j| j.name == name)
                .map_or(0, |j| 10_000 - i64::from(nice(j.priority)))
        };
        // Hours for loam, units (minutes on the cluster) for Slurm: one scheduling pass each.
        let as_starts = |m: &BTreeMap<String, f64>| -> Vec<(String, f64, i64)> {
            m.iter()
                .map(|(n, h)| (n.clone(), h * 60.0, priority(n)))
                .collect()
        };
        if order(&as_starts(&loam)) == order(&as_starts(&slurm)) && loam == slurm {
            agree += 1;
        } else {
            let kueue: &[(&str, f64)] = match w.partition {
                // c1 0, c3 0 (then preempted), c2 1.
                "sched-c" => &[("c1", 0.0), ("c2", 1.0), ("c3", 0.0)],
                // e1 0, e3 0, e4 1 (then preempted), e2 2.
                "sched-e" => &[("e1", 0.0), ("e2", 2.0), ("e3", 0.0), ("e4", 1.0)],
                _ => panic!("{}: {loam:?} vs {slurm:?}", w.partition),
            };
            let kueue: BTreeMap<String, f64> =
                kueue.iter().map(|(n, h)| (n.to_string(), *h)).collect();
            assert_eq!(loam, kueue, "{}", w.partition);
        }
    }
    assert_eq!(agree, 3, "workloads a, b and d agree");
}

/// Workload e's time limits on the cluster are the ones `loam emit --target slurm` writes for
/// the jobs' plans (one loam hour per Slurm minute): the shared rule (`loam_ir::slurm_limit`)
/// gives each plan `limit_units` hours, as derived by hand in `workloads`.
#[test]
fn the_limits_of_workload_e_are_the_ones_loam_emit_writes() {
    let mut checked = 0;
    for job in workloads().iter().flat_map(|w| &w.jobs) {
        let plan = loam_plan(job);
        let Some(checkpoint) = &plan.checkpoint else {
            continue;
        };
        let train_time_h = plan.estimate.as_ref().unwrap().train_time_h;
        let limit = time_limit(train_time_h, checkpoint.write_s, &plan.groups, None);
        assert_eq!(limit.limit_min, job.limit_units * 60, "{}", job.name);
        assert!(job.limit_units as f64 > job.units, "{}", job.name);
        checked += 1;
    }
    assert_eq!(checked, 4, "e1 to e4");
}

/// Rule 16: under Slurm's rules (`loam schedule --rules slurm`: priority with backfill
/// reservations, no preemption) `loam schedule`'s core starts every workload as Slurm did, in
/// the same order and at the same times, c included: c2 (4 nodes) reserves hour 1, when c1
/// ends, and c3 (1 node, 2 hours), which fits the free node at 0 but would hold it past 1,
/// waits until c2 is done at 2. And e: the core plans with each job's time limit as Slurm
/// does, keeps e3 (1 hour, limit 5) waiting and backfills e4 (2.5 hours, limit 3).
#[test]
fn under_slurm_rules_loam_schedule_starts_every_slurm_workload_as_slurm_does() {
    for w in &workloads() {
        let loam = loam_starts_under(w, Rules::Slurm);
        let slurm: BTreeMap<String, f64> = w
            .expected_start_units
            .iter()
            .map(|(name, units)| (name.to_string(), *units))
            .collect();
        assert_eq!(loam, slurm, "{}", w.partition);
    }
}
