//! The part of a source a rendered diagnostic shows: the lines around its labels, each long line
//! cut to a window around what it points at, control characters replaced.
//!
//! A [`Window`] is built per diagnostic from the file's line index, so rendering n diagnostics
//! costs O(n × shown lines), never O(n × file size), and a 1 MB line shows as about 200
//! characters with `…` where it was cut. miette reads the window as its source; labels and the
//! reported line and column are translated between the file's offsets and the window's.

use loam_ir::display;
use loam_ir::span::SourceFile;
use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};
use std::ops::Range;

/// A line longer than this (in bytes) is shown as a window around what it points at.
pub const LONG_LINE: usize = 240;
/// Bytes shown before a label's start on a long line.
const BEFORE: usize = 80;
/// Bytes shown after a label's (possibly cut) end on a long line.
const AFTER: usize = 80;
/// A label on a long line is cut to this many bytes.
pub const LONG_LABEL: usize = 80;
/// Lines shown around the labels (miette's context is one line; one more keeps the edges).
const CONTEXT: usize = 2;
/// A multi-line label shows at most this many lines.
const MAX_LABEL_LINES: usize = 200;
/// What marks a cut.
const CUT: &str = "…";

/// How one shown line of the window maps to its line in the file.
#[derive(Debug)]
struct ShownLine {
    /// The file's bytes shown (a window of the line, without its line break).
    real: Range<usize>,
    /// Where those bytes start in the window's text.
    at: usize,
    /// Bytes of the line not shown before `real` (miette counts columns in bytes).
    hidden_before: usize,
    /// Whether the window's line starts with [`CUT`].
    cut_before: bool,
}

/// A window onto one source file, in the shape miette reads.
#[derive(Debug)]
pub struct Window {
    name: String,
    text: String,
    /// 0-based line number of the window's first line in the file.
    first_line: usize,
    lines: Vec<ShownLine>,
}

impl Window {
    /// The window of `file` that shows `spans` (the first is the primary one; all in `file`).
    pub fn new(file: &SourceFile, spans: &[Range<usize>]) -> Window {
        let text = &file.text;
        let line_of = |offset: usize| file.line_col(offset).0;
        let mut first = usize::MAX;
        let mut last = 0;
        for span in spans {
            let start = line_of(span.start);
            let end =
                line_of(span.end.saturating_sub(1).max(span.start)).min(start + MAX_LABEL_LINES);
            first = first.min(start);
            last = last.max(end);
        }
        if first == usize::MAX {
            first = 1;
            last = 1;
        }
        let first = first.saturating_sub(CONTEXT).max(1);
        let last = (last + CONTEXT).min(file.lines());
        let mut window = Window {
            name: display::visible(&file.name).into_owned(),
            text: String::new(),
            first_line: first - 1,
            lines: Vec::new(),
        };
        for line in first..=last {
            window.push_line(text, file.line_range(line), spans);
        }
        window
    }

    fn push_line(&mut self, text: &str, line: Range<usize>, spans: &[Range<usize>]) {
        let shown = if line.len() <= LONG_LINE {
            line.clone()
        } else {
            let on_line: Vec<&Range<usize>> = spans
                .iter()
                .filter(|s| s.start >= line.start && s.start <= line.end)
                .collect();
            let first_label = on_line.iter().map(|s| s.start).min();
            let label_end = on_line
                .iter()
                .map(|s| s.end.min(s.start + LONG_LABEL))
                .max();
            // Around what the labels point at; a context line shows its start.
            let (lo, hi) = match (first_label, label_end) {
                (Some(lo), Some(hi)) => (lo.saturating_sub(BEFORE), hi.max(lo) + AFTER),
                _ => (line.start, line.start + LONG_LINE / 2),
            };
            let lo = floor_boundary(text, lo.max(line.start));
            let hi = ceil_boundary(text, hi.min(line.end).min(lo + LONG_LINE));
            lo..hi.max(lo)
        };
        let cut_before = shown.start > line.start;
        if cut_before {
            self.text.push_str(CUT);
        }
        let at = self.text.len();
        push_sanitised(&mut self.text, text.get(shown.clone()).unwrap_or_default());
        if shown.end < line.end {
            self.text.push_str(CUT);
        }
        let line_break = text.get(line.end..).map_or("", |rest| {
            if rest.starts_with("\r\n") {
                "\r\n"
            } else if rest.starts_with('\n') {
                "\n"
            } else {
                ""
            }
        });
        self.text.push_str(line_break);
        self.lines.push(ShownLine {
            hidden_before: shown.start - line.start,
            real: shown,
            at,
            cut_before,
        });
    }

    /// The window offset showing the file's byte `offset` (the nearest shown byte when it is not
    /// shown).
    pub fn offset(&self, offset: usize) -> usize {
        let i = self
            .lines
            .partition_point(|l| l.real.start <= offset)
            .saturating_sub(1);
        match self.lines.get(i) {
            Some(l) if offset >= l.real.start => l.at + (offset.min(l.real.end) - l.real.start),
            Some(l) => l.at,
            None => 0,
        }
    }

    /// A label's span in the window: `span` of the file, cut to the window when its line is.
    pub fn span(&self, span: Range<usize>) -> (usize, usize) {
        let start = self.offset(span.start);
        let end = self.offset(span.end).max(start);
        (start, end - start)
    }

    /// The window's text (for tests).
    #[cfg(test)]
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl SourceCode for Window {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        let mut column = inner.column();
        if context_lines_before == 0 {
            // miette counts the column in bytes from the shown line's start: add what was cut.
            if let Some(line) = self.lines.get(inner.line()) {
                column = column + line.hidden_before - if line.cut_before { CUT.len() } else { 0 };
            }
        }
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            column,
            inner.line_count() + self.first_line,
        )))
    }
}

/// Appends `text` with every control character but tab (and a lone CR, LF) replaced by as many
/// `?` as it has bytes, or by U+FFFD when it has three, so offsets stay those of the file.
fn push_sanitised(out: &mut String, text: &str) {
    for c in text.chars() {
        if display::is_hidden(c) && !matches!(c, '\t') {
            match c.len_utf8() {
                3 => out.push('\u{fffd}'),
                n => out.extend(std::iter::repeat_n('?', n)),
            }
        } else {
            out.push(c);
        }
    }
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_ir::span::SourceMap;

    fn file(text: &str) -> SourceFile {
        let mut sources = SourceMap::new();
        let id = sources.add("f.loam", text);
        sources.get(id).unwrap().clone()
    }

    #[test]
    fn short_lines_are_shown_as_they_are_around_the_label() {
        let text = "l1\nl2\nl3 target\nl4\nl5\nl6\nl7\n";
        let f = file(text);
        let at = text.find("target").unwrap();
        let window = Window::new(&f, std::slice::from_ref(&(at..at + 6)));
        assert_eq!(window.text(), "l1\nl2\nl3 target\nl4\nl5\n");
        assert_eq!(window.span(at..at + 6), (9, 6));
    }

    #[test]
    fn a_long_line_is_cut_around_the_label_and_offsets_follow() {
        let text = format!("a\n{}TARGET{}\nb\n", "x".repeat(5000), "y".repeat(5000));
        let f = file(&text);
        let at = text.find("TARGET").unwrap();
        let window = Window::new(&f, std::slice::from_ref(&(at..at + 6)));
        let shown = window.text();
        assert!(shown.len() < 2 + LONG_LINE + 2 * CUT.len() + 3, "{shown}");
        assert!(
            shown.starts_with("a\n…x") && shown.contains("TARGETy"),
            "{shown}"
        );
        assert!(shown.ends_with("y…\nb\n"), "{shown}");
        let (start, len) = window.span(at..at + 6);
        assert_eq!(shown.get(start..start + len), Some("TARGET"));
        let contents = window.read_span(&(start, len).into(), 0, 0).unwrap();
        assert_eq!((contents.line(), contents.column()), (1, 5000));
    }

    #[test]
    fn control_characters_are_replaced_without_moving_offsets() {
        let text = "a\u{1b}[2K\u{85}b\u{202e}c";
        let mut out = String::new();
        push_sanitised(&mut out, text);
        assert_eq!(out, "a?[2K??b\u{fffd}c");
        assert_eq!(out.len(), text.len());
    }
}
