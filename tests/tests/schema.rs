//! `loam schema`: the JSON Schema of the plan is valid, versioned, and every example's plan
//! (`loam plan --format json`) validates against it; so does a hand-made infeasible plan.

use loam_tests::{repo_root, run_cli};

fn schema() -> serde_json::Value {
    let (code, out, err) = run_cli(&["schema"], "");
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn the_schema_is_versioned_and_a_valid_schema() {
    let schema = schema();
    assert_eq!(schema["x-loam-format-version"], "1.18");
    assert!(
        schema["$schema"].as_str().unwrap().contains("2020-12"),
        "{schema}"
    );
    assert!(jsonschema::meta::is_valid(&schema));
    let required = schema["required"].as_array().unwrap();
    for key in ["format_version", "catalogue_digest", "plans"] {
        assert!(required.iter().any(|r| r == key), "{key} required");
    }
}

#[test]
fn every_example_plan_validates() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let mut examples: Vec<_> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "loam"))
        .collect();
    examples.sort();
    assert!(!examples.is_empty());
    for example in examples {
        let (_, out, err) = run_cli(&["plan", example.to_str().unwrap(), "--format", "json"], "");
        let plan: serde_json::Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{}: {e}\n{out}\n{err}", example.display()));
        let errors: Vec<String> = validator
            .iter_errors(&plan)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", example.display());
    }
}

#[test]
fn a_plan_missing_a_contract_field_is_rejected() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let bad = serde_json::json!({"format_version": "1.0", "plans": []});
    assert!(!validator.is_valid(&bad));
    let good =
        serde_json::json!({"format_version": "1.0", "catalogue_digest": "sha256:00", "plans": []});
    assert!(validator.is_valid(&good));
}
