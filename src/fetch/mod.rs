//! Fetching a schema document from a URL, a local file, standard input or a git revision, with
//! every fetch bounded. Which fetch a kind needs is decided in `crate::sources`.
//!
//! Bounds (docs/design.md "Fetching"; docs/reliability.md P1-P7): a total deadline that covers
//! redirects and the body, a cap on decoded body bytes, at most [`MAX_REDIRECTS`] hops,
//! explicit status handling (a 304 is only "unchanged" when we asked conditionally), and
//! configured headers, which carry credentials, sent only to the configured origin.

mod file;
mod git;
pub mod graphql;
pub(crate) mod http;
pub mod openapi_refs;
pub mod optimade;
pub mod secrets;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use git::{GitBlob, GitNameError};
pub use secrets::{
    absolutize_file_refs, expand_all_within, expand_header_value, SecretError,
    MAX_SECRET_FILE_BYTES,
};

/// Most redirect hops followed before giving up; the next redirect is an error.
pub const MAX_REDIRECTS: usize = 5;
/// Default total deadline for one fetch.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default TCP/TLS connect deadline.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default cap on decoded body bytes (32 MiB).
pub const DEFAULT_MAX_BYTES: u64 = 32 * 1024 * 1024;
/// The largest `max_bytes` a watch may set (1 GiB): a document is held and normalized in
/// memory, so a larger cap would only let a provider exhaust it (H25).
pub const MAX_MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// HTTP validators of a stored snapshot. Kept outside the fingerprint (docs/design.md).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// Where a schema document comes from.
#[derive(Clone, Debug)]
pub enum Source {
    Url(url::Url),
    Path(PathBuf),
    /// Standard input, read once.
    Stdin,
    /// A file at a git revision of the working directory's repository.
    Git(GitBlob),
}

/// One fetch. `Debug` prints header names only: configured values may be credentials.
#[derive(Clone)]
pub struct FetchRequest {
    pub source: Source,
    /// Header name -> raw configured value template, e.g. "Bearer ${TOKEN}" or "${file:/run/secrets/t}".
    pub headers: BTreeMap<String, String>,
    /// Total deadline for the whole fetch, including redirects and the body.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Cap on decoded (decompressed) body bytes.
    pub max_bytes: u64,
    /// Extra trusted root certificate(s), PEM.
    pub ca_file: Option<PathBuf>,
    /// Proxy URL for all schemes. `None` means a direct connection: proxy environment
    /// variables are deliberately ignored so the config alone decides where requests go.
    pub proxy: Option<String>,
    /// Validators stored for the accepted snapshot; None = unconditional fetch.
    pub validators: Option<Validators>,
    /// Secret query parameters (name -> value template), appended to a URL at fetch time:
    /// sent, never part of the source's identity, stored or shown (`[watch.schema_query]`).
    pub query: BTreeMap<String, String>,
    /// Refuse a redirect to another origin than the URL's (external `$ref` documents, whose
    /// same-origin rule holds after every redirect).
    pub same_origin_redirects: bool,
}

impl FetchRequest {
    /// An unconditional fetch of `source` with the default bounds and no headers.
    pub fn new(source: Source) -> Self {
        FetchRequest {
            source,
            headers: BTreeMap::new(),
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_bytes: DEFAULT_MAX_BYTES,
            ca_file: None,
            proxy: None,
            validators: None,
            query: BTreeMap::new(),
            same_origin_redirects: false,
        }
    }
}

/// The shared HTTP client for `request`'s proxy, CA file and timeouts: redirects are never
/// followed by it (notification deliveries treat one as a failure).
pub async fn client_for(request: &FetchRequest) -> Result<reqwest::Client, FetchError> {
    http::build_client(request).await
}

/// A URL as it may be shown, logged or stored in a message: userinfo removed and every query
/// value replaced by `[redacted]` (a `?token=` is a credential as often as not).
pub fn redact_url(url: &url::Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    if let Some(query) = url.query().map(str::to_owned) {
        let redacted: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, value)) if !value.is_empty() => format!("{name}=[redacted]"),
                _ => pair.to_string(),
            })
            .collect();
        url.set_query(Some(&redacted.join("&")));
    }
    url.to_string()
}

/// A source identity (`url:…`, `path:…`, `command:…`) as it may be shown: a URL redacted.
pub fn redact_identity(identity: &str) -> String {
    match identity
        .strip_prefix("url:")
        .and_then(|u| url::Url::parse(u).ok())
    {
        Some(url) => format!("url:{}", redact_url(&url)),
        None => identity.to_string(),
    }
}

impl fmt::Debug for FetchRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchRequest")
            .field("source", &self.source)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_bytes", &self.max_bytes)
            .field("ca_file", &self.ca_file)
            .field("proxy", &self.proxy.as_ref().map(|_| "<configured>"))
            .field("validators", &self.validators)
            .field("query", &self.query.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What a successful fetch produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchOutcome {
    /// HTTP 304 to our conditional request: the stored snapshot is still current.
    NotModified,
    /// A complete body, within the cap.
    Body {
        bytes: Vec<u8>,
        /// The response's ETag / Last-Modified (default for files).
        validators: Validators,
        /// URL after redirects, without userinfo; `None` for files.
        final_url: Option<String>,
    },
}

/// Why a header could not be used. Never carries the value.
#[derive(Debug, thiserror::Error)]
pub enum HeaderProblem {
    #[error("invalid header name")]
    InvalidName,
    #[error("invalid header value (control characters such as a newline are not allowed)")]
    InvalidValue,
    #[error("configured more than once (header names are case-insensitive)")]
    Duplicate,
    #[error("{0}")]
    Secret(SecretError),
}

/// A failed fetch. Messages name headers, variables and paths, never header values, and
/// never a URL (a URL may carry userinfo or a token in its query).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("fetch did not finish within its total deadline")]
    Timeout,
    #[error("could not connect: {detail}")]
    Connect { detail: String },
    #[error("TLS failure: {detail}")]
    Tls { detail: String },
    #[error("request failed: {detail}")]
    Request { detail: String },
    #[error("HTTP status {status}")]
    Status { status: u16 },
    #[error("body is larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    #[error("redirect (HTTP {status}) without a usable Location header")]
    BadRedirect { status: u16 },
    #[error("response body was truncated (connection closed or reset before the end)")]
    Truncated,
    #[error("could not decode the response body: {detail}")]
    Decode { detail: String },
    #[error("response has a content encoding that cannot be decoded: {encoding}")]
    UnsupportedEncoding { encoding: String },
    #[error("server answered 304 Not Modified to an unconditional request")]
    UnexpectedNotModified,
    #[error("cannot read {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot read {}: not a regular file (a FIFO, device or socket is never read as a document; pipe it to `-` instead)", path.display())]
    NotRegular { path: PathBuf },
    #[error("cannot read standard input: {error}")]
    Stdin { error: std::io::Error },
    #[error("cannot read {object} from git: {detail}")]
    Git { object: String, detail: String },
    #[error("redirected to another origin (external documents stay on the root's origin)")]
    CrossOriginRedirect,
    #[error("query parameter `{name}`: {reason}")]
    Query { name: String, reason: SecretError },
    #[error("header `{name}`: {reason}")]
    Header { name: String, reason: HeaderProblem },
    #[error("bad URL: {reason}")]
    BadUrl { reason: String },
    #[error("CA file {}: {reason}", path.display())]
    CaFile { path: PathBuf, reason: String },
    #[error("invalid proxy: {reason}")]
    Proxy { reason: String },
    #[error("could not build the HTTP client: {detail}")]
    Client { detail: String },
}

/// Fetch `request.source` within `request.timeout`, the whole fetch included.
pub async fn fetch(request: &FetchRequest) -> Result<FetchOutcome, FetchError> {
    // The outer deadline is what stops a trickling body (reliability P2); reqwest's own
    // timeout is per hop and is kept only as a second line.
    let work = async {
        match &request.source {
            Source::Url(url) => http::fetch_url(request, url).await,
            Source::Path(path) => file::read_capped(path, request.max_bytes).await,
            Source::Stdin => file::read_stdin_capped(request.max_bytes).await,
            Source::Git(blob) => git::read_blob(blob, request.max_bytes).await,
        }
    };
    match tokio::time::timeout(request.timeout, work).await {
        Ok(result) => result,
        Err(_elapsed) => Err(FetchError::Timeout),
    }
}

/// `now + wait`, or a point about a century away when that does not fit (never a panic).
pub fn later(now: tokio::time::Instant, wait: Duration) -> tokio::time::Instant {
    now.checked_add(wait)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}
