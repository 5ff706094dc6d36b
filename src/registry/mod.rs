//! The SQLite registry: accepted contracts, their history, watch state, HTTP validators,
//! reviews and rejected candidates.
//!
//! Invariants: every write is one `BEGIN IMMEDIATE` transaction (so a failed write leaves
//! nothing behind); `registry_version` is bumped exactly once per committed mutation of contract
//! state; an apply is a compare-and-swap on the tool's (registry_version, fingerprint); stored
//! rows are validated when read, and a corrupt or mis-keyed row fails closed.

mod codec;
mod identity;
pub use codec::set_inflate_limit;
mod conditional;
pub mod events;
pub mod failpoint;
mod listing;
mod migrate;
mod state;
mod ui;
mod upgrade;
pub use upgrade::LOGGED_PATHS;

pub use codec::source_digest;
pub use conditional::Conditional;
pub use listing::ReviewHead;
pub use state::{ReviewState, UnknownText, Via, WatchStatus};

/// `[storage] keep_reviews` when not configured: closed reviews per watch that keep their
/// candidate and report.
pub const DEFAULT_KEEP_REVIEWS: u32 = 100;

/// The source document a contract was normalized from, as the registry keeps it: its digest
/// (with every accepted snapshot and review candidate) and the compressed document, stored
/// once in `sources` however many rows use it. When `derivable`, the rows store no contract:
/// it is read back by normalizing the source again (checked against the stored fingerprint).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredSource {
    pub digest: Option<String>,
    pub gz: Option<Vec<u8>>,
    /// The contract is this document as normalized by `core::normalize::normalize` (kind,
    /// watch name, bytes), and the document cannot spell a hidden character (so a projection
    /// upgrade never needs the earlier reading to compare newly modelled text against).
    pub derivable: bool,
}

impl StoredSource {
    /// The source of a contract normalized from exactly these bytes (by `normalize`, with the
    /// watch's kind and name: no external `$ref`s).
    pub fn of(bytes: &[u8]) -> StoredSource {
        StoredSource {
            digest: Some(codec::source_digest(bytes)),
            gz: Some(codec::gz_bytes(bytes)),
            derivable: !crate::core::hidden::can_spell_hidden(bytes),
        }
    }

    /// No source: the contract is not one document as read (an OpenAPI document with external
    /// `$ref`s), or it came from an older release.
    pub fn none() -> StoredSource {
        StoredSource::default()
    }

    /// Whether rows written with this source store no contract of their own.
    fn derived(&self) -> bool {
        self.derivable && self.digest.is_some() && self.gz.is_some()
    }
}

use crate::core::event::{EventData, EventKind};
use crate::core::fingerprint::{tool_fingerprint, FINGERPRINT_VERSION};
use crate::core::model::{Compatibility, DriftReport, Kind, ToolSpec};
use crate::core::normalize::SharedEndpoints;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("registry database: {0}")]
    Sqlite(#[source] rusqlite::Error),
    /// A stored text column names no value of its type (a row written by a newer release, or
    /// edited by hand): the row is refused, never guessed at.
    #[error("registry row holds an {0}")]
    UnknownValue(UnknownText),
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
    /// A contract read from its stored source (migration 0004) that this release's normalizer
    /// no longer reads: the row fails closed; `watch forget` registers the watch afresh.
    #[error("registry row {table}/{key} is invalid: {problem}")]
    SourceUnreadable {
        table: &'static str,
        key: String,
        problem: String,
    },
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

impl From<rusqlite::Error> for RegistryError {
    fn from(e: rusqlite::Error) -> RegistryError {
        match e {
            rusqlite::Error::FromSqlConversionFailure(i, t, inner) => {
                match inner.downcast::<UnknownText>() {
                    Ok(unknown) => RegistryError::UnknownValue(*unknown),
                    Err(inner) => RegistryError::Sqlite(rusqlite::Error::FromSqlConversionFailure(
                        i, t, inner,
                    )),
                }
            }
            other => RegistryError::Sqlite(other),
        }
    }
}

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
    pub compatibility: Option<Compatibility>,
    pub review_id: Option<i64>,
    pub reviewer: Option<String>,
    pub reason: Option<String>,
    /// The ids (`chg1:…`) of the changes a reviewer accepted with `pending accept` (empty for
    /// registered and applied versions, and for versions accepted by older releases).
    pub accepted_changes: Vec<String>,
    /// A change made to this row in place, not a new version: `projection-upgrade` when a new
    /// projection re-normalized the stored source (no review, no registry version bump).
    pub note: Option<String>,
    /// How the reviewer of an accepted version was identified: `cli`, `admin` or `reviewer`
    /// (absent on other rows and on rows written before issue 32).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
}

/// A UI session, as looked up by its cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiSession {
    pub reviewer: String,
    pub expires_at: i64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct WatchState {
    pub watch: String,
    pub kind: Kind,
    pub status: WatchStatus,
    pub last_compatibility: Option<Compatibility>,
    pub last_checked_at: Option<String>,
    pub last_error: Option<String>,
    pub consecutive_failures: i64,
    pub source_identity: Option<String>,
}

impl WatchState {
    /// A watch known to the registry and never refreshed: `idle`, no error, no verdict.
    pub fn new(watch: &str, kind: Kind) -> WatchState {
        WatchState {
            watch: watch.to_string(),
            kind,
            status: WatchStatus::Idle,
            last_compatibility: None,
            last_checked_at: None,
            last_error: None,
            consecutive_failures: 0,
            source_identity: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Review {
    pub id: i64,
    pub watch: String,
    pub state: ReviewState,
    pub compatibility: Compatibility,
    pub change_count: i64,
    pub created_at: String,
    pub base_registry_version: i64,
    pub base_fingerprint: Option<String>,
    pub candidate_fingerprint: String,
    /// `None` once pruned (`[storage] keep_reviews`): a closed review keeps its metadata only.
    pub candidate: Option<ToolSpec>,
    /// `None` once pruned, like the candidate.
    pub report: Option<DriftReport>,
    pub decided_at: Option<String>,
    pub reviewer: Option<String>,
    pub reason: Option<String>,
    /// When the candidate and report were dropped (`[storage] keep_reviews`).
    pub pruned_at: Option<String>,
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
    /// The sinks (and retention) for the events this connection writes, when set for it
    /// alone; else the process's ([`set_process_routes`]).
    routes: Option<std::sync::Arc<crate::core::event::Routes>>,
}

fn process_routes() -> &'static std::sync::RwLock<std::sync::Arc<crate::core::event::Routes>> {
    static ROUTES: std::sync::OnceLock<
        std::sync::RwLock<std::sync::Arc<crate::core::event::Routes>>,
    > = std::sync::OnceLock::new();
    ROUTES.get_or_init(|| {
        std::sync::RwLock::new(std::sync::Arc::new(crate::core::event::Routes::none()))
    })
}

/// Puts the configured sinks in force for every registry connection of this process (the
/// binary calls it once the config is loaded, and the daemon again on reload), so whichever
/// command writes an event creates the deliveries the configuration asks for.
pub fn set_process_routes(routes: std::sync::Arc<crate::core::event::Routes>) {
    match process_routes().write() {
        Ok(mut r) => *r = routes,
        Err(poisoned) => *poisoned.into_inner() = routes,
    }
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

/// Whether a non-empty `-wal` file lies beside the registry at `path`.
fn has_wal(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(PathBuf::from(wal)).is_ok_and(|m| m.len() > 0)
}

/// SQLite's query planner stability guarantee: a cached statement keeps its plan instead of
/// being re-prepared when bound values could change it (the refresh's point read was
/// re-prepared on almost every run: issue 35's measurement, ~200 µs per 304).
fn stable_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map(|_| ())
}

/// The current UTC time as RFC 3339 with seconds precision.
/// The registry schema version this build reads and writes (`PRAGMA user_version`).
pub fn supported_schema() -> i64 {
    migrate::latest()
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// The columns of a `tool_versions` row that make its contract.
pub(crate) struct StoredVersion {
    pub json: String,
    pub gz: Option<Vec<u8>>,
    pub kind: Option<Kind>,
    pub digest: Option<String>,
    pub fingerprint: String,
    pub fp_version: i64,
}

/// The contract of version `version` of `tool` from its row. A contract read from its source
/// must be the one recorded (tampering): a mismatch under this fingerprint version is a bad row.
pub(crate) fn stored_version(
    conn: &Connection,
    tool: &str,
    version: i64,
    row: StoredVersion,
) -> Result<ToolSpec> {
    let key = format!("{tool}@{version}");
    let from_source = row.kind.map(|k| (k, row.digest.as_deref()));
    let spec = stored_spec(
        conn,
        ("tool_versions", &key, tool),
        &row.json,
        row.gz,
        from_source,
        SharedEndpoints::default(),
    )?;
    if from_source.is_some()
        && row.json.is_empty()
        && row.fp_version == FINGERPRINT_VERSION
        && tool_fingerprint(&spec) != row.fingerprint
    {
        return Err(RegistryError::BadRow {
            table: "tool_versions",
            key,
            problem: "the stored fingerprint does not match the contract read from its source"
                .into(),
        });
    }
    Ok(spec)
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
        stable_plans(&conn)?;
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
        let mut registry = Registry { conn, routes: None };
        migrate::run(&mut registry.conn)?;
        registry.refingerprint_outdated()?;
        Ok(registry)
    }

    /// Opens an existing registry read-only (for inspection): no migration, no writes. A
    /// registry whose schema is not the current one is refused.
    pub fn open_read_only(path: &Path) -> Result<Registry> {
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        stable_plans(&conn)?;
        let check: String = match conn.query_row("PRAGMA quick_check", [], |r| r.get(0)) {
            Ok(check) => check,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ReadOnly && !has_wal(path) =>
            {
                // A WAL-mode file in a folder we cannot write (a 0555 folder, a read-only
                // mount) cannot get its `-shm` index. With no `-wal` beside it, the file
                // holds every commit, and SQLite may read it as immutable (H22).
                return Registry::open_immutable(path);
            }
            Err(e) => return Err(e.into()),
        };
        if check != "ok" {
            return Err(RegistryError::Corrupt(check));
        }
        Registry::checked_version(conn)
    }

    /// A read-only connection of the current schema version as a registry.
    fn checked_version(conn: Connection) -> Result<Registry> {
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
        Ok(Registry { conn, routes: None })
    }

    /// [`Registry::open_read_only`] of a file nobody can be writing: its folder is read-only
    /// to us and no `-wal` file exists.
    fn open_immutable(path: &Path) -> Result<Registry> {
        let absolute = std::fs::canonicalize(path).map_err(|source| RegistryError::Stat {
            path: path.display().to_string(),
            source,
        })?;
        let mut uri =
            url::Url::from_file_path(&absolute).map_err(|()| RegistryError::NotARegistry {
                path: path.display().to_string(),
                why: "not an absolute path".into(),
            })?;
        uri.set_query(Some("mode=ro&immutable=1"));
        let conn = Connection::open_with_flags(
            uri.as_str(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
                | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )?;
        let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(RegistryError::Corrupt(check));
        }
        Registry::checked_version(conn)
    }

    /// Every retained snapshot of a tool, oldest first: (contract version, compatibility it was
    /// applied with, contract).
    pub fn snapshots(&self, tool: &str) -> Result<Vec<(i64, Option<Compatibility>, ToolSpec)>> {
        let mut stmt = self.conn.prepare(
            "SELECT version, compatibility, spec_json, spec_gz, source_kind, source_digest,
                    fingerprint, fingerprint_version
             FROM tool_versions WHERE tool = ?1 ORDER BY version",
        )?;
        type Row = (
            (i64, Option<Compatibility>, String, Option<Vec<u8>>),
            (Option<Kind>, Option<String>, String, i64),
        );
        let rows: Vec<Row> = stmt
            .query_map([tool], |r| {
                Ok((
                    (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?),
                    (r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?),
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        rows.into_iter()
            .map(
                |((version, compatibility, json, gz), (kind, digest, fingerprint, fp_version))| {
                    let row = StoredVersion {
                        json,
                        gz,
                        kind,
                        digest,
                        fingerprint,
                        fp_version,
                    };
                    let spec = stored_version(&self.conn, tool, version, row)?;
                    Ok((version, compatibility, spec))
                },
            )
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

    /// [`Registry::tool`], given the contract just normalized from a fetched document: when
    /// the accepted snapshot is stored as that very document, its contract is `fetched.spec`
    /// (no second normalization of the stored copy).
    pub fn tool_given(&self, name: &str, fetched: Fetched<'_>) -> Result<Option<StoredTool>> {
        read_tool_given(&self.conn, name, Some(fetched))
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
        let version = apply_in(
            &tx,
            spec,
            expected,
            provenance,
            keep_versions,
            &StoredSource::none(),
        )?;
        tx.commit()?;
        Ok(version)
    }

    pub fn history(&self, tool: &str) -> Result<Vec<HistoryEntry>> {
        let mut stmt = self.conn.prepare(
            "SELECT version, registry_version, fingerprint, applied_at, compatibility, review_id, reviewer, reason,
                    accepted_changes, note, via
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
                    note: r.get(9)?,
                    via: r.get(10)?,
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
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        events::upsert_watch_emitting(&tx, &routes, state, None, None)?;
        tx.commit()?;
        Ok(())
    }

    /// Records a failed cycle: the state, and `refresh_failed` when this failure is the
    /// `error_after`-th in a row (with its metric class).
    pub fn record_failure(&mut self, state: &WatchState, class: &str) -> Result<()> {
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        events::upsert_watch_emitting(&tx, &routes, state, None, Some(class))?;
        tx.commit()?;
        Ok(())
    }

    /// Records a `report_only` cycle with the report its event describes.
    pub fn record_report_only(&mut self, state: &WatchState, report: &DriftReport) -> Result<()> {
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        events::upsert_watch_emitting(&tx, &routes, state, Some(report), None)?;
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
        source: &StoredSource,
    ) -> Result<i64> {
        self.apply_candidate(
            spec,
            expected,
            provenance,
            keep_versions,
            state,
            validators,
            source,
            None,
        )
    }

    /// [`Registry::apply_with_state`] with the report of the comparison, which its event
    /// (`registered`, `applied` or `projection_upgrade`) carries.
    #[allow(clippy::too_many_arguments)]
    pub fn apply_candidate(
        &mut self,
        spec: &ToolSpec,
        expected: Option<&CasBase>,
        provenance: &Provenance,
        keep_versions: u32,
        state: &WatchState,
        validators: Option<(&str, Option<&str>, Option<&str>)>,
        source: &StoredSource,
        report: Option<&DriftReport>,
    ) -> Result<i64> {
        failpoint::hit("apply.begin")?;
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        let version = apply_in(&tx, spec, expected, provenance, keep_versions, source)?;
        failpoint::hit("apply.after_snapshot")?;
        supersede_open_reviews(&tx, &routes, &state.watch, state.kind, None)?;
        events::upsert_watch_emitting(&tx, &routes, state, None, None)?;
        let kind = if provenance.reason.as_deref() == Some("projection-upgrade") {
            EventKind::ProjectionUpgrade
        } else if expected.is_none() {
            EventKind::Registered
        } else {
            EventKind::Applied
        };
        let mut data = EventData::for_watch(&state.watch, state.kind.as_str());
        if let Some(report) = report {
            data = data.with_report(report);
        } else {
            data.compatibility = provenance.compatibility;
        }
        data.registry_version = Some(version);
        events::emit(&tx, &routes, kind, &data)?;
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
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        // The source is back at the accepted contract: an open review no longer describes it.
        supersede_open_reviews(&tx, &routes, &state.watch, state.kind, None)?;
        events::upsert_watch_emitting(&tx, &routes, state, None, None)?;
        if let Some((digest, etag, last_modified)) = validators {
            store_validators(&tx, &state.watch, digest, etag, last_modified)?;
        }
        failpoint::hit("unchanged.before_commit")?;
        tx.commit()?;
        Ok(())
    }

    /// Whether the accepted snapshot of `watch` was written by a release before stored sources
    /// (migration 0003): read by a narrower projection, with nothing stored to read again.
    pub fn legacy_projection(&self, watch: &str) -> Result<bool> {
        Ok(self
            .conn
            .query_row(
                "SELECT legacy_projection FROM tools WHERE name = ?1",
                [watch],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .is_some_and(|flag| flag != 0))
    }

    /// The one full fetch a legacy snapshot is allowed has happened: classify normally from now.
    pub fn clear_legacy_projection(&mut self, watch: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE tools SET legacy_projection = 0 WHERE name = ?1 AND legacy_projection <> 0",
            [watch],
        )?;
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

    /// Whether a reviewer rejected this very document (same source digest) while the
    /// projection was older: then the candidate, fingerprinted anew, is still rejected, and its
    /// new fingerprint is recorded with the rejection (`projection-upgrade`).
    pub fn rejected_document(
        &mut self,
        watch: &str,
        digest: &str,
        fingerprint: &str,
    ) -> Result<bool> {
        // Read first: the usual answer is "no", and it takes no write lock.
        let review: Option<i64> = self
            .conn
            .query_row(
                "SELECT review_id FROM rejected_candidates
                 WHERE watch = ?1 AND source_digest = ?2 AND fingerprint_version < ?3
                 ORDER BY rejected_at DESC LIMIT 1",
                params![watch, digest, FINGERPRINT_VERSION],
                |r| r.get(0),
            )
            .optional()?;
        let Some(review_id) = review else {
            return Ok(false);
        };
        let tx = self.write_tx()?;
        tx.execute(
            "INSERT OR REPLACE INTO rejected_candidates (watch, fingerprint, review_id, rejected_at,
                source_digest, fingerprint_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![watch, fingerprint, review_id, now_rfc3339(), digest, FINGERPRINT_VERSION],
        )?;
        tx.commit()?;
        tracing::warn!(event = "projection_upgrade", watch = %watch, review_id,
            "a document rejected under the previous projection is still rejected");
        Ok(true)
    }

    /// Queues a candidate for review, in one transaction with the watch state. The base is
    /// checked first (CAS): if the tool moved since it was compared, `Conflict`.
    pub fn queue_review(
        &mut self,
        base: &CasBase,
        candidate: &ToolSpec,
        report: &DriftReport,
        state: &WatchState,
        source: &StoredSource,
        keep_reviews: u32,
    ) -> Result<Queued> {
        failpoint::hit("review.begin")?;
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        // The CAS check needs the two columns only: the contract itself was read (and checked
        // against its fingerprint) by the caller, and is not loaded a second time.
        let current: Option<(i64, String)> = tx
            .query_row(
                "SELECT registry_version, fingerprint FROM tools WHERE name = ?1",
                [candidate_key(candidate)],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let matches = current
            .as_ref()
            .is_some_and(|(rv, fp)| *rv == base.registry_version && *fp == base.fingerprint);
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
                // One copy of the candidate: its source when it can be read back from it.
                let derived = source.derived();
                store_source(&tx, source)?;
                let now = now_rfc3339();
                let mut dropped = Vec::new();
                let superseded = match other {
                    Some((old_id, _)) => {
                        dropped = digests(
                            &tx,
                            "SELECT source_digest FROM reviews WHERE id = ?1",
                            [old_id],
                        )?;
                        tx.execute(
                            "UPDATE reviews SET state = ?3, decided_at = ?2, source_gz = NULL WHERE id = ?1",
                            params![old_id, now, ReviewState::Superseded],
                        )?;
                        Some(old_id)
                    }
                    None => None,
                };
                tx.execute(
                    "INSERT INTO reviews (watch, state, compatibility, change_count, created_at,
                        base_registry_version, base_fingerprint, candidate_fingerprint, fingerprint_version,
                        candidate_spec_json, report_json, candidate_gz, report_gz, source_digest, source_gz,
                        source_kind)
                     VALUES (?1, ?9, ?2, ?3, ?4, ?5, ?6, ?7, ?8, '', '', ?10, ?11, ?12, NULL, ?13)",
                    params![
                        state.watch,
                        report.compatibility,
                        report.change_count() as i64,
                        now,
                        base.registry_version,
                        base.fingerprint,
                        report.new_fingerprint,
                        FINGERPRINT_VERSION,
                        ReviewState::Open,
                        (!derived).then(|| codec::gz_json(candidate)),
                        codec::gz_json(report),
                        source.digest,
                        derived.then_some(candidate.kind),
                    ],
                )?;
                let id = tx.last_insert_rowid();
                failpoint::hit("review.after_insert")?;
                if let Some(old) = superseded {
                    let mut data = EventData::for_watch(&state.watch, state.kind.as_str());
                    data.review_id = Some(old);
                    data.superseded_by = Some(id);
                    events::emit(&tx, &routes, EventKind::ReviewSuperseded, &data)?;
                }
                let mut data =
                    EventData::for_watch(&state.watch, state.kind.as_str()).with_report(report);
                data.review_id = Some(id);
                data.registry_version = Some(base.registry_version);
                events::emit(&tx, &routes, EventKind::PendingReview, &data)?;
                dropped.extend(prune_reviews(&tx, &state.watch, keep_reviews)?);
                release_sources(&tx, dropped)?;
                Queued::New { id, superseded }
            }
        };
        events::upsert_watch_emitting(&tx, &routes, state, None, None)?;
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
        let routes = self.current_routes();
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
                    candidate_spec_json = '', report_json = '', candidate_gz = ?4, report_gz = ?5,
                    compatibility = ?6, change_count = ?7, source_kind = NULL
                 WHERE id = ?1",
                params![
                    id,
                    report.new_fingerprint,
                    FINGERPRINT_VERSION,
                    codec::gz_json(candidate),
                    codec::gz_json(report),
                    report.compatibility,
                    report.change_count() as i64,
                ],
            )?;
            events::upsert_watch_emitting(&tx, &routes, state, None, None)?;
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
        self.accept_via(id, reviewer, Via::Cli, reason, keep_versions)
    }

    /// [`Registry::accept`], recording how the reviewer was identified (`via`).
    pub fn accept_via(
        &mut self,
        id: i64,
        reviewer: &str,
        via: Via,
        reason: &str,
        keep_versions: u32,
    ) -> Result<i64> {
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        let review = read_review(&tx, id)?.ok_or(RegistryError::ReviewNotFound { id })?;
        if review.state != ReviewState::Open {
            return Err(RegistryError::Superseded {
                id,
                why: format!("the review is {}", review.state),
            });
        }
        // Open reviews are never pruned; a row without its candidate is a bad row.
        let (Some(candidate), Some(report)) = (&review.candidate, &review.report) else {
            return Err(RegistryError::BadRow {
                table: "reviews",
                key: id.to_string(),
                problem: "an open review without its candidate".into(),
            });
        };
        let source = review_source(&tx, id)?;
        let base = review.base_fingerprint.clone().map(|fingerprint| CasBase {
            registry_version: review.base_registry_version,
            fingerprint,
        });
        let provenance = Provenance {
            compatibility: Some(report.compatibility),
            review_id: Some(id),
            reviewer: Some(reviewer.to_string()),
            reason: Some(reason.to_string()),
        };
        let version = match apply_in(
            &tx,
            candidate,
            base.as_ref(),
            &provenance,
            keep_versions,
            &source,
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
        let accepted: Vec<String> = report
            .changes
            .iter()
            .map(crate::core::report::change_id)
            .collect();
        tx.execute(
            "UPDATE tool_versions SET accepted_changes = ?1, via = ?3 WHERE registry_version = ?2",
            params![
                serde_json::to_string(&accepted).unwrap_or_default(),
                version,
                via
            ],
        )?;
        let now = now_rfc3339();
        tx.execute(
            "UPDATE reviews SET state = ?5, decided_at = ?2, reviewer = ?3, reason = ?4, source_gz = NULL, via = ?6 WHERE id = ?1",
            params![id, now, reviewer, reason, ReviewState::Accepted, via],
        )?;
        release_sources(&tx, source.digest.into_iter().collect())?;
        tx.execute(
            "UPDATE watch_state SET status = ?3, last_compatibility = ?2 WHERE watch = ?1",
            params![review.watch, review.compatibility, WatchStatus::Applied],
        )?;
        // The validators of the accepted document are unknown here; the next cycle refetches.
        tx.execute("DELETE FROM validators WHERE watch = ?1", [&review.watch])?;
        let mut data =
            EventData::for_watch(&review.watch, candidate.kind.as_str()).with_report(report);
        data.review_id = Some(id);
        data.registry_version = Some(version);
        data.reviewer = Some(reviewer.to_string());
        events::emit(&tx, &routes, EventKind::ReviewAccepted, &data)?;
        failpoint::hit("accept.before_commit")?;
        tx.commit()?;
        failpoint::hit("accept.after_commit")?;
        Ok(version)
    }

    /// Rejects an open review; its candidate fingerprint is remembered and never queued again.
    pub fn reject(&mut self, id: i64, reviewer: &str, reason: &str) -> Result<()> {
        self.reject_via(id, reviewer, Via::Cli, reason)
    }

    /// [`Registry::reject`], recording how the reviewer was identified (`via`).
    pub fn reject_via(&mut self, id: i64, reviewer: &str, via: Via, reason: &str) -> Result<()> {
        let routes = self.current_routes();
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
            "UPDATE reviews SET state = ?5, decided_at = ?2, reviewer = ?3, reason = ?4, source_gz = NULL, via = ?6 WHERE id = ?1",
            params![id, now, reviewer, reason, ReviewState::Rejected, via],
        )?;
        let digest: Option<String> = tx.query_row(
            "SELECT source_digest FROM reviews WHERE id = ?1",
            [id],
            |r| r.get(0),
        )?;
        release_sources(&tx, digest.iter().cloned().collect())?;
        tx.execute(
            "INSERT OR REPLACE INTO rejected_candidates (watch, fingerprint, review_id, rejected_at,
                source_digest, fingerprint_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![review.watch, review.candidate_fingerprint, id, now, digest, FINGERPRINT_VERSION],
        )?;
        tx.execute(
            "UPDATE watch_state SET status = ?2 WHERE watch = ?1",
            params![&review.watch, WatchStatus::Rejected],
        )?;
        let kind = review.candidate.as_ref().map_or("", |c| c.kind.as_str());
        let mut data = EventData::for_watch(&review.watch, kind);
        if let Some(report) = &review.report {
            data = data.with_report(report);
        }
        data.review_id = Some(id);
        data.reviewer = Some(reviewer.to_string());
        events::emit(&tx, &routes, EventKind::ReviewRejected, &data)?;
        tx.commit()?;
        Ok(())
    }

    /// Drops a watch's tool, history, state, validators, reviews and rejections.
    /// Returns whether anything existed. Removing a tool bumps the registry version.
    pub fn forget(&mut self, watch: &str) -> Result<bool> {
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        let kind: Option<Kind> = tx
            .query_row(
                "SELECT kind FROM watch_state WHERE watch = ?1",
                [watch],
                |r| r.get(0),
            )
            .optional()?;
        let dropped = digests(
            &tx,
            "SELECT source_digest FROM tools WHERE name = ?1
             UNION SELECT source_digest FROM tool_versions WHERE tool = ?1
             UNION SELECT source_digest FROM reviews WHERE watch = ?1",
            [watch],
        )?;
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
        release_sources(&tx, dropped)?;
        if had_tool {
            tx.execute(
                "UPDATE registry_head SET registry_version = registry_version + 1 WHERE id = 1",
                [],
            )?;
        }
        if removed > 0 {
            let mut data = EventData::for_watch(watch, kind.map_or("", Kind::as_str));
            if had_tool {
                data.registry_version = Some(tx.query_row(
                    "SELECT registry_version FROM registry_head WHERE id = 1",
                    [],
                    |r| r.get(0),
                )?);
            }
            events::emit(&tx, &routes, EventKind::WatchForgotten, &data)?;
        }
        tx.commit()?;
        Ok(removed > 0)
    }

    /// Clears a watch's `stale`/`error` state so the next cycle starts afresh (and adopts the
    /// configured source identity). Returns whether the watch had state.
    pub fn reset(&mut self, watch: &str) -> Result<bool> {
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        let kind: Option<Kind> = tx
            .query_row(
                "SELECT kind FROM watch_state WHERE watch = ?1",
                [watch],
                |r| r.get(0),
            )
            .optional()?;
        let n = tx.execute(
            "UPDATE watch_state SET status = ?2, last_error = NULL, consecutive_failures = 0,
                    source_identity = NULL WHERE watch = ?1",
            params![watch, WatchStatus::Idle],
        )?;
        if n > 0 {
            let data = EventData::for_watch(watch, kind.map_or("", Kind::as_str));
            events::emit(&tx, &routes, EventKind::WatchReset, &data)?;
        }
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
        let routes = self.current_routes();
        let tx = self.write_tx()?;
        // A 304-only watch must fetch once to gain what the new projection models.
        tx.execute(
            "DELETE FROM validators WHERE watch IN (SELECT name FROM tools WHERE fingerprint_version < ?1)",
            [FINGERPRINT_VERSION],
        )?;
        upgrade::accepted_from_sources(&tx, &routes)?;
        upgrade::open_reviews_from_sources(&tx)?;
        // Whatever has no source (older releases, external `$ref`s), or whose source the new
        // normalizer refuses or finds hidden text in, is re-fingerprinted from its normalized
        // contract as before; the first full fetch then classifies it.
        for (table, key_col, name_col, spec_col, gz_col, fp_col, source_cols) in [
            (
                "tools",
                "name",
                "name",
                "spec_json",
                "NULL",
                "fingerprint",
                "NULL, NULL",
            ),
            (
                "tool_versions",
                "rowid",
                "tool",
                "spec_json",
                "spec_gz",
                "fingerprint",
                "source_kind, source_digest",
            ),
            (
                "reviews",
                "id",
                "watch",
                "candidate_spec_json",
                "candidate_gz",
                "candidate_fingerprint",
                "source_kind, source_digest",
            ),
        ] {
            type Row = (
                String,
                String,
                String,
                Option<Vec<u8>>,
                Option<Kind>,
                Option<String>,
            );
            let rows: Vec<Row> = tx
                .prepare(&format!(
                    "SELECT CAST({key_col} AS TEXT), {name_col}, {spec_col}, {gz_col}, {source_cols}
                     FROM {table} WHERE fingerprint_version < ?1"
                ))?
                .query_map([FINGERPRINT_VERSION], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })?
                .collect::<rusqlite::Result<_>>()?;
            for (key, name, json, gz, kind, digest) in rows {
                let from_source = kind.map(|k| (k, digest.as_deref()));
                let read = match table {
                    // A new `tools` row keeps its contract in the current history row.
                    "tools" => read_tool(&tx, &key).map(|t| t.map(|t| tool_fingerprint(&t.spec))),
                    // A pruned review keeps the fingerprint it was decided on (metadata only).
                    "reviews" if json.is_empty() && gz.is_none() && from_source.is_none() => {
                        Ok(None)
                    }
                    _ => stored_spec(
                        &tx,
                        (table_name(table), &key, &name),
                        &json,
                        gz,
                        from_source,
                        SharedEndpoints::default(),
                    )
                    .map(|spec| Some(tool_fingerprint(&spec))),
                };
                let fingerprint = match read {
                    // A contract read from a source this release no longer reads keeps its
                    // fingerprint; reading it fails closed until the watch is forgotten.
                    Err(RegistryError::SourceUnreadable {
                        table,
                        key,
                        problem,
                    }) => {
                        tracing::error!(event = "projection_upgrade_failed", table, key = %key,
                            problem = %problem, "a contract stored as its source cannot be read by this release");
                        None
                    }
                    other => other?,
                };
                match fingerprint {
                    Some(fp) => tx.execute(
                        &format!("UPDATE {table} SET {fp_col} = ?1, fingerprint_version = ?2 WHERE CAST({key_col} AS TEXT) = ?3"),
                        params![fp, FINGERPRINT_VERSION, key],
                    )?,
                    None => tx.execute(
                        &format!("UPDATE {table} SET fingerprint_version = ?1 WHERE CAST({key_col} AS TEXT) = ?2"),
                        params![FINGERPRINT_VERSION, key],
                    )?,
                };
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

/// A row's contract read from its source: the `source_kind` and `source_digest` columns.
type FromSource<'a> = Option<(Kind, Option<&'a str>)>;

/// A stored contract: its source normalized again (`from_source`, rows of migration 0004 on
/// whose document could be re-read), compressed JSON (`gz`, rows of migration 0003 on) or text
/// (older rows). `name` is the row's watch (what the normalizer was given).
fn stored_spec(
    conn: &Connection,
    (table, key, name): (&'static str, &str, &str),
    json: &str,
    gz: Option<Vec<u8>>,
    from_source: FromSource<'_>,
    shared: SharedEndpoints<'_>,
) -> Result<ToolSpec> {
    if json.is_empty() && gz.is_none() {
        if let Some((kind, digest)) = from_source {
            return source_spec(conn, (table, key, name), kind, digest, shared);
        }
    }
    let mut spec = match gz {
        Some(blob) => stored_json(table, key, &blob, "contract"),
        None => parse_spec(table, key, json),
    }?;
    shared.share_all(&mut spec);
    Ok(spec)
}

/// The contract of a row that stores none: its source document (one copy in `sources`),
/// checked against its digest and normalized as when it was stored. Normalizing is
/// deterministic, so the reading is the stored contract; the callers check the fingerprint.
fn source_spec(
    conn: &Connection,
    (table, key, name): (&'static str, &str, &str),
    kind: Kind,
    digest: Option<&str>,
    shared: SharedEndpoints<'_>,
) -> Result<ToolSpec> {
    let bad = |problem: String| RegistryError::BadRow {
        table,
        key: key.to_string(),
        problem,
    };
    let digest =
        digest.ok_or_else(|| bad("no source digest for a contract read from its source".into()))?;
    let gz: Vec<u8> = conn
        .query_row("SELECT gz FROM sources WHERE digest = ?1", [digest], |r| {
            r.get(0)
        })
        .optional()?
        .ok_or_else(|| bad("its stored source document is missing".into()))?;
    let bytes = codec::gunzip(table, key, &gz)?;
    drop(gz);
    if codec::source_digest(&bytes) != digest {
        return Err(bad("the stored source does not match its digest".into()));
    }
    crate::core::normalize::normalize_sharing(kind, name, &bytes, shared).map_err(|e| {
        RegistryError::SourceUnreadable {
            table,
            key: key.to_string(),
            problem: format!("the stored source no longer normalizes ({e}); `schemawatch watch forget` registers the watch afresh"),
        }
    })
}

/// Stores a source document once (by digest) for rows about to use it.
fn store_source(tx: &Transaction<'_>, source: &StoredSource) -> Result<()> {
    if let (Some(digest), Some(gz)) = (&source.digest, &source.gz) {
        tx.execute(
            "INSERT OR IGNORE INTO sources (digest, gz) VALUES (?1, ?2)",
            params![digest, gz],
        )?;
    }
    Ok(())
}

/// The source digests `sql` (with `params`) selects, to release after a write drops uses.
fn digests<P: rusqlite::Params>(tx: &Transaction<'_>, sql: &str, params: P) -> Result<Vec<String>> {
    Ok(tx
        .prepare(sql)?
        .query_map(params, |r| r.get::<_, Option<String>>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect())
}

/// Deletes the stored sources among `digests` that no row uses any more: the current accepted
/// snapshot (a projection upgrade re-reads it), a row whose contract is read from it, an open
/// review (re-read like the accepted snapshot).
fn release_sources(tx: &Transaction<'_>, mut digests: Vec<String>) -> Result<()> {
    digests.sort();
    digests.dedup();
    for digest in digests {
        tx.execute(
            "DELETE FROM sources WHERE digest = ?1
               AND NOT EXISTS (SELECT 1 FROM tools WHERE source_digest = ?1)
               AND NOT EXISTS (SELECT 1 FROM tool_versions
                               WHERE source_digest = ?1 AND source_kind IS NOT NULL)
               AND NOT EXISTS (SELECT 1 FROM reviews WHERE source_digest = ?1 AND pruned_at IS NULL
                               AND (source_kind IS NOT NULL OR state = ?2))",
            params![digest, ReviewState::Open],
        )?;
    }
    Ok(())
}

/// A compressed JSON value of `table`/`key`, inflated and deserialized without an
/// intermediate `Value` (the memory of a large contract is the inflated bytes plus the model).
fn stored_json<T: serde::de::DeserializeOwned>(
    table: &'static str,
    key: &str,
    blob: &[u8],
    what: &str,
) -> Result<T> {
    codec::gunzip_json(table, key, blob, what)
}

/// Drops the candidate and report of a watch's closed reviews beyond the newest
/// `keep_reviews` (`[storage] keep_reviews`); their metadata stays. Open reviews are never
/// pruned.
/// Answers the source digests of the pruned reviews (to release).
fn prune_reviews(tx: &Transaction<'_>, watch: &str, keep_reviews: u32) -> Result<Vec<String>> {
    const PRUNED: &str = "WHERE watch = ?1 AND state != ?3 AND pruned_at IS NULL
           AND id NOT IN (SELECT id FROM reviews WHERE watch = ?1 AND state != ?3
                          ORDER BY id DESC LIMIT ?2)";
    let dropped = digests(
        tx,
        &format!("SELECT source_digest FROM reviews {PRUNED}"),
        params![watch, i64::from(keep_reviews), ReviewState::Open],
    )?;
    tx.execute(
        &format!(
            "UPDATE reviews SET candidate_spec_json = '', report_json = '', candidate_gz = NULL,
                report_gz = NULL, source_gz = NULL, source_kind = NULL, pruned_at = ?4 {PRUNED}"
        ),
        params![
            watch,
            i64::from(keep_reviews),
            ReviewState::Open,
            now_rfc3339()
        ],
    )?;
    Ok(dropped)
}

/// The stored source of a review's candidate (kept while it is open).
fn review_source(conn: &Connection, id: i64) -> Result<StoredSource> {
    let (digest, gz, derivable): (Option<String>, Option<Vec<u8>>, bool) = conn.query_row(
        "SELECT r.source_digest, COALESCE(r.source_gz, s.gz), r.source_kind IS NOT NULL
         FROM reviews r LEFT JOIN sources s ON s.digest = r.source_digest WHERE r.id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    Ok(StoredSource {
        digest,
        gz,
        derivable,
    })
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

/// A contract just normalized from a document, offered to [`read_tool_given`]: when the
/// accepted snapshot is that very document (same digest, same projection, same fingerprint),
/// it is the snapshot's contract, and its stored source need not be normalized again.
#[derive(Clone, Copy)]
pub struct Fetched<'a> {
    pub digest: &'a str,
    pub spec: &'a ToolSpec,
    pub fingerprint: &'a str,
}

fn read_tool(conn: &Connection, name: &str) -> Result<Option<StoredTool>> {
    read_tool_given(conn, name, None)
}

fn read_tool_given(
    conn: &Connection,
    name: &str,
    fetched: Option<Fetched<'_>>,
) -> Result<Option<StoredTool>> {
    type Row = (
        (i64, i64, String, i64, String, String),
        (Option<Vec<u8>>, Option<Kind>, Option<String>, bool),
    );
    let row: Option<Row> = conn
        .query_row(
            "SELECT t.version, t.registry_version, t.fingerprint, t.fingerprint_version, t.spec_json,
                    t.applied_at, COALESCE(t.spec_gz, v.spec_gz), v.source_kind, v.source_digest,
                    v.tool IS NOT NULL
             FROM tools t LEFT JOIN tool_versions v ON v.tool = t.name AND v.version = t.version
             WHERE t.name = ?1",
            [name],
            |r| {
                Ok((
                    (
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ),
                    (r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?),
                ))
            },
        )
        .optional()?;
    let Some((
        (version, registry_version, fingerprint, fp_version, json, applied_at),
        (gz, source_kind, source_digest, has_row),
    )) = row
    else {
        return Ok(None);
    };
    // An older row keeps its text; a new one has '' there and the contract in the current
    // history row (compressed, or read from its source).
    let gz = if json.is_empty() { gz } else { None };
    let from_source = match (source_kind, json.is_empty() && gz.is_none()) {
        (Some(kind), true) => Some((kind, source_digest.as_deref())),
        _ => None,
    };
    if json.is_empty() && gz.is_none() && (from_source.is_none() || !has_row) {
        return Err(RegistryError::BadRow {
            table: "tools",
            key: name.to_string(),
            problem: format!("no stored contract (history row {version} is missing)"),
        });
    }
    // The document just fetched is the stored one: its fresh reading is the stored contract.
    let reuse = fetched.filter(|f| {
        from_source.is_some_and(|(_, d)| d == Some(f.digest))
            && fp_version == FINGERPRINT_VERSION
            && f.fingerprint == fingerprint
    });
    let spec = match reuse {
        Some(f) => f.spec.clone(),
        // The stored reading shares the endpoints the fetched one holds equally (a changed
        // document is compared with it: one copy of what did not change).
        None => stored_spec(
            conn,
            ("tools", name, name),
            &json,
            gz,
            from_source,
            fetched.map_or_else(SharedEndpoints::default, |f| SharedEndpoints::of(f.spec)),
        )?,
    };
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
    if reuse.is_none()
        && fp_version == FINGERPRINT_VERSION
        && tool_fingerprint(&spec) != fingerprint
    {
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
        (String, ReviewState, Compatibility, i64, String, i64),
        (Option<String>, String, String, String),
        (Option<String>, Option<String>, Option<String>),
        (Option<Vec<u8>>, Option<Vec<u8>>, Option<String>),
        (Option<Kind>, Option<String>, i64),
    );
    let row: Option<Row> = conn
        .query_row(
            "SELECT watch, state, compatibility, change_count, created_at, base_registry_version,
                    base_fingerprint, candidate_fingerprint, candidate_spec_json, report_json,
                    decided_at, reviewer, reason, candidate_gz, report_gz, pruned_at,
                    source_kind, source_digest, fingerprint_version
             FROM reviews WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    (
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ),
                    (r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?),
                    (r.get(10)?, r.get(11)?, r.get(12)?),
                    (r.get(13)?, r.get(14)?, r.get(15)?),
                    (r.get(16)?, r.get(17)?, r.get(18)?),
                ))
            },
        )
        .optional()?;
    let Some((
        (watch, state, compatibility, change_count, created_at, base_rv),
        (base_fp, cand_fp, spec, report),
        (decided_at, reviewer, reason),
        (candidate_gz, report_gz, pruned_at),
        (source_kind, source_digest, fp_version),
    )) = row
    else {
        return Ok(None);
    };
    let key = id.to_string();
    let bad = |problem: String| RegistryError::BadRow {
        table: "reviews",
        key: key.clone(),
        problem,
    };
    if pruned_at.is_some() && state == ReviewState::Open {
        return Err(bad("an open review without its candidate".into()));
    }
    let (candidate, report) = if pruned_at.is_some() {
        (None, None)
    } else {
        let from_source = source_kind.map(|k| (k, source_digest.as_deref()));
        let candidate = stored_spec(
            conn,
            ("reviews", &key, &watch),
            &spec,
            candidate_gz,
            from_source,
            SharedEndpoints::default(),
        )?;
        let report: DriftReport = match report_gz {
            Some(blob) => stored_json("reviews", &key, &blob, "report")?,
            None => {
                let value =
                    crate::core::json::parse_json(&report).map_err(|e| bad(e.to_string()))?;
                serde_json::from_value(value)
                    .map_err(|e| bad(format!("not a valid report: {e}")))?
            }
        };
        if candidate_key(&candidate) != watch {
            return Err(bad("candidate belongs to another watch".into()));
        }
        // A candidate read from its source is checked like the accepted snapshot (tampering).
        if from_source.is_some()
            && fp_version == FINGERPRINT_VERSION
            && tool_fingerprint(&candidate) != cand_fp
        {
            return Err(bad(
                "the stored fingerprint does not match the candidate read from its source".into(),
            ));
        }
        (Some(candidate), Some(report))
    };
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
        pruned_at,
    }))
}

fn apply_in(
    tx: &Transaction<'_>,
    spec: &ToolSpec,
    expected: Option<&CasBase>,
    provenance: &Provenance,
    keep_versions: u32,
    source: &StoredSource,
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
    // One copy of the contract, in the history row (the `tools` row reads it from there): its
    // source document when the contract can be read back from it, else the contract
    // compressed. The document itself is stored once, in `sources`.
    let derived = source.derived();
    let gz = (!derived).then(|| codec::gz_json(spec));
    store_source(tx, source)?;
    let dropped = digests(
        tx,
        "SELECT source_digest FROM tools WHERE name = ?1
         UNION ALL SELECT source_digest FROM tool_versions WHERE tool = ?1 AND version <= ?2",
        params![name, next_tool_version - i64::from(keep_versions)],
    )?;
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
    // `spec_json = ''` with `spec_gz` NULL: the contract is the current history row's
    // (format marker of migration 0003; older rows keep their text).
    tx.execute(
        "INSERT OR REPLACE INTO tools (name, kind, position, version, registry_version, fingerprint,
            fingerprint_version, spec_json, applied_at, spec_gz, source_digest, source_gz)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, '', ?8, NULL, ?9, NULL)",
        params![name, spec.kind, position, next_tool_version, new_head, fingerprint,
            FINGERPRINT_VERSION, now, source.digest],
    )?;
    tx.execute(
        "INSERT INTO tool_versions (tool, version, registry_version, fingerprint, fingerprint_version,
            spec_json, applied_at, compatibility, review_id, reviewer, reason, spec_gz, source_digest,
            source_kind)
         VALUES (?1, ?2, ?3, ?4, ?5, '', ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            name,
            next_tool_version,
            new_head,
            fingerprint,
            FINGERPRINT_VERSION,
            now,
            provenance.compatibility,
            provenance.review_id,
            provenance.reviewer,
            provenance.reason,
            gz,
            source.digest,
            derived.then_some(spec.kind),
        ],
    )?;
    tx.execute(
        "DELETE FROM tool_versions WHERE tool = ?1 AND version <= ?2",
        params![name, next_tool_version - i64::from(keep_versions)],
    )?;
    release_sources(tx, dropped)?;
    let bumped = tx.execute(
        "UPDATE registry_head SET registry_version = ?2 WHERE id = 1 AND registry_version = ?1",
        params![head, new_head],
    )?;
    if bumped != 1 {
        return Err(RegistryError::Conflict { tool: name });
    }
    Ok(new_head)
}

fn supersede_open_reviews(
    tx: &Transaction<'_>,
    routes: &crate::core::event::Routes,
    watch: &str,
    kind: Kind,
    superseded_by: Option<i64>,
) -> Result<()> {
    let open: Vec<i64> = tx
        .prepare_cached("SELECT id FROM reviews WHERE watch = ?1 AND state = ?2")?
        .query_map(params![watch, ReviewState::Open], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in open {
        let mut data = EventData::for_watch(watch, kind.as_str());
        data.review_id = Some(id);
        data.superseded_by = superseded_by;
        events::emit(tx, routes, EventKind::ReviewSuperseded, &data)?;
    }
    let dropped = digests(
        tx,
        "SELECT source_digest FROM reviews WHERE watch = ?1 AND state = ?2",
        params![watch, ReviewState::Open],
    )?;
    tx.execute(
        "UPDATE reviews SET state = ?3, decided_at = ?2, source_gz = NULL WHERE watch = ?1 AND state = ?4",
        params![
            watch,
            now_rfc3339(),
            ReviewState::Superseded,
            ReviewState::Open
        ],
    )?;
    release_sources(tx, dropped)?;
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
