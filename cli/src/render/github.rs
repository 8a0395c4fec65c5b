//! Diagnostics as GitHub Actions workflow commands, so a CI run shows them on the lines of the
//! pull request: `::error file=…,line=…,col=…,endLine=…,endColumn=…,title=L1002::message`.

use super::diagnostics::{locate, severity_word};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::display;
use loam_ir::span::SourceMap;

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

/// One annotation line (with its newline). Control characters of the message and the file
/// name are written as visible escapes (`\u{1b}`) before the runner's own escapes, so a log
/// shows them and a terminal never acts on them.
pub fn annotation(diagnostic: &Diagnostic, sources: &SourceMap) -> String {
    let level = severity_word(diagnostic);
    let mut message = diagnostic.message.clone();
    if !diagnostic.label.is_empty() && diagnostic.label != diagnostic.message {
        message.push_str(&format!(": {}", diagnostic.label));
    }
    if let Some(help) = &diagnostic.help {
        message.push_str(&format!("\nhelp: {help}"));
    }
    let message = display::visible_lines(&message);
    let title = escape_property(diagnostic.code.as_str());
    let Some(span) = diagnostic.span else {
        return format!("::{level} title={title}::{}\n", escape_data(&message));
    };
    let at = locate(span, sources);
    format!(
        "::{level} file={},line={},col={},endLine={},endColumn={},title={title}::{}\n",
        escape_property(&display::visible(&at.file)),
        at.line,
        at.column,
        at.end_line,
        at.end_column,
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
        assert_eq!(escape_data("a\r\n%"), "a%0D%0A%25");
    }
}
