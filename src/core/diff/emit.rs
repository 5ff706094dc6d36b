//! The emitter: every change goes through [`Emitter::emit`] with a registered `&'static Rule`,
//! which gives it the rule's severity (or its configured override). What a kind changes about
//! the rules comes in as data: the kind being judged, and a [`RuleSwap`] by which it judges
//! some changes with stricter rules of its own (MCP: model-facing text).

use super::rule::{Rule, SeverityOverrides};
use crate::core::change_kind::ChangeKind;
use crate::core::model::{Change, EndpointSubKind, Kind, ValueOrd};
use serde_json::Value;

/// The rule a kind uses in place of a general one, given the sub-kind of the endpoint being
/// judged (if any).
pub type RuleSwap = fn(Option<EndpointSubKind>, &'static Rule) -> &'static Rule;

/// Collects changes, applying the rule's severity (or its override).
pub struct Emitter<'o> {
    overrides: &'o SeverityOverrides,
    pub changes: Vec<Change>,
    /// The kind whose rules apply.
    kind: Option<Kind>,
    /// How that kind swaps in rules of its own, if it does.
    swap: Option<RuleSwap>,
    /// The sub-kind of the endpoint being judged (MCP prompts and resources have their rules).
    endpoint: Option<EndpointSubKind>,
}

impl<'o> Emitter<'o> {
    pub fn new(overrides: &'o SeverityOverrides) -> Self {
        Emitter {
            overrides,
            changes: Vec::new(),
            kind: None,
            swap: None,
            endpoint: None,
        }
    }

    /// Judges changes of `kind`, with `swap` choosing its rules where they differ from the
    /// general ones.
    pub fn for_kind(mut self, kind: Kind, swap: Option<RuleSwap>) -> Self {
        self.kind = Some(kind);
        self.swap = swap;
        self
    }

    /// The kind being judged, if the emitter was made for one.
    pub fn kind(&self) -> Option<Kind> {
        self.kind
    }

    /// Sets the sub-kind of the endpoint being judged (`None` outside endpoints).
    pub fn set_endpoint(&mut self, endpoint: Option<EndpointSubKind>) {
        self.endpoint = endpoint;
    }

    pub fn emit(
        &mut self,
        rule: &'static Rule,
        path: &str,
        kind: ChangeKind,
        before: Option<Value>,
        after: Option<Value>,
        message: String,
    ) {
        let rule = match self.swap {
            Some(swap) => swap(self.endpoint, rule),
            None => rule,
        };
        self.changes.push(Change {
            path: path.to_string(),
            kind,
            rule: rule.id.to_string(),
            severity: rule.severity_under(self.overrides),
            before: before.map(ValueOrd),
            after: after.map(ValueOrd),
            message,
        });
    }
}
