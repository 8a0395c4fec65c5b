//! Completion: block and field names in context, a field's keywords, names from the catalogue
//! (devices, pools, sites, tenants, device features) and units after a number.

use crate::context::{self, Slot};
use crate::document::Document;
use crate::workspace::Workspace;
use loam_compiler::catalogue::Catalogue;
use loam_compiler::units::{Dimension, known_units, parse_quantity};
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionTextEdit, InsertTextFormat, Position, TextEdit,
};
use std::collections::BTreeSet;

/// Which catalogue names a field's value is one of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    Devices,
    Pools,
    Sites,
    Tenants,
    Features,
}

/// The catalogue names field `field` takes, from the reference's words for its value ("name of
/// a pool", "list of device ids", "name of a site", "list of site names", "device features")
/// and `tenant`, a string that names a tenant.
fn names_of(workspace: &Workspace, block: &str, field: &str) -> Option<Names> {
    if field == "tenant" {
        return Some(Names::Tenants);
    }
    let value = &workspace.schema.entry(block, field)?.value;
    if value.contains("device ids") {
        Some(Names::Devices)
    } else if value.contains("name of a pool") {
        Some(Names::Pools)
    } else if value.contains("site") && value.contains("name") {
        Some(Names::Sites)
    } else if value.contains("device features") {
        Some(Names::Features)
    } else {
        None
    }
}

/// Every name of `kind` in the catalogue, sorted, with a one-line detail each.
fn catalogue_names(catalogue: &Catalogue, kind: Names) -> Vec<(String, String)> {
    let mut names: BTreeSet<(String, String)> = BTreeSet::new();
    match kind {
        Names::Devices => {
            for device in catalogue.devices.values() {
                let detail = format!(
                    "{} ({}), {:.0} GiB",
                    device.name,
                    device.vendor,
                    device.memory_bytes.value / loam_ir::units::GIB
                );
                names.insert((device.id.value.clone(), detail));
            }
        }
        Names::Pools => {
            for pool in catalogue.pools.values() {
                names.insert((pool.id.value.clone(), pool.name.clone()));
            }
        }
        Names::Sites => {
            for pool in catalogue.pools.values() {
                for site in &pool.sites {
                    let detail = format!("{}, pool {}", site.city, pool.id.value);
                    names.insert((site.name.value.clone(), detail));
                }
            }
        }
        Names::Tenants => {
            for pool in catalogue.pools.values() {
                for tenant in &pool.tenants {
                    names.insert((tenant.name.value.clone(), format!("pool {}", pool.id.value)));
                }
            }
        }
        Names::Features => {
            for device in catalogue.devices.values() {
                for feature in &device.features.value {
                    names.insert((feature.as_str().to_string(), "device feature".to_string()));
                }
            }
        }
    }
    names.into_iter().collect()
}

/// The dimension of a field's value, from the reference's words for it.
fn dimension_of(value: &str) -> Option<Dimension> {
    let head = value.split(':').next().unwrap_or("");
    if head.starts_with("count") {
        Some(Dimension::Count)
    } else if head.contains("data size") {
        Some(Dimension::Bytes)
    } else if head.starts_with("duration") {
        Some(Dimension::Duration)
    } else if head.contains("bandwidth") {
        Some(Dimension::Bandwidth)
    } else {
        None
    }
}

/// The completion items at `position` of `doc`.
pub fn complete(workspace: &Workspace, doc: &Document, position: Position) -> Vec<CompletionItem> {
    let offset = doc.offset(position);
    let cx = context::at(&doc.text, offset);
    let range = doc.range(cx.word_start, offset);
    let block = cx.blocks.last().map(String::as_str);
    let item = |label: String, kind: CompletionItemKind, detail: Option<String>| CompletionItem {
        text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(
            range,
            label.clone(),
        ))),
        label,
        kind: Some(kind),
        detail,
        ..CompletionItem::default()
    };
    match (&cx.slot, block) {
        (Slot::Key, None) => workspace
            .schema
            .top_level()
            .into_iter()
            .map(|kind| CompletionItem {
                insert_text_format: Some(InsertTextFormat::SNIPPET),
                text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(
                    range,
                    format!("{kind} \"$1\" {{\n  $0\n}}"),
                ))),
                ..item(kind.to_string(), CompletionItemKind::MODULE, None)
            })
            .collect(),
        (Slot::Key, Some(block)) => workspace
            .schema
            .entries(block)
            .iter()
            .map(|entry| {
                let first_line = entry.value.lines().next().unwrap_or("").to_string();
                if entry.is_block {
                    let label_part = if workspace.schema.takes_label(&entry.name) {
                        " \"$1\""
                    } else {
                        ""
                    };
                    CompletionItem {
                        insert_text_format: Some(InsertTextFormat::SNIPPET),
                        text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(
                            range,
                            format!("{}{label_part} {{\n  $0\n}}", entry.name),
                        ))),
                        ..item(
                            entry.name.clone(),
                            CompletionItemKind::STRUCT,
                            Some(first_line),
                        )
                    }
                } else {
                    item(
                        entry.name.clone(),
                        CompletionItemKind::FIELD,
                        Some(first_line),
                    )
                }
            })
            .collect(),
        (Slot::Value { field, in_string }, Some(block)) => {
            let mut items = Vec::new();
            if let (Some(kind), Some(catalogue)) =
                (names_of(workspace, block, field), workspace.catalogue())
            {
                // Tenants are strings: inside quotes the name alone, else quoted.
                let quote = kind == Names::Tenants && !in_string;
                for (name, detail) in catalogue_names(catalogue, kind) {
                    let text = if quote {
                        format!("\"{name}\"")
                    } else {
                        name.clone()
                    };
                    items.push(CompletionItem {
                        text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(range, text))),
                        ..item(name, CompletionItemKind::VALUE, Some(detail))
                    });
                }
            }
            if !in_string && let Some(entry) = workspace.schema.entry(block, field) {
                for keyword in entry.keywords() {
                    if !items.iter().any(|i: &CompletionItem| i.label == keyword) {
                        items.push(item(keyword, CompletionItemKind::ENUM_MEMBER, None));
                    }
                }
            }
            items
        }
        (Slot::Unit { field }, Some(block)) => {
            let Some(dimension) = workspace
                .schema
                .entry(block, field)
                .and_then(|e| dimension_of(&e.value))
            else {
                return Vec::new();
            };
            known_units()
                .into_iter()
                .filter(|unit| {
                    parse_quantity(&format!("1{unit}")).is_ok_and(|q| q.dimension == dimension)
                })
                .map(|unit| item(unit.to_string(), CompletionItemKind::UNIT, None))
                .collect()
        }
        _ => Vec::new(),
    }
}
