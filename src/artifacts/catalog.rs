//! Content-free tool inventory and catalog diff.
//!
//! An inventory record names an endpoint (`tool:<watch>/<endpoint>`), its contract version, its
//! capability and side-effect classes and a digest of its schemas — nothing else, so
//! endpoints' paths, descriptions, headers or secrets can never leak into a shared diff.
//! Parsing is strict and errors are value-free (`field: code`).

use crate::core::diff::classify;
use crate::core::fingerprint::SpecIndex;
use crate::core::json::to_canonical_string;
use crate::core::model::{CompactString, EndpointSpec, Severity, ToolSpec};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub const INVENTORY_SCHEMA_VERSION: &str = "schemawatch.tool_inventory.v1";
pub const DIFF_SCHEMA_VERSION: &str = "schemawatch.tool_catalog_diff.v1";
pub const MAX_RECORDS: usize = 10_000;
pub const SIDE_EFFECT_CLASSES: [&str; 5] = [
    "none",
    "read-only",
    "idempotent-write",
    "non-idempotent-write",
    "destructive",
];
const RECORD_FIELDS: [&str; 5] = [
    "capability_class",
    "schema_digest",
    "side_effect_class",
    "tool_id",
    "version",
];
/// Compared fields, in their fixed report order.
const COMPARED: [&str; 3] = ["capability_class", "side_effect_class", "schema_digest"];

/// A value-free parse error: which field, which problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {code}")]
pub struct CatalogError {
    pub field: String,
    pub code: &'static str,
}

fn err(field: impl Into<String>, code: &'static str) -> CatalogError {
    CatalogError {
        field: field.into(),
        code,
    }
}

/// Which field is wrong in an object whose keys are not exactly `expected`: the first unknown
/// one (`unknown_field`, named — a key is a name, never a value; a key that is not a plain
/// identifier is not echoed) or the first missing one (`missing_field`).
fn fields_error(prefix: &str, keys: &[&str], expected: &[&str]) -> CatalogError {
    let at = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        }
    };
    if let Some(unknown) = keys.iter().find(|k| !expected.contains(k)) {
        let plain = unknown.len() <= 64
            && !unknown.is_empty()
            && unknown
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        return err(
            at(if plain {
                unknown
            } else {
                "<not an identifier>"
            }),
            "unknown_field",
        );
    }
    match expected.iter().find(|e| !keys.contains(e)) {
        Some(missing) => err(at(missing), "missing_field"),
        None => err(
            if prefix.is_empty() {
                "inventory"
            } else {
                prefix
            },
            "invalid_fields",
        ),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Semver(pub u64, pub u64, pub u64);

impl Semver {
    pub fn parse(text: &str) -> Option<Semver> {
        let mut parts = text.split('.');
        let mut next = || -> Option<u64> {
            let p = parts.next()?;
            if p.is_empty()
                || p.len() > 20
                || !p.bytes().all(|b| b.is_ascii_digit())
                || (p.len() > 1 && p.starts_with('0'))
            {
                return None;
            }
            p.parse().ok()
        };
        let v = Semver(next()?, next()?, next()?);
        parts.next().is_none().then_some(v)
    }
}

impl std::fmt::Display for Semver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRecord {
    pub tool_id: String,
    pub version: Semver,
    pub capability_class: String,
    pub side_effect_class: String,
    pub schema_digest: String,
}

impl ToolRecord {
    fn key(&self) -> (String, Semver) {
        (self.tool_id.clone(), self.version.clone())
    }

    pub fn to_json(&self) -> Value {
        json!({
            "tool_id": self.tool_id,
            "version": self.version.to_string(),
            "capability_class": self.capability_class,
            "side_effect_class": self.side_effect_class,
            "schema_digest": self.schema_digest,
        })
    }
}

/// The side-effect class an endpoint's facts prove; `none` is never inferred.
pub fn side_effect_class(e: &EndpointSpec) -> &'static str {
    if e.read_only {
        "read-only"
    } else if e.destructive {
        "destructive"
    } else if e.idempotent {
        "idempotent-write"
    } else {
        "non-idempotent-write"
    }
}

/// The records of one tool's endpoints at its current snapshot, with versions derived from the
/// retained history (oldest first): registration is 1.0.0; each later snapshot bumps an
/// endpoint's version only if that endpoint changed — MAJOR for breaking or security changes
/// (or a difference no change explains), MINOR for compatible ones, PATCH for info-only ones.
pub fn tool_records(watch: &str, history: &[ToolSpec]) -> Vec<ToolRecord> {
    // Keyed by endpoint name, like tool ids: an operation that keeps its operationId keeps its
    // version line even when its method or path changes.
    let mut versions: BTreeMap<CompactString, Semver> = BTreeMap::new();
    let mut previous: Option<&ToolSpec> = None;
    for spec in history {
        let index = SpecIndex::new(spec);
        match previous {
            None => {
                for e in &spec.endpoints {
                    versions.insert(e.name.clone(), Semver(1, 0, 0));
                }
            }
            Some(old) => {
                let old_index = SpecIndex::new(old);
                let report = classify(old, spec, &Default::default());
                let old_fps = old_index.endpoint_fingerprints();
                let new_fps = index.endpoint_fingerprints();
                let old_fp_by_name: BTreeMap<&str, Option<&String>> = old
                    .endpoints
                    .iter()
                    .map(|e| (e.name.as_str(), old_fps.get(&e.identity())))
                    .collect();
                let mut next = BTreeMap::new();
                for e in &spec.endpoints {
                    let new_fp = new_fps.get(&e.identity());
                    let bumped = match (versions.get(&e.name), old_fp_by_name.get(e.name.as_str()))
                    {
                        (Some(v), Some(old_fp)) if *old_fp == new_fp => v.clone(),
                        (Some(v), Some(_)) => bump(v, endpoint_severity(&report, e)),
                        _ => Semver(1, 0, 0),
                    };
                    next.insert(e.name.clone(), bumped);
                }
                versions = next;
            }
        }
        previous = Some(spec);
    }
    let Some(current) = history.last() else {
        return Vec::new();
    };
    let index = SpecIndex::new(current);
    let mut records: Vec<ToolRecord> = current
        .endpoints
        .iter()
        .map(|e| ToolRecord {
            tool_id: format!("tool:{watch}/{}", e.name),
            version: versions.get(&e.name).cloned().unwrap_or(Semver(1, 0, 0)),
            capability_class: format!("capability:{}/{}", current.kind.as_str(), e.method),
            side_effect_class: side_effect_class(e).to_string(),
            schema_digest: index.schema_digest(e),
        })
        .collect();
    records.sort_by_key(ToolRecord::key);
    records
}

/// The most severe change attributed to an endpoint; a fingerprint change with nothing
/// attributed (a shared definition changed) counts as breaking, since it cannot be ruled out.
fn endpoint_severity(report: &crate::core::model::DriftReport, e: &EndpointSpec) -> Severity {
    let prefix = format!("endpoints.{}", e.name);
    report
        .changes
        .iter()
        .filter(|c| c.path == prefix || c.path.starts_with(&format!("{prefix}.")))
        .map(|c| c.severity)
        .max()
        .unwrap_or(Severity::Breaking)
}

fn bump(v: &Semver, severity: Severity) -> Semver {
    match severity {
        Severity::Breaking | Severity::Security => Semver(v.0 + 1, 0, 0),
        Severity::Compatible => Semver(v.0, v.1 + 1, 0),
        Severity::Info => Semver(v.0, v.1, v.2 + 1),
    }
}

pub fn inventory_json(records: &[ToolRecord]) -> String {
    let mut sorted: Vec<&ToolRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.key());
    to_canonical_string(&json!({
        "schema_version": INVENTORY_SCHEMA_VERSION,
        "tools": sorted.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
    }))
}

fn valid_tool_id(id: &str) -> bool {
    id.len() <= 512
        && id.strip_prefix("tool:").is_some_and(|rest| {
            let mut parts = rest.splitn(2, '/');
            matches!((parts.next(), parts.next()), (Some(ns), Some(name)) if !ns.is_empty() && !name.is_empty())
        })
        && !id.contains('@')
        && id.chars().all(|c| !c.is_control())
}

fn valid_digest(d: &str) -> bool {
    d.len() == 71
        && d.starts_with("sha256:")
        && d[7..]
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Parses an inventory strictly: exactly the documented fields, valid values, no duplicates.
pub fn parse_inventory(text: &str) -> Result<Vec<ToolRecord>, CatalogError> {
    let value =
        crate::core::json::parse_json(text).map_err(|_| err("inventory", "unreadable_mapping"))?;
    let Value::Object(top) = value else {
        return Err(err("inventory", "invalid_type"));
    };
    if top.len() != 2 || !top.contains_key("schema_version") || !top.contains_key("tools") {
        let keys: Vec<&str> = top.keys().map(String::as_str).collect();
        return Err(fields_error("", &keys, &["schema_version", "tools"]));
    }
    if top.get("schema_version") != Some(&json!(INVENTORY_SCHEMA_VERSION)) {
        return Err(err("schema_version", "unsupported_version"));
    }
    let Some(Value::Array(items)) = top.get("tools") else {
        return Err(err("tools", "invalid_records"));
    };
    if items.len() > MAX_RECORDS {
        return Err(err("tools", "too_many_records"));
    }
    let mut records = Vec::with_capacity(items.len());
    let mut seen = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let at = |field: &str| format!("tools[{i}].{field}");
        let Value::Object(map) = item else {
            return Err(err(format!("tools[{i}]"), "invalid_type"));
        };
        let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
        keys.sort_unstable();
        if keys != RECORD_FIELDS {
            return Err(fields_error(&format!("tools[{i}]"), &keys, &RECORD_FIELDS));
        }
        let text = |field: &str| -> Result<&str, CatalogError> {
            map.get(field)
                .and_then(Value::as_str)
                .ok_or_else(|| err(at(field), "invalid_type"))
        };
        let tool_id = text("tool_id")?;
        if !valid_tool_id(tool_id) {
            return Err(err(
                at("tool_id"),
                if tool_id.contains('@') {
                    "version_must_be_separate"
                } else {
                    "invalid_identifier"
                },
            ));
        }
        let version =
            Semver::parse(text("version")?).ok_or_else(|| err(at("version"), "invalid_semver"))?;
        let capability_class = text("capability_class")?;
        if !capability_class.starts_with("capability:") || capability_class.len() > 512 {
            return Err(err(at("capability_class"), "invalid_identifier"));
        }
        let side_effect_class = text("side_effect_class")?;
        if !SIDE_EFFECT_CLASSES.contains(&side_effect_class) {
            return Err(err(at("side_effect_class"), "invalid_class"));
        }
        let schema_digest = text("schema_digest")?;
        if !valid_digest(schema_digest) {
            return Err(err(at("schema_digest"), "invalid_digest"));
        }
        let record = ToolRecord {
            tool_id: tool_id.to_string(),
            version,
            capability_class: capability_class.to_string(),
            side_effect_class: side_effect_class.to_string(),
            schema_digest: schema_digest.to_string(),
        };
        if !seen.insert(record.key()) {
            return Err(err("tools", "duplicate_record"));
        }
        records.push(record);
    }
    records.sort_by_key(ToolRecord::key);
    Ok(records)
}

/// (field, baseline value, candidate value).
pub type FieldChange = (&'static str, String, String);

/// The catalog diff of two inventories, keyed by `(tool_id, version)`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CatalogDiff {
    pub added: Vec<ToolRecord>,
    pub removed: Vec<ToolRecord>,
    /// (record in the candidate, the fields that differ).
    pub changed: Vec<(ToolRecord, Vec<FieldChange>)>,
    pub unchanged: Vec<ToolRecord>,
}

fn field_value<'r>(r: &'r ToolRecord, field: &str) -> &'r str {
    match field {
        "capability_class" => &r.capability_class,
        "side_effect_class" => &r.side_effect_class,
        _ => &r.schema_digest,
    }
}

pub fn diff(baseline: &[ToolRecord], candidate: &[ToolRecord]) -> CatalogDiff {
    let base: BTreeMap<_, _> = baseline.iter().map(|r| (r.key(), r)).collect();
    let cand: BTreeMap<_, _> = candidate.iter().map(|r| (r.key(), r)).collect();
    let mut out = CatalogDiff::default();
    for (key, b) in &base {
        match cand.get(key) {
            None => out.removed.push((*b).clone()),
            Some(c) => {
                let fields: Vec<_> = COMPARED
                    .iter()
                    .filter(|f| field_value(b, f) != field_value(c, f))
                    .map(|f| {
                        (
                            *f,
                            field_value(b, f).to_string(),
                            field_value(c, f).to_string(),
                        )
                    })
                    .collect();
                if fields.is_empty() {
                    out.unchanged.push((*c).clone());
                } else {
                    out.changed.push(((*c).clone(), fields));
                }
            }
        }
    }
    out.added = cand
        .iter()
        .filter(|(k, _)| !base.contains_key(*k))
        .map(|(_, c)| (*c).clone())
        .collect();
    out
}

impl CatalogDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// Canonical compact JSON.
    pub fn to_json(&self) -> String {
        let records = |rs: &[ToolRecord]| rs.iter().map(ToolRecord::to_json).collect::<Vec<_>>();
        to_canonical_string(&json!({
            "schema_version": DIFF_SCHEMA_VERSION,
            "added": records(&self.added),
            "removed": records(&self.removed),
            "changed": self.changed.iter().map(|(r, fields)| json!({
                "tool_id": r.tool_id,
                "version": r.version.to_string(),
                "fields": fields.iter().map(|(f, b, a)| json!({"field": f, "before": b, "after": a})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "unchanged": records(&self.unchanged),
        }))
    }

    /// Stable Markdown: counts, then Added, Removed, Changed, Unchanged sections.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "# Tool catalog diff\n\nSchema: `{DIFF_SCHEMA_VERSION}`\n\nAdded: {}\nRemoved: {}\nChanged: {}\nUnchanged: {}\n",
            self.added.len(),
            self.removed.len(),
            self.changed.len(),
            self.unchanged.len()
        );
        let table = |title: &str, word: &str, rs: &[ToolRecord], out: &mut String| {
            out.push_str(&format!("\n## {title}\n\n"));
            if rs.is_empty() {
                out.push_str(&format!("_No {word} tools._\n"));
                return;
            }
            out.push_str("| Tool ID | Version | Capability class | Side-effect class | Schema digest |\n| --- | --- | --- | --- | --- |\n");
            for r in rs {
                out.push_str(&format!(
                    "| `{}` | `{}` | `{}` | `{}` | `{}` |\n",
                    md(&r.tool_id),
                    r.version,
                    md(&r.capability_class),
                    r.side_effect_class,
                    r.schema_digest
                ));
            }
        };
        table("Added", "added", &self.added, &mut out);
        table("Removed", "removed", &self.removed, &mut out);
        out.push_str("\n## Changed\n\n");
        if self.changed.is_empty() {
            out.push_str("_No changed tools._\n");
        } else {
            out.push_str("| Tool ID | Version | Field | Baseline | Candidate |\n| --- | --- | --- | --- | --- |\n");
            for (r, fields) in &self.changed {
                for (f, b, a) in fields {
                    out.push_str(&format!(
                        "| `{}` | `{}` | `{f}` | `{}` | `{}` |\n",
                        md(&r.tool_id),
                        r.version,
                        md(b),
                        md(a)
                    ));
                }
            }
        }
        table("Unchanged", "unchanged", &self.unchanged, &mut out);
        out
    }
}

/// Keeps Markdown table cells intact.
fn md(text: &str) -> String {
    text.replace('|', "\\|").replace('`', "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, version: &str, side: &str, digest_char: char) -> ToolRecord {
        ToolRecord {
            tool_id: id.into(),
            version: Semver::parse(version).unwrap(),
            capability_class: "capability:openapi/GET".into(),
            side_effect_class: side.into(),
            schema_digest: format!("sha256:{}", digest_char.to_string().repeat(64)),
        }
    }

    #[test]
    fn empty_diff_golden() {
        let d = diff(&[], &[]);
        assert!(d.is_empty());
        assert_eq!(
            d.to_json(),
            r#"{"added":[],"changed":[],"removed":[],"schema_version":"schemawatch.tool_catalog_diff.v1","unchanged":[]}"#
        );
        assert_eq!(
            d.to_markdown(),
            "# Tool catalog diff\n\nSchema: `schemawatch.tool_catalog_diff.v1`\n\nAdded: 0\nRemoved: 0\nChanged: 0\nUnchanged: 0\n\n\
             ## Added\n\n_No added tools._\n\n## Removed\n\n_No removed tools._\n\n## Changed\n\n_No changed tools._\n\n\
             ## Unchanged\n\n_No unchanged tools._\n"
        );
    }

    #[test]
    fn single_and_multi_diffs_golden_and_order_free() {
        let base = vec![
            record("tool:a.b/list", "1.0.0", "read-only", 'a'),
            record("tool:a.b/delete", "1.0.0", "destructive", 'b'),
            record("tool:a.b/create", "1.0.0", "non-idempotent-write", 'c'),
        ];
        let cand = vec![
            record("tool:a.b/list", "1.0.0", "read-only", 'a'),
            record("tool:a.b/create", "1.0.0", "destructive", 'd'),
            record("tool:a.b/delete", "2.0.0", "destructive", 'b'),
        ];
        let d = diff(&base, &cand);
        assert_eq!(
            (
                d.added.len(),
                d.removed.len(),
                d.changed.len(),
                d.unchanged.len()
            ),
            (1, 1, 1, 1)
        );
        let mut reversed_base = base.clone();
        reversed_base.reverse();
        let mut reversed_cand = cand.clone();
        reversed_cand.reverse();
        let r = diff(&reversed_base, &reversed_cand);
        assert_eq!(d.to_json(), r.to_json());
        assert_eq!(d.to_markdown(), r.to_markdown());
        let a = "a".repeat(64);
        let c = "c".repeat(64);
        let dd = "d".repeat(64);
        assert!(d.to_json().contains(&format!(
            r#""changed":[{{"fields":[{{"after":"destructive","before":"non-idempotent-write","field":"side_effect_class"}},{{"after":"sha256:{dd}","before":"sha256:{c}","field":"schema_digest"}}],"tool_id":"tool:a.b/create","version":"1.0.0"}}]"#
        )), "{}", d.to_json());
        assert!(d.to_markdown().contains(&format!(
            "| `tool:a.b/list` | `1.0.0` | `capability:openapi/GET` | `read-only` | `sha256:{a}` |\n"
        )));
        // Single: one added record.
        let single = diff(&[], &base[..1]);
        assert_eq!(single.added.len(), 1);
        assert!(!single.is_empty());
    }

    #[test]
    fn parsing_is_strict_and_value_free() {
        let ok = inventory_json(&[record("tool:a.b/list", "1.0.0", "read-only", 'a')]);
        assert_eq!(parse_inventory(&ok).unwrap().len(), 1);
        let cases = [
            (ok.replace("\"tools\"", "\"tool\""), "tool: unknown_field"),
            (
                ok.replace("tool_inventory.v1", "tool_inventory.v9"),
                "schema_version: unsupported_version",
            ),
            (
                ok.replace("\"1.0.0\"", "\"1.0\""),
                "tools[0].version: invalid_semver",
            ),
            (
                ok.replace("read-only", "none-ish"),
                "tools[0].side_effect_class: invalid_class",
            ),
            (
                ok.replace("tool:a.b/list", "tool:a.b/list@1.0.0"),
                "tools[0].tool_id: version_must_be_separate",
            ),
            (
                ok.replace("tool:a.b/list", "SECRET-endpoint"),
                "tools[0].tool_id: invalid_identifier",
            ),
            (
                ok.replace(
                    "\"schema_digest\"",
                    "\"description\":\"SECRET\",\"schema_digest\"",
                ),
                "tools[0].description: unknown_field",
            ),
            (
                ok.replace("sha256:a", "sha256:A"),
                "tools[0].schema_digest: invalid_digest",
            ),
            ("{not json".to_string(), "inventory: unreadable_mapping"),
        ];
        for (text, expected) in cases {
            let e = parse_inventory(&text).unwrap_err().to_string();
            assert_eq!(e, expected);
            assert!(!e.contains("SECRET"));
        }
        let dup = format!(
            r#"{{"schema_version":"{INVENTORY_SCHEMA_VERSION}","tools":[{0},{0}]}}"#,
            to_canonical_string(&record("tool:a.b/list", "1.0.0", "read-only", 'a').to_json())
        );
        assert_eq!(
            parse_inventory(&dup).unwrap_err().to_string(),
            "tools: duplicate_record"
        );
    }
}
