//! The registry's PostgreSQL side on the real test cluster (`./scripts/test` starts it and
//! exports `SCHEMAWATCH_TEST_PG_URL`, `SCHEMAWATCH_TEST_PG_PASSFILE`, `SCHEMAWATCH_TEST_PG_CA`):
//! the schema-parity test (every SQLite table and column has its PostgreSQL twin), and the
//! PostgreSQL migrations under their advisory lock. Each test creates a uniquely named
//! database and drops it after. Without the cluster a test skips with a message; under
//! `SCHEMAWATCH_REQUIRE_PEERS=1` it fails instead.

use super::migrate::{latest, MIGRATIONS};
use super::{pg, RegistryError};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Tables or columns only the PostgreSQL schema has, each with why. Empty: the two schemas
/// are twins. (A PostgreSQL-only mechanism, say a change counter where SQLite has
/// `PRAGMA data_version`, is listed here as `("table", None)` or `("table", Some("column"))`.)
const POSTGRES_ONLY: &[(&str, Option<&str>)] = &[];

struct Cluster {
    url: url::Url,
    password: Option<String>,
    ca: PathBuf,
}

fn cluster() -> Option<Cluster> {
    let found = (|| {
        let url = url::Url::parse(&std::env::var("SCHEMAWATCH_TEST_PG_URL").ok()?).ok()?;
        let passfile = std::env::var_os("SCHEMAWATCH_TEST_PG_PASSFILE")?;
        let ca = PathBuf::from(std::env::var_os("SCHEMAWATCH_TEST_PG_CA")?);
        // The harness writes one `host:port:*:user:password` line.
        let text = std::fs::read_to_string(passfile).ok()?;
        let password = text.lines().next()?.splitn(5, ':').nth(4)?.to_string();
        Some(Cluster {
            url,
            password: Some(password),
            ca,
        })
    })();
    if found.is_none() {
        if std::env::var("SCHEMAWATCH_REQUIRE_PEERS").as_deref() == Ok("1") {
            panic!("PostgreSQL (SCHEMAWATCH_TEST_PG_URL from ./scripts/test's throwaway cluster) is missing and SCHEMAWATCH_REQUIRE_PEERS=1");
        }
        eprintln!("SKIPPED: PostgreSQL (SCHEMAWATCH_TEST_PG_URL from ./scripts/test's throwaway cluster) is missing");
    }
    found
}

/// A fresh database of the cluster, dropped with the handle.
pub(super) struct Database {
    cluster: Cluster,
    name: String,
}

impl Cluster {
    fn options(&self) -> pg::PgOptions {
        pg::PgOptions {
            password: self.password.clone(),
            ca_file: Some(self.ca.clone()),
            ..pg::PgOptions::default()
        }
    }

    fn url_of(&self, database: &str) -> url::Url {
        let mut url = self.url.clone();
        url.set_path(&format!("/{database}"));
        url
    }

    fn connect_to(&self, database: &str) -> postgres::Client {
        pg::connect(&self.url_of(database), &self.options())
            .unwrap_or_else(|e| panic!("connecting to {database}: {e}"))
    }
}

impl Database {
    pub(super) fn connect(&self) -> postgres::Client {
        self.cluster.connect_to(&self.name)
    }

    /// The database's name (another process of the test connects to it by name).
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// This database as `[storage] url` names it, the password read from `password_file`.
    pub(super) fn location(&self, password_file: &std::path::Path) -> super::Location {
        super::Location::Postgres {
            url: self.cluster.url_of(&self.name),
            options: pg::PgOptions {
                password: None,
                ..self.cluster.options()
            },
            password: super::PgPassword::File(password_file.to_path_buf()),
        }
    }

    /// The cluster's password (the harness PGPASSFILE's).
    pub(super) fn password(&self) -> Option<&str> {
        self.cluster.password.as_deref()
    }
}

/// A connection to the cluster's database `name` (a child process of a test, given the name).
pub(super) fn connect_named(name: &str) -> Option<postgres::Client> {
    cluster().map(|c| c.connect_to(name))
}

impl Drop for Database {
    fn drop(&mut self) {
        let mut admin = self.cluster.connect_to("postgres");
        let _ = admin.batch_execute(&format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            self.name
        ));
    }
}

pub(super) fn database() -> Option<Database> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let cluster = cluster()?;
    let name = format!(
        "sw_registry_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    cluster
        .connect_to("postgres")
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .unwrap();
    Some(Database { cluster, name })
}

/// (table, column, type, not null) of every column, and the names of the indexes created by a
/// migration (not the ones backing a primary key or UNIQUE constraint). The type is the
/// PostgreSQL one, SQLite's declared type mapped to its twin: INTEGER is BIGINT (the code binds
/// i64 on both; an INT4 twin would refuse them), TEXT is TEXT, BLOB is BYTEA.
type Shape = (BTreeSet<(String, String, String, bool)>, BTreeSet<String>);

fn twin_type(sqlite: &str) -> String {
    match sqlite {
        "INTEGER" => "bigint".into(),
        "TEXT" => "text".into(),
        "BLOB" => "bytea".into(),
        other => format!("(SQLite type {other} has no twin type)"),
    }
}

fn sqlite_shape() -> Shape {
    let mut conn = rusqlite::Connection::open_in_memory().unwrap();
    super::migrate::run(&mut conn).unwrap();
    let mut columns = BTreeSet::new();
    let mut stmt = conn
        .prepare(
            "SELECT m.name, c.name, c.type, c.\"notnull\" OR c.pk > 0
             FROM sqlite_schema m JOIN pragma_table_info(m.name) c
             WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                twin_type(&r.get::<_, String>(2)?),
                r.get(3)?,
            ))
        })
        .unwrap();
    for row in rows {
        columns.insert(row.unwrap());
    }
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL")
        .unwrap();
    let indexes = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<std::result::Result<BTreeSet<String>, _>>()
        .unwrap();
    (columns, indexes)
}

fn postgres_shape(client: &mut postgres::Client) -> Shape {
    let columns = client
        .query(
            "SELECT table_name::text, column_name::text, data_type::text, is_nullable = 'NO'
             FROM information_schema.columns WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    let indexes = client
        .query(
            "SELECT i.relname::text FROM pg_index x
             JOIN pg_class i ON i.oid = x.indexrelid
             JOIN pg_namespace n ON n.oid = i.relnamespace
             WHERE n.nspname = 'public'
               AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    (columns, indexes)
}

#[test]
fn every_sqlite_table_and_column_has_its_postgresql_twin() {
    let Some(db) = database() else { return };
    let mut client = db.connect();
    pg::migrate(&mut client).unwrap();
    let (sqlite_columns, sqlite_indexes) = sqlite_shape();
    let (pg_columns, pg_indexes) = postgres_shape(&mut client);
    let postgres_only = |table: &str, column: &str| {
        POSTGRES_ONLY
            .iter()
            .any(|(t, c)| *t == table && c.is_none_or(|c| c == column))
    };
    let missing: Vec<_> = sqlite_columns.difference(&pg_columns).collect();
    let extra: Vec<_> = pg_columns
        .difference(&sqlite_columns)
        .filter(|(t, c, _, _)| !postgres_only(t, c))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "every migration comes in pairs (migrations/ and migrations/postgres/):\n\
         (table, column, type, not null) in SQLite without its PostgreSQL twin: {missing:?}\n\
         in PostgreSQL only (and not in POSTGRES_ONLY): {extra:?}"
    );
    assert_eq!(
        sqlite_indexes, pg_indexes,
        "every index has its PostgreSQL twin of the same name"
    );
    // Both sides really were read (a query that matched nothing would compare equal).
    assert!(sqlite_columns.contains(&("reviews".into(), "watch".into(), "text".into(), true)));
    assert!(sqlite_columns.contains(&(
        "registry_head".into(),
        "fingerprint_version".into(),
        "bigint".into(),
        true
    )));
    assert!(sqlite_indexes.contains("one_open_review_per_watch"));
}

#[test]
fn the_open_review_index_is_partial_and_unique_on_postgresql() {
    let Some(db) = database() else { return };
    let mut client = db.connect();
    pg::migrate(&mut client).unwrap();
    let insert = "INSERT INTO reviews (watch, state, compatibility, change_count, created_at,
        base_registry_version, candidate_fingerprint, fingerprint_version, candidate_spec_json,
        report_json) VALUES ('w', $1, 'breaking', 1, 't', 0, 'f', 1, '', '')";
    client.execute(insert, &[&"open"]).unwrap();
    client.execute(insert, &[&"rejected"]).unwrap();
    client.execute(insert, &[&"rejected"]).unwrap();
    let second_open = client.execute(insert, &[&"open"]).unwrap_err();
    assert_eq!(
        second_open.code(),
        Some(&postgres::error::SqlState::UNIQUE_VIOLATION),
        "{second_open}"
    );
}

fn applied(client: &mut postgres::Client) -> Vec<(i64, i64, String)> {
    client
        .query(
            "SELECT version, count(*), min(applied_at) FROM schema_migrations
             GROUP BY version ORDER BY version",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

#[test]
fn concurrent_postgresql_migrations_apply_each_version_once() {
    let Some(db) = database() else { return };
    let db = std::sync::Arc::new(db);
    let start = std::sync::Arc::new(std::sync::Barrier::new(6));
    let racers: Vec<_> = (0..6)
        .map(|_| {
            let db = db.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                let mut client = db.connect();
                start.wait();
                pg::migrate(&mut client)
            })
        })
        .collect();
    for racer in racers {
        racer.join().unwrap().unwrap();
    }
    let mut client = db.connect();
    let first = applied(&mut client);
    let versions: Vec<i64> = first.iter().map(|(v, _, _)| *v).collect();
    let expected: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(versions, expected);
    assert!(first.iter().all(|(_, count, _)| *count == 1), "{first:?}");
    let meta: i64 = client
        .query_one("SELECT count(*) FROM registry_meta", &[])
        .unwrap()
        .get(0);
    assert_eq!(meta, 1, "the registry id is generated once");
    // A second run is a no-op: nothing re-applied, nothing re-recorded.
    pg::migrate(&mut client).unwrap();
    assert_eq!(applied(&mut client), first);
}

#[test]
fn a_postgresql_registry_newer_than_the_binary_is_refused() {
    let Some(db) = database() else { return };
    let mut client = db.connect();
    pg::migrate(&mut client).unwrap();
    client
        .execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 'later')",
            &[&(latest() + 1)],
        )
        .unwrap();
    let err = pg::migrate(&mut client).unwrap_err();
    assert!(
        matches!(err, RegistryError::TooNew { found, supported } if found == latest() + 1 && supported == latest()),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "registry schema version {} is newer than this schemawatch supports ({})",
            latest() + 1,
            latest()
        )
    );
    // Refused before touching anything: the lock's transaction rolled back.
    let versions: i64 = client
        .query_one("SELECT count(*) FROM schema_migrations", &[])
        .unwrap()
        .get(0);
    assert_eq!(versions, MIGRATIONS.len() as i64 + 1);
}

#[test]
fn a_wrong_password_is_a_typed_error_without_the_password() {
    let Some(cluster) = cluster() else { return };
    let wrong = "not-the-password-7d1c";
    let options = pg::PgOptions {
        password: Some(wrong.into()),
        ..cluster.options()
    };
    let err = pg::connect(&cluster.url, &options).err().unwrap();
    let text = err.to_string();
    assert!(
        matches!(err, RegistryError::PostgresConnect { .. }),
        "{text}"
    );
    assert!(
        text.contains("28P01") || text.contains("password"),
        "{text}"
    );
    assert!(!text.contains(wrong), "{text}");
}

#[test]
fn the_server_certificate_is_verified_unless_tls_is_disabled_in_the_url() {
    let Some(cluster) = cluster() else { return };
    let ssl_of = |client: &mut postgres::Client| -> bool {
        client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0)
    };
    // The throwaway cluster's certificate is signed by a CA the system roots do not hold.
    let options = pg::PgOptions {
        ca_file: None,
        ..cluster.options()
    };
    let err = pg::connect(&cluster.url, &options).err().unwrap();
    assert!(
        matches!(err, RegistryError::PostgresConnect { .. }),
        "{err}"
    );
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    // The same URL with `sslmode=disable` written: plain TCP (the harness allows it).
    let mut plain = cluster.url.clone();
    plain.set_query(Some("sslmode=disable"));
    assert!(!ssl_of(&mut pg::connect(&plain, &options).unwrap()));
    // With the harness CA: TLS, verified.
    assert!(ssl_of(&mut cluster.connect_to("postgres")));
}

#[test]
fn a_statement_running_past_the_timeout_is_cancelled() {
    let Some(cluster) = cluster() else { return };
    let options = pg::PgOptions {
        statement_timeout: std::time::Duration::from_millis(300),
        ..cluster.options()
    };
    let mut client = pg::connect(&cluster.url, &options).unwrap();
    let started = std::time::Instant::now();
    let err = RegistryError::from(client.simple_query("SELECT pg_sleep(5)").unwrap_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    assert!(err.to_string().contains("SQLSTATE 57014"), "{err}");
    let shown: String = client
        .query_one("SHOW statement_timeout", &[])
        .unwrap()
        .get(0);
    assert_eq!(shown, "300ms");
}

#[test]
fn the_pool_is_bounded_and_a_checkout_waits_at_most_the_connect_timeout() {
    let Some(db) = database() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pw");
    std::fs::write(&file, db.password().unwrap_or("")).unwrap();
    let mut location = db.location(&file);
    if let super::Location::Postgres { options, .. } = &mut location {
        options.pool_size = 2;
        options.connect_timeout = std::time::Duration::from_millis(500);
    }
    drop(super::Registry::open_at(&location, true).unwrap());
    let pool = location.pool().unwrap();
    let first = super::Registry::from_pool(&pool).unwrap();
    let second = super::Registry::from_pool(&pool).unwrap();
    let started = std::time::Instant::now();
    let third = super::Registry::from_pool(&pool);
    let waited = started.elapsed();
    assert!(
        matches!(third, Err(RegistryError::PostgresConnect { .. })),
        "a third session of a pool of 2"
    );
    assert!(
        waited >= std::time::Duration::from_millis(400)
            && waited < std::time::Duration::from_secs(5),
        "{waited:?}"
    );
    let open: i64 = second
        .read(|session| {
            session.query_opt(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = ?1 AND application_name = 'schemawatch'",
                super::sql::values![db.name.as_str()],
                |r| r.get(0),
            )
        })
        .unwrap()
        .unwrap();
    assert_eq!(open, 2);
    // A registry dropped gives its session back: the next checkout reuses it.
    drop(first);
    let again = super::Registry::from_pool(&pool).unwrap();
    assert_eq!(again.registry_version().unwrap(), 0);
    assert_eq!(pool.state().connections, 2);
}
