//! The emitter: every change goes through [`Emitter::emit`] with a registered `&'static Rule`,
//! which gives it the rule's severity (or its configured override). What a kind changes about
//! the rules comes in as data: the kind being judged, and a [`RuleSwap`] by which it judges
//! some changes with stricter rules of its own (MCP: model-facing text).

use super::rule::{Rule, SeverityOverrides};
use crate::core::change_kind::ChangeKind;
use crate::core::model::{Change, EndpointSubKind, Kind, Severity, ValueOrd};
use crate::core::scope::{never_out_of_scope, Scope};
use crate::core::sunset::{Date, EndpointFacts, SunsetPolicy};
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
    /// The consumer's scope, when there is one: a change outside it is demoted to `info`.
    scope: Option<&'o Scope>,
    /// Whether the endpoint being judged is used (`None` outside endpoints: in scope).
    endpoint_used: Option<bool>,
    /// For each definition being compared (outermost first): whether a used endpoint reaches it.
    definitions: Vec<bool>,
    /// How many named definitions deep the comparison is (a definition is compared once, for
    /// whichever endpoint reaches it first: the stability policy never demotes inside one).
    definition_depth: usize,
    /// The stability and sunset policy, when it can change a verdict, and the check date.
    policy: Option<(&'o SunsetPolicy, Option<Date>)>,
    /// The accepted (old) facts of the endpoint being judged (`None` outside endpoints and
    /// for a new endpoint).
    accepted: Option<EndpointFacts>,
}

impl<'o> Emitter<'o> {
    pub fn new(overrides: &'o SeverityOverrides) -> Self {
        Emitter {
            overrides,
            changes: Vec::new(),
            kind: None,
            swap: None,
            endpoint: None,
            scope: None,
            endpoint_used: None,
            definitions: Vec::new(),
            definition_depth: 0,
            policy: None,
            accepted: None,
        }
    }

    /// Judges with a stability and sunset policy on the check date `date`.
    pub fn with_policy(mut self, policy: &'o SunsetPolicy, date: Option<Date>) -> Self {
        self.policy = policy.judges().then_some((policy, date));
        self
    }

    /// The accepted facts of the endpoint being judged, when the policy needs them.
    pub fn set_accepted(&mut self, facts: Option<EndpointFacts>) {
        if self.policy.is_some() {
            self.accepted = facts;
        }
    }

    /// Why the policy changes a change of `rule` at `severity` here, and to what (a security
    /// change is never lowered).
    fn policy_verdict(&self, rule: &Rule, severity: Severity) -> Option<(Severity, String)> {
        let (policy, date) = self.policy?;
        let accepted = self.accepted.as_ref()?;
        if severity == Severity::Security {
            return None;
        }
        if policy.allow_removal_after_sunset && rule.id == "endpoint-removed" {
            if let (Some(sunset), Some(date)) =
                (accepted.sunset.as_ref().and_then(|s| s.known()), date)
            {
                if sunset <= date && severity > Severity::Compatible {
                    return Some((
                        Severity::Compatible,
                        format!("allow_removal_after_sunset: the accepted sunset {sunset} is on or before the check date {date}"),
                    ));
                }
            }
        }
        match policy.min_stability {
            Some(min)
                if accepted.level() < min
                    && self.definition_depth == 0
                    && severity > Severity::Info =>
            {
                Some((
                    Severity::Info,
                    format!(
                        "min_stability: the accepted stability {} is below {}",
                        accepted.level().as_str(),
                        min.as_str()
                    ),
                ))
            }
            _ => None,
        }
    }

    /// Judges against a consumer's scope (`None`: every change is in scope).
    pub fn with_scope(mut self, scope: Option<&'o Scope>) -> Self {
        self.scope = scope;
        self
    }

    /// Whether the endpoint being judged is used (`None` outside endpoints).
    pub fn set_endpoint_used(&mut self, used: Option<bool>) {
        self.endpoint_used = used;
    }

    /// Whether the scope uses any of the endpoints named (`None` without a scope).
    pub fn uses_any(&self, names: &[&str]) -> Option<bool> {
        self.scope
            .map(|scope| names.iter().any(|n| scope.uses_endpoint(n)))
    }

    /// Enters a definition being compared (its old and new pointers).
    pub fn enter_definition(&mut self, old: &str, new: &str) {
        self.definition_depth += 1;
        if let Some(scope) = self.scope {
            self.definitions.push(scope.reaches_definition(old, new));
        }
    }

    /// Leaves the definition entered last.
    pub fn leave_definition(&mut self) {
        self.definition_depth = self.definition_depth.saturating_sub(1);
        self.definitions.pop();
    }

    /// Whether a change of `rule` at `severity` here is outside the consumer's scope.
    fn out_of_scope(&self, rule: &Rule, severity: Severity) -> bool {
        self.scope.is_some()
            && self.endpoint_used == Some(false)
            && !self.definitions.iter().any(|reached| *reached)
            && !never_out_of_scope(self.kind, rule.id, severity)
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
        let severity = rule.severity_under(self.overrides);
        let out_of_scope = self.out_of_scope(rule, severity);
        let verdict = if out_of_scope {
            None
        } else {
            self.policy_verdict(rule, severity)
        };
        let (severity, policy) = match verdict {
            Some((severity, why)) => (severity, Some(why)),
            None => (severity, None),
        };
        self.changes.push(Change {
            path: path.to_string(),
            kind,
            rule: rule.id.to_string(),
            severity: if out_of_scope {
                Severity::Info
            } else {
                severity
            },
            before: before.map(ValueOrd),
            after: after.map(ValueOrd),
            message,
            out_of_scope,
            policy,
        });
    }
}
