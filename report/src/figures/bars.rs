//! Horizontal bar charts: a stacked bar per row with a legend above (step time, memory), and
//! small panels of one bar per option (data gravity, before and after).

use crate::figure::palette;
use crate::svg::{Anchor, FONT, Scale, Svg, text_width, ticks};

/// One stacked bar: a label and its segments `(series index, value, tooltip)`.
#[derive(Debug, Clone)]
pub struct Stack {
    /// The row's label.
    pub label: String,
    /// Segments, in series order.
    pub segments: Vec<(usize, f64, String)>,
    /// A line across the row at this value (a device's capacity), with its label.
    pub limit: Option<(f64, String)>,
    /// The total written after the bar.
    pub total: String,
}

/// Stacked bars of `series` (names and colours) in the rows of `stacks`, from `y` on; returns
/// the y after the chart. `unit` titles the axis.
pub fn stacked(
    svg: &mut Svg,
    y: f64,
    series: &[(&str, String)],
    stacks: &[Stack],
    unit: &str,
) -> f64 {
    let width = svg.width();
    // Legend rows first, wrapped to the width.
    let mut x = 12.0;
    let mut y = y + 14.0;
    for (name, colour) in series {
        let w = 17.0 + text_width(name, FONT) + 14.0;
        if x + w > width - 12.0 {
            x = 12.0;
            y += 20.0;
        }
        x = svg.legend_item(x, y, colour, name);
    }
    y += 16.0;
    let label_w = stacks
        .iter()
        .map(|s| text_width(&s.label, FONT))
        .fold(0.0, f64::max)
        .min(220.0)
        + 16.0;
    let total_w = stacks
        .iter()
        .map(|s| text_width(&s.total, FONT))
        .fold(0.0, f64::max)
        + 12.0;
    let left = 12.0 + label_w;
    let right = width - 12.0 - total_w;
    let max = stacks
        .iter()
        .map(|s| {
            let sum: f64 = s.segments.iter().map(|(_, v, _)| v.max(0.0)).sum();
            sum.max(s.limit.as_ref().map_or(0.0, |(v, _)| *v))
        })
        .fold(0.0, f64::max)
        .max(f64::EPSILON);
    let t = ticks(0.0, max, 5);
    let d1 = t.last().copied().unwrap_or(max);
    let scale = Scale {
        domain: (0.0, d1),
        range: (left, right),
    };
    let bar_h = 22.0;
    let row_h = 44.0;
    let top = y;
    for (k, s) in stacks.iter().enumerate() {
        let ry = top + k as f64 * row_h;
        svg.text(12.0, ry + bar_h / 2.0 + 4.0, Anchor::Start, &s.label);
        let mut at = 0.0;
        for (series_index, value, tip) in &s.segments {
            let colour = series
                .get(*series_index)
                .map_or(palette::MUTED, |(_, c)| c.as_str());
            let x0 = scale.at(at);
            let x1 = scale.at(at + value.max(0.0));
            svg.rect_styled(x0, ry, x1 - x0, bar_h, colour, Some("#fff"), Some(tip));
            at += value.max(0.0);
        }
        svg.text(
            scale.at(at) + 6.0,
            ry + bar_h / 2.0 + 4.0,
            Anchor::Start,
            &s.total,
        );
        if let Some((value, label)) = &s.limit {
            let x = scale.at(*value);
            svg.line(
                x,
                ry - 4.0,
                x,
                ry + bar_h + 4.0,
                palette::VERMILLION,
                2.0,
                false,
            );
            let w = text_width(label, 11.0);
            let lx = (x - w).max(left);
            svg.text_styled(
                lx,
                ry + bar_h + 16.0,
                Anchor::Start,
                11.0,
                false,
                palette::VERMILLION,
                label,
            );
        }
    }
    let axis_y = top + stacks.len() as f64 * row_h + 4.0;
    svg.bottom_axis(axis_y, &scale, &t, unit)
}

/// One panel of single bars, one per option: `(label, value, value text, highlighted)`.
/// Returns the y after the panel.
pub fn panel(svg: &mut Svg, y: f64, title: &str, rows: &[(String, f64, String, bool)]) -> f64 {
    let width = svg.width();
    svg.text_styled(
        12.0,
        y + 14.0,
        Anchor::Start,
        FONT,
        true,
        palette::INK,
        title,
    );
    // Highlighted labels are bold, a tenth wider.
    let label_w = rows
        .iter()
        .map(|(l, _, _, _)| text_width(l, FONT) * 1.1)
        .fold(0.0, f64::max)
        + 16.0;
    let value_w = rows
        .iter()
        .map(|(_, _, v, _)| text_width(v, FONT))
        .fold(0.0, f64::max)
        + 12.0;
    let left = 12.0 + label_w;
    let right = width - 12.0 - value_w;
    let max = rows
        .iter()
        .map(|(_, v, _, _)| *v)
        .fold(0.0, f64::max)
        .max(f64::EPSILON);
    let mut ry = y + 24.0;
    for (label, value, text, highlighted) in rows {
        svg.text_styled(
            12.0,
            ry + 13.0,
            Anchor::Start,
            FONT,
            *highlighted,
            palette::INK,
            label,
        );
        let w = (right - left) * value.max(0.0) / max;
        let (fill, stroke) = if *highlighted {
            (palette::ORANGE, palette::INK)
        } else {
            (palette::SKY, palette::BLUE)
        };
        svg.rect_styled(
            left,
            ry,
            w,
            18.0,
            fill,
            Some(stroke),
            Some(&format!("{label}: {text}")),
        );
        svg.text(left + w + 6.0, ry + 13.0, Anchor::Start, text);
        ry += 26.0;
    }
    ry + 6.0
}
