//! Parameter rules: a parameter added, removed, made required or optional, reordered (JSON-RPC
//! positions) or serialized differently; its schema goes to the schema walker.

use super::endpoint::{DEPRECATED_CHANGED, DESCRIPTION_CHANGED};
use super::rules::{Rule, Side};
use super::schema::{Direction, SchemaDiffer};
use super::Emitter;
use crate::core::model::{ParameterSpec, Severity::*};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub static REQUEST_PARAMETER_ADDED_NOT_TRAILING: Rule = Rule::new(
    "request-parameter-added-not-trailing",
    Breaking,
    Side::Request,
    "An optional positional (JSON-RPC) parameter was added before existing ones; only a trailing optional parameter may be added.",
);

pub static REQUEST_PARAMETER_ADDED_OPTIONAL: Rule = Rule::new(
    "request-parameter-added-optional",
    Compatible,
    Side::Request,
    "An optional parameter was added.",
);

pub static REQUEST_PARAMETER_ADDED_REQUIRED: Rule = Rule::new(
    "request-parameter-added-required",
    Breaking,
    Side::Request,
    "A required parameter was added; existing callers do not send it.",
);

pub static REQUEST_PARAMETER_BECAME_OPTIONAL: Rule = Rule::new(
    "request-parameter-became-optional",
    Compatible,
    Side::Request,
    "A parameter is no longer required.",
);

pub static REQUEST_PARAMETER_BECAME_REQUIRED: Rule = Rule::new(
    "request-parameter-became-required",
    Breaking,
    Side::Request,
    "A parameter became required.",
);

pub static REQUEST_PARAMETER_REMOVED: Rule = Rule::new(
    "request-parameter-removed",
    Breaking,
    Side::Request,
    "A parameter was removed (or moved to another location).",
);

pub static REQUEST_PARAMETER_REORDERED: Rule = Rule::new(
    "request-parameter-reordered",
    Breaking,
    Side::Request,
    "A positional (JSON-RPC) parameter moved to another position; by-position callers now send it in the wrong place.",
);

pub static REQUEST_PARAMETER_STYLE_CHANGED: Rule = Rule::new(
    "request-parameter-style-changed",
    Breaking,
    Side::Request,
    "A parameter's serialization (style, explode, allowReserved, content type) changed.",
);

pub(super) fn compare_parameters(
    send: Direction,
    at: &str,
    old: &[ParameterSpec],
    new: &[ParameterSpec],
    schemas: &mut SchemaDiffer,
    out: &mut Emitter,
) {
    let key = |p: &ParameterSpec| (p.location.clone(), p.name.clone());
    let old_by: BTreeMap<_, _> = old.iter().map(|p| (key(p), p)).collect();
    let new_by: BTreeMap<_, _> = new.iter().map(|p| (key(p), p)).collect();
    for (k, o) in &old_by {
        let p_at = format!("{at}.parameters.{}.{}", k.0, k.1);
        match new_by.get(k) {
            None => {
                let moved = new
                    .iter()
                    .find(|n| n.name == o.name)
                    .map(|n| n.location.clone());
                let message = match &moved {
                    Some(loc) => format!("{} parameter '{}' moved to {loc}.", o.location, o.name),
                    None => format!("{} parameter '{}' was removed.", o.location, o.name),
                };
                out.emit(
                    &REQUEST_PARAMETER_REMOVED,
                    &p_at,
                    "parameter_removed",
                    Some(json!(o.name)),
                    None,
                    message,
                );
            }
            Some(n) => {
                if o.required != n.required {
                    let (rule, word) = if n.required {
                        (&REQUEST_PARAMETER_BECAME_REQUIRED, "required")
                    } else {
                        (&REQUEST_PARAMETER_BECAME_OPTIONAL, "optional")
                    };
                    out.emit(
                        rule,
                        &format!("{p_at}.required"),
                        "parameter_required_changed",
                        Some(json!(o.required)),
                        Some(json!(n.required)),
                        format!("{} parameter '{}' became {word}.", n.location, n.name),
                    );
                }
                // A positional (JSON-RPC) parameter's index is judged on its own below.
                let without_position = |p: &ParameterSpec| {
                    let mut style = p.style.clone();
                    style.remove("position");
                    style
                };
                if let (Some(op), Some(np)) = (o.style.get("position"), n.style.get("position")) {
                    if op != np {
                        out.emit(
                            &REQUEST_PARAMETER_REORDERED,
                            &format!("{p_at}.position"),
                            "parameter_reordered",
                            Some(op.clone()),
                            Some(np.clone()),
                            format!(
                                "Positional parameter '{}' moved from position {op} to {np}.",
                                n.name
                            ),
                        );
                    }
                }
                if without_position(o) != without_position(n)
                    || o.style.contains_key("position") != n.style.contains_key("position")
                {
                    out.emit(
                        &REQUEST_PARAMETER_STYLE_CHANGED,
                        &format!("{p_at}.style"),
                        "parameter_style_changed",
                        Some(json!(o.style)),
                        Some(json!(n.style)),
                        format!(
                            "The serialization of {} parameter '{}' changed.",
                            n.location, n.name
                        ),
                    );
                }
                if o.description != n.description {
                    out.emit(
                        &DESCRIPTION_CHANGED,
                        &format!("{p_at}.description"),
                        "description_changed",
                        o.description.as_ref().map(|d| json!(d)),
                        n.description.as_ref().map(|d| json!(d)),
                        format!(
                            "The description of {} parameter '{}' changed.",
                            n.location, n.name
                        ),
                    );
                }
                if o.deprecated != n.deprecated {
                    out.emit(
                        &DEPRECATED_CHANGED,
                        &format!("{p_at}.deprecated"),
                        "deprecated_changed",
                        Some(json!(o.deprecated)),
                        Some(json!(n.deprecated)),
                        format!("{} parameter '{}' deprecation changed.", n.location, n.name),
                    );
                }
                schemas.compare(&o.schema, &n.schema, send, &format!("{p_at}.schema"), out);
            }
        }
    }
    for (k, n) in &new_by {
        if old_by.contains_key(k) {
            continue;
        }
        let p_at = format!("{at}.parameters.{}.{}", k.0, k.1);
        // A positional parameter may only be added after every parameter callers already send.
        let not_trailing = position_of(n).is_some_and(|pos| {
            new.iter()
                .filter(|p| old_by.contains_key(&key(p)))
                .filter_map(position_of)
                .any(|existing| existing > pos)
        });
        let (rule, word) = if n.required {
            (&REQUEST_PARAMETER_ADDED_REQUIRED, "Required")
        } else if not_trailing {
            (
                &REQUEST_PARAMETER_ADDED_NOT_TRAILING,
                "Optional (not trailing, so positions shift)",
            )
        } else {
            (&REQUEST_PARAMETER_ADDED_OPTIONAL, "Optional")
        };
        out.emit(
            rule,
            &p_at,
            "parameter_added",
            None,
            Some(json!(n.name)),
            format!("{word} {} parameter '{}' was added.", n.location, n.name),
        );
    }
}

/// The index of a positional (JSON-RPC) parameter, when it has one.
fn position_of(p: &ParameterSpec) -> Option<u64> {
    p.style.get("position").and_then(Value::as_u64)
}

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{
        at, check, check_case, openapi, openapi_reversed, rpc, rpc_doc, Case, RpcEdit, LIST,
    };
    use crate::core::model::Compatibility;
    use serde_json::json;

    /// One case per rule of this family (more where kinds differ).
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            Case::new(
                &REQUEST_PARAMETER_ADDED_OPTIONAL,
                openapi(|d| {
                    at(d, LIST)["parameters"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "tag", "in": "query", "schema": {"type": "string"}}));
                }),
            ),
            Case::new(
                &REQUEST_PARAMETER_ADDED_REQUIRED,
                openapi(|d| {
                    at(d, LIST)["parameters"].as_array_mut().unwrap().push(json!({"name": "owner", "in": "query", "required": true, "schema": {"type": "string"}}));
                }),
            ),
            Case::new(
                &REQUEST_PARAMETER_BECAME_REQUIRED,
                openapi(|d| {
                    at(d, LIST)["parameters"][0]["required"] = json!(true);
                }),
            ),
            Case::new(
                &REQUEST_PARAMETER_REMOVED,
                openapi(|d| {
                    at(d, LIST)["parameters"] = json!([]);
                }),
            ),
            Case::new(
                &REQUEST_PARAMETER_STYLE_CHANGED,
                openapi(|d| {
                    at(d, LIST)["parameters"][0]["style"] = json!("spaceDelimited");
                }),
            ),
            Case::new(
                &REQUEST_PARAMETER_BECAME_OPTIONAL,
                openapi_reversed(
                    // request-parameter-became-optional: old required, new optional.
                    |d| {
                        at(d, LIST)["parameters"][0]["required"] = json!(true);
                    },
                ),
            ),
            Case::new(&REQUEST_PARAMETER_REORDERED, rpc(|p| p.swap(0, 1))),
            Case::new(
                &REQUEST_PARAMETER_ADDED_NOT_TRAILING,
                rpc(|p| p.insert(1, json!({"name": "fee", "schema": {"type": "integer"}}))),
            ),
        ]
    }

    #[test]
    fn cases_fire_their_rules() {
        for case in cases() {
            check_case(&case);
        }
    }

    #[test]
    fn openrpc_positional_cases_are_breaking() {
        for case in cases()
            .into_iter()
            .filter(|c| c.new.kind == crate::core::model::Kind::Openrpc)
        {
            let report = check(case.rule, &case.old, &case.new);
            assert_eq!(
                report.compatibility,
                Compatibility::Breaking,
                "{}",
                case.rule.id
            );
        }
    }

    #[test]
    fn openrpc_only_a_trailing_optional_parameter_is_a_compatible_addition() {
        use crate::core::diff::{classify, ClassifyPolicy};
        use crate::core::normalize::openrpc;
        let base = openrpc::normalize_value("acme.rpc", &rpc_doc(|_| {})).unwrap();
        // A trailing optional parameter is the one compatible addition.
        let new = openrpc::normalize_value(
            "acme.rpc",
            &rpc_doc(|p| p.push(json!({"name": "fee", "schema": {"type": "integer"}}))),
        )
        .unwrap();
        let report = classify(&base, &new, &ClassifyPolicy::default());
        assert_eq!(
            report.compatibility,
            Compatibility::Compatible,
            "{:#?}",
            report.changes
        );
        assert!(report
            .changes
            .iter()
            .any(|c| c.rule == REQUEST_PARAMETER_ADDED_OPTIONAL.id));
        // by-name methods: order does not matter.
        let named = |edit: RpcEdit| {
            let mut d = rpc_doc(edit);
            d["methods"][0]["paramStructure"] = json!("by-name");
            openrpc::normalize_value("acme.rpc", &d).unwrap()
        };
        let report = classify(
            &named(|_| {}),
            &named(|p| p.swap(0, 1)),
            &ClassifyPolicy::default(),
        );
        assert_eq!(
            report.compatibility,
            Compatibility::Identical,
            "{:#?}",
            report.changes
        );
        let report = classify(
            &named(|_| {}),
            &named(|p| p.insert(0, json!({"name": "fee", "schema": {}}))),
            &ClassifyPolicy::default(),
        );
        assert_eq!(
            report.compatibility,
            Compatibility::Compatible,
            "{:#?}",
            report.changes
        );
    }
}
