//! The registry's PostgreSQL connection (issue 33, in progress): not reachable from the config
//! or any command yet, used by the PostgreSQL migrations and their tests.
//!
//! The URL follows the `postgres` watch kind's rules (`sources::postgres::parse_url`: no
//! password in it, `sslmode=verify-full` by default, `disable` only when written), and TLS is
//! that kind's rustls setup (`tls_config`: the chain and the host name verified against
//! `ca_file` or the system roots). The client is the blocking `postgres` crate, for the
//! synchronous registry interface: called from plain threads or the blocking pool, never on
//! a tokio worker (it would panic there).

use super::{RegistryError, Result};
use crate::sources::postgres::{install_provider, parse_url, scrub, tls_config};
use std::path::Path;
use std::time::Duration;

/// How long opening a connection may take when the caller gives no bound.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to the database at `url` with `password` (never logged, removed from every error
/// text), verifying the server's certificate against `ca_file` (or the system roots) unless
/// the URL says `sslmode=disable`.
pub fn connect(
    url: &url::Url,
    password: Option<&str>,
    ca_file: Option<&Path>,
    connect_timeout: Duration,
) -> Result<postgres::Client> {
    let t = parse_url(url).map_err(|e| RegistryError::PostgresConnect {
        target: "the registry URL".into(),
        reason: e.to_string(),
    })?;
    let shown = format!("{}@{}:{}/{}", t.user, t.host, t.port, t.database);
    let mut config = postgres::Config::new();
    config
        .host(&t.host)
        .port(t.port)
        .user(&t.user)
        .dbname(&t.database)
        .application_name("schemawatch")
        .connect_timeout(connect_timeout);
    if let Some(p) = password {
        config.password(p);
    }
    let fail = |e: postgres::Error| RegistryError::PostgresConnect {
        target: shown.clone(),
        reason: scrub(&e, password),
    };
    if t.tls {
        install_provider();
        config.ssl_mode(postgres::config::SslMode::Require);
        let tls = tls_config(ca_file).map_err(|e| RegistryError::PostgresConnect {
            target: shown.clone(),
            reason: e.to_string(),
        })?;
        config
            .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
            .map_err(fail)
    } else {
        config.ssl_mode(postgres::config::SslMode::Disable);
        config.connect(postgres::NoTls).map_err(fail)
    }
}

/// Brings the database `client` is connected to up to this binary's schema: the PostgreSQL
/// migrations it lacks, in order, under an advisory lock (several daemons may start at once).
/// A database whose schema is newer than this binary's is refused
/// ([`RegistryError::TooNew`]).
pub fn migrate(client: &mut postgres::Client) -> Result<()> {
    super::migrate::run_postgres(client)
}
