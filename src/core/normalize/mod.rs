//! Normalizers: pure functions from document bytes to a canonical [`ToolSpec`].

pub mod allow_list;
mod database;
pub mod openapi_refs;
pub mod schema;
pub mod source;

// Each kind's normalizer (`graphql`, `mcp`, `odata`, `openapi`, `openrpc`, `optimade`,
// `postgres`, `sqlite`): declared by the kind's row in `core::kinds`.
crate::core::kinds::normalizer_modules!();

use crate::core::json::{ParseError, DEFER_FROM_BYTES};
use crate::core::kinds::Reader;
use crate::core::model::{EndpointSpec, Kind, ToolSpec};
use std::borrow::Borrow;
use std::sync::Arc;

/// Why a document could not be turned into a contract. Messages name the problem and where
/// it is in the document, never secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NormalizeError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("not an OpenAPI document: {0}")]
    NotOpenApi(String),
    #[error("unsupported OpenAPI version {0:?} (supported: Swagger 2.0, OpenAPI 3.0 and 3.1)")]
    UnsupportedVersion(String),
    #[error("{at}: {problem}")]
    Invalid { at: String, problem: String },
    #[error("unresolved $ref {reference:?} at {at}")]
    UnresolvedRef { reference: String, at: String },
    #[error("$ref chain too long or cyclic at {0}")]
    RefLoop(String),
    #[error("two operations share the identity {0:?} (paths that differ only in parameter names)")]
    DuplicateEndpoint(String),
}

/// Sorts endpoints by identity (`METHOD path`), stably, as `sort_by_key(identity)` does, without
/// a key string per comparison or a scratch copy of the endpoints: an index order is sorted and
/// applied in place. Why: for a 200,000-operation document the plain stable sort took a 50 MB
/// scratch buffer and millions of short-lived strings at the moment memory peaks.
pub fn sort_by_identity<E: Borrow<EndpointSpec>>(endpoints: &mut [E]) {
    let mut order: Vec<usize> = (0..endpoints.len()).collect();
    order.sort_by(|a, b| {
        identity_key(endpoints[*a].borrow()).cmp(identity_key(endpoints[*b].borrow()))
    });
    // Position i takes the endpoint at order[i]: each cycle of the permutation by swaps.
    for i in 0..endpoints.len() {
        let mut j = i;
        loop {
            let k = order[j];
            order[j] = j;
            if k == i || k == j {
                break;
            }
            endpoints.swap(j, k);
            j = k;
        }
    }
}

/// The bytes of an endpoint's identity (`METHOD path`), the order endpoints are sorted in.
fn identity_key(e: &EndpointSpec) -> impl Iterator<Item = u8> + '_ {
    e.method
        .bytes()
        .chain(std::iter::once(b' '))
        .chain(e.path.bytes())
}

/// The endpoints of another reading of the same watch, which a new reading shares where it
/// holds an equal endpoint: that endpoint is the other's (one `Arc`), not a second copy.
/// Why: comparing two readings of one provider (`diff`, a `check` that classifies) held two
/// models of mostly equal endpoints; for a 200,000-operation document that was two thirds of
/// the peak memory. Sharing never changes a reading: only equal values are shared.
#[derive(Clone, Copy, Default)]
pub struct SharedEndpoints<'a> {
    /// Sorted by identity (as every normalizer leaves them); if not, fewer are shared.
    endpoints: &'a [Arc<EndpointSpec>],
}

impl<'a> SharedEndpoints<'a> {
    /// Share with `spec`'s endpoints.
    pub fn of(spec: &'a ToolSpec) -> Self {
        SharedEndpoints {
            endpoints: &spec.endpoints,
        }
    }

    fn find(&self, endpoint: &EndpointSpec) -> Option<&'a Arc<EndpointSpec>> {
        let endpoints = self.endpoints;
        let at = endpoints
            .binary_search_by(|e| identity_key(e).cmp(identity_key(endpoint)))
            .ok()?;
        endpoints.get(at)
    }

    /// `endpoint`, as the equal one the other reading holds when there is one.
    pub fn share(&self, endpoint: EndpointSpec) -> Arc<EndpointSpec> {
        match self.find(&endpoint) {
            Some(theirs) if **theirs == endpoint => Arc::clone(theirs),
            _ => Arc::new(endpoint),
        }
    }

    /// Every endpoint of `spec` the other reading holds equally becomes that one.
    pub fn share_all(&self, spec: &mut ToolSpec) {
        if self.endpoints.is_empty() {
            return;
        }
        for mine in &mut spec.endpoints {
            if let Some(theirs) = self.find(mine) {
                if !Arc::ptr_eq(theirs, mine) && **theirs == **mine {
                    *mine = Arc::clone(theirs);
                }
            }
        }
    }
}

/// A kind's large-document reading (`streaming`, one item at a time) from
/// [`DEFER_FROM_BYTES`] when it applies (`Some`), else its full reading: below the threshold
/// one pass is faster, and wherever the streaming reading is not certain the full one gives the
/// result and the exact error.
pub(crate) fn streaming_from_threshold(
    bytes: &[u8],
    streaming: impl FnOnce() -> Option<ToolSpec>,
    full: impl FnOnce() -> Result<ToolSpec, NormalizeError>,
) -> Result<ToolSpec, NormalizeError> {
    if bytes.len() >= DEFER_FROM_BYTES {
        if let Some(spec) = streaming() {
            return Ok(spec);
        }
    }
    full()
}

/// Splits a watch name `namespace.name` at its first dot (no dot: empty namespace).
pub fn split_watch_name(watch: &str) -> (String, String) {
    match watch.split_once('.') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), watch.to_string()),
    }
}

/// Normalizes a document of the given kind into the canonical model.
pub fn normalize(kind: Kind, watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    normalize_sharing(kind, watch, bytes, SharedEndpoints::default())
}

/// [`normalize`], sharing the endpoints `shared` holds equally (the same result, less memory
/// when another reading of the watch is held beside it). Each reading shares once: as it
/// reads (OpenAPI's and MCP's large-document readers, MCP always, so the peak holds one copy),
/// else afterwards ([`SharedEndpoints::share_all`]).
pub fn normalize_sharing(
    kind: Kind,
    watch: &str,
    bytes: &[u8],
    shared: SharedEndpoints<'_>,
) -> Result<ToolSpec, NormalizeError> {
    // Each kind's normalizer is its declaration's `reader` (`core::kinds`).
    let mut spec = match kind.decl().reader {
        Reader::Sharing(read) => return read(watch, bytes, shared),
        Reader::Whole(read) => read(watch, bytes),
    }?;
    shared.share_all(&mut spec);
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_by_identity_is_the_stable_sort_by_identity() {
        let endpoint = |method: &str, path: &str, name: &str| -> EndpointSpec {
            serde_json::from_value(serde_json::json!({
                "aliases": [], "deprecated": false, "destructive": false, "idempotent": false,
                "method": method, "name": name, "open_world": false, "parameters": [],
                "path": path, "path_template": path, "read_only": false, "responses": {},
                "security": [],
            }))
            .unwrap()
        };
        // Duplicates keep their order; `GET /a b` against `GET /a` tests the byte order.
        let specs: Vec<(&str, &str)> = vec![
            ("GET", "/b"),
            ("POST", "/a"),
            ("GET", "/a b"),
            ("GET", "/a"),
            ("GET", "/b"),
            ("DELETE", "/"),
            ("GET", "/a"),
            ("TOOL", "z"),
            ("GET", "/a/{}"),
            ("GET", "/b"),
        ];
        let mut mine: Vec<EndpointSpec> = specs
            .iter()
            .enumerate()
            .map(|(i, (m, p))| endpoint(m, p, &i.to_string()))
            .collect();
        let mut theirs = mine.clone();
        sort_by_identity(&mut mine);
        theirs.sort_by_key(|e| e.identity());
        assert_eq!(mine, theirs);
    }

    /// A reading that shares with another is the reading made alone; the endpoints both hold
    /// equally are one allocation, the changed ones its own. Large documents (read one path
    /// item or tool at a time from 4 MiB) share as they are read, smaller ones afterwards.
    #[test]
    fn a_shared_reading_is_the_reading_alone_with_equal_endpoints_shared() {
        // Padding makes the large variants cross DEFER_FROM_BYTES with few operations.
        let pad = "p".repeat(2200);
        let openapi = |n: usize, changed: usize, large: bool| -> Vec<u8> {
            let ops: Vec<String> = (0..n)
                .map(|i| {
                    let description = if large { pad.as_str() } else { "d" };
                    let status = if i == changed { "201" } else { "200" };
                    format!(
                        r#""/items/{i}":{{"get":{{"operationId":"get{i}","description":"{description}","responses":{{"{status}":{{"description":"ok"}}}}}}}}"#
                    )
                })
                .collect();
            format!(
                r#"{{"openapi":"3.0.3","info":{{"title":"t","version":"1"}},"paths":{{{}}}}}"#,
                ops.join(",")
            )
            .into_bytes()
        };
        let mcp = |n: usize, changed: usize, large: bool| -> Vec<u8> {
            let tools: Vec<String> = (0..n)
                .map(|i| {
                    let description = if large { pad.as_str() } else { "d" };
                    let kind = if i == changed { "integer" } else { "string" };
                    format!(
                        r#"{{"name":"t{i}","description":"{description}","inputSchema":{{"type":"object","properties":{{"id":{{"type":"{kind}"}}}}}}}}"#
                    )
                })
                .collect();
            format!(r#"{{"tools":[{}]}}"#, tools.join(",")).into_bytes()
        };
        type Make<'a> = &'a dyn Fn(usize, usize, bool) -> Vec<u8>;
        let makers: [(Kind, Make); 2] = [(Kind::Openapi, &openapi), (Kind::Mcp, &mcp)];
        for (kind, make) in makers {
            for (n, large) in [(40, false), (2000, true)] {
                let (old_doc, new_doc) = (make(n, usize::MAX, large), make(n, 7, large));
                assert_eq!(
                    new_doc.len() >= DEFER_FROM_BYTES,
                    large,
                    "{kind}: the large variant must take the streaming reader"
                );
                let old = normalize(kind, "acme.x", &old_doc).unwrap();
                let alone = normalize(kind, "acme.x", &new_doc).unwrap();
                let shared =
                    normalize_sharing(kind, "acme.x", &new_doc, SharedEndpoints::of(&old)).unwrap();
                assert_eq!(shared, alone, "{kind} {n}");
                assert_eq!(
                    serde_json::to_string(&shared).unwrap(),
                    serde_json::to_string(&alone).unwrap()
                );
                let pointers_shared = shared
                    .endpoints
                    .iter()
                    .zip(&old.endpoints)
                    .filter(|(a, b)| Arc::ptr_eq(a, b))
                    .count();
                assert_eq!(
                    pointers_shared,
                    n - 1,
                    "{kind} {n}: all but the changed one"
                );
                let changed = shared
                    .endpoints
                    .iter()
                    .find(|e| e.name == "get7" || e.name == "t7");
                assert!(
                    changed.is_some_and(|e| !old.endpoints.iter().any(|o| Arc::ptr_eq(o, e))),
                    "{kind} {n}: the changed endpoint is the new reading's own"
                );
            }
        }
    }
}
