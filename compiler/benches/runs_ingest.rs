//! Benchmark of `runs::ingest` on 10,000 synthetic Megatron-LM logs of 111 KB each (1.1 GB),
//! written once to a temporary folder and read back one file at a time, as `loam runs ingest`
//! does (`cargo bench -p loam-compiler --bench runs_ingest`). Issue 30's goal: under 30 s on 2
//! cores, with memory bounded by one file.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use criterion::{Criterion, criterion_group, criterion_main};
use loam_compiler::runs::ingest;
use std::fmt::Write as _;
use std::hint::black_box;

/// Counted: the figure, 10,000 logs.
const FILES: usize = 10_000;

/// One log: 305 intervals of Megatron's line and a checkpoint save every 50 (111 KB).
fn log() -> String {
    let mut text = String::new();
    for i in 1..=305u64 {
        let _ = writeln!(
            text,
            " [2026-11-02 10:05:36.123456] iteration {:8}/  500000 | consumed samples: {:12} | \
             elapsed time per iteration (ms): {:.1} | throughput per GPU (TFLOP/s/GPU): 372.2 | \
             learning rate: 1.500000E-05 | global batch size:  2048 | lm loss: 8.123456E+00 | \
             loss scale: 1.0 | grad norm: 2.345 | number of skipped iterations:   0 | number of \
             nan iterations:   0 |",
            i * 10,
            i * 20_480,
            9100.0 + (i % 7) as f64 * 13.1
        );
        if i % 50 == 0 {
            let _ = writeln!(
                text,
                "[2026-11-02 10:05:36.900000] saving checkpoint at iteration {:7} to /ckpt in \
                 torch_dist format",
                i * 10
            );
        }
    }
    text
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("loam-runs-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = log();
    let paths: Vec<_> = (0..FILES)
        .map(|i| {
            let path = dir.join(format!("run-{i:05}.log"));
            std::fs::write(&path, &text).unwrap();
            path
        })
        .collect();
    let mut group = c.benchmark_group("runs_ingest");
    group.sample_size(10);
    group.bench_function("10,000 Megatron logs, 1.1 GB, one file at a time", |b| {
        b.iter(|| {
            for path in &paths {
                let text = std::fs::read_to_string(path).unwrap();
                black_box(ingest(&text).unwrap());
            }
        });
    });
    group.finish();
    std::fs::remove_dir_all(&dir).unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
