//! The Slurm batch scripts' time chunks, requeues and refusals, on the real slurmctld and slurmd
//! that `scripts/backend-tools.sh` starts (`tests/backends/slurm-cluster.sh`):
//! - a run longer than its partition's MaxTime (the test-only `lab-short`, two minutes) is asked
//!   to checkpoint before the time limit, requeues itself and resumes from the checkpoint;
//! - SIGTERM to the batch script (`scancel --batch --signal=TERM`) does the same;
//! - partitions have the catalogue's MaxTime and features: a chunk above MaxTime or a constraint
//!   on an undeclared feature is refused at submission;
//! - a plan over two sites is refused (L4011);
//! - every node of a four-node heterogeneous job gets torchrun's `PET_*`, its own `RANK_OFFSET`
//!   and the plan's CPUs (deploy review finding 3);
//! - a slurmctld that does not answer for a moment after a stop request does not end training
//!   (finding 18);
//! - one checkpoint grace on every backend, from the plan's step time (finding 11);
//! - Gaudi devices by the catalogue's GRES name (finding 27);
//! - a service asks for its CPUs and memory and requeues itself before the time limit (finding
//!   29 and the newcomer's section 5).
//!
//! The trainer is `tests/backends/ckpt_trainer.py`, which keeps the trainer contract and logs
//! `start N`, `request N` and `done N`. With `CI` or `LOAM_REQUIRE_TOOLS` set a missing cluster
//! fails the test; otherwise the test prints why it is skipped and passes.

use loam_backends::{Options, Target, render};
use loam_ir::plan::{PlanDocument, ScheduleIr};
use loam_tests::repo_root;
use loam_tests::tools::{have_slurm, nlp_tenancy, plan_fixture, run, text};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a job on the suite's Slurm cluster may take to start and reach what a test waits
/// for. Alone a job starts within seconds; under the whole suite on two cores (the schedule
/// test's second cluster runs twenty slurmd beside this one for about five minutes) a job once
/// stayed CONFIGURING for the whole of an earlier 60 s wait. Only a failing test waits this long.
const SLURM_WAIT: Duration = Duration::from_secs(300);

/// A fresh folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loam-slurm-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Options that run `ckpt_trainer.py STEPS STEP_S` with checkpoints under `dir/ckpt`, and `doc`
/// with its checkpoint path moved there.
fn runnable(doc: &mut PlanDocument, dir: &Path, steps: u32, step_s: f64) -> (Options, PathBuf) {
    let root = dir.join("ckpt");
    for p in &mut doc.plans {
        let ckpt = p.checkpoint.as_mut().unwrap();
        ckpt.path = ckpt.path.replacen("/ckpt/nlp", root.to_str().unwrap(), 1);
    }
    let mut options = loam_tests::shipped_options();
    loam_tests::tools::insert_nlp(&mut options, &nlp_tenancy(&root.to_string_lossy()));
    let trainer = repo_root().join("tests/backends/ckpt_trainer.py");
    options.trainer = vec![
        "python3".to_string(),
        trainer.to_string_lossy().into_owned(),
        steps.to_string(),
        step_s.to_string(),
    ];
    let ckpt = PathBuf::from(&doc.plans[0].checkpoint.as_ref().unwrap().path);
    (options, ckpt)
}

/// Writes the batch script of `doc` into `dir`.
fn script(doc: &PlanDocument, options: &Options, dir: &Path) -> PathBuf {
    let manifests = render(doc, Target::Slurm, options).unwrap_or_else(|d| panic!("{d:#?}"));
    let m = manifests
        .iter()
        .find(|m| m.path.ends_with("job.sbatch"))
        .unwrap();
    let path = dir.join("job.sbatch");
    std::fs::write(&path, &m.contents).unwrap();
    path
}

fn submit(script: &Path, cwd: &Path) -> String {
    let o = run("sbatch", &["--parsable", script.to_str().unwrap()], cwd);
    assert!(o.status.success(), "sbatch: {}", text(&o));
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_string()
}

/// `scontrol show job -o ID`, first line (the leader of a heterogeneous job).
fn show(id: &str) -> String {
    let o = Command::new("scontrol")
        .args(["show", "job", "-o", id])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .unwrap_or_default()
}

/// Waits until job `id` has ended (not a requeue); returns its last `scontrol show job` line.
fn wait_done(id: &str, cwd: &Path, limit: Duration) -> String {
    let started = Instant::now();
    loop {
        let line = show(id);
        let state = field(&line, "JobState=");
        if ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"].contains(&state) {
            return line;
        }
        if started.elapsed() > limit {
            let _ = run("scancel", &[id], cwd);
            panic!(
                "job {id} still {state} after {limit:?}:\n{line}\n{}",
                logs(cwd)
            );
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The job's output files, for failure messages.
fn logs(cwd: &Path) -> String {
    std::fs::read_dir(cwd)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "out"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect()
}

/// Checks the trainer's log of node 0: it starts at 0, every request at step k is followed by a
/// start at k (the next allocation resumed from the checkpoint), and it ends with `done STEPS`.
/// Returns the steps at which it was asked to checkpoint.
fn assert_resumed(ckpt: &Path, steps: u32, cwd: &Path) -> Vec<u32> {
    let log = std::fs::read_to_string(ckpt.join("node0.log")).unwrap_or_default();
    let lines: Vec<(&str, u32)> = log
        .lines()
        .map(|l| {
            let (what, n) = l.split_once(' ').unwrap();
            (what, n.parse().unwrap())
        })
        .collect();
    let context = || format!("trainer log:\n{log}\njob output:\n{}", logs(cwd));
    assert_eq!(lines.first(), Some(&("start", 0)), "{}", context());
    assert_eq!(lines.last(), Some(&("done", steps)), "{}", context());
    let mut requests = Vec::new();
    for pair in lines.windows(2) {
        if pair[0].0 == "request" {
            assert_eq!(pair[1], ("start", pair[0].1), "{}", context());
            requests.push(pair[0].1);
        }
    }
    assert!(
        !requests.is_empty(),
        "never asked to checkpoint: {}",
        context()
    );
    requests
}

#[test]
fn a_run_longer_than_max_time_requeues_at_the_time_limit_and_resumes() {
    if !have_slurm() {
        return;
    }
    let started = Instant::now();
    let dir = scratch("chunks");
    let mut doc = plan_fixture("small-1-node");
    {
        let p = &mut doc.plans[0];
        // Three minutes of training on a partition whose MaxTime is two: several allocations.
        p.estimate.as_mut().unwrap().train_time_h = 3.0 / 60.0;
        // The trainer below steps every second and its checkpoint is one small file.
        p.estimate.as_mut().unwrap().step_time_s = 1.0;
        p.checkpoint.as_mut().unwrap().write_s = 0.0;
        let g = &mut p.groups[0];
        g.slurm_partition = Some("lab-short".to_string());
        let node = g.node.as_mut().unwrap();
        node.slurm_max_time_min = Some(2);
        node.slurm_features = vec!["h100-sxm".to_string()];
    }
    // 35 one-second steps: more than an allocation trains before its SIGUSR1 (at most 30 s in).
    let (options, ckpt) = runnable(&mut doc, &dir, 35, 1.0);
    let script = script(&doc, &options, &dir);
    let body = std::fs::read_to_string(&script).unwrap();
    assert!(body.contains("#SBATCH --time=0-00:02:00"), "{body}");
    // The lead: the trainer's grace, one 1 s step + two 0 s writes + 60 s, and the 30 s stop
    // margin.
    assert!(body.contains("LOAM_GRACE_S=61\n"), "{body}");
    assert!(body.contains("#SBATCH --signal=B:USR1@91"), "{body}");
    assert!(body.contains("#SBATCH --constraint=h100-sxm"), "{body}");
    let id = submit(&script, &dir);
    let line = wait_done(&id, &dir, Duration::from_secs(420));
    assert_eq!(
        field(&line, "JobState="),
        "COMPLETED",
        "{line}\n{}",
        logs(&dir)
    );
    let restarts: u32 = field(&line, "Restarts=").parse().unwrap();
    let requests = assert_resumed(&ckpt, 35, &dir);
    assert!(restarts >= 1, "{line}");
    assert_eq!(requests.len(), restarts as usize, "{line}\n{}", logs(&dir));
    assert!(
        logs(&dir).contains("SIGUSR1 before the time limit"),
        "{}",
        logs(&dir)
    );
    #[allow(clippy::print_stderr)] // the timing is for the person running the tests
    {
        eprintln!(
            "time-limit requeue: {restarts} requeue(s) at steps {requests:?}, {:?}",
            started.elapsed()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_to_the_batch_script_checkpoints_and_requeues() {
    if !have_slurm() {
        return;
    }
    let started = Instant::now();
    let dir = scratch("sigterm");
    let mut doc = plan_fixture("small-1-node");
    let (options, ckpt) = runnable(&mut doc, &dir, 30, 0.5);
    let script = script(&doc, &options, &dir);
    let id = submit(&script, &dir);
    // Wait for a few steps, then signal the batch script alone, as preemption tooling does.
    let deadline = Instant::now() + SLURM_WAIT;
    while std::fs::read_to_string(ckpt.join("node0.ckpt"))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .is_none_or(|n| n < 4)
    {
        assert!(Instant::now() < deadline, "no progress: {}", logs(&dir));
        std::thread::sleep(Duration::from_millis(200));
    }
    let o = run("scancel", &["--batch", "--signal=TERM", &id], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let line = wait_done(&id, &dir, Duration::from_secs(240));
    assert_eq!(
        field(&line, "JobState="),
        "COMPLETED",
        "{line}\n{}",
        logs(&dir)
    );
    assert_eq!(field(&line, "Restarts="), "1", "{line}");
    let requests = assert_resumed(&ckpt, 30, &dir);
    assert_eq!(requests.len(), 1);
    assert!(requests[0] >= 4, "{requests:?}");
    #[allow(clippy::print_stderr)] // the timing is for the person running the tests
    {
        eprintln!(
            "SIGTERM requeue at step {}: {:?}",
            requests[0],
            started.elapsed()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A folder of stand-ins for `scontrol` and `squeue` that fail the way a restarting slurmctld
/// does: `squeue` always, `scontrol show job` the first `failures` times (counted in
/// `show-job-failures`), every other `scontrol` call goes to the real one.
fn flaky_slurm_commands(dir: &Path, failures: u32) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let count = dir.join("show-job-failures");
    let scontrol = format!(
        "#!/bin/bash\n\
         if [[ $1 == show && $2 == job ]]; then\n\
         n=$(cat '{count}' 2>/dev/null || echo 0)\n\
         if ((n < {failures})); then echo $((n + 1)) >'{count}'; \
         echo 'slurm_load_jobs error: Socket timed out on send/recv operation' >&2; exit 1; fi\n\
         fi\n\
         exec /usr/bin/scontrol \"$@\"\n",
        count = count.display()
    );
    let squeue =
        "#!/bin/sh\necho 'squeue: error: Socket timed out on send/recv operation' >&2\nexit 1\n";
    for (name, body) in [("scontrol", scontrol.as_str()), ("squeue", squeue)] {
        let path = bin.join(name);
        std::fs::write(&path, body).unwrap();
        let o = run("chmod", &["+x", path.to_str().unwrap()], dir);
        assert!(o.status.success(), "{}", text(&o));
    }
    bin
}

/// Deploy review finding 18: the batch script reads its own state after a stop request before it
/// requeues itself; a slurmctld that does not answer for a moment (here: `squeue` fails every
/// time and `scontrol show job` three times: once for the SIGTERM's preemption check, which
/// then counts the requeue as it would without one, and twice for the state) must not end
/// training. The script tries the state three times, 5 s apart, so the third answers RUNNING and
/// the job requeues and finishes.
/// Before, `squeue`'s failure read as "the job is gone" and the script exited 75 unrequeued.
#[test]
fn a_transient_slurm_failure_after_a_stop_request_still_requeues() {
    if !have_slurm() {
        return;
    }
    let started = Instant::now();
    let dir = scratch("flaky");
    let mut doc = plan_fixture("small-1-node");
    let (options, ckpt) = runnable(&mut doc, &dir, 20, 0.5);
    let script = script(&doc, &options, &dir);
    let bin = flaky_slurm_commands(&dir, 3);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("sbatch")
        .args(["--parsable", script.to_str().unwrap()])
        .current_dir(&dir)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(o.status.success(), "sbatch: {}", text(&o));
    let id = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let deadline = Instant::now() + SLURM_WAIT;
    while std::fs::read_to_string(ckpt.join("node0.ckpt"))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .is_none_or(|n| n < 2)
    {
        assert!(Instant::now() < deadline, "no progress: {}", logs(&dir));
        std::thread::sleep(Duration::from_millis(200));
    }
    let o = run("scancel", &["--batch", "--signal=TERM", &id], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let line = wait_done(&id, &dir, Duration::from_secs(240));
    let out = logs(&dir);
    assert_eq!(field(&line, "JobState="), "COMPLETED", "{line}\n{out}");
    assert_eq!(field(&line, "Restarts="), "1", "{line}\n{out}");
    assert_resumed(&ckpt, 20, &dir);
    assert!(
        out.contains("could not read the job's state (try 2 of 3)"),
        "{out}"
    );
    #[allow(clippy::print_stderr)] // the timing is for the person running the tests
    {
        eprintln!("requeue through a flaky slurmctld: {:?}", started.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn partitions_refuse_chunks_above_max_time_and_undeclared_features() {
    if !have_slurm() {
        return;
    }
    let dir = scratch("limits");
    let mut doc = plan_fixture("llama3-70b-2048-h100");
    let (options, _) = runnable(&mut doc, &dir, 1, 0.0);
    let script = script(&doc, &options, &dir);
    let body = std::fs::read_to_string(&script).unwrap();
    let o = run("sbatch", &["--test-only", script.to_str().unwrap()], &dir);
    assert!(o.status.success(), "{}", text(&o));
    // The plan's chunk is the MaxTime it carries (2 days); past the partition's 7 days is
    // refused.
    assert!(body.contains("#SBATCH --time=2-00:00:00"), "{body}");
    for (from, to) in [
        ("--time=2-00:00:00", "--time=8-00:00:00"),
        ("--constraint=h100-sxm", "--constraint=sh-h100-a"),
    ] {
        let bad = dir.join("bad.sbatch");
        std::fs::write(&bad, body.replace(from, to)).unwrap();
        let o = run("sbatch", &["--test-only", bad.to_str().unwrap()], &dir);
        assert!(!o.status.success(), "{to} accepted: {}", text(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plan_over_two_sites_is_refused() {
    let doc = plan_fixture("hetero-h100-ascend");
    let errors = render(&doc, Target::Slurm, &loam_tests::shipped_options()).unwrap_err();
    let codes: Vec<&str> = errors.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["L4011"], "{errors:#?}");
    assert!(
        errors[0].message.contains("`guiyang` and `shanghai`"),
        "{}",
        errors[0].message
    );
}

/// Gives `doc`'s plan a cheap-hours window of `hours` h from `open`:00 in `zone`.
fn with_window(doc: &mut PlanDocument, open: u64, hours: u64, zone: Option<&str>) {
    doc.plans[0].schedule = Some(ScheduleIr {
        start_hour: open,
        hours_per_day: hours,
        power_price_per_kwh: 0.4,
        saving: 1.0,
        train_time_h: 24.0,
        time_zone: zone.map(str::to_string),
    });
}

/// The window part of a batch script, which runs on its own (settings and functions only).
fn window_section(body: &str) -> &str {
    let start = body.find("# >>> The cheap-hours window").unwrap();
    let end = body.find("# <<< The cheap-hours window").unwrap();
    &body[start..end]
}

/// Runs `window_wait_until EXTRA_S` of `section` at `now` (seconds since the epoch): whether the
/// window is open, seconds left in it, and the opening to wait for (`None`: start now).
fn decide(section: &str, now: u64, extra_s: u64) -> (u32, u64, Option<u64>) {
    let o = Command::new("bash")
        .args([
            "-c",
            &format!(
                "set -euo pipefail\n{section}\nwindow_wait_until {extra_s}\n\
                 echo \"$window_open $window_left_s ${{wait_until:-none}}\""
            ),
        ])
        .env("LOAM_TEST_NOW", now.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let words: Vec<&str> = out.split_whitespace().collect();
    (
        words[0].parse().unwrap(),
        words[1].parse().unwrap(),
        words[2].parse().ok(),
    )
}

/// The script's window logic with the clock set (`LOAM_TEST_NOW`): 22:00 for 6 h in Shanghai
/// (UTC+8), a window across midnight, from inside and outside, and the next opening.
#[test]
fn the_window_logic_decides_inside_and_outside_and_finds_the_next_opening() {
    let started = Instant::now();
    let mut doc = plan_fixture("small-1-node");
    doc.plans[0].estimate.as_mut().unwrap().train_time_h = 30.0;
    with_window(&mut doc, 22, 6, Some("Asia/Shanghai"));
    let manifests = render(&doc, Target::Slurm, &loam_tests::shipped_options()).unwrap();
    let body = &manifests[0].contents;
    assert!(body.contains("#SBATCH --begin=22:00:00"), "{body}");
    // The window is shorter than MaxTime and the run: each allocation is at most 6 h, and
    // 30 h of training take six nights.
    assert!(body.contains("#SBATCH --time=0-06:00:00"), "{body}");
    assert!(body.contains("about 6 allocation(s)"), "{body}");
    assert!(body.contains("window_tz='Asia/Shanghai'"), "{body}");
    // The lead: one 0.5 s step and two 2 s writes, rounded up to 5 s, a minute, and the 30 s stop
    // margin.
    assert!(body.contains("#SBATCH --signal=B:USR1@95"), "{body}");
    let section = window_section(body);
    // 2026-01-15 22:00 in Shanghai, 14:00 UTC.
    let opens: u64 = 1_768_485_600;
    let next = opens + 86_400;
    let min = 60;
    // Just opened: six hours to go.
    assert_eq!(decide(section, opens, 0), (1, 6 * 3600, None));
    // 22:30, and 03:30 after midnight: still open.
    assert_eq!(decide(section, opens + 30 * min, 0), (1, 330 * min, None));
    assert_eq!(decide(section, opens + 330 * min, 0), (1, 30 * min, None));
    // 03:52: eight minutes left, enough to start (the 95 s lead and five minutes), not enough
    // for a requeued allocation, which starts some 180 s later: it waits for 22:00.
    assert_eq!(decide(section, opens + 352 * min, 0), (1, 8 * min, None));
    assert_eq!(
        decide(section, opens + 352 * min, 180),
        (1, 8 * min, Some(next))
    );
    // 03:57: too little left to start.
    assert_eq!(
        decide(section, opens + 357 * min, 0),
        (1, 3 * min, Some(next))
    );
    // 04:00 it has closed, 12:00 it is closed, 21:59 it is about to open.
    assert_eq!(decide(section, opens + 6 * 3600, 0), (0, 0, Some(next)));
    assert_eq!(decide(section, opens + 14 * 3600, 0), (0, 0, Some(next)));
    assert_eq!(decide(section, opens - min, 0), (0, 0, Some(opens)));
    // scontrol gets the opening in the node's own zone.
    let o = Command::new("bash")
        .args(["-c", &format!("{section}\nslurm_time {opens}")])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "2026-01-15T14:00:00"
    );
    #[allow(clippy::print_stderr)] // the timing is for the person running the tests
    {
        eprintln!("window decisions: {:?}", started.elapsed());
    }
}

/// This machine's hour (slurmctld's clock and zone here).
fn local_hour() -> u64 {
    let o = Command::new("date").arg("+%H").output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

/// Waits until `check` accepts job `id`'s `scontrol show job` line; returns it.
fn wait_show(id: &str, cwd: &Path, what: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + SLURM_WAIT;
    loop {
        let line = show(id);
        if check(&line) {
            return line;
        }
        if Instant::now() > deadline {
            let _ = run("scancel", &[id], cwd);
            panic!("job {id}: {what} never happened:\n{line}\n{}", logs(cwd));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A window that opens two hours from now: `sbatch --test-only` accepts the script, the job's
/// begin time is the opening, and a job started now anyway (`--begin=now`) requeues itself with
/// its start time at the opening.
#[test]
fn a_window_job_begins_at_the_next_opening_and_requeues_itself_into_it() {
    if !have_slurm() {
        return;
    }
    let started = Instant::now();
    let dir = scratch("window");
    let mut doc = plan_fixture("small-1-node");
    doc.plans[0].estimate.as_mut().unwrap().train_time_h = 3.0;
    let open = (local_hour() + 2) % 24;
    // No zone: the nodes' local time, which is the controller's here.
    with_window(&mut doc, open, 1, None);
    let (options, _) = runnable(&mut doc, &dir, 1, 0.0);
    let script = script(&doc, &options, &dir);
    let body = std::fs::read_to_string(&script).unwrap();
    let begin = format!("{open:02}:00:00");
    assert!(body.contains(&format!("#SBATCH --begin={begin}")), "{body}");
    assert!(body.contains("#SBATCH --time=0-01:00:00"), "{body}");
    let path = script.to_str().unwrap();
    let o = run("sbatch", &["--test-only", path], &dir);
    assert!(o.status.success(), "{}", text(&o));

    let o = run("sbatch", &["--parsable", "--hold", path], &dir);
    assert!(o.status.success(), "sbatch: {}", text(&o));
    let held = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let line = show(&held);
    let _ = run("scancel", &[&held], &dir);
    for key in ["EligibleTime=", "StartTime="] {
        assert!(field(&line, key).ends_with(&format!("T{begin}")), "{line}");
    }

    // Started outside the window: the script requeues itself to the opening.
    let o = run("sbatch", &["--parsable", "--begin=now", path], &dir);
    assert!(o.status.success(), "sbatch: {}", text(&o));
    let id = String::from_utf8_lossy(&o.stdout).trim().to_string();
    // The requeued job's reason is `None` until the scheduler's next pass (every 2 s here)
    // evaluates it: wait for that pass, then say which reason it gave.
    let line = wait_show(&id, &dir, "the requeue to the opening", |line| {
        field(line, "Restarts=") == "1"
            && field(line, "JobState=") == "PENDING"
            && field(line, "EligibleTime=").ends_with(&format!("T{begin}"))
            && field(line, "Reason=") != "None"
    });
    let _ = run("scancel", &[&id], &dir);
    assert_eq!(field(&line, "Reason="), "BeginTime", "{line}");
    assert!(
        logs(&dir).contains("the cheap-hours window is closed"),
        "{}",
        logs(&dir)
    );
    #[allow(clippy::print_stderr)] // the timing is for the person running the tests
    {
        eprintln!("window begin and requeue: {:?}", started.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `NAME=value` lines of `ckpt_trainer.py`'s `node<rank>.env`.
fn node_env(ckpt: &Path, rank: u64) -> std::collections::BTreeMap<String, String> {
    std::fs::read_to_string(ckpt.join(format!("node{rank}.env")))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A heterogeneous job on the live lab partitions: component 0 is 2 nodes × 8 of `lab-h100`,
/// component 1 is 2 nodes × 8 of `lab-910b` (a pipeline plan, stage 0 on the H100s). Every
/// node's trainer sees torchrun's `PET_*` equal to the plain names and a `RANK_OFFSET` of its
/// own (deploy review finding 3: before, `RANK_OFFSET` was the component's first rank on every
/// node of it, and no `PET_*` was set, so torchrun started a one-node world per node).
#[test]
fn every_node_of_a_heterogeneous_job_gets_torchruns_environment_and_ranks_of_its_own() {
    if !have_slurm() {
        return;
    }
    let started = Instant::now();
    let dir = scratch("torchrun-env");
    let mut doc = plan_fixture("hetero-h100-ascend");
    {
        let p = &mut doc.plans[0];
        p.layout.as_mut().unwrap().data = 2;
        for (g, (partition, feature)) in p
            .groups
            .iter_mut()
            .zip([("lab-h100", "h100-sxm"), ("lab-910b", "ascend910b")])
        {
            g.site = "alpha".to_string();
            g.nodes = 2;
            g.devices = 16;
            g.block = None;
            g.slurm_partition = Some(partition.to_string());
            g.node.as_mut().unwrap().slurm_features = vec![feature.to_string()];
        }
    }
    let (options, ckpt) = runnable(&mut doc, &dir, 2, 0.2);
    let script = script(&doc, &options, &dir);
    let id = submit(&script, &dir);
    let line = wait_done(&id, &dir, Duration::from_secs(180));
    assert_eq!(
        field(&line, "JobState="),
        "COMPLETED",
        "{line}\n{}",
        logs(&dir)
    );
    // By hand: 4 nodes of 8 devices, world 32; node ranks run on across the components, and a
    // node's first rank is 8 × its node rank here (both components have 8 per node): 0, 8 on
    // the H100 nodes, 16, 24 on the Ascend nodes.
    let envs: Vec<_> = (0..4).map(|r| node_env(&ckpt, r)).collect();
    let master = envs[0].get("MASTER_ADDR").cloned().unwrap_or_default();
    assert!(!master.is_empty(), "{envs:#?}\n{}", logs(&dir));
    for (rank, env) in envs.iter().enumerate() {
        let get = |k: &str| env.get(k).map(String::as_str).unwrap_or_default();
        let context = || format!("node {rank}: {env:#?}\n{}", logs(&dir));
        assert_eq!(get("NODE_RANK"), rank.to_string(), "{}", context());
        assert_eq!(get("RANK_OFFSET"), (8 * rank).to_string(), "{}", context());
        assert_eq!(get("WORLD_SIZE"), "32", "{}", context());
        // The plan's CPUs of the node reach the step: 96 on the H100 nodes, 160 on the Ascend
        // ones (the fixture's `node.cpus`); without `--cpus-per-task` on srun the variable is
        // unset and each task gets one CPU. (In a heterogeneous step Slurm 22.05 exports one
        // component's value to every task, so the test accepts either.)
        assert!(
            ["96", "160"].contains(&get("SLURM_CPUS_PER_TASK")),
            "{}",
            context()
        );
        for (pet, value) in [
            ("PET_NNODES", "4"),
            ("PET_NODE_RANK", &rank.to_string()),
            ("PET_MASTER_ADDR", &master),
            ("PET_MASTER_PORT", "29500"),
            ("PET_NPROC_PER_NODE", "8"),
        ] {
            assert_eq!(get(pet), value, "{pet}: {}", context());
        }
    }
    let offsets: std::collections::BTreeSet<&str> = envs
        .iter()
        .filter_map(|e| e.get("RANK_OFFSET").map(String::as_str))
        .collect();
    assert_eq!(offsets.len(), 4, "ranks overlap: {envs:#?}");
    #[allow(clippy::print_stderr)] // the timing is for the person running the tests
    {
        eprintln!("torchrun environment on 4 nodes: {:?}", started.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Deploy review finding 11: one grace on every backend, from the plan's step time. By hand for
/// `llama3-70b-2048-h100` (9.1 s steps, 41 s checkpoint writes): ceil(9.1 + 2 × 41) = 92, plus a
/// minute, 152 s for the trainer everywhere; the hard limits add 30 s: Kubernetes'
/// `terminationGracePeriodSeconds` and Slurm's `--signal` lead are 182. Before, Kubernetes gave
/// the trainer 2 × 41 + 30 = 112 s and Slurm and bare metal 142 s, and no step in either.
#[test]
fn every_backend_gives_the_trainer_the_same_grace_of_a_step_two_writes_and_a_minute() {
    let doc = plan_fixture("llama3-70b-2048-h100");
    let options = loam_tests::shipped_options();
    let body = |target: Target, file: &str| -> String {
        let manifests = render(&doc, target, &options).unwrap_or_else(|d| panic!("{d:#?}"));
        manifests
            .iter()
            .filter(|m| m.path.ends_with(file))
            .map(|m| m.contents.clone())
            .collect()
    };
    let slurm = body(Target::Slurm, "job.sbatch");
    assert!(slurm.contains("\nLOAM_GRACE_S=152\n"), "{slurm}");
    assert!(slurm.contains("#SBATCH --signal=B:USR1@182\n"), "{slurm}");
    let bare = body(Target::Baremetal, "launch.sh");
    assert!(bare.contains("GRACE_S=${GRACE_S:-152}\n"), "{bare}");
    let pods = body(Target::Kubernetes, ".yaml");
    let lines: Vec<&str> = pods.lines().map(str::trim).collect();
    let grace_values: std::collections::BTreeSet<&str> = lines
        .windows(2)
        .filter(|w| w[0] == "- name: LOAM_GRACE_S")
        .map(|w| w[1])
        .collect();
    assert_eq!(
        grace_values,
        std::collections::BTreeSet::from(["value: \"152\""]),
        "{pods}"
    );
    assert!(
        pods.contains("terminationGracePeriodSeconds: 182"),
        "{pods}"
    );
}

/// Deploy review finding 27: a Gaudi group asks for its devices by the GRES name the catalogue
/// gives the Intel vendor (`slurm_gres`), spelled out as `--gres=<name>:8`, not with
/// `--gpus-per-node`, which means the `gpu` GRES whatever the catalogue says. The shipped
/// catalogue names them `gpu` (the test cluster's `fr-gaudi2` does too, and accepts the script);
/// a site whose gres.conf names them `hpu` changes the vendor file and gets `--gres=hpu:8`,
/// which this cluster, where they are `gpu`, refuses.
#[test]
fn gaudi_devices_are_asked_for_by_the_catalogues_gres_name() {
    let dir = scratch("gaudi");
    let mut doc = plan_fixture("two-node-lab");
    {
        let g = &mut doc.plans[0].groups[0];
        g.slurm_partition = Some("fr-gaudi2".to_string());
        let node = g.node.as_mut().unwrap();
        node.vendor = "intel".to_string();
        node.slurm_features = vec!["gaudi2".to_string()];
    }
    let (shipped, _) = runnable(&mut doc, &dir, 1, 0.0);
    let with_gres = |name: &str| -> String {
        let mut by_id = std::collections::BTreeMap::new();
        for id in ["nvidia", "amd", "huawei", "hygon", "intel"] {
            if let Some(v) = shipped.vendors.get(id) {
                by_id.insert(id.to_string(), v.clone());
            }
        }
        by_id.get_mut("intel").unwrap().slurm_gres = name.to_string();
        let mut options = shipped.clone();
        options.vendors = loam_ir::cluster::vendor::Vendors::new(by_id, Default::default());
        let path = script(&doc, &options, &dir);
        std::fs::read_to_string(path).unwrap()
    };
    let gpu = with_gres("gpu");
    assert!(gpu.contains("#SBATCH --gres=gpu:8\n"), "{gpu}");
    assert!(!gpu.contains("--gpus-per-node"), "{gpu}");
    let hpu = with_gres("hpu");
    assert!(hpu.contains("#SBATCH --gres=hpu:8\n"), "{hpu}");
    if have_slurm() {
        for (body, accepted) in [(&gpu, true), (&hpu, false)] {
            let path = dir.join("gaudi.sbatch");
            std::fs::write(&path, body).unwrap();
            let o = run("sbatch", &["--test-only", path.to_str().unwrap()], &dir);
            assert_eq!(o.status.success(), accepted, "{}", text(&o));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes a stand-in `vllm` (the engine's command) that serves nothing and waits, into `dir/bin`.
fn fake_engine(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = bin.join("vllm");
    std::fs::write(&path, "#!/bin/sh\nexec sleep 600\n").unwrap();
    let o = run("chmod", &["+x", path.to_str().unwrap()], dir);
    assert!(o.status.success(), "{}", text(&o));
    bin
}

/// The newcomer's finding (section 5, item 4) and deploy review finding 29, on the real cluster:
/// a service's batch script asks for the plan's CPUs and memory of one node of a replica, and a
/// service, which runs until cancelled, requeues itself before the time limit instead of ending
/// there. The plan's `node` of a role is what one node of a replica requests (the planner has
/// already taken the role's share of the node): for `qwen-chat` of the services fixture 96 CPUs
/// and 1,600 GiB = 1,638,400 MiB, which the script must ask for as they are. On the
/// two-minute `lab-short` with one replica, the 60 s lead's SIGUSR1 comes within the first
/// two minutes and the job is requeued (Restarts=1) with the engine still serving.
#[test]
fn a_slurm_service_gets_its_cpus_and_memory_and_requeues_before_the_time_limit() {
    let dir = scratch("service");
    let mut doc: PlanDocument = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("tests/data/services-plan.json")).unwrap(),
    )
    .unwrap();
    doc.plans.clear();
    doc.services.truncate(1);
    // One replica at every hour: the lab partition has two nodes.
    doc.services[0].autoscaling = None;
    {
        let role = &mut doc.services[0].roles[0];
        role.replicas = 1;
        role.group.slurm_partition = Some("lab-short".to_string());
        let node = role.group.node.as_mut().unwrap();
        node.slurm_features = vec!["h100-sxm".to_string()];
        node.slurm_max_time_min = Some(2);
    }
    let mut options = loam_tests::shipped_options();
    loam_tests::tools::insert_nlp(&mut options, &nlp_tenancy("/ckpt/nlp"));
    let manifests = render(&doc, Target::Slurm, &options).unwrap_or_else(|d| panic!("{d:#?}"));
    let body = &manifests
        .iter()
        .find(|m| m.path.ends_with("serve.sbatch"))
        .unwrap_or_else(|| panic!("{manifests:#?}"))
        .contents;
    assert!(body.contains("#SBATCH --cpus-per-task=96\n"), "{body}");
    assert!(body.contains("#SBATCH --mem=1638400M\n"), "{body}");
    // srun does not inherit sbatch's `--cpus-per-task` since Slurm 22.05 (srun(1)).
    assert!(body.contains(" --cpus-per-task=96 "), "{body}");
    assert!(body.contains("#SBATCH --requeue\n"), "{body}");
    assert!(body.contains("#SBATCH --signal=B:USR1@60\n"), "{body}");
    if !have_slurm() {
        return;
    }
    let script = dir.join("serve.sbatch");
    std::fs::write(&script, body).unwrap();
    let o = run("sbatch", &["--test-only", script.to_str().unwrap()], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let bin = fake_engine(&dir);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("sbatch")
        .args(["--parsable", script.to_str().unwrap()])
        .current_dir(&dir)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(o.status.success(), "sbatch: {}", text(&o));
    let id = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let deadline = Instant::now() + Duration::from_secs(240);
    let line = loop {
        let line = show(&id);
        if field(&line, "Restarts=") == "1" {
            break line;
        }
        if Instant::now() > deadline || field(&line, "JobState=") == "TIMEOUT" {
            let _ = run("scancel", &[&id], &dir);
            panic!("never requeued:\n{line}\n{}", logs(&dir));
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    let _ = run("scancel", &[&id], &dir);
    assert!(
        logs(&dir).contains("the time limit is near"),
        "{line}\n{}",
        logs(&dir)
    );
    // The newcomer's item 9: clients are told where the service serves. Its one replica runs on
    // one of lab-short's two nodes, vLLM on port 8000: `loam-qwen-chat.endpoints` in the
    // submission folder holds that URL, and the log names it.
    let endpoints =
        std::fs::read_to_string(dir.join("loam-qwen-chat.endpoints")).unwrap_or_default();
    assert!(
        ["http://lab-short-1:8000\n", "http://lab-short-2:8000\n"].contains(&endpoints.as_str()),
        "{endpoints:?}\n{}",
        logs(&dir)
    );
    assert!(
        logs(&dir).contains(&format!("replica 1 of 1 serves at {}", endpoints.trim())),
        "{}",
        logs(&dir)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The services fixture's disaggregated `deepseek-pd` served by vLLM instead of SGLang: prefill
/// and decode engines that hand each other their own address through NIXL.
fn disaggregated_vllm() -> PlanDocument {
    let mut doc: PlanDocument = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("tests/data/services-plan.json")).unwrap(),
    )
    .unwrap();
    doc.plans.clear();
    doc.services.retain(|s| s.service == "deepseek-pd");
    doc.services[0].engine = loam_ir::types::Engine::Vllm;
    doc
}

/// The value of `NAME='…'` (the shell's single quotes, as the `sh` filter writes them) in a
/// generated script.
fn quoted_assignment(script: &str, name: &str) -> String {
    let start = script
        .find(&format!("\n{name}='"))
        .unwrap_or_else(|| panic!("no {name} in\n{script}"))
        + name.len()
        + 3;
    let rest = &script[start..];
    let end = rest.find("'\n").unwrap();
    rest[..end].replace(r"'\''", "'")
}

/// Deploy review finding 4 on Slurm: every task of a disaggregated vLLM service exports
/// `VLLM_NIXL_SIDE_CHANNEL_HOST` as its node's address, or NIXL hands the decoder `localhost`
/// (its default, vllm-project/vllm `vllm/envs.py` and `docs/features/nixl_connector_usage.md`)
/// and every transfer between nodes fails. The node script runs here under `sh` as srun runs it,
/// with a stand-in scontrol that knows node `gpu-7` at 10.1.2.7 (the `NodeAddr` of `scontrol
/// show node -o`) and `gpu-8` at `localhost`, and the engine replaced by `printenv`: the
/// address printed is the node's as an IPv4 address (vLLM binds its listener to it: 127.0.0.1
/// for `localhost`), and the node's Slurm name when scontrol does not answer. SGLang, which has
/// no NIXL side channel, gets no such variable.
#[test]
fn a_disaggregated_vllm_task_advertises_its_nodes_address_to_nixl() {
    let dir = scratch("nixl");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let scontrol = bin.join("scontrol");
    std::fs::write(
        &scontrol,
        "#!/bin/sh\ncase $3 in\n  gpu-7) echo 'NodeName=gpu-7 Arch=x86_64 CoresPerSocket=1 NodeAddr=10.1.2.7 NodeHostName=gpu-7 Version=23.11' ;;\n  gpu-8) echo 'NodeName=gpu-8 Arch=x86_64 NodeAddr=localhost NodeHostName=gpu-8' ;;\n  *) exit 1 ;;\nesac\n",
    )
    .unwrap();
    let o = run("chmod", &["+x", scontrol.to_str().unwrap()], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut options = loam_tests::shipped_options();
    loam_tests::tools::insert_nlp(&mut options, &nlp_tenancy("/ckpt/nlp"));
    let manifests =
        render(&disaggregated_vllm(), Target::Slurm, &options).unwrap_or_else(|d| panic!("{d:#?}"));
    let advertised = |role: &str, node: &str| {
        let script = &manifests
            .iter()
            .find(|m| m.path.ends_with(&format!("{role}.sbatch")))
            .unwrap_or_else(|| panic!("{manifests:#?}"))
            .contents;
        let node_script = quoted_assignment(script, "NODE_SCRIPT");
        let o = Command::new("sh")
            .args(["-c", &node_script, "loam-serve", "printenv"])
            .arg("VLLM_NIXL_SIDE_CHANNEL_HOST")
            .env("PATH", &path)
            .env("SLURMD_NODENAME", node)
            .output()
            .unwrap();
        assert!(o.status.success(), "{role}: {}\n{node_script}", text(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    for role in ["prefill", "decode"] {
        assert_eq!(advertised(role, "gpu-7"), "10.1.2.7", "{role}");
        assert_eq!(advertised(role, "gpu-8"), "127.0.0.1", "{role}");
        assert_eq!(advertised(role, "gpu-9"), "gpu-9", "{role}");
    }
    let mut sglang = disaggregated_vllm();
    sglang.services[0].engine = loam_ir::types::Engine::Sglang;
    let manifests = render(&sglang, Target::Slurm, &options).unwrap_or_else(|d| panic!("{d:#?}"));
    assert!(
        manifests
            .iter()
            .all(|m| !m.contents.contains("VLLM_NIXL_SIDE_CHANNEL_HOST")),
        "SGLang has no NIXL side channel"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Deploy review finding 27 for services: a service's batch script asks for its devices by the
/// catalogue's GRES name as training jobs do (`--gres=<slurm_gres>:N`), never with
/// `--gpus-per-node`, which asks for the `gpu` GRES whatever the vendor file says. `qwen-chat`
/// of the services fixture runs tp4 on H20 nodes of 8: 4 devices per node, so `--gres=gpu:4`;
/// with the NVIDIA vendor's GRES renamed `hpu` (a site whose gres.conf names its devices so)
/// the request follows: `--gres=hpu:4`.
#[test]
fn a_slurm_service_asks_for_its_devices_by_the_catalogues_gres() {
    let mut doc: PlanDocument = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("tests/data/services-plan.json")).unwrap(),
    )
    .unwrap();
    doc.plans.clear();
    doc.services.retain(|s| s.service == "qwen-chat");
    let mut shipped = loam_tests::shipped_options();
    loam_tests::tools::insert_nlp(&mut shipped, &nlp_tenancy("/ckpt/nlp"));
    let with_gres = |name: &str| -> String {
        let mut by_id = std::collections::BTreeMap::new();
        for id in ["nvidia", "amd", "huawei", "hygon", "intel"] {
            if let Some(v) = shipped.vendors.get(id) {
                by_id.insert(id.to_string(), v.clone());
            }
        }
        by_id.get_mut("nvidia").unwrap().slurm_gres = name.to_string();
        let mut options = shipped.clone();
        options.vendors = loam_ir::cluster::vendor::Vendors::new(by_id, Default::default());
        let manifests = render(&doc, Target::Slurm, &options).unwrap_or_else(|d| panic!("{d:#?}"));
        manifests
            .iter()
            .find(|m| m.path.ends_with("serve.sbatch"))
            .unwrap_or_else(|| panic!("{manifests:#?}"))
            .contents
            .clone()
    };
    let gpu = with_gres("gpu");
    assert!(gpu.contains("#SBATCH --gres=gpu:4\n"), "{gpu}");
    assert!(!gpu.contains("--gpus-per-node"), "{gpu}");
    let hpu = with_gres("hpu");
    assert!(hpu.contains("#SBATCH --gres=hpu:4\n"), "{hpu}");
}

/// Deploy review finding 12 on Slurm: Slurm's own preemption requeues (PreemptMode=REQUEUE)
/// spend none of the restart budget. The batch script's preemption part runs here alone, as
/// four allocations of job 42 would run it (`SLURM_RESTART_COUNT` 0 to 3), with a stand-in
/// scontrol answering what slurmctld says at each allocation's SIGTERM:
/// - allocation 1 (count 0): `PreemptTime` 10:05 after its `StartTime` 10:00, preempted: 0
///   counted requeues before it, and it is noted;
/// - allocation 2 (count 1): 1 - 1 preemption = 0 counted; its SIGTERM comes with no
///   `PreemptTime` (an `scancel --signal`, a node's failure): not a preemption;
/// - allocation 3 (count 2): 2 - 1 = 1 counted; the job is `PREEMPTED` at its SIGTERM: noted;
/// - allocation 4 (count 3): 3 - 2 = 1 counted; a `PreemptTime` of an earlier allocation (09:00,
///   before this one's start at 11:00) is not this allocation's preemption.
#[test]
fn slurm_preemption_requeues_spend_none_of_the_restart_budget() {
    let dir = scratch("preempt");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let scontrol = bin.join("scontrol");
    std::fs::write(&scontrol, "#!/bin/sh\necho \"$FAKE_JOB_LINE\"\n").unwrap();
    let o = run("chmod", &["+x", scontrol.to_str().unwrap()], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let manifests = render(
        &plan_fixture("small-1-node"),
        Target::Slurm,
        &loam_tests::shipped_options(),
    )
    .unwrap_or_else(|d| panic!("{d:#?}"));
    let body = &manifests
        .iter()
        .find(|m| m.path.ends_with("job.sbatch"))
        .unwrap()
        .contents;
    let start = body
        .find("# >>> Preemptions")
        .unwrap_or_else(|| panic!("no preemption part in\n{body}"));
    let end = body.find("# <<< Preemptions").unwrap();
    let section = &body[start..end];
    let ckpt = dir.join("ckpt");
    std::fs::create_dir_all(&ckpt).unwrap();
    let allocation = |count: u32, line: &str| -> String {
        let o = Command::new("bash")
            .args([
                "-c",
                &format!(
                    "set -euo pipefail\n{section}\nnote_preemption\n\
                     echo \"$restarts $preemptions ${{preempted:-no}}\""
                ),
            ])
            .env("PATH", &path)
            .env("LOAM_CHECKPOINT_DIR", &ckpt)
            .env("SLURM_JOB_ID", "42")
            .env("SLURM_RESTART_COUNT", count.to_string())
            .env("FAKE_JOB_LINE", line)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let job = |state: &str, start: &str, preempt: &str| {
        format!(
            "JobId=42 JobName=x JobState={state} Reason=None Restarts=0 StartTime={start} EndTime=Unknown PreemptEligibleTime={start} PreemptTime={preempt} Partition=lab"
        )
    };
    assert_eq!(
        allocation(
            0,
            &job("RUNNING", "2026-12-03T10:00:00", "2026-12-03T10:05:00")
        ),
        "0 0 1"
    );
    assert_eq!(
        allocation(1, &job("RUNNING", "2026-12-03T10:20:00", "None")),
        "0 1 no"
    );
    assert_eq!(
        allocation(2, &job("PREEMPTED", "2026-12-03T10:40:00", "None")),
        "1 1 1"
    );
    assert_eq!(
        allocation(
            3,
            &job("RUNNING", "2026-12-03T11:00:00", "2026-12-03T09:00:00")
        ),
        "1 2 no"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
