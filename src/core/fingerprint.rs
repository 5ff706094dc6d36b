//! Fingerprints: `sha256:<hex>` of SHA-256 over a domain tag, a NUL byte and the canonical
//! JSON of a contract projection. Frozen by golden vectors in the tests below; widening a
//! projection means a new [`FINGERPRINT_VERSION`] and a registry migration that re-fingerprints
//! stored snapshots from their normalized specs.

use crate::core::json::{to_canonical_string, write_json_string};
use crate::core::model::{EndpointSpec, ToolSpec};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Version of the projection rules below. Stored with every snapshot.
pub const FINGERPRINT_VERSION: i64 = 1;

pub const TOOL_DOMAIN: &str = "schemawatch.tool.v1";
pub const ENDPOINT_DOMAIN: &str = "schemawatch.endpoint.v1";
pub const DEFINITION_DOMAIN: &str = "schemawatch.definition.v1";

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

/// Direct `$ref` targets anywhere inside `value`.
pub fn direct_refs(value: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    out.insert(target.clone());
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    out
}

/// The definitions (by JSON pointer) reachable from `roots`, following `$ref`s transitively.
pub fn reachable_definitions<'a>(
    roots: impl IntoIterator<Item = &'a Value>,
    definitions: &BTreeMap<String, Value>,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<String> = roots.into_iter().flat_map(direct_refs).collect();
    while let Some(target) = stack.pop() {
        if seen.insert(target.clone()) {
            if let Some(def) = definitions.get(&target) {
                stack.extend(direct_refs(def));
            }
        }
    }
    seen
}

/// Precomputed digests of one spec's definitions and their reference graph, so each
/// endpoint's projection names the definitions it reaches by digest instead of repeating
/// their bodies (specs like Stripe's reach most of their components from every endpoint).
pub struct SpecIndex<'a> {
    spec: &'a ToolSpec,
    /// Definition pointers in canonical (UTF-16 code unit) order; indices below refer to it.
    names: Vec<&'a str>,
    index_of: HashMap<&'a str, usize>,
    digests: Vec<String>,
    /// Definitions each definition references directly (by index).
    edges: Vec<Vec<usize>>,
    /// References from each definition to pointers outside `definitions`.
    external: Vec<Vec<String>>,
}

impl<'a> SpecIndex<'a> {
    pub fn new(spec: &'a ToolSpec) -> Self {
        let mut names: Vec<&str> = spec.definitions.keys().map(String::as_str).collect();
        names.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        let index_of: HashMap<&str, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let mut digests = Vec::with_capacity(names.len());
        let mut edges = Vec::with_capacity(names.len());
        let mut external = Vec::with_capacity(names.len());
        for name in &names {
            let def = &spec.definitions[*name];
            digests.push(digest(DEFINITION_DOMAIN, def));
            let (inside, outside): (Vec<String>, Vec<String>) = direct_refs(def)
                .into_iter()
                .partition(|r| index_of.contains_key(r.as_str()));
            edges.push(
                inside
                    .iter()
                    .filter_map(|r| index_of.get(r.as_str()).copied())
                    .collect(),
            );
            external.push(outside);
        }
        SpecIndex {
            spec,
            names,
            index_of,
            digests,
            edges,
            external,
        }
    }

    /// Indices of the definitions reachable from `value` (sorted, i.e. canonical order), and
    /// the pointers it reaches that are not definitions of this spec.
    fn reach(&self, value: &Value) -> (Vec<usize>, BTreeSet<String>) {
        let mut visited = vec![false; self.names.len()];
        let mut outside = BTreeSet::new();
        let mut stack = Vec::new();
        for r in direct_refs(value) {
            match self.index_of.get(r.as_str()) {
                Some(i) => stack.push(*i),
                None => {
                    outside.insert(r);
                }
            }
        }
        while let Some(i) = stack.pop() {
            if !visited[i] {
                visited[i] = true;
                stack.extend(self.edges[i].iter().copied());
                outside.extend(self.external[i].iter().cloned());
            }
        }
        let reached = (0..visited.len()).filter(|i| visited[*i]).collect();
        (reached, outside)
    }

    /// Definitions reachable from an endpoint (or any value), by pointer.
    pub fn reachable(&self, value: &Value) -> BTreeSet<String> {
        let (reached, mut outside) = self.reach(value);
        outside.extend(reached.into_iter().map(|i| self.names[i].to_string()));
        outside
    }

    /// The contract projection of one endpoint: the endpoint itself plus the digest of every
    /// definition it reaches (`null` for a pointer outside the document), so an edit to a shared
    /// component changes each endpoint that uses it.
    pub fn endpoint_projection(&self, endpoint: &EndpointSpec) -> Value {
        // Serializing a plain struct of strings, bools, maps and Values cannot fail.
        let endpoint_value = serde_json::to_value(endpoint).unwrap_or(Value::Null);
        let (reached, outside) = self.reach(&endpoint_value);
        let mut defs = Map::new();
        for i in reached {
            defs.insert(
                self.names[i].to_string(),
                Value::String(self.digests[i].clone()),
            );
        }
        for name in outside {
            defs.insert(name, Value::Null);
        }
        json!({ "endpoint": endpoint_value, "definitions": defs })
    }

    /// The canonical text of [`Self::endpoint_projection`], written directly (the hot path of
    /// fingerprinting large specs); identical bytes, checked by a test.
    pub fn endpoint_projection_text(&self, endpoint: &EndpointSpec) -> String {
        let endpoint_value = serde_json::to_value(endpoint).unwrap_or(Value::Null);
        let (reached, outside) = self.reach(&endpoint_value);
        if !outside.is_empty() {
            return to_canonical_string(&self.endpoint_projection(endpoint));
        }
        let mut out = String::from("{\"definitions\":{");
        for (n, i) in reached.into_iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            write_json_string(self.names[i], &mut out);
            out.push(':');
            write_json_string(&self.digests[i], &mut out);
        }
        out.push_str("},\"endpoint\":");
        out.push_str(&to_canonical_string(&endpoint_value));
        out.push('}');
        out
    }

    pub fn endpoint_fingerprint(&self, endpoint: &EndpointSpec) -> String {
        digest_text(ENDPOINT_DOMAIN, &self.endpoint_projection_text(endpoint))
    }

    /// Fingerprints of every endpoint, keyed by endpoint identity.
    pub fn endpoint_fingerprints(&self) -> BTreeMap<String, String> {
        self.spec
            .endpoints
            .iter()
            .map(|e| (e.identity(), self.endpoint_fingerprint(e)))
            .collect()
    }

    /// The tool's contract projection: identity, execution target and its endpoints'
    /// fingerprints. Evidence and descriptive metadata are deliberately absent.
    pub fn tool_projection(&self) -> Value {
        let spec = self.spec;
        json!({
            "namespace": spec.namespace,
            "name": spec.name,
            "kind": spec.kind.as_str(),
            "remote": serde_json::to_value(&spec.remote).unwrap_or(Value::Null),
            "endpoints": self.endpoint_fingerprints(),
        })
    }

    pub fn tool_fingerprint(&self) -> String {
        digest(TOOL_DOMAIN, &self.tool_projection())
    }
}

pub fn tool_fingerprint(spec: &ToolSpec) -> String {
    SpecIndex::new(spec).tool_fingerprint()
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
