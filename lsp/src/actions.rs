//! Code actions: every did-you-mean suggestion of a diagnostic as a quick fix that writes the
//! suggested name in place of the unknown one.

use crate::document::Document;
use loam_ir::diagnostics::Diagnostic;
use lsp_types::{Range, TextEdit, Uri};
use serde_json::{Value, json};

/// The name a help line suggests: `did you mean `X`?`.
pub fn suggestion(help: &str) -> Option<&str> {
    let rest = help.split("did you mean `").nth(1)?;
    rest.split('`').next().filter(|s| !s.is_empty())
}

/// The text that replaces `written` (the diagnostic's span) to take `suggested`: a number keeps
/// its digits and takes the suggested unit (`48TBB` → `48TB`), a string keeps its quotes, a name
/// is replaced whole.
pub fn replacement(written: &str, suggested: &str) -> String {
    if written.starts_with(|c: char| c.is_ascii_digit()) {
        let digits = written
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(written.len());
        format!("{}{suggested}", written.get(..digits).unwrap_or(""))
    } else if written.starts_with('"') {
        format!("\"{suggested}\"")
    } else {
        suggested.to_string()
    }
}

/// The quick fixes (protocol `CodeAction`s) of the document's diagnostics that touch `range`.
pub fn quick_fixes(
    diagnostics: &[(Diagnostic, lsp_types::Diagnostic)],
    doc: &Document,
    uri: &Uri,
    range: Range,
) -> Vec<Value> {
    let mut out = Vec::new();
    for (loam, shown) in diagnostics {
        let Some(span) = loam.span else { continue };
        let overlaps = shown.range.start <= range.end && range.start <= shown.range.end;
        let Some(suggested) = loam.help.as_deref().and_then(suggestion) else {
            continue;
        };
        if !overlaps {
            continue;
        }
        let Some(written) = doc.text.get(span.start as usize..span.end as usize) else {
            continue;
        };
        let new_text = replacement(written, suggested);
        let edit = TextEdit::new(shown.range, new_text.clone());
        // Written as JSON: the protocol types' `WorkspaceEdit::changes` is a `HashMap`, whose
        // order the workspace's determinism rule bans; this map has one entry anyway.
        out.push(json!({
            "title": format!("Replace with `{new_text}`"),
            "kind": "quickfix",
            "diagnostics": [shown],
            "isPreferred": true,
            "edit": {"changes": {uri.as_str(): [edit]}},
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_and_their_replacements() {
        assert_eq!(suggestion("did you mean `hidden`?"), Some("hidden"));
        assert_eq!(
            suggestion("did you mean `bf16`? `precision` is one of …"),
            Some("bf16")
        );
        assert_eq!(suggestion("known fields of `model`: `a`"), None);
        assert_eq!(replacement("48TBB", "TB"), "48TB");
        assert_eq!(replacement("\"nlpp\"", "nlp"), "\"nlp\"");
        assert_eq!(replacement("H100_SMX", "H100_SXM"), "H100_SXM");
    }
}
