//! OpenRPC rules (normalize/openrpc): a method's `paramStructure` and whether its result is
//! `required`. Server variables are the execution target (`execution-target-changed`); error
//! codes are response statuses (`response-error-status-added` / `-removed`).

use super::emit::Emitter;
use super::rule::{Rule, Side};
use super::shared::{changed_members, META_CHANGED};
use crate::core::change_kind::ChangeKind;
use crate::core::model::{EndpointSpec, Severity::*};
use serde_json::{json, Value};

pub static PARAM_STRUCTURE_RELAXED: Rule = Rule::new(
    "param-structure-relaxed",
    Compatible,
    Side::Request,
    "A method now accepts params by name and by position (`paramStructure` → `either`).",
);

pub static PARAM_STRUCTURE_TIGHTENED: Rule = Rule::new(
    "param-structure-tightened",
    Breaking,
    Side::Request,
    "A method now accepts params only by name or only by position (`paramStructure` changed to a stricter value); callers passing them the other way fail.",
);

pub static RESULT_BECAME_OPTIONAL: Rule = Rule::new(
    "result-became-optional",
    Breaking,
    Side::Response,
    "A method's result is no longer `required`: it may now be absent or null.",
);

pub static RESULT_BECAME_REQUIRED: Rule = Rule::new(
    "result-became-required",
    Compatible,
    Side::Response,
    "A method's result is now `required` (always present).",
);

/// The method's `paramStructure`, as its params record it (`either` when unstated).
fn structure(e: &EndpointSpec) -> Option<String> {
    if e.parameters.is_empty() {
        // Without params the structure constrains nothing.
        return None;
    }
    Some(
        e.parameters
            .iter()
            .find_map(|p| p.style.get("paramStructure").and_then(Value::as_str))
            .unwrap_or("either")
            .to_string(),
    )
}

pub(crate) fn compare_param_structure(
    o: &EndpointSpec,
    n: &EndpointSpec,
    at: &str,
    out: &mut Emitter,
) {
    let (Some(before), Some(after)) = (structure(o), structure(n)) else {
        return;
    };
    if before == after {
        return;
    }
    let rule = if after == "either" {
        &PARAM_STRUCTURE_RELAXED
    } else {
        &PARAM_STRUCTURE_TIGHTENED
    };
    out.emit(
        rule,
        &format!("{at}.paramStructure"),
        ChangeKind::ParamStructureChanged,
        Some(json!(before)),
        Some(json!(after)),
        format!("{} now takes its params {after} (was {before}).", n.name),
    );
}

/// An OpenRPC method's `meta`: `resultRequired`.
pub(crate) fn compare_facts(o: &EndpointSpec, n: &EndpointSpec, at: &str, out: &mut Emitter) {
    for (key, before, after) in changed_members(o.meta.as_deref(), n.meta.as_deref()) {
        if key == "resultRequired" {
            let now = after == Some(&Value::Bool(true));
            out.emit(
                if now {
                    &RESULT_BECAME_REQUIRED
                } else {
                    &RESULT_BECAME_OPTIONAL
                },
                &format!("{at}.result.required"),
                ChangeKind::ResultRequiredChanged,
                Some(json!(!now)),
                Some(json!(now)),
                format!(
                    "The result of {} is {} required.",
                    n.name,
                    if now { "now" } else { "no longer" }
                ),
            );
        } else {
            out.emit(
                &META_CHANGED,
                &format!("{at}.meta.{key}"),
                ChangeKind::MetaChanged,
                before.cloned(),
                after.cloned(),
                format!("The metadata {key} of {} changed.", n.name),
            );
        }
    }
}

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &PARAM_STRUCTURE_RELAXED,
    &PARAM_STRUCTURE_TIGHTENED,
    &RESULT_BECAME_OPTIONAL,
    &RESULT_BECAME_REQUIRED,
];

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{check_case, rpc_docs, Case};
    use serde_json::json;

    /// One case per rule of this family.
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            Case::new(
                &PARAM_STRUCTURE_TIGHTENED,
                rpc_docs(
                    |_| {},
                    |d| d["methods"][0]["paramStructure"] = json!("by-name"),
                ),
            ),
            Case::new(
                &PARAM_STRUCTURE_RELAXED,
                rpc_docs(
                    |d| d["methods"][0]["paramStructure"] = json!("by-position"),
                    |d| d["methods"][0]["paramStructure"] = json!("either"),
                ),
            ),
            Case::new(
                &RESULT_BECAME_OPTIONAL,
                rpc_docs(
                    |d| d["methods"][0]["result"]["required"] = json!(true),
                    |_| {},
                ),
            ),
            Case::new(
                &RESULT_BECAME_REQUIRED,
                rpc_docs(
                    |_| {},
                    |d| d["methods"][0]["result"]["required"] = json!(true),
                ),
            ),
        ]
    }

    #[test]
    fn cases_fire_their_rules() {
        for case in cases() {
            check_case(&case);
        }
    }

    /// Server variables choose where calls go; error codes are like HTTP error statuses.
    #[test]
    fn server_variables_and_error_codes() {
        use crate::core::diff::classify;
        use crate::core::model::Compatibility;
        let server = |choices: serde_json::Value| {
            move |d: &mut serde_json::Value| {
                d["servers"] = json!([{"url": "https://${net}.example.org",
                    "variables": {"net": {"default": "main", "enum": choices.clone()}}}]);
            }
        };
        let (old, new) = rpc_docs(server(json!(["main"])), server(json!(["main", "evil"])));
        let report = classify(&old, &new, &Default::default());
        assert_eq!(report.compatibility, Compatibility::SecurityReview);
        let (old, new) = rpc_docs(
            |_| {},
            |d| d["methods"][0]["errors"] = json!([{"code": -32001, "message": "busy"}]),
        );
        let report = classify(&old, &new, &Default::default());
        assert_eq!(report.compatibility, Compatibility::Compatible);
    }
}
