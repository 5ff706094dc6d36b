//! Fingerprints: `sha256:<hex>` of SHA-256 over a domain tag, a NUL byte and the canonical
//! JSON of a contract projection. Frozen by golden vectors in the tests below; widening a
//! projection means a new [`FINGERPRINT_VERSION`] and a registry migration that re-fingerprints
//! stored snapshots from their normalized specs.

use crate::core::json::{to_canonical_string, write_json_string};
use crate::core::model::{EndpointSpec, ToolSpec};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Version of the projection rules below. Stored with every snapshot. 2: GraphQL SDL keeps every
/// directive usage, a built-in's too where the model does not read it (`@oneOf` on a field or
/// a union, issue 30).
pub const FINGERPRINT_VERSION: i64 = 2;

pub const TOOL_DOMAIN: &str = "schemawatch.tool.v1";
pub const ENDPOINT_DOMAIN: &str = "schemawatch.endpoint.v1";
pub const DEFINITION_DOMAIN: &str = "schemawatch.definition.v1";
pub const DEFINITION_CLOSURE_DOMAIN: &str = "schemawatch.definition-closure.v1";
pub const SCHEMA_DIGEST_DOMAIN: &str = "schemawatch.schema-digest.v1";

/// `sha256:<64 lowercase hex>` of `domain NUL canonical_json`.
pub fn digest(domain: &str, projection: &Value) -> String {
    digest_text(domain, &to_canonical_string(projection))
}

pub fn digest_text(domain: &str, canonical: &str) -> String {
    hex_digest(&raw_digest_text(domain, canonical))
}

/// The SHA-256 [`digest_text`] spells, as bytes (32 bytes instead of a 71-character string:
/// what a contract's per-endpoint fingerprints are held as while it is compared).
fn raw_digest_text(domain: &str, canonical: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(domain.as_bytes());
    hasher.update([0u8]);
    hasher.update(canonical.as_bytes());
    hasher.finalize().into()
}

/// `sha256:<64 lowercase hex>` of a finished SHA-256.
fn hex_digest(bytes: &[u8]) -> String {
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

/// Precomputed digests of one spec's definitions and their reference graph.
///
/// Each definition gets a *closure digest*: a Merkle hash over the strongly connected component
/// it belongs to (member names and body digests) and the closure digests of every component it
/// references. An endpoint's projection names only the definitions it references directly, by
/// closure digest, so an edit anywhere in a definition an endpoint reaches changes that
/// endpoint's fingerprint, at a cost linear in the size of the spec (specs like Stripe's reach
/// most of their components from every endpoint).
pub struct SpecIndex<'a> {
    spec: &'a ToolSpec,
    /// Definition pointers in canonical (UTF-16 code unit) order; indices below refer to it.
    names: Vec<&'a str>,
    index_of: HashMap<&'a str, usize>,
    /// Definitions each definition references directly (by index).
    edges: Vec<Vec<usize>>,
    /// Closure digest of each definition.
    closure: Vec<String>,
    /// Each endpoint's fingerprint (as bytes), by its position in `spec.endpoints`, computed
    /// once on first use.
    endpoint_fps: std::cell::OnceCell<Vec<[u8; 32]>>,
}

impl<'a> SpecIndex<'a> {
    pub fn new(spec: &'a ToolSpec) -> Self {
        let mut names: Vec<&str> = spec.definitions.keys().map(String::as_str).collect();
        names.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        let index_of: HashMap<&str, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let mut body = Vec::with_capacity(names.len());
        let mut edges = Vec::with_capacity(names.len());
        let mut external: Vec<Vec<String>> = Vec::with_capacity(names.len());
        for name in &names {
            let def = &spec.definitions[*name];
            body.push(digest(DEFINITION_DOMAIN, def));
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
        let components = strongly_connected_components(&edges);
        let mut component_of = vec![0usize; names.len()];
        for (c, members) in components.iter().enumerate() {
            for m in members {
                component_of[*m] = c;
            }
        }
        // Tarjan emits a component only after every component it reaches, so one pass in
        // emission order sees each successor's digest before it is needed.
        let mut component_digest: Vec<String> = Vec::with_capacity(components.len());
        for (c, members) in components.iter().enumerate() {
            let mut member_map = Map::new();
            let mut reaches = BTreeSet::new();
            let mut outside = BTreeSet::new();
            for m in members {
                member_map.insert(names[*m].to_string(), Value::String(body[*m].clone()));
                for e in &edges[*m] {
                    if component_of[*e] != c {
                        reaches.insert(component_digest[component_of[*e]].clone());
                    }
                }
                outside.extend(external[*m].iter().cloned());
            }
            component_digest.push(digest(
                DEFINITION_CLOSURE_DOMAIN,
                &json!({ "members": member_map, "reaches": reaches, "external": outside }),
            ));
        }
        let closure = (0..names.len())
            .map(|i| component_digest[component_of[i]].clone())
            .collect();
        SpecIndex {
            spec,
            names,
            index_of,
            edges,
            closure,
            endpoint_fps: std::cell::OnceCell::new(),
        }
    }

    /// Whether `endpoint` reaches (through `$ref`s, transitively) any of `pointers`.
    pub fn reaches_any(&self, endpoint: &EndpointSpec, pointers: &BTreeSet<String>) -> bool {
        let targets: Vec<usize> = pointers
            .iter()
            .filter_map(|p| self.index_of.get(p.as_str()).copied())
            .collect();
        if targets.is_empty() {
            return false;
        }
        let mut wanted = vec![false; self.names.len()];
        targets.into_iter().for_each(|i| wanted[i] = true);
        let mut visited = vec![false; self.names.len()];
        let mut stack: Vec<usize> = endpoint_refs(endpoint)
            .iter()
            .filter_map(|r| self.index_of.get(r.as_str()).copied())
            .collect();
        while let Some(i) = stack.pop() {
            if wanted[i] {
                return true;
            }
            if !visited[i] {
                visited[i] = true;
                stack.extend(self.edges[i].iter().copied());
            }
        }
        false
    }

    /// The contract projection of one endpoint: the endpoint itself plus the closure digest of
    /// every definition it references (`null` for a pointer outside the document).
    pub fn endpoint_projection(&self, endpoint: &EndpointSpec) -> Value {
        // Serializing a plain struct of strings, bools, maps and Values cannot fail.
        let endpoint_value = serde_json::to_value(endpoint).unwrap_or(Value::Null);
        let mut defs = Map::new();
        for r in endpoint_refs(endpoint) {
            let closure = self
                .index_of
                .get(r.as_str())
                .map(|i| self.closure[*i].clone());
            defs.insert(r, closure.map_or(Value::Null, Value::String));
        }
        json!({ "endpoint": endpoint_value, "definitions": defs })
    }

    /// The canonical text of [`Self::endpoint_projection`], written without building the
    /// projection value (the hot path of fingerprinting); identical bytes, checked by a test.
    pub fn endpoint_projection_text(&self, endpoint: &EndpointSpec) -> String {
        let Some(endpoint_text) = canonical_struct_text(endpoint) else {
            return to_canonical_string(&self.endpoint_projection(endpoint));
        };
        let mut refs: Vec<String> = endpoint_refs(endpoint).into_iter().collect();
        refs.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        let mut out = String::with_capacity(endpoint_text.len() + 64 + refs.len() * 128);
        out.push_str("{\"definitions\":{");
        for (n, r) in refs.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            write_json_string(r, &mut out);
            out.push(':');
            match self.index_of.get(r.as_str()) {
                Some(i) => write_json_string(&self.closure[*i], &mut out),
                None => out.push_str("null"),
            }
        }
        out.push_str("},\"endpoint\":");
        out.push_str(&endpoint_text);
        out.push('}');
        out
    }

    /// Digest of what an endpoint accepts and returns (parameters, body, responses, input and
    /// output schemas, and the definitions they reach) — no names, descriptions or side-effect
    /// facts. The catalog's `schema_digest`.
    pub fn schema_digest(&self, endpoint: &EndpointSpec) -> String {
        let mut defs = Map::new();
        for r in endpoint_refs(endpoint) {
            let closure = self
                .index_of
                .get(r.as_str())
                .map(|i| self.closure[*i].clone());
            defs.insert(r, closure.map_or(Value::Null, Value::String));
        }
        let input = json!({
            "parameters": endpoint.parameters.iter().map(|p| json!({
                "name": p.name, "location": p.location, "required": p.required, "style": p.style, "schema": p.schema,
            })).collect::<Vec<_>>(),
            "request_body": endpoint.request_body.as_ref().map(|b| json!({"required": b.required, "content": b.content})),
            "input_schema": endpoint.input_schema,
        });
        let output = json!({
            "responses": endpoint.responses.iter().map(|(status, r)| (status.to_string(), json!({"content": r.content, "headers": r.headers}))).collect::<Map<_, _>>(),
            "output_schema": endpoint.output_schema,
        });
        digest(
            SCHEMA_DIGEST_DOMAIN,
            &json!({"input": input, "output": output, "definitions": defs}),
        )
    }

    pub fn endpoint_fingerprint(&self, endpoint: &EndpointSpec) -> String {
        hex_digest(&self.raw_endpoint_fingerprint(endpoint))
    }

    fn raw_endpoint_fingerprint(&self, endpoint: &EndpointSpec) -> [u8; 32] {
        raw_digest_text(ENDPOINT_DOMAIN, &self.endpoint_projection_text(endpoint))
    }

    /// Every endpoint's fingerprint as bytes, by position in the spec's `endpoints`, computed
    /// once: what a comparison reads (no identity or hex string per endpoint held).
    pub fn endpoint_fingerprints_by_position(&self) -> &[[u8; 32]] {
        self.endpoint_fps.get_or_init(|| {
            self.spec
                .endpoints
                .iter()
                .map(|e| self.raw_endpoint_fingerprint(e))
                .collect()
        })
    }

    /// Fingerprints of every endpoint of this spec, keyed by endpoint identity (of endpoints
    /// sharing one identity, the last).
    pub fn endpoint_fingerprints(&self) -> BTreeMap<String, String> {
        self.spec
            .endpoints
            .iter()
            .zip(self.endpoint_fingerprints_by_position())
            .map(|(e, fp)| (e.identity(), hex_digest(fp)))
            .collect()
    }

    /// The tool's contract projection: identity, execution target, server capabilities (when
    /// known) and its endpoints' fingerprints. Evidence and descriptive metadata are deliberately absent.
    pub fn tool_projection(&self) -> Value {
        let mut projection = self.tool_projection_head();
        if let Value::Object(map) = &mut projection {
            map.insert("endpoints".into(), json!(self.endpoint_fingerprints()));
        }
        projection
    }

    /// [`Self::tool_projection`] without its `endpoints` map.
    fn tool_projection_head(&self) -> Value {
        let spec = self.spec;
        let mut projection = json!({
            "namespace": spec.namespace,
            "name": spec.name,
            "kind": spec.kind.as_str(),
            "remote": serde_json::to_value(&spec.remote).unwrap_or(Value::Null),
            "instructions": spec.instructions,
        });
        // Only when known (MCP): every contract without them keeps its fingerprint.
        if let Value::Object(map) = &mut projection {
            if let Some(capabilities) = &spec.capabilities {
                map.insert("capabilities".into(), capabilities.clone());
            }
            if !spec.extensions.is_empty() {
                map.insert("extensions".into(), json!(spec.extensions));
            }
            // GraphQL directive definitions and non-default root type names: only when
            // present, so every contract without them keeps its fingerprint.
            if !spec.directives.is_empty() {
                map.insert("directives".into(), json!(spec.directives));
            }
            if !spec.roots.is_empty() {
                map.insert("roots".into(), json!(spec.roots));
            }
        }
        projection
    }

    /// `digest(TOOL_DOMAIN, &self.tool_projection())`, with the canonical text written straight
    /// into the hash: the endpoint map (the bulk of it: 200,000 operations made 60 MB of map
    /// and value at the moment memory peaked) is never built. Identical bytes, checked by a test.
    pub fn tool_fingerprint(&self) -> String {
        let Value::Object(head) = self.tool_projection_head() else {
            return digest(TOOL_DOMAIN, &self.tool_projection());
        };
        let mut sink = HashSink::new(TOOL_DOMAIN);
        // Canonical key order (UTF-16 code units), `endpoints` among the others.
        let mut entries: Vec<(&str, Option<&Value>)> =
            head.iter().map(|(k, v)| (k.as_str(), Some(v))).collect();
        entries.push(("endpoints", None));
        entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
        sink.text.push('{');
        for (n, (key, value)) in entries.into_iter().enumerate() {
            if n > 0 {
                sink.text.push(',');
            }
            write_json_string(key, &mut sink.text);
            sink.text.push(':');
            match value {
                Some(value) => sink.text.push_str(&to_canonical_string(value)),
                None => self.write_endpoint_map(&mut sink),
            }
        }
        sink.text.push('}');
        sink.finish()
    }

    /// The canonical text of `json!(self.endpoint_fingerprints())`: identity → fingerprint in
    /// UTF-16 order of the identity; of endpoints sharing one identity the last (as collecting
    /// into the map keeps).
    fn write_endpoint_map(&self, sink: &mut HashSink) {
        let endpoints = &self.spec.endpoints;
        let key = |e: &'a EndpointSpec| {
            e.method
                .encode_utf16()
                .chain(std::iter::once(u16::from(b' ')))
                .chain(e.path.encode_utf16())
        };
        let mut order: Vec<usize> = (0..endpoints.len()).collect();
        order.sort_by(|a, b| key(&endpoints[*a]).cmp(key(&endpoints[*b])));
        let cached = self.endpoint_fps.get();
        sink.text.push('{');
        let mut first = true;
        for (n, &i) in order.iter().enumerate() {
            let endpoint = &endpoints[i];
            if order
                .get(n + 1)
                .is_some_and(|&next| key(endpoint).eq(key(&endpoints[next])))
            {
                continue;
            }
            if !first {
                sink.text.push(',');
            }
            first = false;
            let identity = endpoint.identity();
            let fingerprint = match cached {
                Some(by_position) => hex_digest(&by_position[i]),
                None => self.endpoint_fingerprint(endpoint),
            };
            write_json_string(&identity, &mut sink.text);
            sink.text.push(':');
            write_json_string(&fingerprint, &mut sink.text);
            sink.flush_some();
        }
        sink.text.push('}');
    }
}

/// A SHA-256 of `domain NUL text` fed in pieces, as [`digest_text`] writes it.
struct HashSink {
    hasher: Sha256,
    text: String,
}

impl HashSink {
    fn new(domain: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(domain.as_bytes());
        hasher.update([0u8]);
        HashSink {
            hasher,
            text: String::new(),
        }
    }

    /// Hashes the text so far once it is long enough to be worth a call.
    fn flush_some(&mut self) {
        if self.text.len() >= 1 << 16 {
            self.hasher.update(self.text.as_bytes());
            self.text.clear();
        }
    }

    fn finish(mut self) -> String {
        self.hasher.update(self.text.as_bytes());
        hex_digest(&self.hasher.finalize())
    }
}

pub fn tool_fingerprint(spec: &ToolSpec) -> String {
    SpecIndex::new(spec).tool_fingerprint()
}

/// `$ref` targets an endpoint references directly.
fn endpoint_refs(endpoint: &EndpointSpec) -> BTreeSet<String> {
    endpoint
        .schemas()
        .into_iter()
        .flat_map(direct_refs)
        .collect()
}

/// Canonical JSON of a model struct written straight by serde_json. This equals
/// `to_canonical_string(&to_value(x))` because model structs declare their fields in sorted
/// order, maps are BTreeMaps, numbers are already canonical and serde_json escapes strings as
/// RFC 8785 does; the one difference, UTF-16 key order for characters above U+FFFF, is detected
/// and answered with `None` (the caller then takes the general path). A test pins the equality.
pub fn canonical_struct_text<T: serde::Serialize>(value: &T) -> Option<String> {
    let text = serde_json::to_string(value).ok()?;
    // A 4-byte UTF-8 sequence starts with 0xF0..=0xF4: a character above U+FFFF.
    if text.bytes().any(|b| b >= 0xF0) {
        return None;
    }
    Some(text)
}

/// Tarjan's strongly connected components, iterative (no recursion on input-sized graphs).
/// Components come out in reverse topological order: each after every component it reaches.
fn strongly_connected_components(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = edges.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut components = Vec::new();
    let mut next_index = 0;
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        // (node, next edge position to visit)
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut pos)) = work.last_mut() {
            if *pos == 0 && index[v] == UNSEEN {
                index[v] = next_index;
                low[v] = next_index;
                next_index += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(*pos) {
                *pos += 1;
                if index[w] == UNSEEN {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                component.sort_unstable();
                components.push(component);
            }
        }
    }
    components
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

    fn spec(doc: &str) -> ToolSpec {
        crate::core::normalize::openapi::normalize("acme.pets", doc.as_bytes()).unwrap()
    }

    const CHAIN: &str = r##"{"openapi":"3.0.3","info":{"title":"t","version":"1"},
      "paths":{"/a":{"get":{"parameters":[{"name":"q\u00e9","in":"query","schema":{"type":"string"}}],
        "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/A"}}}}}}},
               "/b":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/B"}}}}}}},
               "/c":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/C"}}}}}}}},
      "components":{"schemas":{
        "A":{"type":"object","properties":{"b":{"$ref":"#/components/schemas/B"},"self":{"$ref":"#/components/schemas/A"}}},
        "B":{"type":"object","properties":{"a":{"$ref":"#/components/schemas/A"},"d":{"$ref":"#/components/schemas/D"}}},
        "C":{"type":"string"},
        "D":{"type":"integer","maximum":5}}}}"##;

    #[test]
    fn fast_projection_text_equals_the_general_canonical_form() {
        let example = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/schemas/petstore.json"
        ))
        .unwrap();
        for doc in [CHAIN, example.as_str()] {
            let s = spec(doc);
            let index = SpecIndex::new(&s);
            for e in &s.endpoints {
                assert_eq!(
                    canonical_struct_text(e),
                    Some(to_canonical_string(&serde_json::to_value(e).unwrap()))
                );
                assert_eq!(
                    index.endpoint_projection_text(e),
                    to_canonical_string(&index.endpoint_projection(e))
                );
            }
        }
        // A key above U+FFFF takes the general path.
        let mut s = spec(CHAIN);
        let ok = std::sync::Arc::make_mut(&mut s.endpoints[0]).responses["200"].clone();
        std::sync::Arc::make_mut(&mut s.endpoints[0])
            .responses
            .insert("\u{1F600}".into(), ok);
        assert_eq!(canonical_struct_text(&s.endpoints[0]), None);
        let index = SpecIndex::new(&s);
        assert_eq!(
            index.endpoint_projection_text(&s.endpoints[0]),
            to_canonical_string(&index.endpoint_projection(&s.endpoints[0]))
        );
    }

    #[test]
    fn streamed_tool_fingerprint_equals_the_digest_of_the_projection() {
        let check = |s: &ToolSpec| {
            let index = SpecIndex::new(s);
            let streamed = index.tool_fingerprint();
            assert_eq!(streamed, digest(TOOL_DOMAIN, &index.tool_projection()));
            // Also once the endpoint fingerprints are cached.
            index.endpoint_fingerprints();
            assert_eq!(index.tool_fingerprint(), streamed);
        };
        let mut s = spec(CHAIN);
        check(&s);
        // Identities above U+FFFF and against U+E000..U+FFFF (UTF-16 order differs from UTF-8
        // order there), a duplicate identity (the map keeps the last), contract-level fields.
        let mut a = (*s.endpoints[0]).clone();
        a.path = "/\u{1F600}".into();
        let mut b = (*s.endpoints[0]).clone();
        b.path = "/\u{FF01}".into();
        let mut dup = (*s.endpoints[1]).clone();
        dup.description = Some("the last one".into());
        s.endpoints.extend([a, b, dup].map(std::sync::Arc::new));
        s.extensions.insert("x-a".into(), json!({"k": [1, 2]}));
        s.capabilities = Some(json!({"tools": {}}));
        s.instructions = Some("use it".into());
        check(&s);
        s.endpoints.clear();
        check(&s);
    }

    #[test]
    fn a_deep_definition_change_reaches_every_endpoint_that_uses_it() {
        let old = spec(CHAIN);
        let new = spec(&CHAIN.replace(r#""maximum":5"#, r#""maximum":6"#));
        let (oi, ni) = (SpecIndex::new(&old), SpecIndex::new(&new));
        let fps = |i: &SpecIndex, s: &ToolSpec| {
            s.endpoints
                .iter()
                .map(|e| i.endpoint_fingerprint(e))
                .collect::<Vec<_>>()
        };
        let (a, b) = (fps(&oi, &old), fps(&ni, &new));
        // /a reaches D through the A<->B cycle, /b through B; /c never reaches D.
        assert_ne!(a[0], b[0]);
        assert_ne!(a[1], b[1]);
        assert_eq!(a[2], b[2]);
        assert_ne!(tool_fingerprint(&old), tool_fingerprint(&new));
    }

    #[test]
    fn components_come_out_after_what_they_reach() {
        // 0 -> 1 <-> 2 -> 3
        let comps = strongly_connected_components(&[vec![1], vec![2], vec![1, 3], vec![]]);
        assert_eq!(comps, vec![vec![3], vec![1, 2], vec![0]]);
    }
}
