//! Benchmark: planning one model service on the xirang pool of the built-in catalogue (every
//! device type × tensor/pipeline/expert degree × batch limit, aggregated and disaggregated, the
//! Pareto front). Goal: under 100 ms; docs/performance.md records the figures.

// criterion_group! generates undocumented public items; a benchmark reports what it measured.
#![allow(missing_docs, clippy::print_stdout)]

use criterion::{Criterion, criterion_group, criterion_main};
use loam_compiler::catalogue::builtin;
use loam_compiler::check::{Service, check_file};
use loam_compiler::plan::service::plan_service;
use loam_compiler::syntax::parse;
use loam_ir::span::FileId;
use std::hint::black_box;

/// The first service of a shipped example.
fn service(name: &str) -> Service {
    let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let parsed = parse(FileId(0), &text);
    let file = parsed
        .file
        .unwrap_or_else(|| panic!("{name} does not parse"));
    check_file(&file)
        .services
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{name} has no service"))
}

fn bench(c: &mut Criterion) {
    let catalogue = builtin();
    for name in [
        "llama31-70b-chat-service.loam",
        "rag-llama31-8b-service.loam",
        "qwen3-235b-moe-service.loam",
    ] {
        let service = service(name);
        c.bench_function(&format!("plan service {name}"), |b| {
            b.iter(|| black_box(plan_service(&service, name, &catalogue)));
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
