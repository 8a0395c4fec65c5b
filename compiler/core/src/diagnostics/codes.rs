//! The one registry of diagnostic codes: code, phase, title and explanation page.
//!
//! Codes are `L` + four digits, by phase: L0xxx syntax, L1xxx checks that need no catalogue,
//! L2xxx catalogue loading and checks against the catalogue, L3xxx planning, L4xxx emitting.
//! Each phase keeps its list in its own file below; every code has `docs/diagnostics/<CODE>.md`,
//! included here, and a test keeps codes, pages and snapshots in sync.

mod catalogue;
mod check;
mod emit;
mod plan;
mod syntax;

/// One registered diagnostic code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeInfo {
    /// The code, e.g. `L1003`.
    pub code: &'static str,
    /// A short title, e.g. "unknown field".
    pub title: &'static str,
    /// The explanation page in Markdown (docs/diagnostics/<CODE>.md).
    pub explanation: &'static str,
}

/// Declares a phase's codes: `code => "title"`, the page comes from docs/diagnostics.
macro_rules! codes {
    ($($code:literal => $title:literal),* $(,)?) => {
        pub(super) const CODES: &[super::CodeInfo] = &[
            $(super::CodeInfo {
                code: $code,
                title: $title,
                explanation: include_str!(concat!("../../../../../docs/diagnostics/", $code, ".md")),
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
        .find(|c| c.code.eq_ignore_ascii_case(code))
}
