//! The schema read from the language reference, and checked against the checker.

use super::*;
use loam_compiler::catalogue;
use loam_compiler::project::{ProjectFiles, check_project};

#[test]
fn reads_the_shipped_reference() {
    let schema = Schema::shipped();
    assert_eq!(schema.top_level(), ["job", "service"]);
    assert!(schema.takes_label("data") && !schema.takes_label("model"));
    // `train`'s table: `precision` is required and one of five keywords.
    let precision = schema.entry("train", "precision").expect("train.precision");
    assert_eq!(
        precision.keywords(),
        ["fp32", "tf32", "bf16", "fp16", "fp8"]
    );
    assert_eq!(precision.required.as_deref(), Some("yes"));
    // A row naming several fields gives each of them; `auto` is the one keyword.
    let pipeline = schema
        .entry("parallel", "pipeline")
        .expect("parallel.pipeline");
    assert_eq!(pipeline.keywords(), ["auto"]);
    // A nested block is an entry too, marked as a block.
    assert!(schema.entry("train", "lora").is_some_and(|e| e.is_block));
    // `interruptible` is a boolean; `size` has only numbers in backquotes.
    let interruptible = schema.entry("resources", "interruptible").expect("field");
    assert_eq!(interruptible.keywords(), ["true", "false"]);
    assert!(
        schema
            .entry("data", "size")
            .expect("field")
            .keywords()
            .is_empty()
    );
    // `model` in a service adds no second table to `model`.
    assert!(schema.entry("model", "layers").is_some());
}

#[test]
fn reads_tables_with_escaped_pipes() {
    let page = "## `goal`\n\n| field | value | default |\n| --- | --- | --- |\n\
                | `optimize` | `time` \\| `cost` | `time` |\n\ntext\n\
                | field | value |\n| --- | --- |\n| `late` | x |\n";
    let schema = Schema::read(page);
    let optimize = schema.entry("goal", "optimize").expect("optimize");
    assert_eq!(optimize.value, "`time` | `cost`");
    assert_eq!(optimize.default.as_deref(), Some("`time`"));
    assert_eq!(optimize.required, None);
    // A second table under the same heading is read too.
    assert!(schema.entry("goal", "late").is_some());
}

/// The path of nested blocks that leads to block kind `kind`: `mla` is inside `model` inside
/// `job`.
fn path_to(schema: &Schema, kind: &str) -> Vec<String> {
    if schema.top_level().contains(&kind) {
        return vec![kind.to_string()];
    }
    let parent = schema
        .block_kinds()
        .find(|b| {
            schema
                .entries(b)
                .iter()
                .any(|e| e.is_block && e.name == kind)
        })
        .unwrap_or_else(|| panic!("no block holds `{kind}`"));
    let mut path = path_to(schema, parent);
    path.push(kind.to_string());
    path
}

/// The fields and blocks the checker knows in block kind `kind`: a spec with an unknown field
/// `zzzz` there (far from every name, so no did-you-mean) gets help listing them.
fn checker_names(schema: &Schema, kind: &str) -> (Vec<String>, Vec<String>) {
    let path = path_to(schema, kind);
    let mut text = String::new();
    for block in &path {
        let label = if schema.takes_label(block) {
            " \"x\""
        } else {
            ""
        };
        text.push_str(&format!("{block}{label} {{\n"));
    }
    text.push_str("zzzz = 1\nzzzz {\n}\n");
    text.push_str(&"}\n".repeat(path.len()));
    let files = ProjectFiles {
        catalogue: catalogue::builtin_sources()
            .into_iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect(),
        specs: vec![("t.loam".to_string(), text.into_bytes())],
    };
    let project = check_project(files, 1);
    let listed = |what: &str| -> Vec<String> {
        let prefix = format!("known {what} of `{kind}`: ");
        let help = project
            .diagnostics
            .iter()
            .filter_map(|d| d.help.as_deref())
            .find_map(|h| h.strip_prefix(prefix.as_str()))
            .unwrap_or("");
        help.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    (listed("fields"), listed("blocks"))
}

#[test]
fn the_reference_lists_exactly_the_checkers_fields() {
    let schema = Schema::shipped();
    let mut differences = Vec::new();
    for kind in schema.block_kinds() {
        let (mut fields, mut blocks) = checker_names(&schema, kind);
        let documented = |want_block: bool| -> Vec<String> {
            let mut names: Vec<String> = schema
                .entries(kind)
                .iter()
                .filter(|e| e.is_block == want_block)
                .map(|e| e.name.clone())
                .collect();
            names.sort();
            names
        };
        fields.sort();
        blocks.sort();
        for (what, page, checker) in [
            ("fields", documented(false), fields),
            ("blocks", documented(true), blocks),
        ] {
            if page != checker {
                differences.push(format!(
                    "{what} of `{kind}`: docs/language.md has {page:?}, the checker {checker:?}"
                ));
            }
        }
    }
    // Completion and hover read the reference: a field the checker knows needs its row there.
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
