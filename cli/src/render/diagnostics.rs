//! Rendering diagnostics: miette's graphical report for people, JSON for tools.
//!
//! What text output shows of a source is bounded and safe: a [`Window`] of the lines around the
//! labels (a long line cut to about 200 characters around what it points at, control characters
//! replaced), nothing at all of a file that is not spec text (L0002, L0005: it may be a binary
//! file or a process environment), messages with control characters escaped and long ones cut,
//! and at most [`MAX_SHOWN_PER_FILE`] diagnostics of one file. Lines and columns come from each
//! file's line index, so rendering is linear in the number of diagnostics, not their product
//! with the file's size.

mod window;

use loam_ir::diagnostics::{Diagnostic, Severity, codes};
use loam_ir::display;
use loam_ir::span::{FileId, SourceMap, Span};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use window::Window;

/// Text output shows at most this many diagnostics of one file, then says how many more there
/// are (`--format json` and `--format github` list every one).
pub const MAX_SHOWN_PER_FILE: usize = 1000;
/// A related label further than this many lines from the primary one is shown as a note of its
/// own, so one window never spans the file.
const NEAR_LINES: usize = 60;
/// Characters of a message or help shown; a label shows a quarter of it.
const MAX_MESSAGE: usize = 1000;

/// One diagnostic bound to the window of its source, in the shape miette renders.
#[derive(Debug)]
struct Report {
    diagnostic: Diagnostic,
    source: Option<Window>,
    labels: Vec<LabeledSpan>,
    related: Vec<Report>,
    /// A secondary location, shown as advice (a note), not as a second problem.
    note: bool,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for Report {}

impl miette::Diagnostic for Report {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(self.diagnostic.code))
    }
    fn severity(&self) -> Option<miette::Severity> {
        if self.note {
            return Some(miette::Severity::Advice);
        }
        Some(match self.diagnostic.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.diagnostic
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|w| w as &dyn miette::SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().cloned()))
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        if self.related.is_empty() {
            return None;
        }
        Some(Box::new(
            self.related.iter().map(|r| r as &dyn miette::Diagnostic),
        ))
    }
}

/// Whether a diagnostic says its file is not spec text: nothing of such a file is shown.
fn shows_no_source(diagnostic: &Diagnostic) -> bool {
    diagnostic.code == codes::syntax::INVALID_UTF8
        || diagnostic.code == codes::syntax::NOT_SPEC_TEXT
}

/// `diagnostic` with its message, label, help and related messages made safe to print: control
/// characters escaped, long text cut.
fn printable(diagnostic: &Diagnostic) -> Diagnostic {
    let message = |text: &str, max: usize| -> String {
        display::visible_lines(&display::bounded(text, max)).into_owned()
    };
    let mut d = diagnostic.clone();
    d.message = message(&d.message, MAX_MESSAGE);
    d.label = message(&d.label, MAX_MESSAGE / 4);
    d.help = d.help.as_deref().map(|h| message(h, MAX_MESSAGE));
    for label in &mut d.related {
        label.message = message(&label.message, MAX_MESSAGE / 4);
    }
    d
}

fn byte_range(span: Span) -> std::ops::Range<usize> {
    span.start as usize..span.end as usize
}

fn labeled(window: &Window, span: Span, label: &str, primary: bool) -> LabeledSpan {
    let at = window.span(byte_range(span));
    if primary {
        LabeledSpan::new_primary_with_span(Some(label.to_string()), at)
    } else {
        LabeledSpan::new_with_span(Some(label.to_string()), at)
    }
}

/// The report of `diagnostic` (already [`printable`]) located at `span`.
fn report(diagnostic: &Diagnostic, span: Span, sources: &SourceMap) -> Report {
    let Some(file) = sources.get(span.file) else {
        return Report {
            diagnostic: diagnostic.clone(),
            source: None,
            labels: Vec::new(),
            related: Vec::new(),
            note: false,
        };
    };
    let line = file.line_col(span.start as usize).0;
    // A miette label can only point into its own source, and one window shows one stretch of
    // a file: labels in other files (the catalogue) or far away become notes with their own.
    let (near, far): (Vec<_>, Vec<_>) = diagnostic.related.iter().partition(|label| {
        label.span.file == span.file
            && file.line_col(label.span.start as usize).0.abs_diff(line) <= NEAR_LINES
    });
    let mut spans = vec![byte_range(span)];
    spans.extend(near.iter().map(|label| byte_range(label.span)));
    let window = Window::new(file, &spans);
    let mut labels = vec![labeled(&window, span, &diagnostic.label, true)];
    labels.extend(
        near.iter()
            .map(|label| labeled(&window, label.span, &label.message, false)),
    );
    let related = far
        .into_iter()
        .map(|label| {
            let mut note = report(
                &Diagnostic {
                    severity: Severity::Warning,
                    help: None,
                    related: Vec::new(),
                    message: label.message.clone(),
                    label: label.message.clone(),
                    span: Some(label.span),
                    code: diagnostic.code,
                },
                label.span,
                sources,
            );
            note.note = true;
            note
        })
        .collect();
    Report {
        diagnostic: diagnostic.clone(),
        source: Some(window),
        labels,
        related,
        note: false,
    }
}

/// A diagnostic about a file that is not spec text: where, and what kind of byte, but nothing of
/// the file's content (it may hold anything: a binary, secrets).
fn render_without_source(diagnostic: &Diagnostic, span: Span, sources: &SourceMap) -> String {
    let at = locate(span, sources);
    let mut out = format!(
        "{}\n\n  × {}\n   ╭─[{}:{}:{}]\n   │ {}\n   ╰────\n",
        diagnostic.code,
        diagnostic.message,
        display::visible(&at.file),
        at.line,
        at.column,
        diagnostic.label
    );
    if let Some(help) = &diagnostic.help {
        out.push_str(&format!("  help: {}\n", wrap_help(help)));
    }
    out
}

/// `help` wrapped at 80 columns as miette wraps it (continuation lines indented under the text).
fn wrap_help(help: &str) -> String {
    const WIDTH: usize = 80 - "  help: ".len();
    let mut lines: Vec<String> = vec![String::new()];
    for word in help.split(' ') {
        let current = lines.last().map_or(0, |l| l.chars().count());
        if current > 0 && current + 1 + word.chars().count() > WIDTH {
            lines.push(String::new());
        }
        if let Some(last) = lines.last_mut() {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines.join("\n        ")
}

/// Renders diagnostics for people: the source line, a label at the span, the help line; at most
/// [`MAX_SHOWN_PER_FILE`] of each file, then a line saying how many more there are.
pub fn render_text(diagnostics: &[Diagnostic], sources: &SourceMap, color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(80)
        .with_links(false);
    let mut out = String::new();
    let mut shown: BTreeMap<FileId, usize> = BTreeMap::new();
    let mut hidden: BTreeMap<FileId, usize> = BTreeMap::new();
    for diagnostic in diagnostics {
        let diagnostic = &printable(diagnostic);
        let Some(span) = diagnostic.span else {
            out.push_str(&render_unlocated(diagnostic));
            continue;
        };
        let count = shown.entry(span.file).or_default();
        if *count >= MAX_SHOWN_PER_FILE {
            *hidden.entry(span.file).or_default() += 1;
            continue;
        }
        *count += 1;
        if shows_no_source(diagnostic) {
            out.push_str(&render_without_source(diagnostic, span, sources));
            out.push('\n');
            continue;
        }
        let report = report(diagnostic, span, sources);
        if handler.render_report(&mut out, &report).is_err() {
            out.push_str(&format!("{}: {}\n", diagnostic.code, diagnostic.message));
        }
        out.push('\n');
    }
    for (file, more) in hidden {
        let name = sources.get(file).map_or("<unknown>", |f| f.name.as_str());
        out.push_str(&format!(
            "note: {} more diagnostics in {} are not shown (text output shows the first {} of a file; `--format json` lists every one)\n",
            display::thousands(more as f64),
            display::visible(name),
            display::thousands(MAX_SHOWN_PER_FILE as f64),
        ));
    }
    out
}

/// A diagnostic with no place in any source (about a plan or a manifest): `error[CODE]: message`
/// and the help line.
pub fn render_unlocated(d: &Diagnostic) -> String {
    let d = &printable(d);
    let mut out = format!("{}[{}]: {}\n", severity_word(d), d.code, d.message);
    if let Some(help) = &d.help {
        out.push_str(&format!("  = help: {help}\n"));
    }
    out
}

/// Where a span is: its file's display name and the 1-based line and column (in characters) of
/// its start and end. JSON, GitHub annotations and one-line problems all locate through it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file's display name (`<unknown>` for a span into no known file).
    pub file: String,
    /// The start's line.
    pub line: usize,
    /// The start's column.
    pub column: usize,
    /// The end's line.
    pub end_line: usize,
    /// The end's column.
    pub end_column: usize,
}

/// The [`Location`] of `span` in `sources`.
pub fn locate(span: Span, sources: &SourceMap) -> Location {
    let file = sources
        .get(span.file)
        .map_or("<unknown>", |f| f.name.as_str())
        .to_string();
    let (line, column) = sources.line_col(span.file, span.start);
    let (end_line, end_column) = sources.line_col(span.file, span.end);
    Location {
        file,
        line,
        column,
        end_line,
        end_column,
    }
}

/// `error` or `warning`.
pub fn severity_word(diagnostic: &Diagnostic) -> &'static str {
    if diagnostic.is_error() {
        "error"
    } else {
        "warning"
    }
}

/// One diagnostic on one line: `error[L1002] jobs/a.loam:14:5: unknown field …`, or
/// `error[L3001]: …` for one with no place in any source. The HTML report lists problems so.
pub fn one_line(diagnostic: &Diagnostic, sources: &SourceMap) -> String {
    let head = format!("{}[{}]", severity_word(diagnostic), diagnostic.code);
    let message = diagnostic.message.replace('\n', " ");
    let message = display::visible(&display::bounded(&message, MAX_MESSAGE)).into_owned();
    match diagnostic.span {
        Some(span) => {
            let at = locate(span, sources);
            let file = display::visible(&at.file);
            format!("{head} {file}:{}:{}: {message}", at.line, at.column)
        }
        None => format!("{head}: {message}"),
    }
}

/// One diagnostic as JSON: file, 1-based line and column of start and end, code, severity,
/// message, label, help and related locations. A diagnostic with no place in any source has
/// `null` for file, lines and columns.
pub fn to_json(diagnostic: &Diagnostic, sources: &SourceMap) -> Value {
    let location = |span: Span| {
        let at = locate(span, sources);
        (at.file, at.line, at.column, at.end_line, at.end_column)
    };
    let (file, line, column, end_line, end_column) = match diagnostic.span {
        Some(span) => {
            let (file, line, column, end_line, end_column) = location(span);
            (
                Value::from(file),
                Value::from(line),
                Value::from(column),
                Value::from(end_line),
                Value::from(end_column),
            )
        }
        None => (
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
        ),
    };
    let related: Vec<Value> = diagnostic
        .related
        .iter()
        .map(|label| {
            let (file, line, column, end_line, end_column) = location(label.span);
            json!({"file": file, "line": line, "column": column, "end_line": end_line,
                   "end_column": end_column, "message": label.message})
        })
        .collect();
    json!({
        "file": file, "line": line, "column": column, "end_line": end_line, "end_column": end_column,
        "code": diagnostic.code, "severity": diagnostic.severity, "message": diagnostic.message,
        "label": diagnostic.label, "help": diagnostic.help, "related": related,
    })
}

/// The renderers above as `loam diff`'s markdown, JSON and HTML write diagnostics: the full
/// reports without colour, one line each, and JSON, exactly as the other commands show them.
pub struct Renderers;

impl loam_diff::ShowDiagnostics for Renderers {
    fn report(&self, diagnostics: &[Diagnostic], sources: &SourceMap) -> String {
        render_text(diagnostics, sources, false)
    }

    fn one_line(&self, diagnostic: &Diagnostic, sources: &SourceMap) -> String {
        one_line(diagnostic, sources)
    }

    fn json(&self, diagnostic: &Diagnostic, sources: &SourceMap) -> Value {
        to_json(diagnostic, sources)
    }
}
