//! The JSON documents shared by the CLI's `--json` output and the HTTP API, so both always
//! answer with the same shapes: `check`, `status`, `pending list`, `pending show`, the
//! results of `pending accept|reject`, `history` and `triage --classification`.

use crate::artifacts::triage::TriageDrift;
use crate::config::Config;
use crate::core::report::report_json;
use crate::refresh::Outcome;
use crate::registry::{HistoryEntry, Registry, RegistryError, Review};
use serde_json::{json, Value};

/// `check --json` and `POST /v1/check`.
pub fn check_json(registry_version: i64, outcomes: &[Outcome]) -> Value {
    json!({ "registry_version": registry_version, "outcomes": outcomes })
}

/// One row of `status --json`'s `watches` (and of `/v1/watches`).
pub fn watch_row(
    config: &Config,
    registry: &Registry,
    name: &str,
) -> Result<Option<Value>, RegistryError> {
    let Some(watch) = config.watch(name) else {
        return Ok(None);
    };
    let state = registry.watch_state(&watch.name)?;
    let tool = registry.tool(&watch.name)?;
    let pending = registry.open_change_count(&watch.name)?;
    Ok(Some(json!({
        "watch": watch.name,
        "kind": watch.kind.as_str(),
        "status": state.as_ref().map_or("idle", |s| s.status.as_str()),
        "last_compatibility": state.as_ref().and_then(|s| s.last_compatibility.clone()),
        "pending_change_count": pending,
        "last_checked_at": state.as_ref().and_then(|s| s.last_checked_at.clone()),
        "last_error": state.as_ref().and_then(|s| s.last_error.clone()),
        "consecutive_failures": state.as_ref().map_or(0, |s| s.consecutive_failures),
        "fingerprint": tool.map(|t| t.fingerprint),
    })))
}

/// Every configured watch's row, in config order.
pub fn watch_rows(config: &Config, registry: &Registry) -> Result<Vec<Value>, RegistryError> {
    let mut rows = Vec::with_capacity(config.watches.len());
    for watch in &config.watches {
        if let Some(row) = watch_row(config, registry, &watch.name)? {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// `status --json` and `GET /v1/status`.
pub fn status_json(config: &Config, registry: &Registry) -> Result<Value, RegistryError> {
    let registry_version = registry.registry_version()?;
    let rows = watch_rows(config, registry)?;
    Ok(json!({ "registry_version": registry_version, "watches": rows }))
}

/// One entry of `pending list --json`.
pub fn review_summary(r: &Review) -> Value {
    json!({
        "id": r.id,
        "watch": r.watch,
        "compatibility": r.compatibility,
        "change_count": r.change_count,
        "created_at": r.created_at,
        "base_registry_version": r.base_registry_version,
        "candidate_fingerprint": r.candidate_fingerprint,
        "state": r.state,
    })
}

/// `pending list --json` and `GET /v1/pending`.
pub fn pending_list_json(reviews: &[Review]) -> Value {
    Value::Array(reviews.iter().map(review_summary).collect())
}

/// `pending show ID --json` and `GET /v1/pending/{id}`.
pub fn review_detail(review: &Review) -> Value {
    let mut value = review_summary(review);
    value["reviewer"] = json!(review.reviewer);
    value["reason"] = json!(review.reason);
    value["decided_at"] = json!(review.decided_at);
    value["pruned_at"] = json!(review.pruned_at);
    match &review.report {
        Some(report) => {
            value["report"] = report_json(report);
            // Every review artifact carries its reasoning (provenance stamp).
            crate::artifacts::provenance::stamp(value, report, &format!("review:{}", review.watch))
        }
        // `[storage] keep_reviews` dropped the candidate and report of this closed review:
        // its metadata is all there is, and the answer says so rather than erroring.
        None => {
            value["report"] = Value::Null;
            value["pruned"] = json!(true);
            value
        }
    }
}

/// `pending accept ID --json` and `POST /v1/pending/{id}/accept`.
pub fn accepted_json(id: i64, registry_version: i64) -> Value {
    json!({"id": id, "state": "accepted", "registry_version": registry_version})
}

/// `pending reject ID --json` and `POST /v1/pending/{id}/reject`.
pub fn rejected_json(id: i64) -> Value {
    json!({"id": id, "state": "rejected"})
}

/// `history TOOL --json`: the applied versions, newest first, as the registry stores them.
pub fn history_json(entries: &[HistoryEntry]) -> Result<Value, serde_json::Error> {
    serde_json::to_value(entries)
}

/// `triage --classification FILE --json`: the surface summary and the classification's drift.
pub fn triage_drift_json(summary: Value, drift: &TriageDrift) -> Value {
    json!({"summary": summary, "drift": drift.to_json()})
}
