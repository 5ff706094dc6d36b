//! OpenAPI external `$ref`s, end to end: the real binary against a multi-file axum server on
//! 127.0.0.1 (root document plus `schemas/*.yaml`, each with its own ETag) and against local
//! files. Covers: registration, a change in a referenced file alone being detected (no
//! validator shortcut: the root's 304 never stands for its references), same-origin and
//! `external_refs = "none"` refusals with the registry untouched, ref cycles, the document
//! count and depth bounds, host-independent fingerprints, and file sources (`check` and
//! `diff`).

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, Response, StatusCode, Uri};
use axum::Router;
use common::*;
use serde_json::{json, Value};

const WATCH: &str = "acme.pets";

// ---------------------------------------------------------------------------------------
// A server of several files, each with an ETag that changes with its content
// ---------------------------------------------------------------------------------------

#[derive(Default)]
struct FilesState {
    /// Path → (body, revision).
    files: BTreeMap<String, (Vec<u8>, u32)>,
    /// (path, If-None-Match) of every request.
    requests: Vec<(String, Option<String>)>,
    /// Path → Location of a 302 answer.
    redirects: BTreeMap<String, String>,
}

struct FileServer {
    _runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    state: Arc<Mutex<FilesState>>,
}

async fn serve_file(
    State(state): State<Arc<Mutex<FilesState>>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response<Body> {
    let mut s = state.lock().unwrap();
    let path = uri.path().to_string();
    let inm = headers
        .get(header::IF_NONE_MATCH)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    s.requests.push((path.clone(), inm.clone()));
    if let Some(location) = s.redirects.get(&path) {
        return Response::builder()
            .status(StatusCode::FOUND)
            .header(header::LOCATION, location)
            .body(Body::empty())
            .unwrap();
    }
    let Some((body, revision)) = s.files.get(&path).cloned() else {
        return Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::empty())
            .unwrap();
    };
    let etag = format!("\"{}-{revision}\"", path.replace('/', "_"));
    if inm.as_deref() == Some(etag.as_str()) {
        return Response::builder()
            .status(StatusCode::NOT_MODIFIED)
            .header(header::ETAG, &etag)
            .body(Body::empty())
            .unwrap();
    }
    Response::builder()
        .status(StatusCode::OK)
        .header(header::ETAG, &etag)
        .header(header::CONTENT_TYPE, "application/yaml")
        .body(Body::from(body))
        .unwrap()
}

impl FileServer {
    fn start() -> FileServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let state = Arc::new(Mutex::new(FilesState::default()));
        let router = Router::new().fallback(serve_file).with_state(state.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move {
            axum::serve(listener, router).await.expect("server runs");
        });
        FileServer {
            _runtime: runtime,
            addr,
            state,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Serves `body` at `path`; a changed body gets a new ETag.
    fn put(&self, path: &str, body: &str) {
        let mut s = self.state.lock().unwrap();
        let entry = s.files.entry(path.to_string()).or_insert((Vec::new(), 0));
        if entry.0 != body.as_bytes() {
            entry.0 = body.as_bytes().to_vec();
            entry.1 += 1;
        }
    }

    /// Answers `path` with a 302 to `location`.
    fn redirect(&self, path: &str, location: &str) {
        let mut s = self.state.lock().unwrap();
        s.redirects.insert(path.to_string(), location.to_string());
    }

    fn requests_for(&self, path: &str) -> Vec<Option<String>> {
        let s = self.state.lock().unwrap();
        s.requests
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, inm)| inm.clone())
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------------------

fn root_doc(pet_ref: &str) -> String {
    format!(
        r#"openapi: 3.0.3
info:
  title: Pets
  version: "1"
paths:
  /pets/{{id}}:
    get:
      operationId: getPet
      parameters:
        - $ref: "schemas/params.yaml#/PetId"
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                $ref: "{pet_ref}"
"#
    )
}

const PARAMS: &str = r##"PetId:
  name: id
  in: path
  required: true
  schema:
    $ref: "#/Id"
Id:
  type: string
"##;

fn pet_doc(extra_property: &str) -> String {
    format!(
        r##"Pet:
  type: object
  required: [id]
  properties:
    id:
      $ref: "params.yaml#/Id"
    name:
      type: string
    tag:
      $ref: "#/Tag"
{extra_property}
Tag:
  type: string
"##
    )
}

const PET_V1: &str = "";
const PET_V2_AGE: &str = "    age:\n      type: integer\n";

fn serve_petstore(server: &FileServer, prefix: &str, extra: &str) {
    server.put(
        &format!("{prefix}/openapi.yaml"),
        &root_doc("schemas/pet.yaml#/Pet"),
    );
    server.put(&format!("{prefix}/schemas/pet.yaml"), &pet_doc(extra));
    server.put(&format!("{prefix}/schemas/params.yaml"), PARAMS);
}

fn url_config(watches: &[(&str, &str, &str)]) -> String {
    let mut text = String::from("[storage]\npath = \"registry.sqlite3\"\n");
    for (name, url, extra) in watches {
        text.push_str(&format!(
            "\n[[watch]]\nname = \"{name}\"\nkind = \"openapi\"\nurl = \"{url}\"\ntimeout = \"10s\"\n{extra}\n"
        ));
    }
    text
}

fn fingerprint_of(sb: &Sandbox, watch: &str) -> String {
    let status = sb.status();
    status["watches"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["watch"] == watch))
        .and_then(|w| w["fingerprint"].as_str())
        .unwrap_or_else(|| panic!("no fingerprint for {watch}: {status}"))
        .to_string()
}

fn error_of(check: &Value) -> String {
    let o = only_outcome(check);
    assert_eq!(o["action"], "error", "{check}");
    o["error"].as_str().unwrap_or_default().to_string()
}

// ---------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------

#[test]
fn referenced_file_changes_are_detected_without_a_validator_shortcut() {
    let server = FileServer::start();
    serve_petstore(&server, "/api", PET_V1);
    let sb = Sandbox::new();
    sb.write_config(&url_config(&[(
        WATCH,
        &server.url("/api/openapi.yaml"),
        "",
    )]));

    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");
    let first = fingerprint_of(&sb, WATCH);
    assert_eq!(sb.registry_version(), 1);

    // Nothing changed: a full fetch (no conditional header for the root), unchanged.
    let (_, check) = sb.check(&[]);
    assert_eq!(only_outcome(&check)["action"], "unchanged", "{check}");
    let root_requests = server.requests_for("/api/openapi.yaml");
    assert_eq!(root_requests.len(), 2);
    assert!(
        root_requests.iter().all(Option::is_none),
        "the root of a document with external refs is never fetched conditionally: {root_requests:?}"
    );
    assert_eq!(server.requests_for("/api/schemas/pet.yaml").len(), 2);
    assert_eq!(server.requests_for("/api/schemas/params.yaml").len(), 2);

    // Only the referenced file changes (the root keeps its ETag): compatible, applied.
    server.put("/api/schemas/pet.yaml", &pet_doc(PET_V2_AGE));
    let (_, check) = sb.check(&[]);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "applied", "{check}");
    assert_eq!(o["compatibility"], "compatible", "{check}");
    assert_ne!(fingerprint_of(&sb, WATCH), first);
    assert_eq!(sb.registry_version(), 2);

    // A breaking change in the referenced file only: queued for review.
    server.put(
        "/api/schemas/pet.yaml",
        &pet_doc(PET_V2_AGE).replace("    name:\n      type: string\n", ""),
    );
    let (_, check) = sb.check(&[]);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "pending_review", "{check}");
    assert_eq!(o["compatibility"], "breaking", "{check}");
    assert_eq!(sb.registry_version(), 2);
    assert!(server
        .requests_for("/api/openapi.yaml")
        .iter()
        .all(Option::is_none));
}

#[test]
fn documents_without_external_refs_keep_their_conditional_refresh() {
    let server = FileServer::start();
    server.put(
        "/plain.yaml",
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      responses:\n        '200': {description: ok}\n",
    );
    let sb = Sandbox::new();
    sb.write_config(&url_config(&[(WATCH, &server.url("/plain.yaml"), "")]));
    assert_eq!(only_outcome(&sb.check(&[]).1)["action"], "registered");
    assert_eq!(only_outcome(&sb.check(&[]).1)["action"], "unchanged");
    let requests = server.requests_for("/plain.yaml");
    assert_eq!(requests.len(), 2);
    assert!(requests[1].is_some(), "{requests:?}");
}

#[test]
fn cross_origin_refs_are_refused_and_the_registry_is_untouched() {
    let server = FileServer::start();
    let other = FileServer::start();
    serve_petstore(&server, "/api", PET_V1);
    serve_petstore(&other, "/api", PET_V1);
    let sb = Sandbox::new();
    sb.write_config(&url_config(&[(
        WATCH,
        &server.url("/api/openapi.yaml"),
        "",
    )]));
    assert_eq!(only_outcome(&sb.check(&[]).1)["action"], "registered");
    let before = fingerprint_of(&sb, WATCH);

    let foreign = other.url("/api/schemas/pet.yaml#/Pet");
    server.put("/api/openapi.yaml", &root_doc(&foreign));
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let error = error_of(&check);
    assert!(
        error.contains(&foreign) && error.contains("origin"),
        "{error}"
    );
    assert!(other.requests_for("/api/schemas/pet.yaml").is_empty());
    assert_eq!(sb.registry_version(), 1);
    assert_eq!(fingerprint_of(&sb, WATCH), before);

    // A path that climbs out of the root's folder on the same origin is allowed (and the same
    // document under a different spelling keeps the fingerprint).
    server.put(
        "/api/openapi.yaml",
        &root_doc("../api/schemas/pet.yaml#/Pet"),
    );
    assert_eq!(only_outcome(&sb.check(&[]).1)["action"], "unchanged");
}

#[test]
fn external_refs_none_refuses_them() {
    let server = FileServer::start();
    serve_petstore(&server, "/api", PET_V1);
    let sb = Sandbox::new();
    sb.write_config(&url_config(&[(
        WATCH,
        &server.url("/api/openapi.yaml"),
        "external_refs = \"none\"",
    )]));
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let error = error_of(&check);
    assert!(
        error.contains("refused by external_refs = \"none\"") && error.contains("schemas/"),
        "{error}"
    );
    assert!(server.requests_for("/api/schemas/pet.yaml").is_empty());
    assert_eq!(sb.registry_version(), 0);

    // An unknown policy is a config error naming the key.
    sb.write_config(&url_config(&[(
        WATCH,
        &server.url("/api/openapi.yaml"),
        "external_refs = \"anywhere\"",
    )]));
    let run = sb.run(&["check", "--config", &sb.config_arg(), "--json"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr_text().contains("external_refs"),
        "{}",
        run.describe()
    );
}

#[test]
fn ref_cycles_between_external_files_terminate() {
    let server = FileServer::start();
    server.put("/openapi.yaml", &root_doc("a.yaml#/A"));
    server.put("/schemas/params.yaml", PARAMS);
    server.put(
        "/a.yaml",
        "A:\n  type: object\n  properties:\n    b:\n      $ref: \"b.yaml#/B\"\n",
    );
    server.put(
        "/b.yaml",
        "B:\n  type: object\n  properties:\n    a:\n      $ref: \"a.yaml#/A\"\n    root:\n      $ref: \"openapi.yaml#/info\"\n",
    );
    let sb = Sandbox::new();
    sb.write_config(&url_config(&[(WATCH, &server.url("/openapi.yaml"), "")]));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");
    assert_eq!(server.requests_for("/a.yaml").len(), 1);
    assert_eq!(server.requests_for("/b.yaml").len(), 1);
}

#[test]
fn document_count_and_depth_are_bounded() {
    let server = FileServer::start();
    // 33 documents referenced from one schema.
    let refs: String = (0..33)
        .map(|i| format!("        - $ref: \"d{i}.yaml#/D\"\n"))
        .collect();
    server.put("/schemas/params.yaml", PARAMS);
    server.put("/many.yaml", &root_doc("fan.yaml#/Fan"));
    server.put("/fan.yaml", &format!("Fan:\n  allOf:\n{refs}"));
    for i in 0..33 {
        server.put(&format!("/d{i}.yaml"), "D:\n  type: string\n");
    }
    // A chain nine documents deep (params.yaml is one more, at depth 1).
    server.put("/deep.yaml", &root_doc("c1.yaml#/C"));
    for i in 1..=9 {
        let next = if i < 9 {
            format!(
                "  properties:\n    next:\n      $ref: \"c{}.yaml#/C\"\n",
                i + 1
            )
        } else {
            String::new()
        };
        server.put(
            &format!("/c{i}.yaml"),
            &format!("C:\n  type: object\n{next}"),
        );
    }
    let sb = Sandbox::new();
    sb.write_config(&url_config(&[
        ("acme.many", &server.url("/many.yaml"), ""),
        ("acme.deep", &server.url("/deep.yaml"), ""),
    ]));
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let many = outcome_for(&check, "acme.many");
    assert_eq!(many["action"], "error", "{check}");
    assert!(
        many["error"]
            .as_str()
            .is_some_and(|e| e.contains("more than 32 external documents")),
        "{check}"
    );
    let deep = outcome_for(&check, "acme.deep");
    assert_eq!(deep["action"], "error", "{check}");
    assert!(
        deep["error"]
            .as_str()
            .is_some_and(|e| e.contains("c9.yaml") && e.contains("more than 8 deep")),
        "{check}"
    );
    assert_eq!(sb.registry_version(), 0);
    assert!(server.requests_for("/c9.yaml").is_empty());

    // Eight deep is fine.
    server.put("/c8.yaml", "C:\n  type: object\n");
    let (run, check) = sb.check(&["acme.deep"]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");
}

#[test]
fn the_same_contract_from_another_host_fingerprints_the_same() {
    let a = FileServer::start();
    let b = FileServer::start();
    serve_petstore(&a, "/api", PET_V1);
    serve_petstore(&b, "/elsewhere/v1", PET_V1);
    let sb = Sandbox::new();
    sb.write_config(&url_config(&[
        ("acme.a", &a.url("/api/openapi.yaml"), ""),
        ("acme.b", &b.url("/elsewhere/v1/openapi.yaml"), ""),
    ]));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(outcome_for(&check, "acme.a")["action"], "registered");
    assert_eq!(outcome_for(&check, "acme.b")["action"], "registered");
    assert_ne!(a.port(), b.port());
    // The watch name is part of the contract; compare two watches of the same name instead.
    let sb2 = Sandbox::new();
    sb2.write_config(&url_config(&[(
        "acme.a",
        &b.url("/elsewhere/v1/openapi.yaml"),
        "",
    )]));
    assert_eq!(only_outcome(&sb2.check(&[]).1)["action"], "registered");
    assert_eq!(
        fingerprint_of(&sb, "acme.a"),
        fingerprint_of(&sb2, "acme.a")
    );

    // `diff` between the two hosts: identical.
    let run = sb.run(&[
        "diff",
        &a.url("/api/openapi.yaml"),
        &b.url("/elsewhere/v1/openapi.yaml"),
        "--json",
    ]);
    run.assert_code(0);
    assert_eq!(
        run.json()["compatibility"],
        "identical",
        "{}",
        run.describe()
    );
}

#[test]
fn file_sources_resolve_relative_external_files() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("api/schemas")).unwrap();
    sb.write_file(
        "api/openapi.yaml",
        root_doc("schemas/pet.yaml#/Pet").as_bytes(),
    );
    sb.write_file("api/schemas/pet.yaml", pet_doc(PET_V1).as_bytes());
    sb.write_file("api/schemas/params.yaml", PARAMS.as_bytes());
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"{WATCH}\"\nkind = \"openapi\"\npath = \"api/openapi.yaml\"\n"
    ));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");

    sb.write_file("api/schemas/pet.yaml", pet_doc(PET_V2_AGE).as_bytes());
    let (_, check) = sb.check(&[]);
    let o = only_outcome(&check);
    assert_eq!(
        (o["action"].as_str(), o["compatibility"].as_str()),
        (Some("applied"), Some("compatible")),
        "{check}"
    );

    // `diff` of two file trees that differ only in a referenced file.
    std::fs::create_dir_all(sb.path("old/schemas")).unwrap();
    sb.write_file(
        "old/openapi.yaml",
        root_doc("schemas/pet.yaml#/Pet").as_bytes(),
    );
    sb.write_file("old/schemas/pet.yaml", pet_doc(PET_V1).as_bytes());
    sb.write_file("old/schemas/params.yaml", PARAMS.as_bytes());
    let old = sb.path("old/openapi.yaml");
    let new = sb.path("api/openapi.yaml");
    let run = sb.run(&[
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--json",
    ]);
    run.assert_code(0);
    let report = run.json();
    assert_eq!(report["compatibility"], "compatible", "{}", run.describe());
    assert!(
        report.to_string().contains("response-property-added"),
        "{report}"
    );

    // A reference that climbs out of the root's folder is refused.
    sb.write_file("outside.yaml", pet_doc(PET_V1).as_bytes());
    sb.write_file(
        "api/openapi.yaml",
        root_doc("../outside.yaml#/Pet").as_bytes(),
    );
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let error = error_of(&check);
    assert!(
        error.contains("../outside.yaml") && error.contains("folder"),
        "{error}"
    );
}

#[test]
fn definitions_are_keyed_by_the_reference_relative_to_the_root() {
    use schemawatch::core::fingerprint::tool_fingerprint;
    use schemawatch::core::json::parse_document;
    use schemawatch::core::normalize::openapi::normalize_bundle;

    let parse = |text: &str| parse_document(text.as_bytes()).unwrap();
    let bundle = |base: &str| {
        let mut externals = BTreeMap::new();
        externals.insert(format!("{base}schemas/pet.yaml"), parse(&pet_doc(PET_V1)));
        externals.insert(format!("{base}schemas/params.yaml"), parse(PARAMS));
        normalize_bundle(
            "acme.pets",
            &format!("{base}openapi.yaml"),
            parse(&root_doc("./schemas/pet.yaml#/Pet")),
            externals,
        )
        .unwrap()
    };
    let a = bundle("http://127.0.0.1:1000/api/");
    let b = bundle("file:///srv/specs/");
    assert_eq!(tool_fingerprint(&a), tool_fingerprint(&b));
    let keys: Vec<&str> = a.definitions.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        vec![
            "schemas/params.yaml#/Id",
            "schemas/pet.yaml#/Pet",
            "schemas/pet.yaml#/Tag"
        ]
    );
    let pet = &a.definitions["schemas/pet.yaml#/Pet"];
    assert_eq!(
        pet["properties"]["tag"]["$ref"],
        json!("schemas/pet.yaml#/Tag")
    );
    assert_eq!(
        pet["properties"]["id"]["$ref"],
        json!("schemas/params.yaml#/Id")
    );
}

/// H8: the folder limit holds on real paths — `$ref: "sub/link/outside.yaml"` with
/// `sub/link -> ../..` (the root folder's parent) used to be bundled.
#[test]
fn h8_a_symlink_does_not_lead_a_ref_out_of_the_folder() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("api/schemas")).unwrap();
    std::fs::create_dir_all(sb.path("api/sub")).unwrap();
    std::os::unix::fs::symlink("../..", sb.path("api/sub/link")).unwrap();
    sb.write_file("outside.yaml", pet_doc(PET_V1).as_bytes());
    sb.write_file("params.yaml", PARAMS.as_bytes());
    sb.write_file("api/schemas/params.yaml", PARAMS.as_bytes());
    sb.write_file(
        "api/openapi.yaml",
        root_doc("sub/link/outside.yaml#/Pet").as_bytes(),
    );
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"{WATCH}\"\nkind = \"openapi\"\npath = \"api/openapi.yaml\"\n"
    ));
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let error = error_of(&check);
    assert!(
        error.contains("sub/link/outside.yaml") && error.contains("folder"),
        "{error}"
    );
    // A symlink that stays inside the folder is fine.
    std::fs::create_dir_all(sb.path("api/real")).unwrap();
    sb.write_file("api/real/pet.yaml", pet_doc(PET_V1).as_bytes());
    std::fs::write(sb.path("api/real/params.yaml"), PARAMS).unwrap();
    std::os::unix::fs::symlink("real", sb.path("api/inside")).unwrap();
    sb.write_file(
        "api/openapi.yaml",
        root_doc("inside/pet.yaml#/Pet").as_bytes(),
    );
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");
}

/// H8: a same-origin `$ref` that redirects to another origin is refused at the redirect (it
/// used to be followed and bundled); the other origin is never asked.
#[test]
fn h8_a_same_origin_ref_redirected_elsewhere_is_refused() {
    let server = FileServer::start();
    let other = FileServer::start();
    serve_petstore(&server, "/api", PET_V1);
    serve_petstore(&other, "/api", PET_V1);
    server.redirect("/api/schemas/pet.yaml", &other.url("/api/schemas/pet.yaml"));
    let sb = Sandbox::new();
    sb.write_config(&url_config(&[(
        WATCH,
        &server.url("/api/openapi.yaml"),
        "",
    )]));
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let error = error_of(&check);
    assert!(
        error.contains("schemas/pet.yaml") && error.contains("another origin"),
        "{error}"
    );
    assert!(other.requests_for("/api/schemas/pet.yaml").is_empty());
    assert_eq!(
        sb.run(&["status", "--config", &sb.config_arg(), "--json"])
            .json()["registry_version"],
        0
    );
}
