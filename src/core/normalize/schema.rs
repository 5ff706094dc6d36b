//! JSON Schema normalization shared by every kind: one spelling for things that mean the same.
//!
//! - OpenAPI 3.0 `nullable: true` and Swagger `x-nullable: true` become `"null"` in `type`
//!   (the 3.1 spelling), so a 3.0 → 3.1 migration is not drift.
//! - 3.0 boolean `exclusiveMaximum`/`exclusiveMinimum` become the 3.1 numeric form.
//! - `type` arrays, `required` and `enum` are sets: sorted and deduplicated.
//! - Only schema-valued keywords are walked; `example`, `default`, `const` stay verbatim.

use crate::core::json::to_canonical_string;
use serde_json::Value;

/// Keywords whose value is a schema.
const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
];
/// Keywords whose value is an array of schemas.
const SCHEMA_ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value is a map of name → schema.
const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// Normalizes one schema (recursively), copying it.
pub fn normalize_schema(schema: &Value) -> Value {
    normalize_schema_owned(schema.clone())
}

/// Normalizes one schema (recursively) in place, without copying it.
pub fn normalize_schema_owned(mut schema: Value) -> Value {
    normalize_in_place(&mut schema);
    schema
}

fn normalize_in_place(schema: &mut Value) {
    let Value::Object(map) = schema else {
        // `true`/`false` schemas and anything malformed stay as they are.
        return;
    };
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if SCHEMA_KEYWORDS.contains(&key) {
            match value {
                // `items: [a, b]` (tuple form) is an array of schemas.
                Value::Array(items) => items.iter_mut().for_each(normalize_in_place),
                other => normalize_in_place(other),
            }
        } else if SCHEMA_ARRAY_KEYWORDS.contains(&key) {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(normalize_in_place);
            }
        } else if SCHEMA_MAP_KEYWORDS.contains(&key) {
            if let Value::Object(props) = value {
                props.values_mut().for_each(normalize_in_place);
            }
        }
    }
    let out = map;

    let nullable = matches!(out.remove("nullable"), Some(Value::Bool(true)))
        | matches!(out.remove("x-nullable"), Some(Value::Bool(true)));
    if nullable {
        match out.get_mut("type") {
            Some(Value::String(t)) => {
                let t = std::mem::take(t);
                out.insert(
                    "type".into(),
                    Value::Array(vec![Value::String(t), Value::String("null".into())]),
                );
            }
            Some(Value::Array(types)) => types.push(Value::String("null".into())),
            // Without a type, nullable adds nothing to what is already allowed.
            _ => {}
        }
    }
    for (exclusive, bound) in [
        ("exclusiveMaximum", "maximum"),
        ("exclusiveMinimum", "minimum"),
    ] {
        match out.get(exclusive) {
            Some(Value::Bool(true)) => {
                if let Some(limit) = out.remove(bound) {
                    out.insert(exclusive.into(), limit);
                } else {
                    out.remove(exclusive);
                }
            }
            Some(Value::Bool(false)) => {
                out.remove(exclusive);
            }
            _ => {}
        }
    }
    if let Some(Value::Array(types)) = out.get_mut("type") {
        sort_dedup(types);
        if types.len() == 1 {
            let single = types.remove(0);
            out.insert("type".into(), single);
        }
    }
    for set_keyword in ["required", "enum"] {
        if let Some(Value::Array(items)) = out.get_mut(set_keyword) {
            sort_dedup(items);
        }
    }
}

fn sort_dedup(items: &mut Vec<Value>) {
    let mut keyed: Vec<(String, Value)> = items
        .drain(..)
        .map(|v| (to_canonical_string(&v), v))
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.dedup_by(|a, b| a.0 == b.0);
    items.extend(keyed.into_iter().map(|(_, v)| v));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openapi30_and_31_spellings_agree() {
        let v30 =
            json!({"type": "integer", "nullable": true, "maximum": 5, "exclusiveMaximum": true});
        let v31 = json!({"type": ["null", "integer"], "exclusiveMaximum": 5});
        assert_eq!(normalize_schema(&v30), normalize_schema(&v31));
    }

    #[test]
    fn sets_are_sorted_and_examples_untouched() {
        let s = json!({"required": ["b", "a", "a"], "enum": ["z", "y"], "example": {"nullable": true},
                        "properties": {"p": {"type": "string", "nullable": true}}});
        assert_eq!(
            normalize_schema(&s),
            json!({"required": ["a", "b"], "enum": ["y", "z"], "example": {"nullable": true},
                   "properties": {"p": {"type": ["null", "string"]}}})
        );
    }
}
