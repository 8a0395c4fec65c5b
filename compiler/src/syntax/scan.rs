//! The lexical regions of a spec's text, character by character: code, a string (from its
//! opening `"` to its closing one, or to the line's end, escapes included) or a comment (from
//! `#` to the line's end). The pre-parse checks (nesting, an unclosed block) and the comment
//! finder read the text through this one scan, so `"a # {"` is never a comment or a brace.

/// Which region a character is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Region {
    /// Outside strings and comments (a line break that ends a comment included).
    Code,
    /// Inside a string, its quotes and the line break that ends an unterminated one included.
    Str,
    /// Inside a comment, its `#` included, its line break not.
    Comment,
}

/// Every character of `text` with its byte offset and its [`Region`], in order.
pub(crate) fn scan(text: &str) -> impl Iterator<Item = (usize, char, Region)> + '_ {
    let mut region = Region::Code;
    let mut escaped = false;
    text.char_indices().map(move |(i, c)| {
        let here = match region {
            Region::Comment if c == '\n' => {
                region = Region::Code;
                Region::Code
            }
            Region::Comment => Region::Comment,
            Region::Str => {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' | '\n' => region = Region::Code,
                    _ => {}
                }
                Region::Str
            }
            Region::Code => match c {
                '#' => {
                    region = Region::Comment;
                    Region::Comment
                }
                '"' => {
                    region = Region::Str;
                    Region::Str
                }
                _ => Region::Code,
            },
        };
        (i, c, here)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions(text: &str) -> String {
        scan(text)
            .map(|(_, _, r)| match r {
                Region::Code => 'c',
                Region::Str => 's',
                Region::Comment => '#',
            })
            .collect()
    }

    #[test]
    fn strings_hide_hashes_and_comments_hide_quotes() {
        // By hand, one letter per character of the input.
        assert_eq!(regions(r#"a "x#{" b"#), "ccssssscc");
        assert_eq!(regions("a # \"{\nb"), "cc####cc");
        assert_eq!(regions("{ # x\n}"), "cc###cc");
    }

    #[test]
    fn escapes_and_line_breaks_end_strings_as_the_grammar_does() {
        assert_eq!(regions(r#""a\"b" {"#), "sssssscc");
        // An unterminated string ends at the line break; the next line is code.
        assert_eq!(regions("\"ab\n{"), "ssssc");
    }
}
