//! Byte spans into source files, and the identifiers of those files.

use serde::Serialize;

/// Identifies one source text handed to the compiler (a `.loam` file or a catalogue YAML file).
///
/// The compiler never reads files; the caller numbers the texts it passes in and keeps the map
/// from id to path and text (see [`SourceMap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub struct FileId(pub u32);

/// A half-open byte range `[start, end)` in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub struct Span {
    /// The file the range is in.
    pub file: FileId,
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span in `file` from byte `start` to byte `end`.
    pub fn new(file: FileId, start: usize, end: usize) -> Self {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Span {
            file,
            start: clamp(start),
            end: clamp(end.max(start)),
        }
    }

    /// The smallest span covering both `self` and `other` (same file assumed).
    pub fn join(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// Length in bytes.
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// Whether the span covers no bytes.
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
}

/// A value together with where it was written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it was written.
    #[serde(skip)]
    pub span: Span,
}

impl<T> Spanned<T> {
    /// Pairs `value` with `span`.
    pub fn new(value: T, span: Span) -> Self {
        Spanned { value, span }
    }
}

/// One source text known to the compiler: its display name and contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The name shown in diagnostics (a path relative to where loam was run, or a catalogue name).
    pub name: String,
    /// The full text.
    pub text: String,
    /// Where its lines start, built once when the file is added.
    lines: LineIndex,
}

impl SourceFile {
    /// 1-based line and column (in characters) of byte `offset`, in time independent of the
    /// file's size (see [`LineIndex`]).
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        self.lines.line_col(&self.text, offset)
    }

    /// The byte range of the 1-based `line` without its line break (`\n` or `\r\n`); an
    /// empty range at the end of the text for a line past the last.
    pub fn line_range(&self, line: usize) -> std::ops::Range<usize> {
        self.lines.line_range(&self.text, line)
    }

    /// The number of lines (a text ending in a line break has an empty last line).
    pub fn lines(&self) -> usize {
        self.lines.lines()
    }
}

/// All source texts of one compiler run, indexed by [`FileId`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a text and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        let id = FileId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        let text = text.into();
        self.files.push(SourceFile {
            name: name.into(),
            lines: LineIndex::new(&text),
            text,
        });
        id
    }

    /// The file with this id, if any.
    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    /// Every file with its id, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(u32::try_from(i).unwrap_or(u32::MAX)), f))
    }

    /// 1-based line and column (in characters) of byte `offset` in `file`.
    pub fn line_col(&self, file: FileId, offset: u32) -> (usize, usize) {
        match self.get(file) {
            Some(f) => f.line_col(offset as usize),
            None => (1, 1),
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
///
/// This builds a [`LineIndex`] for one question: callers asking many keep a [`SourceMap`].
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_col(text, offset)
}

/// Bytes per block of the character-count index: a column is counted over at most one block.
const CHARS_BLOCK: usize = 256;

/// Where the lines of one text start, and how many characters precede every
/// [`CHARS_BLOCK`]-th byte, so a byte offset becomes a line and column by a binary search and a
/// count over at most one block: rendering n diagnostics of a file costs O(n log size), not
/// O(n × size), even when they all sit on one long line.
///
/// Only `\n` breaks lines, as in the grammar (a lone CR is not spec text, L0005).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset of the start of every line; the first is 0.
    starts: Vec<usize>,
    /// `chars_before[k]`: characters that start before byte `k * CHARS_BLOCK`.
    chars_before: Vec<usize>,
}

impl LineIndex {
    /// Indexes `text` in one pass.
    pub fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        let mut chars_before = Vec::with_capacity(bytes.len() / CHARS_BLOCK + 1);
        let mut chars = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if i % CHARS_BLOCK == 0 {
                chars_before.push(chars);
            }
            if b == b'\n' {
                starts.push(i + 1);
            }
            if !is_continuation(b) {
                chars += 1;
            }
        }
        LineIndex {
            starts,
            chars_before,
        }
    }

    /// 1-based line and column (in characters) of byte `offset` in `text`, the text this index
    /// was built from. An offset past the end is the end; one inside a character is that
    /// character. A byte-order mark at the start takes no column.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        let mut column = self.chars_at(text, offset) - self.chars_at(text, start) + 1;
        if start == 0 && offset > 0 && text.starts_with('\u{feff}') {
            column -= 1;
        }
        (line, column)
    }

    /// The byte range of the 1-based `line` of `text` without its line break.
    pub fn line_range(&self, text: &str, line: usize) -> std::ops::Range<usize> {
        let Some(&start) = line.checked_sub(1).and_then(|i| self.starts.get(i)) else {
            return text.len()..text.len();
        };
        let end = self.starts.get(line).map_or(text.len(), |&next| next - 1);
        let bytes = text.as_bytes();
        let end = if end > start && bytes.get(end - 1) == Some(&b'\r') {
            end - 1
        } else {
            end
        };
        start..end
    }

    /// The number of lines (a text ending in `\n` has an empty last line).
    pub fn lines(&self) -> usize {
        self.starts.len()
    }

    /// Characters that start before byte `offset` (≤ `text.len()`).
    fn chars_at(&self, text: &str, offset: usize) -> usize {
        let block = offset / CHARS_BLOCK;
        let from = block * CHARS_BLOCK;
        let before = self.chars_before.get(block).copied().unwrap_or_else(|| {
            // `offset` is the end of a text whose length is a multiple of the block.
            self.chars_before.last().copied().unwrap_or(0)
                + text
                    .as_bytes()
                    .get(from.saturating_sub(CHARS_BLOCK)..from)
                    .map_or(0, count_chars)
        });
        before + text.as_bytes().get(from..offset).map_or(0, count_chars)
    }
}

/// Whether `b` continues a UTF-8 character rather than starting one.
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Characters that start in `bytes`.
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| !is_continuation(b)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_not_bytes() {
        assert_eq!(line_col("ab\nçd", 5), (2, 2));
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 99), (2, 3));
    }

    #[test]
    fn the_index_agrees_with_counting_from_the_start() {
        let mut text = String::new();
        for i in 0..700 {
            text.push_str(if i % 7 == 0 {
                "çé→\r\n"
            } else {
                "abc de\n"
            });
            if i % 50 == 0 {
                text.push_str(&"x".repeat(600));
            }
        }
        let index = LineIndex::new(&text);
        let mut line = 1;
        let mut column = 1;
        for (offset, c) in text.char_indices().chain([(text.len(), '\0')]) {
            assert_eq!(index.line_col(&text, offset), (line, column), "at {offset}");
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
    }

    #[test]
    fn a_byte_order_mark_takes_no_column_and_lines_drop_their_break() {
        let text = "\u{feff}job\r\nx";
        assert_eq!(line_col(text, 3), (1, 1));
        assert_eq!(line_col(text, 4), (1, 2));
        let index = LineIndex::new(text);
        assert_eq!(index.line_range(text, 1), 0..6);
        assert_eq!(index.line_range(text, 2), 8..9);
        assert_eq!(index.line_range(text, 3), 9..9);
        assert_eq!(index.lines(), 2);
    }
}
