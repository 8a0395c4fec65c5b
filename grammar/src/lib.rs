//! The pest grammar of the loam language (`loam.pest`), the parser it generates, and the human
//! names of its rules for error messages.
//!
//! This crate only recognises text. Lowering the parse tree to an AST with spans lives in
//! `loam-compiler::syntax`.

mod generated {
    // pest_derive generates the undocumented `Rule` enum; its variants are the grammar's rules.
    #![allow(missing_docs)]
    use pest_derive::Parser;

    /// The parser generated from `loam.pest`.
    #[derive(Parser)]
    #[grammar = "loam.pest"]
    pub struct LoamParser;
}

pub use generated::{LoamParser, Rule};

/// The words a user knows for each rule, used when pest reports what it expected.
pub fn describe(rule: Rule) -> &'static str {
    match rule {
        Rule::EOI => "end of file",
        Rule::WHITESPACE => "white space",
        Rule::COMMENT => "a comment",
        Rule::file => "a file",
        Rule::block => "a block",
        Rule::attribute => "an attribute",
        Rule::entry => "an attribute or a block",
        Rule::value => "a value",
        Rule::ident_char => "a letter, digit, `_` or `-`",
        Rule::open_brace => "`{`",
        Rule::close_brace => "`}`",
        Rule::assign => "`=`",
        Rule::open_bracket => "`[`",
        Rule::close_bracket => "`]`",
        Rule::comma => "`,`",
        Rule::list => "a list",
        Rule::money => "an amount of money",
        Rule::count_suffix => "a count suffix",
        Rule::currency => "a currency code",
        Rule::quantity | Rule::number => "a number",
        Rule::unit => "a unit",
        Rule::string | Rule::string_body => "a string",
        Rule::escape => "an escape sequence",
        Rule::ident => "a name",
    }
}
