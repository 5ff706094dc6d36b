//! Request body rules: a body added, removed, made required or optional, and its media types;
//! each media type's schema goes to the schema walker.

use super::emit::Emitter;
use super::pair::{by_key, Keyed};
use super::rule::{Rule, Side};
use super::schema::{Direction, SchemaDiffer};
use super::shared::DESCRIPTION_CHANGED;
use crate::core::change_kind::ChangeKind;
use crate::core::model::{RequestBody, Severity::*};
use serde_json::json;

pub static REQUEST_BODY_ADDED_OPTIONAL: Rule = Rule::new(
    "request-body-added-optional",
    Compatible,
    Side::Request,
    "An optional request body was added.",
);

pub static REQUEST_BODY_ADDED_REQUIRED: Rule = Rule::new(
    "request-body-added-required",
    Breaking,
    Side::Request,
    "A required request body was added; existing callers do not send it.",
);

pub static REQUEST_BODY_BECAME_OPTIONAL: Rule = Rule::new(
    "request-body-became-optional",
    Compatible,
    Side::Request,
    "The request body is no longer required.",
);

pub static REQUEST_BODY_BECAME_REQUIRED: Rule = Rule::new(
    "request-body-became-required",
    Breaking,
    Side::Request,
    "The request body became required.",
);

pub static REQUEST_BODY_REMOVED: Rule = Rule::new(
    "request-body-removed",
    Breaking,
    Side::Request,
    "The request body was removed; what callers send is no longer accepted.",
);

pub static REQUEST_ENCODING_CHANGED: Rule = Rule::new(
    "request-encoding-changed",
    Breaking,
    Side::Request,
    "How a multipart or form body part is encoded changed (Encoding `contentType`, `headers`, `style`, `explode`, `allowReserved`); callers send it the old way.",
);

pub static REQUEST_MEDIA_TYPE_ADDED: Rule = Rule::new(
    "request-media-type-added",
    Compatible,
    Side::Request,
    "The request body accepts a new media type.",
);

pub static REQUEST_MEDIA_TYPE_REMOVED: Rule = Rule::new(
    "request-media-type-removed",
    Breaking,
    Side::Request,
    "The request body no longer accepts a media type.",
);

pub(super) fn compare_request_body(
    send: Direction,
    at: &str,
    old: Option<&RequestBody>,
    new: Option<&RequestBody>,
    schemas: &mut SchemaDiffer,
    out: &mut Emitter,
) {
    let b_at = format!("{at}.request_body");
    match (old, new) {
        (None, None) => {}
        (Some(_), None) => out.emit(
            &REQUEST_BODY_REMOVED,
            &b_at,
            ChangeKind::RequestBodyRemoved,
            None,
            None,
            "The request body was removed.".into(),
        ),
        (None, Some(n)) => {
            let (rule, word) = if n.required {
                (&REQUEST_BODY_ADDED_REQUIRED, "A required")
            } else {
                (&REQUEST_BODY_ADDED_OPTIONAL, "An optional")
            };
            out.emit(
                rule,
                &b_at,
                ChangeKind::RequestBodyAdded,
                None,
                None,
                format!("{word} request body was added."),
            );
        }
        (Some(o), Some(n)) => {
            if o.required != n.required {
                let (rule, word) = if n.required {
                    (&REQUEST_BODY_BECAME_REQUIRED, "required")
                } else {
                    (&REQUEST_BODY_BECAME_OPTIONAL, "optional")
                };
                out.emit(
                    rule,
                    &format!("{b_at}.required"),
                    ChangeKind::RequestBodyRequiredChanged,
                    Some(json!(o.required)),
                    Some(json!(n.required)),
                    format!("The request body became {word}."),
                );
            }
            for pair in by_key(&o.encoding, &n.encoding) {
                let (media, before, after) = match pair {
                    Keyed::Both(_, a, b) if a == b => continue,
                    Keyed::Both(media, a, b) => (media, Some(a), Some(b)),
                    Keyed::Removed(media, a) => (media, Some(a), None),
                    Keyed::Added(media, b) => (media, None, Some(b)),
                };
                out.emit(
                    &REQUEST_ENCODING_CHANGED,
                    &format!("{b_at}.content.{media}.encoding"),
                    ChangeKind::RequestEncodingChanged,
                    before.cloned(),
                    after.cloned(),
                    format!("The encoding of the {media} request body's parts changed."),
                );
            }
            if o.description != n.description {
                out.emit(
                    &DESCRIPTION_CHANGED,
                    &format!("{b_at}.description"),
                    ChangeKind::DescriptionChanged,
                    o.description.as_ref().map(|d| json!(d)),
                    n.description.as_ref().map(|d| json!(d)),
                    "The request body's description changed.".into(),
                );
            }
            for pair in by_key(&o.content, &n.content) {
                match pair {
                    Keyed::Removed(media, _) => out.emit(
                        &REQUEST_MEDIA_TYPE_REMOVED,
                        &format!("{b_at}.content.{media}"),
                        ChangeKind::MediaTypeRemoved,
                        Some(json!(media)),
                        None,
                        format!("The request body no longer accepts {media}."),
                    ),
                    Keyed::Both(media, old_schema, new_schema) => schemas.compare(
                        old_schema,
                        new_schema,
                        send,
                        &format!("{b_at}.content.{media}.schema"),
                        out,
                    ),
                    Keyed::Added(media, _) => out.emit(
                        &REQUEST_MEDIA_TYPE_ADDED,
                        &format!("{b_at}.content.{media}"),
                        ChangeKind::MediaTypeAdded,
                        None,
                        Some(json!(media)),
                        format!("The request body now also accepts {media}."),
                    ),
                }
            }
        }
    }
}

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &REQUEST_BODY_ADDED_OPTIONAL,
    &REQUEST_BODY_ADDED_REQUIRED,
    &REQUEST_BODY_BECAME_OPTIONAL,
    &REQUEST_BODY_BECAME_REQUIRED,
    &REQUEST_BODY_REMOVED,
    &REQUEST_ENCODING_CHANGED,
    &REQUEST_MEDIA_TYPE_ADDED,
    &REQUEST_MEDIA_TYPE_REMOVED,
];

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{at, check_case, openapi, openapi_reversed, Case, CREATE, LIST};
    use serde_json::json;

    /// One case per rule of this family (more where kinds differ).
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            Case::new(
                &REQUEST_ENCODING_CHANGED,
                openapi(|d| {
                    at(d, CREATE)["requestBody"]["content"]["application/json"]["encoding"] =
                        json!({"name": {"contentType": "text/plain"}});
                }),
            ),
            Case::new(
                &REQUEST_BODY_ADDED_OPTIONAL,
                openapi(|d| {
                    at(d, LIST)["requestBody"] =
                        json!({"content": {"application/json": {"schema": {"type": "object"}}}});
                }),
            ),
            Case::new(
                &REQUEST_BODY_ADDED_REQUIRED,
                openapi(|d| {
                    at(d, LIST)["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"type": "object"}}}});
                }),
            ),
            Case::new(
                &REQUEST_BODY_BECAME_OPTIONAL,
                openapi(|d| {
                    at(d, CREATE)["requestBody"]["required"] = json!(false);
                }),
            ),
            Case::new(
                &REQUEST_BODY_REMOVED,
                openapi(|d| {
                    at(d, CREATE).as_object_mut().unwrap().remove("requestBody");
                }),
            ),
            Case::new(
                &REQUEST_MEDIA_TYPE_ADDED,
                openapi(|d| {
                    at(d, CREATE)["requestBody"]["content"]["application/xml"] =
                        json!({"schema": {"$ref": "#/components/schemas/NewPet"}});
                }),
            ),
            Case::new(
                &REQUEST_MEDIA_TYPE_REMOVED,
                openapi(|d| {
                    at(d, CREATE)["requestBody"]["content"] = json!({"application/xml": {"schema": {"$ref": "#/components/schemas/NewPet"}}});
                }),
            ),
            Case::new(
                &REQUEST_BODY_BECAME_REQUIRED,
                openapi_reversed(|d| {
                    at(d, CREATE)["requestBody"]["required"] = json!(false);
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
