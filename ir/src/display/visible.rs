//! Text from specs, catalogues, file names and plans made safe to show: control characters and
//! bidirectional formatting characters written as visible escapes, long text cut.
//!
//! Every renderer that writes to a terminal, a CI log or a pull-request comment passes names and
//! messages through here, so an ESC or OSC sequence in a job name, a tenant or a file name is
//! shown as `\u{1b}` and never acts on the reader's terminal, and a bidi override cannot make
//! text read differently from what it is.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach output raw: a control character (C0, DEL, C1) or a bidirectional
/// formatting character (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every [hidden](is_hidden) character written as `\u{…}` (Rust's escape, e.g.
/// `\u{1b}`), line breaks and tabs included: for one-line values such as names.
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, is_hidden)
}

/// As [`visible`], but line feeds and tabs stay: for text of several lines, such as messages.
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| is_hidden(c) && c != '\n' && c != '\t')
}

/// `text` cut to at most `max` characters, the last of them `…` when cut, so one long value
/// cannot fill a message, a line or a log.
pub fn bounded(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some(_) => {
            let kept: String = text.chars().take(max.saturating_sub(1)).collect();
            Cow::Owned(format!("{kept}…"))
        }
    }
}

fn escape(text: &str, hidden: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_and_bidi_characters_visibly() {
        assert_eq!(visible("a\u{1b}]0;x\u{7}b"), "a\\u{1b}]0;x\\u{7}b");
        assert_eq!(visible("a\nb\tc\0"), "a\\u{a}b\\u{9}c\\u{0}");
        assert_eq!(visible("x\u{202e}y\u{85}"), "x\\u{202e}y\\u{85}");
        assert_eq!(visible_lines("a\nb\t\u{9b}"), "a\nb\t\\u{9b}");
        assert!(matches!(visible("plain é 🚀"), Cow::Borrowed(_)));
    }

    #[test]
    fn bounds_long_text_by_characters() {
        assert_eq!(bounded("abc", 3), "abc");
        assert_eq!(bounded("abcd", 3), "ab…");
        assert_eq!(bounded("ééééé", 4), "ééé…");
    }
}
