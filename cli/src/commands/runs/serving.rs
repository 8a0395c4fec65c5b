//! `loam runs ingest BENCH.json --plan PLAN.json --job SERVICE --append`: a serving benchmark
//! of a planned service as one row of the site's serving store file,
//! `<catalogue>/runs/<site>/serving.csv` (`loam_compiler::runs::store::serving`), written by the
//! same append-only writer as training rows (`append::append_lines`).

use loam_compiler::catalogue::Catalogue;
use loam_compiler::check::Service;
use loam_compiler::runs::ServingMeasure;
use loam_compiler::runs::store::serving::ServingRow;
use serde_json::Value;
use std::path::Path;

/// The store row of one serving benchmark against the plan of the service it measured; the
/// scale-out of its node groups is read from `catalogue` (blank when the catalogue no longer
/// has them).
pub fn row(
    log: &str,
    measured: &ServingMeasure,
    plan: &Value,
    service: &Service,
    catalogue: &Catalogue,
    date: &str,
) -> Result<ServingRow, String> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let roles = plan
        .get("roles")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let (Some(first), Some(generating)) = (roles.first(), roles.last()) else {
        return Err("the service's plan has no deployment (is it feasible?)".into());
    };
    let of_group = |role: &Value, key: &str| text(role.get("group").and_then(|g| g.get(key)));
    let site = of_group(first, "site");
    let device = of_group(first, "device");
    if roles
        .iter()
        .any(|r| of_group(r, "site") != site || of_group(r, "device") != device)
    {
        return Err(
            "the service's roles run on more than one device type or site: the runs \
                    store keeps runs of one device type at one site"
                .into(),
        );
    }
    let pool = text(plan.get("pool"));
    super::append::folder_names(&site, &pool)?;
    let count = |v: Option<&Value>| {
        v.and_then(Value::as_u64)
            .and_then(|d| u32::try_from(d).ok())
            .filter(|d| *d > 0)
    };
    let estimate = plan.get("estimate");
    let devices = count(estimate.and_then(|e| e.get("devices")))
        .ok_or("the service's plan states no device count")?;
    // The role that generates the tokens (`decode`, or the only one, `serve`) gives the
    // replica's shape; a disaggregated deployment's prefill role is stated beside it.
    let tp = count(generating.get("tensor")).unwrap_or(1);
    let pp = count(generating.get("pipeline")).unwrap_or(1);
    let prefill = match roles {
        [first, _] if first.get("role").and_then(Value::as_str) == Some("prefill") => Some(first),
        _ => None,
    };
    let replicas = match prefill {
        Some(_) => count(generating.get("replicas"))
            .ok_or("the service's plan states no decode replicas")?,
        None => (devices / (tp * pp).max(1)).max(1),
    };
    let prefill_count = |key: &str| prefill.and_then(|p| count(p.get(key)));
    // The slowest scale-out of the roles' node groups: a replica's off-node bandwidth, and the
    // link a prompt's KV cache crosses (the planner's `link_bandwidth`).
    let scale_out = roles
        .iter()
        .map(|r| {
            catalogue
                .pool(&pool)
                .and_then(|p| p.node_group(&of_group(r, "node_group")))
                .map(|(_, g)| g.scale_out_per_device())
        })
        .try_fold(f64::INFINITY, |slowest, b| b.map(|b| slowest.min(b)))
        .filter(|b| b.is_finite());
    let model = &service.model;
    let narrow = |v: u64, what: &str| u32::try_from(v).map_err(|_| format!("{what} is too large"));
    let plan_f = |key: &str| estimate.and_then(|e| e.get(key)).and_then(Value::as_f64);
    let (scenario, request_rate) = match (measured.request_rate, measured.max_concurrency) {
        (Some(r), _) if r.is_finite() && r > 0.0 => ("poisson", format!("{r}")),
        (Some(r), Some(_)) if r.is_infinite() => ("fixed concurrency", "inf".to_string()),
        (Some(r), None) if r.is_infinite() => ("offline max throughput", "inf".to_string()),
        _ => {
            return Err(
                "the benchmark states no request rate (`request_rate`): the store \
                        keeps a run with the load it was measured at"
                    .into(),
            );
        }
    };
    let stem = Path::new(log)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("bench")
        .to_string();
    let mut row = ServingRow {
        run_id: format!("{site}_{date}_{stem}"),
        date: date.to_string(),
        pool,
        site,
        service: text(plan.get("service")),
        tool: measured.tool.to_string(),
        log: log.to_string(),
        engine: text(plan.get("engine")),
        engine_version: measured.engine_version.clone(),
        model: service.serve.weights.value.clone(),
        layers: narrow(model.layers, "layers")?,
        hidden: narrow(model.hidden, "hidden")?,
        heads: narrow(model.heads, "heads")?,
        kv_heads: narrow(model.kv_heads, "kv_heads")?,
        ffn: narrow(model.ffn, "ffn")?,
        vocab: narrow(model.vocab, "vocab")?,
        precision: service.serve.precision.value.as_str().to_string(),
        device,
        device_count: devices,
        tp,
        pp,
        replicas,
        scenario: scenario.to_string(),
        input_len: measured.lengths.map(|[i, _]| i),
        output_len: measured.lengths.map(|[_, o]| o),
        request_rate,
        concurrency: measured.max_concurrency,
        out_tok_s_total: measured.output_tokens_per_s,
        req_s: measured.requests_per_s,
        ttft_ms: measured.ttft_s[0] * 1e3,
        ttft_p99_ms: measured.ttft_s[1] * 1e3,
        tpot_ms: measured.tpot_s[0] * 1e3,
        tpot_p99_ms: measured.tpot_s[1] * 1e3,
        predicted_out_tok_s_per_device: plan_f("output_tokens_per_s_per_device"),
        predicted_ttft_ms: plan_f("ttft_p50_s").map(|s| s * 1e3),
        predicted_tpot_ms: plan_f("tpot_p50_s").map(|s| s * 1e3),
        throughput_uncertainty: plan_f("throughput_uncertainty"),
        source: format!("runs store: {}", measured.tool),
        devices_per_node: count(generating.get("node_devices")),
        scale_out_gb_s: scale_out.map(|b| b / 1e9),
        max_batch: count(generating.get("max_batch")),
        prefill_tp: prefill_count("tensor"),
        prefill_pp: prefill_count("pipeline"),
        prefill_replicas: prefill_count("replicas"),
        prefill_max_batch: prefill_count("max_batch"),
        ..ServingRow::default()
    };
    loam_compiler::runs::store::model::set_serving(
        &mut row,
        &loam_compiler::check::model_dims(model),
        loam_compiler::calibrate::mlp_of_weights(&service.serve.weights.value),
    );
    Ok(row)
}
