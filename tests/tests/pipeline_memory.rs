//! Pipeline memory per rank from the schedule itself (issue 27): a published layout that ran is
//! not refused, a pinned split whose last rank would run out of memory is, and the plan names the
//! rank that needs the most. Every expected number is derived by hand in the comments.

use loam_tests::run_cli;
use std::path::PathBuf;

/// `spec` written to a fresh scratch folder, as a path.
fn written(name: &str, spec: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loam-pipeline-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("job.loam");
    std::fs::write(&path, spec).unwrap();
    path
}

/// Llama 3.1 405B as Meta trained it (arXiv:2407.21783 §3.3.2): TP8 PP16 DP128 on 16,384 H100,
/// interleaved over 8 chunks per rank with the embedding and the loss counted as layers, micro-
/// batch 1, gradients and optimizer state sharded (ZeRO-2), no activation recomputation.
const META_405B: &str = r#"job "meta-405b" {
  tenant = "research"

  model {
    layers   = 126
    hidden   = 16384
    ffn      = 53248
    heads    = 128
    kv_heads = 8
    vocab    = 128256
    seq_len  = 8192
  }

  train {
    tokens       = 15.6T
    global_batch = 2048
    precision    = bf16
  }

  parallel {
    tensor         = 8
    context        = 1
    pipeline       = 16
    virtual_stages = 8
    data           = 128
    micro_batch    = 1
    zero           = 2
    recompute      = none
    pipeline_split = embedding_and_loss
  }

  resources {
    pool        = frontier
    devices     = [H100_SXM]
    max_devices = 16384
  }
}
"#;

#[test]
fn meta_405b_layout_plans_without_recomputation_on_its_fullest_rank() {
    let path = written("meta-405b", META_405B);
    let (code, out, err) = run_cli(&["plan", path.to_str().unwrap(), "--format", "json"], "");
    assert_eq!(code, 0, "{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    let job = &plan["plans"][0];
    assert_eq!(job["layout"]["recompute"], "none", "{job:#}");
    // By hand. 2,048 sequences over DP128 at micro-batch 1: m = 16 micro-batches. 126 blocks +
    // embedding + loss = 128 units on 16 × 8 chunks: every chunk one unit, so rank 0's chunks
    // hold the embedding and 7 blocks, ranks 1–14 hold 8 blocks, rank 15 7 blocks and the head.
    // Megatron's interleaved warm-up on rank 1 is 2·14 + 7·16 = 140 forwards, more than the
    // step's 16·8 = 128: all 128 chunk activations (one block each) are live at once.
    // Per token and block with sequence parallelism over TP8: h·8/8 = 16,384 bytes replicated,
    // plus (2·(128·128 + 8·256 + 128·128) + 2·3·53,248)/8 = 48,640: 65,024 bytes; 8,192 tokens:
    // 532.7 MB per block and micro-batch; 128 of them: 68.18 GB.
    // States of rank 1: a block is 2·16384² + 2·16384·1024 + 3·16384·53248 + 2·16384 =
    // 3,187.7M parameters, 398.5M per device, 3,188M for 8 blocks; bf16 weights 6.38 GB,
    // gradients and Adam's fp32 master and moments sharded over 128 ranks (4 + 12 bytes / 128):
    // 0.40 GB. 25 MiB gradient bucket. Total 74.98 GB = 69.8 GiB, on rank 1.
    let memory = job["estimate"]["memory_per_device_gib"].as_f64().unwrap();
    assert!((memory - 69.8).abs() < 0.2, "{memory} GiB");
    assert_eq!(job["estimate"]["memory_gib"]["rank"], 1, "{job:#}");
}

/// Llama 3 70B on PP4 × 2 chunks with a pinned split that puts 50 of 80 blocks on the last
/// rank.
fn seventy_b(stages: &str) -> String {
    format!(
        r#"job "heavy-last-rank" {{
  tenant = "research"

  model {{
    layers   = 80
    hidden   = 8192
    ffn      = 28672
    heads    = 64
    kv_heads = 8
    vocab    = 128256
    seq_len  = 8192
  }}

  train {{
    tokens       = 1T
    global_batch = 512
    precision    = bf16
  }}

  parallel {{
    tensor         = 8
    pipeline       = 4
    virtual_stages = 2
    data           = 8
    micro_batch    = 2
    zero           = 1
    recompute      = none
    stages         = {stages}
  }}

  resources {{
    pool        = frontier
    devices     = [H100_SXM]
    max_devices = 256
  }}
}}
"#
    )
}

#[test]
fn a_pinned_split_whose_last_rank_runs_out_of_memory_is_refused_naming_it() {
    // By hand. Rank 3 holds chunks 3 (20 blocks) and 7 (30). With 512 / (8 · 2) = 32
    // micro-batches, its warm-up is (2 − 1)·4 = 4 forwards of chunk 3 (micro-batches 0–3), then
    // the steady forward of chunk 7: 4·20 + 30 = 110 block-micro-batches live before any
    // backward. Per token and block (SP over TP8): 8,192 + (2·(64·128 + 8·256 + 64·128) +
    // 2·3·28,672)/8 = 34,304 bytes; 16,384 tokens: 562.0 MB; 110 of them: 61.8 GB.
    // States: a block is 2·8192² + 2·8192·1024 + 3·8192·28672 + 2·8192 = 855.6M parameters,
    // 106.95M per device; 50 blocks and the 131.3M head shard at 2 (bf16 weights) + 4 (fp32
    // main_grad) + 12/8 (Adam's fp32 master and moments over DP8) = 7.5 bytes: 41.1 GB; fp32
    // logits 16,384 × 16,032 × 4 = 1.05 GB; the head's inputs 0.54 GB. 104.5 GB = 97.35 GiB, on an
    // H100 of 79.6 GiB. The uniform formula (50 blocks × (1 + 3/8) micro-batches) said 68.75.
    let path = written("heavy", &seventy_b("[5, 5, 5, 20, 5, 5, 5, 30]"));
    let (code, out, err) = run_cli(&["plan", path.to_str().unwrap()], "");
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("L2108"), "{err}");
    assert!(err.contains("pipeline rank 3"), "{err}");
    let needed: f64 = err
        .split("needs at least ")
        .nth(1)
        .and_then(|rest| rest.split(" GiB").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!((needed - 97.35).abs() < 0.1, "{needed} GiB");
}

#[test]
fn the_same_blocks_split_evenly_fit() {
    // Ten blocks per chunk, 20 per rank: rank 0 holds the most in flight, 2·3 + 4 + 1 = 11
    // chunk activations of 10 blocks = 110 block-micro-batches as well (61.8 GB), but 20 blocks'
    // states (16.0 GB) and the embedding's shard instead of 50 blocks': it fits.
    let path = written("even", &seventy_b("[10, 10, 10, 10, 10, 10, 10, 10]"));
    let (code, out, err) = run_cli(&["plan", path.to_str().unwrap(), "--format", "json"], "");
    assert_eq!(code, 0, "{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    let memory = &plan["plans"][0]["estimate"]["memory_gib"];
    assert_eq!(memory["rank"], 0, "{memory:#}");
}
