//! Lowering pest pairs to the AST: one function per rule, so every node gets its span in exactly
//! one place.

use super::ast::{Attribute, Block, Entry, File, Ident, ListLit, NumberLit, StringLit, Value};
use loam_grammar::Rule;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diagnostics::codes;
use loam_ir::span::{FileId, Span};
use pest::iterators::Pair;

type Diags = Vec<Diagnostic>;

fn span_of(file: FileId, pair: &Pair<'_, Rule>) -> Span {
    let s = pair.as_span();
    Span::new(file, s.start(), s.end())
}

/// `file = { SOI ~ block* ~ EOI }`
pub(super) fn file(file_id: FileId, pair: Pair<'_, Rule>, diags: &mut Diags) -> File {
    let span = span_of(file_id, &pair);
    let blocks = pair
        .into_inner()
        .filter(|p| p.as_rule() == Rule::block)
        .map(|p| block(file_id, p, diags))
        .collect();
    File { blocks, span }
}

/// `block = { ident ~ string? ~ open_brace ~ entry* ~ close_brace }`
fn block(file_id: FileId, pair: Pair<'_, Rule>, diags: &mut Diags) -> Block {
    let span = span_of(file_id, &pair);
    let mut name = Ident {
        name: String::new(),
        span,
    };
    let mut label = None;
    let mut entries = Vec::new();
    let (mut open, mut close) = (span, span);
    for inner in pair.into_inner() {
        match inner.as_rule() {
            Rule::ident => name = ident(file_id, &inner),
            Rule::string => label = Some(string(file_id, &inner, diags)),
            Rule::open_brace => open = span_of(file_id, &inner),
            Rule::close_brace => close = span_of(file_id, &inner),
            Rule::attribute => entries.push(Entry::Attribute(attribute(file_id, inner, diags))),
            Rule::block => entries.push(Entry::Block(block(file_id, inner, diags))),
            _ => {}
        }
    }
    Block {
        name,
        label,
        entries,
        open,
        close,
        span,
    }
}

/// `attribute = { ident ~ assign ~ value }`
fn attribute(file_id: FileId, pair: Pair<'_, Rule>, diags: &mut Diags) -> Attribute {
    let span = span_of(file_id, &pair);
    let mut name = Ident {
        name: String::new(),
        span,
    };
    let mut found = None;
    for inner in pair.into_inner() {
        match inner.as_rule() {
            Rule::ident if found.is_none() && name.name.is_empty() => {
                name = ident(file_id, &inner);
            }
            Rule::assign => {}
            _ => found = Some(value(file_id, inner, diags)),
        }
    }
    let value = found.unwrap_or(Value::Ident(Ident {
        name: String::new(),
        span,
    }));
    Attribute { name, value, span }
}

/// `value = _{ list | string | money | quantity | ident }`
fn value(file_id: FileId, pair: Pair<'_, Rule>, diags: &mut Diags) -> Value {
    match pair.as_rule() {
        Rule::list => Value::List(list(file_id, pair, diags)),
        Rule::string => Value::String(string(file_id, &pair, diags)),
        Rule::money => Value::Number(money(file_id, &pair)),
        Rule::quantity => Value::Number(NumberLit {
            text: pair.as_str().to_string(),
            span: span_of(file_id, &pair),
        }),
        _ => Value::Ident(ident(file_id, &pair)),
    }
}

/// `list = { open_bracket ~ (value ~ (comma ~ value)* ~ comma?)? ~ close_bracket }`
fn list(file_id: FileId, pair: Pair<'_, Rule>, diags: &mut Diags) -> ListLit {
    let span = span_of(file_id, &pair);
    let items = pair
        .into_inner()
        .filter(|p| {
            !matches!(
                p.as_rule(),
                Rule::open_bracket | Rule::close_bracket | Rule::comma
            )
        })
        .map(|p| value(file_id, p, diags))
        .collect();
    ListLit { items, span }
}

/// `money = ${ number ~ count_suffix? ~ blanks ~ currency }`: blanks become one space.
fn money(file_id: FileId, pair: &Pair<'_, Rule>) -> NumberLit {
    let span = span_of(file_id, pair);
    let mut amount = String::new();
    let mut currency = "";
    for inner in pair.clone().into_inner() {
        match inner.as_rule() {
            Rule::currency => currency = inner.as_str(),
            _ => amount.push_str(inner.as_str()),
        }
    }
    NumberLit {
        text: format!("{amount} {currency}"),
        span,
    }
}

/// `ident = @{ … }`
fn ident(file_id: FileId, pair: &Pair<'_, Rule>) -> Ident {
    Ident {
        name: pair.as_str().to_string(),
        span: span_of(file_id, pair),
    }
}

/// `string = ${ "\"" ~ string_body ~ "\"" }`: decodes escapes, reporting unknown ones (L0004).
fn string(file_id: FileId, pair: &Pair<'_, Rule>, diags: &mut Diags) -> StringLit {
    let span = span_of(file_id, pair);
    let body_start = pair.as_span().start() + 1;
    let raw = pair.as_str();
    let body = raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default();
    let mut value = String::with_capacity(body.len());
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            value.push(c);
            continue;
        }
        let Some((_, escaped)) = chars.next() else {
            break;
        };
        match escaped {
            'n' => value.push('\n'),
            't' => value.push('\t'),
            'r' => value.push('\r'),
            '\\' => value.push('\\'),
            '"' => value.push('"'),
            other => {
                let at = body_start + i;
                diags.push(
                    Diagnostic::error(
                        codes::syntax::UNKNOWN_ESCAPE,
                        format!("unknown escape `\\{other}` in string"),
                        Span::new(file_id, at, at + 1 + other.len_utf8()),
                        "not an escape loam knows",
                    )
                    .with_help(r#"use one of `\"`, `\\`, `\n`, `\t` or `\r`"#),
                );
                value.push(other);
            }
        }
    }
    StringLit { value, span }
}
