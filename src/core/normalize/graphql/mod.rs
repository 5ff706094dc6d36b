//! GraphQL (SDL or an introspection result) → ToolSpec.
//!
//! Both inputs are read into one small schema model ([`Schema`]) and built into the contract by
//! one function, so an SDL file and the introspection result of the same schema give the same
//! ToolSpec. Which input it is comes from the bytes: JSON (first non-blank byte `{`) is an
//! introspection result (`{"data": {"__schema": ...}}` or `{"__schema": ...}`), anything else SDL.
//!
//! The mapping (docs/graphql.md has the reasoning):
//! - root fields → endpoints: Query → `QUERY` (read-only, idempotent), Mutation → `MUTATION`
//!   (writes; side effects unknown, so destructive), Subscription → `SUBSCRIPTION` (read-only).
//!   Name = field name, path = `Query.field` whatever the root type is called.
//! - root field arguments → parameters (location `argument`, required when non-null without a
//!   default); the field's result → `output_schema`, an object with the field as its one
//!   property (`required` when non-null), i.e. the `data` a caller receives.
//! - object, interface, union, enum and input object types → definitions `#/types/Name`.
//!   Fields are properties; a non-null output field is `required` (a guarantee), a non-null
//!   input field without default is `required`; lists are arrays whose nullable items allow
//!   `null`; Int/Float/String/Boolean/ID map to JSON types, custom scalars to
//!   `{"format": "Name"}`; unions are `oneOf` their members, interfaces `anyOf` their
//!   implementations (`x-graphql-kind` names the kind).
//! - arguments of fields below the root sit on the field's property as `arguments`, an object
//!   schema the classifier compares in the request direction.
//! - `@deprecated` → `deprecated: true` (+ `x-deprecation-reason`), reported as info.
//!
//! Enums are shared definitions; the classifier compares each in the direction it is used, so
//! a value added to an enum callers send is compatible and one added to an enum they receive
//! is breaking.

mod introspection;
mod literal;
mod sdl;

pub use sdl::{MAX_SDL_RECURSION, MAX_SDL_TOKENS};

use super::{split_watch_name, NormalizeError};
use crate::core::model::{EndpointSpec, Evidence, Kind, Metadata, ParameterSpec, Remote, ToolSpec};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Definitions pointer prefix of named GraphQL types.
pub const TYPE_POINTER: &str = "#/types/";

/// A reference to a type as written: `Name`, `[T]`, `T!`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TypeRef {
    Named(String),
    List(Box<TypeRef>),
    NonNull(Box<TypeRef>),
}

impl TypeRef {
    fn is_non_null(&self) -> bool {
        matches!(self, TypeRef::NonNull(_))
    }

    fn named(&self) -> &str {
        match self {
            TypeRef::Named(n) => n,
            TypeRef::List(t) | TypeRef::NonNull(t) => t.named(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeKind {
    Scalar,
    Object,
    Interface,
    Union,
    Enum,
    InputObject,
}

/// `@deprecated` state: the reason (the spec's default when none was given).
pub(crate) type Deprecation = Option<String>;

pub(crate) const DEFAULT_DEPRECATION_REASON: &str = "No longer supported";

#[derive(Debug, Clone)]
pub(crate) struct InputValue {
    pub name: String,
    pub description: Option<String>,
    pub ty: TypeRef,
    pub default: Option<Value>,
    pub deprecated: Deprecation,
}

#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub name: String,
    pub description: Option<String>,
    pub args: Vec<InputValue>,
    pub ty: TypeRef,
    pub deprecated: Deprecation,
}

#[derive(Debug, Clone)]
pub(crate) struct EnumValue {
    pub name: String,
    pub description: Option<String>,
    pub deprecated: Deprecation,
}

#[derive(Debug, Clone)]
pub(crate) struct TypeDef {
    pub kind: TypeKind,
    pub description: Option<String>,
    pub fields: Vec<Field>,
    pub input_fields: Vec<InputValue>,
    /// Interfaces an object type implements.
    pub interfaces: Vec<String>,
    /// Union members.
    pub members: Vec<String>,
    pub values: Vec<EnumValue>,
}

impl TypeDef {
    pub(crate) fn new(kind: TypeKind, description: Option<String>) -> Self {
        TypeDef {
            kind,
            description,
            fields: Vec::new(),
            input_fields: Vec::new(),
            interfaces: Vec::new(),
            members: Vec::new(),
            values: Vec::new(),
        }
    }
}

/// The schema as read from SDL or introspection, before it becomes a contract.
#[derive(Debug, Clone, Default)]
pub(crate) struct Schema {
    pub query: Option<String>,
    pub mutation: Option<String>,
    pub subscription: Option<String>,
    pub types: BTreeMap<String, TypeDef>,
}

pub(crate) fn invalid(at: impl Into<String>, problem: impl Into<String>) -> NormalizeError {
    NormalizeError::Invalid {
        at: at.into(),
        problem: problem.into(),
    }
}

const BUILTIN_SCALARS: [&str; 5] = ["Int", "Float", "String", "Boolean", "ID"];

/// Normalizes a GraphQL SDL document or introspection result for the watch `watch`.
pub fn normalize(watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes)
        .map_err(|_| NormalizeError::Parse(crate::core::json::ParseError::NotUtf8))?;
    let schema = if text.trim_start().starts_with('{') {
        introspection::read(text)?
    } else {
        sdl::read(text, MAX_SDL_RECURSION, MAX_SDL_TOKENS)?
    };
    build(watch, &schema)
}

/// Normalizes SDL with explicit parser limits (tests use small ones).
pub fn normalize_sdl_with_limits(
    watch: &str,
    text: &str,
    recursion_limit: usize,
    token_limit: usize,
) -> Result<ToolSpec, NormalizeError> {
    build(watch, &sdl::read(text, recursion_limit, token_limit)?)
}

/// Descriptions and deprecation reasons with every whitespace run as one space: SDL printers
/// wrap long descriptions (GitHub's published SDL does) while introspection keeps the text as
/// written, and a re-wrap is not a change.
fn collapse(text: &mut Option<String>) {
    if let Some(t) = text.take() {
        let collapsed = t.split_whitespace().collect::<Vec<_>>().join(" ");
        if !collapsed.is_empty() {
            *text = Some(collapsed);
        }
    }
}

fn collapse_reason(deprecated: &mut Deprecation) {
    if let Some(reason) = deprecated {
        *reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    }
}

fn collapse_input(v: &mut InputValue) {
    collapse(&mut v.description);
    collapse_reason(&mut v.deprecated);
}

fn build(watch: &str, schema: &Schema) -> Result<ToolSpec, NormalizeError> {
    let mut schema = schema.clone();
    for def in schema.types.values_mut() {
        collapse(&mut def.description);
        for f in &mut def.fields {
            collapse(&mut f.description);
            collapse_reason(&mut f.deprecated);
            f.args.iter_mut().for_each(collapse_input);
        }
        def.input_fields.iter_mut().for_each(collapse_input);
        for v in &mut def.values {
            collapse(&mut v.description);
            collapse_reason(&mut v.deprecated);
        }
    }
    let schema = &schema;
    validate(schema)?;
    let builder = Builder { schema };
    let mut endpoints = Vec::new();
    for (root, method, label) in [
        (&schema.query, "QUERY", "Query"),
        (&schema.mutation, "MUTATION", "Mutation"),
        (&schema.subscription, "SUBSCRIPTION", "Subscription"),
    ] {
        let Some(root) = root else { continue };
        let def = schema
            .types
            .get(root)
            .filter(|d| d.kind == TypeKind::Object)
            .ok_or_else(|| invalid("schema", format!("root type {root} is not an object type")))?;
        for field in &def.fields {
            endpoints.push(builder.endpoint(field, method, label)?);
        }
    }
    endpoints.sort_by_key(|e| e.identity());

    // Definitions reachable from the endpoints only (unreachable types are outside the contract).
    let mut definitions = BTreeMap::new();
    let mut stack: Vec<String> = endpoints
        .iter()
        .flat_map(|e| e.schemas())
        .flat_map(crate::core::fingerprint::direct_refs)
        .collect();
    while let Some(pointer) = stack.pop() {
        if definitions.contains_key(&pointer) {
            continue;
        }
        let name = pointer.strip_prefix(TYPE_POINTER).unwrap_or(&pointer);
        let def = schema
            .types
            .get(name)
            .ok_or_else(|| invalid(name, "unknown type"))?;
        let value = builder.definition(name, def)?;
        stack.extend(crate::core::fingerprint::direct_refs(&value));
        definitions.insert(pointer, value);
    }

    let (namespace, name) = split_watch_name(watch);
    Ok(ToolSpec {
        directives: Default::default(),
        roots: Default::default(),
        capabilities: None,
        extensions: BTreeMap::new(),
        definitions,
        endpoints,
        evidence: Evidence {
            license: None,
            source_type: "graphql".into(),
        },
        kind: Kind::Graphql,
        instructions: None,
        metadata: Metadata {
            format: Some("graphql".into()),
            title: None,
            version: None,
        },
        name,
        namespace,
        remote: Remote {
            variables: Default::default(),
            base_urls: Vec::new(),
            transport: "graphql".into(),
        },
    })
}

/// Every referenced type exists and has a kind that fits where it is used.
fn validate(schema: &Schema) -> Result<(), NormalizeError> {
    if schema.query.is_none() {
        return Err(invalid("schema", "no query root type"));
    }
    let kind_of = |name: &str| -> Option<TypeKind> {
        if BUILTIN_SCALARS.contains(&name) {
            Some(TypeKind::Scalar)
        } else {
            schema.types.get(name).map(|d| d.kind)
        }
    };
    let check_input = |at: &str, v: &InputValue| -> Result<(), NormalizeError> {
        match kind_of(v.ty.named()) {
            Some(TypeKind::Scalar | TypeKind::Enum | TypeKind::InputObject) => Ok(()),
            Some(_) => Err(invalid(
                format!("{at}.{}", v.name),
                format!("{} is not an input type", v.ty.named()),
            )),
            None => Err(invalid(
                format!("{at}.{}", v.name),
                format!("unknown type {}", v.ty.named()),
            )),
        }
    };
    for (name, def) in &schema.types {
        for field in &def.fields {
            let at = format!("{name}.{}", field.name);
            match kind_of(field.ty.named()) {
                Some(TypeKind::InputObject) => {
                    return Err(invalid(&at, "an input object is not an output type"))
                }
                None => return Err(invalid(&at, format!("unknown type {}", field.ty.named()))),
                _ => {}
            }
            for arg in &field.args {
                check_input(&at, arg)?;
            }
        }
        for input in &def.input_fields {
            check_input(name, input)?;
        }
        for other in def.interfaces.iter() {
            if kind_of(other) != Some(TypeKind::Interface) {
                return Err(invalid(name, format!("{other} is not an interface")));
            }
        }
        for member in &def.members {
            if kind_of(member) != Some(TypeKind::Object) {
                return Err(invalid(
                    name,
                    format!("union member {member} is not an object type"),
                ));
            }
        }
    }
    Ok(())
}

struct Builder<'s> {
    schema: &'s Schema,
}

impl Builder<'_> {
    fn endpoint(
        &self,
        field: &Field,
        method: &str,
        root_label: &str,
    ) -> Result<EndpointSpec, NormalizeError> {
        let path = format!("{root_label}.{}", field.name);
        let mut parameters: Vec<ParameterSpec> = field
            .args
            .iter()
            .map(|arg| ParameterSpec {
                deprecated: arg.deprecated.is_some(),
                description: arg.description.clone(),
                location: "argument".into(),
                name: arg.name.clone(),
                required: arg.ty.is_non_null() && arg.default.is_none(),
                schema: self.input_value_schema(arg),
                style: BTreeMap::new(),
            })
            .collect();
        parameters.sort_by(|a, b| (&a.location, &a.name).cmp(&(&b.location, &b.name)));
        let mut output = Map::new();
        output.insert("type".into(), json!("object"));
        output.insert(
            "properties".into(),
            json!({ field.name.clone(): self.type_schema(&field.ty) }),
        );
        if field.ty.is_non_null() {
            output.insert("required".into(), json!([field.name]));
        }
        let (read_only, destructive, idempotent) = match method {
            "QUERY" => (true, false, true),
            "SUBSCRIPTION" => (true, false, true),
            // A mutation's effects are not described by the schema: assume the worst.
            _ => (false, true, false),
        };
        Ok(EndpointSpec {
            extensions: Default::default(),
            servers: Vec::new(),
            aliases: Vec::new(),
            deprecated: field.deprecated.is_some(),
            description: field.description.clone(),
            destructive,
            idempotent,
            input_schema: None,
            meta: None,
            method: method.into(),
            name: field.name.clone(),
            open_world: false,
            operation_id: Some(field.name.clone()),
            output_schema: Some(Value::Object(output)),
            parameters,
            path: path.clone(),
            path_template: path,
            read_only,
            request_body: None,
            responses: BTreeMap::new(),
            security: Vec::new(),
            title: None,
        })
    }

    /// The JSON Schema of a type reference without its outer non-null wrapper (top-level
    /// nullability is `required`); a named type that is a definition is always wrapped in
    /// `allOf`, so siblings (description, arguments, ...) are compared too (a bare `$ref`
    /// hides its siblings from the classifier).
    fn type_schema(&self, ty: &TypeRef) -> Value {
        let inner = match ty {
            TypeRef::NonNull(t) => t,
            other => other,
        };
        let schema = self.value_schema(inner);
        if schema.get("$ref").is_some() {
            json!({ "allOf": [schema] })
        } else {
            schema
        }
    }

    /// A nullable-aware schema of a type reference inside a list.
    fn item_schema(&self, ty: &TypeRef) -> Value {
        match ty {
            TypeRef::NonNull(t) => self.value_schema(t),
            other => {
                let mut schema = self.value_schema(other);
                match schema.get("type").and_then(Value::as_str).map(String::from) {
                    Some(t) => {
                        let mut types = vec![t, "null".to_string()];
                        types.sort();
                        schema["type"] = json!(types);
                        schema
                    }
                    None => json!({ "anyOf": [schema, {"type": "null"}] }),
                }
            }
        }
    }

    /// Schema of a nullable type reference (the caller handles nullability).
    fn value_schema(&self, ty: &TypeRef) -> Value {
        match ty {
            TypeRef::NonNull(t) => self.value_schema(t),
            TypeRef::List(item) => json!({"type": "array", "items": self.item_schema(item)}),
            TypeRef::Named(name) => match name.as_str() {
                "Int" => json!({"type": "integer"}),
                "Float" => json!({"type": "number"}),
                "String" => json!({"type": "string"}),
                "Boolean" => json!({"type": "boolean"}),
                "ID" => json!({"type": "string", "format": "ID"}),
                other => match self.schema.types.get(other).map(|d| d.kind) {
                    Some(TypeKind::Scalar) | None => json!({ "format": other }),
                    Some(_) => json!({ "$ref": format!("{TYPE_POINTER}{other}") }),
                },
            },
        }
    }

    fn input_value_schema(&self, v: &InputValue) -> Value {
        let mut schema = self.type_schema(&v.ty);
        let Value::Object(map) = &mut schema else {
            return schema;
        };
        if let Some(d) = &v.description {
            map.insert("description".into(), json!(d));
        }
        if let Some(default) = &v.default {
            map.insert("default".into(), default.clone());
            if v.ty.is_non_null() {
                // Optional (it has a default) but an explicit null is refused.
                map.insert("nonNull".into(), json!(true));
            }
        }
        add_deprecation(map, &v.deprecated);
        schema
    }

    fn definition(&self, name: &str, def: &TypeDef) -> Result<Value, NormalizeError> {
        let mut map = Map::new();
        if let Some(d) = &def.description {
            map.insert("description".into(), json!(d));
        }
        match def.kind {
            TypeKind::Object | TypeKind::Interface => {
                map.insert("type".into(), json!("object"));
                let mut properties = Map::new();
                let mut required = Vec::new();
                for field in &def.fields {
                    properties.insert(field.name.clone(), self.field_schema(field));
                    if field.ty.is_non_null() {
                        required.push(field.name.clone());
                    }
                }
                map.insert("properties".into(), Value::Object(properties));
                if !required.is_empty() {
                    required.sort();
                    map.insert("required".into(), json!(required));
                }
                if def.kind == TypeKind::Interface {
                    let implementations: BTreeSet<&String> = self
                        .schema
                        .types
                        .iter()
                        .filter(|(_, d)| {
                            d.kind == TypeKind::Object && d.interfaces.iter().any(|i| i == name)
                        })
                        .map(|(n, _)| n)
                        .collect();
                    if !implementations.is_empty() {
                        map.insert("anyOf".into(), refs(implementations));
                    }
                    map.insert("x-graphql-kind".into(), json!("interface"));
                } else {
                    map.insert("x-graphql-kind".into(), json!("object"));
                }
            }
            TypeKind::Union => {
                let members: BTreeSet<&String> = def.members.iter().collect();
                map.insert("oneOf".into(), refs(members));
                map.insert("x-graphql-kind".into(), json!("union"));
            }
            TypeKind::Enum => {
                map.insert("type".into(), json!("string"));
                let mut values: Vec<&str> = def.values.iter().map(|v| v.name.as_str()).collect();
                values.sort();
                map.insert("enum".into(), json!(values));
                let mut notes = Map::new();
                for v in &def.values {
                    let mut note = Map::new();
                    if let Some(d) = &v.description {
                        note.insert("description".into(), json!(d));
                    }
                    add_deprecation(&mut note, &v.deprecated);
                    if !note.is_empty() {
                        notes.insert(v.name.clone(), Value::Object(note));
                    }
                }
                if !notes.is_empty() {
                    map.insert("x-graphql-enum-values".into(), Value::Object(notes));
                }
                map.insert("x-graphql-kind".into(), json!("enum"));
            }
            TypeKind::InputObject => {
                map.insert("type".into(), json!("object"));
                let mut properties = Map::new();
                let mut required = Vec::new();
                for v in &def.input_fields {
                    properties.insert(v.name.clone(), self.input_value_schema(v));
                    if v.ty.is_non_null() && v.default.is_none() {
                        required.push(v.name.clone());
                    }
                }
                map.insert("properties".into(), Value::Object(properties));
                if !required.is_empty() {
                    required.sort();
                    map.insert("required".into(), json!(required));
                }
                map.insert("x-graphql-kind".into(), json!("input"));
            }
            TypeKind::Scalar => {
                return Err(invalid(name, "a scalar is not a definition"));
            }
        }
        Ok(Value::Object(map))
    }

    fn field_schema(&self, field: &Field) -> Value {
        let mut schema = self.type_schema(&field.ty);
        let Value::Object(map) = &mut schema else {
            return schema;
        };
        if let Some(d) = &field.description {
            map.insert("description".into(), json!(d));
        }
        add_deprecation(map, &field.deprecated);
        if !field.args.is_empty() {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for arg in &field.args {
                properties.insert(arg.name.clone(), self.input_value_schema(arg));
                if arg.ty.is_non_null() && arg.default.is_none() {
                    required.push(arg.name.clone());
                }
            }
            let mut args = Map::new();
            args.insert("type".into(), json!("object"));
            args.insert("properties".into(), Value::Object(properties));
            if !required.is_empty() {
                required.sort();
                args.insert("required".into(), json!(required));
            }
            map.insert("arguments".into(), Value::Object(args));
        }
        schema
    }
}

fn add_deprecation(map: &mut Map<String, Value>, deprecated: &Deprecation) {
    if let Some(reason) = deprecated {
        map.insert("deprecated".into(), json!(true));
        map.insert("x-deprecation-reason".into(), json!(reason));
    }
}

fn refs(names: BTreeSet<&String>) -> Value {
    Value::Array(
        names
            .into_iter()
            .map(|n| json!({ "$ref": format!("{TYPE_POINTER}{n}") }))
            .collect(),
    )
}

#[cfg(test)]
mod tests;
