//! The Plan JSON (docs/plan-format.md): the Plan IR serialised with every object's keys sorted.
//!
//! serde_json is built with `preserve_order` in this workspace, so keys come out in struct
//! order; the contract asks for sorted keys, so the value is rebuilt with sorted maps.

use super::PlanDocument;
use serde_json::{Map, Value};

/// `value` with the keys of every object sorted (recursively).
pub fn sort_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut sorted = Map::new();
            for (key, value) in entries {
                sorted.insert(key, sort_keys(value));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

/// The plan document as a JSON value with sorted keys.
pub fn to_json(doc: &PlanDocument) -> Value {
    sort_keys(serde_json::to_value(doc).unwrap_or(Value::Null))
}
