//! Where the registry is: a SQLite file (`[storage] path`) or a PostgreSQL database
//! (`[storage] url`), and opening it there. Every command, the daemon and the gateway open the
//! registry through these entry points, so neither knows which backend it got.
//!
//! The PostgreSQL password is read when a connection is opened, never kept in the config:
//! from `[storage] password_file`, the environment variable `password = "${VAR}"` names, or
//! PGPASSFILE (default `~/.pgpass`) matched by host, port, database and user. Never from
//! PGPASSWORD: the `postgres` watch kind falls back to it, and a registry reading it would
//! send its write password to whichever (possibly third-party) server a watch names, or the
//! other way round.

use super::{pg, Backend, Registry, RegistryError, Result};
use crate::sources::postgres::{parse_url, passfile_password, read_secret_file, Target};
use std::path::{Path, PathBuf};

/// Where the registry's PostgreSQL password comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PgPassword {
    /// `[storage] password_file`: the file's text, without its trailing newline.
    File(PathBuf),
    /// `[storage] password = "${VAR}"`: the variable's value.
    Env(String),
    /// Neither: PGPASSFILE (default `~/.pgpass`), the first line matching the URL's host,
    /// port, database and user; no password when none matches.
    PassFile,
}

/// Where the registry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres {
        /// Validated by `parse_url` (no password in it).
        url: url::Url,
        /// `options.password` is `None` here: it is read from `password` at each connect.
        options: pg::PgOptions,
        password: PgPassword,
    },
}

impl std::fmt::Display for Location {
    /// The file's path, or `postgresql://user@host:port/db` (the URL holds no password, and
    /// its query is left out).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres { url, .. } => match parse_url(url) {
                Ok(t) => write!(f, "postgresql://{}", t.shown()),
                Err(_) => f.write_str("postgresql://(invalid URL)"),
            },
        }
    }
}

impl Location {
    /// A registry named on the command line (`inspect diff --old-db`): a
    /// `postgresql://user@host:port/db` URL (the password from PGPASSFILE only, the CA from
    /// PGSSLROOTCERT when set, else the system roots), or else a SQLite file's path.
    pub fn from_arg(arg: &Path) -> std::result::Result<Location, String> {
        let Some(text) = arg
            .to_str()
            .filter(|t| t.starts_with("postgresql://") || t.starts_with("postgres://"))
        else {
            return Ok(Location::Sqlite(arg.to_path_buf()));
        };
        // Never echo the URL: it may hold a password.
        let url = url::Url::parse(text).map_err(|_| "not a postgresql:// URL".to_string())?;
        parse_url(&url).map_err(|e| e.to_string())?;
        Ok(Location::Postgres {
            url,
            options: pg::PgOptions {
                ca_file: std::env::var_os("PGSSLROOTCERT").map(PathBuf::from),
                ..pg::PgOptions::default()
            },
            password: PgPassword::PassFile,
        })
    }

    /// The SQLite file, when the registry is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(path) => Some(path),
            Location::Postgres { .. } => None,
        }
    }

    /// A new session on the registry's database, with the password read now.
    fn connect(&self) -> Result<postgres::Client> {
        let Location::Postgres {
            url,
            options,
            password,
        } = self
        else {
            return Err(RegistryError::NotOnPostgres("connecting to a SQLite file"));
        };
        let target = parse_url(url).map_err(|e| RegistryError::PostgresConnect {
            target: "the registry URL".into(),
            reason: e.to_string(),
        })?;
        let mut options = options.clone();
        options.password = password.read(&target)?;
        pg::connect(url, &options)
    }
}

impl PgPassword {
    /// The password for `target` (`None`: connect without one, as libpq would).
    fn read(&self, target: &Target) -> Result<Option<String>> {
        let fail = |reason: String| RegistryError::PostgresConnect {
            target: target.shown(),
            reason,
        };
        match self {
            PgPassword::File(path) => read_secret_file(path)
                .map(Some)
                .map_err(|e| fail(format!("[storage] password_file: {e}"))),
            PgPassword::Env(var) => match std::env::var(var) {
                Ok(value) => Ok(Some(value)),
                Err(_) => Err(fail(format!(
                    "[storage] password: environment variable {var} is not set"
                ))),
            },
            PgPassword::PassFile => {
                passfile_password(target).map_err(|e| fail(format!("PGPASSFILE: {e}")))
            }
        }
    }
}

/// What the database `client` is connected to holds, where the registry's tables go (the
/// session's current schema).
enum Found {
    /// A schemawatch registry (the first migration, which creates `schema_migrations` in the
    /// same transaction, was applied).
    Registry,
    /// No table at all: a registry may be created there.
    Empty,
    /// Tables, none of them a registry's: never taken as a new registry.
    Foreign,
}

fn found(client: &mut postgres::Client) -> Result<Found> {
    let row = client.query_one(
        "SELECT to_regclass('schema_migrations') IS NOT NULL,
                EXISTS (SELECT 1 FROM pg_catalog.pg_class c
                          JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f'))",
        &[],
    )?;
    Ok(match (row.try_get(0)?, row.try_get(1)?) {
        (true, _) => Found::Registry,
        (false, false) => Found::Empty,
        (false, true) => Found::Foreign,
    })
}

/// `location`'s database as a registry to open: refused when it holds other tables, or
/// holds no registry and `create` is false.
fn check_found(client: &mut postgres::Client, location: &Location, create: bool) -> Result<()> {
    match found(client)? {
        Found::Registry => Ok(()),
        Found::Empty if create => Ok(()),
        Found::Empty => Err(RegistryError::Missing {
            path: location.to_string(),
        }),
        Found::Foreign => Err(RegistryError::NotARegistry {
            path: location.to_string(),
            why: "the database holds other tables and no schemawatch registry".into(),
        }),
    }
}

impl Registry {
    /// Opens the registry at `location`, as [`Registry::open_or_create`] does a file: on
    /// PostgreSQL, a database without any table is migrated into a registry when `create` is
    /// true, else refused ([`RegistryError::Missing`]); one holding other tables is refused
    /// ([`RegistryError::NotARegistry`]); an existing registry is brought up to this binary's
    /// schema.
    pub fn open_at(location: &Location, create: bool) -> Result<Registry> {
        match location {
            Location::Sqlite(path) => Registry::open_or_create(path, create),
            // Blocks on the network: off the runtime's workers, as every PostgreSQL call.
            Location::Postgres { .. } => super::sql::off_runtime(|| {
                let mut client = location.connect()?;
                check_found(&mut client, location, create)?;
                Registry::open_postgres(client)
            }),
        }
    }

    /// Another connection to a registry this process already opened with
    /// [`Registry::open_at`]: no checks, no migration. On PostgreSQL a session of its own (not
    /// a pooled one): the daemon keeps at most `[storage] pool_size` idle.
    pub fn open_pooled_at(location: &Location) -> Result<Registry> {
        match location {
            Location::Sqlite(path) => Registry::open_pooled(path),
            Location::Postgres { .. } => Ok(Registry::on_session(location.connect()?)),
        }
    }

    /// The registry at `location` for reading only: on SQLite the read-only open; on
    /// PostgreSQL a session whose transactions are read-only
    /// (`default_transaction_read_only`), of a database already at this binary's schema.
    pub fn open_read_only_at(location: &Location) -> Result<Registry> {
        match location {
            Location::Sqlite(path) => Registry::open_read_only(path),
            Location::Postgres { .. } => super::sql::off_runtime(|| {
                let mut client = location.connect()?;
                check_found(&mut client, location, false)?;
                let found: i64 = client
                    .query_one(
                        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                        &[],
                    )?
                    .try_get(0)?;
                let supported = super::supported_schema();
                if found > supported {
                    return Err(RegistryError::TooNew { found, supported });
                }
                if found < supported {
                    return Err(RegistryError::TooOld { found, supported });
                }
                client.batch_execute("SET default_transaction_read_only = on")?;
                Ok(Registry::on_session(client))
            }),
        }
    }

    /// A registry on an already migrated PostgreSQL session.
    fn on_session(client: postgres::Client) -> Registry {
        Registry {
            backend: Backend::Postgres(Box::new(std::cell::RefCell::new(super::sql::Held::Own(
                super::sql::PgSession::new(client),
            )))),
            routes: None,
        }
    }
}

/// Opens the sessions of a [`Pool`]: each a [`Location::connect`] (the password read then),
/// kept with its prepared statements while pooled.
#[derive(Debug)]
pub struct Manager {
    location: Location,
}

impl r2d2::ManageConnection for Manager {
    type Connection = super::sql::PgSession;
    type Error = RegistryError;

    fn connect(&self) -> Result<super::sql::PgSession> {
        Ok(super::sql::PgSession::new(self.location.connect()?))
    }

    fn is_valid(&self, session: &mut super::sql::PgSession) -> Result<()> {
        // Checked on use instead (a failed statement marks the session): no round trip per
        // checkout.
        let _ = session;
        Ok(())
    }

    fn has_broken(&self, session: &mut super::sql::PgSession) -> bool {
        session.is_closed()
    }
}

/// Failures to open a pooled session, logged (their text is already scrubbed of the password).
#[derive(Debug)]
struct LogErrors;

impl r2d2::HandleError<RegistryError> for LogErrors {
    fn handle_error(&self, error: RegistryError) {
        // Retried in the background while the server is down: the refreshes' own
        // `registry_unavailable` errors say so once per refresh.
        tracing::debug!(event = "registry_connect_failed", error = %error);
    }
}

/// The daemon's PostgreSQL sessions: `r2d2` (the synchronous pool of the blocking `postgres`
/// client's ecosystem, maintained, bounded): at most `[storage] pool_size` open at once, none
/// before the first checkout; a checkout waits at most `connect_timeout` for a free one.
pub type Pool = r2d2::Pool<Manager>;

impl Location {
    /// A bounded pool of sessions on this PostgreSQL registry (`None` for a SQLite file).
    pub fn pool(&self) -> Option<Pool> {
        let Location::Postgres { options, .. } = self else {
            return None;
        };
        Some(
            r2d2::Pool::builder()
                .max_size(options.pool_size.max(1))
                .min_idle(Some(0))
                .test_on_check_out(false)
                .connection_timeout(options.connect_timeout)
                .error_handler(Box::new(LogErrors))
                .build_unchecked(Manager {
                    location: self.clone(),
                }),
        )
    }
}

impl Registry {
    /// A registry on a session of `pool`, waiting at most the pool's connect timeout for one;
    /// the session goes back to the pool when the registry is dropped.
    pub fn from_pool(pool: &Pool) -> Result<Registry> {
        let session =
            super::sql::off_runtime(|| pool.get()).map_err(|e| RegistryError::PostgresConnect {
                target: "the registry's session pool".into(),
                reason: e.to_string(),
            })?;
        Ok(Registry {
            backend: Backend::Postgres(Box::new(std::cell::RefCell::new(
                super::sql::Held::Pooled(session),
            ))),
            routes: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::pg_tests;
    use super::*;
    use crate::core::model::Kind;
    use crate::registry::{WatchState, WatchStatus};

    /// A fresh database of the test cluster as a location, with its password file.
    fn location() -> Option<(pg_tests::Database, Location, tempfile::TempDir)> {
        let db = pg_tests::database()?;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, format!("{}\n", db.password().unwrap_or(""))).unwrap();
        let location = db.location(&file);
        Some((db, location, dir))
    }

    #[test]
    fn open_at_creates_the_registry_once_and_the_other_opens_use_it() {
        let Some((db, location, _dir)) = location() else {
            return;
        };
        assert!(matches!(
            Registry::open_read_only_at(&location),
            Err(RegistryError::Missing { .. })
        ));
        assert!(matches!(
            Registry::open_at(&location, false),
            Err(RegistryError::Missing { .. })
        ));
        let mut registry = Registry::open_at(&location, true).unwrap();
        let mut state = WatchState::new("acme.shop", Kind::Openapi);
        state.status = WatchStatus::Error;
        state.last_error = Some("boom".into());
        registry.record_watch(&state).unwrap();
        // Another session sees the row; opening again migrates nothing and keeps it.
        let pooled = Registry::open_pooled_at(&location).unwrap();
        assert_eq!(
            pooled.watch_state("acme.shop").unwrap().map(|s| s.status),
            Some(WatchStatus::Error)
        );
        let mut again = Registry::open_at(&location, false).unwrap();
        assert!(again.reset("acme.shop").unwrap());
        // A read-only session reads, and its writes are refused by the server.
        let mut read_only = Registry::open_read_only_at(&location).unwrap();
        assert_eq!(
            read_only
                .watch_state("acme.shop")
                .unwrap()
                .map(|s| s.status),
            Some(WatchStatus::Idle)
        );
        let refused = read_only.reset("acme.shop").unwrap_err().to_string();
        assert!(refused.contains("read-only transaction"), "{refused}");
        drop(db);
    }
}
