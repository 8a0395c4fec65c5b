//! A capped search whose objectives score by time and devices alone skips the placements and
//! shapes whose least possible training time cannot rank ([`Scores::ByTimeAndDevices`]): it
//! must keep exactly what a plain search of each objective and cap keeps, under goals whose
//! scores grow with the time in different ways (time, device-hours, a deadline's penalty,
//! failures and money), for dense and MoE models (whose expert all-to-alls the shape's floor
//! counts at their least exposed). A plain search of such an objective skips costing the
//! shapes that cannot rank: it must keep what it keeps without skipping, with the same scores
//! and the same rejected regions; one that records the regions only until it keeps a candidate
//! (the planner's, [`search_within`]) skips placements and shapes from there as the capped
//! search does, and must keep the same, with the same scores, and the same regions when it
//! keeps none. A placement is skipped on the larger of two floors: its model
//! FLOPs at the fastest kernel, and its blocks' least floor per sequence over its micro-batches
//! (`Costing::placement_step_floor`); inflating the second by a tenth makes this test fail.

use super::{
    Candidate, Economics, Objective, Scores, SearchSpec, search, search_capped, search_scored,
    search_within,
};
use crate::plan::goodput::Failures;
use loam_ir::types::Optimize;
use proptest::prelude::*;

fn time(c: &Candidate) -> f64 {
    c.train_time_s
}

fn device_hours(c: &Candidate) -> f64 {
    c.device_hours
}

proptest! {
    // Models of up to 24 blocks, batches with few and many divisors, one to six nodes, memories
    // where some shapes overflow: the kept lists fill early or late, and the deadline is met by
    // some layouts and missed by others.
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn skipping_what_cannot_rank_keeps_what_each_search_keeps(
        (layers, heads, ffn_factor) in (1u32..25, prop::sample::select(vec![8u32, 16, 32, 64]), 2u32..5),
        seq_len in prop::sample::select(vec![1024u32, 4096, 8192]),
        global_batch in prop::sample::select(vec![12u32, 48, 64, 360, 1024]),
        (devices_per_node, nodes) in (prop::sample::select(vec![1u32, 4, 8]), 1u32..7),
        memory_log2 in 32u32..37,
        keep in 1usize..5,
        deadline_log10 in 2i32..7,
        experts in prop::sample::select(vec![0u32, 8]),
    ) {
        let (model, setup, cluster) = super::tests::random_job(
            (layers, heads, ffn_factor), seq_len, global_batch, experts, (devices_per_node, nodes),
            memory_log2,
        );
        let max_devices = cluster.devices();
        let deadline_s = 10f64.powi(deadline_log10);
        let late = move |c: &Candidate| {
            if c.train_time_s > deadline_s {
                1e100 * (1.0 + c.train_time_s / deadline_s)
            } else {
                c.device_hours
            }
        };
        let balanced = Economics {
            optimize: Optimize::Balanced,
            price_per_device_hour: 2.5,
            watts_per_device: 1100.0,
            carbon_g_per_kwh: 550.0,
            failures: Failures {
                per_device_s: 1.0 / 2e6,
                write_s: 40.0,
                restart_s: 600.0,
                pinned_interval_s: None,
            },
        };
        let objectives: [&dyn Objective; 4] = [&time, &device_hours, &late, &balanced];
        let mut caps = vec![max_devices, max_devices / 2, max_devices / 4];
        caps.retain(|&c| c >= 1);
        caps.dedup();
        let spec = super::tests::search_of(&model, &setup, &cluster, keep);
        let lists = search_capped(&spec, &objectives, &caps, Scores::ByTimeAndDevices, None, u64::MAX).0;
        prop_assert_eq!(lists.len(), objectives.len());
        for (objective, by_cap) in objectives.iter().zip(&lists) {
            for (&cap, kept) in caps.iter().zip(by_cap) {
                let capped = SearchSpec { max_devices: cap, ..spec.clone() };
                let alone = search(&capped, *objective);
                prop_assert_eq!(kept, &alone.ranked, "cap {}", cap);
                let scored = search_scored(&capped, *objective, Scores::ByTimeAndDevices);
                prop_assert_eq!(&scored.ranked, &alone.ranked, "cap {}", cap);
                prop_assert_eq!(&scored.scores, &alone.scores, "cap {}", cap);
                prop_assert_eq!(&scored.rejected, &alone.rejected, "cap {}", cap);
                prop_assert_eq!(scored.stats.enumerated, alone.stats.enumerated);
                prop_assert!(scored.stats.evaluated <= alone.stats.evaluated);
                let ranked = search_within(
                    &capped,
                    *objective,
                    Scores::ByTimeAndDevices,
                    false,
                    u64::MAX,
                );
                prop_assert_eq!(&ranked.ranked, &alone.ranked, "cap {}", cap);
                prop_assert_eq!(&ranked.scores, &alone.scores, "cap {}", cap);
                if alone.ranked.is_empty() {
                    prop_assert_eq!(&ranked.rejected, &alone.rejected, "cap {}", cap);
                }
                prop_assert!(ranked.stats.enumerated <= alone.stats.enumerated);
            }
        }
    }
}
