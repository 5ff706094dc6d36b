//! One refresh cycle of one watch: fetch (conditionally), normalize, fingerprint, compare with
//! the accepted contract, then register, apply (CAS), queue for review, or leave untouched.
//! A failed fetch or parse never touches the accepted contract.

use crate::config::{SourceConfig, WatchConfig};
use crate::core::diff::{classify, ClassifyPolicy, SurfaceClassification};
use crate::core::event::ErrorClass;
use crate::core::fingerprint::{digest_text, tool_fingerprint};
use crate::core::model::{Compatibility, DriftReport, Kind};
use crate::fetch::openapi_refs::BundleError;
use crate::fetch::{self, FetchOutcome, Validators};
use crate::registry::{
    now_rfc3339, CasBase, Fetched, Provenance, Queued, Registry, RegistryError, SourceValidators,
    StoredSource, WatchState, WatchStatus,
};
use crate::sources::{self, fetch_error_class};

pub mod sunsets;
mod upgrade;
pub mod uses;
use serde::Serialize;
pub use upgrade::migrate_identities;

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
/// Each decision carries what committing it needs, so no combination is impossible.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// No accepted contract yet: the candidate becomes the trusted baseline.
    Register,
    /// Same fingerprint as the accepted contract, or classified identical (`classified`).
    Unchanged { classified: bool },
    /// A reviewer already rejected exactly this candidate; it is not queued again.
    Rejected,
    /// Compatible and the watch applies compatible drift: compare-and-swap it in.
    Apply { base: CasBase, report: DriftReport },
    /// Compatible, but the watch only reports compatible drift.
    ReportOnly { report: DriftReport },
    /// Breaking or security-relevant: queue it for a human.
    QueueReview { base: CasBase, report: DriftReport },
}

impl Decision {
    /// The action a committed decision reports.
    pub fn action(&self) -> Action {
        match self {
            Decision::Register => Action::Registered,
            Decision::Unchanged { .. } => Action::Unchanged,
            Decision::Rejected => Action::Rejected,
            Decision::Apply { .. } => Action::Applied,
            Decision::ReportOnly { .. } => Action::ReportOnly,
            Decision::QueueReview { .. } => Action::PendingReview,
        }
    }
}

/// The accepted contract a candidate is compared with, as far as the decision needs it;
/// `contract` is what `classify` compares with.
#[derive(Debug, Clone, Copy)]
pub struct Accepted<'a, C> {
    pub fingerprint: &'a str,
    pub registry_version: i64,
    pub contract: C,
}

/// The watch settings the decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct ApplyPolicy {
    pub apply_compatible: bool,
    /// `apply_out_of_scope`: a compatible candidate with changes demoted as outside the
    /// consumer's scope is applied too (by default it is report-only).
    pub apply_out_of_scope: bool,
}

/// Decides what to do with a candidate. `classify` compares it with the accepted contract; it
/// is called only when the fingerprints differ and no reviewer rejected the candidate.
pub fn decide<C, E>(
    current: Option<Accepted<'_, C>>,
    candidate_fingerprint: &str,
    rejected_before: bool,
    policy: ApplyPolicy,
    classify: impl FnOnce(C) -> Result<DriftReport, E>,
) -> Result<Decision, E> {
    let Some(current) = current else {
        return Ok(Decision::Register);
    };
    if current.fingerprint == candidate_fingerprint {
        return Ok(Decision::Unchanged { classified: false });
    }
    if rejected_before {
        return Ok(Decision::Rejected);
    }
    let report = classify(current.contract)?;
    let base = CasBase {
        registry_version: current.registry_version,
        fingerprint: current.fingerprint.to_string(),
    };
    Ok(match report.compatibility {
        Compatibility::Identical => Decision::Unchanged { classified: true },
        // Scope never silently moves the accepted contract: demoted drift is only reported.
        Compatibility::Compatible
            if policy.apply_compatible
                && (policy.apply_out_of_scope || report.out_of_scope_count() == 0) =>
        {
            Decision::Apply { base, report }
        }
        Compatibility::Compatible => Decision::ReportOnly { report },
        Compatibility::Breaking | Compatibility::SecurityReview => {
            Decision::QueueReview { base, report }
        }
    })
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
    #[error("the registry kept changing under this refresh ({attempts} compare-and-swap attempts lost); it will be retried")]
    Conflict { attempts: usize },
    /// More endpoints than the watch's `max_endpoints`: refused before anything is stored.
    #[error("the contract has {count} endpoints, more than this watch's max_endpoints ({max}); nothing was stored (raise max_endpoints to accept it)")]
    TooManyEndpoints { count: usize, max: usize },
}

impl RefreshError {
    /// The coarse, value-free class of `refresh_errors_total{class}`.
    pub fn class(&self) -> ErrorClass {
        match self {
            RefreshError::Fetch(e) => fetch_error_class(e),
            RefreshError::Source(e) => e.class(),
            RefreshError::Bundle(e) => bundle_error_class(e),
            RefreshError::Invalid { .. } => ErrorClass::Parse,
            RefreshError::Registry(_) | RefreshError::Classification(_) => ErrorClass::Registry,
            RefreshError::Conflict { .. } => ErrorClass::Conflict,
            RefreshError::TooManyEndpoints { .. } => ErrorClass::TooLarge,
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
    pub error_class: Option<ErrorClass>,
    /// The watch's failed refreshes in a row after this cycle (the daemon's backoff).
    #[serde(skip)]
    pub consecutive_failures: i64,
    /// A 304 that changed nothing but `last_checked_at`, with [`refresh_deferring`]: the
    /// time to group-commit (nothing was written).
    #[serde(skip)]
    pub checked_at_deferred: Option<String>,
    /// The registry version a committed contract change produced (for the log line).
    #[serde(skip)]
    pub registry_version: Option<i64>,
    /// The open review a newly queued one superseded (for the log line).
    #[serde(skip)]
    pub superseded_review: Option<i64>,
}

impl Outcome {
    /// A refresh that could not start: no registry connection (`error` says why). Its class is
    /// `registry`; nothing was fetched or recorded.
    pub fn registry_unavailable(watch: &str, error: String) -> Outcome {
        let mut outcome = Outcome::new(watch, Action::Error);
        outcome.error = Some(error);
        outcome.error_class = Some(crate::core::event::ErrorClass::Registry);
        outcome
    }

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
            registry_version: None,
            superseded_review: None,
        }
    }
}

/// The identity of a source as stored: a URL in its normalized form without its password and
/// with every query value replaced by a keyed digest (`token=hmac:…`: HMAC-SHA256 under the
/// registry's identity key, docs/reliability.md H39), a file by its canonical absolute path
/// (however `--config` was spelled, H10). `key` is asked for only when a URL has a query.
pub fn source_identity(
    source: &SourceConfig,
    key: impl FnOnce() -> Result<[u8; 32], RegistryError>,
) -> Result<String, RegistryError> {
    match source {
        SourceConfig::Url(u) if u.query().is_some_and(|q| !q.is_empty()) => {
            let key = key()?;
            let mut u = u.clone();
            let _ = u.set_password(None);
            let query = u.query().unwrap_or_default().to_string();
            let keyed: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, value)) if !value.is_empty() => {
                        format!("{name}=hmac:{}", keyed_digest(&key, name, value))
                    }
                    _ => pair.to_string(),
                })
                .collect();
            u.set_query(Some(&keyed.join("&")));
            Ok(format!("url:{u}"))
        }
        other => Ok(legacy_source_identity(other)),
    }
}

/// The first 128 bits of HMAC-SHA256 under `key` over a query parameter's name and value.
fn keyed_digest(key: &[u8; 32], name: &str, value: &str) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = match hmac::Hmac::<sha2::Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        // A 32-byte key is always accepted (HMAC takes any length).
        Err(_) => return String::new(),
    };
    mac.update(b"schemawatch.query-value.v1\0");
    mac.update(name.as_bytes());
    mac.update(b"\0");
    mac.update(value.as_bytes());
    let tag = mac.finalize().into_bytes();
    tag[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The identity releases before H39 stored: a URL with its query values as written. Still
/// recognized (an upgraded registry's watches are not `stale`) and rewritten in keyed form.
pub fn legacy_source_identity(source: &SourceConfig) -> String {
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
    let uses = match &watch.uses {
        Some(source) => Some(
            uses::read_uses(source, Some(&watch.name))
                .map_err(|e| format!("watch {:?}: {e}", watch.name))?,
        ),
        None => None,
    };
    Ok(ClassifyPolicy {
        severity: watch.severity.clone(),
        classification,
        uses,
        sunset: watch.policy.clone(),
        date: Some(today()),
    })
}

/// Today (UTC) by the system clock: the check date of a watch's stability policy.
pub fn today() -> crate::core::sunset::Date {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    crate::core::sunset::Date::from_unix_seconds(seconds)
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

fn bundle_error_class(e: &BundleError) -> ErrorClass {
    match e {
        BundleError::Normalize(_) | BundleError::Parse { .. } => ErrorClass::Parse,
        BundleError::TooLarge { .. } => ErrorClass::TooLarge,
        BundleError::Timeout => ErrorClass::Timeout,
        e => e.fetch_error().map_or(ErrorClass::Fetch, fetch_error_class),
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
        Err(error) => failed(registry, watch, error.to_string(), error.class()),
    }
}

/// Records a failed cycle (its state, and `refresh_failed` at the streak's threshold) and
/// answers its outcome: the one place a failure is recorded, whether the refresh returned an
/// error or the daemon abandoned it at its deadline. Not logged here: the daemon logs it by
/// streak (`error_log_every`, src/state.rs), `check` prints it in its output.
pub fn failed(
    registry: &mut Registry,
    watch: &WatchConfig,
    message: String,
    class: ErrorClass,
) -> Outcome {
    let mut state = registry
        .watch_state(&watch.name)
        .ok()
        .flatten()
        .unwrap_or_else(|| idle_state(watch));
    state.status = WatchStatus::Error;
    state.last_checked_at = Some(now_rfc3339());
    state.last_error = Some(message.clone());
    state.consecutive_failures += 1;
    if let Err(e) = registry.record_failure(&state, class) {
        tracing::error!(event = "state_write_failed", watch = %watch.name, error = %e);
    }
    let mut outcome = Outcome::new(&watch.name, Action::Error);
    outcome.error = Some(message);
    outcome.error_class = Some(class);
    outcome.consecutive_failures = state.consecutive_failures;
    outcome
}

fn idle_state(watch: &WatchConfig) -> WatchState {
    WatchState::new(&watch.name, watch.kind)
}

async fn refresh_inner(
    registry: &mut Registry,
    watch: &WatchConfig,
    keep_versions: u32,
    stats: &mut Stats,
) -> Result<Outcome, RefreshError> {
    let identity = source_identity(&watch.source, || registry.identity_key())?;
    let source_digest = digest_text("schemawatch.source.v1", &identity);
    // One cached point read; the stored spec is parsed (and its fingerprint checked) only on
    // the paths that use it, below.
    let view = registry.conditional(&watch.name, &source_digest)?;
    let stored_state = view.state;
    let mut state = stored_state.clone().unwrap_or_else(|| idle_state(watch));
    let existing = view.fingerprint.is_some();

    if existing {
        if let Some(previous) = &state.source_identity {
            // The identity an older release stored (query values as written) names the same
            // source: it is rewritten below, never `stale` (H39).
            let legacy = *previous == legacy_source_identity(&watch.source);
            if !legacy && !same_source(previous, &identity) {
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
    state.kind = watch.kind;
    state.last_checked_at = Some(now_rfc3339());

    let stored_validators = if existing { view.validators } else { None };
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
    let new_validators = SourceValidators {
        source_digest: source_digest.as_str(),
        validators: &validators,
    };

    let policy = ApplyPolicy {
        apply_compatible: watch.apply_compatible,
        apply_out_of_scope: watch.apply_out_of_scope,
    };
    let candidate = Candidate {
        spec: &spec,
        fingerprint: &fingerprint,
        source: &source,
        validators: new_validators,
    };
    for _ in 0..CAS_ATTEMPTS {
        let gathered = gather(registry, watch, &candidate)?;
        // The one-off upgrades of contracts stored by earlier releases (upgrade.rs).
        if let Some(outcome) = upgrade::before_deciding(
            registry,
            watch,
            &gathered,
            &candidate,
            keep_versions,
            &mut state,
        )? {
            return Ok(outcome);
        }
        let accepted = gathered.current.as_ref().map(|c| Accepted {
            fingerprint: &c.fingerprint,
            registry_version: c.registry_version,
            contract: &c.spec,
        });
        let decision = decide(
            accepted,
            &fingerprint,
            gathered.rejected_before,
            policy,
            |current| {
                let classify_policy = watch_policy(watch).map_err(RefreshError::Classification)?;
                if let Some(uses) = classify_policy.uses.as_ref() {
                    let unknown = uses.unknown(current, &spec);
                    if !unknown.is_empty() && !watch.allow_unknown_uses {
                        return Err(RefreshError::Classification(uses::describe_unknown(
                            &watch.name,
                            &unknown,
                            "the accepted contract nor the new one",
                        )));
                    }
                }
                Ok::<_, RefreshError>(classify(current, &spec, &classify_policy))
            },
        )?;
        match commit(
            registry,
            watch,
            decision,
            &candidate,
            keep_versions,
            &mut state,
        )? {
            Some(outcome) => {
                emit(&outcome);
                return Ok(outcome);
            }
            // Lost a compare-and-swap race: gather again and decide against the fresh state.
            None => continue,
        }
    }
    Err(RefreshError::Conflict {
        attempts: CAS_ATTEMPTS,
    })
}

/// The fetched candidate of a cycle, as committing it needs it.
pub(crate) struct Candidate<'a> {
    pub spec: &'a crate::core::model::ToolSpec,
    pub fingerprint: &'a str,
    pub source: &'a StoredSource,
    pub validators: SourceValidators<'a>,
}

/// What a decision needs from the registry, read in one place.
pub(crate) struct Gathered {
    pub current: Option<crate::registry::StoredTool>,
    /// A reviewer rejected this candidate (or its document under an older projection).
    pub rejected_before: bool,
}

fn gather(
    registry: &mut Registry,
    watch: &WatchConfig,
    candidate: &Candidate<'_>,
) -> Result<Gathered, RefreshError> {
    // An accepted snapshot stored as this very document reads as the contract just made.
    let current = match &candidate.source.digest {
        Some(digest) => registry.tool_given(
            &watch.name,
            Fetched {
                digest,
                spec: candidate.spec,
                fingerprint: candidate.fingerprint,
            },
        )?,
        None => registry.tool(&watch.name)?,
    };
    let rejected_before = match &current {
        Some(c) if c.fingerprint != candidate.fingerprint => {
            registry.is_rejected(&watch.name, candidate.fingerprint)?
                // The same document rejected under an older projection is still rejected.
                || match &candidate.source.digest {
                    Some(digest) => {
                        registry.rejected_document(&watch.name, digest, candidate.fingerprint)?
                    }
                    None => false,
                }
        }
        _ => false,
    };
    Ok(Gathered {
        current,
        rejected_before,
    })
}

/// Commits a decision with one registry call. `None`: a compare-and-swap race was lost and
/// nothing was written.
fn commit(
    registry: &mut Registry,
    watch: &WatchConfig,
    decision: Decision,
    candidate: &Candidate<'_>,
    keep_versions: u32,
    state: &mut WatchState,
) -> Result<Option<Outcome>, RefreshError> {
    let mut outcome = Outcome::new(&watch.name, decision.action());
    let result = match decision {
        Decision::Register => {
            mark_ok(state, WatchStatus::Registered, None);
            registry
                .apply_candidate(
                    candidate.spec,
                    None,
                    &Provenance::default(),
                    keep_versions,
                    state,
                    Some(candidate.validators),
                    candidate.source,
                    None,
                )
                .map(|version| outcome.registry_version = Some(version))
        }
        Decision::Unchanged { classified } => {
            mark_ok(state, WatchStatus::Unchanged, None);
            registry.record_unchanged(state, Some(candidate.validators))?;
            // A fingerprint match is logged; a classified "identical" never was.
            if !classified {
                tracing::debug!(event = "refresh", watch = %watch.name, action = "unchanged");
            }
            return Ok(Some(Outcome::new(&watch.name, Action::Unchanged)));
        }
        Decision::Rejected => {
            mark_ok(state, WatchStatus::Rejected, None);
            registry.record_watch(state)
        }
        Decision::Apply { base, report } => {
            let compatibility = report.compatibility;
            mark_ok(state, WatchStatus::Applied, Some(compatibility));
            let provenance = Provenance {
                compatibility: Some(compatibility),
                ..Provenance::default()
            };
            let r = registry.apply_candidate(
                candidate.spec,
                Some(&base),
                &provenance,
                keep_versions,
                state,
                Some(candidate.validators),
                candidate.source,
                Some(&report),
            );
            outcome.compatibility = Some(compatibility);
            outcome.report = Some(report);
            r.map(|version| outcome.registry_version = Some(version))
        }
        Decision::ReportOnly { report } => {
            // Validators stay at the accepted snapshot so the next cycle refetches.
            mark_ok(state, WatchStatus::ReportOnly, Some(report.compatibility));
            registry.record_report_only(state, &report)?;
            outcome.compatibility = Some(report.compatibility);
            outcome.report = Some(report);
            Ok(())
        }
        Decision::QueueReview { base, report } => {
            let compatibility = report.compatibility;
            mark_ok(state, WatchStatus::PendingReview, Some(compatibility));
            let r = registry.queue_review(
                &base,
                candidate.spec,
                &report,
                state,
                candidate.source,
                watch.keep_reviews,
            );
            outcome.compatibility = Some(compatibility);
            outcome.report = Some(report);
            r.map(|queued| match queued {
                Queued::New { id, superseded } => {
                    outcome.review_id = Some(id);
                    outcome.superseded_review = superseded;
                }
                Queued::AlreadyOpen { id } => outcome.review_id = Some(id),
            })
        }
    };
    match result {
        Ok(()) => Ok(Some(outcome)),
        Err(RegistryError::Conflict { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The log line of a committed cycle (metrics, status cells and events have their own
/// sinks: the daemon's outcome handling and the registry's event log).
fn emit(outcome: &Outcome) {
    let watch = &outcome.watch;
    let changes = outcome.report.as_ref().map_or(0, |r| r.changes.len());
    match outcome.action {
        Action::Registered => {
            tracing::info!(event = "refresh", watch = %watch, action = "registered", registry_version = outcome.registry_version.unwrap_or(0));
        }
        Action::Applied => {
            tracing::info!(event = "refresh", watch = %watch, action = "applied",
                compatibility = "compatible", change_count = changes, registry_version = outcome.registry_version.unwrap_or(0));
        }
        Action::Rejected => {
            tracing::info!(event = "refresh", watch = %watch, action = "rejected");
        }
        Action::ReportOnly => {
            tracing::info!(event = "refresh", watch = %watch, action = "report_only", change_count = changes);
        }
        Action::PendingReview => {
            let (Some(id), Some(report)) = (outcome.review_id, &outcome.report) else {
                return;
            };
            if let Some(old) = outcome.superseded_review {
                tracing::info!(event = "review_superseded", watch = %watch, review_id = old, superseded_by = id);
            }
            // The payload carries the verdict's reasoning (`_toulmin`, `_tags`).
            let provenance = capped_grounds(crate::artifacts::provenance::stamp(
                serde_json::json!({"review_id": id}),
                report,
                &format!("review:{watch}"),
            ));
            tracing::warn!(event = "pending_review", watch = %watch, review_id = id,
                compatibility = report.compatibility.as_str(), change_count = changes,
                provenance = %provenance);
        }
        Action::Unchanged | Action::Error | Action::Stale => {}
    }
}

fn mark_ok(state: &mut WatchState, status: WatchStatus, compatibility: Option<Compatibility>) {
    state.status = status;
    state.last_error = None;
    state.consecutive_failures = 0;
    if let Some(c) = compatibility {
        state.last_compatibility = Some(c);
    } else if matches!(status, WatchStatus::Unchanged | WatchStatus::Registered) {
        state.last_compatibility = Some(Compatibility::Identical);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPLY: ApplyPolicy = ApplyPolicy {
        apply_compatible: true,
        apply_out_of_scope: false,
    };
    const REPORT: ApplyPolicy = ApplyPolicy {
        apply_compatible: false,
        apply_out_of_scope: false,
    };

    fn accepted(fingerprint: &str) -> Option<Accepted<'_, ()>> {
        Some(Accepted {
            fingerprint,
            registry_version: 7,
            contract: (),
        })
    }

    fn report(compatibility: Compatibility) -> DriftReport {
        DriftReport {
            compatibility,
            old_fingerprint: "sha256:a".into(),
            new_fingerprint: "sha256:b".into(),
            changes: Vec::new(),
        }
    }

    /// A classification that must not happen.
    fn never(_: ()) -> Result<DriftReport, &'static str> {
        Err("classified")
    }

    #[test]
    fn no_accepted_contract_registers_whatever_else_is_known() {
        for rejected in [false, true] {
            assert_eq!(
                decide(None, "sha256:b", rejected, APPLY, never),
                Ok(Decision::Register)
            );
        }
    }

    #[test]
    fn same_fingerprint_is_unchanged_even_if_once_rejected() {
        assert_eq!(
            decide(accepted("sha256:a"), "sha256:a", true, APPLY, never),
            Ok(Decision::Unchanged { classified: false })
        );
    }

    #[test]
    fn a_rejected_candidate_is_never_classified_or_queued_again() {
        assert_eq!(
            decide(accepted("sha256:a"), "sha256:b", true, APPLY, never),
            Ok(Decision::Rejected)
        );
    }

    #[test]
    fn a_new_candidate_is_classified_and_a_failed_classification_decides_nothing() {
        assert_eq!(
            decide(accepted("sha256:a"), "sha256:b", false, APPLY, never),
            Err("classified")
        );
    }

    #[test]
    fn the_verdict_decides_with_the_watch_policy_and_carries_its_inputs() {
        let d = |c, p| {
            decide(accepted("sha256:a"), "sha256:b", false, p, |()| {
                Ok::<_, ()>(report(c))
            })
            .unwrap()
        };
        let base = CasBase {
            registry_version: 7,
            fingerprint: "sha256:a".into(),
        };
        assert_eq!(
            d(Compatibility::Identical, APPLY),
            Decision::Unchanged { classified: true }
        );
        assert_eq!(
            d(Compatibility::Compatible, APPLY),
            Decision::Apply {
                base: base.clone(),
                report: report(Compatibility::Compatible)
            }
        );
        assert_eq!(
            d(Compatibility::Compatible, REPORT),
            Decision::ReportOnly {
                report: report(Compatibility::Compatible)
            }
        );
        for p in [APPLY, REPORT] {
            for c in [Compatibility::Breaking, Compatibility::SecurityReview] {
                assert_eq!(
                    d(c, p),
                    Decision::QueueReview {
                        base: base.clone(),
                        report: report(c)
                    }
                );
            }
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
            assert_eq!(error.class().as_str(), class, "{error}");
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
