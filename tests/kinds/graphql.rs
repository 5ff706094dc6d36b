//! GraphQL kind end to end: every corpus document normalizes (SDL and introspection of one
//! commit give the same ToolSpec), `diff --kind graphql` on the GitHub SDL pairs reports what
//! MANIFEST.md lists, introspection over POST against a local server, hostile input leaves the
//! registry untouched, and our verdicts next to graphql-inspector's.

use crate::common;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, Response, StatusCode};
use axum::routing::post;
use axum::Router;
use common::Sandbox;
use schemawatch::core::model::{Kind, ToolSpec};
use schemawatch::core::normalize::normalize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A GraphQL corpus document's real file (decompressed where it is stored compressed).
fn corpus_file(rel: &str) -> PathBuf {
    crate::common::corpus::path(&format!("graphql/{rel}"))
}

fn load(rel: &str) -> ToolSpec {
    let bytes = crate::common::corpus::read(&format!("graphql/{rel}"));
    normalize(Kind::Graphql, "gh.graphql", &bytes).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn every_corpus_document_normalizes_and_sdl_equals_introspection() {
    let mut seen = 0;
    for dir in ["github", "github-introspection"] {
        for file in crate::common::corpus::files_under(&format!("graphql/{dir}")) {
            let rel = file.strip_prefix("graphql/").unwrap().to_string();
            let start = Instant::now();
            let spec = load(&rel);
            eprintln!(
                "{rel}: {} endpoints, {} definitions, normalized in {:?} (debug build)",
                spec.endpoints.len(),
                spec.definitions.len(),
                start.elapsed()
            );
            assert!(spec.endpoints.len() > 100, "{rel}");
            seen += 1;
        }
    }
    assert_eq!(seen, 5, "the corpus has 3 SDL and 2 introspection files");
    for date in ["v2021-01-05", "v2021-10-01"] {
        let sdl = load(&format!("github/{date}.graphql"));
        let intro = load(&format!("github-introspection/{date}.json"));
        // Whole ToolSpecs, metadata included: the two inputs are one schema.
        assert!(
            sdl == intro,
            "{date}: SDL and introspection normalize differently"
        );
    }
}

/// `schemawatch diff OLD NEW --kind graphql --json` through the real binary.
fn diff_json(old: &str, new: &str) -> Value {
    let sb = Sandbox::new();
    let old = corpus_file(old).to_string_lossy().into_owned();
    let new = corpus_file(new).to_string_lossy().into_owned();
    let run = sb.run(&["diff", &old, &new, "--kind", "graphql", "--json"]);
    run.assert_code(0);
    run.json()
}

fn by_rule(report: &Value) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for c in report["changes"].as_array().unwrap() {
        *out.entry(c["rule"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    out
}

fn paths_of(report: &Value, rule: &str) -> BTreeSet<String> {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["rule"] == rule)
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn github_sdl_pair_2021_01_to_2021_10() {
    let r = diff_json("github/v2021-01-05.graphql", "github/v2021-10-01.graphql");
    // New mutations are writes: they need review.
    assert_eq!(r["compatibility"], "security_review");
    let rules = by_rule(&r);
    // MANIFEST: graphql-core FIELD_REMOVED=1, "Field Query.sponsorsListing was removed": the
    // endpoint and the property of Query (reachable through `relay: Query!`).
    assert_eq!(
        paths_of(&r, "endpoint-removed"),
        set(&["endpoints.sponsorsListing"])
    );
    assert_eq!(
        paths_of(&r, "response-property-removed"),
        set(&["types.Query.properties.sponsorsListing"])
    );
    // OPTIONAL_ARG_ADDED=2 + OPTIONAL_INPUT_FIELD_ADDED=2.
    assert_eq!(rules["request-property-added-optional"], 4);
    // VALUE_ADDED_TO_ENUM=11: 4 enums callers receive (breaking here), 10 they send; an enum
    // used both ways is counted on each side.
    assert_eq!(rules["response-enum-value-added"], 4);
    assert_eq!(rules["request-enum-value-added"], 10);
    // TYPE_ADDED_TO_UNION=6 + IMPLEMENTED_INTERFACE_ADDED=7 (graphql-core) land on 9 unions
    // and interfaces whose possible types grew.
    assert_eq!(rules["schema-composition-changed"], 9);
    assert_eq!(rules["endpoint-added-write"], 33);
    assert_eq!(rules["endpoint-added-read-only"], 1);
    let breaking: usize = r["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["severity"] == "breaking")
        .count();
    assert_eq!(breaking, 15);
}

#[test]
fn github_sdl_pair_2021_10_to_2026_07() {
    let r = diff_json(
        "github/v2021-10-01.graphql",
        "github/v2026-07-22-head.graphql",
    );
    assert_eq!(r["compatibility"], "security_review");
    let rules = by_rule(&r);
    // MANIFEST: FIELD_REMOVED=9. The removed types (TYPE_REMOVED=4) were reachable only
    // through removed fields, so they are covered by those removals.
    let removed: BTreeSet<String> = paths_of(&r, "response-property-removed")
        .into_iter()
        .filter(|p| !p.starts_with("types.Actor."))
        .collect();
    assert_eq!(
        removed,
        set(&[
            "types.Enterprise.properties.userAccounts",
            "types.EnterpriseBillingInfo.properties.availableSeats",
            "types.EnterpriseBillingInfo.properties.seats",
            "types.EnterpriseMemberEdge.properties.isUnlicensed",
            "types.EnterpriseOutsideCollaboratorEdge.properties.isUnlicensed",
            "types.EnterpriseOwnerInfo.properties.pendingCollaborators",
            "types.EnterpriseOwnerInfo.properties.teamDiscussionsSetting",
            "types.EnterpriseOwnerInfo.properties.teamDiscussionsSettingOrganizations",
            "types.EnterprisePendingMemberInvitationEdge.properties.isUnlicensed",
        ])
    );
    // FIELD_CHANGED_KIND=1 (Push.pusher: User! → Actor!): compared structurally, so the
    // interface Actor lacks 79 of User's fields, each a response property removal.
    assert_eq!(
        paths_of(&r, "response-property-removed").len() - removed.len(),
        79
    );
    // VALUE_REMOVED_FROM_ENUM=2: one enum callers send (breaking), one they only receive
    // (compatible: a response may lose a value).
    assert_eq!(
        paths_of(&r, "request-enum-value-removed"),
        set(&["types.RepositoryInvitationOrderField.enum"])
    );
    assert_eq!(
        paths_of(&r, "response-enum-value-removed"),
        set(&["types.FundingPlatform.enum"])
    );
    // Input fields made nullable (12) are compatible widenings for callers.
    assert_eq!(rules["request-property-became-optional"], 12);
    assert_eq!(rules["request-default-changed"], 1);
    assert_eq!(rules["schema-composition-changed"], 12);
    assert_eq!(rules["response-enum-value-added"], 15);
    assert_eq!(rules["endpoint-added-write"], 92);
    assert!(!rules.contains_key("endpoint-removed"));
    assert!(!rules.contains_key("unclassified-change"));
}

// --- introspection over POST ------------------------------------------------------------

#[derive(Default)]
struct GqlState {
    body: Vec<u8>,
    posts: usize,
    bad_requests: usize,
}

async fn serve_introspection(
    State(state): State<Arc<Mutex<GqlState>>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response<Body> {
    let mut s = state.lock().unwrap();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let asks_schema = request["query"]
        .as_str()
        .is_some_and(|q| q.contains("__schema") && q.contains("IntrospectionQuery"));
    if !is_json || !asks_schema || headers.contains_key(header::IF_NONE_MATCH) {
        s.bad_requests += 1;
        return Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .body(Body::from("{\"errors\":[{\"message\":\"bad request\"}]}"))
            .unwrap();
    }
    s.posts += 1;
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ETAG, "\"never-used\"")
        .body(Body::from(s.body.clone()))
        .unwrap()
}

struct GqlServer {
    _runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    state: Arc<Mutex<GqlState>>,
}

impl GqlServer {
    fn start(body: Vec<u8>) -> GqlServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let state = Arc::new(Mutex::new(GqlState {
            body,
            ..GqlState::default()
        }));
        // POST only: a GET gets 405 from the router.
        let router = Router::new()
            .route("/graphql", post(serve_introspection))
            // A moved endpoint: the POST is repeated at the new location.
            .route(
                "/moved",
                post(|| async {
                    Response::builder()
                        .status(StatusCode::PERMANENT_REDIRECT)
                        .header(header::LOCATION, "/graphql")
                        .body(Body::empty())
                        .unwrap()
                }),
            )
            .with_state(state.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        GqlServer {
            _runtime: runtime,
            addr,
            state,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/graphql", self.addr)
    }

    fn set_body(&self, body: Vec<u8>) {
        self.state.lock().unwrap().body = body;
    }
}

/// The corpus file is the bare `{"__schema": ...}`; a server answers `{"data": {...}}`.
fn introspection_response(rel: &str) -> Vec<u8> {
    let text = crate::common::corpus::read_string(&format!("graphql/{rel}"));
    format!("{{\"data\": {text}}}").into_bytes()
}

fn config(url_or_path: &str, key: &str) -> String {
    format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"github.graphql\"\nkind = \"graphql\"\n{key} = \"{url_or_path}\"\ntimeout = \"60s\"\n"
    )
}

fn only_outcome(check: &Value) -> &Value {
    let outcomes = check["outcomes"].as_array().expect("outcomes");
    assert_eq!(outcomes.len(), 1, "{check}");
    &outcomes[0]
}

#[test]
fn introspection_over_post_registers_then_detects_drift() {
    let server = GqlServer::start(introspection_response(
        "github-introspection/v2021-01-05.json",
    ));
    let sb = Sandbox::new();
    sb.write_config(&config(&server.url(), "url"));

    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        only_outcome(&check)["action"],
        "registered",
        "{}",
        run.describe()
    );
    assert_eq!(sb.registry_version(), 1);

    // Same schema again: unchanged, fetched in full (POST) again with no validator.
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        only_outcome(&check)["action"],
        "unchanged",
        "{}",
        run.describe()
    );
    {
        let s = server.state.lock().unwrap();
        assert_eq!((s.posts, s.bad_requests), (2, 0));
    }

    // The accepted contract equals the one the SDL of the same commit gives.
    let sdl_fp = {
        let spec = load("github/v2021-01-05.graphql");
        let mut spec = spec;
        spec.namespace = "github".into();
        spec.name = "graphql".into();
        schemawatch::core::fingerprint::tool_fingerprint(&spec)
    };
    let history = sb.history("github.graphql");
    assert_eq!(history.len(), 1);
    let stored = history[0].to_string();
    assert!(stored.contains(&sdl_fp), "history {stored} lacks {sdl_fp}");

    // `diff URL FILE --kind graphql` introspects the URL: same schema as the SDL file.
    let sdl = corpus_file("github/v2021-01-05.graphql")
        .to_string_lossy()
        .into_owned();
    let run = sb.run(&["diff", &server.url(), &sdl, "--kind", "graphql", "--json"]);
    run.assert_code(0);
    assert_eq!(
        run.json()["compatibility"],
        "identical",
        "{}",
        run.describe()
    );
    assert_eq!(server.state.lock().unwrap().posts, 3);
    let moved = server.url().replace("/graphql", "/moved");
    let run = sb.run(&["diff", &moved, &sdl, "--kind", "graphql", "--json"]);
    run.assert_code(0);
    assert_eq!(
        run.json()["compatibility"],
        "identical",
        "{}",
        run.describe()
    );
    assert_eq!(server.state.lock().unwrap().posts, 4);

    // A newer schema with new mutations: review, current contract kept.
    server.set_body(introspection_response(
        "github-introspection/v2021-10-01.json",
    ));
    let (_run, check) = sb.check(&[]);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "pending_review", "{check}");
    assert_eq!(o["compatibility"], "security_review");
    assert_eq!(sb.registry_version(), 1);
}

/// A server that announces a body longer than it sends, then closes the connection.
fn truncating_server() -> (std::thread::JoinHandle<()>, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/graphql", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        use std::io::{Read, Write};
        if let Ok((mut stream, _)) = listener.accept() {
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .ok();
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"data\": {\"__schema\": {\"queryType\"",
            );
        }
    });
    (handle, url)
}

#[test]
fn hostile_input_is_an_error_and_leaves_the_registry_untouched() {
    let server = GqlServer::start(introspection_response(
        "github-introspection/v2021-01-05.json",
    ));
    let sb = Sandbox::new();
    sb.write_config(&config(&server.url(), "url"));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered");
    let history_before = sb.history("github.graphql");

    let expect_error = |sb: &Sandbox, what: &str, needle: &str| {
        let (run, check) = sb.check(&[]);
        assert_eq!(run.code, 1, "{what}: {}", run.describe());
        let o = only_outcome(&check);
        assert_eq!(o["action"], "error", "{what}: {check}");
        let error = o["error"].as_str().unwrap_or("");
        assert!(error.contains(needle), "{what}: {error}");
        assert_eq!(sb.registry_version(), 1, "{what}");
        assert_eq!(sb.history("github.graphql"), history_before, "{what}");
    };

    // A truncated JSON body (complete HTTP response).
    let full = introspection_response("github-introspection/v2021-01-05.json");
    server.set_body(full[..full.len() / 2].to_vec());
    expect_error(&sb, "truncated JSON", "invalid graphql document");
    // JSON nested past the parser's depth limit.
    server.set_body(format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)).into_bytes());
    expect_error(&sb, "deep JSON", "nesting deeper");
    // Sources below differ from the registered one (a watch whose source changes goes stale),
    // so each runs against a fresh registry: error, and nothing written.
    let fresh_error = |config_text: &dyn Fn(&Sandbox) -> String, what: &str, needle: &str| {
        let sb = Sandbox::new();
        sb.write_config(&config_text(&sb));
        let (run, check) = sb.check(&[]);
        assert_eq!(run.code, 1, "{what}: {}", run.describe());
        let o = only_outcome(&check);
        assert_eq!(o["action"], "error", "{what}: {check}");
        let error = o["error"].as_str().unwrap_or("");
        assert!(error.contains(needle), "{what}: {error}");
        assert_eq!(sb.registry_version(), 0, "{what}");
        assert_eq!(sb.status()["watches"][0]["status"], "error", "{what}");
    };
    // A body cut off by the connection closing early.
    let (handle, url) = truncating_server();
    fresh_error(
        &|_| config(&url, "url"),
        "connection closed mid-body",
        "truncated",
    );
    handle.join().unwrap();

    // A server that accepts and never answers: an error within the watch's deadline.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/graphql", silent.local_addr().unwrap());
    let start = Instant::now();
    fresh_error(
        &|_| config(&silent_url, "url").replace("timeout = \"60s\"", "timeout = \"2s\""),
        "server never answers",
        "deadline",
    );
    assert!(
        start.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    drop(silent);

    // SDL files (path) past apollo-parser's recursion and token limits.
    let deep = format!(
        "type Query {{ a: {}Int{} }}",
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    fresh_error(
        &|sb| {
            config(
                &sb.write_file("deep.graphql", deep.as_bytes())
                    .to_string_lossy(),
                "path",
            )
        },
        "deep SDL",
        "limit",
    );
    let tokens = schemawatch::core::normalize::graphql::MAX_SDL_TOKENS;
    // Every lexer token counts (commas and whitespace too): one past the limit.
    let huge = format!("type Query {{ a: Int {} }}", ",".repeat(tokens + 1));
    fresh_error(
        &|sb| {
            config(
                &sb.write_file("huge.graphql", huge.as_bytes())
                    .to_string_lossy(),
                "path",
            )
        },
        "huge token count",
        "token limit",
    );
}

// --- graphql-inspector ------------------------------------------------------------------

fn peers_required() -> bool {
    std::env::var("SCHEMAWATCH_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

fn node_available() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `tests/peers/graphql-inspector/gi.mjs` (graphql-inspector's diff engine) on a pair.
fn inspector(old: &str, new: &str) -> Option<Value> {
    inspector_files(&corpus_file(old), &corpus_file(new))
}

/// Runs `gi.mjs` on two SDL files.
fn inspector_files(old: &std::path::Path, new: &std::path::Path) -> Option<Value> {
    inspector_pairs(&[(old.to_path_buf(), new.to_path_buf())]).and_then(|mut v| v.pop())
}

/// Runs `gi.mjs` once on pairs of SDL files: its answer for each, in order.
fn inspector_pairs(pairs: &[(PathBuf, PathBuf)]) -> Option<Vec<Value>> {
    if !node_available() {
        assert!(
            !peers_required(),
            "node is absent but SCHEMAWATCH_REQUIRE_PEERS=1"
        );
        eprintln!("SKIP: node is absent; graphql-inspector comparison not run");
        return None;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/graphql-inspector");
    assert!(
        dir.join("node_modules/@graphql-inspector/core").is_dir(),
        "graphql-inspector is not installed: run `npm ci --prefix tests/peers/graphql-inspector` (.ci/run does)"
    );
    let out = std::process::Command::new("node")
        .arg(dir.join("gi.mjs"))
        .args(pairs.iter().flat_map(|(a, b)| [a, b]))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gi.mjs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), pairs.len());
    Some(answers)
}

fn inspector_paths(gi: &Value, level: &str, ty: &str) -> BTreeSet<String> {
    gi["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["criticality"] == level && c["type"] == ty)
        .map(|c| c["path"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Where our verdict on the GitHub pairs differs from graphql-inspector's, and why. The
/// numbers are pinned in tests/peers/graphql-inspector/github-expected.json too.
#[test]
fn github_pairs_next_to_graphql_inspector() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/peers/graphql-inspector/github-expected.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for (old, new) in [
        ("github/v2021-01-05.graphql", "github/v2021-10-01.graphql"),
        (
            "github/v2021-10-01.graphql",
            "github/v2026-07-22-head.graphql",
        ),
    ] {
        let Some(gi) = inspector(old, new) else {
            return;
        };
        let ours = diff_json(old, new);
        let key = format!("{old} -> {new}");
        let want = &expected[&key];
        assert_eq!(gi["by_level"], want["inspector_by_level"], "{key}");
        assert_eq!(
            by_rule(&ours),
            serde_json::from_value::<BTreeMap<String, usize>>(want["ours_by_rule"].clone())
                .unwrap(),
            "{key}"
        );

        // 1. Every field graphql-inspector calls removed (BREAKING) we report as breaking at
        //    the same coordinate (a root field as the endpoint too).
        for coordinate in inspector_paths(&gi, "BREAKING", "FIELD_REMOVED") {
            let (ty, field) = coordinate.split_once('.').unwrap();
            let path = format!("types.{ty}.properties.{field}");
            assert!(
                paths_of(&ours, "response-property-removed").contains(&path),
                "{key}: {path}"
            );
        }
        // 2. Types it calls removed (BREAKING) we do not list: a type outside every endpoint's
        //    reach is not part of the contract, and these were reachable only through removed
        //    fields, which are reported (1.).
        // 3. A value removed from an enum callers only receive: BREAKING there, compatible
        //    here (a response may lose a value; callers cannot send it). Removed from an enum
        //    callers send: breaking in both.
        for coordinate in inspector_paths(&gi, "BREAKING", "ENUM_VALUE_REMOVED") {
            let ty = coordinate.split('.').next().unwrap();
            let path = format!("types.{ty}.enum");
            assert!(
                paths_of(&ours, "request-enum-value-removed").contains(&path)
                    || paths_of(&ours, "response-enum-value-removed").contains(&path),
                "{key}: {path}"
            );
        }
        // 4. DANGEROUS there, breaking here: a value added to an enum callers receive, and a
        //    new possible type of a union or interface callers receive (a client switching on
        //    __typename meets an unknown type): the response may only narrow (docs/design.md).
        //    Values added to enums callers only send are compatible in both.
        let dangerous_enum = inspector_paths(&gi, "DANGEROUS", "ENUM_VALUE_ADDED").len();
        let ours_enum = paths_of(&ours, "response-enum-value-added").len()
            + paths_of(&ours, "request-enum-value-added").len();
        assert!(ours_enum > 0 && dangerous_enum > 0, "{key}");
        // 5. New mutations are NON_BREAKING there; here they are security_review (a new
        //    write needs a reviewer), which is why our verdict on both pairs is
        //    security_review while graphql-inspector's is "breaking" (any BREAKING change).
        assert_eq!(ours["compatibility"], "security_review");
        assert_eq!(
            want["inspector_verdict"],
            if gi["by_level"].get("BREAKING").is_some() {
                "breaking"
            } else {
                "non_breaking"
            }
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Directive usages next to graphql-inspector (issue 30)

/// A schema with a slot for one directive usage in every position SDL allows one:
/// argument, field, interface, object, union, enum, enum value, input object, input field,
/// scalar.
const USAGE_SLOTS: &[&str] = &[
    "arg", "field", "iface", "obj", "union", "enum", "value", "input", "ifield", "scalar",
];

fn usage_schema(slot: &str, usage: &str) -> String {
    let at = |s: &str| {
        if s == slot {
            format!(" {usage}")
        } else {
            String::new()
        }
    };
    format!(
        "directive @tag(name: String) repeatable on SCHEMA | SCALAR | OBJECT | FIELD_DEFINITION | \
         ARGUMENT_DEFINITION | INTERFACE | UNION | ENUM | ENUM_VALUE | INPUT_OBJECT | \
         INPUT_FIELD_DEFINITION\n\
         type Query {{ node(id: ID{arg}): Node{field} pick(f: Filter): Pet }}\n\
         interface Node{iface} {{ id: ID! }}\n\
         type Cat implements Node{obj} {{ id: ID! home: Url }}\n\
         type Dog implements Node {{ id: ID! }}\n\
         union Pet{union} = Cat | Dog\n\
         enum Color{enum} {{ RED{value} BLUE }}\n\
         input Filter{input} {{ color: Color{ifield} name: String }}\n\
         scalar Url{scalar}\n",
        arg = at("arg"),
        field = at("field"),
        iface = at("iface"),
        obj = at("obj"),
        union = at("union"),
        enum = at("enum"),
        value = at("value"),
        input = at("input"),
        ifield = at("ifield"),
        scalar = at("scalar"),
    )
}

/// Adding or removing a directive usage, in every position, of a built-in the model reads
/// somewhere (`@oneOf`, `@deprecated`, `@specifiedBy`) and of a schema's own (`@tag`): the
/// pairs are generated here, graphql-inspector (the pinned peer) rates each, and our verdict
/// is at least as severe (its BREAKING and DANGEROUS are breaking for us, NON_BREAKING at
/// least compatible: never `identical`). `@oneOf` on a field or a union used to read as
/// identical: the normalizer dropped it.
#[test]
fn directive_usages_are_judged_at_least_as_severely_as_graphql_inspector() {
    use schemawatch::core::diff::classify;
    use schemawatch::core::model::Compatibility;
    let dir = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    for slot in USAGE_SLOTS {
        for (u, usage) in [
            "@oneOf",
            "@tag(name: \"x\")",
            "@deprecated",
            "@specifiedBy(url: \"https://example.com/s\")",
        ]
        .into_iter()
        .enumerate()
        {
            let (without, with) = (usage_schema(slot, ""), usage_schema(slot, usage));
            let a = dir.path().join(format!("{slot}-{u}-without.graphql"));
            let b = dir.path().join(format!("{slot}-{u}-with.graphql"));
            std::fs::write(&a, &without).unwrap();
            std::fs::write(&b, &with).unwrap();
            cases.push((
                format!("{usage} added on {slot}"),
                a.clone(),
                b.clone(),
                without.clone(),
                with.clone(),
            ));
            cases.push((format!("{usage} removed on {slot}"), b, a, with, without));
        }
    }
    let pairs: Vec<(PathBuf, PathBuf)> = cases
        .iter()
        .map(|(_, a, b, _, _)| (a.clone(), b.clone()))
        .collect();
    let Some(answers) = inspector_pairs(&pairs) else {
        return;
    };
    let spec = |text: &str| normalize(Kind::Graphql, "t.g", text.as_bytes()).unwrap();
    let mut compared = 0;
    for ((what, _, _, old_text, new_text), gi) in cases.iter().zip(&answers) {
        let worst = gi["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| match c["criticality"].as_str() {
                Some("BREAKING") | Some("DANGEROUS") => Compatibility::Breaking,
                _ => Compatibility::Compatible,
            })
            .max()
            .unwrap_or(Compatibility::Identical);
        let report = classify(&spec(old_text), &spec(new_text), &Default::default());
        assert!(
            report.compatibility >= worst,
            "{what}: we say {:?} ({:?}), graphql-inspector {:?} ({})",
            report.compatibility,
            report.changes.iter().map(|c| &c.rule).collect::<Vec<_>>(),
            worst,
            gi["changes"]
        );
        compared += 1;
    }
    assert_eq!(compared, USAGE_SLOTS.len() * 4 * 2);
}
