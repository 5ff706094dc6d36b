//! Database kinds end to end: real SQLite files changed by real migrations between `check`
//! runs of the real binary, each asserting the action and compatibility; the watched file (and
//! its `-wal`) byte-identical after every check; a corrupt or missing file an `error` with the
//! registry untouched; `diff --kind sqlite` on two files.

use crate::common;

use common::postgres;
use common::*;
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

const WATCH: &str = "acme.app";

fn sqlite_config(db: &Path) -> String {
    format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"{WATCH}\"\nkind = \"sqlite\"\npath = \"{}\"\n",
        db.display()
    )
}

fn migrate(db: &Path, sql: &str) {
    let conn = Connection::open(db).expect("open for migration");
    conn.execute_batch(sql).expect("migration");
}

fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file of the database's folder by name, with the SHA-256 of its bytes; the `-shm`
/// wal-index is left out (every reader of a WAL database updates its read marks there).
fn folder(db: &Path) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.to_string_lossy().ends_with("-shm"))
        .map(|p| {
            let d = digest(&std::fs::read(&p).unwrap());
            (p, d)
        })
        .collect();
    out.sort();
    out
}

/// One `check`: its outcome, after asserting it left the database folder byte-identical.
fn check(sb: &Sandbox, db: &Path) -> Value {
    let before = folder(db);
    let (run, value) = sb.check(&[]);
    assert_eq!(
        folder(db),
        before,
        "check changed the watched database's folder: {}",
        run.describe()
    );
    only_outcome(&value).clone()
}

/// `compatibility` is `None` for a first registration.
fn expect(sb: &Sandbox, db: &Path, action: &str, compatibility: Option<&str>) -> Value {
    let o = check(sb, db);
    assert_eq!(o["action"], action, "{o}");
    assert_eq!(o["compatibility"].as_str(), compatibility, "{o}");
    o
}

fn accept(sb: &Sandbox, review: &Value) {
    let id = review
        .as_i64()
        .unwrap_or_else(|| panic!("no review id: {review}"))
        .to_string();
    let cfg = sb.config_arg();
    sb.run(&[
        "pending",
        "accept",
        &id,
        "--reviewer",
        "alice",
        "--reason",
        "migration",
        "--config",
        &cfg,
    ])
    .assert_code(0);
}

fn rules_of(sb: &Sandbox, review: &Value) -> Vec<String> {
    let show = sb.pending_show(review.as_i64().unwrap());
    show["report"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap().to_string())
        .collect()
}

/// A sequence of real migrations, each judged by the next `check`.
#[test]
fn sqlite_migrations_are_classified_and_the_file_is_never_written() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("data")).unwrap();
    let db = sb.path("data/app.db");
    migrate(
        &db,
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
    );
    sb.write_config(&sqlite_config(&db));

    expect(&sb, &db, "registered", None);
    expect(&sb, &db, "unchanged", None);

    // New table: compatible (a table is data, not an operation).
    migrate(
        &db,
        "CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), body TEXT);",
    );
    expect(&sb, &db, "applied", Some("compatible"));

    // A nullable column, then a NOT NULL one with a default: compatible.
    migrate(&db, "ALTER TABLE users ADD COLUMN email TEXT;");
    expect(&sb, &db, "applied", Some("compatible"));
    migrate(
        &db,
        "ALTER TABLE users ADD COLUMN status TEXT NOT NULL DEFAULT 'active';",
    );
    expect(&sb, &db, "applied", Some("compatible"));

    // An index: information only.
    migrate(&db, "CREATE INDEX posts_user ON posts(user_id);");
    expect(&sb, &db, "applied", Some("compatible"));

    // A NOT NULL column without a default (a table rebuild): breaking.
    migrate(
        &db,
        "BEGIN;
         CREATE TABLE users_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT,
                                 status TEXT NOT NULL DEFAULT 'active', team TEXT NOT NULL);
         INSERT INTO users_new SELECT id, name, email, status, 'none' FROM users;
         DROP TABLE users; ALTER TABLE users_new RENAME TO users; COMMIT;",
    );
    let o = expect(&sb, &db, "pending_review", Some("breaking"));
    assert!(
        rules_of(&sb, &o["review_id"]).contains(&"request-property-added-required".to_string()),
        "{o}"
    );
    accept(&sb, &o["review_id"]);
    expect(&sb, &db, "unchanged", None);

    // A dropped column: breaking.
    migrate(&db, "ALTER TABLE posts DROP COLUMN body;");
    let o = expect(&sb, &db, "pending_review", Some("breaking"));
    assert!(
        rules_of(&sb, &o["review_id"]).contains(&"response-property-removed".to_string()),
        "{o}"
    );
    accept(&sb, &o["review_id"]);

    // A type change (TEXT → INTEGER, by rebuild): breaking.
    migrate(
        &db,
        "BEGIN;
         CREATE TABLE users_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT,
                                 status INTEGER NOT NULL DEFAULT 1, team TEXT NOT NULL);
         INSERT INTO users_new SELECT id, name, email, 1, team FROM users;
         DROP TABLE users; ALTER TABLE users_new RENAME TO users; COMMIT;",
    );
    let o = expect(&sb, &db, "pending_review", Some("breaking"));
    let rules = rules_of(&sb, &o["review_id"]);
    assert!(
        rules.iter().any(|r| r.ends_with("type-changed")),
        "{rules:?}"
    );
    accept(&sb, &o["review_id"]);

    // Column order (positional INSERT and SELECT * depend on it): breaking.
    migrate(
        &db,
        "BEGIN;
         CREATE TABLE users_new (id INTEGER PRIMARY KEY, email TEXT, name TEXT NOT NULL,
                                 status INTEGER NOT NULL DEFAULT 1, team TEXT NOT NULL);
         INSERT INTO users_new SELECT id, email, name, status, team FROM users;
         DROP TABLE users; ALTER TABLE users_new RENAME TO users; COMMIT;",
    );
    let o = expect(&sb, &db, "pending_review", Some("breaking"));
    assert_eq!(
        rules_of(&sb, &o["review_id"]),
        vec!["database-column-reordered".to_string()],
        "{o}"
    );
    accept(&sb, &o["review_id"]);

    // A trigger: security review.
    migrate(
        &db,
        "CREATE TABLE audit (at TEXT);
         CREATE TRIGGER users_audit AFTER UPDATE ON users BEGIN INSERT INTO audit VALUES (datetime('now')); END;",
    );
    let o = expect(&sb, &db, "pending_review", Some("security_review"));
    let rules = rules_of(&sb, &o["review_id"]);
    assert!(
        rules.contains(&"database-trigger-added".to_string()),
        "{rules:?}"
    );
    assert!(
        rules.contains(&"database-object-added".to_string()),
        "{rules:?}"
    );
    accept(&sb, &o["review_id"]);
    expect(&sb, &db, "unchanged", None);

    // A corrupt file is an error; the registry is untouched.
    let version = sb.registry_version();
    let history = sb.history(WATCH).len();
    let good = std::fs::read(&db).unwrap();
    std::fs::write(&db, b"this is not a database, just bytes of garbage......................................................").unwrap();
    let o = check(&sb, &db);
    assert_eq!(o["action"], "error", "{o}");
    assert!(
        o["error"]
            .as_str()
            .unwrap_or_default()
            .contains("not a database"),
        "{o}"
    );
    // A missing file too.
    std::fs::remove_file(&db).unwrap();
    let (_, value) = sb.check(&[]);
    let o = only_outcome(&value);
    assert_eq!(o["action"], "error", "{o}");
    assert!(
        o["error"]
            .as_str()
            .unwrap_or_default()
            .contains("no such database file"),
        "{o}"
    );
    assert!(!db.exists(), "check created the missing database");
    assert_eq!(sb.registry_version(), version);
    assert_eq!(sb.history(WATCH).len(), history);
    std::fs::write(&db, good).unwrap();
    expect(&sb, &db, "unchanged", None);
}

/// A database in WAL mode with a writer holding it open: the check sees the schema changes
/// that are still only in the `-wal`, and leaves the database and its `-wal` byte-identical
/// (no checkpoint).
#[test]
fn a_wal_database_is_read_without_checkpointing() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("data")).unwrap();
    let db = sb.path("data/wal.db");
    let writer = Connection::open(&db).unwrap();
    writer
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);",
        )
        .unwrap();
    sb.write_config(&sqlite_config(&db));
    let wal = sb.path("data/wal.db-wal");
    assert!(
        std::fs::metadata(&wal).unwrap().len() > 0,
        "the WAL holds the table"
    );
    expect(&sb, &db, "registered", None);
    writer
        .execute_batch("ALTER TABLE items ADD COLUMN price REAL;")
        .unwrap();
    let read = |p: &Path| digest(&std::fs::read(p).unwrap());
    let (main_before, wal_before) = (read(&db), read(&wal));
    let o = expect(&sb, &db, "applied", Some("compatible"));
    assert_eq!(read(&db), main_before);
    assert_eq!(read(&wal), wal_before, "{o}");
    drop(writer);
}

fn diff_json(sb: &Sandbox, a: &str, b: &str) -> Value {
    let run = sb.run(&["diff", "--kind", "sqlite", "--json", a, b]);
    assert!(
        run.code == 0 || run.code == 1,
        "diff failed: {}",
        run.describe()
    );
    run.json()
}

/// `diff --kind sqlite a.db b.db` (and `sqlite:PATH`); object creation order never matters.
#[test]
fn diff_reads_two_database_files() {
    let sb = Sandbox::new();
    let (a, b, c) = (sb.path("a.db"), sb.path("b.db"), sb.path("c.db"));
    migrate(
        &a,
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL CHECK (length(name) < 50), email TEXT UNIQUE);
         CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id) ON DELETE CASCADE);
         CREATE INDEX posts_user ON posts(user_id);
         CREATE VIEW names AS SELECT name FROM users;",
    );
    // The same schema created in another order, with other whitespace.
    migrate(
        &b,
        "CREATE TABLE posts (id INTEGER PRIMARY KEY,   user_id INTEGER REFERENCES users(id) ON DELETE CASCADE);
         CREATE VIEW names AS SELECT name FROM users;
         CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL CHECK (length(name)  <  50), email TEXT UNIQUE);
         CREATE INDEX posts_user ON posts(user_id);",
    );
    let same = diff_json(&sb, "a.db", "sqlite:b.db");
    assert_eq!(same["compatibility"], "identical", "{same}");

    migrate(
        &c,
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL CHECK (length(name) < 50), email TEXT UNIQUE);
         CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id) ON DELETE CASCADE);
         CREATE VIEW names AS SELECT name FROM users;",
    );
    let report = diff_json(&sb, "a.db", "c.db");
    assert_eq!(report["compatibility"], "compatible", "{report}");
    let rules: Vec<&str> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["database-index-changed"], "{report}");

    // A sqlite: source for another kind, and another source for kind sqlite, are refused.
    let run = sb.run(&["diff", "--kind", "openapi", "sqlite:a.db", "sqlite:b.db"]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(
        run.stderr_text().contains("--kind sqlite"),
        "{}",
        run.describe()
    );
    let run = sb.run(&["diff", "--kind", "sqlite", "a.db", "https://127.0.0.1:1/x"]);
    assert_eq!(run.code, 2, "{}", run.describe());
}

/// The throwaway cluster of `./scripts/test`: TLS verified against the generated certificate,
/// scram-sha-256 (a wrong password is refused), and one fresh database per test.
#[test]
fn the_postgres_harness_serves_verified_tls_and_scram() {
    let Some(db) = postgres::database() else {
        return;
    };
    let facts = db.sql(
        "SELECT s.ssl, current_setting('password_encryption'), current_database()
           FROM pg_stat_ssl s WHERE s.pid = pg_backend_pid()",
    );
    assert_eq!(facts, format!("t|scram-sha-256|{}", db.name));
    db.sql("CREATE TABLE t (id int)");
    let other = postgres::database().expect("a second database");
    assert_ne!(other.name, db.name);
    assert_eq!(
        other.sql("SELECT count(*) FROM pg_class WHERE relname = 't'"),
        "0"
    );
    // A wrong password is refused.
    let wrong = db
        .cluster
        .psql(&db.name)
        .env("PGPASSFILE", "/dev/null")
        .env("PGPASSWORD", "wrong")
        .arg("--command=SELECT 1")
        .output()
        .unwrap();
    assert!(!wrong.status.success());
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("password authentication failed"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
}

/// Catalog export, pins and triage work unchanged on a database watch; a folder is not a
/// database.
#[test]
fn review_artifacts_work_on_a_sqlite_watch() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("data")).unwrap();
    let db = sb.path("data/app.db");
    migrate(
        &db,
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         CREATE VIEW names AS SELECT name FROM users;",
    );
    sb.write_config(&sqlite_config(&db));
    expect(&sb, &db, "registered", None);
    let cfg = sb.config_arg();
    let export = sb.run(&["catalog", "export", "--config", &cfg]);
    export.assert_code(0);
    assert!(
        export.stdout_text().contains("acme.app"),
        "{}",
        export.describe()
    );
    let capture = sb.run(&["pin", "capture", "--config", &cfg]);
    capture.assert_code(0);
    let pin = sb.write_file("pin.json", &capture.stdout);
    let pin = pin.display().to_string();
    sb.run(&["pin", "check", &pin, "--config", &cfg, "--json"])
        .assert_code(0);
    let triage = sb.run(&["triage", "--config", &cfg, "--json"]);
    triage.assert_code(0);
    assert_eq!(triage.json()["total"], 2, "{}", triage.describe());

    let run = sb.run(&["diff", "--kind", "sqlite", "data/app.db", "data"]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(
        run.stderr_text().contains("not a regular file"),
        "{}",
        run.describe()
    );
}

const SHOP: &str = "acme.shop";

/// A login role of its own for one test (no privilege beyond LOGIN and the defaults: the
/// least-privilege role of docs/databases.md), whose password is the credential canary.
fn reader_role(db: &postgres::Database) -> String {
    let role = format!("{}_reader", db.name);
    db.sql(&format!("CREATE ROLE \"{role}\" LOGIN PASSWORD '{CANARY}'"));
    role
}

fn postgres_config(db: &postgres::Database, role: &str, port: Option<u16>) -> String {
    let url = match port {
        Some(p) => format!("postgresql://{role}@127.0.0.1:{p}/{}", db.name),
        None => db.url().replacen("schemawatch@", &format!("{role}@"), 1),
    };
    format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"{SHOP}\"\nkind = \"postgres\"\nurl = \"{url}\"\nca_file = \"{}\"\npassword = \"${{{TOKEN_VAR}}}\"\ntimeout = \"20s\"\n",
        db.cluster.ca.display()
    )
}

fn pg_expect(sb: &Sandbox, action: &str, compatibility: Option<&str>) -> Value {
    let (run, value) = sb.check(&[]);
    let o = only_outcome(&value).clone();
    assert_eq!(o["action"], action, "{o}\n{}", run.describe());
    assert_eq!(o["compatibility"].as_str(), compatibility, "{o}");
    o
}

/// Asserts the pending review holds every rule of `expected`, then accepts it.
fn review_has(sb: &Sandbox, o: &Value, expected: &[&str]) {
    let rules = rules_of(sb, &o["review_id"]);
    for rule in expected {
        assert!(
            rules.iter().any(|r| r == rule),
            "{rule} missing in {rules:?}"
        );
    }
    accept(sb, &o["review_id"]);
}

/// The migration sequence on the throwaway cluster, read by a least-privilege role over
/// verified TLS with scram-sha-256; the canary password never leaves the process.
#[test]
fn postgres_migrations_are_classified() {
    let Some(db) = postgres::database() else {
        return;
    };
    let role = reader_role(&db);
    let sb = Sandbox::new();
    sb.write_config(&postgres_config(&db, &role, None));
    db.sql("CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL)");
    pg_expect(&sb, "registered", None);
    pg_expect(&sb, "unchanged", None);

    db.sql("CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer REFERENCES customers(id), total numeric(10,2))");
    pg_expect(&sb, "applied", Some("compatible"));
    db.sql("ALTER TABLE customers ADD COLUMN email text");
    pg_expect(&sb, "applied", Some("compatible"));
    db.sql("ALTER TABLE customers ADD COLUMN tier text NOT NULL DEFAULT 'basic'");
    pg_expect(&sb, "applied", Some("compatible"));

    db.sql("ALTER TABLE orders ADD COLUMN note text NOT NULL");
    let o = pg_expect(&sb, "pending_review", Some("breaking"));
    review_has(&sb, &o, &["request-property-added-required"]);
    db.sql("ALTER TABLE customers DROP COLUMN email");
    let o = pg_expect(&sb, "pending_review", Some("breaking"));
    review_has(&sb, &o, &["response-property-removed"]);
    db.sql("ALTER TABLE orders ALTER COLUMN total TYPE numeric(12,2)");
    let o = pg_expect(&sb, "pending_review", Some("breaking"));
    review_has(&sb, &o, &["database-column-type-changed"]);

    db.sql("CREATE TYPE status AS ENUM ('new', 'paid')");
    db.sql("ALTER TABLE orders ADD COLUMN status status");
    pg_expect(&sb, "applied", Some("compatible"));
    db.sql("ALTER TYPE status ADD VALUE 'refunded'");
    let o = pg_expect(&sb, "pending_review", Some("breaking"));
    review_has(&sb, &o, &["response-enum-value-added"]);

    db.sql("ALTER TABLE orders ENABLE ROW LEVEL SECURITY");
    db.sql("CREATE POLICY own_orders ON orders USING (customer_id > 0)");
    let o = pg_expect(&sb, "pending_review", Some("security_review"));
    review_has(
        &sb,
        &o,
        &["database-row-security-changed", "database-policy-changed"],
    );
    db.sql("GRANT SELECT ON customers TO PUBLIC");
    let o = pg_expect(&sb, "pending_review", Some("security_review"));
    review_has(&sb, &o, &["database-privilege-granted"]);
    db.sql(
        "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
         CREATE TRIGGER orders_touch BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION touch()",
    );
    let o = pg_expect(&sb, "pending_review", Some("security_review"));
    review_has(
        &sb,
        &o,
        &["database-trigger-added", "database-function-added-write"],
    );
    db.sql("CREATE FUNCTION order_count() RETURNS bigint STABLE LANGUAGE sql AS 'SELECT count(*) FROM orders'");
    pg_expect(&sb, "applied", Some("compatible"));
    pg_expect(&sb, "unchanged", None);

    // The canary password reached the server only: not the registry, not any output.
    for (path, bytes) in sb.all_files() {
        if let Some(how) = find_canary(&bytes) {
            panic!("the credential canary ({how}) is in {}", path.display());
        }
    }
    assert_eq!(find_canary(&sb.transcript()), None);
}

/// Unreachable, refused (no CONNECT privilege) and unverifiable (no CA) databases are `error`
/// outcomes with clear messages, and the registry is untouched.
#[test]
fn postgres_failures_are_errors_and_leave_the_registry_alone() {
    let Some(db) = postgres::database() else {
        return;
    };
    let role = reader_role(&db);
    db.sql("CREATE TABLE t (id integer)");
    let sb = Sandbox::new();
    sb.write_config(&postgres_config(&db, &role, None));
    pg_expect(&sb, "registered", None);
    let version = sb.registry_version();
    let history = sb.history(SHOP).len();
    db.sql("ALTER TABLE t ADD COLUMN x text");

    let error_of = |config: String| {
        sb.write_config(&config);
        let o = pg_expect(&sb, "error", None);
        o["error"].as_str().unwrap_or_default().to_string()
    };
    let good = postgres_config(&db, &role, None);
    // Without the harness CA the server's certificate cannot be verified (verify-full).
    let unverified = error_of(
        good.lines()
            .filter(|l| !l.starts_with("ca_file"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    assert!(unverified.contains("cannot connect"), "{unverified}");
    db.cluster.sql(
        "postgres",
        &format!("REVOKE CONNECT ON DATABASE \"{}\" FROM PUBLIC", db.name),
    );
    let denied = error_of(good.clone());
    assert!(denied.contains("permission denied"), "{denied}");
    assert_eq!(sb.registry_version(), version);
    assert_eq!(sb.history(SHOP).len(), history);
    assert_eq!(find_canary(&sb.transcript()), None);

    // An unreachable server (another port is another source, so a fresh registry).
    let fresh = Sandbox::new();
    fresh.write_config(&postgres_config(&db, &role, Some(dead_port())));
    let o = pg_expect(&fresh, "error", None);
    let unreachable = o["error"].as_str().unwrap_or_default();
    assert!(unreachable.contains("cannot connect"), "{unreachable}");
    assert_eq!(fresh.registry_version(), 0);

    // A password inside a URL on the command line is refused, and never echoed.
    let run = sb.run(&[
        "diff",
        "--kind",
        "postgres",
        "postgresql://app:hunter2secret@127.0.0.1:1/db",
        "postgresql://app@127.0.0.1:1/db",
    ]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(run.stderr_text().contains("password"), "{}", run.describe());
    assert!(
        !run.stderr_text().contains("hunter2secret"),
        "{}",
        run.describe()
    );
}
