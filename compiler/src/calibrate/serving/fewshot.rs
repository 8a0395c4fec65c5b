//! Few-shot accuracy of a serving engine's efficiency (issue 30, "Numbers"): for each source
//! family of `tests/data/inference_runs_calibration.csv` with at least 8 costed rows (one engine
//! and version each), start from the serving constants refitted without that family, fit one
//! factor on 3 rows chosen by a fixed seed, the engine's efficiency (a multiplier on both the
//! bandwidth and the GEMM share its kernels reach), shrunk toward 1.0 as `f^(n/(n+1))` like the
//! training fit, and predict the other rows' throughput. Goal: median |error| ≤ 8 %.

use super::efficiency::{fit_efficiency, log_error};
use super::{PreparedServing, ServeFitted, fit, prepare_all};

const CSV: &str = include_str!("../../../../tests/data/inference_runs_calibration.csv");

fn lookup(id: &str) -> Option<crate::catalogue::Device> {
    thread_local! {
        static CATALOGUE: crate::catalogue::Catalogue = crate::catalogue::builtin();
    }
    CATALOGUE.with(|c| c.device(id).cloned())
}

/// splitmix64, as the training few-shot test draws its rows.
fn choose(n: usize, k: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed;
    for i in 0..k.min(n) {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let j = i + (z % (n - i) as u64) as usize;
        order.swap(i, j);
    }
    order.truncate(k.min(n));
    order.sort_unstable();
    order
}

#[test]
fn few_shot_engine_efficiency_on_three_rows_per_family() {
    let (_, prepared) = prepare_all(CSV, &lookup).unwrap();
    let rows: Vec<&PreparedServing> = prepared
        .iter()
        .map(|(_, p)| p)
        .filter(|p| log_error(p, &ServeFitted::SHIPPED).is_some())
        .collect();
    let mut families: Vec<&str> = rows.iter().map(|r| r.group.as_str()).collect();
    families.sort_unstable();
    families.dedup();
    println!(
        "{:<30} {:>5} {:>5} {:>10} {:>9} {:>11}",
        "family", "rows", "held", "left-out", "few-shot", "efficiency"
    );
    let (mut pooled_prior, mut pooled_fit) = (Vec::new(), Vec::new());
    let mut counted = 0;
    for family in families {
        let members: Vec<&PreparedServing> =
            rows.iter().copied().filter(|r| r.group == family).collect();
        if members.len() < 8 {
            continue;
        }
        counted += 1;
        let others: Vec<&PreparedServing> =
            rows.iter().copied().filter(|r| r.group != family).collect();
        let prior = fit(&others);
        let picked = choose(members.len(), 3, 30);
        let train: Vec<&PreparedServing> = picked
            .iter()
            .filter_map(|i| members.get(*i).copied())
            .collect();
        let held: Vec<&PreparedServing> = (0..members.len())
            .filter(|i| !picked.contains(i))
            .filter_map(|i| members.get(i).copied())
            .collect();
        let e = fit_efficiency(&train, &prior);
        let fitted = prior.with_efficiency(e);
        let abs = |f: &ServeFitted| -> Vec<f64> {
            held.iter()
                .filter_map(|r| log_error(r, f))
                .map(|l| 100.0 * (libm::exp(l) - 1.0).abs())
                .collect()
        };
        let (before, after) = (abs(&prior), abs(&fitted));
        println!(
            "{:<30} {:>5} {:>5} {:>9.1}% {:>8.1}% {:>11.3}",
            family,
            members.len(),
            held.len(),
            super::super::median(before.clone()),
            super::super::median(after.clone()),
            e
        );
        pooled_prior.extend(before);
        pooled_fit.extend(after);
    }
    let (prior, fitted) = (
        super::super::median(pooled_prior),
        super::super::median(pooled_fit),
    );
    println!("pooled held-back rows: left-out {prior:.1}%, few-shot {fitted:.1}%");
    // Two families have 8 or more rows costed with a throughput (the other large ones state
    // latencies only or are not costed). Measured when written (docs/calibration.md):
    // lmdeploy_a100_fp16 11.8 → 8.8 %, trtllm_perf_overview_v1.0 7.8 → 7.1 %, pooled 8.3 → 7.7 %.
    assert_eq!(counted, 2, "families with 8 or more costed rows");
    assert!(
        fitted < prior,
        "few-shot {fitted:.1}% vs left-out {prior:.1}%"
    );
    assert!(fitted <= 8.0, "few-shot {fitted:.1}% (goal 8 %)");
}
