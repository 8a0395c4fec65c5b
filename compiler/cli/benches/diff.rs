//! `loam diff` on a generated repository: 500 specs in a temp git repository, two revisions
//! that change 20 specs and one device-hour price of the catalogue (so every job is planned
//! again on both sides). The goal is under 5 s; docs/gitops.md records the figure.

// Criterion's macros generate undocumented functions; a benchmark reports what it measured.
#![allow(missing_docs, clippy::print_stderr)]

use criterion::{Criterion, criterion_group, criterion_main};
use git2::{IndexAddOption, Repository, Signature, Time};
use loam_backends::Target;
use loam_cli::gitops::{Request, run};
use std::path::Path;
use std::time::{Duration, Instant};

const SPECS: usize = 500;
const CHANGED: usize = 20;

fn spec(i: usize, batch: u32) -> String {
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
    let pool = std::fs::read_to_string(root.join("specs/pools/xirang.yaml")).ok()?;
    write(
        root,
        "specs/pools/xirang.yaml",
        &pool.replacen("price: 32.0 CNY", "price: 34.0 CNY", 1),
    );
    commit(&repo, "20 specs and a price", 1_700_000_060);
    Some(dir)
}

fn bench(c: &mut Criterion) {
    let Some(dir) = generate() else { return };
    let request = Request {
        base: "HEAD~1".into(),
        head: Some("HEAD".into()),
        paths: vec![dir.path().to_path_buf()],
        catalogue: None,
        manifests: Some(Target::Kubernetes),
        cache: None,
    };
    let start = Instant::now();
    if let Ok(outcome) = run(&request) {
        let summary = outcome.diff.summary();
        eprintln!(
            "diff of {SPECS} specs ({CHANGED} changed + a price): {:.2} s, {} to change, {} unchanged",
            start.elapsed().as_secs_f64(),
            summary.change,
            summary.unchanged
        );
    }
    let mut group = c.benchmark_group("diff");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.bench_function("500 specs, 20 changed, one price", |b| {
        b.iter(|| run(&request).map(|o| o.diff.jobs.len()).unwrap_or_default());
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
