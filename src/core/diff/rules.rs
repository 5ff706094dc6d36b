//! The rule registry. Every drift rule is a `pub static` [`Rule`] defined in the family file
//! beside the check that emits it and its test cases, and listed in that file's `RULES`; the
//! families are registered once, in [`FAMILIES`] (`contract.rs`, `shared.rs`, `endpoint.rs`,
//! `parameter.rs`, `body.rs`, `response.rs`, `schema.rs`, `tool.rs`, `text.rs`, `database.rs`,
//! `graphql.rs`, `odata.rs`, `openrpc.rs`, `stability.rs`). Emit sites take `&'static Rule`, so a misspelt rule
//! cannot compile. [`ALL`] lists every rule once, sorted by id: `schemawatch rules` and
//! `docs/rules.md` are generated from it (a test fails when the file is stale), and config
//! overrides are checked against it.
//!
//! Rule ids are frozen: a renamed rule keeps the id it was first published under as its
//! `stable_id` and lists its old ids in `aliases`, which `[severity]` overrides still accept.
//! A rule split out of another names its parent in `split_from`, so a user's override of the
//! parent keeps applying to it (its own override wins). CHANGELOG lists every rename and split.

pub use super::rule::{Rule, SeverityOverrides, Side};
use super::{
    body, contract, database, endpoint, graphql, odata, openrpc, parameter, response, schema,
    shared, stability, text, tool,
};
use std::collections::HashSet;
use std::sync::LazyLock;

/// One family of rules: a file of `src/core/diff/` with its rules and (in tests) their cases.
pub struct Family {
    /// The file's stem (`endpoint` for `src/core/diff/endpoint.rs`).
    pub name: &'static str,
    /// Every `pub static …: Rule` of the file (its `RULES`).
    pub rules: &'static [&'static Rule],
    /// The file's rule cases (`cases::cases()`).
    #[cfg(test)]
    pub(super) cases: fn() -> Vec<super::tests::Case>,
}

macro_rules! families {
    ($($family:ident),* $(,)?) => {
        /// Every family of rules, once: [`ALL`], the rule cases, `docs/rules.md` and the
        /// registration test all read this list (a family file missing from it fails
        /// `every_rule_is_registered_exactly_once`).
        pub static FAMILIES: &[Family] = &[$(Family {
            name: stringify!($family),
            rules: $family::RULES,
            #[cfg(test)]
            cases: $family::cases::cases,
        }),*];
    };
}

families![
    contract, shared, endpoint, parameter, body, response, schema, tool, text, database, graphql,
    odata, openrpc, stability,
];

/// Every rule, sorted by id (the rules of [`FAMILIES`]).
pub static ALL: LazyLock<Vec<&'static Rule>> = LazyLock::new(|| {
    let mut all: Vec<&'static Rule> = FAMILIES
        .iter()
        .flat_map(|f| f.rules.iter().copied())
        .collect();
    all.sort_by_key(|r| r.id);
    all
});

/// The keywords the schema walker leaves to a rule's own comparison (see
/// `schema::modelled_keywords`), over every registered rule.
pub fn modelled_keywords() -> HashSet<&'static str> {
    schema::modelled_keywords(ALL.iter().copied())
}

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

/// Renders the rule list as the Markdown of `docs/rules.md`.
pub fn rules_markdown() -> String {
    let mut out = String::from(
        "# Drift rules\n\nGenerated from the rule registry (`src/core/diff/rules.rs`; each rule is \
         defined beside its check under `src/core/diff/`) by `schemawatch rules --markdown`; \
         a test fails when this file is stale. Override a severity with `[severity]` or \
         `[watch.severity]` in the config (`rule-id = \"breaking\"`).\n\n\
         | rule | default severity | side | what it means |\n|---|---|---|---|\n",
    );
    for r in ALL.iter() {
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
    use super::*;
    use std::collections::BTreeMap;

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
        for r in ALL.iter() {
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
        for r in ALL.iter() {
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

    /// Every `pub static NAME: Rule` of every file of `src/core/diff/` is in its family's
    /// `RULES` exactly once, and every such file is a registered family: a rule or a whole
    /// family file left out of [`FAMILIES`] fails here (and then misses [`ALL`], the cases,
    /// `docs/rules.md` and overrides).
    #[test]
    fn every_rule_is_registered_exactly_once() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/core/diff");
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        files.sort();
        let mut seen = 0;
        for path in &files {
            let stem = path.file_stem().unwrap().to_str().unwrap();
            let text = std::fs::read_to_string(path).unwrap();
            let defined = text
                .lines()
                .filter(|l| l.starts_with("pub static ") && l.contains(": Rule = "))
                .count();
            let family = FAMILIES.iter().find(|f| f.name == stem);
            match family {
                Some(f) => {
                    assert_eq!(
                        f.rules.len(),
                        defined,
                        "src/core/diff/{stem}.rs defines {defined} rules, its RULES lists {}",
                        f.rules.len()
                    );
                    seen += 1;
                }
                None => assert_eq!(
                    defined, 0,
                    "src/core/diff/{stem}.rs defines rules but is no family of rules::FAMILIES"
                ),
            }
        }
        assert_eq!(seen, FAMILIES.len(), "a family of FAMILIES has no file");
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
}
