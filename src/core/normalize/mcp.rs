//! MCP server snapshots → ToolSpec.
//!
//! Input: the snapshot document the MCP client writes (`{"tools": [...], "prompts": [...],
//! "resourceTemplates": [...], "resources": [...], "capabilities": {...}, "instructions": ...,
//! "serverInfo": ..., "protocolVersion": ..., "transport": ..., "url": ...}`), a bare
//! `tools/list` result (`{"tools": [...]}`) or a whole JSON-RPC response
//! (`{"jsonrpc": "2.0", "result": {"tools": [...]}}`), as JSON or YAML. Two shapes projects
//! publish are read as the tool list they hold ([`enveloped`]): a bare array of tools
//! (docker/mcp-registry's `tools.json`) exactly as `{"tools": [...]}`, and a single tool object
//! (github-mcp-server's `__toolsnaps__`, recognised by `name` plus `inputSchema`) as a one-tool
//! list; both have the fingerprint of the `{"tools": [...]}` they stand for. Every key but `tools`
//! is optional; `prompts`, `resourceTemplates` and `resources` are each the array of the
//! corresponding `*/list` result, and an absent `capabilities` means unknown (not none).
//!
//! Each tool becomes one `TOOL` endpoint whose identity is its name. Inside the contract:
//! name, title, description, `inputSchema`, `outputSchema`, the four annotation hints
//! normalized with the spec defaults (an explicit boolean hint always wins), the tool's
//! `_meta`, every tool field schemawatch does not model (kept verbatim beside `_meta` so a
//! future or vendor field still changes the fingerprint), and the server `instructions`.
//!
//! Prompts, resource templates and resources are endpoints of their own (methods `PROMPT`,
//! `RESOURCE_TEMPLATE`, `RESOURCE`; identity the prompt `name`, the `uriTemplate`, the `uri`;
//! endpoint names `prompt:<name>`, `resource-template:<uriTemplate>`, `resource:<uri>` so
//! they never collide with a tool). A prompt's arguments become its `input_schema` (an object
//! of string properties, `required` as declared); title and description have their fields;
//! every other field — `_meta`, `icons`, a resource's `name` and `mimeType` and
//! `annotations`, the `messages` the client read with `prompts/get` — is kept verbatim in
//! `meta`. A resource's `size` and `annotations.lastModified` are descriptive (they change
//! with the data, not the contract). The server `capabilities` are kept verbatim.
//!
//! Outside the contract (the descriptive allow-list, [`DESCRIPTIVE`], the table of
//! `docs/allow-list.md`): envelope fields (`nextCursor`, `ttlMs`, `cacheScope`, `resultType`,
//! a whole response's `jsonrpc` and `id`), server info and the protocol version (descriptive
//! metadata), and list order. Deny by default: every other snapshot key (a vendor `x-…` key,
//! a list result's `_meta` beside the server info, a future field) is kept verbatim in
//! `ToolSpec::extensions`.
//!
//! Local `$ref`s inside a tool's schema (`#/$defs/X`, `#`) point into that schema, so they are
//! rewritten to document-wide pointers (`#/tools/<name>/inputSchema/$defs/X`) and their
//! targets collected into `ToolSpec::definitions`, as the OpenAPI normalizer does for
//! `#/components/schemas`.

use super::openapi::resolve_pointer;
use super::schema::normalize_schema;
use super::{split_watch_name, NormalizeError, SharedEndpoints};
use crate::core::json::{parse_document, parse_json_deferring, Deferred};
use crate::core::model::{EndpointSpec, Evidence, Kind, Metadata, Remote, ToolSpec};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Tool fields with a dedicated place in [`EndpointSpec`]; anything else is kept in `meta`.
const MODELED_TOOL_FIELDS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "_meta",
];
/// Prompt fields with a dedicated place in [`EndpointSpec`]; anything else is kept in `meta`.
const MODELED_PROMPT_FIELDS: &[&str] = &["name", "title", "description", "arguments"];
/// Prompt argument fields modelled in the argument's property schema.
const MODELED_ARGUMENT_FIELDS: &[&str] = &["name", "title", "description", "required"];
/// Resource and resource template fields with a dedicated place in [`EndpointSpec`].
const MODELED_RESOURCE_FIELDS: &[&str] = &["uri", "uriTemplate", "title", "description"];

/// The descriptive allow-list of an MCP snapshot: where each entry is, and why it stays out of
/// the fingerprint. `docs/allow-list.md` is checked against it. Nothing model-facing is here.
pub const DESCRIPTIVE: &[(&str, &str)] = &[
    (
        "_meta.io.modelcontextprotocol/serverInfo",
        "descriptive metadata (the modern era's server info)",
    ),
    ("cacheScope", "list envelope: caching hint"),
    ("id, jsonrpc", "JSON-RPC envelope of a whole response"),
    ("nextCursor", "list envelope: pagination cursor"),
    (
        "protocolVersion",
        "descriptive metadata (`metadata.format`)",
    ),
    (
        "resources[].annotations.lastModified",
        "changes with the data, not the contract",
    ),
    (
        "resources[].size",
        "changes with the data, not the contract",
    ),
    ("resultType", "list envelope: completeness marker"),
    (
        "serverInfo",
        "descriptive metadata (`metadata.title`, `metadata.version`)",
    ),
    ("ttlMs", "list envelope: caching hint"),
    (
        "(list order)",
        "tools, prompts, templates and resources are matched by identity",
    ),
];

/// Snapshot keys the model has a place for (`transport` and `url` are the `remote`).
const MODELED_TOP_LEVEL: &[&str] = &[
    "tools",
    "prompts",
    "resourceTemplates",
    "resources",
    "capabilities",
    "instructions",
    "transport",
    "url",
];
/// Snapshot keys on the descriptive allow-list ([`DESCRIPTIVE`]); `_meta` is split.
const DESCRIPTIVE_TOP_LEVEL: &[&str] = &[
    "cacheScope",
    "nextCursor",
    "protocolVersion",
    "resultType",
    "serverInfo",
    "ttlMs",
];
const HINTS: &[&str] = &[
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// Normalizes an MCP tool list for the watch named `watch` (`namespace.name`).
pub fn normalize(watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    normalize_sharing(watch, bytes, SharedEndpoints::default())
}

/// [`normalize`], sharing the tools `shared` holds equally as they are read
/// ([`SharedEndpoints`]).
pub fn normalize_sharing(
    watch: &str,
    bytes: &[u8],
    shared: SharedEndpoints<'_>,
) -> Result<ToolSpec, NormalizeError> {
    super::streaming_from_threshold(
        bytes,
        || streaming(watch, bytes, shared),
        || normalize_with(watch, &enveloped(parse_document(bytes)?), None, shared),
    )
}

/// `root` as a tool-list snapshot: a bare array of tools becomes `{"tools": [...]}`, a single
/// tool object (an object with `name` and `inputSchema`, no `tools` and no `result`) becomes
/// `{"tools": [tool]}`; any other document is returned as it is.
pub fn enveloped(root: Value) -> Value {
    match root {
        Value::Array(tools) => json!({ "tools": tools }),
        Value::Object(doc)
            if doc.contains_key("name")
                && doc.contains_key("inputSchema")
                && !doc.contains_key("tools")
                && !doc.contains_key("result") =>
        {
            json!({ "tools": [doc] })
        }
        other => other,
    }
}

/// [`normalize`] of a JSON tool list without its `tools` array ever being one tree: the
/// document is parsed except `tools` (checked, not built), then each tool is parsed and
/// normalized in turn, in order. `None` (the caller reads in full, for the exact error) for
/// YAML, a `result` wrapper, `tools` not an array, or any error.
pub fn normalize_streaming(watch: &str, bytes: &[u8]) -> Option<ToolSpec> {
    streaming(watch, bytes, SharedEndpoints::default())
}

fn streaming(watch: &str, bytes: &[u8], shared: SharedEndpoints<'_>) -> Option<ToolSpec> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).ok()?;
    if text.trim_start().as_bytes().first() != Some(&b'{') {
        return None;
    }
    let deferred = parse_json_deferring(text, "tools").ok()?;
    let plain = matches!(&deferred.root, Value::Object(doc) if !doc.contains_key("result"));
    if !(plain && deferred.is_array()) {
        return None;
    }
    normalize_with(watch, &deferred.root, Some(&deferred), shared).ok()
}

/// [`normalize`] of a parsed document (the snapshot shapes of [`enveloped`] included).
pub fn normalize_value(watch: &str, root: &Value) -> Result<ToolSpec, NormalizeError> {
    match root {
        Value::Object(doc) if doc.contains_key("tools") || doc.contains_key("result") => {
            normalize_with(watch, root, None, SharedEndpoints::default())
        }
        _ => normalize_with(
            watch,
            &enveloped(root.clone()),
            None,
            SharedEndpoints::default(),
        ),
    }
}

/// [`normalize_value`], with the tools read from `deferred` when given (the root then has no
/// `tools`).
fn normalize_with(
    watch: &str,
    root: &Value,
    deferred: Option<&Deferred<'_>>,
    shared: SharedEndpoints<'_>,
) -> Result<ToolSpec, NormalizeError> {
    let not_mcp = |why: &str| NormalizeError::Invalid {
        at: "document".into(),
        problem: format!("not an MCP tool list: {why}"),
    };
    let Value::Object(doc) = root else {
        return Err(not_mcp("the document is not an object"));
    };
    // A whole JSON-RPC response: look inside `result`.
    let doc = match (doc.get("tools"), doc.get("result")) {
        (None, Some(Value::Object(result))) => result,
        _ => doc,
    };
    let lists = ["prompts", "resourceTemplates", "resources", "capabilities"];
    let tools: &[Value] = match doc.get("tools") {
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err(invalid("tools", "must be an array")),
        // Read one at a time below.
        None if deferred.is_some() => &[],
        // A server without the tools capability: the other lists make it a snapshot.
        None if lists.iter().any(|k| doc.contains_key(*k)) => &[],
        None => return Err(not_mcp("no \"tools\" array")),
    };
    let list = |key: &str| -> Result<&[Value], NormalizeError> {
        match doc.get(key) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(invalid(key, "must be an array")),
        }
    };
    let capabilities = match doc.get("capabilities") {
        None | Some(Value::Null) => None,
        Some(c @ Value::Object(_)) => Some(c.clone()),
        Some(_) => return Err(invalid("capabilities", "must be an object")),
    };
    let text = |key: &str| doc.get(key).and_then(Value::as_str).map(String::from);
    let instructions = match doc.get("instructions") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(invalid("instructions", "must be a string")),
    };

    let mut endpoints = Vec::with_capacity(tools.len());
    let mut definitions = BTreeMap::new();
    let mut names = BTreeSet::new();
    let mut add_tool = |i: usize, tool: &Value| -> Result<(), NormalizeError> {
        let endpoint = tool_endpoint(tool, i, &mut definitions)?;
        if !names.insert(endpoint.name.clone()) {
            return Err(NormalizeError::DuplicateEndpoint(endpoint.identity()));
        }
        endpoints.push(shared.share(endpoint));
        Ok(())
    };
    if let Some(deferred) = deferred {
        let mut i = 0;
        deferred.for_each_item(|tool| {
            add_tool(i, &tool)?;
            i += 1;
            Ok::<(), NormalizeError>(())
        })?;
    } else {
        for (i, tool) in tools.iter().enumerate() {
            add_tool(i, tool)?;
        }
    }
    let mut others = Vec::new();
    for (i, prompt) in list("prompts")?.iter().enumerate() {
        others.push(prompt_endpoint(prompt, i)?);
    }
    for (i, template) in list("resourceTemplates")?.iter().enumerate() {
        others.push(resource_endpoint(template, i, ResourceKind::Template)?);
    }
    for (i, resource) in list("resources")?.iter().enumerate() {
        others.push(resource_endpoint(resource, i, ResourceKind::Resource)?);
    }
    for endpoint in others {
        if !names.insert(endpoint.name.clone()) {
            return Err(NormalizeError::DuplicateEndpoint(endpoint.identity()));
        }
        endpoints.push(shared.share(endpoint));
    }
    crate::core::normalize::sort_by_identity(&mut endpoints);
    endpoints.shrink_to_fit();

    let server_info = doc.get("serverInfo").and_then(Value::as_object);
    let server_text = |key: &str| {
        server_info
            .and_then(|s| s.get(key))
            .and_then(Value::as_str)
            .map(String::from)
    };
    // Deny by default: every other snapshot key is kept verbatim in the contract.
    let mut extensions = BTreeMap::new();
    for (key, value) in doc {
        if MODELED_TOP_LEVEL.contains(&key.as_str())
            || DESCRIPTIVE_TOP_LEVEL.contains(&key.as_str())
        {
            continue;
        }
        if key == "_meta" {
            if let Value::Object(meta) = value {
                let kept: Map<String, Value> = meta
                    .iter()
                    .filter(|(k, _)| k.as_str() != "io.modelcontextprotocol/serverInfo")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !kept.is_empty() {
                    extensions.insert(key.clone(), Value::Object(kept));
                }
                continue;
            }
        }
        extensions.insert(key.clone(), value.clone());
    }
    let (namespace, name) = split_watch_name(watch);
    Ok(ToolSpec {
        directives: Default::default(),
        roots: Default::default(),
        capabilities,
        namespace,
        name,
        kind: Kind::Mcp,
        remote: Remote {
            variables: Default::default(),
            base_urls: text("url").into_iter().collect(),
            transport: text("transport").unwrap_or_else(|| "mcp".into()),
        },
        evidence: Evidence {
            source_type: "mcp".into(),
            license: None,
        },
        metadata: Metadata {
            title: server_text("title").or_else(|| server_text("name")),
            version: server_text("version"),
            format: Some(match text("protocolVersion") {
                Some(v) => format!("mcp {v}"),
                None => "mcp".into(),
            }),
        },
        endpoints,
        definitions,
        extensions,
        instructions,
    })
}

/// `spec` as a release before prompts, resources and capabilities were modelled saw it: the
/// `TOOL` endpoints only, capabilities unknown, no snapshot-level extensions. A registry row stored by such a release (its
/// capabilities are unknown) whose fingerprint equals this projection of a fresh candidate
/// holds the same document: the candidate is a re-baseline, not drift.
pub fn tools_only_projection(spec: &ToolSpec) -> ToolSpec {
    let mut legacy = spec.clone();
    legacy.capabilities = None;
    legacy.extensions.clear();
    legacy.endpoints.retain(|e| e.method == "TOOL");
    legacy
}

fn invalid(at: &str, problem: &str) -> NormalizeError {
    NormalizeError::Invalid {
        at: at.into(),
        problem: problem.into(),
    }
}

/// The effective side-effect facts of a tool: (read_only, destructive, idempotent, open_world).
/// Defaults per the spec: readOnlyHint false, destructiveHint true unless read-only,
/// idempotentHint false, openWorldHint true. A hint that is present but not a boolean counts
/// as absent here (and is kept verbatim in `meta`, so it still reaches the fingerprint).
pub fn effective_hints(annotations: Option<&Map<String, Value>>) -> (bool, bool, bool, bool) {
    let hint = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    let read_only = hint("readOnlyHint").unwrap_or(false);
    let destructive = hint("destructiveHint").unwrap_or(!read_only);
    let idempotent = hint("idempotentHint").unwrap_or(false);
    let open_world = hint("openWorldHint").unwrap_or(true);
    (read_only, destructive, idempotent, open_world)
}

fn tool_endpoint(
    tool: &Value,
    index: usize,
    definitions: &mut BTreeMap<String, Value>,
) -> Result<EndpointSpec, NormalizeError> {
    let at = format!("tools[{index}]");
    let tool = tool
        .as_object()
        .ok_or_else(|| invalid(&at, "a tool must be an object"))?;
    let name = match tool.get("name") {
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        _ => return Err(invalid(&at, "a tool needs a non-empty string \"name\"")),
    };
    let at = format!("tools.{name}");
    let optional_text = |key: &str| match tool.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(&format!("{at}.{key}"), "must be a string")),
    };
    let description = optional_text("description")?;
    let annotations = match tool.get("annotations") {
        None | Some(Value::Null) => None,
        Some(Value::Object(a)) => Some(a),
        Some(_) => return Err(invalid(&format!("{at}.annotations"), "must be an object")),
    };
    // Display precedence (spec): title > annotations.title > name.
    let annotation_title = annotations
        .and_then(|a| a.get("title"))
        .and_then(Value::as_str)
        .map(String::from);
    let title = optional_text("title")?.or(annotation_title.clone());
    let (read_only, destructive, idempotent, open_world) = effective_hints(annotations);

    // Everything the model or a client may see that has no field of its own.
    let mut meta = Map::new();
    if let Some(m) = tool.get("_meta") {
        meta.insert("_meta".into(), m.clone());
    }
    for (key, value) in tool {
        if !MODELED_TOOL_FIELDS.contains(&key.as_str()) {
            meta.insert(key.clone(), value.clone());
        }
    }
    if let Some(a) = annotations {
        let mut extra = Map::new();
        for (key, value) in a {
            let modeled = (HINTS.contains(&key.as_str()) && value.is_boolean())
                // annotations.title is the title unless a top-level title shadows it.
                || (key == "title" && value.is_string() && tool.get("title").is_none());
            if !modeled {
                extra.insert(key.clone(), value.clone());
            }
        }
        if !extra.is_empty() {
            meta.insert("annotations".into(), Value::Object(extra));
        }
    }

    let mut schema = |key: &str| -> Result<Option<Value>, NormalizeError> {
        match tool.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(s @ (Value::Object(_) | Value::Bool(_))) => {
                Ok(Some(tool_schema(&name, key, s, definitions)?))
            }
            Some(_) => Err(invalid(
                &format!("{at}.{key}"),
                "must be a JSON Schema object",
            )),
        }
    };
    let input_schema = schema("inputSchema")?;
    let output_schema = schema("outputSchema")?;

    Ok(EndpointSpec {
        extensions: Default::default(),
        servers: Vec::new(),
        aliases: Vec::new(),
        deprecated: false,
        description: description.map(Into::into),
        destructive,
        idempotent,
        input_schema: input_schema.map(Box::new),
        meta: if meta.is_empty() {
            None
        } else {
            Some(Box::new(Value::Object(meta)))
        },
        method: "TOOL".into(),
        name: name.clone().into(),
        open_world,
        operation_id: None,
        output_schema: output_schema.map(Box::new),
        parameters: Vec::new(),
        path: name.clone().into(),
        path_template: name.into(),
        read_only,
        request_body: None,
        responses: Default::default(),
        security: Vec::new(),
        title: title.map(Into::into),
    })
}

/// A text field of an MCP object: absent, null or a string.
fn text_of(
    object: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<String>, NormalizeError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(&format!("{at}.{key}"), "must be a string")),
    }
}

/// An endpoint that only reads (prompts, resources): the side-effect facts of a read.
fn read_endpoint(method: &str, name: String, path: String) -> EndpointSpec {
    EndpointSpec {
        extensions: Default::default(),
        servers: Vec::new(),
        aliases: Vec::new(),
        deprecated: false,
        description: None,
        destructive: false,
        idempotent: true,
        input_schema: None,
        meta: None,
        method: method.into(),
        name: name.into(),
        open_world: false,
        operation_id: None,
        output_schema: None,
        parameters: Vec::new(),
        path_template: path.clone().into(),
        path: path.into(),
        read_only: true,
        request_body: None,
        responses: Default::default(),
        security: Vec::new(),
        title: None,
    }
}

fn meta_of(map: Map<String, Value>) -> Option<Value> {
    if map.is_empty() {
        None
    } else {
        Some(Value::Object(map))
    }
}

/// One prompt → a `PROMPT` endpoint named `prompt:<name>`.
fn prompt_endpoint(prompt: &Value, index: usize) -> Result<EndpointSpec, NormalizeError> {
    let at = format!("prompts[{index}]");
    let prompt = prompt
        .as_object()
        .ok_or_else(|| invalid(&at, "a prompt must be an object"))?;
    let name = match prompt.get("name") {
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        _ => return Err(invalid(&at, "a prompt needs a non-empty string \"name\"")),
    };
    let at = format!("prompts.{name}");
    let mut endpoint = read_endpoint("PROMPT", format!("prompt:{name}"), name.clone());
    endpoint.description = text_of(prompt, "description", &at)?.map(Into::into);
    endpoint.title = text_of(prompt, "title", &at)?.map(Into::into);
    match prompt.get("arguments") {
        None | Some(Value::Null) => {}
        Some(Value::Array(arguments)) => {
            let mut properties = Map::new();
            let mut required = BTreeSet::new();
            for (i, argument) in arguments.iter().enumerate() {
                let arg_at = format!("{at}.arguments[{i}]");
                let argument = argument
                    .as_object()
                    .ok_or_else(|| invalid(&arg_at, "an argument must be an object"))?;
                let arg_name = match argument.get("name") {
                    Some(Value::String(n)) if !n.is_empty() => n.clone(),
                    _ => {
                        return Err(invalid(
                            &arg_at,
                            "an argument needs a non-empty string \"name\"",
                        ))
                    }
                };
                let mut schema = Map::new();
                schema.insert("type".into(), json!("string"));
                for key in ["title", "description"] {
                    if let Some(text) = text_of(argument, key, &arg_at)? {
                        schema.insert(key.into(), json!(text));
                    }
                }
                match argument.get("required") {
                    None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                    Some(Value::Bool(true)) => {
                        required.insert(arg_name.clone());
                    }
                    Some(_) => return Err(invalid(&arg_at, "required must be a boolean")),
                }
                // Unmodelled argument fields stay in the contract, in a keyword of their own.
                let extra: Map<String, Value> = argument
                    .iter()
                    .filter(|(k, _)| !MODELED_ARGUMENT_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !extra.is_empty() {
                    schema.insert("x-mcp-argument".into(), Value::Object(extra));
                }
                if properties
                    .insert(arg_name.clone(), Value::Object(schema))
                    .is_some()
                {
                    return Err(invalid(&arg_at, "duplicate argument name"));
                }
            }
            let mut schema = json!({"type": "object", "properties": properties});
            if !required.is_empty() {
                schema["required"] = json!(required);
            }
            endpoint.input_schema = Some(Box::new(normalize_schema(&schema)));
        }
        Some(_) => return Err(invalid(&format!("{at}.arguments"), "must be an array")),
    }
    let meta: Map<String, Value> = prompt
        .iter()
        .filter(|(k, _)| !MODELED_PROMPT_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    endpoint.meta = meta_of(meta).map(Box::new);
    Ok(endpoint)
}

#[derive(Clone, Copy)]
enum ResourceKind {
    Template,
    Resource,
}

/// One resource template (`RESOURCE_TEMPLATE`, by `uriTemplate`) or resource (`RESOURCE`, by
/// `uri`).
fn resource_endpoint(
    item: &Value,
    index: usize,
    kind: ResourceKind,
) -> Result<EndpointSpec, NormalizeError> {
    let (list, key, method, prefix) = match kind {
        ResourceKind::Template => (
            "resourceTemplates",
            "uriTemplate",
            "RESOURCE_TEMPLATE",
            "resource-template",
        ),
        ResourceKind::Resource => ("resources", "uri", "RESOURCE", "resource"),
    };
    let at = format!("{list}[{index}]");
    let item = item
        .as_object()
        .ok_or_else(|| invalid(&at, "must be an object"))?;
    let uri = match item.get(key) {
        Some(Value::String(u)) if !u.is_empty() => u.clone(),
        _ => return Err(invalid(&at, &format!("needs a non-empty string \"{key}\""))),
    };
    let at = format!("{list}.{uri}");
    let mut endpoint = read_endpoint(method, format!("{prefix}:{uri}"), uri);
    endpoint.description = text_of(item, "description", &at)?.map(Into::into);
    endpoint.title = text_of(item, "title", &at)?.map(Into::into);
    let mut meta = Map::new();
    for (k, v) in item {
        if MODELED_RESOURCE_FIELDS.contains(&k.as_str()) {
            continue;
        }
        match (kind, k.as_str(), v) {
            // Descriptive: they change with the data, not the contract.
            (ResourceKind::Resource, "size", _) => {}
            (ResourceKind::Resource, "annotations", Value::Object(a)) => {
                let kept: Map<String, Value> = a
                    .iter()
                    .filter(|(k, _)| k.as_str() != "lastModified")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !kept.is_empty() {
                    meta.insert(k.clone(), Value::Object(kept));
                }
            }
            _ => {
                meta.insert(k.clone(), v.clone());
            }
        }
    }
    endpoint.meta = meta_of(meta).map(Box::new);
    Ok(endpoint)
}

/// Escapes one JSON pointer token.
fn pointer_token(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

/// Normalizes one tool schema; local `$ref`s are made document-wide and their targets
/// collected into `definitions`.
fn tool_schema(
    tool: &str,
    key: &str,
    raw: &Value,
    definitions: &mut BTreeMap<String, Value>,
) -> Result<Value, NormalizeError> {
    let prefix = format!("#/tools/{}/{key}", pointer_token(tool));
    let at = format!("tools.{tool}.{key}");
    let mut pending: Vec<String> = Vec::new();
    let mut root = strip_root_containers(normalize_schema(raw));
    rewrite_refs(&mut root, &prefix, &mut pending);
    while let Some(local) = pending.pop() {
        let global = format!("{prefix}{}", local.trim_start_matches('#'));
        if definitions.contains_key(&global) {
            continue;
        }
        let target = resolve_pointer(raw, &local).ok_or_else(|| NormalizeError::UnresolvedRef {
            reference: local.clone(),
            at: at.clone(),
        })?;
        let mut normalized = normalize_schema(target);
        if local == "#" {
            normalized = strip_root_containers(normalized);
        }
        rewrite_refs(&mut normalized, &prefix, &mut pending);
        definitions.insert(global, normalized);
    }
    Ok(root)
}

/// `$defs` / `definitions` at a schema's root only hold targets of `$ref`s, which are
/// collected separately; keeping them inline would report each change twice.
fn strip_root_containers(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        map.remove("$defs");
        map.remove("definitions");
    }
    schema
}

fn rewrite_refs(value: &mut Value, prefix: &str, pending: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if r.starts_with('#') {
                    pending.push(r.clone());
                    *r = format!("{prefix}{}", r.trim_start_matches('#'));
                }
            }
            for (key, v) in map.iter_mut() {
                if key != "$ref" {
                    rewrite_refs(v, prefix, pending);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| rewrite_refs(v, prefix, pending)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fingerprint::tool_fingerprint;
    use serde_json::json;

    fn spec(doc: Value) -> ToolSpec {
        normalize_value("ns.srv", &doc).unwrap()
    }

    #[test]
    fn annotation_defaults_and_explicit_hints() {
        assert_eq!(effective_hints(None), (false, true, false, true));
        let ro = json!({"readOnlyHint": true});
        assert_eq!(effective_hints(ro.as_object()), (true, false, false, true));
        let explicit =
            json!({"readOnlyHint": true, "destructiveHint": true, "openWorldHint": false});
        assert_eq!(
            effective_hints(explicit.as_object()),
            (true, true, false, false)
        );
        let junk = json!({"readOnlyHint": "yes"});
        assert_eq!(
            effective_hints(junk.as_object()),
            (false, true, false, true)
        );
    }

    #[test]
    fn envelope_order_and_key_order_are_outside_the_fingerprint() {
        let a = spec(json!({"tools": [
            {"name": "b", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}},
            {"name": "a", "description": "A.", "inputSchema": {"type": "object"}}
        ], "nextCursor": null, "ttlMs": 5000, "cacheScope": "public"}));
        let b = spec(
            json!({"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "tools": [
            {"inputSchema": {"type": "object"}, "description": "A.", "name": "a"},
            {"name": "b", "inputSchema": {"properties": {"x": {"type": "string"}}, "type": "object"}}
        ], "ttlMs": 0}}),
        );
        assert_eq!(tool_fingerprint(&a), tool_fingerprint(&b));
        assert_eq!(a.endpoints[0].name, "a");
        assert_eq!(a.endpoints[0].identity(), "TOOL a");
    }

    #[test]
    fn unmodelled_fields_reach_the_fingerprint() {
        let base = json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]});
        let with_execution = json!({"tools": [{"name": "a", "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "optional"}, "annotations": {"vendorHint": 1}}]});
        let s = spec(with_execution);
        assert_eq!(
            s.endpoints[0].meta.as_deref(),
            Some(
                &json!({"execution": {"taskSupport": "optional"}, "annotations": {"vendorHint": 1}})
            )
        );
        assert_ne!(tool_fingerprint(&spec(base)), tool_fingerprint(&s));
    }

    #[test]
    fn titles_follow_display_precedence() {
        let s = spec(json!({"tools": [
            {"name": "a", "annotations": {"title": "Ann"}},
            {"name": "b", "title": "Top", "annotations": {"title": "Ann"}}
        ]}));
        assert_eq!(s.endpoints[0].title.as_deref(), Some("Ann"));
        assert_eq!(s.endpoints[0].meta, None);
        assert_eq!(s.endpoints[1].title.as_deref(), Some("Top"));
        // The shadowed annotations.title is still in the contract.
        assert_eq!(
            s.endpoints[1].meta.as_deref(),
            Some(&json!({"annotations": {"title": "Ann"}}))
        );
    }

    #[test]
    fn local_refs_become_document_wide_definitions() {
        let s = spec(json!({"tools": [{"name": "t", "inputSchema": {
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {
                "next": {"$ref": "#/$defs/Node"}, "root": {"$ref": "#"}}}}
        }}]}));
        let input = s.endpoints[0].input_schema.as_ref().unwrap();
        assert_eq!(
            input["properties"]["node"]["$ref"],
            json!("#/tools/t/inputSchema/$defs/Node")
        );
        assert!(input.get("$defs").is_none());
        assert!(s
            .definitions
            .contains_key("#/tools/t/inputSchema/$defs/Node"));
        assert!(s.definitions.contains_key("#/tools/t/inputSchema"));
        let err = normalize_value(
            "ns.srv",
            &json!({"tools": [{"name": "t", "inputSchema": {"$ref": "#/$defs/Nope"}}]}),
        )
        .unwrap_err();
        assert!(matches!(err, NormalizeError::UnresolvedRef { .. }), "{err}");
    }

    #[test]
    fn malformed_lists_are_errors() {
        for bad in [
            json!([1]),
            json!([{"description": "no name"}]),
            json!({"name": "a"}),
            json!({"name": "a", "inputSchema": "object"}),
            json!({"tools": {}}),
            json!({"tools": [{"description": "no name"}]}),
            json!({"tools": [{"name": "a"}, {"name": "a"}]}),
            json!({"tools": [{"name": "a", "annotations": []}]}),
            json!({"tools": [{"name": "a", "inputSchema": "object"}]}),
        ] {
            assert!(normalize_value("ns.srv", &bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bare_tool_array_and_a_single_tool_read_as_their_tool_list() {
        let tools = json!([
            {"name": "b", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}},
            {"name": "a", "description": "A.", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": true}}
        ]);
        let listed = spec(json!({ "tools": tools.clone() }));
        let bare = normalize("ns.srv", tools.to_string().as_bytes()).unwrap();
        assert_eq!(bare, listed);
        assert_eq!(tool_fingerprint(&bare), tool_fingerprint(&listed));
        assert_eq!(spec(tools.clone()), listed);
        // YAML too.
        let yaml = "- name: a\n  inputSchema: {type: object}\n";
        assert_eq!(
            normalize("ns.srv", yaml.as_bytes()).unwrap(),
            spec(json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}))
        );
        // An empty array is an empty tool list.
        assert_eq!(spec(json!([])), spec(json!({"tools": []})));

        let one = tools[1].clone();
        let single = normalize("ns.srv", one.to_string().as_bytes()).unwrap();
        let as_list = spec(json!({ "tools": [one.clone()] }));
        assert_eq!(single, as_list);
        assert_eq!(tool_fingerprint(&single), tool_fingerprint(&as_list));
        assert_eq!(spec(one), as_list);
        // A snapshot whose tools key is present is never read as one tool.
        let named = spec(json!({"name": "x", "inputSchema": {}, "tools": []}));
        assert!(named.endpoints.is_empty());
    }
}
