//! Opening a registry (created only when none exists, atomically), its checks (`quick_check`,
//! schema version), the migrations and the re-fingerprinting of rows stored under an older
//! projection; the write transaction every write begins (`BEGIN IMMEDIATE`).

use super::sql::values;
use super::{
    migrate, read_tool, sql, stored_spec, upgrade, Backend, Registry, RegistryError, Result,
};
use crate::core::fingerprint::{tool_fingerprint, FINGERPRINT_VERSION};
use crate::core::model::Kind;
use crate::core::normalize::SharedEndpoints;
use rusqlite::{Connection, Transaction, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
        let mut registry = Registry {
            backend: Backend::Sqlite(conn),
            routes: None,
        };
        migrate::run(registry.conn_mut()?)?;
        registry.upgrade_projection()?;
        Ok(registry)
    }
    /// A registry a newer projection wrote is opened for reading only in effect: its rows are
    /// not re-fingerprinted by this older one, and every write is refused (`write_tx`).
    /// Otherwise the rows an older projection stored are read again, then this binary's
    /// `FINGERPRINT_VERSION` is recorded. Each step reads first and writes only when there is
    /// something to do, in a write transaction (on PostgreSQL the head row's lock: daemons
    /// starting at once run it one after another, and the later ones find nothing left).
    fn upgrade_projection(&mut self) -> Result<()> {
        if self.read(recorded_fingerprint_version)? <= FINGERPRINT_VERSION {
            self.refingerprint_outdated()?;
            self.backfill_sunsets()?;
            self.record_fingerprint_version()?;
        }
        Ok(())
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
        Ok(Registry {
            backend: Backend::Sqlite(conn),
            routes: None,
        })
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
    /// Begins a write (`BEGIN IMMEDIATE`), refused when the registry was last written by a
    /// binary of a newer projection (`FINGERPRINT_VERSION` in the head row, read under the
    /// write lock, so a newer process recording it meanwhile is seen):
    /// [`RegistryError::NewerProjection`]. Reads are not affected.
    pub(super) fn write_tx(&mut self) -> Result<Transaction<'_>> {
        let tx = self
            .conn_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let recorded = recorded_fingerprint_version(&mut sql::Db::Sqlite(&tx))?;
        if recorded > FINGERPRINT_VERSION {
            return Err(RegistryError::NewerProjection {
                recorded,
                binary: FINGERPRINT_VERSION,
            });
        }
        Ok(tx)
    }
    /// Records this binary's `FINGERPRINT_VERSION` in the head row once its projection
    /// upgrade has run (a newer binary's first open; read first, so an open with nothing to
    /// record takes no write lock). Never lowers it.
    fn record_fingerprint_version(&mut self) -> Result<()> {
        if self.read(recorded_fingerprint_version)? >= FINGERPRINT_VERSION {
            return Ok(());
        }
        self.write(|db| {
            db.execute(
                "UPDATE registry_head SET fingerprint_version = ?1 WHERE id = 1 AND fingerprint_version < ?1",
                values![FINGERPRINT_VERSION],
            )
        })?;
        Ok(())
    }
    /// Recomputes fingerprints of snapshots stored under an older projection version, from the
    /// normalized specs the registry keeps. Not a contract change: no version bump, no drift.
    fn refingerprint_outdated(&mut self) -> Result<()> {
        // Read first: a registry with nothing to redo takes no write lock, so opening it
        // (`status`, `history`, ...) never waits behind another process's write
        // (docs/reliability.md, C5).
        let outdated: i64 = self
            .read(|db| {
                db.query_opt(
                    "SELECT (SELECT count(*) FROM tools WHERE fingerprint_version < ?1)
                      + (SELECT count(*) FROM tool_versions WHERE fingerprint_version < ?1)
                      + (SELECT count(*) FROM reviews WHERE fingerprint_version < ?1)",
                    values![FINGERPRINT_VERSION],
                    |r| r.get(0),
                )
            })?
            .unwrap_or(0);
        if outdated == 0 {
            return Ok(());
        }
        let routes = self.current_routes();
        self.write(|db| {
            // A 304-only watch must fetch once to gain what the new projection models.
            db.execute(
                "DELETE FROM validators WHERE watch IN (SELECT name FROM tools WHERE fingerprint_version < ?1)",
                values![FINGERPRINT_VERSION],
            )?;
            upgrade::accepted_from_sources(db, &routes)?;
            upgrade::open_reviews_from_sources(db)?;
            // The accepted contracts may read differently now: their sunset facts are computed
            // again (`backfill_sunsets`, right after).
            db.execute("DELETE FROM sunset_versions", &[])?;
            refingerprint_rest(db)
        })
    }
}

/// Whatever has no source (older releases, external `$ref`s), or whose source the new
/// normalizer refuses or finds hidden text in, is re-fingerprinted from its normalized contract
/// as before; the first full fetch then classifies it. A row is found by its (name, number)
/// key: (name, version), (tool, version), (watch, id).
fn refingerprint_rest(db: &mut sql::Db<'_>) -> Result<()> {
    for (table, name_col, number_col, spec_col, gz_col, fp_col, source_cols) in [
        (
            "tools",
            "name",
            "version",
            "spec_json",
            // Typed NULLs: PostgreSQL reads them as BYTEA and TEXT (SQLite keeps a NULL).
            "CAST(NULL AS BYTEA)",
            "fingerprint",
            "CAST(NULL AS TEXT), CAST(NULL AS TEXT)",
        ),
        (
            "tool_versions",
            "tool",
            "version",
            "spec_json",
            "spec_gz",
            "fingerprint",
            "source_kind, source_digest",
        ),
        (
            "reviews",
            "watch",
            "id",
            "candidate_spec_json",
            "candidate_gz",
            "candidate_fingerprint",
            "source_kind, source_digest",
        ),
    ] {
        type Row = (
            (String, i64, String),
            (Option<Vec<u8>>, Option<Kind>, Option<String>),
        );
        let rows: Vec<Row> = db.query(
            &format!(
                "SELECT {name_col}, {number_col}, {spec_col}, {gz_col}, {source_cols}
                 FROM {table} WHERE fingerprint_version < ?1 ORDER BY {name_col}, {number_col}"
            ),
            values![FINGERPRINT_VERSION],
            |r| {
                Ok((
                    (r.get(0)?, r.get(1)?, r.get(2)?),
                    (r.get(3)?, r.get(4)?, r.get(5)?),
                ))
            },
        )?;
        for ((name, number, json), (gz, kind, digest)) in rows {
            let key = match table {
                "tools" => name.clone(),
                "tool_versions" => format!("{name}@{number}"),
                _ => number.to_string(),
            };
            let from_source = kind.map(|k| (k, digest.as_deref()));
            let read = match table {
                // A new `tools` row keeps its contract in the current history row.
                "tools" => read_tool(db, &name).map(|t| t.map(|t| tool_fingerprint(&t.spec))),
                // A pruned review keeps the fingerprint it was decided on (metadata only).
                "reviews" if json.is_empty() && gz.is_none() && from_source.is_none() => Ok(None),
                _ => stored_spec(
                    db,
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
            let (set, fp) = match &fingerprint {
                Some(fp) => (
                    format!("{fp_col} = ?4, fingerprint_version = ?3"),
                    fp.as_str(),
                ),
                None => ("fingerprint_version = ?3".to_string(), ""),
            };
            let params = values![&name, number, FINGERPRINT_VERSION, fp];
            let params = if fingerprint.is_some() {
                params
            } else {
                &params[..3]
            };
            db.execute(
                &format!("UPDATE {table} SET {set} WHERE {name_col} = ?1 AND {number_col} = ?2"),
                params,
            )?;
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
pub(super) fn stable_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map(|_| ())
}

fn table_name(table: &str) -> &'static str {
    match table {
        "tools" => "tools",
        "tool_versions" => "tool_versions",
        _ => "reviews",
    }
}

/// The registry a process opened at startup, to ask later whether it is still that one (a
/// registry deleted or replaced under a running daemon is never written to or re-created:
/// docs/reliability.md H6). SQLite: the file's (device, inode) at the configured path.
#[derive(Debug, Clone)]
pub struct Opened {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

/// How the registry opened at startup was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    Deleted,
    Replaced,
}

impl Lost {
    /// The word logs and errors use (`registry_replaced`'s `what`).
    pub fn as_str(self) -> &'static str {
        match self {
            Lost::Deleted => "deleted",
            Lost::Replaced => "replaced",
        }
    }
}

fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok((m.dev(), m.ino()))
}

impl Opened {
    /// The registry at `path` as it is now (right after opening it).
    pub fn at(path: &Path) -> Opened {
        Opened {
            path: path.to_path_buf(),
            identity: file_identity(path).ok(),
        }
    }

    /// Whether the registry there is still the one opened: `None` when it is, or when that
    /// cannot be known (a stat error is not evidence of a replacement).
    pub fn lost(&self) -> Option<Lost> {
        match (file_identity(&self.path), self.identity) {
            (Ok(now), Some(then)) if now == then => None,
            (Ok(_), Some(_)) => Some(Lost::Replaced),
            (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => Some(Lost::Deleted),
            _ => None,
        }
    }
}

impl Registry {
    /// A registry on the PostgreSQL database `client` is connected to, migrated to this
    /// binary's schema under the migrations' advisory lock, its projection upgraded
    /// (`Registry::open_at` is the entry point).
    pub(crate) fn open_postgres(mut client: postgres::Client) -> Result<Registry> {
        sql::off_runtime(|| migrate::run_postgres(&mut client))?;
        let mut registry = Registry {
            backend: Backend::Postgres(Box::new(std::cell::RefCell::new(sql::Held::Own(
                sql::PgSession::new(client),
            )))),
            routes: None,
        };
        // A projection upgrade to run (this binary newer than the registry's last writer) runs
        // under the migrations' advisory lock, held by the session: daemons starting at once
        // run it one after another, the later ones finding nothing left. A session that dies
        // holding it releases it.
        let behind = registry.read(recorded_fingerprint_version)? < FINGERPRINT_VERSION;
        if behind {
            registry.on_client(|c| {
                c.batch_execute(&format!(
                    "SET statement_timeout = 0; SELECT pg_advisory_lock({}); RESET statement_timeout",
                    migrate::PG_MIGRATION_LOCK
                ))?;
                Ok(())
            })?;
        }
        registry.upgrade_projection()?;
        if behind {
            registry.on_client(|c| {
                c.execute(
                    "SELECT pg_advisory_unlock($1)",
                    &[&migrate::PG_MIGRATION_LOCK],
                )?;
                Ok(())
            })?;
        }
        Ok(registry)
    }
}

impl Registry {
    /// Runs `f` on the PostgreSQL client itself (session-level statements: advisory locks).
    fn on_client<T>(&self, f: impl FnOnce(&mut postgres::Client) -> Result<T>) -> Result<T> {
        self.read(|db| match db {
            sql::Db::Postgres(session) => f(session.client()?),
            sql::Db::Sqlite(_) => Err(RegistryError::Postgres("not a PostgreSQL session".into())),
        })
    }
}

/// The PostgreSQL twin of [`Registry::write_tx`]: `BEGIN`, then the head row locked before
/// anything else (an `UPDATE` of its change counter, which takes the lock `FOR UPDATE` takes), so every write transaction waits for the one before it
/// to end (shared source blobs and the compare-and-swap are race-free under READ COMMITTED, as
/// under SQLite's single writer); the fingerprint-version guard reads that same row. `f` runs
/// in the transaction, committed when it returns `Ok`, rolled back otherwise.
pub(super) fn pg_write<T>(
    session: &mut sql::PgSession,
    f: impl FnOnce(&mut sql::Db<'_>) -> Result<T>,
) -> Result<T> {
    session.client()?.batch_execute("BEGIN")?;
    session.failed_in_transaction = false;
    // From here on the transaction ends with COMMIT or ROLLBACK whatever happens: an early
    // return or a panic inside `f` drops the guard, which rolls back.
    let mut tx = PgTx {
        session,
        open: true,
    };
    // The lock, the guard's reading and the change counter in one statement: the counter moves
    // with every write transaction that commits (a rolled-back one leaves it).
    let recorded: i64 = sql::Db::Postgres(tx.session)
        .query_opt(
            "UPDATE registry_head SET changes = changes + 1 WHERE id = 1
             RETURNING fingerprint_version",
            &[],
            |r| r.get(0),
        )?
        .ok_or_else(|| RegistryError::Corrupt("the registry_head row is missing".into()))?;
    if recorded > FINGERPRINT_VERSION {
        return Err(RegistryError::NewerProjection {
            recorded,
            binary: FINGERPRINT_VERSION,
        });
    }
    let out = f(&mut sql::Db::Postgres(tx.session))?;
    // `f` went on after a failed statement: the server rolled everything back already.
    if tx.session.failed_in_transaction {
        return Err(RegistryError::Postgres(
            "a statement of this write failed and the transaction was rolled back".into(),
        ));
    }
    tx.open = false;
    tx.session.client()?.batch_execute("COMMIT")?;
    Ok(out)
}

/// An open PostgreSQL write transaction: rolled back when dropped still open (an error
/// returned early, or a panic unwinding through [`pg_write`]).
struct PgTx<'c> {
    session: &'c mut sql::PgSession,
    open: bool,
}

impl Drop for PgTx<'_> {
    fn drop(&mut self) {
        if self.open {
            // The error being returned (or the panic) is the one to report; a failed ROLLBACK
            // leaves a broken session, which the server rolls back when it closes.
            if let Ok(client) = self.session.client() {
                let _ = client.batch_execute("ROLLBACK");
            }
        }
    }
}

/// The `FINGERPRINT_VERSION` the head row records (0: none yet).
fn recorded_fingerprint_version(db: &mut sql::Db<'_>) -> Result<i64> {
    db.query_opt(
        "SELECT fingerprint_version FROM registry_head WHERE id = 1",
        &[],
        |r| r.get(0),
    )?
    .ok_or_else(|| RegistryError::Corrupt("the registry_head row is missing".into()))
}
