//! Benchmark: one 70B job planned on a generated pool of 3 device types × 4 sites × 8,192
//! devices, heterogeneous pipelines included (the job's quota makes one group too small, so the
//! planner pairs groups). Goal: under 1 s; docs/performance.md records the figure. Also a dense
//! model of 1,000 layers on the shipped `xirang` pool (the reliability review's M2: its pipelines
//! over two groups cut a chain of 2,003 ops), goal under 1 s, and of 4,096 layers; and the two
//! slowest jobs of the grid docs/performance.md plans to find the slowest (issue 26).

// criterion_group! generates undocumented public items; a benchmark reports what it measured.
#![allow(missing_docs, clippy::print_stdout)]

use criterion::{Criterion, criterion_group, criterion_main};
use loam_compiler::catalogue::{builtin, builtin_devices_with_pool};
use loam_compiler::check::check_file;
use loam_compiler::plan::plan_job;
use loam_compiler::syntax::parse;
use loam_ir::span::FileId;
use std::fmt::Write;
use std::hint::black_box;

const SITES: [&str; 4] = ["north", "south", "east", "west"];
const TYPES: [(&str, f64); 3] = [
    ("H800_SXM", 26.0),
    ("Ascend910B", 9.0),
    ("A100_SXM_80GB", 12.0),
];

/// 4 sites of 256 nodes (86 + 85 + 85 per type), 8 devices each: 8,192 devices; a ring of WAN
/// links; one tenant with a quota of 256 + 256 per type.
fn pool() -> String {
    let mut y = String::from("id: big\nname: \"Generated pool\"\ncurrency:\n  base: CNY\nsites:\n");
    for (s, site) in SITES.iter().enumerate() {
        let _ = write!(
            y,
            "  - name: {site}\n    region: r{s}\n    city: c{s}\n    carbon_intensity: {}\n    pue: 1.2\n    storage_bandwidth: 200GB/s\n    power_price:\n      currency: CNY\n      per_kwh: [{}]\n    topology:\n      nodes_per_block: 32\n      block_uplink: 25.6Tbps\n      latency: 5us\n    node_groups:\n",
            300 + 100 * s,
            vec!["0.5"; 24].join(", ")
        );
        for (t, (device, price)) in TYPES.iter().enumerate() {
            let nodes = if t == 0 { 86 } else { 85 };
            let _ = write!(
                y,
                "      - name: {site}-{t}\n        device: {device}\n        nodes: {nodes}\n        devices_per_node: 8\n        free_devices: 100\n        nics: {{ count: 8, bandwidth: 200Gbps }}\n        price: {price} CNY\n        software: {{ driver: \"1\", version: \"24.04\" }}\n        slurm_partition: {site}-{t}\n        node_labels:\n          loam.io/node-group: {site}-{t}\n"
            );
        }
    }
    y.push_str("links:\n");
    for (i, a) in SITES.iter().enumerate() {
        let b = SITES.get((i + 1) % SITES.len()).copied().unwrap_or("north");
        let _ = write!(
            y,
            "  - between: [{a}, {b}]\n    latency: 10ms\n    bandwidth: 800Gbps\n    egress_price: 0.3 CNY\n"
        );
    }
    y.push_str("tenants:\n  - name: lab\n    checkpoint_root: /ckpt/lab\n    kubernetes_namespace: lab\n    slurm_account: lab\n    queue: lab\n    quota:\n");
    for (device, _) in TYPES {
        let _ = writeln!(
            y,
            "      - {{ device: {device}, guaranteed: 256, elastic: 256 }}"
        );
    }
    y
}

const JOB: &str = r#"job "big-70b" {
  tenant = "lab"

  model {
    layers   = 80
    hidden   = 8192
    ffn      = 28672
    heads    = 64
    kv_heads = 8
    vocab    = 128256
    seq_len  = 8192
  }

  train {
    tokens       = 1T
    global_batch = 1024
    precision    = bf16
  }

  resources {
    pool = big
  }

  goal {
    optimize = time
  }

  checkpoint {
    path = "/ckpt/lab/big-70b"
  }
}
"#;

fn bench(c: &mut Criterion) {
    let pool = pool();
    let (catalogue, diagnostics) = builtin_devices_with_pool("specs/pools/big.yaml", &pool);
    let Some(catalogue) = catalogue else {
        println!("the generated pool does not load: {diagnostics:?}");
        return;
    };
    let parsed = parse(FileId(0), JOB);
    let Some(file) = parsed.file else { return };
    let Some(job) = check_file(&file).jobs.into_iter().next() else {
        return;
    };
    let plan = plan_job(&job, "big-70b.loam", &catalogue);
    let groups: Vec<String> = plan
        .groups
        .iter()
        .map(|g| format!("{} × {} at {}", g.devices, g.device, g.site))
        .collect();
    println!(
        "3 types × 4 sites × 8192 devices: feasible {}, {} stages on {}",
        plan.feasible,
        plan.stages.len(),
        groups.join(" + ")
    );
    c.bench_function("plan_70b_3_types_4_sites_8192_devices", |b| {
        b.iter(|| plan_job(black_box(&job), "big-70b.loam", black_box(&catalogue)))
    });
}

/// The reliability review's reproducer `04-planner-layers-slow.sh` with `layers` blocks.
fn long_chain(layers: u32) -> String {
    format!(
        r#"job "h" {{
  tenant = "nlp"
  model {{
    layers   = {layers}
    hidden   = 1024
    ffn      = 4096
    heads    = 16
    vocab    = 128256
    seq_len  = 2048
  }}
  train {{
    tokens       = 2T
    global_batch = 4096
    precision    = bf16
  }}
  resources {{
    pool = xirang
  }}
}}
"#
    )
}

/// The reproducer at 1,000 layers (goal under 1 s) and at 4,096, where the two-group stage
/// partition's share of the time grows.
fn thousand_layers(c: &mut Criterion) {
    let catalogue = builtin();
    let mut group = c.benchmark_group("thousand_layers");
    group.sample_size(10);
    for layers in [1000, 4096] {
        let text = long_chain(layers);
        let parsed = parse(FileId(0), &text);
        let Some(file) = parsed.file else { return };
        let Some(job) = check_file(&file).jobs.into_iter().next() else {
            return;
        };
        group.bench_function(format!("plan_{layers}_layers_xirang"), |b| {
            b.iter(|| plan_job(black_box(&job), "h.loam", black_box(&catalogue)))
        });
    }
    group.finish();
}

/// A job of the grid docs/performance.md plans to find the slowest (issue 26): `layers`
/// blocks of `widths` (hidden, FFN, heads, vocabulary) on all of `xirang`, under `goal`.
fn grid_job(
    layers: u32,
    widths: [u32; 4],
    seq_len: u32,
    batch: u32,
    precision: &str,
    goal: &str,
) -> String {
    let [hidden, ffn, heads, vocab] = widths;
    format!(
        r#"job "g" {{
  tenant = "nlp"
  model {{
    layers   = {layers}
    hidden   = {hidden}
    ffn      = {ffn}
    heads    = {heads}
    kv_heads = 8
    vocab    = {vocab}
    seq_len  = {seq_len}
  }}
  train {{
    tokens       = 2T
    global_batch = {batch}
    precision    = {precision}
  }}
  resources {{
    pool = xirang
  }}
  goal {{
    {goal}
  }}
}}
"#
    )
}

/// The slowest jobs of that grid: 278 blocks 4,096 wide with a 77,219 FFN under a budget no
/// plan meets (every search runs to its end), and 926 blocks of Llama 3 8B's widths with
/// 45-token sequences, whose stages' reductions outweigh their compute.
fn slowest_of_the_grid(c: &mut Criterion) {
    let catalogue = builtin();
    let mut group = c.benchmark_group("slowest_of_the_grid");
    group.sample_size(10);
    let jobs = [
        (
            "plan_278_layers_4096_wide_cost_goal_xirang",
            grid_job(
                278,
                [4096, 77219, 32, 402_790],
                8192,
                4096,
                "bf16",
                "optimize = cost\n    budget   = 1M CNY",
            ),
        ),
        (
            "plan_926_layers_45_tokens_xirang",
            grid_job(
                926,
                [4096, 14336, 32, 128_256],
                45,
                1024,
                "fp8",
                "optimize = time\n    deadline = 40d",
            ),
        ),
    ];
    for (name, text) in jobs {
        let parsed = parse(FileId(0), &text);
        let Some(file) = parsed.file else { return };
        let Some(job) = check_file(&file).jobs.into_iter().next() else {
            return;
        };
        group.bench_function(name, |b| {
            b.iter(|| plan_job(black_box(&job), "g.loam", black_box(&catalogue)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench, thousand_layers, slowest_of_the_grid);
criterion_main!(benches);
