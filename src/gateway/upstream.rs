//! The gateway's session with the upstream MCP server (stdio, or a legacy Streamable HTTP
//! session), in the `initialize` era or the 2026-07-28 one (every request stamped with the
//! gateway's `_meta`): one writer task feeding the
//! child's stdin, one reader task splitting its stdout into replies (to the gateway's own
//! requests, or to the agent's forwarded ones), server requests and notifications.
//!
//! Request ids toward the upstream are the gateway's own integers: an agent's id is restored
//! on the way back, and the gateway's listings never collide with the agent's requests.

use super::Event;
use crate::mcp::{self, Era, Lister, McpError};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// Who waits for the answer to a request sent upstream.
pub(super) enum Pending {
    /// The gateway (a listing, the handshake).
    Internal(oneshot::Sender<Value>),
    /// The agent: its own id, the method and the item it named.
    Agent {
        id: Value,
        method: String,
        item: Option<String>,
        /// The request as it went upstream (retried with the answers of an input-required
        /// result).
        request: Map<String, Value>,
    },
}

/// What the upstream sent that the gateway's loop handles.
pub(super) enum FromUpstream {
    /// The answer to a forwarded agent request (`message` still carries the upstream id).
    Reply {
        id: Value,
        method: String,
        item: Option<String>,
        request: Map<String, Value>,
        message: Map<String, Value>,
    },
    /// A server → client request (sampling, elicitation, roots, ping).
    Request(Map<String, Value>),
    Notification(Map<String, Value>),
    /// Stdout closed or unreadable: the upstream is gone.
    Closed(String),
}

pub(super) struct Upstream {
    out: mpsc::UnboundedSender<Value>,
    pending: Mutex<HashMap<i64, Pending>>,
    next_id: AtomicI64,
    /// The era the upstream speaks, and (2026-07-28) the `_meta` every request carries.
    era: Mutex<(Era, Option<Value>)>,
    /// How long the gateway waits for an answer to its own request.
    timeout: Duration,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    /// The Streamable HTTP session, when the upstream is a URL.
    http: Option<Arc<mcp::HttpSession>>,
    /// What the transport read, to the dispatcher.
    incoming: mpsc::UnboundedSender<Value>,
}

/// The reader's last word, queued behind everything it read (not a JSON-RPC key).
const CLOSED_MARK: &str = " schemawatch-gateway-upstream-closed";

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The next line of `reader` (without its newline), `None` at the end; a line longer than
/// `max` bytes is an error.
pub(super) async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        if let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            line.extend_from_slice(&buf[..pos]);
            reader.consume(pos + 1);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(line));
        }
        let n = buf.len();
        line.extend_from_slice(buf);
        reader.consume(n);
        if line.len() > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a message is larger than the limit of {max} bytes"),
            ));
        }
    }
}

/// The next message for the upstream; `None` once stopped or every sender is gone.
async fn next_outgoing(
    stop: &mut oneshot::Receiver<()>,
    queue: &mut mpsc::UnboundedReceiver<Value>,
) -> Option<Value> {
    tokio::select! {
        _ = stop => None,
        message = queue.recv() => message,
    }
}

impl Upstream {
    fn new(
        events: mpsc::Sender<Event>,
        timeout: Duration,
        http: Option<Arc<mcp::HttpSession>>,
    ) -> (
        Arc<Upstream>,
        mpsc::UnboundedReceiver<Value>,
        oneshot::Receiver<()>,
        mpsc::UnboundedSender<Value>,
    ) {
        let (out, queue) = mpsc::unbounded_channel::<Value>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (incoming_tx, mut incoming) = mpsc::unbounded_channel::<Value>();
        let upstream = Arc::new(Upstream {
            out,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            era: Mutex::new((Era::Legacy, None)),
            timeout,
            stop: Mutex::new(Some(stop_tx)),
            http,
            incoming: incoming_tx.clone(),
        });
        // One dispatcher for whatever the transport reads, in arrival order.
        let dispatcher = upstream.clone();
        tokio::spawn(async move {
            while let Some(message) = incoming.recv().await {
                if let Some(why) = message.get(CLOSED_MARK).and_then(Value::as_str) {
                    // After everything the upstream wrote before it went away.
                    lock(&dispatcher.pending).clear();
                    if lock(&dispatcher.stop).is_none() {
                        // The gateway closed this session itself (a retry in another era).
                        return;
                    }
                    let _ = events
                        .send(Event::Upstream(FromUpstream::Closed(why.to_string())))
                        .await;
                    return;
                }
                match message {
                    Value::Array(batch) => {
                        for m in batch {
                            dispatcher.dispatch(m, &events).await;
                        }
                    }
                    message => dispatcher.dispatch(message, &events).await,
                }
            }
        });
        (upstream, queue, stop_rx, incoming_tx)
    }

    /// Starts the writer and reader tasks over a stdio child's pipes.
    pub(super) fn start(
        stdin: tokio::process::ChildStdin,
        stdout: tokio::process::ChildStdout,
        events: mpsc::Sender<Event>,
        timeout: Duration,
        max_message: usize,
    ) -> Arc<Upstream> {
        let (upstream, mut queue, mut stop_rx, incoming) =
            Upstream::new(events.clone(), timeout, None);
        // Writer: ends (closing the child's stdin) on stop or when every sender is gone.
        tokio::spawn(async move {
            let mut stdin = stdin;
            loop {
                let Some(message) = next_outgoing(&mut stop_rx, &mut queue).await else {
                    break;
                };
                let Ok(mut line) = serde_json::to_vec(&message) else {
                    continue;
                };
                line.push(b'\n');
                if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        });
        tokio::spawn(async move {
            let mut stdout = tokio::io::BufReader::new(stdout);
            let why = loop {
                match next_line(&mut stdout, max_message).await {
                    Ok(Some(line)) => {
                        if line.iter().all(u8::is_ascii_whitespace) {
                            continue;
                        }
                        match serde_json::from_slice::<Value>(&line) {
                            Ok(message) => {
                                let _ = incoming.send(message);
                            }
                            Err(e) => {
                                tracing::warn!(
                                    event = "gateway_upstream_garbage",
                                    error = %e,
                                    "the upstream wrote a line that is not JSON; ignored"
                                );
                            }
                        }
                    }
                    Ok(None) => break "the upstream closed its output".to_string(),
                    Err(e) => break format!("cannot read the upstream: {e}"),
                }
            };
            // Whoever waits for an internal answer learns the upstream is gone (in order).
            let _ = incoming.send(json!({ CLOSED_MARK: why }));
        });
        upstream
    }

    /// Starts a legacy Streamable HTTP session: each request is a POST of its own (answers
    /// stream back as they come), notifications and answers are POSTed in order.
    pub(super) fn start_http(
        session: mcp::HttpSession,
        events: mpsc::Sender<Event>,
        timeout: Duration,
    ) -> Arc<Upstream> {
        let session = Arc::new(session);
        let (upstream, mut queue, mut stop_rx, incoming) =
            Upstream::new(events, timeout, Some(session.clone()));
        tokio::spawn(async move {
            loop {
                let Some(message) = next_outgoing(&mut stop_rx, &mut queue).await else {
                    break;
                };
                let request_id = message
                    .get("method")
                    .and(message.get("id"))
                    .filter(|id| !id.is_null())
                    .cloned();
                let is_request = request_id.is_some();
                let session = session.clone();
                let incoming = incoming.clone();
                let post = async move {
                    let deliver = |m: Value| {
                        let _ = incoming.send(m);
                    };
                    if let Err(e) = session.post(&message, deliver).await {
                        match request_id {
                            // The request's answer is this failure.
                            Some(id) => {
                                let _ = incoming.send(json!({"jsonrpc": "2.0", "id": id,
                                    "error": {"code": -32603, "message": format!("the upstream MCP server: {e}")}}));
                            }
                            None => {
                                tracing::warn!(event = "gateway_upstream_send_failed", error = %e, "cannot send to the upstream")
                            }
                        }
                    }
                };
                if is_request {
                    tokio::spawn(post);
                } else {
                    post.await;
                }
            }
        });
        upstream
    }

    /// The GET stream of a Streamable HTTP upstream (server-initiated messages such as
    /// list_changed), re-opened while the session lasts; a server without one ends it.
    fn listen_http(self: &Arc<Self>) {
        let Some(session) = self.http.clone() else {
            return;
        };
        let incoming = self.incoming.clone();
        let upstream = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let deliver = |m: Value| {
                    let _ = incoming.send(m);
                };
                let outcome = session.listen(deliver).await;
                let gone = upstream.upgrade().is_none_or(|u| lock(&u.stop).is_none());
                if gone {
                    return;
                }
                if let Err(McpError::Status { status, .. }) = &outcome {
                    if *status == 405 {
                        tracing::info!(event = "gateway_upstream_no_stream", "the upstream has no GET stream: changes are noticed by strict freshness only");
                        return;
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }

    async fn dispatch(&self, message: Value, events: &mpsc::Sender<Event>) {
        let Value::Object(map) = message else {
            return;
        };
        let has_method = map.get("method").is_some_and(Value::is_string);
        let has_id = map.get("id").is_some_and(|id| !id.is_null());
        let event = match (has_method, has_id) {
            (true, true) => FromUpstream::Request(map),
            (true, false) => FromUpstream::Notification(map),
            (false, true) => {
                let Some(id) = map.get("id").and_then(Value::as_i64) else {
                    return;
                };
                let waiting = lock(&self.pending).remove(&id);
                match waiting {
                    Some(Pending::Internal(tx)) => {
                        let _ = tx.send(Value::Object(map));
                        return;
                    }
                    Some(Pending::Agent {
                        id,
                        method,
                        item,
                        request,
                    }) => FromUpstream::Reply {
                        id,
                        method,
                        item,
                        request,
                        message: map,
                    },
                    None => return,
                }
            }
            (false, false) => return,
        };
        let _ = events.send(Event::Upstream(event)).await;
    }

    fn next_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(super) fn era(&self) -> Era {
        lock(&self.era).0
    }

    /// A request's `params` with the upstream's per-request `_meta` (2026-07-28): the agent's
    /// own `_meta` entries (`progressToken`, vendor keys) stay; the protocol entries are the
    /// gateway's.
    fn stamp(&self, message: &mut Map<String, Value>) {
        let Some(meta) = lock(&self.era).1.clone() else {
            return;
        };
        let params = message
            .entry("params")
            .or_insert_with(|| Value::Object(Map::new()));
        if !params.is_object() {
            *params = Value::Object(Map::new());
        }
        if let Value::Object(params) = params {
            let entry = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            if let (Value::Object(entry), Value::Object(meta)) = (entry, meta) {
                for (k, v) in meta {
                    entry.insert(k, v);
                }
            }
        }
    }

    /// Sends a message as it is (notifications, answers to server requests).
    pub(super) fn send(&self, message: Value) -> Result<(), McpError> {
        self.out.send(message).map_err(|_| McpError::Transport {
            detail: "the upstream session is closed".into(),
        })
    }

    /// Forwards an agent's request under a fresh upstream id; returns that id.
    pub(super) fn forward(
        &self,
        mut message: Map<String, Value>,
        agent_id: Value,
        method: &str,
        item: Option<String>,
    ) -> Result<i64, McpError> {
        let id = self.next_id();
        message.insert("id".into(), json!(id));
        let request = message.clone();
        self.stamp(&mut message);
        lock(&self.pending).insert(
            id,
            Pending::Agent {
                id: agent_id,
                method: method.to_string(),
                item,
                request,
            },
        );
        self.send(Value::Object(message))?;
        Ok(id)
    }

    /// Sends the gateway's own request and waits (within the timeout) for its result.
    pub(super) async fn call(&self, method: &str, params: Value) -> Result<Value, McpError> {
        self.call_within(method, params, self.timeout).await
    }

    async fn call_within(
        &self,
        method: &str,
        params: Value,
        within: Duration,
    ) -> Result<Value, McpError> {
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, Pending::Internal(tx));
        let mut message = Map::new();
        message.insert("jsonrpc".into(), json!("2.0"));
        message.insert("id".into(), json!(id));
        message.insert("method".into(), json!(method));
        message.insert("params".into(), params);
        self.stamp(&mut message);
        self.send(Value::Object(message))?;
        let answer = match tokio::time::timeout(within, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => {
                return Err(McpError::Closed {
                    method: method.into(),
                    status: "the upstream closed its output".into(),
                })
            }
            Err(_) => {
                lock(&self.pending).remove(&id);
                return Err(McpError::Timeout {
                    phase: method.into(),
                });
            }
        };
        match mcp::Reply::from_message(&answer) {
            mcp::Reply::Error { code, message, .. } => Err(McpError::Rpc {
                method: method.into(),
                code,
                message,
            }),
            mcp::Reply::Result(result) => Ok(result),
        }
    }

    /// The legacy handshake on the agent's behalf: its protocol version when the gateway
    /// speaks it, its client capabilities as the policy lets through. The upstream's
    /// `initialize` result.
    pub(super) async fn initialize(
        self: &Arc<Self>,
        protocol_version: &str,
        capabilities: Value,
        client_info: Value,
    ) -> Result<Value, McpError> {
        let version = if mcp::LEGACY_VERSIONS.contains(&protocol_version) {
            protocol_version
        } else {
            mcp::LEGACY_VERSION
        };
        let result = self
            .call(
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "clientInfo": client_info,
                }),
            )
            .await?;
        let answered = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !mcp::LEGACY_VERSIONS.contains(&answered) {
            return Err(McpError::UnsupportedVersion {
                offered: answered.to_string(),
            });
        }
        if let Some(http) = &self.http {
            http.set_protocol_version(answered);
        }
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        self.listen_http();
        Ok(result)
    }

    /// The 2026-07-28 probe (the fetcher's era detection): `server/discover` with the
    /// per-request `_meta` carrying the agent's client capabilities as the policy lets them
    /// through. `Some(result)` when the upstream answers in that era (every later request
    /// carries the same `_meta`, and a `subscriptions/listen` stream is opened for its change
    /// announcements); `None` when it does not speak it (any non-modern error, or silence
    /// within `probe`): the legacy handshake follows.
    pub(super) async fn discover(
        self: &Arc<Self>,
        capabilities: Value,
        client_info: Value,
        probe: Duration,
    ) -> Result<Option<Value>, McpError> {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": mcp::MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": client_info,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
        let params = json!({"_meta": meta.clone()});
        match self.call_within("server/discover", params, probe).await {
            Ok(result) => {
                *lock(&self.era) = (Era::Modern, Some(meta));
                let id = self.next_id();
                let mut listen = Map::new();
                listen.insert("jsonrpc".into(), json!("2.0"));
                listen.insert("id".into(), json!(id));
                listen.insert("method".into(), json!("subscriptions/listen"));
                listen.insert(
                    "params".into(),
                    json!({"notifications": {"toolsListChanged": true,
                        "promptsListChanged": true, "resourcesListChanged": true}}),
                );
                // The stream's answer never comes while it is open; nobody waits for it.
                self.stamp(&mut listen);
                self.send(Value::Object(listen))?;
                Ok(Some(result))
            }
            Err(McpError::Rpc {
                method,
                code,
                message,
            }) if mcp::MODERN_ERRORS.contains(&code) => Err(McpError::Rpc {
                method,
                code,
                message,
            }),
            Err(McpError::Rpc { .. }) | Err(McpError::Timeout { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Stops the writer: the child's stdin closes (an MCP server's cue to exit); an HTTP
    /// session is ended (DELETE).
    pub(super) async fn close(&self) {
        if let Some(stop) = lock(&self.stop).take() {
            let _ = stop.send(());
        }
        if let Some(http) = &self.http {
            http.close().await;
        }
    }

    /// The upstream id an agent's request went out under (for `notifications/cancelled`).
    pub(super) fn upstream_id_of(&self, agent_id: &Value) -> Option<i64> {
        lock(&self.pending).iter().find_map(|(k, p)| match p {
            Pending::Agent { id, .. } if id == agent_id => Some(*k),
            _ => None,
        })
    }
}

/// The session as a [`Lister`], for the listing walk the fetcher uses.
pub(super) struct UpstreamLister(pub(super) Arc<Upstream>);

impl Lister for UpstreamLister {
    async fn request(
        &mut self,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, McpError> {
        // The upstream's own `_meta` is added by the session when it speaks 2026-07-28.
        self.0.call(method, Value::Object(params)).await
    }
}
