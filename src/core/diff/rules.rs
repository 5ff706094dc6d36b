//! The rule registry. Every drift rule is a `pub static` [`Rule`] defined in the family file
//! beside the check that emits it and its test cases (`mod.rs`: the contract as a whole,
//! `endpoint.rs`, `parameter.rs`, `body.rs`, `response.rs`, `schema.rs`, `tool.rs`, `text.rs`); emit
//! sites take `&'static Rule`, so a misspelt rule cannot compile. [`ALL`] lists every rule once,
//! sorted by id: `schemawatch rules` and `docs/rules.md` are generated from it (a test fails when
//! the file is stale), and config overrides are checked against it.
//!
//! Rule ids are frozen: a renamed rule keeps the id it was first published under as its
//! `stable_id` and lists its old ids in `aliases`, which `[severity]` overrides still accept.
//! A rule split out of another names its parent in `split_from`, so a user's override of the
//! parent keeps applying to it (its own override wins). CHANGELOG lists every rename and split.

use super::{
    body, database, endpoint, graphql, odata, openrpc, parameter, response, schema, text, tool,
};
use crate::core::model::Severity;
use std::collections::BTreeMap;

/// What part of the contract a rule judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    /// The contract as a whole: invocation target, server instructions, an unexplained
    /// fingerprint difference.
    Contract,
    /// One endpoint: its presence, name, method, path, side effects, security, text.
    Endpoint,
    /// What a caller sends (parameters, request body, request schemas).
    Request,
    /// What a caller receives (responses, response schemas).
    Response,
    /// A schema in either direction, judged the same way both ways.
    Schema,
    /// A database table's or view's catalog facts: column order, constraints, indexes,
    /// triggers.
    Table,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Contract => "contract",
            Side::Endpoint => "endpoint",
            Side::Request => "request",
            Side::Response => "response",
            Side::Schema => "schema",
            Side::Table => "table",
        }
    }
}

/// One drift rule: how a kind of difference is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Kebab-case, frozen once published.
    pub id: &'static str,
    /// The default severity; `[severity]` overrides replace it.
    pub severity: Severity,
    pub side: Side,
    /// True when the rule decides by a conservative default rather than a proven fact (the
    /// provenance qualifier is then `PROBABLE`).
    pub conservative: bool,
    /// One line for `docs/rules.md`.
    pub doc: &'static str,
    /// The id the rule was first published under (its `id` unless it was renamed).
    pub stable_id: &'static str,
    /// Earlier ids of a renamed rule; overrides naming them apply to this rule.
    pub aliases: &'static [&'static str],
    /// The JSON Schema keywords whose comparison emits this rule (schema rules only); the
    /// schema walker treats every keyword listed here as modelled.
    pub keywords: &'static [&'static str],
    /// The ids of the rules this one was split out of; their overrides apply to it unless it
    /// has one of its own.
    pub split_from: &'static [&'static str],
}

impl Rule {
    pub const fn new(id: &'static str, severity: Severity, side: Side, doc: &'static str) -> Rule {
        Rule {
            id,
            severity,
            side,
            conservative: false,
            doc,
            stable_id: id,
            aliases: &[],
            keywords: &[],
            split_from: &[],
        }
    }

    /// Records the rules this one was split out of (their overrides keep applying).
    pub const fn split_from(self, parents: &'static [&'static str]) -> Rule {
        Rule {
            split_from: parents,
            ..self
        }
    }

    /// Marks a catch-all that judges by a conservative default.
    pub const fn conservative(self) -> Rule {
        Rule {
            conservative: true,
            ..self
        }
    }

    /// The schema keywords whose comparison emits this rule.
    pub const fn keywords(self, keywords: &'static [&'static str]) -> Rule {
        Rule { keywords, ..self }
    }

    /// Whether `name` is this rule's id, stable id or one of its aliases.
    pub fn is_named(&self, name: &str) -> bool {
        self.id == name || self.stable_id == name || self.aliases.contains(&name)
    }

    /// The severity of this rule under `overrides` (an override may name an alias).
    pub fn severity_under(&self, overrides: &SeverityOverrides) -> Severity {
        if overrides.is_empty() {
            return self.severity;
        }
        overrides
            .get(self.id)
            .or_else(|| {
                std::iter::once(self.stable_id)
                    .chain(self.aliases.iter().copied())
                    .chain(self.split_from.iter().copied())
                    .find_map(|name| overrides.get(name))
            })
            .copied()
            .unwrap_or(self.severity)
    }
}

/// Every rule, sorted by id.
pub static ALL: &[&Rule] = &[
    &odata::ADDRESSING_CHANGED,
    &odata::ANNOTATION_CHANGED,
    &tool::CAPABILITIES_CHANGED,
    &tool::CAPABILITY_LOST,
    &odata::COMPOSABLE_ADDED,
    &odata::COMPOSABLE_REMOVED,
    &database::DATABASE_CHECK_CHANGED,
    &database::DATABASE_COLUMN_REORDERED,
    &database::DATABASE_COLUMN_TYPE_CHANGED,
    &database::DATABASE_DECLARED_TYPE_CHANGED,
    &database::DATABASE_FOREIGN_KEY_CHANGED,
    &database::DATABASE_FUNCTION_ADDED_READ_ONLY,
    &database::DATABASE_FUNCTION_ADDED_WRITE,
    &database::DATABASE_FUNCTION_BODY_CHANGED,
    &database::DATABASE_FUNCTION_BODY_CHANGED_SENSITIVE,
    &database::DATABASE_FUNCTION_RESULT_CHANGED,
    &database::DATABASE_FUNCTION_VOLATILITY_CHANGED,
    &database::DATABASE_INDEX_CHANGED,
    &database::DATABASE_OBJECT_ADDED,
    &database::DATABASE_OBJECT_ADDED_WITH_GRANTS,
    &database::DATABASE_POLICY_CHANGED,
    &database::DATABASE_PRIMARY_KEY_CHANGED,
    &database::DATABASE_PRIVILEGE_GRANTED,
    &database::DATABASE_PRIVILEGE_REVOKED,
    &database::DATABASE_ROW_SECURITY_CHANGED,
    &database::DATABASE_SECURITY_DEFINER_CHANGED,
    &database::DATABASE_TABLE_OPTIONS_CHANGED,
    &database::DATABASE_TRIGGER_ADDED,
    &database::DATABASE_TRIGGER_CHANGED,
    &database::DATABASE_TRIGGER_REMOVED,
    &database::DATABASE_UNIQUE_CHANGED,
    &database::DATABASE_VIEW_DEFINITION_CHANGED,
    &schema::DEFINITION_RENAMED,
    &endpoint::DEPRECATED_CHANGED,
    &endpoint::DESCRIPTION_CHANGED,
    &graphql::DIRECTIVE_ADDED,
    &graphql::DIRECTIVE_APPLIED_CHANGED,
    &graphql::DIRECTIVE_ARGUMENT_ADDED_OPTIONAL,
    &graphql::DIRECTIVE_ARGUMENT_CHANGED,
    &graphql::DIRECTIVE_ARGUMENT_RELAXED,
    &graphql::DIRECTIVE_ARGUMENT_REMOVED,
    &graphql::DIRECTIVE_LOCATION_ADDED,
    &graphql::DIRECTIVE_LOCATION_REMOVED,
    &graphql::DIRECTIVE_REMOVED,
    &schema::DOCUMENTATION_CHANGED,
    &endpoint::ENDPOINT_ADDED_READ_ONLY,
    &endpoint::ENDPOINT_ADDED_WRITE,
    &endpoint::ENDPOINT_POSSIBLY_RENAMED,
    &endpoint::ENDPOINT_REMOVED,
    &endpoint::ENDPOINT_RENAMED,
    &super::ENDPOINT_UNCLASSIFIED,
    &super::EXECUTION_TARGET_CHANGED,
    &super::EXTENSION_CHANGED,
    &odata::FACET_CHANGED,
    &text::HIDDEN_TEXT_ADDED,
    &odata::IMMUTABLE_CHANGED,
    &graphql::INPUT_ONE_OF_ADDED,
    &graphql::INPUT_ONE_OF_REMOVED,
    &super::INSTRUCTIONS_CHANGED,
    &endpoint::META_CHANGED,
    &endpoint::METHOD_CHANGED,
    &endpoint::METHOD_ESCALATED,
    &odata::NAVIGATION_BECAME_NON_NULL,
    &odata::NAVIGATION_BECAME_NULLABLE,
    &openrpc::PARAM_STRUCTURE_RELAXED,
    &openrpc::PARAM_STRUCTURE_TIGHTENED,
    &endpoint::PATH_CHANGED,
    &parameter::PATH_PARAMETER_RENAMED,
    &odata::PERMISSIONS_WRITE_GRANTED,
    &odata::PERMISSIONS_WRITE_REVOKED,
    &tool::PROMPT_ADDED,
    &tool::PROMPT_REMOVED,
    &tool::PROMPT_TEXT_CHANGED,
    &schema::READ_WRITE_ONLY_CHANGED,
    &schema::READ_WRITE_ONLY_SIDE_IGNORED,
    &body::REQUEST_BODY_ADDED_OPTIONAL,
    &body::REQUEST_BODY_ADDED_REQUIRED,
    &body::REQUEST_BODY_BECAME_OPTIONAL,
    &body::REQUEST_BODY_BECAME_REQUIRED,
    &body::REQUEST_BODY_REMOVED,
    &schema::REQUEST_BRANCH_ADDED,
    &schema::REQUEST_BRANCH_REMOVED,
    &schema::REQUEST_CONSTRAINT_CHANGED,
    &schema::REQUEST_CONSTRAINT_RELAXED,
    &schema::REQUEST_CONSTRAINT_TIGHTENED,
    &schema::REQUEST_DEFAULT_CHANGED,
    &body::REQUEST_ENCODING_CHANGED,
    &schema::REQUEST_ENUM_VALUE_ADDED,
    &schema::REQUEST_ENUM_VALUE_REMOVED,
    &odata::REQUEST_FACET_RELAXED,
    &odata::REQUEST_FACET_TIGHTENED,
    &body::REQUEST_MEDIA_TYPE_ADDED,
    &body::REQUEST_MEDIA_TYPE_REMOVED,
    &parameter::REQUEST_PARAMETER_ADDED_NOT_TRAILING,
    &parameter::REQUEST_PARAMETER_ADDED_OPTIONAL,
    &parameter::REQUEST_PARAMETER_ADDED_REQUIRED,
    &parameter::REQUEST_PARAMETER_BECAME_OPTIONAL,
    &parameter::REQUEST_PARAMETER_BECAME_REQUIRED,
    &parameter::REQUEST_PARAMETER_EMPTY_VALUE_ALLOWED,
    &parameter::REQUEST_PARAMETER_EMPTY_VALUE_REFUSED,
    &parameter::REQUEST_PARAMETER_REMOVED,
    &parameter::REQUEST_PARAMETER_REORDERED,
    &parameter::REQUEST_PARAMETER_STYLE_CHANGED,
    &schema::REQUEST_PROPERTY_ADDED_OPTIONAL,
    &schema::REQUEST_PROPERTY_ADDED_REQUIRED,
    &schema::REQUEST_PROPERTY_BECAME_OPTIONAL,
    &schema::REQUEST_PROPERTY_BECAME_REQUIRED,
    &schema::REQUEST_PROPERTY_REMOVED,
    &schema::REQUEST_TYPE_CHANGED,
    &schema::REQUEST_TYPE_WIDENED,
    &tool::RESOURCE_ADDED,
    &tool::RESOURCE_REMOVED,
    &tool::RESOURCE_TEMPLATE_ADDED,
    &tool::RESOURCE_TEMPLATE_REMOVED,
    &tool::RESOURCE_TEMPLATE_TEXT_CHANGED,
    &tool::RESOURCE_TEXT_CHANGED,
    &schema::RESPONSE_BRANCH_ADDED,
    &schema::RESPONSE_BRANCH_REMOVED,
    &schema::RESPONSE_CONSTRAINT_CHANGED,
    &schema::RESPONSE_CONSTRAINT_RELAXED,
    &schema::RESPONSE_CONSTRAINT_TIGHTENED,
    &schema::RESPONSE_DEFAULT_CHANGED,
    &schema::RESPONSE_ENUM_VALUE_ADDED,
    &schema::RESPONSE_ENUM_VALUE_REMOVED,
    &response::RESPONSE_ERROR_STATUS_ADDED,
    &response::RESPONSE_ERROR_STATUS_REMOVED,
    &odata::RESPONSE_FACET_RELAXED,
    &odata::RESPONSE_FACET_TIGHTENED,
    &response::RESPONSE_HEADER_ADDED,
    &response::RESPONSE_HEADER_BECAME_OPTIONAL,
    &response::RESPONSE_HEADER_BECAME_REQUIRED,
    &response::RESPONSE_HEADER_DEPRECATED_CHANGED,
    &response::RESPONSE_HEADER_REMOVED,
    &response::RESPONSE_HEADER_STYLE_CHANGED,
    &response::RESPONSE_LINKS_CHANGED,
    &response::RESPONSE_MEDIA_TYPE_ADDED,
    &response::RESPONSE_MEDIA_TYPE_REMOVED,
    &schema::RESPONSE_PROPERTY_ADDED,
    &schema::RESPONSE_PROPERTY_BECAME_OPTIONAL,
    &schema::RESPONSE_PROPERTY_BECAME_REQUIRED,
    &schema::RESPONSE_PROPERTY_REMOVED,
    &response::RESPONSE_SUCCESS_STATUS_ADDED,
    &response::RESPONSE_SUCCESS_STATUS_REMOVED,
    &schema::RESPONSE_TYPE_CHANGED,
    &schema::RESPONSE_TYPE_NARROWED,
    &openrpc::RESULT_BECAME_OPTIONAL,
    &openrpc::RESULT_BECAME_REQUIRED,
    &graphql::ROOT_TYPE_RENAMED,
    &graphql::SCALAR_SPECIFIED_BY_CHANGED,
    &schema::SCHEMA_COMPOSITION_CHANGED,
    &schema::SCHEMA_KEYWORD_CHANGED,
    &endpoint::SECURITY_REQUIREMENTS_CHANGED,
    &endpoint::SERVERS_CHANGED,
    &endpoint::SIDE_EFFECTS_ESCALATED,
    &endpoint::SIDE_EFFECTS_REDUCED,
    &endpoint::TITLE_CHANGED,
    &tool::TOOL_ADDED,
    &tool::TOOL_DESCRIPTION_CHANGED,
    &tool::TOOL_SCHEMA_TEXT_CHANGED,
    &tool::TOOL_TITLE_CHANGED,
    &super::UNCLASSIFIED_CHANGE,
];

/// Rules that judge only facts the projection before stored sources (registry migration 0003)
/// did not read: on a contract stored by such a release, a change under one of them (or a
/// kept key that was absent, `extension-changed` / `unclassified-change` with nothing before)
/// is the same document read more completely, not drift. Refinements of facts that were
/// already read (`anyOf` branches, `definition-renamed`) are not here.
pub const NEWLY_READ_BY_PROJECTION_2: &[&str] = &[
    "addressing-changed",
    "annotation-changed",
    "composable-added",
    "composable-removed",
    "directive-added",
    "directive-applied-changed",
    "directive-argument-added-optional",
    "directive-argument-changed",
    "directive-argument-relaxed",
    "directive-argument-removed",
    "directive-location-added",
    "directive-location-removed",
    "directive-removed",
    "facet-changed",
    "immutable-changed",
    "input-one-of-added",
    "input-one-of-removed",
    "navigation-became-non-null",
    "navigation-became-nullable",
    "param-structure-relaxed",
    "param-structure-tightened",
    "permissions-write-granted",
    "permissions-write-revoked",
    "request-encoding-changed",
    "request-facet-relaxed",
    "request-facet-tightened",
    "response-facet-relaxed",
    "response-facet-tightened",
    "response-header-became-optional",
    "response-header-became-required",
    "response-header-deprecated-changed",
    "response-header-style-changed",
    "response-links-changed",
    "result-became-optional",
    "result-became-required",
    "root-type-renamed",
    "scalar-specified-by-changed",
    "servers-changed",
];

/// Looks up a rule by id or alias; an id that was split into several rules (and is no rule
/// of its own any more) finds the first of them, so overrides naming it stay valid.
pub fn find(id: &str) -> Option<&'static Rule> {
    ALL.iter()
        .copied()
        .find(|r| r.is_named(id))
        .or_else(|| ALL.iter().copied().find(|r| r.split_from.contains(&id)))
}

/// Per-rule severity overrides (`[severity]` and `[watch.severity]` in config), keyed by the
/// id as written (an alias is accepted: see [`Rule::severity_under`]).
pub type SeverityOverrides = BTreeMap<String, Severity>;

/// Renders the rule list as the Markdown of `docs/rules.md`.
pub fn rules_markdown() -> String {
    let mut out = String::from(
        "# Drift rules\n\nGenerated from the rule registry (`src/core/diff/rules.rs`; each rule is \
         defined beside its check under `src/core/diff/`) by `schemawatch rules --markdown`; \
         a test fails when this file is stale. Override a severity with `[severity]` or \
         `[watch.severity]` in the config (`rule-id = \"breaking\"`).\n\n\
         | rule | default severity | side | what it means |\n|---|---|---|---|\n",
    );
    for r in ALL {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            r.id,
            r.severity.as_str(),
            r.side.as_str(),
            r.doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_split_rule_inherits_its_parents_override_unless_it_has_its_own() {
        static CHILD: Rule = Rule::new(
            "request-child-changed",
            Severity::Breaking,
            Side::Request,
            "test",
        )
        .split_from(&["request-parent-changed"]);
        let mut overrides = SeverityOverrides::new();
        assert_eq!(CHILD.severity_under(&overrides), Severity::Breaking);
        overrides.insert("request-parent-changed".into(), Severity::Info);
        assert_eq!(CHILD.severity_under(&overrides), Severity::Info);
        overrides.insert("request-child-changed".into(), Severity::Security);
        assert_eq!(CHILD.severity_under(&overrides), Severity::Security);
    }

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
        for pair in ALL.windows(2) {
            assert!(pair[0].id < pair[1].id, "{} !< {}", pair[0].id, pair[1].id);
        }
        for r in ALL {
            assert!(
                r.id.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{}",
                r.id
            );
            assert!(!r.doc.is_empty());
        }
    }

    #[test]
    fn names_are_unambiguous() {
        // Every id, stable id and alias names exactly one rule.
        let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
        for r in ALL {
            let mut names = vec![r.id];
            if r.stable_id != r.id {
                names.push(r.stable_id);
            }
            names.extend(r.aliases.iter().copied());
            for name in names {
                if let Some(other) = owner.insert(name, r.id) {
                    panic!("{name} names both {other} and {}", r.id);
                }
            }
        }
    }

    /// Every `pub static NAME: Rule` in the family files is in [`ALL`] exactly once.
    #[test]
    fn every_rule_is_registered_exactly_once() {
        let sources = [
            include_str!("mod.rs"),
            include_str!("endpoint.rs"),
            include_str!("parameter.rs"),
            include_str!("body.rs"),
            include_str!("response.rs"),
            include_str!("schema.rs"),
            include_str!("tool.rs"),
            include_str!("database.rs"),
            include_str!("text.rs"),
            include_str!("graphql.rs"),
            include_str!("odata.rs"),
            include_str!("openrpc.rs"),
        ];
        let defined: usize = sources
            .iter()
            .map(|s| s.matches(": Rule = Rule::new(").count())
            .sum();
        assert_eq!(defined, ALL.len(), "a rule static is missing from ALL");
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert!(!std::ptr::eq(*a, *b), "{} is listed twice", a.id);
            }
        }
    }

    #[test]
    fn newly_read_rules_exist() {
        for id in NEWLY_READ_BY_PROJECTION_2 {
            assert!(ALL.iter().any(|r| r.id == *id), "{id} is no rule");
        }
    }

    #[test]
    fn an_override_may_name_an_alias() {
        static RENAMED: Rule = Rule {
            aliases: &["old-name"],
            ..Rule::new("new-name", Severity::Breaking, Side::Endpoint, "doc")
        };
        let mut overrides = SeverityOverrides::new();
        assert_eq!(RENAMED.severity_under(&overrides), Severity::Breaking);
        overrides.insert("old-name".into(), Severity::Info);
        assert_eq!(RENAMED.severity_under(&overrides), Severity::Info);
        overrides.insert("new-name".into(), Severity::Compatible);
        assert_eq!(RENAMED.severity_under(&overrides), Severity::Compatible);
    }
}
