//! The HTTP API (axum): probes, metrics, status and review actions.
//!
//! - `GET /healthz` (process alive), `GET /readyz` (config loaded, registry open, scheduler
//!   started), `GET /metrics` (OpenMetrics text): any Host, so probes and scrapers reach them.
//! - Under `/v1` the Host header must be the listen address (or `localhost:PORT` on
//!   loopback): a DNS-rebinding page in a browser cannot read or drive the API.
//! - `GET /v1/status`, `/v1/watches`, `/v1/watches/{name}`, `/v1/pending`,
//!   `/v1/pending/{id}`: the same JSON as the CLI's `--json` (see [`crate::views`]). The
//!   listings take `status=`, `q=`, `limit=` and `cursor=`; a paged answer names the next
//!   page in `Link: <…>; rel="next"`.
//! - `GET /v1/summary`: counts from the daemon's memory (no registry query).
//! - `POST /v1/check` (optional `?watch=NAME`) needs `Authorization: Bearer TOKEN`, the token
//!   being the value of the environment variable named by `server.admin_token_env`. No token
//!   configured: 403. Wrong or missing token: 401. Tokens are compared in constant time.
//! - `POST /v1/pending/{id}/accept|reject` (`{"reason"}`, or `{"reviewer", "reason"}`): a
//!   `[[reviewer]]`'s bearer token decides as that reviewer (`via=reviewer`; naming another in
//!   the body is 403), the admin token names the reviewer (`via=admin`). Cookies never
//!   authenticate `/v1`.
//! - `GET /v1/feed.atom`, `/v1/watches/{name}/feed.atom`: the event log as Atom
//!   ([`crate::notify::feed`]), with the `server.feed_token_env` token as `?token=` or the
//!   HTTP Basic password (or the admin / read bearer token).

use crate::registry::{Registry, RegistryError, Via, WatchStatus};
use crate::state::Shared;
use crate::views::{self, Filter, Listing, Page};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// An error answer: a status and a JSON `{"error": message}` body.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(json!({ "error": self.message }))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> ApiError {
        let status = match e {
            RegistryError::ReviewNotFound { .. } => StatusCode::NOT_FOUND,
            RegistryError::Superseded { .. } | RegistryError::Conflict { .. } => {
                StatusCode::CONFLICT
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}

type ApiResult = Result<Json<Value>, ApiError>;

/// The router of the daemon's API.
pub fn router(shared: Arc<Shared>) -> Router {
    // Read at start, like the listen address.
    let within = shared.config().server.read_timeout;
    let v1 = Router::new()
        .route("/status", get(status))
        .route("/summary", get(summary))
        .route("/watches", get(watches))
        .route("/watches/{name}", get(watch))
        .route("/watches/{name}/contract", get(contract))
        .route(
            "/watches/{name}/refresh",
            post(refresh_now).layer(middleware::from_fn_with_state(
                (CHECK_BODY_MAX, within),
                read_body,
            )),
        )
        .route("/notifications", get(notifications))
        .route("/feed.atom", get(feed))
        .route("/watches/{name}/feed.atom", get(watch_feed))
        .route("/pending", get(pending))
        .route("/pending/{id}", get(pending_one))
        .route(
            "/pending/{id}/accept",
            post(accept).layer(middleware::from_fn_with_state(
                (DECISION_BODY_MAX, within),
                read_body,
            )),
        )
        .route(
            "/pending/{id}/reject",
            post(reject).layer(middleware::from_fn_with_state(
                (DECISION_BODY_MAX, within),
                read_body,
            )),
        )
        .route(
            "/check",
            post(check).layer(middleware::from_fn_with_state(
                (CHECK_BODY_MAX, within),
                read_body,
            )),
        )
        .route(
            "/pins/check",
            post(pins_check).layer(middleware::from_fn_with_state(
                (PIN_BODY_MAX, within),
                read_body,
            )),
        )
        .layer(middleware::from_fn_with_state(shared.clone(), host_guard));
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .nest("/v1", v1)
        .with_state(shared)
}

/// Largest body of `POST /v1/pins/check` (a pin of some thousands of tools; axum's default).
pub const PIN_BODY_MAX: usize = 2 * 1024 * 1024;
/// Largest body of a review decision (`{"reviewer", "reason"}`).
pub const DECISION_BODY_MAX: usize = 64 * 1024;
/// Largest body of `POST /v1/check` (it reads none).
pub const CHECK_BODY_MAX: usize = 4 * 1024;

/// Reads a POST route's body (layered on each with its limit), at most `max` bytes within
/// `within` (`[server] read_timeout`: a client trickling a body holds a connection slot for at
/// most this, docs/reliability.md H16), before the handler runs: 413 from the announced length
/// (nothing read) or once past it, 408 at the deadline.
pub(crate) async fn read_body(
    State((max, within)): State<(usize, Duration)>,
    request: Request,
    next: Next,
) -> Response {
    let refuse = |status: StatusCode, message: String| {
        let mut response = ApiError::new(status, message).into_response();
        // The rest of the body is never read: the connection cannot carry another request.
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        response
    };
    let too_large = || {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than this route's limit of {max} bytes"),
        )
    };
    let announced = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > max as u64) {
        return too_large();
    }
    let (parts, body) = request.into_parts();
    match tokio::time::timeout(within, axum::body::to_bytes(body, max)).await {
        Err(_) => refuse(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {}",
                humantime::format_duration(within)
            ),
        ),
        Ok(Err(e)) => {
            let over = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if over {
                too_large()
            } else {
                refuse(
                    StatusCode::BAD_REQUEST,
                    "the request body could not be read".into(),
                )
            }
        }
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
    }
}

async fn host_guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !shared.host_allowed(host) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "the Host header does not name this server's listen address",
        )
        .into_response();
    }
    // Reachable beyond loopback: reads need the admin or the read token too (the feeds check
    // their own token: feed readers cannot send bearer headers).
    if shared.exposed()
        && request.method() == axum::http::Method::GET
        && !request.uri().path().ends_with("/feed.atom")
    {
        let given = bearer(request.headers());
        let ok = given.is_some_and(|g| {
            [shared.admin_token(), shared.read_token()]
                .iter()
                .flatten()
                .any(|t| tokens_equal(g, t))
        });
        if !ok {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "a valid bearer token (admin or read) is required on a non-loopback listener",
            )
            .into_response();
        }
    }
    next.run(request).await
}

async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    if shared.is_ready() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n").into_response()
    }
}

async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    shared.metrics.overdue.set(shared.overdue());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        shared.metrics.encode(),
    )
        .into_response()
}

/// Runs registry work on the blocking pool with a connection of its own.
async fn with_registry<T, F>(shared: Arc<Shared>, work: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&mut Registry, &crate::config::Config) -> Result<T, ApiError> + Send + 'static,
{
    shared
        .on_registry(work)
        .await
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "request task failed"))?
}

/// Most rows one page holds (`limit=`).
pub const MAX_PAGE: usize = 1000;
/// Rows of a page when only `cursor=` is given.
pub const DEFAULT_PAGE: usize = 100;

/// The query of a listing: `status=`, `q=`, `limit=`, `cursor=`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    status: Option<String>,
    q: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// A listing cursor: the last name of the previous page (`views::encode_cursor`, tag `n1`).
/// Names are compared, not looked up, so the cursor survives watches added or removed.
fn encode_cursor(after: &str) -> String {
    views::encode_cursor("n1", after)
}

fn decode_cursor(cursor: &str) -> Option<String> {
    views::decode_cursor("n1", cursor)
}

impl ListQuery {
    fn parse(&self) -> Result<(Filter, Page), ApiError> {
        let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, m);
        let status = match &self.status {
            None => None,
            Some(s) => Some(WatchStatus::parse(s).ok_or_else(|| {
                bad(format!(
                    "status: unknown status {s:?} (expected one of {})",
                    WatchStatus::ALL
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?),
        };
        let limit = match &self.limit {
            None => None,
            Some(l) => match l.parse::<usize>() {
                Ok(n) if (1..=MAX_PAGE).contains(&n) => Some(n),
                _ => {
                    return Err(bad(format!(
                        "limit: expected a number from 1 to {MAX_PAGE}"
                    )))
                }
            },
        };
        let after = match &self.cursor {
            None => None,
            Some(c) => Some(
                decode_cursor(c)
                    .ok_or_else(|| bad("cursor: not a cursor this API gave out".to_string()))?,
            ),
        };
        let limit = limit.or(after.as_ref().map(|_| DEFAULT_PAGE));
        Ok((
            Filter {
                status,
                q: self.q.clone(),
            },
            Page { after, limit },
        ))
    }

    /// `path?query` of the page after `after`, keeping the filters.
    fn next_link(&self, path: &str, limit: Option<usize>, after: &str) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        if let Some(s) = &self.status {
            query.append_pair("status", s);
        }
        if let Some(q) = &self.q {
            query.append_pair("q", q);
        }
        query.append_pair("limit", &limit.unwrap_or(DEFAULT_PAGE).to_string());
        query.append_pair("cursor", &encode_cursor(after));
        format!("<{path}?{}>; rel=\"next\"", query.finish())
    }
}

fn list_query(
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<ListQuery, ApiError> {
    query
        .map(|Query(q)| q)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))
}

/// A JSON answer, with `Link: <next>; rel="next"` when another page follows.
fn paged(value: Value, link: Option<String>) -> Response {
    let mut response = Json(value).into_response();
    if let Some(link) = link.and_then(|l| header::HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LINK, link);
    }
    response
}

async fn status(
    State(shared): State<Arc<Shared>>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let query = list_query(query)?;
    let (filter, page) = query.parse()?;
    let limit = page.limit;
    let (value, next) = with_registry(shared, move |r, c| {
        Ok(views::status_listing(c, r, &filter, &page)?)
    })
    .await?;
    let link = next.map(|after| query.next_link("/v1/status", limit, &after));
    Ok(paged(value, link))
}

async fn summary(State(shared): State<Arc<Shared>>) -> Json<Value> {
    Json(shared.summary())
}

async fn watches(
    State(shared): State<Arc<Shared>>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let query = list_query(query)?;
    let (filter, page) = query.parse()?;
    let limit = page.limit;
    let Listing { rows, next_after } = with_registry(shared, move |r, c| {
        Ok(views::watch_listing(c, r, &filter, &page)?)
    })
    .await?;
    let link = next_after.map(|after| query.next_link("/v1/watches", limit, &after));
    Ok(paged(Value::Array(rows), link))
}

async fn watch(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> ApiResult {
    with_registry(shared, move |r, c| match views::watch_row(c, r, &name)? {
        Some(row) => Ok(Json(row)),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no watch named {name:?}"),
        )),
    })
    .await
}

/// `GET /v1/watches/{name}/contract`: what an MCP gateway enforces (the accepted items'
/// fingerprints, the accepted instructions, the open review, the fingerprint and schema
/// versions), for a gateway that cannot open the registry itself. Always needs the read or
/// the admin token, loopback or not.
async fn contract(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    if shared.admin_token().is_none() && shared.read_token().is_none() {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "the contract route is disabled: no read or admin token is configured (server.read_token_env, server.admin_token_env)",
        )
        .into_response();
    }
    let allowed = bearer(&headers).is_some_and(|g| {
        [shared.admin_token(), shared.read_token()]
            .iter()
            .flatten()
            .any(|t| tokens_equal(g, t))
    });
    if !allowed {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "a valid bearer token (read or admin) is required",
        )
        .into_response();
    }
    let result = with_registry(shared, move |r, c| {
        if c.watch(&name).is_none() {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no watch named {name:?}"),
            ));
        }
        match crate::gateway::contract_json(r, &name) {
            Ok(Some(value)) => Ok(Json(value)),
            Ok(None) => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("watch {name:?} has no accepted contract yet"),
            )),
            Err(e) => Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                e.to_string(),
            )),
        }
    })
    .await;
    match result {
        Ok(json) => json.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn pending(
    State(shared): State<Arc<Shared>>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let query = list_query(query)?;
    let (filter, page) = query.parse()?;
    let limit = page.limit;
    let Listing { rows, next_after } = with_registry(shared, move |r, _| {
        Ok(views::pending_listing(r, &filter, &page)?)
    })
    .await?;
    let link = next_after.map(|after| query.next_link("/v1/pending", limit, &after));
    Ok(paged(Value::Array(rows), link))
}

async fn pending_one(State(shared): State<Arc<Shared>>, Path(id): Path<i64>) -> ApiResult {
    with_registry(shared, move |r, _| {
        Ok(Json(views::review_detail(&r.review(id)?)))
    })
    .await
}

/// `POST /v1/pins/check`: the body is a pin (`schemawatch pin capture`); the answer is the same
/// JSON as `pin check --json`. Read-only, so no token; a malformed pin is `invalid_snapshot`.
async fn pins_check(State(shared): State<Arc<Shared>>, body: String) -> ApiResult {
    with_registry(shared, move |r, c| {
        Ok(Json(crate::artifacts::check_pin(c, r, &body)?.to_json()))
    })
    .await
}

/// SHA-256 both sides, then compare the digests without an early exit: the time taken says
/// nothing about the token's length or content.
fn tokens_equal(given: &str, expected: &str) -> bool {
    let a = Sha256::digest(given.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// The bearer token of a request. The scheme is case-insensitive (RFC 9110 §11.1).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
}

fn authorize(shared: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(expected) = shared.admin_token() else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "review actions are disabled: no admin token is configured (server.admin_token_env)",
        ));
    };
    let given = bearer(headers);
    match given {
        Some(token) if tokens_equal(token, &expected) => Ok(()),
        _ => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "a valid bearer token is required",
        )),
    }
}

/// Who makes a `/v1` review decision: the admin token (naming a reviewer in the body, recorded
/// `via=admin`) or a `[[reviewer]]`'s token (the recorded name is the token's, `via=reviewer`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decider {
    Admin,
    Reviewer(String),
}

/// The `[[reviewer]]` whose token (read now: a rotated file needs no restart) is `given`.
pub(crate) fn reviewer_for_token(config: &crate::config::Config, given: &str) -> Option<String> {
    let mut found = None;
    // Every reviewer's token is compared (no early exit on the first match).
    for r in &config.reviewers {
        if let Some(token) = r.token() {
            if tokens_equal(given, &token) && found.is_none() {
                found = Some(r.name.clone());
            }
        }
    }
    found
}

fn decider(shared: &Shared, headers: &HeaderMap) -> Result<Decider, ApiError> {
    let config = shared.config();
    let admin = shared.admin_token();
    if admin.is_none() && config.reviewers.is_empty() {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "review actions are disabled: no admin token (server.admin_token_env) and no [[reviewer]] is configured",
        ));
    }
    let Some(given) = bearer(headers) else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "a valid bearer token is required",
        ));
    };
    if admin.as_deref().is_some_and(|a| tokens_equal(given, a)) {
        return Ok(Decider::Admin);
    }
    match reviewer_for_token(&config, given) {
        Some(name) => Ok(Decider::Reviewer(name)),
        None => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "a valid bearer token is required",
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Decision {
    reviewer: Option<String>,
    reason: String,
}

/// The decision's recorded reviewer and how it was established: a reviewer token records its
/// own name (a different `reviewer` in the body is 403); only the admin token names one.
fn decision(
    decider: Decider,
    body: Result<Json<Decision>, axum::extract::rejection::JsonRejection>,
) -> Result<(String, Via, String), ApiError> {
    let Json(d) = body.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    let (reviewer, via) =
        match decider {
            Decider::Admin => match d.reviewer {
                Some(r) if !r.trim().is_empty() => (r, Via::Admin),
                _ => return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "reviewer and reason must not be empty (the admin token names the reviewer)",
                )),
            },
            Decider::Reviewer(name) => match d.reviewer {
                Some(r) if r != name => {
                    return Err(ApiError::new(
                        StatusCode::FORBIDDEN,
                        "a reviewer token decides as its own reviewer: the body names another",
                    ))
                }
                _ => (name, Via::Reviewer),
            },
        };
    if d.reason.trim().is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "reviewer and reason must not be empty",
        ));
    }
    crate::registry::check_decision_text(&reviewer, &d.reason)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e))?;
    Ok((reviewer, via, d.reason))
}

async fn accept(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Result<Json<Decision>, axum::extract::rejection::JsonRejection>,
) -> ApiResult {
    let who = decider(&shared, &headers)?;
    let (reviewer, via, reason) = decision(who, body)?;
    let result = with_registry(shared.clone(), move |r, c| {
        let version = r.accept_via(id, &reviewer, via, &reason, c.storage.keep_versions)?;
        // A `str` field, quoted in text logs: a reviewer cannot spell another field (H23).
        tracing::info!(
            event = "review_accepted",
            review_id = id,
            reviewer = reviewer.as_str(),
            registry_version = version,
            via = via.as_str()
        );
        Ok(version)
    })
    .await?;
    shared.deliveries_wake.notify_one();
    refresh_gauges(&shared).await;
    Ok(Json(views::accepted_json(id, result)))
}

async fn reject(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Result<Json<Decision>, axum::extract::rejection::JsonRejection>,
) -> ApiResult {
    let who = decider(&shared, &headers)?;
    let (reviewer, via, reason) = decision(who, body)?;
    with_registry(shared.clone(), move |r, _| {
        r.reject_via(id, &reviewer, via, &reason)?;
        tracing::info!(
            event = "review_rejected",
            review_id = id,
            reviewer = reviewer.as_str(),
            via = via.as_str()
        );
        Ok(())
    })
    .await?;
    shared.deliveries_wake.notify_one();
    refresh_gauges(&shared).await;
    Ok(Json(views::rejected_json(id)))
}

/// `POST /v1/watches/{name}/refresh`: queues a refresh through the scheduler (202, with
/// `Location` the watch). The admin token, or the refresh token (which can do nothing else).
async fn refresh_now(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let given = bearer(&headers);
    let allowed = given.is_some_and(|g| {
        [shared.admin_token(), shared.refresh_token()]
            .iter()
            .flatten()
            .any(|t| tokens_equal(g, t))
    });
    if shared.admin_token().is_none() && shared.refresh_token().is_none() {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "refresh on demand is disabled: no admin or refresh token is configured (server.admin_token_env, server.refresh_token_env)",
        )
        .into_response();
    }
    if !allowed {
        return ApiError::new(StatusCode::UNAUTHORIZED, "a valid bearer token is required")
            .into_response();
    }
    if shared.config().watch(&name).is_none() {
        return ApiError::new(StatusCode::NOT_FOUND, format!("no watch named {name:?}"))
            .into_response();
    }
    if shared.watch_status(&name) == Some(WatchStatus::Stale) {
        return ApiError::new(
            StatusCode::CONFLICT,
            format!("watch {name:?} is stale: run `schemawatch watch reset {name}` first"),
        )
        .into_response();
    }
    if !shared.is_ready() {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the daemon is not ready (starting or draining)",
        )
        .into_response();
    }
    match shared.request_refresh(&name).await {
        Some(crate::state::OnDemand::Queued) => {
            let location = format!("/v1/watches/{name}");
            let mut response = (
                StatusCode::ACCEPTED,
                Json(json!({"watch": name, "queued": true})),
            )
                .into_response();
            if let Ok(v) = header::HeaderValue::from_str(&location) {
                response.headers_mut().insert(header::LOCATION, v);
            }
            response
        }
        Some(crate::state::OnDemand::Unknown) => {
            ApiError::new(StatusCode::NOT_FOUND, format!("no watch named {name:?}")).into_response()
        }
        None => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the daemon is draining").into_response()
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct NotificationsQuery {
    sink: Option<String>,
    state: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// `GET /v1/notifications`: deliveries, newest first, paged like the other listings.
async fn notifications(
    State(shared): State<Arc<Shared>>,
    query: Result<Query<NotificationsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    let limit = match &q.limit {
        None => None,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => Some(n),
            _ => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("limit: expected a number from 1 to {MAX_PAGE}"),
                ))
            }
        },
    };
    let query = views::NotificationQuery {
        sink: q.sink.clone(),
        state: q.state.clone(),
        limit,
        cursor: q.cursor.clone(),
    };
    let (value, next) = with_registry(shared, move |r, _| {
        views::notifications_json(r, &query)?.map_err(|m| ApiError::new(StatusCode::BAD_REQUEST, m))
    })
    .await?;
    let link = next.map(|cursor| {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        if let Some(s) = &q.sink {
            query.append_pair("sink", s);
        }
        if let Some(s) = &q.state {
            query.append_pair("state", s);
        }
        query.append_pair("limit", &limit.unwrap_or(DEFAULT_PAGE).to_string());
        query.append_pair("cursor", &cursor);
        format!("</v1/notifications?{}>; rel=\"next\"", query.finish())
    });
    Ok(paged(value, link))
}

/// `?token=` of a feed (any other parameter a feed reader adds is ignored).
#[derive(Deserialize, Default)]
struct FeedQuery {
    token: Option<String>,
}

/// Whether a feed request carries the feed token (`?token=`, or HTTP Basic with the token as
/// the password), or the admin or read bearer token. No feed token configured: 403.
fn feed_authorized(
    shared: &Shared,
    headers: &HeaderMap,
    query: &FeedQuery,
) -> Result<(), ApiError> {
    let config = shared.config();
    let feed = crate::state::token_of(config.server.feed_token_env.as_deref());
    let Some(feed) = feed else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "the feeds are disabled: no feed token is configured (server.feed_token_env)",
        ));
    };
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .and_then(|(_, b64)| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .ok()
        })
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|pair| pair.split_once(':').map(|(_, p)| p.to_string()));
    let mut ok = false;
    for given in [query.token.as_deref(), basic.as_deref()]
        .into_iter()
        .flatten()
    {
        ok |= tokens_equal(given, &feed);
    }
    if let Some(given) = bearer(headers) {
        for t in [shared.admin_token(), shared.read_token()].iter().flatten() {
            ok |= tokens_equal(given, t);
        }
    }
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "a valid feed token is required (?token= or HTTP Basic)",
        ))
    }
}

async fn feed_answer(
    shared: Arc<Shared>,
    headers: HeaderMap,
    query: Result<Query<FeedQuery>, axum::extract::rejection::QueryRejection>,
    watch: Option<String>,
) -> Response {
    let query = query.map(|Query(q)| q).unwrap_or_default();
    if let Err(e) = feed_authorized(&shared, &headers, &query) {
        let mut response = e.into_response();
        if response.status() == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Basic realm=\"schemawatch feed\""),
            );
        }
        return response;
    }
    let result = with_registry(shared, move |r, c| {
        if let Some(w) = &watch {
            if c.watch(w).is_none() {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    format!("no watch named {w:?}"),
                ));
            }
        }
        let events = r.events(watch.as_deref(), None, crate::notify::feed::FEED_ENTRIES)?;
        let (id, created) = r.registry_id()?;
        Ok(crate::notify::feed::atom(
            &events,
            (&id, &created),
            c.server.public_url.as_ref(),
            watch.as_deref(),
        ))
    })
    .await;
    match result {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, "application/atom+xml; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            body,
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET /v1/feed.atom`: the event log as Atom, newest first.
async fn feed(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    query: Result<Query<FeedQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    feed_answer(shared, headers, query, None).await
}

/// `GET /v1/watches/{name}/feed.atom`: one watch's events.
async fn watch_feed(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    query: Result<Query<FeedQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    feed_answer(shared, headers, query, Some(name)).await
}

async fn refresh_gauges(shared: &Arc<Shared>) {
    let s = shared.clone();
    let _ = with_registry(shared.clone(), move |r, _| {
        s.update_registry_gauges(r);
        Ok(())
    })
    .await;
}

#[derive(Deserialize)]
struct CheckQuery {
    watch: Option<String>,
}

async fn check(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(query): Query<CheckQuery>,
) -> ApiResult {
    authorize(&shared, &headers)?;
    let config = shared.config();
    if let Some(name) = &query.watch {
        if config.watch(name).is_none() {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no watch named {name:?}"),
            ));
        }
    }
    let mut outcomes = Vec::new();
    for w in config
        .watches
        .iter()
        .filter(|w| query.watch.as_ref().is_none_or(|n| *n == w.name))
    {
        let Some(permit) = shared.permit().await else {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting down",
            ));
        };
        match shared.run_refresh(w, permit).await {
            Some(o) => outcomes.push(o),
            None => {
                return Err(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the registry cannot be opened",
                ))
            }
        }
    }
    let version = with_registry(shared, |r, _| Ok(r.registry_version()?)).await?;
    Ok(Json(views::check_json(version, &outcomes)))
}

/// `schemawatch healthcheck`: asks the daemon at `listen` for `/readyz` (a wildcard listen
/// address is asked on loopback). `Ok` when it answers 200.
pub async fn probe_ready(listen: &str) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr: std::net::SocketAddr = match listen.parse::<std::net::SocketAddr>() {
        Ok(mut a) => {
            if a.ip().is_unspecified() {
                a.set_ip(if a.is_ipv4() {
                    std::net::Ipv4Addr::LOCALHOST.into()
                } else {
                    std::net::Ipv6Addr::LOCALHOST.into()
                });
            }
            a
        }
        Err(_) => tokio::net::lookup_host(listen)
            .await
            .map_err(|e| format!("cannot resolve {listen}: {e}"))?
            .next()
            .ok_or_else(|| format!("cannot resolve {listen}"))?,
    };
    let work = async {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        let request = format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("cannot send to {addr}: {e}"))?;
        let mut answer = Vec::new();
        stream
            .take(64 * 1024)
            .read_to_end(&mut answer)
            .await
            .map_err(|e| format!("cannot read from {addr}: {e}"))?;
        let text = String::from_utf8_lossy(&answer);
        let status_line = text.lines().next().unwrap_or("");
        if status_line.split_whitespace().nth(1) == Some("200") {
            Ok(())
        } else {
            Err(format!("{addr} answered {status_line:?}"))
        }
    };
    tokio::time::timeout(Duration::from_secs(5), work)
        .await
        .map_err(|_| format!("{addr} did not answer within 5 s"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        for name in ["a.b", "ns.w-10_x", ""] {
            assert_eq!(decode_cursor(&encode_cursor(name)).as_deref(), Some(name));
        }
        for bad in ["", "n1a", "zz", "n1zz", "n1ff"] {
            assert_eq!(decode_cursor(bad), None, "{bad}");
        }
    }
}
