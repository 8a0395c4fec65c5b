//! Syntax errors in a user's words: pest's expected rules become "expected `=` or `{` after
//! `model`, found `:`", and runaway nesting is caught before pest can overflow the stack.

use super::MAX_NESTING;
use super::scan::{Region, scan};
use loam_grammar::{Rule, describe};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diagnostics::codes;
use loam_ir::span::{FileId, Span};
use pest::error::{Error, ErrorVariant, InputLocation};

/// Converts pest's error into a located diagnostic (code L0001).
pub(super) fn from_pest(file: FileId, text: &str, err: &Error<Rule>) -> Diagnostic {
    let at = match err.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((start, _)) => start,
    };
    let expected = match &err.variant {
        ErrorVariant::ParsingError { positives, .. } => expected_words(positives),
        ErrorVariant::CustomError { message } => vec![message.clone()],
    };
    let found = token_at(text, at);
    let expects_close_brace = expected.iter().any(|word| word == "`}`");
    if let Some(diagnostic) = super::mistakes::recognise(file, text, at, found, expects_close_brace)
    {
        return diagnostic;
    }
    let span = Span::new(file, at, at + found.map_or(0, str::len));
    let found_words = found.map_or_else(|| "end of file".to_string(), |t| format!("`{t}`"));
    let after = previous_token(text, at)
        .map(|t| format!(" after `{t}`"))
        .unwrap_or_default();
    let message = if expected.is_empty() {
        format!("unexpected {found_words}{after}")
    } else {
        format!(
            "expected {}{after}, found {found_words}",
            join_or(&expected)
        )
    };
    let label = if expected.is_empty() {
        "not expected here".to_string()
    } else {
        format!("expected {} here", join_or(&expected))
    };
    Diagnostic::error(codes::syntax::SYNTAX_ERROR, message, span, label)
        .with_help(help_for(&expected, found))
}

/// The human words for pest's expected rules, deduplicated, in a fixed order.
fn expected_words(positives: &[Rule]) -> Vec<String> {
    let mut rules: Vec<Rule> = positives.to_vec();
    // `=` and `{` first: after a name, that is what a user most likely meant.
    rules.sort_by_key(|rule| match rule {
        Rule::assign => (0, *rule),
        Rule::open_brace => (1, *rule),
        _ => (2, *rule),
    });
    let mut words: Vec<String> = Vec::new();
    for rule in rules {
        let word = describe(rule).to_string();
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words
}

fn join_or(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

fn help_for(expected: &[String], found: Option<&str>) -> String {
    let wants = |w: &str| expected.iter().any(|e| e == w);
    if wants("`=`") && wants("`{`") {
        "write `name = value` for a field or `name { … }` for a block".to_string()
    } else if wants("`}`") && found.is_none() {
        "a block is not closed: add the missing `}`".to_string()
    } else if wants("a value") || wants("a number") {
        "write a number such as `80` or `48TB`, a string in double quotes, a name or a list"
            .to_string()
    } else if wants("`]`") || wants("`,`") {
        "separate list items with `,` and close the list with `]`".to_string()
    } else {
        "see `docs/language.md` for the syntax of job specs".to_string()
    }
}

/// The token that starts at byte `at`: a run of name characters, or one other character.
fn token_at(text: &str, at: usize) -> Option<&str> {
    let rest = text.get(at..)?;
    let first = rest.chars().next()?;
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
    let len = if is_word(first) {
        rest.find(|c: char| !is_word(c)).unwrap_or(rest.len())
    } else {
        first.len_utf8()
    };
    // Keep huge runs (a 10 MB line of garbage) readable.
    let len = floor_char_boundary(rest, len.min(40));
    rest.get(..len)
}

/// The last token before byte `at`, skipping white space and comments.
fn previous_token(text: &str, at: usize) -> Option<&str> {
    let before = text.get(..at)?;
    let mut end = before.len();
    // Walk back over blank space and whole comment lines.
    loop {
        let trimmed = before.get(..end)?.trim_end();
        end = trimmed.len();
        let line_start = trimmed.rfind('\n').map_or(0, |i| i + 1);
        let line = trimmed.get(line_start..)?;
        match line.find('#') {
            Some(hash) if !line.get(..hash)?.contains('"') => end = line_start + hash,
            _ => break,
        }
        if end == 0 {
            return None;
        }
    }
    let trimmed = before.get(..end)?;
    let last = trimmed.chars().next_back()?;
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
    let start = if is_word(last) {
        trimmed.rfind(|c: char| !is_word(c)).map_or(0, |i| i + 1)
    } else {
        end - last.len_utf8()
    };
    let start = start.max(end.saturating_sub(40));
    trimmed.get(ceil_char_boundary(trimmed, start)..)
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Rejects blocks and lists nested deeper than [`MAX_NESTING`] (code L0003), before parsing.
pub(super) fn check_nesting(file: FileId, text: &str) -> Option<Diagnostic> {
    let mut depth = 0usize;
    for (i, c, region) in scan(text) {
        if region != Region::Code {
            continue;
        }
        match c {
            '{' | '[' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(
                        Diagnostic::error(
                            codes::syntax::NESTING_TOO_DEEP,
                            format!("nesting deeper than {MAX_NESTING} levels"),
                            Span::new(file, i, i + 1),
                            format!("level {depth} opens here"),
                        )
                        .with_help(
                            "job specs nest a few levels deep; close the open blocks or lists",
                        ),
                    );
                }
            }
            '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}
