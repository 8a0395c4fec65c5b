//! Hover and go to definition: a field's meaning from the language reference, a catalogue
//! name's figures (`loam catalogue show`) and its place in the catalogue's YAML.

use crate::context::{self, Slot};
use crate::convert;
use crate::document::Document;
use crate::summary;
use crate::workspace::Workspace;
use loam_compiler::catalogue::{Catalogue, Pool, show_text};
use loam_compiler::syntax::ast::Value;
use loam_compiler::syntax::parse;
use loam_ir::plan::Plan;
use loam_ir::span::{FileId, Span};
use lsp_types::{Hover, HoverContents, Location, MarkupContent, MarkupKind, Position};

/// The word at `offset`: its bytes' range, for names, keywords and string contents.
fn word_at(text: &str, offset: usize) -> Option<(usize, usize)> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    let offset = offset.min(text.len());
    let start = text
        .get(..offset)?
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = text
        .get(offset..)?
        .char_indices()
        .find(|(_, c)| !is_word(*c))
        .map_or(text.len(), |(i, _)| offset + i);
    (start < end).then_some((start, end))
}

/// What a name under the cursor is.
enum Target<'a> {
    /// A field or block name of block kind `block`.
    Field { block: String, name: &'a str },
    /// A value of a field.
    Value {
        block: String,
        field: String,
        name: &'a str,
    },
}

fn target(doc: &Document, position: Position) -> Option<(Target<'_>, (usize, usize))> {
    let (start, end) = word_at(&doc.text, doc.offset(position))?;
    let name = doc.text.get(start..end)?;
    let cx = context::at(&doc.text, start);
    let block = cx.blocks.last().cloned().unwrap_or_default();
    let target = match cx.slot {
        Slot::Key => Target::Field { block, name },
        Slot::Value { field, .. } => Target::Value { block, field, name },
        Slot::Unit { .. } | Slot::Other => return None,
    };
    Some((target, (start, end)))
}

/// The pool of the job or service around byte `offset` (`resources { pool = … }`), when the
/// text parses.
fn pool_around(text: &str, offset: usize) -> Option<String> {
    let file = parse(FileId(0), text).file?;
    let block = file
        .blocks
        .iter()
        .find(|b| (b.span.start as usize..=b.span.end as usize).contains(&offset))?;
    let resources = block.blocks().find(|b| b.name.name == "resources")?;
    let pool = resources.attributes().find(|a| a.name.name == "pool")?;
    match &pool.value {
        Value::Ident(ident) => Some(ident.name.clone()),
        _ => None,
    }
}

/// The pools to look for a site or tenant in: the document's own pool first (two pools may
/// both have a tenant `nlp`), then the others in id order.
fn pools_for<'c>(catalogue: &'c Catalogue, own: Option<&str>) -> Vec<&'c Pool> {
    let mut pools: Vec<&Pool> = own
        .and_then(|id| catalogue.pools.get(id))
        .into_iter()
        .collect();
    pools.extend(
        catalogue
            .pools
            .values()
            .filter(|p| Some(p.id.value.as_str()) != own),
    );
    pools
}

/// Where a catalogue name is defined: a device, a pool, a site, a tenant (sites and tenants
/// in `own` pool first).
fn definition_span(catalogue: &Catalogue, name: &str, own: Option<&str>) -> Option<Span> {
    if let Some(device) = catalogue.devices.get(name) {
        return Some(device.id.span);
    }
    if let Some(pool) = catalogue.pools.get(name) {
        return Some(pool.id.span);
    }
    for pool in pools_for(catalogue, own) {
        if let Some(site) = pool.sites.iter().find(|s| s.name.value == name) {
            return Some(site.name.span);
        }
        if let Some(tenant) = pool.tenants.iter().find(|t| t.name.value == name) {
            return Some(tenant.name.span);
        }
    }
    None
}

/// The hover at `position`; over a job's name, the summary of its plan among `plans` (the
/// document's, once planned).
pub fn hover(
    workspace: &Workspace,
    doc: &Document,
    position: Position,
    plans: &[Plan],
) -> Option<Hover> {
    let offset = doc.offset(position);
    if let Some((name, start, end)) = summary::label_at(doc, offset)
        && let Some(plan) = plans.iter().find(|p| p.job == name)
    {
        return Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: summary::plan(plan),
            }),
            range: Some(doc.range(start, end)),
        });
    }
    let (target, (start, end)) = target(doc, position)?;
    let text = match target {
        Target::Field { block, name } => workspace.schema.entry(&block, name)?.describe(&block),
        Target::Value { block, field, name } => {
            let shown = workspace
                .catalogue()
                .and_then(|c| show_text(c, name).ok())
                .map(|figures| format!("```text\n{}\n```", figures.trim_end()));
            let tenant = || {
                let catalogue = workspace.catalogue()?;
                let own = pool_around(&doc.text, start);
                pools_for(catalogue, own.as_deref()).into_iter().find_map(|pool| {
                    let tenant = pool.tenants.iter().find(|t| t.name.value == name)?;
                    Some(format!(
                        "tenant **{name}** of pool `{}`: checkpoints below `{}`, namespace `{}`",
                        pool.id.value,
                        tenant.checkpoint_root.value.as_str(),
                        tenant.kubernetes_namespace
                    ))
                })
            };
            match shown.or_else(tenant) {
                Some(text) => text,
                None => workspace.schema.entry(&block, &field)?.describe(&block),
            }
        }
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: text,
        }),
        range: Some(doc.range(start, end)),
    })
}

/// The catalogue place of the name at `position`: the line of its YAML that defines it.
pub fn definition(workspace: &Workspace, doc: &Document, position: Position) -> Option<Location> {
    let (target, (start, _)) = target(doc, position)?;
    let Target::Value { name, .. } = target else {
        return None;
    };
    let own = pool_around(&doc.text, start);
    let span = definition_span(workspace.catalogue()?, name, own.as_deref())?;
    convert::location(workspace.catalogue_sources(), span)
}
