//! Diagnostics as GitHub Actions workflow commands, so a CI run shows them on the lines of the
//! pull request: `::error file=…,line=…,col=…,endLine=…,endColumn=…,title=L1002::message`.

use loam_compiler::diagnostics::Diagnostic;
use loam_compiler::span::SourceMap;

/// Escapes a command's message (`%`, CR, LF), as the Actions runner decodes them.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value: the message escapes plus `:` and `,`.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// One annotation line (with its newline).
pub fn annotation(diagnostic: &Diagnostic, sources: &SourceMap) -> String {
    let level = if diagnostic.is_error() {
        "error"
    } else {
        "warning"
    };
    let mut message = diagnostic.message.clone();
    if !diagnostic.label.is_empty() && diagnostic.label != diagnostic.message {
        message.push_str(&format!(": {}", diagnostic.label));
    }
    if let Some(help) = &diagnostic.help {
        message.push_str(&format!("\nhelp: {help}"));
    }
    let title = escape_property(diagnostic.code.as_str());
    let Some(span) = diagnostic.span else {
        return format!("::{level} title={title}::{}\n", escape_data(&message));
    };
    let file = sources
        .get(span.file)
        .map_or("<unknown>", |f| f.name.as_str());
    let (line, col) = sources.line_col(span.file, span.start);
    let (end_line, end_col) = sources.line_col(span.file, span.end);
    format!(
        "::{level} file={},line={line},col={col},endLine={end_line},endColumn={end_col},title={title}::{}\n",
        escape_property(file),
        escape_data(&message)
    )
}

/// Every diagnostic as an annotation, in order.
pub fn render(diagnostics: &[Diagnostic], sources: &SourceMap) -> String {
    diagnostics.iter().map(|d| annotation(d, sources)).collect()
}

#[cfg(test)]
mod tests {
    use super::{escape_data, escape_property};

    #[test]
    fn escapes_follow_the_runner() {
        assert_eq!(escape_data("50% a\nb"), "50%25 a%0Ab");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }
}
