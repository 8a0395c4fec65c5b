//! Rule-level tests of the grammar: each asserts that the whole input was consumed.

use loam_grammar::{LoamParser, Rule};
use pest::Parser;

/// Parses `input` with `rule` and returns whether the rule consumed all of it.
fn consumes_all(rule: Rule, input: &str) -> bool {
    match LoamParser::parse(rule, input) {
        Ok(mut pairs) => pairs
            .next()
            .is_some_and(|p| p.as_str().len() == input.len()),
        Err(_) => false,
    }
}

#[test]
fn numbers_with_separators_and_fractions() {
    for ok in ["80", "1_024", "3.35", "0.5"] {
        assert!(consumes_all(Rule::number, ok), "{ok}");
    }
    assert!(!consumes_all(Rule::number, "1."));
    assert!(!consumes_all(Rule::number, "_1"));
}

#[test]
fn quantities_take_any_unit_word() {
    for ok in [
        "70B", "48TB", "3.35TB/s", "400Gbps", "30d", "200ms", "80GiB",
    ] {
        assert!(consumes_all(Rule::quantity, ok), "{ok}");
    }
    assert!(!consumes_all(Rule::quantity, "48 TB"));
}

#[test]
fn money_needs_a_currency_on_the_same_line() {
    assert!(consumes_all(Rule::money, "2.5M CNY"));
    assert!(consumes_all(Rule::money, "300 USD"));
    assert!(!consumes_all(Rule::money, "2.5M\nCNY"));
    assert!(!consumes_all(Rule::money, "2.5M cny"));
    assert!(!consumes_all(Rule::money, "8 top_k"));
}

#[test]
fn strings_with_escapes() {
    assert!(consumes_all(Rule::string, r#""/ckpt/nlp""#));
    assert!(consumes_all(Rule::string, r#""a \"quoted\" \\ word""#));
    assert!(!consumes_all(Rule::string, "\"no end"));
    assert!(!consumes_all(Rule::string, "\"two\nlines\""));
}

#[test]
fn lists_nest_and_allow_a_trailing_comma() {
    assert!(consumes_all(Rule::list, "[]"));
    assert!(consumes_all(Rule::list, "[H100_SXM, Ascend910B,]"));
    assert!(consumes_all(Rule::list, "[[1, 2], [3]]"));
    assert!(!consumes_all(Rule::list, "[a b]"));
}

#[test]
fn blocks_with_labels_comments_and_nesting() {
    let input = "job \"x\" {\n  # c\n  tenant = \"nlp\"\n  data \"corpus\" { site = guiyang }\n}";
    assert!(consumes_all(Rule::block, input));
    assert!(consumes_all(Rule::file, "job \"a\" {}\njob \"b\" {}\n"));
    assert!(consumes_all(Rule::file, ""));
    assert!(consumes_all(Rule::file, "# only a comment\n"));
    assert!(!consumes_all(Rule::file, "job \"a\" {"));
}

#[test]
fn names_allow_dashes_and_underscores() {
    for ok in ["H100_SXM", "llama-3", "_x", "auto"] {
        assert!(consumes_all(Rule::ident, ok), "{ok}");
    }
    assert!(!consumes_all(Rule::ident, "3x"));
}

#[test]
fn every_rule_has_human_words() {
    // `describe` is total by construction (an exhaustive match); check none leaks a rule name.
    for word in [
        loam_grammar::describe(Rule::assign),
        loam_grammar::describe(Rule::open_brace),
    ] {
        assert!(word.starts_with('`'), "{word}");
    }
}
