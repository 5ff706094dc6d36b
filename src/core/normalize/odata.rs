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
//! - Facets: `MaxLength` (strings) is `maxLength`; `Precision`, `Scale`, `SRID` and `Unicode`
//!   are kept as stated in `x-odata-facets`; `DefaultValue` is `default`; a navigation property
//!   or a return type of a structured type with `Nullable="false"` carries `x-odata-nullable:
//!   false`, a containment navigation property `x-odata-contains-target: true`.
//! - Capabilities: an entity set (or singleton) whose `InsertRestrictions/Insertable`,
//!   `UpdateRestrictions/Updatable`, `DeleteRestrictions/Deletable` or
//!   `ReadRestrictions/Readable` is false has no endpoint for that verb, so gaining it is an
//!   `endpoint-added-write` (security) and losing it an `endpoint-removed` (breaking).
//!   `Core.Computed` makes a property `readOnly`, `Core.Immutable` `x-odata-immutable`.
//! - Every other annotation (inline or in `<Annotations Target=...>`, `Core.Description`
//!   included) is kept verbatim (deny by default): on its type or property schema in
//!   `x-odata-annotations`, on an entity set's, singleton's or operation's endpoints in `meta`,
//!   anything else in `ToolSpec::extensions` (`annotations.<target>/<term>`). Descriptions are
//!   documentation (info); any other annotation change is `annotation-changed` (breaking).
//! - Addressing: an entity set's `NavigationPropertyBinding`s and a function import's
//!   `EntitySet` are in the endpoints' `meta`; so is a function's `IsComposable`.
//! - Deny by default in the container: an entity set's, singleton's or import's attributes and
//!   child elements the model has no place for are in its endpoints' `meta.unread`
//!   (`unclassified-change`); the container's own (`Extends`, vendor attributes, an unknown
//!   child element) in `ToolSpec::extensions` as `container.odata:<name>`
//!   (`unclassified-change`). A v2/v3 `AssociationSet` is addressing: each end's entity set
//!   binds `Association/Role` of the other end to its set (`bindings`, `addressing-changed`).

use super::schema::normalize_schema;
use super::{split_watch_name, NormalizeError};
use crate::core::model::{EndpointSpec, Evidence, Kind, Metadata, ParameterSpec, Remote, ToolSpec};
use roxmltree::{Document, Node, ParsingOptions};
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// Schema keyword of the annotations kept on a type or property (deny by default).
pub const ANNOTATIONS_KEYWORD: &str = "x-odata-annotations";
/// Schema keyword of the `Precision`, `Scale`, `SRID`, `Unicode` facets as stated.
pub const FACETS_KEYWORD: &str = "x-odata-facets";
/// Schema keyword of an explicit `Nullable="false"` on a navigation property or return type.
pub const NULLABLE_KEYWORD: &str = "x-odata-nullable";
/// Schema keyword of an enum type's member values (`{"Name": "value"}`, as declared).
pub const MEMBER_VALUES_KEYWORD: &str = "odata:MemberValues";
/// Schema keyword of a containment navigation property (`ContainsTarget="true"`).
pub const CONTAINS_TARGET_KEYWORD: &str = "x-odata-contains-target";
/// Schema keyword of a `Core.Immutable` property (settable on insert, never on update).
pub const IMMUTABLE_KEYWORD: &str = "x-odata-immutable";

/// The descriptive allow-list of an OData CSDL document (`docs/allow-list.md`). Annotations,
/// and the attributes and child elements of types and properties the model has no place for,
/// are kept verbatim (deny by default; an unread property or type attribute is an `odata:`
/// schema keyword, `schema-keyword-changed`).
pub const DESCRIPTIVE: &[(&str, &str)] = &[
    (
        "edmx:Reference/@Uri",
        "where a vocabulary is published; its namespace is what counts",
    ),
    (
        "Schema/@Alias, edmx:Include/@Alias",
        "aliases are resolved to namespaces",
    ),
    (
        "EntitySet/@IncludeInServiceDocument, FunctionImport/@IncludeInServiceDocument",
        "whether the service document lists it; its URL and every call are the same",
    ),
    (
        "AssociationSet/@Name, EntityContainer/@IsDefaultEntityContainer (v2/v3)",
        "an association set is matched by its association and ends; the one container is the default",
    ),
    (
        "EntityContainer/@Name",
        "descriptive metadata (`metadata.title`); annotation targets are resolved through it",
    ),
    ("(element and attribute order)", "matched by name"),
    ("Edmx/@Version (beyond its major version)", "the protocol is the major version (`remote.transport`); the rest is descriptive (`metadata.format`)"),
    ("Function/Parameter/@Name, Action/Parameter/@Name (the binding parameter's)", "a bound operation's first parameter is its binding, never named in a call"),
    (
        "types no entity set, singleton or operation reaches",
        "unreachable: outside every endpoint's contract",
    ),
];
/// The entity container's children with a place in the model; any other is kept verbatim.
const CONTAINER_MEMBERS: &[&str] = &[
    "EntitySet",
    "Singleton",
    "ActionImport",
    "FunctionImport",
    "AssociationSet",
];
/// Property attributes with a place in the model.
const PROPERTY_ATTRIBUTES: &[&str] = &[
    "Name",
    "Type",
    "Nullable",
    "MaxLength",
    "Precision",
    "Scale",
    "SRID",
    "Unicode",
    "DefaultValue",
];
/// Navigation property attributes with a place in the model (v2/v3 `Relationship`, `ToRole`,
/// `FromRole` name its association ends).
const NAVIGATION_ATTRIBUTES: &[&str] = &[
    "Name",
    "Type",
    "Nullable",
    "ContainsTarget",
    "Relationship",
    "ToRole",
    "FromRole",
];

/// Attributes outside `modelled` and child elements other than annotations, as `odata:` schema
/// keywords (deny by default).
fn unread(node: Node, modelled: &[&str], read_children: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for a in node.attributes() {
        if !modelled.contains(&a.name()) {
            out.insert(format!("odata:{}", a.name()), json!(a.value()));
        }
    }
    for child in node.children().filter(|c| c.is_element()) {
        let tag = child.tag_name().name();
        if tag == "Annotation" || read_children.contains(&tag) {
            continue;
        }
        let entry = out
            .entry(format!("odata:{tag}"))
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(items) = entry {
            items.push(xml_value(child));
        }
    }
    out
}

const CORE: &str = "Org.OData.Core.V1.";
const CAPABILITIES: &str = "Org.OData.Capabilities.V1.";

/// Whether an annotation key (`term` or `target/term`, `#qualifier` included) is documentation.
pub fn is_description(key: &str) -> bool {
    let term = key.split('#').next().unwrap_or(key);
    term.ends_with("Org.OData.Core.V1.Description")
        || term.ends_with("Org.OData.Core.V1.LongDescription")
}

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
    /// `IsComposable="true"` (functions).
    composable: bool,
}

struct Import {
    name: String,
    /// The entity set the import's results belong to (`EntitySet`).
    entity_set: Option<String>,
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
    /// Annotations by target (`Ns.Type/Property`, `Ns.Container/Set`): term key → value.
    annotations: BTreeMap<String, BTreeMap<String, Value>>,
    /// Targets whose annotations found a place in the model; the rest go to the extensions.
    consumed: RefCell<BTreeSet<String>>,
    /// Entity set or singleton → navigation property path → target set.
    bindings: BTreeMap<String, BTreeMap<String, String>>,
    /// The entity container's attributes and child elements the model has no place for
    /// (`Extends`, vendor attributes, unknown elements), as `odata:` keys.
    container_unread: Map<String, Value>,
    /// Entity set, singleton or import → its attributes and child elements the model has no
    /// place for, as `odata:` keys (deny by default).
    member_unread: BTreeMap<String, Map<String, Value>>,
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
        // Vocabulary aliases (`<edmx:Include Namespace="Org.OData.Core.V1" Alias="Core"/>`).
        for include in children(root, "Reference").flat_map(|r| children(r, "Include")) {
            if let (Some(ns), Some(alias)) =
                (include.attribute("Namespace"), include.attribute("Alias"))
            {
                model.aliases.insert(alias.to_string(), ns.to_string());
            }
        }
        for schema in &schemas {
            model.read_annotations(*schema)?;
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
                        let values: Map<String, Value> = children(node, "Member")
                            .filter_map(|m| {
                                Some((
                                    m.attribute("Name")?.to_string(),
                                    json!(m.attribute("Value")?),
                                ))
                            })
                            .collect();
                        if !values.is_empty() {
                            // Member values are how an enum travels in some formats.
                            schema[MEMBER_VALUES_KEYWORD] = Value::Object(values);
                        }
                        let qualified = format!("{ns}.{name}");
                        model.annotate_schema(&qualified, &mut schema);
                        let mut member_notes = Map::new();
                        for m in children(node, "Member").filter_map(|m| m.attribute("Name")) {
                            for (term, v) in model.annotations_of(&format!("{qualified}/{m}")) {
                                member_notes.insert(format!("{m}/{term}"), v);
                            }
                        }
                        if !member_notes.is_empty() {
                            let mut all = schema
                                .get(ANNOTATIONS_KEYWORD)
                                .and_then(Value::as_object)
                                .cloned()
                                .unwrap_or_default();
                            all.extend(member_notes);
                            schema[ANNOTATIONS_KEYWORD] = Value::Object(all);
                        }
                        model
                            .definitions
                            .insert(def_ref(&format!("{ns}.{name}")), normalize_schema(&schema));
                    }
                    "TypeDefinition" => {
                        let name = required_attr(node, "Name", ns)?;
                        let underlying = required_attr(node, "UnderlyingType", name)?;
                        let mut schema = model.type_schema(underlying, node, false, &declared);
                        model.annotate_schema(&format!("{ns}.{name}"), &mut schema);
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

    /// Every annotation of a schema, inline or in `<Annotations Target=...>`, by target.
    fn read_annotations(&mut self, schema: Node) -> Result<(), NormalizeError> {
        let ns = required_attr(schema, "Namespace", "Schema")?;
        for node in schema.descendants().filter(|n| n.is_element()) {
            let tag = node.tag_name().name();
            if tag == "Annotation" || tag == "Annotations" {
                continue;
            }
            // Expression trees inside an annotation belong to that annotation's value.
            if node
                .ancestors()
                .skip(1)
                .any(|a| matches!(a.tag_name().name(), "Annotation" | "Annotations"))
            {
                continue;
            }
            let own: Vec<Node> = children(node, "Annotation").collect();
            if own.is_empty() {
                continue;
            }
            let target = self.inline_target(ns, node);
            for a in own {
                self.add_annotation(&target, a)?;
            }
        }
        for group in children(schema, "Annotations") {
            let raw = required_attr(group, "Target", ns)?;
            let target = match raw.split_once('/') {
                Some((head, rest)) => format!("{}/{rest}", self.qualify(head)),
                None => self.qualify(raw),
            };
            for a in children(group, "Annotation") {
                self.add_annotation(&target, a)?;
            }
        }
        Ok(())
    }

    /// The target path of an element's inline annotations: `Ns.Name` for a schema child,
    /// `Ns.Parent/Name` below it (`/$ReturnType` for a return type).
    fn inline_target(&self, ns: &str, node: Node) -> String {
        let mut parts = Vec::new();
        let mut current = Some(node);
        while let Some(n) = current {
            if n.tag_name().name() == "Schema" {
                break;
            }
            let part = match (n.tag_name().name(), n.attribute("Name")) {
                ("ReturnType", _) => "$ReturnType".to_string(),
                (_, Some(name)) => name.to_string(),
                (tag, None) => tag.to_string(),
            };
            parts.push(part);
            current = n.parent_element();
        }
        parts.reverse();
        match parts.split_first() {
            None => ns.to_string(),
            Some((first, [])) => format!("{ns}.{first}"),
            Some((first, rest)) => format!("{ns}.{first}/{}", rest.join("/")),
        }
    }

    fn add_annotation(&mut self, target: &str, a: Node) -> Result<(), NormalizeError> {
        let term = self.qualify(required_attr(a, "Term", target)?);
        let key = match a.attribute("Qualifier") {
            Some(q) => format!("{term}#{q}"),
            None => term,
        };
        if key == format!("{CORE}OptionalParameter") {
            // Modelled: the parameter is optional.
            return Ok(());
        }
        let mut value = xml_value(a);
        if let Value::Object(map) = &mut value {
            map.remove("Term");
            map.remove("Qualifier");
        }
        self.annotations
            .entry(target.to_string())
            .or_default()
            .insert(key, value);
        Ok(())
    }

    /// The annotations of `target`, marked as placed.
    fn annotations_of(&self, target: &str) -> BTreeMap<String, Value> {
        match self.annotations.get(target) {
            Some(found) => {
                self.consumed.borrow_mut().insert(target.to_string());
                found.clone()
            }
            None => BTreeMap::new(),
        }
    }

    /// Adds the annotations of `target` to a type or property schema: `Core.Computed` as
    /// `readOnly`, `Core.Immutable` as `x-odata-immutable`, the rest verbatim.
    fn annotate_schema(&self, target: &str, schema: &mut Value) {
        let mut kept = self.annotations_of(target);
        if kept.is_empty() {
            return;
        }
        let mut extra = Map::new();
        if let Some(v) = kept.remove(&format!("{CORE}Computed")) {
            extra.insert("readOnly".into(), json!(annotation_bool(&v)));
        }
        if let Some(v) = kept.remove(&format!("{CORE}Immutable")) {
            extra.insert(IMMUTABLE_KEYWORD.into(), json!(annotation_bool(&v)));
        }
        if !kept.is_empty() {
            extra.insert(ANNOTATIONS_KEYWORD.into(), json!(kept));
        }
        add_keywords(schema, extra);
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
                if let Some(srid) = facets.attribute("SRID") {
                    s[FACETS_KEYWORD] = json!({"SRID": srid});
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
        let mut stated = Map::new();
        for facet in ["Precision", "Scale", "SRID", "Unicode"] {
            if let Some(v) = facets.attribute(facet) {
                let value = match v.parse::<u64>() {
                    Ok(n) => json!(n),
                    Err(_) if v == "true" || v == "false" => json!(v == "true"),
                    Err(_) => json!(v),
                };
                stated.insert(facet.into(), value);
            }
        }
        if !stated.is_empty() {
            schema.insert(FACETS_KEYWORD.into(), Value::Object(stated));
        }
        if let Some(default) = facets.attribute("DefaultValue") {
            let value = match json_type {
                "integer" => default.parse::<i64>().map(|n| json!(n)).ok(),
                "number" => default
                    .parse::<f64>()
                    .ok()
                    .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number)),
                "boolean" => default.parse::<bool>().map(|b| json!(b)).ok(),
                _ => None,
            };
            schema.insert("default".into(), value.unwrap_or_else(|| json!(default)));
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
            let mut schema = self.type_schema(ptype, prop, nullable, declared);
            let mut extra = unread(prop, PROPERTY_ATTRIBUTES, &[]);
            if let (Some(default), None) = (prop.attribute("DefaultValue"), schema.get("default")) {
                // A structured or enum type's default (primitives carry theirs already).
                extra.insert("default".into(), json!(default));
            }
            add_keywords(&mut schema, extra);
            self.annotate_schema(&format!("{qualified}/{pname}"), &mut schema);
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
            let mut schema = self.type_schema(&target, nav, false, declared);
            let mut facts = Map::new();
            if nav.attribute("Nullable") == Some("false") {
                facts.insert(NULLABLE_KEYWORD.into(), json!(false));
            }
            if nav.attribute("ContainsTarget") == Some("true") {
                facts.insert(CONTAINS_TARGET_KEYWORD.into(), json!(true));
            }
            facts.extend(unread(nav, NAVIGATION_ATTRIBUTES, &[]));
            add_keywords(&mut schema, facts);
            self.annotate_schema(&format!("{qualified}/{pname}"), &mut schema);
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
        if let Value::Object(map) = &mut schema {
            map.extend(unread(
                node,
                &["Name", "BaseType", "OpenType"],
                &["Key", "Property", "NavigationProperty"],
            ));
        }
        let base = node.attribute("BaseType").map(|b| self.qualify(b));
        if let Some(base) = &base {
            schema = json!({"allOf": [{"$ref": def_ref(base)}, schema]});
        }
        self.annotate_schema(&qualified, &mut schema);
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
            let mut schema = self.type_schema(
                r.attribute("Type").unwrap_or("Edm.Untyped"),
                r,
                nullable,
                declared,
            );
            // A primitive's nullability is its type; a structured type's is stated here.
            // (For a collection, `Nullable` is about its items.)
            let target = match schema.get_mut("items") {
                Some(items) => items,
                None => &mut schema,
            };
            if !nullable && is_reference(target) {
                let mut facts = Map::new();
                facts.insert(NULLABLE_KEYWORD.into(), json!(false));
                add_keywords(target, facts);
            }
            schema
        });
        Ok(Operation {
            action: node.tag_name().name() == "Action",
            qualified,
            binding,
            params,
            returns,
            composable: node.attribute("IsComposable") == Some("true"),
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
        self.container_unread = unread(
            node,
            &["Name", "IsDefaultEntityContainer"],
            CONTAINER_MEMBERS,
        );
        for member in node.children().filter(|c| c.is_element()) {
            let at = format!("{ns}.{cname}");
            let (modelled, read_children): (&[&str], &[&str]) = match member.tag_name().name() {
                "EntitySet" => (
                    &["Name", "EntityType", "IncludeInServiceDocument"],
                    &["NavigationPropertyBinding"],
                ),
                "Singleton" => (&["Name", "Type"], &["NavigationPropertyBinding"]),
                "ActionImport" => (&["Name", "Action", "EntitySet"], &[]),
                "AssociationSet" => (&["Name", "Association"], &["End"]),
                "FunctionImport" if member.attribute("Function").is_some() => (
                    &["Name", "Function", "EntitySet", "IncludeInServiceDocument"],
                    &[],
                ),
                // v2/v3: the import defines the operation.
                "FunctionImport" => (
                    &[
                        "Name",
                        "ReturnType",
                        "EntitySet",
                        "IsSideEffecting",
                        "IsComposable",
                        "HttpMethod",
                    ],
                    &["Parameter"],
                ),
                _ => (&[], &[]),
            };
            if let (Some(name), true) = (
                member.attribute("Name"),
                CONTAINER_MEMBERS.contains(&member.tag_name().name()),
            ) {
                let kept = unread(member, modelled, read_children);
                if kept.is_empty() {
                } else if member.tag_name().name() == "AssociationSet" {
                    // No endpoint of its own: kept with the container's.
                    self.container_unread
                        .insert(format!("odata:AssociationSet[{name}]"), Value::Object(kept));
                } else {
                    self.member_unread.insert(name.to_string(), kept);
                }
            }
            match member.tag_name().name() {
                "EntitySet" | "Singleton" => {
                    let name = required_attr(member, "Name", &at)?.to_string();
                    let mut bindings = BTreeMap::new();
                    for b in children(member, "NavigationPropertyBinding") {
                        bindings.insert(
                            required_attr(b, "Path", &name)?.to_string(),
                            required_attr(b, "Target", &name)?.to_string(),
                        );
                    }
                    if !bindings.is_empty() {
                        self.bindings.insert(name.clone(), bindings);
                    }
                    if member.tag_name().name() == "EntitySet" {
                        let ty = self.qualify(required_attr(member, "EntityType", &at)?);
                        self.entity_sets.push((name, ty));
                    } else {
                        let ty = self.qualify(required_attr(member, "Type", &at)?);
                        self.singletons.push((name, ty));
                    }
                }
                // v2/v3: which entity sets an association's ends are in, the addressing a v4
                // `NavigationPropertyBinding` states. Each end's set binds `association/role`
                // of the other end to that end's set.
                "AssociationSet" => {
                    let association = self.qualify(required_attr(member, "Association", &at)?);
                    let mut ends = Vec::new();
                    for end in children(member, "End") {
                        ends.push((
                            required_attr(end, "Role", &at)?.to_string(),
                            required_attr(end, "EntitySet", &at)?.to_string(),
                        ));
                    }
                    for (i, (_, from_set)) in ends.iter().enumerate() {
                        for (j, (to_role, to_set)) in ends.iter().enumerate() {
                            if i != j {
                                self.bindings
                                    .entry(from_set.clone())
                                    .or_default()
                                    .insert(format!("{association}/{to_role}"), to_set.clone());
                            }
                        }
                    }
                }
                "ActionImport" => self.imports.push(Import {
                    entity_set: member.attribute("EntitySet").map(String::from),
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
                                composable: member.attribute("IsComposable") == Some("true"),
                            })
                        }
                    };
                    self.imports.push(Import {
                        entity_set: member.attribute("EntitySet").map(String::from),
                        name,
                        target,
                    });
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
        let container = self.container.clone().unwrap_or_default();
        for (set, entity) in &self.entity_sets {
            let (allowed, meta) = self.set_facts(&container, set);
            let entity_ref = json!({"$ref": def_ref(entity)});
            let keys = self.key_parameters(entity);
            let collection = json!({"type": "array", "items": entity_ref.clone()});
            let by_key = format!("/{set}({{}})");
            let mut set_endpoints = Vec::new();
            if allowed.read {
                set_endpoints.push(entity_endpoint(
                    set,
                    "GET",
                    &format!("/{set}"),
                    vec![],
                    None,
                    Some(collection),
                ));
                set_endpoints.push(entity_endpoint(
                    &format!("{set}.get"),
                    "GET",
                    &by_key,
                    keys.clone(),
                    None,
                    Some(entity_ref.clone()),
                ));
            }
            if allowed.insert {
                set_endpoints.push(entity_endpoint(
                    &format!("{set}.create"),
                    "POST",
                    &format!("/{set}"),
                    vec![],
                    Some(entity_ref.clone()),
                    Some(entity_ref.clone()),
                ));
            }
            if allowed.update {
                set_endpoints.push(entity_endpoint(
                    &format!("{set}.update"),
                    "PATCH",
                    &by_key,
                    keys.clone(),
                    Some(entity_ref.clone()),
                    None,
                ));
            }
            if allowed.delete {
                set_endpoints.push(entity_endpoint(
                    &format!("{set}.delete"),
                    "DELETE",
                    &by_key,
                    keys,
                    None,
                    None,
                ));
            }
            for mut e in set_endpoints {
                e.meta = meta.clone().map(Box::new);
                endpoints.push(e);
            }
        }
        for (name, entity) in &self.singletons {
            let (allowed, meta) = self.set_facts(&container, name);
            let entity_ref = json!({"$ref": def_ref(entity)});
            let mut own = Vec::new();
            if allowed.read {
                own.push(entity_endpoint(
                    name,
                    "GET",
                    &format!("/{name}"),
                    vec![],
                    None,
                    Some(entity_ref.clone()),
                ));
            }
            if allowed.update {
                own.push(entity_endpoint(
                    &format!("{name}.update"),
                    "PATCH",
                    &format!("/{name}"),
                    vec![],
                    Some(entity_ref),
                    None,
                ));
            }
            for mut e in own {
                e.meta = meta.clone().map(Box::new);
                endpoints.push(e);
            }
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
                let mut e = operation_endpoint(op, &path, &format!("{qualified}({binding})"));
                e.meta = self.operation_meta(op, None, &container).map(Box::new);
                endpoints.push(e);
            }
        }
        for import in &self.imports {
            match &import.target {
                ImportTarget::Inline(op) => {
                    let path = format!("/{}", import.name);
                    let mut e = operation_endpoint(op, &path, &format!("{}()", import.name));
                    e.meta = self
                        .operation_meta(op, Some(import), &container)
                        .map(Box::new);
                    endpoints.push(e);
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
                        let mut e = operation_endpoint(op, &path, &format!("{}()", import.name));
                        e.meta = self
                            .operation_meta(op, Some(import), &container)
                            .map(Box::new);
                        endpoints.push(e);
                    }
                }
            }
        }
        // Annotations with no place in the model stay in the contract, verbatim.
        let mut extensions = BTreeMap::new();
        let consumed = self.consumed.borrow().clone();
        for (target, terms) in &self.annotations {
            if consumed.contains(target) {
                continue;
            }
            for (term, value) in terms {
                extensions.insert(format!("annotations.{target}/{term}"), value.clone());
            }
        }
        for (key, value) in &self.container_unread {
            extensions.insert(format!("container.{key}"), value.clone());
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
            extensions,
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
            endpoints: endpoints.into_iter().map(std::sync::Arc::new).collect(),
            definitions: self.definitions,
            instructions: None,
        })
    }

    /// What an entity set or singleton allows (Capabilities restrictions; all by default) and
    /// the facts its endpoints carry in `meta`: its other annotations and its navigation
    /// property bindings.
    fn set_facts(&self, container: &str, set: &str) -> (Allowed, Option<Value>) {
        let mut annotations = self.annotations_of(&format!("{container}/{set}"));
        let mut flag = |term: &str, property: &str| match annotations
            .get_mut(&format!("{CAPABILITIES}{term}"))
        {
            Some(value) => {
                let allowed = take_record_bool(value, property).unwrap_or(true);
                if is_empty_annotation(value) {
                    annotations.remove(&format!("{CAPABILITIES}{term}"));
                }
                allowed
            }
            None => true,
        };
        let allowed = Allowed {
            insert: flag("InsertRestrictions", "Insertable"),
            update: flag("UpdateRestrictions", "Updatable"),
            delete: flag("DeleteRestrictions", "Deletable"),
            read: flag("ReadRestrictions", "Readable"),
        };
        let mut meta = Map::new();
        if !annotations.is_empty() {
            meta.insert("annotations".into(), json!(annotations));
        }
        if let Some(bindings) = self.bindings.get(set) {
            meta.insert("bindings".into(), json!(bindings));
        }
        if let Some(kept) = self.member_unread.get(set) {
            meta.insert("unread".into(), Value::Object(kept.clone()));
        }
        (allowed, (!meta.is_empty()).then_some(Value::Object(meta)))
    }

    /// The facts an operation's endpoint carries in `meta`: `IsComposable`, an import's
    /// `EntitySet`, and the annotations of the operation, its parameters, its return type and
    /// its import.
    fn operation_meta(
        &self,
        op: &Operation,
        import: Option<&Import>,
        container: &str,
    ) -> Option<Value> {
        let mut meta = Map::new();
        if op.composable {
            meta.insert("composable".into(), json!(true));
        }
        let mut annotations = Map::new();
        let prefix = format!("{}/", op.qualified);
        let targets: Vec<&String> = self
            .annotations
            .keys()
            .filter(|t| *t == &op.qualified || t.starts_with(&prefix))
            .collect();
        for target in targets {
            let below = target.strip_prefix(&prefix);
            for (term, value) in self.annotations_of(target) {
                let key = match below {
                    Some(sub) => format!("{sub}/{term}"),
                    None => term,
                };
                annotations.insert(key, value);
            }
        }
        if let Some(import) = import {
            if let Some(set) = &import.entity_set {
                meta.insert("entitySet".into(), json!(set));
            }
            for (term, value) in self.annotations_of(&format!("{container}/{}", import.name)) {
                annotations.insert(format!("import/{term}"), value);
            }
            if let Some(kept) = self.member_unread.get(&import.name) {
                meta.insert("unread".into(), Value::Object(kept.clone()));
            }
        }
        if !annotations.is_empty() {
            meta.insert("annotations".into(), Value::Object(annotations));
        }
        (!meta.is_empty()).then_some(Value::Object(meta))
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
                style: Default::default(),
            })
            .collect();
        params.sort_by(|a, b| a.name.cmp(&b.name));
        params
    }
}

/// What the Capabilities restrictions of an entity set allow.
struct Allowed {
    insert: bool,
    update: bool,
    delete: bool,
    read: bool,
}

/// An XML element as JSON, verbatim: `{"@": tag, attribute: value, ..., "children": [...],
/// "text": ...}` (the depth is bounded by `MAX_XML_DEPTH`).
fn xml_value(node: Node) -> Value {
    let mut map = Map::new();
    map.insert("@".into(), json!(node.tag_name().name()));
    for a in node.attributes() {
        map.insert(a.name().to_string(), json!(a.value()));
    }
    let children: Vec<Value> = node
        .children()
        .filter(|c| c.is_element())
        .map(xml_value)
        .collect();
    if !children.is_empty() {
        map.insert("children".into(), Value::Array(children));
    }
    let text: String = node
        .children()
        .filter(|c| c.is_text())
        .filter_map(|c| c.text())
        .collect();
    if !text.trim().is_empty() {
        map.insert("text".into(), json!(text.trim()));
    }
    Value::Object(map)
}

/// The boolean an annotation states (`Bool="false"`, `<Bool>false</Bool>`; absent: true).
fn annotation_bool(value: &Value) -> bool {
    match value.get("Bool").and_then(Value::as_str) {
        Some(b) => b != "false",
        None => !value
            .get("children")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["@"] == "Bool" && c["text"] == "false"),
    }
}

/// Removes `<PropertyValue Property=property .../>` from an annotation's record and answers
/// its boolean.
fn take_record_bool(value: &mut Value, property: &str) -> Option<bool> {
    let records = value.get_mut("children")?.as_array_mut()?;
    for record in records.iter_mut().filter(|r| r["@"] == "Record") {
        let Some(items) = record.get_mut("children").and_then(Value::as_array_mut) else {
            continue;
        };
        if let Some(i) = items
            .iter()
            .position(|p| p["@"] == "PropertyValue" && p["Property"] == property)
        {
            let found = annotation_bool(&items[i]);
            items.remove(i);
            if items.is_empty() {
                if let Value::Object(r) = record {
                    r.remove("children");
                }
            }
            return Some(found);
        }
    }
    None
}

/// An annotation whose record says nothing more (every property taken out).
fn is_empty_annotation(value: &Value) -> bool {
    let only_tag = |v: &Value| v.as_object().is_some_and(|m| m.keys().all(|k| k == "@"));
    match value.get("children").and_then(Value::as_array) {
        None => only_tag(value),
        Some(items) => {
            value
                .as_object()
                .is_some_and(|m| m.keys().all(|k| k == "@" || k == "children"))
                && items.iter().all(only_tag)
        }
    }
}

/// A bare `$ref` (its siblings would be hidden from the classifier).
fn is_reference(schema: &Value) -> bool {
    schema.get("$ref").is_some()
}

/// Adds keywords to a schema, wrapping a bare `$ref` in `allOf` so they are compared.
fn add_keywords(schema: &mut Value, extra: Map<String, Value>) {
    if extra.is_empty() {
        return;
    }
    if is_reference(schema) {
        *schema = json!({ "allOf": [schema.clone()] });
    }
    if let Value::Object(map) = schema {
        map.extend(extra);
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
        responses: Default::default(),
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
    e.input_schema = input.map(Box::new);
    e.output_schema = output.map(Box::new);
    e
}

fn operation_endpoint(op: &Operation, path: &str, operation_id: &str) -> EndpointSpec {
    let method = if op.action { "ACTION" } else { "FUNCTION" };
    let mut e = base_endpoint(path.trim_start_matches('/'), method, path);
    e.read_only = !op.action;
    e.idempotent = !op.action;
    // Actions may reach beyond the service; functions are side-effect free by definition.
    e.open_world = op.action;
    e.operation_id = Some(format!("{operation_id}{}", path_suffix_of(path)).into());
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
            style: Default::default(),
        })
        .collect();
    parameters.sort_by(|a, b| a.name.cmp(&b.name));
    e.parameters = parameters;
    e.output_schema = op.returns.as_ref().map(normalize_schema).map(Box::new);
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
    use crate::core::model::Compatibility;

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
            count.output_schema.as_deref(),
            Some(&json!({"type": "integer", "format": "int32"}))
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
        // An association set's ends are addressing: moving an end to another set is breaking.
        let with_sets = |lines: &str| {
            v3.replace(
                r#"<EntitySet Name="Orders" EntityType="NW.Order"/>"#,
                &format!(
                    r#"<EntitySet Name="Orders" EntityType="NW.Order"/><EntitySet Name="Lines" EntityType="NW.Line"/><EntitySet Name="Archive" EntityType="NW.Line"/>
        <AssociationSet Name="OL" Association="NW.Order_Lines"><End Role="Order" EntitySet="Orders"/><End Role="Lines" EntitySet="{lines}"/></AssociationSet>"#
                ),
            )
        };
        let old = normalize("ns.nw", with_sets("Lines").as_bytes()).unwrap();
        let orders = old
            .endpoints
            .iter()
            .find(|e| e.name == "Orders.get")
            .unwrap();
        assert_eq!(
            orders.meta.as_ref().unwrap()["bindings"],
            json!({"NW.Order_Lines/Lines": "Lines"})
        );
        assert!(old.extensions.is_empty(), "{:?}", old.extensions);
        let new = normalize("ns.nw", with_sets("Archive").as_bytes()).unwrap();
        let report = crate::core::diff::classify(&old, &new, &Default::default());
        assert_eq!(report.compatibility, Compatibility::Breaking);
        assert!(report
            .changes
            .iter()
            .all(|c| c.rule == "addressing-changed"));
    }

    /// Deny by default in the container: what the model has no place for changes the contract;
    /// `IncludeInServiceDocument` is descriptive.
    #[test]
    fn container_attributes_the_model_does_not_read_are_kept() {
        use crate::core::diff::classify;
        let things = r#"<EntitySet Name="Things" EntityType="d.Thing"/>"#;
        let base = V4.to_string();
        assert!(base.contains(things), "fixture");
        let variant = |to: &str| base.replace(things, to);
        let old = normalize("ns.demo", base.as_bytes()).unwrap();
        let listed = normalize(
            "ns.demo",
            variant(r#"<EntitySet Name="Things" EntityType="d.Thing" IncludeInServiceDocument="false"/>"#).as_bytes(),
        )
        .unwrap();
        assert_eq!(
            classify(&old, &listed, &Default::default()).compatibility,
            Compatibility::Identical
        );
        let vendor = normalize(
            "ns.demo",
            variant(r#"<EntitySet Name="Things" EntityType="d.Thing" Cache="none"/>"#).as_bytes(),
        )
        .unwrap();
        let report = classify(&old, &vendor, &Default::default());
        assert_eq!(report.compatibility, Compatibility::Breaking);
        assert!(
            report
                .changes
                .iter()
                .any(|c| c.rule == "unclassified-change" && c.path.ends_with("odata:Cache")),
            "{:#?}",
            report.changes
        );
        let extends = base.replacen(
            "<EntityContainer Name=\"Svc\"",
            "<EntityContainer Name=\"Svc\" Extends=\"base.C\"",
            1,
        );
        assert_ne!(extends, base, "fixture");
        let extended = normalize("ns.demo", extends.as_bytes()).unwrap();
        assert_eq!(
            extended.extensions["container.odata:Extends"],
            json!("base.C")
        );
        let report = classify(&old, &extended, &Default::default());
        assert!(report
            .changes
            .iter()
            .any(|c| c.rule == "unclassified-change"));
    }
}
