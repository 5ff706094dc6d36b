//! `schemawatch registry copy` (issue 33, item 5): a whole registry copied exactly between
//! backends (SQLite to PostgreSQL, the path from one host's file to a shared database; back;
//! or SQLite to SQLite), then every accepted contract and retained version read back from the
//! target with its fingerprint compared to the source's.
//!
//! Table by table in dependency order ([`COPIED`]: a row's references are written before it),
//! every column of the source's schema (learnt from it at run time, so a column a later
//! migration adds is copied without a change here), rows in primary-key order, ids kept. The
//! source is read in one snapshot (a read transaction), the target written in one write
//! transaction: a failure anywhere leaves the target as it was (failpoint
//! `copy.before_commit`). The target must be empty: nothing but what a fresh migration writes.
//! Every table the migrations create is listed here, copied or [`SKIPPED`] with why; a source
//! holding a table not listed is refused, and a test fails when a migration adds one.

use super::failpoint;
use super::sql::{values, ColumnType, Db, Owned};
use super::{Registry, RegistryError};
use crate::core::fingerprint::tool_fingerprint;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A table copied: its name, the primary key its rows are read in order of, and, for the
/// one-row tables a fresh migration already fills, the condition that marks that row as used
/// (the copy replaces the fresh row with the source's).
struct Table {
    name: &'static str,
    key: &'static str,
    fresh_row_used: Option<&'static str>,
}

const fn table(name: &'static str, key: &'static str) -> Table {
    Table {
        name,
        key,
        fresh_row_used: None,
    }
}

/// Every table copied, in the order written: the head and meta rows, the identity key, the
/// stored sources before the contracts and history reading them, contracts before their
/// sunset facts, watch state, reviews before the rejected candidates naming them, sinks and
/// events before their deliveries.
const COPIED: &[Table] = &[
    Table {
        name: "registry_head",
        key: "id",
        fresh_row_used: Some("registry_version <> 0"),
    },
    Table {
        name: "registry_meta",
        key: "id",
        fresh_row_used: Some("event_seq <> 0"),
    },
    table("identity_key", "id"),
    table("sources", "digest"),
    table("tools", "name"),
    table("tool_versions", "tool, version"),
    table("sunset_versions", "watch, version"),
    table("sunsets", "watch, version, endpoint"),
    table("sunset_alerts", "watch, endpoint, sunset"),
    table("watch_state", "watch"),
    table("validators", "watch, source_digest"),
    table("reviews", "id"),
    table("rejected_candidates", "watch, fingerprint"),
    table("events", "seq"),
    table("notify_sinks", "name"),
    table("deliveries", "event_seq, sink"),
];

/// Tables the migrations create that are deliberately not copied, each with why. A target
/// holding rows in them is still refused as not empty.
pub const SKIPPED: &[(&str, &str)] = &[
    (
        "ui_sessions",
        "review-UI login sessions are bearer credentials the source's daemon issued; reviewers log in again on the copy's rather than have a copy extend them",
    ),
    (
        "delivery_lease",
        "the lease of the process delivering from the source (it names that process); copied, it would keep the copy's daemon from delivering until it expired",
    ),
];

/// Bookkeeping tables of the database itself: `schema_migrations` is written by the target's
/// own migrations; SQLite's own (`sqlite_` names: `sqlite_sequence` holds AUTOINCREMENT
/// high-water marks, the reviews' copied on its own; `sqlite_stat1` the planner's statistics).
const INTERNAL: &[&str] = &["schema_migrations"];

fn internal(table: &str) -> bool {
    INTERNAL.contains(&table) || table.starts_with("sqlite_")
}

/// Rows read (and written) per round, fewer for a table with blobs (a stored source can be
/// megabytes); bound values per INSERT at most.
const BATCH_ROWS: i64 = 500;
const BATCH_ROWS_WITH_BLOBS: i64 = 50;
const MAX_BOUND_VALUES: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The target already holds a registry's data: a copy never merges or overwrites.
    #[error("the target registry is not empty ({table} holds {rows} row(s) a new registry does not have): copy only into a new SQLite file or an empty PostgreSQL database")]
    TargetNotEmpty { table: &'static str, rows: i64 },
    /// The two schemas differ from what this binary copies (a table or column not known).
    #[error("cannot copy: {0}")]
    Schema(String),
    /// Read back from the target, a contract's fingerprint is not the source's.
    #[error("verification failed after the copy: {what}; the target holds the copy, delete it (or empty the database) before trying again")]
    Unverified { what: String },
    #[error("{0}")]
    Password(String),
    #[error("a password in the registry URL is refused (it would show in `ps` and in shell history): use --password-file (or --from-/--to-password-file) or PGPASSFILE")]
    PasswordInUrl,
    #[error("the registry URL does not parse (postgresql://user@host:port/db)")]
    UrlSyntax,
    #[error("{0}")]
    Url(#[from] crate::sources::postgres::UrlError),
}

/// What a copy wrote and checked, in a stable order for printing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CopyCounts {
    /// Rows written per table, in copy order (every copied table, zeros included).
    pub tables: Vec<(&'static str, u64)>,
    /// The reviews' id high-water mark carried over: the next review gets the id after it,
    /// as it would have on the source (an id deleted at the top is never reused).
    pub reviews_high_water: i64,
    /// Accepted contracts and retained versions read back from the target whose fingerprint
    /// is the source's.
    pub fingerprints_verified: u64,
    /// How long the rows took (read, written, committed), and the read-back (which
    /// re-normalizes every contract stored as its source document).
    pub copied_in: std::time::Duration,
    pub verified_in: std::time::Duration,
}

/// The source's fingerprints, read in the snapshot copied: accepted contracts by name, and
/// retained versions by (tool, version).
#[derive(Debug, Default)]
pub(crate) struct Fingerprints {
    tools: BTreeMap<String, String>,
    versions: BTreeMap<(String, i64), String>,
}

/// Copies the registry `from` into the empty registry `to` in one write transaction, then
/// reads every accepted contract and retained version back from `to` and compares its
/// fingerprint with the source's.
pub fn copy(from: &Registry, to: &mut Registry) -> Result<CopyCounts, CopyError> {
    let started = std::time::Instant::now();
    let (mut counts, expected) = copy_rows(from, to)?;
    counts.copied_in = started.elapsed();
    let started = std::time::Instant::now();
    // Committed by now: whatever stops the read-back, the target holds the copy.
    counts.fingerprints_verified = verify(&expected, to).map_err(|e| match e {
        CopyError::Registry(e) => CopyError::Unverified {
            what: format!("reading the copy back: {e}"),
        },
        other => other,
    })?;
    counts.verified_in = started.elapsed();
    Ok(counts)
}

/// [`copy`] without the read-back (which needs the contracts' reads on the target's backend).
pub(crate) fn copy_rows(
    from: &Registry,
    to: &mut Registry,
) -> Result<(CopyCounts, Fingerprints), CopyError> {
    let target_tables = to.read(tables)?;
    let target_columns = to.read(|db| {
        COPIED
            .iter()
            .map(|t| columns(db, t.name))
            .collect::<super::Result<Vec<_>>>()
    })?;
    from.read(|src| {
        in_snapshot(src, |src| {
            let source_tables = tables(src)?;
            if let Err(refused) = check_tables(&source_tables, &target_tables) {
                return Ok(Err(refused));
            }
            let mut plan = Vec::with_capacity(COPIED.len());
            for (t, theirs) in COPIED.iter().zip(&target_columns) {
                let ours = columns(src, t.name)?;
                match check_columns(t.name, &ours, theirs) {
                    Ok(columns) => plan.push(columns),
                    Err(refused) => return Ok(Err(refused)),
                }
            }
            // A refusal found inside the transaction rolls it back: the target is left exactly
            // as it was (not even its change counter moves).
            let mut refused = None;
            let written = to.write(|dst| match write_all(src, dst, &plan)? {
                Ok(done) => Ok(done),
                Err(why) => {
                    refused = Some(why);
                    Err(RegistryError::RolledBack)
                }
            });
            match (written, refused) {
                (_, Some(why)) => Ok(Err(why)),
                (written, None) => written.map(Ok),
            }
        })
    })?
}

/// Runs `f` in one read transaction on `db`, so every table is read as of one moment even
/// while a daemon writes the source.
fn in_snapshot<T>(
    db: &mut Db<'_>,
    f: impl FnOnce(&mut Db<'_>) -> super::Result<T>,
) -> super::Result<T> {
    let begin = match db {
        Db::Sqlite(_) => "BEGIN",
        Db::Postgres(_) => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    };
    db.execute(begin, &[])?;
    let out = f(db);
    // Nothing was written: ending it either way is the same; the copy's error comes first.
    let ended = db.execute("COMMIT", &[]);
    let out = out?;
    ended?;
    Ok(out)
}

/// Inside the target's write transaction: refuses a target holding data, then copies every
/// table, the reviews' high-water mark, and reads the source's fingerprints.
fn write_all(
    src: &mut Db<'_>,
    dst: &mut Db<'_>,
    plan: &[Vec<(String, ColumnType)>],
) -> super::Result<Result<(CopyCounts, Fingerprints), CopyError>> {
    for (name, used) in COPIED
        .iter()
        .map(|t| (t.name, t.fresh_row_used))
        .chain(SKIPPED.iter().map(|(name, _)| (*name, None)))
    {
        let rows = count_where(dst, name, used)?;
        if rows > 0 {
            return Ok(Err(CopyError::TargetNotEmpty { table: name, rows }));
        }
    }
    let mut counts = CopyCounts::default();
    for (t, columns) in COPIED.iter().zip(plan) {
        if t.fresh_row_used.is_some() {
            dst.execute(&format!("DELETE FROM {}", t.name), &[])?;
        }
        let rows = copy_table(src, dst, t, columns)?;
        counts.tables.push((t.name, rows));
    }
    counts.reviews_high_water = reviews_high_water(src)?;
    set_reviews_high_water(dst, counts.reviews_high_water)?;
    let expected = fingerprints(src)?;
    failpoint::hit("copy.before_commit")?;
    Ok(Ok((counts, expected)))
}

fn count_where(db: &mut Db<'_>, table: &str, used: Option<&str>) -> super::Result<i64> {
    let sql = match used {
        Some(condition) => format!("SELECT COUNT(*) FROM {table} WHERE {condition}"),
        None => format!("SELECT COUNT(*) FROM {table}"),
    };
    Ok(db.query_opt(&sql, &[], |r| r.get(0))?.unwrap_or(0))
}

/// Copies one table in batches of rows, each written by multi-row INSERTs; the rows written.
fn copy_table(
    src: &mut Db<'_>,
    dst: &mut Db<'_>,
    t: &Table,
    columns: &[(String, ColumnType)],
) -> super::Result<u64> {
    let names = columns
        .iter()
        .map(|(name, _)| format!("\"{name}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let select = format!(
        "SELECT {names} FROM {} ORDER BY {} LIMIT ?1 OFFSET ?2",
        t.name, t.key
    );
    let batch = if columns.iter().any(|(_, ty)| *ty == ColumnType::Bytes) {
        BATCH_ROWS_WITH_BLOBS
    } else {
        BATCH_ROWS
    };
    let per_insert = (MAX_BOUND_VALUES / columns.len().max(1)).max(1);
    let mut copied: u64 = 0;
    loop {
        let offset = i64::try_from(copied).unwrap_or(i64::MAX);
        let rows: Vec<Vec<Owned>> = src.query(&select, values![batch, offset], |r| {
            columns
                .iter()
                .enumerate()
                .map(|(i, (_, ty))| r.get_owned(i, *ty))
                .collect()
        })?;
        for chunk in rows.chunks(per_insert) {
            let mut tuples = Vec::with_capacity(chunk.len());
            let mut n = 0;
            for _ in chunk {
                let placeholders: Vec<String> = (0..columns.len())
                    .map(|_| {
                        n += 1;
                        format!("?{n}")
                    })
                    .collect();
                tuples.push(format!("({})", placeholders.join(", ")));
            }
            let insert = format!(
                "INSERT INTO {} ({names}) VALUES {}",
                t.name,
                tuples.join(", ")
            );
            let bound: Vec<_> = chunk.iter().flatten().map(Owned::value).collect();
            dst.execute(&insert, &bound)?;
        }
        copied += rows.len() as u64;
        if (rows.len() as i64) < batch {
            return Ok(copied);
        }
    }
}

/// The highest review id ever handed out (SQLite's AUTOINCREMENT mark, PostgreSQL's identity
/// sequence), never lower than the highest id present.
fn reviews_high_water(db: &mut Db<'_>) -> super::Result<i64> {
    let mark: i64 = match db {
        Db::Sqlite(_) => db.query_opt(
            "SELECT CAST(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'reviews'), 0) AS BIGINT)",
            &[],
            |r| r.get(0),
        )?,
        Db::Postgres(_) => match pg_reviews_sequence(db)? {
            // The sequence's name comes from the server's catalog, quoted by it.
            Some(seq) => db.query_opt(
                &format!("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {seq}"),
                &[],
                |r| r.get(0),
            )?,
            None => None,
        },
    }
    .unwrap_or(0);
    let highest: i64 = db
        .query_opt("SELECT COALESCE(MAX(id), 0) FROM reviews", &[], |r| {
            r.get(0)
        })?
        .unwrap_or(0);
    Ok(mark.max(highest))
}

fn pg_reviews_sequence(db: &mut Db<'_>) -> super::Result<Option<String>> {
    Ok(db
        .query_opt("SELECT pg_get_serial_sequence('reviews', 'id')", &[], |r| {
            r.get::<Option<String>>(0)
        })?
        .flatten())
}

/// Sets the target's review-id high-water mark, so its next review gets `mark + 1`.
fn set_reviews_high_water(db: &mut Db<'_>, mark: i64) -> super::Result<()> {
    if mark <= 0 {
        return Ok(());
    }
    match db {
        Db::Sqlite(_) => {
            if db.execute(
                "UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'reviews'",
                values![mark],
            )? == 0
            {
                db.execute(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES ('reviews', ?1)",
                    values![mark],
                )?;
            }
        }
        Db::Postgres(_) => {
            // `setval` is not rolled back with the transaction: a failed copy leaves the
            // empty target's sequence advanced, which a retry sets again.
            db.query_opt(
                "SELECT setval(pg_get_serial_sequence('reviews', 'id'), ?1)",
                values![mark],
                |r| r.get::<i64>(0),
            )?;
        }
    }
    Ok(())
}

fn fingerprints(db: &mut Db<'_>) -> super::Result<Fingerprints> {
    let tools = db
        .query("SELECT name, fingerprint FROM tools", &[], |r| {
            Ok((r.get::<String>(0)?, r.get::<String>(1)?))
        })?
        .into_iter()
        .collect();
    let versions = db
        .query(
            "SELECT tool, version, fingerprint FROM tool_versions",
            &[],
            |r| Ok(((r.get::<String>(0)?, r.get::<i64>(1)?), r.get::<String>(2)?)),
        )?
        .into_iter()
        .collect();
    Ok(Fingerprints { tools, versions })
}

/// Reads every accepted contract and retained version back from `to` (decoded as any command
/// reads them) and compares each one's fingerprint, computed from the contract read, with the
/// source's; the number compared.
fn verify(expected: &Fingerprints, to: &Registry) -> Result<u64, CopyError> {
    let unverified = |what: String| CopyError::Unverified { what };
    let mut verified = 0u64;
    let tools = to.tools()?;
    let found: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let wanted: BTreeSet<&str> = expected.tools.keys().map(String::as_str).collect();
    if found != wanted {
        return Err(unverified(format!(
            "the target holds {} accepted contract(s), the source {}",
            found.len(),
            wanted.len()
        )));
    }
    for t in &tools {
        let fingerprint = tool_fingerprint(&t.spec);
        if expected.tools.get(&t.name) != Some(&fingerprint) {
            return Err(unverified(format!(
                "the accepted contract of {} reads as {fingerprint}",
                t.name
            )));
        }
        verified += 1;
    }
    let history_tools: BTreeSet<&str> = expected.versions.keys().map(|(t, _)| t.as_str()).collect();
    let mut versions_read = 0usize;
    for tool in history_tools {
        for (version, _, spec) in to.snapshots(tool)? {
            let fingerprint = tool_fingerprint(&spec);
            if expected.versions.get(&(tool.to_string(), version)) != Some(&fingerprint) {
                return Err(unverified(format!(
                    "version {version} of {tool} reads as {fingerprint}"
                )));
            }
            verified += 1;
            versions_read += 1;
        }
    }
    if versions_read != expected.versions.len() {
        return Err(unverified(format!(
            "the target holds {versions_read} retained version(s), the source {}",
            expected.versions.len()
        )));
    }
    Ok(verified)
}

/// The database's tables (SQLite: `sqlite_master`; PostgreSQL: the current schema's).
fn tables(db: &mut Db<'_>) -> super::Result<BTreeSet<String>> {
    let sql = match db {
        Db::Sqlite(_) => "SELECT name FROM sqlite_master WHERE type = 'table'",
        Db::Postgres(_) => {
            "SELECT CAST(table_name AS TEXT) FROM information_schema.tables
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        }
    };
    Ok(db.query(sql, &[], |r| r.get(0))?.into_iter().collect())
}

/// `table`'s columns in declaration order, each with the type read for it.
fn columns(db: &mut Db<'_>, table: &str) -> super::Result<Vec<(String, Option<ColumnType>)>> {
    let sql = match db {
        Db::Sqlite(_) => "SELECT name, type FROM pragma_table_info(?1) ORDER BY cid",
        Db::Postgres(_) => {
            "SELECT CAST(column_name AS TEXT), CAST(data_type AS TEXT)
             FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = ?1
             ORDER BY ordinal_position"
        }
    };
    db.query(sql, values![table], |r| {
        let declared: String = r.get(1)?;
        Ok((r.get(0)?, ColumnType::of_declared(&declared)))
    })
}

/// Every table of both databases is one this binary copies, skips, or keeps for itself.
fn check_tables(source: &BTreeSet<String>, target: &BTreeSet<String>) -> Result<(), CopyError> {
    let known: BTreeSet<&str> = COPIED
        .iter()
        .map(|t| t.name)
        .chain(SKIPPED.iter().map(|(name, _)| *name))
        .collect();
    for (side, tables) in [("source", source), ("target", target)] {
        if let Some(unknown) = tables
            .iter()
            .find(|t| !known.contains(t.as_str()) && !internal(t))
        {
            return Err(CopyError::Schema(match side {
                "source" => format!(
                    "the source registry has a table this schemawatch does not know ({unknown}): copy it with the schemawatch release that wrote it"
                ),
                _ => format!(
                    "the target database holds a table that is not a schemawatch registry's ({unknown}): copy into an empty database"
                ),
            }));
        }
        if let Some(missing) = COPIED.iter().find(|t| !tables.contains(t.name)) {
            return Err(CopyError::Schema(format!(
                "the {side} registry has no table {}",
                missing.name
            )));
        }
    }
    Ok(())
}

/// The source's columns of `table` are the target's (by name), each of a type copied.
fn check_columns(
    table: &str,
    source: &[(String, Option<ColumnType>)],
    target: &[(String, Option<ColumnType>)],
) -> Result<Vec<(String, ColumnType)>, CopyError> {
    let names = |cols: &[(String, Option<ColumnType>)]| -> BTreeSet<String> {
        cols.iter().map(|(n, _)| n.clone()).collect()
    };
    if names(source) != names(target) {
        return Err(CopyError::Schema(format!(
            "table {table} has other columns on the source than on the target"
        )));
    }
    source
        .iter()
        .map(|(name, ty)| match ty {
            Some(ty) => Ok((name.clone(), *ty)),
            None => Err(CopyError::Schema(format!(
                "column {table}.{name} has a type the copy does not read"
            ))),
        })
        .collect()
}

/// Where a registry lives, as `registry copy` names it: a SQLite file, or a PostgreSQL
/// database by URL (no password in it). Kept to this one type and [`Place::parse`] so it can
/// give way to `registry::Location` (the `[storage] url` work) when both land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Sqlite(PathBuf),
    Postgres(url::Url),
}

impl Place {
    /// `postgresql://…` or `postgres://…` is a database URL (refused when it carries a
    /// password); anything else is a file path.
    pub fn parse(text: &str) -> Result<Place, CopyError> {
        let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
        if !(lower.starts_with("postgresql://") || lower.starts_with("postgres://")) {
            return Ok(Place::Sqlite(PathBuf::from(text)));
        }
        // The text may hold a password: no error repeats it.
        let url = url::Url::parse(text).map_err(|_| CopyError::UrlSyntax)?;
        if url.password().is_some() {
            return Err(CopyError::PasswordInUrl);
        }
        crate::sources::postgres::parse_url(&url)?;
        Ok(Place::Postgres(url))
    }

    /// How messages name it (a path, or `user@host:port/db`; never a password).
    pub fn shown(&self) -> String {
        match self {
            Place::Sqlite(path) => path.display().to_string(),
            Place::Postgres(url) => crate::sources::postgres::parse_url(url)
                .map(|t| t.shown())
                .unwrap_or_else(|_| "the PostgreSQL registry".into()),
        }
    }
}

/// How to reach a PostgreSQL side: its password file (else PGPASSFILE, never PGPASSWORD) and
/// the certificate(s) its server's chain must lead to.
#[derive(Debug, Clone, Default)]
pub struct Access {
    pub password_file: Option<PathBuf>,
    pub ca_file: Option<PathBuf>,
}

/// Opens the registry at `place`: a SQLite file is created (migrated) when `create`, else it
/// must exist (opened as every command opens it, or read-only when that needs a write it
/// cannot make: a 0444 file, a read-only mount); a PostgreSQL database is migrated to this
/// binary's schema.
pub fn open(place: &Place, create: bool, access: &Access) -> Result<Registry, CopyError> {
    match place {
        Place::Sqlite(path) => match Registry::open_or_create(path, create) {
            Ok(registry) => Ok(registry),
            Err(e @ RegistryError::Missing { .. }) => Err(e.into()),
            Err(e) if create || !path.is_file() => Err(e.into()),
            Err(e) => Registry::open_read_only(path).map_err(|_| e.into()),
        },
        Place::Postgres(url) => {
            let options = super::pg::PgOptions {
                password: registry_password(url, access.password_file.as_deref())?,
                ca_file: access.ca_file.clone(),
                ..super::pg::PgOptions::default()
            };
            Ok(Registry::open_postgres(super::pg::connect(url, &options)?)?)
        }
    }
}

/// The registry database's password: from `password_file` when given, else the PGPASSFILE
/// line matching the URL's host, port, database and user (PGPASSFILE, default `~/.pgpass`,
/// as libpq). Never PGPASSWORD: the watch kind reads it, and it could hold a watched
/// server's password.
pub fn registry_password(
    url: &url::Url,
    password_file: Option<&Path>,
) -> Result<Option<String>, CopyError> {
    use crate::sources::postgres::{parse_url, passfile_password, read_secret_file};
    let secret = |e: crate::sources::postgres::PostgresError| CopyError::Password(e.to_string());
    match password_file {
        Some(path) => read_secret_file(path).map(Some).map_err(secret),
        None => passfile_password(&parse_url(url)?).map_err(secret),
    }
}

#[cfg(test)]
#[path = "copy_tests.rs"]
mod tests;
