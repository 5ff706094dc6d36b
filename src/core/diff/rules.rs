//! The rule registry: every drift rule has a stable kebab-case id, a default severity and a
//! one-line doc. The classifier emits changes only through these ids; `docs/rules.md` is
//! generated from this list (`schemawatch rules --markdown`) and a test fails when it is stale.

use crate::core::model::Severity;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    pub doc: &'static str,
}

const fn rule(id: &'static str, severity: Severity, doc: &'static str) -> Rule {
    Rule { id, severity, doc }
}

use Severity::{Breaking, Compatible, Info, Security};

/// Every rule, sorted by id.
pub const RULES: &[Rule] = &[
    rule("deprecated-changed", Info, "An endpoint, parameter or schema was marked or unmarked deprecated."),
    rule("description-changed", Info, "Descriptive text of an endpoint, parameter, body or response changed."),
    rule("documentation-changed", Info, "A schema's documentation keyword changed (description, title, example, x-* extension)."),
    rule("endpoint-added-read-only", Compatible, "A new endpoint appeared that is provably read-only (GET, HEAD, OPTIONS)."),
    rule("endpoint-added-write", Security, "A new endpoint appeared that can write or whose side effects are unknown."),
    rule("endpoint-possibly-renamed", Info, "A removed and an added endpoint have the same contract: probably a rename (both are also reported)."),
    rule("endpoint-removed", Breaking, "An endpoint disappeared; callers of it fail."),
    rule("endpoint-renamed", Breaking, "The endpoint kept its method and path but its name (operationId) changed."),
    rule("endpoint-unclassified", Security, "A new endpoint is missing from the watch's surface classification file (triage)."),
    rule("execution-target-changed", Security, "The invocation target changed: base URL, server, host, basePath or transport."),
    rule("instructions-changed", Security, "Server-level instructions that reach a model changed."),
    rule("meta-changed", Breaking, "An endpoint's vendor metadata (MCP _meta) changed; not modelled, so not assumed safe."),
    rule("method-changed", Breaking, "The same operation moved to another HTTP method without gaining side effects."),
    rule("method-escalated", Security, "The same operation gained side effects: read-only to write, or non-destructive to destructive."),
    rule("path-changed", Breaking, "The same operation (by operationId) moved to another path."),
    rule("read-write-only-changed", Breaking, "A schema's readOnly or writeOnly flag changed."),
    rule("request-body-added-optional", Compatible, "An optional request body was added."),
    rule("request-body-added-required", Breaking, "A required request body was added; existing callers do not send it."),
    rule("request-body-became-optional", Compatible, "The request body is no longer required."),
    rule("request-body-became-required", Breaking, "The request body became required."),
    rule("request-body-removed", Breaking, "The request body was removed; what callers send is no longer accepted."),
    rule("request-constraint-changed", Breaking, "A request schema constraint (pattern, format, ...) changed in a way that cannot be proven wider."),
    rule("request-constraint-relaxed", Compatible, "A request schema constraint was relaxed or removed (larger maximum, smaller minimum, pattern removed)."),
    rule("request-constraint-tightened", Breaking, "A request schema constraint was added or tightened (smaller maximum, pattern added, additionalProperties false)."),
    rule("request-default-changed", Breaking, "The default of a request value changed, so callers that omit it get different behaviour."),
    rule("request-enum-value-added", Compatible, "A request enum accepts a new value."),
    rule("request-enum-value-removed", Breaking, "A request enum no longer accepts a value callers may send."),
    rule("request-media-type-added", Compatible, "The request body accepts a new media type."),
    rule("request-media-type-removed", Breaking, "The request body no longer accepts a media type."),
    rule("request-parameter-added-not-trailing", Breaking, "An optional positional (JSON-RPC) parameter was added before existing ones; only a trailing optional parameter may be added."),
    rule("request-parameter-added-optional", Compatible, "An optional parameter was added."),
    rule("request-parameter-added-required", Breaking, "A required parameter was added; existing callers do not send it."),
    rule("request-parameter-became-optional", Compatible, "A parameter is no longer required."),
    rule("request-parameter-became-required", Breaking, "A parameter became required."),
    rule("request-parameter-removed", Breaking, "A parameter was removed (or moved to another location)."),
    rule("request-parameter-reordered", Breaking, "A positional (JSON-RPC) parameter moved to another position; by-position callers now send it in the wrong place."),
    rule("request-parameter-style-changed", Breaking, "A parameter's serialization (style, explode, allowReserved, content type) changed."),
    rule("request-property-added-optional", Compatible, "A request schema gained an optional property."),
    rule("request-property-added-required", Breaking, "A request schema gained a required property; existing callers do not send it."),
    rule("request-property-became-optional", Compatible, "A request property is no longer required."),
    rule("request-property-became-required", Breaking, "A request property became required."),
    rule("request-property-removed", Breaking, "A request schema lost a property callers may send."),
    rule("request-type-changed", Breaking, "A request schema's type was narrowed or changed."),
    rule("request-type-widened", Compatible, "A request schema accepts more types (e.g. integer to number, or null added)."),
    rule("response-constraint-changed", Breaking, "A response schema constraint (pattern, format, ...) changed in a way that cannot be proven narrower."),
    rule("response-constraint-relaxed", Breaking, "A response schema constraint was relaxed or removed; callers may receive values they did not expect."),
    rule("response-constraint-tightened", Compatible, "A response schema constraint was added or tightened."),
    rule("response-default-changed", Info, "The default of a response value changed."),
    rule("response-enum-value-added", Breaking, "A response enum gained a value callers may not handle."),
    rule("response-enum-value-removed", Compatible, "A response enum lost a value."),
    rule("response-error-status-added", Compatible, "A new non-success response status is documented."),
    rule("response-error-status-removed", Compatible, "A non-success response status is no longer documented."),
    rule("response-header-added", Compatible, "A response header was added."),
    rule("response-header-removed", Breaking, "A response header was removed."),
    rule("response-media-type-added", Compatible, "A response media type was added."),
    rule("response-media-type-removed", Breaking, "A response media type was removed or changed."),
    rule("response-property-added", Compatible, "A response schema gained a property."),
    rule("response-property-became-optional", Breaking, "A response property is no longer guaranteed."),
    rule("response-property-became-required", Compatible, "A response property is now always present."),
    rule("response-property-removed", Breaking, "A response schema lost a property callers may read."),
    rule("response-success-status-added", Breaking, "A new success status appeared that callers do not expect."),
    rule("response-success-status-removed", Breaking, "A success response status was removed."),
    rule("response-type-changed", Breaking, "A response schema's type was widened or changed (e.g. integer to number, or null added)."),
    rule("response-type-narrowed", Compatible, "A response schema returns fewer types."),
    rule("schema-composition-changed", Breaking, "allOf/anyOf/oneOf/prefixItems changed shape; not provably safe."),
    rule("schema-keyword-changed", Breaking, "A JSON Schema keyword the classifier does not model changed."),
    rule("security-requirements-changed", Security, "The authentication or authorization requirements of an endpoint changed."),
    rule("side-effects-escalated", Security, "The same endpoint gained side effects: read-only to write, non-destructive to destructive, idempotent to not, or closed to open world."),
    rule("side-effects-reduced", Compatible, "The same endpoint lost side effects (e.g. became read-only or idempotent)."),
    rule("title-changed", Info, "An endpoint's display title changed."),
    rule("tool-added", Security, "A new MCP tool appeared; its name, description and schema are new text that reaches a model."),
    rule("tool-description-changed", Security, "An MCP tool's description changed; it is model-facing text (tool poisoning)."),
    rule("tool-schema-text-changed", Security, "Text inside an MCP tool's inputSchema or outputSchema changed (description, title, examples); it reaches a model."),
    rule("tool-title-changed", Security, "An MCP tool's title changed; it is model-facing text."),
    rule("unclassified-change", Breaking, "The fingerprint changed and no other rule explains it; never assumed safe."),
];

/// Looks up a rule by id.
pub fn find(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Per-rule severity overrides (`[severity]` and `[watch.severity]` in config).
pub type SeverityOverrides = BTreeMap<String, Severity>;

/// Renders the rule list as the Markdown of `docs/rules.md`.
pub fn rules_markdown() -> String {
    let mut out = String::from(
        "# Drift rules\n\nGenerated from `src/core/diff/rules.rs` by `schemawatch rules --markdown`; \
         a test fails when this file is stale. Override a severity with `[severity]` or \
         `[watch.severity]` in the config (`rule-id = \"breaking\"`).\n\n\
         | rule | default severity | what it means |\n|---|---|---|\n",
    );
    for r in RULES {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            r.id,
            r.severity.as_str(),
            r.doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_rules_md_is_generated_from_this_list() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/rules.md");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == rules_markdown(),
            "docs/rules.md is stale: run `cargo run -- rules --markdown > docs/rules.md`"
        );
    }

    #[test]
    fn ids_are_sorted_unique_kebab_case() {
        for pair in RULES.windows(2) {
            assert!(pair[0].id < pair[1].id, "{} !< {}", pair[0].id, pair[1].id);
        }
        for r in RULES {
            assert!(
                r.id.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{}",
                r.id
            );
            assert!(!r.doc.is_empty());
        }
    }
}
