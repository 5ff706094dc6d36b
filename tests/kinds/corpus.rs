//! The real-world corpus (`tests/corpus/`, vendored): every OpenAPI document normalizes with
//! the operation counts MANIFEST.md states, every real pair classifies without unexplained
//! drift and reports the removed operations MANIFEST.md lists, classification is deterministic
//! and independent of input key order, and oasdiff's own breaking-change fixtures never get a
//! verdict that is less severe than oasdiff's (the safety property).

use schemawatch::core::diff::classify;
use schemawatch::core::fingerprint::tool_fingerprint;
use schemawatch::core::json::{parse_document, to_canonical_string};
use schemawatch::core::model::{Compatibility, DriftReport, EndpointSpec, Kind, ToolSpec};
use schemawatch::core::normalize::openapi::{self, normalize_path};
use schemawatch::core::normalize::source::locate_changes;
use schemawatch::core::report::report_json;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

use crate::common::corpus::{files_under, read};

/// Normalized corpus documents, shared by the tests of this file (they run in parallel, and the
/// big documents take a while to normalize in a debug build). One cell per document, so two
/// tests wanting the same document wait for one normalization instead of doing it twice.
fn try_spec(rel: &str) -> Result<Arc<ToolSpec>, String> {
    type Cell = Arc<OnceLock<Result<Arc<ToolSpec>, String>>>;
    static CACHE: OnceLock<Mutex<HashMap<String, Cell>>> = OnceLock::new();
    let cell = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(rel.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        openapi::normalize("corpus.doc", &read(rel))
            .map(Arc::new)
            .map_err(|e| format!("{rel}: {e}"))
    })
    .clone()
}

fn spec(rel: &str) -> Arc<ToolSpec> {
    try_spec(rel).unwrap_or_else(|e| panic!("does not normalize: {e}"))
}

fn report_bytes(report: &DriftReport) -> String {
    to_canonical_string(&report_json(report))
}

// ---------------------------------------------------------------------------------------------
// MANIFEST.md

/// What MANIFEST.md says about one `old -> new` pair.
#[derive(Debug, Default, Clone)]
struct PairFacts {
    old: String,
    new: String,
    /// `operations A -> B (+added, -removed)`.
    operations: Option<(usize, usize, usize, usize)>,
    /// `removed operations (first 8): METHOD path; ...`.
    removed_listed: Vec<String>,
}

fn manifest_pairs() -> Vec<PairFacts> {
    let text = String::from_utf8(read("MANIFEST.md")).unwrap();
    let mut pairs: Vec<PairFacts> = Vec::new();
    let mut in_pair = false;
    for line in text.lines() {
        if line.starts_with("#") {
            in_pair = false;
            if let Some(rest) = line.strip_prefix("### `") {
                let parts: Vec<&str> = rest.split('`').collect();
                if parts.len() >= 3 && parts[1] == " -> " {
                    pairs.push(PairFacts {
                        old: parts[0].to_string(),
                        new: parts[2].to_string(),
                        ..Default::default()
                    });
                    in_pair = true;
                }
            }
            continue;
        }
        if !in_pair {
            continue;
        }
        let facts = pairs.last_mut().unwrap();
        if let Some(rest) = line.strip_prefix("- operations ") {
            // "623 -> 743 (+124 added, -4 removed)"
            let nums: Vec<usize> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            assert_eq!(nums.len(), 4, "unexpected MANIFEST line: {line}");
            facts.operations = Some((nums[0], nums[1], nums[2], nums[3]));
        } else if let Some(list) = line.strip_prefix("- removed operations (first 8): ") {
            facts.removed_listed = list.split("; ").map(str::to_string).collect();
        }
    }
    pairs
}

/// MANIFEST pairs that are OpenAPI documents (those with an `operations` line).
fn manifest_openapi_pairs() -> Vec<PairFacts> {
    manifest_pairs()
        .into_iter()
        .filter(|p| p.operations.is_some())
        .collect()
}

fn manifest_pair(old: &str, new: &str) -> PairFacts {
    manifest_openapi_pairs()
        .into_iter()
        .find(|p| p.old == old && p.new == new)
        .unwrap_or_else(|| panic!("MANIFEST.md has no OpenAPI pair {old} -> {new}"))
}

/// `(METHOD, path as written)` of every operation under `paths` in a raw document, and the
/// number of operations the provider sends instead (3.1 `webhooks` and operations'
/// `callbacks`), counted independently of the normalizer.
fn raw_operations(doc: &Value) -> (BTreeSet<(String, String)>, usize) {
    let resolve = |v: &Value| -> Value {
        match v.get("$ref").and_then(Value::as_str) {
            Some(r) => openapi::resolve_pointer(doc, r)
                .cloned()
                .unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let methods_of = |item: &Value| -> Vec<&'static str> {
        let item = resolve(item);
        METHODS
            .into_iter()
            .filter(|m| item.get(m).is_some())
            .collect()
    };
    let mut http = BTreeSet::new();
    let mut reversed = 0;
    if let Some(Value::Object(paths)) = doc.get("paths") {
        for (path, item) in paths.iter().filter(|(p, _)| p.starts_with('/')) {
            let item = resolve(item);
            for method in methods_of(&item) {
                http.insert((method.to_ascii_uppercase(), path.clone()));
                if let Some(Value::Object(callbacks)) = item[method].get("callbacks") {
                    for callback in callbacks.values() {
                        if let Value::Object(expressions) = resolve(callback) {
                            reversed += expressions
                                .values()
                                .map(|i| methods_of(i).len())
                                .sum::<usize>();
                        }
                    }
                }
            }
        }
    }
    if let Some(Value::Object(webhooks)) = doc.get("webhooks") {
        reversed += webhooks
            .values()
            .map(|i| methods_of(i).len())
            .sum::<usize>();
    }
    (http, reversed)
}

/// Whether an endpoint is an HTTP operation under `paths` (not a webhook or callback).
fn is_http(e: &EndpointSpec) -> bool {
    METHODS.contains(&e.method.to_ascii_lowercase().as_str())
}

// ---------------------------------------------------------------------------------------------
// Every document normalizes, with the right operation counts.

#[test]
fn every_corpus_openapi_document_normalizes_with_manifest_operation_counts() {
    let mut manifest_counts: BTreeMap<String, usize> = BTreeMap::new();
    for p in manifest_openapi_pairs() {
        let (before, after, _, _) = p.operations.unwrap();
        for (file, count) in [(&p.old, before), (&p.new, after)] {
            if let Some(previous) = manifest_counts.insert(file.clone(), count) {
                assert_eq!(previous, count, "MANIFEST disagrees with itself on {file}");
            }
        }
    }

    let files = files_under("openapi");
    assert!(
        files.len() >= 16,
        "only {} files under openapi/",
        files.len()
    );
    let mut failures = Vec::new();
    let mut checked_against_manifest = BTreeSet::new();
    for rel in &files {
        let rel = rel.clone();
        let spec = match try_spec(&rel) {
            Ok(spec) => spec,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let (raw_http, raw_reversed) = raw_operations(&parse_document(&read(&rel)).unwrap());
        let http = spec.endpoints.iter().filter(|e| is_http(e)).count();
        assert_eq!(
            (http, spec.endpoints.len() - http),
            (raw_http.len(), raw_reversed),
            "{rel}: (operations, webhook/callback operations) differ from the document's"
        );
        // MANIFEST counts `METHOD path` pairs under `paths`.
        if let Some(expected) = manifest_counts.get(&rel) {
            assert_eq!(
                http, *expected,
                "{rel}: endpoint count differs from MANIFEST.md's operation count"
            );
            checked_against_manifest.insert(rel.clone());
        }
        // Identities are unique and sorted, names are unique.
        let identities: Vec<String> = spec.endpoints.iter().map(|e| e.identity()).collect();
        let mut sorted = identities.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(identities, sorted, "{rel}: endpoints not sorted/unique");
    }
    assert!(
        failures.is_empty(),
        "documents that do not normalize:\n{}",
        failures.join("\n")
    );
    for needed in [
        "openapi/github-rest/v2020-07-30.json",
        "openapi/github-rest/v2021-03-08.json",
        "openapi/github-rest/v2021-10-10.json",
        "openapi/stripe/v2021-07-27.json",
        "openapi/stripe/v2021-11-01.json",
        "openapi/stripe/v2022-03-02.json",
        "openapi/discord-3.1/v2024-01-09.json",
        "openapi/discord-3.1/v2025-05-09.json",
        "openapi/docker-engine-swagger2/v1.41.yaml",
        "openapi/docker-engine-swagger2/v1.44.yaml",
    ] {
        assert!(
            checked_against_manifest.contains(needed),
            "{needed} was not checked against MANIFEST.md (checked: {checked_against_manifest:?})"
        );
    }
}

#[test]
fn optimade_openapi_documents_normalize() {
    let files = files_under("optimade");
    let mut normalized = Vec::new();
    for rel in &files {
        let rel = rel.clone();
        let doc = parse_document(&read(&rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        if doc.get("openapi").is_none() {
            continue; // `/info` responses and entry data, not OpenAPI documents
        }
        let spec = spec(&rel);
        let (raw_http, raw_reversed) = raw_operations(&doc);
        assert_eq!(spec.endpoints.len(), raw_http.len() + raw_reversed, "{rel}");
        assert!(!spec.endpoints.is_empty(), "{rel}");
        normalized.push(rel);
    }
    assert_eq!(
        normalized,
        [
            "optimade/optimade-openapi/v0.12.9.json",
            "optimade/optimade-openapi/v1.0.0.json"
        ]
    );
    let facts = manifest_pair(&normalized[0], &normalized[1]);
    let (before, after, _, _) = facts.operations.unwrap();
    let http = |rel: &str| spec(rel).endpoints.iter().filter(|e| is_http(e)).count();
    assert_eq!(http(&normalized[0]), before);
    assert_eq!(http(&normalized[1]), after);
}

// ---------------------------------------------------------------------------------------------
// Real pairs.

/// What a pair's removed operations (by `METHOD path` as written) turned into.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fate {
    /// Nothing in the new document has its identity or operationId: `endpoint-removed`.
    Removed,
    /// Only path parameter names changed, so the normalized identity (`/a/{}`) still matches:
    /// the same endpoint, whose parameter changes are reported.
    SameIdentity,
    /// Its operationId survives under another method/path: one endpoint whose method or path
    /// changed (`method-changed`, `method-escalated` or `path-changed`).
    MovedByOperationId,
}

fn fate_of(old_endpoint: &EndpointSpec, old: &ToolSpec, new: &ToolSpec) -> Fate {
    let new_identities: BTreeSet<String> = new.endpoints.iter().map(|e| e.identity()).collect();
    let old_identities: BTreeSet<String> = old.endpoints.iter().map(|e| e.identity()).collect();
    if new_identities.contains(&old_endpoint.identity()) {
        return Fate::SameIdentity;
    }
    // The documented matching: identity first, then leftovers paired by operationId.
    let moved = old_endpoint.operation_id.as_ref().is_some_and(|op| {
        new.endpoints
            .iter()
            .any(|n| n.operation_id.as_ref() == Some(op) && !old_identities.contains(&n.identity()))
    });
    if moved {
        Fate::MovedByOperationId
    } else {
        Fate::Removed
    }
}

fn find_new_by_operation_id<'a>(
    old_endpoint: &EndpointSpec,
    new: &'a ToolSpec,
) -> &'a EndpointSpec {
    new.endpoints
        .iter()
        .find(|n| n.operation_id.is_some() && n.operation_id == old_endpoint.operation_id)
        .unwrap()
}

fn has_change(report: &DriftReport, rule: &str, path: &str, before: Option<&str>) -> bool {
    report.changes.iter().any(|c| {
        c.rule == rule
            && c.path == path
            && before.is_none_or(|b| c.before.as_ref().and_then(|v| v.0.as_str()) == Some(b))
    })
}

fn removed_change(report: &DriftReport, identity: &str) -> bool {
    report.changes.iter().any(|c| {
        c.rule == "endpoint-removed"
            && c.before.as_ref().and_then(|v| v.0.as_str()) == Some(identity)
    })
}

/// Classifies a MANIFEST pair and checks it against the MANIFEST facts.
///
/// `listed_fates` is what we expect for each operation MANIFEST lists as removed (by its
/// `METHOD path` as written); every listed operation must be in it, so the expectations are
/// explicit per pair and any surprise fails.
fn check_pair(old_rel: &str, new_rel: &str, listed_fates: &[(&str, Fate)]) -> DriftReport {
    let facts = manifest_pair(old_rel, new_rel);
    let (old, new) = (spec(old_rel), spec(new_rel));
    let report = classify(&old, &new, &Default::default());
    let pair = format!("{old_rel} -> {new_rel}");

    // No drift that no rule explains. A failure here is a product bug: the paths say where.
    let unclassified: Vec<&str> = report
        .changes
        .iter()
        .filter(|c| c.rule == "unclassified-change")
        .map(|c| c.path.as_str())
        .collect();
    assert!(
        unclassified.is_empty(),
        "{pair}: unclassified-change at {unclassified:?}"
    );

    // The raw operation sets agree with MANIFEST's counts.
    let raw = |s: &ToolSpec| -> BTreeSet<(String, String)> {
        s.endpoints
            .iter()
            .map(|e| (e.method.to_string(), e.path_template.to_string()))
            .collect()
    };
    let (raw_old, raw_new) = (raw(&old), raw(&new));
    let raw_removed: Vec<&(String, String)> = raw_old.difference(&raw_new).collect();
    let raw_added: Vec<&(String, String)> = raw_new.difference(&raw_old).collect();
    // MANIFEST counts operations under `paths` only (no webhooks or callbacks).
    let http_only = |ops: &[&(String, String)]| {
        ops.iter()
            .filter(|(m, _)| METHODS.contains(&m.to_ascii_lowercase().as_str()))
            .count()
    };
    let http_count = |s: &ToolSpec| s.endpoints.iter().filter(|e| is_http(e)).count();
    let (before, after, added, removed) = facts.operations.unwrap();
    assert_eq!(
        (
            http_count(&old),
            http_count(&new),
            http_only(&raw_added),
            http_only(&raw_removed)
        ),
        (before, after, added, removed),
        "{pair}: (operations before, after, added, removed) differ from MANIFEST.md"
    );

    // Every operation MANIFEST lists as removed has the fate we expect, and the report says so.
    let listed: BTreeMap<&str, &Fate> = listed_fates.iter().map(|(op, f)| (*op, f)).collect();
    assert_eq!(
        listed.keys().copied().collect::<BTreeSet<_>>(),
        facts
            .removed_listed
            .iter()
            .map(String::as_str)
            .collect::<BTreeSet<_>>(),
        "{pair}: the test's expectations do not cover exactly MANIFEST's removed operations"
    );
    // Every raw removal (listed or not) is accounted for by the report.
    for (method, template) in &raw_removed {
        let op = format!("{method} {template}");
        let o = old
            .endpoints
            .iter()
            .find(|e| e.method == *method && e.path_template == *template)
            .unwrap();
        let identity = o.identity();
        assert_eq!(identity, format!("{method} {}", normalize_path(template)));
        let fate = fate_of(o, &old, &new);
        if let Some(expected) = listed.get(op.as_str()) {
            assert_eq!(&&fate, expected, "{pair}: {op}");
        }
        match fate {
            Fate::Removed => assert!(
                removed_change(&report, &identity),
                "{pair}: no endpoint-removed change with before {identity:?} for {op}"
            ),
            Fate::SameIdentity => {
                assert!(!removed_change(&report, &identity), "{pair}: {op}");
                let n = new
                    .endpoints
                    .iter()
                    .find(|n| n.identity() == identity)
                    .unwrap();
                let prefix = format!("endpoints.{}.", n.name);
                assert!(
                    report.changes.iter().any(|c| c.path.starts_with(&prefix)),
                    "{pair}: {op} kept its identity but its path template changed to {}, and \
                     nothing is reported under {prefix}",
                    n.path_template
                );
            }
            Fate::MovedByOperationId => {
                assert!(!removed_change(&report, &identity), "{pair}: {op}");
                let n = find_new_by_operation_id(o, &new);
                let at = format!("endpoints.{}", n.name);
                if o.path != n.path {
                    assert!(
                        has_change(
                            &report,
                            "path-changed",
                            &format!("{at}.path"),
                            Some(template)
                        ),
                        "{pair}: {op} moved to {} (same operationId) but no path-changed",
                        n.identity()
                    );
                }
                if o.method != n.method {
                    assert!(
                        has_change(
                            &report,
                            "method-changed",
                            &format!("{at}.method"),
                            Some(method)
                        ) || has_change(
                            &report,
                            "method-escalated",
                            &format!("{at}.method"),
                            Some(method)
                        ),
                        "{pair}: {op} moved to {} (same operationId) but no method change",
                        n.identity()
                    );
                }
            }
        }
    }
    // Every raw addition is accounted for too: an endpoint-added change, unless it is the new
    // side of a moved or re-templated endpoint.
    let old_identities: BTreeSet<String> = old.endpoints.iter().map(|e| e.identity()).collect();
    let moved_to: BTreeSet<String> = old
        .endpoints
        .iter()
        .filter(|o| fate_of(o, &old, &new) == Fate::MovedByOperationId)
        .map(|o| find_new_by_operation_id(o, &new).identity())
        .collect();
    for (method, template) in &raw_added {
        let identity = format!("{method} {}", normalize_path(template));
        let reported = report.changes.iter().any(|c| {
            c.rule.starts_with("endpoint-added")
                && c.after.as_ref().and_then(|v| v.0.as_str()) == Some(identity.as_str())
        });
        let expected = !old_identities.contains(&identity) && !moved_to.contains(&identity);
        assert_eq!(
            reported, expected,
            "{pair}: added operation {method} {template}: endpoint-added reported = {reported}"
        );
    }

    if removed > 0 {
        assert!(
            report.compatibility >= Compatibility::Breaking,
            "{pair}: operations were removed but the verdict is {}",
            report.compatibility
        );
    }
    eprintln!(
        "{pair}: {} with {} changes",
        report.compatibility,
        report.changes.len()
    );
    report
}

#[test]
fn github_rest_2020_07_to_2021_03() {
    use Fate::SameIdentity;
    // MANIFEST counts by `METHOD path` as written, so a renamed path parameter counts as a
    // removal plus an addition there. Our identity normalizes path parameter names (`{}`), so
    // these four are the same endpoints on both sides (same operationId too): their path
    // parameter renames (`enterprise_id` -> `enterprise`, `alert_id` -> `alert_number`) are
    // reported as parameter changes of that endpoint, not as an `endpoint-removed`.
    let report = check_pair(
        "openapi/github-rest/v2020-07-30.json",
        "openapi/github-rest/v2021-03-08.json",
        &[
            (
                "GET /enterprises/{enterprise_id}/settings/billing/actions",
                SameIdentity,
            ),
            (
                "GET /enterprises/{enterprise_id}/settings/billing/packages",
                SameIdentity,
            ),
            (
                "GET /enterprises/{enterprise_id}/settings/billing/shared-storage",
                SameIdentity,
            ),
            (
                "GET /repos/{owner}/{repo}/code-scanning/alerts/{alert_id}",
                SameIdentity,
            ),
        ],
    );
    assert!(!removed_change(
        &report,
        "GET /repos/{}/{}/code-scanning/alerts/{}"
    ));
    // The path parameter renamed in place ({alert_id} -> {alert_number}) is one info change,
    // not a removal plus a required addition: callers fill the template by position.
    let at_alert_id = |rule: &str| {
        report.changes.iter().any(|c| {
            c.path == "endpoints.code-scanning/get-alert.parameters.path.alert_id" && c.rule == rule
        })
    };
    assert!(at_alert_id("path-parameter-renamed"));
    assert!(!at_alert_id("request-parameter-removed"));
    assert!(report.compatibility >= Compatibility::Breaking);
    // Every change has a line in the new document (what `diff --format sarif|github` show),
    // on a node below the document root.
    let new_text = read("openapi/github-rest/v2021-03-08.json");
    let locations = locate_changes(Kind::Openapi, &new_text, &report.changes);
    for (change, location) in report.changes.iter().zip(&locations) {
        let location = location
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no location", change.path));
        assert!(
            !location.pointer.is_empty() && location.position.line > 1,
            "{} at {location:?}",
            change.path
        );
    }
}

#[test]
fn github_rest_2021_03_to_2021_10() {
    use Fate::{MovedByOperationId, Removed};
    let report = check_pair(
        "openapi/github-rest/v2021-03-08.json",
        "openapi/github-rest/v2021-10-10.json",
        &[
            (
                "DELETE /applications/{client_id}/grants/{access_token}",
                Removed,
            ),
            (
                "DELETE /applications/{client_id}/tokens/{access_token}",
                Removed,
            ),
            (
                "GET /applications/{client_id}/tokens/{access_token}",
                Removed,
            ),
            (
                "GET /repos/{owner}/{repo}/community/code_of_conduct",
                Removed,
            ),
            (
                "POST /applications/{client_id}/tokens/{access_token}",
                Removed,
            ),
            // operationId `repos/compare-commits` survives at
            // `/repos/{owner}/{repo}/compare/{basehead}`: one endpoint whose path changed.
            (
                "GET /repos/{owner}/{repo}/compare/{base}...{head}",
                MovedByOperationId,
            ),
            // operationId `apps/create-content-attachment` survives at
            // `/repos/{owner}/{repo}/content_references/{content_reference_id}/attachments`.
            (
                "POST /content_references/{content_reference_id}/attachments",
                MovedByOperationId,
            ),
        ],
    );
    for identity in [
        "DELETE /applications/{}/grants/{}",
        "DELETE /applications/{}/tokens/{}",
        "GET /applications/{}/tokens/{}",
        "GET /repos/{}/{}/community/code_of_conduct",
        "POST /applications/{}/tokens/{}",
    ] {
        assert!(removed_change(&report, identity), "{identity}");
    }
    assert!(has_change(
        &report,
        "path-changed",
        "endpoints.repos/compare-commits.path",
        Some("/repos/{owner}/{repo}/compare/{base}...{head}")
    ));
    assert!(has_change(
        &report,
        "path-changed",
        "endpoints.apps/create-content-attachment.path",
        Some("/content_references/{content_reference_id}/attachments")
    ));
}

#[test]
fn stripe_2021_07_to_2021_11() {
    check_pair(
        "openapi/stripe/v2021-07-27.json",
        "openapi/stripe/v2021-11-01.json",
        &[],
    );
}

#[test]
fn stripe_2021_11_to_2022_03() {
    check_pair(
        "openapi/stripe/v2021-11-01.json",
        "openapi/stripe/v2022-03-02.json",
        &[],
    );
}

#[test]
fn discord_2024_01_to_2025_05() {
    check_pair(
        "openapi/discord-3.1/v2024-01-09.json",
        "openapi/discord-3.1/v2025-05-09.json",
        &[],
    );
}

#[test]
fn docker_swagger2_v1_41_to_v1_44() {
    let report = check_pair(
        "openapi/docker-engine-swagger2/v1.41.yaml",
        "openapi/docker-engine-swagger2/v1.44.yaml",
        &[],
    );
    // MANIFEST: "PUT /volumes/{name}" was added; a write endpoint needs review.
    assert!(report
        .changes
        .iter()
        .any(|c| c.rule == "endpoint-added-write"
            && c.after.as_ref().and_then(|v| v.0.as_str()) == Some("PUT /volumes/{}")));
    assert_eq!(report.compatibility, Compatibility::SecurityReview);
}

#[test]
fn petstore_swagger_petstore3_1_0_17_to_1_0_26() {
    check_pair(
        "openapi/petstore/swagger-petstore3-v1.0.17.yaml",
        "openapi/petstore/swagger-petstore3-v1.0.26.yaml",
        &[],
    );
}

#[test]
fn petstore_swagger2_to_openapi3_format_migration() {
    let report = check_pair(
        "openapi/petstore/oai-swagger-2.0.json",
        "openapi/petstore/oai-openapi-3.0.json",
        &[],
    );
    // Same API in two formats: no endpoint appears or disappears, and Swagger's
    // `schemes://host/basePath` equals the 3.0 `servers` URL (`http://petstore.swagger.io/v1`).
    // The examples do differ in content (3.0 adds a required request body to createPets,
    // `maximum: 100`, and showPetById returns `Pet` instead of `Pets`), hence breaking.
    assert!(!report
        .changes
        .iter()
        .any(|c| c.rule.starts_with("endpoint-") || c.rule == "execution-target-changed"));
    assert_eq!(report.compatibility, Compatibility::Breaking);
}

#[test]
fn optimade_openapi_v0_12_9_to_v1_0_0() {
    check_pair(
        "optimade/optimade-openapi/v0.12.9.json",
        "optimade/optimade-openapi/v1.0.0.json",
        &[],
    );
}

#[test]
fn every_manifest_openapi_pair_is_tested() {
    let tested: BTreeSet<(&str, &str)> = [
        (
            "openapi/github-rest/v2020-07-30.json",
            "openapi/github-rest/v2021-03-08.json",
        ),
        (
            "openapi/github-rest/v2021-03-08.json",
            "openapi/github-rest/v2021-10-10.json",
        ),
        (
            "openapi/stripe/v2021-07-27.json",
            "openapi/stripe/v2021-11-01.json",
        ),
        (
            "openapi/stripe/v2021-11-01.json",
            "openapi/stripe/v2022-03-02.json",
        ),
        (
            "openapi/discord-3.1/v2024-01-09.json",
            "openapi/discord-3.1/v2025-05-09.json",
        ),
        (
            "openapi/docker-engine-swagger2/v1.41.yaml",
            "openapi/docker-engine-swagger2/v1.44.yaml",
        ),
        (
            "openapi/petstore/swagger-petstore3-v1.0.17.yaml",
            "openapi/petstore/swagger-petstore3-v1.0.26.yaml",
        ),
        (
            "openapi/petstore/oai-swagger-2.0.json",
            "openapi/petstore/oai-openapi-3.0.json",
        ),
        (
            "optimade/optimade-openapi/v0.12.9.json",
            "optimade/optimade-openapi/v1.0.0.json",
        ),
    ]
    .into_iter()
    .collect();
    let manifest = manifest_openapi_pairs();
    assert!(manifest.len() >= 9);
    for p in &manifest {
        assert!(
            tested.contains(&(p.old.as_str(), p.new.as_str())),
            "MANIFEST pair {} -> {} has no test here",
            p.old,
            p.new
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Determinism and independence from input order.

/// How object keys are ordered when a value is written back as JSON text.
#[derive(Clone, Copy)]
enum KeyOrder {
    /// Reverse of serde_json's (sorted) map order.
    Reversed,
    /// A seeded pseudo-random permutation; integers are also spelled differently (`5` as
    /// `50e-1`), pretty-printed with a different indent, to exercise number canonicalization.
    Scrambled(u64),
}

fn fnv(seed: u64, text: &str) -> u64 {
    let mut h = 0xcbf29ce484222325u64 ^ seed;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Writes `value` as JSON text with object keys in the given order. serde_json here has no
/// `preserve_order`, so its maps always iterate sorted; the text is the only way to present
/// the normalizer with another order.
fn write_reordered(value: &Value, order: KeyOrder, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        if let KeyOrder::Scrambled(_) = order {
            out.push('\n');
            out.push_str(&" ".repeat(depth * 3));
        }
    };
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            match order {
                KeyOrder::Reversed => keys.reverse(),
                KeyOrder::Scrambled(seed) => keys.sort_by_key(|k| (fnv(seed, k), k.as_str())),
            }
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                out.push_str(&serde_json::to_string(key).unwrap());
                out.push_str(": ");
                write_reordered(&map[key], order, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                write_reordered(item, order, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Number(n) => {
            let text = n.to_string();
            let plain_integer = text
                .trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit());
            match order {
                // `0` is `-0.0` (JSON has no leading zeros, and -0 is 0).
                KeyOrder::Scrambled(_) if plain_integer && text == "0" => out.push_str("-0.0"),
                KeyOrder::Scrambled(_) if plain_integer => {
                    out.push_str(&text);
                    out.push_str("0e-1");
                }
                _ => out.push_str(&text),
            }
        }
        other => out.push_str(&serde_json::to_string(other).unwrap()),
    }
}

fn reordered(rel: &str, order: KeyOrder) -> ToolSpec {
    let doc = parse_document(&read(rel)).unwrap();
    let mut text = String::new();
    write_reordered(&doc, order, 0, &mut text);
    assert_ne!(text.as_bytes(), read(rel).as_slice());
    openapi::normalize("corpus.doc", text.as_bytes())
        .unwrap_or_else(|e| panic!("{rel} reordered: {e}"))
}

#[test]
fn classification_is_deterministic_and_independent_of_key_order() {
    let (old_rel, new_rel) = (
        "openapi/github-rest/v2021-03-08.json",
        "openapi/github-rest/v2021-10-10.json",
    );
    let (old, new) = (spec(old_rel), spec(new_rel));
    let first = report_bytes(&classify(&old, &new, &Default::default()));
    let second = report_bytes(&classify(&old, &new, &Default::default()));
    assert!(first == second, "two runs over the same pair differ");

    // Same documents, every object's keys reversed (paths, operations, components, schemas).
    let old_reversed = reordered(old_rel, KeyOrder::Reversed);
    let new_reversed = reordered(new_rel, KeyOrder::Reversed);
    assert_eq!(tool_fingerprint(&old_reversed), tool_fingerprint(&old));
    assert_eq!(tool_fingerprint(&new_reversed), tool_fingerprint(&new));
    assert_eq!(
        old_reversed, *old,
        "the normalized spec depends on key order"
    );
    let reversed = report_bytes(&classify(&old_reversed, &new_reversed, &Default::default()));
    assert!(first == reversed, "reversing key order changed the report");
}

#[test]
fn scrambled_key_order_and_number_spelling_keep_fingerprints_and_reports() {
    // Discord is OpenAPI 3.1 JSON; Docker is Swagger 2.0 YAML re-emitted as JSON, so this also
    // checks YAML -> JSON on a real document.
    for (old_rel, new_rel, seed) in [
        (
            "openapi/discord-3.1/v2024-01-09.json",
            "openapi/discord-3.1/v2025-05-09.json",
            7,
        ),
        (
            "openapi/docker-engine-swagger2/v1.41.yaml",
            "openapi/docker-engine-swagger2/v1.44.yaml",
            11,
        ),
    ] {
        let (old, new) = (spec(old_rel), spec(new_rel));
        let expected = report_bytes(&classify(&old, &new, &Default::default()));
        let old_s = reordered(old_rel, KeyOrder::Scrambled(seed));
        let new_s = reordered(new_rel, KeyOrder::Scrambled(seed + 1));
        assert_eq!(
            tool_fingerprint(&old_s),
            tool_fingerprint(&old),
            "{old_rel}"
        );
        assert_eq!(
            tool_fingerprint(&new_s),
            tool_fingerprint(&new),
            "{new_rel}"
        );
        let actual = report_bytes(&classify(&old_s, &new_s, &Default::default()));
        assert!(expected == actual, "{old_rel} -> {new_rel}: report changed");
    }
}

// ---------------------------------------------------------------------------------------------
// oasdiff conformance.

/// Pairs oasdiff calls breaking (ERR) that we classify `compatible` or `identical`: the known
/// exceptions to the safety property. Each is a product finding (reported, not hidden), caused
/// by a contract feature our projection or rules leave out; when one is fixed, the test prints
/// that it can be removed from this list. Any other unsafe pair fails the test.
const KNOWN_UNSAFE: &[(&str, &str, &str)] = &[];

/// Why we are more severe than oasdiff on these pairs (oasdiff: changelog-only or
/// no-breaking-change; we: breaking or security_review), by the rule that decides it.
const CONSERVATIVE: &[(&str, &str)] = &[
    ("api_security_", "security-requirements-changed (security): any change of an endpoint's auth requirements is for review"),
    ("servers/baseswagger.json", "execution-target-changed (security): host/basePath/schemes changed"),
    ("all_of_", "schema-composition-changed: allOf branches added/removed are not proven safe"),
    ("any_of_", "response-branch-added: a new anyOf branch is a shape callers may receive (breaking on the response side)"),
    ("one_of_", "schema-composition-changed: oneOf branches that are not provably disjoint, added/removed, are not proven safe"),
    ("discriminator", "schema-keyword-changed: discriminator is not modelled"),
    ("pattern", "request/response-constraint-changed|relaxed: a changed pattern cannot be proven wider; a response pattern removed is relaxed (breaking on the response side)"),
    ("xml_type_compatible", "request/response-type-changed: a type change is judged by JSON type, not by XML media type"),
    ("multitype_to_array", "request-type-changed: [integer,string] -> array is not a widening"),
    ("request_body_default_value_changed", "request-default-changed + request-media-type-removed: the revision also drops application/json (oasdiff ran one check only)"),
    ("request_params/optional-request-params", "request-parameter-removed: the revision also removes parameters (oasdiff ran one check only)"),
    ("param-rename/method", "endpoint-renamed: without an operationId the endpoint's name is `METHOD template`, so renaming the path parameter renames the endpoint (the parameter itself is `path-parameter-renamed`, info)"),
    ("write-only", "read-write-only-changed: a required property made writeOnly is no longer received, so responses lose it (readOnly/writeOnly exempt types, constraints, enums and requiredness on the side a value never travels, not the flag's own change)"),
    ("request-new-required-prop", "request-property-became-required: `required` names a property not declared in `properties`; still required"),
];

#[test]
fn oasdiff_fixture_conformance() {
    let pairs: Vec<Value> = serde_json::from_slice(&read("oasdiff-fixtures/pairs.json")).unwrap();
    assert_eq!(pairs.len(), 223, "pairs.json changed; re-measure the floor");

    let mut agree = 0;
    let mut decided_agree = 0;
    let mut decided_total = 0;
    let mut unsafe_pairs: Vec<String> = Vec::new();
    let mut known_unsafe_seen = BTreeSet::new();
    let mut conservative: Vec<String> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    for p in &pairs {
        let base = p["base"].as_str().unwrap();
        let revision = p["revision"].as_str().unwrap();
        let expected = p["expected"].as_str().unwrap();
        let label = format!("{base} -> {revision} (oasdiff: {expected})");
        let load = |rel: &str| {
            let bytes = read(&format!("oasdiff-fixtures/{rel}"));
            openapi::normalize("oasdiff.fixture", &bytes)
        };
        let (old, new) = match (load(base), load(revision)) {
            (Ok(old), Ok(new)) => (old, new),
            (old, new) => {
                // A document we refuse is an `error` outcome (nothing applied), never a
                // compatible verdict, so it is safe; it counts as a disagreement.
                let e = old.err().or(new.err()).unwrap();
                errors.push(format!("{label}: {e}"));
                decided_total += (expected != "maybe") as usize;
                continue;
            }
        };
        let ours = classify(&old, &new, &Default::default()).compatibility;
        let severe = ours >= Compatibility::Breaking;
        let same = match expected {
            // oasdiff WARN: "the document does not say enough to decide". Unknown is breaking
            // for us, so breaking (or worse) is the agreeing verdict.
            "breaking" | "maybe" => severe,
            "changelog-only" | "no-breaking-change" => !severe,
            other => panic!("unknown label {other}"),
        };
        if same {
            agree += 1;
        }
        if expected != "maybe" {
            decided_total += 1;
            decided_agree += same as usize;
        }
        if expected == "breaking" && !severe {
            match KNOWN_UNSAFE
                .iter()
                .find(|(b, r, _)| *b == base && *r == revision)
            {
                Some(_) => {
                    known_unsafe_seen.insert((base, revision));
                }
                None => unsafe_pairs.push(format!("{label}: we say {ours}")),
            }
        }
        if !same && expected != "breaking" {
            let why = CONSERVATIVE
                .iter()
                .find(|(key, _)| label.contains(key))
                .map(|(_, why)| *why)
                .unwrap_or("UNEXPLAINED: add a reason to CONSERVATIVE");
            conservative.push(format!("{label}: we say {ours}; {why}"));
        }
    }

    eprintln!(
        "oasdiff fixtures: same verdict on {agree}/{} pairs; {decided_agree}/{decided_total} \
         excluding the {} `maybe` pairs; {} more severe than oasdiff; {} refused as malformed; \
         {} unsafe (known, explained)",
        pairs.len(),
        pairs.len() - decided_total,
        conservative.len(),
        errors.len(),
        known_unsafe_seen.len()
    );
    for line in &conservative {
        eprintln!("  more severe: {line}");
    }
    for line in &errors {
        eprintln!("  refused: {line}");
    }
    for (base, revision, why) in KNOWN_UNSAFE {
        if known_unsafe_seen.contains(&(*base, *revision)) {
            eprintln!("  KNOWN UNSAFE: {base} -> {revision}: {why}");
        } else {
            eprintln!("  no longer unsafe, remove from KNOWN_UNSAFE: {base} -> {revision}");
        }
    }

    // The safety property: nothing oasdiff calls breaking is compatible or identical for us,
    // apart from the explained KNOWN_UNSAFE findings above.
    assert!(
        unsafe_pairs.is_empty(),
        "oasdiff says breaking, we say compatible/identical:\n{}",
        unsafe_pairs.join("\n")
    );
    // Measured 2026-11-29 at 7642a1d: 171/223 (all 18 `maybe` pairs breaking; 153/205 without
    // them); 2026-12-01 with direction-aware anyOf: 178/223 (160/205); 2026-12-05 (issue 30:
    // `oneOf [null, T]` with T excluding null judged as T plus null, nullable_wrap): 179/223
    // (161/205). Floor with a small margin.
    assert!(agree >= 177, "agreement fell to {agree}/{}", pairs.len());
    // The malformed fixtures (`responses:`/`content:` left null by YAML indentation) are the
    // only ones we refuse.
    assert!(errors.len() <= 9, "{errors:#?}");
}

// ---------------------------------------------------------------------------------------------
// (rule, kind) pairs

/// The consecutive document pairs of the corpus, as `scripts/corpus-diffs` makes them: in each
/// folder `TOP/NAME/` of a contract kind, the documents (not `.md`) in name order, each with the
/// next; the kind is the top folder's (`optimade/optimade-openapi` holds OpenAPI).
fn corpus_pairs() -> Vec<(Kind, String, String)> {
    let tops = [
        ("openapi", Kind::Openapi),
        ("openrpc", Kind::Openrpc),
        ("odata", Kind::Odata),
        ("graphql", Kind::Graphql),
        ("mcp", Kind::Mcp),
        ("optimade", Kind::Optimade),
    ];
    let mut pairs = Vec::new();
    for (top, top_kind) in tops {
        let mut by_folder: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for rel in files_under(top) {
            let parts: Vec<&str> = rel.split('/').collect();
            if parts.len() == 3 && !rel.ends_with(".md") {
                by_folder
                    .entry(format!("{}/{}", parts[0], parts[1]))
                    .or_default()
                    .push(rel.clone());
            }
        }
        for (folder, docs) in by_folder {
            let kind = if folder == "optimade/optimade-openapi" {
                Kind::Openapi
            } else {
                top_kind
            };
            for pair in docs.windows(2) {
                pairs.push((kind, pair[0].clone(), pair[1].clone()));
            }
        }
    }
    pairs
}

/// Every (rule, kind) pair the corpus pairs produce is pinned in `tests/fixtures/rule-kinds.txt`
/// (its `[corpus]` section, exactly; `[cases]` is pinned by the library's rule cases).
#[test]
fn every_rule_kind_pair_of_the_corpus_is_pinned() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rule-kinds.txt"),
    )
    .unwrap();
    let mut section = "";
    let mut pinned = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s;
        } else if section == "corpus" {
            let (rule, kind) = line.split_once(' ').unwrap();
            pinned.insert((rule.to_string(), kind.to_string()));
        }
    }
    let mut produced = BTreeSet::new();
    let mut compared = 0;
    for (kind, old, new) in corpus_pairs() {
        // OpenAPI documents through the cache the other tests of this file share.
        let read_spec = |rel: &str| match kind {
            Kind::Openapi => try_spec(rel).ok(),
            _ => schemawatch::core::normalize::normalize(kind, "corpus.doc", &read(rel))
                .ok()
                .map(Arc::new),
        };
        // A document its kind refuses (as `diff` does, exit 2) gives no pair.
        let (Some(o), Some(n)) = (read_spec(&old), read_spec(&new)) else {
            continue;
        };
        compared += 1;
        for c in classify(&o, &n, &Default::default()).changes {
            produced.insert((c.rule, c.kind.to_string()));
        }
    }
    assert!(compared >= 30, "only {compared} corpus pairs compared");
    let listing: String = produced.iter().map(|(r, k)| format!("{r} {k}\n")).collect();
    assert!(
        produced == pinned,
        "the corpus produces other (rule, kind) pairs than tests/fixtures/rule-kinds.txt pins; \
         its [corpus] section would be:\n{listing}"
    );
}
