//! Data-driven fixtures: every file under `tests/cases/{parse,check}/` is one test whose
//! snapshot shows the source and the rendered diagnostics together.

use loam_tests::{check, plan, snapshot};

#[test]
fn parse_and_check_fixtures() {
    insta::glob!("../cases", "{parse,check}/*.loam", |path| {
        let source = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let output = check(&name, &source);
        insta::assert_snapshot!(snapshot(&source, &output));
    });
}

#[test]
fn plan_fixtures() {
    // What `loam plan` reports: the checks' diagnostics and the planner's findings (L3xxx).
    insta::glob!("../cases", "plan/*.loam", |path| {
        let source = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let output = plan(&name, &source);
        insta::assert_snapshot!(snapshot(&source, &output));
    });
}

#[test]
fn fmt_fixtures_rewrite_to_the_expected_text_and_stay_fixed() {
    // Each fmt fixture holds `--- input.loam ---` and `--- expected.loam ---`.
    insta::glob!("../cases", "fmt/*.txt", |path| {
        let fixture = std::fs::read_to_string(path).unwrap();
        let files = loam_tests::split_fixture("input.loam", &fixture);
        let input = files.iter().find(|f| f.name == "input.loam").unwrap();
        let expected = files.iter().find(|f| f.name == "expected.loam").unwrap();
        let formatted = loam_compiler::fmt::format_source(&input.text).unwrap();
        assert_eq!(formatted, expected.text, "{}", path.display());
        let again = loam_compiler::fmt::format_source(&formatted).unwrap();
        assert_eq!(
            again,
            formatted,
            "formatting is not a fixed point for {}",
            path.display()
        );
    });
}
