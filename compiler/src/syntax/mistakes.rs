//! Syntax errors users make often, recognised before pest's generic message and reported on
//! the text that is wrong, with the form loam accepts: a number with its unit written apart
//! (`2 trillion`, `45 days`), scientific notation (`1e12`), thousands separators
//! (`1,000,000`), and an inner block left open (reported at the block, not at the end of file).
//!
//! pest stops where the text stops parsing, which for these mistakes is the next line or the
//! end of the file; each recogniser here looks back from that place for the mistake's shape and
//! answers `None` when it is not there, so the generic message stays for everything else.

use super::scan::{Region, scan};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diagnostics::codes;
use loam_ir::span::{FileId, Span};

/// The accepted number forms, for every help line here.
const NUMBER_FORMS: &str = "a number takes its unit with no space: counts `2T`, `70B`, `512K` \
     (K M B T = 10³ 10⁶ 10⁹ 10¹²), durations `45d`, `12h`, `200ms`, sizes `80GB`, money `2.5M CNY`, \
     digits grouped with `_` (`1_000_000`); see docs/language.md, \"Values\"";

/// The recognised mistake at the place pest stopped (`at`), if any. `found` is the token pest
/// found there (`None` at the end of the file) and `previous` the token before it.
pub(super) fn recognise(
    file: FileId,
    text: &str,
    at: usize,
    found: Option<&str>,
    expects_close_brace: bool,
) -> Option<Diagnostic> {
    scientific(file, text, at)
        .or_else(|| currency_symbol(file, text, at))
        .or_else(|| thousands_separators(file, text, at, found))
        .or_else(|| spaced_unit(file, text, at))
        .or_else(|| {
            if found.is_none() && expects_close_brace {
                unclosed_block(file, text)
            } else {
                None
            }
        })
}

/// `tokens = 1e12`: the number rule stops at `1e` (read as a unit), pest at the exponent.
fn scientific(file: FileId, text: &str, at: usize) -> Option<Diagnostic> {
    let before = text.get(..at)?;
    let stem_start = before
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == 'e' || c == 'E'))
        .map_or(0, |i| i + 1);
    let stem = before.get(stem_start..)?;
    let mantissa = stem.strip_suffix(['e', 'E'])?;
    if mantissa.is_empty() || !mantissa.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let rest = text.get(at..)?;
    let sign_len = usize::from(rest.starts_with(['+', '-']));
    let digits = rest
        .get(sign_len..)?
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len() - sign_len);
    if digits == 0 {
        return None;
    }
    let end = at + sign_len + digits;
    let written = text.get(stem_start..end)?;
    let value: f64 = written.replace('_', "").parse().ok()?;
    let suggestion = with_count_suffix(value)
        .map(|s| format!("write `{s}`"))
        .unwrap_or_else(|| "write the number with a unit suffix".to_string());
    Some(
        Diagnostic::error(
            codes::syntax::SYNTAX_ERROR,
            format!("`{written}` is scientific notation, which loam does not read: {suggestion}"),
            Span::new(file, stem_start, end),
            suggestion,
        )
        .with_help(NUMBER_FORMS),
    )
}

/// `budget = $5M`: pest stops at the symbol, where a value starts.
fn currency_symbol(file: FileId, text: &str, at: usize) -> Option<Diagnostic> {
    let rest = text.get(at..)?;
    let symbol = rest.chars().next()?;
    // The ISO 4217 codes of the symbols users type most (docs/language.md, "Values": money
    // is an amount, a space and a code). `¥` is also the yen; the catalogue's pools price in
    // CNY, so the help says which code is meant.
    let code = match symbol {
        '$' => "USD",
        '€' => "EUR",
        '£' => "GBP",
        '¥' => "CNY",
        _ => return None,
    };
    let after = rest.get(symbol.len_utf8()..)?;
    let amount_len = after
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
        .unwrap_or(after.len());
    let amount = after.get(..amount_len)?;
    if !amount.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let fix = format!("write `{amount} {code}`");
    let end = at + symbol.len_utf8() + amount_len;
    Some(
        Diagnostic::error(
            codes::syntax::SYNTAX_ERROR,
            format!(
                "`{symbol}{amount}`: money is the amount, a space and the currency's code: {fix}"
            ),
            Span::new(file, at, end),
            fix,
        )
        .with_help(if symbol == '¥' {
            format!("{NUMBER_FORMS}; `¥` may be CNY or JPY: write the code the pool prices in")
        } else {
            NUMBER_FORMS.to_string()
        }),
    )
}

/// `tokens = 1,000,000`: pest stops at the first `,` after a number outside a list.
fn thousands_separators(
    file: FileId,
    text: &str,
    at: usize,
    found: Option<&str>,
) -> Option<Diagnostic> {
    if found != Some(",") {
        return None;
    }
    let (line_start, line) = line_around(text, at);
    let (value_start, value) = value_of(line)?;
    let value = value.trim_end();
    let grouped = value
        .split(',')
        .all(|group| !group.is_empty() && group.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if !grouped || !value.contains(',') {
        return None;
    }
    let plain = value.replace(',', "");
    let underscored = value.replace(',', "_");
    let suggestion = match plain.parse::<f64>().ok().and_then(with_count_suffix) {
        Some(short) if short != plain => format!("write `{short}` or `{underscored}`"),
        _ => format!("write `{underscored}`"),
    };
    let start = line_start + value_start;
    Some(
        Diagnostic::error(
            codes::syntax::SYNTAX_ERROR,
            format!("`{value}` groups digits with `,`, which separates list items: {suggestion}"),
            Span::new(file, start, start + value.len()),
            suggestion,
        )
        .with_help(NUMBER_FORMS),
    )
}

/// `tokens = 2 trillion`, `deadline = 45 days`: the number parses as a whole value, the word
/// starts what pest takes for the next field, and pest stops after it (on the next line, or at
/// the `}` that closes the block). The mistake is on the line of the last token before `at`.
fn spaced_unit(file: FileId, text: &str, at: usize) -> Option<Diagnostic> {
    let before = text.get(..at)?.trim_end();
    let (line_start, line) = line_around(text, before.len().checked_sub(1)?);
    let (value_start, value) = value_of(line)?;
    let value = value.trim_end();
    let (number, word) = value.split_once([' ', '\t'])?;
    let word = word.trim();
    let is_number = number.starts_with(|c: char| c.is_ascii_digit())
        && number
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '_');
    if !is_number || word.is_empty() || !word.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    // `5 USD` is money, which parses: the mistake is elsewhere.
    if word.len() == 3 && word.chars().all(|c| c.is_ascii_uppercase()) {
        return None;
    }
    let fix = match unit_for_word(word) {
        Some(unit) => format!("write `{number}{unit}`"),
        None => format!("write the unit right after the number, e.g. `{number}T` or `{number}d`"),
    };
    let start = line_start + value_start;
    Some(
        Diagnostic::error(
            codes::syntax::SYNTAX_ERROR,
            format!("`{value}` is not a value loam reads: {fix}"),
            Span::new(file, start, start + value.len()),
            fix,
        )
        .with_help(NUMBER_FORMS),
    )
}

/// The loam unit for a unit written out in words (`trillion` → `T`, `days` → `d`), or for a
/// loam unit written after a space (`45 d`).
fn unit_for_word(word: &str) -> Option<&'static str> {
    let lower = word.to_ascii_lowercase();
    let singular = lower.strip_suffix('s').unwrap_or(&lower);
    Some(match singular {
        "thousand" | "k" => "K",
        "million" | "mio" | "mn" => "M",
        "billion" | "bn" => "B",
        "trillion" | "tn" => "T",
        "millisecond" | "m" if lower == "ms" || singular == "millisecond" => "ms",
        "second" | "sec" => "s",
        "minute" | "min" | "mins" => "min",
        "hour" | "hr" | "h" => "h",
        "day" | "d" => "d",
        "week" | "wk" | "w" => "w",
        _ => return None,
    })
}

/// `value` (a positive count) with the largest `K M B T` suffix that leaves a whole or short
/// decimal mantissa: `1e12` → `1T`, `2.5e9` → `2.5B`, `42` → `42`.
fn with_count_suffix(value: f64) -> Option<String> {
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    // Counted: the decimal prefixes of docs/language.md's count suffixes.
    for (suffix, factor) in [("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3), ("", 1.0)] {
        let mantissa = value / factor;
        if mantissa >= 1.0 || suffix.is_empty() {
            let rounded = (mantissa * 1000.0).round() / 1000.0;
            if (rounded - mantissa).abs() > 1e-9 * mantissa.max(1.0) {
                return None;
            }
            return Some(format!("{rounded}{suffix}"));
        }
    }
    None
}

/// The line that holds byte `at`: its start offset and its text without the newline.
fn line_around(text: &str, at: usize) -> (usize, &str) {
    let at = at.min(text.len());
    let start = text
        .get(..at)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1);
    let end = text
        .get(start..)
        .and_then(|t| t.find('\n'))
        .map_or(text.len(), |i| start + i);
    (start, text.get(start..end).unwrap_or_default())
}

/// In a line `name = value  # comment`, the value's offset in the line and its text (comment
/// cut off); `None` when the line is not an attribute.
fn value_of(line: &str) -> Option<(usize, &str)> {
    let (name, _) = line.split_once('=')?;
    let name = name.trim();
    let is_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !is_name || line.contains('"') {
        return None;
    }
    let eq = line.find('=')?;
    let after = line.get(eq + 1..)?;
    let lead = after.len() - after.trim_start().len();
    let start = eq + 1 + lead;
    let rest = line.get(start..)?;
    let value = rest.split('#').next().unwrap_or_default();
    (!value.trim().is_empty()).then_some((start, value))
}

/// An opened block in [`unclosed_block`]'s walk.
struct Open {
    /// Byte offset of the block's name.
    name_start: usize,
    /// Byte offset just past its `{`.
    brace_end: usize,
    /// Indentation of the line it opens on (a tab counts 4).
    indent: usize,
}

/// The file ends inside a block: the block that was left open is the first one whose
/// indentation says so — a block or `}` that starts at or left of an open block's indentation
/// belongs outside it. With no such evidence (a file without indentation), the innermost
/// block still open at the end. The diagnostic sits on that block's name, with the place the
/// `}` is missing as a related label.
fn unclosed_block(file: FileId, text: &str) -> Option<Diagnostic> {
    let mut stack: Vec<Open> = Vec::new();
    let mut evidence: Option<(Open, usize)> = None;
    for (i, c, region) in scan(text) {
        if region != Region::Code {
            continue;
        }
        match c {
            '{' => {
                let (line_start, line) = line_around(text, i);
                let indent = indentation(line);
                if evidence.is_none()
                    && let Some(top) = stack.last()
                    && indent <= top.indent
                    && top.brace_end <= line_start
                    && body_indented(text, top)
                    && let Some(open) = stack.pop()
                {
                    evidence = Some((open, line_start + (line.len() - line.trim_start().len())));
                }
                stack.push(Open {
                    name_start: line_start + (line.len() - line.trim_start().len()),
                    brace_end: i + 1,
                    indent,
                });
            }
            '}' => {
                let (line_start, line) = line_around(text, i);
                let starts_line = line.trim_start().starts_with('}');
                match stack.pop() {
                    Some(open)
                        if evidence.is_none() && starts_line && indentation(line) < open.indent =>
                    {
                        evidence =
                            Some((open, line_start + (line.len() - line.trim_start().len())));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let (open, missing_at) = match evidence {
        Some(found) => found,
        None => {
            let open = stack.pop()?;
            (open, text.trim_end().len())
        }
    };
    let header = line_around(text, open.name_start).1.trim();
    let name = match header
        .split(|c: char| c.is_whitespace() || c == '{')
        .next()
        .unwrap_or_default()
    {
        "" => "{",
        name => name,
    };
    let end_of_name = open.name_start + name.len();
    let missing_line = text
        .get(..missing_at)
        .map_or(1, |t| t.matches('\n').count() + 1);
    let where_missing = if missing_at >= text.trim_end().len() {
        "at the end of the file".to_string()
    } else {
        format!("before line {missing_line}")
    };
    let mut diagnostic = Diagnostic::error(
        codes::syntax::SYNTAX_ERROR,
        format!("the block `{name}` is not closed: its `}}` is missing {where_missing}"),
        Span::new(file, open.name_start, end_of_name.max(open.name_start)),
        "this block is never closed",
    )
    .with_help(format!(
        "add `}}` at the end of `{name}` ({where_missing}); blocks close in the order they open"
    ));
    if missing_at < text.trim_end().len() {
        let next_token = text
            .get(missing_at..)
            .and_then(|t| t.split_whitespace().next())
            .unwrap_or_default();
        diagnostic = diagnostic.with_related(
            Span::new(file, missing_at, missing_at + next_token.len()),
            "`}` expected before this",
        );
    }
    Some(diagnostic)
}

/// Whether the first line of a block's body is indented more than the line that opens it:
/// only then does indentation say where the block ends (a file written flush left says
/// nothing).
fn body_indented(text: &str, open: &Open) -> bool {
    text.get(open.brace_end..)
        .into_iter()
        .flat_map(|body| body.lines().skip(1))
        .find(|line| {
            let trimmed = line.trim();
            !trimmed.is_empty() && !trimmed.starts_with('#')
        })
        .is_some_and(|line| indentation(line) > open.indent)
}

/// The width of a line's leading blanks, a tab counting 4.
fn indentation(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_the_largest_whole_suffix() {
        assert_eq!(with_count_suffix(1e12).as_deref(), Some("1T"));
        assert_eq!(with_count_suffix(2.5e9).as_deref(), Some("2.5B"));
        assert_eq!(with_count_suffix(1_500.0).as_deref(), Some("1.5K"));
        assert_eq!(with_count_suffix(42.0).as_deref(), Some("42"));
        // 1.23456e12 needs five decimals in T: no short form.
        assert_eq!(with_count_suffix(1.23456e12), None);
    }

    #[test]
    fn words_map_to_units() {
        assert_eq!(unit_for_word("trillion"), Some("T"));
        assert_eq!(unit_for_word("Days"), Some("d"));
        assert_eq!(unit_for_word("hours"), Some("h"));
        assert_eq!(unit_for_word("ms"), Some("ms"));
        assert_eq!(unit_for_word("minutes"), Some("min"));
        assert_eq!(unit_for_word("parsecs"), None);
    }
}
