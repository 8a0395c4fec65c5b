//! What the editor knows about fields and blocks: read from the language reference
//! (`docs/language.md`), whose tables already say, per block, every field, its value, whether it
//! is required and its default. The page is compiled in, so completion and hover say what the
//! reference says and a field added to both the checker and the page reaches the editor too
//! (the crate's tests check the page's fields against the checker).

use std::collections::BTreeMap;

/// The language reference, compiled in.
const LANGUAGE_PAGE: &str = include_str!("../../docs/language.md");

/// One field or nested block of a block, as the reference's table describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name.
    pub name: String,
    /// Whether it is a nested block (`lora { … }`) rather than a field.
    pub is_block: bool,
    /// The table's value column, with its escaped pipes unescaped.
    pub value: String,
    /// The required column, when the table has one and it is not empty.
    pub required: Option<String>,
    /// The default column, when the table has one and it is not empty.
    pub default: Option<String>,
}

impl Entry {
    /// The keywords the value column offers, in its order: the backquoted words before the
    /// first `:` (`` `fp32` | `bf16`: the format… `` gives `fp32`, `bf16`; `` whole number or
    /// `auto` `` gives `auto`), the words of a backquoted list (`` list of `attention mlp` ``),
    /// and `true`/`false` for a boolean. Numbers (`` `10000T` ``) are not keywords.
    pub fn keywords(&self) -> Vec<String> {
        let head = self.value.split(':').next().unwrap_or("");
        let mut words: Vec<String> = Vec::new();
        for quoted in head.split('`').skip(1).step_by(2) {
            for word in quoted.split_whitespace() {
                let keyword = word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && word
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if keyword && !words.iter().any(|w| w == word) {
                    words.push(word.to_string());
                }
            }
        }
        if head.starts_with("boolean") {
            words.extend(["true".to_string(), "false".to_string()]);
        }
        words
    }

    /// The hover text: the name, the value and, when the table gives them, whether it is
    /// required and its default.
    pub fn describe(&self, block: &str) -> String {
        let shape = if self.is_block { " { … }" } else { "" };
        let mut text = format!("**`{}{shape}`** in `{block}`\n\n{}", self.name, self.value);
        if let Some(required) = &self.required {
            text.push_str(&format!("\n\nrequired: {required}"));
        }
        if let Some(default) = &self.default {
            text.push_str(&format!("\n\ndefault: {default}"));
        }
        text
    }
}

/// Every block kind the reference describes, with its entries.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    blocks: BTreeMap<String, Vec<Entry>>,
    /// The block kinds that take a label: headings written with one (`` `data "name"` ``).
    labelled: Vec<String>,
}

impl Schema {
    /// The schema of the compiled-in reference.
    pub fn shipped() -> Self {
        Self::read(LANGUAGE_PAGE)
    }

    /// Reads the tables of a reference page: under each heading that names a block
    /// (`` ## `train` ``, `` ## `job "name"` ``), the table whose first column is `field` (or
    /// `field or block`). A heading about a block seen before (`` ### `model` in a service ``)
    /// adds nothing.
    pub fn read(page: &str) -> Self {
        let mut schema = Schema::default();
        let mut block: Option<String> = None;
        let mut header: Option<Vec<String>> = None;
        for line in page.lines() {
            if line.starts_with('#') {
                header = None;
                block = heading_block(line);
                if let Some(name) = &block
                    && line.contains(&format!("`{name} \"name\"`"))
                    && !schema.labelled.contains(name)
                {
                    schema.labelled.push(name.clone());
                }
                continue;
            }
            if !line.starts_with('|') {
                header = None;
                continue;
            }
            let cells = cells(line);
            match &header {
                None => {
                    if cells
                        .first()
                        .is_some_and(|c| c == "field" || c == "field or block")
                    {
                        header = Some(cells);
                    }
                }
                Some(columns) => {
                    let Some(name) = &block else { continue };
                    if cells.first().is_some_and(|c| c.starts_with("---")) {
                        continue;
                    }
                    let column = |title: &str| {
                        columns
                            .iter()
                            .position(|c| c == title)
                            .and_then(|i| cells.get(i))
                            .filter(|c| !c.is_empty())
                            .cloned()
                    };
                    let value = column("value").unwrap_or_default();
                    let (required, default) = (column("required"), column("default"));
                    let names = cells.first().map(String::as_str).unwrap_or("");
                    let entries = schema.blocks.entry(name.clone()).or_default();
                    for quoted in names.split('`').skip(1).step_by(2) {
                        let is_block = quoted.contains('{');
                        let field = quoted.split_whitespace().next().unwrap_or("");
                        if !field.is_empty() && !entries.iter().any(|e| e.name == field) {
                            entries.push(Entry {
                                name: field.to_string(),
                                is_block,
                                value: value.clone(),
                                required: required.clone(),
                                default: default.clone(),
                            });
                        }
                    }
                }
            }
        }
        schema
    }

    /// The entries of block kind `block` (empty for one the reference has no table for).
    pub fn entries(&self, block: &str) -> &[Entry] {
        self.blocks.get(block).map_or(&[], Vec::as_slice)
    }

    /// The entry `name` of block kind `block`.
    pub fn entry(&self, block: &str, name: &str) -> Option<&Entry> {
        self.entries(block).iter().find(|e| e.name == name)
    }

    /// The top-level block kinds: those that take a label and are no other block's entry
    /// (`job`, `service`).
    pub fn top_level(&self) -> Vec<&str> {
        self.labelled
            .iter()
            .filter(|kind| {
                !self
                    .blocks
                    .values()
                    .any(|entries| entries.iter().any(|e| &e.name == *kind))
            })
            .map(String::as_str)
            .collect()
    }

    /// Whether block kind `kind` takes a label (`data "corpus" { … }`).
    pub fn takes_label(&self, kind: &str) -> bool {
        self.labelled.iter().any(|k| k == kind)
    }

    /// Every block kind with a table.
    pub fn block_kinds(&self) -> impl Iterator<Item = &str> {
        self.blocks.keys().map(String::as_str)
    }
}

/// The block a heading is about: its first backquoted word (`` ## `data "name"` `` is `data`),
/// unless the heading is about a block in another context (`` `model` in a service ``) or
/// about several (`` `resources` and `goal` ``).
fn heading_block(line: &str) -> Option<String> {
    let quoted = line.split('`').nth(1)?;
    let rest = line.split('`').nth(2).unwrap_or("");
    if rest.contains(" in a ") || rest.contains(" and ") {
        return None;
    }
    let name = quoted.split_whitespace().next()?;
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then(|| name.to_string())
}

/// The cells of a table row, trimmed, with escaped pipes (`\|`) kept inside their cell and
/// unescaped.
fn cells(line: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = line.trim().trim_start_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_string()),
            _ => cell.push(c),
        }
    }
    if !cell.trim().is_empty() {
        cells.push(cell.trim().to_string());
    }
    cells
}

#[cfg(test)]
mod tests;
