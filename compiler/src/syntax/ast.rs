//! The syntax tree of a loam file: blocks, attributes and values, each with its span.
//!
//! The tree is untyped (it knows no field names); the checker turns it into a typed
//! [`crate::check::Job`]. The formatter prints it back.

use loam_ir::span::Span;

/// One parsed `.loam` file.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    /// Top-level blocks, in source order (normally `job` blocks).
    pub blocks: Vec<Block>,
    /// The whole file.
    pub span: Span,
}

/// `name "label" { entries }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The block kind, e.g. `job`, `model`, `data`.
    pub name: Ident,
    /// The optional string label, e.g. the job name.
    pub label: Option<StringLit>,
    /// Attributes and nested blocks, in source order.
    pub entries: Vec<Entry>,
    /// The opening brace.
    pub open: Span,
    /// The closing brace.
    pub close: Span,
    /// From the name to the closing brace.
    pub span: Span,
}

impl Block {
    /// The attributes of this block, in source order.
    pub fn attributes(&self) -> impl Iterator<Item = &Attribute> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Attribute(a) => Some(a),
            Entry::Block(_) => None,
        })
    }

    /// The nested blocks of this block, in source order.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Block(b) => Some(b),
            Entry::Attribute(_) => None,
        })
    }
}

/// An item inside a block.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// `name = value`.
    Attribute(Attribute),
    /// A nested block.
    Block(Block),
}

impl Entry {
    /// Where the entry is.
    pub fn span(&self) -> Span {
        match self {
            Entry::Attribute(a) => a.span,
            Entry::Block(b) => b.span,
        }
    }
}

/// `name = value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// The field name.
    pub name: Ident,
    /// The value.
    pub value: Value,
    /// From the name to the end of the value.
    pub span: Span,
}

/// A name: a field, block kind, keyword (`auto`, `high`) or catalogue reference (`H100_SXM`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// The name as written.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// A string literal with its escapes decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringLit {
    /// The decoded value.
    pub value: String,
    /// Where, quotes included.
    pub span: Span,
}

/// A number as written, with its unit or currency, e.g. `48TB`, `2.5M CNY`, `1_024`.
///
/// The text is kept as written so the formatter can print it back unchanged; the checker reads
/// it with [`crate::units::parse_quantity`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberLit {
    /// The literal text (blanks inside money normalised to one space).
    pub text: String,
    /// Where.
    pub span: Span,
}

/// `[a, b, c]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListLit {
    /// The items.
    pub items: Vec<Value>,
    /// Where, brackets included.
    pub span: Span,
}

/// The right-hand side of an attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A number, with a unit or currency or neither.
    Number(NumberLit),
    /// A string.
    String(StringLit),
    /// A bare name: a keyword or a catalogue reference.
    Ident(Ident),
    /// A list of values.
    List(ListLit),
}

impl Value {
    /// Where the value is.
    pub fn span(&self) -> Span {
        match self {
            Value::Number(n) => n.span,
            Value::String(s) => s.span,
            Value::Ident(i) => i.span,
            Value::List(l) => l.span,
        }
    }

    /// Words for what kind of value this is ("a string", "a list" …) for type errors.
    pub fn describe(&self) -> &'static str {
        match self {
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Ident(_) => "a name",
            Value::List(_) => "a list",
        }
    }
}
