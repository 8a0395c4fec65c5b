//! A stored run of a disaggregated deployment is costed with its prefill and decode roles apart,
//! its KV cache over the stored scale-out, and a bounded concurrency at the rate it sustains.

use super::super::efficiency::prepare_store_rows;
use super::super::{PreparedServing, ServeFitted, prepare_cells};
use super::point;
use crate::serve::Load;

fn lookup(id: &str) -> Option<crate::catalogue::Device> {
    crate::catalogue::builtin().device(id).cloned()
}

/// The vLLM fixture's run (`tests/data/runs/vllm-benchmark-serving.json`: 8 requests/s, 215.3
/// input and 198.6 output tokens a request) of the chat example's deployment: two tp2 decode
/// replicas of 512 sequences and four tp2 prefill replicas of 64, 12 H800 on nodes of 8 devices,
/// 50 GB/s each off the node.
const ROW: &str = "zhongwei_2026-12-04_vllm-benchmark-serving,2026-12-04,xirang,zhongwei,\
llama31-70b-chat,vllm-benchmark-serving,vllm-benchmark-serving.json,vllm,,\
meta-llama/Llama-3.1-70B-Instruct,80,8192,64,8,28672,128256,fp8,H800_SXM,12,2,1,2,poisson,215.3,\
198.6,8,,1513.70,7.6200,78.20,241.90,30.50,52.70,500.00,185.00,33.00,0.1000,\
runs store: vllm-benchmark-serving,8,50.000,512,2,1,4,64\n";

fn prepared(row: &str) -> PreparedServing {
    let text = format!("{}\n{row}", crate::runs::store::serving::COLUMNS);
    let rows = prepare_store_rows(&text, &lookup);
    assert_eq!(rows.len(), 1, "{row}");
    rows.into_iter().next().unwrap().1
}

#[test]
fn the_prefill_role_the_link_and_the_decode_role_each_move_their_own_figures() {
    let stored = prepared(ROW);
    assert!(stored.is_disaggregated());
    // The whole deployment's rate, not a replica's share.
    assert_eq!(stored.load, Load::Rate(8.0));
    let base = stored.predict(&ServeFitted::SHIPPED);
    // Below capacity the deployment generates what it is offered: 8 × 198.6 tokens/s.
    assert!((base.throughput - 8.0 * 198.6).abs() < 1e-6, "{base:?}");
    // Llama 3.1 70B's fp8 KV cache is 2 × 8 heads × 128 × 80 blocks × 1 byte = 163,840 bytes a
    // token; the median prompt's 215.3 tokens cross 1 MB/s in 35.274 s and 50 GB/s in 0.7 ms.
    let slow_link =
        prepared(&ROW.replace(",8,50.000,", ",8,0.001,")).predict(&ServeFitted::SHIPPED);
    let by_hand = 215.3 * 163_840.0 * (1.0 / 1e6 - 1.0 / 50e9);
    assert!(
        (slow_link.ttft_s - base.ttft_s - by_hand).abs() < 1e-6,
        "{slow_link:?} {base:?} {by_hand}"
    );
    assert_eq!(slow_link.tpot_s, base.tpot_s);
    // Wider prefill replicas prefill faster and leave the decode steps alone.
    let wide_prefill =
        prepared(&ROW.replace(",2,1,4,64\n", ",4,1,2,64\n")).predict(&ServeFitted::SHIPPED);
    assert!(
        wide_prefill.ttft_s < base.ttft_s,
        "{wide_prefill:?} {base:?}"
    );
    assert_eq!(wide_prefill.tpot_s, base.tpot_s);
    // Wider decode replicas step faster.
    let wide_decode = prepared(&ROW.replace(",12,2,1,2,poisson,", ",12,4,1,1,poisson,"))
        .predict(&ServeFitted::SHIPPED);
    assert!(wide_decode.tpot_s < base.tpot_s, "{wide_decode:?} {base:?}");
    // Read as six aggregated replicas (the store's first header could say nothing else), the
    // prompts are prefilled beside the decode steps and the figures differ.
    let aggregated = prepared(
        &ROW.replace(",12,2,1,2,poisson,", ",12,2,1,6,poisson,")
            .replace(",2,1,4,64\n", ",,,,\n"),
    );
    assert!(!aggregated.is_disaggregated());
    let a = aggregated.predict(&ServeFitted::SHIPPED);
    assert!(
        a.ttft_s != base.ttft_s && a.tpot_s != base.tpot_s,
        "{a:?} {base:?}"
    );
}

#[test]
fn a_bounded_concurrency_runs_at_the_rate_little_s_law_allows_and_no_faster_than_capacity() {
    let concurrent = |clients: &str| {
        prepared(&ROW.replace(
            ",poisson,215.3,198.6,8,,",
            &format!(",fixed concurrency,215.3,198.6,inf,{clients},"),
        ))
    };
    let row = concurrent("16");
    assert_eq!(row.load, Load::Concurrency(16.0));
    // The deployment's sixteen clients are no decode replica's batch limit: the plan's 512 is.
    assert_eq!(row.max_batch, 512);
    let p = point(&row, row.prefill.unwrap(), &ServeFitted::SHIPPED);
    // Sixteen clients, each in the system for its TTFT and 198.6 tokens at the TPOT.
    let in_flight = p.requests_per_s * (p.ttft_p50_s + 198.6 * p.tpot_p50_s);
    assert!(p.stable && (in_flight - 16.0).abs() < 1e-6, "{p:?}");
    // A million clients saturate the deployment: its capacity, one per cent more is unstable.
    let saturated = concurrent("1000000");
    let capacity = point(
        &saturated,
        saturated.prefill.unwrap(),
        &ServeFitted::SHIPPED,
    );
    assert!(
        capacity.stable && capacity.requests_per_s > p.requests_per_s,
        "{capacity:?}"
    );
    let over = PreparedServing {
        load: Load::Rate(capacity.requests_per_s * 1.01),
        ..saturated.clone()
    };
    assert!(!point(&over, over.prefill.unwrap(), &ServeFitted::SHIPPED).stable);
}

#[test]
fn a_disaggregated_run_that_sent_every_request_at_once_is_not_costed() {
    let text = format!(
        "{}\n{}",
        crate::runs::store::serving::COLUMNS,
        ROW.replace(
            ",poisson,215.3,198.6,8,,",
            ",offline max throughput,215.3,198.6,inf,,"
        )
    );
    let cells = super::super::super::cells::read_rows(&text).unwrap();
    let (report, costable) = prepare_cells(&cells, &lookup);
    assert!(costable.is_empty());
    let reason = report[0].not_costed.as_deref().unwrap_or("");
    assert!(
        reason.contains("disaggregated deployment is costed at a request rate"),
        "{reason}"
    );
}
