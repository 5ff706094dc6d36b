//! Reading the catalog of a SQLite database file (kind `sqlite`).
//!
//! The file is opened read-only and defensively: a `file:…?mode=ro` URI with
//! `SQLITE_OPEN_READ_ONLY`, `SQLITE_DBCONFIG_DEFENSIVE` on, `SQLITE_DBCONFIG_TRUSTED_SCHEMA` off,
//! `SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE` on, `query_only` on. Nothing is ever written to the
//! database or its `-wal` file and the WAL is never checkpointed. Only the catalog is read
//! (`sqlite_schema` and `PRAGMA table_list / table_xinfo / foreign_key_list / index_list /
//! index_xinfo`), never a row of data.
//!
//! A read-only reader of a database in WAL mode still needs the `-shm` wal-index: either the
//! `-wal` and `-shm` files exist (a writer has the database open, or left them behind), or the
//! directory is writable so SQLite can create them (docs/databases.md).

use crate::core::normalize::sqlite::{
    Catalog, Column, ForeignKeyRow, Index, Relation, Trigger, CATALOG_FORMAT,
};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a database's catalog could not be read. Messages name the file, never row data.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    #[error("{path}: no such database file")]
    NotFound { path: String },
    #[error("{path}: not a regular file")]
    NotAFile { path: String },
    #[error("{path}: cannot open the database read-only: {reason}")]
    Open { path: String, reason: String },
    #[error("{path}: cannot read the database schema: {reason}")]
    Introspect { path: String, reason: String },
    #[error("timed out reading the database schema")]
    Timeout,
    #[error("the database introspection task failed")]
    Task,
}

/// Reads the catalog of the database at `path` into a catalog document (JSON bytes), within
/// `timeout`.
pub async fn fetch(path: &Path, timeout: Duration) -> Result<Vec<u8>, DatabaseError> {
    let owned = path.to_path_buf();
    let task = tokio::task::spawn_blocking(move || read_catalog(&owned, timeout));
    let catalog = match tokio::time::timeout(timeout, task).await {
        Err(_) => return Err(DatabaseError::Timeout),
        Ok(Err(_)) => return Err(DatabaseError::Task),
        Ok(Ok(result)) => result?,
    };
    serde_json::to_vec(&catalog).map_err(|e| DatabaseError::Introspect {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// The `file:` URI of `path`, read-only.
fn read_only_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'-' | b'_' | b'~') {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?mode=ro");
    uri
}

/// Opens `path` read-only and defensively.
pub fn open_read_only(path: &Path, busy: Duration) -> Result<Connection, DatabaseError> {
    let shown = path.display().to_string();
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(DatabaseError::NotFound { path: shown })
        }
        Err(e) => {
            return Err(DatabaseError::Open {
                path: shown,
                reason: e.to_string(),
            })
        }
        Ok(m) if !m.is_file() => return Err(DatabaseError::NotAFile { path: shown }),
        Ok(_) => {}
    }
    let open_err = |e: rusqlite::Error| DatabaseError::Open {
        path: shown.clone(),
        reason: e.to_string(),
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(read_only_uri(path), flags).map_err(open_err)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)
        .map_err(open_err)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)
        .map_err(open_err)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        .map_err(open_err)?;
    conn.pragma_update(None, "query_only", true)
        .map_err(open_err)?;
    conn.busy_timeout(busy).map_err(open_err)?;
    Ok(conn)
}

fn read_catalog(path: &Path, timeout: Duration) -> Result<Catalog, DatabaseError> {
    let conn = open_read_only(path, timeout)?;
    let shown: PathBuf = path.to_path_buf();
    let fail = |e: rusqlite::Error| DatabaseError::Introspect {
        path: shown.display().to_string(),
        reason: e.to_string(),
    };
    // One read transaction: a consistent snapshot of the catalog.
    conn.execute_batch("BEGIN").map_err(fail)?;
    let catalog = introspect(&conn).map_err(fail);
    // Ending a read transaction writes nothing; the connection is read-only anyway.
    let _ = conn.execute_batch("COMMIT");
    catalog
}

fn introspect(conn: &Connection) -> rusqlite::Result<Catalog> {
    struct Entry {
        kind: String,
        name: String,
        table: String,
        sql: Option<String>,
    }
    let mut statement = conn
        .prepare("SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY type, name")?;
    let entries = statement
        .query_map([], |row| {
            Ok(Entry {
                kind: row.get(0)?,
                name: row.get(1)?,
                table: row.get(2)?,
                sql: row.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    // The options of every table at once; when one object makes the whole list fail (an
    // unknown virtual-table module, a broken view), each table's are read on their own.
    let options = table_options(conn).ok();
    let index_sql: BTreeMap<&str, &str> = entries
        .iter()
        .filter(|e| e.kind == "index")
        .filter_map(|e| e.sql.as_deref().map(|s| (e.name.as_str(), s)))
        .collect();

    let mut relations = Vec::new();
    let mut triggers = Vec::new();
    for e in &entries {
        if e.name.starts_with("sqlite_") {
            continue;
        }
        match e.kind.as_str() {
            "table" | "view" => {
                // Object by object: one that cannot be read is recorded as unreadable (its
                // `CREATE` text still in the contract) and the others are read (H36).
                let read = || -> rusqlite::Result<Relation> {
                    let (without_rowid, strict) = match &options {
                        Some(all) => all.get(&e.name).copied().unwrap_or_default(),
                        None => table_option(conn, &e.name)?,
                    };
                    Ok(Relation {
                        name: e.name.clone(),
                        kind: e.kind.clone(),
                        sql: e.sql.clone().unwrap_or_default(),
                        strict,
                        without_rowid,
                        columns: columns(conn, &e.name)?,
                        foreign_keys: foreign_keys(conn, &e.name)?,
                        indexes: indexes(conn, &e.name, &index_sql)?,
                        unreadable: None,
                    })
                };
                relations.push(read().unwrap_or_else(|error| Relation {
                    name: e.name.clone(),
                    kind: e.kind.clone(),
                    sql: e.sql.clone().unwrap_or_default(),
                    unreadable: Some(unreadable_reason(&error)),
                    ..Relation::default()
                }));
            }
            "trigger" => triggers.push(Trigger {
                name: e.name.clone(),
                table: e.table.clone(),
                sql: e.sql.clone().unwrap_or_default(),
            }),
            _ => {}
        }
    }
    Ok(Catalog {
        format: CATALOG_FORMAT.into(),
        relations,
        triggers,
    })
}

/// Why an object could not be read: SQLite's message (the bundled SQLite's wording is fixed,
/// so the contract does not move between runs), without any row data (none is read).
fn unreadable_reason(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        other => other.to_string(),
    }
}

/// `(without_rowid, strict)` of every table and view.
fn table_options(conn: &Connection) -> rusqlite::Result<BTreeMap<String, (bool, bool)>> {
    let mut options = BTreeMap::new();
    let mut statement =
        conn.prepare("SELECT name, wr, strict FROM pragma_table_list WHERE schema = 'main'")?;
    for row in statement.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)? != 0,
            row.get::<_, i64>(2)? != 0,
        ))
    })? {
        let (name, wr, strict) = row?;
        options.insert(name, (wr, strict));
    }
    Ok(options)
}

/// `(without_rowid, strict)` of one table or view.
fn table_option(conn: &Connection, name: &str) -> rusqlite::Result<(bool, bool)> {
    let mut statement =
        conn.prepare("SELECT wr, strict FROM pragma_table_list(?1) WHERE schema = 'main'")?;
    let mut rows = statement.query_map([name], |row| {
        Ok((row.get::<_, i64>(0)? != 0, row.get::<_, i64>(1)? != 0))
    })?;
    rows.next().transpose().map(Option::unwrap_or_default)
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<Column>> {
    let mut statement = conn.prepare(
        "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?1) ORDER BY cid",
    )?;
    let rows = statement.query_map([table], |row| {
        Ok(Column {
            name: row.get(0)?,
            declared_type: row.get::<_, Option<String>>(1)?.unwrap_or_default(),
            not_null: row.get::<_, i64>(2)? != 0,
            default: row.get(3)?,
            pk: row.get(4)?,
            hidden: row.get(5)?,
        })
    })?;
    rows.collect()
}

fn foreign_keys(conn: &Connection, table: &str) -> rusqlite::Result<Vec<ForeignKeyRow>> {
    let mut statement = conn.prepare(
        "SELECT id, seq, \"table\", \"from\", \"to\", on_update, on_delete, \"match\" FROM pragma_foreign_key_list(?1)",
    )?;
    let rows = statement.query_map([table], |row| {
        Ok(ForeignKeyRow {
            id: row.get(0)?,
            seq: row.get(1)?,
            table: row.get(2)?,
            from: row.get(3)?,
            to: row.get(4)?,
            on_update: row.get(5)?,
            on_delete: row.get(6)?,
            match_: row.get(7)?,
        })
    })?;
    rows.collect()
}

fn indexes(
    conn: &Connection,
    table: &str,
    index_sql: &BTreeMap<&str, &str>,
) -> rusqlite::Result<Vec<Index>> {
    let mut statement = conn.prepare(
        "SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1) ORDER BY name",
    )?;
    let heads = statement
        .query_map([table], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)? != 0,
                row.get::<_, String>(2)?,
                row.get::<_, i64>(3)? != 0,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut key_columns =
        conn.prepare("SELECT cid, name FROM pragma_index_xinfo(?1) WHERE key = 1 ORDER BY seqno")?;
    let mut out = Vec::new();
    for (name, unique, origin, partial) in heads {
        let columns = key_columns
            .query_map([&name], |row| {
                let cid: i64 = row.get(0)?;
                let column: Option<String> = row.get(1)?;
                Ok(match (cid, column) {
                    (-1, _) => "<rowid>".to_string(),
                    (_, Some(c)) => c,
                    (_, None) => "<expr>".to_string(),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        out.push(Index {
            sql: index_sql.get(name.as_str()).map(|s| s.to_string()),
            name,
            unique,
            origin,
            partial,
            columns,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_escapes_query_characters() {
        assert_eq!(
            read_only_uri(Path::new("/tmp/a b?#%.db")),
            "file:/tmp/a%20b%3F%23%25.db?mode=ro"
        );
    }
}
