//! Shared harness for the end-to-end tests: a real in-process HTTP server on 127.0.0.1
//! that serves a swappable OpenAPI document with validators, a sandbox (temp dir, config,
//! SQLite registry) that runs the real `schemawatch` binary and keeps a transcript of
//! everything it printed, and the petstore documents the scenarios swap between.

#![allow(dead_code)]

pub mod completeness;
pub mod corpus;
pub mod peers;
pub mod postgres;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, Response, StatusCode};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

/// The credential the child process sees in `SW_TEST_TOKEN`; it must never leak.
pub const CANARY: &str = "canary-5e1f0c3a9b";
pub const TOKEN_VAR: &str = "SW_TEST_TOKEN";

// ---------------------------------------------------------------------------------------
// The document server
// ---------------------------------------------------------------------------------------

/// What the server currently serves and what it has seen.
#[derive(Default)]
struct ServerState {
    body: Vec<u8>,
    /// Bumped whenever the body changes; the ETag and Last-Modified derive from it.
    revision: u32,
    /// When false the server sends no ETag (only Last-Modified).
    send_etag: bool,
    requests: usize,
    not_modified: usize,
    /// The `If-None-Match` value of every request (None when absent).
    if_none_match: Vec<Option<String>>,
    /// The `If-Modified-Since` value of every request (None when absent).
    if_modified_since: Vec<Option<String>>,
    /// The `Authorization` value of every request (None when absent).
    authorization: Vec<Option<String>>,
    /// The query string of every request (None when absent).
    queries: Vec<Option<String>>,
}

impl ServerState {
    fn etag(&self) -> String {
        format!("\"pets-rev-{}\"", self.revision)
    }

    fn last_modified(&self) -> String {
        // One distinct HTTP-date per revision.
        let total = self.revision;
        format!(
            "Wed, 21 Oct 2015 {:02}:{:02}:{:02} GMT",
            7 + total / 3600,
            (total / 60) % 60,
            total % 60
        )
    }
}

/// A snapshot of the server's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    pub requests: usize,
    pub not_modified: usize,
}

/// An axum server on 127.0.0.1:0, running on its own multi-threaded tokio runtime (its
/// worker threads serve in the background while the test blocks on the binary).
pub struct DocServer {
    runtime: Option<tokio::runtime::Runtime>,
    addr: SocketAddr,
    state: Arc<Mutex<ServerState>>,
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

fn etag_matches(if_none_match: &str, etag: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|candidate| {
        candidate == "*" || candidate == etag || candidate.strip_prefix("W/") == Some(etag)
    })
}

async fn serve_document(
    State(state): State<Arc<Mutex<ServerState>>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response<Body> {
    let mut s = state.lock().unwrap();
    s.requests += 1;
    s.queries.push(uri.query().map(str::to_owned));
    let inm = header_text(&headers, header::IF_NONE_MATCH);
    let ims = header_text(&headers, header::IF_MODIFIED_SINCE);
    s.if_none_match.push(inm.clone());
    s.if_modified_since.push(ims.clone());
    s.authorization
        .push(header_text(&headers, header::AUTHORIZATION));

    let etag = s.etag();
    let last_modified = s.last_modified();
    let not_modified = if s.send_etag {
        inm.as_deref().is_some_and(|v| etag_matches(v, &etag))
    } else {
        // Without an ETag the server honours If-Modified-Since by exact date match.
        inm.is_none() && ims.as_deref() == Some(last_modified.as_str())
    };
    let mut builder = Response::builder().header(header::LAST_MODIFIED, &last_modified);
    if s.send_etag {
        builder = builder.header(header::ETAG, &etag);
    }
    if not_modified {
        s.not_modified += 1;
        return builder
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .unwrap();
    }
    builder
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(s.body.clone()))
        .unwrap()
}

impl DocServer {
    /// Starts serving `body` at `/openapi.json`, with an ETag and Last-Modified.
    pub fn start(body: Vec<u8>) -> DocServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let state = Arc::new(Mutex::new(ServerState {
            body,
            revision: 1,
            send_etag: true,
            ..ServerState::default()
        }));
        let router = Router::new()
            .route("/openapi.json", get(serve_document))
            .with_state(state.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move {
            axum::serve(listener, router).await.expect("server runs");
        });
        DocServer {
            runtime: Some(runtime),
            addr,
            state,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/openapi.json", self.addr)
    }

    /// Serves `body` from now on; a different body gets a new ETag and Last-Modified.
    pub fn set_document(&self, body: Vec<u8>) {
        let mut s = self.state.lock().unwrap();
        if s.body != body {
            s.body = body;
            s.revision += 1;
        }
    }

    /// Same body, new ETag and Last-Modified (a validator-only change).
    pub fn bump_revision(&self) {
        self.state.lock().unwrap().revision += 1;
    }

    /// Stops (or resumes) sending an ETag, so clients must use If-Modified-Since.
    pub fn set_send_etag(&self, on: bool) {
        self.state.lock().unwrap().send_etag = on;
    }

    pub fn current_etag(&self) -> String {
        self.state.lock().unwrap().etag()
    }

    pub fn current_last_modified(&self) -> String {
        self.state.lock().unwrap().last_modified()
    }

    pub fn counters(&self) -> Counters {
        let s = self.state.lock().unwrap();
        Counters {
            requests: s.requests,
            not_modified: s.not_modified,
        }
    }

    pub fn last_if_none_match(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap()
            .if_none_match
            .last()
            .cloned()
            .flatten()
    }

    pub fn last_if_modified_since(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap()
            .if_modified_since
            .last()
            .cloned()
            .flatten()
    }

    pub fn authorization_values(&self) -> Vec<Option<String>> {
        self.state.lock().unwrap().authorization.clone()
    }

    /// The query string of every request so far.
    pub fn queries(&self) -> Vec<Option<String>> {
        self.state.lock().unwrap().queries.clone()
    }
}

impl Drop for DocServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// A 127.0.0.1 port that nothing listens on (bound, then released).
pub fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    port
}

// ---------------------------------------------------------------------------------------
// The sandbox: temp dir, config, registry, binary runs and their transcript
// ---------------------------------------------------------------------------------------

/// One finished run of the binary.
pub struct Run {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Run {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// A description for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "`schemawatch {}` exited {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.args.join(" "),
            self.code,
            self.stdout_text(),
            self.stderr_text()
        )
    }

    /// Stdout parsed as JSON (panics with the whole run when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.describe()))
    }

    pub fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code,
            code,
            "unexpected exit code:\n{}",
            self.describe()
        );
        self
    }
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    /// Every byte any run printed (stdout and stderr), for the canary scan.
    transcript: Mutex<Vec<u8>>,
    runs: Mutex<usize>,
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_schemawatch")
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("schemawatch.toml");
        Sandbox {
            dir,
            config,
            transcript: Mutex::new(Vec::new()),
            runs: Mutex::new(0),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn config_arg(&self) -> String {
        self.config.to_string_lossy().into_owned()
    }

    pub fn write_config(&self, text: &str) {
        std::fs::write(&self.config, text).expect("write config");
    }

    pub fn write_file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, bytes).expect("write file");
        p
    }

    /// The binary with a hermetic environment; only the child sees the canary.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .current_dir(self.dir.path())
            .env(TOKEN_VAR, CANARY)
            // Verbose logs make the leak check meaningful for logging, too.
            .env("RUST_LOG", "debug")
            .env_remove("SCHEMAWATCH_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for var in [
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "all_proxy",
            "ALL_PROXY",
            "no_proxy",
            "NO_PROXY",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    fn record(&self, args: &[&str], output: Output) -> Run {
        let mut t = self.transcript.lock().unwrap();
        t.extend_from_slice(&output.stdout);
        t.push(b'\n');
        t.extend_from_slice(&output.stderr);
        t.push(b'\n');
        *self.runs.lock().unwrap() += 1;
        Run {
            args: args.iter().map(|s| s.to_string()).collect(),
            code: output
                .status
                .code()
                .expect("exited normally, not by signal"),
            stdout: output.stdout,
            stderr: output.stderr,
        }
    }

    pub fn run(&self, args: &[&str]) -> Run {
        let output = self.command(args).output().expect("run schemawatch");
        self.record(args, output)
    }

    /// Starts a run without waiting for it (for concurrency tests).
    pub fn spawn(&self, args: &[&str]) -> (Vec<String>, Child) {
        let child = self.command(args).spawn().expect("spawn schemawatch");
        (args.iter().map(|s| s.to_string()).collect(), child)
    }

    pub fn finish(&self, spawned: (Vec<String>, Child)) -> Run {
        let (args, child) = spawned;
        let output = child.wait_with_output().expect("wait for schemawatch");
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.record(&refs, output)
    }

    pub fn transcript(&self) -> Vec<u8> {
        self.transcript.lock().unwrap().clone()
    }

    pub fn run_count(&self) -> usize {
        *self.runs.lock().unwrap()
    }

    // --- typed helpers over the documented JSON ---------------------------------------

    /// `check --config F --json [--watch W]...`: the run and its parsed stdout.
    pub fn check(&self, watches: &[&str]) -> (Run, Value) {
        let config = self.config_arg();
        let mut args = vec!["check", "--config", config.as_str(), "--json"];
        for w in watches {
            args.push("--watch");
            args.push(w);
        }
        let run = self.run(&args);
        let value = run.json();
        (run, value)
    }

    pub fn status(&self) -> Value {
        let config = self.config_arg();
        let run = self.run(&["status", "--config", &config, "--json"]);
        run.assert_code(0);
        run.json()
    }

    pub fn registry_version(&self) -> u64 {
        let status = self.status();
        status["registry_version"]
            .as_u64()
            .unwrap_or_else(|| panic!("status has no registry_version: {status}"))
    }

    pub fn history(&self, tool: &str) -> Vec<Value> {
        let config = self.config_arg();
        let run = self.run(&["history", tool, "--config", &config, "--json"]);
        run.assert_code(0);
        match run.json() {
            Value::Array(a) => a,
            other => panic!("history is not an array: {other}"),
        }
    }

    pub fn pending_list(&self) -> Vec<Value> {
        let config = self.config_arg();
        let run = self.run(&["pending", "list", "--config", &config, "--json"]);
        run.assert_code(0);
        match run.json() {
            Value::Array(a) => a,
            other => panic!("pending list is not an array: {other}"),
        }
    }

    pub fn pending_show(&self, id: i64) -> Value {
        let config = self.config_arg();
        let id = id.to_string();
        let run = self.run(&["pending", "show", &id, "--config", &config, "--json"]);
        run.assert_code(0);
        run.json()
    }

    /// Every file in the sandbox (registry, -wal, -shm, config, documents) as bytes.
    pub fn all_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let entry = entry.unwrap();
                let p = entry.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if let Ok(bytes) = std::fs::read(&p) {
                    out.push((p, bytes));
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dir.path(), &mut out);
        out
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

/// Fills the filesystem holding `dir` with a file of zeros (returned, to remove when space
/// should come back), leaving `leave` bytes free (the full-disk tests on a small tmpfs).
pub fn fill_disk(dir: &std::path::Path, leave: u64) -> std::path::PathBuf {
    let filler = dir.join("filler");
    let _ = std::process::Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", filler.display()))
        .arg("bs=4k")
        .output();
    let full = std::fs::metadata(&filler).map(|m| m.len()).unwrap_or(0);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&filler)
        .and_then(|f| f.set_len(full.saturating_sub(leave)))
        .expect("shrink filler");
    filler
}

/// A compatible change of the pets document (v2) too big to store on a nearly full disk: a
/// pseudo-random hex description for each of 800 added query parameters, incompressible (the
/// registry stores rows gzip-compressed).
pub fn incompressible_pets_v2() -> Vec<u8> {
    let mut doc = Pets::v2().json();
    doc["info"]["description"] = Value::from("x".repeat(8192));
    let params = doc["paths"]["/pets"]["get"]["parameters"]
        .as_array_mut()
        .expect("params");
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for k in 0..800 {
        let description: String = (0..25)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                format!("{:08x}", state >> 32)
            })
            .collect();
        params.push(serde_json::json!({"name": format!("q{k}"), "in": "query",
            "description": description, "schema": {"type": "string"}}));
    }
    serde_json::to_vec(&doc).expect("json")
}

/// The first change of `rule` in a `diff --json` report.
pub fn change<'a>(report: &'a Value, rule: &str) -> &'a Value {
    report["changes"]
        .as_array()
        .unwrap_or_else(|| panic!("no changes array: {report}"))
        .iter()
        .find(|c| c["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} change: {report}"))
}

/// The one outcome of a single-watch `check --json`.
pub fn only_outcome(check: &Value) -> &Value {
    let outcomes = check["outcomes"]
        .as_array()
        .unwrap_or_else(|| panic!("check output has no outcomes array: {check}"));
    assert_eq!(outcomes.len(), 1, "expected exactly one outcome: {check}");
    &outcomes[0]
}

pub fn outcome_for<'a>(check: &'a Value, watch: &str) -> &'a Value {
    check["outcomes"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["watch"] == watch))
        .unwrap_or_else(|| panic!("no outcome for {watch}: {check}"))
}

pub fn assert_has_keys(value: &Value, keys: &[&str], what: &str) {
    let obj = value
        .as_object()
        .unwrap_or_else(|| panic!("{what} is not an object: {value}"));
    for k in keys {
        assert!(obj.contains_key(*k), "{what} lacks key {k:?}: {value}");
    }
}

// ---------------------------------------------------------------------------------------
// Canary encodings
// ---------------------------------------------------------------------------------------

fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Substrings that any base64 encoding of data containing `secret` must contain, for each
/// of the three byte alignments, in the standard and the URL-safe alphabet.
fn base64_needles(secret: &[u8]) -> Vec<String> {
    const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut needles = Vec::new();
    for alphabet in [STD, URL] {
        for pad in 0..3usize {
            let mut data = vec![0u8; pad];
            data.extend_from_slice(secret);
            let full_groups = data.len() / 3;
            let first_clean_group = usize::from(pad > 0);
            let encoded = base64(&data[..full_groups * 3], alphabet);
            needles.push(encoded[first_clean_group * 4..full_groups * 4].to_string());
        }
    }
    needles
}

/// Every form in which `secret` could leak: raw, base64 (any alignment, both alphabets),
/// percent-encoded (fully and partially), hex.
pub fn secret_needles(secret: &str) -> Vec<(String, Vec<u8>)> {
    let mut needles = vec![("raw".to_string(), secret.as_bytes().to_vec())];
    for n in base64_needles(secret.as_bytes()) {
        needles.push((format!("base64 {n}"), n.into_bytes()));
    }
    let full_pct: String = secret.bytes().map(|b| format!("%{b:02X}")).collect();
    let partial_pct: String = secret
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    needles.push(("percent-encoded".into(), full_pct.clone().into_bytes()));
    needles.push((
        "percent-encoded lowercase".into(),
        full_pct.to_lowercase().into_bytes(),
    ));
    needles.push(("partially percent-encoded".into(), partial_pct.into_bytes()));
    needles.push(("hex".into(), hex.clone().into_bytes()));
    needles.push(("HEX".into(), hex.to_uppercase().into_bytes()));
    needles
}

pub fn canary_needles() -> Vec<(String, Vec<u8>)> {
    secret_needles(CANARY)
}

/// The first form of `secret` found in `haystack`, if any.
pub fn find_secret(haystack: &[u8], secret: &str) -> Option<String> {
    // Every needle is ASCII, so a lossy UTF-8 view keeps each occurrence intact, and `str`
    // search runs std's optimized two-way matcher even in debug test builds.
    let text = String::from_utf8_lossy(haystack);
    secret_needles(secret)
        .into_iter()
        .find_map(|(what, needle)| {
            let needle = String::from_utf8_lossy(&needle).into_owned();
            text.contains(needle.as_str()).then_some(what)
        })
}

pub fn find_canary(haystack: &[u8]) -> Option<String> {
    find_secret(haystack, CANARY)
}

// ---------------------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------------------

/// A small petstore whose contract the scenarios vary one fact at a time.
#[derive(Clone, Debug)]
pub struct Pets {
    /// HTTP method of `listPets` on `/pets`.
    pub list_method: &'static str,
    pub limit_required: bool,
    pub limit_maximum: u64,
    /// The optional `tag` query parameter on listPets.
    pub tag_param: bool,
    /// The optional `tag` property of the Pet response schema.
    pub tag_property: bool,
    /// GET /pets/{petId} (showPetById).
    pub show_by_id: bool,
}

impl Pets {
    pub fn v1() -> Pets {
        Pets {
            list_method: "get",
            limit_required: false,
            limit_maximum: 100,
            tag_param: false,
            tag_property: false,
            show_by_id: true,
        }
    }

    pub fn json(&self) -> Value {
        let mut list_params = vec![json!({
            "name": "limit",
            "in": "query",
            "description": "How many items to return at one time (max 100)",
            "required": self.limit_required,
            "schema": {"type": "integer", "format": "int32", "maximum": self.limit_maximum}
        })];
        if self.tag_param {
            list_params.push(json!({
                "name": "tag",
                "in": "query",
                "required": false,
                "schema": {"type": "string"}
            }));
        }
        let mut paths = serde_json::Map::new();
        let mut pets = serde_json::Map::new();
        pets.insert(
            self.list_method.to_string(),
            json!({
                "operationId": "listPets",
                "summary": "List all pets",
                "parameters": list_params,
                "responses": {
                    "200": {
                        "description": "A paged array of pets",
                        "content": {"application/json": {"schema": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/Pet"}
                        }}}
                    }
                }
            }),
        );
        paths.insert("/pets".into(), Value::Object(pets));
        if self.show_by_id {
            paths.insert(
                "/pets/{petId}".into(),
                json!({"get": {
                    "operationId": "showPetById",
                    "summary": "Info for a specific pet",
                    "parameters": [{
                        "name": "petId",
                        "in": "path",
                        "required": true,
                        "schema": {"type": "string"}
                    }],
                    "responses": {
                        "200": {
                            "description": "Expected response to a valid request",
                            "content": {"application/json": {"schema": {
                                "$ref": "#/components/schemas/Pet"
                            }}}
                        }
                    }
                }}),
            );
        }
        let mut properties = serde_json::Map::new();
        properties.insert("id".into(), json!({"type": "integer", "format": "int64"}));
        properties.insert("name".into(), json!({"type": "string"}));
        if self.tag_property {
            properties.insert("tag".into(), json!({"type": "string"}));
        }
        json!({
            "openapi": "3.0.3",
            "info": {"title": "Acme Pets", "version": "1.0.0"},
            "servers": [{"url": "https://pets.acme.test/v1"}],
            "paths": paths,
            "components": {"schemas": {"Pet": {
                "type": "object",
                "required": ["id", "name"],
                "properties": properties
            }}}
        })
    }

    pub fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(&self.json()).unwrap()
    }

    /// v2: an optional query parameter and an optional response property (compatible).
    pub fn v2() -> Pets {
        Pets {
            tag_param: true,
            tag_property: true,
            ..Pets::v1()
        }
    }

    /// v3: v2 without GET /pets/{petId} (breaking: endpoint removed).
    pub fn v3() -> Pets {
        Pets {
            show_by_id: false,
            ..Pets::v2()
        }
    }

    /// v4: v3 with listPets as POST (security: GET -> POST for the same operationId).
    pub fn v4() -> Pets {
        Pets {
            list_method: "post",
            ..Pets::v3()
        }
    }
}

/// The v1 petstore written by hand as YAML (different key order and layout from the JSON).
pub const PETS_V1_YAML: &str = r##"# Acme pets, v1, as YAML
openapi: 3.0.3
info:
  version: 1.0.0
  title: Acme Pets
servers:
  - url: https://pets.acme.test/v1
components:
  schemas:
    Pet:
      type: object
      required: [id, name]
      properties:
        name:
          type: string
        id:
          format: int64
          type: integer
paths:
  /pets/{petId}:
    get:
      summary: Info for a specific pet
      operationId: showPetById
      parameters:
        - name: petId
          in: path
          required: true
          schema:
            type: string
      responses:
        "200":
          description: Expected response to a valid request
          content:
            application/json:
              schema:
                $ref: "#/components/schemas/Pet"
  /pets:
    get:
      operationId: listPets
      summary: List all pets
      parameters:
        - in: query
          name: limit
          description: How many items to return at one time (max 100)
          required: false
          schema:
            maximum: 100
            type: integer
            format: int32
      responses:
        "200":
          description: A paged array of pets
          content:
            application/json:
              schema:
                type: array
                items:
                  $ref: "#/components/schemas/Pet"
"##;

/// Runs `git` in `dir` with a throwaway identity and `main` as the default branch; panics
/// with git's stderr when it fails; returns its trimmed stdout.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
