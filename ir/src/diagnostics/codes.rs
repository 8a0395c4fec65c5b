//! The one registry of diagnostic codes: code, phase, title and explanation page.
//!
//! Codes are `L` + four digits, by phase: L0xxx syntax, L1xxx checks that need no catalogue,
//! L2xxx catalogue loading and checks against the catalogue, L3xxx planning, L4xxx emitting.
//! Each phase keeps its list in its own file below; every code has `docs/diagnostics/<CODE>.md`,
//! included here, and a test keeps codes, pages and snapshots in sync.

pub mod catalogue;
pub mod check;
pub mod emit;
pub mod plan;
pub mod syntax;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A registered diagnostic code such as `L1003`.
///
/// Only the registry below can make one (the field is private to this module and its phase
/// files), so every code a phase emits has a title and an explanation page by construction.
/// Call sites name the constant (`codes::check::UNKNOWN_FIELD`), never the string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Code(&'static str);

impl Code {
    /// The code as users see it, e.g. `L1003`.
    pub const fn as_str(self) -> &'static str {
        self.0
    }

    /// The registered code written `text` (case-insensitive), if any.
    pub fn parse(text: &str) -> Option<Code> {
        lookup(text).map(|info| info.code)
    }

    /// The phase that reports the code, read from its first digit (`L0xxx` is syntax); a test
    /// keeps every phase file's codes in its phase.
    pub fn phase(self) -> Phase {
        match self.0.as_bytes().get(1) {
            Some(b'0') => Phase::Syntax,
            Some(b'1') => Phase::Check,
            Some(b'2') => Phase::Catalogue,
            Some(b'3') => Phase::Plan,
            _ => Phase::Emit,
        }
    }
}

/// The phases of the compiler, in pipeline order, as the codes' first digit numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// L0xxx: reading and parsing a spec.
    Syntax,
    /// L1xxx: checks that need no catalogue.
    Check,
    /// L2xxx: loading the catalogue and checks against it.
    Catalogue,
    /// L3xxx: planning.
    Plan,
    /// L4xxx: emitting manifests.
    Emit,
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for Code {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_str()
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

/// Reading a code back (from a saved Plan JSON) accepts registered codes only.
impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Code::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("`{text}` is no diagnostic code of loam"))
        })
    }
}

impl schemars::JsonSchema for Code {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Code".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A registered diagnostic code, explained by `loam explain <CODE>`.",
            "type": "string",
            "pattern": "^L[0-9]{4}$"
        })
    }
}

/// One registered diagnostic code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeInfo {
    /// The code, e.g. `L1003`.
    pub code: Code,
    /// A short title, e.g. "unknown field".
    pub title: &'static str,
    /// The explanation page in Markdown (docs/diagnostics/<CODE>.md).
    pub explanation: &'static str,
}

/// Declares a phase's codes: `NAME = "code" => "title"` makes the constant `NAME`; the page
/// comes from docs/diagnostics.
macro_rules! codes {
    ($($name:ident = $code:literal => $title:literal),* $(,)?) => {
        $(
            #[doc = concat!("`", $code, "`: ", $title, ".")]
            pub const $name: super::Code = super::Code($code);
        )*
        pub(super) const CODES: &[super::CodeInfo] = &[
            $(super::CodeInfo {
                code: $name,
                title: $title,
                explanation: include_str!(concat!("../../../../docs/diagnostics/", $code, ".md")),
            }),*
        ];
    };
}
pub(crate) use codes;

/// Every registered code, sorted by code.
pub fn all() -> Vec<CodeInfo> {
    let mut all: Vec<CodeInfo> = [
        syntax::CODES,
        check::CODES,
        catalogue::CODES,
        plan::CODES,
        emit::CODES,
    ]
    .into_iter()
    .flatten()
    .copied()
    .collect();
    all.sort_by_key(|c| c.code);
    all
}

/// The registered code `code`, if any (case-insensitive: `l0001` finds `L0001`).
pub fn lookup(code: &str) -> Option<CodeInfo> {
    all()
        .into_iter()
        .find(|c| c.code.as_str().eq_ignore_ascii_case(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_in_the_phase_of_its_file() {
        for (codes, phase) in [
            (syntax::CODES, Phase::Syntax),
            (check::CODES, Phase::Check),
            (catalogue::CODES, Phase::Catalogue),
            (plan::CODES, Phase::Plan),
            (emit::CODES, Phase::Emit),
        ] {
            assert!(!codes.is_empty());
            for info in codes {
                assert_eq!(info.code.phase(), phase, "{}", info.code);
            }
        }
        // Against the numbering written in the docs: L0001 is syntax, L4012 emitting.
        assert_eq!(Code::parse("L0001").map(Code::phase), Some(Phase::Syntax));
        assert_eq!(Code::parse("L4012").map(Code::phase), Some(Phase::Emit));
    }
}
