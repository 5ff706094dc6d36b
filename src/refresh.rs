//! One refresh cycle of one watch: fetch (conditionally), normalize, fingerprint, compare with
//! the accepted contract, then register, apply (CAS), queue for review, or leave untouched.
//! A failed fetch or parse never touches the accepted contract.

use crate::config::{SourceConfig, WatchConfig};
use crate::core::diff::{classify, ClassifyPolicy, SurfaceClassification};
use crate::core::fingerprint::{digest_text, tool_fingerprint};
use crate::core::model::{Compatibility, DriftReport, Kind};
use crate::fetch::openapi_refs::BundleError;
use crate::fetch::{self, FetchOutcome, Validators};
use crate::registry::{
    now_rfc3339, CasBase, Fetched, Provenance, Queued, Registry, RegistryError, StoredSource,
    WatchState, WatchStatus,
};
use crate::sources::{self, fetch_error_class};
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

    /// The watch status a cycle that ended in this action leaves behind.
    pub fn status(self) -> WatchStatus {
        match self {
            Action::Registered => WatchStatus::Registered,
            Action::Unchanged => WatchStatus::Unchanged,
            Action::Applied => WatchStatus::Applied,
            Action::ReportOnly => WatchStatus::ReportOnly,
            Action::PendingReview => WatchStatus::PendingReview,
            Action::Rejected => WatchStatus::Rejected,
            Action::Error => WatchStatus::Error,
            Action::Stale => WatchStatus::Stale,
        }
    }
}

/// What a cycle does with a fetched candidate: the whole policy of a refresh, without I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// No accepted contract yet: the candidate becomes the trusted baseline.
    Register,
    /// Same fingerprint as the accepted contract (or no difference at all).
    Unchanged,
    /// A reviewer already rejected exactly this candidate; it is not queued again.
    Rejected,
    /// The candidate differs: classify it, then decide again with its compatibility.
    Classify,
    /// Compatible and the watch applies compatible drift: compare-and-swap it in.
    Apply,
    /// Compatible, but the watch only reports compatible drift.
    ReportOnly,
    /// Breaking or security-relevant: queue it for a human.
    QueueReview,
}

/// The accepted contract a candidate is compared with, as far as the decision needs it.
#[derive(Debug, Clone, Copy)]
pub struct Accepted<'a> {
    pub fingerprint: &'a str,
}

/// The watch settings the decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct ApplyPolicy {
    pub apply_compatible: bool,
}

/// Decides what to do with a candidate. `compatibility` is `None` until the candidate was
/// classified; a candidate that needs classifying answers [`Decision::Classify`].
pub fn decide(
    current: Option<Accepted<'_>>,
    candidate_fingerprint: &str,
    rejected_before: bool,
    compatibility: Option<Compatibility>,
    policy: ApplyPolicy,
) -> Decision {
    let Some(current) = current else {
        return Decision::Register;
    };
    if current.fingerprint == candidate_fingerprint {
        return Decision::Unchanged;
    }
    if rejected_before {
        return Decision::Rejected;
    }
    match compatibility {
        None => Decision::Classify,
        Some(Compatibility::Identical) => Decision::Unchanged,
        Some(Compatibility::Compatible) if policy.apply_compatible => Decision::Apply,
        Some(Compatibility::Compatible) => Decision::ReportOnly,
        Some(Compatibility::Breaking | Compatibility::SecurityReview) => Decision::QueueReview,
    }
}

/// Why a refresh failed. Each carries its metric class ([`RefreshError::class`]); the message
/// is value-free like the errors it wraps.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error("{0}")]
    Fetch(#[from] fetch::FetchError),
    /// Reading the watch's source (HTTP, file, MCP server, ...).
    #[error("{0}")]
    Source(#[from] sources::LoadError),
    #[error("{0}")]
    Bundle(BundleError),
    #[error("invalid {kind} document: {message}")]
    Invalid { kind: Kind, message: String },
    #[error("{0}")]
    Registry(#[from] RegistryError),
    /// The watch's surface classification file could not be read.
    #[error("{0}")]
    Classification(String),
    /// A combination `decide` never produces; a bug, reported rather than guessed at.
    #[error("internal error: {0}")]
    Internal(String),
    #[error("the registry kept changing under this refresh ({attempts} compare-and-swap attempts lost); it will be retried")]
    Conflict { attempts: usize },
    /// More endpoints than the watch's `max_endpoints`: refused before anything is stored.
    #[error("the contract has {count} endpoints, more than this watch's max_endpoints ({max}); nothing was stored (raise max_endpoints to accept it)")]
    TooManyEndpoints { count: usize, max: usize },
}

impl RefreshError {
    /// The coarse, value-free class of `refresh_errors_total{class}`.
    pub fn class(&self) -> &'static str {
        match self {
            RefreshError::Fetch(e) => fetch_error_class(e),
            RefreshError::Source(e) => e.class(),
            RefreshError::Bundle(e) => bundle_error_class(e),
            RefreshError::Invalid { .. } => "parse",
            RefreshError::Registry(_)
            | RefreshError::Classification(_)
            | RefreshError::Internal(_) => "registry",
            RefreshError::Conflict { .. } => "conflict",
            RefreshError::TooManyEndpoints { .. } => "too_large",
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
    /// The watch's failed refreshes in a row after this cycle (the daemon's backoff).
    #[serde(skip)]
    pub consecutive_failures: i64,
    /// A 304 that changed nothing but `last_checked_at`, with [`refresh_deferring`]: the
    /// time to group-commit (nothing was written).
    #[serde(skip)]
    pub checked_at_deferred: Option<String>,
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
            consecutive_failures: 0,
            checked_at_deferred: None,
        }
    }
}

/// The identity of a source with any URL password removed (it may be a credential): a URL in
/// its normalized form, a file by its canonical absolute path (however `--config` was spelled,
/// docs/reliability.md H10).
pub fn source_identity(source: &SourceConfig) -> String {
    match source {
        SourceConfig::Url(u) => {
            let mut u = u.clone();
            let _ = u.set_password(None);
            format!("url:{u}")
        }
        SourceConfig::Path(p) => format!("path:{}", canonical_path(p).display()),
        SourceConfig::Command { argv, .. } => crate::config::command_identity(argv),
    }
}

/// Changes whose grounds a `pending_review` log line carries; the rest are counted
/// (`grounds_omitted`): 100,000 changes made a 7.3 MB line (docs/reliability.md H11).
pub const LOG_GROUNDS: usize = 20;

fn capped_grounds(mut stamped: serde_json::Value) -> serde_json::Value {
    if let Some(toulmin) = stamped.get_mut("_toulmin").and_then(|t| t.as_object_mut()) {
        let omitted = match toulmin.get_mut("grounds").and_then(|g| g.as_array_mut()) {
            Some(grounds) if grounds.len() > LOG_GROUNDS => {
                let omitted = grounds.len() - LOG_GROUNDS;
                grounds.truncate(LOG_GROUNDS);
                omitted
            }
            _ => 0,
        };
        if omitted > 0 {
            toulmin.insert("grounds_omitted".into(), omitted.into());
        }
    }
    stamped
}

/// `path` canonicalized (symlinks resolved), else made absolute against the working directory.
fn canonical_path(path: &std::path::Path) -> std::path::PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Whether a stored identity names the same source as `current`: equal, or two spellings of
/// one file (an absolute path through a symlink, `.` / `..` segments).
fn same_source(stored: &str, current: &str) -> bool {
    if stored == current {
        return true;
    }
    match (stored.strip_prefix("path:"), current.strip_prefix("path:")) {
        (Some(a), Some(b)) if std::path::Path::new(a).is_absolute() => {
            canonical_path(std::path::Path::new(a)) == std::path::Path::new(b)
        }
        _ => false,
    }
}

/// Rewrites the file identities older releases stored in relative form (`path:pets.json`,
/// relative to where `--config` was spelled from) as canonical absolute paths, when the
/// relative path resolved against the config file's folder (or the working directory, as
/// those releases did) is the watch's file. Returns how many were migrated.
pub fn migrate_identities(
    registry: &mut Registry,
    config: &crate::config::Config,
) -> Result<usize, RegistryError> {
    let folder = config
        .path
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let folder = std::path::absolute(&folder).unwrap_or(folder);
    let mut migrated = 0;
    for watch in &config.watches {
        if !matches!(watch.source, SourceConfig::Path(_)) {
            continue;
        }
        let Some(mut state) = registry.watch_state(&watch.name)? else {
            continue;
        };
        let Some(stored) = state.source_identity.clone() else {
            continue;
        };
        let Some(relative) = stored.strip_prefix("path:").map(std::path::Path::new) else {
            continue;
        };
        if relative.is_absolute() {
            continue;
        }
        let current = source_identity(&watch.source);
        let matches = [
            Some(folder.join(relative)),
            std::path::absolute(relative).ok(),
        ]
        .into_iter()
        .flatten()
        .any(|candidate| format!("path:{}", canonical_path(&candidate).display()) == current);
        if matches {
            tracing::info!(event = "source_identity_migrated", watch = %watch.name, from = %stored, to = %current);
            state.source_identity = Some(current);
            registry.record_watch(&state)?;
            migrated += 1;
        }
    }
    Ok(migrated)
}

/// The classification policy of a watch: its severity overrides (global merged with its own)
/// and, when it has one, its surface classification file (read now).
pub fn watch_policy(watch: &WatchConfig) -> Result<ClassifyPolicy, String> {
    let classification = match &watch.classification {
        Some(path) => Some(SurfaceClassification {
            watch: watch.name.clone(),
            buckets: crate::artifacts::triage::read_classification(path)?,
        }),
        None => None,
    };
    Ok(ClassifyPolicy {
        severity: watch.severity.clone(),
        classification,
    })
}

/// Runs one refresh cycle of `watch` against `registry`.
pub async fn refresh(registry: &mut Registry, watch: &WatchConfig, keep_versions: u32) -> Outcome {
    refresh_with(registry, watch, keep_versions, false).await
}

/// [`refresh`], except that a 304 changing nothing but `last_checked_at` writes nothing and
/// answers the time in [`Outcome::checked_at_deferred`] for the caller to group-commit.
pub async fn refresh_deferring(
    registry: &mut Registry,
    watch: &WatchConfig,
    keep_versions: u32,
) -> Outcome {
    refresh_with(registry, watch, keep_versions, true).await
}

async fn refresh_with(
    registry: &mut Registry,
    watch: &WatchConfig,
    keep_versions: u32,
    defer: bool,
) -> Outcome {
    let mut stats = Stats {
        defer,
        ..Stats::default()
    };
    let mut outcome = refresh_recorded(registry, watch, keep_versions, &mut stats).await;
    outcome.fetched_bytes = stats.fetched_bytes;
    outcome.not_modified = stats.not_modified;
    outcome
}

/// What a cycle observed on the way, for metrics.
#[derive(Default)]
struct Stats {
    fetched_bytes: u64,
    not_modified: bool,
    /// Defer bookkeeping-only writes (the daemon's group commit).
    defer: bool,
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
        Err(error) => {
            let message = error.to_string();
            let mut state = registry
                .watch_state(&watch.name)
                .ok()
                .flatten()
                .unwrap_or_else(|| idle_state(watch));
            state.status = WatchStatus::Error;
            state.last_checked_at = Some(now_rfc3339());
            state.last_error = Some(message.clone());
            state.consecutive_failures += 1;
            if let Err(e) = registry.record_failure(&state, error.class()) {
                tracing::error!(event = "state_write_failed", watch = %watch.name, error = %e);
            }
            // Not logged here: the daemon logs it by streak (`error_log_every`, src/state.rs),
            // `check` prints it in its output.
            let mut outcome = Outcome::new(&watch.name, Action::Error);
            outcome.error = Some(message);
            outcome.error_class = Some(error.class());
            outcome.consecutive_failures = state.consecutive_failures;
            outcome
        }
    }
}

fn idle_state(watch: &WatchConfig) -> WatchState {
    WatchState {
        watch: watch.name.clone(),
        kind: watch.kind.as_str().into(),
        status: WatchStatus::Idle,
        ..WatchState::default()
    }
}

async fn refresh_inner(
    registry: &mut Registry,
    watch: &WatchConfig,
    keep_versions: u32,
    stats: &mut Stats,
) -> Result<Outcome, RefreshError> {
    let identity = source_identity(&watch.source);
    let source_digest = digest_text("schemawatch.source.v1", &identity);
    // One cached point read; the stored spec is parsed (and its fingerprint checked) only on
    // the paths that use it, below.
    let view = registry.conditional(&watch.name, &source_digest)?;
    let stored_state = view.state;
    let mut state = stored_state.clone().unwrap_or_else(|| idle_state(watch));
    let existing = view.fingerprint.is_some();

    if existing {
        if let Some(previous) = &state.source_identity {
            if !same_source(previous, &identity) {
                state.status = WatchStatus::Stale;
                state.last_checked_at = Some(now_rfc3339());
                // Shown redacted (a query value may be a credential), so say what changed
                // when only a redacted part did.
                let (was, now) = (
                    crate::fetch::redact_identity(previous),
                    crate::fetch::redact_identity(&identity),
                );
                let change = if was == now {
                    format!("the watch's source {now} changed in a query value")
                } else {
                    format!("the watch's source changed from {was} to {now}")
                };
                state.last_error = Some(format!(
                    "{change}; run `schemawatch watch reset {}` to compare the new source against the accepted contract",
                    watch.name
                ));
                registry.record_watch(&state)?;
                tracing::warn!(event = "watch_stale", watch = %watch.name);
                let mut outcome = Outcome::new(&watch.name, Action::Stale);
                outcome.error = state.last_error.clone();
                outcome.consecutive_failures = state.consecutive_failures;
                return Ok(outcome);
            }
        }
    }
    state.source_identity = Some(identity);
    state.kind = watch.kind.as_str().into();
    state.last_checked_at = Some(now_rfc3339());

    let stored_validators = if existing {
        view.validators.map(|(etag, last_modified)| Validators {
            etag,
            last_modified,
        })
    } else {
        None
    };
    let started = std::time::Instant::now();
    let source = watch.source.to_source();
    let request = watch.load_request(stored_validators);
    let fetched = sources::load(watch.kind, &source, &request).await?;
    let (bytes, mut validators, final_url) = match fetched {
        FetchOutcome::NotModified => {
            stats.not_modified = true;
            mark_ok(&mut state, WatchStatus::Unchanged, None);
            let mut outcome = Outcome::new(&watch.name, Action::Unchanged);
            // Nothing but the time moved: no write transaction now, a group commit later.
            let only_checked = stored_state.as_ref().is_some_and(|stored| {
                WatchState {
                    last_checked_at: stored.last_checked_at.clone(),
                    ..state.clone()
                } == *stored
            });
            if stats.defer && only_checked && !view.open_review {
                outcome.checked_at_deferred = state.last_checked_at.take();
            } else {
                registry.record_not_modified(&state, view.open_review)?;
            }
            tracing::debug!(event = "refresh", watch = %watch.name, action = "unchanged", not_modified = true);
            return Ok(outcome);
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
        Default::default(),
    )
    .await
    .map_err(|e| match e {
        BundleError::Normalize(e) => RefreshError::Invalid {
            kind: watch.kind,
            message: e.to_string(),
        },
        e => RefreshError::Bundle(e),
    })?;
    stats.fetched_bytes += contract.external_bytes;
    if contract.has_external_refs {
        // No validator shortcut: the root's 304 cannot prove the referenced documents
        // unchanged, so nothing is stored and the next cycle fetches in full.
        validators = Validators::default();
    }
    let spec = contract.spec;
    if spec.endpoints.len() > watch.max_endpoints {
        return Err(RefreshError::TooManyEndpoints {
            count: spec.endpoints.len(),
            max: watch.max_endpoints,
        });
    }
    // The document itself, compressed, so a projection change can re-normalize it
    // (`projection-upgrade`); one with external `$ref`s is not one document: none is kept.
    let source = if contract.has_external_refs {
        StoredSource::none()
    } else {
        StoredSource::of(&bytes)
    };
    drop(bytes);
    let fingerprint = tool_fingerprint(&spec);
    let new_validators = (
        source_digest.as_str(),
        validators.etag.as_deref(),
        validators.last_modified.as_deref(),
    );

    let policy = ApplyPolicy {
        apply_compatible: watch.apply_compatible,
    };
    for _ in 0..CAS_ATTEMPTS {
        // An accepted snapshot stored as this very document reads as the contract just made.
        let current = match &source.digest {
            Some(digest) => registry.tool_given(
                &watch.name,
                Fetched {
                    digest,
                    spec: &spec,
                    fingerprint: &fingerprint,
                },
            )?,
            None => registry.tool(&watch.name)?,
        };
        let accepted = current.as_ref().map(|c| Accepted {
            fingerprint: &c.fingerprint,
        });
        let rejected_before = match &current {
            Some(c) if c.fingerprint != fingerprint => {
                registry.is_rejected(&watch.name, &fingerprint)?
                    // The same document rejected under an older projection is still rejected.
                    || match &source.digest {
                        Some(digest) => {
                            registry.rejected_document(&watch.name, digest, &fingerprint)?
                        }
                        None => false,
                    }
            }
            _ => false,
        };
        // A contract stored before prompts, resources and capabilities were modelled: the
        // same document under the old projection is re-baselined, not reviewed.
        if let Some(c) = &current {
            if let Some(outcome) = rebaseline_mcp(
                registry,
                watch,
                c,
                &spec,
                keep_versions,
                &mut state,
                new_validators,
                &source,
            )? {
                return Ok(outcome);
            }
            if registry.legacy_projection(&watch.name)? {
                if c.fingerprint != fingerprint && !rejected_before {
                    if let Some(outcome) = rebaseline_legacy(
                        registry,
                        watch,
                        c,
                        &spec,
                        keep_versions,
                        &mut state,
                        new_validators,
                        &source,
                    )? {
                        return Ok(outcome);
                    }
                }
                registry.clear_legacy_projection(&watch.name)?;
            }
        }
        let mut decision = decide(accepted, &fingerprint, rejected_before, None, policy);
        let mut classified = None;
        if let (Decision::Classify, Some(current)) = (decision, &current) {
            let classify_policy = watch_policy(watch).map_err(RefreshError::Classification)?;
            let report = classify(&current.spec, &spec, &classify_policy);
            decision = decide(
                accepted,
                &fingerprint,
                rejected_before,
                Some(report.compatibility),
                policy,
            );
            classified = Some(report);
        }
        let base = current.as_ref().map(|c| CasBase {
            registry_version: c.registry_version,
            fingerprint: c.fingerprint.clone(),
        });
        match (decision, base, classified) {
            (Decision::Register, _, _) => {
                mark_ok(&mut state, WatchStatus::Registered, None);
                match registry.apply_with_state(
                    &spec,
                    None,
                    &Provenance::default(),
                    keep_versions,
                    &state,
                    Some(new_validators),
                    &source,
                ) {
                    Ok(version) => {
                        tracing::info!(event = "refresh", watch = %watch.name, action = "registered", registry_version = version);
                        return Ok(Outcome::new(&watch.name, Action::Registered));
                    }
                    Err(RegistryError::Conflict { .. }) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            (Decision::Unchanged, _, classified) => {
                mark_ok(&mut state, WatchStatus::Unchanged, None);
                registry.record_unchanged(&state, Some(new_validators))?;
                // A fingerprint match is logged; a classified "identical" never was.
                if classified.is_none() {
                    tracing::debug!(event = "refresh", watch = %watch.name, action = "unchanged");
                }
                return Ok(Outcome::new(&watch.name, Action::Unchanged));
            }
            (Decision::Rejected, _, _) => {
                mark_ok(&mut state, WatchStatus::Rejected, None);
                registry.record_watch(&state)?;
                tracing::info!(event = "refresh", watch = %watch.name, action = "rejected");
                let mut outcome = Outcome::new(&watch.name, Action::Rejected);
                outcome.review_id = None;
                return Ok(outcome);
            }
            (Decision::Apply, Some(base), Some(report)) => {
                let compatibility = report.compatibility;
                mark_ok(&mut state, WatchStatus::Applied, Some(compatibility));
                let provenance = Provenance {
                    compatibility: Some(compatibility),
                    ..Provenance::default()
                };
                match registry.apply_candidate(
                    &spec,
                    Some(&base),
                    &provenance,
                    keep_versions,
                    &state,
                    Some(new_validators),
                    &source,
                    Some(&report),
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
                    Err(e) => return Err(e.into()),
                }
            }
            (Decision::ReportOnly, _, Some(report)) => {
                let compatibility = report.compatibility;
                // Validators stay at the accepted snapshot so the next cycle refetches.
                mark_ok(&mut state, WatchStatus::ReportOnly, Some(compatibility));
                registry.record_report_only(&state, &report)?;
                tracing::info!(event = "refresh", watch = %watch.name, action = "report_only", change_count = report.changes.len());
                let mut outcome = Outcome::new(&watch.name, Action::ReportOnly);
                outcome.compatibility = Some(compatibility);
                outcome.report = Some(report);
                return Ok(outcome);
            }
            (Decision::QueueReview, Some(base), Some(report)) => {
                let compatibility = report.compatibility;
                mark_ok(&mut state, WatchStatus::PendingReview, Some(compatibility));
                match registry.queue_review(
                    &base,
                    &spec,
                    &report,
                    &state,
                    &source,
                    watch.keep_reviews,
                ) {
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
                        let provenance = capped_grounds(crate::artifacts::provenance::stamp(
                            serde_json::json!({"review_id": id}),
                            &report,
                            &format!("review:{}", watch.name),
                        ));
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
                    Err(e) => return Err(e.into()),
                }
            }
            // `decide` answers Classify, Apply, ReportOnly and QueueReview only when there is an
            // accepted contract, and the last three only after classifying.
            (decision, _, _) => {
                return Err(RefreshError::Internal(format!(
                    "refresh reached decision {decision:?} without its inputs"
                )))
            }
        }
    }
    Err(RefreshError::Conflict {
        attempts: CAS_ATTEMPTS,
    })
}

/// The upgrade from a release that did not model MCP prompts, resources and capabilities: when
/// the accepted contract's capabilities are unknown, the candidate states them, and the
/// candidate without them (tools only) has the accepted fingerprint, the candidate is the same
/// document read more completely. It is applied without review (history reason
/// `projection-upgrade`, reviewer `schemawatch`) and logged at WARN with what was baselined —
/// unless its newly modelled text holds hidden characters, which is classified as drift.
/// Answers `None` when this is not such an upgrade.
#[allow(clippy::too_many_arguments)]
fn rebaseline_mcp(
    registry: &mut Registry,
    watch: &WatchConfig,
    current: &crate::registry::StoredTool,
    spec: &crate::core::model::ToolSpec,
    keep_versions: u32,
    state: &mut WatchState,
    validators: (&str, Option<&str>, Option<&str>),
    source: &StoredSource,
) -> Result<Option<Outcome>, RefreshError> {
    use crate::core::normalize::mcp::tools_only_projection;
    if current.spec.kind != Kind::Mcp
        || current.spec.capabilities.is_some()
        || spec.capabilities.is_none()
    {
        return Ok(None);
    }
    let legacy = tool_fingerprint(&tools_only_projection(spec));
    if legacy != current.fingerprint {
        return rebaseline_mcp_candidate(registry, watch, current, spec, &legacy, state);
    }
    let report = classify(&current.spec, spec, &ClassifyPolicy::default());
    if report
        .changes
        .iter()
        .any(|c| c.rule == crate::core::diff::text::HIDDEN_TEXT_ADDED.id)
    {
        return Ok(None);
    }
    let baselined: Vec<String> = spec
        .endpoints
        .iter()
        .filter(|e| e.method != "TOOL")
        .map(|e| e.name.to_string())
        .collect();
    let Some(version) = apply_projection_upgrade(
        registry,
        current,
        spec,
        keep_versions,
        state,
        validators,
        source,
    )?
    else {
        return Ok(None);
    };
    tracing::warn!(event = "projection_upgrade", watch = %watch.name, registry_version = version,
        baselined = %baselined.join(", "), capabilities = true,
        "MCP prompts, resource templates and capabilities baselined without review");
    Ok(Some(Outcome::new(&watch.name, Action::Unchanged)))
}

/// Applies `spec` as the same document read by a wider projection (no review; history reason
/// `projection-upgrade`, reviewer `schemawatch`): the new registry version, or `None` when
/// someone else moved the contract meanwhile (then it is classified against that as usual).
#[allow(clippy::too_many_arguments)]
fn apply_projection_upgrade(
    registry: &mut Registry,
    current: &crate::registry::StoredTool,
    spec: &crate::core::model::ToolSpec,
    keep_versions: u32,
    state: &mut WatchState,
    validators: (&str, Option<&str>, Option<&str>),
    source: &StoredSource,
) -> Result<Option<i64>, RefreshError> {
    mark_ok(state, WatchStatus::Unchanged, None);
    let provenance = Provenance {
        compatibility: None,
        review_id: None,
        reviewer: Some("schemawatch".into()),
        reason: Some("projection-upgrade".into()),
    };
    match registry.apply_with_state(
        spec,
        Some(&CasBase {
            registry_version: current.registry_version,
            fingerprint: current.fingerprint.clone(),
        }),
        &provenance,
        keep_versions,
        state,
        Some(validators),
        source,
    ) {
        Ok(version) => Ok(Some(version)),
        Err(RegistryError::Conflict { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The same upgrade for a candidate that is not the accepted contract: one a reviewer
/// rejected under the old projection is still `rejected`; one an open review holds keeps that
/// review (same id, still open), its candidate and report replaced by the complete reading.
/// A contract stored by a release before stored sources (migration 0003), fetched in full for
/// the first time since: when every change that is not `info` is one the older, narrower
/// projection could not have seen ([`NEWLY_READ_BY_PROJECTION_2`], or a kept key that was
/// absent), the document is the same one read more completely. It is re-baselined without
/// review (history reason `projection-upgrade`, logged at WARN with what was baselined), never
/// when newly read text holds hidden characters. Anything else is classified as usual.
#[allow(clippy::too_many_arguments)]
fn rebaseline_legacy(
    registry: &mut Registry,
    watch: &WatchConfig,
    current: &crate::registry::StoredTool,
    spec: &crate::core::model::ToolSpec,
    keep_versions: u32,
    state: &mut WatchState,
    validators: (&str, Option<&str>, Option<&str>),
    source: &StoredSource,
) -> Result<Option<Outcome>, RefreshError> {
    use crate::core::diff::rules::NEWLY_READ_BY_PROJECTION_2;
    use crate::core::model::Severity;
    let report = classify(&current.spec, spec, &ClassifyPolicy::default());
    // Server variables are newly read; the same base URLs and transport are the same target.
    let same_target_but_variables = current.spec.remote.variables.is_empty()
        && current.spec.remote.base_urls == spec.remote.base_urls
        && current.spec.remote.transport == spec.remote.transport;
    let newly_read = |c: &crate::core::model::Change| {
        c.severity == Severity::Info
            || NEWLY_READ_BY_PROJECTION_2.contains(&c.rule.as_str())
            || (c.rule == crate::core::diff::EXECUTION_TARGET_CHANGED.id
                && same_target_but_variables)
            || (c.before.is_none()
                && (c.rule == crate::core::diff::EXTENSION_CHANGED.id
                    || c.rule == crate::core::diff::UNCLASSIFIED_CHANGE.id))
    };
    if report.changes.is_empty() || !report.changes.iter().all(newly_read) {
        return Ok(None);
    }
    let baselined: Vec<&str> = report
        .changes
        .iter()
        .take(crate::registry::LOGGED_PATHS)
        .map(|c| c.path.as_str())
        .collect();
    let Some(version) = apply_projection_upgrade(
        registry,
        current,
        spec,
        keep_versions,
        state,
        validators,
        source,
    )?
    else {
        return Ok(None);
    };
    tracing::warn!(event = "projection_upgrade", watch = %watch.name, registry_version = version,
        change_count = report.changes.len(), baselined = %baselined.join(", "),
        "a contract stored by an earlier release, read more completely, baselined without review");
    Ok(Some(Outcome::new(&watch.name, Action::Unchanged)))
}

fn rebaseline_mcp_candidate(
    registry: &mut Registry,
    watch: &WatchConfig,
    current: &crate::registry::StoredTool,
    spec: &crate::core::model::ToolSpec,
    legacy: &str,
    state: &mut WatchState,
) -> Result<Option<Outcome>, RefreshError> {
    if registry.is_rejected(&watch.name, legacy)? {
        mark_ok(state, WatchStatus::Rejected, None);
        registry.record_watch(state)?;
        tracing::warn!(event = "projection_upgrade", watch = %watch.name, action = "rejected",
            "a candidate rejected before the upgrade, read more completely, is still rejected");
        return Ok(Some(Outcome::new(&watch.name, Action::Rejected)));
    }
    let policy = watch_policy(watch).map_err(RefreshError::Classification)?;
    let report = classify(&current.spec, spec, &policy);
    mark_ok(
        state,
        WatchStatus::PendingReview,
        Some(report.compatibility),
    );
    match registry.rebaseline_open_review(&watch.name, legacy, spec, &report, state)? {
        Some(id) => {
            tracing::warn!(event = "projection_upgrade", watch = %watch.name, review_id = id,
                change_count = report.changes.len(),
                "the open review's candidate, read more completely, replaced in place");
            let mut outcome = Outcome::new(&watch.name, Action::PendingReview);
            outcome.compatibility = Some(report.compatibility);
            outcome.review_id = Some(id);
            outcome.report = Some(report);
            Ok(Some(outcome))
        }
        None => Ok(None),
    }
}

fn mark_ok(state: &mut WatchState, status: WatchStatus, compatibility: Option<Compatibility>) {
    state.status = status;
    state.last_error = None;
    state.consecutive_failures = 0;
    if let Some(c) = compatibility {
        state.last_compatibility = Some(c.as_str().into());
    } else if matches!(status, WatchStatus::Unchanged | WatchStatus::Registered) {
        state.last_compatibility = Some(Compatibility::Identical.as_str().into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPLY: ApplyPolicy = ApplyPolicy {
        apply_compatible: true,
    };
    const REPORT: ApplyPolicy = ApplyPolicy {
        apply_compatible: false,
    };

    fn accepted(fingerprint: &str) -> Option<Accepted<'_>> {
        Some(Accepted { fingerprint })
    }

    #[test]
    fn no_accepted_contract_registers_whatever_else_is_known() {
        for c in [None, Some(Compatibility::Breaking)] {
            assert_eq!(decide(None, "sha256:b", true, c, APPLY), Decision::Register);
        }
    }

    #[test]
    fn same_fingerprint_is_unchanged_even_if_once_rejected() {
        assert_eq!(
            decide(accepted("sha256:a"), "sha256:a", true, None, APPLY),
            Decision::Unchanged
        );
    }

    #[test]
    fn a_rejected_candidate_is_never_classified_or_queued_again() {
        for c in [None, Some(Compatibility::SecurityReview)] {
            assert_eq!(
                decide(accepted("sha256:a"), "sha256:b", true, c, APPLY),
                Decision::Rejected
            );
        }
    }

    #[test]
    fn a_new_candidate_is_classified_first() {
        assert_eq!(
            decide(accepted("sha256:a"), "sha256:b", false, None, APPLY),
            Decision::Classify
        );
    }

    #[test]
    fn the_verdict_decides_with_the_watch_policy() {
        let d = |c, p| decide(accepted("sha256:a"), "sha256:b", false, Some(c), p);
        assert_eq!(d(Compatibility::Identical, APPLY), Decision::Unchanged);
        assert_eq!(d(Compatibility::Compatible, APPLY), Decision::Apply);
        assert_eq!(d(Compatibility::Compatible, REPORT), Decision::ReportOnly);
        for p in [APPLY, REPORT] {
            assert_eq!(d(Compatibility::Breaking, p), Decision::QueueReview);
            assert_eq!(d(Compatibility::SecurityReview, p), Decision::QueueReview);
        }
    }

    #[test]
    fn every_error_has_its_metric_class() {
        let cases = [
            (RefreshError::Fetch(fetch::FetchError::Timeout), "timeout"),
            (
                RefreshError::Invalid {
                    kind: Kind::Openapi,
                    message: "x".into(),
                },
                "parse",
            ),
            (RefreshError::Classification("x".into()), "registry"),
            (RefreshError::Conflict { attempts: 5 }, "conflict"),
            (
                RefreshError::Source(sources::LoadError::Database(
                    sources::sqlite::DatabaseError::NotFound {
                        path: "a.db".into(),
                    },
                )),
                "database",
            ),
            (
                RefreshError::Source(sources::LoadError::Database(
                    sources::sqlite::DatabaseError::Timeout,
                )),
                "timeout",
            ),
        ];
        for (error, class) in cases {
            assert_eq!(error.class(), class, "{error}");
        }
        assert_eq!(
            RefreshError::Invalid {
                kind: Kind::Odata,
                message: "bad".into()
            }
            .to_string(),
            "invalid odata document: bad"
        );
    }
}
