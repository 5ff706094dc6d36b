//! OPTIMADE → ToolSpec, from the service's info documents.
//!
//! An OPTIMADE contract spans several resources: `<base>/info` and `<base>/info/<entry type>`
//! for every entry type it lists. The fetcher (`fetch::optimade`) combines them into one JSON
//! document, which is also the format `schemawatch diff --kind optimade` reads:
//!
//! ```json
//! {"info": <the /info response>,
//!  "entry_info": {"structures": <the /info/structures response>, "references": ...}}
//! ```
//!
//! For convenience a single document is accepted too: a bare `/info` response (`data.id` is
//! `/`, no entry types), or one `/info/<type>` response or its bare `data` object (`type`
//! `info`, `id` the entry type).
//!
//! - Each entry type `T` gives `GET /T` (a list of entries) and `GET /T/{}` (one entry, by the
//!   `id` path parameter), both read-only with a `response_format` query parameter whose enum
//!   is the entry type's `formats`. Their responses reference `#/entry_types/T`: an object
//!   with one property per OPTIMADE property (the flattened JSON:API resource: `id`, `type`
//!   and the attributes). OPTIMADE types map to JSON types (`float` → number, `timestamp` →
//!   date-time string, `list` → array, `dictionary` → object); every property but `id` and
//!   `type` may be `null`; `unit` is kept as a keyword, so a unit change is judged
//!   conservatively. Sortable properties are the enum of the list endpoint's `sort` query
//!   parameter (a request value: losing one is breaking, gaining one compatible).
//! - Every other endpoint in `available_endpoints` (`info`, `links`, ...) is `GET /<name>`.
//! - Remote: the versioned base URLs of `available_api_versions`.
//! - The response envelope (`meta`, `relationships`, `links`) is not part of the contract.

use super::schema::normalize_schema;
use super::{split_watch_name, NormalizeError};
use crate::core::json::parse_document;
use crate::core::model::{EndpointSpec, Evidence, Kind, Metadata, ParameterSpec, Remote, ToolSpec};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Most entry types one service may declare.
pub const MAX_ENTRY_TYPES: usize = 64;

fn invalid(at: &str, problem: impl Into<String>) -> NormalizeError {
    NormalizeError::Invalid {
        at: at.to_string(),
        problem: problem.into(),
    }
}

/// Whether `name` is a usable entry type name (also a safe URL path segment).
pub fn valid_entry_type(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Entry type names listed by a `/info` response (`entry_types_by_format`, all formats).
pub fn listed_entry_types(info: &Value) -> Result<BTreeSet<String>, NormalizeError> {
    let attributes = info_attributes(info);
    let mut out = BTreeSet::new();
    if let Some(by_format) = attributes.and_then(|a| a.get("entry_types_by_format")) {
        let by_format = by_format
            .as_object()
            .ok_or_else(|| invalid("info.entry_types_by_format", "must be an object"))?;
        for (format, types) in by_format {
            let types = types.as_array().ok_or_else(|| {
                invalid(
                    &format!("info.entry_types_by_format.{format}"),
                    "must be an array",
                )
            })?;
            for t in types {
                let t = t.as_str().filter(|t| valid_entry_type(t)).ok_or_else(|| {
                    invalid(
                        &format!("info.entry_types_by_format.{format}"),
                        format!("{t} is not an entry type name ([a-z0-9_]+)"),
                    )
                })?;
                out.insert(t.to_string());
            }
        }
    }
    if out.len() > MAX_ENTRY_TYPES {
        return Err(invalid(
            "info.entry_types_by_format",
            format!("more than {MAX_ENTRY_TYPES} entry types"),
        ));
    }
    Ok(out)
}

fn info_attributes(info: &Value) -> Option<&Map<String, Value>> {
    let data = info.get("data").unwrap_or(info);
    data.get("attributes").unwrap_or(data).as_object()
}

/// The fields of an entry info document (`description`, `properties`, `formats`, ...).
fn entry_fields(doc: &Value) -> Option<&Map<String, Value>> {
    let data = doc.get("data").unwrap_or(doc);
    match data.get("attributes") {
        Some(Value::Object(a)) if a.contains_key("properties") => Some(a),
        _ => data.as_object(),
    }
}

/// Normalizes OPTIMADE info documents (see the module docs for the accepted shapes).
pub fn normalize(watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    let root = parse_document(bytes)?;
    normalize_value(watch, &root)
}

pub fn normalize_value(watch: &str, root: &Value) -> Result<ToolSpec, NormalizeError> {
    let Value::Object(doc) = root else {
        return Err(invalid(
            "document",
            "an OPTIMADE info document must be an object",
        ));
    };
    let mut entry_info: BTreeMap<String, &Value> = BTreeMap::new();
    let base_info: Option<&Value>;
    let combined = doc.contains_key("info") || doc.contains_key("entry_info");
    if combined {
        base_info = doc.get("info");
        if let Some(entries) = doc.get("entry_info") {
            let entries = entries
                .as_object()
                .ok_or_else(|| invalid("entry_info", "must be an object"))?;
            for (name, info) in entries {
                if !valid_entry_type(name) {
                    return Err(invalid(
                        "entry_info",
                        format!("{name:?} is not an entry type name ([a-z0-9_]+)"),
                    ));
                }
                entry_info.insert(name.clone(), info);
            }
        }
    } else {
        let data = doc.get("data").unwrap_or(root);
        let id = data.get("id").and_then(Value::as_str);
        if data.get("type").and_then(Value::as_str) != Some("info") {
            return Err(invalid(
                "document",
                "not an OPTIMADE info document (no data object of type \"info\")",
            ));
        }
        match id {
            Some("/") | None => base_info = Some(root),
            Some(t) if valid_entry_type(t) => {
                base_info = None;
                entry_info.insert(t.to_string(), root);
            }
            Some(t) => {
                return Err(invalid(
                    "data.id",
                    format!("{t:?} is not an entry type name ([a-z0-9_]+)"),
                ))
            }
        }
    }

    let mut entry_types: BTreeSet<String> = entry_info.keys().cloned().collect();
    let mut available = BTreeSet::new();
    let mut base_urls = BTreeSet::new();
    let mut api_version = None;
    if let Some(info) = base_info {
        let attributes =
            info_attributes(info).ok_or_else(|| invalid("info", "no data.attributes object"))?;
        let listed = listed_entry_types(info)?;
        if let Some(missing) = listed.iter().find(|t| !entry_info.contains_key(*t)) {
            if combined {
                return Err(invalid(
                    "entry_info",
                    format!("/info lists entry type {missing:?} but its /info/{missing} document is missing"),
                ));
            }
        }
        entry_types.extend(listed);
        if let Some(Value::Array(endpoints)) = attributes.get("available_endpoints") {
            for e in endpoints.iter().filter_map(Value::as_str) {
                available.insert(e.to_string());
            }
        }
        if let Some(Value::Array(versions)) = attributes.get("available_api_versions") {
            for v in versions {
                if let Some(url) = v.get("url").and_then(Value::as_str) {
                    base_urls.insert(url.to_string());
                }
            }
        }
        api_version = attributes
            .get("api_version")
            .and_then(Value::as_str)
            .map(String::from);
    }
    if entry_types.len() > MAX_ENTRY_TYPES {
        return Err(invalid(
            "entry_info",
            format!("more than {MAX_ENTRY_TYPES} entry types"),
        ));
    }

    let mut endpoints = Vec::new();
    let mut definitions = BTreeMap::new();
    for t in &entry_types {
        let fields = match entry_info.get(t) {
            Some(doc) => Some(
                entry_fields(doc)
                    .ok_or_else(|| invalid(&format!("entry_info.{t}"), "must be an object"))?,
            ),
            None => None,
        };
        let reference = format!("#/entry_types/{t}");
        definitions.insert(reference.clone(), entry_schema(t, fields)?);
        let formats: Vec<Value> = fields
            .and_then(|f| f.get("formats"))
            .and_then(Value::as_array)
            .map(|f| f.iter().filter(|v| v.is_string()).cloned().collect())
            .unwrap_or_else(|| vec![json!("json")]);
        let response_format = ParameterSpec {
            deprecated: false,
            description: None,
            location: "query".into(),
            name: "response_format".into(),
            required: false,
            schema: normalize_schema(&json!({"type": "string", "enum": formats})),
            style: Default::default(),
        };
        let description = fields
            .and_then(|f| f.get("description"))
            .and_then(Value::as_str)
            .map(String::from);
        let mut list = read_endpoint(t, &format!("/{t}"));
        list.description = description.clone().map(Into::into);
        list.parameters = vec![response_format.clone()];
        let sortable: Vec<Value> = fields
            .and_then(|f| f.get("properties"))
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .filter(|(_, d)| d.get("sortable").and_then(Value::as_bool) == Some(true))
                    .map(|(name, _)| json!(name))
                    .collect()
            })
            .unwrap_or_default();
        if !sortable.is_empty() {
            list.parameters.push(ParameterSpec {
                deprecated: false,
                description: None,
                location: "query".into(),
                name: "sort".into(),
                required: false,
                schema: normalize_schema(&json!({"type": "string", "enum": sortable})),
                style: Default::default(),
            });
        }
        list.parameters.sort_by(|a, b| a.name.cmp(&b.name));
        list.output_schema = Some(Box::new(
            json!({"type": "array", "items": {"$ref": reference}}),
        ));
        let mut one = read_endpoint(&format!("{t}.get"), &format!("/{t}/{{}}"));
        one.path_template = format!("/{t}/{{entry_id}}").into();
        one.description = description.map(Into::into);
        one.parameters = vec![
            ParameterSpec {
                deprecated: false,
                description: None,
                location: "path".into(),
                name: "entry_id".into(),
                required: true,
                schema: json!({"type": "string"}),
                style: Default::default(),
            },
            response_format,
        ];
        one.output_schema = Some(Box::new(json!({"$ref": reference})));
        endpoints.push(list);
        endpoints.push(one);
    }
    for e in available.iter().filter(|e| !entry_types.contains(*e)) {
        endpoints.push(read_endpoint(e, &format!("/{e}")));
    }
    crate::core::normalize::sort_by_identity(&mut endpoints);
    if base_urls.is_empty() {
        base_urls.insert("/".to_string());
    }
    let (namespace, name) = split_watch_name(watch);
    Ok(ToolSpec {
        directives: Default::default(),
        roots: Default::default(),
        capabilities: None,
        extensions: BTreeMap::new(),
        namespace,
        name,
        kind: Kind::Optimade,
        remote: Remote {
            variables: Default::default(),
            base_urls: base_urls.into_iter().collect(),
            transport: "http".into(),
        },
        evidence: Evidence {
            source_type: "optimade".into(),
            license: None,
        },
        metadata: Metadata {
            title: None,
            format: Some(match &api_version {
                Some(v) => format!("optimade {v}"),
                None => "optimade".to_string(),
            }),
            version: api_version,
        },
        endpoints: endpoints.into_iter().map(std::sync::Arc::new).collect(),
        definitions,
        instructions: None,
    })
}

fn read_endpoint(name: &str, path: &str) -> EndpointSpec {
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
        method: "GET".into(),
        name: name.into(),
        open_world: false,
        operation_id: None,
        output_schema: None,
        parameters: Vec::new(),
        path: path.into(),
        path_template: path.into(),
        read_only: true,
        request_body: None,
        responses: Default::default(),
        security: Vec::new(),
        title: None,
    }
}

/// The schema of one entry of type `t`: one property per OPTIMADE property.
fn entry_schema(t: &str, fields: Option<&Map<String, Value>>) -> Result<Value, NormalizeError> {
    let mut properties = Map::new();
    if let Some(props) = fields.and_then(|f| f.get("properties")) {
        let props = props
            .as_object()
            .ok_or_else(|| invalid(&format!("entry_info.{t}.properties"), "must be an object"))?;
        for (name, def) in props {
            let at = format!("entry_info.{t}.properties.{name}");
            let def = def
                .as_object()
                .ok_or_else(|| invalid(&at, "a property definition must be an object"))?;
            properties.insert(name.clone(), property_schema(name, def));
        }
    }
    let required: Vec<Value> = ["id", "type"]
        .into_iter()
        .filter(|k| properties.contains_key(*k))
        .map(|k| json!(k))
        .collect();
    Ok(normalize_schema(&json!({
        "type": "object", "properties": properties, "required": required
    })))
}

fn property_schema(name: &str, def: &Map<String, Value>) -> Value {
    let mut schema = Map::new();
    let nullable = !matches!(name, "id" | "type");
    let optimade_type = def.get("type").and_then(Value::as_str);
    let (json_type, format) = match optimade_type {
        Some("string") => (Some("string"), None),
        Some("integer") => (Some("integer"), None),
        Some("float") => (Some("number"), None),
        Some("boolean") => (Some("boolean"), None),
        Some("timestamp") => (Some("string"), Some("date-time")),
        Some("list") => (Some("array"), None),
        Some("dictionary") => (Some("object"), None),
        // Unknown type names are compared by name.
        Some(other) => (None, Some(other)),
        None => (None, None),
    };
    if let Some(t) = json_type {
        schema.insert(
            "type".into(),
            if nullable {
                json!([t, "null"])
            } else {
                json!(t)
            },
        );
    }
    if let Some(f) = format {
        schema.insert("format".into(), json!(f));
    }
    for key in ["description", "unit"] {
        if let Some(v) = def.get(key) {
            schema.insert(key.into(), v.clone());
        }
    }
    Value::Object(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_document() {
        let doc = json!({
            "info": {"data": {"type": "info", "id": "/", "attributes": {
                "api_version": "1.1.0",
                "available_api_versions": [{"url": "https://example.org/v1", "version": "1.1.0"}],
                "formats": ["json"], "entry_types_by_format": {"json": ["structures"]},
                "available_endpoints": ["info", "links", "structures"]}}},
            "entry_info": {"structures": {"data": {"description": "S", "formats": ["json"],
                "properties": {"id": {"type": "string"}, "nsites": {"type": "integer", "unit": "1"}},
                "output_fields_by_format": {"json": ["id"]}}}}
        });
        let spec = normalize_value("ns.opt", &doc).unwrap();
        let ids: Vec<String> = spec.endpoints.iter().map(|e| e.identity()).collect();
        assert_eq!(
            ids,
            vec![
                "GET /info",
                "GET /links",
                "GET /structures",
                "GET /structures/{}"
            ]
        );
        assert_eq!(spec.remote.base_urls, vec!["https://example.org/v1"]);
        let def = &spec.definitions["#/entry_types/structures"];
        assert_eq!(def["properties"]["id"]["type"], json!("string"));
        assert_eq!(
            def["properties"]["nsites"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(def["required"], json!(["id"]));

        let mut missing = doc.clone();
        missing["entry_info"] = json!({});
        let err = normalize_value("ns.opt", &missing).unwrap_err().to_string();
        assert!(err.contains("structures"), "{err}");
        assert!(normalize_value("ns.opt", &json!({"data": {"type": "links"}})).is_err());
        assert!(normalize_value("ns.opt", &json!({"entry_info": {"../x": {}}})).is_err());
    }
}
