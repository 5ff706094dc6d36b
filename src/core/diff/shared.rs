//! The shared rules: the endpoint and text rules that several families emit (an endpoint
//! added or removed, descriptive text, titles, deprecation, vendor metadata and extensions,
//! documentation inside schemas, the `unclassified-change` catch-all), and the helpers every
//! family uses to name what it judges. A kind swaps some of them for stricter rules of its
//! own through the emitter's rule swap (MCP: `tool-*`, `prompt-*`, `resource-*`), so a family
//! always emits the general rule.

use super::rule::{Rule, Side};
use crate::core::model::{EndpointSpec, Severity::*};
use serde_json::Value;
use std::collections::BTreeSet;

/// The schema keywords `documentation-changed` judges (as it does any `x-` extension).
pub const DOC_KEYWORDS: &[&str] = &[
    "description",
    "title",
    "example",
    "examples",
    "externalDocs",
    "$comment",
    "xml",
];

pub static DEPRECATED_CHANGED: Rule = Rule::new(
    "deprecated-changed",
    Info,
    Side::Endpoint,
    "An endpoint, parameter or schema was marked or unmarked deprecated.",
)
.keywords(&["deprecated"]);

pub static DESCRIPTION_CHANGED: Rule = Rule::new(
    "description-changed",
    Info,
    Side::Endpoint,
    "Descriptive text of an endpoint, parameter, body or response changed.",
);

pub static DOCUMENTATION_CHANGED: Rule = Rule::new(
    "documentation-changed",
    Info,
    Side::Schema,
    "A schema's documentation keyword changed (description, title, example, x-* extension).",
)
.keywords(DOC_KEYWORDS);

pub static ENDPOINT_ADDED_READ_ONLY: Rule = Rule::new(
    "endpoint-added-read-only",
    Compatible,
    Side::Endpoint,
    "A new endpoint appeared that is provably read-only (GET, HEAD, OPTIONS).",
);

pub static ENDPOINT_ADDED_WRITE: Rule = Rule::new(
    "endpoint-added-write",
    Security,
    Side::Endpoint,
    "A new endpoint appeared that can write or whose side effects are unknown.",
);

pub static ENDPOINT_REMOVED: Rule = Rule::new(
    "endpoint-removed",
    Breaking,
    Side::Endpoint,
    "An endpoint disappeared; callers of it fail.",
);

pub static EXTENSION_CHANGED: Rule = Rule::new(
    "extension-changed",
    Breaking,
    Side::Contract,
    "A vendor extension (an `x-` key) outside a schema changed; it is kept in the contract but not modelled.",
);

pub static META_CHANGED: Rule = Rule::new(
    "meta-changed",
    Breaking,
    Side::Endpoint,
    "An endpoint's vendor metadata (MCP _meta) changed; not modelled, so not assumed safe.",
);

pub static TITLE_CHANGED: Rule = Rule::new(
    "title-changed",
    Info,
    Side::Endpoint,
    "An endpoint's display title changed.",
);

pub static UNCLASSIFIED_CHANGE: Rule = Rule::new(
    "unclassified-change",
    Breaking,
    Side::Contract,
    "The fingerprint changed and no other rule explains it; never assumed safe.",
)
.conservative();

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &DEPRECATED_CHANGED,
    &DESCRIPTION_CHANGED,
    &DOCUMENTATION_CHANGED,
    &ENDPOINT_ADDED_READ_ONLY,
    &ENDPOINT_ADDED_WRITE,
    &ENDPOINT_REMOVED,
    &EXTENSION_CHANGED,
    &META_CHANGED,
    &TITLE_CHANGED,
    &UNCLASSIFIED_CHANGE,
];

/// Where an endpoint's changes are reported: `endpoints.<name>`.
pub fn endpoint_path(e: &EndpointSpec) -> String {
    format!("endpoints.{}", e.name)
}

/// The members of two JSON objects (absent or not an object: empty) whose values differ, in
/// key order: the walk of every kept map compared key by key (an endpoint's `meta`, OData
/// annotations).
pub fn changed_members<'v>(
    old: Option<&'v Value>,
    new: Option<&'v Value>,
) -> Vec<(&'v String, Option<&'v Value>, Option<&'v Value>)> {
    let (om, nm) = (
        old.and_then(Value::as_object),
        new.and_then(Value::as_object),
    );
    let keys: BTreeSet<&String> = om.into_iter().chain(nm).flat_map(|m| m.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (before, after) = (om.and_then(|m| m.get(k)), nm.and_then(|m| m.get(k)));
            (before != after).then_some((k, before, after))
        })
        .collect()
}

#[cfg(test)]
pub(super) mod cases {
    use crate::core::diff::tests::Case;

    /// The shared rules' cases sit with the families that emit them (`endpoint.rs`,
    /// `schema.rs`, `contract.rs`); `every_rule_has_a_case` sees them all.
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        Vec::new()
    }
}
