//! From text to syntax tree: the pest parser, lowering to an AST with spans, and syntax errors in
//! words a user knows.
//!
//! Parsing is the one phase that stops at the first error (pest cannot recover); it returns the
//! tree together with the non-fatal problems it found (such as a bad escape in a string).

pub mod ast;
mod decode;
mod error;
mod lower;
mod mistakes;
mod scan;
mod trivia;

pub use decode::{decode_utf8, first_not_spec_text, is_spec_char};
pub use trivia::{Comment, comments};

use loam_grammar::{LoamParser, Rule};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::span::FileId;
use pest::Parser;

/// Blocks and lists nest at most this deep. pest descends recursively, so unbounded nesting
/// would overflow the stack; real specs nest three levels.
pub const MAX_NESTING: usize = 64;

/// The syntax tree of one file and the problems found while building it.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The tree, absent when the text does not parse.
    pub file: Option<ast::File>,
    /// Syntax errors (at most one fatal one) and non-fatal lowering errors.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses the text of one `.loam` file.
pub fn parse(file: FileId, text: &str) -> Parsed {
    if let Some(diagnostic) = error::check_nesting(file, text) {
        return Parsed {
            file: None,
            diagnostics: vec![diagnostic],
        };
    }
    match LoamParser::parse(Rule::file, text) {
        Ok(mut pairs) => {
            let mut diagnostics = Vec::new();
            let tree = pairs
                .next()
                .map(|pair| lower::file(file, pair, &mut diagnostics));
            Parsed {
                file: tree,
                diagnostics,
            }
        }
        Err(err) => Parsed {
            file: None,
            diagnostics: vec![error::from_pest(file, text, &err)],
        },
    }
}
