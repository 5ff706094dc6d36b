//! Surface triage: every endpoint in exactly one bucket, and a check that a user's
//! classification is mutually exclusive and collectively exhaustive over the registry.

use crate::core::model::EndpointSpec;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Fixed, mutually exclusive, collectively exhaustive, in reporting order.
pub const BUCKETS: [&str; 3] = ["real_dispatch", "read_only", "native_only"];

/// The bucket an endpoint belongs to: subscriptions and streams are not server one-shots.
pub fn bucket_of(e: &EndpointSpec) -> &'static str {
    if matches!(e.method.as_str(), "SUBSCRIPTION" | "WEBHOOK" | "CALLBACK") {
        "native_only"
    } else if e.read_only {
        "read_only"
    } else {
        "real_dispatch"
    }
}

/// `{total, surface: {bucket: [ids]}, counts, executes_server_side, native_only_count, all_tools}`.
pub fn summary(endpoints: &BTreeMap<String, &'static str>) -> Value {
    let mut surface: BTreeMap<&str, Vec<&str>> = BUCKETS.iter().map(|b| (*b, Vec::new())).collect();
    for (id, bucket) in endpoints {
        surface.entry(bucket).or_default().push(id);
    }
    let count = |b: &str| surface.get(b).map_or(0, Vec::len);
    json!({
        "total": endpoints.len(),
        "surface": surface,
        "counts": BUCKETS.iter().map(|b| (b.to_string(), json!(count(b)))).collect::<serde_json::Map<_, _>>(),
        "executes_server_side": count("real_dispatch") + count("read_only"),
        "native_only_count": count("native_only"),
        "all_tools": endpoints.keys().collect::<Vec<_>>(),
    })
}

/// The result of checking a classification against the registry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TriageDrift {
    pub unclassified: Vec<String>,
    pub multiply_classified: BTreeMap<String, Vec<String>>,
    pub unknown_buckets: Vec<String>,
    pub unknown_tools: Vec<String>,
}

impl TriageDrift {
    pub fn ok(&self) -> bool {
        self.unclassified.is_empty()
            && self.multiply_classified.is_empty()
            && self.unknown_buckets.is_empty()
            && self.unknown_tools.is_empty()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "ok": self.ok(),
            "unclassified": self.unclassified,
            "multiply_classified": self.multiply_classified,
            "unknown_buckets": self.unknown_buckets,
            "unknown_tools": self.unknown_tools,
        })
    }
}

/// Checks a classification (bucket → endpoint ids) against the registry's endpoint ids. Never
/// fails: every problem is reported.
pub fn drift(
    registry: &BTreeSet<String>,
    classification: &BTreeMap<String, Vec<String>>,
) -> TriageDrift {
    let mut placed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut out = TriageDrift::default();
    for (bucket, ids) in classification {
        if !BUCKETS.contains(&bucket.as_str()) {
            out.unknown_buckets.push(bucket.clone());
        }
        for id in ids.iter().collect::<BTreeSet<_>>() {
            placed.entry(id.clone()).or_default().push(bucket.clone());
        }
    }
    for (id, buckets) in &placed {
        if !registry.contains(id) {
            out.unknown_tools.push(id.clone());
        }
        if buckets.len() > 1 {
            out.multiply_classified.insert(id.clone(), buckets.clone());
        }
    }
    out.unclassified = registry
        .iter()
        .filter(|id| !placed.contains_key(*id))
        .cloned()
        .collect();
    out
}

/// Reads a classification file (TOML: bucket = ["watch/endpoint", ...]); errors name the file.
pub fn read_classification(
    path: &std::path::Path,
) -> Result<BTreeMap<String, Vec<String>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read classification {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("classification {}: {}", path.display(), e.message()))
}
