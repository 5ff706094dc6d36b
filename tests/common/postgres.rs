//! The throwaway PostgreSQL cluster `./scripts/test` starts for the whole run (TLS with a
//! generated certificate, scram-sha-256): where it is, and [`database`], a fresh database per
//! test, dropped when the handle is. A test needing PostgreSQL calls [`cluster`] (or
//! [`database`]) and returns on `None`: it skips with a message, or fails under
//! `SCHEMAWATCH_REQUIRE_PEERS=1`.
//!
//! The helpers drive `psql` (installed with the server), over TCP with `sslmode=verify-full`
//! against the harness certificate and the password from the harness PGPASSFILE, so they use
//! the same authentication as the product will.

use super::peers::need;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The harness cluster, from its environment.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// `postgresql://schemawatch@127.0.0.1:PORT/postgres` (no password).
    pub url: String,
    /// A PGPASSFILE holding the superuser's password.
    pub passfile: PathBuf,
    /// The certificate that signs the server's (self-signed).
    pub ca: PathBuf,
    pub psql: PathBuf,
}

fn psql_binary() -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from("psql")];
    if let Ok(dirs) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> =
            dirs.flatten().map(|d| d.path().join("bin/psql")).collect();
        versions.sort();
        candidates.extend(versions.into_iter().rev());
    }
    candidates
        .into_iter()
        .find(|p| super::peers::runs(&p.to_string_lossy(), &["--version"]))
}

/// The harness cluster, or `None` after saying the test is skipped (a panic under
/// SCHEMAWATCH_REQUIRE_PEERS=1).
pub fn cluster() -> Option<Cluster> {
    let found = (|| {
        let url = std::env::var("SCHEMAWATCH_TEST_PG_URL").ok()?;
        let passfile = PathBuf::from(std::env::var_os("SCHEMAWATCH_TEST_PG_PASSFILE")?);
        let ca = PathBuf::from(std::env::var_os("SCHEMAWATCH_TEST_PG_CA")?);
        let psql = psql_binary()?;
        Some(Cluster {
            url,
            passfile,
            ca,
            psql,
        })
    })();
    need(
        found,
        "PostgreSQL (SCHEMAWATCH_TEST_PG_URL from ./scripts/test's throwaway cluster, and psql)",
    )
}

impl Cluster {
    /// `url` with its database replaced.
    pub fn url_for(&self, database: &str) -> String {
        match self.url.rsplit_once('/') {
            Some((base, _)) => format!("{base}/{database}"),
            None => self.url.clone(),
        }
    }

    /// `psql` on `database` with the harness credentials, TLS verified.
    pub fn psql(&self, database: &str) -> Command {
        let mut c = Command::new(&self.psql);
        c.arg("--no-psqlrc")
            .arg("--quiet")
            .arg("--set=ON_ERROR_STOP=1")
            .arg("--tuples-only")
            .arg("--no-align")
            .arg(format!(
                "{}?sslmode=verify-full&sslrootcert={}",
                self.url_for(database),
                self.ca.display()
            ))
            .env("PGPASSFILE", &self.passfile)
            .env_remove("PGPASSWORD")
            .env_remove("PGSERVICE")
            .stdin(Stdio::null());
        c
    }

    /// Runs `sql` on `database`; its output, or the error text.
    pub fn try_sql(&self, database: &str, sql: &str) -> Result<String, String> {
        let out = self
            .psql(database)
            .arg("--command")
            .arg(sql)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Runs `sql` on `database`, panicking on failure.
    pub fn sql(&self, database: &str, sql: &str) -> String {
        self.try_sql(database, sql)
            .unwrap_or_else(|e| panic!("psql on {database}: {e}\n{sql}"))
    }
}

/// A fresh database of the harness cluster, dropped with the handle.
pub struct Database {
    pub cluster: Cluster,
    pub name: String,
}

impl Database {
    /// `postgresql://schemawatch@127.0.0.1:PORT/<name>`.
    pub fn url(&self) -> String {
        self.cluster.url_for(&self.name)
    }

    pub fn sql(&self, sql: &str) -> String {
        self.cluster.sql(&self.name, sql)
    }

    pub fn try_sql(&self, sql: &str) -> Result<String, String> {
        self.cluster.try_sql(&self.name, sql)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = self.cluster.try_sql(
            "postgres",
            &format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name),
        );
    }
}

/// A fresh, empty database for one test (`None`: skipped, see [`cluster`]).
pub fn database() -> Option<Database> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let cluster = cluster()?;
    let name = format!(
        "sw_test_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    cluster.sql("postgres", &format!("CREATE DATABASE \"{name}\""));
    Some(Database { cluster, name })
}

/// A PostgreSQL cluster of one test's own (`scripts/pg-cluster`), which the test may stop and
/// start again under a running daemon without disturbing the shared one. Removed when dropped.
pub struct PrivateCluster {
    pub dir: PathBuf,
    /// `postgresql://schemawatch@127.0.0.1:PORT/postgres` (no password).
    pub url: String,
    /// A PGPASSFILE with the `schemawatch` role's password.
    pub passfile: PathBuf,
    pub ca: PathBuf,
}

fn pg_cluster_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-cluster")
}

impl PrivateCluster {
    /// A new cluster with at most `max_connections` sessions, or `None` after saying the test
    /// is skipped (no PostgreSQL server here; a panic under SCHEMAWATCH_REQUIRE_PEERS=1).
    pub fn create(max_connections: u32) -> Option<PrivateCluster> {
        let out = Command::new(pg_cluster_script())
            .arg("create")
            .env("PG_MAX_CONNECTIONS", max_connections.to_string())
            // Stopped like a crash under a daemon: every acknowledged commit must come back.
            .env("PG_SYNCHRONOUS_COMMIT", "on")
            .output()
            .ok();
        let out = match out {
            Some(out) if out.status.code() == Some(3) => None,
            Some(out) if !out.status.success() => panic!(
                "scripts/pg-cluster create failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            other => other,
        };
        let found = out.map(|out| {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let value = |key: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(&format!("{key}=")))
                    .unwrap_or_else(|| panic!("no {key} in {text}"))
                    .to_string()
            };
            PrivateCluster {
                dir: PathBuf::from(value("PG_DIR")),
                url: value("SCHEMAWATCH_TEST_PG_URL"),
                passfile: PathBuf::from(value("SCHEMAWATCH_TEST_PG_PASSFILE")),
                ca: PathBuf::from(value("SCHEMAWATCH_TEST_PG_CA")),
            }
        });
        need(found, "a PostgreSQL server (scripts/pg-cluster)")
    }

    fn run(&self, action: &str) {
        let status = Command::new(pg_cluster_script())
            .arg(action)
            .arg(&self.dir)
            .status()
            .unwrap_or_else(|e| panic!("scripts/pg-cluster {action}: {e}"));
        assert!(status.success(), "scripts/pg-cluster {action} failed");
    }

    /// Stops the server at once (`-m immediate`, as a crash would).
    pub fn stop(&self) {
        self.run("stop");
    }

    /// Starts it again, on the same port.
    pub fn start(&self) {
        self.run("start");
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = Command::new(pg_cluster_script())
            .arg("remove")
            .arg(&self.dir)
            .status();
    }
}
