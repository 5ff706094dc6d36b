//! The one source layer: where a contract comes from ([`Source`], also the one grammar of every
//! command-line argument that names a document) and how a kind reads it ([`load`], then
//! [`contract`]). `check`, the daemon and `diff` all come through here, so a document named on
//! the command line is read exactly the way a watch of that kind reads it.
//!
//! This is the only place that dispatches on the kind for fetching: [`load`] has one exhaustive
//! `match` on [`Kind`] (no `_` arm), so a new kind does not compile until it says how it is
//! fetched.
//!
//! | source | `openapi` `openrpc` `odata` | `graphql` | `optimade` | `mcp` |
//! |---|---|---|---|---|
//! | URL | conditional GET | introspection POST | `/info` + `/info/<type>` | Streamable HTTP |
//! | file, `-`, `git:` | the document | SDL or saved introspection | combined document | saved snapshot |
//! | `cmd:` | refused | refused | refused | stdio server |
//!
//! Kind `sqlite` reads a database file (a path, or `sqlite:PATH`) by catalog introspection,
//! read-only ([`sqlite`]); every other source is refused for it, and `sqlite:` for every other
//! kind. Kind `postgres` reads `pg_catalog` of a `postgresql://` URL ([`postgres`]), the only
//! source it takes and one no other kind takes.

mod grammar;
pub mod postgres;
pub mod sqlite;

pub use grammar::{parse_arguments, parse_env, shown_argument, GrammarError};

use crate::core::event::ErrorClass;
use crate::core::model::{Kind, ToolSpec};
use crate::core::normalize::{normalize_sharing, SharedEndpoints};
use crate::fetch::openapi_refs::ExternalRefs;
use crate::fetch::openapi_refs::{self, BundleError};
use crate::fetch::{self, FetchError, FetchOutcome, FetchRequest, GitBlob, Validators};
use crate::mcp::{self, McpError, McpRequest, Target};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Total deadline for a document named on the command line (`diff`): room for a slow server
/// or a cold `npx`.
pub const COMMAND_LINE_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a contract comes from: a watch's `url` / `path` / `command`, or a command-line
/// argument parsed by [`Source::parse`].
#[derive(Clone, PartialEq, Eq)]
pub enum Source {
    /// A local file.
    Path(PathBuf),
    /// Standard input (`-`), read once.
    Stdin,
    /// `http://` or `https://`.
    Url(url::Url),
    /// `git:REV:PATH`: a file at a revision of the working directory's repository.
    Git(GitBlob),
    /// An MCP server over stdio (`cmd:<JSON argv>`, a watch's `command`), with environment
    /// templates for the child (`${VAR}`, `${file:PATH}`, expanded at spawn time).
    Command {
        argv: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// `sqlite:PATH`: a SQLite database file, read by catalog introspection (kind `sqlite`).
    Sqlite(PathBuf),
    /// `postgresql://user@host:port/db` (never with a password): kind `postgres`.
    Postgres(url::Url),
}

impl fmt::Debug for Source {
    /// Environment values may be secrets: names only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Path(p) => f.debug_tuple("Path").field(p).finish(),
            Source::Stdin => f.write_str("Stdin"),
            Source::Url(u) => f.debug_tuple("Url").field(&u.as_str()).finish(),
            Source::Git(b) => f.debug_tuple("Git").field(b).finish(),
            Source::Command { argv, env } => f
                .debug_struct("Command")
                .field("argv", argv)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
            Source::Sqlite(p) => f.debug_tuple("Sqlite").field(p).finish(),
            Source::Postgres(u) => {
                let mut u = u.clone();
                let _ = u.set_password(None);
                f.debug_tuple("Postgres").field(&u.as_str()).finish()
            }
        }
    }
}

impl Source {
    /// What the source is, for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Source::Path(_) => "a file",
            Source::Stdin => "standard input (`-`)",
            Source::Url(_) => "a URL",
            Source::Git(_) => "a git blob (`git:`)",
            Source::Command { .. } => "an MCP stdio server (`cmd:`)",
            Source::Sqlite(_) => "a SQLite database (`sqlite:`)",
            Source::Postgres(_) => "a PostgreSQL database (`postgresql://`)",
        }
    }

    /// The same document for the plain fetcher; `None` for a stdio server.
    fn document(&self) -> Option<fetch::Source> {
        match self {
            Source::Path(path) => Some(fetch::Source::Path(path.clone())),
            Source::Stdin => Some(fetch::Source::Stdin),
            Source::Url(url) => Some(fetch::Source::Url(url.clone())),
            Source::Git(blob) => Some(fetch::Source::Git(blob.clone())),
            Source::Command { .. } | Source::Sqlite(_) | Source::Postgres(_) => None,
        }
    }
}

/// The bounds and settings of one load. `headers` are value templates ("Bearer ${TOKEN}"),
/// expanded at fetch time; `Debug` prints their names only.
#[derive(Clone)]
pub struct Request {
    pub headers: BTreeMap<String, String>,
    /// Secret query parameter templates (`[watch.schema_query]`), appended at fetch time.
    pub query: BTreeMap<String, String>,
    /// Total deadline for the whole load.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Cap on decoded body bytes (for MCP: on everything the server sends).
    pub max_bytes: u64,
    pub ca_file: Option<PathBuf>,
    pub proxy: Option<String>,
    /// Validators of the accepted snapshot; used only by kinds with conditional fetches.
    pub validators: Option<Validators>,
    /// What an OpenAPI document's external `$ref`s may reach.
    pub external_refs: ExternalRefs,
    /// Kind `postgres`: password source and schemas.
    pub database: postgres::DatabaseOptions,
    /// Which MCP resources a live MCP fetch lists.
    pub mcp_resources: mcp::McpResources,
    /// The watch's `max_endpoints`: a live MCP fetch stops reading past that many tools.
    pub max_endpoints: Option<usize>,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_bytes", &self.max_bytes)
            .field("ca_file", &self.ca_file)
            .field("proxy", &self.proxy.as_ref().map(|_| "<configured>"))
            .field("validators", &self.validators)
            .field("external_refs", &self.external_refs)
            .field("database", &self.database)
            .field("mcp_resources", &self.mcp_resources)
            .field("max_endpoints", &self.max_endpoints)
            .finish()
    }
}

impl Request {
    /// A document named on the command line: unconditional, no headers, default bounds.
    pub fn command_line() -> Request {
        Request {
            headers: BTreeMap::new(),
            query: BTreeMap::new(),
            timeout: COMMAND_LINE_TIMEOUT,
            connect_timeout: fetch::DEFAULT_CONNECT_TIMEOUT,
            max_bytes: fetch::DEFAULT_MAX_BYTES,
            ca_file: None,
            proxy: None,
            validators: None,
            external_refs: ExternalRefs::SameOrigin,
            database: postgres::DatabaseOptions::default(),
            mcp_resources: mcp::McpResources::default(),
            max_endpoints: None,
        }
    }

    fn fetch(&self, source: fetch::Source, conditional: bool) -> FetchRequest {
        FetchRequest {
            source,
            headers: self.headers.clone(),
            query: self.query.clone(),
            same_origin_redirects: false,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            max_bytes: self.max_bytes,
            ca_file: self.ca_file.clone(),
            proxy: self.proxy.clone(),
            validators: if conditional {
                self.validators.clone()
            } else {
                None
            },
        }
    }
}

/// Why a source could not be read. Messages never carry header or environment values.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Mcp(#[from] McpError),
    #[error(transparent)]
    Database(#[from] sqlite::DatabaseError),
    #[error(transparent)]
    Postgres(#[from] postgres::PostgresError),
    #[error("{what} cannot serve kind {kind}{hint}")]
    Unsupported {
        what: &'static str,
        kind: Kind,
        hint: &'static str,
    },
    /// A review artifact (inventory, pin) is a document, never a server.
    #[error("{what} holds no document (use a file, `-`, a URL or `git:REV:PATH`)")]
    NotADocument { what: &'static str },
}

impl LoadError {
    /// A coarse, value-free class for metrics (`refresh_errors_total`).
    pub fn class(&self) -> ErrorClass {
        match self {
            LoadError::Fetch(e) => fetch_error_class(e),
            LoadError::Mcp(_) => ErrorClass::Mcp,
            LoadError::Database(sqlite::DatabaseError::Timeout) => ErrorClass::Timeout,
            LoadError::Database(_) => ErrorClass::Database,
            LoadError::Postgres(postgres::PostgresError::Timeout) => ErrorClass::Timeout,
            LoadError::Postgres(postgres::PostgresError::Tls(_)) => ErrorClass::Tls,
            LoadError::Postgres(postgres::PostgresError::Connect { .. }) => ErrorClass::Connect,
            LoadError::Postgres(_) => ErrorClass::Database,
            LoadError::Unsupported { .. } | LoadError::NotADocument { .. } => ErrorClass::Fetch,
        }
    }
}

/// The metrics class of a fetch failure.
pub fn fetch_error_class(e: &FetchError) -> ErrorClass {
    use FetchError as F;
    match e {
        F::Timeout => ErrorClass::Timeout,
        F::Connect { .. } => ErrorClass::Connect,
        F::Tls { .. } => ErrorClass::Tls,
        F::Status { .. } | F::UnexpectedNotModified => ErrorClass::HttpStatus,
        F::TooLarge { .. } => ErrorClass::TooLarge,
        _ => ErrorClass::Fetch,
    }
}

/// Reads the document of `source` the way a watch of `kind` reads it (docs/design.md
/// "Fetching"). Only the plain document kinds are conditional on `request.validators`.
pub async fn load(
    kind: Kind,
    source: &Source,
    request: &Request,
) -> Result<FetchOutcome, LoadError> {
    let unsupported = |hint| LoadError::Unsupported {
        what: source.describe(),
        kind,
        hint,
    };
    const MCP_ONLY: &str = " (a `cmd:` source is an MCP server: use --kind mcp)";
    const SQLITE_ONLY: &str = " (a `sqlite:` source is a database file: use --kind sqlite)";
    const POSTGRES_ONLY: &str = " (a `postgresql://` source is a database: use --kind postgres)";
    let not_document = || match source {
        Source::Sqlite(_) => unsupported(SQLITE_ONLY),
        Source::Postgres(_) => unsupported(POSTGRES_ONLY),
        _ => unsupported(MCP_ONLY),
    };
    let outcome = match kind {
        Kind::Openapi | Kind::Openrpc | Kind::Odata => {
            let document = source.document().ok_or_else(not_document)?;
            fetch::fetch(&request.fetch(document, true)).await?
        }
        // Introspection is a POST: a full fetch every time, no validators.
        Kind::Graphql => {
            let document = source.document().ok_or_else(not_document)?;
            fetch::graphql::fetch_schema(&request.fetch(document, false)).await?
        }
        // Multi-resource: no single validator covers the contract, so always a full fetch.
        Kind::Optimade => {
            let document = source.document().ok_or_else(not_document)?;
            fetch::optimade::fetch(&request.fetch(document, false)).await?
        }
        // A full tool-list walk every time, no validators; a saved snapshot is a document.
        Kind::Mcp => {
            let target = match source {
                Source::Url(url) => Target::Http {
                    url: url.clone(),
                    headers: request.headers.clone(),
                    ca_file: request.ca_file.clone(),
                    proxy: request.proxy.clone(),
                },
                Source::Command { argv, env } => Target::Stdio {
                    argv: argv.clone(),
                    env: env.clone(),
                },
                Source::Sqlite(_) => return Err(unsupported(SQLITE_ONLY)),
                Source::Postgres(_) => return Err(unsupported(POSTGRES_ONLY)),
                Source::Path(_) | Source::Stdin | Source::Git(_) => {
                    let document = source.document().ok_or_else(|| unsupported(""))?;
                    return Ok(fetch::fetch(&request.fetch(document, true)).await?);
                }
            };
            let mut mcp_request = McpRequest::bounded(target, request.timeout, request.max_bytes);
            mcp_request.resources = request.mcp_resources;
            mcp_request.max_tools = request.max_endpoints;
            FetchOutcome::Body {
                bytes: mcp::fetch_document(&mcp_request).await?,
                validators: Validators::default(),
                final_url: None,
            }
        }
        // Catalog introspection of a database file: a full read every time, no validators.
        Kind::Sqlite => {
            let path = match source {
                Source::Path(path) | Source::Sqlite(path) => path,
                Source::Stdin
                | Source::Url(_)
                | Source::Git(_)
                | Source::Command { .. }
                | Source::Postgres(_) => {
                    return Err(unsupported(
                        " (kind sqlite reads a database file: name its path or sqlite:PATH)",
                    ))
                }
            };
            FetchOutcome::Body {
                bytes: sqlite::fetch(path, request.timeout).await?,
                validators: Validators::default(),
                final_url: None,
            }
        }
        // pg_catalog introspection in a read-only transaction: full every time.
        Kind::Postgres => {
            let Source::Postgres(url) = source else {
                return Err(unsupported(
                    " (kind postgres reads a postgresql://user@host:port/db URL)",
                ));
            };
            FetchOutcome::Body {
                bytes: postgres::fetch(
                    url,
                    &request.database,
                    request.ca_file.as_deref(),
                    request.timeout,
                    request.connect_timeout,
                    request.max_bytes,
                )
                .await?,
                validators: Validators::default(),
                final_url: None,
            }
        }
    };
    Ok(outcome)
}

/// Reads a plain document that is not a contract (a catalog inventory, a pin) from any source
/// of the grammar that holds one, unconditionally and with the request's bounds.
pub async fn read_document(source: &Source, request: &Request) -> Result<Vec<u8>, LoadError> {
    let document = source.document().ok_or(LoadError::NotADocument {
        what: source.describe(),
    })?;
    match fetch::fetch(&request.fetch(document, false)).await? {
        FetchOutcome::Body { bytes, .. } => Ok(bytes),
        FetchOutcome::NotModified => Err(FetchError::UnexpectedNotModified.into()),
    }
}

/// A normalized contract and what reading it took beyond the root document.
#[derive(Debug)]
pub struct Contract {
    pub spec: ToolSpec,
    /// An OpenAPI document with external `$ref`s: no validator of the root covers it.
    pub has_external_refs: bool,
    /// Body bytes of the external documents fetched.
    pub external_bytes: u64,
}

/// Normalizes the document [`load`] read from `source` (`final_url`: where it came from after
/// redirects). An OpenAPI document's external `$ref`s are read too, from the same place: the
/// same origin, the file's folder, or the same git revision. `started` is when the load began:
/// `request.timeout` covers everything. `shared`: another reading of the watch whose equal
/// endpoints this one shares.
#[allow(clippy::too_many_arguments)]
pub async fn contract(
    kind: Kind,
    name: &str,
    source: &Source,
    request: &Request,
    bytes: &[u8],
    final_url: Option<&str>,
    started: Instant,
    shared: SharedEndpoints<'_>,
) -> Result<Contract, BundleError> {
    let plain = || -> Result<Contract, BundleError> {
        Ok(Contract {
            spec: normalize_sharing(kind, name, bytes, shared)?,
            has_external_refs: false,
            external_bytes: 0,
        })
    };
    // External `$ref`s (OpenAPI's bundling) are a property of the kind's declaration.
    if kind.decl().external_refs {
        let Some(document) = source.document() else {
            return plain();
        };
        let resolved = openapi_refs::normalize_document(
            name,
            &request.fetch(document, true),
            final_url,
            bytes,
            request.external_refs,
            started,
            shared,
        )
        .await?;
        return Ok(Contract {
            spec: resolved.spec,
            has_external_refs: resolved.has_external_refs,
            external_bytes: resolved.external_bytes,
        });
    }
    plain()
}

/// Why [`load_spec`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error("unexpected 304 Not Modified")]
    NotModified,
}

/// [`load`] then [`contract`]: the contract of `source` as `kind`, unconditionally.
pub async fn load_spec(
    kind: Kind,
    name: &str,
    source: &Source,
    request: &Request,
) -> Result<ToolSpec, SpecError> {
    Ok(
        load_spec_and_bytes(kind, name, source, request, SharedEndpoints::default())
            .await?
            .0,
    )
}

/// [`load_spec`], also returning the document's bytes (for source positions), sharing the
/// endpoints `shared` holds equally.
pub async fn load_spec_and_bytes(
    kind: Kind,
    name: &str,
    source: &Source,
    request: &Request,
    shared: SharedEndpoints<'_>,
) -> Result<(ToolSpec, Vec<u8>), SpecError> {
    let started = Instant::now();
    match load(kind, source, request).await? {
        FetchOutcome::Body {
            bytes, final_url, ..
        } => {
            let spec = contract(
                kind,
                name,
                source,
                request,
                &bytes,
                final_url.as_deref(),
                started,
                shared,
            )
            .await?
            .spec;
            Ok((spec, bytes))
        }
        FetchOutcome::NotModified => Err(SpecError::NotModified),
    }
}
