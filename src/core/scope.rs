//! Consumer scope: the endpoints a consumer uses (`[[watch]] uses`, `diff --uses`) and what
//! they reach. A change outside it keeps its rule and id but is demoted to `info` and marked
//! `out_of_scope` (the emitter decides, `core::diff::emit`); some changes are never out of
//! scope ([`never_out_of_scope`]). Pure: the two contracts are inputs.
//!
//! An entry names an endpoint by its name (OpenAPI operationId, or `METHOD /path/{}` for an
//! operation without one; GraphQL field name; MCP tool name, `prompt:NAME`,
//! `resource-template:TEMPLATE`, `resource:URI`; OData and OpenRPC names; database table,
//! view and function names as the catalog names them) or by its matching identity
//! (`METHOD path` with parameters as `{}`: `GET /pets/{}`, `QUERY Query.order`). In GraphQL an
//! entry may also name a type (`Order`): changes to that type are in scope.

use crate::core::model::{EndpointSpec, Kind, Severity, ToolSpec};
use serde_json::Value;
use std::collections::{BTreeSet, HashSet};

/// Where GraphQL keeps its named types (`core::normalize::graphql::TYPE_POINTER`).
const GRAPHQL_TYPES: &str = "#/types/";

/// The entries of a consumer's scope, as written (sorted, each once).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uses {
    pub entries: BTreeSet<String>,
}

impl Uses {
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(entries: I) -> Uses {
        Uses {
            entries: entries
                .into_iter()
                .map(Into::into)
                .map(|e: String| e.trim().to_string())
                .filter(|e| !e.is_empty())
                .collect(),
        }
    }

    /// The entries that name nothing in `old` (the accepted contract) nor in `new`: a typo
    /// must not silence the gate. An endpoint the provider removed still matches `old`.
    pub fn unknown(&self, old: &ToolSpec, new: &ToolSpec) -> Vec<String> {
        self.entries
            .iter()
            .filter(|entry| !names_anything(entry, old) && !names_anything(entry, new))
            .cloned()
            .collect()
    }
}

/// `uses entry "a" names nothing` / `uses entries "a", "b" name nothing`: the start of every
/// message about entries that name nothing (`diff`, a refresh, a start or reload).
pub fn entries_naming_nothing(unknown: &[String]) -> String {
    let one = unknown.len() == 1;
    format!(
        "uses entr{} {} name{} nothing",
        if one { "y" } else { "ies" },
        unknown
            .iter()
            .map(|u| format!("{u:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        if one { "s" } else { "" },
    )
}

/// Parses a uses file: one entry a line; blank lines and lines starting with `#` are skipped.
pub fn parse_uses_lines(text: &str) -> Uses {
    Uses::new(
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#')),
    )
}

/// Whether `entry` names `endpoint`: its name, operationId or matching identity.
pub fn names_endpoint(entry: &str, endpoint: &EndpointSpec) -> bool {
    names(
        entry,
        &endpoint.name,
        endpoint.operation_id.as_deref(),
        &endpoint.identity(),
    )
}

/// Whether `entry` names the endpoint of this name, operationId and identity (an endpoint
/// as the model has it, or as the registry stores its facts).
pub fn names(entry: &str, name: &str, operation_id: Option<&str>, identity: &str) -> bool {
    name == entry || operation_id == Some(entry) || identity == entry
}

fn names_type(entry: &str, spec: &ToolSpec) -> Option<String> {
    if spec.kind != Kind::Graphql {
        return None;
    }
    let pointer = format!("{GRAPHQL_TYPES}{entry}");
    spec.definitions.contains_key(&pointer).then_some(pointer)
}

fn names_anything(entry: &str, spec: &ToolSpec) -> bool {
    spec.endpoints.iter().any(|e| names_endpoint(entry, e)) || names_type(entry, spec).is_some()
}

/// A consumer's scope resolved against two contracts: the endpoints it uses (by name, either
/// side) and every definition they reach (by pointer, on either side).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    endpoints: HashSet<String>,
    old_definitions: HashSet<String>,
    new_definitions: HashSet<String>,
}

impl Scope {
    pub fn resolve(uses: &Uses, old: &ToolSpec, new: &ToolSpec) -> Scope {
        let mut scope = Scope::default();
        // An endpoint named on one side is used on both: by its name and by its identity (a
        // removed endpoint is named by the accepted side, a renamed one keeps its identity).
        let mut identities: HashSet<String> = HashSet::new();
        for spec in [old, new] {
            for endpoint in &spec.endpoints {
                if uses.entries.iter().any(|u| names_endpoint(u, endpoint)) {
                    scope.endpoints.insert(endpoint.name.to_string());
                    identities.insert(endpoint.identity());
                }
            }
        }
        for (spec, definitions) in [
            (old, &mut scope.old_definitions),
            (new, &mut scope.new_definitions),
        ] {
            let mut roots: Vec<&Value> = Vec::new();
            for endpoint in &spec.endpoints {
                let used = scope.endpoints.contains(endpoint.name.as_str())
                    || identities.contains(&endpoint.identity());
                if used {
                    scope.endpoints.insert(endpoint.name.to_string());
                    roots.extend(endpoint.schemas());
                }
            }
            let seeds = uses
                .entries
                .iter()
                .filter_map(|entry| names_type(entry, spec))
                .collect();
            *definitions = reach(spec, roots, seeds);
        }
        scope
    }

    /// Whether the endpoint named `name` (on either side) is used.
    pub fn uses_endpoint(&self, name: &str) -> bool {
        self.endpoints.contains(name)
    }

    /// Whether a definition (its pointers on the old and new side) is reached by a used
    /// endpoint (or named by an entry).
    pub fn reaches_definition(&self, old: &str, new: &str) -> bool {
        self.old_definitions.contains(old) || self.new_definitions.contains(new)
    }
}

/// Every definition of `spec` reached through `$ref`s from `roots`, plus `seeds` and what they
/// reach.
fn reach(spec: &ToolSpec, roots: Vec<&Value>, seeds: Vec<String>) -> HashSet<String> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut stack: Vec<&Value> = roots;
    for seed in seeds {
        if let Some(def) = spec.definitions.get(&seed) {
            stack.push(def);
        }
        seen.insert(seed);
    }
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    if seen.insert(target.clone()) {
                        if let Some(def) = spec.definitions.get(target) {
                            stack.push(def);
                        }
                    }
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    seen
}

/// Rules whose changes are never out of scope: the contract as a whole (where calls go, what
/// the server tells a model, what it can do), hidden text. A security scheme's definition is
/// part of every requirement naming it (`normalize::openapi`), so a scheme change shows as
/// `security-requirements-changed` at each used endpoint too, in scope there; at an unused
/// endpoint that change is out of scope like any other.
const ALWAYS_IN_SCOPE: &[&str] = &[
    "capabilities-changed",
    "capability-lost",
    "endpoint-unclassified",
    "execution-target-changed",
    "hidden-text-added",
    "instructions-changed",
    "unclassified-change",
];

/// MCP rules for text that reaches a model and for new tools, prompts and resources.
const MCP_ALWAYS_IN_SCOPE: &[&str] = &[
    "prompt-added",
    "prompt-text-changed",
    "resource-added",
    "resource-template-added",
    "resource-template-text-changed",
    "resource-text-changed",
    "tool-added",
    "tool-description-changed",
    "tool-schema-text-changed",
    "tool-title-changed",
];

/// Whether a change of `rule` at `severity` stays in scope whatever the consumer uses. (A
/// change judged outside every endpoint, the contract as a whole, is always in scope: the
/// emitter never demotes it.) An unexplained change is never assumed out of reach.
pub fn never_out_of_scope(kind: Option<Kind>, rule: &str, severity: Severity) -> bool {
    ALWAYS_IN_SCOPE.contains(&rule)
        || (kind == Some(Kind::Mcp)
            && (severity == Severity::Security || MCP_ALWAYS_IN_SCOPE.contains(&rule)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uses_file_skips_comments_and_blank_lines_and_sorts_its_entries() {
        let uses = parse_uses_lines("# ours\n\n  listPets \nGET /pets/{}\nlistPets\n");
        let entries: Vec<&str> = uses.entries.iter().map(String::as_str).collect();
        assert_eq!(entries, ["GET /pets/{}", "listPets"]);
    }

    #[test]
    fn contract_and_mcp_security_changes_are_never_out_of_scope() {
        use Severity::*;
        assert!(never_out_of_scope(None, "unclassified-change", Breaking));
        assert!(!never_out_of_scope(
            Some(Kind::Openapi),
            "extension-changed",
            Breaking
        ));
        assert!(never_out_of_scope(
            Some(Kind::Openapi),
            "execution-target-changed",
            Security
        ));
        assert!(!never_out_of_scope(
            Some(Kind::Openapi),
            "endpoint-added-write",
            Security
        ));
        assert!(never_out_of_scope(
            Some(Kind::Mcp),
            "endpoint-removed",
            Security
        ));
        assert!(never_out_of_scope(
            Some(Kind::Mcp),
            "tool-description-changed",
            Info
        ));
        assert!(!never_out_of_scope(
            Some(Kind::Mcp),
            "endpoint-removed",
            Breaking
        ));
    }
}
