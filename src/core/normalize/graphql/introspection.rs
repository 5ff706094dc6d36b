//! An introspection result (`{"data": {"__schema": ...}}`, or the bare `{"__schema": ...}` that
//! tools save) → [`Schema`]. The JSON is parsed strictly (duplicate keys, depth limit).

use super::literal::parse_value;
use super::{
    invalid, Deprecation, DirectiveDef, EnumValue, Field, InputValue, Schema, TypeDef, TypeKind,
    TypeRef, BUILTIN_DIRECTIVES, BUILTIN_SCALARS, DEFAULT_DEPRECATION_REASON,
};
use crate::core::json::parse_json;
use crate::core::normalize::NormalizeError;
use serde_json::Value;

/// Most wrapper levels (`ofType`) in one type reference.
const MAX_TYPE_DEPTH: usize = 32;

pub(super) fn read(text: &str) -> Result<Schema, NormalizeError> {
    let root = parse_json(text)?;
    let schema = match root.get("data") {
        Some(data) => data.get("__schema"),
        None => root.get("__schema"),
    };
    let Some(schema) = schema.filter(|s| s.is_object()) else {
        let problem = if root.get("errors").is_some() {
            "the introspection response carries errors and no data.__schema"
        } else {
            "neither data.__schema nor __schema is an object"
        };
        return Err(invalid("introspection", problem));
    };
    let root_name = |key: &str| -> Result<Option<String>, NormalizeError> {
        match schema.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .get("name")
                .and_then(Value::as_str)
                .map(|s| Some(s.to_string()))
                .ok_or_else(|| invalid(format!("__schema.{key}"), "missing name")),
        }
    };
    let mut out = Schema {
        query: root_name("queryType")?,
        mutation: root_name("mutationType")?,
        subscription: root_name("subscriptionType")?,
        types: Default::default(),
        directives: Default::default(),
        // Introspection does not show applied directives (docs/graphql.md).
        schema_directives: Vec::new(),
        description: opt_str(schema, "description"),
    };
    for d in list(schema, "directives") {
        let name = str_field(d, "name", "__schema.directives[]")?;
        if BUILTIN_DIRECTIVES.contains(&name.as_str()) {
            continue;
        }
        let at = format!("@{name}");
        let mut locations = Vec::new();
        for l in list(d, "locations") {
            locations.push(
                l.as_str()
                    .ok_or_else(|| invalid(&at, "a location must be a string"))?
                    .to_string(),
            );
        }
        let def = DirectiveDef {
            description: opt_str(d, "description"),
            args: input_values(list(d, "args"), &at)?,
            locations,
            repeatable: d.get("isRepeatable").and_then(Value::as_bool) == Some(true),
        };
        if out.directives.insert(name, def).is_some() {
            return Err(invalid(&at, "directive listed twice"));
        }
    }
    let types = schema
        .get("types")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("__schema.types", "must be an array"))?;
    for t in types {
        let name = str_field(t, "name", "__schema.types[]")?;
        if name.starts_with("__") || BUILTIN_SCALARS.contains(&name.as_str()) {
            continue;
        }
        let kind = match str_field(t, "kind", &name)?.as_str() {
            "SCALAR" => TypeKind::Scalar,
            "OBJECT" => TypeKind::Object,
            "INTERFACE" => TypeKind::Interface,
            "UNION" => TypeKind::Union,
            "ENUM" => TypeKind::Enum,
            "INPUT_OBJECT" => TypeKind::InputObject,
            other => return Err(invalid(&name, format!("unknown type kind {other:?}"))),
        };
        let mut def = TypeDef::new(kind, opt_str(t, "description"));
        match kind {
            TypeKind::Object | TypeKind::Interface => {
                for f in list(t, "fields") {
                    let fname = str_field(f, "name", &name)?;
                    let at = format!("{name}.{fname}");
                    def.fields.push(Field {
                        description: opt_str(f, "description"),
                        args: input_values(list(f, "args"), &at)?,
                        ty: type_ref(f.get("type"), &at, 0)?,
                        deprecated: deprecation(f),
                        directives: Vec::new(),
                        name: fname,
                    });
                }
                if kind == TypeKind::Object {
                    for i in list(t, "interfaces") {
                        def.interfaces.push(str_field(i, "name", &name)?);
                    }
                }
            }
            TypeKind::Union => {
                for m in list(t, "possibleTypes") {
                    def.members.push(str_field(m, "name", &name)?);
                }
            }
            TypeKind::Enum => {
                for v in list(t, "enumValues") {
                    def.values.push(EnumValue {
                        name: str_field(v, "name", &name)?,
                        description: opt_str(v, "description"),
                        deprecated: deprecation(v),
                        directives: Vec::new(),
                    });
                }
            }
            TypeKind::InputObject => {
                def.input_fields = input_values(list(t, "inputFields"), &name)?;
                def.one_of = t.get("isOneOf").and_then(Value::as_bool) == Some(true);
            }
            TypeKind::Scalar => def.specified_by = opt_str(t, "specifiedByURL"),
        }
        if out.types.insert(name.clone(), def).is_some() {
            return Err(invalid(&name, "type listed twice"));
        }
    }
    Ok(out)
}

fn list<'v>(v: &'v Value, key: &str) -> impl Iterator<Item = &'v Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn str_field(v: &Value, key: &str, at: &str) -> Result<String, NormalizeError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(String::from)
        .ok_or_else(|| invalid(at, format!("missing string \"{key}\"")))
}

fn opt_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(String::from)
}

fn deprecation(v: &Value) -> Deprecation {
    if v.get("isDeprecated").and_then(Value::as_bool) == Some(true) {
        Some(opt_str(v, "deprecationReason").unwrap_or_else(|| DEFAULT_DEPRECATION_REASON.into()))
    } else {
        None
    }
}

fn input_values<'v>(
    values: impl Iterator<Item = &'v Value>,
    owner: &str,
) -> Result<Vec<InputValue>, NormalizeError> {
    let mut out = Vec::new();
    for v in values {
        let name = str_field(v, "name", owner)?;
        let at = format!("{owner}.{name}");
        let default = match v.get("defaultValue") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => {
                Some(parse_value(text).map_err(|e| invalid(&at, format!("defaultValue: {e}")))?)
            }
            Some(_) => return Err(invalid(&at, "defaultValue must be a string")),
        };
        out.push(InputValue {
            description: opt_str(v, "description"),
            ty: type_ref(v.get("type"), &at, 0)?,
            default,
            deprecated: deprecation(v),
            directives: Vec::new(),
            name,
        });
    }
    Ok(out)
}

fn type_ref(v: Option<&Value>, at: &str, depth: usize) -> Result<TypeRef, NormalizeError> {
    if depth > MAX_TYPE_DEPTH {
        return Err(invalid(at, "type reference nested too deeply"));
    }
    let v = v.ok_or_else(|| invalid(at, "missing type"))?;
    match v.get("kind").and_then(Value::as_str) {
        Some("NON_NULL") => {
            let inner = type_ref(v.get("ofType"), at, depth + 1)?;
            if inner.is_non_null() {
                return Err(invalid(at, "non-null of non-null"));
            }
            Ok(TypeRef::NonNull(Box::new(inner)))
        }
        Some("LIST") => Ok(TypeRef::List(Box::new(type_ref(
            v.get("ofType"),
            at,
            depth + 1,
        )?))),
        Some(_) => Ok(TypeRef::Named(str_field(v, "name", at)?)),
        None => Err(invalid(at, "type reference without kind")),
    }
}
