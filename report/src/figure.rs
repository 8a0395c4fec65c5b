//! A figure as the page shows it: a heading, the SVG (with its text alternative), a caption that
//! says what to see, an optional legend list, and the table of the numbers behind the picture.

use crate::svg::esc;
use std::fmt::Write as _;

/// What a figure shows; its `data-figure` attribute, which the browser tests look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Sites, node groups and WAN links.
    Placement,
    /// The pipeline schedule.
    Schedule,
    /// Where a step's time goes.
    StepTime,
    /// Memory per device against capacity.
    Memory,
    /// Time against cost of the alternatives.
    Alternatives,
    /// Move the data, move the compute, or split.
    Data,
    /// A service's cost against latency.
    Service,
    /// A job before and after a change.
    Diff,
    /// Totals per tenant before and after.
    Totals,
    /// The schedule of one site: a row per job over time.
    Gantt,
    /// The schedule's utilisation per site and device type, per day.
    Utilisation,
}

impl Kind {
    /// The `data-figure` value.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Placement => "placement",
            Kind::Schedule => "schedule",
            Kind::StepTime => "step-time",
            Kind::Memory => "memory",
            Kind::Alternatives => "alternatives",
            Kind::Data => "data",
            Kind::Service => "service",
            Kind::Diff => "diff",
            Kind::Totals => "totals",
            Kind::Gantt => "gantt",
            Kind::Utilisation => "utilisation",
        }
    }
}

/// A table of numbers: a header row and body rows; columns after the first are right-aligned
/// when `numeric` says so.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column headings.
    pub head: Vec<String>,
    /// Body rows.
    pub rows: Vec<Vec<String>>,
    /// Which columns hold numbers.
    pub numeric: Vec<bool>,
}

impl Table {
    /// A table with these headings; `numeric` marks the number columns.
    pub fn new(head: &[&str], numeric: &[bool]) -> Table {
        Table {
            head: head.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            numeric: numeric.to_vec(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The `<table>`, in a wrapper that scrolls sideways on a narrow screen instead of widening
    /// the page.
    pub fn html(&self, caption: &str) -> String {
        let mut out = String::from("<div class=\"table-wrap\"><table>");
        if !caption.is_empty() {
            let _ = write!(out, "<caption>{}</caption>", esc(caption));
        }
        out.push_str("<thead><tr>");
        for (i, h) in self.head.iter().enumerate() {
            let class = self.class(i);
            let _ = write!(out, "<th scope=\"col\"{class}>{}</th>", esc(h));
        }
        out.push_str("</tr></thead><tbody>");
        for row in &self.rows {
            out.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let class = self.class(i);
                if i == 0 {
                    let _ = write!(out, "<th scope=\"row\"{class}>{}</th>", esc(cell));
                } else {
                    let _ = write!(out, "<td{class}>{}</td>", esc(cell));
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div>");
        out
    }

    fn class(&self, column: usize) -> &'static str {
        if self.numeric.get(column).copied().unwrap_or(false) {
            " class=\"num\""
        } else {
            ""
        }
    }
}

/// A finished figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// What it shows.
    pub kind: Kind,
    /// Its heading.
    pub title: String,
    /// The `<svg>` element.
    pub svg: String,
    /// One or two sentences: what to see.
    pub caption: String,
    /// Lines under the drawing that name its labelled marks (`A: …`), readable at any width.
    pub legend: Vec<String>,
    /// The numbers behind it.
    pub table: Table,
}

impl Figure {
    /// The `<figure>` element; `id` is unique on the page.
    pub fn html(&self, id: &str) -> String {
        let mut out = format!(
            "<figure class=\"figure\" data-figure=\"{}\" id=\"{}\"><h3>{}</h3><div class=\"drawing\">{}</div>",
            self.kind.name(),
            esc(id),
            esc(&self.title),
            self.svg
        );
        if !self.legend.is_empty() {
            out.push_str("<ul class=\"legend\">");
            for line in &self.legend {
                let _ = write!(out, "<li>{}</li>", esc(line));
            }
            out.push_str("</ul>");
        }
        let _ = write!(
            out,
            "<figcaption>{}</figcaption><details><summary>The numbers behind it</summary>{}</details></figure>",
            esc(&self.caption),
            self.table.html("")
        );
        out
    }
}

/// Colours: the Okabe–Ito palette, which people with any common colour-vision deficiency tell
/// apart (Okabe & Ito, "Color Universal Design", 2008).
pub mod palette {
    /// Orange.
    pub const ORANGE: &str = "#E69F00";
    /// Sky blue.
    pub const SKY: &str = "#56B4E9";
    /// Bluish green.
    pub const GREEN: &str = "#009E73";
    /// Yellow.
    pub const YELLOW: &str = "#F0E442";
    /// Blue.
    pub const BLUE: &str = "#0072B2";
    /// Vermillion.
    pub const VERMILLION: &str = "#D55E00";
    /// Reddish purple.
    pub const PURPLE: &str = "#CC79A7";
    /// Text and axes.
    pub const INK: &str = "#222";
    /// Secondary text, gridlines.
    pub const MUTED: &str = "#767676";
    /// Backgrounds of what is there but not used.
    pub const PALE: &str = "#E8E8E8";
    /// Grid lines.
    pub const GRID: &str = "#D0D0D0";

    /// The colour of the `k`-th device type of a plan (its groups in order), and a darker shade
    /// for the same type's second kind of mark (backward passes).
    pub fn device(k: usize) -> (&'static str, &'static str) {
        match k % 3 {
            0 => (SKY, BLUE),
            1 => (ORANGE, VERMILLION),
            _ => (GREEN, "#00593F"),
        }
    }
}
