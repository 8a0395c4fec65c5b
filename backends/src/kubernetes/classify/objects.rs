//! Kubernetes objects of a manifest file, found by kind, namespace and name, and the field paths
//! where two versions of one object differ.

use serde_json::Value;
use std::collections::BTreeMap;

/// Who an object is: the same identity on both sides is the same object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Identity {
    /// API group (`""` for the core group).
    pub group: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace` (empty when cluster-scoped).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl Identity {
    /// `JobSet/job-a`, as reasons name an object.
    pub fn shown(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }
}

/// The objects of a YAML file by identity, or `None` when the file does not parse as YAML (or a
/// document is not an object with a kind): the caller then compares it as text.
pub fn parse(text: &str) -> Option<BTreeMap<Identity, Value>> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).ok()?;
    let mut objects = BTreeMap::new();
    for doc in docs {
        if doc.is_null() {
            continue;
        }
        let identity = identity(&doc)?;
        // Two documents with one identity would hide each other's changes.
        if objects.insert(identity, doc).is_some() {
            return None;
        }
    }
    Some(objects)
}

fn identity(doc: &Value) -> Option<Identity> {
    let api_version = doc.get("apiVersion")?.as_str()?;
    let group = match api_version.rsplit_once('/') {
        Some((group, _)) => group.to_string(),
        None => String::new(),
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let metadata = doc.get("metadata");
    Some(Identity {
        group,
        kind: doc.get("kind")?.as_str()?.to_string(),
        namespace: text(metadata.and_then(|m| m.get("namespace"))),
        name: text(metadata.and_then(|m| m.get("name"))),
    })
}

/// Every field path where `old` and `new` differ, in document order: a changed scalar, a key
/// present on one side only, or a list whose length changed (the list itself).
pub fn changed_paths(old: &Value, new: &Value) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    walk(old, new, &mut Vec::new(), &mut found);
    found
}

fn walk(old: &Value, new: &Value, at: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                at.push(key.clone());
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => walk(x, y, at, found),
                    _ => found.push(at.clone()),
                }
                at.pop();
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                at.push(i.to_string());
                walk(x, y, at, found);
                at.pop();
            }
        }
        _ if old != new => found.push(at.clone()),
        _ => {}
    }
}

/// A field path as people write it: `spec.replicatedJobs[0].template`.
pub fn shown(path: &[impl AsRef<str>]) -> String {
    let mut out = String::new();
    for segment in path {
        let segment = segment.as_ref();
        if segment == "*" || segment.parse::<usize>().is_ok() {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(segment);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_found_by_identity_and_compared_by_field() {
        let old = "# a comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\ndata:\n  x: \"1\"\n---\napiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: a\nspec:\n  replicatedJobs:\n    - name: g0\n      replicas: 1\n";
        let new = old
            .replace("x: \"1\"", "x: \"2\"")
            .replace("replicas: 1", "replicas: 2");
        let (a, b) = (parse(old).unwrap(), parse(&new).unwrap());
        assert_eq!(a.len(), 2);
        let mut paths = Vec::new();
        for (id, object) in &a {
            for p in changed_paths(object, &b[id]) {
                paths.push(format!("{} {}", id.shown(), shown(&p)));
            }
        }
        assert_eq!(
            paths,
            [
                "ConfigMap/a data.x",
                "JobSet/a spec.replicatedJobs[0].replicas"
            ]
        );
    }

    #[test]
    fn text_that_is_no_object_is_not_parsed() {
        assert!(parse("just: [unclosed").is_none());
        assert!(parse("a: 1\n").is_none());
    }
}
