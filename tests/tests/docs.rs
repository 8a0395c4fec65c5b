//! Keeps the diagnostic docs in sync with the code: every registered code has a page and every
//! page a code; every page's example, checked by loam, renders exactly the output on the page.
//! Run with `LOAM_BLESS=1` to rewrite the pages' outputs after an intended change.

use loam_ir::diagnostics::codes;
use loam_tests::{check, plan, repo_root};
use std::collections::BTreeSet;

fn pages() -> Vec<(String, std::path::PathBuf)> {
    let dir = repo_root().join("docs/diagnostics");
    let mut pages: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    pages.sort();
    pages
}

#[test]
fn every_code_has_a_page_and_every_page_a_code() {
    let registered: BTreeSet<String> = codes::all().iter().map(|c| c.code.to_string()).collect();
    let documented: BTreeSet<String> = pages().into_iter().map(|(code, _)| code).collect();
    let undocumented: Vec<_> = registered.difference(&documented).collect();
    let orphans: Vec<_> = documented.difference(&registered).collect();
    assert!(
        undocumented.is_empty(),
        "codes without a page: {undocumented:?}"
    );
    assert!(
        orphans.is_empty(),
        "pages without a registered code: {orphans:?}"
    );
    for info in codes::all() {
        assert!(
            info.explanation.starts_with(&format!("# {}: ", info.code)),
            "{} page must start with `# {}: title`",
            info.code,
            info.code
        );
    }
}

/// The text between "```lang\n" after `heading` and the closing fence.
fn fenced_after<'a>(page: &'a str, heading: &str, lang: &str) -> Option<(usize, usize, &'a str)> {
    let at = page.find(heading)?;
    let open = format!("```{lang}\n");
    let start = at + page[at..].find(&open)? + open.len();
    let end = start + page[start..].find("```")?;
    Some((start, end, &page[start..end]))
}

#[test]
fn every_page_example_renders_the_output_on_the_page() {
    let bless = std::env::var_os("LOAM_BLESS").is_some();
    let mut stale = Vec::new();
    for (code, path) in pages() {
        let page = std::fs::read_to_string(&path).unwrap();
        let Some((_, _, example)) = fenced_after(&page, "## Example", "loam") else {
            continue;
        };
        // Planning codes need the planner; every other code shows in `loam check`.
        let rendered = if code.starts_with("L3") {
            plan("example.loam", example)
        } else {
            check("example.loam", example)
        };
        assert!(
            rendered.contains(&code),
            "the {code} example does not produce {code}:\n{rendered}"
        );
        let (start, end, shown) = fenced_after(&page, "## Output", "text").unwrap();
        if shown != rendered {
            if bless {
                let updated = format!("{}{}{}", &page[..start], rendered, &page[end..]);
                std::fs::write(&path, updated).unwrap();
            } else {
                stale.push(code);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "pages whose output is stale (run with LOAM_BLESS=1): {stale:?}"
    );
}

#[test]
fn explain_prints_each_page_and_rejects_unknown_codes() {
    for info in codes::all() {
        let (code, out, _) = loam_tests::run_cli(&["explain", info.code.as_str()], "");
        assert_eq!(code, 0);
        assert_eq!(out, info.explanation);
    }
    let (code, _, err) = loam_tests::run_cli(&["explain", "L1OO2"], "");
    assert_eq!(code, 2);
    assert!(err.contains("did you mean `L1002`?"), "{err}");
}

/// Every subcommand `loam --help` lists has a section in docs/cli.md whose heading names it
/// (`## \`loam schedule …`), so a new command cannot ship undocumented.
#[test]
fn every_subcommand_has_a_section_in_the_cli_page() {
    let (code, help, err) = loam_tests::run_cli(&["--help"], "");
    assert_eq!(code, 0, "{err}");
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(
        commands.len() >= 10,
        "parsed too few commands: {commands:?}\n{help}"
    );
    let page = std::fs::read_to_string(repo_root().join("docs/cli.md")).unwrap();
    let headings: Vec<&str> = page.lines().filter(|l| l.starts_with("## ")).collect();
    let missing: Vec<&&str> = commands
        .iter()
        .filter(|c| {
            !headings
                .iter()
                .any(|h| h.contains(&format!("`loam {c}`")) || h.contains(&format!("`loam {c} ")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "commands without a section in docs/cli.md: {missing:?}"
    );
}
