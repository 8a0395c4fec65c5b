//! Benchmark: planning Llama-3.1-405B on 16,384 H100 with every layout field on auto.

// criterion_group! generates undocumented public items.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use loam_compiler::hardware::{ClusterFigures, DeviceFigures};
use loam_compiler::plan::search::{Candidate, SearchSpec, search};
use loam_compiler::workload::Pins;
use loam_compiler::workload::{ModelDims, TrainSetup};
use loam_ir::types::{Mlp, Optimizer, Precision};
use std::collections::BTreeMap;
use std::hint::black_box;

/// H100 SXM datasheet figures (dense), as in `specs/devices` and `devices.csv`.
fn h100() -> DeviceFigures {
    let mut peak = BTreeMap::new();
    peak.insert(Precision::Bf16, 989.4e12);
    peak.insert(Precision::Fp16, 989.4e12);
    peak.insert(Precision::Fp8, 1978.9e12);
    DeviceFigures {
        id: "H100_SXM".into(),
        peak_flops: peak,
        memory_bytes: 80e9,
        memory_bandwidth: 3.35e12,
        scale_up_bandwidth: 450e9,
        devices_per_node: 8,
        scale_up_domain: 8,
        tdp_watts: 700.0,
        efficiency: loam_compiler::hardware::Efficiency::unmeasured(),
    }
}

fn bench(c: &mut Criterion) {
    let model = ModelDims::dense(126, 16384, 53248, 128, 8, 128_256, 8192, Mlp::Swiglu);
    // Llama 3.1 405B: 16M-token batches of 8K sequences, 15.6T tokens.
    let setup = TrainSetup {
        global_batch: 2048,
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        tokens: 15.6e12,
        flash_attention: true,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: loam_compiler::workload::StateOverrides::NONE,
    };
    let cluster = ClusterFigures {
        device: h100(),
        devices_per_node: 8,
        nodes: 2048,
        node_network_bandwidth: 400e9,
        nics_per_node: 8,
        network_latency_s: 5e-6,
        block: None,
        fitted: loam_compiler::cost::FittedConstants::SHIPPED,
    };
    let spec = SearchSpec {
        model: &model,
        setup: &setup,
        cluster: &cluster,
        pins: Pins::default(),
        max_devices: 16384,
        keep: 5,
    };
    let time = |c: &Candidate| c.train_time_s;
    let result = search(&spec, &time);
    let stats = result.stats;
    #[allow(clippy::print_stdout)] // a benchmark reports what it measured
    {
        println!(
            "405B on 16384 H100: raw space {:.3e}, enumerated {}, costed {}, rejected regions {}",
            stats.raw_space,
            stats.enumerated,
            stats.evaluated,
            result.rejected.len()
        );
        if let Some(best) = result.ranked.first() {
            println!("best {:?}: mfu {:.3}", best.layout, best.estimate.mfu);
        }
    }
    c.bench_function("plan_405b_16k_h100_auto", |b| {
        b.iter(|| search(black_box(&spec), &time))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
