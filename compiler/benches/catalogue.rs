//! Benchmarks of catalogue loading: the shipped catalogue, and a generated pool of 100,000
//! devices in 50 sites (`cargo bench -p loam-compiler --bench catalogue`).

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use criterion::{Criterion, criterion_group, criterion_main};
use loam_compiler::catalogue::{builtin_sources, load};
use loam_ir::span::FileId;
use std::fmt::Write as _;
use std::hint::black_box;

/// A pool of `n_sites` sites, each with 25 node groups of 10 nodes × 8 devices (2,000 devices per
/// site), linked in a chain, with 20 tenants.
fn generated_pool(n_sites: usize) -> String {
    let devices = ["H100_SXM", "H20", "Ascend910B", "A100_SXM_80GB", "MI300X"];
    let mut y = String::from(
        "id: big\nname: \"generated\"\ncurrency:\n  base: CNY\n  rates:\n    USD: 7.15\nsites:\n",
    );
    let prices = vec!["0.5"; 24].join(", ");
    for s in 0..n_sites {
        let _ = write!(
            y,
            "  - name: s{s}\n    region: r{s}\n    city: c{s}\n    carbon_intensity: 400\n    pue: 1.3\n    storage_bandwidth: 200GB/s\n    power_price:\n      currency: CNY\n      per_kwh: [{prices}]\n    topology:\n      nodes_per_block: 32\n      block_uplink: 25.6Tbps\n      latency: 5us\n    datasets:\n      - {{ name: d{s}, size: 10TB }}\n    node_groups:\n"
        );
        for g in 0..25 {
            let device = devices[g % devices.len()];
            let version = match device {
                "Ascend910B" => "8.0",
                "MI300X" => "6.2",
                _ => "12.4",
            };
            let _ = write!(
                y,
                "      - name: s{s}-g{g}\n        device: {device}\n        nodes: 10\n        devices_per_node: 8\n        free_devices: 40\n        nics: {{ count: 8, bandwidth: 400Gbps }}\n        price: 20 CNY\n        software: {{ driver: \"550\", version: \"{version}\" }}\n        slurm_partition: p{s}-{g}\n        node_labels:\n          loam.io/node-group: s{s}-g{g}\n"
            );
        }
    }
    y.push_str("links:\n");
    for s in 1..n_sites {
        let _ = write!(
            y,
            "  - between: [s{}, s{s}]\n    latency: 10ms\n    bandwidth: 400Gbps\n    egress_price: 0.3 CNY\n",
            s - 1
        );
    }
    y.push_str("tenants:\n");
    for t in 0..20 {
        let _ = write!(
            y,
            "  - name: t{t}\n    checkpoint_root: /ckpt/t{t}\n    kubernetes_namespace: t{t}\n    slurm_account: t{t}\n    queue: t{t}\n    quota:\n      - {{ device: H100_SXM, guaranteed: 100, elastic: 100 }}\n"
        );
    }
    y
}

fn bench(c: &mut Criterion) {
    let shipped: Vec<(FileId, &str, &str)> = builtin_sources()
        .into_iter()
        .enumerate()
        .map(|(i, (p, t))| (FileId(i as u32), p, t))
        .collect();
    assert!(load(&shipped).1.is_empty());
    c.bench_function("load shipped catalogue", |b| {
        b.iter(|| black_box(load(black_box(&shipped))))
    });

    let big = generated_pool(50);
    let mut sources: Vec<(FileId, &str, &str)> = builtin_sources()
        .into_iter()
        .enumerate()
        .map(|(i, (p, t))| (FileId(i as u32), p, t))
        .collect();
    sources.push((FileId(99), "specs/pools/big.yaml", &big));
    let (catalogue, diags) = load(&sources);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(
        catalogue.unwrap().pool("big").unwrap().total_devices(),
        100_000
    );
    let mut group = c.benchmark_group("generated");
    group.sample_size(10);
    group.bench_function("load 100k devices in 50 sites", |b| {
        b.iter(|| black_box(load(black_box(&sources))))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
