//! `schemawatch mcp-gateway`: an MCP server on stdio for an agent host, in front of a watch's
//! upstream MCP server, that lets the agent see and call only what a human accepted
//! (docs/design.md "Gateway").
//!
//! The decisions are pure (`core::gateway`); this module is the edge: the agent's stdio (stdout
//! carries only the protocol, logs go to stderr), the upstream session (`upstream.rs`, started
//! exactly as the watch's server, killed and reaped on every exit path), and the accepted
//! contract (`contract.rs`, the registry opened read-only).
//!
//! Flow: the agent's `initialize` (or first 2026-07-28 request) starts the upstream in an era
//! it speaks (the agent's client capabilities, less what the policy refuses), lists
//! everything it offers, fingerprints each item with the MCP
//! normalizer and compares with the accepted contract. Lists are answered from that
//! evaluation (only accepted items); calls to anything else are refused (JSON-RPC invalid
//! params naming the watch, the item and the open review); everything else is forwarded with
//! ids rewritten. An upstream `list_changed` re-lists; a registry commit re-reads the contract;
//! either re-evaluates, and the agent is told `list_changed` only when what it sees moved.

mod contract;
mod upstream;

pub use contract::{contract_json, Accepted, ApiSource};

use crate::config::{Config, SourceConfig};
use crate::core::fingerprint::SpecIndex;
use crate::core::gateway::{
    agent_capabilities, decide_call, decide_input_requests, decide_read, evaluate,
    is_input_required, list_changes, listing_changes, refusal_reason, scan_result,
    withheld_tool_result, Action, Counters, Evaluation, ItemKind, Refusal, ResultPolicy,
    ServerRequest, ServerRequestPolicy, Standing,
};
use crate::core::hidden::escape_hidden;
use crate::core::model::Kind;
use crate::mcp::{Era, McpError, McpRequest, McpResources, StdioServer};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;
use upstream::{FromUpstream, Upstream, UpstreamLister};

/// JSON-RPC invalid params: how the specification answers a call to an unknown tool.
pub const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;
const INTERNAL_ERROR: i64 = -32603;

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("no watch named {watch:?} in the config")]
    NoWatch { watch: String },
    #[error("watch {watch} is of kind {kind}, not mcp: the gateway fronts MCP servers only")]
    NotMcp { watch: String, kind: Kind },
    #[error("watch {watch} reads a saved snapshot file, not a server: there is nothing to front")]
    NoServer { watch: String },
    #[error("cannot open registry {path} read-only: {source}")]
    Registry {
        path: String,
        source: crate::registry::RegistryError,
    },
    #[error("cannot read the accepted contract of watch {watch}: {source}")]
    RegistryRead {
        watch: String,
        source: crate::registry::RegistryError,
    },
    #[error("watch {watch} has no accepted contract in the registry yet (run `schemawatch check --config ... {watch}` or the daemon once, and accept it)")]
    NoContract { watch: String },
    #[error("the accepted contract of watch {watch} was fingerprinted with FINGERPRINT_VERSION {found}, this gateway computes version {supported}; the gateway does not write the registry: run a read-write command of this release (e.g. `schemawatch status`) on it first")]
    FingerprintVersion {
        watch: String,
        found: i64,
        supported: i64,
    },
    #[error("upstream MCP server of watch {watch}: {source}")]
    Upstream { watch: String, source: McpError },
    #[error("cannot start the registry watcher: {0}")]
    Thread(std::io::Error),
    #[error("the daemon's API: {detail}")]
    Api { detail: String },
    #[error("the daemon's registry schema is version {found}, this gateway's is {supported}: run a gateway of the daemon's release")]
    Schema { found: i64, supported: i64 },
}

/// `--freshness`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Freshness {
    /// Trust the last upstream listing until the upstream announces a change.
    #[default]
    Cached,
    /// Re-list everything before each call (MCP has no "get one tool").
    Strict,
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Enforce,
    /// Pass everything; log and count what enforcement would have withheld.
    Report,
}

/// How the gateway runs.
#[derive(Clone, Debug)]
pub struct Options {
    pub watch: String,
    pub freshness: Freshness,
    pub mode: Mode,
    pub results: ResultPolicy,
    pub server_requests: ServerRequestPolicy,
    /// How often the counters summary is logged (and once at exit).
    pub summary_every: Duration,
    /// How long list_changed notifications to the agent are held to coalesce.
    pub debounce: Duration,
    /// How often the registry is checked for commits.
    pub poll_every: Duration,
    /// The daemon's API: the contract source when `contract_from_api`, and where a drift
    /// asks for a refresh of the watch when it holds a refresh token.
    pub api: Option<ApiSource>,
    pub contract_from_api: bool,
    /// How often the API is asked for the contract.
    pub api_poll_every: Duration,
}

impl Options {
    pub fn new(watch: &str) -> Options {
        Options {
            watch: watch.to_string(),
            freshness: Freshness::Cached,
            mode: Mode::Enforce,
            results: ResultPolicy::default(),
            server_requests: ServerRequestPolicy::default(),
            summary_every: Duration::from_secs(300),
            debounce: Duration::from_millis(100),
            poll_every: Duration::from_millis(500),
            api: None,
            contract_from_api: false,
            api_poll_every: Duration::from_secs(2),
        }
    }
}

/// Why the gateway stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The agent host closed stdin.
    AgentClosed,
    /// A signal (SIGTERM, SIGINT).
    Signal(&'static str),
    /// The upstream exited or closed its output.
    UpstreamClosed(String),
}

/// What the loop waits for.
enum Event {
    Upstream(FromUpstream),
    /// A listing finished (`seq` orders them); `then` is a call waiting for it (strict).
    Listed {
        seq: u64,
        result: Result<Listing, String>,
        then: Option<Map<String, Value>>,
    },
    /// The registry's accepted contract changed (or could not be read).
    Contract(Result<Accepted, String>),
}

/// One upstream listing: the items in server order (as listed) and their fingerprints.
struct Listing {
    items: BTreeMap<ItemKind, Vec<(String, Value)>>,
    fingerprints: BTreeMap<String, String>,
}

/// The upstream target and bounds of the watch.
fn upstream_request(config: &Config, watch: &str) -> Result<McpRequest, GatewayError> {
    let w = config.watch(watch).ok_or_else(|| GatewayError::NoWatch {
        watch: watch.to_string(),
    })?;
    if w.kind != Kind::Mcp {
        return Err(GatewayError::NotMcp {
            watch: watch.to_string(),
            kind: w.kind,
        });
    }
    let target = match &w.source {
        SourceConfig::Command { argv, env } => crate::mcp::Target::Stdio {
            argv: argv.clone(),
            env: env.clone(),
        },
        SourceConfig::Url(url) => crate::mcp::Target::Http {
            url: url.clone(),
            headers: w.schema_headers.clone(),
            ca_file: w.ca_file.clone(),
            proxy: w.proxy.clone(),
        },
        SourceConfig::Path(_) => {
            return Err(GatewayError::NoServer {
                watch: watch.to_string(),
            })
        }
    };
    let mut request = McpRequest::bounded(target, w.timeout, w.max_bytes);
    request.resources = w.mcp_resources;
    request.max_tools = Some(w.max_endpoints);
    Ok(request)
}

/// Checks everything that can be checked before the agent speaks: the watch, its upstream,
/// the contract source and the accepted contract. What [`run`] needs.
pub async fn prepare(config: &Config, options: &Options) -> Result<Prepared, GatewayError> {
    let request = upstream_request(config, &options.watch)?;
    if options.contract_from_api {
        let api = options.api.as_ref().ok_or_else(|| GatewayError::Api {
            detail: "no API address".into(),
        })?;
        let accepted = api.fetch(&options.watch).await?;
        return Ok(Prepared {
            request,
            registry: None,
            accepted,
        });
    }
    let registry = contract::open(&config.storage.location)?;
    let accepted = contract::load(&registry, &options.watch)?;
    Ok(Prepared {
        request,
        registry: Some(registry),
        accepted,
    })
}

/// A gateway ready to run ([`prepare`]).
pub struct Prepared {
    request: McpRequest,
    /// `None`: the contract comes from the API.
    registry: Option<crate::registry::Registry>,
    accepted: Accepted,
}

/// Runs the gateway over the agent's `input` / `output` until the agent closes its side, a
/// signal arrives on `signals`, or the upstream goes away. The upstream child is killed and
/// reaped on every path. The counters are logged at exit.
pub async fn run<R, W>(
    prepared: Prepared,
    options: Options,
    input: R,
    output: W,
    mut signals: mpsc::Receiver<&'static str>,
) -> Result<(Stop, Counters), GatewayError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Prepared {
        request,
        registry,
        accepted,
    } = prepared;
    let (events_tx, mut events) = mpsc::channel::<Event>(256);
    match (registry, &options.api) {
        (Some(registry), _) => contract::watch(
            registry,
            options.watch.clone(),
            options.poll_every,
            accepted.clone(),
            events_tx.clone(),
        )
        .map_err(GatewayError::Thread)?,
        (None, Some(api)) => contract::poll_api(
            api.clone(),
            options.watch.clone(),
            options.api_poll_every,
            accepted.clone(),
            events_tx.clone(),
        ),
        (None, None) => {}
    }
    let max_message = usize::try_from(request.max_bytes).unwrap_or(usize::MAX);

    // The agent's side: a reader task and a writer task, so the loop never blocks on either.
    let (agent_tx, agent_rx) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(write_agent(output, agent_rx));
    let (incoming_tx, mut incoming) = mpsc::channel::<FromAgent>(64);
    tokio::spawn(read_agent(input, incoming_tx, max_message));

    let mut gateway = Gateway {
        options,
        request,
        accepted,
        evaluation: Evaluation::default(),
        listing_items: BTreeMap::new(),
        upstream: None,
        server: None,
        agent: agent_tx,
        events: events_tx,
        counters: Counters::default(),
        capabilities: None,
        server_info: json!({"name": "schemawatch-mcp-gateway", "version": env!("CARGO_PKG_VERSION")}),
        agent_era: None,
        listeners: Vec::new(),
        initialized: false,
        seq: 0,
        applied_seq: 0,
        relisting: false,
        relist_again: false,
        owed: BTreeSet::new(),
        notify_at: None,
        rounds: BTreeMap::new(),
        round_ids: BTreeMap::new(),
        next_round: 0,
    };
    let mut summary = tokio::time::interval_at(
        Instant::now() + gateway.options.summary_every,
        gateway.options.summary_every,
    );
    let mut signals_open = true;
    let stop = loop {
        let notify_at = gateway.notify_at;
        tokio::select! {
            message = incoming.recv() => match message {
                Some(FromAgent::Message(message)) => gateway.on_agent(message).await,
                Some(FromAgent::Garbage(e)) => gateway.to_agent(error_reply(Value::Null, -32700, &format!("parse error: {e}"))),
                Some(FromAgent::Closed) | None => break Stop::AgentClosed,
            },
            event = events.recv() => match event {
                Some(Event::Upstream(FromUpstream::Closed(why))) => break Stop::UpstreamClosed(why),
                Some(event) => gateway.on_event(event),
                None => {}
            },
            signal = signals.recv(), if signals_open => match signal {
                Some(name) => break Stop::Signal(name),
                // No more signals can come: stop polling a closed channel.
                None => signals_open = false,
            },
            _ = sleep_until(notify_at) => gateway.notify_agent(),
            _ = summary.tick() => {
                tracing::info!(event = "gateway_summary", watch = %gateway.options.watch, counters = %gateway.counters, "counters");
            }
        }
    };
    // Every exit path: stop the upstream (stdin first, then the whole family) and reap it.
    if let Some(upstream) = gateway.upstream.take() {
        upstream.close().await;
    }
    if let Some(server) = gateway.server.take() {
        server.close().await;
    }
    let counters = gateway.counters.clone();
    tracing::info!(event = "gateway_summary", watch = %gateway.options.watch, counters = %counters, stop = ?stop, "gateway stopped");
    drop(gateway);
    // Whatever the agent is owed is flushed before returning.
    let _ = writer.await;
    Ok((stop, counters))
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn write_agent<W: AsyncWrite + Unpin>(
    mut output: W,
    mut queue: mpsc::UnboundedReceiver<Value>,
) {
    while let Some(message) = queue.recv().await {
        let Ok(mut line) = serde_json::to_vec(&message) else {
            continue;
        };
        line.push(b'\n');
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

/// What the agent's input holds.
enum FromAgent {
    Message(Value),
    /// A line that is not JSON (answered with a parse error).
    Garbage(String),
    /// The end of its input (or an unreadable one).
    Closed,
}

/// Reads the agent's messages until the end of its input.
async fn read_agent<R: AsyncRead + Unpin>(input: R, out: mpsc::Sender<FromAgent>, max: usize) {
    let mut input = tokio::io::BufReader::new(input);
    loop {
        match upstream::next_line(&mut input, max).await {
            Ok(Some(line)) if line.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(Some(line)) => {
                let message = match serde_json::from_slice::<Value>(&line) {
                    Ok(message) => FromAgent::Message(message),
                    Err(e) => FromAgent::Garbage(e.to_string()),
                };
                if out.send(message).await.is_err() {
                    return;
                }
            }
            Ok(None) | Err(_) => {
                let _ = out.send(FromAgent::Closed).await;
                return;
            }
        }
    }
}

struct Gateway {
    options: Options,
    request: McpRequest,
    accepted: Accepted,
    /// The last evaluation of the upstream's items against the accepted contract.
    evaluation: Evaluation,
    /// The items of the last listing, in server order, as listed.
    listing_items: BTreeMap<ItemKind, Vec<(String, Value)>>,
    upstream: Option<Arc<Upstream>>,
    server: Option<StdioServer>,
    agent: mpsc::UnboundedSender<Value>,
    events: mpsc::Sender<Event>,
    counters: Counters,
    /// The upstream's declared capabilities and server info.
    capabilities: Option<Value>,
    server_info: Value,
    /// The agent's protocol era (set by its first request).
    agent_era: Option<Era>,
    /// Open `subscriptions/listen` streams (2026-07-28 agents): id and the notifications each
    /// asked for.
    listeners: Vec<(Value, BTreeSet<&'static str>)>,
    initialized: bool,
    /// Listings started / the newest applied.
    seq: u64,
    applied_seq: u64,
    /// A cached-mode re-listing is running; another change was announced meanwhile.
    relisting: bool,
    relist_again: bool,
    /// list_changed notifications owed to the agent, sent at `notify_at` (debounced).
    owed: BTreeSet<&'static str>,
    notify_at: Option<Instant>,
    /// Input-required rounds translated into server requests for a legacy agent, by number.
    rounds: BTreeMap<u64, Round>,
    /// The ids of those server requests: the round and the input request's key.
    round_ids: BTreeMap<String, (u64, String)>,
    next_round: u64,
}

/// A 2026-07-28 upstream's `input_required` result, asked of a legacy agent as server
/// requests; when every answer is in, the original request is retried with them.
struct Round {
    agent_id: Value,
    method: String,
    item: Option<String>,
    request: Map<String, Value>,
    request_state: Option<Value>,
    waiting: usize,
    responses: Map<String, Value>,
}

/// Whether a request is of the 2026-07-28 era (its `_meta` names the protocol version).
fn is_modern(message: &Map<String, Value>) -> bool {
    message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .is_some()
}

/// Drops the 2026-07-28 per-request `_meta` entries before a request goes to the (legacy)
/// upstream; the rest (`progressToken`, vendor keys) stays.
fn strip_modern_meta(message: &mut Map<String, Value>) {
    let Some(Value::Object(params)) = message.get_mut("params") else {
        return;
    };
    let empty = match params.get_mut("_meta") {
        Some(Value::Object(meta)) => {
            meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
            meta.is_empty()
        }
        _ => false,
    };
    if empty {
        params.remove("_meta");
    }
}

fn error_reply(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

impl Gateway {
    fn to_agent(&self, message: Value) {
        let _ = self.agent.send(message);
    }

    fn report(&self) -> bool {
        self.options.mode == Mode::Report
    }

    async fn on_agent(&mut self, message: Value) {
        let message = match message {
            Value::Array(batch) => {
                for m in batch {
                    Box::pin(self.on_agent(m)).await;
                }
                return;
            }
            Value::Object(map) => map,
            _ => {
                self.to_agent(error_reply(Value::Null, -32600, "invalid request"));
                return;
            }
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(String::from);
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        match (method, id) {
            (Some(method), Some(id)) => self.agent_request(method, id, message).await,
            (Some(method), None) => self.agent_notification(&method, message),
            // An answer to a server request: the upstream's id space, forwarded as it is;
            // or one of the gateway's own (an input-required round).
            (None, Some(id)) => {
                if let Some(round) = id.as_str().and_then(|k| self.round_ids.remove(k)) {
                    self.round_answer(round, &message);
                } else if let Some(upstream) = &self.upstream {
                    let _ = upstream.send(Value::Object(message));
                }
            }
            (None, None) => {}
        }
    }

    fn agent_notification(&mut self, method: &str, mut message: Map<String, Value>) {
        let Some(upstream) = &self.upstream else {
            return;
        };
        match method {
            // The gateway completed the upstream's handshake itself.
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let agent_id = message
                    .get("params")
                    .and_then(|p| p.get("requestId"))
                    .cloned()
                    .unwrap_or(Value::Null);
                if let Some(i) = self.listeners.iter().position(|(id, _)| *id == agent_id) {
                    self.listeners.remove(i);
                    return;
                }
                if let Some(up) = upstream.upstream_id_of(&agent_id) {
                    if let Some(Value::Object(params)) = message.get_mut("params") {
                        params.insert("requestId".into(), json!(up));
                    }
                    let _ = upstream.send(Value::Object(message));
                }
            }
            _ => {
                let _ = upstream.send(Value::Object(message));
            }
        }
    }

    async fn agent_request(&mut self, method: String, id: Value, mut message: Map<String, Value>) {
        let modern = is_modern(&message);
        if method == "initialize" {
            self.agent_era = Some(Era::Legacy);
            self.initialize(id, &message).await;
            return;
        }
        if (modern || method == "server/discover") && self.upstream.is_none() {
            // The 2026-07-28 era: no handshake; the first request carries what initialize would.
            self.agent_era = Some(Era::Modern);
            let meta = message
                .get("params")
                .and_then(|p| p.get("_meta"))
                .cloned()
                .unwrap_or(Value::Null);
            let capabilities = meta
                .get("io.modelcontextprotocol/clientCapabilities")
                .cloned()
                .unwrap_or(Value::Null);
            let client_info = meta.get("io.modelcontextprotocol/clientInfo").cloned();
            if let Err(e) = self
                .start_upstream(crate::mcp::LEGACY_VERSION, &capabilities, client_info)
                .await
            {
                self.upstream_failed(id, &e).await;
                return;
            }
            self.initialized = true;
        }
        if modern {
            strip_modern_meta(&mut message);
        }
        match method.as_str() {
            "ping" => self.to_agent(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            _ if self.upstream.is_none() => self.to_agent(error_reply(
                id,
                METHOD_NOT_FOUND,
                "schemawatch mcp-gateway: send initialize (or server/discover) first",
            )),
            "server/discover" => self.answer_discover(id),
            "subscriptions/listen" => self.listen(id, &message),
            "tools/list" => self.answer_list(id, ItemKind::Tool),
            "prompts/list" => self.answer_list(id, ItemKind::Prompt),
            "resources/templates/list" => self.answer_list(id, ItemKind::ResourceTemplate),
            "resources/list" => self.answer_list(id, ItemKind::Resource),
            "tools/call" | "prompts/get" | "resources/read" => {
                if self.options.freshness == Freshness::Strict {
                    self.start_listing(Some(message));
                } else {
                    self.call(message);
                }
            }
            _ => self.forward(message, id, &method, None),
        }
    }

    fn modern_agent(&self) -> bool {
        self.agent_era == Some(Era::Modern)
    }

    /// `server/discover` (2026-07-28): the filtered capabilities and the accepted
    /// instructions, as `initialize` answers them.
    fn answer_discover(&mut self, id: Value) {
        let mut result = Map::new();
        result.insert("resultType".into(), json!("complete"));
        result.insert(
            "supportedVersions".into(),
            json!([crate::mcp::MODERN_VERSION]),
        );
        result.insert(
            "capabilities".into(),
            agent_capabilities(self.capabilities.as_ref()),
        );
        if let Some(text) = &self.accepted.instructions {
            result.insert("instructions".into(), json!(text));
        }
        result.insert("ttlMs".into(), json!(0));
        result.insert("cacheScope".into(), json!("private"));
        result.insert(
            "_meta".into(),
            json!({"io.modelcontextprotocol/serverInfo": self.server_info.clone()}),
        );
        self.to_agent(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// `subscriptions/listen` (2026-07-28): acknowledged with the honored subset (the list
    /// changes the gateway itself decides); the stream stays open and carries the gateway's
    /// list_changed notifications, stamped with the subscription id.
    fn listen(&mut self, id: Value, message: &Map<String, Value>) {
        let wanted = message
            .get("params")
            .and_then(|p| p.get("notifications"))
            .cloned()
            .unwrap_or(Value::Null);
        let mut honored = Map::new();
        let mut kinds = BTreeSet::new();
        for (key, notification) in [
            ("toolsListChanged", ItemKind::Tool.list_changed()),
            ("promptsListChanged", ItemKind::Prompt.list_changed()),
            ("resourcesListChanged", ItemKind::Resource.list_changed()),
        ] {
            if wanted.get(key) == Some(&Value::Bool(true)) {
                honored.insert(key.into(), json!(true));
                kinds.insert(notification);
            }
        }
        self.to_agent(json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}, "notifications": honored}}));
        self.listeners.push((id, kinds));
    }

    /// A failed start: the half-started upstream is stopped (the agent may try again).
    async fn upstream_failed(&mut self, id: Value, e: &McpError) {
        tracing::error!(event = "gateway_upstream_failed", watch = %self.options.watch, error = %e, "cannot start the upstream");
        self.drop_upstream().await;
        self.agent_era = None;
        self.to_agent(error_reply(
            id,
            INTERNAL_ERROR,
            &format!(
                "schemawatch mcp-gateway: upstream MCP server of watch {}: {e}",
                self.options.watch
            ),
        ));
    }

    fn forward(
        &mut self,
        message: Map<String, Value>,
        id: Value,
        method: &str,
        item: Option<String>,
    ) {
        let Some(upstream) = &self.upstream else {
            return;
        };
        if upstream.forward(message, id.clone(), method, item).is_err() {
            self.to_agent(error_reply(
                id,
                INTERNAL_ERROR,
                "the upstream MCP server is gone",
            ));
        }
    }

    /// Starts the upstream, lists it, evaluates, and answers the agent's `initialize`.
    async fn initialize(&mut self, id: Value, message: &Map<String, Value>) {
        if self.upstream.is_some() {
            self.to_agent(error_reply(id, -32600, "already initialized"));
            return;
        }
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let version = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or(crate::mcp::LEGACY_VERSION)
            .to_string();
        let capabilities = params.get("capabilities").cloned().unwrap_or(Value::Null);
        let client_info = params.get("clientInfo").cloned();
        match self
            .start_upstream(&version, &capabilities, client_info)
            .await
        {
            Ok(version) => {
                self.initialized = true;
                let mut answer = Map::new();
                answer.insert("protocolVersion".into(), json!(version));
                answer.insert(
                    "capabilities".into(),
                    agent_capabilities(self.capabilities.as_ref()),
                );
                answer.insert("serverInfo".into(), self.server_info.clone());
                // The accepted instructions, never the live ones.
                if let Some(text) = &self.accepted.instructions {
                    answer.insert("instructions".into(), json!(text));
                }
                self.to_agent(json!({"jsonrpc": "2.0", "id": id, "result": answer}));
            }
            Err(e) => self.upstream_failed(id, &e).await,
        }
    }

    /// Spawns (stdio) or opens (HTTP) the upstream session, exactly as the watch's server.
    async fn open_upstream(&mut self) -> Result<Arc<Upstream>, McpError> {
        let max_message = usize::try_from(self.request.max_bytes).unwrap_or(usize::MAX);
        let upstream = match &self.request.target {
            crate::mcp::Target::Stdio { argv, env } => {
                let (server, stdin, stdout) =
                    StdioServer::spawn(argv, env, self.request.timeout).await?;
                self.server = Some(server);
                Upstream::start(
                    stdin,
                    stdout,
                    self.events.clone(),
                    self.request.timeout,
                    max_message,
                )
            }
            crate::mcp::Target::Http {
                url,
                headers,
                ca_file,
                proxy,
            } => {
                let session = crate::mcp::HttpSession::new(
                    url,
                    headers,
                    ca_file.as_deref(),
                    proxy.as_deref(),
                    self.request.timeout,
                    max_message,
                )
                .await?;
                Upstream::start_http(session, self.events.clone(), self.request.timeout)
            }
        };
        self.upstream = Some(upstream.clone());
        Ok(upstream)
    }

    /// Stops a half-started upstream session (before another attempt).
    async fn drop_upstream(&mut self) {
        if let Some(upstream) = self.upstream.take() {
            upstream.close().await;
        }
        if let Some(server) = self.server.take() {
            server.close().await;
        }
    }

    /// Starts the upstream in an era it speaks, lists and evaluates it. The era follows the
    /// agent's where the upstream speaks both (so server requests need no translation): a
    /// 2026-07-28 agent probes with `server/discover` first (the fetcher's negotiation: a
    /// legacy upstream's error or silence falls back to `initialize`); a legacy agent does
    /// the `initialize` handshake, and a stdio upstream that refuses it (a 2026-07-28-only
    /// server) is started again and probed with `server/discover`. A Streamable HTTP
    /// upstream is always a legacy session. The protocol version to tell a legacy agent.
    async fn start_upstream(
        &mut self,
        version: &str,
        capabilities: &Value,
        client_info: Option<Value>,
    ) -> Result<String, McpError> {
        let capabilities = self
            .options
            .server_requests
            .client_capabilities(capabilities);
        let client_info = client_info.unwrap_or_else(
            || json!({"name": "schemawatch-mcp-gateway", "version": env!("CARGO_PKG_VERSION")}),
        );
        let stdio = matches!(self.request.target, crate::mcp::Target::Stdio { .. });
        let agent_version = if crate::mcp::LEGACY_VERSIONS.contains(&version) {
            version.to_string()
        } else {
            crate::mcp::LEGACY_VERSION.to_string()
        };
        let mut upstream = self.open_upstream().await?;
        let mut modern = None;
        if stdio && self.modern_agent() {
            modern = upstream
                .discover(
                    capabilities.clone(),
                    client_info.clone(),
                    self.request.probe_timeout,
                )
                .await?;
        }
        let answered = match modern {
            Some(discovered) => {
                self.adopt_discovered(&discovered);
                agent_version
            }
            None => {
                match upstream
                    .initialize(version, capabilities.clone(), client_info.clone())
                    .await
                {
                    Ok(result) => self.adopt_initialized(&result),
                    Err(e @ (McpError::Rpc { .. } | McpError::UnsupportedVersion { .. }))
                        if stdio && !self.modern_agent() =>
                    {
                        // Perhaps a 2026-07-28-only server: a fresh process, probed.
                        tracing::info!(event = "gateway_upstream_era", watch = %self.options.watch, error = %e, "the upstream refused initialize; probing the 2026-07-28 era");
                        self.drop_upstream().await;
                        upstream = self.open_upstream().await?;
                        match upstream
                            .discover(capabilities, client_info, self.request.probe_timeout)
                            .await?
                        {
                            Some(discovered) => {
                                self.adopt_discovered(&discovered);
                                agent_version
                            }
                            None => return Err(e),
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        tracing::info!(event = "gateway_upstream_started", watch = %self.options.watch, era = ?upstream.era(), "the upstream session is open");
        // The first listing, before the agent sees anything.
        self.seq += 1;
        let listing = list(
            upstream,
            &self.request,
            self.capabilities.clone(),
            &self.options.watch,
        )
        .await;
        self.apply_listing(self.seq, listing);
        Ok(answered)
    }

    /// The upstream's capabilities and server info from its `initialize` result; the
    /// protocol version it agreed.
    fn adopt_initialized(&mut self, result: &Value) -> String {
        self.capabilities = result
            .get("capabilities")
            .filter(|c| c.is_object())
            .cloned();
        if let Some(info) = result.get("serverInfo").filter(|i| i.is_object()) {
            self.server_info = info.clone();
        }
        result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or(crate::mcp::LEGACY_VERSION)
            .to_string()
    }

    /// The upstream's capabilities and server info from its `server/discover` result.
    fn adopt_discovered(&mut self, result: &Value) {
        self.capabilities = result
            .get("capabilities")
            .filter(|c| c.is_object())
            .cloned();
        if let Some(info) = result
            .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
            .or_else(|| result.get("serverInfo"))
            .filter(|i| i.is_object())
        {
            self.server_info = info.clone();
        }
    }

    /// Answers a `*/list` from the last evaluation: only accepted items (every item in
    /// `--mode report`), in server order, one page.
    fn answer_list(&mut self, id: Value, kind: ItemKind) {
        let declared = self
            .capabilities
            .as_ref()
            .and_then(|c| c.get(kind.capability()))
            .is_some_and(Value::is_object);
        if !declared {
            self.to_agent(error_reply(
                id,
                METHOD_NOT_FOUND,
                &format!("the upstream does not offer {}", kind.list_method()),
            ));
            return;
        }
        let items: Vec<Value> = self
            .listing_items
            .get(&kind)
            .map(|items| {
                items
                    .iter()
                    .filter(|(name, _)| self.report() || self.evaluation.is_visible(kind, name))
                    .map(|(_, item)| item.clone())
                    .collect()
            })
            .unwrap_or_default();
        let mut result = Map::new();
        result.insert(kind.list_key().into(), Value::Array(items));
        if self.modern_agent() {
            // Required on 2026-07-28 list results; the gateway's own answer is never cached.
            result.insert("resultType".into(), json!("complete"));
            result.insert("ttlMs".into(), json!(0));
            result.insert("cacheScope".into(), json!("private"));
        }
        self.to_agent(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// A `tools/call`, `prompts/get` or `resources/read`: forwarded when the item is accepted.
    fn call(&mut self, message: Map<String, Value>) {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let params = message.get("params");
        let (kind, key) = match method.as_str() {
            "tools/call" => (ItemKind::Tool, "name"),
            "prompts/get" => (ItemKind::Prompt, "name"),
            _ => (ItemKind::Resource, "uri"),
        };
        let Some(item) = params
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .map(String::from)
        else {
            self.to_agent(error_reply(
                id,
                INVALID_PARAMS,
                &format!("{method}: params.{key} must be a string"),
            ));
            return;
        };
        let decision = match kind {
            ItemKind::Resource => decide_read(&self.evaluation, &item),
            _ => decide_call(&self.evaluation, kind, &item),
        };
        if let Err(refusal) = decision {
            if self.report() {
                self.counters.would_refuse += 1;
                self.log_refusal(&refusal, true);
            } else {
                self.counters.refused_calls += 1;
                self.log_refusal(&refusal, false);
                self.to_agent(error_reply(
                    id,
                    INVALID_PARAMS,
                    &refusal.message(&self.options.watch, self.accepted.review),
                ));
                return;
            }
        }
        self.counters.forwarded_calls += 1;
        self.forward(message, id, &method, Some(item));
    }

    fn log_refusal(&self, refusal: &Refusal, report_only: bool) {
        tracing::warn!(
            event = if report_only { "gateway_would_refuse" } else { "gateway_call_refused" },
            watch = %self.options.watch,
            kind = refusal.kind.label(),
            item = %escape_hidden(&refusal.item),
            standing = refusal.standing.map(Standing::as_str).unwrap_or("unknown"),
            review = ?self.accepted.review,
            "call to an item that is not accepted"
        );
    }

    fn on_event(&mut self, event: Event) {
        match event {
            Event::Upstream(FromUpstream::Reply {
                id,
                method,
                item,
                request,
                message,
            }) => {
                if message.get("result").is_some_and(is_input_required) {
                    self.input_required(id, &method, item, request, message);
                } else {
                    self.upstream_reply(id, &method, item, message);
                }
            }
            Event::Upstream(FromUpstream::Request(message)) => self.server_request(message),
            Event::Upstream(FromUpstream::Notification(message)) => {
                self.upstream_notification(message)
            }
            Event::Upstream(FromUpstream::Closed(_)) => {}
            Event::Listed { seq, result, then } => {
                self.apply_listing(seq, result);
                if then.is_none() {
                    self.relisting = false;
                    if std::mem::take(&mut self.relist_again) {
                        self.relisting = true;
                        self.start_listing(None);
                    }
                }
                if let Some(message) = then {
                    self.call(message);
                }
            }
            Event::Contract(Ok(accepted)) => {
                tracing::info!(event = "gateway_contract_changed", watch = %self.options.watch, version = accepted.version, review = ?accepted.review, "the accepted contract changed");
                self.accepted = accepted;
                let after = evaluate(&self.accepted.fingerprints, &self.evaluation.current);
                self.adopt(after);
            }
            Event::Contract(Err(e)) => {
                tracing::error!(event = "gateway_contract_unreadable", watch = %self.options.watch, error = %e, "cannot read the accepted contract; keeping the last one");
            }
        }
    }

    /// A listing in the background; its result arrives as [`Event::Listed`].
    fn start_listing(&mut self, then: Option<Map<String, Value>>) {
        let Some(upstream) = self.upstream.clone() else {
            return;
        };
        self.seq += 1;
        let seq = self.seq;
        let request = self.request.clone();
        let capabilities = self.capabilities.clone();
        let watch = self.options.watch.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            let result = list(upstream, &request, capabilities, &watch).await;
            let _ = events.send(Event::Listed { seq, result, then }).await;
        });
    }

    fn apply_listing(&mut self, seq: u64, listing: Result<Listing, String>) {
        self.counters.listings += 1;
        if seq <= self.applied_seq {
            return;
        }
        self.applied_seq = seq;
        let after = match listing {
            Ok(listing) => {
                self.listing_items = listing.items;
                evaluate(&self.accepted.fingerprints, &listing.fingerprints)
            }
            Err(e) => {
                // Nothing verified: nothing visible (fail closed) until a listing succeeds.
                tracing::error!(event = "gateway_listing_failed", watch = %self.options.watch, error = %e, "cannot list the upstream; withholding everything");
                self.listing_items.clear();
                evaluate(&self.accepted.fingerprints, &BTreeMap::new())
            }
        };
        self.adopt(after);
    }

    /// Takes a new evaluation: logs and counts newly withheld items, owes the agent the
    /// list_changed notifications of what it sees.
    fn adopt(&mut self, after: Evaluation) {
        let before_withheld: BTreeSet<(String, Option<String>)> = self
            .evaluation
            .withheld()
            .into_iter()
            .map(|(k, id, _)| {
                let identity = k.identity(id);
                let fp = self.evaluation.current.get(&identity).cloned();
                (identity, fp)
            })
            .collect();
        let mut drifted = false;
        for (kind, item, standing) in after.withheld() {
            let identity = kind.identity(item);
            if before_withheld.contains(&(identity.clone(), after.current.get(&identity).cloned()))
            {
                continue;
            }
            drifted = true;
            if self.report() {
                self.counters.would_withhold += 1;
            } else {
                self.counters.withheld_items += 1;
            }
            tracing::warn!(
                event = if self.report() { "gateway_would_withhold" } else { "gateway_item_withheld" },
                watch = %self.options.watch,
                kind = kind.label(),
                item = %escape_hidden(item),
                standing = standing.as_str(),
                review = ?self.accepted.review,
                "an upstream item is not the accepted one"
            );
        }
        if drifted && self.initialized {
            self.request_refresh();
        }
        let owed = if self.report() {
            // The agent sees every item in report mode: what is listed is what it sees.
            listing_changes(&self.evaluation, &after)
        } else {
            list_changes(&self.evaluation, &after)
        };
        self.evaluation = after;
        if self.initialized && !owed.is_empty() {
            self.owed.extend(owed);
            if self.notify_at.is_none() {
                self.notify_at = Some(Instant::now() + self.options.debounce);
            }
        }
    }

    /// Asks the daemon to refresh the watch, so the drift gets its review (when an API with
    /// a refresh token is configured; without a daemon, the next `schemawatch check` does).
    fn request_refresh(&self) {
        let Some(api) = self
            .options
            .api
            .clone()
            .filter(|a| a.refresh_token.is_some())
        else {
            return;
        };
        let watch = self.options.watch.clone();
        tokio::spawn(async move {
            match api.request_refresh(&watch).await {
                Ok(()) => {
                    tracing::info!(event = "gateway_refresh_requested", watch = %watch, "asked the daemon to refresh the watch")
                }
                Err(e) => {
                    tracing::warn!(event = "gateway_refresh_failed", watch = %watch, error = %e, "cannot ask the daemon to refresh the watch")
                }
            }
        });
    }

    fn notify_agent(&mut self) {
        self.notify_at = None;
        for method in std::mem::take(&mut self.owed) {
            if self.modern_agent() {
                for (id, kinds) in &self.listeners {
                    if kinds.contains(method) {
                        self.to_agent(json!({"jsonrpc": "2.0", "method": method,
                            "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}}}));
                    }
                }
            } else {
                self.to_agent(json!({"jsonrpc": "2.0", "method": method}));
            }
        }
    }

    fn upstream_notification(&mut self, message: Map<String, Value>) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match method {
            "notifications/tools/list_changed"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed" => {
                tracing::info!(event = "gateway_upstream_changed", watch = %self.options.watch, notification = method, "the upstream announced a change; re-listing");
                if self.relisting {
                    self.relist_again = true;
                } else {
                    self.relisting = true;
                    self.start_listing(None);
                }
            }
            // The upstream's own subscription (2026-07-28), not the agent's.
            "notifications/subscriptions/acknowledged" => {}
            // Progress, log messages, resource updates, cancellations of server requests.
            _ => self.to_agent(Value::Object(message)),
        }
    }

    fn server_request(&mut self, message: Map<String, Value>) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        // A 2026-07-28 agent takes no server requests: it answers input-required results,
        // and a legacy upstream's request in the middle of a call has no such form.
        let why = if self.modern_agent() && method != "ping" {
            Some("the agent speaks 2026-07-28, which has no server requests, and a legacy upstream's request in the middle of a call cannot be turned into an input-required result")
        } else if self.options.server_requests.decide(&method) == ServerRequest::Refuse {
            Some(refusal_reason(&method))
        } else {
            None
        };
        match why {
            None => self.to_agent(Value::Object(message)),
            Some(why) => {
                self.counters.refused_server_requests += 1;
                tracing::warn!(event = "gateway_server_request_refused", watch = %self.options.watch, method = %method, why, "refused a server request to the agent host");
                if let Some(upstream) = &self.upstream {
                    let _ = upstream.send(error_reply(
                        id,
                        METHOD_NOT_FOUND,
                        &format!(
                            "schemawatch mcp-gateway refuses {method} for watch {}: {why}",
                            self.options.watch
                        ),
                    ));
                }
            }
        }
    }

    /// A 2026-07-28 upstream's `input_required` result (it needs sampling, elicitation or
    /// roots before it can answer). Under the server-request policy: a modern agent gets it as
    /// it is; a legacy agent is asked each input request as a server request, and the
    /// original request is retried with the answers. A request the policy refuses makes the
    /// whole call an error naming it and why.
    fn input_required(
        &mut self,
        agent_id: Value,
        method: &str,
        item: Option<String>,
        request: Map<String, Value>,
        mut message: Map<String, Value>,
    ) {
        let result = message.get("result").cloned().unwrap_or(Value::Null);
        let wanted = match decide_input_requests(&self.options.server_requests, &result) {
            Ok(wanted) => wanted,
            Err(refused) => {
                self.counters.refused_server_requests += refused.len() as u64;
                let why: Vec<String> = refused
                    .iter()
                    .map(|m| format!("{m} ({})", refusal_reason(m)))
                    .collect();
                tracing::warn!(event = "gateway_server_request_refused", watch = %self.options.watch, method, refused = %why.join("; "), "refused an input-required round");
                self.to_agent(error_reply(
                    agent_id,
                    INTERNAL_ERROR,
                    &format!(
                        "schemawatch mcp-gateway refuses what the upstream of watch {} asks before it answers {method}: {}",
                        self.options.watch,
                        why.join("; ")
                    ),
                ));
                return;
            }
        };
        if self.modern_agent() {
            message.insert("id".into(), agent_id);
            self.to_agent(Value::Object(message));
            return;
        }
        if wanted.is_empty() {
            // Only state to echo: retried at once.
            self.retry_round(Round {
                agent_id,
                method: method.to_string(),
                item,
                request,
                request_state: result.get("requestState").cloned(),
                waiting: 0,
                responses: Map::new(),
            });
            return;
        }
        self.next_round += 1;
        let number = self.next_round;
        for input in &wanted {
            let id = format!("schemawatch-input-{number}-{}", self.round_ids.len());
            self.round_ids
                .insert(id.clone(), (number, input.key.clone()));
            self.to_agent(
                json!({"jsonrpc": "2.0", "id": id, "method": input.method, "params": input.params}),
            );
        }
        self.rounds.insert(
            number,
            Round {
                agent_id,
                method: method.to_string(),
                item,
                request,
                request_state: result.get("requestState").cloned(),
                waiting: wanted.len(),
                responses: Map::new(),
            },
        );
    }

    /// The legacy agent's answer to one server request of an input-required round.
    fn round_answer(&mut self, (number, key): (u64, String), answer: &Map<String, Value>) {
        let Some(round) = self.rounds.get_mut(&number) else {
            return;
        };
        if let Some(error) = answer.get("error") {
            let Some(round) = self.rounds.remove(&number) else {
                return;
            };
            self.round_ids.retain(|_, (n, _)| *n != number);
            let text = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            self.to_agent(error_reply(
                round.agent_id,
                INTERNAL_ERROR,
                &format!(
                    "{}: the agent host declined what the upstream of watch {} asked: {text}",
                    round.method, self.options.watch
                ),
            ));
            return;
        }
        round
            .responses
            .insert(key, answer.get("result").cloned().unwrap_or(Value::Null));
        round.waiting = round.waiting.saturating_sub(1);
        if round.waiting == 0 {
            if let Some(round) = self.rounds.remove(&number) {
                self.retry_round(round);
            }
        }
    }

    /// Sends the original request again with the round's answers and state.
    fn retry_round(&mut self, round: Round) {
        let Round {
            agent_id,
            method,
            item,
            mut request,
            request_state,
            responses,
            ..
        } = round;
        let params = request
            .entry("params")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(params) = params {
            params.insert("inputResponses".into(), Value::Object(responses));
            match request_state {
                Some(state) => params.insert("requestState".into(), state),
                None => params.remove("requestState"),
            };
        }
        request.remove("id");
        self.forward(request, agent_id, &method, item);
    }

    /// A 2026-07-28 upstream answers a request that needs a client capability the gateway
    /// withheld by policy with MissingRequiredClientCapability (-32021): the message says why.
    fn explain_missing_capability(&self, message: &mut Map<String, Value>) {
        let Some(Value::Object(error)) = message.get_mut("error") else {
            return;
        };
        if error.get("code").and_then(Value::as_i64) != Some(-32021) {
            return;
        }
        let required = error
            .get("data")
            .and_then(|d| d.get("requiredCapabilities"))
            .and_then(Value::as_object)
            .map(|r| r.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        let why: Vec<String> = required
            .iter()
            .filter_map(|capability| {
                let method = match capability.as_str() {
                    "sampling" => "sampling/createMessage",
                    "elicitation" => "elicitation/create",
                    "roots" => "roots/list",
                    _ => return None,
                };
                (self.options.server_requests.decide(method) == ServerRequest::Refuse)
                    .then(|| format!("{method} ({})", refusal_reason(method)))
            })
            .collect();
        if why.is_empty() {
            return;
        }
        let text = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        error.insert(
            "message".into(),
            json!(format!(
                "{text} (schemawatch mcp-gateway withholds the capability for watch {}: it refuses {})",
                self.options.watch,
                why.join("; ")
            )),
        );
    }

    fn upstream_reply(
        &mut self,
        id: Value,
        method: &str,
        item: Option<String>,
        mut message: Map<String, Value>,
    ) {
        message.insert("id".into(), id.clone());
        self.explain_missing_capability(&mut message);
        if matches!(method, "tools/call" | "prompts/get") {
            if let Some(result) = message.get("result") {
                let findings = scan_result(result);
                let item = item.unwrap_or_default();
                match findings.action(&self.options.results) {
                    Action::Pass => {}
                    Action::Flag => {
                        self.counters.flagged_results += 1;
                        tracing::warn!(event = "gateway_result_flagged", watch = %self.options.watch, method, item = %escape_hidden(&item), hidden = %findings.describe(), "a result carries hidden characters; passed");
                    }
                    Action::Withhold if self.report() => {
                        self.counters.would_withhold += 1;
                        tracing::warn!(event = "gateway_would_withhold", watch = %self.options.watch, method, item = %escape_hidden(&item), hidden = %findings.describe(), "a result carries hidden characters; passed (report mode)");
                    }
                    Action::Withhold => {
                        self.counters.withheld_results += 1;
                        tracing::warn!(event = "gateway_result_withheld", watch = %self.options.watch, method, item = %escape_hidden(&item), hidden = %findings.describe(), "a result carries hidden characters; withheld");
                        if method == "tools/call" {
                            message.insert(
                                "result".into(),
                                withheld_tool_result(&self.options.watch, &item, &findings),
                            );
                        } else {
                            message.remove("result");
                            message.insert(
                                "error".into(),
                                json!({"code": INTERNAL_ERROR, "message": format!(
                                    "schemawatch mcp-gateway withheld the result of prompt {item:?} of watch {}: it carries hidden characters {}",
                                    self.options.watch, findings.describe()
                                )}),
                            );
                        }
                    }
                }
            }
        }
        if self.modern_agent() {
            if let Some(Value::Object(result)) = message.get_mut("result") {
                // 2026-07-28 results name their type; a legacy upstream's are complete.
                result
                    .entry("resultType")
                    .or_insert_with(|| json!("complete"));
                if method == "resources/read" {
                    result.entry("ttlMs").or_insert_with(|| json!(0));
                    result
                        .entry("cacheScope")
                        .or_insert_with(|| json!("private"));
                }
            }
        }
        self.to_agent(Value::Object(message));
    }
}

/// Lists everything the upstream offers and fingerprints each item as the watch's refresh
/// would (the MCP normalizer over the same snapshot document).
async fn list(
    upstream: Arc<Upstream>,
    request: &McpRequest,
    capabilities: Option<Value>,
    watch: &str,
) -> Result<Listing, String> {
    let mut lister = UpstreamLister(upstream);
    let lists = crate::mcp::read_lists(&mut lister, request, capabilities.as_ref())
        .await
        .map_err(|e| e.to_string())?;
    let mut doc = Map::new();
    doc.insert("tools".into(), Value::Array(lists.tools.clone()));
    for (key, list) in [
        ("prompts", &lists.prompts),
        ("resourceTemplates", &lists.resource_templates),
        ("resources", &lists.resources),
    ] {
        if let Some(items) = list {
            doc.insert(key.into(), Value::Array(items.clone()));
        }
    }
    let spec = crate::core::normalize::mcp::normalize_value(watch, &Value::Object(doc))
        .map_err(|e| format!("the upstream's listing does not normalize: {e}"))?;
    let fingerprints = SpecIndex::new(&spec).endpoint_fingerprints();
    let mut items = BTreeMap::new();
    let named = |kind: ItemKind, list: Vec<Value>| -> Vec<(String, Value)> {
        list.into_iter()
            .filter_map(|item| {
                let id = item.get(kind.id_key())?.as_str()?.to_string();
                Some((id, item))
            })
            .collect()
    };
    items.insert(ItemKind::Tool, named(ItemKind::Tool, lists.tools));
    if let Some(prompts) = lists.prompts_listed {
        items.insert(ItemKind::Prompt, named(ItemKind::Prompt, prompts));
    }
    if let Some(templates) = lists.resource_templates {
        items.insert(
            ItemKind::ResourceTemplate,
            named(ItemKind::ResourceTemplate, templates),
        );
    }
    if request.resources == McpResources::All {
        if let Some(resources) = lists.resources {
            items.insert(ItemKind::Resource, named(ItemKind::Resource, resources));
        }
    }
    Ok(Listing {
        items,
        fingerprints,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_meta_is_recognized_and_stripped_before_a_legacy_upstream() {
        let mut message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "t",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "progressToken": 7}}});
        let Value::Object(map) = &mut message else {
            unreachable!()
        };
        assert!(is_modern(map));
        strip_modern_meta(map);
        assert_eq!(map["params"]["_meta"], json!({"progressToken": 7}));
        assert!(!is_modern(map));
        let mut only_modern =
            json!({"params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        let Value::Object(map) = &mut only_modern else {
            unreachable!()
        };
        strip_modern_meta(map);
        assert_eq!(Value::Object(map.clone()), json!({"params": {}}));
    }
}
