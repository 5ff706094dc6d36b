//! The gate decision of `diff --fail-on`: which changes are at or above the threshold, which of
//! them an unexpired accept entry takes out of the decision, which entries are expired or
//! stale, and whether the gate fails. Pure: the check date is an input.

use super::accept::{AcceptEntry, Date};
use crate::core::locate::Location;
use crate::core::model::{Change, Compatibility, DriftReport, Severity};
use crate::core::report::{change_ids, change_json_with_id, report_json};
use serde_json::{json, Value};
use std::collections::HashMap;

/// Where a change stands against the accept file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing<'a> {
    /// No entry names it.
    Open,
    /// An unexpired entry names it: it is reported but does not fail the gate.
    Accepted(&'a AcceptEntry),
    /// An entry names it but expired before the check date: it counts again.
    Expired(&'a AcceptEntry),
}

/// One change as the gate sees it.
#[derive(Debug, Clone)]
pub struct GateChange<'a> {
    pub change: &'a Change,
    /// The change id (`chg2:`).
    pub id: String,
    /// The deprecated 64-bit id (`chg1:`), still matched in accept files.
    pub id_v1: String,
    pub standing: Standing<'a>,
    /// At or above `--fail-on` (or, without it, breaking or worse: the level renderers use).
    pub at_or_above: bool,
    /// Where the change is in the new document ([`Gate::locate`]); `None`: the whole file.
    pub location: Option<Location>,
}

/// The whole decision.
#[derive(Debug, Clone)]
pub struct Gate<'a> {
    pub fail_on: Option<Compatibility>,
    pub date: Date,
    pub changes: Vec<GateChange<'a>>,
    /// Entries for this document that accept no change (those whose id names a change but
    /// whose `rule` / `path` pins do not hold are in `mismatched` too).
    pub stale: Vec<&'a AcceptEntry>,
    /// Entries whose id names a change whose rule or path differs from the entry's pins, with
    /// that change's index in `changes`: they do not accept it.
    pub mismatched: Vec<(&'a AcceptEntry, usize)>,
    /// Entries with a deprecated `chg1:` id, with the `chg2:` id of the change they name, if any.
    pub deprecated: Vec<(&'a AcceptEntry, Option<String>)>,
    pub failed: bool,
    /// Whether an accept file was given (the JSON then always carries the gate).
    pub with_accept_file: bool,
}

/// The report level a change's severity reaches.
pub fn level_of(severity: Severity) -> Compatibility {
    match severity {
        Severity::Info => Compatibility::Identical,
        Severity::Compatible => Compatibility::Compatible,
        Severity::Breaking => Compatibility::Breaking,
        Severity::Security => Compatibility::SecurityReview,
    }
}

/// Decides the gate for `report` of the document named `document` on `date`.
pub fn evaluate<'a>(
    report: &'a DriftReport,
    entries: Option<&'a [AcceptEntry]>,
    document: &str,
    date: Date,
    fail_on: Option<Compatibility>,
) -> Gate<'a> {
    let threshold = fail_on.unwrap_or(Compatibility::Breaking);
    let applicable: Vec<&AcceptEntry> = entries
        .unwrap_or(&[])
        .iter()
        .filter(|e| e.applies_to(document))
        .collect();
    // Entries by change id, the first in file order winning: one lookup per change, so the
    // gate is linear in entries and changes (H34: 300,000 entries took > 11 min).
    let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(applicable.len());
    for (i, entry) in applicable.iter().enumerate() {
        by_id.entry(entry.change.as_str()).or_insert(i);
    }
    // Per applicable entry: whether it accepted or expired a change, and the `chg2:` id of the
    // change its id names (for the `chg1:` deprecation warning).
    let mut used = vec![false; applicable.len()];
    let mut named: Vec<Option<String>> = vec![None; applicable.len()];
    let mut mismatched = Vec::new();
    let changes: Vec<GateChange> = report
        .changes
        .iter()
        .enumerate()
        .map(|(index, change)| {
            let (id, id_v1) = change_ids(change);
            let mut standing = Standing::Open;
            for candidate in [&id, &id_v1] {
                let Some(&i) = by_id.get(candidate.as_str()) else {
                    continue;
                };
                let entry = applicable[i];
                if named[i].is_none() {
                    named[i] = Some(id.clone());
                }
                if !entry.pins_hold(change) {
                    mismatched.push((entry, index));
                    continue;
                }
                used[i] = true;
                standing = if entry.valid_on(date) {
                    Standing::Accepted(entry)
                } else {
                    Standing::Expired(entry)
                };
                break;
            }
            GateChange {
                change,
                id,
                id_v1,
                standing,
                at_or_above: level_of(change.severity) >= threshold,
                location: None,
            }
        })
        .collect();
    let stale = applicable
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(e, _)| *e)
        .collect();
    let deprecated = applicable
        .iter()
        .zip(named)
        .filter(|(e, _)| super::accept::is_deprecated_id(&e.change))
        .map(|(e, named)| (*e, named))
        .collect();
    let failed = match fail_on {
        None => false,
        Some(level) => {
            let counted = changes
                .iter()
                .filter(|c| c.at_or_above && !matches!(c.standing, Standing::Accepted(_)))
                .count();
            let any_at_or_above = changes.iter().any(|c| c.at_or_above);
            // A verdict no single change explains still fails: unknown is never accepted.
            counted > 0 || (!any_at_or_above && report.compatibility >= level)
        }
    };
    Gate {
        fail_on,
        date,
        changes,
        stale,
        mismatched,
        deprecated,
        failed,
        with_accept_file: entries.is_some(),
    }
}

impl Gate<'_> {
    /// Gives each change its location in the new document (one per change, in order).
    pub fn locate(&mut self, locations: Vec<Option<Location>>) {
        for (change, location) in self.changes.iter_mut().zip(locations) {
            change.location = location;
        }
    }

    pub fn accepted(&self) -> usize {
        self.count(|s| matches!(s, Standing::Accepted(_)))
    }

    pub fn expired(&self) -> usize {
        self.count(|s| matches!(s, Standing::Expired(_)))
    }

    /// Changes at or above the threshold that no unexpired entry accepts.
    pub fn unaccepted(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| c.at_or_above && !matches!(c.standing, Standing::Accepted(_)))
            .count()
    }

    fn count(&self, pred: impl Fn(&Standing) -> bool) -> usize {
        self.changes.iter().filter(|c| pred(&c.standing)).count()
    }

    /// Changes demoted as outside the consumer's scope (`uses`).
    pub fn out_of_scope(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| c.change.out_of_scope)
            .count()
    }

    /// The `"gate"` object of `diff --json`.
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "fail_on": self.fail_on.map(Compatibility::as_str),
            "failed": self.failed,
            "accepted": self.accepted(),
            "expired": self.expired(),
            "stale": self.stale.len(),
            "unaccepted": self.unaccepted(),
        });
        // Present when a consumer scope demoted changes (a gate without one keeps its bytes).
        let out_of_scope = self.out_of_scope();
        if out_of_scope > 0 {
            value["out_of_scope"] = json!(out_of_scope);
        }
        value
    }

    /// A ready-to-paste accept entry for a change (placeholders for who and why; 30 days).
    /// It pins the change's rule and path, so only that change is accepted whatever its id.
    pub fn accept_entry(&self, change: &GateChange, document: &str) -> String {
        let until = self.date.plus_days(30);
        let file = std::path::Path::new(document.rsplit_once(':').map_or(document, |(_, p)| p))
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let mut entry = format!(
            "[[accept]]\nchange = \"{}\"\nrule = {}\npath = {}\nreviewer = \"YOUR NAME\"\nreason = \"WHY THIS CHANGE IS SAFE\"\nexpires = \"{until}\"\n",
            change.id,
            toml_string(&change.change.rule),
            toml_string(&change.change.path),
        );
        if let Some(file) = file.filter(|f| !f.is_empty() && f != "-") {
            entry.push_str(&format!("file = {}\n", toml_string(&file)));
        }
        entry
    }
}

fn toml_string(text: &str) -> String {
    // A TOML basic string has JSON's escapes for what we emit.
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

fn entry_json(entry: &AcceptEntry) -> Value {
    json!({
        "reviewer": entry.reviewer,
        "reason": entry.reason,
        "expires": entry.expires.to_string(),
    })
}

/// `diff --json`: the report (every change with its `id`), and when a gate was asked for, each
/// change's standing, ready-to-paste entries for the unaccepted ones at or above `--fail-on`,
/// and the `"gate"` object. `hints` is added when there are any.
pub fn report_with_gate(
    report: &DriftReport,
    gate: &Gate,
    document: &str,
    hints: &[String],
) -> Value {
    let mut out = report_json(report);
    let gated = gate.fail_on.is_some() || gate.with_accept_file;
    if gated {
        let changes: Vec<Value> = gate
            .changes
            .iter()
            .map(|c| {
                let mut value = change_json_with_id(c.change, &c.id);
                match c.standing {
                    Standing::Accepted(entry) => value["accepted"] = entry_json(entry),
                    Standing::Expired(entry) => value["accept_expired"] = entry_json(entry),
                    Standing::Open => {}
                }
                if gate.fail_on.is_some()
                    && c.at_or_above
                    && !matches!(c.standing, Standing::Accepted(_))
                {
                    value["accept_entry"] = json!(gate.accept_entry(c, document));
                }
                value
            })
            .collect();
        out["changes"] = json!(changes);
        out["gate"] = gate.to_json();
    }
    // Where each change is in the new document, when it was located.
    if let Some(Value::Array(changes)) = out.get_mut("changes") {
        for (value, c) in changes.iter_mut().zip(&gate.changes) {
            if let Some(l) = &c.location {
                value["location"] = json!({
                    "pointer": l.pointer,
                    "line": l.position.line,
                    "column": l.position.column,
                });
            }
        }
    }
    if !hints.is_empty() {
        out["hints"] = json!(hints);
    }
    out
}

/// The major part of a declared version (`v2.1.0` → 2), when it has one.
fn major(version: &str) -> Option<u64> {
    let digits: String = version
        .trim()
        .trim_start_matches(['v', 'V'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Hints outside the changes: a breaking report whose provider did not raise the major part of
/// its declared version (OpenAPI / OpenRPC `info.version`). Never affects the verdict.
pub fn hints(
    old_version: Option<&str>,
    new_version: Option<&str>,
    report: &DriftReport,
) -> Vec<String> {
    let mut out = Vec::new();
    if report.compatibility < Compatibility::Breaking {
        return out;
    }
    if let (Some(old), Some(new)) = (old_version, new_version) {
        if let (Some(a), Some(b)) = (major(old), major(new)) {
            if b <= a {
                out.push(format!(
                    "the report is {} but the declared version did not raise its major part ({old} → {new})",
                    report.compatibility.as_str()
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::ValueOrd;

    fn change(path: &str, severity: Severity) -> Change {
        Change {
            path: path.into(),
            kind: crate::core::change_kind::ChangeKind::EndpointRemoved,
            rule: "endpoint-removed".into(),
            severity,
            before: Some(ValueOrd(json!("x"))),
            after: None,
            message: "gone".into(),
            out_of_scope: false,
            policy: None,
        }
    }

    fn report(changes: Vec<Change>) -> DriftReport {
        let compatibility = changes
            .iter()
            .map(|c| level_of(c.severity))
            .max()
            .unwrap_or(Compatibility::Identical);
        DriftReport {
            compatibility,
            old_fingerprint: "sha256:a".into(),
            new_fingerprint: "sha256:b".into(),
            changes,
        }
    }

    fn entry(change: &Change, expires: &str) -> AcceptEntry {
        AcceptEntry {
            change: crate::core::report::change_id(change),
            reviewer: "alice".into(),
            reason: "ok".into(),
            expires: Date::parse(expires).unwrap(),
            file: None,
            rule: None,
            path: None,
            line: 1,
        }
    }

    #[test]
    fn accepting_one_of_two_breaking_changes_still_fails_and_both_pass() {
        let (a, b) = (
            change("endpoints.a", Severity::Breaking),
            change("endpoints.b", Severity::Breaking),
        );
        let r = report(vec![a.clone(), b.clone()]);
        let date = Date::parse("2026-12-01").unwrap();
        let fail_on = Some(Compatibility::Breaking);
        let one = [entry(&a, "2027-01-01")];
        let g = evaluate(&r, Some(&one), "openapi.yaml", date, fail_on);
        assert!(g.failed);
        assert_eq!((g.accepted(), g.unaccepted()), (1, 1));
        let both = [entry(&a, "2027-01-01"), entry(&b, "2027-01-01")];
        let g = evaluate(&r, Some(&both), "openapi.yaml", date, fail_on);
        assert!(!g.failed);
        // Expired the day before the check date: counts again.
        let expired = [entry(&a, "2026-11-30"), entry(&b, "2027-01-01")];
        let g = evaluate(&r, Some(&expired), "openapi.yaml", date, fail_on);
        assert!(g.failed);
        assert_eq!(g.expired(), 1);
        // Valid through its last day.
        let last_day = [entry(&a, "2026-12-01"), entry(&b, "2026-12-01")];
        assert!(!evaluate(&r, Some(&last_day), "openapi.yaml", date, fail_on).failed);
    }

    #[test]
    fn an_entry_matching_no_change_is_stale_and_changes_below_the_threshold_never_fail() {
        let a = change("endpoints.a", Severity::Compatible);
        let r = report(vec![a.clone()]);
        let other = change("endpoints.zzz", Severity::Breaking);
        let entries = [entry(&other, "2027-01-01")];
        let date = Date::parse("2026-12-01").unwrap();
        let g = evaluate(
            &r,
            Some(&entries),
            "x.json",
            date,
            Some(Compatibility::Breaking),
        );
        assert!(!g.failed);
        assert_eq!(g.stale.len(), 1);
        let json = report_with_gate(&r, &g, "x.json", &[]);
        assert_eq!(json["gate"]["stale"], 1);
        assert!(json["changes"][0].get("accept_entry").is_none());
    }

    #[test]
    fn ready_to_paste_entries_parse_once_filled_in() {
        let a = change("endpoints.a", Severity::Breaking);
        let r = report(vec![a.clone()]);
        let date = Date::parse("2026-12-01").unwrap();
        let g = evaluate(
            &r,
            None,
            "api/openapi.yaml",
            date,
            Some(Compatibility::Breaking),
        );
        let json = report_with_gate(&r, &g, "api/openapi.yaml", &[]);
        let entry = json["changes"][0]["accept_entry"].as_str().unwrap();
        assert!(entry.contains("expires = \"2026-12-31\""), "{entry}");
        let parsed = super::super::accept::parse("a.toml", entry, date).unwrap();
        assert_eq!(parsed[0].change, crate::core::report::change_id(&a));
        assert_eq!(parsed[0].rule.as_deref(), Some("endpoint-removed"));
        assert_eq!(parsed[0].path.as_deref(), Some("endpoints.a"));
        assert_eq!(parsed[0].file.as_deref(), Some("openapi.yaml"));
    }

    #[test]
    fn chg1_ids_still_accept_and_pins_must_hold() {
        let (a, b) = (
            change("endpoints.a", Severity::Breaking),
            change("endpoints.b", Severity::Breaking),
        );
        let r = report(vec![a.clone(), b.clone()]);
        let date = Date::parse("2026-12-01").unwrap();
        let fail_on = Some(Compatibility::Breaking);
        let mut old_a = entry(&a, "2027-01-01");
        old_a.change = crate::core::report::change_id_v1(&a);
        let mut pinned_b = entry(&b, "2027-01-01");
        pinned_b.rule = Some("endpoint-removed".into());
        pinned_b.path = Some("endpoints.b".into());
        let entries = [old_a.clone(), pinned_b.clone()];
        let g = evaluate(&r, Some(&entries), "x.json", date, fail_on);
        assert!(!g.failed);
        assert_eq!(g.accepted(), 2);
        assert_eq!(g.deprecated.len(), 1);
        assert_eq!(
            g.deprecated[0].1.as_deref(),
            Some(crate::core::report::change_id(&a).as_str())
        );
        // A pin that does not hold: the entry accepts nothing and is reported.
        for (rule, path) in [
            (Some("endpoint-added-read-only"), Some("endpoints.b")),
            (Some("endpoint-removed"), Some("endpoints.a")),
            (None, Some("endpoints.bb")),
        ] {
            let mut wrong = pinned_b.clone();
            wrong.rule = rule.map(str::to_string);
            wrong.path = path.map(str::to_string);
            let entries = [old_a.clone(), wrong];
            let g = evaluate(&r, Some(&entries), "x.json", date, fail_on);
            assert!(g.failed, "{rule:?} {path:?}");
            assert_eq!(g.accepted(), 1);
            assert_eq!(g.stale.len(), 1);
            assert_eq!(g.mismatched.len(), 1);
            assert_eq!(g.mismatched[0].1, 1);
        }
    }

    #[test]
    fn hints_say_when_a_breaking_report_keeps_its_major_version() {
        let r = report(vec![change("endpoints.a", Severity::Breaking)]);
        assert_eq!(hints(Some("1.1.4"), Some("1.2.0"), &r).len(), 1);
        assert!(hints(Some("1.1.4"), Some("2.0.0"), &r).is_empty());
        assert!(hints(Some("v1"), Some("v2"), &r).is_empty());
        assert!(hints(None, Some("1.0"), &r).is_empty());
        let compatible = report(vec![change("endpoints.a", Severity::Compatible)]);
        assert!(hints(Some("1.0"), Some("1.0"), &compatible).is_empty());
    }
}
