//! The SQLite registry: accepted contracts, their history, watch state, HTTP validators,
//! reviews and rejected candidates.
//!
//! Invariants: every write is one `BEGIN IMMEDIATE` transaction (so a failed write leaves
//! nothing behind); `registry_version` is bumped exactly once per committed mutation of contract
//! state; an apply is a compare-and-swap on the tool's (registry_version, fingerprint); stored
//! rows are validated when read, and a corrupt or mis-keyed row fails closed.

mod conditional;
pub mod failpoint;
mod listing;
mod migrate;
mod state;

pub use conditional::Conditional;
pub use listing::ReviewHead;
pub use state::{ReviewState, WatchStatus};

use crate::core::fingerprint::{tool_fingerprint, FINGERPRINT_VERSION};
use crate::core::json::to_canonical_string;
use crate::core::model::{Compatibility, DriftReport, ToolSpec};
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("registry database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("registry integrity check failed: {0}")]
    Corrupt(String),
    #[error("registry row {table}/{key} is invalid: {problem}")]
    BadRow {
        table: &'static str,
        key: String,
        problem: String,
    },
    #[error(
        "registry schema version {found} is newer than this schemawatch supports ({supported})"
    )]
    TooNew { found: i64, supported: i64 },
    /// A read-only open cannot migrate an older registry; open it once read-write.
    #[error(
        "registry schema version {found} is older than this schemawatch's ({supported}); a read-only open does not migrate it: run any read-write command (e.g. `schemawatch status`) on it first"
    )]
    TooOld { found: i64, supported: i64 },
    #[error("compare-and-swap failed for {tool}: the registry moved since it was read")]
    Conflict { tool: String },
    #[error("review {id} not found")]
    ReviewNotFound { id: i64 },
    #[error("review {id} is superseded: {why}")]
    Superseded { id: i64, why: String },
    #[error("injected failure at failpoint {0}")]
    Failpoint(&'static str),
    /// No registry file at the configured path, and creating one is not allowed
    /// (`[storage] create = false`, or a connection opened after the process started).
    #[error("no registry at {path} (it is created only when none exists at startup and `[storage] create` is not false)")]
    Missing { path: String },
    /// The file exists but is empty or not a schemawatch registry: never taken as a new one.
    #[error("{path} is not a schemawatch registry ({why}); refusing to use or overwrite it")]
    NotARegistry { path: String, why: String },
    /// The file at the configured path is no longer the one opened at startup (deleted or
    /// replaced): the daemon fails closed instead of writing elsewhere or starting afresh.
    #[error("the registry file {path} was {what} while the daemon was running; refreshes stopped (restart the daemon once it is restored)")]
    Replaced { path: String, what: &'static str },
    #[error("cannot read registry file {path}: {source}")]
    Stat {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot create registry folder {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, RegistryError>;

/// The accepted contract of one tool.
#[derive(Debug, Clone)]
pub struct StoredTool {
    pub name: String,
    pub version: i64,
    /// The registry version at which this snapshot was committed (the CAS base).
    pub registry_version: i64,
    pub fingerprint: String,
    pub spec: ToolSpec,
    pub applied_at: String,
}

/// What an apply compares against: `None` means "the tool must not exist yet".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasBase {
    pub registry_version: i64,
    pub fingerprint: String,
}

/// Who applied a version and why (reviews carry reviewer and reason).
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    pub compatibility: Option<Compatibility>,
    pub review_id: Option<i64>,
    pub reviewer: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HistoryEntry {
    pub version: i64,
    pub registry_version: i64,
    pub fingerprint: String,
    pub applied_at: String,
    pub compatibility: Option<String>,
    pub review_id: Option<i64>,
    pub reviewer: Option<String>,
    pub reason: Option<String>,
    /// The ids (`chg1:…`) of the changes a reviewer accepted with `pending accept` (empty for
    /// registered and applied versions, and for versions accepted by older releases).
    pub accepted_changes: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct WatchState {
    pub watch: String,
    pub kind: String,
    pub status: WatchStatus,
    pub last_compatibility: Option<String>,
    pub last_checked_at: Option<String>,
    pub last_error: Option<String>,
    pub consecutive_failures: i64,
    pub source_identity: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Review {
    pub id: i64,
    pub watch: String,
    pub state: ReviewState,
    pub compatibility: String,
    pub change_count: i64,
    pub created_at: String,
    pub base_registry_version: i64,
    pub base_fingerprint: Option<String>,
    pub candidate_fingerprint: String,
    pub candidate: ToolSpec,
    pub report: DriftReport,
    pub decided_at: Option<String>,
    pub reviewer: Option<String>,
    pub reason: Option<String>,
}

/// The result of queueing a candidate for review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Queued {
    /// A new open review (the previous open one, if any, is now superseded).
    New { id: i64, superseded: Option<i64> },
    /// The same candidate is already open: nothing written.
    AlreadyOpen { id: i64 },
}

pub struct Registry {
    conn: Connection,
}

/// A reviewer and a reason are shown and logged: control characters (a newline forging a
/// log line, an escape sequence) are refused (docs/reliability.md H11).
pub fn check_decision_text(reviewer: &str, reason: &str) -> std::result::Result<(), String> {
    for (what, text) in [("reviewer", reviewer), ("reason", reason)] {
        if text.chars().any(char::is_control) {
            return Err(format!(
                "{what} must not contain control characters (such as a newline)"
            ));
        }
    }
    Ok(())
}

/// The current UTC time as RFC 3339 with seconds precision.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

impl Registry {
    /// Opens (creating if needed) the registry at `path`: WAL, foreign keys, busy timeout,
    /// `quick_check`, migrations, and re-fingerprinting of snapshots from older projections.
    pub fn open(path: &Path) -> Result<Registry> {
        Registry::open_or_create(path, true)
    }

    /// Opens the registry at `path`; when no file exists there and `create` is true, creates
    /// it first (atomically: built aside, then linked into place, so an existing file is always
    /// a complete registry). An empty or foreign file is [`RegistryError::NotARegistry`].
    pub fn open_or_create(path: &Path, create: bool) -> Result<Registry> {
        match std::fs::symlink_metadata(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !create {
                    return Err(RegistryError::Missing {
                        path: path.display().to_string(),
                    });
                }
                Registry::create_at(path)?;
            }
            Err(source) => {
                return Err(RegistryError::Stat {
                    path: path.display().to_string(),
                    source,
                })
            }
        }
        Registry::open_existing(path)
    }

    /// Builds a new registry next to `path` and links it into place unless a file appeared
    /// there meanwhile (another process created it: that one is used).
    fn create_at(path: &Path) -> Result<()> {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(parent) = parent {
            std::fs::create_dir_all(parent).map_err(|source| RegistryError::CreateDir {
                path: parent.display().to_string(),
                source,
            })?;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "registry".into());
        let scratch = path.with_file_name(format!(".{name}.new-{}", std::process::id()));
        let cleanup = |p: &Path| {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut s = p.as_os_str().to_owned();
                s.push(suffix);
                let _ = std::fs::remove_file(PathBuf::from(s));
            }
        };
        cleanup(&scratch);
        {
            let mut conn = Connection::open(&scratch)?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "FULL")?;
            migrate::run(&mut conn)?;
            // Closing checkpoints the WAL into the file and removes it, so the one file linked
            // into place holds everything and is already in WAL mode: processes opening it
            // concurrently never race to switch journal modes.
        }
        let linked = match std::fs::hard_link(&scratch, path) {
            // A file system without hard links: a rename, unless a file appeared meanwhile
            // (a narrow race, where the link is atomic).
            Err(e)
                if e.kind() != std::io::ErrorKind::AlreadyExists
                    && std::fs::symlink_metadata(path).is_err() =>
            {
                std::fs::rename(&scratch, path)
            }
            other => other,
        };
        cleanup(&scratch);
        match linked {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(RegistryError::CreateDir {
                path: path.display().to_string(),
                source: e,
            }),
        }
    }

    /// Opens an existing registry; never creates one (the daemon's later connections).
    pub fn open_existing(path: &Path) -> Result<Registry> {
        let not_ours = |why: &str| RegistryError::NotARegistry {
            path: path.display().to_string(),
            why: why.into(),
        };
        match std::fs::metadata(path) {
            Ok(m) if !m.is_file() => return Err(not_ours("not a regular file")),
            Ok(m) if m.len() == 0 => return Err(not_ours("the file is empty")),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RegistryError::Missing {
                    path: path.display().to_string(),
                })
            }
            Err(_) => {}
        }
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // Before the first read: another process may hold the lock (a migration, a write).
        conn.busy_timeout(Duration::from_secs(10))?;
        let version: i64 = match conn.query_row("PRAGMA user_version", [], |r| r.get(0)) {
            Ok(v) => v,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::NotADatabase =>
            {
                return Err(not_ours("not an SQLite database"))
            }
            Err(e) => return Err(e.into()),
        };
        if version == 0 {
            return Err(not_ours("an SQLite database without schemawatch's schema"));
        }
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a commit acknowledged to the user survives power loss (docs/reliability.md §3).
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(RegistryError::Corrupt(check));
        }
        let mut registry = Registry { conn };
        migrate::run(&mut registry.conn)?;
        registry.refingerprint_outdated()?;
        Ok(registry)
    }

    /// Opens an existing registry read-only (for inspection): no migration, no writes. A
    /// registry whose schema is not the current one is refused.
    pub fn open_read_only(path: &Path) -> Result<Registry> {
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(10))?;
        let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(RegistryError::Corrupt(check));
        }
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let supported = migrate::latest();
        if version > supported {
            return Err(RegistryError::TooNew {
                found: version,
                supported,
            });
        }
        if version < supported {
            return Err(RegistryError::TooOld {
                found: version,
                supported,
            });
        }
        Ok(Registry { conn })
    }

    /// Every retained snapshot of a tool, oldest first: (contract version, compatibility it was
    /// applied with, contract).
    pub fn snapshots(&self, tool: &str) -> Result<Vec<(i64, Option<String>, ToolSpec)>> {
        let mut stmt = self.conn.prepare(
            "SELECT version, compatibility, spec_json FROM tool_versions WHERE tool = ?1 ORDER BY version",
        )?;
        let rows: Vec<(i64, Option<String>, String)> = stmt
            .query_map([tool], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        rows.into_iter()
            .map(|(version, compatibility, json)| {
                let spec = parse_spec("tool_versions", &format!("{tool}@{version}"), &json)?;
                Ok((version, compatibility, spec))
            })
            .collect()
    }

    fn write_tx(&mut self) -> Result<Transaction<'_>> {
        Ok(self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }

    pub fn registry_version(&self) -> Result<i64> {
        Ok(self.conn.query_row(
            "SELECT registry_version FROM registry_head WHERE id = 1",
            [],
            |r| r.get(0),
        )?)
    }

    pub fn tool(&self, name: &str) -> Result<Option<StoredTool>> {
        read_tool(&self.conn, name)
    }

    /// Every accepted tool, in registration order.
    pub fn tools(&self) -> Result<Vec<StoredTool>> {
        let names: Vec<String> = self
            .conn
            .prepare("SELECT name FROM tools ORDER BY position, name")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        names
            .iter()
            .filter_map(|n| read_tool(&self.conn, n).transpose())
            .collect()
    }

    /// Compare-and-swap apply: stores `spec` as the tool's next version if the tool is still at
    /// `expected` (or absent, for `None`). Returns the new registry version.
    pub fn apply(
        &mut self,
        spec: &ToolSpec,
        expected: Option<&CasBase>,
        provenance: &Provenance,
        keep_versions: u32,
    ) -> Result<i64> {
        let tx = self.write_tx()?;
        let version = apply_in(&tx, spec, expected, provenance, keep_versions)?;
        tx.commit()?;
        Ok(version)
    }

    pub fn history(&self, tool: &str) -> Result<Vec<HistoryEntry>> {
        let mut stmt = self.conn.prepare(
            "SELECT version, registry_version, fingerprint, applied_at, compatibility, review_id, reviewer, reason,
                    accepted_changes
             FROM tool_versions WHERE tool = ?1 ORDER BY version DESC",
        )?;
        let rows = stmt.query_map([tool], |r| {
            let accepted: Option<String> = r.get(8)?;
            Ok((
                HistoryEntry {
                    version: r.get(0)?,
                    registry_version: r.get(1)?,
                    fingerprint: r.get(2)?,
                    applied_at: r.get(3)?,
                    compatibility: r.get(4)?,
                    review_id: r.get(5)?,
                    reviewer: r.get(6)?,
                    reason: r.get(7)?,
                    accepted_changes: Vec::new(),
                },
                accepted,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (mut entry, accepted) = row?;
            if let Some(text) = accepted {
                entry.accepted_changes =
                    serde_json::from_str(&text).map_err(|e| RegistryError::BadRow {
                        table: "tool_versions",
                        key: format!("{tool}/{}", entry.version),
                        problem: format!("accepted_changes: {e}"),
                    })?;
            }
            out.push(entry);
        }
        Ok(out)
    }

    pub fn watch_state(&self, watch: &str) -> Result<Option<WatchState>> {
        Ok(self
            .conn
            .query_row(
                "SELECT watch, kind, status, last_compatibility, last_checked_at, last_error,
                        consecutive_failures, source_identity
                 FROM watch_state WHERE watch = ?1",
                [watch],
                |r| {
                    Ok(WatchState {
                        watch: r.get(0)?,
                        kind: r.get(1)?,
                        status: r.get(2)?,
                        last_compatibility: r.get(3)?,
                        last_checked_at: r.get(4)?,
                        last_error: r.get(5)?,
                        consecutive_failures: r.get(6)?,
                        source_identity: r.get(7)?,
                    })
                },
            )
            .optional()?)
    }

    /// Records a watch's bookkeeping after a cycle (not contract state: no version bump).
    pub fn record_watch(&mut self, state: &WatchState) -> Result<()> {
        let tx = self.write_tx()?;
        upsert_watch(&tx, state)?;
        tx.commit()?;
        Ok(())
    }

    pub fn validators(
        &self,
        watch: &str,
        source_digest: &str,
    ) -> Result<Option<(Option<String>, Option<String>)>> {
        Ok(self
            .conn
            .query_row(
                "SELECT etag, last_modified FROM validators WHERE watch = ?1 AND source_digest = ?2",
                [watch, source_digest],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    /// Applies (or registers) a candidate and records the watch state and validators in the
    /// same transaction.
    #[allow(clippy::too_many_arguments)]
    pub fn apply_with_state(
        &mut self,
        spec: &ToolSpec,
        expected: Option<&CasBase>,
        provenance: &Provenance,
        keep_versions: u32,
        state: &WatchState,
        validators: Option<(&str, Option<&str>, Option<&str>)>,
    ) -> Result<i64> {
        failpoint::hit("apply.begin")?;
        let tx = self.write_tx()?;
        let version = apply_in(&tx, spec, expected, provenance, keep_versions)?;
        failpoint::hit("apply.after_snapshot")?;
        supersede_open_reviews(&tx, &state.watch)?;
        upsert_watch(&tx, state)?;
        if let Some((digest, etag, last_modified)) = validators {
            store_validators(&tx, &state.watch, digest, etag, last_modified)?;
        }
        failpoint::hit("apply.after_state")?;
        tx.commit()?;
        failpoint::hit("apply.after_commit")?;
        Ok(version)
    }

    /// Records an `unchanged` result: state plus (advanced) validators, one transaction.
    pub fn record_unchanged(
        &mut self,
        state: &WatchState,
        validators: Option<(&str, Option<&str>, Option<&str>)>,
    ) -> Result<()> {
        let tx = self.write_tx()?;
        // The source is back at the accepted contract: an open review no longer describes it.
        supersede_open_reviews(&tx, &state.watch)?;
        upsert_watch(&tx, state)?;
        if let Some((digest, etag, last_modified)) = validators {
            store_validators(&tx, &state.watch, digest, etag, last_modified)?;
        }
        failpoint::hit("unchanged.before_commit")?;
        tx.commit()?;
        Ok(())
    }

    pub fn is_rejected(&self, watch: &str, fingerprint: &str) -> Result<bool> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM rejected_candidates WHERE watch = ?1 AND fingerprint = ?2",
                [watch, fingerprint],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// Queues a candidate for review, in one transaction with the watch state. The base is
    /// checked first (CAS): if the tool moved since it was compared, `Conflict`.
    pub fn queue_review(
        &mut self,
        base: &CasBase,
        candidate: &ToolSpec,
        report: &DriftReport,
        state: &WatchState,
    ) -> Result<Queued> {
        failpoint::hit("review.begin")?;
        let tx = self.write_tx()?;
        let current = read_tool(&tx, &candidate_key(candidate))?;
        let matches = current.as_ref().is_some_and(|t| {
            t.registry_version == base.registry_version && t.fingerprint == base.fingerprint
        });
        if !matches {
            return Err(RegistryError::Conflict {
                tool: candidate_key(candidate),
            });
        }
        let open: Option<(i64, String)> = tx
            .query_row(
                "SELECT id, candidate_fingerprint FROM reviews WHERE watch = ?1 AND state = ?2",
                params![&state.watch, ReviewState::Open],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let result = match open {
            Some((id, fp)) if fp == report.new_fingerprint => Queued::AlreadyOpen { id },
            other => {
                let now = now_rfc3339();
                let superseded = match other {
                    Some((old_id, _)) => {
                        tx.execute(
                            "UPDATE reviews SET state = ?3, decided_at = ?2 WHERE id = ?1",
                            params![old_id, now, ReviewState::Superseded],
                        )?;
                        Some(old_id)
                    }
                    None => None,
                };
                tx.execute(
                    "INSERT INTO reviews (watch, state, compatibility, change_count, created_at,
                        base_registry_version, base_fingerprint, candidate_fingerprint, fingerprint_version,
                        candidate_spec_json, report_json)
                     VALUES (?1, ?11, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    params![
                        state.watch,
                        report.compatibility.as_str(),
                        report.change_count() as i64,
                        now,
                        base.registry_version,
                        base.fingerprint,
                        report.new_fingerprint,
                        FINGERPRINT_VERSION,
                        spec_json(candidate),
                        report_json(report),
                        ReviewState::Open,
                    ],
                )?;
                let id = tx.last_insert_rowid();
                failpoint::hit("review.after_insert")?;
                Queued::New { id, superseded }
            }
        };
        upsert_watch(&tx, state)?;
        failpoint::hit("review.before_commit")?;
        tx.commit()?;
        failpoint::hit("review.after_commit")?;
        Ok(result)
    }

    /// The upgrade of an open review whose candidate was stored under an older projection: the
    /// same candidate, read more completely, replaces it in place (same id, still open), with
    /// its new report, when the review is still open on `old_candidate`. Answers the review id,
    /// or `None` when there is no such open review. The watch state is written with it.
    pub fn rebaseline_open_review(
        &mut self,
        watch: &str,
        old_candidate: &str,
        candidate: &ToolSpec,
        report: &DriftReport,
        state: &WatchState,
    ) -> Result<Option<i64>> {
        let tx = self.write_tx()?;
        let id: Option<i64> = tx
            .query_row(
                "SELECT id FROM reviews WHERE watch = ?1 AND state = ?2 AND candidate_fingerprint = ?3",
                params![watch, ReviewState::Open, old_candidate],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = id {
            tx.execute(
                "UPDATE reviews SET candidate_fingerprint = ?2, fingerprint_version = ?3,
                    candidate_spec_json = ?4, report_json = ?5, compatibility = ?6, change_count = ?7
                 WHERE id = ?1",
                params![
                    id,
                    report.new_fingerprint,
                    FINGERPRINT_VERSION,
                    spec_json(candidate),
                    report_json(report),
                    report.compatibility.as_str(),
                    report.change_count() as i64,
                ],
            )?;
            upsert_watch(&tx, state)?;
            tx.commit()?;
        }
        Ok(id)
    }

    pub fn open_review_for(&self, watch: &str) -> Result<Option<i64>> {
        Ok(self
            .conn
            .query_row(
                "SELECT id FROM reviews WHERE watch = ?1 AND state = ?2",
                params![watch, ReviewState::Open],
                |r| r.get(0),
            )
            .optional()?)
    }

    pub fn review(&self, id: i64) -> Result<Review> {
        read_review(&self.conn, id)?.ok_or(RegistryError::ReviewNotFound { id })
    }

    /// Reviews, newest first; `open_only` limits to open ones.
    pub fn reviews(&self, open_only: bool) -> Result<Vec<Review>> {
        // Without a state filter `?1` is NULL and every review matches.
        let only: Option<ReviewState> = open_only.then_some(ReviewState::Open);
        let ids: Vec<i64> = self
            .conn
            .prepare("SELECT id FROM reviews WHERE (?1 IS NULL OR state = ?1) ORDER BY id DESC")?
            .query_map([only], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        ids.into_iter()
            .map(|id| read_review(&self.conn, id)?.ok_or(RegistryError::ReviewNotFound { id }))
            .collect()
    }

    /// Accepts an open review: applies its candidate by CAS against the base it was compared
    /// with. Not open, or base moved: `Superseded`, and nothing is written.
    pub fn accept(
        &mut self,
        id: i64,
        reviewer: &str,
        reason: &str,
        keep_versions: u32,
    ) -> Result<i64> {
        let tx = self.write_tx()?;
        let review = read_review(&tx, id)?.ok_or(RegistryError::ReviewNotFound { id })?;
        if review.state != ReviewState::Open {
            return Err(RegistryError::Superseded {
                id,
                why: format!("the review is {}", review.state),
            });
        }
        let base = review.base_fingerprint.clone().map(|fingerprint| CasBase {
            registry_version: review.base_registry_version,
            fingerprint,
        });
        let provenance = Provenance {
            compatibility: Some(review.report.compatibility),
            review_id: Some(id),
            reviewer: Some(reviewer.to_string()),
            reason: Some(reason.to_string()),
        };
        let version = match apply_in(
            &tx,
            &review.candidate,
            base.as_ref(),
            &provenance,
            keep_versions,
        ) {
            Ok(v) => v,
            Err(RegistryError::Conflict { .. }) => {
                return Err(RegistryError::Superseded {
                    id,
                    why: "the accepted contract moved since this review was queued".into(),
                })
            }
            Err(e) => return Err(e),
        };
        failpoint::hit("accept.after_apply")?;
        let accepted: Vec<String> = review
            .report
            .changes
            .iter()
            .map(crate::core::report::change_id)
            .collect();
        tx.execute(
            "UPDATE tool_versions SET accepted_changes = ?1 WHERE registry_version = ?2",
            params![
                serde_json::to_string(&accepted).unwrap_or_default(),
                version
            ],
        )?;
        let now = now_rfc3339();
        tx.execute(
            "UPDATE reviews SET state = ?5, decided_at = ?2, reviewer = ?3, reason = ?4 WHERE id = ?1",
            params![id, now, reviewer, reason, ReviewState::Accepted],
        )?;
        tx.execute(
            "UPDATE watch_state SET status = ?3, last_compatibility = ?2 WHERE watch = ?1",
            params![review.watch, review.compatibility, WatchStatus::Applied],
        )?;
        // The validators of the accepted document are unknown here; the next cycle refetches.
        tx.execute("DELETE FROM validators WHERE watch = ?1", [&review.watch])?;
        failpoint::hit("accept.before_commit")?;
        tx.commit()?;
        failpoint::hit("accept.after_commit")?;
        Ok(version)
    }

    /// Rejects an open review; its candidate fingerprint is remembered and never queued again.
    pub fn reject(&mut self, id: i64, reviewer: &str, reason: &str) -> Result<()> {
        let tx = self.write_tx()?;
        let review = read_review(&tx, id)?.ok_or(RegistryError::ReviewNotFound { id })?;
        if review.state != ReviewState::Open {
            return Err(RegistryError::Superseded {
                id,
                why: format!("the review is {}", review.state),
            });
        }
        let now = now_rfc3339();
        tx.execute(
            "UPDATE reviews SET state = ?5, decided_at = ?2, reviewer = ?3, reason = ?4 WHERE id = ?1",
            params![id, now, reviewer, reason, ReviewState::Rejected],
        )?;
        tx.execute(
            "INSERT OR REPLACE INTO rejected_candidates (watch, fingerprint, review_id, rejected_at) VALUES (?1, ?2, ?3, ?4)",
            params![review.watch, review.candidate_fingerprint, id, now],
        )?;
        tx.execute(
            "UPDATE watch_state SET status = ?2 WHERE watch = ?1",
            params![&review.watch, WatchStatus::Rejected],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Drops a watch's tool, history, state, validators, reviews and rejections.
    /// Returns whether anything existed. Removing a tool bumps the registry version.
    pub fn forget(&mut self, watch: &str) -> Result<bool> {
        let tx = self.write_tx()?;
        let had_tool = tx.execute("DELETE FROM tools WHERE name = ?1", [watch])? > 0;
        let mut removed = had_tool as usize;
        for sql in [
            "DELETE FROM tool_versions WHERE tool = ?1",
            "DELETE FROM watch_state WHERE watch = ?1",
            "DELETE FROM validators WHERE watch = ?1",
            "DELETE FROM reviews WHERE watch = ?1",
            "DELETE FROM rejected_candidates WHERE watch = ?1",
        ] {
            removed += tx.execute(sql, [watch])?;
        }
        if had_tool {
            tx.execute(
                "UPDATE registry_head SET registry_version = registry_version + 1 WHERE id = 1",
                [],
            )?;
        }
        tx.commit()?;
        Ok(removed > 0)
    }

    /// Clears a watch's `stale`/`error` state so the next cycle starts afresh (and adopts the
    /// configured source identity). Returns whether the watch had state.
    pub fn reset(&mut self, watch: &str) -> Result<bool> {
        let tx = self.write_tx()?;
        let n = tx.execute(
            "UPDATE watch_state SET status = ?2, last_error = NULL, consecutive_failures = 0,
                    source_identity = NULL WHERE watch = ?1",
            params![watch, WatchStatus::Idle],
        )?;
        tx.commit()?;
        Ok(n > 0)
    }

    /// Every stored watch state, by name (one query).
    pub fn watch_states(&self) -> Result<Vec<WatchState>> {
        let mut states: Vec<WatchState> = self.watch_state_map()?.into_values().collect();
        states.sort_by(|a, b| a.watch.cmp(&b.watch));
        Ok(states)
    }

    pub fn open_change_count(&self, watch: &str) -> Result<i64> {
        Ok(self.conn.query_row(
            "SELECT COALESCE(SUM(change_count), 0) FROM reviews WHERE watch = ?1 AND state = ?2",
            params![watch, ReviewState::Open],
            |r| r.get(0),
        )?)
    }

    /// Recomputes fingerprints of snapshots stored under an older projection version, from the
    /// normalized specs the registry keeps. Not a contract change: no version bump, no drift.
    fn refingerprint_outdated(&mut self) -> Result<()> {
        // Read first: a registry with nothing to redo takes no write lock, so opening it
        // (`status`, `history`, ...) never waits behind another process's write
        // (docs/reliability.md, C5).
        let outdated: i64 = self.conn.query_row(
            "SELECT (SELECT count(*) FROM tools WHERE fingerprint_version < ?1)
                  + (SELECT count(*) FROM tool_versions WHERE fingerprint_version < ?1)
                  + (SELECT count(*) FROM reviews WHERE fingerprint_version < ?1)",
            [FINGERPRINT_VERSION],
            |r| r.get(0),
        )?;
        if outdated == 0 {
            return Ok(());
        }
        let tx = self.write_tx()?;
        for (table, key_col) in [
            ("tools", "name"),
            ("tool_versions", "rowid"),
            ("reviews", "id"),
        ] {
            let spec_col = if table == "reviews" {
                "candidate_spec_json"
            } else {
                "spec_json"
            };
            let fp_col = if table == "reviews" {
                "candidate_fingerprint"
            } else {
                "fingerprint"
            };
            let rows: Vec<(String, String)> = tx
                .prepare(&format!(
                    "SELECT CAST({key_col} AS TEXT), {spec_col} FROM {table} WHERE fingerprint_version < ?1"
                ))?
                .query_map([FINGERPRINT_VERSION], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            for (key, json) in rows {
                let spec = parse_spec(table_name(table), &key, &json)?;
                tx.execute(
                    &format!("UPDATE {table} SET {fp_col} = ?1, fingerprint_version = ?2 WHERE CAST({key_col} AS TEXT) = ?3"),
                    params![tool_fingerprint(&spec), FINGERPRINT_VERSION, key],
                )?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

fn table_name(table: &str) -> &'static str {
    match table {
        "tools" => "tools",
        "tool_versions" => "tool_versions",
        _ => "reviews",
    }
}

fn candidate_key(spec: &ToolSpec) -> String {
    if spec.namespace.is_empty() {
        spec.name.clone()
    } else {
        format!("{}.{}", spec.namespace, spec.name)
    }
}

fn spec_json(spec: &ToolSpec) -> String {
    to_canonical_string(&serde_json::to_value(spec).unwrap_or(serde_json::Value::Null))
}

fn report_json(report: &DriftReport) -> String {
    to_canonical_string(&serde_json::to_value(report).unwrap_or(serde_json::Value::Null))
}

fn parse_spec(table: &'static str, key: &str, json: &str) -> Result<ToolSpec> {
    let value = crate::core::json::parse_json(json).map_err(|e| RegistryError::BadRow {
        table,
        key: key.to_string(),
        problem: e.to_string(),
    })?;
    serde_json::from_value(value).map_err(|e| RegistryError::BadRow {
        table,
        key: key.to_string(),
        problem: format!("not a valid contract: {e}"),
    })
}

fn read_tool(conn: &Connection, name: &str) -> Result<Option<StoredTool>> {
    let row: Option<(i64, i64, String, i64, String, String)> = conn
        .query_row(
            "SELECT version, registry_version, fingerprint, fingerprint_version, spec_json, applied_at
             FROM tools WHERE name = ?1",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .optional()?;
    let Some((version, registry_version, fingerprint, fp_version, json, applied_at)) = row else {
        return Ok(None);
    };
    let spec = parse_spec("tools", name, &json)?;
    let bad = |problem: String| RegistryError::BadRow {
        table: "tools",
        key: name.to_string(),
        problem,
    };
    if candidate_key(&spec) != name {
        return Err(bad(format!(
            "the stored contract is for {:?}",
            candidate_key(&spec)
        )));
    }
    if fp_version == FINGERPRINT_VERSION && tool_fingerprint(&spec) != fingerprint {
        return Err(bad(
            "the stored fingerprint does not match the stored contract".into(),
        ));
    }
    Ok(Some(StoredTool {
        name: name.to_string(),
        version,
        registry_version,
        fingerprint,
        spec,
        applied_at,
    }))
}

fn read_review(conn: &Connection, id: i64) -> Result<Option<Review>> {
    type Row = (
        String,
        ReviewState,
        String,
        i64,
        String,
        i64,
        Option<String>,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = conn
        .query_row(
            "SELECT watch, state, compatibility, change_count, created_at, base_registry_version,
                    base_fingerprint, candidate_fingerprint, candidate_spec_json, report_json,
                    decided_at, reviewer, reason
             FROM reviews WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                    r.get(12)?,
                ))
            },
        )
        .optional()?;
    let Some((
        watch,
        state,
        compatibility,
        change_count,
        created_at,
        base_rv,
        base_fp,
        cand_fp,
        spec,
        report,
        decided_at,
        reviewer,
        reason,
    )) = row
    else {
        return Ok(None);
    };
    let key = id.to_string();
    let candidate = parse_spec("reviews", &key, &spec)?;
    let report_value =
        crate::core::json::parse_json(&report).map_err(|e| RegistryError::BadRow {
            table: "reviews",
            key: key.clone(),
            problem: e.to_string(),
        })?;
    let report: DriftReport =
        serde_json::from_value(report_value).map_err(|e| RegistryError::BadRow {
            table: "reviews",
            key: key.clone(),
            problem: format!("not a valid report: {e}"),
        })?;
    if candidate_key(&candidate) != watch {
        return Err(RegistryError::BadRow {
            table: "reviews",
            key,
            problem: "candidate belongs to another watch".into(),
        });
    }
    Ok(Some(Review {
        id,
        watch,
        state,
        compatibility,
        change_count,
        created_at,
        base_registry_version: base_rv,
        base_fingerprint: base_fp,
        candidate_fingerprint: cand_fp,
        candidate,
        report,
        decided_at,
        reviewer,
        reason,
    }))
}

fn apply_in(
    tx: &Transaction<'_>,
    spec: &ToolSpec,
    expected: Option<&CasBase>,
    provenance: &Provenance,
    keep_versions: u32,
) -> Result<i64> {
    let name = candidate_key(spec);
    let current: Option<(i64, i64, String)> = tx
        .query_row(
            "SELECT version, registry_version, fingerprint FROM tools WHERE name = ?1",
            [&name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let next_tool_version = match (&current, expected) {
        (None, None) => 1,
        (Some((v, rv, fp)), Some(base))
            if *rv == base.registry_version && *fp == base.fingerprint =>
        {
            v + 1
        }
        _ => return Err(RegistryError::Conflict { tool: name }),
    };
    let head: i64 = tx.query_row(
        "SELECT registry_version FROM registry_head WHERE id = 1",
        [],
        |r| r.get(0),
    )?;
    let new_head = head + 1;
    let fingerprint = tool_fingerprint(spec);
    let json = spec_json(spec);
    let now = now_rfc3339();
    let position: i64 = match &current {
        Some(_) => tx.query_row("SELECT position FROM tools WHERE name = ?1", [&name], |r| {
            r.get(0)
        })?,
        None => tx.query_row(
            "SELECT COALESCE(MAX(position), 0) + 1 FROM tools",
            [],
            |r| r.get(0),
        )?,
    };
    tx.execute(
        "INSERT OR REPLACE INTO tools (name, kind, position, version, registry_version, fingerprint,
            fingerprint_version, spec_json, applied_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![name, spec.kind.as_str(), position, next_tool_version, new_head, fingerprint, FINGERPRINT_VERSION, json, now],
    )?;
    tx.execute(
        "INSERT INTO tool_versions (tool, version, registry_version, fingerprint, fingerprint_version,
            spec_json, applied_at, compatibility, review_id, reviewer, reason)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            name,
            next_tool_version,
            new_head,
            fingerprint,
            FINGERPRINT_VERSION,
            json,
            now,
            provenance.compatibility.map(|c| c.as_str()),
            provenance.review_id,
            provenance.reviewer,
            provenance.reason,
        ],
    )?;
    tx.execute(
        "DELETE FROM tool_versions WHERE tool = ?1 AND version <= ?2",
        params![name, next_tool_version - i64::from(keep_versions)],
    )?;
    let bumped = tx.execute(
        "UPDATE registry_head SET registry_version = ?2 WHERE id = 1 AND registry_version = ?1",
        params![head, new_head],
    )?;
    if bumped != 1 {
        return Err(RegistryError::Conflict { tool: name });
    }
    Ok(new_head)
}

fn supersede_open_reviews(tx: &Transaction<'_>, watch: &str) -> Result<()> {
    tx.execute(
        "UPDATE reviews SET state = ?3, decided_at = ?2 WHERE watch = ?1 AND state = ?4",
        params![
            watch,
            now_rfc3339(),
            ReviewState::Superseded,
            ReviewState::Open
        ],
    )?;
    Ok(())
}

fn upsert_watch(tx: &Transaction<'_>, s: &WatchState) -> Result<()> {
    tx.execute(
        "INSERT INTO watch_state (watch, kind, status, last_compatibility, last_checked_at, last_error,
            consecutive_failures, source_identity)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (watch) DO UPDATE SET kind = ?2, status = ?3, last_compatibility = ?4,
            last_checked_at = ?5, last_error = ?6, consecutive_failures = ?7, source_identity = ?8",
        params![
            s.watch,
            s.kind,
            s.status,
            s.last_compatibility,
            s.last_checked_at,
            s.last_error,
            s.consecutive_failures,
            s.source_identity
        ],
    )?;
    Ok(())
}

fn store_validators(
    tx: &Transaction<'_>,
    watch: &str,
    digest: &str,
    etag: Option<&str>,
    last_modified: Option<&str>,
) -> Result<()> {
    // One source per watch: validators of an earlier source identity are dropped.
    tx.execute("DELETE FROM validators WHERE watch = ?1", [watch])?;
    if etag.is_some() || last_modified.is_some() {
        tx.execute(
            "INSERT INTO validators (watch, source_digest, etag, last_modified) VALUES (?1, ?2, ?3, ?4)",
            params![watch, digest, etag, last_modified],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
