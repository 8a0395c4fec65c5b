//! The placement map: the pool's sites as boxes, each node group as a bar of its devices (used
//! by this plan, borrowed above the tenant's quota, free now, busy), the WAN links the plan uses
//! with their bandwidth, and where the data is.

use crate::figure::{Figure, Kind, Table, palette};
use crate::svg::{Anchor, FONT, Svg};
use loam_ir::cluster::ClusterMap;
use loam_ir::display::thousands;
use loam_ir::plan::GroupIr;

/// What one plan uses of the pool.
#[derive(Debug, Clone)]
pub struct Usage<'a> {
    /// The pool.
    pub pool: &'a str,
    /// The groups the plan takes devices from, with a role name for services (`prefill`).
    pub groups: Vec<(&'a GroupIr, Option<&'a str>)>,
    /// Data sets: `(name, site, gigabytes)`.
    pub data: Vec<(&'a str, &'a str, f64)>,
}

const WIDTH: f64 = 760.0;
const GAP: f64 = 20.0;
const ROW: f64 = 54.0;
const HEAD: f64 = 44.0;

/// One node group as drawn.
struct Bar {
    site: String,
    name: String,
    device: String,
    total: u64,
    free: u64,
    used: u64,
    borrowed: u64,
    role: Option<String>,
}

/// The sites to draw, each with its bars: every site of the pool when the catalogue is at hand
/// (so the map shows what the planner could also have used), else the sites the plan uses.
fn sites(usage: &Usage<'_>, cluster: Option<&ClusterMap>) -> Vec<(String, String, Vec<Bar>)> {
    let used_of = |site: &str, group: &str| {
        usage
            .groups
            .iter()
            .filter(|(g, _)| g.site == site && g.node_group == group)
            .fold((0u64, 0u64, None::<String>), |(u, b, r), (g, role)| {
                let role = match (r, role) {
                    (Some(a), Some(b)) => Some(format!("{a} + {b}")),
                    (r, role) => r.or(role.map(str::to_string)),
                };
                (u + g.devices, b + g.preemptible_devices, role)
            })
    };
    let pool = cluster.and_then(|c| c.pools.get(usage.pool));
    if let Some(pool) = pool {
        return pool
            .sites
            .iter()
            .map(|site| {
                let name = site.name.clone();
                let bars = site
                    .node_groups
                    .iter()
                    .map(|g| {
                        let (used, borrowed, role) = used_of(&name, &g.name);
                        Bar {
                            site: name.clone(),
                            name: g.name.clone(),
                            device: g.device.clone(),
                            total: g.devices,
                            free: g.free_devices,
                            used,
                            borrowed,
                            role,
                        }
                    })
                    .collect();
                (name, site.city.clone(), bars)
            })
            .collect();
    }
    let mut out: Vec<(String, String, Vec<Bar>)> = Vec::new();
    for (g, _) in &usage.groups {
        if out
            .iter()
            .any(|(s, _, bars)| s == &g.site && bars.iter().any(|b: &Bar| b.name == g.node_group))
        {
            continue;
        }
        let (used, borrowed, role) = used_of(&g.site, &g.node_group);
        let bar = Bar {
            site: g.site.clone(),
            name: g.node_group.clone(),
            device: g.device.clone(),
            total: used,
            free: used,
            used,
            borrowed,
            role,
        };
        match out.iter_mut().find(|(s, _, _)| s == &g.site) {
            Some((_, _, bars)) => bars.push(bar),
            None => out.push((g.site.clone(), String::new(), vec![bar])),
        }
    }
    for (_, site, _) in &usage.data {
        if !out.iter().any(|(s, _, _)| s == site) {
            out.push((site.to_string(), String::new(), Vec::new()));
        }
    }
    out
}

/// The WAN links the plan uses: between the sites it computes at, and from where the data is to
/// where it is read when they differ. `(a, b, bandwidth bytes/s or 0 when unknown, why)`.
fn links(
    usage: &Usage<'_>,
    cluster: Option<&ClusterMap>,
) -> Vec<(String, String, f64, &'static str)> {
    let mut compute: Vec<&str> = usage.groups.iter().map(|(g, _)| g.site.as_str()).collect();
    compute.dedup();
    let mut wanted: Vec<(String, String, &'static str)> = Vec::new();
    let mut push = |a: &str, b: &str, why: &'static str| {
        if a != b
            && !wanted
                .iter()
                .any(|(x, y, _)| (x == a && y == b) || (x == b && y == a))
        {
            wanted.push((a.to_string(), b.to_string(), why));
        }
    };
    for (i, a) in compute.iter().enumerate() {
        for b in compute.iter().skip(i + 1) {
            push(a, b, "pipeline activations");
        }
    }
    if let Some(first) = compute.first() {
        for (_, site, _) in &usage.data {
            push(site, first, "data copy");
        }
    }
    let pool = cluster.and_then(|c| c.pools.get(usage.pool));
    wanted
        .into_iter()
        .map(|(a, b, why)| {
            let bandwidth = pool
                .and_then(|p| p.link(&a, &b))
                .map_or(0.0, |l| l.bandwidth);
            (a, b, bandwidth, why)
        })
        .collect()
}

/// `800 Gbps` from bytes per second.
fn gbps(bytes_per_s: f64) -> String {
    format!("{} Gbps", thousands(bytes_per_s * 8.0 / 1e9))
}

/// The placement map of one plan; `id` is unique on the page, `subject` names the job or service.
pub fn figure(id: &str, subject: &str, usage: &Usage<'_>, cluster: Option<&ClusterMap>) -> Figure {
    let sites = sites(usage, cluster);
    let links = links(usage, cluster);
    let columns = if sites.len() > 1 { 2 } else { 1 };
    let box_w = (WIDTH - GAP * (columns as f64 + 1.0)) / columns as f64;
    let rows: Vec<f64> = sites
        .chunks(columns)
        .map(|row| {
            row.iter()
                .map(|(name, _, bars)| {
                    let data = usage.data.iter().filter(|(_, s, _)| s == name).count() as f64;
                    HEAD + bars.len() as f64 * ROW + data * 20.0 + 8.0
                })
                .fold(0.0, f64::max)
        })
        .collect();
    let legend_h = 30.0;
    let height = legend_h + GAP + rows.iter().map(|h| h + GAP * 1.6).sum::<f64>();
    let mut svg = Svg::new(id, WIDTH, height);
    // The legend first, so it never collides with the boxes.
    let mut x = GAP;
    let used_colour = palette::BLUE;
    let borrowed = svg.hatch(palette::BLUE);
    x = svg.legend_item(x, 20.0, used_colour, "used by this plan");
    x = svg.legend_item(x, 20.0, &borrowed, "borrowed above quota");
    x = svg.legend_item(x, 20.0, "#BFE3F7", "free now");
    svg.legend_item(x, 20.0, palette::PALE, "busy");
    let mut boxes: Vec<(String, [f64; 4])> = Vec::new();
    let mut y = legend_h + GAP;
    let mut table = Table::new(
        &[
            "site",
            "node group",
            "device",
            "used",
            "borrowed",
            "free now",
            "in all",
        ],
        &[false, false, false, true, true, true, true],
    );
    for (row, height) in sites.chunks(columns).zip(&rows) {
        for (k, (name, city, bars)) in row.iter().enumerate() {
            let x0 = GAP + k as f64 * (box_w + GAP);
            let used_here = bars.iter().any(|b| b.used > 0);
            let stroke = if used_here {
                palette::INK
            } else {
                palette::GRID
            };
            svg.frame(x0, y, box_w, *height, "#FAFAFA", stroke);
            let title = if city.is_empty() {
                name.clone()
            } else {
                format!("{name} · {city}")
            };
            svg.text_styled(
                x0 + 10.0,
                y + 20.0,
                Anchor::Start,
                13.0,
                true,
                palette::INK,
                &title,
            );
            boxes.push((name.clone(), [x0, y, box_w, *height]));
            let bar_w = box_w - 20.0;
            let max_total = bars.iter().map(|b| b.total).max().unwrap_or(1).max(1) as f64;
            let mut by = y + HEAD;
            for bar in bars {
                let w = bar_w * bar.total as f64 / max_total;
                let scale = |n: u64| w * (n.min(bar.total)) as f64 / bar.total.max(1) as f64;
                let label = match &bar.role {
                    Some(role) => format!("{} · {} · {role}", bar.device, bar.name),
                    None => format!("{} · {}", bar.device, bar.name),
                };
                let colour = if bar.used > 0 {
                    palette::INK
                } else {
                    palette::MUTED
                };
                svg.text_styled(
                    x0 + 10.0,
                    by,
                    Anchor::Start,
                    FONT,
                    bar.used > 0,
                    colour,
                    &label,
                );
                let top = by + 5.0;
                svg.rect(
                    x0 + 10.0,
                    top,
                    w,
                    14.0,
                    palette::PALE,
                    Some(&format!("{} devices in all", bar.total)),
                );
                svg.rect(
                    x0 + 10.0,
                    top,
                    scale(bar.free),
                    14.0,
                    "#BFE3F7",
                    Some(&format!("{} free now", bar.free)),
                );
                let guaranteed = bar.used.saturating_sub(bar.borrowed);
                svg.rect(
                    x0 + 10.0,
                    top,
                    scale(guaranteed),
                    14.0,
                    used_colour,
                    Some(&format!("{guaranteed} used within quota")),
                );
                if bar.borrowed > 0 {
                    svg.rect_styled(
                        x0 + 10.0 + scale(guaranteed),
                        top,
                        scale(bar.used) - scale(guaranteed),
                        14.0,
                        &borrowed,
                        Some(used_colour),
                        Some(&format!(
                            "{} borrowed above the tenant's quota",
                            bar.borrowed
                        )),
                    );
                }
                let mut facts = if bar.used > 0 {
                    format!("{} used", thousands(bar.used as f64))
                } else {
                    "not used".to_string()
                };
                if bar.borrowed > 0 {
                    facts.push_str(&format!(" ({} borrowed)", thousands(bar.borrowed as f64)));
                }
                facts.push_str(&format!(" · {} free of {}", bar.free, bar.total));
                if bar.used > bar.free {
                    facts.push_str(" · queues");
                }
                svg.text_styled(
                    x0 + 10.0,
                    top + 30.0,
                    Anchor::Start,
                    11.0,
                    false,
                    palette::MUTED,
                    &facts,
                );
                table.row(vec![
                    bar.site.clone(),
                    bar.name.clone(),
                    bar.device.clone(),
                    bar.used.to_string(),
                    bar.borrowed.to_string(),
                    bar.free.to_string(),
                    bar.total.to_string(),
                ]);
                by += ROW;
            }
            for (data, _, gb) in usage.data.iter().filter(|(_, s, _)| s == name) {
                let text = format!("◼ data: {data} ({})", size(*gb));
                svg.text_styled(
                    x0 + 10.0,
                    by,
                    Anchor::Start,
                    FONT,
                    true,
                    palette::GREEN,
                    &text,
                );
                by += 20.0;
            }
        }
        y += height + GAP * 1.6;
    }
    // Links: a thick dashed connector across the gap between the two boxes (their facing edges
    // or corners), so it never crosses a bar.
    let mut link_lines = Vec::new();
    for (a, b, bandwidth, why) in &links {
        let (Some((_, ra)), Some((_, rb))) = (
            boxes.iter().find(|(n, _)| n == a),
            boxes.iter().find(|(n, _)| n == b),
        ) else {
            continue;
        };
        let label = if *bandwidth > 0.0 {
            format!("{a}–{b}: {} ({why})", gbps(*bandwidth))
        } else {
            format!("{a}–{b} ({why})")
        };
        let (p, q) = connector(*ra, *rb);
        svg.line(p.0, p.1, q.0, q.1, palette::VERMILLION, 4.0, true);
        link_lines.push(label);
    }
    // Link labels in a strip under the map: over the boxes they would hide bars.
    if !link_lines.is_empty() {
        svg.ensure_height(y + 20.0 * link_lines.len() as f64);
        for label in &link_lines {
            svg.line(
                GAP,
                y - 4.0,
                GAP + 24.0,
                y - 4.0,
                palette::VERMILLION,
                3.0,
                true,
            );
            svg.text(GAP + 32.0, y, Anchor::Start, &format!("WAN link {label}"));
            y += 20.0;
        }
    }
    let used: Vec<String> = usage
        .groups
        .iter()
        .map(|(g, role)| {
            let role = role.map(|r| format!(" for {r}")).unwrap_or_default();
            format!(
                "{} × {} at {} ({}){role}",
                g.devices, g.device, g.site, g.node_group
            )
        })
        .collect();
    let data: Vec<String> = usage
        .data
        .iter()
        .map(|(name, site, gb)| format!("data {name} ({}) at {site}", size(*gb)))
        .collect();
    let mut desc = format!("{subject} uses {}.", used.join(" and "));
    if !data.is_empty() {
        desc.push_str(&format!(" The {}.", data.join(", ")));
    }
    if !link_lines.is_empty() {
        desc.push_str(&format!(" WAN links used: {}.", link_lines.join("; ")));
    }
    Figure {
        kind: Kind::Placement,
        title: "Where it runs".to_string(),
        svg: svg.finish(&format!("Placement of {subject}"), &desc),
        caption: format!(
            "Dark bars are the devices this plan takes, hatched where they are borrowed above the tenant's guaranteed quota (others may reclaim them); light blue is free now. {}",
            if links.is_empty() {
                "The plan uses no WAN link.".to_string()
            } else {
                "Dashed red-orange lines are the WAN links the plan uses.".to_string()
            }
        ),
        legend: Vec::new(),
        table,
    }
}

/// The ends of a connector between boxes `a` and `b` (`[x, y, w, h]`): across the gap between
/// facing edges when they share a row or a column, else between facing corners.
fn connector(a: [f64; 4], b: [f64; 4]) -> ((f64, f64), (f64, f64)) {
    let [ax, ay, aw, ah] = a;
    let [bx, by, bw, bh] = b;
    let same_row = (ay - by).abs() < 1.0;
    let same_column = (ax - bx).abs() < 1.0;
    if same_row {
        let y = ay + ah.min(bh) / 2.0;
        let (l, r) = if ax < bx {
            (ax + aw, bx)
        } else {
            (bx + bw, ax)
        };
        ((l, y), (r, y))
    } else if same_column {
        let x = ax + aw.min(bw) / 2.0;
        let (t, u) = if ay < by {
            (ay + ah, by)
        } else {
            (by + bh, ay)
        };
        ((x, t), (x, u))
    } else {
        let pa = (
            if bx > ax { ax + aw } else { ax },
            if by > ay { ay + ah } else { ay },
        );
        let pb = (
            if ax > bx { bx + bw } else { bx },
            if ay > by { by + bh } else { by },
        );
        (pa, pb)
    }
}

/// `48.0 TB` from gigabytes.
fn size(gb: f64) -> String {
    loam_ir::display::bytes(gb * 1e9)
}
