//! Services keep the context they ask for (issue 27): the engine is started with the model's
//! `seq_len` as its context (vLLM `--max-model-len`, SGLang `--context-length`) on every
//! backend, or the service is refused at `seq_len` with the numbers that say why (L2120), and
//! nothing is emitted.

use crate::loam_process::loam_in;
use std::fs;
use std::path::Path;

/// Llama 3.1 8B Instruct in bf16 for chat traffic on `engine`, asking for `seq_len` tokens of
/// context. The `chat` dataset's longest requests are p99 input 6,000 plus p99 output 1,200 =
/// 7,200 tokens, which the planner used to round up to 8,192 and serve with instead of `seq_len`.
fn chat_service(engine: &str, seq_len: u64) -> String {
    format!(
        r#"service "chat-8b" {{
  tenant = "nlp"

  model {{
    layers   = 32
    hidden   = 4096
    ffn      = 14336
    heads    = 32
    kv_heads = 8
    vocab    = 128256
    seq_len  = {seq_len}
  }}

  serve {{
    weights   = "meta-llama/Llama-3.1-8B-Instruct"
    precision = bf16
    engine    = {engine}
  }}

  traffic {{
    dataset = chat
    rate    = 2
  }}

  targets {{
    ttft = 2s
    tpot = 50ms
  }}

  resources {{
    pool    = xirang
    devices = [H100_SXM]
  }}
}}
"#
    )
}

/// Every file below `dir`, with its text.
fn texts(dir: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let text = fs::read_to_string(&path).unwrap_or_default();
                found.push((path.display().to_string(), text));
            }
        }
    }
    found.sort();
    found
}

/// The value after `flag` in a manifest: the next YAML list item or shell word, quotes removed.
fn values_after(text: &str, flag: &str) -> Vec<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c| c == '"' || c == '\'' || c == '\\')
                .to_string()
        })
        .filter(|w| w != "-")
        .collect();
    words
        .windows(2)
        .filter(|pair| pair[0] == flag)
        .map(|pair| pair[1].clone())
        .collect()
}

#[test]
fn a_service_is_planned_and_emitted_with_the_context_it_asks_for() {
    for (engine, flag) in [("vllm", "--max-model-len"), ("sglang", "--context-length")] {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("chat.loam"), chat_service(engine, 16384)).unwrap();

        // The plan keeps the asked 16,384 tokens, not the 8,192 the traffic's p99 rounds to.
        let (code, out, err) = loam_in(dir.path(), &["plan", "chat.loam", "--format", "json"]);
        assert_eq!(code, 0, "{engine}: {out}{err}");
        let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
        let service = &plan["services"][0];
        assert_eq!(service["feasible"], true, "{engine}: {service}");
        assert_eq!(service["model"]["max_model_len"], 16384, "{engine}");
        // Every role's replicas hold at least one such request in their KV cache.
        for role in service["roles"].as_array().unwrap() {
            let tokens = role["kv_cache_tokens"].as_f64().unwrap();
            assert!(tokens >= 16384.0, "{engine}: {role}");
        }

        // The engine gets it on every backend.
        for backend in ["kubernetes", "slurm", "baremetal"] {
            let (code, out, err) = loam_in(
                dir.path(),
                &["emit", "chat.loam", "--backend", backend, "--out", backend],
            );
            assert_eq!(code, 0, "{engine} {backend}: {out}{err}");
            let found: Vec<String> = texts(&dir.path().join(backend))
                .iter()
                .flat_map(|(_, text)| values_after(text, flag))
                .collect();
            assert!(!found.is_empty(), "{engine} {backend}: no {flag}");
            assert!(
                found.iter().all(|v| v == "16384"),
                "{engine} {backend}: {flag} {found:?}"
            );
        }
    }
}

/// The example of docs/diagnostics/L2120.md: Llama 3.1 70B in bf16 on at most four L40S with
/// its whole 131,072-token context.
fn refused_service() -> String {
    let page =
        fs::read_to_string(loam_tests::repo_root().join("docs/diagnostics/L2120.md")).unwrap();
    page.split("```loam\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap()
        .to_string()
}

#[test]
fn a_context_no_replica_holds_is_refused_at_seq_len_with_its_numbers_and_never_emitted() {
    let dir = tempfile::tempdir().unwrap();
    let text = refused_service();
    fs::write(dir.path().join("long.loam"), &text).unwrap();
    let line = text
        .lines()
        .position(|l| l.trim_start().starts_with("seq_len"))
        .unwrap()
        + 1;
    let (code, out, err) = loam_in(dir.path(), &["plan", "long.loam"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("L2120"), "{err}");
    assert!(
        err.contains(&format!("long.loam:{line}:")),
        "not at seq_len: {err}"
    );
    // By hand: 70.6 B parameters × 2 bytes over 4 devices = 35.3 GB = 32.9 GiB of weights per
    // device; an L40S has 48 GB = 44.7 GiB, 90 % of it (40.2 GiB) for vLLM, less 3 GiB of
    // workspace: 4.4 GiB of KV cache. One token caches 80 layers × 2 × 8 KV heads × 128 × 2
    // bytes = 327,680 bytes, 81,920 per device over 4 tensor ranks: 4.4 GiB hold about 57,400
    // tokens (57,344 rounded down to 1,024), and one 131,072-token request needs 131,072 ×
    // 81,920 bytes = 10.0 GiB.
    let flat = err.split_whitespace().collect::<Vec<_>>().join(" ");
    for part in [
        "131072-token context",
        "tensor 4 × pipeline 1",
        "needs 10.0 GiB of KV cache per device",
        "32.9 GiB of weights",
        "leave 4.4 GiB for the KV cache",
        "`seq_len = 57344` or less",
        "need 7,200 tokens",
    ] {
        assert!(flat.contains(part), "{part}: {flat}");
    }
    let (code, _, err) = loam_in(
        dir.path(),
        &["emit", "long.loam", "--backend", "kubernetes", "--out", "k"],
    );
    assert_ne!(code, 0, "{err}");
    assert!(!dir.path().join("k").exists(), "emit wrote manifests");

    // Half the context (65,536 tokens) still does not fit; the context the help names does.
    for (seq_len, refused) in [(65536, true), (57344, false)] {
        let shorter = text.replace("131072", &seq_len.to_string());
        fs::write(dir.path().join("long.loam"), &shorter).unwrap();
        let (code, out, err) = loam_in(dir.path(), &["check", "long.loam"]);
        assert_eq!(err.contains("L2120"), refused, "{seq_len}: {out}{err}");
        assert_eq!(code != 0, refused, "{seq_len}: {out}{err}");
    }
}
