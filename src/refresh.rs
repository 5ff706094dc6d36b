//! One refresh cycle of one watch: fetch (conditionally), normalize, fingerprint, compare with
//! the accepted contract, then register, apply (CAS), queue for review, or leave untouched.
//! A failed fetch or parse never touches the accepted contract.

use crate::config::{SourceConfig, WatchConfig};
use crate::core::diff::classify;
use crate::core::fingerprint::{digest_text, tool_fingerprint};
use crate::core::model::{Compatibility, DriftReport};
use crate::fetch::openapi_refs::BundleError;
use crate::fetch::{FetchOutcome, Validators};
use crate::registry::{
    now_rfc3339, CasBase, Provenance, Queued, Registry, RegistryError, WatchState,
};
use crate::sources::{self, fetch_error_class, Source};
use serde::Serialize;

/// How many times a refresh re-reads and re-compares after losing a CAS race.
const CAS_ATTEMPTS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Registered,
    Unchanged,
    Applied,
    ReportOnly,
    PendingReview,
    Rejected,
    Error,
    Stale,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Registered => "registered",
            Action::Unchanged => "unchanged",
            Action::Applied => "applied",
            Action::ReportOnly => "report_only",
            Action::PendingReview => "pending_review",
            Action::Rejected => "rejected",
            Action::Error => "error",
            Action::Stale => "stale",
        }
    }
}

/// What one cycle did for one watch (the `outcomes` entries of `check --json`).
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub watch: String,
    pub action: Action,
    pub compatibility: Option<Compatibility>,
    pub review_id: Option<i64>,
    pub error: Option<String>,
    #[serde(skip)]
    pub report: Option<DriftReport>,
    /// Body bytes fetched this cycle (0 for a 304); for metrics, not part of the JSON.
    #[serde(skip)]
    pub fetched_bytes: u64,
    /// The server answered 304 Not Modified.
    #[serde(skip)]
    pub not_modified: bool,
    /// A coarse, value-free error class (`timeout`, `connect`, `tls`, `http_status`,
    /// `too_large`, `fetch`, `parse`, `registry`, `conflict`) when the cycle failed.
    #[serde(skip)]
    pub error_class: Option<&'static str>,
}

impl Outcome {
    fn new(watch: &str, action: Action) -> Outcome {
        Outcome {
            watch: watch.to_string(),
            action,
            compatibility: None,
            review_id: None,
            error: None,
            report: None,
            fetched_bytes: 0,
            not_modified: false,
            error_class: None,
        }
    }
}

/// The identity of a source with any URL password removed (it may be a credential).
pub fn source_identity(source: &SourceConfig) -> String {
    match source {
        SourceConfig::Url(u) => {
            let mut u = u.clone();
            let _ = u.set_password(None);
            format!("url:{u}")
        }
        SourceConfig::Path(p) => format!("path:{}", p.display()),
        SourceConfig::Command { argv, .. } => crate::config::command_identity(argv),
    }
}

/// Runs one refresh cycle of `watch` against `registry`.
pub async fn refresh(registry: &mut Registry, watch: &WatchConfig, keep_versions: u32) -> Outcome {
    let mut stats = Stats::default();
    let mut outcome = refresh_recorded(registry, watch, keep_versions, &mut stats).await;
    outcome.fetched_bytes = stats.fetched_bytes;
    outcome.not_modified = stats.not_modified;
    if outcome.action == Action::Error {
        outcome.error_class = Some(stats.error_class.unwrap_or("registry"));
    }
    outcome
}

/// What a cycle observed on the way, for metrics.
#[derive(Default)]
struct Stats {
    fetched_bytes: u64,
    not_modified: bool,
    error_class: Option<&'static str>,
}

fn bundle_error_class(e: &BundleError) -> &'static str {
    match e {
        BundleError::Normalize(_) | BundleError::Parse { .. } => "parse",
        BundleError::TooLarge { .. } => "too_large",
        BundleError::Timeout => "timeout",
        e => e.fetch_error().map_or("fetch", fetch_error_class),
    }
}

async fn refresh_recorded(
    registry: &mut Registry,
    watch: &WatchConfig,
    keep_versions: u32,
    stats: &mut Stats,
) -> Outcome {
    match refresh_inner(registry, watch, keep_versions, stats).await {
        Ok(outcome) => outcome,
        Err(message) => {
            let mut state = registry
                .watch_state(&watch.name)
                .ok()
                .flatten()
                .unwrap_or_else(|| idle_state(watch));
            state.status = "error".into();
            state.last_checked_at = Some(now_rfc3339());
            state.last_error = Some(message.clone());
            state.consecutive_failures += 1;
            if let Err(e) = registry.record_watch(&state) {
                tracing::error!(event = "state_write_failed", watch = %watch.name, error = %e);
            }
            tracing::error!(event = "refresh_failed", watch = %watch.name, error = %message);
            let mut outcome = Outcome::new(&watch.name, Action::Error);
            outcome.error = Some(message);
            outcome
        }
    }
}

fn idle_state(watch: &WatchConfig) -> WatchState {
    WatchState {
        watch: watch.name.clone(),
        kind: watch.kind.as_str().into(),
        status: "idle".into(),
        ..WatchState::default()
    }
}

async fn refresh_inner(
    registry: &mut Registry,
    watch: &WatchConfig,
    keep_versions: u32,
    stats: &mut Stats,
) -> Result<Outcome, String> {
    let db = |e: RegistryError| e.to_string();
    let identity = source_identity(&watch.source);
    let source_digest = digest_text("schemawatch.source.v1", &identity);
    let mut state = registry
        .watch_state(&watch.name)
        .map_err(db)?
        .unwrap_or_else(|| idle_state(watch));
    let existing = registry.tool(&watch.name).map_err(db)?;

    if existing.is_some() {
        if let Some(previous) = &state.source_identity {
            if *previous != identity {
                state.status = "stale".into();
                state.last_checked_at = Some(now_rfc3339());
                state.last_error = Some(format!(
                    "the watch's source changed from {previous} to {identity}; run `schemawatch watch reset {}` to compare the new source against the accepted contract",
                    watch.name
                ));
                registry.record_watch(&state).map_err(db)?;
                tracing::warn!(event = "watch_stale", watch = %watch.name);
                let mut outcome = Outcome::new(&watch.name, Action::Stale);
                outcome.error = state.last_error.clone();
                return Ok(outcome);
            }
        }
    }
    state.source_identity = Some(identity);
    state.kind = watch.kind.as_str().into();
    state.last_checked_at = Some(now_rfc3339());

    let stored_validators = if existing.is_some() {
        registry
            .validators(&watch.name, &source_digest)
            .map_err(db)?
            .map(|(etag, last_modified)| Validators {
                etag,
                last_modified,
            })
    } else {
        None
    };
    let started = std::time::Instant::now();
    let source = Source::from_config(&watch.source);
    let request = sources::Request::for_watch(watch, stored_validators);
    let fetched = sources::load(watch.kind, &source, &request)
        .await
        .map_err(|e| {
            stats.error_class = Some(e.class());
            e.to_string()
        })?;
    let (bytes, mut validators, final_url) = match fetched {
        FetchOutcome::NotModified => {
            stats.not_modified = true;
            mark_ok(&mut state, "unchanged", None);
            registry.record_unchanged(&state, None).map_err(db)?;
            tracing::info!(event = "refresh", watch = %watch.name, action = "unchanged", not_modified = true);
            return Ok(Outcome::new(&watch.name, Action::Unchanged));
        }
        FetchOutcome::Body {
            bytes,
            validators,
            final_url,
        } => (bytes, validators, final_url),
    };
    stats.fetched_bytes = bytes.len() as u64;
    // An OpenAPI document's external `$ref`s are fetched too (bounded, per `external_refs`).
    let contract = sources::contract(
        watch.kind,
        &watch.name,
        &source,
        &request,
        &bytes,
        final_url.as_deref(),
        started,
    )
    .await
    .map_err(|e| {
        stats.error_class = Some(bundle_error_class(&e));
        match e {
            BundleError::Normalize(e) => format!("invalid {} document: {e}", watch.kind),
            e => e.to_string(),
        }
    })?;
    stats.fetched_bytes += contract.external_bytes;
    if contract.has_external_refs {
        // No validator shortcut: the root's 304 cannot prove the referenced documents
        // unchanged, so nothing is stored and the next cycle fetches in full.
        validators = Validators::default();
    }
    let spec = contract.spec;
    drop(bytes);
    let fingerprint = tool_fingerprint(&spec);
    let new_validators = (
        source_digest.as_str(),
        validators.etag.as_deref(),
        validators.last_modified.as_deref(),
    );

    for _ in 0..CAS_ATTEMPTS {
        let current = registry.tool(&watch.name).map_err(db)?;
        let Some(current) = current else {
            mark_ok(&mut state, "registered", None);
            match registry.apply_with_state(
                &spec,
                None,
                &Provenance::default(),
                keep_versions,
                &state,
                Some(new_validators),
            ) {
                Ok(version) => {
                    tracing::info!(event = "refresh", watch = %watch.name, action = "registered", registry_version = version);
                    return Ok(Outcome::new(&watch.name, Action::Registered));
                }
                Err(RegistryError::Conflict { .. }) => continue,
                Err(e) => return Err(db(e)),
            }
        };
        let base = CasBase {
            registry_version: current.registry_version,
            fingerprint: current.fingerprint.clone(),
        };
        if current.fingerprint == fingerprint {
            mark_ok(&mut state, "unchanged", None);
            registry
                .record_unchanged(&state, Some(new_validators))
                .map_err(db)?;
            tracing::info!(event = "refresh", watch = %watch.name, action = "unchanged");
            return Ok(Outcome::new(&watch.name, Action::Unchanged));
        }
        if registry
            .is_rejected(&watch.name, &fingerprint)
            .map_err(db)?
        {
            mark_ok(&mut state, "rejected", None);
            registry.record_watch(&state).map_err(db)?;
            tracing::info!(event = "refresh", watch = %watch.name, action = "rejected");
            let mut outcome = Outcome::new(&watch.name, Action::Rejected);
            outcome.review_id = None;
            return Ok(outcome);
        }
        let mut report = classify(&current.spec, &spec, &watch.severity);
        if let Some(path) = &watch.classification {
            let classification = crate::artifacts::triage::read_classification(path)?;
            crate::artifacts::triage::flag_unclassified(
                &watch.name,
                &current.spec,
                &spec,
                &classification,
                &mut report,
            );
        }
        let compatibility = report.compatibility;
        match compatibility {
            Compatibility::Identical => {
                mark_ok(&mut state, "unchanged", None);
                registry
                    .record_unchanged(&state, Some(new_validators))
                    .map_err(db)?;
                return Ok(Outcome::new(&watch.name, Action::Unchanged));
            }
            Compatibility::Compatible if watch.apply_compatible => {
                mark_ok(&mut state, "applied", Some(compatibility));
                let provenance = Provenance {
                    compatibility: Some(compatibility),
                    ..Provenance::default()
                };
                match registry.apply_with_state(
                    &spec,
                    Some(&base),
                    &provenance,
                    keep_versions,
                    &state,
                    Some(new_validators),
                ) {
                    Ok(version) => {
                        tracing::info!(event = "refresh", watch = %watch.name, action = "applied",
                            compatibility = "compatible", change_count = report.changes.len(), registry_version = version);
                        let mut outcome = Outcome::new(&watch.name, Action::Applied);
                        outcome.compatibility = Some(compatibility);
                        outcome.report = Some(report);
                        return Ok(outcome);
                    }
                    Err(RegistryError::Conflict { .. }) => continue,
                    Err(e) => return Err(db(e)),
                }
            }
            Compatibility::Compatible => {
                // Validators stay at the accepted snapshot so the next cycle refetches.
                mark_ok(&mut state, "report_only", Some(compatibility));
                registry.record_watch(&state).map_err(db)?;
                tracing::info!(event = "refresh", watch = %watch.name, action = "report_only", change_count = report.changes.len());
                let mut outcome = Outcome::new(&watch.name, Action::ReportOnly);
                outcome.compatibility = Some(compatibility);
                outcome.report = Some(report);
                return Ok(outcome);
            }
            Compatibility::Breaking | Compatibility::SecurityReview => {
                mark_ok(&mut state, "pending_review", Some(compatibility));
                match registry.queue_review(&base, &spec, &report, &state) {
                    Ok(queued) => {
                        let id = match queued {
                            Queued::New { id, superseded } => {
                                if let Some(old) = superseded {
                                    tracing::info!(event = "review_superseded", watch = %watch.name, review_id = old, superseded_by = id);
                                }
                                id
                            }
                            Queued::AlreadyOpen { id } => id,
                        };
                        // The payload carries the verdict's reasoning (`_toulmin`, `_tags`).
                        let provenance = crate::artifacts::provenance::stamp(
                            serde_json::json!({"review_id": id}),
                            &report,
                            &format!("review:{}", watch.name),
                        );
                        tracing::warn!(event = "pending_review", watch = %watch.name, review_id = id,
                            compatibility = compatibility.as_str(), change_count = report.changes.len(),
                            provenance = %provenance);
                        let mut outcome = Outcome::new(&watch.name, Action::PendingReview);
                        outcome.compatibility = Some(compatibility);
                        outcome.review_id = Some(id);
                        outcome.report = Some(report);
                        return Ok(outcome);
                    }
                    Err(RegistryError::Conflict { .. }) => continue,
                    Err(e) => return Err(db(e)),
                }
            }
        }
    }
    stats.error_class = Some("conflict");
    Err(format!("the registry kept changing under this refresh ({CAS_ATTEMPTS} compare-and-swap attempts lost); it will be retried"))
}

fn mark_ok(state: &mut WatchState, status: &str, compatibility: Option<Compatibility>) {
    state.status = status.into();
    state.last_error = None;
    state.consecutive_failures = 0;
    if let Some(c) = compatibility {
        state.last_compatibility = Some(c.as_str().into());
    } else if status == "unchanged" || status == "registered" {
        state.last_compatibility = Some(Compatibility::Identical.as_str().into());
    }
}
