//! Comments, which the parser skips, found again for the formatter.

use super::scan::{Region, scan};
use loam_ir::span::{FileId, Span};

/// A `# …` comment, up to but excluding the line break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// The text from `#` on, trailing blanks trimmed.
    pub text: String,
    /// Where.
    pub span: Span,
    /// Whether code stands before it on the same line.
    pub trailing: bool,
}

/// Every comment in `text`, in order. Knows strings, so `"a # b"` is no comment.
pub fn comments(file: FileId, text: &str) -> Vec<Comment> {
    let mut found = Vec::new();
    let mut code_on_line = false;
    // The comment being read: where it starts, and whether code stood before it.
    let mut open: Option<(usize, bool)> = None;
    let mut close = |start: usize, end: usize, trailing: bool| {
        let body = text.get(start..end).unwrap_or_default().trim_end();
        found.push(Comment {
            text: body.to_string(),
            span: Span::new(file, start, start + body.len()),
            trailing,
        });
    };
    for (i, c, region) in scan(text) {
        if region == Region::Comment {
            open.get_or_insert((i, code_on_line));
            continue;
        }
        if let Some((start, trailing)) = open.take() {
            close(start, i, trailing);
        }
        match c {
            '\n' => code_on_line = false,
            _ if region == Region::Str => code_on_line = true,
            c if c.is_whitespace() => {}
            _ => code_on_line = true,
        }
    }
    if let Some((start, trailing)) = open {
        close(start, text.len(), trailing);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_own_line_and_trailing_comments_but_not_hashes_in_strings() {
        let text = "# head\njob \"a#b\" { # open\n  x = 1 # one\n}\n";
        let found = comments(FileId(0), text);
        let summary: Vec<(&str, bool)> = found
            .iter()
            .map(|c| (c.text.as_str(), c.trailing))
            .collect();
        assert_eq!(
            summary,
            [("# head", false), ("# open", true), ("# one", true)]
        );
    }
}
