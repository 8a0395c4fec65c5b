//! The editor files that are not the language server: the VS Code extension's manifest points
//! at files that exist and agree with each other, and the TextMate grammar's rules resolve,
//! compile and colour the parts of a spec they are meant for.

use loam_tests::repo_root;
use loam_tests::tools::{have, runs};
use serde_json::{Value, json};
use std::process::Command;

fn read_json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(repo_root().join(path)).unwrap()).unwrap()
}

#[test]
fn the_vscode_manifest_names_its_files() {
    let manifest = read_json("editors/vscode/package.json");
    let folder = repo_root().join("editors/vscode");
    let language = &manifest["contributes"]["languages"][0];
    assert_eq!(language["extensions"], json!([".loam"]));
    let grammar = &manifest["contributes"]["grammars"][0];
    for file in [
        manifest["main"].as_str().unwrap(),
        language["configuration"].as_str().unwrap(),
        grammar["path"].as_str().unwrap(),
    ] {
        assert!(folder.join(file).is_file(), "{file} is missing");
    }
    let textmate = read_json("editors/vscode/syntaxes/loam.tmLanguage.json");
    assert_eq!(grammar["scopeName"], textmate["scopeName"]);
    // The tree-sitter grammar names the same scope, so themes treat both alike.
    let tree_sitter = read_json("editors/tree-sitter-loam/tree-sitter.json");
    assert_eq!(tree_sitter["grammars"][0]["scope"], textmate["scopeName"]);
}

/// Every `#name` a TextMate rule includes.
fn includes(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("include", Value::String(name)) => out.push(name.clone()),
                    _ => includes(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| includes(i, out)),
        _ => {}
    }
}

#[test]
fn the_textmate_grammar_resolves_compiles_and_colours() {
    let grammar = read_json("editors/vscode/syntaxes/loam.tmLanguage.json");
    let mut names = Vec::new();
    includes(&grammar, &mut names);
    assert!(!names.is_empty());
    for name in &names {
        let key = name.strip_prefix('#').unwrap();
        assert!(
            grammar["repository"].get(key).is_some(),
            "{name} is not in the repository"
        );
    }
    if !have("python3", runs("python3", &["--version"])) {
        return;
    }
    let output = Command::new("python3")
        .arg(repo_root().join("tests/tests/editors/textmate.py"))
        .arg(repo_root().join("editors/vscode/syntaxes/loam.tmLanguage.json"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let checked: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(checked["errors"], json!([]));
    assert_eq!(
        checked["samples"],
        json!({
            "quantity: 48TB": ["48TB", "constant.numeric.loam=48", "keyword.other.unit.loam=TB"],
            "quantity: 3.35TB/s": ["3.35TB/s", "constant.numeric.loam=3.35", "keyword.other.unit.loam=TB/s"],
            "quantity: 1_024": ["1_024", "constant.numeric.loam=1_024"],
            "money: 20M CNY": ["20M CNY", "constant.numeric.loam=20M", "support.constant.currency.loam=CNY"],
            "block: job \"llama\" {": [
                "job \"llama\" {",
                "keyword.other.block.loam=job",
                "string.quoted.double.label.loam=\"llama\"",
                "punctuation.section.block.begin.loam={"
            ],
            "block: model {": ["model {", "keyword.other.block.loam=model", "punctuation.section.block.begin.loam={"],
            "attribute: global_batch = 1024": [
                "global_batch =",
                "variable.other.property.loam=global_batch",
                "keyword.operator.assignment.loam=="
            ],
            "comment: # a comment": ["# a comment"],
        })
    );
}
