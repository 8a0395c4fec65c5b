//! Diagnostics as plain data: a stable code, a severity, a message, a primary span with its
//! label, secondary labels (possibly in other files, e.g. the catalogue) and a help line.
//!
//! The core only collects them; the CLI renders them with miette or as JSON. Every code is
//! registered once in [`codes`] with a title and an explanation page.

pub mod codes;

pub use codes::Code;

use crate::span::Span;
use serde::Serialize;

/// How bad a diagnostic is.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The input is wrong; nothing is produced.
    Error,
    /// The input works but is probably not what was meant.
    Warning,
}

/// A secondary location that explains the primary one ("declared here", "required here").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What this place has to do with the problem.
    pub message: String,
}

/// One problem found in the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Stable code such as `L1003`, registered in [`codes`].
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// The one-line message: lowercase, no trailing period ("unknown field `hiden`").
    pub message: String,
    /// The primary location; `None` for a diagnostic about generated data (a plan, a manifest)
    /// that has no place in any source text.
    pub span: Option<Span>,
    /// What is wrong at the primary location (empty when there is none).
    pub label: String,
    /// An actionable sentence, if there is one.
    pub help: Option<String>,
    /// Secondary locations, in this or other files.
    pub related: Vec<Label>,
}

impl Diagnostic {
    /// A new error with code `code`, message and primary label.
    pub fn error(
        code: Code,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span: Some(span),
            label: label.into(),
            help: None,
            related: Vec::new(),
        }
    }

    /// A new warning with code `code`, message and primary label.
    pub fn warning(
        code: Code,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message, span, label)
        }
    }

    /// A new error about something that has no place in any source text (a plan read from
    /// JSON, a manifest being rendered).
    pub fn unlocated(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span: None,
            label: String::new(),
            help: None,
            related: Vec::new(),
        }
    }

    /// The order diagnostics are shown in: unlocated ones first, then by file and position,
    /// then by code.
    pub fn sort_key(&self) -> (Option<(crate::span::FileId, u32, u32)>, Code) {
        (self.span.map(|s| (s.file, s.start, s.end)), self.code)
    }

    /// Adds the help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a secondary label.
    pub fn with_related(mut self, span: Span, message: impl Into<String>) -> Self {
        self.related.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Whether this is an error (as opposed to a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// An accumulator of diagnostics: phases push into it and go on, so one run reports everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one diagnostic.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }

    /// Records many.
    pub fn extend(&mut self, diagnostics: impl IntoIterator<Item = Diagnostic>) {
        self.items.extend(diagnostics);
    }

    /// Whether any recorded diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many were recorded.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The diagnostics sorted by file and position (then code and message, so the order never
    /// depends on the order checks ran in), with exact duplicates removed.
    pub fn into_sorted(self) -> Vec<Diagnostic> {
        let mut items = self.items;
        items.sort_by(|a, b| {
            a.sort_key()
                .cmp(&b.sort_key())
                .then_with(|| a.message.cmp(&b.message))
        });
        items.dedup();
        items
    }

    /// The recorded diagnostics, unsorted.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.into_sorted().into_iter()
    }
}
