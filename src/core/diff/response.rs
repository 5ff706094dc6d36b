//! Response rules: statuses (success and error), media types and headers; each schema goes to
//! the schema walker.

use super::emit::Emitter;
use super::pair::{by_key, Keyed};
use super::rule::{Rule, Side};
use super::schema::{Direction, SchemaDiffer};
use super::shared::DESCRIPTION_CHANGED;
use crate::core::change_kind::ChangeKind;
use crate::core::model::{CompactString, ResponseSpec, Severity::*, SmallMap};
use serde_json::json;

pub static RESPONSE_ERROR_STATUS_ADDED: Rule = Rule::new(
    "response-error-status-added",
    Compatible,
    Side::Response,
    "A new non-success response status is documented.",
);

pub static RESPONSE_ERROR_STATUS_REMOVED: Rule = Rule::new(
    "response-error-status-removed",
    Compatible,
    Side::Response,
    "A non-success response status is no longer documented.",
);

pub static RESPONSE_HEADER_ADDED: Rule = Rule::new(
    "response-header-added",
    Compatible,
    Side::Response,
    "A response header was added.",
);

pub static RESPONSE_HEADER_BECAME_OPTIONAL: Rule = Rule::new(
    "response-header-became-optional",
    Breaking,
    Side::Response,
    "A response header the provider always sent (`required: true`) may now be missing.",
);

pub static RESPONSE_HEADER_BECAME_REQUIRED: Rule = Rule::new(
    "response-header-became-required",
    Compatible,
    Side::Response,
    "A response header is now always sent (`required` false → true).",
);

pub static RESPONSE_HEADER_DEPRECATED_CHANGED: Rule = Rule::new(
    "response-header-deprecated-changed",
    Info,
    Side::Response,
    "A response header was deprecated or undeprecated.",
);

pub static RESPONSE_HEADER_STYLE_CHANGED: Rule = Rule::new(
    "response-header-style-changed",
    Breaking,
    Side::Response,
    "How a response header is serialized changed (`style`, `explode`, `content` media type); callers parse it the old way.",
);

pub static RESPONSE_HEADER_REMOVED: Rule = Rule::new(
    "response-header-removed",
    Breaking,
    Side::Response,
    "A response header was removed.",
);

pub static RESPONSE_LINKS_CHANGED: Rule = Rule::new(
    "response-links-changed",
    Info,
    Side::Response,
    "A response's `links` (design-time hints for following calls) changed.",
);

pub static RESPONSE_MEDIA_TYPE_ADDED: Rule = Rule::new(
    "response-media-type-added",
    Compatible,
    Side::Response,
    "A response media type was added.",
);

pub static RESPONSE_MEDIA_TYPE_REMOVED: Rule = Rule::new(
    "response-media-type-removed",
    Breaking,
    Side::Response,
    "A response media type was removed or changed.",
);

pub static RESPONSE_SUCCESS_STATUS_ADDED: Rule = Rule::new(
    "response-success-status-added",
    Breaking,
    Side::Response,
    "A new success status appeared that callers do not expect.",
);

pub static RESPONSE_SUCCESS_STATUS_REMOVED: Rule = Rule::new(
    "response-success-status-removed",
    Breaking,
    Side::Response,
    "A success response status was removed.",
);

fn is_success(status: &str) -> bool {
    status.starts_with('2')
}

pub(super) fn compare_responses(
    receive: Direction,
    at: &str,
    old: &SmallMap<CompactString, ResponseSpec>,
    new: &SmallMap<CompactString, ResponseSpec>,
    schemas: &mut SchemaDiffer,
    out: &mut Emitter,
) {
    for pair in by_key(old, new) {
        let (status, o, n) = match pair {
            Keyed::Removed(status, _) => {
                let rule = if is_success(status) {
                    &RESPONSE_SUCCESS_STATUS_REMOVED
                } else {
                    &RESPONSE_ERROR_STATUS_REMOVED
                };
                out.emit(
                    rule,
                    &format!("{at}.responses.{status}"),
                    ChangeKind::ResponseRemoved,
                    Some(json!(status)),
                    None,
                    format!("Response {status} was removed."),
                );
                continue;
            }
            Keyed::Added(status, _) => {
                let rule = if is_success(status) {
                    &RESPONSE_SUCCESS_STATUS_ADDED
                } else {
                    &RESPONSE_ERROR_STATUS_ADDED
                };
                out.emit(
                    rule,
                    &format!("{at}.responses.{status}"),
                    ChangeKind::ResponseAdded,
                    None,
                    Some(json!(status)),
                    format!("Response {status} was added."),
                );
                continue;
            }
            Keyed::Both(status, o, n) => (status, o, n),
        };
        let r_at = format!("{at}.responses.{status}");
        if o.description != n.description {
            out.emit(
                &DESCRIPTION_CHANGED,
                &format!("{r_at}.description"),
                ChangeKind::DescriptionChanged,
                o.description.as_ref().map(|d| json!(d)),
                n.description.as_ref().map(|d| json!(d)),
                format!("The description of response {status} changed."),
            );
        }
        for pair in by_key(&o.content, &n.content) {
            match pair {
                Keyed::Removed(media, _) => out.emit(
                    &RESPONSE_MEDIA_TYPE_REMOVED,
                    &format!("{r_at}.content.{media}"),
                    ChangeKind::MediaTypeRemoved,
                    Some(json!(media)),
                    None,
                    format!("Response {status} no longer returns {media}."),
                ),
                Keyed::Both(media, old_schema, new_schema) => schemas.compare(
                    old_schema,
                    new_schema,
                    receive,
                    &format!("{r_at}.content.{media}.schema"),
                    out,
                ),
                Keyed::Added(media, _) => out.emit(
                    &RESPONSE_MEDIA_TYPE_ADDED,
                    &format!("{r_at}.content.{media}"),
                    ChangeKind::MediaTypeAdded,
                    None,
                    Some(json!(media)),
                    format!("Response {status} may now also return {media}."),
                ),
            }
        }
        for pair in by_key(&o.headers, &n.headers) {
            match pair {
                Keyed::Removed(header, _) => out.emit(
                    &RESPONSE_HEADER_REMOVED,
                    &format!("{r_at}.headers.{header}"),
                    ChangeKind::ResponseHeaderRemoved,
                    Some(json!(header)),
                    None,
                    format!("Response {status} no longer sends header {header}."),
                ),
                Keyed::Both(header, old_schema, new_schema) => schemas.compare(
                    old_schema,
                    new_schema,
                    receive,
                    &format!("{r_at}.headers.{header}.schema"),
                    out,
                ),
                Keyed::Added(header, _) => out.emit(
                    &RESPONSE_HEADER_ADDED,
                    &format!("{r_at}.headers.{header}"),
                    ChangeKind::ResponseHeaderAdded,
                    None,
                    Some(json!(header)),
                    format!("Response {status} now sends header {header}."),
                ),
            }
        }
        compare_header_facts(&r_at, status, o, n, out);
        if o.links != n.links {
            out.emit(
                &RESPONSE_LINKS_CHANGED,
                &format!("{r_at}.links"),
                ChangeKind::LinksChanged,
                Some(json!(o.links)),
                Some(json!(n.links)),
                format!("The links of response {status} changed."),
            );
        }
    }
}

/// The header objects around the schemas of headers both sides send.
fn compare_header_facts(
    r_at: &str,
    status: &str,
    o: &ResponseSpec,
    n: &ResponseSpec,
    out: &mut Emitter,
) {
    let empty = SmallMap::new();
    for header in o.headers.keys().filter(|h| n.headers.contains_key(*h)) {
        let (of, nf) = (
            o.header_facts.get(header).unwrap_or(&empty),
            n.header_facts.get(header).unwrap_or(&empty),
        );
        if of == nf {
            continue;
        }
        let h_at = format!("{r_at}.headers.{header}");
        let flag = |f: &SmallMap<String, serde_json::Value>, key: &str| {
            f.get(key)
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false)
        };
        let (was, is) = (flag(of, "required"), flag(nf, "required"));
        if was != is {
            let rule = if is {
                &RESPONSE_HEADER_BECAME_REQUIRED
            } else {
                &RESPONSE_HEADER_BECAME_OPTIONAL
            };
            out.emit(
                rule,
                &format!("{h_at}.required"),
                ChangeKind::ResponseHeaderRequiredChanged,
                Some(json!(was)),
                Some(json!(is)),
                format!(
                    "Response {status} header {header} is {} always sent.",
                    if is { "now" } else { "no longer" }
                ),
            );
        }
        let (was, is) = (flag(of, "deprecated"), flag(nf, "deprecated"));
        if was != is {
            out.emit(
                &RESPONSE_HEADER_DEPRECATED_CHANGED,
                &format!("{h_at}.deprecated"),
                ChangeKind::DeprecatedChanged,
                Some(json!(was)),
                Some(json!(is)),
                format!(
                    "Response {status} header {header} is {} deprecated.",
                    if is { "now" } else { "no longer" }
                ),
            );
        }
        for key in ["style", "explode", "content"] {
            // The defaults: `style: simple`, `explode: false`.
            let value = |f: &SmallMap<String, serde_json::Value>| match (key, f.get(key)) {
                ("style", None) => Some(json!("simple")),
                ("explode", None) => Some(json!(false)),
                (_, v) => v.cloned(),
            };
            let (before, after) = (value(of), value(nf));
            if before != after {
                out.emit(
                    &RESPONSE_HEADER_STYLE_CHANGED,
                    &format!("{h_at}.{key}"),
                    ChangeKind::ResponseHeaderStyleChanged,
                    before,
                    after,
                    format!("The {key} of response {status} header {header} changed."),
                );
            }
        }
    }
}

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &RESPONSE_ERROR_STATUS_ADDED,
    &RESPONSE_ERROR_STATUS_REMOVED,
    &RESPONSE_HEADER_ADDED,
    &RESPONSE_HEADER_BECAME_OPTIONAL,
    &RESPONSE_HEADER_BECAME_REQUIRED,
    &RESPONSE_HEADER_DEPRECATED_CHANGED,
    &RESPONSE_HEADER_REMOVED,
    &RESPONSE_HEADER_STYLE_CHANGED,
    &RESPONSE_LINKS_CHANGED,
    &RESPONSE_MEDIA_TYPE_ADDED,
    &RESPONSE_MEDIA_TYPE_REMOVED,
    &RESPONSE_SUCCESS_STATUS_ADDED,
    &RESPONSE_SUCCESS_STATUS_REMOVED,
];

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{at, check_case, openapi, openapi_pair, Case, CREATE, LIST};
    use serde_json::json;

    /// One case per rule of this family (more where kinds differ).
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            Case::new(
                &RESPONSE_ERROR_STATUS_ADDED,
                openapi(|d| {
                    at(d, LIST)["responses"]["429"] = json!({"description": "slow down"});
                }),
            ),
            Case::new(
                &RESPONSE_ERROR_STATUS_REMOVED,
                openapi(|d| {
                    at(d, LIST)["responses"]
                        .as_object_mut()
                        .unwrap()
                        .remove("default");
                }),
            ),
            Case::new(
                &RESPONSE_HEADER_ADDED,
                openapi(|d| {
                    at(d, LIST)["responses"]["200"]["headers"]["X-Rate"] =
                        json!({"schema": {"type": "integer"}});
                }),
            ),
            Case::new(
                &RESPONSE_HEADER_BECAME_OPTIONAL,
                openapi_pair(
                    |d| {
                        at(d, LIST)["responses"]["200"]["headers"]["X-Next"]["required"] =
                            json!(true)
                    },
                    |d| {
                        at(d, LIST)["responses"]["200"]["headers"]["X-Next"]["required"] =
                            json!(false)
                    },
                ),
            ),
            Case::new(
                &RESPONSE_HEADER_BECAME_REQUIRED,
                openapi(|d| {
                    at(d, LIST)["responses"]["200"]["headers"]["X-Next"]["required"] = json!(true);
                }),
            ),
            Case::new(
                &RESPONSE_HEADER_DEPRECATED_CHANGED,
                openapi(|d| {
                    at(d, LIST)["responses"]["200"]["headers"]["X-Next"]["deprecated"] =
                        json!(true);
                }),
            ),
            Case::new(
                &RESPONSE_HEADER_STYLE_CHANGED,
                openapi(|d| {
                    at(d, LIST)["responses"]["200"]["headers"]["X-Next"]["explode"] = json!(true);
                }),
            ),
            Case::new(
                &RESPONSE_HEADER_STYLE_CHANGED,
                openapi(|d| {
                    at(d, LIST)["responses"]["200"]["headers"]["X-Next"] =
                        json!({"content": {"application/json": {"schema": {"type": "string"}}}});
                }),
            ),
            Case::new(
                &RESPONSE_LINKS_CHANGED,
                openapi(|d| {
                    at(d, CREATE)["responses"]["201"]["links"] =
                        json!({"GetPet": {"operationId": "listPets"}});
                }),
            ),
            Case::new(
                &RESPONSE_HEADER_REMOVED,
                openapi(|d| {
                    at(d, LIST)["responses"]["200"]["headers"] = json!({});
                }),
            ),
            Case::new(
                &RESPONSE_MEDIA_TYPE_ADDED,
                openapi(|d| {
                    at(d, LIST)["responses"]["200"]["content"]["application/xml"] =
                        json!({"schema": {"type": "string"}});
                }),
            ),
            Case::new(
                &RESPONSE_MEDIA_TYPE_REMOVED,
                openapi(|d| {
                    at(d, LIST)["responses"]["200"]["content"] =
                        json!({"text/plain": {"schema": {"type": "string"}}});
                }),
            ),
            Case::new(
                &RESPONSE_SUCCESS_STATUS_ADDED,
                openapi(|d| {
                    at(d, LIST)["responses"]["206"] = json!({"description": "partial"});
                }),
            ),
            Case::new(
                &RESPONSE_SUCCESS_STATUS_REMOVED,
                openapi(|d| {
                    at(d, CREATE)["responses"] = json!({"default": {"description": "error"}});
                }),
            ),
        ]
    }

    #[test]
    fn cases_fire_their_rules() {
        for case in cases() {
            check_case(&case);
        }
    }
}
