//! Registry storage through the binary (docs/reliability.md H12, H13): a flapping provider
//! against a small `[storage] keep_reviews` keeps the registry bounded while every output
//! still answers for pruned reviews, and `max_endpoints` refuses an oversized contract with
//! the registry untouched.

use crate::common;

use common::*;
use serde_json::{json, Value};

/// A petstore with `extra` more operations, each with some text, so a review's candidate and
/// report are large enough that keeping them would show in the file size.
fn big_pets(extra: usize, with_show_by_id: bool) -> Vec<u8> {
    let mut pets = Pets::v1();
    pets.show_by_id = with_show_by_id;
    let mut doc = pets.json();
    let paths = doc["paths"].as_object_mut().unwrap();
    for i in 0..extra {
        paths.insert(
            format!("/extra/{i}"),
            json!({"get": {
                "operationId": format!("extra{i}"),
                "description": format!("Operation {i}: returns the extra resource number {i} of the store"),
                "parameters": [{"name": format!("p{i}"), "in": "query", "schema": {"type": "string", "maxLength": i + 1}}],
                "responses": {"200": {"description": "ok"}}
            }}),
        );
    }
    doc.to_string().into_bytes()
}

fn registry_bytes(sb: &Sandbox) -> u64 {
    ["registry.sqlite3", "registry.sqlite3-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(sb.path(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// `pending accept ID` by alice, which must succeed.
fn accept(sb: &Sandbox, cfg: &str, id: i64) {
    sb.run(&[
        "pending",
        "accept",
        &id.to_string(),
        "--config",
        cfg,
        "--reviewer",
        "alice",
        "--reason",
        "ok",
    ])
    .assert_code(0);
}

/// The catalog of every stored snapshot exports, and `inspect diff` reads the watch's accepted
/// contract back, identical to itself.
fn assert_catalog_and_inspect_read_back(sb: &Sandbox, cfg: &str, watch: &str) {
    sb.run(&["catalog", "export", "--config", cfg])
        .assert_code(0);
    let db = sb.path("registry.sqlite3").to_string_lossy().into_owned();
    let inspect = sb.run(&[
        "inspect", "diff", watch, "--old-db", &db, "--new-db", &db, "--json",
    ]);
    inspect.assert_code(0);
    assert_eq!(
        inspect.json()["compatibility"],
        "identical",
        "{}",
        inspect.describe()
    );
}

#[test]
fn h12_a_flapping_provider_keeps_the_registry_bounded_and_pruned_reviews_answer() {
    let sb = Sandbox::new();
    let a = big_pets(300, true);
    // B drops the extra operations' text change: every B is a breaking candidate again.
    let b = |n: usize| {
        let mut doc: Value = serde_json::from_slice(&big_pets(300, false)).unwrap();
        doc["info"]["version"] = json!(format!("flap {n}"));
        doc["paths"]["/extra/0"]["get"]["parameters"][0]["schema"]["maxLength"] = json!(n % 7);
        doc.to_string().into_bytes()
    };
    let server = DocServer::start(a.clone());
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\nkeep_reviews = 2\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\nurl = \"{}\"\n",
        server.url()
    ));
    let (run, _) = sb.check(&[]);
    run.assert_code(0);
    let mut review_ids = Vec::new();
    let mut flap = |sb: &Sandbox, n: usize| {
        server.set_document(b(n));
        let (_, out) = sb.check(&[]);
        assert_eq!(out["outcomes"][0]["action"], "pending_review", "{out}");
        review_ids.push(out["outcomes"][0]["review_id"].as_i64().unwrap());
        server.set_document(a.clone());
        let (_, out) = sb.check(&[]);
        assert_eq!(out["outcomes"][0]["action"], "unchanged", "{out}");
    };
    for n in 0..4 {
        flap(&sb, n);
    }
    let after_few = registry_bytes(&sb);
    for n in 4..12 {
        flap(&sb, n);
    }
    let after_many = registry_bytes(&sb);
    eprintln!("registry: {after_few} bytes after 4 flaps, {after_many} after 12");
    // 8 more reviews, each with a candidate and report of several KB compressed: kept, they
    // would grow the file by far more than the metadata rows do.
    assert!(
        after_many <= after_few + 24 * 1024,
        "registry grew from {after_few} to {after_many} bytes with keep_reviews = 2"
    );

    // The oldest review is pruned: its metadata answers, its report is said to be gone.
    let oldest = review_ids[0];
    let shown = sb.pending_show(oldest);
    assert_eq!(shown["pruned"], true, "{shown}");
    assert!(shown["pruned_at"].is_string(), "{shown}");
    assert_eq!(shown["report"], Value::Null);
    assert_eq!(shown["state"], "superseded");
    assert!(shown["change_count"].as_i64().unwrap() > 0);
    assert!(shown["candidate_fingerprint"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    let cfg = sb.config_arg();
    let text = sb.run(&["pending", "show", &oldest.to_string(), "--config", &cfg]);
    text.assert_code(0);
    assert!(
        text.stdout_text().contains("pruned at"),
        "{}",
        text.describe()
    );
    // The newest closed ones keep their report.
    let newest = *review_ids.last().unwrap();
    assert!(sb.pending_show(newest)["report"].is_object());

    // Open reviews are never pruned, whatever their age.
    server.set_document(b(99));
    let (_, out) = sb.check(&[]);
    let open = out["outcomes"][0]["review_id"].as_i64().unwrap();
    assert_eq!(sb.pending_list().len(), 1);
    assert!(sb.pending_show(open)["report"].is_object());

    // History, the catalog and inspect read the (compressed) accepted contract as before.
    assert_eq!(sb.history("acme.pets").len(), 1);
    assert_catalog_and_inspect_read_back(&sb, &cfg, "acme.pets");
    // Accepting the open review applies its (compressed) candidate.
    accept(&sb, &cfg, open);
    let (_, out) = sb.check(&[]);
    assert_eq!(out["outcomes"][0]["action"], "unchanged", "{out}");
}

#[test]
fn h13_max_endpoints_refuses_an_oversized_contract_and_stores_nothing() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\nmax_endpoints = 1\n",
    );
    let (_, out) = sb.check(&[]);
    let outcome = &out["outcomes"][0];
    assert_eq!(outcome["action"], "error", "{out}");
    let error = outcome["error"].as_str().unwrap();
    assert!(
        error.contains("2 endpoints") && error.contains("max_endpoints (1)"),
        "{error}"
    );
    assert_eq!(sb.registry_version(), 0, "nothing registered");
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\nmax_endpoints = 0\n",
    );
    let cfg = sb.config_arg();
    let run = sb.run(&["config", "check", "--config", &cfg]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr_text().contains("max_endpoints"),
        "{}",
        run.describe()
    );
}

/// An OpenAPI document of `ops` small operations (each an id, a query parameter and a 200
/// response, like scripts/gen-large-openapi): its normalized contract, every default written,
/// compresses to about twice the document's size, so storing contracts shows in the file.
fn many_ops(ops: usize, skip: Option<usize>) -> Vec<u8> {
    let mut paths = serde_json::Map::new();
    for i in (0..ops).filter(|i| Some(*i) != skip) {
        paths.insert(
            format!("/items/{i}"),
            json!({"get": {
                "operationId": format!("getItem{i}"),
                "parameters": [{"name": format!("q{i}"), "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}}
            }}),
        );
    }
    json!({"openapi": "3.0.3", "info": {"title": "Items", "version": "1"}, "paths": paths})
        .to_string()
        .into_bytes()
}

fn gzip_len(bytes: &[u8]) -> u64 {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap().len() as u64
}

/// SQLite stores a blob in whole pages: what one stored value may cost beyond its bytes.
const PAGE_SLACK: u64 = 4096;

#[test]
fn h12_each_stored_version_costs_at_most_the_documents_gzip_size_and_reads_back() {
    let sb = Sandbox::new();
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.items\"\nkind = \"openapi\"\npath = \"items.json\"\napply_compatible = true\n",
    );
    let fingerprint = |sb: &Sandbox| sb.status()["watches"][0]["fingerprint"].clone();
    let mut fingerprints = Vec::new();
    sb.write_file("items.json", &many_ops(1500, None));
    let (run, out) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(out["outcomes"][0]["action"], "registered", "{out}");
    fingerprints.push(fingerprint(&sb));
    let registered = registry_bytes(&sb);

    // Versions 2..=4: one operation more each (compatible, applied).
    let versions = 3u64;
    let mut largest = 0;
    for k in 1..=versions as usize {
        let doc = many_ops(1500 + k, None);
        largest = largest.max(gzip_len(&doc));
        sb.write_file("items.json", &doc);
        let (_, out) = sb.check(&[]);
        assert_eq!(out["outcomes"][0]["action"], "applied", "{out}");
        fingerprints.push(fingerprint(&sb));
    }
    let applied = registry_bytes(&sb);
    eprintln!(
        "registry: {registered} bytes after register, {applied} after {versions} more versions; gzip of a document {largest}"
    );
    assert!(
        applied - registered <= versions * (largest + PAGE_SLACK) + 16 * 1024,
        "{versions} versions grew the registry by {} bytes; each document is {largest} bytes gzipped",
        applied - registered
    );

    // A breaking candidate (one operation removed): one more stored version, and its report.
    let breaking = many_ops(1500 + versions as usize, Some(7));
    sb.write_file("items.json", &breaking);
    let (_, out) = sb.check(&[]);
    assert_eq!(out["outcomes"][0]["action"], "pending_review", "{out}");
    let id = out["outcomes"][0]["review_id"].as_i64().unwrap();
    let queued = registry_bytes(&sb);
    assert!(
        queued - applied <= gzip_len(&breaking) + 2 * PAGE_SLACK + 8 * 1024,
        "a review grew the registry by {} bytes",
        queued - applied
    );
    let shown = sb.pending_show(id);
    assert_eq!(shown["state"], "open", "{shown}");
    assert_eq!(
        shown["report"]["changes"].as_array().map(Vec::len),
        Some(1),
        "{shown}"
    );

    // Accepting it stores nothing new: the accepted version is the candidate's document.
    let cfg = sb.config_arg();
    accept(&sb, &cfg, id);
    let accepted = registry_bytes(&sb);
    assert!(
        accepted <= queued + 2 * PAGE_SLACK,
        "accepting grew the registry from {queued} to {accepted} bytes"
    );
    fingerprints.push(fingerprint(&sb));
    assert_eq!(
        shown["candidate_fingerprint"],
        fingerprints[fingerprints.len() - 1]
    );

    // Every version reads back as recorded: history (newest first), the catalog of every
    // stored snapshot, the accepted contract, and the same document is `unchanged`.
    let history: Vec<Value> = sb
        .history("acme.items")
        .iter()
        .rev()
        .map(|h| h["fingerprint"].clone())
        .collect();
    assert_eq!(history, fingerprints);
    assert_catalog_and_inspect_read_back(&sb, &cfg, "acme.items");
    let (_, out) = sb.check(&[]);
    assert_eq!(out["outcomes"][0]["action"], "unchanged", "{out}");
    sb.write_file("items.json", &many_ops(1500, None));
    let (_, out) = sb.check(&[]);
    assert_eq!(out["outcomes"][0]["action"], "pending_review", "{out}");
}

#[test]
fn h12_a_stored_source_that_was_tampered_with_fails_closed() {
    let sb = Sandbox::new();
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.items\"\nkind = \"openapi\"\npath = \"items.json\"\n",
    );
    sb.write_file("items.json", &many_ops(20, None));
    sb.check(&[]).0.assert_code(0);
    // Another (valid) document in place of the stored one: its reading is another contract.
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    let other = {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&many_ops(19, None)).unwrap();
        gz.finish().unwrap()
    };
    assert_eq!(
        conn.execute("UPDATE sources SET gz = ?1", [other]).unwrap(),
        1
    );
    drop(conn);
    let cfg = sb.config_arg();
    let db = sb.path("registry.sqlite3").to_string_lossy().into_owned();
    let inspect = sb.run(&[
        "inspect",
        "diff",
        "acme.items",
        "--old-db",
        &db,
        "--new-db",
        &db,
        "--json",
    ]);
    assert_ne!(inspect.code, 0, "{}", inspect.describe());
    assert!(
        inspect.stderr_text().contains("is invalid"),
        "{}",
        inspect.describe()
    );
    let export = sb.run(&["catalog", "export", "--config", &cfg]);
    assert_ne!(export.code, 0, "{}", export.describe());
}

fn recorded_fingerprint_version(sb: &Sandbox) -> i64 {
    rusqlite::Connection::open(sb.path("registry.sqlite3"))
        .unwrap()
        .query_row(
            "SELECT fingerprint_version FROM registry_head WHERE id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

fn set_recorded_fingerprint_version(sb: &Sandbox, version: i64) {
    rusqlite::Connection::open(sb.path("registry.sqlite3"))
        .unwrap()
        .execute(
            "UPDATE registry_head SET fingerprint_version = ?1 WHERE id = 1",
            [version],
        )
        .unwrap();
}

/// Issue 33: the head row records the `FINGERPRINT_VERSION` of the newest binary that wrote the
/// registry; a binary whose projection is older refuses to write (a typed error naming both
/// versions, the registry untouched) while read-only commands still answer.
#[test]
fn a_registry_written_by_a_newer_projection_is_read_but_never_written() {
    use schemawatch::core::fingerprint::FINGERPRINT_VERSION;
    let sb = Sandbox::new();
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.items\"\nkind = \"openapi\"\npath = \"items.json\"\n",
    );
    sb.write_file("items.json", &many_ops(20, None));
    sb.check(&[]).0.assert_code(0);
    assert_eq!(recorded_fingerprint_version(&sb), FINGERPRINT_VERSION);
    // A registry last written before the head row recorded it (0), or by an older projection:
    // this binary records its own on open.
    set_recorded_fingerprint_version(&sb, FINGERPRINT_VERSION - 1);
    sb.status();
    assert_eq!(recorded_fingerprint_version(&sb), FINGERPRINT_VERSION);

    // Now as if a newer schemawatch had written it.
    let newer = FINGERPRINT_VERSION + 1;
    set_recorded_fingerprint_version(&sb, newer);
    let version = sb.registry_version();
    let history = sb.history("acme.items");
    sb.write_file("items.json", &many_ops(21, None));
    let cfg = sb.config_arg();
    let check = sb.run(&["check", "--config", &cfg, "--json"]);
    assert_ne!(check.code, 0, "{}", check.describe());
    let said = format!("{}{}", check.stdout_text(), check.stderr_text());
    let expected = format!(
        "written by a schemawatch with fingerprint version {newer}, newer than this one's ({FINGERPRINT_VERSION}): refusing to write"
    );
    assert!(said.contains(&expected), "{}", check.describe());
    // Nothing written, and every read still answers.
    assert_eq!(sb.registry_version(), version);
    assert_eq!(sb.history("acme.items"), history);
    sb.pending_list();
    sb.run(&["catalog", "export", "--config", &cfg])
        .assert_code(0);
    assert_eq!(recorded_fingerprint_version(&sb), newer, "never lowered");
}
