//! Document symbols and folding ranges, from the compiler's syntax tree.

use crate::document::Document;
use loam_compiler::syntax::ast::{Block, Entry};
use loam_compiler::syntax::parse;
use loam_ir::span::FileId;
use lsp_types::{DocumentSymbol, FoldingRange, FoldingRangeKind, SymbolKind};

/// The blocks of `doc` (jobs, services and their blocks) with their fields, nested; empty
/// while the text does not parse.
pub fn symbols(doc: &Document) -> Vec<DocumentSymbol> {
    let parsed = parse(FileId(0), &doc.text);
    parsed
        .file
        .map(|file| file.blocks.iter().map(|b| block(doc, b)).collect())
        .unwrap_or_default()
}

#[allow(deprecated)] // `DocumentSymbol::deprecated` must be written; it is the protocol's field.
fn block(doc: &Document, b: &Block) -> DocumentSymbol {
    let children: Vec<DocumentSymbol> = b
        .entries
        .iter()
        .map(|entry| match entry {
            Entry::Block(inner) => block(doc, inner),
            Entry::Attribute(a) => DocumentSymbol {
                name: a.name.name.clone(),
                detail: doc
                    .text
                    .get(value_span(a))
                    .map(|v| v.lines().next().unwrap_or("").to_string()),
                kind: SymbolKind::FIELD,
                tags: None,
                deprecated: None,
                range: doc.range(a.span.start as usize, a.span.end as usize),
                selection_range: doc.range(a.name.span.start as usize, a.name.span.end as usize),
                children: None,
            },
        })
        .collect();
    let name = match &b.label {
        Some(label) => format!("{} \"{}\"", b.name.name, label.value),
        None => b.name.name.clone(),
    };
    DocumentSymbol {
        name,
        detail: None,
        kind: if b.label.is_some() {
            SymbolKind::MODULE
        } else {
            SymbolKind::STRUCT
        },
        tags: None,
        deprecated: None,
        range: doc.range(b.span.start as usize, b.span.end as usize),
        selection_range: doc.range(b.name.span.start as usize, b.name.span.end as usize),
        children: Some(children),
    }
}

/// The bytes of an attribute's value: after its `=`.
fn value_span(a: &loam_compiler::syntax::ast::Attribute) -> std::ops::Range<usize> {
    let end = a.span.end as usize;
    let start = (a.name.span.end as usize).min(end);
    start..end
}

/// A folding range for every block over more than one line.
pub fn folding(doc: &Document) -> Vec<FoldingRange> {
    let mut out = Vec::new();
    if let Some(file) = parse(FileId(0), &doc.text).file {
        for b in &file.blocks {
            fold(doc, b, &mut out);
        }
    }
    out
}

fn fold(doc: &Document, b: &Block, out: &mut Vec<FoldingRange>) {
    let start = doc.position(b.open.start as usize).line;
    let end = doc.position(b.close.start as usize).line;
    if end > start {
        out.push(FoldingRange {
            start_line: start,
            end_line: end,
            kind: Some(FoldingRangeKind::Region),
            ..FoldingRange::default()
        });
    }
    for inner in b.blocks() {
        fold(doc, inner, out);
    }
}
