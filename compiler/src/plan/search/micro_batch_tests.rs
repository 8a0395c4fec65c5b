//! The capped search skips the larger micro-batches of a placement once a shape fits under no
//! ZeRO stage and recomputation (rank memory never shrinks as the micro-batch grows): it must
//! keep exactly the layouts the full search, which walks every micro-batch, keeps.

use super::{Scores, search, search_capped};
use proptest::prelude::*;

fn time(c: &super::Candidate) -> f64 {
    c.train_time_s
}

proptest! {
    // Memories from 2 to 64 GiB against models of up to 16 blocks and contexts up to 32K: most
    // cases have placements where small micro-batches fit and large ones do not.
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn skipping_micro_batches_that_cannot_fit_keeps_what_the_full_walk_keeps(
        (layers, heads, ffn_factor) in (1u32..17, prop::sample::select(vec![8u32, 16, 32, 64]), 2u32..5),
        seq_len in prop::sample::select(vec![1024u32, 4096, 8192, 32_768]),
        global_batch in prop::sample::select(vec![12u32, 48, 64, 96, 360, 1024]),
        (devices_per_node, nodes) in (prop::sample::select(vec![1u32, 4, 8]), 1u32..5),
        memory_log2 in 31u32..37,
        keep in 1usize..5,
    ) {
        let (model, setup, cluster) = super::tests::random_job(
            (layers, heads, ffn_factor), seq_len, global_batch, 0, (devices_per_node, nodes),
            memory_log2,
        );
        let max_devices = cluster.devices();
        let spec = super::tests::search_of(&model, &setup, &cluster, keep);
        let full = search(&spec, &time);
        let capped = search_capped(&spec, &[&time], &[max_devices], Scores::Any, None, u64::MAX).0;
        let layouts = |c: &[super::Candidate]| c.iter().map(|c| c.layout).collect::<Vec<_>>();
        let kept = capped.first().and_then(|caps| caps.first()).cloned().unwrap_or_default();
        prop_assert_eq!(layouts(&full.ranked), layouts(&kept));
    }
}
