//! A scatter plot with labelled axes, limit lines, a front, and point labels placed where they
//! overlap neither each other nor the points.

use crate::figure::palette;
use crate::svg::{Anchor, FONT, Scale, Svg, text_width, tick_label, ticks};

/// One point.
#[derive(Debug, Clone)]
pub struct Point {
    /// Data coordinates.
    pub x: f64,
    /// Data coordinates.
    pub y: f64,
    /// A short label drawn beside it (`A`, `chosen`).
    pub label: String,
    /// The chosen plan: drawn larger, as a diamond.
    pub chosen: bool,
    /// Its tooltip.
    pub tip: String,
}

/// A limit drawn across the plot: a deadline (vertical) or a budget or target (horizontal).
#[derive(Debug, Clone)]
pub struct Limit {
    /// Vertical (an x value) or horizontal (a y value).
    pub vertical: bool,
    /// Where.
    pub value: f64,
    /// Its label.
    pub label: String,
}

/// What to draw.
#[derive(Debug, Clone)]
pub struct Plot {
    /// The x axis's title, with its unit.
    pub x_title: String,
    /// The y axis's title, with its unit.
    pub y_title: String,
    /// The points.
    pub points: Vec<Point>,
    /// Limit lines.
    pub limits: Vec<Limit>,
    /// Points of a front to join with a line, in drawing order.
    pub front: Vec<(f64, f64)>,
    /// Whether the front is a staircase (time against cost) or straight segments.
    pub stairs: bool,
}

/// Draws `plot` in the rectangle `[x, y, w, h]` of `svg` (axes titles included).
pub fn draw(svg: &mut Svg, area: [f64; 4], plot: &Plot) {
    let [ax, ay, aw, ah] = area;
    let left = ax + 64.0;
    let right = ax + aw - 16.0;
    let top = ay + 24.0;
    let bottom = ay + ah - 46.0;
    let xs = plot
        .points
        .iter()
        .map(|p| p.x)
        .chain(plot.limits.iter().filter(|l| l.vertical).map(|l| l.value));
    let ys = plot
        .points
        .iter()
        .map(|p| p.y)
        .chain(plot.limits.iter().filter(|l| !l.vertical).map(|l| l.value));
    let (x_ticks, x_scale) = axis(xs, (left, right));
    let (y_ticks, y_scale) = axis(ys, (bottom, top));
    // Grid and tick labels.
    // Tick labels are kept clear of the points' labels: with axes from zero, points near the
    // origin sit beside them.
    let mut tick_boxes: Vec<[f64; 4]> = Vec::new();
    let x_step = step(&x_ticks);
    for t in &x_ticks {
        let x = x_scale.at(*t);
        svg.line(x, top, x, bottom, palette::GRID, 0.5, false);
        let label = tick_label(*t, x_step);
        let w = text_width(&label, FONT);
        tick_boxes.push([x - w / 2.0, bottom + 20.0 - FONT, w, FONT + 3.0]);
        svg.text(x, bottom + 20.0, Anchor::Middle, &label);
    }
    let y_step = step(&y_ticks);
    for t in &y_ticks {
        let y = y_scale.at(*t);
        svg.line(left, y, right, y, palette::GRID, 0.5, false);
        let label = tick_label(*t, y_step);
        let w = text_width(&label, FONT);
        tick_boxes.push([left - 6.0 - w, y + 4.0 - FONT, w, FONT + 3.0]);
        svg.text(left - 6.0, y + 4.0, Anchor::End, &label);
    }
    svg.line(left, bottom, right, bottom, palette::INK, 1.0, false);
    svg.line(left, top, left, bottom, palette::INK, 1.0, false);
    svg.text_styled(
        (left + right) / 2.0,
        bottom + 40.0,
        Anchor::Middle,
        FONT,
        true,
        palette::INK,
        &plot.x_title,
    );
    // The y title goes above the axis, left-aligned (rotated text is hard to read on a phone),
    // clear of the top tick label; x tick labels sit clear of the bottom y tick label.
    svg.text_styled(
        ax + 4.0,
        ay + 2.0,
        Anchor::Start,
        FONT,
        true,
        palette::INK,
        &plot.y_title,
    );
    let mut taken: Vec<[f64; 4]> = tick_boxes;
    for p in &plot.points {
        let (x, y) = (x_scale.at(p.x), y_scale.at(p.y));
        let r = if p.chosen { 9.0 } else { 7.0 };
        taken.push([x - r, y - r, 2.0 * r, 2.0 * r]);
    }
    // Limit lines, labelled inside the plot at their end.
    for l in &plot.limits {
        if l.vertical {
            let x = x_scale.at(l.value);
            svg.line(x, top, x, bottom, palette::VERMILLION, 1.5, true);
            let w = text_width(&l.label, 11.0);
            let (lx, anchor) = if x + 4.0 + w < right {
                (x + 4.0, Anchor::Start)
            } else {
                (x - 4.0, Anchor::End)
            };
            let bx = if anchor == Anchor::Start { lx } else { lx - w };
            taken.push([bx, top, w, 14.0]);
            svg.text_styled(
                lx,
                top + 11.0,
                anchor,
                11.0,
                false,
                palette::VERMILLION,
                &l.label,
            );
        } else {
            let y = y_scale.at(l.value);
            svg.line(left, y, right, y, palette::VERMILLION, 1.5, true);
            let w = text_width(&l.label, 11.0);
            taken.push([right - w - 2.0, y - 15.0, w, 14.0]);
            svg.text_styled(
                right - 2.0,
                y - 4.0,
                Anchor::End,
                11.0,
                false,
                palette::VERMILLION,
                &l.label,
            );
        }
    }
    if plot.front.len() > 1 {
        let mut pts: Vec<(f64, f64)> = Vec::new();
        for (k, (fx, fy)) in plot.front.iter().enumerate() {
            let (x, y) = (x_scale.at(*fx), y_scale.at(*fy));
            if plot.stairs
                && let Some(prev) = plot.front.get(k.wrapping_sub(1))
                && k > 0
            {
                pts.push((x, y_scale.at(prev.1)));
            }
            pts.push((x, y));
        }
        svg.polyline(&pts, palette::GREEN, 2.0);
    }
    for p in &plot.points {
        let (x, y) = (x_scale.at(p.x), y_scale.at(p.y));
        if p.chosen {
            svg.diamond(x, y, 9.0, palette::ORANGE, palette::INK, Some(&p.tip));
        } else {
            svg.circle(x, y, 5.5, palette::SKY, palette::BLUE, Some(&p.tip));
        }
    }
    let marks: Vec<(f64, f64, f64, f64)> = plot
        .points
        .iter()
        .map(|p| {
            let w = text_width(&p.label, FONT);
            let r = if p.chosen { 11.0 } else { 8.0 };
            (x_scale.at(p.x), y_scale.at(p.y), w, r)
        })
        .collect();
    for (p, spot) in plot.points.iter().zip(place_labels(&marks, area, taken)) {
        if let Some([bx, by, _, h]) = spot {
            svg.text_styled(
                bx,
                by + h - 3.0,
                Anchor::Start,
                FONT,
                p.chosen,
                palette::INK,
                &p.label,
            );
        }
    }
}

/// Where each point's label goes: `marks` are `(x, y, label width, point radius)` in drawing
/// units; each label takes the first of eight places around its point (right, left, above,
/// below, then the corners) that stays inside `area` and overlaps no box in `taken` (the points
/// themselves, limit labels) nor a label placed before it. `None`: no place is free; the list
/// under the figure still names the point.
pub fn place_labels(
    marks: &[(f64, f64, f64, f64)],
    area: [f64; 4],
    mut taken: Vec<[f64; 4]>,
) -> Vec<Option<[f64; 4]>> {
    let [ax, ay, aw, ah] = area;
    let h = 13.0;
    marks
        .iter()
        .map(|&(x, y, w, r)| {
            let candidates = [
                (x + r, y - h / 2.0),
                (x - r - w, y - h / 2.0),
                (x - w / 2.0, y - r - h),
                (x - w / 2.0, y + r),
                (x + r, y - r - h),
                (x - r - w, y + r),
                (x + r, y + r),
                (x - r - w, y - r - h),
            ];
            let spot = candidates.iter().find(|(bx, by)| {
                let b = [*bx, *by, w, h];
                *bx >= ax
                    && bx + w <= ax + aw
                    && *by >= ay
                    && by + h <= ay + ah
                    && !taken.iter().any(|t| overlaps(*t, b))
            });
            spot.map(|(bx, by)| {
                let b = [*bx, *by, w, h];
                taken.push(b);
                b
            })
        })
        .collect()
}

/// Whether two boxes `[x, y, w, h]` share any area.
pub fn overlaps(a: [f64; 4], b: [f64; 4]) -> bool {
    a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3]
}

fn step(ticks: &[f64]) -> f64 {
    match ticks {
        [a, b, ..] => b - a,
        _ => 1.0,
    }
}

/// Round ticks from zero (or a little below the smallest value when the values sit far from
/// zero) to above the largest, and the scale over them.
fn axis(values: impl Iterator<Item = f64>, range: (f64, f64)) -> (Vec<f64>, Scale) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    // From zero whenever the values are positive: every axis here counts days, money,
    // milliseconds or tokens, where a difference reads as a share of the whole; an axis cut
    // to the spread drew an 11 % difference across the whole chart (gitops review, finding
    // 13), and charts cut differently could not be compared.
    let lo = if lo >= 0.0 { 0.0 } else { lo - (hi - lo) * 0.1 };
    let hi = if hi > lo {
        hi + (hi - lo) * 0.05
    } else {
        lo + 1.0
    };
    let t = ticks(lo, hi, 5);
    let d0 = t.first().copied().unwrap_or(lo);
    let d1 = t.last().copied().unwrap_or(hi);
    (
        t,
        Scale {
            domain: (d0, d1),
            range,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// However the points crowd, no two labels overlap, and none covers a point.
        #[test]
        fn labels_never_overlap(points in prop::collection::vec((0.0f64..300.0, 0.0f64..200.0, 8.0f64..60.0), 1..12)) {
            let marks: Vec<(f64, f64, f64, f64)> = points.iter().map(|&(x, y, w)| (x, y, w, 8.0)).collect();
            let dots: Vec<[f64; 4]> = marks.iter().map(|&(x, y, _, _)| [x - 7.0, y - 7.0, 14.0, 14.0]).collect();
            let placed: Vec<[f64; 4]> = place_labels(&marks, [0.0, 0.0, 300.0, 200.0], dots.clone()).into_iter().flatten().collect();
            for (i, a) in placed.iter().enumerate() {
                for b in placed.iter().skip(i + 1) {
                    prop_assert!(!overlaps(*a, *b), "{a:?} overlaps {b:?}");
                }
                for d in &dots {
                    prop_assert!(!overlaps(*a, *d), "{a:?} covers the point {d:?}");
                }
            }
        }
    }

    #[test]
    fn positive_axes_start_at_zero_however_small_the_spread() {
        // The 405B alternatives ran 85–97.5M: cut to the spread, an 11 % difference filled the
        // chart. From zero: the top is 97.5 + 5 % = 102.4; steps of 20 would need 5.1 of the 5
        // intervals, so ticks go by 25 and the last one past 102.4 is 125.
        let (ticks, scale) = axis([85.0, 97.5].into_iter(), (0.0, 100.0));
        assert_eq!(ticks.first().copied(), Some(0.0));
        assert_eq!(scale.domain, (0.0, 125.0));
        assert!((scale.at(85.0) - 85.0 / 125.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_lone_point_is_labelled_on_its_right() {
        let spots = place_labels(
            &[(100.0, 100.0, 20.0, 8.0)],
            [0.0, 0.0, 300.0, 200.0],
            Vec::new(),
        );
        assert_eq!(spots, vec![Some([108.0, 93.5, 20.0, 13.0])]);
    }
}
