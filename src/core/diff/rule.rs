//! The rule type: what a drift rule is ([`Rule`]), what part of the contract it judges
//! ([`Side`]) and how a configured override changes its severity. Every family file defines
//! its rules with it; the registry of them all is [`super::rules`].

use crate::core::model::Severity;
use std::collections::BTreeMap;

/// Which way what a rule judges travels: what a caller sends, or what it receives (the
/// direction axis of a rule; the schema walker compares in one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    Request,
    Response,
}

impl Direction {
    /// `request` when a caller sends what is compared, `response` when it receives it.
    pub fn pick<T>(self, request: T, response: T) -> T {
        match self {
            Direction::Request => request,
            Direction::Response => response,
        }
    }
}

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

    /// The direction this rule judges, if it judges one (its side is the request or the
    /// response): the axis the symmetry test pairs rules on.
    pub fn direction(&self) -> Option<Direction> {
        match self.side {
            Side::Request => Some(Direction::Request),
            Side::Response => Some(Direction::Response),
            Side::Contract | Side::Endpoint | Side::Schema | Side::Table => None,
        }
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

/// Per-rule severity overrides (`[severity]` and `[watch.severity]` in config), keyed by the
/// id as written (an alias is accepted: see [`Rule::severity_under`]).
pub type SeverityOverrides = BTreeMap<String, Severity>;

#[cfg(test)]
mod tests {
    use super::*;

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
