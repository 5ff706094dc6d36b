//! No known-breaking change is ever reported compatible or identical: random schemas, mutated
//! in ways that break callers (remove a response property, add a required request property,
//! narrow a request type, tighten a request bound, widen a response type, add a response enum
//! value), must classify at least `breaking`, whether the schema is inline or behind a `$ref`.

use proptest::prelude::*;
use schemawatch::core::diff::classify;
use schemawatch::core::model::Compatibility;
use schemawatch::core::normalize::openapi::normalize_value;
use serde_json::{json, Value};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        (1u32..200).prop_map(|n| json!({"type": "string", "maxLength": n})),
        (0i64..1000).prop_map(|n| json!({"type": "integer", "maximum": n})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "boolean"})),
        prop::collection::btree_set("[a-e]{1,3}", 1..4).prop_map(
            |values| json!({"type": "string", "enum": values.into_iter().collect::<Vec<_>>()})
        ),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            (
                prop::collection::btree_map("[a-h]{1,4}", inner.clone(), 1..5),
                any::<u8>()
            )
                .prop_map(|(props, mask)| {
                    let required: Vec<String> = props
                        .keys()
                        .enumerate()
                        .filter(|(i, _)| mask & (1 << (i % 8)) != 0)
                        .map(|(_, k)| k.clone())
                        .collect();
                    json!({"type": "object", "properties": props, "required": required})
                }),
            inner.prop_map(|items| json!({"type": "array", "items": items})),
        ]
    })
}

/// An object schema (so properties can be added or removed at the top).
fn object_schema() -> impl Strategy<Value = Value> {
    (
        prop::collection::btree_map("[a-h]{1,4}", schema(), 1..5),
        any::<u8>(),
    )
        .prop_map(|(props, mask)| {
            let required: Vec<String> = props
                .keys()
                .enumerate()
                .filter(|(i, _)| mask & (1 << (i % 8)) != 0)
                .map(|(_, k)| k.clone())
                .collect();
            json!({"type": "object", "properties": props, "required": required})
        })
}

fn document(request: &Value, response: &Value, by_ref: bool) -> Value {
    let (req, resp, components) = if by_ref {
        (
            json!({"$ref": "#/components/schemas/In"}),
            json!({"$ref": "#/components/schemas/Out"}),
            json!({"schemas": {"In": request, "Out": response}}),
        )
    } else {
        (request.clone(), response.clone(), json!({}))
    };
    json!({
        "openapi": "3.0.3", "info": {"title": "t", "version": "1"},
        "paths": {"/things": {"post": {
            "operationId": "createThing",
            "requestBody": {"required": true, "content": {"application/json": {"schema": req}}},
            "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": resp}}}}
        }}},
        "components": components
    })
}

/// All object schemas inside `v` (paths as JSON pointers), `v` itself first.
fn objects(v: &Value, at: String, out: &mut Vec<String>) {
    if v.get("type") == Some(&json!("object")) {
        out.push(at.clone());
    }
    if let Some(Value::Object(props)) = v.get("properties") {
        for (k, p) in props {
            objects(p, format!("{at}/properties/{k}"), out);
        }
    }
    if let Some(items) = v.get("items") {
        objects(items, format!("{at}/items"), out);
    }
}

fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
    match v.get("type").and_then(Value::as_str) {
        Some("object") => {
            if let Some(Value::Object(props)) = v.get("properties") {
                for (k, p) in props {
                    leaves(p, format!("{at}/properties/{k}"), out);
                }
            }
        }
        Some("array") => {
            if let Some(items) = v.get("items") {
                leaves(items, format!("{at}/items"), out);
            }
        }
        _ => out.push(at),
    }
}

#[derive(Debug, Clone, Copy)]
enum Mutation {
    RemoveResponseProperty,
    AddRequiredRequestProperty,
    NarrowRequestType,
    TightenRequestBound,
    WidenResponseType,
    AddResponseEnumValue,
}

/// Applies a breaking mutation; `None` when the schema offers no place for it.
fn mutate(request: &mut Value, response: &mut Value, m: Mutation, pick: usize) -> Option<()> {
    let choose = |v: &Vec<String>| {
        if v.is_empty() {
            None
        } else {
            Some(v[pick % v.len()].clone())
        }
    };
    match m {
        Mutation::RemoveResponseProperty => {
            let mut objs = Vec::new();
            objects(response, String::new(), &mut objs);
            let at = choose(&objs)?;
            let obj = response.pointer_mut(&at)?;
            let props = obj.get_mut("properties")?.as_object_mut()?;
            let key = props.keys().nth(pick % props.len().max(1))?.clone();
            props.remove(&key);
            if let Some(Value::Array(req)) = obj.get_mut("required") {
                req.retain(|r| r != &json!(key));
            }
        }
        Mutation::AddRequiredRequestProperty => {
            let mut objs = Vec::new();
            objects(request, String::new(), &mut objs);
            let at = choose(&objs)?;
            let obj = request.pointer_mut(&at)?.as_object_mut()?;
            obj.entry("properties").or_insert_with(|| json!({}))["zz_new"] =
                json!({"type": "string"});
            match obj.get_mut("required") {
                Some(Value::Array(req)) => req.push(json!("zz_new")),
                _ => {
                    obj.insert("required".into(), json!(["zz_new"]));
                }
            }
        }
        Mutation::NarrowRequestType => {
            let mut ls = Vec::new();
            leaves(request, String::new(), &mut ls);
            let leaf = request.pointer_mut(&choose(&ls)?)?;
            let narrowed = match leaf.get("type").and_then(Value::as_str)? {
                "number" => "integer",
                "integer" | "boolean" => "string",
                _ => "boolean",
            };
            *leaf = json!({"type": narrowed});
        }
        Mutation::TightenRequestBound => {
            let mut ls = Vec::new();
            leaves(request, String::new(), &mut ls);
            let leaf = request.pointer_mut(&choose(&ls)?)?.as_object_mut()?;
            if let Some(Value::Number(n)) = leaf.get("maxLength").cloned() {
                let n = n.as_u64()?;
                leaf.insert("maxLength".into(), json!(n.saturating_sub(1)));
                if n == 0 {
                    leaf.insert("pattern".into(), json!("^$"));
                }
            } else if let Some(Value::Number(n)) = leaf.get("maximum").cloned() {
                leaf.insert("maximum".into(), json!(n.as_i64()? - 1));
            } else if let Some(Value::Array(values)) = leaf.get_mut("enum") {
                if values.len() < 2 {
                    leaf.insert("pattern".into(), json!("^x$"));
                } else {
                    values.pop();
                }
            } else {
                leaf.insert("enum".into(), json!([true]));
            }
        }
        Mutation::WidenResponseType => {
            let mut ls = Vec::new();
            leaves(response, String::new(), &mut ls);
            let leaf = response.pointer_mut(&choose(&ls)?)?.as_object_mut()?;
            let widened = match leaf.get("type").and_then(Value::as_str)? {
                "integer" => json!("number"),
                other => json!([other, "null"]),
            };
            leaf.insert("type".into(), widened);
        }
        Mutation::AddResponseEnumValue => {
            let mut ls = Vec::new();
            leaves(response, String::new(), &mut ls);
            let with_enum: Vec<String> = ls
                .into_iter()
                .filter(|p| response.pointer(p).and_then(|l| l.get("enum")).is_some())
                .collect();
            let leaf = response.pointer_mut(&choose(&with_enum)?)?;
            leaf.get_mut("enum")?.as_array_mut()?.push(json!("zzz-new"));
        }
    }
    Some(())
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        Just(Mutation::RemoveResponseProperty),
        Just(Mutation::AddRequiredRequestProperty),
        Just(Mutation::NarrowRequestType),
        Just(Mutation::TightenRequestBound),
        Just(Mutation::WidenResponseType),
        Just(Mutation::AddResponseEnumValue),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn known_breaking_mutations_are_at_least_breaking(
        request in object_schema(),
        response in object_schema(),
        m in mutation(),
        pick in any::<usize>(),
        by_ref in any::<bool>(),
    ) {
        let (mut new_request, mut new_response) = (request.clone(), response.clone());
        prop_assume!(mutate(&mut new_request, &mut new_response, m, pick).is_some());
        let old = normalize_value("acme.things", &document(&request, &response, by_ref)).expect("old normalizes");
        let new = normalize_value("acme.things", &document(&new_request, &new_response, by_ref)).expect("new normalizes");
        let report = classify(&old, &new, &Default::default());
        prop_assert!(
            report.compatibility >= Compatibility::Breaking,
            "{m:?} was judged {:?}: {:#?}", report.compatibility, report.changes
        );
    }
}

#[test]
fn mutations_change_the_document() {
    // Guard against a mutation helper that silently does nothing.
    let request = json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 5}}, "required": []});
    let response = json!({"type": "object", "properties": {"b": {"type": "string", "enum": ["x"]}}, "required": ["b"]});
    for m in [
        Mutation::RemoveResponseProperty,
        Mutation::AddRequiredRequestProperty,
        Mutation::NarrowRequestType,
        Mutation::TightenRequestBound,
        Mutation::WidenResponseType,
        Mutation::AddResponseEnumValue,
    ] {
        let (mut rq, mut rs) = (request.clone(), response.clone());
        assert!(mutate(&mut rq, &mut rs, m, 0).is_some(), "{m:?}");
        assert!(rq != request || rs != response, "{m:?} changed nothing");
    }
}
