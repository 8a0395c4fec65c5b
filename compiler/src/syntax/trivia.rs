//! Comments, which the parser skips, found again for the formatter.

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
    let mut in_string = false;
    let mut escaped = false;
    let mut code_on_line = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' | '\n' => in_string = false,
                _ => {}
            }
            if c == '\n' {
                code_on_line = false;
            }
            continue;
        }
        match c {
            '\n' => code_on_line = false,
            '"' => {
                in_string = true;
                code_on_line = true;
            }
            '#' => {
                let mut end = text.len();
                while let Some(&(j, d)) = chars.peek() {
                    if d == '\n' {
                        end = j;
                        break;
                    }
                    chars.next();
                }
                let body = text.get(i..end).unwrap_or_default().trim_end();
                found.push(Comment {
                    text: body.to_string(),
                    span: Span::new(file, i, i + body.len()),
                    trailing: code_on_line,
                });
            }
            c if c.is_whitespace() => {}
            _ => code_on_line = true,
        }
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
