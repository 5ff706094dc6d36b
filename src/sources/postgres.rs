//! Reading the catalog of a PostgreSQL database (kind `postgres`).
//!
//! `postgresql://user@host:port/db` (or `postgres://`): no password in the URL (refused, so it
//! never shows in `ps`, a config file or a message), and no query parameter but
//! `sslmode=verify-full` (the default) or `sslmode=disable` (asked for explicitly). TLS is
//! rustls with the ring provider, verifying the certificate chain and the host name against
//! the watch's `ca_file` or the system roots. The password comes from the watch's `password`
//! template (`${VAR}`, `${file:PATH}`), its `password_file`, `PGPASSWORD`, or the standard
//! `PGPASSFILE` (default `~/.pgpass`), in that order.
//!
//! Introspection runs in one `READ ONLY` transaction with `search_path = pg_catalog`,
//! `statement_timeout` and `lock_timeout`; it reads `pg_catalog` only, never row data.

use crate::core::normalize::postgres::CATALOG_FORMAT;
use crate::fetch::expand_header_value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// The settings of a database source beyond its URL.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct DatabaseOptions {
    /// A password template (`${VAR}`, `${file:PATH}`); never logged.
    pub password: Option<String>,
    pub password_file: Option<PathBuf>,
    /// Schemas to introspect; empty means `public`.
    pub schemas: Vec<String>,
}

impl std::fmt::Debug for DatabaseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseOptions")
            .field("password", &self.password.as_ref().map(|_| "<configured>"))
            .field("password_file", &self.password_file)
            .field("schemas", &self.schemas)
            .finish()
    }
}

/// Why a PostgreSQL URL is not usable. Messages never carry a secret's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("a password in a database URL is refused (it would show in `ps` and in files): use `password_file`, `password = \"${{VAR}}\"`, PGPASSWORD or PGPASSFILE")]
    Password,
    #[error("the URL parameter `{key}` carries a secret and is refused")]
    SecretParameter { key: String },
    #[error("unsupported URL parameter `{key}` (only sslmode=verify-full or sslmode=disable)")]
    Parameter { key: String },
    #[error("sslmode `{mode}` is not supported (verify-full, the default, or disable)")]
    SslMode { mode: String },
    #[error("a database URL needs a host and a user (postgresql://user@host:port/db)")]
    Incomplete,
    #[error("a database URL is postgresql:// or postgres://")]
    Scheme,
}

/// Where to connect, from a validated URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub database: String,
    pub tls: bool,
}

/// The libpq parameters that carry secrets.
const SECRET_PARAMETERS: &[&str] = &["password", "sslpassword", "sslkey", "passfile"];

/// Percent-decodes a URL component (user or database name).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Target {
    /// `user@host:port/database`, for messages (never a password).
    pub fn shown(&self) -> String {
        format!(
            "{}@{}:{}/{}",
            self.user, self.host, self.port, self.database
        )
    }

    /// The client settings of this target, as the watch kind and the registry both connect.
    pub fn client_config(
        &self,
        connect_timeout: std::time::Duration,
        password: Option<&str>,
    ) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(&self.database)
            .application_name("schemawatch")
            .connect_timeout(connect_timeout);
        if let Some(p) = password {
            config.password(p);
        }
        config
    }
}

/// Validates a database URL (config load, the command line, and every fetch).
pub fn parse_url(url: &Url) -> Result<Target, UrlError> {
    if !matches!(url.scheme(), "postgresql" | "postgres") {
        return Err(UrlError::Scheme);
    }
    if url.password().is_some() {
        return Err(UrlError::Password);
    }
    let mut tls = true;
    for (key, value) in url.query_pairs() {
        let key = key.to_ascii_lowercase();
        if SECRET_PARAMETERS.contains(&key.as_str()) {
            return Err(UrlError::SecretParameter { key });
        }
        if key != "sslmode" {
            return Err(UrlError::Parameter { key });
        }
        match value.as_ref() {
            "verify-full" => tls = true,
            "disable" => tls = false,
            other => {
                return Err(UrlError::SslMode {
                    mode: other.to_string(),
                })
            }
        }
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or(UrlError::Incomplete)?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let user = decode(url.username());
    if user.is_empty() {
        return Err(UrlError::Incomplete);
    }
    let database = match decode(url.path().trim_start_matches('/')) {
        d if d.is_empty() => user.clone(),
        d => d,
    };
    Ok(Target {
        host,
        port: url.port().unwrap_or(5432),
        user,
        database,
        tls,
    })
}

/// Why a database's catalog could not be read. Messages never carry the password.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error("password: {0}")]
    Password(String),
    #[error("TLS setup: {0}")]
    Tls(String),
    #[error("cannot connect to {target}: {reason}")]
    Connect { target: String, reason: String },
    #[error("cannot read the catalog of {target}: {reason}")]
    Introspect { target: String, reason: String },
    #[error("timed out reading the database catalog")]
    Timeout,
}

pub(crate) fn install_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

pub(crate) fn tls_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, PostgresError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| PostgresError::Tls(format!("{}: {e}", path.display())))?;
            for cert in certs {
                let cert =
                    cert.map_err(|e| PostgresError::Tls(format!("{}: {e}", path.display())))?;
                roots
                    .add(cert)
                    .map_err(|e| PostgresError::Tls(format!("{}: {e}", path.display())))?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| PostgresError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// One `host:port:database:user:password` line of a PGPASSFILE matches.
pub(crate) fn pgpass_lookup(text: &str, t: &Target) -> Option<String> {
    fn fields(line: &str) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        if let Some(last) = out.last_mut() {
                            last.push(n);
                        }
                    }
                }
                ':' if out.len() < 5 => out.push(String::new()),
                c => {
                    if let Some(last) = out.last_mut() {
                        last.push(c);
                    }
                }
            }
        }
        out
    }
    let port = t.port.to_string();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f = fields(line);
        if f.len() != 5 {
            continue;
        }
        let ok = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        if ok(&f[0], &t.host) && ok(&f[1], &port) && ok(&f[2], &t.database) && ok(&f[3], &t.user) {
            return Some(f[4].clone());
        }
    }
    None
}

pub(crate) fn read_secret_file(path: &Path) -> Result<String, PostgresError> {
    let bytes = std::fs::read(path)
        .map_err(|e| PostgresError::Password(format!("cannot read {}: {e}", path.display())))?;
    if bytes.len() as u64 > crate::fetch::MAX_SECRET_FILE_BYTES {
        return Err(PostgresError::Password(format!(
            "{} is too large",
            path.display()
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| PostgresError::Password(format!("{} is not UTF-8", path.display())))?;
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

fn password(options: &DatabaseOptions, t: &Target) -> Result<Option<String>, PostgresError> {
    if let Some(template) = &options.password {
        return expand_header_value(template)
            .map(Some)
            .map_err(|e| PostgresError::Password(e.to_string()));
    }
    if let Some(path) = &options.password_file {
        return read_secret_file(path).map(Some);
    }
    if let Ok(p) = std::env::var("PGPASSWORD") {
        return Ok(Some(p));
    }
    passfile_password(t)
}

/// The password of the PGPASSFILE line (default `~/.pgpass`, as libpq) matching `t`'s host,
/// port, database and user; `None` without such a file or line. (The registry reads only
/// this, never PGPASSWORD.)
pub(crate) fn passfile_password(t: &Target) -> Result<Option<String>, PostgresError> {
    let passfile = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")));
    match passfile.filter(|p| p.is_file()) {
        Some(path) => Ok(pgpass_lookup(&read_secret_file(&path)?, t)),
        None => Ok(None),
    }
}

/// Error text of the client, with every secret removed.
pub(crate) fn scrub(error: &tokio_postgres::Error, secret: Option<&str>) -> String {
    let mut text = match error.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut text = error.to_string();
            let mut cause = std::error::Error::source(error);
            while let Some(c) = cause {
                text.push_str(": ");
                text.push_str(&c.to_string());
                cause = c.source();
            }
            text
        }
    };
    if let Some(s) = secret.filter(|s| !s.is_empty()) {
        text = text.replace(s, "<redacted>");
    }
    text
}

const CATALOG_QUERY: &str = include_str!("postgres_catalog.sql");

/// Reads the catalog of the database at `url` into a catalog document (JSON bytes).
/// No server message may be longer than the watch's `max_bytes` plus this (the catalog
/// document arrives as one row of one column; the rest of a row's framing is a few bytes).
const MESSAGE_OVERHEAD: u64 = 64 * 1024;

/// Reads the catalog of the database at `url` into a catalog document (JSON bytes), with no
/// server message longer than `max_bytes` (plus a little framing) ever buffered.
pub async fn fetch(
    url: &Url,
    options: &DatabaseOptions,
    ca_file: Option<&Path>,
    timeout: Duration,
    connect_timeout: Duration,
    max_bytes: u64,
) -> Result<Vec<u8>, PostgresError> {
    let limits = Limits {
        timeout,
        connect_timeout,
        max_message: max_bytes.saturating_add(MESSAGE_OVERHEAD),
    };
    match tokio::time::timeout(timeout, read(url, options, ca_file, limits)).await {
        Ok(result) => result,
        Err(_) => Err(PostgresError::Timeout),
    }
}

#[derive(Clone, Copy)]
struct Limits {
    timeout: Duration,
    connect_timeout: Duration,
    max_message: u64,
}

async fn read(
    url: &Url,
    options: &DatabaseOptions,
    ca_file: Option<&Path>,
    limits: Limits,
) -> Result<Vec<u8>, PostgresError> {
    let Limits {
        timeout,
        connect_timeout,
        max_message,
    } = limits;
    let t = parse_url(url)?;
    let shown = t.shown();
    let secret = password(options, &t)?;
    let mut config = t.client_config(connect_timeout, secret.as_deref());
    let connect_err = |e: tokio_postgres::Error| PostgresError::Connect {
        target: shown.clone(),
        reason: scrub(&e, secret.as_deref()),
    };
    // The socket is ours (`connect_raw`) so every server message passes a `Bounded` reader,
    // which refuses a header announcing more than `max_message` bytes before the client
    // reserves room for it (was: 1.36 GB from one forged header, docs/reliability.md H37).
    let tcp = tokio::time::timeout(
        connect_timeout,
        tokio::net::TcpStream::connect((t.host.as_str(), t.port)),
    )
    .await
    .map_err(|_| PostgresError::Connect {
        target: shown.clone(),
        reason: "timed out connecting".into(),
    })?
    .map_err(|e| PostgresError::Connect {
        target: shown.clone(),
        reason: e.to_string(),
    })?;
    let client = if t.tls {
        install_provider();
        config.ssl_mode(tokio_postgres::config::SslMode::Require);
        let mut make = tokio_postgres_rustls::MakeRustlsConnect::new(tls_config(ca_file)?);
        let tls = tokio_postgres::tls::MakeTlsConnect::<tokio::net::TcpStream>::make_tls_connect(
            &mut make, &t.host,
        )
        .map_err(|e| PostgresError::Tls(e.to_string()))?;
        let (client, connection) = config
            .connect_raw(
                tcp,
                BoundedTls {
                    inner: tls,
                    max_message,
                },
            )
            .await
            .map_err(connect_err)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    } else {
        config.ssl_mode(tokio_postgres::config::SslMode::Disable);
        let (client, connection) = config
            .connect_raw(Bounded::new(tcp, max_message), tokio_postgres::NoTls)
            .await
            .map_err(connect_err)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    };
    let fail = |e: tokio_postgres::Error| PostgresError::Introspect {
        target: shown.clone(),
        reason: scrub(&e, secret.as_deref()),
    };
    let ms = timeout.as_millis().max(1);
    client
        .batch_execute(&format!(
            "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY; \
             SET LOCAL search_path = pg_catalog; \
             SET LOCAL statement_timeout = {ms}; \
             SET LOCAL lock_timeout = {}",
            (ms / 2).max(1)
        ))
        .await
        .map_err(fail)?;
    let schemas: Vec<String> = if options.schemas.is_empty() {
        vec!["public".to_string()]
    } else {
        options.schemas.clone()
    };
    let row = client
        .query_one(CATALOG_QUERY, &[&schemas, &CATALOG_FORMAT])
        .await
        .map_err(fail)?;
    let document: String = row.try_get(0).map_err(fail)?;
    // Ending a read-only transaction writes nothing.
    let _ = client.batch_execute("ROLLBACK").await;
    Ok(document.into_bytes())
}

/// Backend message framing (1 type byte, a 4-byte big-endian length that counts itself, the
/// body), followed across reads to check each announced length against a limit.
#[derive(Debug)]
struct Frames {
    header: [u8; 5],
    have: usize,
    /// Body bytes of the current message still to pass.
    skip: u64,
    max_message: u64,
}

impl Frames {
    fn new(max_message: u64) -> Frames {
        Frames {
            header: [0; 5],
            have: 0,
            skip: 0,
            max_message,
        }
    }

    /// Follows `data`, the next bytes from the server; an error for a message longer than
    /// the limit (or a length below its own 4 bytes).
    fn feed(&mut self, mut data: &[u8]) -> std::io::Result<()> {
        while !data.is_empty() {
            if self.skip > 0 {
                let n = data
                    .len()
                    .min(usize::try_from(self.skip).unwrap_or(usize::MAX));
                self.skip -= n as u64;
                data = &data[n..];
                continue;
            }
            let n = data.len().min(5 - self.have);
            self.header[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            data = &data[n..];
            if self.have == 5 {
                self.have = 0;
                let [kind, a, b, c, d] = self.header;
                let length = u64::from(u32::from_be_bytes([a, b, c, d]));
                if length < 4 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("malformed server message (type {kind}, length {length})"),
                    ));
                }
                if length - 4 > self.max_message {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "the server announced a message of {length} bytes, more than the {} this watch allows (max_bytes)",
                            self.max_message
                        ),
                    ));
                }
                self.skip = length - 4;
            }
        }
        Ok(())
    }
}

/// A stream whose reads pass [`Frames`]: bytes of a message over the limit are never handed
/// to the client, whose codec would reserve the announced length at once.
struct Bounded<S> {
    inner: S,
    frames: Frames,
}

impl<S> Bounded<S> {
    fn new(inner: S, max_message: u64) -> Bounded<S> {
        Bounded {
            inner,
            frames: Frames::new(max_message),
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Bounded<S> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        std::task::ready!(std::pin::Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.frames.feed(&buf.filled()[before..])?;
        std::task::Poll::Ready(Ok(()))
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Bounded<S> {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<S: tokio_postgres::tls::TlsStream + Unpin> tokio_postgres::tls::TlsStream for Bounded<S> {
    fn channel_binding(&self) -> tokio_postgres::tls::ChannelBinding {
        self.inner.channel_binding()
    }
}

/// The TLS connector with its decrypted stream [`Bounded`].
struct BoundedTls<T> {
    inner: T,
    max_message: u64,
}

impl<S, T> tokio_postgres::tls::TlsConnect<S> for BoundedTls<T>
where
    T: tokio_postgres::tls::TlsConnect<S>,
    T::Stream: Unpin,
    T::Future: Send + 'static,
{
    type Stream = Bounded<T::Stream>;
    type Error = T::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Bounded<T::Stream>, T::Error>> + Send>,
    >;

    fn connect(self, stream: S) -> Self::Future {
        let max_message = self.max_message;
        let connecting = self.inner.connect(stream);
        Box::pin(async move { Ok(Bounded::new(connecting.await?, max_message)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn frames_refuse_an_oversized_header_across_split_reads() {
        let mut message = vec![b'D'];
        message.extend_from_slice(&(4 + 100u32).to_be_bytes());
        message.extend_from_slice(&[7; 100]);
        let mut oversized = vec![b'R'];
        oversized.extend_from_slice(&1_360_000_000u32.to_be_bytes());
        let mut stream = message.repeat(3);
        stream.extend_from_slice(&oversized);
        for chunk in [1, 2, 3, 5, 7, 64, 4096] {
            let mut frames = Frames::new(100);
            let mut result = Ok(());
            let mut fed = 0;
            for piece in stream.chunks(chunk) {
                result = frames.feed(piece);
                fed += piece.len();
                if result.is_err() {
                    break;
                }
            }
            let error = result.unwrap_err().to_string();
            assert!(error.contains("1360000000 bytes"), "{error}");
            // Refused at the header, not after its body.
            assert_eq!(fed, stream.len(), "chunk {chunk}");
        }
        // At the limit: fine; a length below its own 4 bytes: malformed.
        assert!(Frames::new(100).feed(&message.repeat(50)).is_ok());
        assert!(Frames::new(100).feed(&[b'Z', 0, 0, 0, 3]).is_err());
    }

    #[test]
    fn urls_are_validated() {
        let t = parse_url(&url("postgresql://app@db.internal:6543/shop")).unwrap();
        assert_eq!(
            (
                t.host.as_str(),
                t.port,
                t.user.as_str(),
                t.database.as_str(),
                t.tls
            ),
            ("db.internal", 6543, "app", "shop", true)
        );
        assert!(
            !parse_url(&url("postgres://app@h/db?sslmode=disable"))
                .unwrap()
                .tls
        );
        assert_eq!(
            parse_url(&url("postgresql://app:hunter2@h/db")),
            Err(UrlError::Password)
        );
        assert!(matches!(
            parse_url(&url("postgresql://app@h/db?sslpassword=x")),
            Err(UrlError::SecretParameter { .. })
        ));
        assert!(matches!(
            parse_url(&url("postgresql://app@h/db?sslmode=require")),
            Err(UrlError::SslMode { .. })
        ));
        assert!(matches!(
            parse_url(&url("postgresql://app@h/db?options=x")),
            Err(UrlError::Parameter { .. })
        ));
        assert_eq!(
            parse_url(&url("postgresql://h/db")),
            Err(UrlError::Incomplete)
        );
        let message = UrlError::Password.to_string();
        assert!(!message.contains("hunter2"));
    }

    #[test]
    fn pgpass_lines_match() {
        let t = parse_url(&url("postgresql://app@127.0.0.1:5432/shop")).unwrap();
        let text = "# comment\nother:*:*:*:nope\n127.0.0.1:5432:*:app:s\\:ecret\n";
        assert_eq!(pgpass_lookup(text, &t).as_deref(), Some("s:ecret"));
        assert_eq!(pgpass_lookup("*:*:*:bob:x\n", &t), None);
    }
}
