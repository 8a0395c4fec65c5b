//! Numbers with units and dimensions, shared by the language and the YAML catalogue.
//!
//! One parser reads `70B`, `48TB`, `80GiB`, `30d`, `200ms`, `400Gbps`, `3.35TB/s`, `989TFLOPS`,
//! `700W` and `2.5M CNY` into a [`Quantity`] in base units (count, bytes, seconds, bytes per
//! second, FLOP/s, watts, money in its currency). A value of the wrong dimension is reported by the
//! caller with [`Dimension::describe`], e.g. "expected a data size, found a duration".

use loam_ir::units::GIB;
use serde::Serialize;

/// What kind of physical quantity a value measures.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Dimension {
    /// A plain number or a count (`80`, `70B`, `2T`).
    Count,
    /// A data size in bytes (`48TB`, `80GiB`).
    Bytes,
    /// A duration in seconds (`30d`, `200ms`).
    Duration,
    /// A data rate in bytes per second (`400Gbps`, `3.35TB/s`).
    Bandwidth,
    /// A compute rate in FLOP per second (`989.4TFLOPS`).
    FlopRate,
    /// Power in watts (`700W`).
    Power,
    /// An amount of money in the named ISO 4217 currency (`2.5M CNY`).
    Money(String),
}

impl Dimension {
    /// Human words for the dimension, used in type errors ("expected a data size").
    pub fn describe(&self) -> &'static str {
        match self {
            Dimension::Count => "a number",
            Dimension::Bytes => "a data size",
            Dimension::Duration => "a duration",
            Dimension::Bandwidth => "a bandwidth",
            Dimension::FlopRate => "a compute rate",
            Dimension::Power => "a power",
            Dimension::Money(_) => "an amount of money",
        }
    }

    /// Example spellings, used in help lines.
    pub fn example(&self) -> &'static str {
        match self {
            Dimension::Count => "`80`, `70B` or `2T`",
            Dimension::Bytes => "`48TB` or `80GiB`",
            Dimension::Duration => "`30d`, `12h` or `200ms`",
            Dimension::Bandwidth => "`400Gbps` or `3.35TB/s`",
            Dimension::FlopRate => "`989.4TFLOPS`",
            Dimension::Power => "`700W`",
            Dimension::Money(_) => "`2.5M CNY`",
        }
    }

    /// Whether two dimensions agree, ignoring the currency of money.
    pub fn same_kind(&self, other: &Dimension) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// A number in base units with its dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quantity {
    /// The value in base units: count, bytes, seconds, bytes/s, FLOP/s, watts, or money.
    pub value: f64,
    /// What it measures.
    pub dimension: Dimension,
}

/// Why a unit literal could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The digits are not a number (`1.2.3`, `_`).
    #[error("`{0}` is not a number")]
    BadNumber(String),
    /// The suffix is no unit loam knows.
    #[error("unknown unit `{unit}`")]
    UnknownUnit {
        /// The suffix as written.
        unit: String,
        /// The closest known unit, if one is close enough.
        suggestion: Option<&'static str>,
    },
    /// A currency that is not three capital letters.
    #[error("`{0}` is not an ISO 4217 currency code")]
    BadCurrency(String),
    /// The value does not fit in a 64-bit float.
    #[error("number too large")]
    Overflow,
}

/// One unit suffix: its spelling, dimension and factor to base units.
struct UnitDef {
    suffix: &'static str,
    dimension: Dimension,
    factor: f64,
}

const fn unit(suffix: &'static str, dimension: Dimension, factor: f64) -> UnitDef {
    UnitDef {
        suffix,
        dimension,
        factor,
    }
}

/// Every unit suffix. Counts use `K M B T` (`B` is billion, never bytes), bytes need two letters.
const UNITS: &[UnitDef] = &[
    unit("K", Dimension::Count, 1e3),
    unit("M", Dimension::Count, 1e6),
    unit("B", Dimension::Count, 1e9),
    unit("T", Dimension::Count, 1e12),
    unit("KB", Dimension::Bytes, 1e3),
    unit("MB", Dimension::Bytes, 1e6),
    unit("GB", Dimension::Bytes, 1e9),
    unit("TB", Dimension::Bytes, 1e12),
    unit("PB", Dimension::Bytes, 1e15),
    unit("KiB", Dimension::Bytes, 1024.0),
    unit("MiB", Dimension::Bytes, 1_048_576.0),
    unit("GiB", Dimension::Bytes, GIB),
    unit("TiB", Dimension::Bytes, 1_099_511_627_776.0),
    unit("PiB", Dimension::Bytes, 1_125_899_906_842_624.0),
    unit("ms", Dimension::Duration, 1e-3),
    unit("us", Dimension::Duration, 1e-6),
    unit("s", Dimension::Duration, 1.0),
    unit("min", Dimension::Duration, 60.0),
    unit("h", Dimension::Duration, 3600.0),
    unit("d", Dimension::Duration, 86_400.0),
    unit("w", Dimension::Duration, 604_800.0),
    unit("Mbps", Dimension::Bandwidth, 1e6 / 8.0),
    unit("Gbps", Dimension::Bandwidth, 1e9 / 8.0),
    unit("Tbps", Dimension::Bandwidth, 1e12 / 8.0),
    unit("MB/s", Dimension::Bandwidth, 1e6),
    unit("GB/s", Dimension::Bandwidth, 1e9),
    unit("TB/s", Dimension::Bandwidth, 1e12),
    unit("MiB/s", Dimension::Bandwidth, 1_048_576.0),
    unit("GiB/s", Dimension::Bandwidth, GIB),
    unit("GFLOPS", Dimension::FlopRate, 1e9),
    unit("TFLOPS", Dimension::FlopRate, 1e12),
    unit("PFLOPS", Dimension::FlopRate, 1e15),
    unit("W", Dimension::Power, 1.0),
    unit("kW", Dimension::Power, 1e3),
    unit("MW", Dimension::Power, 1e6),
];

/// Every unit suffix loam knows, for help texts.
pub fn known_units() -> Vec<&'static str> {
    UNITS.iter().map(|u| u.suffix).collect()
}

/// The count multiplier of a `K M B T` suffix (used for money amounts such as `2.5M CNY`).
fn count_factor(suffix: &str) -> Option<f64> {
    UNITS
        .iter()
        .find(|u| u.suffix == suffix && u.dimension == Dimension::Count)
        .map(|u| u.factor)
}

/// Reads the digits of a number: `_` separators, an optional fraction.
pub fn parse_number(digits: &str) -> Result<f64, UnitError> {
    let cleaned: String = digits.chars().filter(|c| *c != '_').collect();
    let well_formed = !cleaned.is_empty()
        && !digits.starts_with('_')
        && cleaned.split('.').count() <= 2
        && cleaned.chars().all(|c| c.is_ascii_digit() || c == '.')
        && cleaned.split('.').all(|part| !part.is_empty());
    if !well_formed {
        return Err(UnitError::BadNumber(digits.to_string()));
    }
    let value: f64 = cleaned
        .parse()
        .map_err(|_| UnitError::BadNumber(digits.to_string()))?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(UnitError::Overflow)
    }
}

/// Splits `text` into its leading number and the rest.
fn split_number(text: &str) -> (&str, &str) {
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '_' || *c == '.'))
        .map_or(text.len(), |(i, _)| i);
    text.split_at(end)
}

/// Reads a quantity: a number, an optional unit suffix, and for money a currency code after a
/// space (`2.5M CNY`). A space between number and unit is allowed in catalogue YAML (`80 GB`).
pub fn parse_quantity(text: &str) -> Result<Quantity, UnitError> {
    let text = text.trim();
    let (digits, rest) = split_number(text);
    // Name the whole literal: the digits alone are empty for `-80GiB` and `NaNGiB` and `.` for
    // `.nan`, which made messages quote "``" or "`.`".
    let value = parse_number(digits).map_err(|error| match error {
        UnitError::BadNumber(_) => UnitError::BadNumber(text.to_string()),
        other => other,
    })?;
    let rest_trimmed = rest.trim_start();
    if let Some(u) = UNITS.iter().find(|u| u.suffix == rest_trimmed) {
        return finite(value * u.factor, u.dimension.clone());
    }
    // Money: `<number>[KMBT] <CUR>`; the currency follows white space.
    if let Some((suffix, currency)) = money_parts(rest) {
        let factor = if suffix.is_empty() {
            1.0
        } else {
            count_factor(suffix).ok_or_else(|| unknown_unit(suffix))?
        };
        if !is_currency_code(currency) {
            return Err(UnitError::BadCurrency(currency.to_string()));
        }
        return finite(value * factor, Dimension::Money(currency.to_string()));
    }
    if rest_trimmed.is_empty() {
        return finite(value, Dimension::Count);
    }
    Err(unknown_unit(rest_trimmed))
}

/// The `(count suffix, currency)` of a money tail such as `M CNY` or ` USD`.
fn money_parts(rest: &str) -> Option<(&str, &str)> {
    let (suffix, currency) = rest.split_once(char::is_whitespace)?;
    let currency = currency.trim();
    let looks_like_currency =
        currency.chars().all(|c| c.is_ascii_alphabetic()) && !currency.is_empty();
    looks_like_currency.then_some((suffix, currency))
}

/// Whether `text` is shaped like an ISO 4217 code: three capital letters.
pub fn is_currency_code(text: &str) -> bool {
    text.len() == 3 && text.chars().all(|c| c.is_ascii_uppercase())
}

fn finite(value: f64, dimension: Dimension) -> Result<Quantity, UnitError> {
    if value.is_finite() {
        Ok(Quantity { value, dimension })
    } else {
        Err(UnitError::Overflow)
    }
}

fn unknown_unit(unit: &str) -> UnitError {
    let suggestion = crate::suggest::closest(unit, UNITS.iter().map(|u| u.suffix));
    UnitError::UnknownUnit {
        unit: unit.to_string(),
        suggestion,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> (f64, Dimension) {
        let q = parse_quantity(text).unwrap();
        (q.value, q.dimension)
    }

    #[test]
    fn counts_bytes_durations_bandwidths_money() {
        assert_eq!(q("70B"), (7e10, Dimension::Count));
        assert_eq!(q("2T"), (2e12, Dimension::Count));
        assert_eq!(q("1_024"), (1024.0, Dimension::Count));
        assert_eq!(q("48TB"), (48e12, Dimension::Bytes));
        assert_eq!(q("80GiB"), (80.0 * 1_073_741_824.0, Dimension::Bytes));
        assert_eq!(q("30d"), (30.0 * 86_400.0, Dimension::Duration));
        assert_eq!(q("200ms").1, Dimension::Duration);
        assert_eq!(q("400Gbps"), (50e9, Dimension::Bandwidth));
        assert_eq!(q("3.35TB/s").1, Dimension::Bandwidth);
        assert_eq!(q("80 GB"), (80e9, Dimension::Bytes));
        assert_eq!(q("2.5M CNY"), (2.5e6, Dimension::Money("CNY".into())));
        assert_eq!(q("300 USD"), (300.0, Dimension::Money("USD".into())));
    }

    #[test]
    fn bad_literals_are_errors() {
        assert!(matches!(
            parse_quantity("3XB"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert_eq!(
            parse_quantity("1.2.3"),
            Err(UnitError::BadNumber("1.2.3".into()))
        );
        assert_eq!(
            parse_quantity("5 cny"),
            Err(UnitError::BadCurrency("cny".into()))
        );
        assert_eq!(
            parse_quantity(".nan"),
            Err(UnitError::BadNumber(".nan".into()))
        );
        assert_eq!(
            parse_quantity("NaNGiB"),
            Err(UnitError::BadNumber("NaNGiB".into()))
        );
        let huge = "9".repeat(1000);
        assert_eq!(parse_quantity(&huge), Err(UnitError::Overflow));
        assert_eq!(
            parse_quantity(&format!("{}PB", "9".repeat(300))),
            Err(UnitError::Overflow)
        );
    }

    #[test]
    fn unknown_unit_suggests_the_nearest() {
        match parse_quantity("48TBs") {
            Err(UnitError::UnknownUnit { suggestion, .. }) => assert_eq!(suggestion, Some("TB/s")),
            other => panic!("{other:?}"),
        }
    }
}

/// An inclusive range of accepted values of a quantity in base units, with the words messages
/// use for it ("above zero and at most 16 TiB"): the one shape of the catalogue's figure ranges
/// (`catalogue::load::bounds`) and the spec's (`check::ranges`).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The smallest accepted value; quantities are also always above zero unless said otherwise.
    pub min: f64,
    /// The largest accepted value.
    pub max: f64,
    /// The range in words.
    pub words: &'static str,
}

impl Bounds {
    /// Whether `value` is finite and inside the range (and above zero when `min` is 0, unless
    /// `zero_ok`).
    pub fn admits(&self, value: f64, zero_ok: bool) -> bool {
        value.is_finite()
            && value >= self.min
            && value <= self.max
            && (zero_ok || value > 0.0 || self.min > 0.0)
    }
}
