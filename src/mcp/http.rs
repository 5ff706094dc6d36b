//! The Streamable HTTP transport: one POST per message, answers as JSON or as an SSE stream.
//!
//! Modern requests carry `MCP-Protocol-Version: 2026-07-28` and `Mcp-Method`; legacy ones carry
//! the negotiated version and the `Mcp-Session-Id` the server handed out (ended with DELETE).
//! Redirects are not followed (configured headers may be credentials), proxies come from the
//! config only, and every body counts against the fetch's byte budget.

use super::{
    classify_message, parse_messages, Budget, Era, Incoming, McpError, Reply, MODERN_VERSION,
};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// Bound on an error body read for era detection.
const MAX_ERROR_BODY: usize = 64 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);
const MAX_CA_FILE_BYTES: u64 = 16 * 1024 * 1024;

pub(super) struct HttpConn {
    client: reqwest::Client,
    url: url::Url,
    headers: HeaderMap,
    session_id: Option<HeaderValue>,
    /// The negotiated legacy version (sent after initialize).
    pub(super) protocol_version: Option<String>,
    budget: Budget,
    next_id: i64,
}

fn transport(error: &reqwest::Error) -> McpError {
    let mut detail = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        detail = format!("{detail}: {inner}");
        source = inner.source();
    }
    if error.is_timeout() {
        return McpError::Timeout {
            phase: "HTTP".into(),
        };
    }
    McpError::Transport { detail }
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
        // With `rustls-no-provider`, a client needs a process-wide provider; Err = one exists.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .user_agent(concat!("schemawatch/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT.min(timeout));
        if let Some(path) = ca_file {
            builder = builder.tls_certs_merge(read_ca_file(path).await?);
        }
        builder = match proxy {
            Some(p) => builder.proxy(reqwest::Proxy::all(p).map_err(|_| McpError::Transport {
                detail: "invalid proxy URL".into(),
            })?),
            None => builder.no_proxy(),
        };
        let client = builder.build().map_err(|e| transport(&e.without_url()))?;
        let mut headers = HeaderMap::new();
        for (name, template) in templates {
            let bad = |reason: String| McpError::Header {
                name: name.clone(),
                reason,
            };
            let header_name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("invalid name".into()))?;
            let value =
                crate::fetch::expand_header_value(template).map_err(|e| bad(e.to_string()))?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| bad("invalid value (control characters)".into()))?;
            value.set_sensitive(true);
            headers.insert(header_name, value);
        }
        Ok(HttpConn {
            client,
            url: url.clone(),
            headers,
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
            .map_err(|e| transport(&e.without_url()))?;
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
            .map_err(|e| transport(&e.without_url()))?
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
                .map_err(|e| transport(&e.without_url()))?;
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
            .map_err(|e| transport(&e.without_url()))?;
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

async fn read_ca_file(path: &Path) -> Result<Vec<reqwest::Certificate>, McpError> {
    use tokio::io::AsyncReadExt;
    let bad = |reason: String| McpError::Transport {
        detail: format!("CA file {}: {reason}", path.display()),
    };
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| bad(e.to_string()))?;
    let mut pem = Vec::new();
    file.take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut pem)
        .await
        .map_err(|e| bad(e.to_string()))?;
    if pem.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(bad("too large".into()));
    }
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|_| bad("not a valid PEM bundle".into()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate found".into()));
    }
    Ok(certs)
}
