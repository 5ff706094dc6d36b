//! OpenRPC 1.x (JSON or YAML) → ToolSpec.
//!
//! - Every method is an endpoint `CALL <method name>` (identity), named by the method name.
//! - Params become `parameters` (location `param`, in document order) and, together, an
//!   object `input_schema` (properties by param name, `required` list). JSON-RPC params are
//!   positional unless `paramStructure` is `by-name`, so each positional param records its
//!   index as `style.position`; a stated `paramStructure` is recorded as
//!   `style.paramStructure` on every param. The classifier turns a moved position into
//!   `request-parameter-reordered` and a non-trailing optional addition into
//!   `request-parameter-added-not-trailing` (docs/design.md: "only a trailing optional parameter
//!   may be added").
//! - `result` → `output_schema`; `errors` → `responses` keyed `error <code>` (the message is
//!   the description, `data` the schema).
//! - Content descriptors and errors given by `$ref` (`#/components/contentDescriptors/...`,
//!   `#/components/errors/...`) are resolved in place; schema `$ref`s stay named and the
//!   definitions they reach are collected by JSON pointer, as for OpenAPI.
//! - `servers` (document and method level) are the execution target, their `variables`
//!   (`default`, `enum`) included; without any, the spec's default `localhost:8545`.
//! - `result.required: true` is `meta.resultRequired` (the result is never null).
//! - `paramStructure` is judged as the method's (`either` is the loosest), not per param.
//! - Side effects are unknown (the format states none): `read_only` false, `destructive`
//!   false, `idempotent` false, `open_world` true, so a new method is `endpoint-added-write`.

use super::openapi::{keep_server_text_with, keep_unmodelled, resolve_pointer};
use super::schema::normalize_schema;
use super::{split_watch_name, NormalizeError};
use crate::core::json::parse_document;
use crate::core::model::{
    CompactString, EndpointSpec, Evidence, Kind, Metadata, ParameterSpec, Remote, ResponseSpec,
    ToolSpec,
};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

const MAX_REF_HOPS: usize = 32;

/// The descriptive allow-list of an OpenRPC document (`docs/allow-list.md`). Every other
/// keyword the model has no place for is kept verbatim (deny by default): at the document
/// level in `ToolSpec::extensions`, in a method or content descriptor in the endpoint's
/// `extensions` (`x-…` keys are `extension-changed`, others `unclassified-change`).
pub const DESCRIPTIVE: &[(&str, &str)] = &[
    (
        "info",
        "descriptive metadata (`metadata.title`, `metadata.version`; the license is evidence)",
    ),
    ("methods[].tags", "documentation grouping"),
    (
        "openrpc (beyond `1.`)",
        "the minor and patch version are descriptive (`metadata.format`)",
    ),
    (
        "externalDocs, methods[].externalDocs",
        "links to documentation",
    ),
    (
        "methods[].examples, examples of content descriptors",
        "sample calls, not constraints",
    ),
    (
        "components (entries no method references)",
        "unreachable: outside every method's contract",
    ),
    (
        "(method order)",
        "methods are matched by name; param order is `style.position`",
    ),
];
const METHOD_KEYS: &[&str] = &[
    "name",
    "description",
    "params",
    "result",
    "errors",
    "paramStructure",
    "deprecated",
    "servers",
];
const DESCRIPTOR_KEYS: &[&str] = &[
    "name",
    "summary",
    "description",
    "required",
    "schema",
    "deprecated",
];

/// The descriptive text of servers (`name`, `summary`, `description`, variables'
/// `description`), kept as documentation at `prefix.<url>.<key>.description`.
fn keep_server_text(servers: Option<&Value>, prefix: &str, out: &mut BTreeMap<String, Value>) {
    let own = [
        ("name", "name.description"),
        ("summary", "summary.description"),
        ("description", "description.description"),
    ];
    keep_server_text_with(servers, prefix, server_url, &own, out);
}

/// The server the OpenRPC specification assumes when `servers` is absent or empty.
const DEFAULT_SERVER: &str = "localhost:8545";

/// Normalizes an OpenRPC document for the watch named `watch` (`namespace.name`).
pub fn normalize(watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    let root = parse_document(bytes)?;
    normalize_value(watch, &root)
}

fn invalid(at: &str, problem: impl Into<String>) -> NormalizeError {
    NormalizeError::Invalid {
        at: at.to_string(),
        problem: problem.into(),
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(String::from)
}

pub fn normalize_value(watch: &str, root: &Value) -> Result<ToolSpec, NormalizeError> {
    let Value::Object(doc) = root else {
        return Err(invalid(
            "document",
            "not an OpenRPC document (not an object)",
        ));
    };
    let version = match doc.get("openrpc") {
        Some(Value::String(v)) => v.clone(),
        _ => {
            return Err(invalid(
                "document",
                "not an OpenRPC document (no \"openrpc\" version string)",
            ))
        }
    };
    if !version.starts_with("1.") {
        return Err(NormalizeError::UnsupportedVersion(format!(
            "openrpc {version}"
        )));
    }
    let methods = match doc.get("methods") {
        Some(Value::Array(m)) => m,
        Some(_) => return Err(invalid("methods", "must be an array")),
        None => return Err(invalid("document", "no \"methods\" array")),
    };
    let (namespace, name) = split_watch_name(watch);
    let info = doc.get("info");
    let license = info
        .and_then(|i| i.get("license"))
        .and_then(|l| l.get("identifier").or_else(|| l.get("name")))
        .and_then(Value::as_str)
        .map(String::from);

    let mut base_urls: BTreeSet<String> = server_urls(doc.get("servers"));
    let mut variables = server_variables(doc.get("servers"));
    let mut endpoints = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, method) in methods.iter().enumerate() {
        let at = format!("methods.{i}");
        let method = resolve(root, method, &at)?;
        let endpoint = endpoint(root, method, &at)?;
        if !seen.insert(endpoint.identity()) {
            return Err(NormalizeError::DuplicateEndpoint(endpoint.identity()));
        }
        base_urls.extend(server_urls(method.get("servers")));
        variables.extend(server_variables(method.get("servers")));
        endpoints.push(endpoint);
    }
    crate::core::normalize::sort_by_identity(&mut endpoints);
    if base_urls.is_empty() {
        base_urls.insert(DEFAULT_SERVER.to_string());
    }
    let definitions = collect_definitions(root, &endpoints)?;
    let mut extensions = BTreeMap::new();
    keep_unmodelled(
        root,
        &["openrpc", "servers", "methods", "components"],
        &["info", "externalDocs"],
        "",
        &mut extensions,
    );
    keep_server_text(doc.get("servers"), "servers", &mut extensions);
    for method in methods {
        let method = resolve(root, method, "methods")?;
        if let Some(name) = method.get("name").and_then(Value::as_str) {
            let prefix = format!("methods.{name}.servers");
            keep_server_text(method.get("servers"), &prefix, &mut extensions);
        }
    }
    Ok(ToolSpec {
        directives: Default::default(),
        roots: Default::default(),
        capabilities: None,
        extensions,
        namespace,
        name,
        kind: Kind::Openrpc,
        remote: Remote {
            variables,
            base_urls: base_urls.into_iter().collect(),
            transport: "json-rpc".into(),
        },
        evidence: Evidence {
            source_type: "openrpc".into(),
            license,
        },
        metadata: Metadata {
            title: info.and_then(|i| str_field(i, "title")),
            version: info.and_then(|i| str_field(i, "version")),
            format: Some(format!("openrpc {version}")),
        },
        endpoints: endpoints.into_iter().map(std::sync::Arc::new).collect(),
        definitions,
        instructions: None,
    })
}

/// Follows `$ref`s of non-schema objects (methods, content descriptors, errors).
fn resolve<'a>(root: &'a Value, value: &'a Value, at: &str) -> Result<&'a Value, NormalizeError> {
    let mut current = value;
    for _ in 0..MAX_REF_HOPS {
        match current.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                current = resolve_pointer(root, reference).ok_or_else(|| {
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

fn server_urls(servers: Option<&Value>) -> BTreeSet<String> {
    let Some(Value::Array(servers)) = servers else {
        return BTreeSet::new();
    };
    servers.iter().filter_map(server_url).collect()
}

/// A server's URL with its variables' defaults substituted (`${name}` or `{name}`).
fn server_url(server: &Value) -> Option<String> {
    let mut url = server.get("url")?.as_str()?.to_string();
    if let Some(Value::Object(vars)) = server.get("variables") {
        for (name, var) in vars {
            if let Some(default) = var.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("${{{name}}}"), default);
                url = url.replace(&format!("{{{name}}}"), default);
            }
        }
    }
    Some(url)
}

/// Server URL → its variables (`default`, `enum`), for the servers that have any.
fn server_variables(servers: Option<&Value>) -> BTreeMap<String, Value> {
    let Some(Value::Array(servers)) = servers else {
        return BTreeMap::new();
    };
    servers
        .iter()
        .filter_map(|s| Some((server_url(s)?, super::openapi::server_variables(s)?)))
        .collect()
}

fn endpoint(root: &Value, method: &Value, at: &str) -> Result<EndpointSpec, NormalizeError> {
    let m = method
        .as_object()
        .ok_or_else(|| invalid(at, "method must be an object"))?;
    let name = m
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| invalid(at, "method has no \"name\""))?
        .to_string();
    let at = format!("methods.{name}");
    let mut kept = BTreeMap::new();
    keep_unmodelled(
        method,
        METHOD_KEYS,
        &["tags", "externalDocs", "examples"],
        "",
        &mut kept,
    );
    if !m.get("description").is_some_and(Value::is_string) {
        // The summary is the description when there is none.
        kept.remove("summary");
    }
    let structure = match m.get("paramStructure") {
        None => None,
        Some(Value::String(s)) if matches!(s.as_str(), "by-name" | "by-position" | "either") => {
            Some(s.clone())
        }
        Some(other) => {
            return Err(invalid(
                &at,
                format!("paramStructure {other} is not by-name, by-position or either"),
            ))
        }
    };
    let positional = structure.as_deref() != Some("by-name");

    let params = match m.get("params") {
        Some(Value::Array(p)) => p.as_slice(),
        Some(_) => return Err(invalid(&at, "params must be an array")),
        None => &[],
    };
    let mut parameters = Vec::new();
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut names = BTreeSet::new();
    for (i, param) in params.iter().enumerate() {
        let p_at = format!("{at}.params.{i}");
        let p = resolve(root, param, &p_at)?;
        if let Some(n) = p.get("name").and_then(Value::as_str) {
            keep_unmodelled(
                p,
                DESCRIPTOR_KEYS,
                &["examples"],
                &format!("params.{n}"),
                &mut kept,
            );
        }
        let pname = p
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(&p_at, "content descriptor has no \"name\""))?
            .to_string();
        if !names.insert(pname.clone()) {
            return Err(invalid(&p_at, format!("duplicate param name {pname:?}")));
        }
        let is_required = p.get("required").and_then(Value::as_bool).unwrap_or(false);
        let schema = normalize_schema(p.get("schema").unwrap_or(&json!({})));
        let mut style = BTreeMap::new();
        if positional {
            style.insert("position".to_string(), json!(i));
        }
        if let Some(s) = &structure {
            style.insert("paramStructure".to_string(), json!(s));
        }
        if is_required {
            required.push(Value::String(pname.clone()));
        }
        properties.insert(pname.clone(), schema.clone());
        parameters.push(ParameterSpec {
            deprecated: p
                .get("deprecated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            description: str_field(p, "description").or_else(|| str_field(p, "summary")),
            location: "param".into(),
            name: pname,
            required: is_required,
            schema,
            style: style.into(),
        });
    }
    // The model keeps parameters sorted by (location, name); the order is in `style.position`.
    parameters.sort_by(|a, b| a.name.cmp(&b.name));
    let input_schema = normalize_schema(&json!({
        "type": "object", "properties": properties, "required": required
    }));

    let mut meta = Map::new();
    let output_schema = match m.get("result") {
        Some(result) => {
            let r = resolve(root, result, &format!("{at}.result"))?;
            keep_unmodelled(r, &DESCRIPTOR_KEYS[1..], &["examples"], "result", &mut kept);
            if r.get("required") == Some(&Value::Bool(true)) {
                meta.insert("resultRequired".into(), json!(true));
            }
            Some(normalize_schema(r.get("schema").unwrap_or(&json!({}))))
        }
        None => None,
    };

    let mut responses: BTreeMap<CompactString, ResponseSpec> = BTreeMap::new();
    if let Some(errors) = m.get("errors") {
        let errors = errors
            .as_array()
            .ok_or_else(|| invalid(&at, "errors must be an array"))?;
        for (i, error) in errors.iter().enumerate() {
            let e_at = format!("{at}.errors.{i}");
            let e = resolve(root, error, &e_at)?;
            let code = match e.get("code") {
                Some(Value::Number(n)) => n.to_string(),
                _ => return Err(invalid(&e_at, "error has no numeric \"code\"")),
            };
            let mut content = BTreeMap::new();
            if let Some(data) = e.get("data") {
                // `data` is a value in the spec; some documents put a schema there.
                content.insert("application/json".to_string(), json!({"const": data}));
            }
            responses.insert(
                format!("error {code}").into(),
                ResponseSpec {
                    header_facts: Default::default(),
                    links: Default::default(),
                    content: content.into(),
                    description: (str_field(e, "message")).map(Into::into),
                    headers: Default::default(),
                },
            );
        }
    }

    Ok(EndpointSpec {
        extensions: kept.into(),
        servers: Vec::new(),
        aliases: Vec::new(),
        deprecated: m
            .get("deprecated")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        description: (str_field(method, "description").or_else(|| str_field(method, "summary")))
            .map(Into::into),
        destructive: false,
        idempotent: false,
        input_schema: Some(Box::new(input_schema)),
        meta: (!meta.is_empty()).then(|| Box::new(Value::Object(meta))),
        method: "CALL".into(),
        name: name.clone().into(),
        open_world: true,
        operation_id: None,
        output_schema: output_schema.map(Box::new),
        parameters,
        path: name.clone().into(),
        path_template: name.into(),
        read_only: false,
        request_body: None,
        responses: responses.into(),
        security: Vec::new(),
        title: None,
    })
}

/// Every definition reachable through local `$ref`s from the endpoints, normalized and keyed by
/// JSON pointer (external references are kept as written, their targets are not fetched).
pub(crate) fn collect_definitions(
    root: &Value,
    endpoints: &[EndpointSpec],
) -> Result<BTreeMap<String, Value>, NormalizeError> {
    let mut definitions = BTreeMap::new();
    let mut pending: Vec<(String, String)> = Vec::new();
    for endpoint in endpoints {
        for schema in endpoint.schemas() {
            collect_refs(schema, &endpoint.name, &mut pending);
        }
    }
    while let Some((reference, at)) = pending.pop() {
        if definitions.contains_key(&reference) || !reference.starts_with('#') {
            continue;
        }
        let target =
            resolve_pointer(root, &reference).ok_or_else(|| NormalizeError::UnresolvedRef {
                reference: reference.clone(),
                at: at.clone(),
            })?;
        let normalized = normalize_schema(target);
        collect_refs(&normalized, &reference, &mut pending);
        definitions.insert(reference, normalized);
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

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r##"{"openrpc":"1.2.6","info":{"title":"t","version":"1"},
      "servers":[{"url":"https://rpc.example.com"}],
      "methods":[
        {"name":"sum","params":[{"$ref":"#/components/contentDescriptors/A"},
                                {"name":"b","schema":{"$ref":"#/components/schemas/Num"}}],
         "result":{"name":"r","schema":{"type":"integer"}},
         "errors":[{"$ref":"#/components/errors/Busy"}]},
        {"name":"named","paramStructure":"by-name","params":[{"name":"x","required":true,"schema":{}}],
         "result":{"name":"r","schema":{}}}],
      "components":{"contentDescriptors":{"A":{"name":"a","required":true,"schema":{"$ref":"#/components/schemas/Num"}}},
        "schemas":{"Num":{"type":"integer","not":{"$ref":"#/components/schemas/Num"}}},
        "errors":{"Busy":{"code":-32000,"message":"busy"}}}}"##;

    #[test]
    fn methods_params_results_errors() {
        let spec = normalize("ns.calc", DOC.as_bytes()).unwrap();
        assert_eq!(spec.remote.base_urls, vec!["https://rpc.example.com"]);
        assert_eq!(spec.endpoints.len(), 2);
        let sum = spec.endpoints.iter().find(|e| e.name == "sum").unwrap();
        assert_eq!(sum.identity(), "CALL sum");
        assert!(!sum.read_only && sum.open_world && !sum.destructive);
        assert_eq!(sum.parameters[0].name, "a");
        assert!(sum.parameters[0].required);
        assert_eq!(sum.parameters[1].name, "b");
        assert_eq!(sum.parameters[1].style["position"], json!(1));
        assert_eq!(sum.input_schema.as_ref().unwrap()["required"], json!(["a"]));
        assert_eq!(
            sum.responses["error -32000"].description.as_deref(),
            Some("busy")
        );
        assert!(spec.definitions.contains_key("#/components/schemas/Num"));
        let named = spec.endpoints.iter().find(|e| e.name == "named").unwrap();
        assert!(!named.parameters[0].style.contains_key("position"));
        assert_eq!(
            named.parameters[0].style["paramStructure"],
            json!("by-name")
        );
    }

    #[test]
    fn bad_documents_are_errors() {
        let cyc = br##"{"openrpc":"1.2.6","methods":[{"name":"m","params":[{"$ref":"#/components/contentDescriptors/A"}]}],
            "components":{"contentDescriptors":{"A":{"$ref":"#/components/contentDescriptors/B"},"B":{"$ref":"#/components/contentDescriptors/A"}}}}"##;
        assert!(matches!(
            normalize("a.b", cyc),
            Err(NormalizeError::RefLoop(_))
        ));
        let dup = br#"{"openrpc":"1.2.6","methods":[{"name":"m"},{"name":"m"}]}"#;
        assert!(matches!(
            normalize("a.b", dup),
            Err(NormalizeError::DuplicateEndpoint(_))
        ));
        let missing = br##"{"openrpc":"1.2.6","methods":[{"name":"m","result":{"name":"r","schema":{"$ref":"#/nope"}}}]}"##;
        assert!(matches!(
            normalize("a.b", missing),
            Err(NormalizeError::UnresolvedRef { .. })
        ));
        assert!(normalize("a.b", br#"{"openapi":"3.0.0"}"#).is_err());
        assert!(normalize("a.b", br#"{"openrpc":"1.2.6","methods":[{"name":"m"}]"#).is_err());
    }
}
