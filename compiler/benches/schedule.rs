//! Benchmark: `loam schedule` on 1,000 synthetic jobs over 90 days on the built-in xirang pool
//! (every node group, about 24,000 devices), the expected schedule and a Monte Carlo of 1,000
//! samples. Goals (issue 33): ≤ 2 s and ≤ 10 s on 2 cores; docs/scheduling.md records figures.

// criterion_group! generates undocumented public items; a benchmark reports what it measured;
// the synthetic plans index lists modulo their (non-empty) lengths and a JSON object by key.
#![allow(missing_docs, clippy::print_stdout, clippy::indexing_slicing)]

use criterion::{Criterion, criterion_group, criterion_main};
use loam_compiler::catalogue::builtin;
use loam_compiler::schedule::{Options, Rules, Submits, schedule};
use loam_ir::plan::Plan;
use std::hint::black_box;
use std::time::Duration;

/// 1,000 plans spread over xirang's node groups and tenants: 8–512 devices, 6–600 hours,
/// every priority, submitted over the first 60 days, a checkpoint every 30–120 min, one job
/// in ten interruptible with a night window; a deadline of twice the train time after
/// submission on every third job. Deterministic (arithmetic on the index).
fn plans(count: usize) -> (Vec<Plan>, Submits) {
    let catalogue = builtin();
    let Some(pool) = catalogue.pool("xirang") else {
        panic!("the built-in catalogue has no xirang pool");
    };
    let groups: Vec<(String, String, String, u64, u64)> = pool
        .node_groups()
        .map(|(site, g)| {
            (
                site.name.value.clone(),
                g.name.value.clone(),
                g.device.value.clone(),
                g.devices(),
                u64::from(g.devices_per_node.value),
            )
        })
        .collect();
    let tenants: Vec<String> = pool.tenants.iter().map(|t| t.name.value.clone()).collect();
    let priorities = ["low", "normal", "normal", "high", "critical"];
    let mut plans = Vec::new();
    let mut submits = Submits::new();
    for i in 0..count {
        let (site, group, device, capacity, per_node) = &groups[i % groups.len()];
        let devices = (8u64 << (i % 7)).min(*capacity).max(1);
        let hours = 6.0 + ((i * 37) % 600) as f64;
        let job = format!("job-{i:04}");
        let file = format!("specs/{job}.loam");
        let mut value = serde_json::json!({
            "job": job, "file": file, "feasible": true,
            "tenant": tenants[i % tenants.len()], "priority": priorities[i % priorities.len()],
            "interruptible": i % 10 == 0, "pool": "xirang",
            "workload": {"params": 7e9, "layers": 32, "hidden": 4096, "heads": 32,
                         "seq_len": 4096, "global_batch": 512, "tokens": 1e11, "precision": "bf16"},
            "groups": [{"site": site, "device": device, "nodes": devices.div_ceil(*per_node),
                        "devices": devices, "node_group": group,
                        "devices_per_node": per_node, "k8s_resource": "nvidia.com/gpu"}],
            "estimate": {"step_time_s": 1.0, "tokens_per_s": 1000.0,
                         "model_tflops_per_device": 400.0, "mfu": 0.4,
                         "flops_convention": "model", "memory_per_device_gib": 60.0,
                         "train_time_h": hours,
                         "cost": {"amount": hours * devices as f64 * 20.0, "currency": "CNY"},
                         "energy_kwh": 100.0, "carbon_kg": 50.0,
                         "breakdown_s": {"compute": 1.0, "tensor_comm": 0.0,
                                         "pipeline_bubble": 0.0, "data_comm": 0.0, "other": 0.0},
                         "throughput_uncertainty": 0.15,
                         "goodput": {"fraction": 0.95, "failure_free_time_h": hours * 0.95,
                                     "interruptions_per_device_hour": 2e-5,
                                     "interruptions_expected": 1.0, "restart_min": 10.0,
                                     "lost_work_min": 30.0, "checkpoint_stall_h": hours * 0.01,
                                     "restart_budget": 6}},
            "checkpoint": {"interval_min": 30.0 + (i % 4) as f64 * 30.0, "write_s": 30.0,
                           "path": "/ckpt/x"}
        });
        if i % 10 == 0 {
            value["schedule"] = serde_json::json!({"start_hour": 22, "hours_per_day": 8,
                "power_price_per_kwh": 0.3, "saving": 10.0, "train_time_h": hours * 3.0});
        }
        if i % 3 == 0 {
            value["goal"] = serde_json::json!({"optimize": "time", "deadline_h": hours * 2.0});
        }
        let plan: Plan = match serde_json::from_value(value) {
            Ok(p) => p,
            Err(e) => panic!("synthetic plan {i}: {e}"),
        };
        submits.insert(
            (plan.file.clone(), plan.job.clone()),
            ((i * 13) % 1440) as f64,
        );
        plans.push(plan);
    }
    (plans, submits)
}

fn bench(c: &mut Criterion) {
    let catalogue = builtin();
    let (plans, submits) = plans(1000);
    let mut options = Options {
        start: "2026-01-05".to_string(),
        horizon_h: 90.0 * 24.0,
        samples: 0,
        seed: 2026,
        threads: 2,
        rules: Rules::Kueue,
    };
    let once = schedule(&plans, &submits, &catalogue, &options);
    println!(
        "1,000 jobs: {} finished, {} deadlines ({} met), {} preemptions, {} queue points",
        once.jobs.iter().filter(|j| j.status == "finished").count(),
        once.totals.deadlines,
        once.totals.met,
        once.totals.preemptions,
        once.queue.len()
    );
    c.bench_function("schedule 1,000 jobs over 90 days", |b| {
        b.iter(|| black_box(schedule(&plans, &submits, &catalogue, &options)));
    });
    // 1,000 samples take tens of seconds: timed once here (criterion needs ten runs), and
    // 100 samples measured by criterion.
    options.samples = 1000;
    let started = std::time::Instant::now();
    let sampled = schedule(&plans, &submits, &catalogue, &options);
    println!(
        "Monte Carlo, 1,000 samples on {} threads, one run: {:.1} s ({} deadlines at risk)",
        options.threads,
        started.elapsed().as_secs_f64(),
        sampled.totals.at_risk
    );
    options.samples = 100;
    let mut group = c.benchmark_group("monte carlo");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(1));
    group.bench_function("schedule 1,000 jobs, 100 samples", |b| {
        b.iter(|| black_box(schedule(&plans, &submits, &catalogue, &options)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
