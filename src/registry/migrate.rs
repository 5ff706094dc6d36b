//! Schema migrations, in pairs: each SQL file of `migrations/` has its PostgreSQL twin of the
//! same name in `migrations/postgres/` (a migration cannot be listed without one: `pair!`
//! includes both), checked column by column by the schema-parity test. Applied in order, each
//! in its own transaction with the version recorded in `schema_migrations` (and, on SQLite,
//! `PRAGMA user_version`). A database newer than this binary is refused (`TooNew`).
//! (Hand-rolled: the migration crates pin older rusqlite versions;
//! docs/reliability.md Crates §1.)

use super::{RegistryError, Result};
use rusqlite::{params, Connection, TransactionBehavior};

/// One migration: its version and the SQL of both backends.
pub(super) struct Migration {
    pub version: i64,
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

macro_rules! pair {
    ($version:expr, $file:literal) => {
        Migration {
            version: $version,
            sqlite: include_str!(concat!("../../migrations/", $file)),
            postgres: include_str!(concat!("../../migrations/postgres/", $file)),
        }
    };
}

/// In order. Append only: an applied migration never changes.
pub(super) const MIGRATIONS: &[Migration] = &[
    pair!(1, "0001_init.sql"),
    pair!(2, "0002_accepted_changes.sql"),
    pair!(3, "0003_compact_storage.sql"),
    pair!(4, "0004_storage_sources.sql"),
    pair!(5, "0005_events.sql"),
    pair!(6, "0006_identity_key.sql"),
    pair!(7, "0007_tools_position.sql"),
    // Numbered at merge (issue 32).
    pair!(8, "0008_ui_sessions.sql"),
    // Numbered at merge (issue 33).
    pair!(9, "0009_registry_head.sql"),
    // Numbered at merge (issue 31).
    pair!(10, "0010_sunsets.sql"),
    // Numbered at merge (issue 33).
    pair!(11, "0011_change_counter.sql"),
    // Numbered at merge (issue 33).
    pair!(12, "0012_reviews_by_watch.sql"),
];

pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

pub fn run(conn: &mut Connection) -> Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current > latest() {
        return Err(RegistryError::TooNew {
            found: current,
            supported: latest(),
        });
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Another process may have migrated while we waited for the write lock.
        let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if now >= m.version {
            continue;
        }
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL) STRICT;",
        )?;
        tx.execute_batch(m.sqlite)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
            params![m.version, super::now_rfc3339()],
        )?;
        tx.pragma_update(None, "user_version", m.version)?;
        tx.commit()?;
    }
    Ok(())
}

/// The key of the advisory lock migrations (and, later, the projection upgrade) hold on
/// PostgreSQL: several daemons may start at once on one database. ("swmigr" in ASCII.)
pub(super) const PG_MIGRATION_LOCK: i64 = 0x7377_6d69_6772;

/// The highest migration applied to `client`'s database (0: none, no `schema_migrations`).
fn applied_postgres(client: &mut impl postgres::GenericClient) -> Result<i64> {
    let exists: bool = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])?
        .try_get(0)?;
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            &[],
        )?
        .try_get(0)?)
}

/// Applies the PostgreSQL migrations `client`'s database lacks. A database already at this
/// binary's schema is only read (no lock, no DDL: a role without CREATE may open it). Else
/// each migration runs in its own transaction that first takes `pg_advisory_xact_lock` and
/// then reads the applied version again, so processes starting at once apply each migration
/// exactly once, in order, and the lock is released by the commit or rollback (never left
/// behind by a dead process). Waiting for the lock and migrating are not bound by the
/// session's `statement_timeout` (another process's migration may take longer).
pub(super) fn run_postgres(client: &mut postgres::Client) -> Result<()> {
    let current = applied_postgres(client)?;
    if current > latest() {
        return Err(RegistryError::TooNew {
            found: current,
            supported: latest(),
        });
    }
    if current == latest() {
        return Ok(());
    }
    loop {
        let mut tx = client.transaction()?;
        // The table is created (or found) by a statement, not looked up: a catalog lookup
        // right after the lock wait may miss the table another process just committed.
        tx.batch_execute(
            "SET LOCAL statement_timeout = 0; SET LOCAL client_min_messages = warning",
        )?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PG_MIGRATION_LOCK])?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)",
        )?;
        let current: i64 = tx
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                &[],
            )?
            .try_get(0)?;
        if current > latest() {
            return Err(RegistryError::TooNew {
                found: current,
                supported: latest(),
            });
        }
        let Some(m) = MIGRATIONS.iter().find(|m| m.version > current) else {
            tx.commit()?;
            return Ok(());
        };
        tx.batch_execute(m.postgres)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
            &[&m.version, &super::now_rfc3339()],
        )?;
        tx.commit()?;
    }
}
