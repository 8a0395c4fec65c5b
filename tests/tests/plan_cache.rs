//! Plans reused instead of planned again: a job's catalogue inputs (its pool and the devices the
//! pool uses) are all its plan reads, a diff re-plans only the jobs whose spec or inputs changed,
//! and the on-disk cache (`--cache DIR`) gives back plans that render byte for byte as fresh
//! ones, ignoring entries that are damaged.

use crate::git_repo;

use git_repo::{TempRepo, spec};
use loam_cli::gitops::{Request, run};
use loam_cli::plan_cache::PlanCache;
use loam_compiler::catalogue::builtin_sources;
use loam_compiler::project::{
    CheckedProject, ProjectFiles, check_project, checksum, plan_keys, plan_project,
};
use loam_tests::repo_root;
use std::collections::BTreeSet;
use std::path::Path;

/// The shipped catalogue's files, owned.
fn catalogue() -> Vec<(String, String)> {
    builtin_sources()
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

/// `catalogue` with the first `from` in file `path` replaced by `to` (which must be there).
fn edit(catalogue: &[(String, String)], path: &str, from: &str, to: &str) -> Vec<(String, String)> {
    let mut found = false;
    let out = catalogue
        .iter()
        .map(|(p, t)| {
            if p.ends_with(path) {
                assert!(t.contains(from), "{path} has no `{from}`");
                found = true;
                (p.clone(), t.replacen(from, to, 1))
            } else {
                (p.clone(), t.clone())
            }
        })
        .collect();
    assert!(found, "no catalogue file {path}");
    out
}

fn checked(catalogue: Vec<(String, String)>, name: &str, text: &str) -> CheckedProject {
    let project = check_project(
        ProjectFiles {
            catalogue,
            specs: vec![(name.to_string(), text.as_bytes().to_vec())],
        },
        2,
    );
    assert_eq!(project.errors(), 0, "{name}: {:?}", project.diagnostics);
    project
}

/// The plan JSON of every job of `name`, planned against `catalogue`.
fn plan_json(catalogue: Vec<(String, String)>, name: &str, text: &str) -> String {
    let planned = plan_project(&checked(catalogue, name, text), 2);
    serde_json::to_string_pretty(&planned.document.plans).unwrap()
}

fn inputs(catalogue: Vec<(String, String)>, pool: &str) -> String {
    let project = check_project(
        ProjectFiles {
            catalogue,
            specs: Vec::new(),
        },
        1,
    );
    project.catalogue.unwrap().inputs_digest(pool)
}

/// The examples, except the two that take seconds each to plan (DeepSeek-V3 and the 405B
/// pretraining), which use the same pools as others here.
fn examples() -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "loam"))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            // Services are planned on every run, never cached (they plan in milliseconds).
            !name.starts_with("deepseek")
                && !name.starts_with("llama3-405b")
                && !name.ends_with("-service.loam")
        })
        .map(|p| {
            let name = format!("examples/{}", p.file_name().unwrap().to_string_lossy());
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    found.sort();
    assert!(found.len() >= 8);
    found
}

/// The proof that the inputs are complete: each example planned against a catalogue that holds
/// nothing but its inputs (its pool's file, the files of the devices that pool uses and of the
/// devices with a published run, which the plausibility guard reads) gets a
/// byte-identical plan, so nothing else of the catalogue is read; and the inputs digest is the
/// same in both catalogues.
#[test]
fn a_plan_reads_nothing_of_the_catalogue_but_its_inputs() {
    let full = catalogue();
    let mut pools = BTreeSet::new();
    for (name, text) in examples() {
        let project = checked(full.clone(), &name, &text);
        let job = &project.jobs[0].job;
        let pool_id = job.resources.pool.value.clone();
        let cat = project.catalogue.as_ref().unwrap();
        let devices: BTreeSet<String> = cat
            .pool(&pool_id)
            .unwrap()
            .device_ids()
            .into_iter()
            .map(str::to_string)
            .collect();
        let only: Vec<(String, String)> = full
            .iter()
            .filter(|(p, _)| {
                let stem = Path::new(p)
                    .file_stem()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                // The pool, its devices, and every device with a published run (the
                // plausibility guard's yardsticks).
                (p.contains("pools/") && stem == pool_id)
                    || (p.contains("devices/")
                        && (devices.contains(&stem)
                            || cat
                                .device(&stem)
                                .is_some_and(|d| !d.best_published.is_empty())))
            })
            .cloned()
            .collect();
        assert!(
            only.len() < full.len() - 10,
            "{name}: {} files kept",
            only.len()
        );
        assert_eq!(
            inputs(only.clone(), &pool_id),
            cat.inputs_digest(&pool_id),
            "{name}"
        );
        assert_eq!(
            plan_json(full.clone(), &name, &text),
            plan_json(only, &name, &text),
            "{name}: the plan read a part of the catalogue outside its inputs"
        );
        // The same catalogue read from another folder has the same inputs.
        let moved: Vec<(String, String)> = full
            .iter()
            .map(|(p, t)| (format!("/elsewhere/checkout/{p}"), t.clone()))
            .collect();
        assert_eq!(
            inputs(moved, &pool_id),
            cat.inputs_digest(&pool_id),
            "{name}"
        );
        pools.insert(pool_id);
    }
    assert_eq!(
        pools.len(),
        2,
        "the examples cover xirang and frontier: {pools:?}"
    );
}

/// Edits outside a job's inputs (another pool's price, a device its pool does not use and the
/// plausibility guard does not compare with, a new pool) leave its inputs digest and its plan as they are; edits inside (a node group's price,
/// a link, a tenant's quota, a site's power price, a device the pool uses) change the digest.
#[test]
fn the_inputs_digest_changes_exactly_with_its_parts() {
    let full = catalogue();
    let (name, text) = examples()
        .into_iter()
        .find(|(n, _)| n.ends_with("llama3-8b-finetune.loam"))
        .unwrap();
    let before = inputs(full.clone(), "xirang");
    let plan = plan_json(full.clone(), &name, &text);
    let mut added = full.clone();
    added.push((
        "specs/pools/zz.yaml".into(),
        full.iter()
            .find(|(p, _)| p.ends_with("pools/lab.yaml"))
            .unwrap()
            .1
            .replacen("id: lab", "id: zz", 1),
    ));
    let outside = [
        edit(
            &full,
            "pools/lab.yaml",
            "price: 30.0 CNY",
            "price: 31.0 CNY",
        ),
        edit(
            &full,
            "pools/frontier.yaml",
            "price: 2.2 USD",
            "price: 2.4 USD",
        ),
        // A device outside the pool and without a published run (one with a run is a
        // yardstick of the plausibility guard, so an input of every plan).
        edit(
            &full,
            "devices/TITAN_RTX.yaml",
            "fp16: 130.5TFLOPS",
            "fp16: 140TFLOPS",
        ),
        edit(&full, "devices/T4.yaml", "mtbf: 80000h", "mtbf: 90000h"),
        added,
    ];
    for (i, changed) in outside.into_iter().enumerate() {
        assert_eq!(
            inputs(changed.clone(), "xirang"),
            before,
            "outside edit {i}"
        );
        assert_eq!(plan_json(changed, &name, &text), plan, "outside edit {i}");
    }
    let xirang = "pools/xirang.yaml";
    let inside = [
        edit(&full, xirang, "price: 32.0 CNY", "price: 34.0 CNY"),
        edit(
            &full,
            xirang,
            "storage_bandwidth: 400GB/s",
            "storage_bandwidth: 300GB/s",
        ),
        edit(&full, xirang, "latency: 5us", "latency: 6us"),
        edit(
            &full,
            xirang,
            "nics: { count: 8, bandwidth: 400Gbps }",
            "nics: { count: 4, bandwidth: 400Gbps }",
        ),
        edit(
            &full,
            "devices/H100_SXM.yaml",
            "mtbf: 50000h",
            "mtbf: 40000h",
        ),
        // B200 is outside xirang, but its published run is a yardstick of the guard.
        edit(
            &full,
            "devices/B200.yaml",
            "bf16: 2250TFLOPS",
            "bf16: 2300TFLOPS",
        ),
    ];
    for (i, changed) in inside.into_iter().enumerate() {
        assert_ne!(inputs(changed, "xirang"), before, "inside edit {i}");
    }
    // A device the pool uses: any figure of it is an input.
    let h20 = full
        .iter()
        .find(|(p, _)| p.ends_with("devices/H20.yaml"))
        .unwrap()
        .1
        .clone();
    let line = h20
        .lines()
        .find(|l| l.contains("memory_bandwidth:"))
        .unwrap();
    let changed = edit(&full, "devices/H20.yaml", line, "memory_bandwidth: 3TB/s");
    assert_ne!(inputs(changed, "xirang"), before);
    // The whole catalogue digest moves with every edit; the other pools' inputs do not move
    // with xirang's.
    let priced = edit(&full, xirang, "price: 32.0 CNY", "price: 34.0 CNY");
    assert_eq!(
        inputs(priced.clone(), "frontier"),
        inputs(full.clone(), "frontier")
    );
    assert_eq!(inputs(priced, "lab"), inputs(full.clone(), "lab"));
    assert_ne!(inputs(full.clone(), "nowhere"), before);
}

/// Every example's plan reads back from JSON equal and writes out to the same bytes, so a plan
/// taken from the cache is the plan that was planned.
#[test]
fn plans_round_trip_through_json() {
    for (name, text) in examples() {
        let planned = plan_project(&checked(catalogue(), &name, &text), 2);
        for plan in &planned.document.plans {
            let json = serde_json::to_string(plan).unwrap();
            let back: loam_ir::plan::Plan = serde_json::from_str(&json).unwrap();
            assert_eq!(&back, plan, "{name}");
            assert_eq!(serde_json::to_string(&back).unwrap(), json, "{name}");
        }
    }
}

/// Runs `loam` in-process in the repository root: exit code, standard output, standard error.
fn loam(args: &[&str]) -> (u8, String, String) {
    let mut all: Vec<String> = vec!["loam".into(), "--color".into(), "never".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = loam_cli::run(all, &mut out, &mut err, &mut std::io::empty());
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// Every entry file of a cache folder.
fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for folder in std::fs::read_dir(dir.join("plans-v1")).unwrap() {
        for file in std::fs::read_dir(folder.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `loam plan --cache DIR`: the second run takes every plan from the cache and prints the same
/// bytes in every format; the cache is really read (an entry edited with a valid checksum is
/// what the second run shows); damaged entries are planned again, rewritten, never a panic.
#[test]
fn plan_with_a_cache_prints_what_it_prints_without() {
    let root = repo_root();
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_string_lossy().into_owned();
    let example = root.join("examples/hetero-70b-guiyang.loam");
    let small = root.join("examples/llama3-8b-finetune.loam");
    let paths = [
        example.to_string_lossy().into_owned(),
        small.to_string_lossy().into_owned(),
    ];
    for format in ["json", "table", "markdown"] {
        let mut args = vec!["plan", "--format", format];
        args.extend(paths.iter().map(String::as_str));
        let fresh = loam(&args);
        args.extend(["--cache", dir.as_str()]);
        let filled = loam(&args);
        let cached = loam(&args);
        assert_eq!(fresh, filled, "{format}");
        assert_eq!(fresh, cached, "{format}");
    }
    let found = entries(cache.path());
    assert_eq!(found.len(), 2, "{found:?}");

    // The second run reads the cache: an entry changed with a matching checksum is shown.
    let args = [
        "plan",
        "--format",
        "json",
        paths[1].as_str(),
        "--cache",
        dir.as_str(),
    ];
    let (_, fresh, _) = loam(&args);
    let entry = found
        .iter()
        .find(|p| std::fs::read_to_string(p).unwrap().contains("llama3-8b"))
        .unwrap()
        .clone();
    let text = std::fs::read_to_string(&entry).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    let words: Vec<&str> = header.split(' ').collect();
    let marked = body.replacen("\"why\":\"", "\"why\":\"CACHED ", 1);
    assert_ne!(marked, body);
    std::fs::write(
        &entry,
        format!(
            "{} {} {}\n{marked}",
            words[0],
            words[1],
            checksum(marked.as_bytes())
        ),
    )
    .unwrap();
    let (_, shown, _) = loam(&args);
    assert!(shown.contains("CACHED "), "the cache was not read");

    // Damaged entries: a body that does not match its checksum, a truncated file, garbage, a
    // header for another key, an empty file. Each is planned again and rewritten.
    let damaged = [
        format!("{header}\n{marked}"),
        text[..text.len() / 2].to_string(),
        "\u{0}\u{1}garbage".to_string(),
        format!(
            "{} sha256:{} {}\n{body}",
            words[0],
            "0".repeat(64),
            words[2]
        ),
        String::new(),
    ];
    for (i, bad) in damaged.iter().enumerate() {
        std::fs::write(&entry, bad).unwrap();
        let (code, out, err) = loam(&args);
        assert_eq!(out, fresh, "damage {i}: {err}");
        assert_eq!(code, 0, "damage {i}: {err}");
        assert_eq!(
            std::fs::read_to_string(&entry).unwrap(),
            text,
            "damage {i}: rewritten"
        );
    }
    // A cache folder that cannot be used (a file stands where it would be) is no error.
    let blocked = cache.path().join("file");
    std::fs::write(&blocked, "x").unwrap();
    let blocked = blocked.to_string_lossy().into_owned();
    let (code, out, _) = loam(&[
        "plan",
        "--format",
        "json",
        paths[1].as_str(),
        "--cache",
        &blocked,
    ]);
    assert_eq!((code, out), (0, fresh));
}

/// Pruning removes the least recently used entries down to three quarters of the limit.
#[test]
fn pruning_keeps_the_most_recently_used() {
    let root = repo_root();
    let cache = tempfile::tempdir().unwrap();
    let store = PlanCache::at(cache.path());
    let text = std::fs::read_to_string(root.join("examples/llama3-8b-finetune.loam")).unwrap();
    let project = checked(catalogue(), "a.loam", &text);
    let plan = plan_project(&project, 1).document.plans.remove(0);
    let keys: Vec<String> = (0..8)
        .map(|i| checksum(format!("key {i}").as_bytes()))
        .collect();
    for key in &keys {
        assert!(store.put(key, &plan));
        // Modification times are whole seconds on some file systems.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    for path in entries(cache.path()).iter().take(8) {
        let f = std::fs::File::options().append(true).open(path).unwrap();
        f.set_modified(old).unwrap();
    }
    // Used now: kept.
    assert!(store.get(&keys[3], &project.jobs[0]).is_some());
    assert_eq!(store.prune(10), 0);
    assert_eq!(store.prune(4), 5);
    let left = entries(cache.path());
    assert_eq!(left.len(), 3);
    assert!(store.get(&keys[3], &project.jobs[0]).is_some());
    // A key of another form has no entry.
    assert!(!store.put("md5:abc", &plan));
    assert_eq!(plan_keys(&project).len(), 1);
}

/// A spec on the frontier pool (tenant `nlp` has B200 and Gaudi2 there), small enough to plan
/// quickly.
fn frontier_spec(name: &str, batch: u32) -> String {
    spec(name, batch, 8).replace("pool        = xirang", "pool        = frontier")
}

fn request(repo: &TempRepo, cache: Option<&Path>) -> Request {
    Request {
        base: "HEAD~1".into(),
        head: Some("HEAD".into()),
        paths: vec![repo.path()],
        catalogue: None,
        manifests: None,
        cache: cache.map(PlanCache::at),
    }
}

/// A price change in one pool re-plans that pool's jobs only; with a cache filled by an
/// earlier run on the base revision, nothing unchanged is planned again; the diff is the same
/// either way.
#[test]
fn a_price_change_in_one_pool_replans_only_its_jobs() {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    for i in 0..3 {
        repo.write(&format!("jobs/x{i}.loam"), spec(&format!("x-{i}"), 64, 8));
        repo.write(
            &format!("jobs/f{i}.loam"),
            frontier_spec(&format!("f-{i}"), 64),
        );
    }
    repo.commit("six jobs");
    // The main branch's CI run on the base revision: its plans go into the cache.
    let cache = tempfile::tempdir().unwrap();
    let mut first = request(&repo, Some(cache.path()));
    first.base = "HEAD".into();
    first.head = None;
    let filled = run(&first).unwrap();
    assert_eq!((filled.head.reused(), filled.base.reused()), (0, 6));
    assert_eq!(entries(cache.path()).len(), 6);

    let pool = repo.read("specs/pools/frontier.yaml");
    repo.write(
        "specs/pools/frontier.yaml",
        pool.replacen("price: 4.5 USD", "price: 5.5 USD", 1),
    );
    repo.write("jobs/x0.loam", spec("x-0", 128, 8));
    repo.commit("a frontier price and one xirang spec");

    let plain = run(&request(&repo, None)).unwrap();
    assert_eq!(plain.head.plans().len(), 6);
    assert_eq!(plain.head.reused(), 0);
    // x-1 and x-2 are taken from the head; x-0 changed, the frontier jobs' inputs changed.
    assert_eq!(plain.base.reused(), 2);
    let changed: Vec<&str> = plain
        .diff
        .jobs
        .iter()
        .filter(|j| j.before != j.after)
        .map(|j| j.job.as_str())
        .collect();
    assert_eq!(changed, ["f-0", "f-1", "f-2", "x-0"]);

    // The pull request's run with the restored cache: the head's unchanged xirang jobs and the
    // whole base come from it.
    let warm = run(&request(&repo, Some(cache.path()))).unwrap();
    assert_eq!(warm.head.reused(), 2);
    assert_eq!(warm.base.reused(), 6);
    assert_eq!(warm.base.plans(), plain.base.plans());
    assert_eq!(warm.head.plans(), plain.head.plans());
    let again = run(&request(&repo, Some(cache.path()))).unwrap();
    assert_eq!((again.head.reused(), again.base.reused()), (6, 6));
    assert_eq!(again.head.plans(), plain.head.plans());
    assert_eq!(entries(cache.path()).len(), 10);
}

/// Runs the built `loam` in `dir` with `env` set (and no cache variables inherited): exit code,
/// standard output, standard error.
fn loam_env(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (u8, String, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_loam-under-test"));
    command
        .args(["--color", "never"])
        .args(args)
        .current_dir(dir)
        .env_remove("LOAM_CACHE_DIR")
        .env_remove("LOAM_CACHE_KEY");
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    (
        u8::try_from(out.status.code().unwrap()).unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The secret the tests sign with (32 bytes).
const KEY: &str = "0123456789abcdef0123456789abcdef";

/// Reproducer 09 of the reliability review, as an attacker without the key would do it: every
/// `amount` of the entry set to 1 and the entry's checksum recomputed. Returns the forged body.
fn forge(entry: &Path) -> String {
    let text = std::fs::read_to_string(entry).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    let mut plan: serde_json::Value = serde_json::from_str(body).unwrap();
    fn cheapen(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if k == "amount" && v.is_number() {
                        *v = serde_json::json!(1.0);
                    } else {
                        cheapen(v);
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(cheapen),
            _ => {}
        }
    }
    cheapen(&mut plan);
    let forged = serde_json::to_string(&plan).unwrap();
    assert_ne!(forged, body);
    let words: Vec<&str> = header.split(' ').collect();
    std::fs::write(
        entry,
        format!(
            "{} {} {}\n{forged}",
            words[0],
            words[1],
            checksum(forged.as_bytes())
        ),
    )
    .unwrap();
    forged
}

/// Review finding M7, reproducer 09: a cache inside the folder being planned is refused without
/// a key (exit 2, nothing planned, nothing written); with `LOAM_CACHE_KEY` its entries are
/// signed, and the forged entry (amounts and checksum rewritten by someone without the key) is
/// never shown: the job is planned again, the entry rewritten, and stderr says so once.
#[test]
fn a_forged_entry_is_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let spec = "llama3-8b-finetune.loam";
    std::fs::copy(
        repo_root().join("examples").join(spec),
        dir.path().join(spec),
    )
    .unwrap();
    let args = ["plan", "--format", "json", "--cache", ".loam-cache", spec];
    let (fresh_code, fresh, fresh_err) =
        loam_env(dir.path(), &[], &["plan", "--format", "json", spec]);
    assert_eq!(fresh_code, 0);

    // Unsigned, inside the planned folder: refused.
    let (code, out, err) = loam_env(dir.path(), &[], &args);
    assert_eq!(code, 2, "{err}");
    assert_eq!(out, "");
    assert!(
        err.contains("refusing the plan cache `.loam-cache`"),
        "{err}"
    );
    assert!(err.contains("LOAM_CACHE_KEY"), "{err}");
    assert!(!dir.path().join(".loam-cache").exists());

    // Signed: filled, then forged, then never trusted.
    let keyed = [("LOAM_CACHE_KEY", KEY)];
    let (code, filled, err) = loam_env(dir.path(), &keyed, &args);
    assert!(code == 0 && filled == fresh && err == fresh_err, "{err}");
    let found = entries(&dir.path().join(".loam-cache"));
    assert_eq!(found.len(), 1);
    let signed = std::fs::read_to_string(&found[0]).unwrap();
    assert!(
        signed.lines().next().unwrap().contains(" hmac-sha256:"),
        "{signed}"
    );
    let forged = forge(&found[0]);
    let (code, shown, err) = loam_env(dir.path(), &keyed, &args);
    assert_eq!(code, 0, "{err}");
    assert!(shown == fresh, "the forged plan was shown");
    assert!(!shown.contains(&forged));
    assert_eq!(
        err.matches("failed verification").count(),
        1,
        "warned once: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(&found[0]).unwrap(),
        signed,
        "rewritten"
    );

    // The other key cannot verify it either; without a key a signed entry is simply not used.
    let other = [("LOAM_CACHE_KEY", "another secret of 32 bytes......")];
    let (code, shown, err) = loam_env(dir.path(), &other, &args);
    assert!(code == 0 && shown == fresh, "{err}");
    assert!(err.contains("failed verification"), "{err}");

    // A key too short to be a secret is refused.
    let (code, _, err) = loam_env(dir.path(), &[("LOAM_CACHE_KEY", "short")], &args);
    assert_eq!(code, 2);
    assert!(err.contains("LOAM_CACHE_KEY holds 5 bytes"), "{err}");
}

/// Without a key, a cache folder inside a git work tree is refused whichever way it is named:
/// `--cache`, `LOAM_CACHE_DIR`, a path through a symlink into the work tree, a symlink in the
/// work tree pointing out of it, for `plan` and `diff` alike; a folder outside is used.
#[test]
fn an_unsigned_cache_inside_a_work_tree_is_refused() {
    let mut repo = TempRepo::new();
    repo.write("jobs/a.loam", spec("a", 64, 8));
    repo.commit("one job");
    let root = repo.path();
    let outside = tempfile::tempdir().unwrap();
    let link_in = outside.path().join("into-repo");
    std::os::unix::fs::symlink(&root, &link_in).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("out-link")).unwrap();
    let through_link = link_in.join("cache").to_string_lossy().into_owned();
    for (how, env, cache) in [
        ("flag", None, Some(".loam-cache")),
        ("env", Some(".loam-cache"), None),
        (
            "a link into the work tree",
            None,
            Some(through_link.as_str()),
        ),
        ("a link out of the work tree", None, Some("out-link/cache")),
        (
            "a subfolder, named with ..",
            None,
            Some("jobs/../deep/er/cache"),
        ),
    ] {
        let mut vars = Vec::new();
        if let Some(dir) = env {
            vars.push(("LOAM_CACHE_DIR", dir));
        }
        for command in [&["plan", "jobs"][..], &["diff", "--base", "HEAD"][..]] {
            let mut args = command.to_vec();
            if let Some(dir) = cache {
                args.extend(["--cache", dir]);
            }
            let (code, out, err) = loam_env(&root, &vars, &args);
            assert_eq!(code, 2, "{how}, {command:?}: {out}{err}");
            assert!(
                err.contains("inside the git work tree"),
                "{how}, {command:?}: {err}"
            );
        }
    }
    assert!(!root.join(".loam-cache").exists() && !root.join("deep").exists());
    assert!(std::fs::read_dir(outside.path()).unwrap().count() == 1);
    // Outside the work tree: used.
    let cache = outside.path().join("cache").to_string_lossy().into_owned();
    let (code, _, err) = loam_env(&root, &[], &["plan", "jobs", "--cache", &cache]);
    assert!(code == 0 && !err.contains("cache"), "{err}");
    assert_eq!(entries(Path::new(&cache)).len(), 1);
    // Signed: allowed inside, too (no commit can forge a signature).
    let keyed = [("LOAM_CACHE_KEY", KEY)];
    let (code, _, err) = loam_env(&root, &keyed, &["plan", "jobs", "--cache", ".loam-cache"]);
    assert!(code == 0 && !err.contains("cache"), "{err}");
    assert_eq!(entries(&root.join(".loam-cache")).len(), 1);
}

/// Keyed entries through the library: a signed entry verifies only under its key and only at
/// its own key's place (an older plan of the same job copied over a newer key's entry is not
/// taken), and an unkeyed entry is never trusted under a key.
#[test]
fn signed_entries_verify_only_under_their_key_and_place() {
    let root = repo_root();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root.join("examples/llama3-8b-finetune.loam")).unwrap();
    let project = checked(catalogue(), "a.loam", &text);
    let plan = plan_project(&project, 1).document.plans.remove(0);
    let job = &project.jobs[0];
    let (k1, k2) = (checksum(b"key 1"), checksum(b"key 2"));
    let signed = PlanCache::keyed(dir.path(), KEY.as_bytes()).unwrap();
    assert!(PlanCache::keyed(dir.path(), b"too short").is_none());
    assert!(signed.put(&k1, &plan));
    assert_eq!(signed.get(&k1, job).as_ref(), Some(&plan));
    assert_eq!(signed.rejected(), 0);
    // Copied to another key's place (header rewritten to match): not taken.
    let first = entries(dir.path()).pop().unwrap();
    let moved = std::fs::read_to_string(&first)
        .unwrap()
        .replacen(&k1, &k2, 1);
    let hex = k2.strip_prefix("sha256:").unwrap();
    let place = dir.path().join("plans-v1").join(&hex[..2]);
    std::fs::create_dir_all(&place).unwrap();
    std::fs::write(place.join(format!("{}.json", &hex[2..])), moved).unwrap();
    assert!(signed.get(&k2, job).is_none());
    assert_eq!(signed.rejected(), 1);
    // Another key, or none: not trusted (an unkeyed reader just does not use it).
    let other = PlanCache::keyed(dir.path(), b"a different secret, 32 bytes....").unwrap();
    assert!(other.get(&k1, job).is_none());
    assert_eq!(other.rejected(), 1);
    let unkeyed = PlanCache::at(dir.path());
    assert!(unkeyed.get(&k1, job).is_none());
    assert_eq!(unkeyed.rejected(), 0);
    // An unkeyed entry under a key: never trusted, counted, and warned about once.
    assert!(unkeyed.put(&k1, &plan));
    assert!(signed.get(&k1, job).is_none());
    assert_eq!(signed.rejected(), 2);
    let warning = signed.warning().unwrap();
    assert!(
        warning.starts_with("warning: 2 entries of the plan cache"),
        "{warning}"
    );
    assert!(!warning.contains(KEY));
    assert!(!format!("{signed:?}").contains(KEY));
}
