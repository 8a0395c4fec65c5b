//! Where the cursor is in a spec that is being typed, and so does not parse: inside which
//! blocks, and whether at a field name, a value, or a number's unit.
//!
//! This is a scan of tokens, not a parser: it only counts braces and brackets, skips strings and
//! comments, and keeps the first words of the statement the cursor is in. Everything it finds
//! is checked again by the compiler once the text parses.

/// What the cursor is typing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// A field or block name at the start of a statement (`prefix` typed so far).
    Key,
    /// A value of field `field`, possibly an item of a list, possibly inside a string.
    Value {
        /// The field whose value it is.
        field: String,
        /// Whether the cursor is inside a string literal.
        in_string: bool,
    },
    /// The unit after a number in the value of `field` (`48T|`).
    Unit {
        /// The field whose value it is.
        field: String,
    },
    /// Somewhere nothing is completed (a block's label, a comment).
    Other,
}

/// The cursor's context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The kinds of the blocks around the cursor, outermost first (`["job", "train"]`).
    pub blocks: Vec<String>,
    /// What it is typing.
    pub slot: Slot,
    /// Where the word being typed starts (a byte offset): completion replaces from here to the
    /// cursor.
    pub word_start: usize,
}

/// One token of the statement being scanned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Number,
    Text,
    Assign,
}

/// The context of the cursor at byte `offset` of `text`.
pub fn at(text: &str, offset: usize) -> Context {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = text.get(..offset).unwrap_or("");
    let bytes = before.as_bytes();
    let mut blocks: Vec<String> = Vec::new();
    let mut statement: Vec<Token> = Vec::new();
    let mut brackets = 0usize;
    let mut i = 0usize;
    // Whether the scan ended inside a comment or a string.
    let mut in_comment = false;
    let mut in_string = false;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'#' => match before.get(i..).and_then(|rest| rest.find('\n')) {
                Some(n) => i += n,
                None => {
                    in_comment = true;
                    break;
                }
            },
            b'"' => {
                let mut j = i + 1;
                let mut closed = false;
                while let Some(&c) = bytes.get(j) {
                    match c {
                        b'\\' => j += 2,
                        b'"' => {
                            closed = true;
                            break;
                        }
                        b'\n' => break,
                        _ => j += 1,
                    }
                }
                if !closed && j >= bytes.len() {
                    in_string = true;
                    break;
                }
                statement.push(Token::Text);
                i = j + 1;
            }
            b'{' => {
                if let Some(Token::Word(name)) = statement.first() {
                    blocks.push(name.clone());
                } else {
                    blocks.push(String::new());
                }
                statement.clear();
                brackets = 0;
                i += 1;
            }
            b'}' => {
                blocks.pop();
                statement.clear();
                brackets = 0;
                i += 1;
            }
            b'\n' if brackets == 0 => {
                statement.clear();
                i += 1;
            }
            b'[' => {
                brackets += 1;
                i += 1;
            }
            b']' => {
                brackets = brackets.saturating_sub(1);
                i += 1;
            }
            b'=' => {
                statement.push(Token::Assign);
                i += 1;
            }
            c if c.is_ascii_digit() => {
                let end = word_end(bytes, i);
                statement.push(Token::Number);
                i = end;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let end = word_end(bytes, i);
                statement.push(Token::Word(before.get(i..end).unwrap_or("").to_string()));
                i = end;
            }
            _ => i += 1,
        }
    }
    let word_start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || *c == '_' || *c == '-' || *c == '.')
        .last()
        .map_or(offset, |(i, _)| i);
    let field = match statement.as_slice() {
        [Token::Word(field), Token::Assign, ..] => Some(field.clone()),
        _ => None,
    };
    let slot = if in_comment {
        Slot::Other
    } else if in_string {
        let start = before.rfind('"').map_or(offset, |q| q + 1);
        return Context {
            blocks,
            slot: field.map_or(Slot::Other, |field| Slot::Value {
                field,
                in_string: true,
            }),
            word_start: start,
        };
    } else {
        let typing_number = before
            .get(word_start..)
            .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_digit()));
        // The word being typed is the statement's last token; what came before it decides.
        let done = if word_start < offset {
            statement.len().saturating_sub(1)
        } else {
            statement.len()
        };
        match (statement.get(..done).unwrap_or(&[]), field) {
            ([], _) => Slot::Key,
            (_, Some(field)) if typing_number => {
                let unit_start = before
                    .get(word_start..)
                    .and_then(|w| w.find(|c: char| c.is_ascii_alphabetic()))
                    .map_or(offset, |n| word_start + n);
                return Context {
                    blocks,
                    slot: Slot::Unit { field },
                    word_start: unit_start,
                };
            }
            (_, Some(field)) => Slot::Value {
                field,
                in_string: false,
            },
            _ => Slot::Other,
        }
    };
    Context {
        blocks,
        slot,
        word_start,
    }
}

/// The end of the word (identifier, number with its unit) starting at `i`.
fn word_end(bytes: &[u8], i: usize) -> usize {
    let mut end = i;
    while bytes
        .get(end)
        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/'))
    {
        end += 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(marked: &str) -> Context {
        let offset = marked.find('|').expect("a cursor mark");
        let text = marked.replacen('|', "", 1);
        at(&text, offset)
    }

    #[test]
    fn a_field_name_inside_nested_blocks() {
        let c = context("job \"a\" {\n  train {\n    prec|\n");
        assert_eq!(c.blocks, ["job", "train"]);
        assert_eq!(c.slot, Slot::Key);
        // `prec` starts 4 + 2 + 4 bytes into the third line: after `job "a" {\n` (10 bytes) and
        // `  train {\n` (10 bytes), plus 4 spaces.
        assert_eq!(c.word_start, 24);
    }

    #[test]
    fn a_value_in_a_list_after_a_closed_block() {
        let c = context(
            "job \"a\" {\n  model { layers = 2 }\n  resources {\n    devices = [H100_SXM, A1|",
        );
        assert_eq!(c.blocks, ["job", "resources"]);
        assert_eq!(
            c.slot,
            Slot::Value {
                field: "devices".to_string(),
                in_string: false
            }
        );
    }

    #[test]
    fn a_string_value_and_a_unit() {
        let c = context("job \"a\" {\n  tenant = \"nl|");
        assert_eq!(
            c.slot,
            Slot::Value {
                field: "tenant".to_string(),
                in_string: true
            }
        );
        let c = context("job \"a\" {\n  data \"x\" {\n    size = 48T|");
        assert_eq!(c.blocks, ["job", "data"]);
        assert_eq!(
            c.slot,
            Slot::Unit {
                field: "size".to_string()
            }
        );
        // The unit starts after `48`: completion replaces `T` alone. `job "a" {\n` is 10 bytes,
        // `  data "x" {\n` 13, `    size = ` 11, `48` 2: `T` is byte 36.
        assert_eq!(c.word_start, 36);
    }

    #[test]
    fn comments_and_braces_in_strings_are_skipped() {
        let c = context("job \"{a\" { # model {\n  goal {\n    optimize = |");
        assert_eq!(c.blocks, ["job", "goal"]);
        assert_eq!(
            c.slot,
            Slot::Value {
                field: "optimize".to_string(),
                in_string: false
            }
        );
        assert_eq!(context("job \"a\" { # comm|").slot, Slot::Other);
    }
}
