//! The facts MANIFEST.md lists for the real OpenAPI pairs, found by the classifier: removed
//! properties it names and newly required parameters, with our counts pinned so a regression
//! in either direction shows up. (Removed operations are checked in the `corpus` module.)
//!
//! MANIFEST counts property changes over every named schema; we report them only inside the
//! definitions some endpoint reaches, once per direction, so our counts differ from its totals
//! and are pinned as measured.

use schemawatch::core::diff::classify;
use schemawatch::core::model::DriftReport;
use schemawatch::core::normalize::openapi::normalize;
use std::collections::BTreeMap;

fn report(old: &str, new: &str) -> DriftReport {
    let load = |rel: &str| {
        let bytes = crate::common::corpus::read(&format!("openapi/{rel}"));
        normalize("corpus.doc", &bytes).unwrap_or_else(|e| panic!("{rel}: {e}"))
    };
    classify(&load(old), &load(new), &Default::default())
}

fn counts(r: &DriftReport) -> BTreeMap<&str, usize> {
    let mut out = BTreeMap::new();
    for c in &r.changes {
        *out.entry(c.rule.as_str()).or_default() += 1;
    }
    out
}

/// A change removing `property` from the component schema `schema`, in either direction.
fn removes_property(r: &DriftReport, schema: &str, property: &str) -> bool {
    let path = format!("components.schemas.{schema}.properties.{property}");
    r.changes
        .iter()
        .any(|c| c.path == path && c.rule.ends_with("-property-removed"))
}

#[test]
fn github_2020_07_to_2021_03() {
    let r = report(
        "github-rest/v2020-07-30.json",
        "github-rest/v2021-03-08.json",
    );
    for (schema, property) in [
        ("project", "cards_url"),
        ("code-scanning-alert", "rule_id"),
        ("api-overview", "github_services_sha"),
    ] {
        assert!(
            removes_property(&r, schema, property),
            "{schema}.{property}"
        );
    }
    let n = counts(&r);
    // MANIFEST: 0 optional->required parameters, 2 removed. The four path parameters renamed
    // in place ({enterprise_id} -> {enterprise} on three billing endpoints, {alert_id} ->
    // {alert_number}) are `path-parameter-renamed` (info), not removed + added.
    assert_eq!(n.get("request-parameter-became-required"), None);
    assert_eq!(n.get("request-parameter-removed"), Some(&2));
    assert_eq!(n.get("path-parameter-renamed"), Some(&4));
    assert_eq!(n.get("response-property-removed"), Some(&116));
}

#[test]
fn github_2021_03_to_2021_10() {
    let r = report(
        "github-rest/v2021-03-08.json",
        "github-rest/v2021-10-10.json",
    );
    for (schema, property) in [
        ("organization-invitation", "invitation_team_url"),
        ("key", "key_id"),
        ("issue-event-for-issue", "id"),
    ] {
        assert!(
            removes_property(&r, schema, property),
            "{schema}.{property}"
        );
    }
    // MANIFEST: "POST /repos/{owner}/{repo}/releases/{release_id}/assets query:name now required".
    let newly_required: Vec<&str> = r
        .changes
        .iter()
        .filter(|c| c.rule == "request-parameter-became-required")
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(
        newly_required,
        vec!["endpoints.repos/upload-release-asset.parameters.query.name.required"]
    );
    let n = counts(&r);
    assert_eq!(n.get("endpoint-removed"), Some(&5));
    assert_eq!(n.get("request-parameter-removed"), Some(&2));
    assert_eq!(n.get("response-property-removed"), Some(&173));
}

#[test]
fn stripe_2021_07_to_2021_11() {
    let r = report("stripe/v2021-07-27.json", "stripe/v2021-11-01.json");
    let n = counts(&r);
    // MANIFEST: 2 parameters removed, no new required parameters, 0 properties removed.
    assert_eq!(n.get("request-parameter-removed"), Some(&2));
    assert_eq!(n.get("request-parameter-added-required"), None);
    assert_eq!(n.get("response-property-removed"), None);
    assert_eq!(n.get("request-property-removed"), None);
}

#[test]
fn discord_2024_01_to_2025_05() {
    let r = report(
        "discord-3.1/v2024-01-09.json",
        "discord-3.1/v2025-05-09.json",
    );
    for (schema, property) in [
        ("UserResponse", "premium_type"),
        ("GuildInviteResponse", "stage_instance"),
    ] {
        assert!(
            removes_property(&r, schema, property),
            "{schema}.{property}"
        );
    }
    let n = counts(&r);
    assert_eq!(n.get("request-parameter-became-required"), None);
    assert_eq!(n.get("response-property-removed"), Some(&2));
}
