//! Step time and memory: where one optimizer step's seconds go, and what each device type's
//! fullest device holds against its capacity.

use super::bars::{Stack, stacked};
use crate::figure::{Figure, Kind, Table, palette};
use crate::svg::Svg;
use loam_ir::cluster::ClusterMap;
use loam_ir::display::{decimals, percent};
use loam_ir::plan::{MemoryIr, Plan};

/// The step-time breakdown.
pub fn step_time(id: &str, plan: &Plan) -> Option<Figure> {
    let e = plan.estimate.as_ref()?;
    let b = &e.breakdown_s;
    let parts: [(&str, f64, &str); 5] = [
        ("compute", b.compute, palette::BLUE),
        (
            "tensor, context, expert comm",
            b.tensor_comm,
            palette::ORANGE,
        ),
        ("pipeline bubble", b.pipeline_bubble, palette::PALE),
        ("data-parallel comm", b.data_comm, palette::PURPLE),
        ("optimizer and p2p", b.other, palette::GREEN),
    ];
    let total: f64 = parts
        .iter()
        .map(|(_, v, _)| v)
        .sum::<f64>()
        .max(f64::EPSILON);
    let series: Vec<(&str, String)> = parts.iter().map(|(n, _, c)| (*n, c.to_string())).collect();
    let stack = Stack {
        label: "one step".to_string(),
        segments: parts
            .iter()
            .enumerate()
            .map(|(k, (n, v, _))| {
                (
                    k,
                    *v,
                    format!("{n}: {} s ({})", decimals(*v, 2), percent(v / total)),
                )
            })
            .collect(),
        limit: None,
        total: format!("{} s", decimals(e.step_time_s, 2)),
    };
    let mut svg = Svg::new(id, 760.0, 10.0);
    let end = stacked(
        &mut svg,
        0.0,
        &series,
        &[stack],
        "seconds per optimizer step",
    );
    svg.ensure_height(end);
    let mut table = Table::new(&["part", "seconds", "share"], &[false, true, true]);
    for (n, v, _) in &parts {
        table.row(vec![n.to_string(), decimals(*v, 3), percent(v / total)]);
    }
    table.row(vec![
        "step".to_string(),
        decimals(e.step_time_s, 3),
        percent(1.0),
    ]);
    let largest = parts
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or("compute", |(n, _, _)| n);
    let desc = parts
        .iter()
        .map(|(n, v, _)| format!("{n} {} s", decimals(*v, 2)))
        .collect::<Vec<_>>()
        .join(", ");
    Some(Figure {
        kind: Kind::StepTime,
        title: "Where a step's time goes".to_string(),
        svg: svg.finish(
            &format!(
                "Step time of {}: {} s",
                plan.job,
                decimals(e.step_time_s, 2)
            ),
            &format!(
                "One optimizer step of {} s: {desc}.",
                decimals(e.step_time_s, 2)
            ),
        ),
        caption: format!(
            "One optimizer step is {} s at {} MFU; {largest} is the largest part ({}). Everything but compute is time the devices wait.",
            decimals(e.step_time_s, 2),
            percent(e.mfu),
            percent(
                parts
                    .iter()
                    .find(|(n, _, _)| n == &largest)
                    .map_or(0.0, |p| p.1)
                    / total
            )
        ),
        legend: Vec::new(),
        table,
    })
}

/// What a device holds, by kind, in GiB.
fn memory_parts(m: &MemoryIr) -> [(&'static str, f64); 6] {
    [
        ("weights", m.weights),
        ("gradients", m.gradients),
        ("optimizer", m.optimizer),
        ("activations", m.activations),
        ("pipeline stash", m.pipeline_stash),
        ("buffers and logits", m.comm_buffers + m.logits),
    ]
}

/// Memory per device of each device type against its capacity.
pub fn memory(id: &str, plan: &Plan, cluster: Option<&ClusterMap>) -> Option<Figure> {
    let e = plan.estimate.as_ref()?;
    use loam_ir::units::GIB;
    let colours = [
        palette::BLUE,
        palette::SKY,
        palette::PURPLE,
        palette::ORANGE,
        palette::YELLOW,
        palette::MUTED,
    ];
    let rows: Vec<(String, MemoryIr, Option<f64>)> = if plan.groups.len() > 1 {
        plan.groups
            .iter()
            .filter_map(|g| {
                let m = g.memory_gib.or(e.memory_gib)?;
                let capacity = cluster
                    .and_then(|c| c.device_memory_bytes.get(&g.device))
                    .map(|bytes| bytes / GIB);
                Some((format!("{} ({})", g.device, g.node_group), m, capacity))
            })
            .collect()
    } else {
        let m = e.memory_gib?;
        let g = plan.groups.first()?;
        let capacity = cluster
            .and_then(|c| c.device_memory_bytes.get(&g.device))
            .map(|bytes| bytes / GIB);
        vec![(g.device.clone(), m, capacity)]
    };
    if rows.is_empty() {
        return None;
    }
    let names = memory_parts(&rows.first()?.1).map(|(n, _)| n);
    let series: Vec<(&str, String)> = names
        .iter()
        .zip(colours)
        .map(|(n, c)| (*n, c.to_string()))
        .collect();
    let mut table = Table::new(
        &[
            "device",
            "weights",
            "gradients",
            "optimizer",
            "activations",
            "pipeline stash",
            "buffers and logits",
            "total GiB",
            "capacity GiB",
        ],
        &[false, true, true, true, true, true, true, true, true],
    );
    let mut stacks = Vec::new();
    let mut sentences = Vec::new();
    for (label, m, capacity) in &rows {
        let parts = memory_parts(m);
        let sum: f64 = parts.iter().map(|(_, v)| v).sum();
        let mut cells = vec![label.clone()];
        cells.extend(parts.iter().map(|(_, v)| decimals(*v, 1)));
        cells.push(decimals(sum, 1));
        cells.push(capacity.map(|c| decimals(c, 0)).unwrap_or_default());
        table.row(cells);
        sentences.push(match capacity {
            Some(c) => format!(
                "{label} holds {} of {} GiB",
                decimals(sum, 1),
                decimals(*c, 0)
            ),
            None => format!("{label} holds {} GiB", decimals(sum, 1)),
        });
        stacks.push(Stack {
            label: label.clone(),
            segments: parts
                .iter()
                .enumerate()
                .map(|(k, (n, v))| (k, *v, format!("{n}: {} GiB", decimals(*v, 1))))
                .collect(),
            limit: capacity.map(|c| (c, format!("capacity {} GiB", decimals(c, 0)))),
            total: format!("{} GiB", decimals(sum, 1)),
        });
    }
    let mut svg = Svg::new(id, 760.0, 10.0);
    let end = stacked(
        &mut svg,
        0.0,
        &series,
        &stacks,
        "GiB per device (the fullest device of each type)",
    );
    svg.ensure_height(end);
    Some(Figure {
        kind: Kind::Memory,
        title: "Memory per device".to_string(),
        svg: svg.finish(
            &format!("Memory per device of {}", plan.job),
            &format!("{}.", sentences.join("; ")),
        ),
        caption: "Each bar is the fullest device of one type, split by what it holds; the red line is the device's memory. A bar past its line would not fit; loam keeps a tenth free for the runtime.".to_string(),
        legend: Vec::new(),
        table,
    })
}
