//! From `serde-saphyr` results to loam diagnostics: spans of YAML nodes and schema errors.
//!
//! serde stops at the first structural error of a document (an unknown field, a duplicate key,
//! a value of the wrong YAML type), so each file reports at most one of these; every later check
//! reports everything it finds.

use loam_ir::diagnostics::Diagnostic;
use loam_ir::span::{FileId, Span};
use serde_saphyr::{Error, Location};

/// One YAML source being loaded: its id, display path and text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    /// The id the caller gave the file.
    pub file: FileId,
    /// The display path, e.g. `specs/devices/H100_SXM.yaml`.
    pub path: &'a str,
    /// The full text.
    pub text: &'a str,
}

impl Source<'_> {
    /// The byte span of a node `serde-saphyr` located, widened to the token when it is empty.
    pub fn span(&self, location: &Location) -> Span {
        let span = location.span();
        let start = match span.byte_offset() {
            Some(offset) => usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(self.text.len()),
            None => self.offset_of(location.line(), location.column()),
        };
        let len = span
            .byte_len()
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(0);
        let end = match self.flow_end(start) {
            Some(end) => end,
            None if len == 0 => start + self.token_len(start),
            None => start + len,
        };
        Span::new(self.file, start, end.min(self.text.len()))
    }

    /// Byte offset of a 1-based line and character column.
    fn offset_of(&self, line: u64, column: u64) -> usize {
        let mut offset = 0;
        for (i, l) in self.text.split_inclusive('\n').enumerate() {
            if (i as u64) + 1 == line {
                let col = usize::try_from(column.saturating_sub(1)).unwrap_or(0);
                let within = l.char_indices().nth(col).map_or(l.len(), |(b, _)| b);
                return offset + within;
            }
            offset += l.len();
        }
        self.text.len()
    }

    /// The end of a flow collection (`[...]` or `{...}`) that starts at `start`, if one does.
    fn flow_end(&self, start: usize) -> Option<usize> {
        let rest = self.text.get(start..)?;
        if !(rest.starts_with('[') || rest.starts_with('{')) {
            return None;
        }
        let mut depth = 0usize;
        for (i, c) in rest.char_indices() {
            match c {
                '[' | '{' => depth += 1,
                ']' | '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Some(start + i + 1);
                    }
                }
                '\n' => return None,
                _ => {}
            }
        }
        None
    }

    /// Length of the token at `start`: up to the end of the line, without trailing blanks or a
    /// comment.
    fn token_len(&self, start: usize) -> usize {
        let rest = self.text.get(start..).unwrap_or("");
        let line = rest.split('\n').next().unwrap_or("");
        let line = line.split(" #").next().unwrap_or(line);
        let line = line.strip_prefix("- ").unwrap_or(line);
        let key_only = line
            .find(": ")
            .map_or(line, |i| line.get(..i).unwrap_or(line));
        let token = if key_only.is_empty() { line } else { key_only };
        token.trim_end().len().max(1).min(rest.len())
    }

    /// The source text of `span`, shortened for messages.
    pub fn snippet(&self, span: Span) -> String {
        let text = self
            .text
            .get(span.start as usize..span.end as usize)
            .unwrap_or("");
        let text = text.lines().next().unwrap_or("").trim();
        if text.chars().count() > 40 {
            let short: String = text.chars().take(37).collect();
            format!("{short}...")
        } else {
            text.to_string()
        }
    }

    /// The mapping key written on the line of `span` (the field an error is about), if any.
    pub fn field_at(&self, span: Span) -> Option<String> {
        let before = self.text.get(..span.start as usize)?;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line = self.text.get(line_start..)?.split('\n').next()?;
        let line = line.trim_start().trim_start_matches("- ").trim_start();
        let (key, _) = line.split_once(':')?;
        let key = key.trim().trim_matches('"').trim_matches('\'');
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
        plain.then(|| key.to_string())
    }
}

/// The error's own words, without the location suffix `serde-saphyr` appends.
fn bare_message(error: &Error) -> String {
    let text = error.without_snippet().to_string();
    let text = text.lines().next().unwrap_or("").to_string();
    let text = match text.rsplit_once(" at line ") {
        Some((head, _)) => head.to_string(),
        None => text,
    };
    let text = text.strip_prefix("error: ").unwrap_or(&text).to_string();
    match text.split_once(": ") {
        Some((head, tail)) if head.starts_with("line ") => tail.to_string(),
        _ => text,
    }
}

/// Human words for a Rust scalar type in a "expected X" message.
fn describe_type(ty: &str) -> String {
    if ty.contains("float") || ty == "f64" || ty == "f32" {
        "a number".to_string()
    } else if ty.starts_with('i') || ty.starts_with('u') {
        "a whole number".to_string()
    } else if ty.contains("string") {
        "a string".to_string()
    } else if ty.contains("bool") {
        "`true` or `false`".to_string()
    } else {
        ty.to_string()
    }
}

/// Quoted, comma-separated list of names for help lines.
pub(crate) fn one_of(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Converts a deserialisation error of `source` into one diagnostic.
pub(crate) fn schema_error(source: &Source<'_>, error: &Error, what: &str) -> Diagnostic {
    let span = match error.location() {
        Some(location) => source.span(&location),
        None => Span::new(source.file, 0, 0),
    };
    let found = source.snippet(span);
    let field = source.field_at(span);
    let in_field = field
        .as_ref()
        .map(|f| format!(" in `{f}`"))
        .unwrap_or_default();
    match error.without_snippet() {
        Error::SerdeUnknownField {
            field, expected, ..
        } => {
            let suggestion = crate::suggest::closest(field, expected.iter().copied());
            let help = match suggestion {
                Some(s) => format!(
                    "did you mean `{s}`? the fields of a {what} are {}",
                    one_of(expected)
                ),
                None => format!("remove it; the fields of a {what} are {}", one_of(expected)),
            };
            Diagnostic::error(
                crate::catalogue::codes::UNKNOWN_FIELD,
                format!("unknown field `{field}`"),
                span,
                "not a field here",
            )
            .with_help(help)
        }
        Error::DuplicateMappingKey { key, .. } => {
            duplicate_key(source, key.clone().unwrap_or(found), span)
        }
        Error::SerdeMissingField { field, .. } => Diagnostic::error(
            crate::catalogue::codes::MISSING_FIELD,
            format!("missing field `{field}`"),
            span,
            format!("the mapping that ends here lacks `{field}`"),
        )
        .with_help(format!(
            "add `{field}:`; see docs/catalogue.md for what it holds"
        )),
        Error::SerdeUnknownVariant {
            variant, expected, ..
        } => {
            let suggestion = crate::suggest::closest(variant, expected.iter().copied());
            let help = match suggestion {
                Some(s) => format!("did you mean `{s}`? write one of {}", one_of(expected)),
                None => format!("write one of {}", one_of(expected)),
            };
            Diagnostic::error(
                crate::catalogue::codes::WRONG_TYPE,
                format!(
                    "expected one of {}{in_field}, found `{variant}`",
                    one_of(expected)
                ),
                span,
                "not a known keyword",
            )
            .with_help(help)
        }
        Error::InvalidScalar { ty, .. } => wrong_type(span, &describe_type(ty), &found, &in_field),
        Error::Unexpected { expected, .. } => {
            wrong_type(span, &describe_type(expected), &found, &in_field)
        }
        Error::SerdeInvalidType {
            expected,
            unexpected,
            ..
        } => {
            let _ = unexpected;
            wrong_type(span, expected, &found, &in_field)
        }
        Error::SerdeInvalidValue { expected, .. } => wrong_type(span, expected, &found, &in_field),
        other if bare_message(other).starts_with("duplicate mapping key") => {
            let message = bare_message(other);
            let key = message
                .strip_prefix("duplicate mapping key: ")
                .and_then(|rest| rest.split(", set ").next())
                .map_or(found, str::to_string);
            duplicate_key(source, key, span)
        }
        other => Diagnostic::error(
            crate::catalogue::codes::INVALID_YAML,
            format!("invalid YAML: {}", bare_message(other)),
            span,
            "the YAML parser stopped here",
        )
        .with_help("fix the YAML syntax; a catalogue file is one YAML mapping"),
    }
}

fn duplicate_key(source: &Source<'_>, key: String, span: Span) -> Diagnostic {
    let mut d = Diagnostic::error(
        crate::catalogue::codes::DUPLICATE_KEY,
        format!("duplicate key `{key}`"),
        span,
        "written a second time here",
    )
    .with_help("keep one of the two entries; YAML keys must be unique in a mapping");
    if let Some(first) = first_key_before(source, &key, span) {
        d = d.with_related(first, "first written here");
    }
    d
}

fn wrong_type(span: Span, expected: &str, found: &str, in_field: &str) -> Diagnostic {
    Diagnostic::error(
        crate::catalogue::codes::WRONG_TYPE,
        format!("expected {expected}{in_field}, found `{found}`"),
        span,
        format!("not {expected}"),
    )
    .with_help(format!(
        "write {expected} here; see docs/catalogue.md for the schema"
    ))
}

/// The span of the earlier `key:` of the same mapping as the duplicate at `dup`: walks back
/// over the lines of that mapping (same indentation) and stops at its first line.
fn first_key_before(source: &Source<'_>, key: &str, dup: Span) -> Option<Span> {
    let before = source.text.get(..dup.start as usize)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let indent = dup.start as usize - line_start;
    let head = before.get(..line_start)?;
    let mut end = head.len();
    for line in head.split_inclusive('\n').rev() {
        let start = end - line.len();
        end = start;
        let content = line.trim_start_matches(' ');
        let line_indent = line.len() - content.len();
        if content.trim().is_empty() || content.starts_with('#') {
            continue;
        }
        let (column, body) = match content.strip_prefix("- ") {
            Some(rest) => (line_indent + 2, rest),
            None => (line_indent, content),
        };
        if column == indent && body.starts_with(&format!("{key}:")) {
            return Some(Span::new(
                source.file,
                start + column,
                start + column + key.len(),
            ));
        }
        if column < indent || body.len() != content.len() {
            return None;
        }
    }
    None
}
