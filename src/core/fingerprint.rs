//! Fingerprints: `sha256:<hex>` of SHA-256 over a domain tag, a NUL byte and the canonical
//! JSON of a contract projection. Frozen by golden vectors in the tests below; widening a
//! projection means a new [`FINGERPRINT_VERSION`] and a registry migration that re-fingerprints
//! stored snapshots from their normalized specs.

use crate::core::json::to_canonical_string;
use crate::core::model::{EndpointSpec, ToolSpec};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Version of the projection rules below. Stored with every snapshot.
pub const FINGERPRINT_VERSION: i64 = 1;

pub const TOOL_DOMAIN: &str = "schemawatch.tool.v1";
pub const ENDPOINT_DOMAIN: &str = "schemawatch.endpoint.v1";

/// `sha256:<64 lowercase hex>` of `domain NUL canonical_json`.
pub fn digest(domain: &str, projection: &Value) -> String {
    digest_text(domain, &to_canonical_string(projection))
}

pub fn digest_text(domain: &str, canonical: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(domain.as_bytes());
    hasher.update([0u8]);
    hasher.update(canonical.as_bytes());
    let bytes = hasher.finalize();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in bytes.iter() {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 0xf) as usize] as char);
    }
    out
}

/// The definitions (by JSON pointer) reachable from `roots`, following `$ref`s transitively.
pub fn reachable_definitions<'a>(
    roots: impl IntoIterator<Item = &'a Value>,
    definitions: &BTreeMap<String, Value>,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&Value> = roots.into_iter().collect();
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    if seen.insert(target.clone()) {
                        if let Some(def) = definitions.get(target) {
                            stack.push(def);
                        }
                    }
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    seen
}

/// The contract projection of one endpoint: the endpoint itself plus every definition it
/// reaches, so an edit to a shared component changes each endpoint that uses it.
pub fn endpoint_projection(
    endpoint: &EndpointSpec,
    definitions: &BTreeMap<String, Value>,
) -> Value {
    // Serializing a plain struct of strings, bools, maps and Values cannot fail.
    let endpoint_value = serde_json::to_value(endpoint).unwrap_or(Value::Null);
    let reached = reachable_definitions([&endpoint_value], definitions);
    let mut defs = Map::new();
    for name in reached {
        if let Some(def) = definitions.get(&name) {
            defs.insert(name, def.clone());
        }
    }
    json!({ "endpoint": endpoint_value, "definitions": defs })
}

pub fn endpoint_fingerprint(
    endpoint: &EndpointSpec,
    definitions: &BTreeMap<String, Value>,
) -> String {
    digest(ENDPOINT_DOMAIN, &endpoint_projection(endpoint, definitions))
}

/// Fingerprints of every endpoint, keyed by endpoint identity.
pub fn endpoint_fingerprints(spec: &ToolSpec) -> BTreeMap<String, String> {
    spec.endpoints
        .iter()
        .map(|e| (e.identity(), endpoint_fingerprint(e, &spec.definitions)))
        .collect()
}

/// The tool's contract projection: identity, execution target and its endpoints' fingerprints.
/// Evidence and descriptive metadata are deliberately absent.
pub fn tool_projection(spec: &ToolSpec) -> Value {
    json!({
        "namespace": spec.namespace,
        "name": spec.name,
        "kind": spec.kind.as_str(),
        "remote": serde_json::to_value(&spec.remote).unwrap_or(Value::Null),
        "endpoints": endpoint_fingerprints(spec),
    })
}

pub fn tool_fingerprint(spec: &ToolSpec) -> String {
    digest(TOOL_DOMAIN, &tool_projection(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vectors: these exact strings are stored in registries. Changing them needs a
    /// new FINGERPRINT_VERSION and a migration.
    #[test]
    fn golden_vectors() {
        assert_eq!(
            digest(TOOL_DOMAIN, &json!({})),
            digest_text(TOOL_DOMAIN, "{}"),
        );
        assert_eq!(
            digest_text(TOOL_DOMAIN, "{}"),
            "sha256:d4db08026824f67757070e86c3c90d8a2c76dbdf3fc622ca8b9bc545e4bbd71a"
        );
        assert_eq!(
            digest_text(ENDPOINT_DOMAIN, r#"{"a":1}"#),
            "sha256:e2186b2ee9d404a75b854374b22f7fdeedbf5030c0988cc559bcae558ca00e5a"
        );
    }
}
