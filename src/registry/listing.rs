//! Whole-registry reads for listings (status, the API, the daemon's gauges): each is one
//! query, so answering for 10,000 watches costs one pass, not three queries per watch.

use super::sql::values;
use super::{Registry, Result, ReviewState, WatchState};
use crate::core::model::Compatibility;
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// The listed fields of a review (`pending list`), without its candidate and report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewHead {
    pub id: i64,
    pub watch: String,
    pub state: ReviewState,
    pub compatibility: Compatibility,
    pub change_count: i64,
    pub created_at: String,
    pub base_registry_version: i64,
    pub candidate_fingerprint: String,
}

/// What [`Registry::change_token`] answers: compared for equality with an earlier token of the
/// same connection, never read as a number (a backend may count differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeToken(i64);

/// Page cache of each pooled connection, in KiB.
pub const POOLED_CACHE_KIB: i64 = 256;

impl Registry {
    /// Another connection to a registry this process already opened with [`Registry::open`]
    /// (or `open_existing`), which ran `quick_check` and the migrations: the daemon's pooled
    /// connections skip both (a `quick_check` reads the whole file).
    pub fn open_pooled(path: &Path) -> Result<Registry> {
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(10))?;
        super::stable_plans(&conn)?;
        // Per connection, as `open_existing` sets them (journal_mode is already WAL in the file).
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // A daemon keeps up to `max_concurrency + 2` of these: a small page cache each
        // (SQLite's default is 2 MiB), which point reads of a few B-tree pages do not miss.
        conn.pragma_update(None, "cache_size", -POOLED_CACHE_KIB)?;
        Ok(Registry {
            backend: super::Backend::Sqlite(conn),
            routes: None,
        })
    }

    /// The `FINGERPRINT_VERSION` the accepted contract of `tool` was fingerprinted with
    /// (`None`: no accepted contract). A read-only reader compares it with its own: it cannot
    /// run the upgrade a read-write open does.
    pub fn tool_fingerprint_version(&self, tool: &str) -> Result<Option<i64>> {
        self.read(|db| {
            db.query_opt(
                "SELECT fingerprint_version FROM tools WHERE name = ?1",
                values![tool],
                |r| r.get(0),
            )
        })
    }

    /// The registry's change token: differs from the one this connection read last when
    /// another connection (of this process or another) committed since. The daemon's recount
    /// and the gateway's contract reader compare tokens on a connection that never writes; a
    /// token means nothing across connections or backends (SQLite: `PRAGMA data_version`;
    /// PostgreSQL: the head row's `changes`, bumped by every write transaction).
    pub fn change_token(&self) -> Result<ChangeToken> {
        match &self.backend {
            super::Backend::Sqlite(c) => Ok(ChangeToken(c.query_row(
                "PRAGMA data_version",
                [],
                |r| r.get(0),
            )?)),
            super::Backend::Postgres(_) => self.read(|db| {
                db.query_opt("SELECT changes FROM registry_head WHERE id = 1", &[], |r| {
                    r.get(0)
                })?
                .map(ChangeToken)
                .ok_or_else(|| {
                    super::RegistryError::Corrupt("the registry_head row is missing".into())
                })
            }),
        }
    }

    /// Every stored watch state, by watch name, in one query.
    pub fn watch_state_map(&self) -> Result<HashMap<String, WatchState>> {
        let states = self.read(|db| {
            db.query(
                "SELECT watch, kind, status, last_compatibility, last_checked_at, last_error,
                        consecutive_failures, source_identity
                 FROM watch_state",
                &[],
                |r| super::watch::watch_state_at(r, 0),
            )
        })?;
        let mut out = HashMap::with_capacity(states.len());
        for state in states {
            out.insert(state.watch.clone(), state);
        }
        Ok(out)
    }

    /// The accepted fingerprint of every tool, by name (without parsing the contracts).
    pub fn fingerprints(&self) -> Result<HashMap<String, String>> {
        let rows: Vec<(String, String)> = self.read(|db| {
            db.query("SELECT name, fingerprint FROM tools", &[], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
        })?;
        Ok(rows.into_iter().collect())
    }

    /// A tool's accepted fingerprint (without parsing its contract).
    pub fn fingerprint(&self, name: &str) -> Result<Option<String>> {
        self.read(|db| {
            db.query_opt(
                "SELECT fingerprint FROM tools WHERE name = ?1",
                values![name],
                |r| r.get(0),
            )
        })
    }

    /// The change count of every watch's open review, by watch (absent: none open).
    pub fn open_change_counts(&self) -> Result<HashMap<String, i64>> {
        // CAST: PostgreSQL's SUM of a BIGINT is a NUMERIC.
        let rows: Vec<(String, i64)> = self.read(|db| {
            db.query(
                "SELECT watch, CAST(SUM(change_count) AS BIGINT) FROM reviews WHERE state = ?1
                 GROUP BY watch",
                values![ReviewState::Open],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })?;
        Ok(rows.into_iter().collect())
    }

    /// How many reviews are open.
    pub fn open_review_count(&self) -> Result<i64> {
        let n = self.read(|db| {
            db.query_opt(
                "SELECT count(*) FROM reviews WHERE state = ?1",
                values![ReviewState::Open],
                |r| r.get(0),
            )
        })?;
        Ok(n.unwrap_or(0))
    }

    /// When the oldest open review was queued (RFC 3339), if any is open.
    pub fn oldest_open_review(&self) -> Result<Option<String>> {
        let oldest = self.read(|db| {
            db.query_opt(
                "SELECT MIN(created_at) FROM reviews WHERE state = ?1",
                values![ReviewState::Open],
                |r| r.get(0),
            )
        })?;
        Ok(oldest.flatten())
    }

    /// Reviews' listed fields, newest first; `open_only` limits to open ones.
    pub fn review_heads(&self, open_only: bool) -> Result<Vec<ReviewHead>> {
        let only: Option<ReviewState> = open_only.then_some(ReviewState::Open);
        self.read(|db| {
            db.query(
                "SELECT id, watch, state, compatibility, change_count, created_at,
                        base_registry_version, candidate_fingerprint
                 FROM reviews WHERE (?1 IS NULL OR state = ?1) ORDER BY id DESC",
                values![only],
                |r| {
                    Ok(ReviewHead {
                        id: r.get(0)?,
                        watch: r.get(1)?,
                        state: r.get(2)?,
                        compatibility: r.get(3)?,
                        change_count: r.get(4)?,
                        created_at: r.get(5)?,
                        base_registry_version: r.get(6)?,
                        candidate_fingerprint: r.get(7)?,
                    })
                },
            )
        })
    }
}

impl super::Review {
    /// The listed fields of this review.
    pub fn head(&self) -> ReviewHead {
        ReviewHead {
            id: self.id,
            watch: self.watch.clone(),
            state: self.state,
            compatibility: self.compatibility,
            change_count: self.change_count,
            created_at: self.created_at.clone(),
            base_registry_version: self.base_registry_version,
            candidate_fingerprint: self.candidate_fingerprint.clone(),
        }
    }
}
