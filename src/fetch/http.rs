//! `Source::Url`: HTTP(S) with manual redirects, conditional GET and a decoded-size cap. The
//! client builder, header expansion, CA handling and error redaction here are also the MCP
//! Streamable HTTP transport's (`crate::mcp`): one HTTP plumbing for every fetch.

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::path::Path;
use std::sync::Once;

use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_ENCODING, CONTENT_TYPE, ETAG,
    IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, LOCATION,
};
use reqwest::StatusCode;
use tokio::io::AsyncReadExt;
use url::{Origin, Url};

use super::{
    expand_header_value, FetchError, FetchOutcome, FetchRequest, HeaderProblem, Validators,
    MAX_REDIRECTS,
};

const USER_AGENT: &str = concat!("schemawatch/", env!("CARGO_PKG_VERSION"));
const DEFAULT_ACCEPT: &str = "application/json, application/yaml;q=0.9, */*;q=0.5";
/// Conditional headers are ours to set from the stored validators (docs/design.md "Fetching"):
/// a caller-supplied one could turn a changed document into a 304, or a partial body.
const CALLER_CONDITIONALS: [&str; 5] = [
    "if-none-match",
    "if-modified-since",
    "if-match",
    "if-unmodified-since",
    "if-range",
];
/// A system bundle is about 200 KiB; this only stops a wrong path from eating memory.
const MAX_CA_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Upper bound on the up-front body allocation, whatever Content-Length claims.
const MAX_PREALLOC: u64 = 8 * 1024 * 1024;

/// With `rustls-no-provider`, reqwest panics when building a client unless a process-wide
/// crypto provider is installed.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means some provider is already installed, which reqwest will then use.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Configured headers after expansion, plus the expanded values so error text can be
/// scrubbed of them as a second line of defence.
pub(crate) struct Configured {
    pub(crate) headers: HeaderMap,
    pub(crate) secrets: Vec<String>,
}

pub(crate) fn configured_headers(
    templates: &BTreeMap<String, String>,
) -> Result<Configured, FetchError> {
    configured_from(templates, |_, template| expand_header_value(template))
}

/// [`configured_headers`], with the values (secret files included) read on a blocking thread
/// within `within`: a slow or hostile secret file never blocks the async runtime.
pub(crate) async fn configured_headers_within(
    templates: &BTreeMap<String, String>,
    within: std::time::Duration,
) -> Result<Configured, FetchError> {
    if !templates.values().any(|t| t.contains("${file:")) {
        return configured_headers(templates);
    }
    let expanded = super::secrets::expand_all_within(templates, within)
        .await
        .map_err(|(name, error)| FetchError::Header {
            name,
            reason: HeaderProblem::Secret(error),
        })?;
    configured_from(templates, |name, _| {
        expanded
            .get(name)
            .cloned()
            .ok_or(super::SecretError::InvalidReference { offset: 0 })
    })
}

fn configured_from(
    templates: &BTreeMap<String, String>,
    expand: impl Fn(&str, &str) -> Result<String, super::SecretError>,
) -> Result<Configured, FetchError> {
    let mut headers = HeaderMap::new();
    let mut secrets = Vec::new();
    for (name, template) in templates {
        let header_error = |reason| FetchError::Header {
            name: name.clone(),
            reason,
        };
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| header_error(HeaderProblem::InvalidName))?;
        if CALLER_CONDITIONALS.contains(&header_name.as_str()) {
            tracing::debug!(header = %header_name, "ignoring configured conditional header");
            continue;
        }
        if headers.contains_key(&header_name) {
            return Err(header_error(HeaderProblem::Duplicate));
        }
        let value =
            expand(name, template).map_err(|error| header_error(HeaderProblem::Secret(error)))?;
        let mut header_value = HeaderValue::from_bytes(value.as_bytes())
            .map_err(|_| header_error(HeaderProblem::InvalidValue))?;
        // Keeps the value out of `Debug` and out of the HTTP/2 HPACK table.
        header_value.set_sensitive(true);
        headers.insert(header_name, header_value);
        if !value.is_empty() {
            secrets.push(value);
        }
    }
    Ok(Configured { headers, secrets })
}

/// `If-None-Match` wins over `If-Modified-Since` (RFC 9110 §13.1.3). The date is the
/// server's own `Last-Modified` string, never our clock (docs/design.md "Fetching").
fn conditional_headers(validators: Option<&Validators>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let Some(validators) = validators else {
        return headers;
    };
    let usable = |text: &Option<String>| {
        text.as_deref()
            .and_then(|text| HeaderValue::from_str(text).ok())
    };
    if let Some(etag) = usable(&validators.etag) {
        headers.insert(IF_NONE_MATCH, etag);
    } else if let Some(date) = usable(&validators.last_modified) {
        headers.insert(IF_MODIFIED_SINCE, date);
    }
    headers
}

/// Reads a CA bundle (capped), unparsed.
async fn read_ca_bytes(path: &Path) -> Result<Vec<u8>, FetchError> {
    let ca_error = |reason: String| FetchError::CaFile {
        path: path.to_path_buf(),
        reason,
    };
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|error| ca_error(error.to_string()))?;
    let mut pem = Vec::new();
    file.take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut pem)
        .await
        .map_err(|error| ca_error(error.to_string()))?;
    if pem.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(ca_error(format!("larger than {MAX_CA_FILE_BYTES} bytes")));
    }
    Ok(pem)
}

fn parse_ca(path: &Path, pem: &[u8]) -> Result<Vec<reqwest::Certificate>, FetchError> {
    let ca_error = |reason: String| FetchError::CaFile {
        path: path.to_path_buf(),
        reason,
    };
    let certs = reqwest::Certificate::from_pem_bundle(pem)
        .map_err(|_| ca_error("not a valid PEM certificate bundle".to_owned()))?;
    if certs.is_empty() {
        return Err(ca_error("no PEM certificate found".to_owned()));
    }
    Ok(certs)
}

/// What makes two clients different; requests with equal keys share one client (and its
/// connection pool), since building one loads and parses the system trust store (tens of ms).
#[derive(Clone, PartialEq, Eq, Hash)]
struct ClientKey {
    ca_pem: Option<Vec<u8>>,
    proxy: Option<String>,
    connect_timeout: std::time::Duration,
    timeout: std::time::Duration,
}

/// Clients kept at most; past this the cache starts over (configs rarely have many variants).
const MAX_CACHED_CLIENTS: usize = 64;

fn client_cache() -> &'static std::sync::Mutex<std::collections::HashMap<ClientKey, reqwest::Client>>
{
    static CACHE: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<ClientKey, reqwest::Client>>,
    > = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

pub(crate) async fn build_client(request: &FetchRequest) -> Result<reqwest::Client, FetchError> {
    // The CA file is read every time so a rotated bundle takes effect; its bytes are the key.
    let ca_pem = match &request.ca_file {
        Some(path) => Some(read_ca_bytes(path).await?),
        None => None,
    };
    let key = ClientKey {
        ca_pem,
        proxy: request.proxy.clone(),
        connect_timeout: request.connect_timeout,
        timeout: request.timeout,
    };
    if let Ok(cache) = client_cache().lock() {
        if let Some(client) = cache.get(&key) {
            return Ok(client.clone());
        }
    }
    let client = new_client(request, key.ca_pem.as_deref())?;
    if let Ok(mut cache) = client_cache().lock() {
        if cache.len() >= MAX_CACHED_CLIENTS {
            cache.clear();
        }
        cache.insert(key, client.clone());
    }
    Ok(client)
}

fn new_client(
    request: &FetchRequest,
    ca_pem: Option<&[u8]>,
) -> Result<reqwest::Client, FetchError> {
    install_crypto_provider();
    // Redirects are followed by hand so credentials never follow a hop to another
    // origin (reqwest strips only Authorization/Cookie; docs/reliability.md P3).
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .user_agent(USER_AGENT)
        .connect_timeout(request.connect_timeout)
        .timeout(request.timeout);
    if let (Some(path), Some(pem)) = (&request.ca_file, ca_pem) {
        builder = builder.tls_certs_merge(parse_ca(path, pem)?);
    }
    builder = match &request.proxy {
        Some(proxy) => {
            let proxy = reqwest::Proxy::all(proxy.as_str()).map_err(|_| FetchError::Proxy {
                reason: "not a valid proxy URL".to_owned(),
            })?;
            builder.proxy(proxy)
        }
        None => builder.no_proxy(),
    };
    builder.build().map_err(|error| FetchError::Client {
        detail: describe(&error.without_url(), &[]),
    })
}

fn check_scheme(url: &Url, what: &str) -> Result<(), FetchError> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(FetchError::BadUrl {
            reason: format!("{what} uses scheme `{other}`; only http and https are fetched"),
        }),
    }
}

fn is_followed_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

fn next_location(
    headers: &HeaderMap,
    status: StatusCode,
    current: &Url,
) -> Result<Url, FetchError> {
    let bad = || FetchError::BadRedirect {
        status: status.as_u16(),
    };
    let raw = headers.get(LOCATION).ok_or_else(bad)?;
    let text = std::str::from_utf8(raw.as_bytes()).map_err(|_| bad())?;
    let next = current.join(text).map_err(|_| bad())?;
    check_scheme(&next, "redirect target")?;
    Ok(next)
}

fn header_text(headers: &HeaderMap, name: HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// The URL as reported to callers: userinfo removed, since callers may log or store it.
fn reportable(url: &Url) -> String {
    super::redact_url(url)
}

/// `start` with the request's secret query parameters appended (values expanded off the
/// runtime within the deadline, and added to `secrets` for error redaction).
async fn with_secret_query(
    request: &FetchRequest,
    start: &Url,
    secrets: &mut Vec<String>,
) -> Result<Url, FetchError> {
    if request.query.is_empty() {
        return Ok(start.clone());
    }
    let values = super::secrets::expand_all_within(&request.query, request.timeout)
        .await
        .map_err(|(name, reason)| FetchError::Query { name, reason })?;
    let mut url = start.clone();
    url.query_pairs_mut()
        .extend_pairs(values.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    secrets.extend(values.into_values().filter(|v| !v.is_empty()));
    Ok(url)
}

pub(super) async fn fetch_url(
    request: &FetchRequest,
    start: &Url,
) -> Result<FetchOutcome, FetchError> {
    fetch_url_with(request, start, None).await
}

/// A request body to POST instead of a GET (GraphQL introspection).
pub(super) struct PostBody {
    pub content_type: &'static str,
    pub accept: &'static str,
    pub body: Vec<u8>,
}

/// [`fetch_url`], or with `post` a POST of that body; a POST is repeated to the target of every
/// followed redirect (within the same bounds), and never carries validators.
pub(super) async fn fetch_url_with(
    request: &FetchRequest,
    start: &Url,
    post: Option<&PostBody>,
) -> Result<FetchOutcome, FetchError> {
    check_scheme(start, "URL")?;
    let mut configured = configured_headers_within(&request.headers, request.timeout).await?;
    let start = &with_secret_query(request, start, &mut configured.secrets).await?;
    let conditional = conditional_headers(request.validators.as_ref());
    let sent_validator = post.is_none() && !conditional.is_empty();
    let client = build_client(request).await?;
    let home: Origin = start.origin();

    let mut url = start.clone();
    let mut redirects = 0usize;
    loop {
        let same_origin = url.origin() == home;
        let mut headers = if same_origin {
            configured.headers.clone()
        } else {
            HeaderMap::new()
        };
        if !headers.contains_key(ACCEPT) {
            let accept = post.map_or(DEFAULT_ACCEPT, |p| p.accept);
            headers.insert(ACCEPT, HeaderValue::from_static(accept));
        }
        let builder = match post {
            None => {
                headers.extend(conditional.clone());
                client.get(url.clone())
            }
            Some(p) => {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static(p.content_type));
                client.post(url.clone()).body(p.body.clone())
            }
        };

        let mut response = builder
            .headers(headers)
            .send()
            .await
            .map_err(|error| classify_send(error, &configured.secrets))?;
        let status = response.status();
        tracing::debug!(
            hop = redirects,
            status = status.as_u16(),
            host = url.host_str().unwrap_or(""),
            same_origin,
            "fetch response"
        );

        if is_followed_redirect(status) {
            if redirects >= MAX_REDIRECTS {
                return Err(FetchError::TooManyRedirects);
            }
            url = next_location(response.headers(), status, &url)?;
            // An external `$ref` stays on the root's origin on every hop (H8).
            if request.same_origin_redirects && url.origin() != home {
                return Err(FetchError::CrossOriginRedirect);
            }
            redirects += 1;
            continue;
        }
        if status == StatusCode::NOT_MODIFIED {
            // An unsolicited 304 has an empty body that must never become a snapshot (P7).
            return if sent_validator {
                Ok(FetchOutcome::NotModified)
            } else {
                Err(FetchError::UnexpectedNotModified)
            };
        }
        // 206 is a fragment of the document, never a whole schema.
        if !status.is_success() || status == StatusCode::PARTIAL_CONTENT {
            return Err(FetchError::Status {
                status: status.as_u16(),
            });
        }
        // reqwest removes Content-Encoding when it decodes; one left over means the body
        // is still encoded (e.g. zstd) and the cap would count the wrong bytes.
        if let Some(encoding) = response.headers().get(CONTENT_ENCODING) {
            // Server-chosen text: keep it short enough for a log line.
            let encoding: String = String::from_utf8_lossy(encoding.as_bytes())
                .trim()
                .chars()
                .take(64)
                .collect();
            if !encoding.eq_ignore_ascii_case("identity") {
                return Err(FetchError::UnsupportedEncoding { encoding });
            }
        }

        let validators = Validators {
            etag: header_text(response.headers(), ETAG),
            last_modified: header_text(response.headers(), LAST_MODIFIED),
        };
        let bytes = read_body_capped(&mut response, request.max_bytes, &configured.secrets).await?;
        return Ok(FetchOutcome::Body {
            bytes,
            validators,
            final_url: Some(reportable(&url)),
        });
    }
}

/// Count decoded bytes while streaming: Content-Length is absent after decompression
/// (P4), so the early check only catches honest identity responses.
async fn read_body_capped(
    response: &mut reqwest::Response,
    max_bytes: u64,
    secrets: &[String],
) -> Result<Vec<u8>, FetchError> {
    let too_large = FetchError::TooLarge { limit: max_bytes };
    let declared = response.content_length();
    if declared.is_some_and(|len| len > max_bytes) {
        return Err(too_large);
    }
    let prealloc = declared.unwrap_or(0).min(max_bytes).min(MAX_PREALLOC);
    let mut body = Vec::with_capacity(usize::try_from(prealloc).unwrap_or(0));
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|error| classify_body(error, secrets))?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        if (body.len() as u64).saturating_add(chunk.len() as u64) > max_bytes {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
}

pub(crate) fn classify_send(error: reqwest::Error, secrets: &[String]) -> FetchError {
    let error = error.without_url();
    if error.is_timeout() {
        return FetchError::Timeout;
    }
    let detail = describe(&error, secrets);
    if chain_has_tls_error(&error) {
        FetchError::Tls { detail }
    } else if error.is_connect() {
        FetchError::Connect { detail }
    } else {
        FetchError::Request { detail }
    }
}

/// reqwest reports every body failure as a decode error, so look at the cause: corrupt
/// compressed data is `InvalidData`; anything else means the body ended early (P6).
pub(crate) fn classify_body(error: reqwest::Error, secrets: &[String]) -> FetchError {
    let error = error.without_url();
    if error.is_timeout() {
        return FetchError::Timeout;
    }
    let detail = describe(&error, secrets);
    let corrupt = causes(&error).into_iter().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidData)
    });
    if corrupt && !chain_has_tls_error(&error) {
        FetchError::Decode { detail }
    } else {
        tracing::debug!(%detail, "response body ended early");
        FetchError::Truncated
    }
}

/// Every cause below `error`. `io::Error::source()` skips the error it wraps (and hyper
/// nests io errors), so descend through `get_ref()` instead.
fn causes(error: &reqwest::Error) -> Vec<&(dyn StdError + 'static)> {
    let mut out = Vec::new();
    let mut next = error.source();
    while let Some(cause) = next {
        out.push(cause);
        next = match cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => cause.source(),
        };
    }
    out
}

fn chain_has_tls_error(error: &reqwest::Error) -> bool {
    causes(error)
        .into_iter()
        .any(|cause| cause.is::<rustls::Error>())
}

/// The cause chain as text, without reqwest's own layers (which may print a URL), and
/// with any configured header value masked in case a lower layer echoed one.
fn describe(error: &reqwest::Error, secrets: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in causes(error) {
        if cause.is::<reqwest::Error>() {
            continue;
        }
        let text = cause.to_string();
        if !text.is_empty() && parts.last() != Some(&text) {
            parts.push(text);
        }
    }
    let mut text = if parts.is_empty() {
        kind_of(error).to_owned()
    } else {
        parts.join(": ")
    };
    for secret in secrets {
        text = text.replace(secret.as_str(), "[redacted]");
    }
    text
}

fn kind_of(error: &reqwest::Error) -> &'static str {
    if error.is_builder() {
        "invalid request"
    } else if error.is_connect() {
        "connection failed"
    } else if error.is_body() || error.is_decode() {
        "body error"
    } else {
        "request error"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_wins_over_last_modified() {
        let validators = Validators {
            etag: Some("\"v1\"".to_owned()),
            last_modified: Some("Wed, 21 Oct 2015 07:28:00 GMT".to_owned()),
        };
        let headers = conditional_headers(Some(&validators));
        assert_eq!(headers.len(), 1);
        assert!(headers.contains_key(IF_NONE_MATCH));
    }

    #[test]
    fn caller_conditionals_are_dropped() {
        let mut templates = BTreeMap::new();
        templates.insert("IF-Match".to_owned(), "*".to_owned());
        templates.insert("If-Range".to_owned(), "x".to_owned());
        templates.insert("X-Keep".to_owned(), "kept".to_owned());
        let configured = match configured_headers(&templates) {
            Ok(configured) => configured,
            Err(error) => panic!("{error}"),
        };
        assert_eq!(configured.headers.len(), 1);
        assert!(configured.headers.contains_key("x-keep"));
    }

    #[test]
    fn duplicate_and_invalid_headers_name_the_header_only() {
        let mut templates = BTreeMap::new();
        templates.insert("X-Token".to_owned(), "a".to_owned());
        templates.insert("x-token".to_owned(), "b".to_owned());
        assert!(matches!(
            configured_headers(&templates),
            Err(FetchError::Header {
                reason: HeaderProblem::Duplicate,
                ..
            })
        ));

        let mut templates = BTreeMap::new();
        templates.insert("X-Token".to_owned(), "line1\nline2-SECRET".to_owned());
        let error = match configured_headers(&templates) {
            Err(error) => error,
            Ok(_) => panic!("newline must be rejected"),
        };
        let text = format!("{error} {error:?}");
        assert!(text.contains("X-Token"));
        assert!(!text.contains("SECRET"), "{text}");
    }

    #[test]
    fn reportable_url_drops_userinfo() {
        let url = match Url::parse("https://user:pw@example.com/a?b=1") {
            Ok(url) => url,
            Err(error) => panic!("{error}"),
        };
        assert_eq!(reportable(&url), "https://example.com/a?b=[redacted]");
    }
}
