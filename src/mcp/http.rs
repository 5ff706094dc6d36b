//! The Streamable HTTP transport: one POST per message, answers as JSON or as an SSE stream.
//!
//! Modern requests carry `MCP-Protocol-Version: 2026-07-28` and `Mcp-Method`; legacy ones carry
//! the negotiated version and the `Mcp-Session-Id` the server handed out (ended with DELETE).
//! Redirects are not followed (configured headers may be credentials), proxies come from the
//! config only, and every body counts against the fetch's byte budget. The client, header
//! expansion (duplicate names refused, caller-supplied conditional headers dropped), CA bundle
//! and error redaction are those of every other fetch (`crate::fetch::http`).

use super::{
    classify_message, parse_messages, Budget, Era, Incoming, McpError, Reply, MODERN_VERSION,
};
use crate::fetch::http::{
    build_client, classify_body, classify_send, configured_headers_within, Configured,
};
use crate::fetch::{FetchError, FetchRequest, Source, DEFAULT_CONNECT_TIMEOUT};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// Bound on an error body read for era detection.
const MAX_ERROR_BODY: usize = 64 * 1024;
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// A header value for `text`: as it is when it is visible ASCII, else the spec's
/// `=?base64?…?=` form.
fn header_safe(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(|b| (0x20..0x7F).contains(&b)) && text.trim() == text {
        text.to_string()
    } else {
        use base64::Engine as _;
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
        )
    }
}

pub(super) struct HttpConn {
    client: reqwest::Client,
    url: url::Url,
    headers: HeaderMap,
    /// Expanded header values, masked in any error text.
    secrets: Vec<String>,
    session_id: Option<HeaderValue>,
    /// The negotiated legacy version (sent after initialize).
    pub(super) protocol_version: Option<String>,
    budget: Budget,
    next_id: i64,
}

/// A failed send or body read, classified and redacted like every fetch's.
fn transport(error: FetchError) -> McpError {
    match error {
        FetchError::Timeout => McpError::Timeout {
            phase: "HTTP".into(),
        },
        error => McpError::Transport {
            detail: error.to_string(),
        },
    }
}

/// The client and the expanded headers for one MCP endpoint: `total` bounds each request,
/// `within` the connect and the reading of `${file:...}` header values.
async fn connect(
    url: &url::Url,
    templates: &BTreeMap<String, String>,
    ca_file: Option<&Path>,
    proxy: Option<&str>,
    total: Duration,
    within: Duration,
    max_bytes: u64,
) -> Result<(reqwest::Client, Configured), McpError> {
    let request = FetchRequest {
        source: Source::Url(url.clone()),
        headers: templates.clone(),
        timeout: total,
        connect_timeout: DEFAULT_CONNECT_TIMEOUT.min(within),
        max_bytes,
        ca_file: ca_file.map(Path::to_path_buf),
        proxy: proxy.map(str::to_owned),
        validators: None,
        query: BTreeMap::new(),
        same_origin_redirects: false,
    };
    let configured = configured_headers_within(&request.headers, within).await?;
    let client = build_client(&request).await?;
    Ok((client, configured))
}

impl HttpConn {
    pub(super) async fn new(
        url: &url::Url,
        templates: &BTreeMap<String, String>,
        ca_file: Option<&Path>,
        proxy: Option<&str>,
        budget: Budget,
        timeout: Duration,
    ) -> Result<HttpConn, McpError> {
        let (client, configured) = connect(
            url,
            templates,
            ca_file,
            proxy,
            timeout,
            timeout,
            budget.limit,
        )
        .await?;
        Ok(HttpConn {
            client,
            url: url.clone(),
            headers: configured.headers,
            secrets: configured.secrets,
            session_id: None,
            protocol_version: None,
            budget,
            next_id: 0,
        })
    }

    fn post(&self, method: &str, era: Era, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, ACCEPT_BOTH)
            .body(body.to_string());
        match era {
            Era::Modern => {
                request = request
                    .header(VERSION_HEADER, MODERN_VERSION)
                    .header(METHOD_HEADER, method);
                // The item a request names goes in `Mcp-Name` too; the server checks they agree.
                let key = match method {
                    "tools/call" | "prompts/get" => Some("name"),
                    "resources/read" => Some("uri"),
                    _ => None,
                };
                let name = key
                    .and_then(|k| body.pointer(&format!("/params/{k}")))
                    .and_then(Value::as_str);
                if let Some(name) = name {
                    request = request.header(NAME_HEADER, header_safe(name));
                }
            }
            Era::Legacy => {
                if let Some(v) = &self.protocol_version {
                    request = request.header(VERSION_HEADER, v.as_str());
                }
                if let Some(id) = &self.session_id {
                    request = request.header(SESSION_HEADER, id.clone());
                }
            }
        }
        request
    }

    pub(super) async fn call(
        &mut self,
        method: &str,
        params: Value,
        era: Era,
    ) -> Result<Reply, McpError> {
        self.next_id += 1;
        let id = self.next_id;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut response = self
            .post(method, era, &body)
            .send()
            .await
            .map_err(|e| transport(classify_send(e, &self.secrets)))?;
        let status = response.status();
        if era == Era::Legacy && method == "initialize" {
            if let Some(session) = response.headers().get(SESSION_HEADER) {
                self.session_id = Some(session.clone());
            }
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if !status.is_success() {
            // A JSON-RPC error in the body says more than the status (era detection needs it).
            let body = self.read_body(&mut response, MAX_ERROR_BODY).await?;
            if let Ok(messages) = parse_messages(&body) {
                if let Some(error) = messages.iter().find(|m| m.get("error").is_some()) {
                    return Ok(Reply::from_message(error));
                }
            }
            return Err(McpError::Status {
                method: method.into(),
                status: status.as_u16(),
            });
        }
        if content_type.starts_with("text/event-stream") {
            return self.read_sse(&mut response, id, method).await;
        }
        let body = self.read_body(&mut response, usize::MAX).await?;
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(McpError::Protocol {
                detail: format!(
                    "{method}: HTTP {} with an empty body instead of a response",
                    status.as_u16()
                ),
            });
        }
        for message in parse_messages(&body)? {
            if let Incoming::Reply(reply) = classify_message(&message, id)? {
                return Ok(reply);
            }
        }
        Err(McpError::Protocol {
            detail: format!("{method}: the HTTP response holds no answer to the request"),
        })
    }

    async fn read_body(
        &mut self,
        response: &mut reqwest::Response,
        cap: usize,
    ) -> Result<Vec<u8>, McpError> {
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport(classify_body(e, &self.secrets)))?
        {
            self.budget.take(chunk.len())?;
            body.extend_from_slice(&chunk);
            if body.len() > cap {
                body.truncate(cap);
                break;
            }
        }
        Ok(body)
    }

    /// Reads SSE events until the answer to `id` arrives (priming events have empty data).
    async fn read_sse(
        &mut self,
        response: &mut reqwest::Response,
        id: i64,
        method: &str,
    ) -> Result<Reply, McpError> {
        let mut pending: Vec<u8> = Vec::new();
        let mut data: Vec<u8> = Vec::new();
        let mut has_data = false;
        // Bytes of `pending` already searched for a newline (keeps long lines linear).
        let mut scanned = 0;
        loop {
            let chunk = response
                .chunk()
                .await
                .map_err(|e| transport(classify_body(e, &self.secrets)))?;
            let Some(chunk) = chunk else {
                return Err(McpError::Closed {
                    method: method.into(),
                    status: "the SSE stream ended without an answer".into(),
                });
            };
            self.budget.take(chunk.len())?;
            pending.extend_from_slice(&chunk);
            while let Some(pos) = pending[scanned..].iter().position(|b| *b == b'\n') {
                let mut line: Vec<u8> = pending.drain(..=scanned + pos).collect();
                scanned = 0;
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.is_empty() {
                    // End of an event: dispatch its data, if any.
                    if has_data && !data.iter().all(u8::is_ascii_whitespace) {
                        for message in parse_messages(&data)? {
                            if let Incoming::Reply(reply) = classify_message(&message, id)? {
                                return Ok(reply);
                            }
                        }
                    }
                    data.clear();
                    has_data = false;
                } else if let Some(rest) = line.strip_prefix(b"data:") {
                    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                    if has_data {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(rest);
                    has_data = true;
                }
                // `event:`, `id:`, `retry:` and `:` comments carry nothing we need.
            }
            scanned = pending.len();
        }
    }

    pub(super) async fn notify(&mut self, method: &str) -> Result<(), McpError> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let response = self
            .post(method, Era::Legacy, &body)
            .send()
            .await
            .map_err(|e| transport(classify_send(e, &self.secrets)))?;
        if !response.status().is_success() {
            return Err(McpError::Status {
                method: method.into(),
                status: response.status().as_u16(),
            });
        }
        Ok(())
    }

    /// Ends a legacy session (best effort, briefly).
    pub(super) async fn close(self) {
        let Some(session) = self.session_id else {
            return;
        };
        let request = self
            .client
            .delete(self.url.clone())
            .headers(self.headers.clone())
            .header(SESSION_HEADER, session);
        let request = match &self.protocol_version {
            Some(v) => request.header(VERSION_HEADER, v.as_str()),
            None => request,
        };
        let _ = tokio::time::timeout(DELETE_TIMEOUT, request.send()).await;
    }
}

/// A long-lived legacy Streamable HTTP session (the gateway's upstream): every message is one
/// POST whose answer (JSON, or an SSE stream of several messages) is handed to the caller as
/// it arrives; a GET stream carries what the server sends unprompted. Shared by reference:
/// requests run concurrently.
pub(super) struct HttpSession {
    client: reqwest::Client,
    url: url::Url,
    headers: HeaderMap,
    secrets: Vec<String>,
    session_id: std::sync::Mutex<Option<HeaderValue>>,
    protocol_version: std::sync::Mutex<Option<String>>,
    /// Largest single message (and non-streamed body).
    max_message: usize,
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl HttpSession {
    pub(super) async fn new(
        url: &url::Url,
        templates: &BTreeMap<String, String>,
        ca_file: Option<&Path>,
        proxy: Option<&str>,
        timeout: Duration,
        max_message: usize,
    ) -> Result<HttpSession, McpError> {
        // No total deadline: a tool call's answer streams as long as the tool runs; the
        // gateway bounds its own requests.
        let forever = Duration::from_secs(365 * 24 * 3600);
        let (client, configured) =
            connect(url, templates, ca_file, proxy, forever, timeout, u64::MAX).await?;
        Ok(HttpSession {
            client,
            url: url.clone(),
            headers: configured.headers,
            secrets: configured.secrets,
            session_id: std::sync::Mutex::new(None),
            protocol_version: std::sync::Mutex::new(None),
            max_message,
        })
    }

    fn with_session(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if let Some(v) = lock(&self.protocol_version).as_deref() {
            request = request.header(VERSION_HEADER, v);
        }
        if let Some(id) = lock(&self.session_id).clone() {
            request = request.header(SESSION_HEADER, id);
        }
        request
    }

    /// POSTs one message and hands every message of the answer to `deliver`. An HTTP error
    /// with a JSON-RPC error body is delivered as that body; otherwise it is an error.
    pub(super) async fn post(
        &self,
        message: &Value,
        mut deliver: impl FnMut(Value),
    ) -> Result<(), McpError> {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("(response)")
            .to_string();
        let request = self.with_session(
            self.client
                .post(self.url.clone())
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, ACCEPT_BOTH)
                .body(message.to_string()),
        );
        let mut response = request
            .send()
            .await
            .map_err(|e| transport(classify_send(e, &self.secrets)))?;
        if method == "initialize" {
            if let Some(session) = response.headers().get(SESSION_HEADER) {
                *lock(&self.session_id) = Some(session.clone());
            }
        }
        let status = response.status();
        let streamed = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
        if streamed && status.is_success() {
            return self.stream(&mut response, &method, deliver).await;
        }
        let body = self
            .body(
                &mut response,
                self.max_message.min(if status.is_success() {
                    usize::MAX
                } else {
                    MAX_ERROR_BODY
                }),
            )
            .await?;
        if body.iter().all(u8::is_ascii_whitespace) {
            if status.is_success() {
                return Ok(());
            }
            return Err(McpError::Status {
                method,
                status: status.as_u16(),
            });
        }
        match parse_messages(&body) {
            Ok(messages) => {
                for m in messages {
                    deliver(m);
                }
                Ok(())
            }
            Err(_) if !status.is_success() => Err(McpError::Status {
                method,
                status: status.as_u16(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Sets the protocol version sent on every later request (after `initialize`).
    pub(super) fn set_protocol_version(&self, version: &str) {
        *lock(&self.protocol_version) = Some(version.to_string());
    }

    /// Opens the GET stream of server-initiated messages and hands them to `deliver` until it
    /// ends. A server without one (405) ends at once.
    pub(super) async fn listen(&self, deliver: impl FnMut(Value)) -> Result<(), McpError> {
        let request = self.with_session(
            self.client
                .get(self.url.clone())
                .headers(self.headers.clone())
                .header(ACCEPT, "text/event-stream"),
        );
        let mut response = request
            .send()
            .await
            .map_err(|e| transport(classify_send(e, &self.secrets)))?;
        if !response.status().is_success() {
            return Err(McpError::Status {
                method: "GET".into(),
                status: response.status().as_u16(),
            });
        }
        self.stream(&mut response, "GET", deliver).await
    }

    async fn body(
        &self,
        response: &mut reqwest::Response,
        cap: usize,
    ) -> Result<Vec<u8>, McpError> {
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport(classify_body(e, &self.secrets)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > cap {
                return Err(McpError::TooLarge { limit: cap as u64 });
            }
        }
        Ok(body)
    }

    /// Every message of an SSE stream, until it ends.
    async fn stream(
        &self,
        response: &mut reqwest::Response,
        method: &str,
        mut deliver: impl FnMut(Value),
    ) -> Result<(), McpError> {
        let mut pending: Vec<u8> = Vec::new();
        let mut data: Vec<u8> = Vec::new();
        let mut has_data = false;
        let mut scanned = 0;
        loop {
            let chunk = response
                .chunk()
                .await
                .map_err(|e| transport(classify_body(e, &self.secrets)))?;
            let Some(chunk) = chunk else {
                return Ok(());
            };
            pending.extend_from_slice(&chunk);
            while let Some(pos) = pending[scanned..].iter().position(|b| *b == b'\n') {
                let mut line: Vec<u8> = pending.drain(..=scanned + pos).collect();
                scanned = 0;
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.is_empty() {
                    if has_data && !data.iter().all(u8::is_ascii_whitespace) {
                        for message in parse_messages(&data)? {
                            deliver(message);
                        }
                    }
                    data.clear();
                    has_data = false;
                } else if let Some(rest) = line.strip_prefix(b"data:") {
                    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                    if has_data {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(rest);
                    has_data = true;
                    if data.len() > self.max_message {
                        return Err(McpError::TooLarge {
                            limit: self.max_message as u64,
                        });
                    }
                }
            }
            scanned = pending.len();
            if pending.len() > self.max_message {
                return Err(McpError::Protocol {
                    detail: format!("{method}: an SSE line longer than the message limit"),
                });
            }
        }
    }

    /// Ends the session (DELETE, best effort, briefly).
    pub(super) async fn close(&self) {
        if lock(&self.session_id).is_none() {
            return;
        }
        let request = self.with_session(
            self.client
                .delete(self.url.clone())
                .headers(self.headers.clone()),
        );
        let _ = tokio::time::timeout(DELETE_TIMEOUT, request.send()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::header_safe;

    #[test]
    fn names_unsafe_as_header_values_are_base64_encoded() {
        assert_eq!(header_safe("read_note"), "read_note");
        assert_eq!(header_safe("notes://1"), "notes://1");
        assert_eq!(header_safe("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(header_safe(" x"), "=?base64?IHg=?=");
    }
}
