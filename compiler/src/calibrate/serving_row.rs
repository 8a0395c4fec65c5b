//! One row of a serving-run CSV (the columns of `tests/data/inference_runs_calibration.csv`),
//! read leniently: every cell is text, and each part a costing needs is parsed on its own, so a
//! row that cannot be costed yields a reason, never an error of the whole file.

use super::ASSUMED_GPT_VOCAB;
use super::cells::Cells;
use crate::serve::Load;
use crate::workload::ModelDims;
use loam_ir::types::{Engine, Mlp, ServePrecision};

/// Every column of the serving-run file, in its order; a CSV with most of them is this kind,
/// and one that lacks any is refused.
pub(super) const COLUMNS: [&str; 45] = [
    "run_id",
    "group",
    "source",
    "table",
    "engine",
    "engine_version",
    "model",
    "params_b",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "ffn",
    "vocab",
    "dims_source",
    "precision",
    "device",
    "device_count",
    "tp",
    "pp",
    "replicas",
    "scenario",
    "dataset",
    "input_len",
    "output_len",
    "batch_size",
    "concurrency",
    "request_rate",
    "num_requests",
    "reported_throughput",
    "reported_throughput_unit",
    "out_tok_s_total",
    "out_tok_s_per_device",
    "total_tok_s",
    "req_s",
    "ttft_ms",
    "ttft_stat",
    "tpot_ms",
    "tpot_stat",
    "itl_ms",
    "itl_stat",
    "e2e_latency_s",
    "e2e_stat",
    "quality",
    "notes",
];

/// Whether a header is the serving kind: it has the columns that only this file has.
pub(super) fn is_serving_header(headers: &[String]) -> bool {
    ["scenario", "engine", "ttft_ms", "out_tok_s_total"]
        .iter()
        .all(|c| headers.iter().any(|h| h == c))
}

/// The catalogue id of a device as the file names it in free text ("H100 SXM 80GB (DGX
/// H100)", "MI300X-192GB-750W", "Atlas 800T A2", "A100 (80GB/40GB variant not stated)" …), and
/// an assumption when the name leaves a choice open; `None` for a device it does not know.
pub(super) fn catalogue_id(name: &str) -> Option<(&'static str, Option<String>)> {
    let key: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let has = |s: &str| key.contains(s);
    let id = if has("gb200") {
        "GB200"
    } else if has("b200") {
        "B200"
    } else if has("h200") {
        "H200_SXM"
    } else if has("h800") {
        "H800_SXM"
    } else if has("h100") {
        if has("96gb") || has("hbm2e") {
            "H100_HBM2e_96GB"
        } else {
            "H100_SXM"
        }
    } else if has("h20") {
        "H20"
    } else if has("a100") {
        if has("40gb") && !has("80gb") {
            "A100_SXM_40GB"
        } else {
            let note = (has("40gb") || !has("80g")).then(|| {
                format!("device `{name}`: the 80 GB A100 assumed (the variant is not stated)")
            });
            return Some(("A100_SXM_80GB", note));
        }
    } else if has("l40s") {
        "L40S"
    } else if has("mi300x") {
        "MI300X"
    } else if has("mi250x") {
        "MI250X"
    } else if has("atlas800ta2") || has("910b") {
        "Ascend910B"
    } else if has("gaudi3") {
        "Gaudi3"
    } else if has("gaudi2") {
        "Gaudi2"
    } else if has("a10") {
        "A10"
    } else if has("v100") {
        "V100_SXM2_16GB"
    } else if has("t4") {
        "T4"
    } else {
        return None;
    };
    Some((id, None))
}

/// The engine a row's free-text `engine` names, and an assumption when it is a wrapper.
pub(super) fn engine(text: &str) -> Option<(Engine, Option<String>)> {
    let t = text.to_ascii_lowercase();
    if t.contains("tensorrt") || t.contains("trt-llm") || t.contains("trtllm") {
        Some((Engine::Trtllm, None))
    } else if t.contains("nim") {
        let note = format!("engine `{text}`: NIM's TensorRT-LLM backend assumed");
        Some((Engine::Trtllm, Some(note)))
    } else if t.contains("sglang") {
        Some((Engine::Sglang, None))
    } else if t.contains("lmdeploy") || t.contains("turbomind") {
        Some((Engine::Lmdeploy, None))
    } else if t.contains("mindie") {
        Some((Engine::Mindie, None))
    } else if t.contains("mindspore") || t.contains("mindformers") {
        let note = format!("engine `{text}`: costed as MindIE (Ascend)");
        Some((Engine::Mindie, Some(note)))
    } else if t.contains("vllm") {
        Some((Engine::Vllm, None))
    } else {
        None
    }
}

/// The weight precision a row's free-text `precision` names ("fp8 (weights; FP8 KV …)", "fp4",
/// blank = the checkpoint's 16-bit default), and an assumption when blank.
pub(super) fn precision(text: &str) -> Option<(ServePrecision, Option<String>)> {
    let t = text.to_ascii_lowercase();
    let p = if t.is_empty() {
        return Some((
            ServePrecision::Bf16,
            Some("precision not stated: bf16 assumed".into()),
        ));
    } else if t.starts_with("fp8") || t.starts_with("w8a8-fp8") {
        ServePrecision::Fp8
    } else if t.starts_with("fp4") || t.starts_with("nvfp4") || t.starts_with("mxfp4") {
        ServePrecision::Fp4
    } else if t.starts_with("int4")
        || t.contains("awq")
        || t.contains("gptq")
        || t.starts_with("w4")
    {
        ServePrecision::Int4
    } else if t.starts_with("int8") || t.starts_with("w8") {
        ServePrecision::Int8
    } else if t.starts_with("fp16") || t.starts_with("float16") {
        ServePrecision::Fp16
    } else if t.starts_with("bf16") || t.starts_with("bfloat16") {
        ServePrecision::Bf16
    } else {
        return None;
    };
    Some((p, None))
}

/// The load a row's scenario describes.
pub(super) fn load(row: &Cells) -> Result<Load, String> {
    let scenario = row.text("scenario").to_ascii_lowercase();
    let rate = row.text("request_rate").to_ascii_lowercase();
    let batch = row.number("batch_size");
    if scenario.contains("concurrency") {
        return row
            .number("concurrency")
            .map(Load::Concurrency)
            .ok_or_else(|| "fixed-concurrency scenario without a concurrency".into());
    }
    if scenario.contains("poisson") || (scenario.contains("online") && rate != "inf") {
        return row
            .number("request_rate")
            .map(Load::Rate)
            .ok_or_else(|| "online scenario without a request rate".into());
    }
    if scenario.contains("offline max")
        || scenario.contains("mlperf")
        || rate == "inf"
        || (scenario.contains("offline") && !scenario.contains("batch"))
    {
        return Ok(Load::Offline);
    }
    if scenario.contains("batch") || scenario.contains("latency") {
        return Ok(Load::StaticBatch(batch.unwrap_or(1.0)));
    }
    Err(format!(
        "scenario `{}` is not one loam can cost",
        row.text("scenario")
    ))
}

/// The model's dimensions, leniently: a blank `kv_heads` is read as multi-head attention, a
/// blank `vocab` as GPT-2's, a blank `ffn` solved from `params_b`; each such reading is listed.
pub(super) fn model_dims(row: &Cells, notes: &mut Vec<String>) -> Result<ModelDims, String> {
    let dim = |c: &str| {
        row.count(c)
            .ok_or_else(|| format!("model dims blank or unreadable: {c}"))
    };
    let layers = dim("layers")?;
    let hidden = dim("hidden")?;
    let heads = dim("heads")?;
    let named = mlp_of_weights(row.text("model"));
    let mlp = match row.text("mlp") {
        "" => named,
        m => Mlp::from_keyword(m).ok_or_else(|| format!("mlp `{m}` is not an MLP keyword"))?,
    };
    let kv_heads = row.count("kv_heads").unwrap_or_else(|| {
        notes.push(format!(
            "kv_heads blank: multi-head attention ({heads}) assumed"
        ));
        heads
    });
    let vocab = row.count("vocab").unwrap_or_else(|| {
        notes.push(format!("vocab blank: GPT-2's {ASSUMED_GPT_VOCAB} assumed"));
        ASSUMED_GPT_VOCAB
    });
    let ffn = match row.count("ffn") {
        Some(ffn) => ffn,
        None => {
            let params = row
                .number("params_b")
                .ok_or("model dims blank or unreadable: ffn (and no params_b to solve it from)")?
                * 1e9;
            let (h, l) = (f64::from(hidden), f64::from(layers));
            let head = f64::from(hidden / heads.max(1));
            let attention = 2.0 * h * h + 2.0 * h * f64::from(kv_heads) * head;
            let matrices = if mlp == Mlp::Swiglu { 3.0 } else { 2.0 };
            let ffn = (params - 2.0 * f64::from(vocab) * h - l * attention) / (l * matrices * h);
            if !(ffn.is_finite() && ffn >= 1.0) {
                return Err("ffn blank and params_b too small to solve it from".into());
            }
            let ffn = ffn.round() as u32;
            notes.push(format!(
                "ffn blank: {ffn} solved from params_b {}",
                row.text("params_b")
            ));
            ffn
        }
    };
    let seq = row.number("input_len").unwrap_or(0.0) + row.number("output_len").unwrap_or(0.0);
    let dense = ModelDims::dense(
        layers,
        hidden,
        ffn,
        heads,
        kv_heads,
        vocab,
        seq.max(1.0) as u32,
        mlp,
    );
    Ok(with_stated_model(row, dense))
}

/// The MLP a model's weights' name tells: gated (SwiGLU) for the families that use it, GELU
/// otherwise. The serving fit reads a row's MLP from its `model` column this way when the row
/// states none (the published file never does); the serving store writes one only where the
/// served model's differs.
pub fn mlp_of_weights(name: &str) -> Mlp {
    let name = name.to_ascii_lowercase();
    let gated = [
        "llama", "mistral", "mixtral", "qwen", "deepseek", "yi-", "gemma",
    ]
    .iter()
    .any(|m| name.contains(m));
    if gated { Mlp::Swiglu } else { Mlp::Gelu }
}

/// `dense` with what the row's model columns (the serving store's, `runs::store::model`) state
/// beyond a dense model: experts, the attention's shape, tied embeddings. Blank columns (every
/// published row) leave it as it is; the store's check has bounded every one.
fn with_stated_model(row: &Cells, dense: ModelDims) -> ModelDims {
    let whole = |c: &str| row.text(c).parse::<u32>().ok();
    let mut model = dense;
    if let (Some(experts), Some(top_k)) = (row.count("experts"), row.count("top_k"))
        && experts > 1
    {
        model = model.with_experts(experts, top_k);
        model.expert_ffn = row.count("expert_ffn");
        model.shared_experts = whole("shared_experts").unwrap_or(0);
        model.dense_layers = whole("dense_layers").unwrap_or(0);
        model.capacity_factor = row.number("capacity_factor");
    }
    if let Some(head_dim) = row.count("head_dim") {
        model = model.with_head_dim(head_dim);
    }
    if let (Some(q), Some(kv), Some(nope), Some(rope), Some(v)) = (
        whole("q_lora_rank"),
        row.count("kv_lora_rank"),
        row.count("qk_nope_head_dim"),
        row.count("qk_rope_head_dim"),
        row.count("v_head_dim"),
    ) {
        model = model.with_mla(crate::workload::Mla {
            q_lora_rank: q,
            kv_lora_rank: kv,
            qk_nope_head_dim: nope,
            qk_rope_head_dim: rope,
            v_head_dim: v,
        });
    }
    model.sliding_window = row.count("sliding_window");
    model.global_every = model.sliding_window.and(row.count("global_every"));
    model.tied_embeddings = row.text("tie_embeddings") == "true";
    model
}

/// Why the serving calibration would cost a stored run of a service whose model is `model` as
/// another model, or `None` when it reads the same one: `store_text` is a serving store file
/// (its header and the run's line), read as `loam calibrate --fit` reads it ([`model_dims`]).
/// The store's model columns make every model the checker accepts read back whole; this is the
/// guard that keeps it so (a store of an earlier header, or a model field the columns miss).
pub fn stored_serving_model_differs(store_text: &str, model: &ModelDims) -> Option<String> {
    let rows = super::cells::read_rows(store_text).ok()?;
    let Some(row) = rows.first() else {
        return Some("the row does not read back".into());
    };
    let read = match model_dims(row, &mut Vec::new()) {
        Ok(read) => read,
        Err(why) => return Some(why),
    };
    let shape = |d: &ModelDims| {
        [
            ("layers", d.layers.to_string()),
            ("hidden", d.hidden.to_string()),
            ("ffn", d.ffn.to_string()),
            ("heads", d.heads.to_string()),
            ("kv_heads", d.kv_heads.to_string()),
            ("vocab", d.vocab.to_string()),
            ("mlp", d.mlp.as_str().to_string()),
            ("arch", format!("{:?}", d.arch)),
            ("experts", d.experts.to_string()),
            ("top_k", d.top_k.to_string()),
            ("expert_ffn", format!("{:?}", d.expert_ffn)),
            ("shared_experts", d.shared_experts.to_string()),
            ("dense_layers", d.dense_layers.to_string()),
            ("capacity_factor", format!("{:?}", d.capacity_factor)),
            ("head_dim", format!("{:?}", d.head_dim)),
            ("mla", format!("{:?}", d.mla)),
            ("sliding_window", format!("{:?}", d.sliding_window)),
            ("global_every", format!("{:?}", d.global_every)),
            ("tie_embeddings", d.tied_embeddings.to_string()),
        ]
    };
    let differ: Vec<&str> = shape(model)
        .iter()
        .zip(shape(&read).iter())
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, _)| a.0)
        .collect();
    (!differ.is_empty()).then(|| {
        format!(
            "the serving store's columns would give `loam calibrate --fit` another model than \
             the service's (it differs in {})",
            differ.join(", ")
        )
    })
}
