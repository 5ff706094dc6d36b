//! The TOML configuration: storage, daemon settings, severity overrides and watches.
//! Unknown keys are errors that name the key and its line; relative paths resolve against the
//! config file's folder; `${VAR}` expands in `storage.path`. Header values are kept as templates
//! here and expanded only when a fetch needs them, so secrets never sit in this struct.

use crate::core::diff::rules::{self, SeverityOverrides};
use crate::core::model::{Kind, Severity};
use crate::core::sunset::{Stability, SunsetPolicy};
use crate::fetch::Validators;
use crate::sources::{Request, Source};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub path: PathBuf,
    pub storage: Storage,
    pub daemon: Daemon,
    pub server: Server,
    pub severity: SeverityOverrides,
    /// `[policy]`: the stability and sunset policy of every watch without its own.
    pub policy: SunsetPolicy,
    pub watches: Vec<WatchConfig>,
    /// `[[notify]]` sinks (main config file only) and `[notifications]` settings.
    pub notify: Vec<SinkConfig>,
    pub notifications: Notifications,
    /// `[[reviewer]]` identities (main config file only).
    pub reviewers: Vec<ReviewerConfig>,
    /// Position of each watch in `watches`, by name: lookups are O(1), not a scan per watch.
    index: HashMap<String, usize>,
    /// The files `include` matched, in the order their watches were read.
    pub included: Vec<PathBuf>,
    /// `${VAR}`s of header and query templates that are unset now, each as a message with its
    /// line. Not an error for every command (an operator's shell rarely holds the service's
    /// secrets); `config check` and `run` refuse them ([`Config::require_env`]).
    pub unset_vars: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Storage {
    /// `path` (a SQLite file, `registry.sqlite3` beside the config when neither key is
    /// written) or `url` (a PostgreSQL database, with its password source and session
    /// settings).
    pub location: crate::registry::Location,
    pub keep_versions: u32,
    /// Closed reviews per watch that keep their candidate and report (default 100); older
    /// ones keep their metadata only. Open reviews are never pruned.
    pub keep_reviews: u32,
    /// Create the registry when none exists at startup (no file at `path`, or a database at
    /// `url` without schemawatch's tables; default true; false for production, where a
    /// missing registry is an error, never a fresh trust baseline).
    pub create: bool,
}

#[derive(Debug, Clone)]
pub struct Daemon {
    pub max_concurrency: usize,
    pub drain_timeout: Duration,
    pub log_format: LogFormat,
    /// A failing watch logs its first error at WARN, then every this many (`error_log_every`).
    pub error_log_every: u32,
    /// How often the daemon logs the INFO `summary` event (`summary_interval`).
    pub summary_interval: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone)]
pub struct Server {
    pub listen: String,
    pub admin_token_env: Option<String>,
    pub per_watch_metrics: PerWatchMetrics,
    /// The URL the API is reached at from outside (links in notifications; a path prefix is
    /// kept). `None`: links are left out.
    pub public_url: Option<url::Url>,
    /// Extra `Host` values `/v1` accepts (exact `host:port`, e.g. a reverse proxy's).
    pub allowed_hosts: Vec<String>,
    /// A token that can read `/v1` (nothing else).
    pub read_token_env: Option<String>,
    /// A token that can queue refreshes (`POST /v1/watches/{name}/refresh`) and nothing else.
    pub refresh_token_env: Option<String>,
    /// A client sends a request's head within this of connecting (or of its previous
    /// request), then its body within this of the head (docs/reliability.md H2, H16).
    pub read_timeout: Duration,
    /// A header a single-sign-on proxy sets to the signed-in user's name (`/ui` only), taken
    /// only from `trusted_proxies` and only for a configured `[[reviewer]]`.
    pub trusted_user_header: Option<String>,
    /// Peer addresses (CIDRs) `trusted_user_header` is accepted from.
    pub trusted_proxies: Vec<Cidr>,
    /// A token that can read the Atom feeds (query parameter `token=` or HTTP Basic).
    pub feed_token_env: Option<String>,
}

/// An IP network (`10.0.0.0/8`, `::1/128`; a bare address is one host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: std::net::IpAddr,
    pub prefix: u8,
}

impl Cidr {
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: std::net::IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not an IP address or CIDR"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.trim().parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => return Err(format!("{text:?}: the prefix length must be 0 to {max}")),
            },
        };
        Ok(Cidr { addr, prefix })
    }

    /// Whether `ip` is in this network (an IPv4-mapped IPv6 peer counts as its IPv4 address).
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        let ip = match ip {
            std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
            v4 => v4,
        };
        let (a, b, bits) = match (self.addr, ip) {
            (std::net::IpAddr::V4(a), std::net::IpAddr::V4(b)) => (
                u128::from(u32::from(a)) << 96,
                u128::from(u32::from(b)) << 96,
                self.prefix,
            ),
            (std::net::IpAddr::V6(a), std::net::IpAddr::V6(b)) => {
                (u128::from(a), u128::from(b), self.prefix)
            }
            _ => return false,
        };
        if bits == 0 {
            return true;
        }
        let mask = u128::MAX << (128 - u32::from(bits));
        a & mask == b & mask
    }
}

/// A `[[reviewer]]`: a name that can decide reviews (in `/ui` and on `/v1`), and where its
/// token is read from. The token is read on every use, so a rotated file needs no restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewerConfig {
    pub name: String,
    pub token: TokenSource,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    Env(String),
    File(PathBuf),
}

impl ReviewerConfig {
    /// The reviewer's token now (trimmed), when set and not empty.
    pub fn token(&self) -> Option<String> {
        let value = match &self.token {
            TokenSource::Env(var) => std::env::var(var).ok()?,
            TokenSource::File(path) => std::fs::read_to_string(path).ok()?,
        };
        let value = value.trim();
        (!value.is_empty()).then(|| value.to_string())
    }
}

/// `[server] read_timeout` when unset.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `[server] read_timeout`: a slot held by a silent client is a slot lost.
pub const MAX_READ_TIMEOUT: Duration = Duration::from_secs(300);

/// `[server] per_watch_metrics`: whether `/metrics` carries series labelled by watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerWatchMetrics {
    /// On for at most [`PER_WATCH_METRICS_AUTO_MAX`] watches, decided once at start.
    Auto,
    On,
    Off,
}

/// `per_watch_metrics = "auto"` turns per-watch series on up to this many watches.
pub const PER_WATCH_METRICS_AUTO_MAX: usize = 1000;

impl PerWatchMetrics {
    /// Whether per-watch series are on for a daemon starting with `watches` watches.
    pub fn enabled(self, watches: usize) -> bool {
        match self {
            PerWatchMetrics::Auto => watches <= PER_WATCH_METRICS_AUTO_MAX,
            PerWatchMetrics::On => true,
            PerWatchMetrics::Off => false,
        }
    }
}

/// Where a watch's document comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceConfig {
    Url(url::Url),
    Path(PathBuf),
    /// An MCP server over stdio: the program and its arguments, plus environment variables
    /// for the child (value templates: `${VAR}`, `${file:PATH}`; expanded at spawn time).
    Command {
        argv: Vec<String>,
        env: BTreeMap<String, String>,
    },
}

/// The identity of a stdio command: its argv (environment values may be secrets, so they are
/// not part of it).
pub fn command_identity(argv: &[String]) -> String {
    format!(
        "command:{}",
        serde_json::to_string(argv).unwrap_or_else(|_| argv.join(" "))
    )
}

/// What an OpenAPI watch does with external `$ref`s (`external_refs`); defined beside the
/// fetch that honours it, so the fetch layer never depends on the config.
pub use crate::fetch::openapi_refs::ExternalRefs;

pub use crate::mcp::McpResources;

#[derive(Debug, Clone, PartialEq)]
pub struct WatchConfig {
    pub name: String,
    pub kind: Kind,
    pub source: SourceConfig,
    pub interval: Duration,
    pub apply_compatible: bool,
    pub timeout: Duration,
    pub max_bytes: u64,
    pub ca_file: Option<PathBuf>,
    pub proxy: Option<String>,
    /// Header name → value template (`${VAR}`, `${file:PATH}`); never logged or stored.
    pub schema_headers: BTreeMap<String, String>,
    /// Secret query parameter name → value template, appended to the URL at fetch time; never
    /// part of the source identity, stored or shown (`[watch.schema_query]`).
    pub schema_query: BTreeMap<String, String>,
    /// Global `[severity]` merged with this watch's `[watch.severity]`.
    pub severity: SeverityOverrides,
    /// Global `[policy]` with this watch's `[watch.policy]` keys over it.
    pub policy: SunsetPolicy,
    /// OpenAPI external `$ref` policy (`external_refs`, default same-origin).
    pub external_refs: ExternalRefs,
    /// Which MCP resources are in the contract (`mcp_resources`, default templates).
    pub mcp_resources: McpResources,
    /// A surface classification file (`triage --classification` format): a new endpoint it does
    /// not classify is a security change.
    pub classification: Option<PathBuf>,
    /// Kind `postgres`: `password` (a template), `password_file`, `schemas`.
    pub database: crate::sources::postgres::DatabaseOptions,
    /// The most endpoints a contract of this watch may have (`max_endpoints`, default
    /// [`DEFAULT_MAX_ENDPOINTS`]); a larger one is an `error`, the registry untouched.
    pub max_endpoints: usize,
    /// `[storage] keep_reviews`, for the refresh that queues this watch's reviews.
    pub keep_reviews: u32,
    /// The consumer's scope (`uses` / `uses_file`): changes outside it are demoted to `info`.
    pub uses: Option<UsesSource>,
    /// `allow_unknown_uses`: an entry that names nothing is not an error.
    pub allow_unknown_uses: bool,
    /// `apply_out_of_scope`: a compatible candidate with demoted changes is applied (by
    /// default it is `report_only`: scope never silently moves the accepted contract).
    pub apply_out_of_scope: bool,
}

/// Where a watch's `uses` come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsesSource {
    /// `uses = [...]`, inline.
    Inline(Vec<String>),
    /// `uses_file = "PATH"`: one entry a line, a pin file, or a surface classification file
    /// with a named bucket (`surface.toml#real_dispatch`).
    File(PathBuf),
}

/// A watch's default `max_endpoints`: far above any real API (the largest in the corpus has a
/// few thousand), low enough that a runaway document is refused before it fills the registry.
pub const DEFAULT_MAX_ENDPOINTS: usize = 250_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    storage: Option<RawStorage>,
    daemon: Option<RawDaemon>,
    server: Option<RawServer>,
    #[serde(default)]
    severity: BTreeMap<String, String>,
    policy: Option<RawPolicy>,
    #[serde(default)]
    watch: Vec<RawWatch>,
    #[serde(default)]
    notify: Vec<RawSink>,
    notifications: Option<RawNotifications>,
    #[serde(default)]
    reviewer: Vec<toml::Spanned<RawReviewer>>,
    /// Globs of files holding more `[[watch]]` tables (relative to this file's folder).
    include: Option<Vec<toml::Spanned<String>>>,
}

/// An included file: `[[watch]]` tables only (no `include`: includes do not nest).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInclude {
    #[serde(default)]
    watch: Vec<RawWatch>,
}

/// Watches read so far, across the config file and its included files.
#[derive(Default)]
struct WatchesSoFar {
    /// Watch name → (file, line) where it was defined.
    names: HashMap<String, (PathBuf, usize)>,
    watches: Vec<WatchConfig>,
    unset_vars: Vec<String>,
}

/// `[policy]` / `[watch.policy]`: the stability and sunset policy (issue 31).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    min_stability: Option<toml::Spanned<String>>,
    allow_removal_after_sunset: Option<bool>,
    sunset_warning: Option<toml::Spanned<String>>,
}

/// The longest `sunset_warning`: a year.
pub const MAX_SUNSET_WARNING: Duration = Duration::from_secs(366 * 24 * 3600);

/// `raw`'s keys over `base`; errors name the table (`at`) and the line.
fn apply_policy(
    base: &SunsetPolicy,
    raw: Option<&RawPolicy>,
    text: &str,
    at: &str,
) -> Result<SunsetPolicy, String> {
    let mut policy = base.clone();
    let Some(raw) = raw else {
        return Ok(policy);
    };
    if let Some(level) = &raw.min_stability {
        policy.min_stability = Some(Stability::parse(level.get_ref()).ok_or_else(|| {
            format!(
                "line {}: {at}: min_stability {:?}: expected draft, alpha, beta or stable",
                line_of(text, level.span()),
                level.get_ref()
            )
        })?);
    }
    if let Some(allow) = raw.allow_removal_after_sunset {
        policy.allow_removal_after_sunset = allow;
    }
    if let Some(warning) = &raw.sunset_warning {
        let d = bounded_duration(warning, Duration::from_secs(86_400), MAX_SUNSET_WARNING)
            .map_err(|e| {
                format!(
                    "line {}: {at}: sunset_warning: {e}",
                    line_of(text, warning.span())
                )
            })?;
        // Whole days, rounded up: a sunset is a date.
        policy.sunset_warning_days = i64::try_from(d.as_secs().div_ceil(86_400)).unwrap_or(366);
    }
    Ok(policy)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStorage {
    path: Option<String>,
    url: Option<String>,
    password: Option<String>,
    password_file: Option<String>,
    ca_file: Option<String>,
    connect_timeout: Option<toml::Spanned<String>>,
    statement_timeout: Option<toml::Spanned<String>>,
    pool_size: Option<u32>,
    keep_versions: Option<u32>,
    keep_reviews: Option<u32>,
    create: Option<bool>,
}

/// The most registry connections `[storage] pool_size` may ask for.
pub const MAX_POOL_SIZE: u32 = 100;
/// The longest `[storage] statement_timeout` and `connect_timeout`.
pub const MAX_STORAGE_TIMEOUT: Duration = Duration::from_secs(3600);

/// `[storage] password`: only `${VAR}`, an environment variable's name (a literal password
/// in a config file is refused: config files are read, copied and committed).
fn password_variable(template: &str) -> Option<&str> {
    let name = template.strip_prefix("${")?.strip_suffix('}')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

/// `[storage]` as written: where the registry is (exactly one of `path` and `url`; `path`'s
/// default when neither), and the PostgreSQL keys only with `url`. `pool_size` defaults to
/// the daemon's `max_concurrency + 2` (a connection per refresh, the API and the recount).
fn storage_location(
    raw: &RawStorage,
    text: &str,
    max_concurrency: usize,
    resolve: &dyn Fn(&str) -> Result<PathBuf, String>,
) -> Result<crate::registry::Location, String> {
    use crate::registry::{pg, Location, PgPassword};
    let postgres_only = [
        ("password", raw.password.is_some()),
        ("password_file", raw.password_file.is_some()),
        ("ca_file", raw.ca_file.is_some()),
        ("connect_timeout", raw.connect_timeout.is_some()),
        ("statement_timeout", raw.statement_timeout.is_some()),
        ("pool_size", raw.pool_size.is_some()),
    ];
    let Some(u) = &raw.url else {
        if let Some((key, _)) = postgres_only.iter().find(|(_, set)| *set) {
            return Err(format!(
                "storage.{key} is only for a PostgreSQL registry (`url`)"
            ));
        }
        return Ok(Location::Sqlite(resolve(
            raw.path.as_deref().unwrap_or("registry.sqlite3"),
        )?));
    };
    if raw.path.is_some() {
        return Err(
            "[storage]: set exactly one of `path` (a SQLite file) and `url` (a PostgreSQL database), not both"
                .into(),
        );
    }
    // Never echo the URL: it may hold a password.
    let url = url::Url::parse(u).map_err(|_| "storage.url: not a postgresql:// URL".to_string())?;
    crate::sources::postgres::parse_url(&url).map_err(|e| match e {
        crate::sources::postgres::UrlError::Password => "storage.url: a password in the registry URL is refused (it would show in `ps` and in files): use `password_file`, `password = \"${VAR}\"` or PGPASSFILE (never PGPASSWORD)".to_string(),
        e => format!("storage.url: {e}"),
    })?;
    let password = match (&raw.password, &raw.password_file) {
        (Some(_), Some(_)) => {
            return Err("[storage]: set at most one of `password` and `password_file`".into())
        }
        (Some(template), None) => match password_variable(template) {
            Some(var) => PgPassword::Env(var.to_string()),
            // Never echo the value: it is probably the password.
            None => return Err("storage.password: a literal password is refused: write `password = \"${VAR}\"` (an environment variable), or use `password_file` or PGPASSFILE".into()),
        },
        (None, Some(file)) => PgPassword::File(resolve(file)?),
        (None, None) => PgPassword::PassFile,
    };
    let timeout = |key: &str, value: &Option<toml::Spanned<String>>, default: Duration| {
        value.as_ref().map_or(Ok(default), |t| {
            bounded_duration(t, Duration::from_millis(1), MAX_STORAGE_TIMEOUT)
                .map_err(|e| format!("line {}: storage.{key}: {e}", line_of(text, t.span())))
        })
    };
    let pool_size = match raw.pool_size {
        Some(n) if n == 0 || n > MAX_POOL_SIZE => {
            return Err(format!(
                "storage.pool_size: {n} is out of range (1 to {MAX_POOL_SIZE})"
            ))
        }
        Some(n) => n,
        None => u32::try_from(max_concurrency.saturating_add(2))
            .unwrap_or(MAX_POOL_SIZE)
            .min(MAX_POOL_SIZE),
    };
    Ok(Location::Postgres {
        url,
        options: pg::PgOptions {
            password: None,
            ca_file: raw.ca_file.as_deref().map(resolve).transpose()?,
            connect_timeout: timeout("connect_timeout", &raw.connect_timeout, pg::CONNECT_TIMEOUT)?,
            statement_timeout: timeout(
                "statement_timeout",
                &raw.statement_timeout,
                pg::STATEMENT_TIMEOUT,
            )?,
            pool_size,
        },
        password,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDaemon {
    max_concurrency: Option<usize>,
    drain_timeout: Option<toml::Spanned<String>>,
    log_format: Option<LogFormat>,
    error_log_every: Option<u32>,
    summary_interval: Option<toml::Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    listen: Option<toml::Spanned<String>>,
    admin_token_env: Option<String>,
    per_watch_metrics: Option<toml::Spanned<toml::Value>>,
    public_url: Option<toml::Spanned<String>>,
    #[serde(default)]
    allowed_hosts: Vec<toml::Spanned<String>>,
    read_token_env: Option<String>,
    refresh_token_env: Option<String>,
    read_timeout: Option<toml::Spanned<String>>,
    trusted_user_header: Option<String>,
    #[serde(default)]
    trusted_proxies: Vec<toml::Spanned<String>>,
    feed_token_env: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReviewer {
    name: String,
    token_env: Option<String>,
    token_file: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWatch {
    name: toml::Spanned<String>,
    kind: String,
    url: Option<String>,
    path: Option<String>,
    command: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    interval: Option<toml::Spanned<String>>,
    apply_compatible: Option<bool>,
    timeout: Option<toml::Spanned<String>>,
    max_bytes: Option<toml::Value>,
    max_endpoints: Option<usize>,
    ca_file: Option<String>,
    proxy: Option<String>,
    external_refs: Option<String>,
    mcp_resources: Option<String>,
    classification: Option<String>,
    password: Option<String>,
    password_file: Option<String>,
    schemas: Option<Vec<String>>,
    #[serde(default)]
    schema_headers: BTreeMap<String, String>,
    #[serde(default)]
    schema_query: BTreeMap<String, String>,
    #[serde(default)]
    severity: BTreeMap<String, String>,
    policy: Option<RawPolicy>,
    uses: Option<Vec<String>>,
    uses_file: Option<String>,
    allow_unknown_uses: Option<bool>,
    apply_out_of_scope: Option<bool>,
}

pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);
/// Bounds of every configured duration (docs/reliability.md H9): anything outside is a config
/// error naming the file and line, so no duration arithmetic downstream can overflow.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
pub const MAX_INTERVAL: Duration = Duration::from_secs(365 * 24 * 3600);
pub const MIN_TIMEOUT: Duration = Duration::from_secs(1);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
pub const MAX_DRAIN_TIMEOUT: Duration = Duration::from_secs(3600);
/// A watch's default `timeout` and `max_bytes` are those of every fetch (defined once there).
pub use crate::fetch::{DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT};

/// A path as a config file writes it: `${VAR}` expanded, relative to the file's folder
/// (`base`); the error names the unset variable.
fn resolve_path(base: &Path, p: &str) -> Result<PathBuf, String> {
    let expanded = expand_env(p)
        .map_err(|var| format!("environment variable {var} is not set (used in a path)"))?;
    let p = PathBuf::from(expanded);
    Ok(if p.is_absolute() { p } else { base.join(p) })
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(path, &text)
    }

    /// Parses config text; `path` locates relative paths and names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| invalid(describe_toml_error(text, &e)))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();

        let storage = raw.storage.unwrap_or(RawStorage {
            path: None,
            url: None,
            password: None,
            password_file: None,
            ca_file: None,
            connect_timeout: None,
            statement_timeout: None,
            pool_size: None,
            keep_versions: None,
            keep_reviews: None,
            create: None,
        });
        let max_concurrency = raw
            .daemon
            .as_ref()
            .and_then(|d| d.max_concurrency)
            .unwrap_or(4)
            .max(1);
        let storage = Storage {
            location: storage_location(&storage, text, max_concurrency, &|p| {
                resolve_path(&base, p)
            })
            .map_err(&invalid)?,
            keep_versions: storage.keep_versions.unwrap_or(100).max(1),
            keep_reviews: storage
                .keep_reviews
                .unwrap_or(crate::registry::DEFAULT_KEEP_REVIEWS),
            create: storage.create.unwrap_or(true),
        };
        let daemon = raw.daemon.unwrap_or(RawDaemon {
            max_concurrency: None,
            drain_timeout: None,
            log_format: None,
            error_log_every: None,
            summary_interval: None,
        });
        let daemon = Daemon {
            max_concurrency: daemon.max_concurrency.unwrap_or(4).max(1),
            drain_timeout: match &daemon.drain_timeout {
                Some(t) => bounded_duration(t, Duration::from_millis(1), MAX_DRAIN_TIMEOUT)
                    .map_err(|e| {
                        invalid(format!(
                            "line {}: daemon.drain_timeout: {e}",
                            line_of(text, t.span())
                        ))
                    })?,
                None => Duration::from_secs(20),
            },
            log_format: daemon.log_format.unwrap_or(LogFormat::Text),
            error_log_every: match daemon.error_log_every {
                Some(0) => {
                    return Err(invalid(
                        "daemon.error_log_every must be at least 1".to_string(),
                    ))
                }
                Some(n) => n,
                None => 10,
            },
            summary_interval: match &daemon.summary_interval {
                Some(t) => bounded_duration(t, MIN_INTERVAL, MAX_INTERVAL).map_err(|e| {
                    invalid(format!(
                        "line {}: daemon.summary_interval: {e}",
                        line_of(text, t.span())
                    ))
                })?,
                None => Duration::from_secs(600),
            },
        };
        let server = raw.server.unwrap_or(RawServer {
            listen: None,
            admin_token_env: None,
            per_watch_metrics: None,
            public_url: None,
            allowed_hosts: Vec::new(),
            read_token_env: None,
            refresh_token_env: None,
            read_timeout: None,
            trusted_user_header: None,
            trusted_proxies: Vec::new(),
            feed_token_env: None,
        });
        let public_url = match &server.public_url {
            None => None,
            Some(u) => Some(parse_public_url(u.get_ref()).map_err(|e| {
                invalid(format!(
                    "line {}: server.public_url: {e}",
                    line_of(text, u.span())
                ))
            })?),
        };
        let mut allowed_hosts = Vec::new();
        for h in &server.allowed_hosts {
            allowed_hosts.push(parse_allowed_host(h.get_ref()).map_err(|e| {
                invalid(format!(
                    "line {}: server.allowed_hosts: {e}",
                    line_of(text, h.span())
                ))
            })?);
        }
        let mut trusted_proxies = Vec::new();
        for c in &server.trusted_proxies {
            trusted_proxies.push(Cidr::parse(c.get_ref()).map_err(|e| {
                invalid(format!(
                    "line {}: server.trusted_proxies: {e}",
                    line_of(text, c.span())
                ))
            })?);
        }
        if let Some(h) = &server.trusted_user_header {
            if h.is_empty()
                || !h
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(invalid(format!(
                    "server.trusted_user_header: {h:?} is not a header name"
                )));
            }
            if trusted_proxies.is_empty() {
                return Err(invalid(
                    "server.trusted_user_header needs server.trusted_proxies (the proxies' addresses)"
                        .to_string(),
                ));
            }
        }
        let reviewers = parse_reviewers(&raw.reviewer, text, &base).map_err(invalid)?;
        let server = Server {
            trusted_user_header: server.trusted_user_header.map(|h| h.to_ascii_lowercase()),
            trusted_proxies,
            feed_token_env: server.feed_token_env,
            listen: match server.listen {
                None => "127.0.0.1:9477".into(),
                Some(listen) => {
                    let line = line_of(text, listen.span());
                    let listen = listen.into_inner();
                    if listen.parse::<std::net::SocketAddr>().is_err() {
                        return Err(invalid(format!(
                            "line {line}: server.listen: {listen:?} is not an IP address and port (such as \"127.0.0.1:9477\" or \"[::1]:9477\")"
                        )));
                    }
                    listen
                }
            },
            admin_token_env: server.admin_token_env,
            public_url,
            allowed_hosts,
            read_token_env: server.read_token_env,
            refresh_token_env: server.refresh_token_env,
            read_timeout: match &server.read_timeout {
                Some(t) => {
                    bounded_duration(t, Duration::from_secs(1), MAX_READ_TIMEOUT).map_err(|e| {
                        invalid(format!(
                            "line {}: server.read_timeout: {e}",
                            line_of(text, t.span())
                        ))
                    })?
                }
                None => DEFAULT_READ_TIMEOUT,
            },
            per_watch_metrics: match &server.per_watch_metrics {
                None => PerWatchMetrics::Auto,
                Some(v) => match v.get_ref() {
                    toml::Value::Boolean(true) => PerWatchMetrics::On,
                    toml::Value::Boolean(false) => PerWatchMetrics::Off,
                    toml::Value::String(s) if s == "auto" => PerWatchMetrics::Auto,
                    _ => {
                        return Err(invalid(format!(
                            "line {}: server.per_watch_metrics: expected \"auto\", true or false",
                            line_of(text, v.span())
                        )))
                    }
                },
            },
        };
        let global_severity =
            parse_overrides(&raw.severity).map_err(|m| invalid(format!("[severity]: {m}")))?;
        let global_policy = apply_policy(
            &SunsetPolicy::default(),
            raw.policy.as_ref(),
            text,
            "[policy]",
        )
        .map_err(invalid)?;

        let notifications = parse_notifications(raw.notifications, text).map_err(invalid)?;
        let notify = parse_sinks(raw.notify, text, &base).map_err(invalid)?;
        let mut so_far = WatchesSoFar::default();
        Config::add_watches(
            path,
            text,
            raw.watch,
            (&global_severity, &global_policy),
            &mut so_far,
            false,
        )?;
        let included = included_files(path, text, &base, raw.include.as_deref().unwrap_or(&[]))?;
        for file in &included {
            let text = std::fs::read_to_string(file).map_err(|source| ConfigError::Read {
                path: file.clone(),
                source,
            })?;
            let raw: RawInclude = toml::from_str(&text).map_err(|e| ConfigError::Invalid {
                path: file.clone(),
                message: format!(
                    "{} (an included file holds only [[watch]] tables)",
                    describe_toml_error(&text, &e)
                ),
            })?;
            Config::add_watches(
                file,
                &text,
                raw.watch,
                (&global_severity, &global_policy),
                &mut so_far,
                true,
            )?;
        }
        let WatchesSoFar {
            watches,
            unset_vars,
            ..
        } = so_far;
        let mut watches = watches;
        for watch in &mut watches {
            watch.keep_reviews = storage.keep_reviews;
        }
        let index = watches
            .iter()
            .enumerate()
            .map(|(i, w)| (w.name.clone(), i))
            .collect();
        Ok(Config {
            path: path.to_path_buf(),
            storage,
            daemon,
            server,
            severity: global_severity,
            policy: global_policy,
            watches,
            notify,
            notifications,
            reviewers,
            index,
            included,
            unset_vars,
        })
    }

    /// Reads the `[[watch]]` tables of one file (the config, or a file it includes): relative
    /// paths resolve against that file's folder, and errors name that file and the line.
    fn add_watches(
        path: &Path,
        text: &str,
        raw_watches: Vec<RawWatch>,
        (global_severity, global_policy): (&SeverityOverrides, &SunsetPolicy),
        so_far: &mut WatchesSoFar,
        included: bool,
    ) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let resolve = |p: &str| resolve_path(&base, p).map_err(invalid);
        let WatchesSoFar {
            names,
            watches,
            unset_vars,
        } = so_far;
        // Unset-variable messages are reported against the main config: name the included file.
        let in_file = if included {
            format!("{}: ", path.display())
        } else {
            String::new()
        };
        // Built once per file: recounting newlines from the top for every watch made loading
        // quadratic in the file's size (90% of a 100,000-watch load).
        let lines = LineIndex::new(text);
        for (i, w) in raw_watches.into_iter().enumerate() {
            let name_line = lines.line(w.name.span());
            let watch_name = w.name.get_ref().clone();
            let at = format!("watch #{} ({:?})", i + 1, watch_name);
            if !valid_watch_name(&watch_name) {
                return Err(invalid(format!(
                    "line {name_line}: {at}: name must be `namespace.name` (with a dot) of letters, digits, '-', '_' and '.', starting with a letter or digit"
                )));
            }
            if let Some((file, line)) = names.get(&watch_name) {
                return Err(invalid(format!(
                    "line {name_line}: {at}: duplicate watch name (first defined in {}, line {line})",
                    file.display()
                )));
            }
            names.insert(watch_name.clone(), (path.to_path_buf(), name_line));
            let kind = Kind::parse(&w.kind).ok_or_else(|| {
                invalid(format!(
                    "{at}: unknown kind {:?} (expected one of {})",
                    w.kind,
                    Kind::names()
                ))
            })?;
            if w.command.is_some() && kind != Kind::Mcp {
                return Err(invalid(format!("{at}: `command` is only for kind \"mcp\"")));
            }
            if kind == Kind::Sqlite && (w.url.is_some() || w.path.is_none()) {
                return Err(invalid(format!(
                    "{at}: kind \"sqlite\" reads a database file: set `path`"
                )));
            }
            if kind != Kind::Postgres
                && (w.password.is_some() || w.password_file.is_some() || w.schemas.is_some())
            {
                return Err(invalid(format!(
                    "{at}: `password`, `password_file` and `schemas` are only for kind \"postgres\""
                )));
            }
            if w.password.is_some() && w.password_file.is_some() {
                return Err(invalid(format!(
                    "{at}: set at most one of `password` or `password_file`"
                )));
            }
            if kind == Kind::Postgres {
                let Some(u) = &w.url else {
                    return Err(invalid(format!(
                        "{at}: kind \"postgres\" needs `url = \"postgresql://user@host:port/db\"`"
                    )));
                };
                // Never echo the URL: it may hold a password.
                let url = url::Url::parse(u)
                    .map_err(|_| invalid(format!("{at}: url: not a postgresql:// URL")))?;
                crate::sources::postgres::parse_url(&url)
                    .map_err(|e| invalid(format!("{at}: url: {e}")))?;
            }
            if w.env.is_some() && w.command.is_none() {
                return Err(invalid(format!(
                    "{at}: `env` is only for an MCP `command` (stdio)"
                )));
            }
            let source = match (&w.url, &w.path) {
                (None, None) if w.command.is_some() => {
                    let argv = w.command.clone().unwrap_or_default();
                    if argv.first().is_none_or(|p| p.is_empty()) {
                        return Err(invalid(format!("{at}: `command` needs a program")));
                    }
                    SourceConfig::Command {
                        argv,
                        env: w
                            .env
                            .clone()
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(k, v)| (k, crate::fetch::absolutize_file_refs(&v, &base)))
                            .collect(),
                    }
                }
                _ if w.command.is_some() => {
                    return Err(invalid(format!(
                        "{at}: set exactly one of `url`, `path` or `command`"
                    )))
                }
                (Some(u), None) if kind == Kind::Postgres => SourceConfig::Url(
                    url::Url::parse(u)
                        .map_err(|_| invalid(format!("{at}: url: not a postgresql:// URL")))?,
                ),
                (Some(u), None) => {
                    let url = url::Url::parse(u).map_err(|e| invalid(format!("{at}: url: {e}")))?;
                    if !matches!(url.scheme(), "http" | "https") {
                        return Err(invalid(format!("{at}: url must be http or https")));
                    }
                    SourceConfig::Url(url)
                }
                (None, Some(p)) => SourceConfig::Path(resolve(p)?),
                _ => return Err(invalid(format!("{at}: set exactly one of `url` or `path`"))),
            };
            let duration = |key: &str,
                            v: &Option<toml::Spanned<String>>,
                            default: Duration,
                            (min, max): (Duration, Duration)| match v {
                Some(t) => bounded_duration(t, min, max).map_err(|e| {
                    invalid(format!(
                        "line {}: {at}: {key}: {e}",
                        line_of(text, t.span())
                    ))
                }),
                None => Ok(default),
            };
            let mut severity = global_severity.clone();
            severity.extend(
                parse_overrides(&w.severity)
                    .map_err(|m| invalid(format!("{at}: [watch.severity]: {m}")))?,
            );
            for (what, templates) in [
                ("schema_headers", &w.schema_headers),
                ("schema_query", &w.schema_query),
            ] {
                for (key, template) in templates {
                    if let Some(var) = unset_variable(template) {
                        unset_vars.push(format!(
                            "{in_file}line {name_line}: {at}: {what}.{key}: environment variable {var} is not set"
                        ));
                    }
                }
            }
            for name in w.schema_headers.keys() {
                if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    return Err(invalid(format!(
                        "{at}: schema_headers: invalid header name {name:?}"
                    )));
                }
            }
            if !w.schema_query.is_empty() {
                if !matches!(source, SourceConfig::Url(_)) || kind == Kind::Mcp {
                    return Err(invalid(format!(
                        "{at}: schema_query is only for a `url` watch of a document kind (not mcp)"
                    )));
                }
                if let Some(name) = w.schema_query.keys().find(|n| n.is_empty()) {
                    return Err(invalid(format!(
                        "{at}: schema_query: invalid parameter name {name:?}"
                    )));
                }
            }
            let external_refs = match &w.external_refs {
                None => ExternalRefs::default(),
                Some(_) if !kind.decl().external_refs => {
                    let kinds: Vec<String> = Kind::ALL
                        .iter()
                        .filter(|k| k.decl().external_refs)
                        .map(|k| format!("{:?}", k.as_str()))
                        .collect();
                    return Err(invalid(format!(
                        "{at}: external_refs is only for kind {}",
                        kinds.join(" or ")
                    )));
                }
                Some(v) => ExternalRefs::parse(v).ok_or_else(|| {
                    invalid(format!(
                        "{at}: external_refs: unknown value {v:?} (expected \"same-origin\" or \"none\")"
                    ))
                })?,
            };
            let mcp_resources = match &w.mcp_resources {
                None => McpResources::default(),
                Some(_) if kind != Kind::Mcp => {
                    return Err(invalid(format!(
                        "{at}: mcp_resources is only for kind \"mcp\""
                    )))
                }
                Some(v) => McpResources::parse(v).ok_or_else(|| {
                    invalid(format!(
                        "{at}: mcp_resources: unknown value {v:?} (expected \"templates\", \"all\" or \"none\")"
                    ))
                })?,
            };
            let uses = match (w.uses, &w.uses_file) {
                (Some(_), Some(_)) => {
                    return Err(invalid(format!(
                        "{at}: set at most one of `uses` or `uses_file`"
                    )))
                }
                (Some(entries), None) => {
                    if let Some(bad) = entries.iter().find(|e| e.trim().is_empty()) {
                        return Err(invalid(format!("{at}: uses: empty entry {bad:?}")));
                    }
                    if entries.is_empty() {
                        return Err(invalid(format!(
                            "{at}: uses is empty (it would put every endpoint out of scope); remove it to watch everything"
                        )));
                    }
                    Some(UsesSource::Inline(entries))
                }
                (None, Some(file)) => {
                    // `surface.toml#bucket`: the fragment names a bucket, not part of the path.
                    let (file_part, bucket) = match file.rsplit_once('#') {
                        Some((f, b)) => (f, Some(b)),
                        None => (file.as_str(), None),
                    };
                    let mut path = resolve(file_part)?;
                    if let Some(bucket) = bucket {
                        let mut with = path.into_os_string();
                        with.push(format!("#{bucket}"));
                        path = PathBuf::from(with);
                    }
                    Some(UsesSource::File(path))
                }
                (None, None) => None,
            };
            if uses.is_none() && (w.allow_unknown_uses.is_some() || w.apply_out_of_scope.is_some())
            {
                return Err(invalid(format!(
                    "{at}: `allow_unknown_uses` and `apply_out_of_scope` need `uses` or `uses_file`"
                )));
            }
            let policy =
                apply_policy(global_policy, w.policy.as_ref(), text, &at).map_err(&invalid)?;
            watches.push(WatchConfig {
                uses,
                allow_unknown_uses: w.allow_unknown_uses.unwrap_or(false),
                apply_out_of_scope: w.apply_out_of_scope.unwrap_or(false),
                external_refs,
                mcp_resources,
                classification: w.classification.as_deref().map(resolve).transpose()?,
                database: crate::sources::postgres::DatabaseOptions {
                    password: w.password,
                    password_file: w.password_file.as_deref().map(resolve).transpose()?,
                    schemas: w.schemas.unwrap_or_default(),
                },
                max_endpoints: match w.max_endpoints {
                    None => DEFAULT_MAX_ENDPOINTS,
                    Some(0) => {
                        return Err(invalid(format!("{at}: max_endpoints must be at least 1")))
                    }
                    Some(n) => n,
                },
                // `[storage] keep_reviews`, set once every watch is read (Config::parse).
                keep_reviews: crate::registry::DEFAULT_KEEP_REVIEWS,
                kind,
                source,
                interval: duration(
                    "interval",
                    &w.interval,
                    DEFAULT_INTERVAL,
                    (MIN_INTERVAL, MAX_INTERVAL),
                )?,
                apply_compatible: w.apply_compatible.unwrap_or(true),
                timeout: duration(
                    "timeout",
                    &w.timeout,
                    DEFAULT_TIMEOUT,
                    (MIN_TIMEOUT, MAX_TIMEOUT),
                )?,
                max_bytes: match &w.max_bytes {
                    None => DEFAULT_MAX_BYTES,
                    Some(v) => match parse_size(v) {
                        Ok(n) if n > crate::fetch::MAX_MAX_BYTES => {
                            return Err(invalid(format!(
                                "line {name_line}: {at}: max_bytes: {n} bytes is above the largest allowed, 1GiB ({} bytes)",
                                crate::fetch::MAX_MAX_BYTES
                            )))
                        }
                        Ok(n) => n,
                        Err(e) => return Err(invalid(format!("{at}: max_bytes: {e}"))),
                    },
                },
                ca_file: w.ca_file.as_deref().map(resolve).transpose()?,
                proxy: w.proxy,
                schema_query: w
                    .schema_query
                    .into_iter()
                    .map(|(k, v)| (k, crate::fetch::absolutize_file_refs(&v, &base)))
                    .collect(),
                schema_headers: w
                    .schema_headers
                    .into_iter()
                    .map(|(k, v)| (k, crate::fetch::absolutize_file_refs(&v, &base)))
                    .collect(),
                severity,
                policy,
                name: watch_name,
            });
        }
        Ok(())
    }

    /// Refuses a config whose header or query templates name an unset `${VAR}` (`config check`,
    /// `run`): the first one, with its file and line.
    pub fn require_env(&self) -> Result<(), ConfigError> {
        match self.unset_vars.first() {
            Some(message) => Err(ConfigError::Invalid {
                path: self.path.clone(),
                message: message.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The position of watch `name` in `watches`.
    pub fn watch_index(&self, name: &str) -> Option<usize> {
        match self.index.get(name) {
            Some(i) if self.watches.get(*i).is_some_and(|w| w.name == name) => Some(*i),
            _ => self.watches.iter().position(|w| w.name == name),
        }
    }

    /// What one stored registry value may inflate to: 8 times the largest `max_bytes` of the
    /// watches (of the default cap when there are none). A stored source document is at most
    /// its watch's `max_bytes`; its normalized contract or a review report a few times that.
    pub fn inflate_limit(&self) -> u64 {
        self.watches
            .iter()
            .map(|w| w.max_bytes)
            .max()
            .unwrap_or(crate::fetch::DEFAULT_MAX_BYTES)
            .saturating_mul(8)
    }

    pub fn watch(&self, name: &str) -> Option<&WatchConfig> {
        match self.index.get(name).and_then(|i| self.watches.get(*i)) {
            Some(w) if w.name == name => Some(w),
            // `watches` was edited after parsing (tests do): fall back to a scan.
            _ => self.watches.iter().find(|w| w.name == name),
        }
    }
}

/// The files an `include` list names: each glob relative to the config file's folder (unless
/// absolute), every match sorted by path, each file once. A glob that matches nothing is not
/// an error (an empty `watches.d`).
fn included_files(
    path: &Path,
    text: &str,
    base: &Path,
    patterns: &[toml::Spanned<String>],
) -> Result<Vec<PathBuf>, ConfigError> {
    // The config itself, however spelled (`./c.toml`, a symlink to it): never its own include.
    let own = std::fs::canonicalize(path).ok();
    let mut files = BTreeSet::new();
    let mut seen = std::collections::HashSet::new();
    let mut examined = 0usize;
    for pattern in patterns {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "line {}: include {:?}: {message}",
                line_of(text, pattern.span()),
                pattern.get_ref()
            ),
        };
        let raw = pattern.get_ref();
        let full = if Path::new(raw).is_absolute() {
            raw.clone()
        } else {
            // The folder is literal text, not a pattern: escape its metacharacters.
            let folder = glob::Pattern::escape(&base.to_string_lossy());
            if folder.is_empty() {
                raw.clone()
            } else {
                format!("{folder}/{raw}")
            }
        };
        let compiled = glob::Pattern::new(&full).map_err(|e| invalid(e.to_string()))?;
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        // Walk from the pattern's literal folder, never into a symlinked folder (a loop
        // under `**` used to grow without bound, H21), as deep as the pattern reaches.
        let (root, depth) = walk_root(base, raw);
        let walk_from = if root.as_os_str().is_empty() {
            Path::new(".")
        } else {
            root.as_path()
        };
        let walker = walkdir::WalkDir::new(walk_from)
            .follow_links(false)
            .min_depth(1)
            .max_depth(depth)
            .sort_by_file_name();
        for entry in walker {
            examined += 1;
            if examined > MAX_INCLUDE_ENTRIES {
                return Err(invalid(format!(
                    "the include patterns look at more than {MAX_INCLUDE_ENTRIES} entries; name a narrower folder"
                )));
            }
            let entry = match entry {
                Ok(entry) => entry,
                // A folder the pattern names that does not exist matches nothing.
                Err(e) if e.depth() == 0 => continue,
                Err(e) => return Err(invalid(e.to_string())),
            };
            let shown = if root.as_os_str().is_empty() {
                entry.path().strip_prefix(".").unwrap_or(entry.path())
            } else {
                entry.path()
            };
            if !compiled.matches_path_with(shown, options) || !shown.is_file() {
                continue;
            }
            let canonical = std::fs::canonicalize(shown).ok();
            if canonical.is_some() && canonical == own {
                continue;
            }
            if !seen.insert(canonical.unwrap_or_else(|| shown.to_path_buf())) {
                continue;
            }
            files.insert(shown.to_path_buf());
            if files.len() > MAX_INCLUDED_FILES {
                return Err(invalid(format!(
                    "the include patterns match more than {MAX_INCLUDED_FILES} files"
                )));
            }
        }
    }
    Ok(files.into_iter().collect())
}

/// Most files a config's `include` patterns may match.
pub const MAX_INCLUDED_FILES: usize = 10_000;
/// Most folder entries the `include` patterns may look at, together.
pub const MAX_INCLUDE_ENTRIES: usize = 200_000;

/// Where a relative (to `base`) or absolute include pattern's walk starts — its leading
/// components without glob metacharacters — and how many levels below it the pattern reaches
/// (unbounded with a `**` component).
fn walk_root(base: &Path, raw: &str) -> (PathBuf, usize) {
    let mut root = if Path::new(raw).is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    let components: Vec<&str> = raw.split('/').filter(|c| !c.is_empty()).collect();
    let literal = components
        .iter()
        .take(components.len().saturating_sub(1))
        .take_while(|c| !c.contains(['*', '?', '[', ']']))
        .count();
    for c in &components[..literal] {
        root.push(c);
    }
    let rest = &components[literal..];
    let depth = if rest.contains(&"**") {
        usize::MAX
    } else {
        rest.len()
    };
    (root, depth)
}

/// The first `${NAME}` of a value template whose variable is not set (`${file:…}` is read at
/// fetch time, not here).
fn unset_variable(template: &str) -> Option<String> {
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let end = after.find('}')?;
        let reference = &after[..end];
        if !reference.starts_with("file:") && std::env::var_os(reference).is_none() {
            return Some(reference.to_string());
        }
        rest = &after[end + 1..];
    }
    None
}

fn valid_watch_name(name: &str) -> bool {
    name.contains('.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !name.is_empty()
        && name.len() <= 200
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !name.starts_with('.')
        && !name.ends_with('.')
}

/// Checks `rule-id = "level"` overrides (config tables, `diff --severity`): every id must name
/// a rule (or one of its aliases), every level a severity.
pub fn parse_overrides(raw: &BTreeMap<String, String>) -> Result<SeverityOverrides, String> {
    let mut out = SeverityOverrides::new();
    for (id, level) in raw {
        if rules::find(id).is_none() {
            return Err(format!("unknown rule id {id:?} (see docs/rules.md)"));
        }
        let severity = Severity::parse(level).ok_or_else(|| {
            format!("rule {id}: unknown severity {level:?} (expected info, compatible, breaking or security)")
        })?;
        out.insert(id.clone(), severity);
    }
    Ok(out)
}

/// Parses a humantime duration such as `5m` or `30s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let d =
        humantime::parse_duration(text).map_err(|e| format!("{text:?} is not a duration ({e})"))?;
    if d.is_zero() {
        return Err(format!("{text:?} must be greater than zero"));
    }
    Ok(d)
}

/// A configured duration within `[min, max]`.
fn bounded_duration(
    text: &toml::Spanned<String>,
    min: Duration,
    max: Duration,
) -> Result<Duration, String> {
    let raw = text.get_ref();
    let d = parse_duration(raw)?;
    if d < min || d > max {
        return Err(format!(
            "{raw:?} is out of range (at least {}, at most {})",
            humantime::format_duration(min),
            humantime::format_duration(max)
        ));
    }
    Ok(d)
}

/// The 1-based line of a byte offset in `text`.
fn line_of(text: &str, span: std::ops::Range<usize>) -> usize {
    text.get(..span.start.min(text.len()))
        .map_or(0, |t| t.matches('\n').count())
        + 1
}

/// The offsets of a text's newlines, for many [`line_of`] questions about one text.
struct LineIndex {
    newlines: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        LineIndex {
            newlines: text.match_indices('\n').map(|(i, _)| i).collect(),
        }
    }

    /// The 1-based line of `span`'s start (as [`line_of`]).
    fn line(&self, span: std::ops::Range<usize>) -> usize {
        self.newlines.partition_point(|&i| i < span.start) + 1
    }
}

/// Parses a byte size: an integer, or a string like `32MiB`, `500KB`, `1GiB`.
pub fn parse_size(value: &toml::Value) -> Result<u64, String> {
    match value {
        toml::Value::Integer(n) if *n > 0 => Ok(*n as u64),
        toml::Value::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (digits, unit) = s.split_at(split);
            let n: u64 = digits.parse().map_err(|_| format!("{s:?} is not a size"))?;
            let factor: u64 = match unit.trim() {
                "" | "B" => 1,
                "KB" => 1000,
                "KiB" => 1024,
                "MB" => 1_000_000,
                "MiB" => 1024 * 1024,
                "GB" => 1_000_000_000,
                "GiB" => 1024 * 1024 * 1024,
                other => {
                    return Err(format!(
                        "unknown size unit {other:?} (use B, KB, KiB, MB, MiB, GB, GiB)"
                    ))
                }
            };
            n.checked_mul(factor)
                .filter(|v| *v > 0)
                .ok_or_else(|| format!("{s:?} is out of range"))
        }
        _ => Err("expected a positive integer or a string like \"32MiB\"".into()),
    }
}

/// Expands `${VAR}` from the environment; returns the name of the first unset variable.
pub fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let var = &after[..end];
        out.push_str(&std::env::var(var).map_err(|_| var.to_string())?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A TOML error as `line N: message`, naming the key when there is one.
fn describe_toml_error(text: &str, err: &toml::de::Error) -> String {
    let message = scrub_values(err.message().trim());
    match err.span() {
        // Where, never what: the offending text may be a secret (a header value, a token
        // pasted in the wrong place), so neither it nor its line is quoted (H19).
        Some(span) => {
            let start = floor_char_boundary(text, span.start.min(text.len()));
            let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
            let line = text[..start].matches('\n').count() + 1;
            let column = text[line_start..start].chars().count() + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

/// The largest char boundary at or before `at`.
fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A TOML or serde message without the values it quotes: `"…"` strings, and the backticked
/// value after `integer`, `floating point`, `character`, `boolean` or `unknown variant` (serde's
/// way of naming what it got). Field names and expectations stay (`unknown field `x``).
fn scrub_values(message: &str) -> String {
    const VALUE_BEFORE_TICK: [&str; 5] = [
        "integer ",
        "floating point ",
        "character ",
        "boolean ",
        "unknown variant ",
    ];
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find(['"', '`']) {
        let (before, from) = rest.split_at(i);
        out.push_str(before);
        let quote = if from.starts_with('"') { '"' } else { '`' };
        let is_value = quote == '"' || VALUE_BEFORE_TICK.iter().any(|w| out.ends_with(w));
        // The closing quote: the next one not escaped by a backslash.
        let body = &from[1..];
        let mut end = None;
        let mut escaped = false;
        for (j, c) in body.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                c if c == quote && !escaped => {
                    end = Some(j);
                    break;
                }
                _ => escaped = false,
            }
        }
        let Some(end) = end else {
            // Unterminated: drop the rest, it may be the value.
            out.push(quote);
            out.push('…');
            return out;
        };
        out.push(quote);
        if is_value {
            out.push('…');
        } else {
            out.push_str(&body[..end]);
        }
        out.push(quote);
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    out
}

// How the source layer reads a watch: the config depends on the source layer, never the
// other way round (ARCHITECTURE.md "Dependency direction").
impl SourceConfig {
    /// A watch's configured source.
    pub fn to_source(&self) -> Source {
        match self {
            SourceConfig::Url(url) if matches!(url.scheme(), "postgresql" | "postgres") => {
                Source::Postgres(url.clone())
            }
            SourceConfig::Url(url) => Source::Url(url.clone()),
            SourceConfig::Path(path) => Source::Path(path.clone()),
            SourceConfig::Command { argv, env } => Source::Command {
                argv: argv.clone(),
                env: env.clone(),
            },
        }
    }
}

impl WatchConfig {
    /// One refresh of `watch`, conditional on `validators` where the kind allows it.
    pub fn load_request(&self, validators: Option<Validators>) -> Request {
        Request {
            headers: self.schema_headers.clone(),
            query: self.schema_query.clone(),
            timeout: self.timeout,
            connect_timeout: crate::fetch::DEFAULT_CONNECT_TIMEOUT.min(self.timeout),
            max_bytes: self.max_bytes,
            ca_file: self.ca_file.clone(),
            proxy: self.proxy.clone(),
            validators,
            external_refs: self.external_refs,
            database: self.database.clone(),
            mcp_resources: self.mcp_resources,
            max_endpoints: Some(self.max_endpoints),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_line_index_answers_as_counting_from_the_top() {
        let text = "a = 1\n\n[[watch]]\nname = \"x.y\"\n";
        let index = super::LineIndex::new(text);
        for start in 0..=text.len() + 3 {
            assert_eq!(
                index.line(start..start + 1),
                super::line_of(text, start..start + 1),
                "offset {start}"
            );
        }
        assert_eq!(index.line(18..19), 4);
    }

    #[test]
    fn scrubbed_messages_keep_names_and_drop_values() {
        assert_eq!(
            scrub_values(r#"invalid type: string "tok\"en", expected u32"#),
            r#"invalid type: string "…", expected u32"#
        );
        assert_eq!(
            scrub_values("unknown variant `secret`, expected `none` or `same-origin`"),
            "unknown variant `…`, expected `none` or `same-origin`"
        );
        assert_eq!(
            scrub_values("unknown field `bogus_key`, expected one of `path`"),
            "unknown field `bogus_key`, expected one of `path`"
        );
        assert_eq!(scrub_values("expected `b`, `f`"), "expected `b`, `f`");
        assert_eq!(scrub_values("integer `123`"), "integer `…`");
        assert_eq!(scrub_values("unterminated \"abc"), "unterminated \"…");
    }

    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("/etc/sw/config.toml"), text)
    }

    #[test]
    fn reviewers_and_trusted_proxies() {
        let c = parse("[server]\ntrusted_user_header = \"X-Forwarded-User\"\ntrusted_proxies = [\"10.0.0.0/8\", \"::1\"]\n\n[[reviewer]]\nname = \"alice\"\ntoken_env = \"A\"\n\n[[reviewer]]\nname = \"bob\"\ntoken_file = \"bob.token\"\n").unwrap();
        assert_eq!(c.reviewers.len(), 2);
        assert_eq!(
            c.reviewers[1].token,
            TokenSource::File(PathBuf::from("/etc/sw/bob.token"))
        );
        assert_eq!(
            c.server.trusted_user_header.as_deref(),
            Some("x-forwarded-user")
        );
        let ten = c.server.trusted_proxies[0];
        assert!(ten.contains("10.1.2.3".parse().unwrap()));
        assert!(ten.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(!ten.contains("11.0.0.1".parse().unwrap()));
        assert!(c.server.trusted_proxies[1].contains("::1".parse().unwrap()));
        assert!(!c.server.trusted_proxies[1].contains("127.0.0.1".parse().unwrap()));
        for (text, needle) in [
            ("[[reviewer]]\nname = \"a\"\n", "exactly one of"),
            ("[[reviewer]]\nname = \"a\"\ntoken_env = \"A\"\ntoken_file = \"f\"\n", "exactly one of"),
            ("[[reviewer]]\nname = \"a\"\ntoken_env = \"A\"\n[[reviewer]]\nname = \"a\"\ntoken_env = \"B\"\n", "twice"),
            ("[[reviewer]]\nname = \" a\"\ntoken_env = \"A\"\n", "reviewer.name"),
            ("[server]\ntrusted_user_header = \"X-User\"\n", "trusted_proxies"),
            ("[server]\ntrusted_proxies = [\"10.0.0.0/33\"]\n", "prefix"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn defaults_and_relative_paths() {
        let c =
            parse("[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\npath = \"x.json\"\n").unwrap();
        assert_eq!(
            c.storage.location,
            crate::registry::Location::Sqlite(PathBuf::from("/etc/sw/registry.sqlite3"))
        );
        assert_eq!(c.storage.keep_versions, 100);
        let w = &c.watches[0];
        assert_eq!(w.source, SourceConfig::Path("/etc/sw/x.json".into()));
        assert!(w.apply_compatible);
        assert_eq!(
            (w.interval, w.max_bytes),
            (DEFAULT_INTERVAL, DEFAULT_MAX_BYTES)
        );
    }

    #[test]
    fn storage_is_exactly_one_of_path_and_url() {
        use crate::registry::{pg, Location, PgPassword};
        let err =
            parse("[storage]\npath = \"r.db\"\nurl = \"postgresql://sw@db.example:5432/reg\"\n")
                .unwrap_err()
                .to_string();
        assert!(err.contains("`path`") && err.contains("`url`"), "{err}");
        // Neither: the file beside the config, as before `url` existed.
        let c = parse("[storage]\nkeep_versions = 3\n").unwrap();
        assert_eq!(
            c.storage.location,
            Location::Sqlite(PathBuf::from("/etc/sw/registry.sqlite3"))
        );
        let c = parse("[storage]\nurl = \"postgresql://sw@db.example:5433/reg\"\n[daemon]\nmax_concurrency = 6\n").unwrap();
        let Location::Postgres {
            url,
            options,
            password,
        } = &c.storage.location
        else {
            panic!("{:?}", c.storage.location)
        };
        assert_eq!(url.as_str(), "postgresql://sw@db.example:5433/reg");
        assert_eq!(*password, PgPassword::PassFile);
        assert_eq!(options.password, None);
        assert_eq!(options.pool_size, 8, "max_concurrency + 2");
        assert_eq!(options.statement_timeout, pg::STATEMENT_TIMEOUT);
        assert_eq!(options.connect_timeout, pg::CONNECT_TIMEOUT);
        assert_eq!(
            c.storage.location.to_string(),
            "postgresql://sw@db.example:5433/reg"
        );
        let c = parse("[storage]\nurl = \"postgresql://sw@db.example/reg?sslmode=disable\"\npassword_file = \"secrets/pw\"\nca_file = \"ca.pem\"\nstatement_timeout = \"5s\"\nconnect_timeout = \"2s\"\npool_size = 3\ncreate = false\n").unwrap();
        let Location::Postgres {
            options, password, ..
        } = &c.storage.location
        else {
            panic!("{:?}", c.storage.location)
        };
        assert_eq!(*password, PgPassword::File("/etc/sw/secrets/pw".into()));
        assert_eq!(options.ca_file, Some(PathBuf::from("/etc/sw/ca.pem")));
        assert_eq!(options.statement_timeout, Duration::from_secs(5));
        assert_eq!(options.connect_timeout, Duration::from_secs(2));
        assert_eq!(options.pool_size, 3);
        assert!(!c.storage.create);
        assert_eq!(
            c.storage.location.to_string(),
            "postgresql://sw@db.example:5432/reg",
            "no query shown"
        );
        let c = parse("[storage]\nurl = \"postgresql://sw@db.example/reg\"\npassword = \"${SW_REGISTRY_PW}\"\n").unwrap();
        let Location::Postgres { password, .. } = &c.storage.location else {
            panic!("{:?}", c.storage.location)
        };
        assert_eq!(*password, PgPassword::Env("SW_REGISTRY_PW".into()));
    }

    #[test]
    fn storage_refuses_a_literal_password_without_echoing_it() {
        for (text, needle) in [
            ("[storage]\nurl = \"postgresql://sw@h/reg\"\npassword = \"hunter2\"\n", "literal password"),
            ("[storage]\nurl = \"postgresql://sw@h/reg\"\npassword = \"hunter2${X}\"\n", "literal password"),
            ("[storage]\nurl = \"postgresql://sw:hunter2@h/reg\"\n", "password in the registry URL"),
            ("[storage]\nurl = \"postgresql://sw@h/reg?password=hunter2\"\n", "storage.url"),
            ("[storage]\nurl = \"postgresql://sw@h/reg\"\npassword = \"${A}\"\npassword_file = \"hunter2\"\n", "at most one of"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(!err.contains("hunter2"), "{text}: {err}");
        }
    }

    #[test]
    fn storage_postgresql_keys_need_url_and_are_bounded() {
        for (text, needle) in [
            (
                "[storage]\npath = \"r.db\"\npassword_file = \"pw\"\n",
                "storage.password_file is only for a PostgreSQL registry",
            ),
            (
                "[storage]\nca_file = \"ca.pem\"\n",
                "storage.ca_file is only for",
            ),
            (
                "[storage]\nurl = \"postgresql://sw@h/reg\"\npool_size = 0\n",
                "storage.pool_size",
            ),
            (
                "[storage]\nurl = \"postgresql://sw@h/reg\"\npool_size = 101\n",
                "storage.pool_size",
            ),
            (
                "[storage]\nurl = \"postgresql://sw@h/reg\"\nstatement_timeout = \"2h\"\n",
                "storage.statement_timeout",
            ),
            (
                "[storage]\nurl = \"postgresql://sw@h/reg?sslmode=require\"\n",
                "sslmode",
            ),
            ("[storage]\nurl = \"mysql://sw@h/reg\"\n", "storage.url"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let err = parse("[storage]\npath = \"r.db\"\nbogus = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3") && err.contains("bogus"), "{err}");
    }

    #[test]
    fn severity_overrides_are_checked() {
        let err = parse("[severity]\nnot-a-rule = \"info\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not-a-rule"), "{err}");
        let c = parse(
            "[severity]\nendpoint-removed = \"info\"\n[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\npath = \"x\"\n[watch.severity]\nrequest-enum-value-added = \"breaking\"\n",
        )
        .unwrap();
        assert_eq!(c.watches[0].severity.len(), 2);
    }

    #[test]
    fn mcp_command_sources() {
        let c = parse("[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\ncommand = [\"node\", \"server.js\"]\nenv = { TOKEN = \"${T}\" }\n").unwrap();
        match &c.watches[0].source {
            SourceConfig::Command { argv, env } => {
                assert_eq!(argv, &["node".to_string(), "server.js".to_string()]);
                assert_eq!(env.get("TOKEN").map(String::as_str), Some("${T}"));
                assert_eq!(command_identity(argv), r#"command:["node","server.js"]"#);
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            "[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\ncommand = [\"x\"]\n",
            "[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\ncommand = []\n",
            "[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\ncommand = [\"x\"]\nurl = \"http://127.0.0.1/mcp\"\n",
            "[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\nurl = \"http://127.0.0.1/mcp\"\nenv = { A = \"b\" }\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mcp_resources_policy() {
        let w = "[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\ncommand = [\"srv\"]\n";
        assert_eq!(
            parse(w).unwrap().watches[0].mcp_resources,
            McpResources::Templates
        );
        for (text, want) in [
            ("all", McpResources::All),
            ("none", McpResources::None),
            ("templates", McpResources::Templates),
        ] {
            let c = parse(&format!("{w}mcp_resources = \"{text}\"\n")).unwrap();
            assert_eq!(c.watches[0].mcp_resources, want);
        }
        let err = parse(&format!("{w}mcp_resources = \"some\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("mcp_resources") && err.contains("some"),
            "{err}"
        );
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"openrpc\"\npath = \"x\"\nmcp_resources = \"all\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("mcp_resources"), "{err}");
    }

    #[test]
    fn external_refs_policy() {
        let w = "[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\npath = \"x\"\n";
        assert_eq!(
            parse(w).unwrap().watches[0].external_refs,
            ExternalRefs::SameOrigin
        );
        let none = parse(&format!("{w}external_refs = \"none\"\n")).unwrap();
        assert_eq!(none.watches[0].external_refs, ExternalRefs::None);
        let err = parse(&format!("{w}external_refs = \"everywhere\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("external_refs") && err.contains("everywhere"),
            "{err}"
        );
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"openrpc\"\npath = \"x\"\nexternal_refs = \"none\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("external_refs"), "{err}");
    }

    #[test]
    fn sizes_and_sources() {
        assert_eq!(
            parse_size(&toml::Value::String("32MiB".into())),
            Ok(32 << 20)
        );
        assert!(parse_size(&toml::Value::String("3 parsecs".into())).is_err());
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one of"), "{err}");
        let err =
            parse("[[watch]]\nname = \"a.b\"\nkind = \"sqlite\"\nurl = \"http://127.0.0.1/x\"\n")
                .unwrap_err()
                .to_string();
        assert!(err.contains("set `path`"), "{err}");
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"postgres\"\nurl = \"postgresql://u:hunter2@h/db\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("password") && !err.contains("hunter2"),
            "{err}"
        );
        let err = parse(
            "[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\npath = \"x\"\nschemas = [\"public\"]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("only for kind \"postgres\""), "{err}");
        let c = parse("[[watch]]\nname = \"a.b\"\nkind = \"postgres\"\nurl = \"postgresql://u@h/db\"\npassword = \"${PG}\"\nschemas = [\"app\"]\n").unwrap();
        assert_eq!(c.watches[0].database.schemas, vec!["app".to_string()]);
        let c = parse("[[watch]]\nname = \"a.b\"\nkind = \"sqlite\"\npath = \"app.db\"\n").unwrap();
        assert_eq!(c.watches[0].kind, Kind::Sqlite);
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"soap\"\npath = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("soap"), "{err}");
        assert!(
            err.contains(
                "(expected one of openapi, openrpc, odata, graphql, mcp, optimade, sqlite, postgres"
            ),
            "{err}"
        );
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"openrpc\"\npath = \"x\"\nexternal_refs = \"none\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("external_refs is only for kind \"openapi\""),
            "{err}"
        );
    }

    fn watch_table(name: &str, path: &str) -> String {
        format!("[[watch]]\nname = \"{name}\"\nkind = \"openapi\"\npath = \"{path}\"\n")
    }

    #[test]
    fn includes_read_sorted_globs_relative_to_each_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("watches.d/sub")).unwrap();
        std::fs::write(d.join("watches.d/b.toml"), watch_table("ns.b", "b.json")).unwrap();
        std::fs::write(d.join("watches.d/a.toml"), watch_table("ns.a", "../a.json")).unwrap();
        std::fs::write(d.join("watches.d/notes.txt"), "not toml").unwrap();
        std::fs::write(
            d.join("watches.d/sub/c.toml"),
            watch_table("ns.c", "c.json"),
        )
        .unwrap();
        let main = d.join("config.toml");
        let text = format!(
            "include = [\"watches.d/*.toml\", \"watches.d/sub/*.toml\", \"none.d/*.toml\"]\n{}",
            watch_table("ns.main", "m.json")
        );
        let c = Config::parse(&main, &text).unwrap();
        let names: Vec<&str> = c.watches.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["ns.main", "ns.a", "ns.b", "ns.c"]);
        assert_eq!(c.included.len(), 3);
        // Paths in an included file resolve against that file's folder.
        assert_eq!(
            c.watch("ns.a").unwrap().source,
            SourceConfig::Path(d.join("watches.d/../a.json"))
        );
        assert_eq!(
            c.watch("ns.c").unwrap().source,
            SourceConfig::Path(d.join("watches.d/sub/c.json"))
        );
        assert_eq!(
            c.watch("ns.main").unwrap().source,
            SourceConfig::Path(d.join("m.json"))
        );
        assert!(c.watch("ns.none").is_none());
    }

    #[test]
    fn included_files_hold_only_watches_and_names_stay_unique() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("w")).unwrap();
        let main = d.join("config.toml");
        let config = format!(
            "include = [\"w/*.toml\"]\n\n{}",
            watch_table("ns.a", "a.json")
        );
        // Anything but [[watch]] tables: an error naming the file and the line.
        std::fs::write(
            d.join("w/1.toml"),
            format!("{}\n[storage]\npath = \"x\"\n", watch_table("ns.b", "b")),
        )
        .unwrap();
        let err = Config::parse(&main, &config).unwrap_err().to_string();
        assert!(
            err.contains("1.toml") && err.contains("line 6") && err.contains("storage"),
            "{err}"
        );
        // No nested includes.
        std::fs::write(d.join("w/1.toml"), "include = [\"more/*.toml\"]\n").unwrap();
        let err = Config::parse(&main, &config).unwrap_err().to_string();
        assert!(
            err.contains("1.toml") && err.contains("line 1") && err.contains("include"),
            "{err}"
        );
        // A watch error in an included file names that file and line.
        std::fs::write(
            d.join("w/1.toml"),
            "\n[[watch]]\nname = \"nodot\"\nkind = \"openapi\"\npath = \"x\"\n",
        )
        .unwrap();
        let err = Config::parse(&main, &config).unwrap_err().to_string();
        assert!(err.contains("1.toml") && err.contains("line 3"), "{err}");
        // A duplicate across files names both places.
        std::fs::write(
            d.join("w/1.toml"),
            format!("\n\n{}", watch_table("ns.a", "other")),
        )
        .unwrap();
        let err = Config::parse(&main, &config).unwrap_err().to_string();
        assert!(
            err.contains("1.toml: line 4")
                && err.contains("config.toml, line 4")
                && err.contains("duplicate"),
            "{err}"
        );
        // A bad glob names the line of the config.
        let err = Config::parse(&main, "\ninclude = [\"w/[.toml\"]\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("include"), "{err}");
    }

    #[test]
    fn read_timeout_defaults_to_ten_seconds_and_is_bounded() {
        assert_eq!(parse("").unwrap().server.read_timeout, DEFAULT_READ_TIMEOUT);
        let c = parse("[server]\nread_timeout = \"3s\"\n").unwrap();
        assert_eq!(c.server.read_timeout, Duration::from_secs(3));
        for bad in ["\"500ms\"", "\"6m\"", "\"soon\""] {
            let err = parse(&format!("[server]\nread_timeout = {bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("line 2") && err.contains("server.read_timeout"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn per_watch_metrics_and_log_keys() {
        let c = parse("").unwrap();
        assert_eq!(c.server.per_watch_metrics, PerWatchMetrics::Auto);
        assert!(c.server.per_watch_metrics.enabled(1000));
        assert!(!c.server.per_watch_metrics.enabled(1001));
        assert_eq!(c.daemon.error_log_every, 10);
        assert_eq!(c.daemon.summary_interval, Duration::from_secs(600));
        for (text, want) in [
            ("true", PerWatchMetrics::On),
            ("false", PerWatchMetrics::Off),
            ("\"auto\"", PerWatchMetrics::Auto),
        ] {
            let c = parse(&format!("[server]\nper_watch_metrics = {text}\n")).unwrap();
            assert_eq!(c.server.per_watch_metrics, want);
        }
        assert!(PerWatchMetrics::On.enabled(100_000) && !PerWatchMetrics::Off.enabled(1));
        let err = parse("[server]\nper_watch_metrics = \"some\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("per_watch_metrics"),
            "{err}"
        );
        let c = parse("[daemon]\nerror_log_every = 3\nsummary_interval = \"30s\"\n").unwrap();
        assert_eq!(
            (c.daemon.error_log_every, c.daemon.summary_interval),
            (3, Duration::from_secs(30))
        );
        assert!(parse("[daemon]\nerror_log_every = 0\n").is_err());
        assert!(parse("[daemon]\nsummary_interval = \"0s\"\n").is_err());
    }
}

// ---- Notifications: `[[notify]]` sinks and `[notifications]` (main config file only) ----

/// Where a sink delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SinkKind {
    /// Standard Webhooks: signed JSON.
    Webhook,
    /// A Slack incoming webhook (Block Kit).
    Slack,
    /// A Microsoft Teams Workflows webhook (an Adaptive Card 1.4).
    Teams,
}

impl SinkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SinkKind::Webhook => "webhook",
            SinkKind::Slack => "slack",
            SinkKind::Teams => "teams",
        }
    }

    pub fn is_chat(self) -> bool {
        !matches!(self, SinkKind::Webhook)
    }
}

/// One `[[notify]]` table. `url` and `secrets` are templates (`${VAR}`, `${file:PATH}`),
/// expanded only when a delivery is sent: their values are never stored, logged or printed.
#[derive(Debug, Clone)]
pub struct SinkConfig {
    pub name: String,
    pub kind: SinkKind,
    pub url: String,
    /// Standard Webhooks secrets (`whsec_…`): every one signs (rotation).
    pub secrets: Vec<String>,
    pub proxy: Option<String>,
    pub ca_file: Option<PathBuf>,
    pub filter: crate::core::event::SinkFilter,
    pub include_changes: bool,
}

/// `[notifications]`.
#[derive(Debug, Clone)]
pub struct Notifications {
    pub error_after: i64,
    /// A delivery still failing this long after its event is `failed` (default 3 days).
    pub max_age: Duration,
    /// One attempt's timeout (default 15 s).
    pub timeout: Duration,
    pub keep_events: u64,
    pub keep_deliveries: u64,
    /// Events and finished deliveries older than this are pruned (default 30 days).
    pub retention: Duration,
    /// More than this many events due at once for one chat sink are sent as one digest.
    pub digest_after: usize,
}

pub const DEFAULT_NOTIFY_MAX_AGE: Duration = Duration::from_secs(3 * 24 * 3600);
pub const DEFAULT_NOTIFY_TIMEOUT: Duration = Duration::from_secs(15);
pub const DEFAULT_DIGEST_AFTER: usize = 10;

impl Default for Notifications {
    fn default() -> Notifications {
        Notifications {
            error_after: crate::core::event::DEFAULT_ERROR_AFTER,
            max_age: DEFAULT_NOTIFY_MAX_AGE,
            timeout: DEFAULT_NOTIFY_TIMEOUT,
            keep_events: crate::core::event::DEFAULT_KEEP_EVENTS,
            keep_deliveries: crate::core::event::DEFAULT_KEEP_DELIVERIES,
            retention: Duration::from_secs(crate::core::event::DEFAULT_RETENTION_SECS),
            digest_after: DEFAULT_DIGEST_AFTER,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNotifications {
    error_after: Option<i64>,
    max_age: Option<toml::Spanned<String>>,
    timeout: Option<toml::Spanned<String>>,
    keep_events: Option<u64>,
    keep_deliveries: Option<u64>,
    retention: Option<toml::Spanned<String>>,
    digest_after: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSink {
    name: toml::Spanned<String>,
    kind: SinkKind,
    url: String,
    secret: Option<String>,
    #[serde(default)]
    secrets: Vec<String>,
    proxy: Option<String>,
    ca_file: Option<String>,
    events: Option<Vec<String>>,
    min_compatibility: Option<String>,
    #[serde(default)]
    watches: Vec<String>,
    #[serde(default)]
    rules: Vec<String>,
    #[serde(default)]
    include_changes: bool,
}

fn parse_notifications(raw: Option<RawNotifications>, text: &str) -> Result<Notifications, String> {
    let mut n = Notifications::default();
    let Some(raw) = raw else { return Ok(n) };
    let duration = |t: &toml::Spanned<String>, key: &str, min: Duration, max: Duration| {
        bounded_duration(t, min, max)
            .map_err(|e| format!("line {}: notifications.{key}: {e}", line_of(text, t.span())))
    };
    if let Some(e) = raw.error_after {
        if !(1..=1_000_000).contains(&e) {
            return Err("notifications.error_after must be between 1 and 1000000".into());
        }
        n.error_after = e;
    }
    if let Some(t) = &raw.max_age {
        n.max_age = duration(t, "max_age", Duration::from_secs(1), MAX_INTERVAL)?;
    }
    if let Some(t) = &raw.timeout {
        n.timeout = duration(t, "timeout", MIN_TIMEOUT, Duration::from_secs(300))?;
    }
    if let Some(t) = &raw.retention {
        n.retention = duration(t, "retention", Duration::from_secs(60), MAX_INTERVAL)?;
    }
    if let Some(k) = raw.keep_events {
        n.keep_events = k.max(1);
    }
    if let Some(k) = raw.keep_deliveries {
        n.keep_deliveries = k.max(1);
    }
    if let Some(d) = raw.digest_after {
        n.digest_after = d.max(1);
    }
    Ok(n)
}

/// The events a sink receives when its table names none: every event for a webhook; chat
/// sinks leave out `registered` and `projection_upgrade` (a first start would flood them).
pub fn default_sink_events(kind: SinkKind) -> Vec<crate::core::event::EventKind> {
    use crate::core::event::EventKind;
    EventKind::ALL
        .iter()
        .copied()
        .filter(|e| {
            !kind.is_chat() || !matches!(e, EventKind::Registered | EventKind::ProjectionUpgrade)
        })
        .collect()
}

fn parse_sinks(raw: Vec<RawSink>, text: &str, base: &Path) -> Result<Vec<SinkConfig>, String> {
    use crate::core::event::{EventKind, SinkFilter};
    let mut sinks: Vec<SinkConfig> = Vec::new();
    for r in raw {
        let line = line_of(text, r.name.span());
        let name = r.name.into_inner();
        let at = format!("line {line}: notify {name:?}");
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(format!(
                "{at}: name must be 1 to 64 letters, digits, '-', '_' or '.'"
            ));
        }
        if sinks.iter().any(|s| s.name == name) {
            return Err(format!("{at}: a sink of that name is already defined"));
        }
        // The URL is a secret: check only that it is a template or a URL, never echo it.
        if !r.url.contains("${") {
            match url::Url::parse(&r.url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => {
                    return Err(format!(
                        "{at}: url must be an http(s) URL or a `${{VAR}}` / `${{file:PATH}}` reference (its value is not shown)"
                    ))
                }
            }
        }
        let mut secrets: Vec<String> = r.secret.into_iter().collect();
        secrets.extend(r.secrets);
        match r.kind {
            SinkKind::Webhook if secrets.is_empty() => {
                return Err(format!(
                    "{at}: a webhook sink needs `secret` (or `secrets` while rotating): a Standard Webhooks `whsec_` secret"
                ))
            }
            SinkKind::Slack | SinkKind::Teams if !secrets.is_empty() => {
                return Err(format!(
                    "{at}: `secret` is for webhook sinks (a {} URL is its own secret)",
                    r.kind.as_str()
                ))
            }
            _ => {}
        }
        let events = match r.events {
            None => default_sink_events(r.kind),
            Some(list) => {
                let mut events = Vec::new();
                for e in list {
                    match EventKind::parse(&e) {
                        Some(k) => events.push(k),
                        None => {
                            return Err(format!(
                                "{at}: unknown event {e:?} (one of {})",
                                EventKind::ALL
                                    .iter()
                                    .map(|k| k.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ))
                        }
                    }
                }
                events
            }
        };
        let min_compatibility = match r.min_compatibility.as_deref() {
            None => None,
            Some(c @ ("compatible" | "breaking" | "security_review")) => {
                crate::core::model::Compatibility::parse(c)
            }
            Some(other) => {
                return Err(format!(
                "{at}: min_compatibility {other:?} must be compatible, breaking or security_review"
            ))
            }
        };
        let mut watches = Vec::new();
        for w in &r.watches {
            watches.push(
                glob::Pattern::new(w).map_err(|e| format!("{at}: watches pattern {w:?}: {e}"))?,
            );
        }
        for rule in &r.rules {
            if rules::find(rule).is_none() {
                return Err(format!("{at}: unknown rule id {rule:?} in rules"));
            }
        }
        sinks.push(SinkConfig {
            name,
            kind: r.kind,
            url: crate::fetch::secrets::absolutize_file_refs(&r.url, base),
            secrets: secrets
                .iter()
                .map(|s| crate::fetch::secrets::absolutize_file_refs(s, base))
                .collect(),
            proxy: r.proxy,
            ca_file: r.ca_file.map(|p| base.join(p)),
            filter: SinkFilter {
                events,
                min_compatibility,
                watches,
                rules: r.rules,
            },
            include_changes: r.include_changes,
        });
    }
    Ok(sinks)
}

/// `[server] public_url`: an http(s) URL without credentials, query or fragment.
fn parse_public_url(text: &str) -> Result<url::Url, String> {
    let u = url::Url::parse(text).map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(format!("{text:?} must be an http or https URL"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err("must not carry credentials".into());
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err(format!("{text:?} must not have a query or a fragment"));
    }
    Ok(u)
}

/// `[[reviewer]]` tables: a unique, non-empty name without control characters, and exactly
/// one of `token_env` or `token_file` (relative to the config's folder).
fn parse_reviewers(
    raw: &[toml::Spanned<RawReviewer>],
    text: &str,
    base: &Path,
) -> Result<Vec<ReviewerConfig>, String> {
    let mut out: Vec<ReviewerConfig> = Vec::new();
    for r in raw {
        let line = line_of(text, r.span());
        let r = r.get_ref();
        let name = r.name.trim();
        if name.is_empty()
            || name != r.name
            || name.chars().any(char::is_control)
            || name.len() > 200
        {
            return Err(format!(
                "line {line}: reviewer.name must be a non-empty name without surrounding spaces or control characters"
            ));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(format!("line {line}: reviewer {name:?} is defined twice"));
        }
        let token = match (&r.token_env, &r.token_file) {
            (Some(var), None) if !var.is_empty() => TokenSource::Env(var.clone()),
            (None, Some(file)) if !file.is_empty() => TokenSource::File(base.join(file)),
            _ => {
                return Err(format!(
                    "line {line}: reviewer {name:?} needs exactly one of token_env or token_file"
                ))
            }
        };
        out.push(ReviewerConfig {
            name: name.to_string(),
            token,
        });
    }
    Ok(out)
}

/// One `[server] allowed_hosts` entry: exactly `host:port`, no wildcard.
fn parse_allowed_host(text: &str) -> Result<String, String> {
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("{text:?} must be host:port"))?;
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(format!("{text:?} must be host:port"));
    }
    if host.contains(['*', '/', ' ', '@']) {
        return Err(format!(
            "{text:?}: wildcards and URLs are not allowed; write host:port"
        ));
    }
    Ok(text.to_ascii_lowercase())
}

impl Config {
    /// The sinks and retention the registry routes events by.
    pub fn routes(&self) -> crate::core::event::Routes {
        let n = &self.notifications;
        crate::core::event::Routes {
            sinks: self
                .notify
                .iter()
                .map(|s| (s.name.clone(), s.filter.clone()))
                .collect(),
            error_after: n.error_after,
            keep_events: n.keep_events,
            keep_deliveries: n.keep_deliveries,
            retention_secs: n.retention.as_secs(),
        }
    }

    pub fn sink(&self, name: &str) -> Option<&SinkConfig> {
        self.notify.iter().find(|s| s.name == name)
    }
}
