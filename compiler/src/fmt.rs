//! The canonical layout of a loam file.
//!
//! Two-space indentation; one blank line at most between entries and exactly one between
//! top-level blocks; `=` aligned within a run of consecutive one-line attributes; trailing
//! comments aligned within the same run; lists on one line; strings re-escaped; numbers kept as
//! written. Every comment is kept. Formatting is a fixed point: formatting formatted text changes
//! nothing.

use crate::syntax::ast::{Attribute, Block, Entry, File, Value};
use crate::syntax::{Comment, comments, decode_utf8, parse};
use loam_ir::span::FileId;

const INDENT: &str = "  ";

/// Formats `text` (the contents of one file). Returns `None` when the text is not spec text
/// (`syntax::decode_utf8`: the formatter writes what the checker reads) or does not parse: a
/// file with syntax errors is never rewritten. A byte-order mark is dropped.
pub fn format_source(text: &str) -> Option<String> {
    let text = decode_utf8(FileId(0), text.as_bytes()).ok()?;
    let parsed = parse(FileId(0), &text);
    if parsed.diagnostics.iter().any(|d| d.is_error()) {
        return None;
    }
    let file = parsed.file?;
    Some(format_file(&file, &text))
}

/// Formats a parsed file; `text` is the source it was parsed from (for comments and blank lines).
pub fn format_file(file: &File, text: &str) -> String {
    let mut printer = Printer {
        text,
        comments: comments(file.span.file, text),
        next_comment: 0,
        out: String::new(),
        just_opened: false,
    };
    for (i, block) in file.blocks.iter().enumerate() {
        if i > 0 {
            printer.out.push('\n');
        }
        printer.leading_comments(block.span.start, 0, i > 0);
        printer.block(block, 0);
    }
    printer.leading_comments(u32::MAX, 0, !file.blocks.is_empty());
    let mut out = printer.out;
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

struct Printer<'a> {
    text: &'a str,
    comments: Vec<Comment>,
    next_comment: usize,
    out: String,
    /// Whether the last line printed opened a block: no blank line may follow it. Tracked
    /// rather than read off `out`, since a trailing comment may itself end in `{`.
    just_opened: bool,
}

impl Printer<'_> {
    /// Prints the own-line comments before byte `before`, keeping one blank line where the source
    /// had one or more.
    fn leading_comments(&mut self, before: u32, depth: usize, blank_before_first: bool) {
        let mut first = true;
        while let Some(comment) = self.comments.get(self.next_comment) {
            if comment.span.start >= before {
                break;
            }
            let comment = comment.clone();
            self.next_comment += 1;
            if (!first || blank_before_first) && self.blank_line_before(comment.span.start) {
                self.ensure_blank_line();
            }
            first = false;
            self.indent(depth);
            self.out.push_str(&comment.text);
            self.out.push('\n');
            self.just_opened = false;
            let next = self
                .comments
                .get(self.next_comment)
                .map_or(before, |c| c.span.start.min(before));
            if next != u32::MAX && self.blank_line_between(comment.span.end, next) {
                self.ensure_blank_line();
            }
        }
    }

    /// A trailing comment on the same line as byte `at`, if one is next.
    fn trailing_comment(&mut self, at: u32) -> Option<String> {
        let comment = self.comments.get(self.next_comment)?;
        let between = self.text.get(at as usize..comment.span.start as usize)?;
        if comment.trailing && !between.contains('\n') {
            self.next_comment += 1;
            return Some(comment.text.clone());
        }
        None
    }

    fn ensure_blank_line(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with("\n\n") && !self.just_opened {
            self.out.push('\n');
        }
    }

    fn blank_line_before(&self, at: u32) -> bool {
        let before = self.text.get(..at as usize).unwrap_or_default();
        let code_end = before.trim_end().len();
        before
            .get(code_end..)
            .is_some_and(|gap| gap.matches('\n').count() >= 2)
    }

    /// Whether a blank line (not merely a comment line) stands between two offsets.
    fn blank_line_between(&self, from: u32, to: u32) -> bool {
        let Some(gap) = self.text.get(from as usize..to as usize) else {
            return false;
        };
        let lines: Vec<&str> = gap.split('\n').collect();
        lines.len() > 2
            && lines
                .iter()
                .skip(1)
                .take(lines.len() - 2)
                .any(|l| l.trim().is_empty())
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str(INDENT);
        }
    }

    fn block(&mut self, block: &Block, depth: usize) {
        self.indent(depth);
        self.out.push_str(&block.name.name);
        if let Some(label) = &block.label {
            self.out.push(' ');
            self.out.push_str(&quote(&label.value));
        }
        if block.entries.is_empty() && !self.has_comment_before(block.close.start) {
            self.out.push_str(" {}");
            self.end_line(block.close.end);
            self.just_opened = false;
            return;
        }
        self.out.push_str(" {");
        self.end_line(block.open.end);
        self.just_opened = true;
        self.entries(&block.entries, depth + 1);
        self.leading_comments(block.close.start, depth + 1, true);
        self.indent(depth);
        self.out.push('}');
        self.end_line(block.close.end);
        self.just_opened = false;
    }

    fn has_comment_before(&self, at: u32) -> bool {
        self.comments
            .get(self.next_comment)
            .is_some_and(|c| c.span.start < at)
    }

    fn end_line(&mut self, at: u32) {
        if let Some(comment) = self.trailing_comment(at) {
            self.out.push_str("  ");
            self.out.push_str(&comment);
        }
        self.out.push('\n');
    }

    fn entries(&mut self, entries: &[Entry], depth: usize) {
        let mut i = 0;
        while let Some(entry) = entries.get(i) {
            let previous_end = i
                .checked_sub(1)
                .and_then(|j| entries.get(j))
                .map(|e| e.span().end);
            if previous_end.is_some_and(|end| self.blank_line_between(end, entry.span().start)) {
                self.ensure_blank_line();
            }
            match entry {
                Entry::Block(block) => {
                    self.leading_comments(block.span.start, depth, i > 0);
                    self.block(block, depth);
                    i += 1;
                }
                Entry::Attribute(_) => {
                    let run = self.attribute_run(entries.get(i..).unwrap_or_default());
                    self.attributes(run, depth, i > 0);
                    i += run.len();
                }
            }
        }
    }

    /// The consecutive attributes starting at `entries[0]` with no blank line or own-line
    /// comment between them: they share one alignment.
    fn attribute_run<'e>(&self, entries: &'e [Entry]) -> &'e [Entry] {
        let mut len = 0;
        while let Some(Entry::Attribute(a)) = entries.get(len) {
            if len > 0 {
                let prev_end = len
                    .checked_sub(1)
                    .and_then(|j| entries.get(j))
                    .map_or(0, |e| e.span().end);
                let gap = self
                    .text
                    .get(prev_end as usize..a.span.start as usize)
                    .unwrap_or_default();
                let own_line_comment = gap.lines().skip(1).any(|l| l.trim_start().starts_with('#'));
                if gap.matches('\n').count() >= 2 || own_line_comment {
                    break;
                }
            }
            len += 1;
        }
        entries.get(..len.max(1)).unwrap_or(entries)
    }

    fn attributes(&mut self, run: &[Entry], depth: usize, not_first: bool) {
        let attributes: Vec<&Attribute> = run
            .iter()
            .filter_map(|e| match e {
                Entry::Attribute(a) => Some(a),
                Entry::Block(_) => None,
            })
            .collect();
        let name_width = attributes
            .iter()
            .map(|a| a.name.name.chars().count())
            .max()
            .unwrap_or(0);
        let mut lines: Vec<(String, Option<String>)> = Vec::new();
        for (k, attribute) in attributes.iter().enumerate() {
            self.leading_comments(attribute.span.start, depth, not_first || k > 0);
            let mut line = String::new();
            for _ in 0..depth {
                line.push_str(INDENT);
            }
            line.push_str(&attribute.name.name);
            for _ in attribute.name.name.chars().count()..name_width {
                line.push(' ');
            }
            line.push_str(" = ");
            line.push_str(&value(&attribute.value));
            // Comments inside a multi-line value move above the attribute, so none is lost.
            let inner: Vec<String> = self.comments_inside(attribute.span.end);
            for comment in inner {
                self.indent(depth);
                self.out.push_str(&comment);
                self.out.push('\n');
                self.just_opened = false;
            }
            let trailing = self.trailing_comment(attribute.span.end);
            lines.push((line, trailing));
        }
        let width = lines
            .iter()
            .filter(|(_, c)| c.is_some())
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0);
        for (line, comment) in lines {
            self.just_opened = false;
            self.out.push_str(&line);
            if let Some(comment) = comment {
                for _ in line.chars().count()..width {
                    self.out.push(' ');
                }
                self.out.push_str("  ");
                self.out.push_str(&comment);
            }
            self.out.push('\n');
        }
    }

    fn comments_inside(&mut self, end: u32) -> Vec<String> {
        let mut inner = Vec::new();
        while let Some(c) = self.comments.get(self.next_comment) {
            if c.span.start >= end {
                break;
            }
            inner.push(c.text.clone());
            self.next_comment += 1;
        }
        inner
    }
}

/// A value in canonical form.
fn value(value: &Value) -> String {
    match value {
        Value::Number(n) => n.text.clone(),
        Value::String(s) => quote(&s.value),
        Value::Ident(i) => i.name.clone(),
        Value::List(list) => {
            let items: Vec<String> = list.items.iter().map(self::value).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

/// A string literal with the escapes the grammar knows.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
