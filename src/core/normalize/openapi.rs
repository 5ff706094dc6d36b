//! OpenAPI 3.0 / 3.1 and Swagger 2.0 (JSON or YAML) → ToolSpec.
//!
//! Schema `$ref`s stay named (never inlined: cycles and blow-up); the definitions they reach are
//! collected into `ToolSpec::definitions` by JSON pointer. Non-schema `$ref`s (parameters,
//! request bodies, responses, headers, path items) are resolved in place.
//! Endpoint identity is `METHOD path` with path parameter names normalized to `{}`.
//! External `$ref`s resolve through a bundle ([`normalize_bundle`], see `openapi_refs`); their
//! definitions are keyed by the root-relative reference (`schemas/pet.yaml#/Pet`).

use super::schema::{normalize_schema, normalize_schema_owned};
use super::{split_watch_name, NormalizeError, SharedEndpoints};
use crate::core::json::{parse_document, parse_json_deferring, Deferred};
use crate::core::model::{
    CompactString, EndpointSpec, Evidence, Kind, Metadata, ParameterSpec, Remote, RequestBody,
    ResponseSpec, SmallMap, ToolSpec,
};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];
const MAX_REF_HOPS: usize = 32;

/// The descriptive allow-list of an OpenAPI / Swagger document (`docs/allow-list.md`): what
/// stays out of the fingerprint, and why. Every other keyword the model has no place for is
/// kept verbatim (deny by default): at the document level in `ToolSpec::extensions`, inside a
/// path item or operation in the endpoint's `extensions` (`responses.200.x-cache`).
pub const DESCRIPTIVE: &[(&str, &str)] = &[
    (
        "info",
        "descriptive metadata (`metadata.title`, `metadata.version`; the license is evidence)",
    ),
    ("tags, paths.*.*.tags", "documentation grouping"),
    (
        "openapi (beyond `3.0` / `3.1`)",
        "the patch version is descriptive (`metadata.format`)",
    ),
    (
        "paths.*.*.parameters[].name (Swagger 2.0 `in: body` parameters)",
        "a body parameter's name is never sent",
    ),
    (
        "externalDocs, paths.*.*.externalDocs",
        "links to documentation",
    ),
    (
        "example, examples (parameters, media types, headers)",
        "sample values, not constraints",
    ),
    (
        "components (entries no endpoint references)",
        "unreachable: outside every endpoint's contract",
    ),
    (
        "(key order, `$ref` vs inline)",
        "references are resolved; maps are compared by key",
    ),
];
/// Keys that are examples wherever they sit (media types, parameters, headers).
const EXAMPLES: &[&str] = &["example", "examples"];

/// The descriptive text of servers (their `description` and their variables'), kept as
/// documentation at `prefix.<url>.description` and `prefix.<url>.variables.<name>.description`
/// (what a server is called is not where calls go, but it is text a reader or a model sees).
fn keep_server_text(servers: Option<&Value>, prefix: &str, out: &mut BTreeMap<String, Value>) {
    keep_server_text_with(
        servers,
        prefix,
        server_url,
        &[("description", "description")],
        out,
    );
}

/// The walk of [`keep_server_text`], shared with OpenRPC: each server's `own` keys (key, path
/// below the server's URL) and its variables' descriptions, under the URL `url_of` gives.
pub(super) fn keep_server_text_with(
    servers: Option<&Value>,
    prefix: &str,
    url_of: fn(&Value) -> Option<String>,
    own: &[(&str, &str)],
    out: &mut BTreeMap<String, Value>,
) {
    for server in servers.and_then(Value::as_array).into_iter().flatten() {
        let Some(url) = url_of(server) else {
            continue;
        };
        for (key, at) in own {
            if let Some(v) = server.get(*key) {
                out.insert(format!("{prefix}.{url}.{at}"), v.clone());
            }
        }
        for (name, var) in server
            .get("variables")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let Some(d) = var.get("description") {
                out.insert(
                    format!("{prefix}.{url}.variables.{name}.description"),
                    d.clone(),
                );
            }
        }
    }
}

/// The keywords of `obj` the model has no place for, verbatim, at `prefix.key` (deny by
/// default); `modelled` and `descriptive` keys are skipped. OpenRPC uses it too.
pub(super) fn keep_unmodelled(
    obj: &Value,
    modelled: &[&str],
    descriptive: &[&str],
    prefix: &str,
    out: &mut BTreeMap<String, Value>,
) {
    if let Value::Object(map) = obj {
        keep_unmodelled_map(map, modelled, descriptive, prefix, out);
    }
}

/// [`keep_unmodelled`] of an object already in hand (no copy of it is made).
fn keep_unmodelled_map(
    map: &Map<String, Value>,
    modelled: &[&str],
    descriptive: &[&str],
    prefix: &str,
    out: &mut BTreeMap<String, Value>,
) {
    for (key, value) in map {
        if !modelled.contains(&key.as_str()) && !descriptive.contains(&key.as_str()) {
            let at = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            out.insert(at, value.clone());
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    Swagger2,
    OpenApi3,
}

/// Normalizes an OpenAPI/Swagger document for the watch named `watch` (`namespace.name`).
pub fn normalize(watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    normalize_sharing(watch, bytes, SharedEndpoints::default())
}

/// [`normalize`], sharing the endpoints `shared` holds equally ([`SharedEndpoints`]): as they
/// are read one path item at a time, or after the full reading.
pub fn normalize_sharing(
    watch: &str,
    bytes: &[u8],
    shared: SharedEndpoints<'_>,
) -> Result<ToolSpec, NormalizeError> {
    super::streaming_from_threshold(
        bytes,
        || streaming(watch, bytes, shared),
        || {
            let mut spec = normalize_owned(watch, parse_document(bytes)?)?;
            shared.share_all(&mut spec);
            Ok(spec)
        },
    )
}

/// [`normalize`] of a JSON document without its `paths` ever being one tree: the document is
/// parsed except `paths` (checked, not built), then each path item is parsed, normalized and
/// dropped in turn, so memory holds the model and one path item instead of the model and the
/// whole document's tree. The result is the one [`normalize_owned`] gives; `None` answers
/// every case where that is not certain (YAML, a syntax or normalization error, anything
/// that could be a `$ref` into `#/paths` or a hidden one), and the caller takes the full path,
/// which gives the exact error too.
pub fn normalize_streaming(watch: &str, bytes: &[u8]) -> Option<ToolSpec> {
    streaming(watch, bytes, SharedEndpoints::default())
}

fn streaming(watch: &str, bytes: &[u8], shared: SharedEndpoints<'_>) -> Option<ToolSpec> {
    let text = streamable_text(bytes)?;
    let deferred = parse_json_deferring(text, "paths").ok()?;
    normalize_deferred(watch, deferred, shared)
}

/// The document's text when [`normalize_streaming`] may read it: JSON (after a BOM), with no
/// `\u` escape (it could spell a `$ref` or a pointer) and no string that could point into
/// `#/paths` or at the whole document (`#`).
pub(crate) fn streamable_text(bytes: &[u8]) -> Option<&str> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).ok()?;
    if text.trim_start().as_bytes().first() != Some(&b'{') || text.contains("\\u") {
        return None;
    }
    let b = text.as_bytes();
    for (i, _) in text.match_indices('#') {
        let mut at = i + 1;
        // `#` alone, or `#%..` (a percent-encoded pointer), may reach the whole document.
        match b.get(at) {
            Some(b'"') | Some(b'%') => return None,
            Some(b'/') => at += 1,
            Some(b'\\') if b.get(at + 1) == Some(&b'/') => at += 2,
            _ => continue,
        }
        // The first pointer token: `paths`, or one percent-encoded or cut by an escape that
        // could spell it, is refused.
        let token_end = b[at..]
            .iter()
            .position(|c| matches!(c, b'/' | b'"' | b'\\'))
            .map_or(b.len(), |n| at + n);
        let token = &text[at..token_end];
        if token == "paths"
            || token.contains('%')
            || (b.get(token_end) == Some(&b'\\') && "paths".starts_with(token))
        {
            return None;
        }
    }
    Some(text)
}

/// The streaming half of [`normalize_streaming`], also used by the external-`$ref` reader
/// once it knows the document has none.
pub(crate) fn normalize_deferred(
    watch: &str,
    mut deferred: Deferred<'_>,
    shared: SharedEndpoints<'_>,
) -> Option<ToolSpec> {
    if !deferred.is_deferred() || deferred.is_array() {
        return None;
    }
    let mut root = std::mem::take(&mut deferred.root);
    let mut externals = BTreeMap::new();
    let mut spec = normalize_operations(watch, &root, &externals, Some(&deferred), shared).ok()?;
    drop(deferred);
    spec.definitions = collect_definitions(&mut root, &mut externals, &spec.endpoints).ok()?;
    Some(spec)
}

/// Normalizes an already parsed document (copying it).
pub fn normalize_value(watch: &str, root: &Value) -> Result<ToolSpec, NormalizeError> {
    normalize_owned(watch, root.clone())
}

/// Normalizes a parsed document, moving named definitions out of it instead of copying them.
/// External `$ref`s are kept as written and their targets are not collected.
pub fn normalize_owned(watch: &str, mut root: Value) -> Result<ToolSpec, NormalizeError> {
    let mut externals = BTreeMap::new();
    let mut spec =
        normalize_operations(watch, &root, &externals, None, SharedEndpoints::default())?;
    spec.definitions = collect_definitions(&mut root, &mut externals, &spec.endpoints)?;
    Ok(spec)
}

/// Normalizes a bundle: the root document, located at the absolute URI `root_uri`, plus the
/// documents its external `$ref`s reach (absolute URI → parsed document). Every `$ref` is
/// rewritten to a key relative to the root (`schemas/pet.yaml#/Pet`), so the result does not
/// depend on where the bundle was served from.
pub fn normalize_bundle(
    watch: &str,
    root_uri: &str,
    mut root: Value,
    externals: BTreeMap<String, Value>,
) -> Result<ToolSpec, NormalizeError> {
    let mut externals = super::openapi_refs::rewrite_bundle(root_uri, &mut root, externals)?;
    let mut spec =
        normalize_operations(watch, &root, &externals, None, SharedEndpoints::default())?;
    spec.definitions = collect_definitions(&mut root, &mut externals, &spec.endpoints)?;
    Ok(spec)
}

/// Resolves a reference key: `#/pointer` in the root, `doc#/pointer` in the external document
/// keyed `doc`.
fn lookup<'a>(
    root: &'a Value,
    externals: &'a BTreeMap<String, Value>,
    reference: &str,
) -> Option<&'a Value> {
    match reference.find('#')? {
        0 => resolve_pointer(root, reference),
        at => resolve_pointer(externals.get(&reference[..at])?, &reference[at..]),
    }
}

/// Mutable twin of [`lookup`].
fn lookup_mut<'a>(
    root: &'a mut Value,
    externals: &'a mut BTreeMap<String, Value>,
    reference: &str,
) -> Option<&'a mut Value> {
    match reference.find('#')? {
        0 => resolve_pointer_mut(root, reference),
        at => resolve_pointer_mut(externals.get_mut(&reference[..at])?, &reference[at..]),
    }
}

/// Everything but the definitions, read from the borrowed document.
fn normalize_operations(
    watch: &str,
    root: &Value,
    externals: &BTreeMap<String, Value>,
    deferred_paths: Option<&Deferred<'_>>,
    shared: SharedEndpoints<'_>,
) -> Result<ToolSpec, NormalizeError> {
    let Value::Object(doc) = root else {
        return Err(NormalizeError::NotOpenApi(
            "the document is not an object".into(),
        ));
    };
    let (version, version_text) = match (doc.get("openapi"), doc.get("swagger")) {
        (Some(Value::String(v)), _) if v.starts_with("3.0") || v.starts_with("3.1") => {
            (Version::OpenApi3, v.clone())
        }
        (Some(Value::String(v)), _) => return Err(NormalizeError::UnsupportedVersion(v.clone())),
        (_, Some(Value::String(v))) if v == "2.0" => (Version::Swagger2, v.clone()),
        (_, Some(Value::String(v))) => return Err(NormalizeError::UnsupportedVersion(v.clone())),
        _ => {
            return Err(NormalizeError::NotOpenApi(
                "no \"openapi\" or \"swagger\" version field".into(),
            ))
        }
    };
    let ctx = Context {
        root,
        externals,
        version,
    };
    let (namespace, name) = split_watch_name(watch);
    let info = doc.get("info").and_then(Value::as_object);
    let info_str = |key: &str| {
        info.and_then(|i| i.get(key))
            .and_then(Value::as_str)
            .map(String::from)
    };
    let license = info
        .and_then(|i| i.get("license"))
        .and_then(|l| l.get("identifier").or_else(|| l.get("name")))
        .and_then(Value::as_str)
        .map(String::from);

    let mut endpoints: Vec<Arc<EndpointSpec>> = Vec::new();
    // Duplicate identities are found as the document is read (the error names the first in
    // key order); read one path item at a time, they are found after sorting instead, and the
    // caller re-reads in full for the exact error (no set of every identity held meanwhile).
    let streaming = deferred_paths.is_some();
    let mut identities = BTreeSet::new();
    let mut path_item = |path: &str, item: &Value| -> Result<(), NormalizeError> {
        if !path.starts_with('/') {
            // Specification extensions (`x-...`) may sit beside paths.
            return Ok(());
        }
        let at = format!("paths.{path}");
        let item = ctx.resolve(item, &at)?;
        let item = item
            .as_object()
            .ok_or_else(|| invalid(&at, "path item must be an object"))?;
        for method in METHODS {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let endpoint = ctx.operation(path, method, item, operation)?;
            let callbacks = ctx.callbacks(&endpoint.name, operation)?;
            for e in std::iter::once(endpoint).chain(callbacks) {
                if !streaming && !identities.insert(e.identity()) {
                    return Err(NormalizeError::DuplicateEndpoint(e.identity()));
                }
                endpoints.push(shared.share(e));
            }
        }
        Ok(())
    };
    // Extensions beside the paths, when they are read one at a time.
    let mut beside_paths: Vec<(String, Value)> = Vec::new();
    if let Some(deferred) = deferred_paths {
        deferred.for_each_member(|path, item| {
            if path.starts_with('/') {
                path_item(&path, &item)
            } else {
                beside_paths.push((path, item));
                Ok(())
            }
        })?;
    } else if let Some(paths) = doc.get("paths") {
        let paths = paths
            .as_object()
            .ok_or_else(|| invalid("paths", "must be an object"))?;
        for (path, item) in paths {
            path_item(path, item)?;
        }
    }
    // OpenAPI 3.1 webhooks: requests the provider sends to the consumer.
    if let Some(Value::Object(webhooks)) = doc.get("webhooks") {
        for (name, item) in webhooks {
            for e in ctx.reversed_endpoints("WEBHOOK", name, item)? {
                if !streaming && !identities.insert(e.identity()) {
                    return Err(NormalizeError::DuplicateEndpoint(e.identity()));
                }
                endpoints.push(shared.share(e));
            }
        }
    }
    super::sort_by_identity(&mut endpoints);
    if streaming {
        if let Some(pair) = endpoints
            .windows(2)
            .find(|pair| pair[0].method == pair[1].method && pair[0].path == pair[1].path)
        {
            return Err(NormalizeError::DuplicateEndpoint(pair[0].identity()));
        }
    }
    endpoints.shrink_to_fit();
    let mut extensions = BTreeMap::new();
    let modelled: &[&str] = match version {
        Version::OpenApi3 => &[
            "openapi",
            "servers",
            "paths",
            "webhooks",
            "components",
            "security",
        ],
        Version::Swagger2 => &[
            "swagger",
            "host",
            "basePath",
            "schemes",
            "consumes",
            "produces",
            "paths",
            "definitions",
            "parameters",
            "responses",
            "securityDefinitions",
            "security",
        ],
    };
    keep_unmodelled(
        root,
        modelled,
        &["info", "tags", "externalDocs"],
        "",
        &mut extensions,
    );
    keep_server_text(doc.get("servers"), "servers", &mut extensions);
    if let Some(paths) = doc.get("paths") {
        // Extensions beside the paths.
        let not_paths: Vec<String> = paths
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .filter(|k| !k.starts_with('/'))
            .collect();
        for key in not_paths {
            extensions.insert(format!("paths.{key}"), paths[&key].clone());
        }
    }
    for (key, value) in beside_paths {
        extensions.insert(format!("paths.{key}"), value);
    }

    Ok(ToolSpec {
        directives: Default::default(),
        roots: Default::default(),
        capabilities: None,
        extensions,
        namespace,
        name,
        kind: Kind::Openapi,
        remote: Remote {
            variables: ctx.server_variables(doc),
            base_urls: ctx.base_urls(doc),
            transport: "http".into(),
        },
        evidence: Evidence {
            source_type: "openapi".into(),
            license,
        },
        metadata: Metadata {
            title: info_str("title"),
            version: info_str("version"),
            format: Some(match version {
                Version::Swagger2 => format!("swagger {version_text}"),
                Version::OpenApi3 => format!("openapi {version_text}"),
            }),
        },
        endpoints,
        definitions: BTreeMap::new(),
        instructions: None,
    })
}

fn invalid(at: &str, problem: &str) -> NormalizeError {
    NormalizeError::Invalid {
        at: at.to_string(),
        problem: problem.to_string(),
    }
}

/// `/pets/{petId}` → `/pets/{}`.
pub fn normalize_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("{}");
            }
            '}' => in_param = false,
            c if !in_param => out.push(c),
            _ => {}
        }
    }
    out
}

/// Resolves a local JSON pointer (`#/a/b~1c`) inside `root`.
pub fn resolve_pointer<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let mut current = root;
    for raw in pointer.strip_prefix('/')?.split('/') {
        let token = percent_decode(raw).replace("~1", "/").replace("~0", "~");
        current = match current {
            Value::Object(map) => map.get(&token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// Mutable twin of [`resolve_pointer`].
fn resolve_pointer_mut<'a>(root: &'a mut Value, reference: &str) -> Option<&'a mut Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let mut current = root;
    for raw in pointer.strip_prefix('/')?.split('/') {
        let token = percent_decode(raw).replace("~1", "/").replace("~0", "~");
        current = match current {
            Value::Object(map) => map.get_mut(&token)?,
            Value::Array(items) => items.get_mut(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

fn percent_decode(text: &str) -> String {
    if !text.contains('%') {
        return text.to_string();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

struct Context<'a> {
    root: &'a Value,
    externals: &'a BTreeMap<String, Value>,
    version: Version,
}

impl<'a> Context<'a> {
    /// Follows non-schema `$ref`s (parameters, responses, ...) to their target.
    fn resolve(&self, value: &'a Value, at: &str) -> Result<&'a Value, NormalizeError> {
        let mut current = value;
        for _ in 0..MAX_REF_HOPS {
            match current.get("$ref").and_then(Value::as_str) {
                Some(reference) => {
                    current = lookup(self.root, self.externals, reference).ok_or_else(|| {
                        NormalizeError::UnresolvedRef {
                            reference: reference.into(),
                            at: at.into(),
                        }
                    })?;
                }
                None => return Ok(current),
            }
        }
        Err(NormalizeError::RefLoop(at.to_string()))
    }

    fn base_urls(&self, doc: &Map<String, Value>) -> Vec<String> {
        let mut urls: Vec<String> = match self.version {
            Version::OpenApi3 => doc
                .get("servers")
                .and_then(Value::as_array)
                .map(|servers| servers.iter().filter_map(server_url).collect())
                .unwrap_or_default(),
            Version::Swagger2 => {
                let host = doc.get("host").and_then(Value::as_str).unwrap_or("");
                let base = doc.get("basePath").and_then(Value::as_str).unwrap_or("");
                let schemes: Vec<&str> = doc
                    .get("schemes")
                    .and_then(Value::as_array)
                    .map(|s| s.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if host.is_empty() {
                    vec![if base.is_empty() {
                        "/".to_string()
                    } else {
                        base.to_string()
                    }]
                } else if schemes.is_empty() {
                    vec![format!("//{host}{base}")]
                } else {
                    schemes
                        .iter()
                        .map(|s| format!("{s}://{host}{base}"))
                        .collect()
                }
            }
        };
        if urls.is_empty() {
            urls.push("/".into());
        }
        urls.sort();
        urls.dedup();
        urls
    }

    fn operation(
        &self,
        path: &str,
        method: &str,
        item: &Map<String, Value>,
        operation: &Value,
    ) -> Result<EndpointSpec, NormalizeError> {
        let at = format!("paths.{path}.{method}");
        let op = operation
            .as_object()
            .ok_or_else(|| invalid(&at, "operation must be an object"))?;
        let verb = method.to_ascii_uppercase();
        let mut kept = BTreeMap::new();
        let mut item_modelled = vec!["$ref", "servers", "parameters"];
        item_modelled.extend(METHODS);
        keep_unmodelled_map(item, &item_modelled, &[], "path", &mut kept);
        let mut op_modelled = vec![
            "operationId",
            "description",
            "parameters",
            "requestBody",
            "responses",
            "callbacks",
            "deprecated",
            "security",
            "servers",
            "consumes",
            "produces",
        ];
        if !op.contains_key("description") {
            // The summary is the description when there is none.
            op_modelled.push("summary");
        }
        keep_unmodelled(
            operation,
            &op_modelled,
            &["tags", "externalDocs"],
            "",
            &mut kept,
        );
        keep_server_text(item.get("servers"), "path.servers", &mut kept);
        keep_server_text(op.get("servers"), "servers", &mut kept);
        let operation_id = op
            .get("operationId")
            .and_then(Value::as_str)
            .map(String::from);
        let name = operation_id
            .clone()
            .unwrap_or_else(|| format!("{verb} {path}"));

        // Operation parameters override path-item parameters with the same (name, in).
        let mut raw_params: BTreeMap<(String, String), &Value> = BTreeMap::new();
        for source in [item.get("parameters"), op.get("parameters")]
            .into_iter()
            .flatten()
        {
            let list = source
                .as_array()
                .ok_or_else(|| invalid(&at, "parameters must be an array"))?;
            for p in list {
                let p = self.resolve(p, &at)?;
                let pname = p
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let location = p
                    .get("in")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if pname.is_empty() || location.is_empty() {
                    return Err(invalid(&at, "a parameter lacks \"name\" or \"in\""));
                }
                if self.version == Version::OpenApi3 {
                    let p_at = format!("parameters.{location}.{pname}");
                    keep_unmodelled(p, PARAMETER_KEYS, EXAMPLES, &p_at, &mut kept);
                    self.keep_media(p.get("content"), &p_at, &mut kept);
                }
                // Header names are case-insensitive.
                let key_name = if location == "header" {
                    pname.to_ascii_lowercase()
                } else {
                    pname
                };
                raw_params.insert((location, key_name), p);
            }
        }

        let mut parameters = Vec::new();
        let mut request_body = None;
        let mut form_fields: Vec<(String, bool, Value)> = Vec::new();
        let consumes = self.media_list(op, "consumes", "application/json");
        for ((location, pname), p) in &raw_params {
            match (self.version, location.as_str()) {
                (Version::Swagger2, "body") => {
                    let schema = normalize_schema(p.get("schema").unwrap_or(&json!({})));
                    request_body = Some(RequestBody {
                        encoding: Default::default(),
                        required: p.get("required").and_then(Value::as_bool).unwrap_or(false),
                        description: p
                            .get("description")
                            .and_then(Value::as_str)
                            .map(String::from),
                        content: consumes
                            .iter()
                            .map(|m| (m.clone(), schema.clone()))
                            .collect(),
                    });
                }
                (Version::Swagger2, "formData") => {
                    form_fields.push((
                        pname.clone(),
                        p.get("required").and_then(Value::as_bool).unwrap_or(false),
                        swagger_param_schema(p),
                    ));
                }
                _ => parameters.push(self.parameter(location, pname, p)),
            }
        }
        if !form_fields.is_empty() {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (field, is_required, schema) in form_fields {
                if is_required {
                    required.push(Value::String(field.clone()));
                }
                properties.insert(field, schema);
            }
            let schema = normalize_schema(&json!({
                "type": "object", "properties": properties, "required": required
            }));
            let media: Vec<String> = consumes
                .iter()
                .filter(|m| m.contains("form"))
                .cloned()
                .collect();
            let media = if media.is_empty() {
                vec!["application/x-www-form-urlencoded".to_string()]
            } else {
                media
            };
            request_body = Some(RequestBody {
                encoding: Default::default(),
                required: !required.is_empty(),
                description: None,
                content: media.into_iter().map(|m| (m, schema.clone())).collect(),
            });
        }
        if let Some(body) = op.get("requestBody") {
            let body = self.resolve(body, &at)?;
            keep_unmodelled(
                body,
                &["description", "content", "required"],
                &[],
                "requestBody",
                &mut kept,
            );
            self.keep_media(body.get("content"), "requestBody", &mut kept);
            request_body = Some(RequestBody {
                encoding: self.encoding(body.get("content"), &at)?.into(),
                required: body
                    .get("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                description: body
                    .get("description")
                    .and_then(Value::as_str)
                    .map(String::from),
                content: self.content(body.get("content"), &at)?.into(),
            });
        }

        let mut responses: BTreeMap<CompactString, ResponseSpec> = BTreeMap::new();
        if let Some(resps) = op.get("responses") {
            let resps = resps
                .as_object()
                .ok_or_else(|| invalid(&at, "responses must be an object"))?;
            let produces = self.media_list(op, "produces", "application/json");
            for (status, response) in resps {
                if status.starts_with("x-") {
                    kept.insert(format!("responses.{status}"), response.clone());
                    continue;
                }
                let response = self.resolve(response, &at)?;
                let r_at = format!("responses.{}", status.to_ascii_uppercase());
                let modelled: &[&str] = match self.version {
                    Version::OpenApi3 => &["description", "headers", "content", "links"],
                    Version::Swagger2 => &["description", "headers", "schema"],
                };
                keep_unmodelled(response, modelled, EXAMPLES, &r_at, &mut kept);
                if self.version == Version::OpenApi3 {
                    self.keep_media(response.get("content"), &r_at, &mut kept);
                }
                let content = match self.version {
                    Version::OpenApi3 => self.content(response.get("content"), &at)?,
                    Version::Swagger2 => match response.get("schema") {
                        Some(schema) => {
                            let schema = normalize_schema(schema);
                            produces
                                .iter()
                                .map(|m| (m.clone(), schema.clone()))
                                .collect()
                        }
                        None => BTreeMap::new(),
                    },
                };
                let mut headers = BTreeMap::new();
                let mut header_facts = BTreeMap::new();
                if let Some(Value::Object(hs)) = response.get("headers") {
                    for (hname, header) in hs {
                        let header = self.resolve(header, &at)?;
                        let h_at = format!("{r_at}.headers.{}", hname.to_ascii_lowercase());
                        match self.version {
                            Version::OpenApi3 => {
                                keep_unmodelled(header, HEADER_KEYS, EXAMPLES, &h_at, &mut kept)
                            }
                            // Every other Swagger 2.0 header key is its schema.
                            Version::Swagger2 => {
                                if let Some(d) = header.get("description") {
                                    kept.insert(format!("{h_at}.description"), d.clone());
                                }
                            }
                        }
                        let (schema, facts) = self.header(header);
                        if !facts.is_empty() {
                            header_facts.insert(hname.to_ascii_lowercase(), SmallMap::from(facts));
                        }
                        headers.insert(hname.to_ascii_lowercase(), schema);
                    }
                }
                let mut links = BTreeMap::new();
                if let Some(Value::Object(ls)) = response.get("links") {
                    for (lname, link) in ls {
                        links.insert(lname.clone(), self.resolve(link, &at)?.clone());
                    }
                }
                responses.insert(
                    status.to_ascii_uppercase().into(),
                    ResponseSpec {
                        header_facts: header_facts.into(),
                        links: links.into(),
                        description: response
                            .get("description")
                            .and_then(Value::as_str)
                            .map(CompactString::from),
                        content: content.into(),
                        headers: headers.into(),
                    },
                );
            }
        }

        let security_source = op.get("security").or_else(|| self.root.get("security"));
        let security = security_requirements(security_source, self.security_schemes());
        let description = op
            .get("description")
            .or_else(|| op.get("summary"))
            .and_then(Value::as_str)
            .map(String::from);

        Ok(EndpointSpec {
            extensions: kept.into(),
            servers: self.servers_override(item, op),
            name: name.into(),
            method: verb.clone().into(),
            path: normalize_path(path).into(),
            path_template: path.into(),
            operation_id: operation_id.map(Into::into),
            description: description.map(Into::into),
            deprecated: op
                .get("deprecated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            aliases: Vec::new(),
            parameters,
            request_body: request_body.map(Box::new),
            responses: responses.into(),
            security,
            input_schema: None,
            output_schema: None,
            read_only: matches!(verb.as_str(), "GET" | "HEAD" | "OPTIONS" | "TRACE"),
            destructive: verb == "DELETE",
            idempotent: matches!(
                verb.as_str(),
                "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
            ),
            open_world: true,
            meta: None,
            title: None,
        })
    }

    /// The callbacks of an operation, as endpoints the provider calls.
    fn callbacks(
        &self,
        owner: &str,
        operation: &Value,
    ) -> Result<Vec<EndpointSpec>, NormalizeError> {
        let mut out = Vec::new();
        if let Some(Value::Object(callbacks)) = operation.get("callbacks") {
            for (name, callback) in callbacks {
                let at = format!("{owner}.callbacks.{name}");
                let callback = self.resolve(callback, &at)?;
                let Some(expressions) = callback.as_object() else {
                    return Err(invalid(&at, "callback must be an object"));
                };
                for (expression, item) in expressions {
                    out.extend(self.reversed_endpoints(
                        "CALLBACK",
                        &format!("{owner}.{name} {expression}"),
                        item,
                    )?);
                }
            }
        }
        Ok(out)
    }

    /// Operations of a path item the provider sends to the consumer (webhooks, callbacks):
    /// method `WEBHOOK`/`CALLBACK`, identity by `label` and verb. They cause no side effect at
    /// the provider, so they count as read-only.
    fn reversed_endpoints(
        &self,
        kind: &str,
        label: &str,
        item: &Value,
    ) -> Result<Vec<EndpointSpec>, NormalizeError> {
        let at = format!("{kind} {label}");
        let item = self.resolve(item, &at)?;
        let Some(item_map) = item.as_object() else {
            return Err(invalid(&at, "path item must be an object"));
        };
        let mut out = Vec::new();
        for method in METHODS {
            let Some(operation) = item_map.get(method) else {
                continue;
            };
            let mut e = self.operation(label, method, item_map, operation)?;
            let verb = method.to_ascii_uppercase();
            e.path = format!("{label} {verb}").into();
            e.path_template = e.path.clone();
            if e.operation_id.is_none() {
                e.name = format!("{kind} {label} {verb}").into();
            }
            e.method = kind.to_string().into();
            e.read_only = true;
            e.destructive = false;
            e.idempotent = true;
            out.push(e);
        }
        Ok(out)
    }

    /// The unmodelled keywords of each media type object of a `content` map (the request
    /// body's `encoding` is modelled, a response's is not).
    fn keep_media(
        &self,
        content: Option<&Value>,
        prefix: &str,
        kept: &mut BTreeMap<String, Value>,
    ) {
        let Some(Value::Object(content)) = content else {
            return;
        };
        let modelled: &[&str] = if prefix == "requestBody" {
            &["schema", "encoding"]
        } else {
            &["schema"]
        };
        for (media, m) in content {
            let m_at = format!("{prefix}.content.{}", media.to_ascii_lowercase());
            keep_unmodelled(m, modelled, EXAMPLES, &m_at, kept);
        }
    }

    /// A response header's schema and the facts of the header object around it (`required`,
    /// `deprecated`, `style`, `explode`, the `content` media type), as stated.
    fn header(&self, header: &Value) -> (Value, BTreeMap<String, Value>) {
        let mut facts = BTreeMap::new();
        if self.version == Version::Swagger2 {
            return (swagger_param_schema(header), facts);
        }
        for key in ["required", "deprecated", "style", "explode"] {
            if let Some(v) = header.get(key) {
                facts.insert(key.to_string(), v.clone());
            }
        }
        let schema = match (
            header.get("schema"),
            header.get("content").and_then(Value::as_object),
        ) {
            (Some(s), _) => normalize_schema(s),
            (None, Some(content)) => match content.iter().next() {
                Some((media, m)) => {
                    facts.insert("content".into(), Value::String(media.to_ascii_lowercase()));
                    normalize_schema(m.get("schema").unwrap_or(&json!({})))
                }
                None => json!({}),
            },
            (None, None) => json!({}),
        };
        (schema, facts)
    }

    /// Operation- or path-level `servers` (3.x): where this endpoint's calls go when they
    /// override the document's. Empty when neither states any.
    fn servers_override(&self, item: &Map<String, Value>, op: &Map<String, Value>) -> Vec<Value> {
        if self.version != Version::OpenApi3 {
            return Vec::new();
        }
        let Some(Value::Array(list)) = op.get("servers").or_else(|| item.get("servers")) else {
            return Vec::new();
        };
        let mut out: Vec<Value> = list
            .iter()
            .filter_map(|server| {
                let mut entry = Map::new();
                entry.insert("url".into(), Value::String(server_url(server)?));
                if let Some(vars) = server_variables(server) {
                    entry.insert("variables".into(), vars);
                }
                Some(Value::Object(entry))
            })
            .collect();
        out.sort_by_key(crate::core::json::to_canonical_string);
        out.dedup();
        out
    }

    /// The document's server variables (3.x): server URL (defaults substituted, as in
    /// `base_urls`) → its variables.
    fn server_variables(&self, doc: &Map<String, Value>) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        if self.version != Version::OpenApi3 {
            return out;
        }
        for server in doc
            .get("servers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(url), Some(vars)) = (server_url(server), server_variables(server)) {
                out.insert(url, vars);
            }
        }
        out
    }

    /// The Encoding objects of a request body's media types (multipart and form bodies):
    /// media type → property → encoding, its headers resolved and their schemas normalized.
    fn encoding(
        &self,
        content: Option<&Value>,
        at: &str,
    ) -> Result<BTreeMap<String, Value>, NormalizeError> {
        let mut out = BTreeMap::new();
        let Some(Value::Object(content)) = content else {
            return Ok(out);
        };
        for (media, m) in content {
            let Some(Value::Object(encoding)) = m.get("encoding") else {
                continue;
            };
            let mut props = Map::new();
            for (property, e) in encoding {
                let mut e = e.clone();
                if let Some(Value::Object(headers)) = e.get_mut("headers") {
                    for header in headers.values_mut() {
                        let (schema, facts) = self.header(self.resolve(header, at)?);
                        let mut kept = Map::new();
                        kept.insert("schema".into(), schema);
                        kept.extend(facts);
                        *header = Value::Object(kept);
                    }
                }
                props.insert(property.clone(), e);
            }
            out.insert(media.to_ascii_lowercase(), Value::Object(props));
        }
        Ok(out)
    }

    fn parameter(&self, location: &str, name: &str, p: &Value) -> ParameterSpec {
        let mut style = BTreeMap::new();
        let schema = match self.version {
            Version::OpenApi3 => {
                for key in ["style", "explode", "allowReserved", "allowEmptyValue"] {
                    if let Some(v) = p.get(key) {
                        style.insert(key.to_string(), v.clone());
                    }
                }
                match (p.get("schema"), p.get("content").and_then(Value::as_object)) {
                    (Some(schema), _) => normalize_schema(schema),
                    (None, Some(content)) => match content.iter().next() {
                        Some((media, m)) => {
                            style.insert("content".into(), Value::String(media.clone()));
                            normalize_schema(m.get("schema").unwrap_or(&json!({})))
                        }
                        None => json!({}),
                    },
                    (None, None) => json!({}),
                }
            }
            Version::Swagger2 => {
                for key in ["collectionFormat", "allowEmptyValue"] {
                    if let Some(v) = p.get(key) {
                        style.insert(key.to_string(), v.clone());
                    }
                }
                swagger_param_schema(p)
            }
        };
        ParameterSpec {
            name: name.to_string(),
            location: location.to_string(),
            required: location == "path"
                || p.get("required").and_then(Value::as_bool).unwrap_or(false),
            description: p
                .get("description")
                .and_then(Value::as_str)
                .map(String::from),
            deprecated: p
                .get("deprecated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            style: style.into(),
            schema,
        }
    }

    fn content(
        &self,
        content: Option<&Value>,
        at: &str,
    ) -> Result<BTreeMap<String, Value>, NormalizeError> {
        let mut out = BTreeMap::new();
        if let Some(content) = content {
            let content = content
                .as_object()
                .ok_or_else(|| invalid(at, "content must be an object"))?;
            for (media, m) in content {
                let schema = m
                    .get("schema")
                    .map(normalize_schema)
                    .unwrap_or_else(|| json!({}));
                out.insert(media.to_ascii_lowercase(), schema);
            }
        }
        Ok(out)
    }

    /// `components.securitySchemes` (3.x) or `securityDefinitions` (Swagger 2.0).
    fn security_schemes(&self) -> Option<&'a Map<String, Value>> {
        match self.version {
            Version::OpenApi3 => self
                .root
                .get("components")?
                .get("securitySchemes")?
                .as_object(),
            Version::Swagger2 => self.root.get("securityDefinitions")?.as_object(),
        }
    }

    /// Swagger `consumes`/`produces` of the operation, else of the document, else `default`.
    fn media_list(&self, op: &Map<String, Value>, key: &str, default: &str) -> Vec<String> {
        let list = op
            .get(key)
            .or_else(|| self.root.get(key))
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_ascii_lowercase)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let mut list = if list.is_empty() {
            vec![default.to_string()]
        } else {
            list
        };
        list.sort();
        list.dedup();
        list
    }
}

/// Every definition reachable from the endpoints, normalized, keyed by JSON pointer. Targets
/// are moved out of the document unless another reachable pointer lies inside them.
fn collect_definitions(
    root: &mut Value,
    externals: &mut BTreeMap<String, Value>,
    endpoints: &[Arc<EndpointSpec>],
) -> Result<BTreeMap<String, Value>, NormalizeError> {
    // 1. Discover every reachable local pointer, reading the document.
    let mut reachable: BTreeMap<String, String> = BTreeMap::new();
    let mut pending: Vec<(String, String)> = Vec::new();
    for endpoint in endpoints {
        for schema in endpoint.schemas() {
            collect_refs(schema, &endpoint.name, &mut pending);
        }
    }
    while let Some((reference, at)) = pending.pop() {
        // External references outside the bundle are kept as written and not collected.
        let in_bundle = match reference.find('#') {
            Some(0) => true,
            Some(at) => externals.contains_key(&reference[..at]),
            None => false,
        };
        if !in_bundle || reachable.contains_key(&reference) {
            continue;
        }
        let target =
            lookup(root, externals, &reference).ok_or_else(|| NormalizeError::UnresolvedRef {
                reference: reference.clone(),
                at: at.clone(),
            })?;
        collect_refs(target, &reference, &mut pending);
        reachable.insert(reference, at);
    }
    // 2. Copy the targets other pointers reach into, then move the rest out.
    let pointers: Vec<String> = reachable.into_keys().collect();
    // `pointers` is sorted, so the first pointer at or after `outer/` tells.
    let encloses = |outer: &str| {
        let prefix = format!("{outer}/");
        let at = pointers.partition_point(|p| p.as_str() < prefix.as_str());
        pointers.get(at).is_some_and(|p| p.starts_with(&prefix))
    };
    let (copied, moved): (Vec<&String>, Vec<&String>) = pointers
        .iter()
        .partition(|p| encloses(p) || p.ends_with('#'));
    let mut definitions = BTreeMap::new();
    for reference in copied {
        if let Some(target) = lookup(root, externals, reference) {
            definitions.insert(reference.clone(), normalize_schema(target));
        }
    }
    for reference in moved {
        if let Some(target) = lookup_mut(root, externals, reference) {
            definitions.insert(
                reference.clone(),
                normalize_schema_owned(std::mem::take(target)),
            );
        }
    }
    Ok(definitions)
}

fn collect_refs(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push((r.clone(), at.to_string()));
            }
            for v in map.values() {
                collect_refs(v, at, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, at, out)),
        _ => {}
    }
}

/// OpenAPI 3 server object → URL with variables replaced by their defaults.
fn server_url(server: &Value) -> Option<String> {
    let mut url = server.get("url")?.as_str()?.to_string();
    if let Some(Value::Object(vars)) = server.get("variables") {
        for (name, var) in vars {
            if let Some(default) = var.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("{{{name}}}"), default);
            }
        }
    }
    Some(url)
}

/// Parameter keywords with a place in the model (3.x).
const PARAMETER_KEYS: &[&str] = &[
    "name",
    "in",
    "description",
    "required",
    "deprecated",
    "allowEmptyValue",
    "style",
    "explode",
    "allowReserved",
    "schema",
    "content",
];
/// Header keywords with a place in the model (3.x); its description is kept (documentation).
const HEADER_KEYS: &[&str] = &[
    "required",
    "deprecated",
    "style",
    "explode",
    "schema",
    "content",
];

/// A server's variables as the contract keeps them: name → `{"default", "enum"?}` (enum
/// values sorted; the description is descriptive). `None` without variables.
pub(crate) fn server_variables(server: &Value) -> Option<Value> {
    let vars = server.get("variables")?.as_object()?;
    let mut out = Map::new();
    for (name, var) in vars {
        let mut kept = Map::new();
        if let Some(d) = var.get("default") {
            kept.insert("default".into(), d.clone());
        }
        if let Some(Value::Array(values)) = var.get("enum") {
            let mut values = values.clone();
            values.sort_by_key(crate::core::json::to_canonical_string);
            kept.insert("enum".into(), Value::Array(values));
        }
        out.insert(name.clone(), Value::Object(kept));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// A Swagger 2.0 non-body parameter or header carries its schema inline.
fn swagger_param_schema(p: &Value) -> Value {
    const NOT_SCHEMA: &[&str] = &[
        "name",
        "in",
        "required",
        "description",
        "collectionFormat",
        "allowEmptyValue",
        "schema",
    ];
    let schema: Map<String, Value> = p
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !NOT_SCHEMA.contains(&k.as_str()) && !k.starts_with("x-example"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    normalize_schema(&Value::Object(schema))
}

/// Security requirements as sorted alternatives of sorted terms `name`, `name[scope,...]`, each
/// followed by ` ` and the canonical JSON of the scheme's definition (descriptions dropped), so
/// a changed scheme (say bearer → API key in a query) changes the requirement.
fn security_requirements(
    source: Option<&Value>,
    schemes: Option<&Map<String, Value>>,
) -> Vec<Vec<String>> {
    let Some(Value::Array(alternatives)) = source else {
        return Vec::new();
    };
    let mut out: Vec<Vec<String>> = alternatives
        .iter()
        .filter_map(Value::as_object)
        .map(|requirement| {
            let mut terms: Vec<String> = requirement
                .iter()
                .map(|(scheme, scopes)| {
                    let mut scopes: Vec<&str> = scopes
                        .as_array()
                        .map(|s| s.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    scopes.sort_unstable();
                    let mut term = if scopes.is_empty() {
                        scheme.clone()
                    } else {
                        format!("{scheme}[{}]", scopes.join(","))
                    };
                    if let Some(Value::Object(definition)) = schemes.and_then(|s| s.get(scheme)) {
                        let contract: Map<String, Value> = definition
                            .iter()
                            .filter(|(k, _)| k.as_str() != "description" && !k.starts_with("x-"))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        term.push(' ');
                        term.push_str(&crate::core::json::to_canonical_string(&Value::Object(
                            contract,
                        )));
                    }
                    term
                })
                .collect();
            terms.sort();
            terms
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalize_parameter_names() {
        assert_eq!(
            normalize_path("/pets/{petId}/toys/{toy_id}"),
            "/pets/{}/toys/{}"
        );
    }

    #[test]
    fn pointers_resolve_with_escapes() {
        let root = json!({"paths": {"/a/b": {"get": 1}}, "c%20d": 2});
        assert_eq!(
            resolve_pointer(&root, "#/paths/~1a~1b/get"),
            Some(&json!(1))
        );
        assert_eq!(resolve_pointer(&root, "#/c%2520d"), Some(&json!(2)));
        assert_eq!(resolve_pointer(&root, "#/nothing"), None);
    }

    #[test]
    fn minimal_documents() {
        let spec = normalize(
            "ns.pets",
            br##"{"openapi":"3.0.3","info":{"title":"t","version":"1"},"servers":[{"url":"https://{h}/v1","variables":{"h":{"default":"api.example.com"}}}],
            "paths":{"/pets/{id}":{"parameters":[{"name":"id","in":"path","schema":{"type":"string"}}],
            "get":{"operationId":"getPet","responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Pet"}}}}}}}},
            "components":{"schemas":{"Pet":{"type":"object","properties":{"friend":{"$ref":"#/components/schemas/Pet"}}}}}}"##,
        )
        .unwrap();
        assert_eq!(spec.namespace, "ns");
        assert_eq!(spec.remote.base_urls, vec!["https://api.example.com/v1"]);
        assert_eq!(spec.endpoints.len(), 1);
        let e = &spec.endpoints[0];
        assert_eq!(
            (e.name.as_str(), e.identity().as_str()),
            ("getPet", "GET /pets/{}")
        );
        assert!(e.parameters[0].required);
        assert!(spec.definitions.contains_key("#/components/schemas/Pet"));

        let err = normalize("a.b", br##"{"openapi":"3.0.0","paths":{"/x":{"get":{"responses":{"200":{"$ref":"#/components/responses/Nope"}}}}}}"##)
            .unwrap_err();
        assert!(
            err.to_string().contains("#/components/responses/Nope"),
            "{err}"
        );
        assert!(matches!(
            normalize("a.b", b"{\"info\":{}}"),
            Err(NormalizeError::NotOpenApi(_))
        ));
        assert!(matches!(
            normalize("a.b", b"{\"openapi\":\"4.0\"}"),
            Err(NormalizeError::UnsupportedVersion(_))
        ));
    }
}
