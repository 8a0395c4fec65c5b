//! What spec text is: the bytes of a `.loam` file become text here, or are refused before any
//! of them can be parsed or shown.
//!
//! Spec text is UTF-8 holding no control character but tab, line feed and the carriage return
//! of a CRLF line break; a byte-order mark at the start is skipped. A file that is not spec text
//! (a binary file, `/proc/self/environ`, a file with terminal escapes) is refused with one
//! diagnostic that gives the place and the kind of the first offending byte and nothing of the
//! file's content: L0002 when it is not UTF-8, L0005 otherwise. This holds in comments too.

use loam_ir::diagnostics::{Diagnostic, codes};
use loam_ir::span::{FileId, Span};
use std::borrow::Cow;

/// The UTF-8 byte-order mark some Windows editors write at the start of a file.
const BOM: &str = "\u{feff}";

/// Decodes file bytes as spec text, or explains where they stop being spec text.
///
/// A leading byte-order mark becomes three spaces, so byte offsets (and spans) in the decoded
/// text are the file's own. See the module documentation for what is refused.
pub fn decode_utf8(file: FileId, bytes: &[u8]) -> Result<Cow<'_, str>, Box<Diagnostic>> {
    let text = std::str::from_utf8(bytes).map_err(|err| {
        let at = err.valid_up_to();
        Box::new(
            Diagnostic::error(
                codes::syntax::INVALID_UTF8,
                "file is not valid UTF-8",
                Span::new(file, at, at + 1),
                format!("invalid byte at offset {at}"),
            )
            .with_help("save the file as UTF-8; job specs are text files"),
        )
    })?;
    if let Some((at, c)) = first_not_spec_text(text) {
        return Err(Box::new(not_spec_text(file, at, c)));
    }
    Ok(match text.strip_prefix(BOM) {
        Some(rest) => Cow::Owned(format!("{}{rest}", " ".repeat(BOM.len()))),
        None => Cow::Borrowed(text),
    })
}

/// Whether `c` may appear in spec text (a CR only before an LF: see [`first_not_spec_text`]).
pub fn is_spec_char(c: char) -> bool {
    !c.is_control() || matches!(c, '\t' | '\n' | '\r')
}

/// The byte offset and character of the first character of `text` that spec text may not
/// hold: a control character (C0, DEL, C1) other than tab and line feed, or a carriage return
/// not followed by a line feed.
pub fn first_not_spec_text(text: &str) -> Option<(usize, char)> {
    let bytes = text.as_bytes();
    text.char_indices()
        .find(|&(at, c)| !is_spec_char(c) || (c == '\r' && bytes.get(at + 1) != Some(&b'\n')))
}

/// L0005 at byte `at`, naming the character `c` by its code point only.
fn not_spec_text(file: FileId, at: usize, c: char) -> Diagnostic {
    let code_point = format!("U+{:04X}", u32::from(c));
    let (label, help) = if c == '\r' {
        (
            format!("a carriage return ({code_point}) that ends no CRLF line break"),
            "save the file with LF or CRLF line endings; loam does not read a lone CR as a line break",
        )
    } else {
        (
            format!("control character {code_point}{}", control_name(c)),
            "job specs are text files: remove the character, or keep files that are not specs out of the specs folder (`.loamignore`)",
        )
    };
    Diagnostic::error(
        codes::syntax::NOT_SPEC_TEXT,
        "file is not spec text: it holds a control character",
        Span::new(file, at, at + c.len_utf8()),
        label,
    )
    .with_help(help)
}

/// ` (NUL)` and the like for the control characters people meet in files.
fn control_name(c: char) -> &'static str {
    match c {
        '\0' => " (NUL)",
        '\u{7}' => " (BEL)",
        '\u{8}' => " (backspace)",
        '\u{b}' => " (vertical tab)",
        '\u{c}' => " (form feed)",
        '\u{1b}' => " (ESC)",
        '\u{7f}' => " (DEL)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(bytes: &[u8]) -> Box<Diagnostic> {
        decode_utf8(FileId(0), bytes).unwrap_err()
    }

    #[test]
    fn spec_text_is_utf8_with_tabs_and_line_breaks() {
        let text = "job \"a\" {\r\n\ttenant = \"é\"\n}\n";
        assert_eq!(decode_utf8(FileId(0), text.as_bytes()).unwrap(), text);
    }

    #[test]
    fn a_byte_order_mark_becomes_spaces_of_the_same_length() {
        let decoded = decode_utf8(FileId(0), "\u{feff}job".as_bytes()).unwrap();
        assert_eq!(decoded, "   job");
    }

    #[test]
    fn control_characters_are_refused_at_their_place_without_the_text() {
        for (bytes, at, label) in [
            (&b"A=secret\0B=x"[..], 8, "control character U+0000 (NUL)"),
            (b"# \x1b]0;t\x07", 2, "control character U+001B (ESC)"),
            (b"x\x7f", 1, "control character U+007F (DEL)"),
            ("a\u{85}".as_bytes(), 1, "control character U+0085"),
            (
                b"a\rb",
                1,
                "a carriage return (U+000D) that ends no CRLF line break",
            ),
            (
                b"a\r",
                1,
                "a carriage return (U+000D) that ends no CRLF line break",
            ),
        ] {
            let d = refused(bytes);
            assert_eq!(d.code, codes::syntax::NOT_SPEC_TEXT);
            assert_eq!(d.span.map(|s| s.start), Some(at));
            assert_eq!(d.label, label);
            assert!(!d.message.contains("secret") && !d.label.contains("secret"));
        }
    }

    #[test]
    fn invalid_utf8_is_still_l0002() {
        let d = refused(b"ok\xe9");
        assert_eq!(d.code, codes::syntax::INVALID_UTF8);
        assert_eq!(d.span.map(|s| s.start), Some(2));
    }
}
