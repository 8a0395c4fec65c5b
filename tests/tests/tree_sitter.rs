//! The tree-sitter grammar (`editors/tree-sitter-loam`) against the pest grammar: compiled from
//! its committed `src/parser.c`, it must accept exactly the files pest accepts (every example,
//! every spec fixture, every `loam` example of the docs), with no ERROR node in those, and its
//! highlight and fold queries must compile. It runs through tree-sitter's Python bindings, which
//! scripts/backend-tools.sh installs into its venv; skipped without them, except under CI.

use loam_compiler::syntax::parse;
use loam_ir::span::FileId;
use loam_tests::repo_root;
use loam_tests::tools::{have, python, runs};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every `*.loam` file below `dir`, sorted.
fn loam_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            loam_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "loam") {
            out.push(path);
        }
    }
}

/// The ```` ```loam ```` blocks of the docs' pages, each written to a file of `dir`.
fn doc_examples(dir: &Path) -> Vec<PathBuf> {
    let mut pages = Vec::new();
    for entry in std::fs::read_dir(repo_root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages.sort();
    let mut files = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut block: Option<String> = None;
        for line in text.lines() {
            match (&mut block, line.trim_start()) {
                (None, "```loam") => block = Some(String::new()),
                (Some(body), "```") => {
                    let stem = page.file_stem().unwrap().to_string_lossy();
                    let file = dir.join(format!("{stem}-{}.loam", files.len()));
                    std::fs::write(&file, body.as_bytes()).unwrap();
                    files.push(file);
                    block = None;
                }
                (Some(body), _) => {
                    body.push_str(line);
                    body.push('\n');
                }
                (None, _) => {}
            }
        }
    }
    files
}

#[test]
fn tree_sitter_accepts_exactly_what_pest_accepts() {
    let python = python();
    let bindings = runs(
        python.to_str().unwrap(),
        &["-c", "import tree_sitter; tree_sitter.Parser()"],
    );
    if !have("tree-sitter's Python bindings in the venv", bindings)
        || !have("a C compiler (cc)", runs("cc", &["--version"]))
    {
        return;
    }
    let grammar = repo_root().join("editors/tree-sitter-loam");
    let scratch = tempfile::tempdir().unwrap();
    let library = scratch.path().join("loam.so");
    let compiled = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-I"])
        .arg(grammar.join("src"))
        .arg(grammar.join("src/parser.c"))
        .arg("-o")
        .arg(&library)
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );

    let mut files = Vec::new();
    loam_files(&repo_root().join("examples"), &mut files);
    loam_files(&repo_root().join("tests/cases"), &mut files);
    files.extend(doc_examples(scratch.path()));
    let queries = [
        grammar.join("queries/highlights.scm"),
        grammar.join("queries/folds.scm"),
    ];
    let output = Command::new(&python)
        .arg(repo_root().join("tests/tests/tree_sitter/parse.py"))
        .arg(&library)
        .args(&queries)
        .arg("--")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let parsed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        parsed["queries"],
        serde_json::json!({}),
        "queries that do not compile"
    );

    let mut disagreements = Vec::new();
    let (mut accepted, mut rejected) = (0, 0);
    for file in &files {
        // A fixture that is not UTF-8 never reaches pest (loam reports L0005 first).
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        // `syntax::parse` has a tree exactly when pest accepts the file (below the nesting
        // limit, which no file here reaches).
        let pest = parse(FileId(0), &text).file.is_some();
        let tree_sitter = parsed["files"][file.to_str().unwrap()].as_bool().unwrap();
        if pest {
            accepted += 1;
        } else {
            rejected += 1;
        }
        if pest != tree_sitter {
            disagreements.push(format!(
                "{}: pest {}, tree-sitter {}",
                file.display(),
                if pest { "accepts" } else { "rejects" },
                if tree_sitter { "accepts" } else { "rejects" }
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    // The comparison means something only over both kinds of file: the 15 examples alone are
    // accepted, the 7 parse fixtures of syntax errors rejected.
    assert!(
        accepted >= 15 && rejected >= 7,
        "{accepted} accepted, {rejected} rejected"
    );
}

#[test]
fn the_committed_parser_is_generated_from_grammar_js() {
    // Only where the tree-sitter CLI is installed (it is not in CI: its npm package downloads a
    // binary at install time); a change to grammar.js is regenerated with `tree-sitter generate`.
    if !runs("tree-sitter", &["--version"]) {
        return;
    }
    let grammar = repo_root().join("editors/tree-sitter-loam");
    let scratch = tempfile::tempdir().unwrap();
    for file in ["grammar.js", "tree-sitter.json"] {
        std::fs::copy(grammar.join(file), scratch.path().join(file)).unwrap();
    }
    let generated = Command::new("tree-sitter")
        .arg("generate")
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    for file in ["src/parser.c", "src/grammar.json", "src/node-types.json"] {
        assert_eq!(
            std::fs::read_to_string(scratch.path().join(file)).unwrap(),
            std::fs::read_to_string(grammar.join(file)).unwrap(),
            "{file} is not what `tree-sitter generate` makes of grammar.js"
        );
    }
}
