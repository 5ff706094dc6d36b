//! Schema migrations: the SQL files in `migrations/`, applied in order, each in its own
//! transaction with the version recorded in `schema_migrations` and `PRAGMA user_version`.
//! (Hand-rolled: the migration crates pin older rusqlite versions;
//! docs/reliability.md Crates §1.)

use super::{RegistryError, Result};
use rusqlite::{params, Connection, TransactionBehavior};

/// (version, SQL), in order. Append only: an applied migration never changes.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../../migrations/0001_init.sql")),
    (
        2,
        include_str!("../../migrations/0002_accepted_changes.sql"),
    ),
    (3, include_str!("../../migrations/0003_compact_storage.sql")),
    (4, include_str!("../../migrations/0004_storage_sources.sql")),
    (5, include_str!("../../migrations/0005_events.sql")),
    (6, include_str!("../../migrations/0006_identity_key.sql")),
    (7, include_str!("../../migrations/0007_tools_position.sql")),
    // Numbered at merge (issue 32).
    (8, include_str!("../../migrations/0008_ui_sessions.sql")),
    // Numbered at merge.
    (9, include_str!("../../migrations/9999_sunsets.sql")),
];

pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |(v, _)| *v)
}

pub fn run(conn: &mut Connection) -> Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current > latest() {
        return Err(RegistryError::TooNew {
            found: current,
            supported: latest(),
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Another process may have migrated while we waited for the write lock.
        let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if now >= *version {
            continue;
        }
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL) STRICT;",
        )?;
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
            params![version, super::now_rfc3339()],
        )?;
        tx.pragma_update(None, "user_version", version)?;
        tx.commit()?;
    }
    Ok(())
}
