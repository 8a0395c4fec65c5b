//! Reading one block's fields with type errors: unknown, duplicate and missing fields, values of
//! the wrong kind or dimension, unknown keywords, out-of-range numbers.
//!
//! Every reader records what it finds wrong and returns `None`, so checking goes on and one run
//! reports every mistake.

use crate::suggest::closest;
use crate::syntax::ast::{Attribute, Block, Ident, Value};
use crate::units::Bounds;
use crate::units::{Dimension, Quantity, UnitError, parse_quantity};
use loam_ir::diagnostics::codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::span::{Span, Spanned};
use std::collections::BTreeMap;

/// What a block may hold.
pub(super) struct BlockSpec {
    /// The block kind, e.g. `model`.
    pub name: &'static str,
    /// Known attribute names.
    pub fields: &'static [&'static str],
    /// Known nested block kinds.
    pub blocks: &'static [&'static str],
    /// Whether the block takes a string label.
    pub label: LabelRule,
}

/// Whether a block kind takes a string label.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LabelRule {
    /// `model { … }`.
    None,
    /// `job "name" { … }`.
    Required,
}

/// The fields of one block, indexed by name, with a diagnostics sink.
pub(super) struct Fields<'a> {
    block: &'a Block,
    attributes: BTreeMap<&'a str, &'a Attribute>,
    /// Required fields found absent, with an example value each; reported together as one
    /// diagnostic when the reader is dropped, so a block missing five fields gets one message.
    missing: Vec<(String, String)>,
    pub diags: &'a mut Diagnostics,
}

impl Drop for Fields<'_> {
    fn drop(&mut self) {
        if self.missing.is_empty() {
            return;
        }
        let names: Vec<String> = self.missing.iter().map(|(n, _)| format!("`{n}`")).collect();
        let (what, verb) = if names.len() == 1 {
            ("field", "is")
        } else {
            ("fields", "are")
        };
        let example: Vec<String> = self
            .missing
            .iter()
            .map(|(n, e)| format!("`{n} = {e}`"))
            .collect();
        self.diags.push(
            Diagnostic::error(
                codes::check::MISSING_FIELD,
                format!(
                    "missing {what} {} in `{}`",
                    names.join(", "),
                    self.block.name.name
                ),
                self.block.name.span,
                format!("{} {verb} required here", names.join(", ")),
            )
            .with_help(format!("add {} to the block", example.join(", "))),
        );
    }
}

/// Checks the shape of `block` against `spec` (unknown and duplicate entries, label) and indexes
/// its attributes.
pub(super) fn read_block<'a>(
    block: &'a Block,
    spec: &BlockSpec,
    diags: &'a mut Diagnostics,
) -> Fields<'a> {
    let mut attributes: BTreeMap<&str, &Attribute> = BTreeMap::new();
    for attribute in block.attributes() {
        let name = attribute.name.name.as_str();
        if !spec.fields.contains(&name) {
            diags.push(unknown_entry(&attribute.name, "field", spec, spec.fields));
            continue;
        }
        if let Some(first) = attributes.get(name) {
            diags.push(duplicate(&attribute.name, "field", first.name.span));
            continue;
        }
        attributes.insert(name, attribute);
    }
    for nested in block.blocks() {
        if !spec.blocks.contains(&nested.name.name.as_str()) {
            diags.push(unknown_entry(&nested.name, "block", spec, spec.blocks));
        }
    }
    match (spec.label, &block.label) {
        (LabelRule::None, Some(label)) => diags.push(
            Diagnostic::error(
                codes::check::BLOCK_LABEL,
                format!("unexpected label on `{}` block", spec.name),
                label.span,
                "this block takes no label",
            )
            .with_help(format!("write `{} {{ … }}` without the string", spec.name)),
        ),
        (LabelRule::Required, None) => diags.push(
            Diagnostic::error(
                codes::check::BLOCK_LABEL,
                format!("expected a name for the `{}` block", spec.name),
                block.name.span,
                "the name is missing",
            )
            .with_help(format!("write `{} \"a-name\" {{ … }}`", spec.name)),
        ),
        _ => {}
    }
    Fields {
        block,
        attributes,
        missing: Vec::new(),
        diags,
    }
}

fn unknown_entry(name: &Ident, kind: &str, spec: &BlockSpec, known: &[&'static str]) -> Diagnostic {
    let other_kind = if kind == "field" {
        spec.blocks
    } else {
        spec.fields
    };
    let mut diagnostic = Diagnostic::error(
        if kind == "field" {
            codes::check::UNKNOWN_FIELD
        } else {
            codes::check::UNKNOWN_BLOCK
        },
        format!("unknown {kind} `{}` in `{}`", name.name, spec.name),
        name.span,
        format!("`{}` has no {kind} of this name", spec.name),
    );
    let help = if other_kind.contains(&name.name.as_str()) {
        let written = if kind == "field" {
            "a block: `name { … }`"
        } else {
            "a field: `name = value`"
        };
        format!("`{}` is {written}", name.name)
    } else if let Some(owners) = elsewhere(&name.name, kind, spec) {
        owners
    } else if let Some(near) = closest(&name.name, known.iter().copied()) {
        format!("did you mean `{near}`?")
    } else if known.is_empty() {
        format!("`{}` takes no {kind}s", spec.name)
    } else {
        format!("known {kind}s of `{}`: {}", spec.name, list_names(known))
    };
    diagnostic = diagnostic.with_help(help);
    diagnostic
}

/// "`deadline` is a field of `goal`, not of `train`" when the unknown field is a field of
/// another block of a job.
fn elsewhere(name: &str, kind: &str, spec: &BlockSpec) -> Option<String> {
    if kind != "field" {
        return None;
    }
    let owners: Vec<&str> = super::blocks_with_field(name, spec)
        .into_iter()
        .filter(|owner| *owner != spec.name)
        .collect();
    if owners.is_empty() {
        return None;
    }
    let (last, rest) = owners.split_last()?;
    let blocks = if rest.is_empty() {
        format!("`{last}`")
    } else {
        format!("{} or `{last}`", list_names(rest))
    };
    Some(format!(
        "`{name}` is a field of {blocks}, not of `{}`: move it there",
        spec.name
    ))
}

pub(super) fn list_names(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn duplicate(name: &Ident, kind: &str, first: Span) -> Diagnostic {
    Diagnostic::error(
        codes::check::DUPLICATE,
        format!("duplicate {kind} `{}`", name.name),
        name.span,
        "defined again here",
    )
    .with_related(first, "first defined here")
    .with_help(format!("keep one `{}` and remove the other", name.name))
}

impl<'a> Fields<'a> {
    /// The attribute `name`, if written.
    pub fn get(&self, name: &str) -> Option<&'a Attribute> {
        self.attributes.get(name).copied()
    }

    /// Notes that a required field is absent (reported when the reader is dropped).
    pub fn require<T>(&mut self, name: &str, found: Option<T>, example: &str) -> Option<T> {
        if found.is_none() && self.get(name).is_none() {
            self.missing.push((name.to_string(), example.to_string()));
        }
        found
    }

    fn wrong_kind(&mut self, value: &Value, expected: &str, example: &str) {
        self.diags.push(
            Diagnostic::error(
                codes::check::WRONG_KIND,
                format!("expected {expected}, found {}", value.describe()),
                value.span(),
                format!("expected {expected}"),
            )
            .with_help(format!("write {example}")),
        );
    }

    /// Reads a quantity literal, reporting bad literals (L1010).
    fn quantity_of(&mut self, value: &Value, expected: &str, example: &str) -> Option<Quantity> {
        let Value::Number(number) = value else {
            self.wrong_kind(value, expected, example);
            return None;
        };
        match parse_quantity(&number.text) {
            Ok(q) => Some(q),
            Err(err) => {
                let help = match &err {
                    UnitError::UnknownUnit {
                        suggestion: Some(s),
                        ..
                    } => {
                        format!("did you mean `{s}`?")
                    }
                    UnitError::UnknownUnit { .. } => format!("write {example}"),
                    UnitError::Overflow => "use a smaller number or a larger unit".to_string(),
                    UnitError::BadCurrency(_) => {
                        "write the currency as three capital letters, e.g. `CNY`".to_string()
                    }
                    UnitError::BadNumber(_) => format!("write {example}"),
                };
                self.diags.push(
                    Diagnostic::error(
                        codes::check::UNREADABLE_NUMBER,
                        err.to_string(),
                        number.span,
                        "cannot read this number",
                    )
                    .with_help(help),
                );
                None
            }
        }
    }

    /// A value of dimension `dimension` in base units, above zero and inside `range`.
    pub fn quantity(
        &mut self,
        name: &str,
        dimension: &Dimension,
        range: Bounds,
    ) -> Option<Spanned<f64>> {
        let attribute = self.get(name)?;
        let q = self.quantity_of(&attribute.value, dimension.describe(), dimension.example())?;
        if !q.dimension.same_kind(dimension) {
            self.diags.push(
                Diagnostic::error(
                    codes::check::WRONG_DIMENSION,
                    format!(
                        "expected {}, found {}",
                        dimension.describe(),
                        q.dimension.describe()
                    ),
                    attribute.value.span(),
                    format!("this is {}", q.dimension.describe()),
                )
                .with_help(format!(
                    "`{name}` takes {}, e.g. {}",
                    dimension.describe(),
                    dimension.example()
                )),
            );
            return None;
        }
        if q.value <= 0.0 {
            self.out_of_range(&attribute.value, "must be greater than zero");
            return None;
        }
        if !range.admits(q.value, false) {
            self.out_of_range(&attribute.value, &format!("must be {}", range.words));
            return None;
        }
        Some(Spanned::new(q.value, attribute.value.span()))
    }

    /// An amount of money: value and currency code.
    pub fn money(&mut self, name: &str) -> Option<Spanned<(f64, String)>> {
        let attribute = self.get(name)?;
        let money = Dimension::Money(String::new());
        let q = self.quantity_of(&attribute.value, money.describe(), money.example())?;
        match q.dimension {
            Dimension::Money(currency) if q.value > 0.0 => {
                Some(Spanned::new((q.value, currency), attribute.value.span()))
            }
            Dimension::Money(_) => {
                self.out_of_range(&attribute.value, "must be greater than zero");
                None
            }
            other => {
                self.diags.push(
                    Diagnostic::error(
                        codes::check::WRONG_DIMENSION,
                        format!("expected an amount of money, found {}", other.describe()),
                        attribute.value.span(),
                        "no currency here",
                    )
                    .with_help("add the currency after the amount, e.g. `2.5M CNY`"),
                );
                None
            }
        }
    }

    /// A whole number in `[min, max]`; `auto` is allowed when `auto_ok` and gives `None`.
    pub fn integer(
        &mut self,
        name: &str,
        min: u64,
        max: u64,
        auto_ok: bool,
    ) -> Option<Spanned<u64>> {
        let attribute = self.get(name)?;
        if auto_ok && is_auto(&attribute.value) {
            return None;
        }
        let expected = if auto_ok {
            "a whole number or `auto`"
        } else {
            "a whole number"
        };
        self.whole(&attribute.value, name, min, max, expected)
    }

    /// `value` as a whole number in `[min, max]`, reporting what else it is.
    fn whole(
        &mut self,
        value: &'a Value,
        name: &str,
        min: u64,
        max: u64,
        expected: &str,
    ) -> Option<Spanned<u64>> {
        let q = self.quantity_of(value, expected, "a whole number such as `8`")?;
        if q.dimension != Dimension::Count {
            self.diags.push(
                Diagnostic::error(
                    codes::check::WRONG_DIMENSION,
                    format!("expected a number, found {}", q.dimension.describe()),
                    value.span(),
                    format!("this is {}", q.dimension.describe()),
                )
                .with_help(format!("`{name}` is a plain number; drop the unit")),
            );
            return None;
        }
        if q.value.fract() != 0.0 {
            self.out_of_range(value, "must be a whole number");
            return None;
        }
        if q.value < min as f64 || q.value > max as f64 {
            self.out_of_range(value, &format!("must be between {min} and {max}"));
            return None;
        }
        // In range, whole, and at most `max`, so the conversion is exact.
        Some(Spanned::new(q.value as u64, value.span()))
    }

    /// A list of whole numbers in `[min, max]`, e.g. `[15, 16, 16]`, spanning the list; `None`
    /// when absent or when an item is not one (reported).
    pub fn integers(&mut self, name: &str, min: u64, max: u64) -> Option<Spanned<Vec<u64>>> {
        let attribute = self.get(name)?;
        let Value::List(list) = &attribute.value else {
            self.wrong_kind(
                &attribute.value,
                "a list of whole numbers",
                "numbers in brackets, e.g. `[15, 16, 16, 15]`",
            );
            return None;
        };
        let mut values = Vec::with_capacity(list.items.len());
        let mut complete = true;
        for item in &list.items {
            match self.whole(item, name, min, max, "a whole number") {
                Some(v) => values.push(v.value),
                None => complete = false,
            }
        }
        complete.then(|| Spanned::new(values, list.span))
    }

    /// A positive count such as `2T` (not necessarily whole) inside `range`.
    pub fn count(&mut self, name: &str, range: Bounds) -> Option<Spanned<f64>> {
        self.quantity(name, &Dimension::Count, range)
    }

    /// A plain number in `[min, max]`, e.g. `1.25`.
    pub fn number(&mut self, name: &str, min: f64, max: f64) -> Option<Spanned<f64>> {
        let any = Bounds {
            min: 0.0,
            max: f64::MAX,
            words: "",
        };
        let value = self.count(name, any)?;
        if value.value < min || value.value > max {
            let attribute = self.get(name)?;
            self.out_of_range(
                &attribute.value,
                &format!("must be between {min} and {max}"),
            );
            return None;
        }
        Some(value)
    }

    fn out_of_range(&mut self, value: &Value, why: &str) {
        self.diags.push(
            Diagnostic::error(
                codes::check::OUT_OF_RANGE,
                format!("value out of range: {why}"),
                value.span(),
                why.to_string(),
            )
            .with_help("change the value to one in range"),
        );
    }

    /// A keyword from a closed set; `auto` is allowed when `auto_ok` and gives `None`.
    pub fn keyword<T>(
        &mut self,
        name: &str,
        parse: fn(&str) -> Option<T>,
        keywords: &[&'static str],
        auto_ok: bool,
    ) -> Option<Spanned<T>> {
        let attribute = self.get(name)?;
        let choices = if auto_ok {
            format!("{} or `auto`", list_names(keywords))
        } else {
            list_names(keywords)
        };
        let Value::Ident(ident) = &attribute.value else {
            self.wrong_kind(&attribute.value, "a keyword", &format!("one of {choices}"));
            return None;
        };
        if auto_ok && ident.name == "auto" {
            return None;
        }
        if let Some(value) = parse(&ident.name) {
            return Some(Spanned::new(value, ident.span));
        }
        let help = match closest(&ident.name, keywords.iter().copied()) {
            Some(near) => format!("did you mean `{near}`? `{name}` is one of {choices}"),
            None => format!("`{name}` is one of {choices}"),
        };
        self.diags.push(
            Diagnostic::error(
                codes::check::UNKNOWN_KEYWORD,
                format!("unknown {name} `{}`", ident.name),
                ident.span,
                format!("not a known {name}"),
            )
            .with_help(help),
        );
        None
    }

    /// `true` or `false`.
    pub fn boolean(&mut self, name: &str) -> Option<Spanned<bool>> {
        self.keyword(
            name,
            |s| match s {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
            &["true", "false"],
            false,
        )
    }

    /// A string literal.
    pub fn string(&mut self, name: &str) -> Option<Spanned<String>> {
        let attribute = self.get(name)?;
        match &attribute.value {
            Value::String(s) => Some(Spanned::new(s.value.clone(), s.span)),
            other => {
                self.wrong_kind(
                    other,
                    "a string",
                    "the text in double quotes, e.g. `\"nlp\"`",
                );
                None
            }
        }
    }

    /// A name resolved later in the catalogue (`guiyang`, `H100_SXM`).
    pub fn name(&mut self, name: &str) -> Option<Spanned<String>> {
        let attribute = self.get(name)?;
        match &attribute.value {
            Value::Ident(i) if i.name != "auto" => Some(Spanned::new(i.name.clone(), i.span)),
            other => {
                self.wrong_kind(other, "a name", "a bare name such as `guiyang`");
                None
            }
        }
    }

    /// A list of names that, when written, names at least one: `[]` is refused (L1011) rather
    /// than read as "any", which leaving the field out already says.
    pub fn some_names(&mut self, name: &str) -> Vec<Spanned<String>> {
        if let Some(attribute) = self.get(name)
            && let Value::List(list) = &attribute.value
            && list.items.is_empty()
        {
            self.out_of_range(
                &attribute.value,
                &format!("must name at least one; leave `{name}` out to allow any"),
            );
        }
        self.names(name)
    }

    /// A list of names, e.g. `[H100_SXM, Ascend910B]`; a single name is accepted too.
    pub fn names(&mut self, name: &str) -> Vec<Spanned<String>> {
        let Some(attribute) = self.get(name) else {
            return Vec::new();
        };
        let items: Vec<&Value> = match &attribute.value {
            Value::List(list) => list.items.iter().collect(),
            single => vec![single],
        };
        let mut names: Vec<Spanned<String>> = Vec::new();
        for item in items {
            match item {
                Value::Ident(i) => {
                    if let Some(first) = names.iter().find(|n| n.value == i.name) {
                        self.diags.push(duplicate(i, "list item", first.span));
                    } else {
                        names.push(Spanned::new(i.name.clone(), i.span));
                    }
                }
                other => self.wrong_kind(
                    other,
                    "a name",
                    "bare names in brackets, e.g. `[H100_SXM, A100_SXM_80GB]`",
                ),
            }
        }
        names
    }

    /// A list of strings, e.g. `["CUDA>=12.0"]`; a single string is accepted too.
    pub fn strings(&mut self, name: &str) -> Vec<Spanned<String>> {
        let Some(attribute) = self.get(name) else {
            return Vec::new();
        };
        let items: Vec<&Value> = match &attribute.value {
            Value::List(list) => list.items.iter().collect(),
            single => vec![single],
        };
        let mut strings = Vec::new();
        for item in items {
            match item {
                Value::String(s) => strings.push(Spanned::new(s.value.clone(), s.span)),
                other => self.wrong_kind(
                    other,
                    "a string",
                    "strings in brackets, e.g. `[\"CUDA>=12.0\"]`",
                ),
            }
        }
        strings
    }
}

/// Whether a value is the keyword `auto`.
pub(super) fn is_auto(value: &Value) -> bool {
    matches!(value, Value::Ident(i) if i.name == "auto")
}
