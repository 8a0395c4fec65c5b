//! One open spec as the editor has it: its text, version and the map between byte offsets (the
//! compiler's spans) and the protocol's line/UTF-16 positions.

use lsp_types::{Position, Range, TextDocumentContentChangeEvent};

/// The text of an open document and where its lines start.
#[derive(Debug, Clone)]
pub struct Document {
    /// The full text, as the editor last sent it.
    pub text: String,
    /// The editor's version number of that text.
    pub version: i32,
    /// Byte offset of the start of each line (the first is 0).
    line_starts: Vec<usize>,
}

impl Document {
    /// A document holding `text` at `version`.
    pub fn new(text: String, version: i32) -> Self {
        let line_starts = line_starts(&text);
        Document {
            text,
            version,
            line_starts,
        }
    }

    /// Applies the editor's changes in order: a change with a range replaces that range, one
    /// without replaces the whole text.
    pub fn apply(&mut self, changes: Vec<TextDocumentContentChangeEvent>, version: i32) {
        for change in changes {
            match change.range {
                Some(range) => {
                    let start = self.offset(range.start);
                    let end = self.offset(range.end).max(start);
                    self.text.replace_range(start..end, &change.text);
                }
                None => self.text = change.text,
            }
            self.line_starts = line_starts(&self.text);
        }
        self.version = version;
    }

    /// The protocol position of byte `offset` (clamped to the text, moved back to a character
    /// boundary): its line and its column in UTF-16 code units, the protocol's default.
    pub fn position(&self, offset: usize) -> Position {
        let offset = floor_boundary(&self.text, offset.min(self.text.len()));
        let line = self
            .line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1);
        let start = self.line_starts.get(line).copied().unwrap_or(0);
        let column: usize = self
            .text
            .get(start..offset)
            .unwrap_or("")
            .chars()
            .map(char::len_utf16)
            .sum();
        Position::new(to_u32(line), to_u32(column))
    }

    /// The range of bytes `start..end`.
    pub fn range(&self, start: usize, end: usize) -> Range {
        Range::new(self.position(start), self.position(end))
    }

    /// The byte offset of a protocol position; a line past the end is the end of the text and a
    /// column past the end of its line is the end of that line.
    pub fn offset(&self, position: Position) -> usize {
        let Some(&start) = self.line_starts.get(position.line as usize) else {
            return self.text.len();
        };
        let end = self
            .line_starts
            .get(position.line as usize + 1)
            .copied()
            .unwrap_or(self.text.len());
        let line = self.text.get(start..end).unwrap_or("");
        let mut units = 0usize;
        for (i, c) in line.char_indices() {
            if units >= position.character as usize || c == '\n' {
                return start + i;
            }
            units += c.len_utf16();
        }
        end
    }
}

/// Where each line of `text` starts.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// The largest character boundary at or before `offset`.
fn floor_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// A count as the protocol's `u32`, saturating (a spec is at most a few MiB).
pub fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units() {
        // "é" is 2 bytes and 1 UTF-16 unit; "𝕏" is 4 bytes and 2 units.
        let doc = Document::new("a\né𝕏x\n".to_string(), 1);
        // `x` starts at byte 2 + 2 + 4 = 8, on line 1 after 1 + 2 = 3 units.
        assert_eq!(doc.position(8), Position::new(1, 3));
        assert_eq!(doc.offset(Position::new(1, 3)), 8);
        // Past the end of line 1 is its newline (byte 9); past the last line, the end.
        assert_eq!(doc.offset(Position::new(1, 40)), 9);
        assert_eq!(doc.offset(Position::new(7, 0)), 10);
    }

    #[test]
    fn incremental_changes_replace_ranges() {
        let mut doc = Document::new("pool = lab\n".to_string(), 1);
        doc.apply(
            vec![TextDocumentContentChangeEvent {
                range: Some(Range::new(Position::new(0, 7), Position::new(0, 10))),
                range_length: None,
                text: "xirang".to_string(),
            }],
            2,
        );
        assert_eq!(doc.text, "pool = xirang\n");
        assert_eq!(doc.version, 2);
    }
}
