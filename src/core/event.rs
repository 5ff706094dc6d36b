//! Events: what the registry records about each change it makes, and which sinks want it.
//! Pure data and matching; writing them (registry) and delivering them (`notify`) are edges.

use crate::core::model::{Compatibility, DriftReport, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The coarse, value-free class of a failed refresh: the `class` label of
/// `refresh_errors_total`, an event's `error_class` (never the failure's message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    Timeout,
    Connect,
    Tls,
    HttpStatus,
    TooLarge,
    Fetch,
    Mcp,
    Database,
    Parse,
    Registry,
    Conflict,
    /// The daemon abandoned the refresh at its deadline.
    Deadline,
}

impl ErrorClass {
    /// Every class, in the order the README lists them.
    pub const ALL: [ErrorClass; 12] = [
        ErrorClass::Timeout,
        ErrorClass::Connect,
        ErrorClass::Tls,
        ErrorClass::HttpStatus,
        ErrorClass::TooLarge,
        ErrorClass::Fetch,
        ErrorClass::Mcp,
        ErrorClass::Database,
        ErrorClass::Parse,
        ErrorClass::Registry,
        ErrorClass::Conflict,
        ErrorClass::Deadline,
    ];

    /// The label value (frozen: metrics, events, the summary).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::Connect => "connect",
            ErrorClass::Tls => "tls",
            ErrorClass::HttpStatus => "http_status",
            ErrorClass::TooLarge => "too_large",
            ErrorClass::Fetch => "fetch",
            ErrorClass::Mcp => "mcp",
            ErrorClass::Database => "database",
            ErrorClass::Parse => "parse",
            ErrorClass::Registry => "registry",
            ErrorClass::Conflict => "conflict",
            ErrorClass::Deadline => "deadline",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `schema_version` of every event's `data` object.
pub const EVENT_SCHEMA_VERSION: &str = "schemawatch.event.v1";

/// At most this many changes are kept with one event (ids, rules, paths); `changes_total`
/// says how many there were. Rule ids are kept whole (filters match on them).
pub const MAX_EVENT_CHANGES: usize = 200;

macro_rules! event_kinds {
    ($($variant:ident => $name:literal, $doc:literal;)+) => {
        /// What happened. The names are the log events users already see.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum EventKind {
            $(#[doc = $doc] $variant,)+
        }

        impl EventKind {
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)+
                }
            }

            /// One sentence for documentation and chat messages.
            pub fn doc(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $doc,)+
                }
            }
        }
    };
}

event_kinds! {
    Registered => "registered", "A watch's first contract was stored as its trusted baseline.";
    Applied => "applied", "A compatible change was applied by compare-and-swap.";
    ReportOnly => "report_only", "A compatible change was seen and not applied (`apply_compatible = false`).";
    PendingReview => "pending_review", "A breaking or security-relevant candidate was queued for review.";
    ReviewAccepted => "review_accepted", "A reviewer accepted a review: its candidate is the accepted contract.";
    ReviewRejected => "review_rejected", "A reviewer rejected a review: its candidate is never queued again.";
    ReviewSuperseded => "review_superseded", "An open review no longer describes the source (a newer candidate, or the source went back).";
    WatchStale => "watch_stale", "A watch's source identity changed under its registry entry; nothing is fetched until `watch reset`.";
    WatchForgotten => "watch_forgotten", "A watch's contract, history and state were dropped (`watch forget`).";
    WatchReset => "watch_reset", "A watch's stale or error state was cleared (`watch reset`).";
    RefreshFailed => "refresh_failed", "A watch failed `error_after` refreshes in a row (once per failure streak).";
    WatchRecovered => "watch_recovered", "A watch that raised `refresh_failed` refreshed successfully again.";
    ProjectionUpgrade => "projection_upgrade", "A contract was baselined without review: the same document read more completely by a newer release.";
    RegistryReplaced => "registry_replaced", "The registry file was replaced or deleted under the daemon (delivered from memory, best effort, not durable).";
    SunsetApproaching => "sunset_approaching", "An endpoint in use of an accepted contract reaches its sunset date within `sunset_warning` (once per endpoint and date).";
}

impl EventKind {
    pub fn parse(text: &str) -> Option<EventKind> {
        EventKind::ALL.iter().copied().find(|k| k.as_str() == text)
    }
}

/// One change as an event carries it: exact strings, never schema text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRef {
    pub id: String,
    pub rule: String,
    pub severity: Severity,
    pub path: String,
}

/// What an event says, content-free. Stored as JSON with the event row; rendered for each
/// sink at delivery time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventData {
    pub watch: Option<String>,
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<Compatibility>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_version: Option<i64>,
    /// Changes by severity (`info`, `compatible`, `breaking`, `security`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub counts: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_count: Option<u64>,
    /// Distinct rule ids of the changes (all of them, sorted): what `rules` filters match.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub rules: Vec<String>,
    /// The first [`MAX_EVENT_CHANGES`] changes (sent only to sinks with `include_changes`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub changes: Vec<ChangeRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consecutive_failures: Option<i64>,
    /// The metric class of a failure (`fetch`, `timeout`, `parse`, ...), never its message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
    /// Who decided a review (`review_accepted`, `review_rejected`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    /// For `review_superseded`: the review that replaced it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<i64>,
    /// For `sunset_approaching`: the endpoint (its name in the contract).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub endpoint: Option<String>,
    /// For `sunset_approaching`: the sunset date (`YYYY-MM-DD`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sunset: Option<String>,
}

impl EventData {
    pub fn for_watch(watch: &str, kind: &str) -> EventData {
        EventData {
            watch: Some(watch.to_string()),
            kind: Some(kind.to_string()),
            ..EventData::default()
        }
    }

    /// Adds what a drift report says: its verdict, counts, rule ids and change references.
    pub fn with_report(mut self, report: &DriftReport) -> EventData {
        self.compatibility = Some(report.compatibility);
        self.change_count = Some(report.changes.len() as u64);
        let mut rules = std::collections::BTreeSet::new();
        for c in &report.changes {
            *self
                .counts
                .entry(c.severity.as_str().to_string())
                .or_default() += 1;
            rules.insert(c.rule.clone());
        }
        self.rules = rules.into_iter().collect();
        self.changes = report
            .changes
            .iter()
            .take(MAX_EVENT_CHANGES)
            .map(|c| ChangeRef {
                id: crate::core::report::change_id(c),
                rule: c.rule.clone(),
                severity: c.severity,
                path: c.path.clone(),
            })
            .collect();
        self
    }
}

/// Which events one sink receives.
#[derive(Debug, Clone, Default)]
pub struct SinkFilter {
    /// Event kinds; empty means the sink kind's default set.
    pub events: Vec<EventKind>,
    /// Events carrying a compatibility below this are left out (events without one pass).
    pub min_compatibility: Option<Compatibility>,
    /// Glob patterns of watch names; empty means every watch.
    pub watches: Vec<glob::Pattern>,
    /// Rule ids; when set, an event passes only when one of its changes has one of them.
    pub rules: Vec<String>,
}

impl SinkFilter {
    pub fn matches(&self, kind: EventKind, data: &EventData) -> bool {
        if !self.events.contains(&kind) {
            return false;
        }
        if let (Some(min), Some(c)) = (self.min_compatibility, data.compatibility) {
            if c < min {
                return false;
            }
        }
        if !self.watches.is_empty() {
            let Some(watch) = &data.watch else {
                return false;
            };
            if !self.watches.iter().any(|p| p.matches(watch)) {
                return false;
            }
        }
        if !self.rules.is_empty() && !data.rules.iter().any(|r| self.rules.contains(r)) {
            return false;
        }
        true
    }
}

/// The sinks configured when an event is written: the registry creates one delivery per
/// event × sink whose filter matches.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    pub sinks: Vec<(String, SinkFilter)>,
    /// `[notifications] error_after`: the failure in a row that raises `refresh_failed`.
    pub error_after: i64,
    /// `[notifications] keep_events`: events kept (pending deliveries keep theirs).
    pub keep_events: u64,
    /// `[notifications] keep_deliveries`: delivered and failed rows kept.
    pub keep_deliveries: u64,
    /// Events, delivered and failed rows older than this many seconds are pruned.
    pub retention_secs: u64,
}

pub const DEFAULT_ERROR_AFTER: i64 = 3;
pub const DEFAULT_KEEP_EVENTS: u64 = 10_000;
pub const DEFAULT_KEEP_DELIVERIES: u64 = 10_000;
pub const DEFAULT_RETENTION_SECS: u64 = 30 * 24 * 3600;

impl Routes {
    pub fn none() -> Routes {
        Routes {
            sinks: Vec::new(),
            error_after: DEFAULT_ERROR_AFTER,
            keep_events: DEFAULT_KEEP_EVENTS,
            keep_deliveries: DEFAULT_KEEP_DELIVERIES,
            retention_secs: DEFAULT_RETENTION_SECS,
        }
    }

    /// The sinks that want this event, in configuration order.
    pub fn sinks_for<'a>(
        &'a self,
        kind: EventKind,
        data: &'a EventData,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.sinks
            .iter()
            .filter(move |(_, f)| f.matches(kind, data))
            .map(|(name, _)| name.as_str())
    }
}

/// Changes by severity as the chat sinks name them, most severe first.
pub fn severity_order() -> [Severity; 4] {
    [
        Severity::Security,
        Severity::Breaking,
        Severity::Compatible,
        Severity::Info,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_classes_serialize_as_their_documented_label() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"));
        let documented = readme
            .split("`refresh_errors_total{kind,class}` (")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .unwrap();
        let listed: Vec<&str> = documented
            .split(',')
            .map(|c| c.trim().trim_matches('`'))
            .collect();
        let ours: Vec<&str> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(ours, listed, "README's classes, in order");
        for class in ErrorClass::ALL {
            let text = serde_json::to_value(class).unwrap();
            assert_eq!(text, serde_json::json!(class.as_str()));
            assert_eq!(serde_json::from_value::<ErrorClass>(text).unwrap(), class);
        }
        assert!(serde_json::from_str::<ErrorClass>("\"oops\"").is_err());
    }

    fn data(watch: &str, compatibility: Option<Compatibility>, rules: &[&str]) -> EventData {
        EventData {
            watch: Some(watch.into()),
            compatibility,
            rules: rules.iter().map(|r| r.to_string()).collect(),
            ..EventData::default()
        }
    }

    #[test]
    fn filters_combine_kind_compatibility_watch_globs_and_rules() {
        let f = SinkFilter {
            events: vec![
                EventKind::Applied,
                EventKind::PendingReview,
                EventKind::WatchStale,
            ],
            min_compatibility: Some(Compatibility::Breaking),
            watches: vec![glob::Pattern::new("payments.*").unwrap()],
            rules: vec![],
        };
        let breaking = Some(Compatibility::Breaking);
        assert!(f.matches(
            EventKind::PendingReview,
            &data("payments.api", breaking, &[])
        ));
        // Below the minimum compatibility.
        assert!(!f.matches(
            EventKind::Applied,
            &data("payments.api", Some(Compatibility::Compatible), &[])
        ));
        // No compatibility: passes that filter.
        assert!(f.matches(EventKind::WatchStale, &data("payments.api", None, &[])));
        // Another watch, another kind.
        assert!(!f.matches(EventKind::PendingReview, &data("search.api", breaking, &[])));
        assert!(!f.matches(EventKind::Registered, &data("payments.api", None, &[])));
        let by_rule = SinkFilter {
            events: vec![EventKind::PendingReview],
            rules: vec!["endpoint-removed".into()],
            ..SinkFilter::default()
        };
        assert!(by_rule.matches(
            EventKind::PendingReview,
            &data("a.b", breaking, &["endpoint-removed", "x"])
        ));
        assert!(!by_rule.matches(EventKind::PendingReview, &data("a.b", breaking, &["x"])));
    }

    #[test]
    fn event_names_are_unique_and_parse_back() {
        let mut seen = std::collections::BTreeSet::new();
        for k in EventKind::ALL {
            assert!(seen.insert(k.as_str()), "{}", k.as_str());
            assert_eq!(EventKind::parse(k.as_str()), Some(*k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }
}
