//! The schedule's utilisation heatmap: a row per site and device type, a cell per day (per
//! week on long horizons), shaded from white (idle) to dark blue (every device busy all day).

use crate::figure::{Figure, Kind, Table, palette};
use crate::svg::{Anchor, FONT, Svg, text_width};
use loam_ir::display::percent;
use loam_ir::schedule::DayUsage;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Days drawn one cell each; a longer horizon is drawn a week per cell, so the cells stay wider
/// than a few units on a 760-unit drawing (120 days: 4.5 units each). (counted)
pub const MAX_DAY_COLUMNS: usize = 120;

/// Rows drawn (site × device type); the rest are summed in the table's last row. A pool of the
/// shipped catalogue has at most a dozen. (counted)
pub const MAX_ROWS: usize = 40;

const ROW_H: f64 = 18.0;

/// The colour of a utilisation in `[0, 1]`: white to the palette's blue, linear in sRGB.
pub fn shade(utilisation: f64) -> String {
    let u = if utilisation.is_finite() {
        utilisation.clamp(0.0, 1.0)
    } else {
        0.0
    };
    // #0072B2, the Okabe–Ito blue.
    let (r, g, b) = (0.0, 114.0, 178.0);
    let mix = |c: f64| (255.0 + (c - 255.0) * u).round() as u8;
    format!("#{:02X}{:02X}{:02X}", mix(r), mix(g), mix(b))
}

/// One row's cells: `(first day, days, mean utilisation, fewest free devices, most fragmented)`.
fn cells(days: &[DayUsage], days_per_cell: usize) -> Vec<(u64, usize, f64, u64, u64)> {
    days.chunks(days_per_cell.max(1))
        .map(|chunk| {
            let first = chunk.first().map_or(0, |d| d.day);
            let mean = chunk.iter().map(|d| d.utilisation).sum::<f64>() / chunk.len() as f64;
            let free = chunk.iter().map(|d| d.free_devices).min().unwrap_or(0);
            let frag = chunk.iter().map(|d| d.fragmentation).max().unwrap_or(0);
            (first, chunk.len(), mean, free, frag)
        })
        .collect()
}

/// The heatmap of `utilisation` (site → device type → days); `None` when it is empty.
pub fn utilisation(
    id: &str,
    utilisation: &BTreeMap<String, BTreeMap<String, Vec<DayUsage>>>,
) -> Option<Figure> {
    let rows: Vec<(String, &Vec<DayUsage>)> = utilisation
        .iter()
        .flat_map(|(site, devices)| {
            devices
                .iter()
                .map(move |(device, days)| (format!("{site} {device}"), days))
        })
        .filter(|(_, days)| !days.is_empty())
        .collect();
    if rows.is_empty() {
        return None;
    }
    let days = rows.iter().map(|(_, d)| d.len()).max().unwrap_or(1);
    let per_cell = if days > MAX_DAY_COLUMNS { 7 } else { 1 };
    let columns = days.div_ceil(per_cell);
    let (shown, rest) = rows.split_at(rows.len().min(MAX_ROWS));
    let width = 760.0;
    let mut svg = Svg::new(id, width, 10.0);
    // The scale, as five swatches.
    let mut x = 12.0;
    let y = 14.0;
    for step in [0.0, 0.25, 0.5, 0.75, 1.0] {
        x = svg.legend_item(x, y, &shade(step), &format!("{} busy", percent(step)));
    }
    let top = y + 14.0;
    let label_w = shown
        .iter()
        .map(|(name, _)| text_width(name, FONT))
        .fold(0.0, f64::max)
        .min(240.0)
        + 10.0;
    let left = 12.0 + label_w;
    let right = width - 12.0;
    let cell_w = (right - left) / columns as f64;
    let unit = if per_cell == 1 { "day" } else { "week" };
    for (k, (name, days)) in shown.iter().enumerate() {
        let ry = top + k as f64 * ROW_H;
        svg.text(
            12.0,
            ry + ROW_H - 5.0,
            Anchor::Start,
            &super::gantt::fit(name, label_w - 10.0),
        );
        for (c, (first, n, mean, free, frag)) in cells(days, per_cell).into_iter().enumerate() {
            let span = if n == 1 {
                format!("day {first}")
            } else {
                format!("days {first}–{}", first + n as u64 - 1)
            };
            let tip = format!(
                "{name}, {span}: {} busy, {free} free at the busiest instant, {frag} of them usable by no queued job",
                percent(mean)
            );
            svg.rect_styled(
                left + c as f64 * cell_w,
                ry + 1.0,
                cell_w,
                ROW_H - 2.0,
                &shade(mean),
                Some(palette::GRID),
                Some(&tip),
            );
        }
    }
    let mut bottom = top + shown.len() as f64 * ROW_H;
    // Day (or week) marks every ~10 columns.
    let every = columns.div_ceil(8).max(1);
    for c in (0..columns).step_by(every) {
        let label = if per_cell == 1 {
            format!("{c}")
        } else {
            format!("w{c}")
        };
        svg.text(
            left + c as f64 * cell_w + cell_w / 2.0,
            bottom + 14.0,
            Anchor::Middle,
            &label,
        );
    }
    bottom += 20.0;
    svg.text_styled(
        (left + right) / 2.0,
        bottom + 12.0,
        Anchor::Middle,
        FONT,
        true,
        palette::INK,
        &format!("{unit} from the schedule's start"),
    );
    svg.ensure_height(bottom + 20.0);

    let mut table = Table::new(
        &[
            "site and device",
            "devices",
            "mean busy",
            "busiest day",
            "fewest free",
            "most fragmented",
        ],
        &[false, true, true, false, true, true],
    );
    let mut desc = String::new();
    for (name, days) in shown {
        let devices = days.iter().map(|d| d.devices).max().unwrap_or(0);
        let mean = days.iter().map(|d| d.utilisation).sum::<f64>() / days.len().max(1) as f64;
        let busiest = days.iter().max_by(|a, b| {
            a.utilisation
                .total_cmp(&b.utilisation)
                .then(b.day.cmp(&a.day))
        });
        let free = days.iter().map(|d| d.free_devices).min().unwrap_or(0);
        let frag = days.iter().map(|d| d.fragmentation).max().unwrap_or(0);
        table.row(vec![
            name.clone(),
            devices.to_string(),
            percent(mean),
            busiest.map_or(String::new(), |d| {
                format!("day {} ({})", d.day, percent(d.utilisation))
            }),
            free.to_string(),
            frag.to_string(),
        ]);
        let _ = write!(desc, "{name}: {} busy on average; ", percent(mean));
    }
    if !rest.is_empty() {
        table.row(vec![
            format!("… {} more", rest.len()),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    let mut caption = format!(
        "Each row is a site's device type, each cell a {unit}: the darker, the busier (device-hours held over the {unit}'s device-hours). Hover a cell for its free and fragmented devices (free devices no queued job can use)."
    );
    if per_cell > 1 {
        caption.push_str(&format!(
            " The horizon has {days} days, more than {MAX_DAY_COLUMNS}: a cell is a week's mean."
        ));
    }
    if !rest.is_empty() {
        caption.push_str(&format!(
            " The first {MAX_ROWS} of {} rows are drawn.",
            rows.len()
        ));
    }
    Some(Figure {
        kind: Kind::Utilisation,
        title: "Utilisation per site and day".to_string(),
        svg: svg.finish(
            "Utilisation per site and device type, per day",
            desc.trim_end_matches("; "),
        ),
        caption,
        legend: Vec::new(),
        table,
    })
}
