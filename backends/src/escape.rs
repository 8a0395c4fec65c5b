//! Escaping of strings for the formats the backends write: YAML double-quoted scalars, POSIX
//! shell single-quoted words and ASCII-only JSON, and checks of plain names. DNS-1123 labels are
//! made in the core ([`loam_ir::names`]), where the checker uses the same functions.
//!
//! Every string that comes from a spec goes through one of these before it reaches a manifest;
//! the template environment refuses to print a string that did not.

use std::fmt::Write;

/// `s` as a YAML double-quoted scalar that every YAML 1.1 and 1.2 parser reads back as `s`.
///
/// Escapes `"` and `\`, every control and non-printable character (C0, DEL, C1, the line and
/// paragraph separators, the byte-order mark, non-characters) so the scalar is one line of
/// printable text.
pub fn yaml_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_yaml_escape(c) => {
                let n = u32::from(c);
                if n <= 0xFF {
                    let _ = write!(out, "\\x{n:02X}");
                } else if n <= 0xFFFF {
                    let _ = write!(out, "\\u{n:04X}");
                } else {
                    let _ = write!(out, "\\U{n:08X}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether YAML needs `c` escaped: it is not in YAML's printable set, or parsers treat it as a
/// line break (NEL, LS, PS), or it is the byte-order mark.
fn needs_yaml_escape(c: char) -> bool {
    let n = u32::from(c);
    n < 0x20
        || (0x7F..=0x9F).contains(&n)
        || n == 0x2028
        || n == 0x2029
        || n == 0xFEFF
        || (0xFFFE..=0xFFFF).contains(&n)
        || (0xFDD0..=0xFDEF).contains(&n)
        || (n & 0xFFFE) == 0xFFFE
}

/// `s` as one shell word: single-quoted, with each `'` written as `'\''`. Nothing inside is
/// expanded by any POSIX shell (no `$`, backtick, `\` or glob processing).
pub fn shell_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// JSON text with every character outside printable ASCII written as `\uXXXX`, so the text can
/// sit in a YAML block scalar or a shell here-document unchanged.
///
/// Such characters can only occur inside JSON strings, where `\uXXXX` means the same character.
pub fn json_ascii(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c == '\n' || (' '..='~').contains(&c) {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
    out
}

// The name rules are the core's, so the catalogue loader refuses what a manifest cannot carry.
pub use loam_ir::names::{is_label_key, is_label_value, is_plain_word};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_quote_escapes_breaks_and_controls() {
        assert_eq!(yaml_quote("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
        assert_eq!(
            yaml_quote("\u{7f}\u{85}\u{2028}\u{feff}"),
            r#""\x7F\x85\u2028\uFEFF""#
        );
        assert_eq!(yaml_quote("$(x) `y` ; 名前 🚀"), "\"$(x) `y` ; 名前 🚀\"");
    }

    #[test]
    fn shell_quote_closes_and_reopens_around_quotes() {
        assert_eq!(shell_quote("it's $(x)"), r"'it'\''s $(x)'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn json_ascii_escapes_everything_outside_printable_ascii() {
        assert_eq!(json_ascii("\"é🚀\u{7f}\""), r#""\u00e9\ud83d\ude80\u007f""#);
    }

    #[test]
    fn label_keys_and_values() {
        assert!(is_label_key("nvidia.com/gpu.product"));
        assert!(is_label_key("accelerator"));
        assert!(!is_label_key("a b"));
        assert!(!is_label_key("/x"));
        assert!(is_label_value("NVIDIA-H100-80GB-HBM3"));
        assert!(!is_label_value("-x"));
    }
}
