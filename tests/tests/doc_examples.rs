//! Every ```loam example in the README and docs/*.md checks clean and is formatted
//! canonically: the docs cannot drift from the language.

use loam_tests::{check, repo_root};

fn loam_fences(text: &str) -> Vec<String> {
    let mut fences = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```loam\n") {
        let body = &rest[start + "```loam\n".len()..];
        let end = body.find("```").unwrap();
        fences.push(body[..end].to_string());
        rest = &body[end + 3..];
    }
    fences
}

#[test]
fn doc_examples_check_clean_and_are_formatted() {
    let mut n_examples = 0;
    let docs = std::fs::read_dir(repo_root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path());
    for path in docs.chain([repo_root().join("README.md")]) {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for example in loam_fences(&text) {
            let output = check("example.loam", &example);
            assert!(
                output.starts_with("no diagnostics"),
                "{}:\n{example}\n{output}",
                path.display()
            );
            let formatted = loam_compiler::fmt::format_source(&example).unwrap();
            assert_eq!(
                formatted,
                example,
                "{} example is not canonical",
                path.display()
            );
            n_examples += 1;
        }
    }
    assert!(n_examples >= 4, "found only {n_examples} examples");
}
