//! Kubernetes: every YAML document is found again by kind, namespace and name, and each changed
//! field is looked up in the rules of its kind ([`rules`]); a field no rule allows, an object of
//! a kind loam does not know, an added or removed job object, or a file that is not YAML forces
//! a replacement. Shared kinds (queues, flavours, priority classes) anywhere, and every file
//! below `_prerequisites`, are objects of the cluster that many jobs share: changing them
//! updates the cluster, not the job.

pub mod objects;
pub mod rules;

use crate::change::{Effect, Reason, change_of};
use rules::Mutability;
use std::collections::BTreeMap;

fn is_yaml(file: &str) -> bool {
    file.ends_with(".yaml") || file.ends_with(".yml")
}

/// The reasons of one changed file (`file` as shown, `shared` when below `_prerequisites`).
pub fn file(file: &str, shared: bool, old: &str, new: &str) -> Vec<Reason> {
    let parsed = if is_yaml(file) {
        objects::parse(old).zip(objects::parse(new))
    } else {
        None
    };
    let Some((a, b)) = parsed else {
        return vec![Reason {
            file: file.to_string(),
            object: None,
            field: String::new(),
            at: None,
            change: change_of(old, new),
            effect: if shared {
                Effect::Cluster
            } else {
                Effect::Replace
            },
            why: if shared {
                "a shared cluster object"
            } else {
                "not Kubernetes objects loam can compare: treated as replaced"
            },
        }];
    };
    let mut ids: Vec<&objects::Identity> = a.keys().chain(b.keys()).collect();
    ids.sort();
    ids.dedup();
    let mut found: BTreeMap<(Effect, String), Reason> = BTreeMap::new();
    for id in ids {
        let kind = rules::find(&id.group, &id.kind);
        let shared = shared || kind.is_some_and(|k| k.shared);
        let object = Some(id.shown());
        let reason = |field: String, at: Option<String>, change, effect, why| Reason {
            file: file.to_string(),
            object: object.clone(),
            field,
            at,
            change,
            effect,
            why,
        };
        let (x, y) = match (a.get(id), b.get(id)) {
            (Some(x), Some(y)) => (x, y),
            (x, _) => {
                let change = if x.is_some() { "removed" } else { "added" };
                let r = if shared {
                    reason(
                        String::new(),
                        None,
                        change,
                        Effect::Cluster,
                        "a shared cluster object",
                    )
                } else {
                    reason(
                        String::new(),
                        None,
                        change,
                        Effect::Replace,
                        "the job's objects differ",
                    )
                };
                found.entry((r.effect, r.sentence())).or_insert(r);
                continue;
            }
        };
        // A ConfigMap once made immutable stays so (Kubernetes refuses any change to it).
        let frozen = x.get("immutable").and_then(serde_json::Value::as_bool) == Some(true);
        for path in objects::changed_paths(x, y) {
            let at = Some(objects::shown(&path));
            let head: Vec<&String> = path.iter().take(2).collect();
            let r = match kind {
                _ if shared => reason(
                    String::new(),
                    None,
                    "changed",
                    Effect::Cluster,
                    "a shared cluster object",
                ),
                None => reason(
                    objects::shown(&head),
                    at,
                    "changed",
                    Effect::Replace,
                    "a kind loam does not know: treated as replaced",
                ),
                Some(_) if frozen => reason(
                    objects::shown(&head),
                    at,
                    "changed",
                    Effect::Replace,
                    "the ConfigMap is immutable",
                ),
                Some(kind) => match rules::decide(kind, &path) {
                    Some(rule) => reason(
                        objects::shown(rule.path),
                        at,
                        "changed",
                        match rule.mutability {
                            Mutability::Mutable => Effect::InPlace,
                            Mutability::Immutable => Effect::Replace,
                        },
                        rule.why,
                    ),
                    None => reason(
                        objects::shown(&head),
                        at,
                        "changed",
                        Effect::Replace,
                        kind.default_why,
                    ),
                },
            };
            // One reason per field and effect; the first changed field below it is kept.
            found.entry((r.effect, r.sentence())).or_insert(r);
        }
    }
    found.into_values().collect()
}

#[cfg(test)]
mod tests;
