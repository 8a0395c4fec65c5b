//! Checks of a typed service against the catalogue: the names it uses (pool, sites, devices,
//! tenant, currency), features and software, the pinned replica against the pool and the quota
//! (all through [`super::check_job::resolve`] and [`super::check_job::check_counts`], the job's
//! own implementation), whether its precision and engine run on the allowed devices, and
//! whether its weights and one longest request's KV cache fit in the largest replica the pool
//! allows.
//!
//! A device that cannot run the precision or the engine is only dropped from the candidates; the
//! service is refused when no allowed device is left.

use super::capability::{Missing, missing_capability, pool_devices_with};
use super::check_job::{Allowed, Resolved, check_counts, devices_span, lack, resolve, ticked};
use super::eligible::Scope;
use crate::catalogue::{Catalogue, Device, Pool};
use crate::check::{Service, model_dims};
use crate::serve::{ReplicaMemory, ReplicaShape, ServedModel, replica_memory};
use crate::workload::layout::rules;
use loam_ir::diagnostics::codes::catalogue as codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::span::{Span, Spanned};
use loam_ir::types::{Engine, KvCache, ServePrecision};

use loam_ir::units::GIB;

/// Checks `service` against `catalogue`; returns every problem found, sorted by position.
pub fn check_service(service: &Service, catalogue: &Catalogue) -> Vec<Diagnostic> {
    let mut diags = Diagnostics::new();
    let scope = Scope::from(service);
    let Some(Resolved {
        pool,
        tenant,
        allowed,
    }) = resolve(scope, catalogue, &mut diags)
    else {
        return diags.into_sorted();
    };
    check_counts(scope, pinned_replica(service), tenant, &allowed, &mut diags);
    let candidates = check_runs(service, catalogue, pool, &allowed, &mut diags);
    if !candidates.is_empty() {
        check_memory(service, &allowed, &candidates, &mut diags);
    }
    diags.into_sorted()
}

/// The devices one pinned replica needs (tensor × pipeline) and where they are pinned.
fn pinned_replica(service: &Service) -> Option<(u64, Span)> {
    let serve = &service.serve;
    let pinned: Vec<&Spanned<u64>> = [&serve.tensor, &serve.pipeline]
        .into_iter()
        .flatten()
        .collect();
    let span = pinned.iter().map(|d| d.span).reduce(Span::join)?;
    let devices = pinned
        .iter()
        .fold(1u64, |n, d| n.saturating_mul(d.value.max(1)));
    Some((devices, span))
}

/// The precisions `device` serves in, in keyword order.
fn served_precisions(device: &Device) -> Vec<&'static str> {
    ServePrecision::keywords()
        .into_iter()
        .filter(|k| ServePrecision::from_keyword(k).is_some_and(|p| device.serves(p)))
        .collect()
}

/// What a precision needs of a device, for labels.
fn rate_of(precision: ServePrecision) -> &'static str {
    match precision {
        ServePrecision::Fp4 => "an fp4 tensor rate (`peak_fp4`)",
        ServePrecision::Fp8 => "an fp8 tensor rate",
        ServePrecision::Fp16 => "an fp16 tensor rate",
        ServePrecision::Bf16 | ServePrecision::Int8 | ServePrecision::Int4 => "a bf16 tensor rate",
    }
}

/// The allowed devices that run the service's precision and engine, reporting when none does
/// (L2117, L2118).
fn check_runs<'a>(
    service: &Service,
    catalogue: &Catalogue,
    pool: &Pool,
    allowed: &Allowed<'a>,
    diags: &mut Diagnostics,
) -> Vec<&'a Device> {
    let precision = &service.serve.precision;
    let ids = |devices: &[&Device]| -> Vec<String> {
        devices.iter().map(|d| d.id.value.clone()).collect()
    };
    let serving: Vec<&Device> = allowed
        .devices
        .iter()
        .copied()
        .filter(|d| d.serves(precision.value))
        .collect();
    if serving.is_empty() {
        diags.push(precision_unsupported(precision, catalogue, pool, allowed));
        return Vec::new();
    }
    let Some(engine) = &service.serve.engine else {
        return serving;
    };
    let running: Vec<&Device> = allowed
        .devices
        .iter()
        .copied()
        .filter(|d| d.vendor_facts.runs(engine.value))
        .collect();
    let both: Vec<&Device> = serving
        .iter()
        .copied()
        .filter(|d| d.vendor_facts.runs(engine.value))
        .collect();
    if !both.is_empty() {
        return both;
    }
    let vendors: Vec<&str> = catalogue
        .vendors
        .values()
        .filter(|v| v.runs(engine.value))
        .map(|v| v.id.as_str())
        .collect();
    let vendors = vendors.join(", ");
    let others: Vec<&str> = pool
        .device_ids()
        .into_iter()
        .filter(|id| {
            catalogue
                .device(id)
                .is_some_and(|d| d.vendor_facts.runs(engine.value) && d.serves(precision.value))
        })
        .collect();
    let allow_others = if others.is_empty() {
        String::new()
    } else {
        format!(", or allow devices it runs on: {}", ticked(others))
    };
    let diagnostic = if running.is_empty() {
        let lacking = ids(&allowed.devices);
        let mut theirs: Vec<&str> = allowed.devices.iter().map(|d| d.vendor.as_str()).collect();
        theirs.sort_unstable();
        theirs.dedup();
        let fitting: Vec<&str> = Engine::keywords()
            .into_iter()
            .filter(|k| {
                Engine::from_keyword(k)
                    .is_some_and(|e| serving.iter().any(|d| d.vendor_facts.runs(e)))
            })
            .collect();
        Diagnostic::error(
            codes::UNSUPPORTED_ENGINE,
            format!("no allowed device runs engine `{}`", engine.value),
            engine.span,
            format!(
                "`{}` runs on {vendors} devices, {} {} {}",
                engine.value,
                ticked(lacking.iter().map(String::as_str)),
                if lacking.len() == 1 { "is" } else { "are" },
                theirs.join(", ")
            ),
        )
        .with_help(format!(
            "choose an engine these devices run ({}) or remove `engine` to let the planner choose{allow_others}",
            ticked(fitting)
        ))
    } else {
        let runs = ids(&running);
        Diagnostic::error(
            codes::UNSUPPORTED_ENGINE,
            format!(
                "no allowed device runs engine `{}` in `{}`",
                engine.value, precision.value
            ),
            engine.span,
            format!(
                "`{}` runs on {}, which {} {}",
                engine.value,
                ticked(runs.iter().map(String::as_str)),
                lack(runs.len()),
                rate_of(precision.value)
            ),
        )
        .with_related(precision.span, "precision set here")
        .with_help(format!(
            "serve in a precision {} supports ({}), or choose another engine{allow_others}",
            ticked(runs.iter().take(1).map(String::as_str)),
            running
                .first()
                .map(|d| ticked(served_precisions(d)))
                .unwrap_or_default()
        ))
    };
    diags.push(diagnostic);
    Vec::new()
}

/// L2117: no allowed device has a tensor rate for the service's precision.
fn precision_unsupported(
    precision: &Spanned<ServePrecision>,
    catalogue: &Catalogue,
    pool: &Pool,
    allowed: &Allowed<'_>,
) -> Diagnostic {
    let others = pool_devices_with(catalogue, pool, |d| d.serves(precision.value));
    // A precision every allowed device serves in, smallest weights first.
    let common = [
        ServePrecision::Fp8,
        ServePrecision::Int4,
        ServePrecision::Bf16,
    ]
    .into_iter()
    .find(|p| allowed.devices.iter().all(|d| d.serves(*p)))
    .map_or("fp16", ServePrecision::as_str);
    let help = if others.is_empty() {
        format!("serve in a precision the devices support, such as `{common}`")
    } else {
        format!(
            "serve in a precision the devices support, such as `{common}`, or allow devices with {}: {}",
            rate_of(precision.value),
            ticked(others)
        )
    };
    let missing = Missing {
        code: codes::UNSUPPORTED_SERVE_PRECISION,
        message: format!("no allowed device serves in `{}`", precision.value),
        span: precision.span,
        what: rate_of(precision.value),
    };
    missing_capability(missing, allowed, help, |d| {
        let message = format!(
            "`{}` serves in {}",
            d.id.value,
            served_precisions(d).join(", ")
        );
        (d.precisions.span, message)
    })
}

/// The largest replica the spec and the pool allow on `device`: the pinned tensor degree or the
/// widest one node holds that splits the heads ([`rules::serving_tensor`]), times the pinned pipeline
/// degree or the deepest one `max_devices` (or the pool's devices of this type) and the layers
/// leave. `None` when the pinned degrees alone exceed the devices (the count checks say so).
fn largest_replica<'a>(
    service: &Service,
    allowed: &Allowed<'a>,
    device: &'a Device,
) -> Option<ReplicaShape<'a>> {
    let id = device.id.value.as_str();
    let widest = allowed
        .groups_of(id)
        .max_by_key(|g| (g.devices_per_node.value, std::cmp::Reverse(&g.name.value)))?;
    let per_node = widest.devices_per_node.value.max(1);
    let in_pool: u64 = allowed.groups_of(id).map(|g| g.devices()).sum();
    let budget = service
        .resources
        .max_devices
        .as_ref()
        .map_or(in_pool, |m| m.value.min(in_pool));
    let model = &service.model;
    let serve = &service.serve;
    let tensor = match &serve.tensor {
        Some(t) => t.value,
        None => (1..=u64::from(per_node).min(budget.max(1)))
            .rev()
            .find(|t| rules::serving_tensor(model.heads, model.kv_heads, *t).is_ok())
            .unwrap_or(1),
    };
    let pipeline = match &serve.pipeline {
        Some(p) => p.value,
        None => (budget / tensor.max(1)).min(model.layers).max(1),
    };
    if tensor.saturating_mul(pipeline) > budget {
        return None;
    }
    let scale_out = widest.scale_out_per_device();
    Some(ReplicaShape {
        device,
        tensor: u32::try_from(tensor).ok()?,
        pipeline: u32::try_from(pipeline).ok()?,
        expert: serve
            .expert
            .as_ref()
            .map_or(Some(1), |e| u32::try_from(e.value).ok())?,
        max_batch: serve
            .max_batch
            .as_ref()
            .map_or(Some(1), |b| u32::try_from(b.value).ok())?,
        max_model_len: u32::try_from(model.seq_len).ok()?,
        devices_per_node: per_node,
        scale_out_bandwidth: scale_out,
        // Memory only: the engine's speed plays no part.
        efficiency: 1.0,
    })
}

/// Bytes of KV cache one token takes on one device of `shape`, from the serving model itself: a
/// replica on the same device with ample memory, so this check repeats none of its formulas.
fn kv_bytes_per_token_per_device(model: &ServedModel, shape: &ReplicaShape<'_>) -> f64 {
    let mut roomy = shape.device.clone();
    roomy.memory_bytes.value = 1e18;
    let probe = replica_memory(
        model,
        &ReplicaShape {
            device: &roomy,
            ..*shape
        },
    );
    if probe.kv_tokens > 0.0 {
        probe.kv_bytes / probe.kv_tokens
    } else {
        0.0
    }
}

/// L2119: the weights and one longest request's KV cache fit in the largest replica of none of
/// the candidate devices. When the weights and the workspace fit on some candidate and only the
/// context does not, L2120 says so at `seq_len` instead ([`context_does_not_fit`]).
fn check_memory(
    service: &Service,
    allowed: &Allowed<'_>,
    candidates: &[&Device],
    diags: &mut Diagnostics,
) {
    let serve = &service.serve;
    let kv_cache = serve
        .kv_cache
        .as_ref()
        .map_or(serve.precision.value.default_kv_cache(), |k| k.value);
    let dims = model_dims(&service.model);
    let mut misses: Vec<Miss<'_>> = Vec::new();
    for device in candidates {
        let Some(shape) = largest_replica(service, allowed, device) else {
            // The pinned replica exceeds the devices; the count checks say so.
            return;
        };
        let engine = serve
            .engine
            .as_ref()
            .map_or(device.vendor_facts.default_engine, |e| e.value);
        let model = ServedModel::new(dims.clone(), serve.precision.value, kv_cache, engine);
        let memory = replica_memory(&model, &shape);
        if memory.fits {
            return;
        }
        let per_token = kv_bytes_per_token_per_device(&model, &shape);
        let needed = memory.weights_bytes
            + memory.overhead_bytes
            + per_token * f64::from(shape.max_model_len);
        misses.push(Miss {
            device,
            shape,
            memory,
            needed,
            per_token,
        });
    }
    // The candidate whose largest replica keeps the most tokens beside its weights; the first
    // in catalogue order on a tie.
    let roomiest = misses
        .iter()
        .filter(|m| m.memory.kv_tokens >= 1.0)
        .reduce(|a, b| {
            if b.memory.kv_tokens > a.memory.kv_tokens {
                b
            } else {
                a
            }
        });
    if let Some(miss) = roomiest {
        diags.push(context_does_not_fit(service, miss, kv_cache));
        return;
    }
    for Miss {
        device,
        shape,
        memory,
        needed,
        ..
    } in misses
    {
        diags.push(does_not_fit(
            service, allowed, device, &shape, &memory, needed, kv_cache,
        ));
    }
}

/// A candidate device whose largest replica cannot hold one `seq_len`-token request.
struct Miss<'a> {
    device: &'a Device,
    shape: ReplicaShape<'a>,
    memory: ReplicaMemory,
    /// Bytes per device for the weights, the workspace and one `seq_len`-token request.
    needed: f64,
    /// KV-cache bytes one token takes on one device of the replica.
    per_token: f64,
}

/// Tokens of context written as a spec would (`131072`), rounded down to a multiple of 1,024
/// when it is that large: the context a replica can offer.
fn offered_context(tokens: f64) -> u64 {
    let whole = tokens.max(0.0).floor() as u64;
    if whole >= 1024 {
        whole / 1024 * 1024
    } else {
        whole
    }
}

/// L2120: the weights fit in the largest replica of `miss.device` (the roomiest candidate),
/// but its KV cache keeps fewer tokens than the context the service asks for.
fn context_does_not_fit(service: &Service, miss: &Miss<'_>, kv_cache: KvCache) -> Diagnostic {
    let Miss {
        device,
        shape,
        memory,
        per_token,
        ..
    } = miss;
    let id = device.id.value.as_str();
    let asked = shape.max_model_len;
    let offered = offered_context(memory.kv_tokens);
    let longest = (service.traffic.input.p99 + service.traffic.output.p99).ceil() as u64;
    let mut fixes: Vec<String> = Vec::new();
    if offered >= longest.max(1) {
        fixes.push(format!(
            "`seq_len = {offered}` or less (the longest requests, p99 input plus p99 output, need {} tokens)",
            loam_ir::display::thousands(longest as f64)
        ));
    }
    let more_per_replica =
        service.resources.max_devices.is_some() || service.serve.pipeline.is_some();
    let help = memory_help(fixes, kv_cache, more_per_replica, id);
    Diagnostic::error(
        codes::SERVICE_CONTEXT_DOES_NOT_FIT,
        format!(
            "no replica holds the {asked}-token context the service asks for: the largest replica of `{id}` (tensor {} × pipeline {}) keeps {} tokens of KV cache",
            shape.tensor,
            shape.pipeline,
            offered_context_display(memory.kv_tokens),
        ),
        service.context_at,
        format!("one {asked}-token request needs {:.1} GiB of KV cache per device", per_token * f64::from(asked) / GIB),
    )
    .with_related(
        device.memory_bytes.span,
        format!(
            "`{id}` has {:.1} GiB, {:.1} GiB usable: {:.1} GiB of weights and {:.1} GiB of workspace leave {:.1} GiB for the KV cache",
            device.memory_bytes.value / GIB,
            device.memory_bytes.value * memory.memory_fraction / GIB,
            memory.weights_bytes / GIB,
            memory.overhead_bytes / GIB,
            memory.kv_bytes / GIB,
        ),
    )
    .with_help(help)
}

/// Tokens for a sentence, with thousands separators: `20,480`.
fn offered_context_display(tokens: f64) -> String {
    loam_ir::display::thousands(tokens.max(0.0).floor())
}

fn does_not_fit(
    service: &Service,
    allowed: &Allowed<'_>,
    device: &Device,
    shape: &ReplicaShape<'_>,
    memory: &ReplicaMemory,
    needed: f64,
    kv_cache: KvCache,
) -> Diagnostic {
    let id = device.id.value.as_str();
    let serve = &service.serve;
    let resources = &service.resources;
    let (span, label) = match allowed.named_at.get(id) {
        Some(span) => (*span, format!("too little memory on `{id}` for this model")),
        None => (
            resources
                .max_devices
                .as_ref()
                .map_or(devices_span(resources), |m| m.span),
            format!("no replica of `{id}` within these limits holds it"),
        ),
    };
    let total = device.memory_bytes.value;
    let usable = total * memory.memory_fraction;
    let devices = shape.devices();
    let mut fixes: Vec<String> = Vec::new();
    let precision = serve.precision.value;
    if let Some(smaller) = [
        ServePrecision::Fp8,
        ServePrecision::Int4,
        ServePrecision::Fp4,
    ]
    .into_iter()
    .filter(|p| p.weight_bytes() < precision.weight_bytes() && device.serves(*p))
    .max_by(|a, b| a.weight_bytes().total_cmp(&b.weight_bytes()))
    {
        let bytes = smaller.weight_bytes();
        fixes.push(format!(
            "`precision = {smaller}` ({} byte{} per weight)",
            loam_ir::display::significant(bytes),
            if (bytes - 1.0).abs() < f64::EPSILON {
                ""
            } else {
                "s"
            }
        ));
    }
    let more_per_replica = resources.max_devices.is_some() || serve.pipeline.is_some();
    let help = memory_help(fixes, kv_cache, more_per_replica, id);
    Diagnostic::error(
        codes::SERVICE_DOES_NOT_FIT,
        format!(
            "model does not fit on `{id}`: a replica of {devices} devices needs {:.1} GiB per device for the weights and one {}-token request, the device has {:.1} GiB ({:.1} GiB usable)",
            needed / GIB,
            shape.max_model_len,
            total / GIB,
            usable / GIB
        ),
        span,
        label,
    )
    .with_related(
        device.memory_bytes.span,
        format!("`{id}` has {:.1} GiB", total / GIB),
    )
    .with_help(format!(
        "the largest replica is tensor {} × pipeline {} with {:.1} GiB of weights per device; {help}",
        shape.tensor,
        shape.pipeline,
        memory.weights_bytes / GIB
    ))
}

/// The help of a service that does not fit on `id`: the service-specific `fixes` first, then
/// an fp8 KV cache where it is wider, more devices per replica (`more_per_replica`: the spec
/// bounds or pipelines its replica) or a pool with more of them, and devices with more memory.
fn memory_help(
    mut fixes: Vec<String>,
    kv_cache: KvCache,
    more_per_replica: bool,
    id: &str,
) -> String {
    if kv_cache.bytes() > KvCache::Fp8.bytes() {
        fixes.push("`kv_cache = fp8`".to_string());
    }
    fixes.push(if more_per_replica {
        "more devices per replica (`max_devices`, `pipeline`)".to_string()
    } else {
        "a pool with more of these devices".to_string()
    });
    fixes.push(format!("devices with more memory than `{id}`"));
    let last = fixes.pop().unwrap_or_default();
    if fixes.is_empty() {
        format!("use {last}")
    } else {
        format!("try {}, or {last}", fixes.join(", "))
    }
}
