//! The YAML number readers of the loader: counts, plain numbers and quantities with units, each
//! checked to be finite and inside its declared [`Bounds`] (`super::bounds`), with a located
//! L2008 naming the field and the accepted range otherwise.

use super::Cx;
use super::bounds::{self, Bounds};
use crate::catalogue::codes;
use crate::catalogue::raw::Loc;
use crate::catalogue::values::{Money, bad_unit, out_of_range};
use crate::units::{Dimension, Quantity, parse_quantity};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::span::Span;

impl Cx<'_, '_> {
    /// A whole number in `[min, max]` (`max` fits a `u32`).
    pub(super) fn count(
        &mut self,
        value: &Loc<i128>,
        min: i128,
        max: i128,
        field: &str,
    ) -> Option<u32> {
        match u32::try_from(value.value) {
            Ok(n) if value.value >= min && value.value <= max => Some(n),
            _ => {
                let expected = format!(
                    "a count between {min} and {}",
                    loam_ir::display::thousands(max as f64)
                );
                let d = out_of_range(self.span(value), field, &expected, &value.value.to_string());
                self.push(d);
                None
            }
        }
    }

    /// Whether a plain YAML number is finite and inside `bounds`; reports it otherwise.
    pub(super) fn scalar_in(&mut self, value: &Loc<f64>, field: &str, bounds: Bounds) -> bool {
        if bounds.admits(value.value, true) {
            return true;
        }
        let d = out_of_range(self.span(value), field, bounds.words, &written(value.value));
        self.push(d);
        false
    }

    /// `text` read as a quantity: a negative number is out of range (`expected` says the
    /// range), a bad number or unit is reported against `dimension`.
    fn signed_quantity(
        &mut self,
        text: &Loc<String>,
        span: Span,
        field: &str,
        expected: &str,
        dimension: &Dimension,
    ) -> Option<Quantity> {
        if is_negative(&text.value) {
            let d = out_of_range(span, field, expected, &text.value);
            self.push(d);
            return None;
        }
        match parse_quantity(&text.value) {
            Ok(q) => Some(q),
            Err(e) => {
                let d = bad_unit(span, &text.value, &e, dimension, field);
                self.push(d);
                None
            }
        }
    }

    /// A quantity of `dimension` greater than zero and inside `bounds`, in base units.
    pub(super) fn positive_quantity(
        &mut self,
        text: &Loc<String>,
        dimension: Dimension,
        field: &str,
        bounds: Bounds,
    ) -> Option<f64> {
        let span = self.span(text);
        let expected = format!("{} {}", dimension.describe(), bounds.words);
        let q = self.signed_quantity(text, span, field, &expected, &dimension)?;
        if !q.dimension.same_kind(&dimension) {
            let d = Diagnostic::error(
                codes::WRONG_DIMENSION,
                format!(
                    "expected {} in `{field}`, found {}",
                    dimension.describe(),
                    q.dimension.describe()
                ),
                span,
                format!("`{}` is {}", text.value, q.dimension.describe()),
            )
            .with_help(format!(
                "write {} such as {}",
                dimension.describe(),
                dimension.example()
            ));
            self.push(d);
            return None;
        }
        if !bounds.admits(q.value, false) {
            let d = out_of_range(span, field, &expected, &text.value);
            self.push(d);
            return None;
        }
        Some(q.value)
    }

    /// An amount of money, converted to the pool's base currency.
    pub(super) fn money(&mut self, text: &Loc<String>, money: &Money, field: &str) -> Option<f64> {
        let span = self.span(text);
        let dimension = Dimension::Money(money.base.clone());
        let expected = format!("{} in {}", bounds::PRICE.words, money.base);
        let q = self.signed_quantity(text, span, field, &expected, &dimension)?;
        let Dimension::Money(currency) = &q.dimension else {
            let d = Diagnostic::error(
                codes::WRONG_DIMENSION,
                format!(
                    "expected an amount of money in `{field}`, found {}",
                    q.dimension.describe()
                ),
                span,
                "no currency",
            )
            .with_help(format!(
                "write the amount with its currency, e.g. `{} {}`",
                text.value.trim(),
                money.base
            ));
            self.push(d);
            return None;
        };
        let Some(rate) = money.rate(currency) else {
            let d = money.unknown(currency, span);
            self.push(d);
            return None;
        };
        let base = q.value * rate;
        if !bounds::PRICE.admits(base, true) {
            let d = out_of_range(span, field, &expected, &text.value);
            self.push(d);
            return None;
        }
        Some(base)
    }
}

/// Whether a quantity is written with a minus sign (the unit parser reads only digits, so it
/// would call `-80GiB` "not a number" instead of out of range).
fn is_negative(text: &str) -> bool {
    text.trim_start().starts_with('-')
}

/// A YAML float as it was most likely written, for messages (`.nan`, `.inf`, `-.inf`, `12.5`).
fn written(value: f64) -> String {
    if value.is_nan() {
        ".nan".to_string()
    } else if value.is_infinite() {
        if value > 0.0 { ".inf" } else { "-.inf" }.to_string()
    } else {
        value.to_string()
    }
}
