//! Parameter rules: a parameter added, removed, made required or optional, reordered (JSON-RPC
//! positions) or serialized differently; its schema goes to the schema walker.

use super::emit::Emitter;
use super::pair;
use super::rule::{Rule, Side};
use super::schema::{Direction, SchemaDiffer};
use super::shared::{DEPRECATED_CHANGED, DESCRIPTION_CHANGED};
use crate::core::change_kind::ChangeKind;
use crate::core::model::{ParameterSpec, Severity::*};
use serde_json::{json, Value};

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

pub static REQUEST_PARAMETER_EMPTY_VALUE_ALLOWED: Rule = Rule::new(
    "request-parameter-empty-value-allowed",
    Compatible,
    Side::Request,
    "A parameter now accepts an empty value (`allowEmptyValue` false → true); what callers send still works.",
);

pub static REQUEST_PARAMETER_EMPTY_VALUE_REFUSED: Rule = Rule::new(
    "request-parameter-empty-value-refused",
    Breaking,
    Side::Request,
    "A parameter no longer accepts an empty value (`allowEmptyValue` true → false); callers sending `?name=` fail.",
);

pub static PATH_PARAMETER_RENAMED: Rule = Rule::new(
    "path-parameter-renamed",
    Info,
    Side::Request,
    "A path parameter was renamed in place (same position in the template, same schema and requiredness); callers fill the template by position, so nothing they send changes.",
);

/// Whether a parameter accepts an empty value: `Some(false)` when `allowEmptyValue` is absent
/// (its default), `None` when it states something other than a boolean.
fn allows_empty_value(p: &ParameterSpec) -> Option<bool> {
    match p.style.get("allowEmptyValue") {
        None => Some(false),
        Some(v) => v.as_bool(),
    }
}

pub(super) fn compare_parameters(
    send: Direction,
    at: &str,
    (old, old_template): (&[ParameterSpec], &str),
    (new, new_template): (&[ParameterSpec], &str),
    schemas: &mut SchemaDiffer,
    out: &mut Emitter,
) {
    let pairs = pair::parameters((old, old_template), (new, new_template));
    for (from, to) in &pairs.renamed {
        out.emit(
            &PATH_PARAMETER_RENAMED,
            &format!("{at}.parameters.path.{from}"),
            ChangeKind::ParameterRenamed,
            Some(json!(from)),
            Some(json!(to)),
            format!("Path parameter '{from}' was renamed to '{to}' in place."),
        );
    }
    for (o, counterpart) in &pairs.old {
        let p_at = format!("{at}.parameters.{}.{}", o.location, o.name);
        match counterpart {
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
                    ChangeKind::ParameterRemoved,
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
                        ChangeKind::ParameterRequiredChanged,
                        Some(json!(o.required)),
                        Some(json!(n.required)),
                        format!("{} parameter '{}' became {word}.", n.location, n.name),
                    );
                }
                // A positional (JSON-RPC) parameter's index is judged on its own below.
                // So is the method's `paramStructure` (diff/openrpc), and with it whether
                // positions are recorded at all.
                // `allowEmptyValue` is judged by direction when both sides state a boolean
                // (absent is false); a change of anything else stays a serialization change.
                let (old_empty, new_empty) = (allows_empty_value(o), allows_empty_value(n));
                let empty_value_moved =
                    matches!((old_empty, new_empty), (Some(a), Some(b)) if a != b);
                if let (true, Some(now)) = (empty_value_moved, new_empty) {
                    let (rule, word) = if now {
                        (&REQUEST_PARAMETER_EMPTY_VALUE_ALLOWED, "accepts")
                    } else {
                        (&REQUEST_PARAMETER_EMPTY_VALUE_REFUSED, "no longer accepts")
                    };
                    out.emit(
                        rule,
                        &format!("{p_at}.allowEmptyValue"),
                        ChangeKind::ParameterEmptyValueChanged,
                        Some(json!(old_empty)),
                        Some(json!(new_empty)),
                        format!(
                            "{} parameter '{}' {word} an empty value.",
                            n.location, n.name
                        ),
                    );
                }
                let without_position = |p: &ParameterSpec| {
                    let mut style = p.style.clone();
                    style.remove("position");
                    style.remove("paramStructure");
                    if empty_value_moved {
                        style.remove("allowEmptyValue");
                    }
                    style
                };
                let same_structure = o.style.get("paramStructure") == n.style.get("paramStructure");
                if let (Some(op), Some(np)) = (o.style.get("position"), n.style.get("position")) {
                    if op != np {
                        out.emit(
                            &REQUEST_PARAMETER_REORDERED,
                            &format!("{p_at}.position"),
                            ChangeKind::ParameterReordered,
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
                    || (same_structure
                        && o.style.contains_key("position") != n.style.contains_key("position"))
                {
                    out.emit(
                        &REQUEST_PARAMETER_STYLE_CHANGED,
                        &format!("{p_at}.style"),
                        ChangeKind::ParameterStyleChanged,
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
                        ChangeKind::DescriptionChanged,
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
                        ChangeKind::DeprecatedChanged,
                        Some(json!(o.deprecated)),
                        Some(json!(n.deprecated)),
                        format!("{} parameter '{}' deprecation changed.", n.location, n.name),
                    );
                }
                schemas.compare(&o.schema, &n.schema, send, &format!("{p_at}.schema"), out);
            }
        }
    }
    for n in &pairs.added {
        let p_at = format!("{at}.parameters.{}.{}", n.location, n.name);
        // A positional parameter may only be added after every parameter callers already send.
        let not_trailing = position_of(n).is_some_and(|pos| {
            pairs
                .kept_by_key
                .iter()
                .filter_map(|p| position_of(p))
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
            ChangeKind::ParameterAdded,
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

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &PATH_PARAMETER_RENAMED,
    &REQUEST_PARAMETER_ADDED_NOT_TRAILING,
    &REQUEST_PARAMETER_ADDED_OPTIONAL,
    &REQUEST_PARAMETER_ADDED_REQUIRED,
    &REQUEST_PARAMETER_BECAME_OPTIONAL,
    &REQUEST_PARAMETER_BECAME_REQUIRED,
    &REQUEST_PARAMETER_EMPTY_VALUE_ALLOWED,
    &REQUEST_PARAMETER_EMPTY_VALUE_REFUSED,
    &REQUEST_PARAMETER_REMOVED,
    &REQUEST_PARAMETER_REORDERED,
    &REQUEST_PARAMETER_STYLE_CHANGED,
];

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{
        at, check, check_case, openapi, openapi_reversed, rpc, rpc_doc, Case, RpcEdit, LIST,
    };
    use crate::core::model::Compatibility;
    use serde_json::json;

    /// One case per rule of this family (more where kinds differ).
    /// GET /pets/{NAME} with one required string path parameter NAME.
    fn by_path_parameter(name: &str) -> crate::core::model::ToolSpec {
        let d = crate::core::diff::tests::doc(|d| {
            at(d, "/paths")[format!("/pets/{{{name}}}")] = json!({"get": {
                "operationId": "showPet",
                "parameters": [{"name": name, "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}}}});
        });
        crate::core::normalize::openapi::normalize_value("acme.pets", &d).unwrap()
    }

    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            Case::new(
                &PATH_PARAMETER_RENAMED,
                (by_path_parameter("petId"), by_path_parameter("id")),
            ),
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
                &REQUEST_PARAMETER_EMPTY_VALUE_ALLOWED,
                openapi(|d| {
                    at(d, LIST)["parameters"][0]["allowEmptyValue"] = json!(true);
                }),
            ),
            Case::new(
                &REQUEST_PARAMETER_EMPTY_VALUE_REFUSED,
                openapi_reversed(|d| {
                    at(d, LIST)["parameters"][0]["allowEmptyValue"] = json!(true);
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
    fn an_in_place_rename_is_info_but_a_changed_schema_or_position_is_not() {
        let report = check(
            &PATH_PARAMETER_RENAMED,
            &by_path_parameter("petId"),
            &by_path_parameter("id"),
        );
        assert_eq!(
            report.compatibility,
            Compatibility::Compatible,
            "{report:?}"
        );
        assert_eq!(report.changes.len(), 1, "{report:?}");
        // Renamed and retyped: the rename is info, the type change is judged as for any
        // parameter (breaking), and nothing reads as removed and added.
        let mut new = by_path_parameter("id");
        new.endpoints
            .iter_mut()
            .flat_map(|e| std::sync::Arc::make_mut(e).parameters.iter_mut())
            .filter(|p| p.name == "id")
            .for_each(|p| p.schema = json!({"type": "integer"}));
        let report =
            crate::core::diff::classify(&by_path_parameter("petId"), &new, &Default::default());
        let rules: Vec<&str> = report.changes.iter().map(|c| c.rule.as_str()).collect();
        assert!(rules.contains(&PATH_PARAMETER_RENAMED.id), "{rules:?}");
        assert!(rules.contains(&"request-type-changed"), "{rules:?}");
        assert!(!rules.contains(&REQUEST_PARAMETER_REMOVED.id), "{rules:?}");
        assert_eq!(report.compatibility, Compatibility::Breaking);
        // Becoming optional at the same time is no in-place rename.
        let mut new = by_path_parameter("id");
        new.endpoints
            .iter_mut()
            .flat_map(|e| std::sync::Arc::make_mut(e).parameters.iter_mut())
            .for_each(|p| p.required = false);
        let report =
            crate::core::diff::classify(&by_path_parameter("petId"), &new, &Default::default());
        assert!(
            report
                .changes
                .iter()
                .all(|c| c.rule != PATH_PARAMETER_RENAMED.id),
            "{report:?}"
        );
        // Swapped names are no rename.
        assert!(pair::renamed_in_place("/a/{x}/{y}", "/a/{y}/{x}").is_empty());
        assert_eq!(
            pair::renamed_in_place("/e/{enterprise_id}/billing", "/e/{enterprise}/billing"),
            std::collections::BTreeMap::from([(
                "enterprise_id".to_string(),
                "enterprise".to_string()
            )])
        );
        assert!(pair::renamed_in_place("/a/{x}", "/b/{y}").is_empty());
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
