//! A minimal MCP client that reads a server's tool list, for fingerprinting.
//!
//! Hand-rolled JSON-RPC on `serde_json::Value` (docs/reliability.md MCP §4): every byte a
//! server sends about its tools is kept, including vendor keys and fields newer than this
//! code, and nothing is cached or served stale.
//!
//! - Transports: stdio (a child process we spawn with a minimal environment, drain, and always
//!   kill and reap) and Streamable HTTP (JSON or SSE responses, legacy sessions).
//! - Protocol eras: the stateless 2026-07-28 protocol (`server/discover`, `_meta` on every
//!   request, `MCP-Protocol-Version` and `Mcp-Method` headers) is probed first; a non-modern
//!   answer (or, on stdio, no answer within the probe timeout) falls back to the legacy
//!   handshake (`initialize`, `notifications/initialized`, `Mcp-Session-Id`).
//! - `tools/list` is walked from no cursor to the end: one consistent snapshot, bounded by a
//!   total deadline, a byte budget over everything the server sends, and a page limit. When
//!   the server declares the capability, `prompts/list` (and `prompts/get` for each prompt
//!   without required arguments: its messages reach a model verbatim),
//!   `resources/templates/list` and (with `mcp_resources = "all"`) `resources/list` are walked
//!   the same way; the server `capabilities` are recorded.
//!
//! The result is a snapshot document that [`crate::core::normalize::mcp`] turns into a
//! ToolSpec; envelope fields (`ttlMs`, `cacheScope`, `nextCursor`, session ids) are dropped.

mod http;
mod stdio;

use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

/// The stateless protocol version (per-request `_meta`, no handshake).
pub const MODERN_VERSION: &str = "2026-07-28";
/// The version asked for in a legacy `initialize`.
pub const LEGACY_VERSION: &str = "2025-11-25";
/// Legacy versions a server may answer `initialize` with.
pub const LEGACY_VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2024-10-07",
];
/// Most `tools/list` pages read before giving up.
pub const DEFAULT_MAX_PAGES: usize = 1000;
/// How long a stdio server may stay silent on the modern probe before it is taken as legacy.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

const CLIENT_NAME: &str = "schemawatch";
const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where the server is.
#[derive(Clone)]
pub enum Target {
    /// Spawn `argv` with a minimal environment plus `env` (values are templates: `${VAR}`,
    /// `${file:PATH}`, expanded at spawn time and never logged).
    Stdio {
        argv: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP endpoint; `headers` are templates like the watch's `schema_headers`.
    Http {
        url: url::Url,
        headers: BTreeMap<String, String>,
        ca_file: Option<PathBuf>,
        proxy: Option<String>,
    },
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Stdio { argv, env } => f
                .debug_struct("Stdio")
                .field("argv", argv)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
            Target::Http { headers, .. } => f
                .debug_struct("Http")
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// Which resources a watch puts in the contract (`[[watch]] mcp_resources`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum McpResources {
    /// Resource templates only (concrete resources are often data and would churn).
    #[default]
    Templates,
    /// Resource templates and every concrete resource.
    All,
    /// Neither.
    None,
}

impl McpResources {
    pub fn parse(text: &str) -> Option<McpResources> {
        match text {
            "templates" => Some(McpResources::Templates),
            "all" => Some(McpResources::All),
            "none" => Some(McpResources::None),
            _ => None,
        }
    }
}

/// One tool-list fetch and its bounds.
#[derive(Clone, Debug)]
pub struct McpRequest {
    pub target: Target,
    /// Total deadline: spawn or connect, handshake, every page.
    pub timeout: Duration,
    /// Cap on all bytes the server sends (stdout lines, HTTP bodies).
    pub max_bytes: u64,
    pub max_pages: usize,
    pub probe_timeout: Duration,
    /// Which resources are listed.
    pub resources: McpResources,
    /// Most tools read (the watch's `max_endpoints`): one more stops the walk at that page,
    /// before the rest is requested or held (H26). `None`: no limit.
    pub max_tools: Option<usize>,
}

impl McpRequest {
    pub fn new(target: Target) -> Self {
        McpRequest {
            target,
            timeout: crate::fetch::DEFAULT_TIMEOUT,
            max_bytes: crate::fetch::DEFAULT_MAX_BYTES,
            max_pages: DEFAULT_MAX_PAGES,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            resources: McpResources::default(),
            max_tools: None,
        }
    }

    /// The request for `target` within the bounds of a fetch: the probe gets at most a third
    /// of the deadline.
    pub fn bounded(target: Target, timeout: Duration, max_bytes: u64) -> Self {
        McpRequest {
            timeout,
            max_bytes,
            probe_timeout: DEFAULT_PROBE_TIMEOUT.min(timeout / 3),
            ..McpRequest::new(target)
        }
    }
}

/// Which protocol generation the server spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    Legacy,
    Modern,
}

/// What one fetch read.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub era: Era,
    pub protocol_version: String,
    pub server_info: Option<Value>,
    pub instructions: Option<String>,
    /// The server's declared capabilities, verbatim (`None`: it stated none).
    pub capabilities: Option<Value>,
    /// Every tool, in server order, verbatim, each as its compact JSON text: a live listing
    /// is held about as compactly as the same list read from a file, never as a tree of
    /// every tool (H26).
    pub tools: Vec<Box<str>>,
    /// Every prompt (with the `messages` of `prompts/get` for prompts without required
    /// arguments), when the server has the prompts capability.
    pub prompts: Option<Vec<Value>>,
    /// Every resource template, when listed.
    pub resource_templates: Option<Vec<Value>>,
    /// Every resource, when listed (`mcp_resources = "all"`).
    pub resources: Option<Vec<Value>>,
    pub pages: usize,
    /// `stdio` or `streamable-http`.
    pub transport: &'static str,
    /// The endpoint URL without userinfo (HTTP only).
    pub url: Option<String>,
}

impl Snapshot {
    /// Every tool as a JSON value (for inspection and tests; [`Snapshot::into_document`] never
    /// builds these).
    pub fn tool_values(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(|t| serde_json::from_str(t).unwrap_or(Value::Null))
            .collect()
    }

    /// Everything but the tools, keyed as in the document.
    fn envelope(&self) -> Map<String, Value> {
        let mut doc = Map::new();
        doc.insert("protocolVersion".into(), json!(self.protocol_version));
        doc.insert("transport".into(), json!(self.transport));
        if let Some(url) = &self.url {
            doc.insert("url".into(), json!(url));
        }
        if let Some(info) = &self.server_info {
            doc.insert("serverInfo".into(), info.clone());
        }
        if let Some(text) = &self.instructions {
            doc.insert("instructions".into(), json!(text));
        }
        if let Some(capabilities) = &self.capabilities {
            doc.insert("capabilities".into(), capabilities.clone());
        }
        for (key, list) in [
            ("prompts", &self.prompts),
            ("resourceTemplates", &self.resource_templates),
            ("resources", &self.resources),
        ] {
            if let Some(items) = list {
                doc.insert(key.into(), Value::Array(items.clone()));
            }
        }
        doc
    }

    /// The snapshot document the MCP normalizer reads.
    pub fn document(&self) -> Value {
        let mut doc = self.envelope();
        doc.insert("tools".into(), Value::Array(self.tool_values()));
        Value::Object(doc)
    }

    /// [`Snapshot::document`] as bytes, written from the tools' texts (each freed once
    /// written): the same bytes as `serde_json::to_vec(&self.document())`, sorted keys and
    /// all, without a tree of the tools.
    pub fn into_document(mut self) -> Result<Vec<u8>, serde_json::Error> {
        let mut tools = Some(std::mem::take(&mut self.tools));
        let mut doc = self.envelope();
        doc.insert("tools".into(), Value::Array(Vec::new()));
        let size = tools.iter().flatten().map(|t| t.len() + 1).sum::<usize>() + 1024;
        let mut out = Vec::with_capacity(size);
        out.push(b'{');
        for (i, (key, value)) in doc.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, key)?;
            out.push(b':');
            match (key.as_str(), tools.take()) {
                ("tools", Some(tools)) => {
                    out.push(b'[');
                    for (j, tool) in tools.into_iter().enumerate() {
                        if j > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(tool.as_bytes());
                    }
                    out.push(b']');
                }
                (_, rest) => {
                    tools = rest;
                    serde_json::to_writer(&mut out, value)?;
                }
            }
        }
        out.push(b'}');
        Ok(out)
    }
}

/// Why a tool list could not be read. Messages never carry header or environment values.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP server did not finish within the deadline ({phase})")]
    Timeout { phase: String },
    #[error("cannot start MCP server `{program}`: {detail}")]
    Spawn { program: String, detail: String },
    #[error("`command` is empty")]
    EmptyCommand,
    #[error("env `{name}`: {reason}")]
    Env { name: String, reason: String },
    /// Setting up the HTTP transport failed (headers, CA file, proxy, client).
    #[error(transparent)]
    Fetch(#[from] crate::fetch::FetchError),
    #[error("MCP server sent more than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("MCP server sent something that is not JSON-RPC: {detail}")]
    Garbage { detail: String },
    #[error("MCP protocol error: {detail}")]
    Protocol { detail: String },
    #[error("MCP server answered {method} with error {code}: {message}")]
    Rpc {
        method: String,
        code: i64,
        message: String,
    },
    #[error("MCP server exited or closed its output before answering {method} ({status})")]
    Closed { method: String, status: String },
    #[error("MCP server answered HTTP {status} to {method}")]
    Status { method: String, status: u16 },
    #[error("MCP transport failure: {detail}")]
    Transport { detail: String },
    #[error("MCP server speaks protocol {offered}, which schemawatch does not (it speaks {MODERN_VERSION} and {LEGACY_VERSION} back to 2024-11-05)")]
    UnsupportedVersion { offered: String },
    #[error("MCP server did not answer the protocol probe in time")]
    ProbeSilent,
    #[error("{method} has more than {limit} pages")]
    TooManyPages { method: String, limit: usize },
    #[error("{method} repeated a cursor; the pagination never ends")]
    CursorLoop { method: String },
    #[error("the MCP server lists more than {limit} tools, more than this watch's max_endpoints ({limit}); stopped reading after {pages} page(s) of tools/list, nothing was stored (raise max_endpoints to accept it)")]
    TooManyTools { limit: usize, pages: usize },
}

/// A JSON-RPC answer to one request.
#[derive(Debug)]
pub(crate) enum Reply {
    Result(Value),
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
}

impl Reply {
    /// Splits a JSON-RPC response object.
    pub(crate) fn from_message(message: &Value) -> Reply {
        match message.get("error") {
            Some(error) => Reply::Error {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .map(|m| m.chars().take(200).collect())
                    .unwrap_or_default(),
                data: error.get("data").cloned(),
            },
            None => Reply::Result(message.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    fn into_result(self, method: &str) -> Result<Value, McpError> {
        match self {
            Reply::Result(r) => Ok(r),
            Reply::Error { code, message, .. } => Err(McpError::Rpc {
                method: method.into(),
                code,
                message,
            }),
        }
    }
}

/// The byte budget shared by everything one fetch reads.
#[derive(Debug)]
struct Budget {
    used: u64,
    limit: u64,
}

impl Budget {
    fn take(&mut self, n: usize) -> Result<(), McpError> {
        self.used = self.used.saturating_add(n as u64);
        if self.used > self.limit {
            return Err(McpError::TooLarge { limit: self.limit });
        }
        Ok(())
    }
}

enum Conn {
    Stdio(stdio::StdioConn),
    Http(http::HttpConn),
}

impl Conn {
    async fn call(
        &mut self,
        method: &str,
        params: Value,
        era: Era,
        wait: Option<Duration>,
    ) -> Result<Reply, McpError> {
        match self {
            Conn::Stdio(c) => c.call(method, params, wait).await,
            Conn::Http(c) => c.call(method, params, era).await,
        }
    }

    async fn notify(&mut self, method: &str) -> Result<(), McpError> {
        match self {
            Conn::Stdio(c) => c.notify(method).await,
            Conn::Http(c) => c.notify(method).await,
        }
    }

    fn set_legacy_version(&mut self, version: &str) {
        if let Conn::Http(c) = self {
            c.protocol_version = Some(version.to_string());
        }
    }

    async fn close(self) {
        match self {
            Conn::Stdio(c) => c.close().await,
            Conn::Http(c) => c.close().await,
        }
    }
}

/// Reads the whole tool list of the server, within the request's bounds. A stdio child is
/// killed and reaped on every path, success, error or timeout.
pub async fn fetch_tools(request: &McpRequest) -> Result<Snapshot, McpError> {
    let deadline = crate::fetch::later(Instant::now(), request.timeout);
    let budget = Budget {
        used: 0,
        limit: request.max_bytes,
    };
    let (mut conn, transport, url) = match &request.target {
        Target::Stdio { argv, env } => (
            Conn::Stdio(stdio::StdioConn::spawn(
                argv,
                &stdio::expand_env(env, request.timeout).await?,
                budget,
            )?),
            "stdio",
            None,
        ),
        Target::Http {
            url,
            headers,
            ca_file,
            proxy,
        } => (
            Conn::Http(
                http::HttpConn::new(
                    url,
                    headers,
                    ca_file.as_deref(),
                    proxy.as_deref(),
                    budget,
                    request.timeout,
                )
                .await?,
            ),
            "streamable-http",
            Some(reportable(url)),
        ),
    };
    let mut phase = String::from("discover");
    let outcome = tokio::time::timeout_at(deadline, session(&mut conn, request, &mut phase)).await;
    conn.close().await;
    let mut snapshot = match outcome {
        Ok(result) => result?,
        Err(_elapsed) => return Err(McpError::Timeout { phase }),
    };
    snapshot.transport = transport;
    snapshot.url = url;
    Ok(snapshot)
}

/// A stdio MCP server spawned for a long-lived session (the gateway's upstream): spawned as a
/// watch's server is (minimal environment plus the watch's `env`, its own process group,
/// stderr drained), its pipes handed to the caller. [`StdioServer::close`] kills it and
/// everything it started and reaps it; dropping it kills them too.
pub struct StdioServer {
    conn: stdio::StdioConn,
}

impl StdioServer {
    /// Spawns `argv` with `env` (templates, expanded within `within`); returns the server and
    /// its stdin and stdout.
    pub async fn spawn(
        argv: &[String],
        env: &BTreeMap<String, String>,
        within: Duration,
    ) -> Result<
        (
            StdioServer,
            tokio::process::ChildStdin,
            tokio::process::ChildStdout,
        ),
        McpError,
    > {
        let env = stdio::expand_env(env, within).await?;
        // The session bounds each message itself; this budget is never consulted.
        let budget = Budget {
            used: 0,
            limit: u64::MAX,
        };
        let mut conn = stdio::StdioConn::spawn(argv, &env, budget)?;
        let (stdin, stdout) = conn.take_pipes().ok_or_else(|| McpError::Spawn {
            program: argv.first().cloned().unwrap_or_default(),
            detail: "no stdio pipes".into(),
        })?;
        Ok((StdioServer { conn }, stdin, stdout))
    }

    pub fn pid(&self) -> Option<u32> {
        self.conn.pid()
    }

    /// Waits for the server process to exit; its exit status as text.
    pub async fn exited(&mut self) -> String {
        self.conn.exited().await
    }

    /// Kills the server and every descendant, and reaps it.
    pub async fn close(self) {
        self.conn.close().await
    }
}

/// A legacy Streamable HTTP session for a long-lived client (the gateway's upstream): one
/// POST per message, every message of each answer (JSON or SSE) handed to the caller, and the
/// GET stream of what the server sends unprompted. Headers, CA file, proxy and redaction are
/// the watch's, as for a fetch.
pub struct HttpSession {
    inner: http::HttpSession,
}

impl HttpSession {
    pub async fn new(
        url: &url::Url,
        headers: &BTreeMap<String, String>,
        ca_file: Option<&std::path::Path>,
        proxy: Option<&str>,
        timeout: Duration,
        max_message: usize,
    ) -> Result<HttpSession, McpError> {
        Ok(HttpSession {
            inner: http::HttpSession::new(url, headers, ca_file, proxy, timeout, max_message)
                .await?,
        })
    }

    /// POSTs `message`; every message of the answer goes to `deliver`.
    pub async fn post(&self, message: &Value, deliver: impl FnMut(Value)) -> Result<(), McpError> {
        self.inner.post(message, deliver).await
    }

    /// The negotiated version, sent on every request after `initialize`.
    pub fn set_protocol_version(&self, version: &str) {
        self.inner.set_protocol_version(version)
    }

    /// Reads the GET stream until it ends.
    pub async fn listen(&self, deliver: impl FnMut(Value)) -> Result<(), McpError> {
        self.inner.listen(deliver).await
    }

    /// Ends the session (DELETE).
    pub async fn close(&self) {
        self.inner.close().await
    }
}

/// `params` with the modern per-request `_meta` when `era` is modern.
pub fn params_in(era: Era, params: Map<String, Value>) -> Value {
    params_for(era, params)
}

/// [`fetch_tools`], rendered as the snapshot document's bytes.
pub async fn fetch_document(request: &McpRequest) -> Result<Vec<u8>, McpError> {
    let snapshot = fetch_tools(request).await?;
    snapshot.into_document().map_err(|e| McpError::Protocol {
        detail: format!("cannot serialize the snapshot: {e}"),
    })
}

fn reportable(url: &url::Url) -> String {
    crate::fetch::redact_url(url)
}

/// `params` with the modern per-request `_meta`.
fn modern_params(mut params: Map<String, Value>) -> Value {
    params.insert(
        "_meta".into(),
        json!({
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
            "io.modelcontextprotocol/clientCapabilities": {},
        }),
    );
    Value::Object(params)
}

/// Modern-era error codes (HeaderMismatch, MissingRequiredClientCapability,
/// UnsupportedProtocolVersion): an answer with one of them comes from a modern server.
pub const MODERN_ERRORS: [i64; 3] = [-32020, -32021, -32022];

async fn session(
    conn: &mut Conn,
    request: &McpRequest,
    phase: &mut String,
) -> Result<Snapshot, McpError> {
    // Era detection: probe with server/discover; anything but a modern answer means legacy.
    let probe = conn
        .call(
            "server/discover",
            modern_params(Map::new()),
            Era::Modern,
            Some(request.probe_timeout),
        )
        .await;
    let (era, protocol_version, server_info, instructions, capabilities) = match probe {
        Ok(Reply::Result(discovered)) => {
            let info = discovered
                .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
                .or_else(|| discovered.get("serverInfo"))
                .cloned();
            (
                Era::Modern,
                MODERN_VERSION.to_string(),
                info,
                text_field(&discovered, "instructions")?,
                object_field(&discovered, "capabilities")?,
            )
        }
        Ok(Reply::Error {
            code,
            message,
            data,
        }) if MODERN_ERRORS.contains(&code) => {
            if code == -32022 {
                let offered = data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .map(crate::core::json::to_canonical_string)
                    .unwrap_or_else(|| "(unknown)".into());
                return Err(McpError::UnsupportedVersion { offered });
            }
            return Err(McpError::Rpc {
                method: "server/discover".into(),
                code,
                message,
            });
        }
        Ok(Reply::Error { .. }) | Err(McpError::Status { .. }) | Err(McpError::ProbeSilent) => {
            *phase = "initialize".into();
            legacy_handshake(conn).await?
        }
        Err(other) => return Err(other),
    };

    let mut lister = ConnLister { conn, era };
    let lists = read_lists_with(&mut lister, request, capabilities.as_ref(), phase, |tool| {
        serde_json::to_string(&tool)
            .map(String::into_boxed_str)
            .map_err(|e| McpError::Protocol {
                detail: format!("cannot keep a tool: {e}"),
            })
    })
    .await?;
    let Lists {
        tools,
        prompts,
        resource_templates,
        resources,
        pages,
        ..
    } = lists;
    Ok(Snapshot {
        era,
        protocol_version,
        server_info,
        instructions,
        capabilities,
        tools,
        prompts,
        resource_templates,
        resources,
        pages,
        transport: "",
        url: None,
    })
}

/// Something that answers one MCP request with its result: the fetcher's own connection, or
/// a long-lived session (the gateway's upstream). An error answer is [`McpError::Rpc`].
pub trait Lister {
    /// Sends `method` with `params` (without the modern `_meta`: the implementation adds
    /// what its era needs) and waits for the result.
    fn request(
        &mut self,
        method: &str,
        params: Map<String, Value>,
    ) -> impl std::future::Future<Output = Result<Value, McpError>> + Send;
}

/// The fetcher's connection in the era it detected.
struct ConnLister<'a> {
    conn: &'a mut Conn,
    era: Era,
}

impl Lister for ConnLister<'_> {
    async fn request(
        &mut self,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, McpError> {
        self.conn
            .call(method, params_for(self.era, params), self.era, None)
            .await?
            .into_result(method)
    }
}

/// Every list a server offers, walked to the end.
#[derive(Clone, Debug)]
pub struct Lists<T> {
    pub tools: Vec<T>,
    /// With the `messages` of `prompts/get` attached to each prompt without required
    /// arguments (as the snapshot document holds them).
    pub prompts: Option<Vec<Value>>,
    /// The prompts as `prompts/list` returned them (no `messages`).
    pub prompts_listed: Option<Vec<Value>>,
    pub resource_templates: Option<Vec<Value>>,
    pub resources: Option<Vec<Value>>,
    /// `tools/list` pages read.
    pub pages: usize,
}

/// Walks every list the server declares (`capabilities`; tools unless the server states
/// capabilities without them), within `request`'s page and tool limits; each tool is kept as
/// `keep` makes it.
pub async fn read_lists<L: Lister>(
    conn: &mut L,
    request: &McpRequest,
    capabilities: Option<&Value>,
) -> Result<Lists<Value>, McpError> {
    let mut phase = String::new();
    read_lists_with(conn, request, capabilities, &mut phase, Ok).await
}

async fn read_lists_with<T, L: Lister>(
    conn: &mut L,
    request: &McpRequest,
    capabilities: Option<&Value>,
    phase: &mut String,
    keep: impl FnMut(Value) -> Result<T, McpError>,
) -> Result<Lists<T>, McpError> {
    let declares = |name: &str| capabilities.map(|c| c.get(name).is_some_and(|v| !v.is_null()));
    // `pages` counts tools/list pages (as before); the other lists count in `other_pages`.
    let (mut pages, mut other_pages) = (0, 0);
    let tools = if declares("tools") != Some(false) {
        let list = List {
            method: "tools/list",
            key: "tools",
            limit: request.max_tools,
        };
        list_all(conn, request, list, phase, &mut pages, keep).await?
    } else {
        Vec::new()
    };
    let (prompts, prompts_listed) = if declares("prompts") == Some(true) {
        let list = List {
            method: "prompts/list",
            key: "prompts",
            limit: None,
        };
        let listed = list_all(conn, request, list, phase, &mut other_pages, Ok).await?;
        let mut prompts = listed.clone();
        for prompt in prompts.iter_mut() {
            attach_messages(conn, prompt, phase).await?;
        }
        (Some(prompts), Some(listed))
    } else {
        (None, None)
    };
    let resources_declared = declares("resources") == Some(true);
    let resource_templates = if resources_declared && request.resources != McpResources::None {
        let list = List {
            method: "resources/templates/list",
            key: "resourceTemplates",
            limit: None,
        };
        Some(list_all(conn, request, list, phase, &mut other_pages, Ok).await?)
    } else {
        None
    };
    let resources = if resources_declared && request.resources == McpResources::All {
        let list = List {
            method: "resources/list",
            key: "resources",
            limit: None,
        };
        Some(list_all(conn, request, list, phase, &mut other_pages, Ok).await?)
    } else {
        None
    };
    Ok(Lists {
        tools,
        prompts,
        prompts_listed,
        resource_templates,
        resources,
        pages,
    })
}

/// `params` for `era`.
fn params_for(era: Era, params: Map<String, Value>) -> Value {
    match era {
        Era::Modern => modern_params(params),
        Era::Legacy => Value::Object(params),
    }
}

/// A paginated `*/list` method, the result's array `key`, and the most items it may hold.
struct List<'a> {
    method: &'a str,
    key: &'a str,
    limit: Option<usize>,
}

/// Walks a paginated `*/list` method from no cursor to the end, keeping each item as `keep`
/// makes it. Past `list.limit` items it stops at that page: nothing more is requested.
async fn list_all<T, L: Lister>(
    conn: &mut L,
    request: &McpRequest,
    list: List<'_>,
    phase: &mut String,
    total_pages: &mut usize,
    mut keep: impl FnMut(Value) -> Result<T, McpError>,
) -> Result<Vec<T>, McpError> {
    let List { method, key, limit } = list;
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = BTreeSet::new();
    let mut pages = 0;
    loop {
        pages += 1;
        *total_pages += 1;
        if pages > request.max_pages {
            return Err(McpError::TooManyPages {
                method: method.into(),
                limit: request.max_pages,
            });
        }
        *phase = format!("{method} page {pages}");
        let mut params = Map::new();
        if let Some(c) = &cursor {
            params.insert("cursor".into(), json!(c));
        }
        let result = conn.request(method, params).await?;
        match result.get("resultType").and_then(Value::as_str) {
            None | Some("complete") => {}
            Some(other) => {
                return Err(McpError::Protocol {
                    detail: format!("{method} returned resultType {other:?}, not a complete list"),
                })
            }
        }
        let mut result = result;
        let next = result.get_mut("nextCursor").map(Value::take);
        match result.get_mut(key).map(Value::take) {
            Some(Value::Array(page)) => {
                if let Some(limit) = limit.filter(|l| items.len() + page.len() > *l) {
                    return Err(McpError::TooManyTools { limit, pages });
                }
                items.reserve(page.len());
                for item in page {
                    items.push(keep(item)?);
                }
            }
            _ => {
                return Err(McpError::Protocol {
                    detail: format!("{method} result has no \"{key}\" array"),
                })
            }
        }
        match next.as_ref() {
            None | Some(Value::Null) => break,
            Some(Value::String(next)) => {
                if !seen.insert(next.clone()) {
                    return Err(McpError::CursorLoop {
                        method: method.into(),
                    });
                }
                cursor = Some(next.clone());
            }
            Some(_) => {
                return Err(McpError::Protocol {
                    detail: format!("{method} nextCursor is not a string"),
                })
            }
        }
    }
    Ok(items)
}

/// For a prompt without required arguments, the `messages` `prompts/get` returns (verbatim:
/// they reach a model), kept on the prompt as `messages`.
async fn attach_messages<L: Lister>(
    conn: &mut L,
    prompt: &mut Value,
    phase: &mut String,
) -> Result<(), McpError> {
    let Some(object) = prompt.as_object_mut() else {
        return Ok(());
    };
    let needs_arguments = object
        .get("arguments")
        .and_then(Value::as_array)
        .is_some_and(|args| {
            args.iter()
                .any(|a| a.get("required").and_then(Value::as_bool) == Some(true))
        });
    let Some(name) = object.get("name").and_then(Value::as_str).map(String::from) else {
        return Ok(());
    };
    if needs_arguments {
        return Ok(());
    }
    *phase = format!("prompts/get {name}");
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    let result = conn.request("prompts/get", params).await?;
    match result.get("messages") {
        Some(messages @ Value::Array(_)) => {
            object.insert("messages".into(), messages.clone());
            Ok(())
        }
        _ => Err(McpError::Protocol {
            detail: "prompts/get result has no \"messages\" array".into(),
        }),
    }
}

type Handshake = (Era, String, Option<Value>, Option<String>, Option<Value>);

async fn legacy_handshake(conn: &mut Conn) -> Result<Handshake, McpError> {
    let params = json!({
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {},
        "clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
    });
    let result = conn
        .call("initialize", params, Era::Legacy, None)
        .await?
        .into_result("initialize")?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::Protocol {
            detail: "initialize result has no protocolVersion".into(),
        })?
        .to_string();
    if !LEGACY_VERSIONS.contains(&version.as_str()) {
        return Err(McpError::UnsupportedVersion { offered: version });
    }
    conn.set_legacy_version(&version);
    conn.notify("notifications/initialized").await?;
    Ok((
        Era::Legacy,
        version,
        result.get("serverInfo").cloned(),
        text_field(&result, "instructions")?,
        object_field(&result, "capabilities")?,
    ))
}

fn object_field(result: &Value, key: &str) -> Result<Option<Value>, McpError> {
    match result.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
        Some(_) => Err(McpError::Protocol {
            detail: format!("{key} is not an object"),
        }),
    }
}

fn text_field(result: &Value, key: &str) -> Result<Option<String>, McpError> {
    match result.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(McpError::Protocol {
            detail: format!("{key} is not a string"),
        }),
    }
}

/// What to do with one incoming JSON-RPC message while waiting for the answer to `id`.
enum Incoming {
    /// The answer.
    Reply(Reply),
    /// A server → client request: answer it (ping) or refuse it (anything else).
    Request { id: Value, method: String },
    /// A notification or an answer to something else.
    Ignore,
}

fn classify_message(message: &Value, id: i64) -> Result<Incoming, McpError> {
    let Value::Object(map) = message else {
        return Err(McpError::Garbage {
            detail: "a message is not a JSON object".into(),
        });
    };
    let method = map.get("method").and_then(Value::as_str);
    match (method, map.get("id")) {
        (Some(method), Some(request_id)) if !request_id.is_null() => Ok(Incoming::Request {
            id: request_id.clone(),
            method: method.to_string(),
        }),
        (Some(_), _) => Ok(Incoming::Ignore),
        (None, Some(answer_id)) if map.contains_key("result") || map.contains_key("error") => {
            if answer_id.as_i64() == Some(id) {
                Ok(Incoming::Reply(Reply::from_message(message)))
            } else {
                Ok(Incoming::Ignore)
            }
        }
        _ => Err(McpError::Garbage {
            detail: "a message is neither a request, a notification nor a response".into(),
        }),
    }
}

/// The answer a client gives to a server's request.
fn answer_server_request(id: &Value, method: &str) -> Value {
    if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        json!({"jsonrpc": "2.0", "id": id,
               "error": {"code": -32601, "message": "schemawatch only reads tool lists"}})
    }
}

/// Parses one message (or a batch) strictly: duplicate keys, deep nesting and bad numbers are
/// errors, as for every other document schemawatch reads.
fn parse_messages(bytes: &[u8]) -> Result<Vec<Value>, McpError> {
    let text = std::str::from_utf8(bytes).map_err(|_| McpError::Garbage {
        detail: "output is not UTF-8".into(),
    })?;
    let value = crate::core::json::parse_json(text).map_err(|e| McpError::Garbage {
        detail: e.to_string(),
    })?;
    Ok(match value {
        Value::Array(items) => items,
        other => vec![other],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_written_from_texts_is_the_documents_bytes() {
        let snapshot = Snapshot {
            era: Era::Modern,
            protocol_version: MODERN_VERSION.into(),
            server_info: Some(json!({"name": "s", "version": "1"})),
            instructions: Some("use \"me\"".into()),
            capabilities: Some(json!({"tools": {}, "prompts": {}})),
            tools: vec![
                r#"{"b":1,"name":"z","x":1.50}"#.into(),
                r#"{"description":"é\n","name":"a"}"#.into(),
            ],
            prompts: Some(vec![json!({"name": "p"})]),
            resource_templates: None,
            resources: Some(vec![]),
            pages: 1,
            transport: "streamable-http",
            url: Some("http://127.0.0.1:1/mcp".into()),
        };
        let expected = serde_json::to_vec(&snapshot.document()).unwrap();
        assert_eq!(
            String::from_utf8(snapshot.into_document().unwrap()).unwrap(),
            String::from_utf8(expected).unwrap()
        );
    }

    #[test]
    fn messages_are_classified() {
        let reply = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}});
        assert!(matches!(
            classify_message(&reply, 3),
            Ok(Incoming::Reply(Reply::Result(_)))
        ));
        assert!(matches!(classify_message(&reply, 4), Ok(Incoming::Ignore)));
        let ping = json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"});
        assert!(matches!(
            classify_message(&ping, 3),
            Ok(Incoming::Request { .. })
        ));
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}});
        assert!(matches!(classify_message(&note, 3), Ok(Incoming::Ignore)));
        assert!(classify_message(&json!({"hello": 1}), 3).is_err());
        assert!(classify_message(&json!([1]), 3).is_err());
        assert_eq!(
            answer_server_request(&json!("s1"), "ping"),
            json!({"jsonrpc": "2.0", "id": "s1", "result": {}})
        );
    }

    #[test]
    fn strict_parsing_rejects_duplicates_and_garbage() {
        assert!(parse_messages(br#"{"id":1,"id":2}"#).is_err());
        assert!(parse_messages(b"hello world").is_err());
        assert_eq!(parse_messages(br#"[{"a":1},{"b":2}]"#).unwrap().len(), 2);
    }

    #[test]
    fn modern_params_carry_meta() {
        let p = modern_params(Map::new());
        assert_eq!(
            p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"),
            Some(&json!(MODERN_VERSION))
        );
    }
}
