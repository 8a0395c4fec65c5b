//! Small value helpers of the loader: currencies of a pool, range and unit diagnostics, versions.

use super::codes;
use crate::units::{Dimension, UnitError, parse_quantity};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::span::Span;
use std::collections::BTreeMap;

/// The pool's currencies while its file is loaded.
pub(super) struct Money {
    pub(super) base: String,
    pub(super) rates: BTreeMap<String, f64>,
}

impl Money {
    pub(super) fn rate(&self, currency: &str) -> Option<f64> {
        if currency == self.base {
            Some(1.0)
        } else {
            self.rates.get(currency).copied()
        }
    }

    pub(super) fn unknown(&self, currency: &str, span: Span) -> Diagnostic {
        let mut known: Vec<&str> = vec![self.base.as_str()];
        known.extend(self.rates.keys().map(String::as_str));
        let mut d = Diagnostic::error(
            codes::UNKNOWN_CURRENCY,
            format!("unknown currency `{currency}`"),
            span,
            "no exchange rate for this currency",
        );
        d = match crate::suggest::closest(currency, known.iter().copied()) {
            Some(s) => d.with_help(format!(
                "did you mean `{s}`? or add `{currency}` under `currency.rates`"
            )),
            None => d.with_help(format!(
                "add `{currency}` under `currency.rates`; the pool knows {}",
                super::yaml::one_of(&known)
            )),
        };
        d
    }
}

pub(super) fn out_of_range(span: Span, field: &str, expected: &str, found: &str) -> Diagnostic {
    Diagnostic::error(
        codes::OUT_OF_RANGE,
        format!("expected {expected} in `{field}`, found `{found}`"),
        span,
        "out of range",
    )
    .with_help(format!("write {expected} here"))
}

pub(super) fn bad_unit(
    span: Span,
    text: &str,
    error: &UnitError,
    dimension: &Dimension,
    field: &str,
) -> Diagnostic {
    // Suggest only units of the dimension the field needs (`80XB` → `GB`, never the count `B`).
    let suggestion = match error {
        UnitError::UnknownUnit { unit, .. } => {
            let fitting: Vec<&str> = crate::units::known_units()
                .into_iter()
                .filter(|u| {
                    parse_quantity(&format!("1{u}")).is_ok_and(|q| q.dimension.same_kind(dimension))
                })
                .collect();
            crate::suggest::closest(unit, fitting)
        }
        _ => None,
    };
    let help = match suggestion {
        Some(s) => format!(
            "did you mean `{s}`? write {} such as {}",
            dimension.describe(),
            dimension.example()
        ),
        None => format!(
            "write {} such as {}",
            dimension.describe(),
            dimension.example()
        ),
    };
    Diagnostic::error(
        codes::BAD_UNIT,
        format!("{error} in `{field}`"),
        span,
        format!("`{text}` cannot be read"),
    )
    .with_help(help)
}

/// The numeric parts of a dotted version (`12.4` → `[12, 4]`), if it is one.
pub fn parse_version(text: &str) -> Option<Vec<u64>> {
    let parts: Option<Vec<u64>> = text.trim().split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty())
}

/// Compares dotted versions numerically (`12.10` > `12.4`); missing parts count as 0.
pub fn compare_versions(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    let (a, b) = (parse_version(a)?, parse_version(b)?);
    let n = a.len().max(b.len());
    let pad = |v: &[u64]| {
        (0..n)
            .map(|i| v.get(i).copied().unwrap_or(0))
            .collect::<Vec<_>>()
    };
    Some(pad(&a).cmp(&pad(&b)))
}
