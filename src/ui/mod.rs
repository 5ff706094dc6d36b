//! The review web UI under `/ui/`, served by the daemon: server-rendered HTML (askama's
//! compiled, autoescaping templates in `templates/ui/`), one embedded stylesheet, no
//! JavaScript.
//!
//! - Every response carries a strict Content-Security-Policy (`default-src 'none'`,
//!   `style-src 'self'`, `form-action 'self'`, `frame-ancestors 'none'`, `base-uri 'none'`,
//!   `report-uri` the daemon's own `POST /ui/csp-report`: a bounded body, rate-limited, logged
//!   as counts only), `Referrer-Policy: no-referrer`, `X-Content-Type-Options: nosniff` and
//!   `Cache-Control: no-store`; the Host header is checked as on `/v1` (`allowed_hosts`).
//! - Every page needs a session: `POST /ui/login` with a `[[reviewer]]`'s token (or, from a
//!   `trusted_proxies` peer, the `trusted_user_header` naming a configured reviewer) stores the
//!   SHA-256 of a random cookie value in the registry with an absolute expiry (no write per page
//!   view, no registry version bump) and sets it as an HttpOnly, SameSite=Strict cookie
//!   (Secure when `public_url` is https). Failed logins are rate-limited per peer address.
//! - Every POST carries a CSRF token: derived from the session's cookie value (from a
//!   pre-session cookie for the login form), compared in constant time; without it, 403.
//! - Cookies never authenticate `/v1` (it reads bearer tokens only).
//! - Every link and form action is prefixed with `public_url`'s path.

mod pages;

use crate::api::{read_body, reviewer_for_token};
use crate::config::Config;
use crate::registry::{Registry, RegistryError, Via};
use crate::state::Shared;
use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A session's absolute lifetime (no sliding: no write per page view).
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Failed logins one peer address may make per [`LOGIN_WINDOW`].
pub const LOGIN_FAILURES_MAX: u32 = 5;
pub const LOGIN_WINDOW: Duration = Duration::from_secs(60);
/// CSP reports logged per [`CSP_WINDOW`] (more are counted as dropped).
pub const CSP_REPORTS_MAX: u32 = 20;
pub const CSP_WINDOW: Duration = Duration::from_secs(60);
/// Largest body of a `/ui` form POST and of a CSP report.
pub const FORM_BODY_MAX: usize = 16 * 1024;
pub const CSP_BODY_MAX: usize = 8 * 1024;

const SESSION_COOKIE: &str = "sw_session";
const LOGIN_COOKIE: &str = "sw_login";

/// The UI's in-memory state: rate-limit windows (never persisted).
pub(crate) struct Ui {
    shared: Arc<Shared>,
    limits: Mutex<Limits>,
}

#[derive(Default)]
struct Limits {
    logins: HashMap<IpAddr, (Instant, u32)>,
    csp: Option<(Instant, u32, u64)>,
}

impl Ui {
    fn limits(&self) -> std::sync::MutexGuard<'_, Limits> {
        match self.limits.lock() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Whether `peer` is still allowed a login attempt (fewer than the maximum failures in
    /// the current window).
    fn login_allowed(&self, peer: IpAddr) -> bool {
        let mut limits = self.limits();
        let now = Instant::now();
        match limits.logins.get(&peer) {
            Some((start, n)) if now.duration_since(*start) < LOGIN_WINDOW => {
                *n < LOGIN_FAILURES_MAX
            }
            Some(_) => {
                limits.logins.remove(&peer);
                true
            }
            None => true,
        }
    }

    fn login_failed(&self, peer: IpAddr) {
        let mut limits = self.limits();
        let now = Instant::now();
        if limits.logins.len() > 10_000 {
            limits
                .logins
                .retain(|_, (start, _)| now.duration_since(*start) < LOGIN_WINDOW);
        }
        let entry = limits.logins.entry(peer).or_insert((now, 0));
        if now.duration_since(entry.0) >= LOGIN_WINDOW {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(1);
    }

    /// Counts a CSP report; `Some(total)` when it is within the window's budget (logged).
    fn csp_report(&self) -> Option<u64> {
        let mut limits = self.limits();
        let now = Instant::now();
        let (start, n, total) = limits.csp.get_or_insert((now, 0, 0));
        if now.duration_since(*start) >= CSP_WINDOW {
            *start = now;
            *n = 0;
        }
        *total = total.saturating_add(1);
        if *n >= CSP_REPORTS_MAX {
            return None;
        }
        *n += 1;
        Some(*total)
    }
}

/// The `/ui` routes, mounted beside the API by the daemon.
pub fn router(shared: Arc<Shared>) -> Router {
    // Read at start, like the listen address.
    let within = shared.config().server.read_timeout;
    let ui = Arc::new(Ui {
        shared,
        limits: Mutex::new(Limits::default()),
    });
    let form = move || middleware::from_fn_with_state((FORM_BODY_MAX, within), read_body);
    Router::new()
        .route("/ui", get(to_overview))
        .route("/ui/", get(overview))
        .route("/ui/assets/style.css", get(style))
        .route("/ui/login", get(login_page).post(login).layer(form()))
        .route("/ui/logout", post(logout).layer(form()))
        .route("/ui/watches/{name}", get(watch_page))
        .route("/ui/reviews/{id}", get(review_page))
        .route("/ui/reviews/{id}/accept", post(accept).layer(form()))
        .route("/ui/reviews/{id}/reject", post(reject).layer(form()))
        .route(
            "/ui/csp-report",
            post(csp_report).layer(middleware::from_fn_with_state(
                (CSP_BODY_MAX, within),
                read_body,
            )),
        )
        .layer(middleware::from_fn_with_state(ui.clone(), guard))
        .with_state(ui)
}

/// `public_url`'s path without its trailing slash (`""` at the root): every link's prefix.
fn prefix(config: &Config) -> String {
    config
        .server
        .public_url
        .as_ref()
        .map(|u| u.path().trim_end_matches('/').to_string())
        .unwrap_or_default()
}

fn secure(config: &Config) -> bool {
    config
        .server
        .public_url
        .as_ref()
        .is_some_and(|u| u.scheme() == "https")
}

/// The Host check, then the security headers on every answer.
async fn guard(State(ui): State<Arc<Ui>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let config = ui.shared.config();
    let prefix = prefix(&config);
    let started = Instant::now();
    let mut response = if ui.shared.host_allowed(host) {
        next.run(request).await
    } else {
        (
            StatusCode::FORBIDDEN,
            "the Host header does not name this server's listen address\n",
        )
            .into_response()
    };
    let csp = format!(
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; report-uri {prefix}/ui/csp-report"
    );
    let headers = response.headers_mut();
    // The server's own time for the answer (read by scripts/ui-bench): no content, no names.
    let took = started.elapsed().as_secs_f64() * 1000.0;
    if let Ok(v) = HeaderValue::from_str(&format!("app;dur={took:.2}")) {
        headers.insert(header::HeaderName::from_static("server-timing"), v);
    }
    if let Ok(v) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn style() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        include_str!("../../assets/ui/style.css"),
    )
        .into_response()
}

async fn to_overview(State(ui): State<Arc<Ui>>) -> Response {
    see_other(&format!("{}/ui/", prefix(&ui.shared.config())))
}

fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response
}

/// An error page (escaped like every page) with its status.
pub(crate) struct UiError {
    status: StatusCode,
    message: String,
}

impl UiError {
    fn new(status: StatusCode, message: impl Into<String>) -> UiError {
        UiError {
            status,
            message: message.into(),
        }
    }
}

impl From<RegistryError> for UiError {
    fn from(e: RegistryError) -> UiError {
        let status = match e {
            RegistryError::ReviewNotFound { .. } => StatusCode::NOT_FOUND,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        UiError::new(status, e.to_string())
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        let body = pages::error_page(self.status, &self.message);
        (self.status, html_headers(), body).into_response()
    }
}

fn html_headers() -> [(header::HeaderName, &'static str); 1] {
    [(header::CONTENT_TYPE, "text/html; charset=utf-8")]
}

fn html(status: StatusCode, body: String) -> Response {
    (status, html_headers(), body).into_response()
}

/// Runs registry work on the blocking pool with a pooled connection.
async fn blocking<T, F>(ui: &Arc<Ui>, work: F) -> Result<T, UiError>
where
    T: Send + 'static,
    F: FnOnce(&mut Registry, &Config) -> Result<T, UiError> + Send + 'static,
{
    ui.shared
        .on_registry(work)
        .await
        .map_err(|_| UiError::new(StatusCode::INTERNAL_SERVER_ERROR, "request task failed"))?
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

fn sha256_hex(text: &str) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A fresh random cookie value (256 bits).
fn random_token() -> Result<String, UiError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| {
        UiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "no randomness for a session",
        )
    })?;
    Ok(b64(&bytes))
}

/// The CSRF token of a cookie value: derived, never stored.
fn csrf_of(cookie_value: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"schemawatch ui csrf\0");
    h.update(cookie_value.as_bytes());
    b64(&h.finalize())
}

fn equal(a: &str, b: &str) -> bool {
    let x = Sha256::digest(a.as_bytes());
    let y = Sha256::digest(b.as_bytes());
    x.iter()
        .zip(y.iter())
        .fold(0u8, |acc, (p, q)| acc | (p ^ q))
        == 0
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn set_cookie(config: &Config, name: &str, value: &str, max_age: Option<u64>) -> String {
    let path = format!("{}/ui", prefix(config));
    let mut c = format!("{name}={value}; Path={path}; HttpOnly; SameSite=Strict");
    if let Some(age) = max_age {
        c.push_str(&format!("; Max-Age={age}"));
    }
    if secure(config) {
        c.push_str("; Secure");
    }
    c
}

fn with_cookie(mut response: Response, cookie: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}

/// The signed-in reviewer of a request.
pub(crate) struct Who {
    pub reviewer: String,
    pub csrf: String,
    token_sha256: String,
}

/// The session of `headers`' cookie, when one is valid now (a read: nothing is written).
fn session(registry: &Registry, cookie_value: Option<&str>) -> Result<Option<Who>, UiError> {
    let Some(value) = cookie_value else {
        return Ok(None);
    };
    let hash = sha256_hex(value);
    Ok(registry.session(&hash, now_unix())?.map(|s| Who {
        reviewer: s.reviewer,
        csrf: csrf_of(value),
        token_sha256: hash,
    }))
}

fn session_value(headers: &HeaderMap) -> Option<String> {
    cookie(headers, SESSION_COOKIE).map(str::to_string)
}

fn to_login(config: &Config) -> Response {
    see_other(&format!("{}/ui/login", prefix(config)))
}

fn form(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn peer_of(request_peer: Option<axum::Extension<ConnectInfo<std::net::SocketAddr>>>) -> IpAddr {
    request_peer.map_or(
        IpAddr::from([0u8, 0, 0, 0]),
        |axum::Extension(ConnectInfo(a))| a.ip(),
    )
}

type QueryResult<T> = Result<Query<T>, axum::extract::rejection::QueryRejection>;

fn query_of<T>(query: QueryResult<T>) -> Result<T, UiError> {
    query
        .map(|Query(q)| q)
        .map_err(|e| UiError::new(StatusCode::BAD_REQUEST, e.body_text()))
}

/// The reviewer a trusted single-sign-on proxy names: only from a `trusted_proxies` peer and
/// only a configured `[[reviewer]]`.
fn trusted_user(config: &Config, headers: &HeaderMap, peer: IpAddr) -> Option<String> {
    let name = config.server.trusted_user_header.as_deref()?;
    if !config
        .server
        .trusted_proxies
        .iter()
        .any(|c| c.contains(peer))
    {
        return None;
    }
    let user = headers.get(name)?.to_str().ok()?.trim();
    config
        .reviewers
        .iter()
        .find(|r| r.name == user)
        .map(|r| r.name.clone())
}

/// Starts a session for `reviewer` (dropping the request's earlier one: rotated on login) and
/// answers a redirect to the overview with its cookie.
fn start_session(
    registry: &mut Registry,
    config: &Config,
    reviewer: &str,
    earlier: Option<&str>,
) -> Result<Response, UiError> {
    if let Some(old) = earlier {
        registry.delete_session(&sha256_hex(old))?;
    }
    let value = random_token()?;
    let now = now_unix();
    let lifetime = SESSION_LIFETIME.as_secs();
    registry.create_session(
        &sha256_hex(&value),
        reviewer,
        now,
        now.saturating_add(i64::try_from(lifetime).unwrap_or(i64::MAX)),
    )?;
    tracing::info!(event = "ui_login", reviewer = reviewer);
    let response = see_other(&format!("{}/ui/", prefix(config)));
    let response = with_cookie(
        response,
        &set_cookie(config, SESSION_COOKIE, &value, Some(lifetime)),
    );
    Ok(with_cookie(
        response,
        &set_cookie(config, LOGIN_COOKIE, "", Some(0)),
    ))
}

async fn login_page(
    State(ui): State<Arc<Ui>>,
    peer: Option<axum::Extension<ConnectInfo<std::net::SocketAddr>>>,
    headers: HeaderMap,
) -> Result<Response, UiError> {
    let peer = peer_of(peer);
    let current = session_value(&headers);
    let sso = trusted_user(&ui.shared.config(), &headers, peer);
    blocking(&ui, move |r, c| {
        if session(r, current.as_deref())?.is_some() {
            return Ok(see_other(&format!("{}/ui/", prefix(c))));
        }
        if let Some(name) = sso {
            return start_session(r, c, &name, current.as_deref());
        }
        login_form(c, StatusCode::OK, None)
    })
    .await
}

/// The login form with a fresh pre-session cookie (its CSRF token in the form).
fn login_form(
    config: &Config,
    status: StatusCode,
    message: Option<&str>,
) -> Result<Response, UiError> {
    let pre = random_token()?;
    let body = pages::login_page(
        &prefix(config),
        &csrf_of(&pre),
        message,
        config.reviewers.is_empty(),
    );
    Ok(with_cookie(
        html(status, body),
        &set_cookie(config, LOGIN_COOKIE, &pre, Some(3600)),
    ))
}

async fn login(
    State(ui): State<Arc<Ui>>,
    peer: Option<axum::Extension<ConnectInfo<std::net::SocketAddr>>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, UiError> {
    let peer = peer_of(peer);
    let fields = form(&body);
    let pre = cookie(&headers, LOGIN_COOKIE).map(str::to_string);
    let csrf_ok = match (&pre, fields.get("csrf")) {
        (Some(pre), Some(given)) => equal(given, &csrf_of(pre)),
        _ => false,
    };
    if !csrf_ok {
        return Err(UiError::new(
            StatusCode::FORBIDDEN,
            "the form's CSRF token is missing or wrong: reload the sign-in page",
        ));
    }
    if !ui.login_allowed(peer) {
        tracing::warn!(event = "ui_login_limited");
        return Err(UiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too many failed sign-ins from this address: wait a minute",
        ));
    }
    let config = ui.shared.config();
    let given = fields
        .get("token")
        .map(|t| t.trim().to_string())
        .unwrap_or_default();
    let reviewer = if given.is_empty() {
        None
    } else {
        reviewer_for_token(&config, &given)
    };
    let Some(reviewer) = reviewer else {
        ui.login_failed(peer);
        tracing::info!(event = "ui_login_failed");
        return login_form(
            &config,
            StatusCode::UNAUTHORIZED,
            Some("That token does not belong to a configured reviewer."),
        );
    };
    let current = session_value(&headers);
    blocking(&ui, move |r, c| {
        start_session(r, c, &reviewer, current.as_deref())
    })
    .await
}

/// The session and the form of a `/ui` POST, the CSRF token checked (403 without it).
fn posted(
    registry: &Registry,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Who, HashMap<String, String>), UiError> {
    let fields = form(body);
    let who = session(registry, cookie(headers, SESSION_COOKIE))?
        .ok_or_else(|| UiError::new(StatusCode::FORBIDDEN, "no session: sign in again"))?;
    match fields.get("csrf") {
        Some(given) if equal(given, &who.csrf) => Ok((who, fields)),
        _ => Err(UiError::new(
            StatusCode::FORBIDDEN,
            "the form's CSRF token is missing or wrong: reload the page",
        )),
    }
}

async fn logout(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, UiError> {
    blocking(&ui, move |r, c| {
        let (who, _) = posted(r, &headers, &body)?;
        r.delete_session(&who.token_sha256)?;
        tracing::info!(event = "ui_logout", reviewer = who.reviewer.as_str());
        Ok(with_cookie(
            to_login(c),
            &set_cookie(c, SESSION_COOKIE, "", Some(0)),
        ))
    })
    .await
}

#[derive(serde::Deserialize, Default)]
pub(crate) struct OverviewQuery {
    pub q: Option<String>,
    pub section: Option<String>,
    pub cursor: Option<String>,
}

async fn overview(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    query: QueryResult<OverviewQuery>,
) -> Result<Response, UiError> {
    let query = query_of(query)?;
    let current = session_value(&headers);
    let summary = ui.shared.summary();
    blocking(&ui, move |r, c| {
        let Some(who) = session(r, current.as_deref())? else {
            return Ok(to_login(c));
        };
        let body = pages::overview(c, r, &prefix(c), &who, &query, &summary)?;
        Ok(html(StatusCode::OK, body))
    })
    .await
}

#[derive(serde::Deserialize, Default)]
pub(crate) struct CompareQuery {
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub decided: Option<i64>,
}

async fn watch_page(
    State(ui): State<Arc<Ui>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    query: QueryResult<CompareQuery>,
) -> Result<Response, UiError> {
    let query = query_of(query)?;
    let current = session_value(&headers);
    blocking(&ui, move |r, c| {
        let Some(who) = session(r, current.as_deref())? else {
            return Ok(to_login(c));
        };
        let body = pages::watch(c, r, &prefix(c), &who, &name, &query)?;
        Ok(html(StatusCode::OK, body))
    })
    .await
}

async fn review_page(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<i64>,
    headers: HeaderMap,
) -> Result<Response, UiError> {
    let current = session_value(&headers);
    blocking(&ui, move |r, c| {
        let Some(who) = session(r, current.as_deref())? else {
            return Ok(to_login(c));
        };
        let body = pages::review(c, r, &prefix(c), &who, id, None)?;
        Ok(html(StatusCode::OK, body))
    })
    .await
}

#[derive(Clone, Copy)]
enum Action {
    Accept,
    Reject,
}

async fn accept(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, UiError> {
    decide(ui, id, headers, body, Action::Accept).await
}

async fn reject(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, UiError> {
    decide(ui, id, headers, body, Action::Reject).await
}

/// An accept or reject form: the same compare-and-swap as the CLI and `/v1` (a review no
/// longer open, or whose base moved, answers its page with the state, 409).
async fn decide(
    ui: Arc<Ui>,
    id: i64,
    headers: HeaderMap,
    body: axum::body::Bytes,
    action: Action,
) -> Result<Response, UiError> {
    let shared = ui.shared.clone();
    let response = blocking(&ui, move |r, c| {
        let (who, fields) = posted(r, &headers, &body)?;
        let reason = fields
            .get("reason")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        if reason.is_empty() {
            let page = pages::review(c, r, &prefix(c), &who, id, Some(pages::Banner::NeedReason))?;
            return Ok(html(StatusCode::BAD_REQUEST, page));
        }
        crate::registry::check_decision_text(&who.reviewer, &reason)
            .map_err(|e| UiError::new(StatusCode::BAD_REQUEST, e))?;
        let outcome = match action {
            Action::Accept => r
                .accept_via(
                    id,
                    &who.reviewer,
                    Via::Reviewer,
                    &reason,
                    c.storage.keep_versions,
                )
                .map(Some),
            Action::Reject => r
                .reject_via(id, &who.reviewer, Via::Reviewer, &reason)
                .map(|()| None),
        };
        match outcome {
            Ok(version) => {
                match version {
                    Some(v) => tracing::info!(
                        event = "review_accepted",
                        review_id = id,
                        reviewer = who.reviewer.as_str(),
                        registry_version = v,
                        via = Via::Reviewer.as_str()
                    ),
                    None => tracing::info!(
                        event = "review_rejected",
                        review_id = id,
                        reviewer = who.reviewer.as_str(),
                        via = Via::Reviewer.as_str()
                    ),
                }
                let watch = r.review(id)?.watch;
                let mut to = url::form_urlencoded::Serializer::new(String::new());
                to.append_pair("decided", &id.to_string());
                Ok(see_other(&format!(
                    "{}/ui/watches/{}?{}",
                    prefix(c),
                    pages::path_segment(&watch),
                    to.finish()
                )))
            }
            Err(RegistryError::Superseded { .. }) => {
                let page = pages::review(c, r, &prefix(c), &who, id, Some(pages::Banner::NotOpen))?;
                Ok(html(StatusCode::CONFLICT, page))
            }
            Err(e) => Err(e.into()),
        }
    })
    .await?;
    if response.status() == StatusCode::SEE_OTHER {
        shared.deliveries_wake.notify_one();
        let s = shared.clone();
        let _ = blocking(&ui, move |r, _| {
            s.update_registry_gauges(r);
            Ok(())
        })
        .await;
    }
    Ok(response)
}

/// `POST /ui/csp-report`: counted, and logged as a count only (never the report's content),
/// at most [`CSP_REPORTS_MAX`] lines per window.
async fn csp_report(State(ui): State<Arc<Ui>>, body: axum::body::Bytes) -> Response {
    drop(body);
    if let Some(total) = ui.csp_report() {
        tracing::warn!(event = "csp_report", count = total);
    }
    StatusCode::NO_CONTENT.into_response()
}
