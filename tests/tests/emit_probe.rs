//! The probe job (`loam emit --probe JOB`, issue 30 item 5): the job's own layout cut to a few
//! hundred steps under its own name and checkpoint folder, emitted for every backend; run on the
//! suite's real slurmctld and over the private sshd on loopback with a stand-in trainer that
//! prints Megatron-LM's log lines (`tests/backends/probe_trainer.py`), and read back by
//! `loam runs ingest` against the job's plan.
//!
//! With `CI` or `LOAM_REQUIRE_TOOLS` set a missing cluster or sshd fails the test; otherwise the
//! test prints why it is skipped and passes.

use loam_backends::{Target, probe, render};
use loam_ir::plan::PlanDocument;
use loam_tests::tools::{
    have_slurm, have_ssh, nlp_tenancy, plan_fixture, rendezvous_port, run, ssh_config, text,
};
use loam_tests::{repo_root, run_cli};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loam-probe-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `doc` with its checkpoints under `dir/ckpt` and steps of `step_s`, written to
/// `dir/plan.json` (the plan `runs ingest` compares the probe with), and backend options that
/// run `probe_trainer.py STEP_S` as the trainer for a probe of `steps`.
fn prepared(
    mut doc: PlanDocument,
    dir: &Path,
    step_s: f64,
    steps: u64,
) -> (PlanDocument, loam_backends::Options, PathBuf) {
    let root = dir.join("ckpt");
    for p in &mut doc.plans {
        let c = p.checkpoint.as_mut().unwrap();
        c.path = c.path.replacen("/ckpt/nlp", root.to_str().unwrap(), 1);
        c.write_s = 0.0;
        p.estimate.as_mut().unwrap().step_time_s = step_s;
    }
    let plan_json = dir.join("plan.json");
    std::fs::write(&plan_json, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let mut options = loam_tests::shipped_options();
    loam_tests::tools::insert_nlp(&mut options, &nlp_tenancy(&root.to_string_lossy()));
    let trainer = repo_root().join("tests/backends/probe_trainer.py");
    options.trainer = vec![
        "python3".to_string(),
        trainer.to_string_lossy().into_owned(),
        step_s.to_string(),
    ];
    options.probe_steps = Some(steps);
    (doc, options, plan_json)
}

/// `loam runs ingest LOG --plan PLAN --job JOB --format json`: the run's JSON.
fn ingest(log: &Path, plan: &Path, job: &str) -> serde_json::Value {
    let (code, out, err) = run_cli(
        &[
            "runs",
            "ingest",
            &log.to_string_lossy(),
            "--plan",
            &plan.to_string_lossy(),
            "--job",
            job,
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}\n{}", std::fs::read_to_string(log).unwrap());
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    doc["runs"][0].clone()
}

/// The probe of the two-node fixture: the job's layout and groups, cut to its steps, under its
/// own name and checkpoint folder, with the probe's three arguments after the layout's.
#[test]
fn a_probe_is_the_jobs_layout_cut_to_its_steps_under_its_own_name() {
    let doc = plan_fixture("two-node-lab");
    let job = doc.plans[0].job.clone();
    let step_s = doc.plans[0].estimate.as_ref().unwrap().step_time_s;
    // The default: as many steps as take an hour, within 40 and 200.
    let expected_steps = ((3600.0 / step_s).floor() as u64).clamp(40, 200);
    let (probed, steps) = probe::document(&doc, &job, None).unwrap();
    assert_eq!(steps, expected_steps);
    let p = &probed.plans[0];
    assert_eq!(p.job, format!("{job}-probe"));
    assert_eq!(p.layout, doc.plans[0].layout);
    assert_eq!(p.groups, doc.plans[0].groups);
    let w = &p.workload;
    assert_eq!(
        w.tokens,
        steps as f64 * w.global_batch as f64 * w.seq_len as f64
    );
    let e = p.estimate.as_ref().unwrap();
    assert!((e.train_time_h - steps as f64 * step_s / 3600.0).abs() < 1e-12);
    assert!(e.goodput.is_none() && p.schedule.is_none());
    let ckpt = p.checkpoint.as_ref().unwrap();
    assert_eq!(
        ckpt.path,
        format!("{}-probe", doc.plans[0].checkpoint.as_ref().unwrap().path)
    );

    let mut options = loam_tests::shipped_options();
    options.probe_steps = Some(steps);
    let whole = render(&doc, Target::Slurm, &loam_tests::shipped_options()).unwrap();
    let cut = render(&probed, Target::Slurm, &options).unwrap();
    let script = |m: &[loam_backends::Manifest]| {
        m.iter()
            .find(|m| m.path.ends_with("job.sbatch"))
            .unwrap()
            .contents
            .clone()
    };
    let (whole, cut) = (script(&whole), script(&cut));
    assert!(
        cut.contains(&format!("#SBATCH --job-name={job}-probe\n")),
        "{cut}"
    );
    // Each argument one quoted word of the script.
    for arg in [
        format!("'--train-steps={steps}'"),
        format!("'--log-interval={}'", (steps / 20).max(1)),
        "'--probe'".to_string(),
    ] {
        assert!(cut.contains(&arg), "{arg} in {cut}");
    }
    assert!(!whole.contains("--probe"), "{whole}");
    // The same layout arguments as the job's.
    for arg in [
        "--tensor-parallel=",
        "--pipeline-parallel=",
        "--data-parallel=",
    ] {
        let value = |s: &str| {
            s.split_whitespace()
                .map(|w| w.trim_matches('\''))
                .find(|w| w.starts_with(arg))
                .map(str::to_string)
        };
        assert_eq!(value(&cut), value(&whole), "{arg}");
        assert!(value(&cut).is_some(), "{arg} in {cut}");
    }
    // An unknown job is refused with the jobs there are.
    let err = probe::document(&doc, "nope", None).unwrap_err();
    assert!(
        err.contains("no job `nope` to probe") && err.contains(&job),
        "{err}"
    );
}

/// Through the command line: `loam emit EXAMPLE --probe JOB` writes the probe's files alone and
/// says where its log will be; an unknown job (the file's name, not its job's) is a usage error
/// that names the jobs there are and writes nothing.
#[test]
fn loam_emit_probe_writes_the_probe_alone_and_says_how_to_read_it_back() {
    let dir = scratch("cli");
    let spec = repo_root().join("examples/llama3-8b-finetune.loam");
    let out = dir.join("out");
    let (code, stdout, err) = run_cli(
        &[
            "emit",
            &spec.to_string_lossy(),
            "--backend",
            "slurm",
            "--probe",
            "llama3-8b-sft",
            "--probe-steps",
            "120",
            "--out",
            &out.to_string_lossy(),
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("for 1 job"), "{stdout}");
    assert!(
        err.contains("probe: 120 steps of job `llama3-8b-sft`"),
        "{err}"
    );
    assert!(
        err.contains("loam runs ingest LOG --plan PLAN.json --job llama3-8b-sft"),
        "{err}"
    );
    let scripts: Vec<PathBuf> = walk(&out)
        .into_iter()
        .filter(|p| p.ends_with("job.sbatch"))
        .collect();
    assert_eq!(scripts.len(), 1, "{scripts:?}");
    let body = std::fs::read_to_string(&scripts[0]).unwrap();
    for arg in ["'--train-steps=120'", "'--log-interval=6'", "'--probe'"] {
        assert!(body.contains(arg), "{arg} in {body}");
    }

    let refused = dir.join("refused");
    let (code, _, err) = run_cli(
        &[
            "emit",
            &spec.to_string_lossy(),
            "--backend",
            "slurm",
            "--probe",
            "llama3-8b-finetune",
            "--out",
            &refused.to_string_lossy(),
        ],
        "",
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no job `llama3-8b-finetune` to probe"),
        "{err}"
    );
    assert!(!refused.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// On the suite's slurmctld: the probe's batch script runs 40 steps of 0.1 s, its output file
/// `loam-<job>-probe-<id>.out` holds the stand-in's Megatron-LM lines, and `runs ingest` reads
/// them back against the job's plan: a steady step of about 0.1 s (the stand-in sleeps 0.1 s a
/// step; Python's and the log's own time add a few milliseconds), 18 intervals kept after the
/// two warm-up ones.
#[test]
fn a_probe_runs_on_real_slurm_and_its_log_reads_back() {
    if !have_slurm() {
        return;
    }
    let dir = scratch("slurm");
    let (doc, options, plan_json) = prepared(plan_fixture("small-1-node"), &dir, 0.1, 40);
    let job = doc.plans[0].job.clone();
    let (probed, _) = probe::document(&doc, &job, Some(40)).unwrap();
    let manifests = render(&probed, Target::Slurm, &options).unwrap();
    let script = manifests
        .iter()
        .find(|m| m.path.ends_with("job.sbatch"))
        .unwrap();
    let path = dir.join("job.sbatch");
    std::fs::write(&path, &script.contents).unwrap();
    let o = run("sbatch", &["--parsable", path.to_str().unwrap()], &dir);
    assert!(o.status.success(), "sbatch: {}", text(&o));
    let id = String::from_utf8_lossy(&o.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let started = Instant::now();
    let state = loop {
        let o = Command::new("scontrol")
            .args(["show", "job", "-o", &id])
            .output()
            .unwrap();
        let line = String::from_utf8_lossy(&o.stdout).to_string();
        let state = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("JobState="))
            .unwrap_or_default()
            .to_string();
        if ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"].contains(&state.as_str()) {
            break state;
        }
        if started.elapsed() > Duration::from_secs(180) {
            let _ = run("scancel", &[&id], &dir);
            panic!("probe {id} still {state}: {line}");
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    let name = script
        .contents
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --job-name="))
        .unwrap()
        .to_string();
    assert!(name.ends_with("-probe"), "{name}");
    let log = dir.join(format!("loam-{name}-{id}.out"));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(state, "COMPLETED", "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains(" iteration ")).count(),
        20,
        "{text}"
    );
    let row = ingest(&log, &plan_json, &job);
    assert_eq!(row["ran"]["job"], job.as_str(), "{row:#}");
    assert_eq!(row["intervals_kept"], 18, "{row:#}");
    let step = row["measured_step_s"].as_f64().unwrap();
    assert!((0.1..0.2).contains(&step), "{row:#}");
    // The probe wrote no checkpoint, and none in the job's folder.
    let job_ckpt = PathBuf::from(&doc.plans[0].checkpoint.as_ref().unwrap().path);
    assert!(!job_ckpt.exists() || std::fs::read_dir(&job_ckpt).unwrap().next().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Over real ssh to two loopback hosts: the bare-metal launcher runs the probe on both; only the
/// last node prints Megatron-LM's lines (`print_rank_last`), and its log reads back.
#[test]
fn a_probe_runs_over_ssh_and_the_last_nodes_log_reads_back() {
    if !have_ssh() {
        return;
    }
    let dir = scratch("ssh");
    let (doc, options, plan_json) = prepared(plan_fixture("two-node-lab"), &dir, 0.1, 40);
    let job = doc.plans[0].job.clone();
    let (probed, _) = probe::document(&doc, &job, Some(40)).unwrap();
    let mut launcher = PathBuf::new();
    for m in render(&probed, Target::Baremetal, &options).unwrap() {
        let path = dir.join(&m.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, m.contents).unwrap();
        if path.ends_with("launch.sh") {
            launcher = path;
        }
    }
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "127.0.0.1 0 8\n127.0.0.2 0 8\n").unwrap();
    let port = rendezvous_port();
    let o = Command::new("timeout")
        .args(["120", "bash", launcher.to_str().unwrap()])
        .env("HOSTFILE", &hosts)
        .env("SSH_OPTS", format!("-F {}", ssh_config().display()))
        .env("MASTER_PORT", port.to_string())
        .env("CONNECT_TIMEOUT_S", "5")
        .env("BACKOFF_S", "1")
        .env("GRACE_S", "5")
        .env_remove("MASTER_ADDR")
        .output()
        .unwrap();
    let logs = launcher.parent().unwrap().join("logs");
    let (first, last) = (logs.join("node0.log"), logs.join("node1.log"));
    let shown = format!(
        "{}\n{}\n{}",
        text(&o),
        std::fs::read_to_string(&first).unwrap_or_default(),
        std::fs::read_to_string(&last).unwrap_or_default()
    );
    assert!(o.status.success(), "{shown}");
    let lines = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(" iteration "))
            .count()
    };
    assert_eq!((lines(&first), lines(&last)), (0, 20), "{shown}");
    let row = ingest(&last, &plan_json, &job);
    assert_eq!(row["intervals_kept"], 18, "{row:#}");
    let step = row["measured_step_s"].as_f64().unwrap();
    assert!((0.1..0.2).contains(&step), "{row:#}");
    // The launcher's lock folders on the loopback hosts, named in the launcher.
    let script = std::fs::read_to_string(&launcher).unwrap_or_default();
    if let Some(name) = script
        .lines()
        .find_map(|l| l.strip_prefix("LOCK_NAME='"))
        .and_then(|l| l.strip_suffix('\''))
    {
        for rank in 0..2 {
            let _ = std::fs::remove_dir_all(
                std::env::temp_dir().join(format!("loam-{name}-node{rank}")),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
