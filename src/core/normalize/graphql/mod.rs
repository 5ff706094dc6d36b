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

/// The descriptive allow-list of a GraphQL schema (`docs/allow-list.md`). SDL has no open
/// keywords: every definition, field, argument, enum value, default, description and applied
/// directive is in the contract (directive applications are `directive-applied-changed`).
pub const DESCRIPTIVE: &[(&str, &str)] = &[
    ("(comments `#`)", "not part of the schema"),
    ("(definition, field and value order)", "matched by name"),
    ("(description line wrapping)", "whitespace runs are one space"),
    ("types no root field reaches", "unreachable: outside every endpoint's contract (a schema without a query root makes every type an endpoint)"),
    ("built-in directive definitions (`@skip`, `@include`, `@deprecated`, `@specifiedBy`, `@oneOf`)", "every server has them; introspection lists them, SDL usually does not"),
];

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

    /// The reference as SDL writes it (`[String!]!`).
    fn sdl(&self) -> String {
        match self {
            TypeRef::Named(n) => n.clone(),
            TypeRef::List(t) => format!("[{}]", t.sdl()),
            TypeRef::NonNull(t) => format!("{}!", t.sdl()),
        }
    }
}

/// A directive applied to a type, field, argument, enum value or input field (`@key(fields:
/// "id")`), other than the ones the model reads itself where it reads them (`@deprecated` on
/// fields, arguments, input fields and enum values, `@oneOf` on input objects, `@specifiedBy`
/// on scalars; anywhere else they are kept as any other usage, since `FINGERPRINT_VERSION`
/// 2). Arguments as JSON (literals decoded like defaults).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Applied {
    pub name: String,
    pub args: BTreeMap<String, Value>,
}

/// Applied directives as the contract keeps them: `[{"name", "args"?}]` in order of name, then
/// arguments (a printer's reordering is not a change). `None` when there are none.
fn applied_value(applied: &[Applied]) -> Option<Value> {
    if applied.is_empty() {
        return None;
    }
    let mut items: Vec<Value> = applied
        .iter()
        .map(|a| {
            let mut m = Map::new();
            m.insert("name".into(), json!(a.name));
            if !a.args.is_empty() {
                m.insert("args".into(), json!(a.args));
            }
            Value::Object(m)
        })
        .collect();
    items.sort_by_key(crate::core::json::to_canonical_string);
    Some(Value::Array(items))
}

/// The schema keyword that carries applied directives (normalize/graphql, diff/graphql).
pub const DIRECTIVES_KEYWORD: &str = "x-graphql-directives";
/// The keyword of a custom scalar's own applied directives (inline wherever it is used, beside
/// the field's).
pub const SCALAR_DIRECTIVES_KEYWORD: &str = "x-graphql-scalar-directives";
/// The keyword of an enum's applied directives per value.
pub const VALUE_DIRECTIVES_KEYWORD: &str = "x-graphql-value-directives";
/// `@oneOf` on an input object.
pub const ONE_OF_KEYWORD: &str = "x-graphql-one-of";
/// `@specifiedBy(url:)` on a custom scalar.
pub const SPECIFIED_BY_KEYWORD: &str = "x-graphql-specified-by";

/// Directives every GraphQL server has (the specification's); introspection lists them, SDL
/// usually does not, so they are outside the contract either way.
pub(crate) const BUILTIN_DIRECTIVES: [&str; 5] =
    ["skip", "include", "deprecated", "specifiedBy", "oneOf"];

/// A directive definition (`directive @name(args) repeatable on LOCATIONS`).
#[derive(Debug, Clone)]
pub(crate) struct DirectiveDef {
    pub description: Option<String>,
    pub args: Vec<InputValue>,
    pub locations: Vec<String>,
    pub repeatable: bool,
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
    pub directives: Vec<Applied>,
}

#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub name: String,
    pub description: Option<String>,
    pub args: Vec<InputValue>,
    pub ty: TypeRef,
    pub deprecated: Deprecation,
    pub directives: Vec<Applied>,
}

#[derive(Debug, Clone)]
pub(crate) struct EnumValue {
    pub name: String,
    pub description: Option<String>,
    pub deprecated: Deprecation,
    pub directives: Vec<Applied>,
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
    pub directives: Vec<Applied>,
    /// `@oneOf` (input objects; introspection `isOneOf`).
    pub one_of: bool,
    /// `@specifiedBy(url:)` (scalars; introspection `specifiedByURL`).
    pub specified_by: Option<String>,
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
            directives: Vec::new(),
            one_of: false,
            specified_by: None,
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
    /// Directive definitions but the built-in ones, by name.
    pub directives: BTreeMap<String, DirectiveDef>,
    /// Directives applied to the schema itself (`schema @link(...)`, `extend schema @foo`).
    pub schema_directives: Vec<Applied>,
    /// The schema definition's description (SDL; introspection `__schema.description`).
    pub description: Option<String>,
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
    collapse(&mut schema.description);
    for d in schema.directives.values_mut() {
        collapse(&mut d.description);
        d.args.iter_mut().for_each(collapse_input);
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
        // Without a query root the document is not a schema yet: roots are plain types.
        let Some(root) = root.as_ref().filter(|_| schema.query.is_some()) else {
            continue;
        };
        let def = schema
            .types
            .get(root)
            .filter(|d| d.kind == TypeKind::Object)
            .ok_or_else(|| invalid("schema", format!("root type {root} is not an object type")))?;
        for field in &def.fields {
            endpoints.push(builder.endpoint(field, method, label)?);
        }
    }
    if schema.query.is_none() {
        // A type library or a subgraph fragment: every named type is an endpoint of its own.
        for (name, def) in &schema.types {
            endpoints.push(builder.type_endpoint(name, def));
        }
    }
    crate::core::normalize::sort_by_identity(&mut endpoints);

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

    let mut directives = BTreeMap::new();
    for (name, d) in &schema.directives {
        directives.insert(name.clone(), builder.directive(d));
    }
    // Only names that differ from the default are kept: every schema with the default names
    // keeps its fingerprint.
    let mut roots = BTreeMap::new();
    for (operation, ty, default) in [
        ("query", &schema.query, "Query"),
        ("mutation", &schema.mutation, "Mutation"),
        ("subscription", &schema.subscription, "Subscription"),
    ] {
        if let Some(ty) = ty.as_ref().filter(|t| t.as_str() != default) {
            roots.insert(operation.to_string(), ty.clone());
        }
    }
    let mut extensions = BTreeMap::new();
    if let Some(applied) = applied_value(&schema.schema_directives) {
        extensions.insert("schema.directives".to_string(), applied);
    }
    if let Some(text) = &schema.description {
        extensions.insert("schema.description".to_string(), json!(text));
    }
    let (namespace, name) = split_watch_name(watch);
    Ok(ToolSpec {
        directives,
        roots,
        capabilities: None,
        extensions,
        definitions,
        endpoints: endpoints.into_iter().map(std::sync::Arc::new).collect(),
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
                style: Default::default(),
            })
            .collect();
        parameters.sort_by(|a, b| (&a.location, &a.name).cmp(&(&b.location, &b.name)));
        let mut output = Map::new();
        output.insert("type".into(), json!("object"));
        let mut result = self.type_schema(&field.ty);
        if let (Some(applied), Value::Object(map)) = (applied_value(&field.directives), &mut result)
        {
            map.insert(DIRECTIVES_KEYWORD.into(), applied);
        }
        output.insert("properties".into(), json!({ field.name.clone(): result }));
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
            description: field.description.clone().map(Into::into),
            destructive,
            idempotent,
            input_schema: None,
            meta: None,
            method: method.into(),
            name: field.name.clone().into(),
            open_world: false,
            operation_id: Some(field.name.clone().into()),
            output_schema: Some(Box::new(Value::Object(output))),
            parameters,
            path: path.clone().into(),
            path_template: path.into(),
            read_only,
            request_body: None,
            responses: Default::default(),
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
                other => match self.schema.types.get(other) {
                    Some(def) if def.kind == TypeKind::Scalar => self.scalar_schema(other, def),
                    None => json!({ "format": other }),
                    Some(_) => json!({ "$ref": format!("{TYPE_POINTER}{other}") }),
                },
            },
        }
    }

    /// A custom scalar: its name as `format`, its `@specifiedBy` URL and applied directives.
    fn scalar_schema(&self, name: &str, def: &TypeDef) -> Value {
        let mut map = Map::new();
        map.insert("format".into(), json!(name));
        if let Some(text) = &def.description {
            map.insert("description".into(), json!(text));
        }
        if let Some(url) = &def.specified_by {
            map.insert(SPECIFIED_BY_KEYWORD.into(), json!(url));
        }
        if let Some(applied) = applied_value(&def.directives) {
            map.insert(SCALAR_DIRECTIVES_KEYWORD.into(), applied);
        }
        Value::Object(map)
    }

    /// One named type as an endpoint (`TYPE Name`) of a schema without a query root: an
    /// input object is what a caller sends, any other type what it receives.
    fn type_endpoint(&self, name: &str, def: &TypeDef) -> EndpointSpec {
        let schema = self.type_schema(&TypeRef::Named(name.to_string()));
        let (input_schema, output_schema) = if def.kind == TypeKind::InputObject {
            (Some(schema), None)
        } else {
            (None, Some(schema))
        };
        EndpointSpec {
            extensions: Default::default(),
            servers: Vec::new(),
            aliases: Vec::new(),
            deprecated: false,
            description: def.description.clone().map(Into::into),
            destructive: false,
            idempotent: true,
            input_schema: input_schema.map(Box::new),
            meta: None,
            method: "TYPE".into(),
            name: name.to_string().into(),
            open_world: false,
            operation_id: None,
            output_schema: output_schema.map(Box::new),
            parameters: Vec::new(),
            path: name.to_string().into(),
            path_template: name.to_string().into(),
            read_only: true,
            request_body: None,
            responses: Default::default(),
            security: Vec::new(),
            title: None,
        }
    }

    /// A directive definition as the contract keeps it (`ToolSpec::directives`).
    fn directive(&self, d: &DirectiveDef) -> Value {
        let mut arguments = Map::new();
        for arg in &d.args {
            let mut a = Map::new();
            a.insert("type".into(), json!(arg.ty.sdl()));
            if let Some(default) = &arg.default {
                a.insert("default".into(), default.clone());
            }
            if let Some(text) = &arg.description {
                a.insert("description".into(), json!(text));
            }
            add_deprecation(&mut a, &arg.deprecated);
            arguments.insert(arg.name.clone(), Value::Object(a));
        }
        let mut locations = d.locations.clone();
        locations.sort();
        locations.dedup();
        let mut map = Map::new();
        map.insert("arguments".into(), Value::Object(arguments));
        if let Some(text) = &d.description {
            map.insert("description".into(), json!(text));
        }
        map.insert("locations".into(), json!(locations));
        map.insert("repeatable".into(), json!(d.repeatable));
        Value::Object(map)
    }

    fn input_value_schema(&self, v: &InputValue) -> Value {
        let mut schema = self.type_schema(&v.ty);
        let Value::Object(map) = &mut schema else {
            return schema;
        };
        if let Some(applied) = applied_value(&v.directives) {
            map.insert(DIRECTIVES_KEYWORD.into(), applied);
        }
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
        if let Some(applied) = applied_value(&def.directives) {
            map.insert(DIRECTIVES_KEYWORD.into(), applied);
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
                let mut value_directives = Map::new();
                for v in &def.values {
                    if let Some(applied) = applied_value(&v.directives) {
                        value_directives.insert(v.name.clone(), applied);
                    }
                }
                if !value_directives.is_empty() {
                    map.insert(
                        VALUE_DIRECTIVES_KEYWORD.into(),
                        Value::Object(value_directives),
                    );
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
                if def.one_of {
                    map.insert(ONE_OF_KEYWORD.into(), json!(true));
                }
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
        if let Some(applied) = applied_value(&field.directives) {
            map.insert(DIRECTIVES_KEYWORD.into(), applied);
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
