//! The reports of `loam catalogue list` and `loam catalogue show ID`, as text and as JSON.
//!
//! Pure functions of the catalogue: the CLI prints what they return. Estimated figures (status
//! `third-party` or `unverified`) are marked with `~` in text and `"estimate": true` in JSON.

use super::lookup::Found;
use super::model::{Catalogue, Device, Pool, Site};
use loam_ir::types::Precision;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// An id that names nothing in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown catalogue id `{id}`{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
pub struct UnknownId {
    /// The id asked for.
    pub id: String,
    /// The nearest known id, if one is close enough.
    pub suggestion: Option<String>,
}

const GB: f64 = 1e9;
// Device memory is shown in GiB, the unit HBM is sold in and the devices report.
use loam_ir::units::GIB;
const TFLOPS: f64 = 1e12;

fn tflops(device: &Device, precision: Precision) -> String {
    match device.peak(precision) {
        Some(v) if device.status.value.is_estimate() => format!("~{:.1}", v / TFLOPS),
        Some(v) => format!("{:.1}", v / TFLOPS),
        None => "-".to_string(),
    }
}

fn where_text(catalogue: &Catalogue, id: &str) -> String {
    let places = catalogue.placements(id);
    if places.is_empty() {
        return "-".to_string();
    }
    let many_pools = catalogue.pools.len() > 1;
    places
        .iter()
        .map(|(pool, site, free, total)| {
            if many_pools {
                format!("{pool}/{site} {free}/{total}")
            } else {
                format!("{site} {free}/{total}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Lays out rows under a header with columns padded to their widest cell.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| (*h).to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}", w = *w))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// The device table: id, vendor, status, memory, bf16 TFLOP/s and where the devices are (site
/// free/total).
pub fn list_text(catalogue: &Catalogue) -> String {
    let rows: Vec<Vec<String>> = catalogue
        .devices
        .values()
        .map(|d| {
            let status = d.status.value;
            let status = if status.is_estimate() {
                format!("{} ~", status.as_str())
            } else {
                status.as_str().to_string()
            };
            vec![
                d.id.value.clone(),
                d.vendor.clone(),
                status,
                format!("{:.0} GiB", d.memory_bytes.value / GIB),
                tflops(d, Precision::Bf16),
                where_text(catalogue, &d.id.value),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "DEVICE",
            "VENDOR",
            "STATUS",
            "MEMORY",
            "BF16 TFLOPS",
            "WHERE (free/total)",
        ],
        &rows,
    );
    let _ = writeln!(
        out,
        "\n~ estimate: the figures are not vendor-published (status third-party or unverified)"
    );
    let _ = writeln!(out, "catalogue {}", catalogue.digest());
    out
}

fn device_json(catalogue: &Catalogue, d: &Device) -> Value {
    let peak: serde_json::Map<String, Value> = d
        .peak_flops
        .iter()
        .map(|(p, v)| (p.as_str().to_string(), json!(v.value / TFLOPS)))
        .collect();
    let placements: Vec<Value> = catalogue
        .placements(&d.id.value)
        .into_iter()
        .map(|(pool, site, free, total)| json!({"pool": pool, "site": site, "free": free, "total": total}))
        .collect();
    json!({
        "id": d.id.value,
        "name": d.name,
        "vendor": d.vendor,
        "status": d.status.value.as_str(),
        "estimate": d.status.value.is_estimate(),
        "source": d.source,
        "memory_gb": d.memory_bytes.value / GB,
        "memory_bandwidth_tb_s": d.memory_bandwidth / 1e12,
        "peak_dense_tflops": peak,
        "precisions": d.precisions.value.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        "features": d.features.value.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
        "scale_up": {"fabric": d.fabric, "bandwidth_gb_s_bidir": d.scale_up_bandwidth_bidir / GB},
        "devices_per_node": d.devices_per_node.value,
        "power_w": {"tdp": d.tdp_watts, "typical": d.typical_watts},
        "software": {"stack": d.stack.as_str(), "min_version": d.min_version.value},
        "kubernetes_resource": d.kubernetes_resource,
        "slicing": d.slicing.map(|k| json!({
            "kind": k,
            "profiles": d.slice_profiles.iter().map(|p| json!({
                "name": p.name, "memory_gb": p.memory_bytes / GB, "compute_fraction": p.compute_fraction
            })).collect::<Vec<_>>(),
        })),
        "mtbf_h": d.mtbf_s / 3600.0,
        "efficiency": {
            "gemm": d.efficiency.gemm.iter().map(|(p, v)| (p.as_str().to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "attention_forward": d.efficiency.attention_forward,
            "attention_backward": d.efficiency.attention_backward,
            "uncertainty": d.efficiency.uncertainty,
            "source": d.efficiency_source,
        },
        "best_published": d.best_published.iter().map(|(p, b)| (p.as_str().to_string(), json!({
            "model_tflops": b.model_flops.value / TFLOPS, "run": b.run, "source": b.source
        }))).collect::<serde_json::Map<_, _>>(),
        "file": d.file,
        "placements": placements,
    })
}

/// The device list as JSON: `{"catalogue_digest", "devices": [...]}`, devices sorted by id.
pub fn list_json(catalogue: &Catalogue) -> Value {
    json!({
        "catalogue_digest": catalogue.digest(),
        "devices": catalogue.devices.values().map(|d| device_json(catalogue, d)).collect::<Vec<_>>(),
        "pools": catalogue.pools.values().map(|p| json!({
            "id": p.id.value, "sites": p.site_names(), "devices": p.total_devices()
        })).collect::<Vec<_>>(),
    })
}

fn find<'a>(catalogue: &'a Catalogue, id: &str) -> Result<Found<'a>, UnknownId> {
    catalogue.find(id).ok_or_else(|| {
        let ids = catalogue.all_ids();
        // A device family stem (`H100`) is offered its nearest member, not the nearest spelling.
        let suggestion = crate::suggest::devices_like(id, ids.iter().map(String::as_str))
            .first()
            .map(|name| (*name).to_string());
        UnknownId {
            id: id.to_string(),
            suggestion,
        }
    })
}

/// `show ID` as JSON: a device, a pool or a site (`site` or `pool/site`).
pub fn show_json(catalogue: &Catalogue, id: &str) -> Result<Value, UnknownId> {
    Ok(match find(catalogue, id)? {
        Found::Device(d) => json!({"kind": "device", "device": device_json(catalogue, d)}),
        Found::Pool(p) => json!({"kind": "pool", "pool": pool_json(p)}),
        Found::Site(p, s) => json!({"kind": "site", "pool": p.id.value, "site": site_json(s)}),
    })
}

/// `show ID` as text: a device, a pool or a site (`site` or `pool/site`).
pub fn show_text(catalogue: &Catalogue, id: &str) -> Result<String, UnknownId> {
    Ok(match find(catalogue, id)? {
        Found::Device(d) => device_text(catalogue, d),
        Found::Pool(p) => pool_text(p),
        Found::Site(p, s) => site_text(p, s),
    })
}

fn device_text(catalogue: &Catalogue, d: &Device) -> String {
    let mut out = String::new();
    let estimate = if d.status.value.is_estimate() {
        " (estimate)"
    } else {
        ""
    };
    let _ = writeln!(out, "device {} — {} ({})", d.id.value, d.name, d.vendor);
    let _ = writeln!(out, "  status      {}{estimate}", d.status.value.as_str());
    let _ = writeln!(out, "  source      {}", d.source);
    let _ = writeln!(
        out,
        "  memory      {:.1} GiB at {:.2} TB/s",
        d.memory_bytes.value / GIB,
        d.memory_bandwidth / 1e12
    );
    for (p, v) in &d.peak_flops {
        let _ = writeln!(
            out,
            "  {:<11} {} TFLOPS dense",
            p.as_str(),
            tflops(d, *p).trim_start_matches('~')
        );
        let _ = v;
    }
    let precisions: Vec<&str> = d.precisions.value.iter().map(|p| p.as_str()).collect();
    let features: Vec<&str> = d.features.value.iter().map(|f| f.as_str()).collect();
    let _ = writeln!(out, "  precisions  {}", precisions.join(", "));
    let _ = writeln!(
        out,
        "  features    {}",
        if features.is_empty() {
            "-".to_string()
        } else {
            features.join(", ")
        }
    );
    let _ = writeln!(
        out,
        "  scale-up    {} {:.0} GB/s bidirectional, {} per node",
        d.fabric,
        d.scale_up_bandwidth_bidir / GB,
        d.devices_per_node.value
    );
    let _ = writeln!(
        out,
        "  power       {:.0} W limit, {:.0} W typical",
        d.tdp_watts, d.typical_watts
    );
    let _ = writeln!(
        out,
        "  software    {} >= {}",
        d.stack.as_str(),
        d.min_version.value
    );
    let _ = writeln!(out, "  kubernetes  {}", d.kubernetes_resource);
    if !d.slice_profiles.is_empty() {
        let names: Vec<&str> = d.slice_profiles.iter().map(|p| p.name.as_str()).collect();
        let kind = d
            .slicing
            .map(|k| format!("{k:?}").to_lowercase())
            .unwrap_or_default();
        let _ = writeln!(out, "  slicing     {kind}: {}", names.join(", "));
    }
    let _ = writeln!(out, "  mtbf        {:.0} h (assumed)", d.mtbf_s / 3600.0);
    let e = &d.efficiency;
    let gemm: Vec<String> = e
        .gemm
        .iter()
        .map(|(p, v)| format!("{} {:.0} %", p.as_str(), 100.0 * v))
        .collect();
    let uncertain = if e.uncertainty > 0.0 {
        format!(" (±{:.0} %)", 100.0 * e.uncertainty)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  efficiency  GEMM {} · attention forward {:.0} %, backward {:.0} % of peak{uncertain}",
        gemm.join(", "),
        100.0 * e.attention_forward,
        100.0 * e.attention_backward
    );
    for (precision, best) in &d.best_published {
        let _ = writeln!(
            out,
            "  best {:<6} {} model FLOPs per device, measured by {}",
            precision.as_str(),
            loam_ir::display::tflops(best.model_flops.value),
            best.run
        );
    }
    let _ = writeln!(out, "  where       {}", where_text(catalogue, &d.id.value));
    out
}

fn pool_json(p: &Pool) -> Value {
    let mut value = json!({
        "id": p.id.value,
        "name": p.name,
        "currency": p.currency.value,
        "rates": p.rates,
        "devices": p.total_devices(),
        "sites": p.sites.iter().map(site_json).collect::<Vec<_>>(),
        "links": p.links.iter().map(|l| json!({
            "between": [l.a.value, l.b.value], "latency_ms": l.latency_s * 1e3,
            "bandwidth_gbps": l.bandwidth * 8.0 / 1e9, "egress_per_gb": l.egress_per_gb,
        })).collect::<Vec<_>>(),
        "tenants": p.tenants.iter().map(|t| json!({
            "name": t.name.value, "checkpoint_root": t.checkpoint_root.value.as_str(),
            "kubernetes_namespace": t.kubernetes_namespace, "slurm_account": t.slurm_account, "queue": t.queue,
            "quota": t.quota.iter().map(|q| json!({
                "device": q.device.value, "guaranteed": q.guaranteed.value, "elastic": q.elastic.value
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "file": p.file,
    });
    // Only a pool that names a stack default has the key, so other pools read as before.
    if let (Some(dispatch), Some(map)) = (p.stack.expert_dispatch, value.as_object_mut()) {
        map.insert(
            "stack".into(),
            json!({ "expert_dispatch": dispatch.as_str() }),
        );
    }
    value
}

fn site_json(s: &Site) -> Value {
    json!({
        "name": s.name.value,
        "region": s.region,
        "city": s.city,
        "carbon_g_per_kwh": s.carbon_g_per_kwh,
        "pue": s.pue,
        "mean_power_price_per_kwh": s.mean_power_price(),
        "storage_bandwidth_gb_s": s.storage_bandwidth / GB,
        "nodes_per_block": s.nodes_per_block,
        "datasets": s.datasets.iter().map(|d| json!({"name": d.name, "size_tb": d.size_bytes / 1e12})).collect::<Vec<_>>(),
        "node_groups": s.node_groups.iter().map(|g| json!({
            "name": g.name.value, "device": g.device.value, "nodes": g.nodes,
            "devices_per_node": g.devices_per_node.value, "free_devices": g.free_devices,
            "devices": g.devices(), "price_per_device_hour": g.price_per_device_hour,
            "software_version": g.software_version.value, "driver": g.driver,
            "slurm_partition": g.slurm_partition,
        })).collect::<Vec<_>>(),
    })
}

fn pool_text(p: &Pool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pool {} — {} ({} devices, prices in {})",
        p.id.value,
        p.name,
        p.total_devices(),
        p.currency.value
    );
    let rows: Vec<Vec<String>> = p
        .sites
        .iter()
        .map(|s| {
            let devices: Vec<String> = s
                .device_ids()
                .iter()
                .map(|d| {
                    let (free, total) = s.devices_of(d);
                    format!("{d} {free}/{total}")
                })
                .collect();
            vec![
                s.name.value.clone(),
                s.region.clone(),
                format!("{:.0}", s.carbon_g_per_kwh),
                format!("{:.2}", s.mean_power_price()),
                devices.join(", "),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "SITE",
            "REGION",
            "gCO2/kWh",
            "POWER/kWh",
            "DEVICES (free/total)",
        ],
        &rows,
    ));
    if !p.links.is_empty() {
        let _ = writeln!(out, "links");
        for l in &p.links {
            let _ = writeln!(
                out,
                "  {} <-> {}  {:.0} ms, {:.0} Gbps, {:.2} {}/GB egress",
                l.a.value,
                l.b.value,
                l.latency_s * 1e3,
                l.bandwidth * 8.0 / 1e9,
                l.egress_per_gb,
                p.currency.value
            );
        }
    }
    if !p.tenants.is_empty() {
        let _ = writeln!(out, "tenants");
        for t in &p.tenants {
            let quota: Vec<String> = t
                .quota
                .iter()
                .map(|q| {
                    format!(
                        "{} {}+{}",
                        q.device.value, q.guaranteed.value, q.elastic.value
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "  {:<10} {}  quota (guaranteed+elastic): {}",
                t.name.value,
                t.checkpoint_root.value,
                quota.join(", ")
            );
        }
    }
    if let Some(dispatch) = p.stack.expert_dispatch {
        let _ = writeln!(out, "stack");
        let _ = writeln!(
            out,
            "  expert dispatch {dispatch} (for every MoE spec planned here that names none)"
        );
    }
    out
}

fn site_text(p: &Pool, s: &Site) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "site {}/{} — {}, {}",
        p.id.value, s.name.value, s.city, s.region
    );
    let _ = writeln!(
        out,
        "  carbon      {:.0} gCO2/kWh, PUE {:.2}",
        s.carbon_g_per_kwh, s.pue
    );
    let (lo, hi) = s
        .power_price_per_kwh
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    let _ = writeln!(
        out,
        "  power       {:.2}–{:.2} {}/kWh (mean {:.2})",
        lo,
        hi,
        p.currency.value,
        s.mean_power_price()
    );
    let _ = writeln!(out, "  storage     {:.0} GB/s", s.storage_bandwidth / GB);
    let _ = writeln!(out, "  topology    {} nodes per block", s.nodes_per_block);
    for d in &s.datasets {
        let _ = writeln!(
            out,
            "  dataset     {} ({:.1} TB)",
            d.name,
            d.size_bytes / 1e12
        );
    }
    let rows: Vec<Vec<String>> = s
        .node_groups
        .iter()
        .map(|g| {
            vec![
                g.name.value.clone(),
                g.device.value.clone(),
                format!("{}×{}", g.nodes, g.devices_per_node.value),
                format!("{}/{}", g.free_devices, g.devices()),
                format!("{:.2}", g.price_per_device_hour),
                g.software_version.value.clone(),
                g.slurm_partition.clone(),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "GROUP",
            "DEVICE",
            "NODES",
            "FREE/TOTAL",
            &format!("{}/DEV-H", p.currency.value),
            "SOFTWARE",
            "PARTITION",
        ],
        &rows,
    ));
    out
}
