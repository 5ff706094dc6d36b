//! OpenRPC, OData and OPTIMADE: every corpus document normalizes, `diff --kind K` on every
//! corpus pair reports what MANIFEST.md lists (counts pinned), live `check`s through the real
//! binary (a 304 on the second check for OpenRPC and OData; OPTIMADE's multi-resource fetch),
//! and hostile documents give an `error` outcome with a clear reason and the registry untouched.

use crate::common;

use common::*;
use schemawatch::core::model::Kind;
use schemawatch::core::normalize::normalize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A corpus document's real file (decompressed where it is stored compressed).
fn corpus(rel: &str) -> PathBuf {
    crate::common::corpus::path(rel)
}

fn files_under(dir: &str, ext: &str) -> Vec<PathBuf> {
    crate::common::corpus::files_under(dir)
        .iter()
        .filter(|rel| rel.ends_with(&format!(".{ext}")))
        .map(|rel| corpus(rel))
        .collect()
}

#[test]
fn every_corpus_document_of_these_kinds_normalizes() {
    let mut seen = 0;
    for f in files_under("openrpc", "json") {
        let spec = normalize(Kind::Openrpc, "corpus.doc", &std::fs::read(&f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(spec.kind, Kind::Openrpc);
        seen += 1;
    }
    for f in files_under("odata", "xml") {
        let bytes = std::fs::read(&f).unwrap();
        let start = Instant::now();
        let spec = normalize(Kind::Odata, "corpus.doc", &bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        eprintln!(
            "normalized {} ({} bytes) in {:?}: {} endpoints, {} definitions",
            f.display(),
            bytes.len(),
            start.elapsed(),
            spec.endpoints.len(),
            spec.definitions.len()
        );
        assert!(!spec.endpoints.is_empty(), "{}", f.display());
        seen += 1;
    }
    for f in files_under("optimade", "json") {
        let kind = if f.to_string_lossy().contains("optimade-openapi") {
            Kind::Openapi
        } else {
            Kind::Optimade
        };
        normalize(kind, "corpus.doc", &std::fs::read(&f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        seen += 1;
    }
    assert_eq!(seen, 12 + 10 + 7, "every corpus file of the three kinds");
}

/// Runs `diff OLD NEW --kind K --json` with the real binary; returns the report and the
/// number of changes per rule.
fn diff(kind: &str, old: &str, new: &str) -> (Value, BTreeMap<String, usize>) {
    let sb = Sandbox::new();
    let (old, new) = (corpus(old), corpus(new));
    let run = sb.run(&[
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--kind",
        kind,
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.describe());
    let report = run.json();
    let mut rules = BTreeMap::new();
    for c in report["changes"].as_array().expect("changes") {
        *rules
            .entry(c["rule"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    (report, rules)
}

fn count(rules: &BTreeMap<String, usize>, rule: &str) -> usize {
    rules.get(rule).copied().unwrap_or(0)
}

fn endpoints_with(report: &Value, rule: &str) -> Vec<String> {
    let mut out: Vec<String> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["rule"] == rule)
        .map(|c| {
            c["path"]
                .as_str()
                .unwrap()
                .trim_start_matches("endpoints.")
                .to_string()
        })
        .collect();
    out.sort();
    out
}

#[test]
fn openrpc_corpus_pairs_report_the_manifest_changes() {
    let eth = "openrpc/ethereum-execution-apis";
    // beta.1 → beta.3: +10 methods, 0 removed, 0 params newly required.
    let (report, rules) = diff(
        "openrpc",
        &format!("{eth}/v1.0.0-beta.1.json"),
        &format!("{eth}/v1.0.0-beta.3.json"),
    );
    assert_eq!(
        report["compatibility"], "security_review",
        "new methods need review"
    );
    assert_eq!(count(&rules, "endpoint-added-write"), 10, "{rules:?}");
    assert_eq!(count(&rules, "endpoint-removed"), 0);
    assert_eq!(count(&rules, "request-parameter-became-required"), 0);
    assert_eq!(count(&rules, "request-parameter-added-required"), 0);
    assert_eq!(count(&rules, "unclassified-change"), 0);
    let added = endpoints_with(&report, "endpoint-added-write");
    assert!(
        added.contains(&"engine_exchangeCapabilities".to_string()),
        "{added:?}"
    );

    // beta.3 → beta.7: +28, -7 methods; 10 params newly required, 3 removed.
    let (report, rules) = diff(
        "openrpc",
        &format!("{eth}/v1.0.0-beta.3.json"),
        &format!("{eth}/v1.0.0-beta.7.json"),
    );
    assert_eq!(report["compatibility"], "security_review");
    assert_eq!(count(&rules, "endpoint-added-write"), 28, "{rules:?}");
    assert_eq!(
        endpoints_with(&report, "endpoint-removed"),
        vec![
            "eth_getUncleCountByBlockHash",
            "eth_getUncleCountByBlockNumber",
            "eth_getWork",
            "eth_hashrate",
            "eth_mining",
            "eth_submitHashrate",
            "eth_submitWork"
        ]
    );
    // "10 params newly required" = 7 optional → required + 3 new required params.
    assert_eq!(
        count(&rules, "request-parameter-became-required"),
        7,
        "{rules:?}"
    );
    assert_eq!(
        count(&rules, "request-parameter-added-required"),
        3,
        "{rules:?}"
    );
    assert_eq!(count(&rules, "request-parameter-removed"), 3, "{rules:?}");
    assert_eq!(count(&rules, "unclassified-change"), 0);

    // petstore 2019 → 2020: 1 param newly required, result of create_pet changed. MANIFEST
    // also counts "1 params removed": get_pet's petId became a `$ref` to a content
    // descriptor, which we resolve, so it is the same param (its type changed).
    let ex = "openrpc/open-rpc-examples";
    let (report, rules) = diff(
        "openrpc",
        &format!("{ex}/petstore-openrpc.v2019-06-10.json"),
        &format!("{ex}/petstore-openrpc.json"),
    );
    assert_eq!(report["compatibility"], "breaking");
    assert_eq!(
        count(&rules, "request-parameter-became-required"),
        1,
        "{rules:?}"
    );
    assert_eq!(count(&rules, "request-parameter-removed"), 0, "{rules:?}");
    let paths: Vec<&str> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"endpoints.get_pet.parameters.param.petId.schema.type"));
    assert!(paths
        .iter()
        .any(|p| p.starts_with("endpoints.create_pet.output_schema")));
}

#[test]
fn odata_corpus_pairs_report_the_manifest_changes() {
    // Microsoft Graph v1.0, 2.6 MB each side. By qualified name (MANIFEST's counts key types
    // by local name, which collide across Graph's namespaces, hence its phantom removals):
    // +196 types, 0 removed; +132 properties/members; 0 container members changed;
    // +33 operations, one of which is runHuntingQuery gaining `timespan`.
    let start = Instant::now();
    let (report, rules) = diff(
        "odata",
        "odata/msgraph-v1.0/v2024-01-17.xml",
        "odata/msgraph-v1.0/v2024-05-22.xml",
    );
    eprintln!("Graph pair diffed in {:?}: {rules:?}", start.elapsed());
    assert_eq!(
        report["compatibility"], "security_review",
        "new actions need review"
    );
    assert_eq!(count(&rules, "endpoint-added-write"), 26, "{rules:?}");
    assert_eq!(count(&rules, "endpoint-added-read-only"), 6, "{rules:?}");
    assert_eq!(count(&rules, "endpoint-removed"), 0);
    assert_eq!(count(&rules, "request-parameter-added-optional"), 1);
    assert_eq!(count(&rules, "response-property-added"), 71, "{rules:?}");
    assert_eq!(count(&rules, "response-enum-value-added"), 53, "{rules:?}");
    // auditLogRoot and security lost `BaseType="graph.entity"` (and with it `id`).
    assert_eq!(count(&rules, "schema-composition-changed"), 2, "{rules:?}");
    // The entity types are on both sides: a new non-nullable property breaks inserts.
    assert_eq!(
        count(&rules, "request-property-added-required"),
        1,
        "{rules:?}"
    );
    assert_eq!(count(&rules, "response-property-removed"), 0);
    assert_eq!(count(&rules, "unclassified-change"), 0);

    // Graph GovSG: +4 types, +3 container members (2 entity sets, 1 singleton), +9 properties.
    let (report, rules) = diff(
        "odata",
        "odata/msgraph-v1.0-govsg/v2025-05-09.xml",
        "odata/msgraph-v1.0-govsg/v2026-02-10.xml",
    );
    assert_eq!(report["compatibility"], "security_review");
    // Entity set: GET list, GET by key (read-only), POST, PATCH, DELETE; singleton: GET, PATCH.
    assert_eq!(
        count(&rules, "endpoint-added-read-only"),
        2 + 2 + 1,
        "{rules:?}"
    );
    assert_eq!(
        count(&rules, "endpoint-added-write"),
        3 + 3 + 1,
        "{rules:?}"
    );
    assert_eq!(count(&rules, "response-property-added"), 9, "{rules:?}");
    assert_eq!(count(&rules, "endpoint-removed"), 0);
    assert_eq!(count(&rules, "unclassified-change"), 0);

    // TripPin 2015 → 2019: a different service generation (new namespace), Photos removed.
    let (report, rules) = diff(
        "odata",
        "odata/trippin/v2015-sampleservice.xml",
        "odata/trippin/v2019-inmemory.xml",
    );
    assert_eq!(report["compatibility"], "security_review");
    let removed = endpoints_with(&report, "endpoint-removed");
    for e in [
        "Photos",
        "Photos.create",
        "Photos.delete",
        "Photos.get",
        "Photos.update",
    ] {
        assert!(removed.contains(&e.to_string()), "{removed:?}");
    }
    assert!(
        count(&rules, "request-enum-value-removed") >= 1,
        "PersonGender.Unknown removed"
    );
    assert!(
        count(&rules, "response-property-removed") >= 1,
        "Trip.Photos removed"
    );
    assert_eq!(count(&rules, "unclassified-change"), 0);

    // Northwind v4 vs the alternate-keys variant: only annotations differ. Annotations are
    // deny by default: each added `AlternateKeys` is an `annotation-changed` (breaking until
    // a watch overrides the rule).
    let (report, rules) = diff(
        "odata",
        "odata/northwind/v4-odata.xml",
        "odata/northwind/v4-odata-with-alternate-keys.xml",
    );
    assert_eq!(report["compatibility"], "breaking", "{report}");
    assert_eq!(count(&rules, "annotation-changed"), 3, "{report}");
    assert_eq!(rules.len(), 1, "{report}");

    // Northwind v3 → v4: a protocol change (transport odata-v3 → odata-v4) plus 18 new types.
    let (report, rules) = diff(
        "odata",
        "odata/northwind/v3-odata.xml",
        "odata/northwind/v4-odata.xml",
    );
    assert_eq!(report["compatibility"], "security_review");
    assert_eq!(count(&rules, "execution-target-changed"), 1);
    assert_eq!(count(&rules, "unclassified-change"), 0);
}

#[test]
fn optimade_corpus_pairs_report_the_manifest_changes() {
    // /info gained top-level `meta` and `relationships`: the response envelope, not contract.
    let (report, _) = diff(
        "optimade",
        "optimade/providers-index-info/v2020-02-12.json",
        "optimade/providers-index-info/v2020-07-03.json",
    );
    assert_eq!(report["compatibility"], "identical", "{report}");
    // info/structures: properties 1 → 25 (+24), description added.
    let (report, rules) = diff(
        "optimade",
        "optimade/info-structures/v2024-07-18-stub.json",
        "optimade/info-structures/v2026-06-30.json",
    );
    assert_eq!(report["compatibility"], "compatible", "{report}");
    assert_eq!(count(&rules, "response-property-added"), 24, "{rules:?}");
    assert_eq!(count(&rules, "request-parameter-added-optional"), 1, "sort");
    // The reference server's OpenAPI files are kind openapi; the pair still diffs.
    let (report, rules) = diff(
        "openapi",
        "optimade/optimade-openapi/v0.12.9.json",
        "optimade/optimade-openapi/v1.0.0.json",
    );
    assert!(report["compatibility"].is_string());
    assert_eq!(count(&rules, "endpoint-removed"), 0);
}

// ---------------------------------------------------------------------------------------
// Live checks
// ---------------------------------------------------------------------------------------

fn watch_config(kind: &str, url: &str) -> String {
    format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.svc\"\nkind = \"{kind}\"\nurl = \"{url}\"\ntimeout = \"10s\"\n"
    )
}

fn fingerprint(sb: &Sandbox) -> String {
    sb.status()["watches"][0]["fingerprint"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Registers `good`, checks again (a 304), then serves each hostile document: every one is an
/// `error` outcome whose reason contains the expected words, and the registry is untouched.
fn live_conditional_and_hostile(kind: &str, good: Vec<u8>, hostile: Vec<(&str, Vec<u8>, &[&str])>) {
    let server = DocServer::start(good.clone());
    let sb = Sandbox::new();
    sb.write_config(&watch_config(kind, &server.url()));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        only_outcome(&check)["action"],
        "registered",
        "{}",
        run.describe()
    );
    let fp = fingerprint(&sb);

    let before = server.counters();
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        only_outcome(&check)["action"],
        "unchanged",
        "{}",
        run.describe()
    );
    let after = server.counters();
    assert_eq!(after.requests, before.requests + 1);
    assert_eq!(
        after.not_modified,
        before.not_modified + 1,
        "the second check is a 304"
    );
    assert_eq!(server.last_if_none_match(), Some(server.current_etag()));

    for (what, body, words) in hostile {
        server.set_document(body);
        let started = Instant::now();
        let (run, check) = sb.check(&[]);
        assert!(
            started.elapsed().as_secs() < 10,
            "{what}: within the deadline"
        );
        run.assert_code(1);
        let o = only_outcome(&check);
        assert_eq!(o["action"], "error", "{what}: {}", run.describe());
        let error = o["error"].as_str().unwrap_or_default().to_string();
        assert!(
            words.iter().any(|w| error.contains(w)),
            "{what}: the reason names the problem: {error}"
        );
        eprintln!("{kind} {what}: {error}");
        assert_eq!(check["registry_version"], 1, "{what}: registry untouched");
        assert_eq!(fingerprint(&sb), fp, "{what}");
        assert_eq!(sb.history("acme.svc").len(), 1, "{what}");
    }
    // Back to the good document: still the same contract (the validator moved on, full body).
    server.set_document(good);
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        only_outcome(&check)["action"],
        "unchanged",
        "{}",
        run.describe()
    );
}

#[test]
fn openrpc_live_check_is_conditional_and_hostile_documents_are_errors() {
    let good = std::fs::read(corpus("openrpc/open-rpc-examples/petstore-openrpc.json")).unwrap();
    let deep = format!(
        "{{\"openrpc\":\"1.2.6\",\"methods\":[{{\"name\":\"m\",\"result\":{{\"name\":\"r\",\"schema\":{}1{}}}}}]}}",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let cycle = br##"{"openrpc":"1.2.6","methods":[{"name":"m","params":[{"$ref":"#/components/contentDescriptors/A"}]}],
        "components":{"contentDescriptors":{"A":{"$ref":"#/components/contentDescriptors/B"},"B":{"$ref":"#/components/contentDescriptors/A"}}}}"##;
    let duplicate = br#"{"openrpc":"1.2.6","methods":[],"methods":[{"name":"m"}]}"#;
    let truncated = good[..good.len() / 2].to_vec();
    live_conditional_and_hostile(
        "openrpc",
        good,
        vec![
            ("deep nesting", deep.into_bytes(), &["nesting deeper"]),
            ("$ref cycle", cycle.to_vec(), &["cyclic"]),
            ("duplicate keys", duplicate.to_vec(), &["duplicate"]),
            ("truncated body", truncated, &["invalid openrpc document"]),
        ],
    );
}

#[test]
fn odata_live_check_is_conditional_and_hostile_documents_are_errors() {
    let good = std::fs::read(corpus("odata/trippin/v2015-sampleservice.xml")).unwrap();
    let bomb = br#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">&lol3;</edmx:Edmx>"#;
    let xxe = br#"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">&x;</edmx:Edmx>"#;
    let deep = format!(
        "<edmx:Edmx Version=\"4.0\" xmlns:edmx=\"x\"><edmx:DataServices>{}{}</edmx:DataServices></edmx:Edmx>",
        "<a>".repeat(100_000),
        "</a>".repeat(100_000)
    );
    let truncated = good[..good.len() / 2].to_vec();
    let undefined_entity = br#"<edmx:Edmx Version="4.0" xmlns:edmx="x">&x;</edmx:Edmx>"#;
    live_conditional_and_hostile(
        "odata",
        good,
        vec![
            ("billion laughs", bomb.to_vec(), &["DTD"]),
            ("XXE", xxe.to_vec(), &["DTD"]),
            ("undeclared entity", undefined_entity.to_vec(), &["entity"]),
            (
                "deep nesting",
                deep.into_bytes(),
                &["nested deeper", "depth", "nesting"],
            ),
            ("truncated body", truncated, &["invalid XML"]),
        ],
    );
}

// --- OPTIMADE: several resources, no validators -------------------------------------------

#[derive(Default)]
struct OptimadeState {
    routes: BTreeMap<String, (u16, Vec<u8>)>,
    requests: Vec<(String, bool)>,
}

struct OptimadeServer {
    _runtime: tokio::runtime::Runtime,
    addr: std::net::SocketAddr,
    state: Arc<Mutex<OptimadeState>>,
}

impl OptimadeServer {
    fn start() -> OptimadeServer {
        use axum::extract::State;
        use axum::http::{HeaderMap, StatusCode, Uri};
        use axum::response::IntoResponse;
        async fn serve(
            State(state): State<Arc<Mutex<OptimadeState>>>,
            uri: Uri,
            headers: HeaderMap,
        ) -> axum::response::Response {
            let mut s = state.lock().unwrap();
            let path = uri.path().to_string();
            let conditional =
                headers.contains_key("if-none-match") || headers.contains_key("if-modified-since");
            s.requests.push((path.clone(), conditional));
            match s.routes.get(&path) {
                Some((status, body)) => (
                    StatusCode::from_u16(*status).unwrap(),
                    [
                        ("content-type", "application/vnd.api+json"),
                        ("etag", "\"same\""),
                    ],
                    body.clone(),
                )
                    .into_response(),
                None => StatusCode::NOT_FOUND.into_response(),
            }
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let state = Arc::new(Mutex::new(OptimadeState::default()));
        let router = axum::Router::new()
            .fallback(serve)
            .with_state(state.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move { axum::serve(listener, router).await.unwrap() });
        OptimadeServer {
            _runtime: runtime,
            addr,
            state,
        }
    }

    fn set(&self, path: &str, status: u16, body: Value) {
        self.state
            .lock()
            .unwrap()
            .routes
            .insert(path.into(), (status, body.to_string().into_bytes()));
    }

    fn take_requests(&self) -> Vec<(String, bool)> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }
}

fn optimade_info(entry_types: &[&str]) -> Value {
    json!({"meta": {"api_version": "1.1.0"}, "data": {"type": "info", "id": "/", "attributes": {
        "api_version": "1.1.0",
        "available_api_versions": [{"url": "https://optimade.example.org/v1/", "version": "1.1.0"}],
        "formats": ["json"], "entry_types_by_format": {"json": entry_types},
        "available_endpoints": ["info", "links", "structures", "references"], "is_index": false}}})
}

fn structures_info(extra: &[&str]) -> Value {
    let mut props = json!({
        "id": {"description": "ID", "type": "string", "sortable": true},
        "type": {"description": "type", "type": "string"},
        "nsites": {"description": "number of sites", "type": "integer", "sortable": true}
    });
    for p in extra {
        props[*p] = json!({"description": "new", "type": "float", "unit": "Å"});
    }
    json!({"meta": {}, "data": {"description": "structures", "formats": ["json"], "properties": props,
                                 "output_fields_by_format": {"json": ["id", "type"]}}})
}

#[test]
fn optimade_live_check_fetches_every_info_resource() {
    let server = OptimadeServer::start();
    server.set(
        "/v1/info",
        200,
        optimade_info(&["structures", "references"]),
    );
    server.set("/v1/info/structures", 200, structures_info(&[]));
    server.set(
        "/v1/info/references",
        200,
        json!({"data": {"formats": ["json"], "properties": {"id": {"type": "string"}}}}),
    );
    let sb = Sandbox::new();
    sb.write_config(&watch_config(
        "optimade",
        &format!("http://{}/v1", server.addr),
    ));

    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        only_outcome(&check)["action"],
        "registered",
        "{}",
        run.describe()
    );
    let requests = server.take_requests();
    let paths: Vec<&str> = requests.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        vec!["/v1/info", "/v1/info/references", "/v1/info/structures"]
    );

    // Same documents: a full fetch again (never conditional), unchanged, no registry write.
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        only_outcome(&check)["action"],
        "unchanged",
        "{}",
        run.describe()
    );
    let requests = server.take_requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests.iter().all(|(_, conditional)| !conditional),
        "{requests:?}"
    );
    assert_eq!(sb.registry_version(), 1);

    // A new property on structures: compatible, applied.
    server.set("/v1/info/structures", 200, structures_info(&["volume"]));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "applied", "{}", run.describe());
    assert_eq!(o["compatibility"], "compatible");
    assert_eq!(sb.registry_version(), 2);
    let fp = fingerprint(&sb);

    // A listed entry type whose info is gone, a malformed /info, duplicate keys: errors,
    // registry untouched.
    server.set("/v1/info/references", 404, json!({}));
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "error", "{}", run.describe());
    assert!(o["error"].as_str().unwrap().contains("404"), "{check}");
    server.set(
        "/v1/info/references",
        200,
        json!({"data": {"properties": {"id": {"type": "string"}}}}),
    );
    server.state.lock().unwrap().routes.insert(
        "/v1/info".into(),
        (
            200,
            br#"{"data":{"type":"info","id":"/","id":"/"}}"#.to_vec(),
        ),
    );
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let o = only_outcome(&check);
    assert!(
        o["error"].as_str().unwrap().contains("duplicate"),
        "{check}"
    );
    server.set(
        "/v1/info",
        200,
        json!({"data": {"type": "info", "id": "/", "attributes": {
        "entry_types_by_format": {"json": ["../../etc"]}}}}),
    );
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let o = only_outcome(&check);
    assert!(
        o["error"].as_str().unwrap().contains("entry type"),
        "{check}"
    );
    assert_eq!(sb.registry_version(), 2);
    assert_eq!(fingerprint(&sb), fp);

    // Dropping a sortable property from the sort options is breaking: queued, not applied.
    server.set(
        "/v1/info",
        200,
        optimade_info(&["structures", "references"]),
    );
    let mut info = structures_info(&["volume"]);
    info["data"]["properties"]["nsites"]["sortable"] = json!(false);
    server.set("/v1/info/structures", 200, info);
    let (run, check) = sb.check(&[]);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "pending_review", "{}", run.describe());
    assert_eq!(o["compatibility"], "breaking");
    assert_eq!(sb.registry_version(), 2);
}

#[test]
fn optimade_combined_file_watch_and_diff() {
    let sb = Sandbox::new();
    let combined = |extra: &[&str]| {
        json!({"info": optimade_info(&["structures"]), "entry_info": {"structures": structures_info(extra)}})
            .to_string()
    };
    let old = sb.write_file("old.json", combined(&[]).as_bytes());
    let new = sb.write_file("new.json", combined(&["volume"]).as_bytes());
    let run = sb.run(&[
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--kind",
        "optimade",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.describe());
    let report = run.json();
    assert_eq!(report["compatibility"], "compatible", "{report}");
    // A missing entry info in a combined document is an error, not an empty entry type.
    let broken = sb.write_file(
        "broken.json",
        json!({"info": optimade_info(&["structures"]), "entry_info": {}})
            .to_string()
            .as_bytes(),
    );
    let run = sb.run(&[
        "diff",
        old.to_str().unwrap(),
        broken.to_str().unwrap(),
        "--kind",
        "optimade",
    ]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr_text().contains("structures"),
        "{}",
        run.describe()
    );
}
