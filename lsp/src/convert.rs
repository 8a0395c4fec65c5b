//! The compiler's diagnostics as the protocol's: the same code, message, label, help and
//! related locations that `loam check` prints, on the document's lines.

use crate::document::Document;
use crate::uri;
use crate::workspace::Checked;
use loam_ir::diagnostics::{Diagnostic, Severity};
use loam_ir::span::{SourceMap, Span};
use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Position, Range,
    Uri,
};
use std::path::Path;

/// The protocol diagnostics of `checked` for the document `doc` at `doc_uri`. A diagnostic in
/// another file (the catalogue's) or without a place (a plan's) is shown on the first line.
pub fn diagnostics(checked: &Checked, doc: &Document, doc_uri: &Uri) -> Vec<lsp_types::Diagnostic> {
    checked
        .diagnostics
        .iter()
        .map(|d| one(d, checked, doc, doc_uri))
        .collect()
}

fn one(d: &Diagnostic, checked: &Checked, doc: &Document, doc_uri: &Uri) -> lsp_types::Diagnostic {
    let range = match d.span {
        Some(span) if span.file == checked.file => {
            doc.range(span.start as usize, span.end as usize)
        }
        _ => Range::new(Position::new(0, 0), Position::new(0, 0)),
    };
    let mut message = d.message.clone();
    if let Some(span) = d.span.filter(|s| s.file != checked.file)
        && let Some(file) = checked.sources.get(span.file)
    {
        let (line, column) = checked.sources.line_col(span.file, span.start);
        message.push_str(&format!(" ({}:{line}:{column})", file.name));
    }
    if !d.label.is_empty() && d.label != d.message {
        message.push_str(&format!("\n{}", d.label));
    }
    if let Some(help) = &d.help {
        message.push_str(&format!("\nhelp: {help}"));
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .related
        .iter()
        .filter_map(|label| {
            let location = if label.span.file == checked.file {
                Location::new(
                    doc_uri.clone(),
                    doc.range(label.span.start as usize, label.span.end as usize),
                )
            } else {
                location(&checked.sources, label.span)?
            };
            Some(DiagnosticRelatedInformation {
                location,
                message: label.message.clone(),
            })
        })
        .collect();
    lsp_types::Diagnostic {
        range,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.to_string())),
        source: Some("loam".to_string()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        ..lsp_types::Diagnostic::default()
    }
}

/// The location of a span in a file on disk (a catalogue file); `None` for a built-in file.
pub fn location(sources: &SourceMap, span: Span) -> Option<Location> {
    let file = sources.get(span.file)?;
    let uri = uri::from_path(Path::new(&file.name))?;
    let text = Document::new(file.text.clone(), 0);
    Some(Location::new(
        uri,
        text.range(span.start as usize, span.end as usize),
    ))
}
