//! The emitted manifests against the real tools, installed and started by
//! `scripts/backend-tools.sh` (which `scripts/test` runs first):
//! - Slurm: every batch script passes `bash -n`, shellcheck and `sbatch --test-only` on a real
//!   slurmctld whose partitions mirror the catalogue; a small job and the hostile job really run;
//! - Kubernetes: every object validates strictly against the official schemas and the real
//!   JobSet, Kueue and Volcano CRDs (`tests/backends/k8s-validate.py`); hostile strings parse
//!   back unchanged; enum fields hold allowed values;
//! - bare metal: the launcher runs a payload on two loopback hosts over a private sshd, and fails
//!   fast when a host is unreachable.
//!
//! With `CI` or `LOAM_REQUIRE_TOOLS` set a missing tool fails the test; otherwise the test
//! prints why it is skipped and passes.

use loam_backends::{Options, Target, render};
use loam_ir::plan::PlanDocument;
use loam_tests::repo_root;
use loam_tests::tools::{
    ci_dir, have, have_python, have_slurm, have_ssh, nlp_tenancy, plan_fixture, python,
    rendezvous_port, run, runs, text,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The feasible plan fixtures; `hostile` holds spec strings full of shell and YAML syntax.
const PLANS: &[&str] = &[
    "hetero-h100-ascend",
    "hostile",
    "llama3-70b-2048-h100",
    "small-1-node",
    "two-node-lab",
];

/// What the hostile fixture's strings would create if a script ever ran them.
const PWNED: &str = "/tmp/loam-pwned";

/// Whether `tool` is usable; when not, fails under CI and skips (returns false) elsewhere.
#[allow(clippy::print_stderr)] // the skip message is for the person running the tests
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loam-tools-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether a plan's groups are at more than one site (Slurm refuses those, L4011).
fn spans_sites(doc: &PlanDocument) -> bool {
    doc.plans.iter().any(|p| {
        p.groups
            .iter()
            .any(|g| p.groups.first().is_some_and(|f| f.site != g.site))
    })
}

/// The tenants of the fixtures as the catalogue names them (what `loam emit` passes).
fn options() -> Options {
    let mut options = loam_tests::shipped_options();
    loam_tests::tools::insert_nlp(&mut options, &nlp_tenancy("/ckpt/nlp"));
    options
}

/// Renders `doc` for `target` into `dir`; returns the written paths.
fn write(doc: &PlanDocument, target: Target, options: &Options, dir: &Path) -> Vec<PathBuf> {
    let manifests = render(doc, target, options).unwrap_or_else(|d| panic!("{d:#?}"));
    manifests
        .into_iter()
        .map(|m| {
            let path = dir.join(&m.path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, m.contents).unwrap();
            path
        })
        .collect()
}

/// Every file `loam emit examples/ ARGS` writes under `dir`.
fn examples(dir: &Path, args: &[&str]) -> Vec<PathBuf> {
    let examples = repo_root().join("examples");
    let out = dir.to_string_lossy().into_owned();
    let mut argv = vec!["emit", examples.to_str().unwrap()];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--out", out.as_str()]);
    let (code, _, err) = loam_tests::run_cli(&argv, "");
    assert_eq!(code, 0, "{err}");
    // Job folders, and the Kubernetes prerequisites' and multi-site jobs' site folders.
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.file_name().unwrap() != ".loam-emit" {
                found.push(path);
            }
        }
    }
    found.sort();
    assert!(!found.is_empty());
    found
}

/// Every script of every plan fixture and example: Slurm batch scripts and bare-metal launchers.
fn scripts(dir: &Path) -> Vec<PathBuf> {
    let mut found = examples(&dir.join("examples-slurm"), &["--backend", "slurm"]);
    found.extend(examples(
        &dir.join("examples-baremetal"),
        &["--backend", "baremetal"],
    ));
    found.retain(|p| p.extension().is_some_and(|e| e == "sh" || e == "sbatch"));
    for name in PLANS {
        let doc = plan_fixture(name);
        for (target, file) in [(Target::Slurm, ".sbatch"), (Target::Baremetal, ".sh")] {
            // A plan over two sites has no Slurm script (L4011, see emit_slurm.rs).
            if target == Target::Slurm && spans_sites(&doc) {
                continue;
            }
            let sub = dir.join(format!("{name}-{file}"));
            found.extend(
                write(&doc, target, &options(), &sub)
                    .into_iter()
                    .filter(|p| p.to_string_lossy().ends_with(file)),
            );
        }
    }
    found
}

#[test]
fn every_script_passes_bash_n_and_shellcheck() {
    if !have("shellcheck", runs("shellcheck", &["--version"])) {
        return;
    }
    let dir = scratch("shellcheck");
    for script in scripts(&dir) {
        let s = script.to_str().unwrap();
        let o = run("bash", &["-n", s], &dir);
        assert!(o.status.success(), "bash -n {s}: {}", text(&o));
        let o = run("shellcheck", &["--shell=bash", s], &dir);
        assert!(o.status.success(), "shellcheck {s}:\n{}", text(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_batch_script_is_accepted_by_slurmctld() {
    if !have_slurm() {
        return;
    }
    let dir = scratch("sbatch");
    let mut checked = 0;
    for script in scripts(&dir)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sbatch"))
    {
        let o = run("sbatch", &["--test-only", script.to_str().unwrap()], &dir);
        assert!(
            o.status.success(),
            "sbatch --test-only {}:\n{}",
            script.display(),
            text(&o)
        );
        checked += 1;
    }
    // One batch script per job example, one per role (serve, or prefill and decode) per service
    // example, as its plan says.
    let examples: usize = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "loam"))
        .map(|p| {
            let (code, out, err) =
                loam_tests::run_cli(&["plan", p.to_str().unwrap(), "--format", "json"], "");
            assert!(code <= 1, "{err}");
            let doc: PlanDocument = serde_json::from_str(&out).unwrap();
            doc.plans.len() + doc.services.iter().map(|s| s.roles.len()).sum::<usize>()
        })
        .sum();
    let single_site = PLANS
        .iter()
        .filter(|n| !spans_sites(&plan_fixture(n)))
        .count();
    assert_eq!(checked, single_site + examples, "every fixture and example");
    // The check is real: one node more than the partition has is refused.
    let big = dir.join("llama3-70b-2048-h100-.sbatch/llama3-70b-pretrain/job.sbatch");
    let too_big = std::fs::read_to_string(&big)
        .unwrap()
        .replace("--nodes=256", "--nodes=257");
    std::fs::write(&big, too_big).unwrap();
    let o = run("sbatch", &["--test-only", big.to_str().unwrap()], &dir);
    assert!(!o.status.success(), "257 nodes accepted: {}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Renders `name` with the payload as trainer and checkpoints under `dir`, so it can run here.
fn runnable(name: &str, dir: &Path, mode: &str) -> (PlanDocument, Options, PathBuf) {
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut doc = plan_fixture(name);
    let root = dir.join("ckpt");
    let mut options = options();
    for p in &mut doc.plans {
        let ckpt = p.checkpoint.as_mut().unwrap();
        ckpt.path = ckpt.path.replacen("/ckpt/nlp", root.to_str().unwrap(), 1);
    }
    loam_tests::tools::insert_nlp(&mut options, &nlp_tenancy(&root.to_string_lossy()));
    let payload = repo_root().join("tests/backends/payload.py");
    options.trainer = vec![
        python().to_string_lossy().into_owned(),
        payload.to_string_lossy().into_owned(),
        out.to_string_lossy().into_owned(),
        mode.to_string(),
    ];
    (doc, options, out)
}

/// The payload's record of node `rank`.
fn record(out: &Path, rank: usize) -> Value {
    let path = out.join(format!("node{rank}.json"));
    serde_json::from_str(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// Checks that the payload got the plan's strings unchanged and nothing ran them.
fn assert_unchanged(doc: &PlanDocument, out: &Path, nodes: usize) {
    let p = &doc.plans[0];
    let ckpt = &p.checkpoint.as_ref().unwrap().path;
    for rank in 0..nodes {
        let r = record(out, rank);
        assert_eq!(r["env"]["LOAM_JOB"], p.job.as_str());
        assert_eq!(r["env"]["LOAM_CHECKPOINT_DIR"], ckpt.as_str());
        assert_eq!(r["env"]["NODE_RANK"], rank.to_string().as_str());
        let args: Vec<&str> = r["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            args.contains(&format!("--checkpoint-dir={ckpt}").as_str()),
            "{args:?}"
        );
        assert!(
            args.contains(&format!("--precision={}", p.workload.precision).as_str()),
            "{args:?}"
        );
    }
    assert!(!Path::new(PWNED).exists(), "a hostile string was executed");
}

/// Submits `script` and waits for it to end. The suite's other Slurm tests (the probe job, the
/// requeues) share the cluster's nodes, so under a loaded two-core machine a job may queue for a
/// minute or two behind them: the wait allows five minutes (a 120 s wait once ran out with the
/// job still pending), and a failure shows the job's state as slurmctld has it.
fn sbatch_wait(script: &Path, cwd: &Path) {
    let o = run(
        "timeout",
        &["300", "sbatch", "--wait", script.to_str().unwrap()],
        cwd,
    );
    if o.status.success() {
        return;
    }
    // What slurmctld and the job's own output say, for the failure message only.
    let state = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .last()
        .filter(|id| id.chars().all(|c| c.is_ascii_digit()))
        .map(|id| text(&run("scontrol", &["show", "job", "-o", id], cwd)))
        .unwrap_or_default();
    let logs: String = std::fs::read_dir(cwd)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "out"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    panic!("job failed: {}\n{state}\n{logs}", text(&o));
}

#[test]
fn a_small_job_and_the_hostile_job_run_to_completion_on_slurm() {
    if !(have_slurm() && have_python()) {
        return;
    }
    let dir = scratch("slurm-run");
    let (doc, options, out) = runnable("small-1-node", &dir, "env");
    let files = write(&doc, Target::Slurm, &options, &dir);
    sbatch_wait(&files[0], &dir);
    let r = record(&out, 0);
    assert_eq!(r["env"]["WORLD_SIZE"], "2");
    assert_eq!(r["env"]["NNODES"], "1");
    assert!(Path::new(r["env"]["LOAM_PLAN"].as_str().unwrap()).is_file());

    let _ = std::fs::remove_file(PWNED);
    let dir = scratch("slurm-hostile");
    let (doc, options, out) = runnable("hostile", &dir, "env");
    let files = write(&doc, Target::Slurm, &options, &dir);
    sbatch_wait(&files[0], &dir);
    assert_unchanged(&doc, &out, 2);
}

#[test]
fn kubernetes_objects_validate_strictly_and_round_trip() {
    if !have_python() {
        return;
    }
    let dir = scratch("k8s");
    let mut files = Vec::new();
    for name in PLANS {
        for flavor in [
            loam_backends::Flavor::Jobset,
            loam_backends::Flavor::Volcano,
        ] {
            let doc = plan_fixture(name);
            // The catalogue's node groups, so the pool's lender ClusterQueue is emitted and
            // checked against the Kueue schema too.
            let options = Options {
                flavor,
                node_groups: loam_compiler::catalogue::facts::node_group_devices(
                    &doc,
                    &loam_compiler::catalogue::builtin(),
                ),
                ..options()
            };
            files.extend(write(
                &plan_fixture(name),
                Target::Kubernetes,
                &options,
                &dir.join(format!("{name}-{flavor:?}")),
            ));
        }
    }
    files.extend(examples(
        &dir.join("examples-jobset"),
        &["--backend", "kubernetes"],
    ));
    files.extend(examples(
        &dir.join("examples-volcano"),
        &["--backend", "kubernetes", "--flavor", "volcano"],
    ));
    let validator = repo_root().join("tests/backends/k8s-validate.py");
    let mut args = vec![validator.to_str().unwrap()];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    let o = run(python(), &args, &dir);
    assert!(o.status.success(), "{}", text(&o));
    // A file may hold several objects (the window's RBAC and CronJobs).
    assert!(text(&o).contains(" passed, 0 failed"), "{}", text(&o));

    // Every document parses back (PyYAML) with the hostile strings unchanged, and every enum
    // field holds an allowed value.
    let hostile = plan_fixture("hostile");
    let p = &hostile.plans[0];
    let ckpt = &p.checkpoint.as_ref().unwrap().path;
    for file in &files {
        let o = run(
            python(),
            &[
                "-c",
                "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1], encoding='utf-8')))))",
                file.to_str().unwrap(),
            ],
            &dir,
        );
        assert!(o.status.success(), "{}", text(&o));
        let docs: Value = serde_json::from_slice(&o.stdout).unwrap();
        for doc in docs.as_array().unwrap() {
            check_enums(doc, "$");
            // Job objects name the job; the shared prerequisites do not.
            if file.to_string_lossy().contains("/hostile-")
                && !file.to_string_lossy().contains("/_prerequisites/")
                && doc["metadata"]["annotations"].is_object()
            {
                assert_eq!(
                    doc["metadata"]["annotations"]["loam.io/job-name"],
                    p.job.as_str()
                );
                assert_eq!(
                    doc["metadata"]["annotations"]["loam.io/spec-file"],
                    p.file.as_str()
                );
            }
            if file.to_string_lossy().contains("/hostile-")
                && (doc["kind"] == "JobSet" || doc["kind"] == "Job")
            {
                let text = doc.to_string();
                assert!(
                    text.contains(&serde_json::to_string(ckpt).unwrap()),
                    "{}",
                    file.display()
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Allowed values of the enum fields loam writes (the schemas do not list them).
fn check_enums(value: &Value, at: &str) {
    const ENUMS: &[(&str, &[&str])] = &[
        ("restartPolicy", &["Always", "OnFailure", "Never"]),
        ("completionMode", &["Indexed", "NonIndexed"]),
        (
            "operator",
            &[
                "In",
                "NotIn",
                "Exists",
                "Equal",
                "DoesNotExist",
                "Gt",
                "Lt",
                "All",
                "Any",
            ],
        ),
        ("medium", &["", "Memory", "HugePages"]),
        (
            "event",
            &[
                "*",
                "PodEvicted",
                "PodFailed",
                "PodPending",
                "TaskCompleted",
                "Unknown",
                "OutOfSync",
                "CommandIssued",
                "JobUpdated",
            ],
        ),
        (
            "action",
            &[
                "AbortJob",
                "RestartJob",
                "RestartTask",
                "RestartPod",
                "TerminateJob",
                "CompleteJob",
                "ResumeJob",
                "SyncJob",
                "EnqueueJob",
            ],
        ),
        ("schedulerName", &["volcano"]),
    ];
    // An `action` under a JobSet's `failurePolicy` or a Job's `podFailurePolicy` has its own
    // values (the JobSet CRD in tests/schemas/crds lists them; Job: the batch/v1 API
    // reference); every other `action` is a Volcano policy's.
    const JOBSET_ACTIONS: &[&str] = &[
        "FailJobSet",
        "RestartJobSet",
        "RestartJobSetAndIgnoreMaxRestarts",
        "RestartJob",
        "RestartJobAndIgnoreMaxRestarts",
    ];
    const POD_FAILURE_ACTIONS: &[&str] = &["FailJob", "FailIndex", "Ignore", "Count"];
    let allowed_for = |key: &str| -> Option<&[&str]> {
        if key == "action" && at.contains(".podFailurePolicy.") {
            return Some(POD_FAILURE_ACTIONS);
        }
        if key == "action" && at.contains(".failurePolicy.") {
            return Some(JOBSET_ACTIONS);
        }
        ENUMS.iter().find(|(k, _)| *k == key).map(|(_, a)| *a)
    };
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if let (Some(allowed), Some(s)) = (allowed_for(key), v.as_str()) {
                    assert!(
                        allowed.contains(&s),
                        "{at}.{key}: `{s}` is not one of {allowed:?}"
                    );
                }
                check_enums(v, &format!("{at}.{key}"));
            }
        }
        Value::Array(items) => items.iter().for_each(|v| check_enums(v, at)),
        _ => {}
    }
}

/// Writes the launcher of `name` for the given loopback hosts and runs it; returns the exit
/// status, how long it took, and the payload output folder.
fn launch(
    name: &str,
    hosts: &[&str],
    mode: &str,
    tag: &str,
) -> (Output, Duration, PathBuf, PathBuf) {
    let dir = scratch(tag);
    let (doc, options, out) = runnable(name, &dir, mode);
    let files = write(&doc, Target::Baremetal, &options, &dir);
    let launcher = files.iter().find(|p| p.ends_with("launch.sh")).unwrap();
    let slots = doc.plans[0].groups[0].devices_per_node;
    let hostfile = dir.join("hosts");
    let lines: String = hosts.iter().map(|h| format!("{h} 0 {slots}\n")).collect();
    std::fs::write(&hostfile, lines).unwrap();
    // A port per launch: the launcher tests run in parallel.
    let port = rendezvous_port();
    let started = Instant::now();
    let o = Command::new("timeout")
        .args(["120", "bash", launcher.to_str().unwrap()])
        .env("HOSTFILE", &hostfile)
        .env(
            "SSH_OPTS",
            format!("-F {}", ci_dir().join("ssh/ssh_config").display()),
        )
        .env("MASTER_PORT", port.to_string())
        .env("CONNECT_TIMEOUT_S", "5")
        .env("TIMEOUT_S", "90")
        // These tests check how a run fails; emit_baremetal.rs checks the restarts.
        .env("MAX_RESTARTS", "0")
        .env("GRACE_S", "3")
        .output()
        .unwrap();
    (
        o,
        started.elapsed(),
        out,
        launcher.parent().unwrap().to_path_buf(),
    )
}

/// The first `nodes` hosts' logs of a launch in `job_dir`, each under its name, for a failed
/// assertion to show.
fn node_logs(job_dir: &Path, nodes: usize) -> String {
    (0..nodes)
        .map(|i| format!("node{i}.log:\n{}", node_log(job_dir, i)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Host `i`'s log of a launch in `job_dir` (empty when there is none).
fn node_log(job_dir: &Path, i: usize) -> String {
    std::fs::read_to_string(job_dir.join(format!("logs/node{i}.log"))).unwrap_or_default()
}

#[test]
fn the_launcher_runs_a_payload_on_two_loopback_hosts() {
    if !(have_ssh() && have_python()) {
        return;
    }
    let _ = std::fs::remove_file(PWNED);
    for name in ["two-node-lab", "hostile"] {
        let (o, _, out, job_dir) = launch(
            name,
            &["127.0.0.1", "127.0.0.2"],
            "tcp",
            &format!("ssh-{name}"),
        );
        let logs = |i: usize| node_log(&job_dir, i);
        assert!(
            o.status.success(),
            "{}\n{}",
            text(&o),
            node_logs(&job_dir, 2)
        );
        assert!(
            logs(0).contains("rank 0 of 2: reached by ranks [1]"),
            "{}",
            logs(0)
        );
        assert!(
            logs(1).contains("rank 1 of 2: reached rank 0 at 127.0.0.1"),
            "{}",
            logs(1)
        );
        assert_eq!(record(&out, 0)["env"]["WORLD_SIZE"], "16");
        assert_unchanged(&plan_fixture(name), &out, 0);
        if name == "hostile" {
            let doc = plan_fixture(name);
            let mut expected = doc.clone();
            let root = out.parent().unwrap().join("ckpt");
            for p in &mut expected.plans {
                let c = p.checkpoint.as_mut().unwrap();
                c.path = c.path.replacen("/ckpt/nlp", root.to_str().unwrap(), 1);
            }
            assert_unchanged(&expected, &out, 2);
        }
    }
}

#[test]
fn the_launcher_fails_fast_when_a_host_is_unreachable() {
    if !(have_ssh() && have_python()) {
        return;
    }
    // Nothing listens on 127.0.0.3; rank 0 on 127.0.0.1 would wait forever for rank 1.
    let (o, took, _, job_dir) = launch(
        "two-node-lab",
        &["127.0.0.1", "127.0.0.3"],
        "hang",
        "ssh-unreachable",
    );
    let all = format!("{}\n{}", text(&o), node_logs(&job_dir, 2));
    assert_eq!(o.status.code(), Some(5), "{all}");
    assert!(took < Duration::from_secs(30), "took {took:?}\n{all}");
    assert!(
        text(&o).contains("node 1 (127.0.0.3) exited with status 255"),
        "{all}"
    );
}

#[test]
fn the_launcher_stops_the_other_hosts_when_one_fails() {
    if !(have_ssh() && have_python()) {
        return;
    }
    // Rank 1 fails after 2 s; rank 0 would wait for it forever.
    let (o, took, out, job_dir) = launch(
        "two-node-lab",
        &["127.0.0.1", "127.0.0.2"],
        "hang",
        "ssh-failing",
    );
    let all = format!("{}\n{}", text(&o), node_logs(&job_dir, 2));
    assert_eq!(o.status.code(), Some(5), "{all}");
    assert!(took < Duration::from_secs(30), "took {took:?}\n{all}");
    assert!(
        text(&o).contains("node 1 (127.0.0.2) exited with status 3"),
        "{all}"
    );
    let pid = record(&out, 0)["pid"].as_u64().unwrap();
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |s| s.split_whitespace().nth(2) == Some("Z"))
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while !gone() {
        assert!(Instant::now() < deadline, "rank 0 (pid {pid}) still runs");
        std::thread::sleep(Duration::from_millis(200));
    }
}
