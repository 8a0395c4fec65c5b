//! Property tests of the formatter: formatting generated specs gives text that parses to the
//! same tree, and formatting that text again changes nothing.

use loam_compiler::fmt::format_source;
use loam_compiler::syntax::ast::{Block, Entry, Value};
use loam_compiler::syntax::parse;
use loam_ir::span::FileId;
use proptest::prelude::*;

/// A tree without spans, for comparing parses of different texts.
#[derive(Debug, PartialEq)]
enum Shape {
    Block(String, Option<String>, Vec<Shape>),
    Attribute(String, String),
}

fn value_shape(value: &Value) -> String {
    match value {
        Value::Number(n) => format!("n:{}", n.text),
        Value::String(s) => format!("s:{:?}", s.value),
        Value::Ident(i) => format!("i:{}", i.name),
        Value::List(l) => format!(
            "[{}]",
            l.items
                .iter()
                .map(value_shape)
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

fn block_shape(block: &Block) -> Shape {
    Shape::Block(
        block.name.name.clone(),
        block.label.as_ref().map(|l| l.value.clone()),
        block
            .entries
            .iter()
            .map(|e| match e {
                Entry::Block(b) => block_shape(b),
                Entry::Attribute(a) => Shape::Attribute(a.name.name.clone(), value_shape(&a.value)),
            })
            .collect(),
    )
}

fn shapes(text: &str) -> Vec<Shape> {
    let parsed = parse(FileId(0), text);
    parsed
        .file
        .expect("parses")
        .blocks
        .iter()
        .map(block_shape)
        .collect()
}

fn name() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,8}"
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,6}(\\.[0-9]{1,3})?(TB|GiB|d|ms|Gbps|B|T)?",
        "[0-9]{1,4}(M|K)? (CNY|USD)",
        "[a-zA-Z_][a-zA-Z0-9_]{0,10}",
        "[ -~]{0,12}".prop_map(|s| loam_compiler::fmt::quote(&s)),
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => scalar(),
        1 => prop::collection::vec(scalar(), 0..4).prop_map(|items| format!("[{}]", items.join(" ,"))),
    ]
}

/// Blank space as a careless author writes it.
fn gap() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just("\n\n  ".to_string()),
        Just("  # note\n".to_string())
    ]
}

fn block_text(depth: u32) -> BoxedStrategy<String> {
    let attribute = (name(), value(), gap()).prop_map(|(n, v, g)| format!("{n} ={v}{g}"));
    let entry = if depth == 0 {
        attribute.boxed()
    } else {
        prop_oneof![3 => attribute, 1 => block_text(depth - 1)].boxed()
    };
    (
        name(),
        prop::option::of("[a-z0-9-]{1,8}"),
        prop::collection::vec(entry, 0..5),
        gap(),
    )
        .prop_map(|(n, label, entries, g)| {
            let label = label.map(|l| format!(" \"{l}\"")).unwrap_or_default();
            format!("{n}{label} {{{g}{}}}\n", entries.concat())
        })
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn fmt_preserves_the_tree_and_is_idempotent(blocks in prop::collection::vec(block_text(2), 1..4)) {
        let text = blocks.concat();
        let formatted = format_source(&text).expect("generated text parses");
        prop_assert_eq!(shapes(&formatted), shapes(&text));
        let again = format_source(&formatted).expect("formatted text parses");
        prop_assert_eq!(again, formatted);
    }
}
