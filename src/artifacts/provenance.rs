//! Provenance stamps on review artifacts: the reasoning behind a verdict as a Toulmin argument
//! (`claim`, `grounds`, `warrant`, `qualifier`, `rebuttal`) plus `_tags`.

use crate::core::diff::rules;
use crate::core::model::{Compatibility, DriftReport};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

pub const TOULMIN_KEYS: [&str; 5] = ["claim", "grounds", "warrant", "qualifier", "rebuttal"];
pub const TAG_KEYS: [&str; 4] = ["scope", "signal_type", "attribution", "uncertainty"];

/// Returns `artifact` (an object) with `_toulmin` and `_tags` added for `report`.
pub fn stamp(mut artifact: Value, report: &DriftReport, scope: &str) -> Value {
    let rule_ids: BTreeSet<&str> = report.changes.iter().map(|c| c.rule.as_str()).collect();
    // Rules that decide by a conservative default rather than a proven fact.
    let defaulted = rule_ids
        .iter()
        .any(|id| rules::find(id).is_some_and(|r| r.conservative));
    let warrant: Vec<Value> = rule_ids
        .iter()
        .map(|id| json!({"rule": id, "doc": rules::find(id).map_or("", |r| r.doc)}))
        .collect();
    let grounds: Vec<Value> = report
        .changes
        .iter()
        .map(|c| {
            let why = if c.out_of_scope {
                " (out of scope: no endpoint the consumer uses reaches it; demoted to info)"
                    .to_string()
            } else if let Some(policy) = &c.policy {
                format!(" (policy: {policy})")
            } else {
                String::new()
            };
            json!(format!(
                "{} {} [{}]{why}",
                c.severity.as_str(),
                c.path,
                c.rule
            ))
        })
        .collect();
    let rebuttal = match report.compatibility {
        Compatibility::Identical => "A change outside the fingerprinted contract (descriptive metadata) is not considered.".to_string(),
        Compatibility::Compatible => "Callers relying on undocumented behaviour, or a severity override, could make this unsafe.".to_string(),
        _ if defaulted => "Some changes could not be proven safe and were judged breaking by default; a reviewer may find them harmless.".to_string(),
        _ => "A reviewer may accept the change if no caller depends on what it removes or restricts.".to_string(),
    };
    let toulmin = json!({
        "claim": format!("The contract change is {}.", report.compatibility.as_str()),
        "grounds": grounds,
        "warrant": warrant,
        "qualifier": if defaulted { "PROBABLE" } else { "CERTAIN" },
        "rebuttal": rebuttal,
    });
    let tags = json!({
        "scope": scope,
        "signal_type": "contract_drift",
        "attribution": format!("schemawatch {} rule catalogue", env!("CARGO_PKG_VERSION")),
        "uncertainty": if defaulted { "conservative-default" } else { "fingerprint-fact" },
    });
    if let Value::Object(map) = &mut artifact {
        map.insert("_toulmin".into(), toulmin);
        map.insert("_tags".into(), tags);
    }
    artifact
}

/// True when `artifact` carries complete `_toulmin` and `_tags`.
pub fn is_stamped(artifact: &Value) -> bool {
    let complete = |key: &str, keys: &[&str]| {
        artifact
            .get(key)
            .and_then(Value::as_object)
            .is_some_and(|m: &Map<String, Value>| keys.iter().all(|k| m.contains_key(*k)))
    };
    complete("_toulmin", &TOULMIN_KEYS) && complete("_tags", &TAG_KEYS)
}
