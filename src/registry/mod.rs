//! The registry, on SQLite or PostgreSQL: accepted contracts, their history, watch state,
//! HTTP validators, reviews and rejected candidates.
//!
//! Invariants: every write is one transaction (SQLite's `BEGIN IMMEDIATE`; on PostgreSQL a
//! `BEGIN` that first locks the head row), so a failed write leaves nothing behind; `registry_version` is bumped exactly once per committed mutation of contract
//! state; an apply is a compare-and-swap on the tool's (registry_version, fingerprint); stored
//! rows are validated when read, and a corrupt or mis-keyed row fails closed.
//!
//! One file per concern, each an `impl Registry` block with its helpers: `lifecycle` (open,
//! checks, migrations, the write transaction), `contracts` (accepted contracts, history, the
//! compare-and-swap apply), `reviews` (reviews, decisions, rejected candidates), `watch` (watch
//! state, validators, forget and reset), `sources` (stored source documents), `events` (the
//! event log and deliveries), `listing` (whole-registry reads), `conditional` (the 304 path),
//! `ui` (sessions, one version at a time), `upgrade` (the projection upgrade), `sunsets` (sunset
//! and deprecation facts of accepted contracts, sunset alerts), `location` (where the registry
//! is, opening it, the daemon's PostgreSQL pool), `copy` (`registry copy`); under them `sql`
//! (one statement text for both backends) and `pg` (PostgreSQL connections).

mod codec;
mod contracts;
mod identity;
pub use codec::set_inflate_limit;
mod conditional;
pub mod copy;
pub mod events;
pub mod failpoint;
mod lifecycle;
mod listing;
mod location;
pub use location::{Location, PgPassword, Pool};
mod migrate;
pub mod pg;
mod reviews;
mod sources;
pub(crate) mod sql;
mod state;
mod sunsets;
pub use sunsets::SunsetFact;
mod ui;
mod upgrade;
mod watch;
pub use upgrade::LOGGED_PATHS;

pub use codec::source_digest;
pub use conditional::Conditional;
pub use contracts::Fetched;
use contracts::{
    apply_in, candidate_key, read_tool, stored_json, stored_spec, stored_version, StoredVersion,
};
use lifecycle::stable_plans;
pub use lifecycle::{Lost, Opened};
pub use listing::{ChangeToken, ReviewHead};
use reviews::{read_review, review_source, supersede_open_reviews};
pub use sources::StoredSource;
use sources::{digests, release_sources, source_spec, store_source};
pub use state::{ReviewState, UnknownText, Via, WatchStatus};
pub use watch::SourceValidators;
use watch::{store_validators, upsert_watch};

/// `[storage] keep_reviews` when not configured: closed reviews per watch that keep their
/// candidate and report.
pub const DEFAULT_KEEP_REVIEWS: u32 = 100;

use crate::core::fingerprint::FINGERPRINT_VERSION;
use crate::core::model::{Compatibility, DriftReport, Kind, ToolSpec};
use rusqlite::Connection;
use serde::Serialize;

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
    /// The registry was last written by a schemawatch whose projection is newer
    /// (`FINGERPRINT_VERSION` in the head row): this one would fingerprint documents
    /// differently, so it refuses to write; reads still work.
    #[error("this registry was written by a schemawatch with fingerprint version {recorded}, newer than this one's ({binary}): refusing to write (its documents would fingerprint differently); read-only commands still work, upgrade schemawatch to write")]
    NewerProjection { recorded: i64, binary: i64 },
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
    /// A PostgreSQL registry's statement failed (the server's message and SQLSTATE; never a
    /// password).
    #[error("registry database (PostgreSQL): {0}")]
    Postgres(String),
    /// An operation only a SQLite registry has (its file, its pragmas), asked of another.
    #[error("{0} is only available on a SQLite registry")]
    NotOnPostgres(&'static str),
    /// A write its caller abandoned midway, rolled back (the caller reports why).
    #[error("the write was abandoned and rolled back")]
    RolledBack,
    #[error("cannot connect to the registry database {target}: {reason}")]
    PostgresConnect { target: String, reason: String },
}

pub type Result<T> = std::result::Result<T, RegistryError>;

impl From<postgres::Error> for RegistryError {
    fn from(e: postgres::Error) -> RegistryError {
        RegistryError::Postgres(crate::sources::postgres::scrub(&e, None))
    }
}

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
    /// The database: a SQLite file (`[storage] path`) or a PostgreSQL session (`[storage]
    /// url`). Every concern runs its SQL through [`sql`] on either; only SQLite's own
    /// mechanisms (pragmas, migrations, `BEGIN IMMEDIATE`) reach its connection directly.
    backend: Backend,
    /// The sinks (and retention) for the events this connection writes, when set for it
    /// alone; else the process's ([`set_process_routes`]).
    routes: Option<std::sync::Arc<crate::core::event::Routes>>,
}

/// One variant per backend, matched without a `_` arm (ARCHITECTURE.md, the storage seam).
enum Backend {
    Sqlite(Connection),
    /// The client of one session. A `RefCell`: reads take `&self` and the blocking client
    /// `&mut`; a registry is used by one thread at a time (it is `Send`, not `Sync`).
    Postgres(Box<std::cell::RefCell<sql::Held>>),
}

impl Registry {
    /// The SQLite connection, for what only SQLite has (its pragmas, its migrations, its
    /// `BEGIN IMMEDIATE`).
    fn conn_mut(&mut self) -> Result<&mut Connection> {
        match &mut self.backend {
            Backend::Sqlite(c) => Ok(c),
            Backend::Postgres(_) => Err(RegistryError::NotOnPostgres("a SQLite connection")),
        }
    }

    /// Whether this connection is closed for good (a PostgreSQL session the server ended, or
    /// lost): a pool drops it instead of handing it out again. A SQLite file never is.
    pub fn is_closed(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(_) => false,
            Backend::Postgres(cell) => cell.try_borrow().is_ok_and(|s| s.is_closed()),
        }
    }

    /// Runs `f` on the database outside any write transaction (a read).
    fn read<T>(&self, f: impl FnOnce(&mut sql::Db<'_>) -> Result<T>) -> Result<T> {
        match &self.backend {
            Backend::Sqlite(c) => f(&mut sql::Db::Sqlite(c)),
            Backend::Postgres(cell) => {
                let mut session = cell.try_borrow_mut().map_err(|_| {
                    RegistryError::Postgres("the registry connection is busy".into())
                })?;
                sql::off_runtime(|| f(&mut sql::Db::Postgres(&mut session)))
            }
        }
    }

    /// Runs `f` in one write transaction ([`Registry::write_tx`] on SQLite, its PostgreSQL
    /// twin there), committed when `f` returns `Ok`, rolled back otherwise.
    fn write<T>(&mut self, f: impl FnOnce(&mut sql::Db<'_>) -> Result<T>) -> Result<T> {
        match &mut self.backend {
            Backend::Postgres(cell) => {
                let session: &mut sql::PgSession = cell.get_mut();
                return sql::off_runtime(|| lifecycle::pg_write(session, f));
            }
            Backend::Sqlite(_) => {}
        }
        let tx = self.write_tx()?;
        let out = f(&mut sql::Db::Sqlite(&tx))?;
        tx.commit()?;
        Ok(out)
    }
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

/// The registry schema version this build reads and writes (`PRAGMA user_version`).
pub fn supported_schema() -> i64 {
    migrate::latest()
}

/// The current UTC time as RFC 3339 with seconds precision.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod both_tests;
#[cfg(test)]
mod pg_tests;
#[cfg(test)]
mod race_tests;
#[cfg(test)]
mod tests;
