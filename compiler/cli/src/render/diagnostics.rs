//! Rendering diagnostics: miette's graphical report for people, JSON for tools.

use loam_compiler::diagnostics::{Diagnostic, Severity};
use loam_compiler::span::{SourceMap, Span};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource};
use serde_json::{Value, json};

/// One diagnostic bound to its source text, in the shape miette renders.
#[derive(Debug)]
struct Report {
    diagnostic: Diagnostic,
    source: NamedSource<String>,
    labels: Vec<LabeledSpan>,
    related: Vec<Report>,
    /// A secondary location in another file, shown as advice (a note), not as a second problem.
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
        Some(&self.source)
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

fn source_of(sources: &SourceMap, span: Span) -> NamedSource<String> {
    match sources.get(span.file) {
        Some(file) => NamedSource::new(file.name.clone(), file.text.clone()),
        None => NamedSource::new("<unknown>", String::new()),
    }
}

fn labeled(span: Span, label: &str, primary: bool, text_len: usize) -> LabeledSpan {
    let start = (span.start as usize).min(text_len);
    let len = span.len().min(text_len - start);
    if primary {
        LabeledSpan::new_primary_with_span(Some(label.to_string()), (start, len))
    } else {
        LabeledSpan::new_with_span(Some(label.to_string()), (start, len))
    }
}

fn report(diagnostic: &Diagnostic, span: Span, sources: &SourceMap) -> Report {
    let text_len = sources.get(span.file).map_or(0, |f| f.text.len());
    let mut labels = vec![labeled(span, &diagnostic.label, true, text_len)];
    let mut related = Vec::new();
    // A miette label can only point into its own source, so labels in other files (the
    // catalogue) become related sub-reports carrying their own source.
    for label in &diagnostic.related {
        if label.span.file == span.file {
            labels.push(labeled(label.span, &label.message, false, text_len));
        } else {
            let other_len = sources.get(label.span.file).map_or(0, |f| f.text.len());
            related.push(Report {
                diagnostic: Diagnostic {
                    severity: Severity::Warning,
                    help: None,
                    related: Vec::new(),
                    message: label.message.clone(),
                    label: label.message.clone(),
                    span: Some(label.span),
                    code: diagnostic.code,
                },
                source: source_of(sources, label.span),
                labels: vec![labeled(label.span, &label.message, true, other_len)],
                related: Vec::new(),
                note: true,
            });
        }
    }
    Report {
        diagnostic: diagnostic.clone(),
        source: source_of(sources, span),
        labels,
        related,
        note: false,
    }
}

/// Renders diagnostics for people: the source line, a label at the span, the help line.
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
    for diagnostic in diagnostics {
        let Some(span) = diagnostic.span else {
            out.push_str(&render_unlocated(diagnostic));
            continue;
        };
        let report = report(diagnostic, span, sources);
        if handler.render_report(&mut out, &report).is_err() {
            out.push_str(&format!("{}: {}\n", diagnostic.code, diagnostic.message));
        }
        out.push('\n');
    }
    out
}

/// A diagnostic with no place in any source (about a plan or a manifest): `error[CODE]: message`
/// and the help line.
pub fn render_unlocated(d: &Diagnostic) -> String {
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
    match diagnostic.span {
        Some(span) => {
            let at = locate(span, sources);
            format!("{head} {}:{}:{}: {message}", at.file, at.line, at.column)
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
