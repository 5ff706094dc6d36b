//! End-to-end tests: the real `schemawatch` binary against a real HTTP server on 127.0.0.1
//! (axum, in process) that serves changing OpenAPI documents with ETag/Last-Modified, and
//! a real SQLite registry in a temp dir. No mocks, no external network.
//!
//! The main scenario follows the foundation issue's "Done when": registered → unchanged
//! (304 seen by the server) → compatible applied → breaking queued (no duplicate queue) →
//! accept → security escalation queued → reject → not queued again → malformed document
//! and unreachable server are errors that leave the registry untouched → the credential
//! canary never leaves the process except towards the configured origin.

use crate::common;

use common::*;
use serde_json::Value;

const WATCH: &str = "acme.pets";

fn url_watch_config(url: &str) -> String {
    format!(
        r#"[storage]
path = "registry.sqlite3"

[[watch]]
name = "{WATCH}"
kind = "openapi"
url = "{url}"

[watch.schema_headers]
Authorization = "Bearer ${{{TOKEN_VAR}}}"
"#
    )
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key:?} is not a string in {v}"))
}

fn int_of(v: &Value, key: &str) -> i64 {
    v[key]
        .as_i64()
        .unwrap_or_else(|| panic!("{key:?} is not an integer in {v}"))
}

const HISTORY_KEYS: &[&str] = &[
    "version",
    "registry_version",
    "fingerprint",
    "applied_at",
    "compatibility",
    "review_id",
    "reviewer",
    "reason",
];
const PENDING_KEYS: &[&str] = &[
    "id",
    "watch",
    "compatibility",
    "change_count",
    "created_at",
    "base_registry_version",
    "candidate_fingerprint",
];
const STATUS_WATCH_KEYS: &[&str] = &[
    "watch",
    "kind",
    "status",
    "last_compatibility",
    "pending_change_count",
    "last_checked_at",
    "last_error",
    "fingerprint",
];
const CHANGE_KEYS: &[&str] = &[
    "severity", "path", "kind", "rule", "before", "after", "message",
];

/// Asserts the documented `check --json` shape and returns the single outcome's action.
fn assert_check_shape(check: &Value) {
    assert!(
        check["registry_version"].is_u64(),
        "check has no integer registry_version: {check}"
    );
    for o in check["outcomes"].as_array().expect("outcomes array") {
        assert_has_keys(
            o,
            &["watch", "action", "compatibility", "review_id", "error"],
            "check outcome",
        );
    }
}

fn is_rfc3339_utc(s: &str) -> bool {
    // e.g. 2026-11-29T23:31:45Z or with fractional seconds; UTC ("Z" or "+00:00").
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && (s.ends_with('Z') || s.ends_with("+00:00"))
}

/// The whole review loop against one server and one registry, asserting after every step.
#[test]
fn openapi_watch_lifecycle_end_to_end() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    sb.write_config(&url_watch_config(&server.url()));
    let cfg = sb.config_arg();

    sb.run(&["config", "check", "--config", &cfg])
        .assert_code(0);

    // 1. v1 → registered, registry_version 1.
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_check_shape(&check);
    let o = only_outcome(&check);
    assert_eq!(o["watch"], WATCH, "{check}");
    assert_eq!(o["action"], "registered", "{}", run.describe());
    assert!(o["error"].is_null() && o["review_id"].is_null(), "{check}");
    assert_eq!(check["registry_version"], 1, "{check}");
    assert_eq!(server.counters().requests, 1);
    assert_eq!(
        server.last_if_none_match(),
        None,
        "first fetch must be unconditional"
    );
    let status = sb.status();
    let fp_v1 = str_of(&status["watches"][0], "fingerprint").to_string();
    assert!(
        fp_v1.starts_with("sha256:") && fp_v1.len() == 7 + 64,
        "fingerprint format: {fp_v1}"
    );
    assert_eq!(status["watches"][0]["status"], "registered", "{status}");

    // Hold a connection open for the rest of the scenario, as a running daemon would: the
    // binary is then never the last connection to close, so the `-wal` and `-shm` files
    // persist with the frames every later write produced, and the canary scan reads them.
    let observer = rusqlite::Connection::open(sb.path("registry.sqlite3")).expect("open registry");
    let mode: String = observer
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("journal mode");
    assert_eq!(mode.to_lowercase(), "wal", "the registry uses WAL");

    // 2. same document → unchanged via a 304; no registry write.
    let before = server.counters();
    let v1_etag = server.current_etag();
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        only_outcome(&check)["action"],
        "unchanged",
        "{}",
        run.describe()
    );
    assert_eq!(check["registry_version"], 1, "{check}");
    let after = server.counters();
    assert_eq!(
        after.requests,
        before.requests + 1,
        "one conditional request"
    );
    assert_eq!(
        server.last_if_none_match().as_deref(),
        Some(v1_etag.as_str()),
        "the refresh must send the stored ETag as If-None-Match"
    );
    assert_eq!(
        after.not_modified,
        before.not_modified + 1,
        "the server must have answered 304"
    );
    assert_eq!(sb.registry_version(), 1);
    assert_eq!(sb.history(WATCH).len(), 1);

    // 3. v2 (compatible) → applied, registry_version 2, history newest first.
    server.set_document(Pets::v2().bytes());
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "applied", "{}", run.describe());
    assert_eq!(o["compatibility"], "compatible", "{check}");
    assert!(o["review_id"].is_null(), "{check}");
    assert_eq!(check["registry_version"], 2, "{check}");
    let history = sb.history(WATCH);
    assert_eq!(history.len(), 2, "{history:?}");
    for h in &history {
        assert_has_keys(h, HISTORY_KEYS, "history entry");
        assert!(is_rfc3339_utc(str_of(h, "applied_at")), "{h}");
    }
    assert_eq!(history[0]["version"], 2, "newest first: {history:?}");
    assert_eq!(history[0]["registry_version"], 2, "{history:?}");
    assert_eq!(history[0]["compatibility"], "compatible", "{history:?}");
    assert_eq!(history[1]["version"], 1, "{history:?}");
    assert_eq!(history[1]["registry_version"], 1, "{history:?}");
    assert_eq!(history[1]["fingerprint"], fp_v1.as_str(), "{history:?}");
    let fp_v2 = str_of(&history[0], "fingerprint").to_string();
    assert_ne!(fp_v1, fp_v2);
    assert_eq!(sb.status()["watches"][0]["fingerprint"], fp_v2.as_str());

    // 3b. validators advanced on apply: v2 again is a 304 against v2's ETag.
    let before = server.counters();
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "unchanged", "{check}");
    assert_eq!(
        server.last_if_none_match().as_deref(),
        Some(server.current_etag().as_str())
    );
    assert_eq!(server.counters().not_modified, before.not_modified + 1);
    assert_eq!(check["registry_version"], 2);

    // 4. v3 (breaking: GET /pets/{petId} removed) → pending_review, version unchanged.
    server.set_document(Pets::v3().bytes());
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "pending_review", "{}", run.describe());
    assert_eq!(o["compatibility"], "breaking", "{check}");
    let review_v3 = int_of(o, "review_id");
    assert_eq!(check["registry_version"], 2, "{check}");
    let status = sb.status();
    assert_eq!(
        status["watches"][0]["fingerprint"],
        fp_v2.as_str(),
        "{status}"
    );
    assert_eq!(status["watches"][0]["status"], "pending_review", "{status}");

    // ... the same candidate again: same review, no duplicate queue.
    let before = server.counters();
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "pending_review", "{check}");
    assert_eq!(o["compatibility"], "breaking", "{check}");
    assert_eq!(
        o["review_id"], review_v3,
        "same candidate, same review: {check}"
    );
    assert_eq!(check["registry_version"], 2, "{check}");
    assert_eq!(
        server.counters().not_modified,
        before.not_modified,
        "a pending candidate must be refetched, not answered 304"
    );
    let pending = sb.pending_list();
    assert_eq!(pending.len(), 1, "exactly one open review: {pending:?}");
    let p = &pending[0];
    assert_has_keys(p, PENDING_KEYS, "pending list entry");
    assert_eq!(p["id"], review_v3, "{p}");
    assert_eq!(p["watch"], WATCH, "{p}");
    assert_eq!(p["compatibility"], "breaking", "{p}");
    assert!(int_of(p, "change_count") >= 1, "{p}");
    assert_eq!(p["base_registry_version"], 2, "{p}");
    assert!(is_rfc3339_utc(str_of(p, "created_at")), "{p}");
    let fp_v3 = str_of(p, "candidate_fingerprint").to_string();
    assert!(fp_v3.starts_with("sha256:") && fp_v3 != fp_v2, "{p}");
    assert_eq!(
        sb.status()["watches"][0]["pending_change_count"],
        p["change_count"],
        "status counts the open review's changes"
    );

    // 5. pending show: the list fields plus the full report.
    let show = sb.pending_show(review_v3);
    assert_has_keys(&show, PENDING_KEYS, "pending show");
    assert_has_keys(&show, &["report"], "pending show");
    assert_eq!(show["id"], review_v3);
    assert_eq!(show["report"]["compatibility"], "breaking", "{show}");
    let changes = show["report"]["changes"].as_array().expect("changes array");
    assert_eq!(
        changes.len() as i64,
        int_of(&show, "change_count"),
        "{show}"
    );
    for c in changes {
        assert_has_keys(c, CHANGE_KEYS, "change");
        assert!(!str_of(c, "message").is_empty(), "{c}");
    }
    assert!(
        changes.iter().any(|c| c["severity"] == "breaking"
            && c["path"].as_str().unwrap_or("").contains("showPetById")),
        "the removal of showPetById is a breaking change: {show}"
    );

    // 6. accept → version 3 with reviewer, reason and review id in history.
    let id = review_v3.to_string();
    let accept = sb.run(&[
        "pending",
        "accept",
        &id,
        "--reviewer",
        "alice",
        "--reason",
        "approved in TICKET-1",
        "--config",
        &cfg,
    ]);
    accept.assert_code(0);
    assert_eq!(sb.registry_version(), 3);
    let history = sb.history(WATCH);
    assert_eq!(history.len(), 3, "{history:?}");
    let newest = &history[0];
    assert_eq!(newest["version"], 3, "{newest}");
    assert_eq!(newest["registry_version"], 3, "{newest}");
    assert_eq!(newest["fingerprint"], fp_v3.as_str(), "{newest}");
    assert_eq!(newest["compatibility"], "breaking", "{newest}");
    assert_eq!(newest["review_id"], review_v3, "{newest}");
    assert_eq!(newest["reviewer"], "alice", "{newest}");
    assert_eq!(newest["reason"], "approved in TICKET-1", "{newest}");
    assert_eq!(newest["via"], "cli", "a local shell's --reviewer: {newest}");
    // The accepted change ids are those `pending show` listed for the review.
    let shown: Vec<Value> = sb.pending_show(review_v3)["report"]["changes"]
        .as_array()
        .expect("the review's changes")
        .iter()
        .map(|c| c["id"].clone())
        .collect();
    assert!(
        !shown.is_empty()
            && shown
                .iter()
                .all(|id| id.as_str().is_some_and(|i| i.starts_with("chg2:")))
    );
    assert_eq!(newest["accepted_changes"], Value::Array(shown), "{newest}");
    assert_eq!(
        history[1]["accepted_changes"],
        serde_json::json!([]),
        "{history:?}"
    );
    assert_eq!(
        history
            .iter()
            .map(|h| h["version"].clone())
            .collect::<Vec<_>>(),
        vec![3, 2, 1],
        "{history:?}"
    );
    assert!(sb.pending_list().is_empty());
    assert_eq!(sb.pending_show(review_v3)["state"], "accepted");
    assert_eq!(sb.status()["watches"][0]["fingerprint"], fp_v3.as_str());

    // ... accepting the same review again: exit 1, "superseded", nothing written.
    let again = sb.run(&[
        "pending",
        "accept",
        &id,
        "--reviewer",
        "alice",
        "--reason",
        "approved in TICKET-1",
        "--config",
        &cfg,
    ]);
    again.assert_code(1);
    assert!(
        format!("{}{}", again.stdout_text(), again.stderr_text()).contains("superseded"),
        "{}",
        again.describe()
    );
    assert_eq!(sb.registry_version(), 3);
    assert_eq!(sb.history(WATCH).len(), 3);

    // The accepted candidate is now current: the same document is unchanged.
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "unchanged", "{check}");
    assert_eq!(check["registry_version"], 3);

    // 7. v4: listPets GET → POST (same operationId, same path) → security_review.
    server.set_document(Pets::v4().bytes());
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "pending_review", "{}", run.describe());
    assert_eq!(o["compatibility"], "security_review", "{check}");
    let review_v4 = int_of(o, "review_id");
    assert_ne!(review_v4, review_v3);
    assert_eq!(check["registry_version"], 3, "{check}");
    let show = sb.pending_show(review_v4);
    assert_eq!(show["report"]["compatibility"], "security_review", "{show}");
    assert!(
        show["report"]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["severity"] == "security"),
        "a method escalation is a security change: {show}"
    );

    // 8. reject → the same candidate is answered `rejected` and never queued again.
    let id4 = review_v4.to_string();
    sb.run(&[
        "pending",
        "reject",
        &id4,
        "--reviewer",
        "bob",
        "--reason",
        "no",
        "--config",
        &cfg,
    ])
    .assert_code(0);
    assert!(sb.pending_list().is_empty());
    let show = sb.pending_show(review_v4);
    assert_eq!(show["state"], "rejected", "{show}");
    assert_eq!(sb.registry_version(), 3);
    for _ in 0..2 {
        let (run, check) = sb.check(&[]);
        run.assert_code(0);
        let o = only_outcome(&check);
        assert_eq!(o["action"], "rejected", "{}", run.describe());
        assert!(o["review_id"].is_null(), "no new review: {check}");
        assert_eq!(check["registry_version"], 3, "{check}");
        let pending = sb.pending_list();
        assert!(
            pending.is_empty(),
            "rejected candidate re-queued: {pending:?}"
        );
    }
    assert_eq!(sb.status()["watches"][0]["fingerprint"], fp_v3.as_str());
    assert_eq!(sb.history(WATCH).len(), 3);

    // 10a. malformed document (truncated JSON) → error, exit 1, registry untouched.
    let mut truncated = Pets::v3().bytes();
    truncated.truncate(truncated.len() / 2);
    server.set_document(truncated);
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "error", "{}", run.describe());
    let error = str_of(o, "error").to_lowercase();
    assert!(
        ["json", "parse", "eof", "invalid", "malformed", "syntax"]
            .iter()
            .any(|w| error.contains(w)),
        "the error names the problem: {error}"
    );
    assert_eq!(check["registry_version"], 3, "{check}");
    let status = sb.status();
    let w = &status["watches"][0];
    assert_eq!(w["status"], "error", "{status}");
    assert!(
        w["last_error"].as_str().is_some_and(|e| !e.is_empty()),
        "{status}"
    );
    assert_eq!(w["fingerprint"], fp_v3.as_str(), "{status}");
    assert_eq!(status["registry_version"], 3);
    assert_eq!(sb.history(WATCH).len(), 3);
    assert!(sb.pending_list().is_empty());

    // 10b. an unreachable server (second watch) → error, registry untouched; the first
    // watch recovers once its document is valid again.
    server.set_document(Pets::v3().bytes());
    let gone_url = format!("http://127.0.0.1:{}/openapi.json", dead_port());
    sb.write_config(&format!(
        "{}\n[[watch]]\nname = \"acme.gone\"\nkind = \"openapi\"\nurl = \"{gone_url}\"\ntimeout = \"5s\"\n\n[watch.schema_headers]\nAuthorization = \"Bearer ${{{TOKEN_VAR}}}\"\n",
        url_watch_config(&server.url())
    ));
    sb.run(&["config", "check", "--config", &cfg])
        .assert_code(0);
    let (run, check) = sb.check(&[]);
    run.assert_code(1);
    assert_check_shape(&check);
    assert_eq!(
        outcome_for(&check, WATCH)["action"],
        "unchanged",
        "{}",
        run.describe()
    );
    let gone = outcome_for(&check, "acme.gone");
    assert_eq!(gone["action"], "error", "{check}");
    assert!(
        gone["error"]
            .as_str()
            .is_some_and(|e| e.to_lowercase().contains("connect")),
        "the error says the server could not be reached: {check}"
    );
    assert_eq!(check["registry_version"], 3, "{check}");
    let status = sb.status();
    let gone_status = status["watches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["watch"] == "acme.gone")
        .unwrap_or_else(|| panic!("{status}"));
    assert_eq!(gone_status["status"], "error", "{status}");
    assert!(gone_status["fingerprint"].is_null(), "{status}");
    assert!(gone_status["last_error"].is_string(), "{status}");
    assert_eq!(status["registry_version"], 3);
    assert_eq!(status["watches"][0]["fingerprint"], fp_v3.as_str());
    assert_eq!(status["watches"][0]["status"], "unchanged", "{status}");
    let no_tool = sb.run(&["history", "acme.gone", "--config", &cfg, "--json"]);
    assert_ne!(no_tool.code, 0, "{}", no_tool.describe());

    // 12. status --json shape.
    let status = sb.status();
    assert_has_keys(&status, &["registry_version", "watches"], "status");
    assert_eq!(status["registry_version"], 3);
    let watches = status["watches"].as_array().expect("watches array");
    assert_eq!(watches.len(), 2, "{status}");
    for w in watches {
        assert_has_keys(w, STATUS_WATCH_KEYS, "status watch");
        assert_eq!(w["kind"], "openapi", "{w}");
        assert!(w["pending_change_count"].is_u64(), "{w}");
        assert!(is_rfc3339_utc(str_of(w, "last_checked_at")), "{w}");
    }
    assert_eq!(watches[0]["watch"], WATCH);
    assert_eq!(watches[1]["watch"], "acme.gone");
    assert_eq!(watches[0]["pending_change_count"], 0, "{status}");

    // Also exercise the human outputs, so they are scanned for the canary too.
    for args in [
        vec!["status", "--config", cfg.as_str()],
        vec!["pending", "list", "--config", cfg.as_str()],
        vec!["history", WATCH, "--config", cfg.as_str()],
        vec!["check", "--config", cfg.as_str(), "--watch", WATCH],
    ] {
        sb.run(&args).assert_code(0);
    }
    sb.run(&["pending", "show", &id, "--config", &cfg])
        .assert_code(0);
    sb.run(&["pending", "show", &id4, "--config", &cfg])
        .assert_code(0);

    // 11. the credential canary: sent to the origin, never stored or printed.
    let auth = server.authorization_values();
    assert!(!auth.is_empty());
    let expected = format!("Bearer {CANARY}");
    assert!(
        auth.iter().all(|a| a.as_deref() == Some(expected.as_str())),
        "every request to the configured origin carries the expanded header: {auth:?}"
    );
    for suffix in ["-wal", "-shm"] {
        let p = sb.path(&format!("registry.sqlite3{suffix}"));
        let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        assert!(
            len > 0,
            "{} should exist while a connection is open",
            p.display()
        );
    }
    assert_no_canary(&sb);
    drop(observer);
    // And once more after the last connection closed (WAL checkpointed into the file).
    assert_no_canary(&sb);
}

/// Scans every file in the sandbox (registry, -wal, -shm, ...) and every byte any run
/// printed for the canary in any encoding.
fn assert_no_canary(sb: &Sandbox) {
    let files = sb.all_files();
    let names: Vec<String> = files
        .iter()
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n == "registry.sqlite3"),
        "the registry exists: {names:?}"
    );
    for (path, bytes) in &files {
        if let Some(form) = find_canary(bytes) {
            panic!("the canary ({form}) is in {}", path.display());
        }
    }
    let transcript = sb.transcript();
    assert!(sb.run_count() > 0 && !transcript.is_empty());
    if let Some(form) = find_canary(&transcript) {
        panic!(
            "the canary ({form}) was printed by the binary:\n{}",
            String::from_utf8_lossy(&transcript)
        );
    }
}

/// The canary scanner itself must find what it is meant to find (or the scan proves
/// nothing).
#[test]
fn canary_scanner_detects_every_encoding() {
    let plain = format!("xx Bearer {CANARY} yy");
    assert!(find_canary(plain.as_bytes()).is_some());
    // base64 at every alignment, of the bare token and of the whole header value.
    let samples = [
        "c2VjcmV0", // not it
    ];
    assert!(find_canary(samples[0].as_bytes()).is_none());
    for prefix in ["", "B", "Be", "Bearer ", "Authorization: Bearer "] {
        let data = format!("{prefix}{CANARY}!");
        let encoded = simple_base64(data.as_bytes());
        assert!(
            find_canary(encoded.as_bytes()).is_some(),
            "base64 of {data:?} = {encoded} not detected"
        );
    }
    let pct: String = CANARY.bytes().map(|b| format!("%{b:02X}")).collect();
    assert!(find_canary(pct.as_bytes()).is_some());
    assert!(find_canary(b"nothing to see here").is_none());
}

fn simple_base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Step 9: a newer, different breaking candidate supersedes the open review.
#[test]
fn newer_candidate_supersedes_open_review() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    sb.write_config(&url_watch_config(&server.url()));
    let cfg = sb.config_arg();

    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");

    // Candidate A: showPetById removed.
    server.set_document(
        Pets {
            show_by_id: false,
            ..Pets::v1()
        }
        .bytes(),
    );
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "pending_review", "{}", run.describe());
    assert_eq!(o["compatibility"], "breaking", "{check}");
    let old_id = int_of(o, "review_id");

    // Candidate B: `limit` becomes required (a different breaking change).
    server.set_document(
        Pets {
            limit_required: true,
            ..Pets::v1()
        }
        .bytes(),
    );
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    let o = only_outcome(&check);
    assert_eq!(o["action"], "pending_review", "{}", run.describe());
    assert_eq!(o["compatibility"], "breaking", "{check}");
    let new_id = int_of(o, "review_id");
    assert_ne!(new_id, old_id, "a different candidate opens a new review");
    assert_eq!(check["registry_version"], 1, "{check}");

    let old = sb.pending_show(old_id);
    assert_eq!(old["state"], "superseded", "{old}");
    let new = sb.pending_show(new_id);
    assert_eq!(new["state"], "open", "{new}");
    assert!(
        new["report"]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"].as_str().unwrap_or("").contains("limit")),
        "the report names the limit parameter: {new}"
    );
    let pending = sb.pending_list();
    assert_eq!(pending.len(), 1, "at most one open review: {pending:?}");
    assert_eq!(pending[0]["id"], new_id);

    // The superseded review cannot be accepted.
    let id = old_id.to_string();
    let accept = sb.run(&[
        "pending",
        "accept",
        &id,
        "--reviewer",
        "alice",
        "--reason",
        "late",
        "--config",
        &cfg,
    ]);
    accept.assert_code(1);
    assert!(
        accept.stderr_text().contains("superseded"),
        "{}",
        accept.describe()
    );
    assert_eq!(sb.registry_version(), 1);
    assert_eq!(sb.history(WATCH).len(), 1);
    assert_no_canary(&sb);
}

/// A review whose base moved (the contract changed after it was queued) cannot be
/// accepted: CAS fails as superseded and nothing is written.
#[test]
fn accept_fails_when_base_moved() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    sb.write_config(&url_watch_config(&server.url()));
    let cfg = sb.config_arg();
    sb.check(&[]).0.assert_code(0);

    // A breaking candidate is queued against base version 1 ...
    server.set_document(
        Pets {
            show_by_id: false,
            ..Pets::v1()
        }
        .bytes(),
    );
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    let review = int_of(only_outcome(&check), "review_id");

    // ... then the provider publishes a compatible change instead, which is applied.
    server.set_document(Pets::v2().bytes());
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "applied", "{check}");
    assert_eq!(check["registry_version"], 2);

    let id = review.to_string();
    let accept = sb.run(&[
        "pending",
        "accept",
        &id,
        "--reviewer",
        "alice",
        "--reason",
        "stale approval",
        "--config",
        &cfg,
    ]);
    accept.assert_code(1);
    assert!(
        accept.stderr_text().contains("superseded"),
        "{}",
        accept.describe()
    );
    assert_eq!(sb.registry_version(), 2);
    assert_eq!(sb.history(WATCH).len(), 2);
}

/// Step 13: two `check` processes at once against one registry: one version per change,
/// no duplicates, no errors.
#[test]
fn concurrent_checks_apply_exactly_once() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    sb.write_config(&url_watch_config(&server.url()));
    let cfg = sb.config_arg();
    let args = ["check", "--config", cfg.as_str(), "--json"];

    let run_pair = |expected_first: &str| -> Vec<String> {
        let a = sb.spawn(&args);
        let b = sb.spawn(&args);
        let (a, b) = (sb.finish(a), sb.finish(b));
        let mut actions = Vec::new();
        for run in [&a, &b] {
            run.assert_code(0);
            let check = run.json();
            actions.push(str_of(only_outcome(&check), "action").to_string());
        }
        actions.sort();
        let mut expected = vec![expected_first.to_string(), "unchanged".to_string()];
        expected.sort();
        assert_eq!(
            actions,
            expected,
            "one process writes, the other sees it:\n{}\n{}",
            a.describe(),
            b.describe()
        );
        actions
    };

    // Round 0: both register at once.
    run_pair("registered");
    assert_eq!(sb.registry_version(), 1);
    assert_eq!(sb.history(WATCH).len(), 1);

    // Rounds 1..=5: a compatible change each time (the limit's maximum only grows).
    for round in 1..=5u64 {
        let before = sb.registry_version();
        server.set_document(
            Pets {
                limit_maximum: 100 + 50 * round,
                ..Pets::v1()
            }
            .bytes(),
        );
        run_pair("applied");
        let after = sb.registry_version();
        assert_eq!(after, before + 1, "round {round}: exactly one bump");
        let history = sb.history(WATCH);
        let versions: Vec<i64> = history.iter().map(|h| int_of(h, "version")).collect();
        let expected: Vec<i64> = (1..=round as i64 + 1).rev().collect();
        assert_eq!(
            versions, expected,
            "round {round}: contiguous, newest first"
        );
        let mut registry_versions: Vec<i64> = history
            .iter()
            .map(|h| int_of(h, "registry_version"))
            .collect();
        registry_versions.sort_unstable();
        registry_versions.dedup();
        assert_eq!(
            registry_versions.len(),
            history.len(),
            "round {round}: registry versions unique: {history:?}"
        );
        assert_eq!(
            history[0]["registry_version"].as_u64(),
            Some(after),
            "{history:?}"
        );
    }
    assert_no_canary(&sb);
}

/// A new ETag on the same bytes is `unchanged` with no version bump, and the stored
/// validator advances (the next cycle is a 304 against the new ETag).
#[test]
fn new_etag_alone_is_not_a_new_version() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    sb.write_config(&url_watch_config(&server.url()));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");
    let old_etag = server.current_etag();

    server.bump_revision();
    let before = server.counters();
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "unchanged", "{check}");
    assert_eq!(check["registry_version"], 1, "{check}");
    assert_eq!(server.last_if_none_match(), Some(old_etag));
    assert_eq!(
        server.counters().not_modified,
        before.not_modified,
        "full body"
    );
    assert_eq!(sb.history(WATCH).len(), 1);

    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "unchanged", "{check}");
    assert_eq!(server.last_if_none_match(), Some(server.current_etag()));
    assert_eq!(server.counters().not_modified, before.not_modified + 1);
    assert_eq!(check["registry_version"], 1, "{check}");
}

/// Without an ETag the refresh falls back to If-Modified-Since with the server's own
/// Last-Modified, and a 304 is `unchanged`.
#[test]
fn conditional_get_uses_last_modified_without_etag() {
    let server = DocServer::start(Pets::v1().bytes());
    server.set_send_etag(false);
    let sb = Sandbox::new();
    sb.write_config(&url_watch_config(&server.url()));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");

    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "unchanged", "{check}");
    assert_eq!(server.last_if_none_match(), None);
    assert_eq!(
        server.last_if_modified_since(),
        Some(server.current_last_modified()),
        "the stored Last-Modified is sent back verbatim"
    );
    assert_eq!(server.counters().not_modified, 1);
    assert_eq!(check["registry_version"], 1);
}

/// A file-source watch (`path` relative to the config folder, YAML) registers, and a JSON
/// rewrite of the same contract (other key order and layout) is unchanged.
#[test]
fn file_watch_yaml_then_json_is_unchanged() {
    let sb = Sandbox::new();
    sb.write_file("doc.yaml", PETS_V1_YAML.as_bytes());
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"{WATCH}\"\nkind = \"openapi\"\npath = \"doc.yaml\"\n"
    ));
    // Run from another directory: the path resolves against the config's folder.
    let elsewhere = tempfile::tempdir().unwrap();
    let cfg = sb.config_arg();
    let output = sb
        .command(&["check", "--config", &cfg, "--json"])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    let code = output.status.code();
    let check: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_eq!(code, Some(0), "{check}");
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");
    assert_eq!(check["registry_version"], 1);
    assert!(sb.path("registry.sqlite3").exists());
    let fp_yaml = sb.status()["watches"][0]["fingerprint"].clone();

    // The same contract as JSON, in the same file.
    sb.write_file("doc.yaml", &Pets::v1().bytes());
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        only_outcome(&check)["action"],
        "unchanged",
        "{}",
        run.describe()
    );
    assert_eq!(check["registry_version"], 1);
    assert_eq!(sb.status()["watches"][0]["fingerprint"], fp_yaml);

    // And a compatible edit of the file is applied.
    sb.write_file("doc.yaml", &Pets::v2().bytes());
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "applied", "{check}");
    assert_eq!(check["registry_version"], 2);
}

/// Steps 14 and 15: `diff` exit codes, determinism, Markdown; `config check` on an unknown key.
#[test]
fn diff_and_config_exit_codes() {
    let sb = Sandbox::new();
    let v1 = sb.write_file("v1.json", &Pets::v1().bytes());
    let v2 = sb.write_file("v2.json", &Pets::v2().bytes());
    let v3 = sb.write_file("v3.json", &Pets::v3().bytes());
    let (v1, v2, v3) = (
        v1.to_string_lossy().into_owned(),
        v2.to_string_lossy().into_owned(),
        v3.to_string_lossy().into_owned(),
    );

    // Breaking pair with --fail-on breaking → 1.
    let run = sb.run(&["diff", &v1, &v3, "--json", "--fail-on", "breaking"]);
    run.assert_code(1);
    let report = run.json();
    assert_has_keys(
        &report,
        &[
            "compatibility",
            "old_fingerprint",
            "new_fingerprint",
            "changes",
        ],
        "diff --json",
    );
    assert_eq!(report["compatibility"], "breaking", "{report}");
    for c in report["changes"].as_array().unwrap() {
        assert_has_keys(c, CHANGE_KEYS, "diff change");
    }

    // Compatible pair with --fail-on breaking → 0; with --fail-on compatible → 1.
    let run = sb.run(&["diff", &v1, &v2, "--json", "--fail-on", "breaking"]);
    run.assert_code(0);
    assert_eq!(run.json()["compatibility"], "compatible");
    sb.run(&["diff", &v1, &v2, "--fail-on", "compatible"])
        .assert_code(1);
    // Identical documents: 0 even at the lowest level.
    let run = sb.run(&["diff", &v1, &v1, "--json", "--fail-on", "compatible"]);
    run.assert_code(0);
    let same = run.json();
    assert_eq!(same["compatibility"], "identical", "{same}");
    assert_eq!(same["old_fingerprint"], same["new_fingerprint"]);

    // A missing file → 2, naming the file.
    let missing = sb.path("no-such-spec.json").to_string_lossy().into_owned();
    let run = sb.run(&["diff", &v1, &missing]);
    run.assert_code(2);
    assert!(
        run.stderr_text().contains("no-such-spec.json"),
        "{}",
        run.describe()
    );

    // A malformed file → 2, naming the file.
    let broken = sb.write_file("broken.json", b"{\"openapi\": \"3.0.3\", \"paths\": {");
    let run = sb.run(&["diff", &v1, &broken.to_string_lossy()]);
    run.assert_code(2);
    assert!(
        run.stderr_text().contains("broken.json"),
        "{}",
        run.describe()
    );

    // 15. --json is byte-identical across runs; --markdown runs.
    let a = sb.run(&["diff", &v2, &v3, "--json"]);
    let b = sb.run(&["diff", &v2, &v3, "--json"]);
    a.assert_code(0);
    b.assert_code(0);
    assert!(!a.stdout.is_empty());
    assert_eq!(a.stdout, b.stdout, "diff --json must be deterministic");
    let md = sb.run(&["diff", &v2, &v3, "--markdown"]);
    md.assert_code(0);
    assert!(
        md.stdout_text().contains("showPetById"),
        "{}",
        md.describe()
    );

    // Unknown config key → 2, naming the key and its line.
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"v1.json\"\nbogus_key = 1\n",
    );
    let cfg = sb.config_arg();
    let run = sb.run(&["config", "check", "--config", &cfg]);
    run.assert_code(2);
    let err = run.stderr_text();
    assert!(err.contains("bogus_key"), "{}", run.describe());
    assert!(err.contains("line 8"), "{}", run.describe());
    assert!(
        err.contains("schemawatch.toml"),
        "the message names the file: {}",
        run.describe()
    );
    // And a valid config passes.
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"v1.json\"\n",
    );
    sb.run(&["config", "check", "--config", &cfg])
        .assert_code(0);
}
