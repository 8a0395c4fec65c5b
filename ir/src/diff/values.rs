//! The values a plan diff compares, and the one vocabulary of units they are written in: the
//! same units as `loam plan` (days, MWh, t CO2, %) in text and markdown, and the same units,
//! named, as JSON numbers rounded to a documented precision.
//!
//! | quantity | shown as | JSON `unit` | JSON precision |
//! | --- | --- | --- | --- |
//! | time to train | `5.2 h` below two days, else `44.3 days` | `days` | 5 significant digits |
//! | step time | `15.96 s` | `s` | 5 significant digits |
//! | throughput | `525,750 tokens/s` | `tokens/s` | 5 significant digits |
//! | MFU | `46.6 %`, changes in points (`+2.1 pt`) | `%` | 5 significant digits |
//! | money | `17,746,000 CNY` | the currency | 5 significant digits |
//! | energy | `412 MWh` | `MWh` | 5 significant digits |
//! | carbon | `239 t CO2` | `t CO2` | 5 significant digits |
//! | memory, data, interval | `66.7 GiB`, `48,000 GB`, `22 min` | `GiB`, `GB`, `min` | 5 significant digits |
//! | tokens | `2T` | `tokens` | exact integer |
//!
//! A relative change (`delta_pct`) has one decimal. Booleans are JSON booleans and counts JSON
//! integers.

use crate::display::{decimals, money, significant, thousands};
use std::fmt::Write as _;

/// How a number is written, and in which unit.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// A duration held in hours: shown in hours below two days, else in days; days in JSON.
    Duration,
    /// Seconds (step time).
    Seconds,
    /// Tokens per second.
    Rate,
    /// A ratio shown in percent (MFU); its change is in percentage points.
    Ratio,
    /// Money in a currency.
    Money(String),
    /// Energy held in kWh, shown and exported in MWh.
    Energy,
    /// Carbon held in kg, shown and exported in t CO2.
    Carbon,
    /// A training-token count (`2T`).
    Tokens,
    /// An amount in a plain unit (`GiB`, `GB`, `min`).
    Amount(&'static str),
}

impl Metric {
    /// The unit of the JSON number.
    pub fn unit(&self) -> String {
        match self {
            Metric::Duration => "days".into(),
            Metric::Seconds => "s".into(),
            Metric::Rate => "tokens/s".into(),
            Metric::Ratio => "%".into(),
            Metric::Money(currency) => currency.clone(),
            Metric::Energy => "MWh".into(),
            Metric::Carbon => "t CO2".into(),
            Metric::Tokens => "tokens".into(),
            Metric::Amount(unit) => (*unit).into(),
        }
    }

    /// A held value in the JSON unit.
    fn in_unit(&self, n: f64) -> f64 {
        match self {
            Metric::Duration => n / 24.0,
            Metric::Ratio => n * 100.0,
            Metric::Energy | Metric::Carbon => n / 1000.0,
            _ => n,
        }
    }

    /// A held value as a JSON number, rounded as the module docs say.
    pub fn json(&self, n: f64) -> serde_json::Value {
        match self {
            Metric::Tokens => serde_json::Value::from(n.round() as u64),
            _ => serde_json::Value::from(significant(self.in_unit(n))),
        }
    }

    /// A held value as text, in `scale`'s unit where the unit follows the magnitude (a
    /// duration's change is written in the unit of the larger of its two sides).
    fn show(&self, n: f64, scale: f64) -> String {
        match self {
            Metric::Duration if scale.abs() < 48.0 => format!("{} h", decimals(n, 1)),
            Metric::Duration => format!("{} days", decimals(n / 24.0, 1)),
            Metric::Seconds => format!("{} s", decimals(n, 2)),
            Metric::Rate => format!("{} tokens/s", thousands(n)),
            Metric::Ratio => format!("{} %", decimals(n * 100.0, 1)),
            Metric::Money(currency) if n.abs() >= 1000.0 => money(n, currency),
            Metric::Money(currency) => format!("{} {currency}", decimals(n, 2)),
            Metric::Energy => format!("{} MWh", amount(n / 1000.0)),
            Metric::Carbon => format!("{} t CO2", amount(n / 1000.0)),
            Metric::Tokens => tokens(n),
            Metric::Amount(unit) => format!("{} {unit}", amount(n)),
        }
    }
}

/// Whole with separators from a hundred up (as `loam plan` writes MWh and t CO2), else one
/// decimal (more when it would hide a non-zero value).
fn amount(n: f64) -> String {
    if n.abs() >= 100.0 {
        thousands(n)
    } else {
        decimals(n, 1)
    }
}

/// A token count as a spec writes it: `2T`, `1.5T`, `800B`, `20M`.
pub fn tokens(n: f64) -> String {
    for (scale, suffix) in [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")] {
        if n.abs() >= scale {
            let value = n / scale;
            let text = format!("{value:.2}");
            let text = text.trim_end_matches('0').trim_end_matches('.');
            return format!("{text}{suffix}");
        }
    }
    format!("{n:.0}")
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text compared as it is written.
    Text(String),
    /// A yes/no attribute.
    Bool(bool),
    /// A count (a parallel degree, a batch).
    Count(u64),
    /// A number with its unit.
    Number(f64, Metric),
    /// A list of one-line items.
    List(Vec<String>),
}

impl Value {
    /// The value as written in the output.
    pub fn shown(&self) -> String {
        match self {
            Value::Text(text) => text.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Count(n) => n.to_string(),
            Value::Number(n, metric) => metric.show(*n, *n),
            Value::List(items) => items.join("; "),
        }
    }

    /// The value as JSON: numbers in their unit, rounded; booleans and counts as such.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Text(text) => serde_json::Value::from(text.as_str()),
            Value::Bool(b) => serde_json::Value::from(*b),
            Value::Count(n) => serde_json::Value::from(*n),
            Value::Number(n, metric) => metric.json(*n),
            Value::List(items) => serde_json::Value::from(items.clone()),
        }
    }

    /// The unit of a number, for the JSON.
    pub fn unit(&self) -> Option<String> {
        match self {
            Value::Number(_, metric) => Some(metric.unit()),
            _ => None,
        }
    }

    /// Whether the text output writes the value bare (numbers, booleans) rather than quoted.
    pub fn is_bare(&self) -> bool {
        !matches!(self, Value::Text(_) | Value::List(_))
    }
}

/// One attribute that differs between the sides (either may be absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Dotted key, e.g. `estimate.cost`.
    pub key: String,
    /// At base.
    pub before: Option<Value>,
    /// At head.
    pub after: Option<Value>,
}

impl Change {
    /// The signed change of a number in its held unit, and relative to the old value in
    /// percent; `None` unless both sides are comparable numbers.
    pub fn delta(&self) -> Option<(f64, Option<f64>)> {
        match (&self.before, &self.after) {
            (Some(Value::Number(old, m1)), Some(Value::Number(new, m2))) if m1 == m2 => {
                let pct = (*old != 0.0).then(|| (new - old) / old.abs() * 100.0);
                Some((new - old, pct))
            }
            (Some(Value::Count(old)), Some(Value::Count(new))) => {
                let (old, new) = (*old as f64, *new as f64);
                let pct = (old != 0.0).then(|| (new - old) / old * 100.0);
                Some((new - old, pct))
            }
            _ => None,
        }
    }

    /// The delta in the JSON unit and the relative change, rounded as the module docs say.
    pub fn delta_json(&self) -> (serde_json::Value, serde_json::Value) {
        let Some((delta, pct)) = self.delta() else {
            return (serde_json::Value::Null, serde_json::Value::Null);
        };
        let amount = match &self.after {
            Some(Value::Number(_, metric)) => metric.json(delta),
            _ => serde_json::Value::from(delta as i64),
        };
        let pct = pct.map_or(serde_json::Value::Null, |p| {
            serde_json::Value::from((p * 10.0).round() / 10.0)
        });
        (amount, pct)
    }

    /// The unit of the change's numbers, for the JSON.
    pub fn unit(&self) -> Option<String> {
        self.after
            .as_ref()
            .or(self.before.as_ref())
            .and_then(Value::unit)
    }

    /// Both sides as text, a duration's in the unit of the larger side.
    pub fn shown(&self) -> (Option<String>, Option<String>) {
        let scale = self.scale();
        let show = |v: &Option<Value>| {
            v.as_ref().map(|v| match (v, scale) {
                (Value::Number(n, metric), Some(scale)) => metric.show(*n, scale),
                (other, _) => other.shown(),
            })
        };
        (show(&self.before), show(&self.after))
    }

    /// The larger magnitude of a number's two sides.
    fn scale(&self) -> Option<f64> {
        let magnitude = |v: &Option<Value>| match v {
            Some(Value::Number(n, _)) => Some(n.abs()),
            _ => None,
        };
        match (magnitude(&self.before), magnitude(&self.after)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The delta as text: `-110,000 CNY, -4.8 %` or `+2.1 pt`.
    pub fn delta_text(&self) -> Option<String> {
        let (delta, pct) = self.delta()?;
        let amount = match &self.after {
            Some(Value::Number(_, Metric::Ratio)) => {
                format!("{} pt", crate::display::signed(delta * 100.0, 1))
            }
            Some(Value::Number(_, metric)) => {
                let shown = metric.show(delta.abs(), self.scale().unwrap_or(delta));
                let sign = if delta < 0.0 { "-" } else { "+" };
                format!("{sign}{shown}")
            }
            _ => crate::display::signed(delta, 0),
        };
        Some(match (&self.after, pct) {
            (Some(Value::Number(_, Metric::Ratio)), _) | (_, None) => amount,
            (_, Some(pct)) => format!("{amount}, {} %", crate::display::signed(pct, 1)),
        })
    }
}

/// Both sides of a change as the text diff (and the diff page) writes them: numbers and booleans bare (a duration's in
/// the unit of the larger side), text quoted, lists as `["a", "b"]`; the after side followed by
/// the signed delta of a number (`2,152 CNY (+424.30 CNY, +24.6 %)`). A missing side is empty.
pub fn sides(change: &Change) -> (String, String) {
    let list = |value: &Option<Value>| {
        if value.is_none() {
            return String::new();
        }
        let items: Vec<String> = list_items(value).iter().map(|i| quote(i)).collect();
        format!("[{}]", items.join(", "))
    };
    if is_list(&change.before) || is_list(&change.after) {
        return (list(&change.before), list(&change.after));
    }
    let (old, mut new) = match (&change.before, &change.after, change.shown()) {
        (Some(before), _, (Some(old), Some(new))) if before.is_bare() => (old, new),
        (before, after, _) => (
            before.as_ref().map(written).unwrap_or_default(),
            after.as_ref().map(written).unwrap_or_default(),
        ),
    };
    if let Some(delta) = change.delta_text() {
        let _ = write!(new, " ({delta})");
    }
    (old, new)
}

/// Whether a side is a list.
pub fn is_list(value: &Option<Value>) -> bool {
    matches!(value, Some(Value::List(_)))
}

/// A side's items: a list's, or the one value shown.
pub fn list_items(value: &Option<Value>) -> Vec<String> {
    match value {
        Some(Value::List(items)) => items.clone(),
        Some(other) => vec![other.shown()],
        None => Vec::new(),
    }
}

/// A value as a side of a change: text quoted.
fn written(value: &Value) -> String {
    match value {
        Value::Text(text) => quote(text),
        other => other.shown(),
    }
}

/// Text in double quotes, `\` and `"` escaped.
pub fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(before: f64, after: f64, metric: Metric) -> Change {
        Change {
            key: "k".into(),
            before: Some(Value::Number(before, metric.clone())),
            after: Some(Value::Number(after, metric)),
        }
    }

    #[test]
    fn durations_follow_the_larger_side() {
        let c = change(40.0, 60.0, Metric::Duration);
        assert_eq!(
            c.shown(),
            (Some("1.7 days".into()), Some("2.5 days".into()))
        );
        assert_eq!(c.delta_text().as_deref(), Some("+0.8 days, +50.0 %"));
        let c = change(10.0, 20.0, Metric::Duration);
        assert_eq!(c.shown(), (Some("10.0 h".into()), Some("20.0 h".into())));
    }

    #[test]
    fn json_numbers_are_in_the_named_unit_and_rounded() {
        let c = change(1024.9, 2049.8, Metric::Duration);
        assert_eq!(c.unit().as_deref(), Some("days"));
        let (delta, pct) = c.delta_json();
        assert_eq!(delta, serde_json::json!(42.704));
        assert_eq!(pct, serde_json::json!(100.0));
        assert_eq!(
            Value::Number(230_080.0, Metric::Carbon).to_json(),
            serde_json::json!(230.08)
        );
        assert_eq!(
            Value::Number(0.46624, Metric::Ratio).to_json(),
            serde_json::json!(46.624)
        );
        assert_eq!(
            Value::Number(2e12, Metric::Tokens).to_json(),
            serde_json::json!(2_000_000_000_000u64)
        );
        assert_eq!(Value::Bool(true).to_json(), serde_json::json!(true));
    }

    #[test]
    fn shown_units_match_the_plan_table() {
        assert_eq!(Value::Number(412_000.0, Metric::Energy).shown(), "412 MWh");
        assert_eq!(
            Value::Number(238_730.0, Metric::Carbon).shown(),
            "239 t CO2"
        );
        assert_eq!(Value::Number(0.466, Metric::Ratio).shown(), "46.6 %");
        assert_eq!(Value::Number(1.5e12, Metric::Tokens).shown(), "1.5T");
        assert_eq!(
            change(0.40, 0.42, Metric::Ratio).delta_text().as_deref(),
            Some("+2.0 pt")
        );
    }
}
