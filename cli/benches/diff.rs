//! `loam diff` on a generated repository: 500 specs in a temp git repository (every tenth a
//! heterogeneous spec over two device types, spread over the three shipped pools), two
//! revisions that change 20 specs (10 of them heterogeneous) and the device-hour price of one
//! node group of one pool (`frontier`), so that pool's jobs are planned again on both sides.
//! Measured cold (no plan cache) and warm (a cache filled by a run on the base revision, as a
//! CI cache restores it); and warm on a third revision that changes 20 other specs and no
//! price, the common pull request. The goals (issue 32): cold with a price ≤ 10 s, warm with a
//! price ≤ 3 s, warm without ≤ 1 s; docs/gitops.md records the figures.

// Criterion's macros generate undocumented functions; a benchmark reports what it measured.
#![allow(missing_docs, clippy::print_stderr)]

use criterion::BatchSize;
use criterion::{Criterion, criterion_group, criterion_main};
use git2::{IndexAddOption, Repository, Signature, Time};
use loam_backends::Target;
use loam_cli::gitops::{Request, run};
use loam_cli::plan_cache::PlanCache;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SPECS: usize = 500;
const CHANGED: usize = 20;

/// Spec `i`: every tenth (`i % 10 == 5`) a 13B-class job over two device types of a pool the
/// tenant may use both of (xirang, frontier, lab in turn), the rest single-type 8B-class jobs.
fn spec(i: usize, batch: u32) -> String {
    if i % 10 == 5 {
        hetero(i, batch)
    } else {
        single(i, batch)
    }
}

fn hetero(i: usize, batch: u32) -> String {
    let (pool, devices) = match (i / 10) % 3 {
        0 => ("xirang", "H800_SXM, Ascend910B"),
        1 => ("frontier", "B200, Gaudi2"),
        _ => ("lab", "H100_SXM, Ascend910B"),
    };
    let batch = batch * 4;
    format!(
        "job \"job-{i:04}\" {{\n  tenant = \"nlp\"\n\n  model {{\n    layers   = 40\n    hidden   = 5120\n    ffn      = 13824\n    heads    = 40\n    kv_heads = 8\n    vocab    = 128256\n    seq_len  = 4096\n  }}\n\n  train {{\n    tokens       = 20B\n    global_batch = {batch}\n    precision    = bf16\n  }}\n\n  resources {{\n    pool    = {pool}\n    devices = [{devices}]\n  }}\n\n  goal {{\n    optimize = time\n    deadline = 30d\n  }}\n\n  checkpoint {{\n    path = \"/ckpt/nlp/job-{i:04}\"\n  }}\n}}\n"
    )
}

fn single(i: usize, batch: u32) -> String {
    let max = 8 << (i % 4);
    let layers = 24 + 8 * (i % 3);
    format!(
        "job \"job-{i:04}\" {{\n  tenant = \"nlp\"\n\n  model {{\n    layers   = {layers}\n    hidden   = 4096\n    ffn      = 14336\n    heads    = 32\n    kv_heads = 8\n    vocab    = 128256\n    seq_len  = 4096\n  }}\n\n  train {{\n    tokens       = 2B\n    global_batch = {batch}\n    precision    = bf16\n  }}\n\n  resources {{\n    pool        = xirang\n    max_devices = {max}\n  }}\n\n  goal {{\n    optimize = time\n    deadline = 2d\n  }}\n\n  checkpoint {{\n    path = \"/ckpt/nlp/job-{i:04}\"\n  }}\n}}\n"
    )
}

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).ok();
    }
    std::fs::write(full, text).ok();
}

fn commit(repo: &Repository, message: &str, time: i64) {
    let Ok(mut index) = repo.index() else { return };
    let _ = index.add_all(["*"].iter(), IndexAddOption::DEFAULT, None);
    let _ = index.write();
    let (Ok(tree_id), Ok(sig)) = (
        index.write_tree(),
        Signature::new("bench", "bench@loam.invalid", &Time::new(time, 0)),
    ) else {
        return;
    };
    let Ok(tree) = repo.find_tree(tree_id) else {
        return;
    };
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    let _ = repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents);
}

/// The generated repository: returns its folder (kept alive by the caller).
fn generate() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().ok()?;
    let root = dir.path();
    let repo = Repository::init(root).ok()?;
    for (path, text) in loam_compiler::catalogue::builtin_sources() {
        write(root, path, text);
    }
    for i in 0..SPECS {
        write(
            root,
            &format!("jobs/team-{}/job-{i:04}.loam", i % 10),
            &spec(i, 64),
        );
    }
    commit(&repo, "500 specs", 1_700_000_000);
    for i in (0..SPECS).step_by(SPECS / CHANGED) {
        write(
            root,
            &format!("jobs/team-{}/job-{i:04}.loam", i % 10),
            &spec(i, 128),
        );
    }
    // One node group's price: frontier's B200s.
    let pool = std::fs::read_to_string(root.join("specs/pools/frontier.yaml")).ok()?;
    write(
        root,
        "specs/pools/frontier.yaml",
        &pool.replacen("price: 4.5 USD", "price: 5.0 USD", 1),
    );
    commit(&repo, "20 specs and a price", 1_700_000_060);
    // 20 other specs (half of them heterogeneous), no price.
    for i in (10..SPECS).step_by(SPECS / CHANGED) {
        write(
            root,
            &format!("jobs/team-{}/job-{i:04}.loam", i % 10),
            &spec(i, 256),
        );
    }
    commit(&repo, "20 other specs", 1_700_000_120);
    Some(dir)
}

fn request(root: &Path, base: &str, head: &str, cache: Option<&Path>) -> Request {
    Request {
        base: base.into(),
        head: Some(head.into()),
        paths: vec![root.to_path_buf()],
        catalogue: None,
        manifests: Some(Target::Kubernetes),
        cache: cache.map(PlanCache::at),
    }
}

/// A copy of cache folder `from` in a fresh temp folder.
fn copy_cache(from: &Path) -> Option<tempfile::TempDir> {
    let to = tempfile::tempdir().ok()?;
    let mut stack: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(from.join(&rel)).ok()?.flatten() {
            let rel = rel.join(entry.file_name());
            if entry.path().is_dir() {
                std::fs::create_dir_all(to.path().join(&rel)).ok()?;
                stack.push(rel);
            } else {
                std::fs::copy(entry.path(), to.path().join(&rel)).ok()?;
            }
        }
    }
    Some(to)
}

fn report(what: &str, request: &Request) {
    let start = Instant::now();
    if let Ok(outcome) = run(request) {
        let summary = outcome.diff.summary();
        eprintln!(
            "diff of {SPECS} specs ({CHANGED} changed), {what}: {:.2} s, {} to change, {} unchanged, plans reused: head {}, base {}",
            start.elapsed().as_secs_f64(),
            summary.change,
            summary.unchanged,
            outcome.head.reused(),
            outcome.base.reused(),
        );
    }
}

/// A diff from `base` to `head` with the plan cache `warm` (a copy made outside the
/// measurement), returned with the number of jobs so that it is removed outside it too.
fn warm_run(
    root: &Path,
    (base, head): (&str, &str),
    warm: Option<tempfile::TempDir>,
) -> (usize, Option<tempfile::TempDir>) {
    let dir = warm.as_ref().map(|w| w.path());
    let jobs = run(&request(root, base, head, dir))
        .map(|o| o.diff.jobs.len())
        .unwrap_or_default();
    (jobs, warm)
}

fn bench(c: &mut Criterion) {
    let Some(dir) = generate() else { return };
    let root = dir.path();
    let cold = request(root, "HEAD~2", "HEAD~1", None);
    report("cold, one price", &cold);
    // Each warm case with the cache a CI run on its base revision leaves: the base planned once.
    let mut warm_cases = Vec::new();
    for (name, revisions) in [
        ("one price", ("HEAD~2", "HEAD~1")),
        ("no price", ("HEAD~1", "HEAD")),
    ] {
        let Ok(filled) = tempfile::tempdir() else {
            return;
        };
        let _ = run(&request(
            root,
            revisions.0,
            revisions.0,
            Some(filled.path()),
        ));
        if let Some(warm) = copy_cache(filled.path()) {
            report(
                &format!("warm, {name}"),
                &request(root, revisions.0, revisions.1, Some(warm.path())),
            );
        }
        warm_cases.push((name, revisions, filled));
    }
    let mut group = c.benchmark_group("diff");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.bench_function(
        "500 specs, 50 heterogeneous, 20 changed, one price: cold",
        |b| {
            b.iter(|| run(&cold).map(|o| o.diff.jobs.len()).unwrap_or_default());
        },
    );
    for (name, revisions, filled) in &warm_cases {
        group.bench_function(
            format!("500 specs, 50 heterogeneous, 20 changed, {name}: warm"),
            |b| {
                b.iter_batched(
                    || copy_cache(filled.path()),
                    |warm| warm_run(root, *revisions, warm),
                    BatchSize::PerIteration,
                );
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
