//! The registry's PostgreSQL connections (issue 33, in progress): opened for `[storage] url`
//! through `registry::Location` (which reads the password when it connects), and used by the
//! PostgreSQL migrations and their tests.
//!
//! The URL follows the `postgres` watch kind's rules (`sources::postgres::parse_url`: no
//! password in it, `sslmode=verify-full` by default, `disable` only when written), and TLS is
//! that kind's rustls setup (`tls_config`: the chain and the host name verified against
//! `ca_file` or the system roots). Every session runs under a `statement_timeout`. The client
//! is the blocking `postgres` crate and the pool `r2d2` (bounded, a checkout waits at most the
//! connect timeout), for the synchronous registry interface: called from plain threads or the
//! blocking pool, never on a tokio worker (the client would panic there).

use super::{RegistryError, Result};
use crate::sources::postgres::{install_provider, parse_url, scrub, tls_config};
use std::path::PathBuf;
use std::time::Duration;

/// How long opening a connection (or waiting for a pooled one) may take by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one statement may run by default before the server cancels it.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection is quiet before TCP keepalives probe its peer.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
/// Connections a pool opens at most by default.
pub const POOL_SIZE: u32 = 8;

/// How to reach the registry's database, beyond its URL.
#[derive(Clone, PartialEq, Eq)]
pub struct PgOptions {
    /// The password (never logged, removed from every error text).
    pub password: Option<String>,
    /// The certificate(s) the server's chain must lead to; `None`: the system roots.
    pub ca_file: Option<PathBuf>,
    pub connect_timeout: Duration,
    /// The session's `statement_timeout` (whole milliseconds, at least 1).
    pub statement_timeout: Duration,
    /// A pool's bound on open connections (at least 1).
    pub pool_size: u32,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            password: None,
            ca_file: None,
            connect_timeout: CONNECT_TIMEOUT,
            statement_timeout: STATEMENT_TIMEOUT,
            pool_size: POOL_SIZE,
        }
    }
}

impl std::fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgOptions")
            .field("password", &self.password.as_ref().map(|_| "<configured>"))
            .field("ca_file", &self.ca_file)
            .field("connect_timeout", &self.connect_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

/// Connects to the database at `url`, verifying the server's certificate unless the URL says
/// `sslmode=disable`, with the session's `statement_timeout` set at startup.
pub fn connect(url: &url::Url, options: &PgOptions) -> Result<postgres::Client> {
    let t = parse_url(url).map_err(|e| RegistryError::PostgresConnect {
        target: "the registry URL".into(),
        reason: e.to_string(),
    })?;
    let shown = t.shown();
    let password = options.password.as_deref();
    let statement_ms = options.statement_timeout.as_millis().max(1);
    let mut config = postgres::Config::from(t.client_config(options.connect_timeout, password));
    // A session stopped inside a write transaction (a frozen or vanished client) would keep
    // the head row every writer waits for: the server ends it after twice the statement
    // timeout idle in a transaction, and keepalives notice a peer gone without a word.
    let idle_ms = statement_ms.saturating_mul(2);
    config.options(&format!(
        "-c statement_timeout={statement_ms} -c idle_in_transaction_session_timeout={idle_ms}"
    ));
    config.keepalives(true);
    config.keepalives_idle(KEEPALIVE_IDLE);
    let fail = |e: postgres::Error| RegistryError::PostgresConnect {
        target: shown.clone(),
        reason: scrub(&e, password),
    };
    if t.tls {
        install_provider();
        config.ssl_mode(postgres::config::SslMode::Require);
        let tls =
            tls_config(options.ca_file.as_deref()).map_err(|e| RegistryError::PostgresConnect {
                target: shown.clone(),
                reason: e.to_string(),
            })?;
        let tls = tokio_postgres_rustls::MakeRustlsConnect::new(tls);
        // Connecting blocks on the network: never on a runtime worker.
        super::sql::off_runtime(|| config.connect(tls)).map_err(fail)
    } else {
        config.ssl_mode(postgres::config::SslMode::Disable);
        super::sql::off_runtime(|| config.connect(postgres::NoTls)).map_err(fail)
    }
}

/// Brings the database `client` is connected to up to this binary's schema: the PostgreSQL
/// migrations it lacks, in order, under an advisory lock (several daemons may start at once).
/// A database whose schema is newer than this binary's is refused
/// ([`RegistryError::TooNew`]).
pub fn migrate(client: &mut postgres::Client) -> Result<()> {
    super::migrate::run_postgres(client)
}
