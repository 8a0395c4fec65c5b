//! `loam schema`: the JSON Schema (draft 2020-12) of the Plan JSON that `loam plan --format json`
//! prints, derived from the Plan IR types, with the format version it describes.

use crate::Context;
use loam_ir::plan::json::sort_keys;
use loam_ir::plan::{FORMAT_VERSION, PlanDocument};

/// The schema as a JSON value, keys sorted.
pub fn plan_schema() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(PlanDocument))
        .unwrap_or(serde_json::Value::Null);
    if let serde_json::Value::Object(map) = &mut schema {
        map.insert(
            "$id".into(),
            format!("https://loam.invalid/schema/plan/{FORMAT_VERSION}.json").into(),
        );
        map.insert("title".into(), "loam plan".into());
        map.insert(
            "x-loam-format-version".into(),
            FORMAT_VERSION.to_string().into(),
        );
    }
    sort_keys(schema)
}

/// Prints the schema; exit 0.
pub fn run(cx: &mut Context<'_>) -> u8 {
    cx.print_json(&plan_schema());
    0
}
