//! OData CSDL XML `$metadata` (v4 `edmx:Edmx Version="4.0"`, and v2/v3 EDMX) → ToolSpec.
//!
//! XML is parsed with roxmltree: DTDs are rejected (so no entity expansion, no XXE;
//! docs/reliability.md P12) and the node count is capped. Elements are matched by local name, so
//! every CSDL namespace generation (2006/04 … 2009/11, OASIS v4) reads the same way; schema
//! aliases (`graph` for `microsoft.graph`) are resolved to namespaces.
//!
//! - Entity, complex and enum types and type definitions become JSON Schema definitions keyed
//!   `#/types/<Namespace.Name>`. Properties: Edm primitive types map to JSON types and formats;
//!   `Nullable="false"` makes a property required (and keeps `null` out of its type);
//!   `Collection(T)` is an array; navigation properties reference their target type (never
//!   required: they are only present on `$expand`); `BaseType` is `allOf: [base, own]`;
//!   `OpenType` allows additional properties; enum types are string enums of member names.
//! - An entity set gives five endpoints: `GET /Set` (read-only collection), `GET /Set({})`,
//!   `POST /Set` (insert), `PATCH /Set({})` (update) and `DELETE /Set({})` (destructive); key
//!   properties are `key` parameters. The entity type is the request schema of insert/update
//!   and the response schema of reads, so both directions' rules apply to it (docs/design.md).
//!   A singleton gives `GET /Name` and `PATCH /Name`.
//! - Functions are `FUNCTION` (read-only, idempotent), actions `ACTION` (side effects).
//!   Bound operations live at `/<binding type>/<Namespace.Name>`, unbound ones at
//!   `/<ImportName>` through their function/action import (v2/v3 `FunctionImport` with
//!   `m:HttpMethod="GET"` or `IsSideEffecting="false"` is a function). Overloads get their
//!   parameter names appended to the path. A function and an action with the same name and
//!   binding share an `operation_id`, so function → action is one escalated operation.
//! - Remote: the service root (`/`, relative to `$metadata`) with transport `odata-v<major>`.
//!   Annotations (capabilities, alternate keys, descriptions) are outside the contract.

use super::schema::normalize_schema;
use super::{split_watch_name, NormalizeError};
use crate::core::model::{EndpointSpec, Evidence, Kind, Metadata, ParameterSpec, Remote, ToolSpec};
use roxmltree::{Document, Node, ParsingOptions};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Most XML nodes (elements, attributes' owners, text) parsed from one document.
pub const MAX_XML_NODES: u32 = 4_000_000;
/// Deepest element nesting accepted (CSDL needs about 10 levels).
pub const MAX_XML_DEPTH: usize = 64;
/// Longest `BaseType` chain followed when looking for an entity type's key.
const MAX_BASE_CHAIN: usize = 64;

fn invalid(at: &str, problem: impl Into<String>) -> NormalizeError {
    NormalizeError::Invalid {
        at: at.to_string(),
        problem: problem.into(),
    }
}

/// Normalizes a CSDL XML document for the watch named `watch` (`namespace.name`).
pub fn normalize(watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes)
        .map_err(|_| invalid("document", "CSDL XML is not valid UTF-8"))?;
    let options = ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_XML_NODES,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(text, options)
        .map_err(|e| invalid("document", format!("invalid XML: {e}")))?;
    let root = doc.root_element();
    if root.tag_name().name() != "Edmx" {
        return Err(invalid(
            "document",
            format!(
                "not an OData CSDL document (root element <{}>, expected <edmx:Edmx>)",
                root.tag_name().name()
            ),
        ));
    }
    for node in root.descendants() {
        if node.is_element() && node.ancestors().count() > MAX_XML_DEPTH {
            return Err(invalid(
                "document",
                format!("XML nested deeper than {MAX_XML_DEPTH} elements"),
            ));
        }
    }
    Model::read(root)?.into_spec(watch)
}

fn children<'a, 'i>(node: Node<'a, 'i>, name: &'static str) -> impl Iterator<Item = Node<'a, 'i>> {
    node.children()
        .filter(move |c| c.is_element() && c.tag_name().name() == name)
}

/// An attribute by local name, whatever its namespace (`m:HttpMethod`).
fn any_ns_attribute<'a>(node: Node<'a, '_>, name: &str) -> Option<&'a str> {
    node.attributes()
        .find(|a| a.name() == name)
        .map(|a| a.value())
}

fn required_attr<'a>(node: Node<'a, '_>, name: &str, at: &str) -> Result<&'a str, NormalizeError> {
    node.attribute(name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            invalid(
                at,
                format!("<{}> has no {name} attribute", node.tag_name().name()),
            )
        })
}

struct Operation {
    action: bool,
    qualified: String,
    /// Resolved binding parameter type (`microsoft.graph.user`, `Collection(...)`).
    binding: Option<String>,
    /// (name, schema, required) without the binding parameter, in document order.
    params: Vec<(String, Value, bool)>,
    returns: Option<Value>,
}

struct Import {
    name: String,
    /// v4: the qualified operation imported. v2/v3: the import defines the operation itself.
    target: ImportTarget,
}

enum ImportTarget {
    Operation { qualified: String, action: bool },
    Inline(Operation),
}

#[derive(Default)]
struct Model {
    version: String,
    protocol: String,
    aliases: BTreeMap<String, String>,
    definitions: BTreeMap<String, Value>,
    /// Entity type → own key property names and base type.
    entity_keys: BTreeMap<String, (Vec<String>, Option<String>)>,
    /// Entity/complex type → own property schemas (for key parameter schemas).
    property_schemas: BTreeMap<String, BTreeMap<String, Value>>,
    operations: Vec<Operation>,
    container: Option<String>,
    entity_sets: Vec<(String, String)>,
    singletons: Vec<(String, String)>,
    imports: Vec<Import>,
    /// v2/v3 associations: qualified name → role → (type, multiplicity).
    associations: BTreeMap<String, BTreeMap<String, (String, String)>>,
}

impl Model {
    fn read(root: Node) -> Result<Model, NormalizeError> {
        let mut model = Model {
            version: root.attribute("Version").unwrap_or("").to_string(),
            ..Model::default()
        };
        let services: Vec<Node> = children(root, "DataServices").collect();
        if services.len() != 1 {
            return Err(invalid(
                "Edmx",
                format!("expected one <edmx:DataServices>, found {}", services.len()),
            ));
        }
        let services = services[0];
        model.protocol = if model.version.starts_with('4') {
            "4".into()
        } else {
            any_ns_attribute(services, "MaxDataServiceVersion")
                .or_else(|| any_ns_attribute(services, "DataServiceVersion"))
                .and_then(|v| v.split('.').next())
                .unwrap_or("2")
                .to_string()
        };
        let schemas: Vec<Node> = children(services, "Schema").collect();
        for schema in &schemas {
            let ns = required_attr(*schema, "Namespace", "Schema")?;
            model.aliases.insert(ns.to_string(), ns.to_string());
            if let Some(alias) = schema.attribute("Alias") {
                model.aliases.insert(alias.to_string(), ns.to_string());
            }
        }
        // Associations first: v2/v3 navigation properties need them.
        for schema in &schemas {
            let ns = required_attr(*schema, "Namespace", "Schema")?;
            for assoc in children(*schema, "Association") {
                let name = required_attr(assoc, "Name", ns)?;
                let mut ends = BTreeMap::new();
                for end in children(assoc, "End") {
                    let at = format!("{ns}.{name}");
                    ends.insert(
                        required_attr(end, "Role", &at)?.to_string(),
                        (
                            model.qualify(required_attr(end, "Type", &at)?),
                            end.attribute("Multiplicity").unwrap_or("1").to_string(),
                        ),
                    );
                }
                model.associations.insert(format!("{ns}.{name}"), ends);
            }
        }
        let mut declared = BTreeSet::new();
        for schema in &schemas {
            let ns = required_attr(*schema, "Namespace", "Schema")?;
            for node in schema.children().filter(|c| c.is_element()) {
                let kind = node.tag_name().name();
                if matches!(
                    kind,
                    "EntityType" | "ComplexType" | "EnumType" | "TypeDefinition"
                ) {
                    let name = required_attr(node, "Name", ns)?;
                    if !declared.insert(format!("{ns}.{name}")) {
                        return Err(invalid(ns, format!("type {ns}.{name} is declared twice")));
                    }
                }
            }
        }
        for schema in &schemas {
            let ns = required_attr(*schema, "Namespace", "Schema")?;
            for node in schema.children().filter(|c| c.is_element()) {
                match node.tag_name().name() {
                    "EntityType" | "ComplexType" => model.structured(ns, node, &declared)?,
                    "EnumType" => {
                        let name = required_attr(node, "Name", ns)?;
                        let members: Vec<Value> = children(node, "Member")
                            .filter_map(|m| m.attribute("Name"))
                            .map(|m| json!(m))
                            .collect();
                        let mut schema = json!({"type": "string", "enum": members});
                        if node.attribute("IsFlags") == Some("true") {
                            schema["format"] = json!("odata-flags");
                        }
                        model
                            .definitions
                            .insert(def_ref(&format!("{ns}.{name}")), normalize_schema(&schema));
                    }
                    "TypeDefinition" => {
                        let name = required_attr(node, "Name", ns)?;
                        let underlying = required_attr(node, "UnderlyingType", name)?;
                        let schema = model.type_schema(underlying, node, false, &declared);
                        model
                            .definitions
                            .insert(def_ref(&format!("{ns}.{name}")), normalize_schema(&schema));
                    }
                    "Function" | "Action" => {
                        let op = model.operation(ns, node, &declared)?;
                        model.operations.push(op);
                    }
                    "EntityContainer" => model.read_container(ns, node, &declared)?,
                    _ => {}
                }
            }
        }
        Ok(model)
    }

    /// `graph.user` → `microsoft.graph.user`; `Collection(graph.user)` likewise inside.
    fn qualify(&self, name: &str) -> String {
        if let Some(inner) = collection_of(name) {
            return format!("Collection({})", self.qualify(inner));
        }
        match name.rsplit_once('.') {
            Some((prefix, local)) => match self.aliases.get(prefix) {
                Some(ns) => format!("{ns}.{local}"),
                None => name.to_string(),
            },
            None => name.to_string(),
        }
    }

    /// The JSON Schema of a property/parameter/return type.
    fn type_schema(
        &self,
        type_name: &str,
        facets: Node,
        nullable: bool,
        declared: &BTreeSet<String>,
    ) -> Value {
        if let Some(inner) = collection_of(type_name) {
            return json!({"type": "array", "items": self.type_schema(inner, facets, nullable, declared)});
        }
        let (json_type, format) = match type_name {
            "Edm.String" => ("string", None),
            "Edm.Boolean" => ("boolean", None),
            "Edm.Byte" => ("integer", Some("uint8")),
            "Edm.SByte" => ("integer", Some("int8")),
            "Edm.Int16" => ("integer", Some("int16")),
            "Edm.Int32" => ("integer", Some("int32")),
            "Edm.Int64" => ("integer", Some("int64")),
            "Edm.Decimal" => ("number", Some("decimal")),
            "Edm.Double" => ("number", Some("double")),
            "Edm.Single" => ("number", Some("float")),
            "Edm.Guid" => ("string", Some("uuid")),
            "Edm.Date" => ("string", Some("date")),
            "Edm.DateTimeOffset" | "Edm.DateTime" => ("string", Some("date-time")),
            "Edm.TimeOfDay" => ("string", Some("time")),
            "Edm.Duration" | "Edm.Time" => ("string", Some("duration")),
            "Edm.Binary" => ("string", Some("base64url")),
            "Edm.Stream" => ("string", Some("odata-stream")),
            "Edm.Untyped" | "Edm.PrimitiveType" | "Edm.ComplexType" | "Edm.EntityType" => {
                return json!({});
            }
            other if other.starts_with("Edm.Geography") || other.starts_with("Edm.Geometry") => {
                let mut s = json!({"type": "object", "format": other});
                if nullable {
                    s["type"] = json!(["null", "object"]);
                }
                return s;
            }
            other => {
                let qualified = self.qualify(other);
                if declared.contains(&qualified) {
                    return json!({"$ref": def_ref(&qualified)});
                }
                // A type from a referenced document we do not have: compare it by name.
                return json!({"format": format!("odata-type:{qualified}")});
            }
        };
        let mut schema = Map::new();
        schema.insert(
            "type".into(),
            if nullable {
                json!([json_type, "null"])
            } else {
                json!(json_type)
            },
        );
        if let Some(f) = format {
            schema.insert("format".into(), json!(f));
        }
        if json_type == "string" && format.is_none() {
            if let Some(max) = facets
                .attribute("MaxLength")
                .and_then(|m| m.parse::<u64>().ok())
            {
                schema.insert("maxLength".into(), json!(max));
            }
        }
        Value::Object(schema)
    }

    fn structured(
        &mut self,
        ns: &str,
        node: Node,
        declared: &BTreeSet<String>,
    ) -> Result<(), NormalizeError> {
        let name = required_attr(node, "Name", ns)?;
        let qualified = format!("{ns}.{name}");
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut own = BTreeMap::new();
        for prop in children(node, "Property") {
            let pname = required_attr(prop, "Name", &qualified)?;
            let ptype = required_attr(prop, "Type", &qualified)?;
            let nullable = prop.attribute("Nullable") != Some("false");
            if !nullable {
                required.push(json!(pname));
            }
            let schema = self.type_schema(ptype, prop, nullable, declared);
            own.insert(pname.to_string(), schema.clone());
            if properties.insert(pname.to_string(), schema).is_some() {
                return Err(invalid(
                    &qualified,
                    format!("property {pname} is declared twice"),
                ));
            }
        }
        for nav in children(node, "NavigationProperty") {
            let pname = required_attr(nav, "Name", &qualified)?;
            let target = match nav.attribute("Type") {
                Some(t) => t.to_string(),
                None => {
                    // v2/v3: the type is the association end named by ToRole.
                    let relationship = self.qualify(required_attr(nav, "Relationship", pname)?);
                    let role = required_attr(nav, "ToRole", pname)?;
                    match self
                        .associations
                        .get(&relationship)
                        .and_then(|ends| ends.get(role))
                    {
                        Some((t, multiplicity)) if multiplicity == "*" => {
                            format!("Collection({t})")
                        }
                        Some((t, _)) => t.clone(),
                        None => {
                            return Err(invalid(
                                &qualified,
                                format!(
                                    "navigation property {pname}: association {relationship} has no role {role}"
                                ),
                            ))
                        }
                    }
                }
            };
            let schema = self.type_schema(&target, nav, false, declared);
            if properties.insert(pname.to_string(), schema).is_some() {
                return Err(invalid(
                    &qualified,
                    format!("property {pname} is declared twice"),
                ));
            }
        }
        let mut schema = json!({"type": "object", "properties": properties, "required": required});
        if node.attribute("OpenType") == Some("true") {
            schema["additionalProperties"] = json!(true);
        }
        let base = node.attribute("BaseType").map(|b| self.qualify(b));
        if let Some(base) = &base {
            schema = json!({"allOf": [{"$ref": def_ref(base)}, schema]});
        }
        if node.tag_name().name() == "EntityType" {
            let keys: Vec<String> = children(node, "Key")
                .flat_map(|k| children(k, "PropertyRef"))
                .filter_map(|r| r.attribute("Name"))
                .map(String::from)
                .collect();
            self.entity_keys.insert(qualified.clone(), (keys, base));
        }
        self.property_schemas.insert(qualified.clone(), own);
        self.definitions
            .insert(def_ref(&qualified), normalize_schema(&schema));
        Ok(())
    }

    fn operation(
        &self,
        ns: &str,
        node: Node,
        declared: &BTreeSet<String>,
    ) -> Result<Operation, NormalizeError> {
        let name = required_attr(node, "Name", ns)?;
        let qualified = format!("{ns}.{name}");
        let bound = node.attribute("IsBound") == Some("true");
        let mut binding = None;
        let mut params = Vec::new();
        for (i, p) in children(node, "Parameter").enumerate() {
            let pname = required_attr(p, "Name", &qualified)?;
            let ptype = required_attr(p, "Type", &qualified)?;
            if bound && i == 0 {
                binding = Some(self.qualify(ptype));
                continue;
            }
            let optional = children(p, "Annotation").any(|a| {
                a.attribute("Term")
                    .is_some_and(|t| t.ends_with("OptionalParameter"))
            });
            let nullable = p.attribute("Nullable") != Some("false");
            params.push((
                pname.to_string(),
                self.type_schema(ptype, p, nullable, declared),
                !optional,
            ));
        }
        if bound && binding.is_none() {
            return Err(invalid(
                &qualified,
                "bound operation without a binding parameter",
            ));
        }
        let returns = children(node, "ReturnType").next().map(|r| {
            let nullable = r.attribute("Nullable") != Some("false");
            self.type_schema(
                r.attribute("Type").unwrap_or("Edm.Untyped"),
                r,
                nullable,
                declared,
            )
        });
        Ok(Operation {
            action: node.tag_name().name() == "Action",
            qualified,
            binding,
            params,
            returns,
        })
    }

    fn read_container(
        &mut self,
        ns: &str,
        node: Node,
        declared: &BTreeSet<String>,
    ) -> Result<(), NormalizeError> {
        let cname = required_attr(node, "Name", ns)?;
        if self.container.is_some() {
            return Err(invalid(ns, "more than one EntityContainer"));
        }
        self.container = Some(format!("{ns}.{cname}"));
        for member in node.children().filter(|c| c.is_element()) {
            let at = format!("{ns}.{cname}");
            match member.tag_name().name() {
                "EntitySet" => self.entity_sets.push((
                    required_attr(member, "Name", &at)?.to_string(),
                    self.qualify(required_attr(member, "EntityType", &at)?),
                )),
                "Singleton" => self.singletons.push((
                    required_attr(member, "Name", &at)?.to_string(),
                    self.qualify(required_attr(member, "Type", &at)?),
                )),
                "ActionImport" => self.imports.push(Import {
                    name: required_attr(member, "Name", &at)?.to_string(),
                    target: ImportTarget::Operation {
                        qualified: self.qualify(required_attr(member, "Action", &at)?),
                        action: true,
                    },
                }),
                "FunctionImport" => {
                    let name = required_attr(member, "Name", &at)?.to_string();
                    let target = match member.attribute("Function") {
                        Some(f) => ImportTarget::Operation {
                            qualified: self.qualify(f),
                            action: false,
                        },
                        None => {
                            // v2/v3: the import is the operation.
                            let side_effecting = member.attribute("IsSideEffecting")
                                != Some("false")
                                && any_ns_attribute(member, "HttpMethod")
                                    .is_none_or(|m| !m.eq_ignore_ascii_case("GET"));
                            let mut params = Vec::new();
                            for p in children(member, "Parameter") {
                                let pname = required_attr(p, "Name", &name)?;
                                let ptype = required_attr(p, "Type", &name)?;
                                let nullable = p.attribute("Nullable") != Some("false");
                                params.push((
                                    pname.to_string(),
                                    self.type_schema(ptype, p, nullable, declared),
                                    true,
                                ));
                            }
                            let returns = member
                                .attribute("ReturnType")
                                .map(|t| self.type_schema(t, member, true, declared));
                            ImportTarget::Inline(Operation {
                                action: side_effecting,
                                qualified: format!("{ns}.{cname}.{name}"),
                                binding: None,
                                params,
                                returns,
                            })
                        }
                    };
                    self.imports.push(Import { name, target });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Key properties of an entity type (inherited through `BaseType`), with their schemas.
    fn keys(&self, entity: &str) -> Vec<(String, Value)> {
        let mut current = Some(entity.to_string());
        for _ in 0..MAX_BASE_CHAIN {
            let Some(name) = current else { break };
            let Some((keys, base)) = self.entity_keys.get(&name) else {
                break;
            };
            if !keys.is_empty() {
                return keys
                    .iter()
                    .map(|k| (k.clone(), self.property_schema(&name, k)))
                    .collect();
            }
            current = base.clone();
        }
        Vec::new()
    }

    /// A property's schema, looked up through the base types (key properties may be inherited).
    fn property_schema(&self, entity: &str, property: &str) -> Value {
        let mut current = Some(entity.to_string());
        for _ in 0..MAX_BASE_CHAIN {
            let Some(name) = current else { break };
            if let Some(schema) = self
                .property_schemas
                .get(&name)
                .and_then(|props| props.get(property))
            {
                return normalize_schema(schema);
            }
            current = self
                .entity_keys
                .get(&name)
                .and_then(|(_, base)| base.clone());
        }
        json!({})
    }

    fn into_spec(self, watch: &str) -> Result<ToolSpec, NormalizeError> {
        let mut endpoints: Vec<EndpointSpec> = Vec::new();
        for (set, entity) in &self.entity_sets {
            let entity_ref = json!({"$ref": def_ref(entity)});
            let keys = self.key_parameters(entity);
            let collection = json!({"type": "array", "items": entity_ref.clone()});
            endpoints.push(entity_endpoint(
                set,
                "GET",
                &format!("/{set}"),
                vec![],
                None,
                Some(collection),
            ));
            let by_key = format!("/{set}({{}})");
            endpoints.push(entity_endpoint(
                &format!("{set}.get"),
                "GET",
                &by_key,
                keys.clone(),
                None,
                Some(entity_ref.clone()),
            ));
            endpoints.push(entity_endpoint(
                &format!("{set}.create"),
                "POST",
                &format!("/{set}"),
                vec![],
                Some(entity_ref.clone()),
                Some(entity_ref.clone()),
            ));
            endpoints.push(entity_endpoint(
                &format!("{set}.update"),
                "PATCH",
                &by_key,
                keys.clone(),
                Some(entity_ref.clone()),
                None,
            ));
            endpoints.push(entity_endpoint(
                &format!("{set}.delete"),
                "DELETE",
                &by_key,
                keys,
                None,
                None,
            ));
        }
        for (name, entity) in &self.singletons {
            let entity_ref = json!({"$ref": def_ref(entity)});
            endpoints.push(entity_endpoint(
                name,
                "GET",
                &format!("/{name}"),
                vec![],
                None,
                Some(entity_ref.clone()),
            ));
            endpoints.push(entity_endpoint(
                &format!("{name}.update"),
                "PATCH",
                &format!("/{name}"),
                vec![],
                Some(entity_ref),
                None,
            ));
        }
        // Bound operations, grouped to find overloads.
        let mut bound: BTreeMap<(String, String), Vec<&Operation>> = BTreeMap::new();
        for op in &self.operations {
            if let Some(binding) = &op.binding {
                bound
                    .entry((binding.clone(), op.qualified.clone()))
                    .or_default()
                    .push(op);
            }
        }
        for ((binding, qualified), ops) in &bound {
            let overloaded = ops.len() > 1;
            for op in ops {
                let path = format!("/{binding}/{qualified}{}", overload_suffix(op, overloaded));
                endpoints.push(operation_endpoint(
                    op,
                    &path,
                    &format!("{qualified}({binding})"),
                ));
            }
        }
        for import in &self.imports {
            match &import.target {
                ImportTarget::Inline(op) => {
                    let path = format!("/{}", import.name);
                    endpoints.push(operation_endpoint(op, &path, &format!("{}()", import.name)));
                }
                ImportTarget::Operation { qualified, action } => {
                    let ops: Vec<&Operation> = self
                        .operations
                        .iter()
                        .filter(|o| {
                            o.binding.is_none() && &o.qualified == qualified && o.action == *action
                        })
                        .collect();
                    if ops.is_empty() {
                        return Err(invalid(
                            &import.name,
                            format!("import of unknown unbound operation {qualified}"),
                        ));
                    }
                    let overloaded = ops.len() > 1;
                    for op in ops {
                        let path = format!("/{}{}", import.name, overload_suffix(op, overloaded));
                        endpoints.push(operation_endpoint(
                            op,
                            &path,
                            &format!("{}()", import.name),
                        ));
                    }
                }
            }
        }
        let mut seen = BTreeSet::new();
        for e in &endpoints {
            if !seen.insert(e.identity()) {
                return Err(NormalizeError::DuplicateEndpoint(e.identity()));
            }
        }
        endpoints.sort_by_key(|e| e.identity());
        let (namespace, name) = split_watch_name(watch);
        Ok(ToolSpec {
            directives: Default::default(),
            roots: Default::default(),
            capabilities: None,
            extensions: BTreeMap::new(),
            namespace,
            name,
            kind: Kind::Odata,
            remote: Remote {
                variables: Default::default(),
                base_urls: vec!["/".into()],
                transport: format!("odata-v{}", self.protocol),
            },
            evidence: Evidence {
                source_type: "odata".into(),
                license: None,
            },
            metadata: Metadata {
                title: self.container.clone(),
                version: None,
                format: Some(format!("odata csdl {}", self.version)),
            },
            endpoints,
            definitions: self.definitions,
            instructions: None,
        })
    }

    fn key_parameters(&self, entity: &str) -> Vec<ParameterSpec> {
        let mut params: Vec<ParameterSpec> = self
            .keys(entity)
            .into_iter()
            .map(|(name, schema)| ParameterSpec {
                deprecated: false,
                description: None,
                location: "key".into(),
                name,
                required: true,
                schema,
                style: BTreeMap::new(),
            })
            .collect();
        params.sort_by(|a, b| a.name.cmp(&b.name));
        params
    }
}

fn collection_of(name: &str) -> Option<&str> {
    name.strip_prefix("Collection(")?.strip_suffix(')')
}

fn def_ref(qualified: &str) -> String {
    format!("#/types/{qualified}")
}

fn overload_suffix(op: &Operation, overloaded: bool) -> String {
    if !overloaded {
        return String::new();
    }
    let names: Vec<&str> = op.params.iter().map(|(n, _, _)| n.as_str()).collect();
    format!("({})", names.join(","))
}

fn base_endpoint(name: &str, method: &str, path: &str) -> EndpointSpec {
    EndpointSpec {
        extensions: Default::default(),
        servers: Vec::new(),
        aliases: Vec::new(),
        deprecated: false,
        description: None,
        destructive: false,
        idempotent: false,
        input_schema: None,
        meta: None,
        method: method.into(),
        name: name.into(),
        open_world: false,
        operation_id: None,
        output_schema: None,
        parameters: Vec::new(),
        path: path.into(),
        path_template: path.into(),
        read_only: false,
        request_body: None,
        responses: BTreeMap::new(),
        security: Vec::new(),
        title: None,
    }
}

fn entity_endpoint(
    name: &str,
    method: &str,
    path: &str,
    parameters: Vec<ParameterSpec>,
    input: Option<Value>,
    output: Option<Value>,
) -> EndpointSpec {
    let mut e = base_endpoint(name, method, path);
    e.read_only = method == "GET";
    e.destructive = method == "DELETE";
    e.idempotent = matches!(method, "GET" | "DELETE");
    e.parameters = parameters;
    e.input_schema = input;
    e.output_schema = output;
    e
}

fn operation_endpoint(op: &Operation, path: &str, operation_id: &str) -> EndpointSpec {
    let method = if op.action { "ACTION" } else { "FUNCTION" };
    let mut e = base_endpoint(path.trim_start_matches('/'), method, path);
    e.read_only = !op.action;
    e.idempotent = !op.action;
    // Actions may reach beyond the service; functions are side-effect free by definition.
    e.open_world = op.action;
    e.operation_id = Some(format!("{operation_id}{}", path_suffix_of(path)));
    let mut parameters: Vec<ParameterSpec> = op
        .params
        .iter()
        .map(|(name, schema, required)| ParameterSpec {
            deprecated: false,
            description: None,
            location: "param".into(),
            name: name.clone(),
            required: *required,
            schema: normalize_schema(schema),
            style: BTreeMap::new(),
        })
        .collect();
    parameters.sort_by(|a, b| a.name.cmp(&b.name));
    e.parameters = parameters;
    e.output_schema = op.returns.as_ref().map(normalize_schema);
    e
}

/// The overload suffix of a path (`(a,b)`), so overloads keep distinct operation ids.
fn path_suffix_of(path: &str) -> &str {
    match (path.ends_with(')'), path.rfind('(')) {
        (true, Some(i)) if !path[i..].contains('/') => &path[i..],
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V4: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:DataServices>
    <Schema Namespace="Demo.Models" Alias="d" xmlns="http://docs.oasis-open.org/odata/ns/edm">
      <EnumType Name="Color"><Member Name="Red"/><Member Name="Blue"/></EnumType>
      <EntityType Name="Base"><Key><PropertyRef Name="Id"/></Key>
        <Property Name="Id" Type="Edm.Int64" Nullable="false"/></EntityType>
      <EntityType Name="Thing" BaseType="d.Base">
        <Property Name="Name" Type="Edm.String" MaxLength="40"/>
        <Property Name="Color" Type="d.Color" Nullable="false"/>
        <Property Name="Tags" Type="Collection(Edm.String)"/>
        <NavigationProperty Name="Parent" Type="d.Thing"/>
      </EntityType>
      <Function Name="Count" IsBound="true"><Parameter Name="things" Type="Collection(d.Thing)"/>
        <ReturnType Type="Edm.Int32" Nullable="false"/></Function>
      <Action Name="Reset"><Parameter Name="hard" Type="Edm.Boolean"/></Action>
      <EntityContainer Name="Svc">
        <EntitySet Name="Things" EntityType="d.Thing"/>
        <Singleton Name="Me" Type="Demo.Models.Thing"/>
        <ActionImport Name="Reset" Action="d.Reset"/>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>"#;

    #[test]
    fn v4_model() {
        let spec = normalize("ns.demo", V4.as_bytes()).unwrap();
        let ids: Vec<String> = spec.endpoints.iter().map(|e| e.identity()).collect();
        assert!(ids.contains(&"GET /Things".to_string()), "{ids:?}");
        assert!(ids.contains(&"DELETE /Things({})".to_string()));
        assert!(ids.contains(&"ACTION /Reset".to_string()));
        assert!(
            ids.contains(&"FUNCTION /Collection(Demo.Models.Thing)/Demo.Models.Count".to_string()),
            "{ids:?}"
        );
        assert!(ids.contains(&"PATCH /Me".to_string()));
        let get = spec
            .endpoints
            .iter()
            .find(|e| e.name == "Things.get")
            .unwrap();
        assert_eq!(get.parameters[0].name, "Id");
        assert_eq!(
            get.parameters[0].schema,
            json!({"type": "integer", "format": "int64"})
        );
        let thing = &spec.definitions["#/types/Demo.Models.Thing"];
        let own = &thing["allOf"][1];
        assert_eq!(own["required"], json!(["Color"]));
        assert_eq!(
            own["properties"]["Name"],
            json!({"type": ["null", "string"], "maxLength": 40})
        );
        assert_eq!(
            own["properties"]["Parent"],
            json!({"$ref": "#/types/Demo.Models.Thing"})
        );
        assert_eq!(
            thing["allOf"][0],
            json!({"$ref": "#/types/Demo.Models.Base"})
        );
        let count = spec
            .endpoints
            .iter()
            .find(|e| e.method == "FUNCTION")
            .unwrap();
        assert!(count.read_only && !count.open_world);
        assert_eq!(
            count.output_schema,
            Some(json!({"type": "integer", "format": "int32"}))
        );
        let reset = spec
            .endpoints
            .iter()
            .find(|e| e.method == "ACTION")
            .unwrap();
        assert!(!reset.read_only);
        assert_eq!(spec.remote.transport, "odata-v4");
    }

    #[test]
    fn hostile_xml_is_rejected() {
        let bomb = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><edmx:Edmx xmlns:edmx="x">&lol2;</edmx:Edmx>"#;
        let err = normalize("a.b", bomb.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("DTD"), "{err}");
        let xxe = r#"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><edmx:Edmx xmlns:edmx="x">&x;</edmx:Edmx>"#;
        assert!(normalize("a.b", xxe.as_bytes()).is_err());
        let deep = format!(
            "<edmx:Edmx xmlns:edmx=\"x\">{}{}</edmx:Edmx>",
            "<a>".repeat(5000),
            "</a>".repeat(5000)
        );
        let err = normalize("a.b", deep.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("nested") || err.contains("XML"), "{err}");
        let truncated = &V4[..V4.len() / 2];
        assert!(normalize("a.b", truncated.as_bytes()).is_err());
        assert!(normalize("a.b", b"<html></html>").is_err());
    }

    #[test]
    fn function_becoming_action_is_an_escalation() {
        use crate::core::diff::classify;
        use crate::core::model::Compatibility;
        let as_action = V4
            .replace(
                r#"<Function Name="Count" IsBound="true">"#,
                r#"<Action Name="Count" IsBound="true">"#,
            )
            .replace("</ReturnType></Function>", "</ReturnType></Action>")
            .replace(
                r#"Nullable="false"/></Function>"#,
                r#"Nullable="false"/></Action>"#,
            );
        assert_ne!(as_action, V4);
        let old = normalize("ns.demo", V4.as_bytes()).unwrap();
        let new = normalize("ns.demo", as_action.as_bytes()).unwrap();
        let report = classify(&old, &new, &Default::default());
        assert_eq!(
            report.compatibility,
            Compatibility::SecurityReview,
            "{:#?}",
            report.changes
        );
        assert!(
            report.changes.iter().any(|c| c.rule == "method-escalated"),
            "{:#?}",
            report.changes
        );
        assert!(!report.changes.iter().any(|c| c.rule == "endpoint-removed"));
    }

    #[test]
    fn v3_associations_and_function_imports() {
        let v3 = r#"<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx">
  <edmx:DataServices m:DataServiceVersion="1.0" m:MaxDataServiceVersion="3.0" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
    <Schema Namespace="NW" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">
      <EntityType Name="Order"><Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
        <NavigationProperty Name="Lines" Relationship="NW.Order_Lines" FromRole="Order" ToRole="Lines"/></EntityType>
      <EntityType Name="Line"><Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/></EntityType>
      <Association Name="Order_Lines"><End Role="Order" Type="NW.Order" Multiplicity="1"/>
        <End Role="Lines" Type="NW.Line" Multiplicity="*"/></Association>
      <EntityContainer Name="Entities" m:IsDefaultEntityContainer="true">
        <EntitySet Name="Orders" EntityType="NW.Order"/>
        <FunctionImport Name="TopOrders" ReturnType="Collection(NW.Order)" EntitySet="Orders" m:HttpMethod="GET">
          <Parameter Name="n" Type="Edm.Int32" Mode="In"/></FunctionImport>
        <FunctionImport Name="Purge" m:HttpMethod="POST"/>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>"#;
        let spec = normalize("ns.nw", v3.as_bytes()).unwrap();
        assert_eq!(spec.remote.transport, "odata-v3");
        let order = &spec.definitions["#/types/NW.Order"];
        assert_eq!(
            order["properties"]["Lines"],
            json!({"type": "array", "items": {"$ref": "#/types/NW.Line"}})
        );
        let top = spec
            .endpoints
            .iter()
            .find(|e| e.name == "TopOrders")
            .unwrap();
        assert_eq!(top.method, "FUNCTION");
        assert!(top.read_only);
        assert_eq!(top.parameters[0].name, "n");
        let purge = spec.endpoints.iter().find(|e| e.name == "Purge").unwrap();
        assert_eq!(purge.method, "ACTION");
        assert!(!purge.read_only);
    }
}
