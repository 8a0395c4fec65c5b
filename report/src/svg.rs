//! A small SVG writer: the shapes the figures draw, numbers written to one decimal (the same
//! plan gives the same bytes), text escaped, and the text widths the layouts plan around.

use crate::figure::palette::INK;
use std::fmt::Write as _;

/// Font size of labels, in SVG units (the figures are drawn at 1 unit = 1 CSS pixel at their
/// natural width and scale down on narrow screens).
pub const FONT: f64 = 12.0;

/// Width of `text` at `size`, an upper bound for the sans-serif faces the page asks for: the
/// layouts leave this much room, so labels never overlap (the browser tests measure it).
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars()
        .map(|c| {
            if c.is_ascii_uppercase() || c == '×' || c == 'm' || c == 'w' || c == '%' {
                0.78
            } else if c.is_ascii_digit() || c.is_ascii_lowercase() {
                0.6
            } else if c == ' ' || c == '.' || c == ',' || c == '·' || c == '(' || c == ')' {
                0.35
            } else {
                0.75
            }
        })
        .sum::<f64>()
        * size
}

/// `text` with the characters HTML and XML treat specially escaped.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with one decimal, and no `-0.0`.
pub fn num(x: f64) -> String {
    let x = if x.is_finite() { x } else { 0.0 };
    let s = format!("{x:.1}");
    let s = s.strip_suffix(".0").unwrap_or(&s).to_string();
    if s == "-0" { "0".to_string() } else { s }
}

/// Where a text's `x` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// At the text's start.
    Start,
    /// At its middle.
    Middle,
    /// At its end.
    End,
}

impl Anchor {
    fn attr(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG drawing being written.
#[derive(Debug)]
pub struct Svg {
    id: String,
    width: f64,
    height: f64,
    defs: String,
    body: String,
}

impl Svg {
    /// A drawing `width` × `height` units; `id` is unique on the page (ids of the title, the
    /// description and patterns derive from it).
    pub fn new(id: &str, width: f64, height: f64) -> Svg {
        Svg {
            id: id.to_string(),
            width,
            height,
            defs: String::new(),
            body: String::new(),
        }
    }

    /// The drawing's width.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// Grows the drawing to `height` when it is shorter.
    pub fn ensure_height(&mut self, height: f64) {
        self.height = self.height.max(height);
    }

    /// The id of the hatch pattern in `colour` (diagonal stripes on white), defined once.
    pub fn hatch(&mut self, colour: &str) -> String {
        let id = format!("{}-hatch-{}", self.id, colour.trim_start_matches('#'));
        if !self.defs.contains(&format!("id=\"{id}\"")) {
            let _ = write!(
                self.defs,
                "<pattern id=\"{id}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fff\"/><rect width=\"3\" height=\"6\" fill=\"{colour}\"/></pattern>"
            );
        }
        format!("url(#{id})")
    }

    /// A rectangle; `tip` becomes its tooltip.
    #[allow(clippy::too_many_arguments)]
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, tip: Option<&str>) {
        self.rect_styled(x, y, w, h, fill, None, tip);
    }

    /// A rectangle with an outline.
    #[allow(clippy::too_many_arguments)]
    pub fn rect_styled(
        &mut self,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: &str,
        stroke: Option<&str>,
        tip: Option<&str>,
    ) {
        let stroke = stroke
            .map(|s| format!(" stroke=\"{s}\" stroke-width=\"1\""))
            .unwrap_or_default();
        let _ = write!(
            self.body,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"{stroke}",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0))
        );
        self.close(tip, "rect");
    }

    /// A rounded box with an outline and no tooltip: a frame around a group of shapes.
    pub fn frame(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: &str) {
        let _ = write!(
            self.body,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.5\"/>",
            num(x),
            num(y),
            num(w),
            num(h)
        );
    }

    /// A straight line; `dash` draws it dashed.
    #[allow(clippy::too_many_arguments)]
    pub fn line(
        &mut self,
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
        stroke: &str,
        width: f64,
        dash: bool,
    ) {
        let dash = if dash {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let _ = write!(
            self.body,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{stroke}\" stroke-width=\"{}\"{dash}/>",
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            num(width)
        );
    }

    /// A polyline through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", num(*x), num(*y)))
            .collect();
        let _ = write!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{}\"/>",
            pts.join(" "),
            num(width)
        );
    }

    /// A circle; `tip` becomes its tooltip.
    #[allow(clippy::too_many_arguments)]
    pub fn circle(
        &mut self,
        cx: f64,
        cy: f64,
        r: f64,
        fill: &str,
        stroke: &str,
        tip: Option<&str>,
    ) {
        let _ = write!(
            self.body,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.5\"",
            num(cx),
            num(cy),
            num(r)
        );
        self.close(tip, "circle");
    }

    /// A diamond (a marker that differs from circles in shape, not only colour).
    pub fn diamond(
        &mut self,
        cx: f64,
        cy: f64,
        r: f64,
        fill: &str,
        stroke: &str,
        tip: Option<&str>,
    ) {
        let _ = write!(
            self.body,
            "<path d=\"M{} {}L{} {}L{} {}L{} {}Z\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.5\"",
            num(cx),
            num(cy - r),
            num(cx + r),
            num(cy),
            num(cx),
            num(cy + r),
            num(cx - r),
            num(cy)
        );
        self.close(tip, "path");
    }

    /// A label at `(x, y)` (the baseline).
    pub fn text(&mut self, x: f64, y: f64, anchor: Anchor, text: &str) {
        self.text_styled(x, y, anchor, FONT, false, "#222", text);
    }

    /// A label with its size, weight and colour.
    #[allow(clippy::too_many_arguments)]
    pub fn text_styled(
        &mut self,
        x: f64,
        y: f64,
        anchor: Anchor,
        size: f64,
        bold: bool,
        fill: &str,
        text: &str,
    ) {
        let weight = if bold { " font-weight=\"600\"" } else { "" };
        let _ = write!(
            self.body,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\" fill=\"{fill}\"{weight}>{}</text>",
            num(x),
            num(y),
            anchor.attr(),
            num(size),
            esc(text)
        );
    }

    /// An x axis at `y` from `scale`'s range: the line, a tick and a label at each of `ticks`,
    /// and the axis title (with its unit) under them; returns the y under the title.
    pub fn bottom_axis(&mut self, y: f64, scale: &Scale, ticks: &[f64], title: &str) -> f64 {
        let (left, right) = scale.range;
        self.line(left, y, right, y, INK, 1.0, false);
        let step = match ticks {
            [a, b, ..] => b - a,
            _ => 1.0,
        };
        for value in ticks {
            let x = scale.at(*value);
            self.line(x, y, x, y + 4.0, INK, 1.0, false);
            self.text(x, y + 17.0, Anchor::Middle, &tick_label(*value, step));
        }
        self.text_styled(
            (left + right) / 2.0,
            y + 35.0,
            Anchor::Middle,
            FONT,
            true,
            INK,
            title,
        );
        y + 44.0
    }

    /// A swatch and its label, as legends draw them; returns the x after the label.
    pub fn legend_item(&mut self, x: f64, y: f64, fill: &str, label: &str) -> f64 {
        self.rect_styled(x, y - 10.0, 12.0, 12.0, fill, Some("#555"), None);
        self.text(x + 17.0, y, Anchor::Start, label);
        x + 17.0 + text_width(label, FONT) + 14.0
    }

    fn close(&mut self, tip: Option<&str>, tag: &str) {
        match tip {
            Some(tip) => {
                let _ = write!(self.body, "><title>{}</title></{tag}>", esc(tip));
            }
            None => self.body.push_str("/>"),
        }
    }

    /// The finished `<svg>` element: its title and description first (the text alternative
    /// that screen readers read), then the drawing.
    pub fn finish(self, title: &str, desc: &str) -> String {
        let id = &self.id;
        let defs = if self.defs.is_empty() {
            String::new()
        } else {
            format!("<defs>{}</defs>", self.defs)
        };
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-labelledby=\"{id}-title {id}-desc\" font-family=\"DejaVu Sans, Verdana, sans-serif\"><title id=\"{id}-title\">{}</title><desc id=\"{id}-desc\">{}</desc>{defs}{}</svg>",
            esc(title),
            esc(desc),
            self.body,
            w = num(self.width),
            h = num(self.height),
        )
    }
}

/// A linear map from data to drawing units.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// Data range.
    pub domain: (f64, f64),
    /// Drawing range.
    pub range: (f64, f64),
}

impl Scale {
    /// Where `value` is drawn.
    pub fn at(&self, value: f64) -> f64 {
        let (d0, d1) = self.domain;
        let (r0, r1) = self.range;
        if (d1 - d0).abs() < f64::EPSILON {
            return r0;
        }
        r0 + (value - d0) / (d1 - d0) * (r1 - r0)
    }
}

/// About `count` round tick values covering `[lo, hi]`, and the range they span.
pub fn ticks(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let span = (hi - lo).abs().max(f64::EPSILON);
    let raw = span / count.max(1) as f64;
    let magnitude = 10f64.powi(libm_floor_log10(raw));
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| span / s <= count as f64)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).floor() * step;
    let mut out = Vec::new();
    let mut k = 0.0;
    while first + k * step <= hi + step * 0.999 && out.len() < 30 {
        out.push(first + k * step);
        k += 1.0;
    }
    out
}

/// `floor(log10(x))` for positive `x`, without floating-point logarithms (the same bits on
/// every platform).
fn libm_floor_log10(x: f64) -> i32 {
    let mut e = 0;
    let mut v = x;
    if v <= 0.0 || !v.is_finite() {
        return 0;
    }
    while v >= 10.0 {
        v /= 10.0;
        e += 1;
    }
    while v < 1.0 {
        v *= 10.0;
        e -= 1;
    }
    e
}

/// A tick label: no more decimals than the step needs.
pub fn tick_label(value: f64, step: f64) -> String {
    // As many decimals as the step has: 2.5 needs one, 0.25 two.
    let decimals = (0..3)
        .find(|d| {
            let scaled = step * 10f64.powi(*d);
            (scaled - scaled.round()).abs() < 1e-6
        })
        .unwrap_or(3) as usize;
    let s = format!("{value:.decimals$}");
    if s.starts_with('-') && s.trim_start_matches(['-', '0', '.']).is_empty() {
        s.trim_start_matches('-').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 38.0, 5), vec![0.0, 10.0, 20.0, 30.0, 40.0]);
        let t = ticks(0.0, 1.7, 4);
        assert_eq!(t.first().copied(), Some(0.0));
        assert!(t.last().copied().unwrap() >= 1.7);
    }

    #[test]
    fn text_is_escaped_and_numbers_have_one_decimal() {
        assert_eq!(esc("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
        assert_eq!(num(-0.04), "0");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(3.0), "3");
        assert_eq!(tick_label(7.5, 2.5), "7.5");
        assert_eq!(tick_label(10.0, 2.5), "10.0");
        assert_eq!(tick_label(40.0, 10.0), "40");
    }
}
