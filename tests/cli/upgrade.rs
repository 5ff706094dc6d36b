//! Upgrade: a registry written by the release before "Nothing unseen, part 1"
//! (tests/upgrade/registry-v1, see its README) opened by this one. Checked against the same
//! upstream documents, nothing raises a review: unchanged contracts are `unchanged`, the open
//! review stays open with the same id, the rejected candidate is answered `rejected`, and the
//! MCP server whose prompts, resource templates and capabilities are now read is re-baselined
//! (history reason `projection-upgrade`), not reviewed.

use crate::common::peers;
use crate::common::Sandbox;
use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/upgrade/registry-v1");

/// `check`, with the config named relative to the sandbox (the working directory), as the
/// fixture was written: a path watch's source identity is its path as the config resolves it.
fn check(sb: &Sandbox, js: &str) -> Value {
    let output = sb
        .command(&["check", "--config", "schemawatch.toml", "--json"])
        .env("EVERYTHING_JS", js)
        .output()
        .expect("run schemawatch");
    assert!(
        output.status.code() == Some(0),
        "check failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("check JSON")
}

fn outcomes(check: &Value) -> Vec<(String, String, Value)> {
    check["outcomes"]
        .as_array()
        .expect("outcomes")
        .iter()
        .map(|o| {
            (
                o["watch"].as_str().unwrap_or_default().to_string(),
                o["action"].as_str().unwrap_or_default().to_string(),
                o["review_id"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_registry_of_the_previous_release_raises_no_review_for_unchanged_documents() {
    let Some((_node, js)) = peers::need(
        peers::everything(),
        "node + @modelcontextprotocol/server-everything",
    ) else {
        return;
    };
    let sb = Sandbox::new();
    for name in [
        "config.toml",
        "registry.sqlite3",
        "pets.json",
        "toys.json",
        "notes.json",
    ] {
        let bytes = std::fs::read(format!("{FIXTURE}/{name}")).expect("fixture file");
        if name == "config.toml" {
            sb.write_config(&String::from_utf8(bytes).expect("utf-8"));
        } else {
            sb.write_file(name, &bytes);
        }
    }
    let before = sb.registry_version();
    let expected = vec![
        (
            "acme.pets".to_string(),
            "pending_review".to_string(),
            Value::from(1),
        ),
        ("acme.toys".to_string(), "rejected".to_string(), Value::Null),
        (
            "acme.notes".to_string(),
            "unchanged".to_string(),
            Value::Null,
        ),
        (
            "demo.everything".to_string(),
            "unchanged".to_string(),
            Value::Null,
        ),
    ];
    assert_eq!(outcomes(&check(&sb, &js)), expected);
    // The MCP server read more completely was re-baselined: one applied version, no review.
    let history = sb.history("demo.everything");
    assert_eq!(history[0]["reason"], "projection-upgrade", "{history:?}");
    assert_eq!(sb.registry_version(), before + 1);
    let pending = sb.pending_list();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["id"], 1);
    // And again: nothing moves.
    assert_eq!(outcomes(&check(&sb, &js)), expected);
    assert_eq!(sb.registry_version(), before + 1);
    let run = sb.run(&["triage", "--config", &sb.config_arg(), "--json"]);
    run.assert_code(0);
    assert!(run
        .stdout_text()
        .contains("demo.everything/prompt:simple-prompt"));
}

/// Rewrites every stored contract and candidate of `registry` as an older projection would
/// have stored them (fingerprint version 0, one endpoint fewer, other fingerprints), keeping
/// the stored sources: what a registry looks like after a `FINGERPRINT_VERSION` bump.
fn age_projection(registry: &std::path::Path) {
    use std::io::{Read, Write};
    let conn = rusqlite::Connection::open(registry).expect("open registry");
    // A contract read from its stored source (migration 0004) has no stored copy to age:
    // only its fingerprints are the older projection's.
    let older = |gz: Option<Vec<u8>>| -> Option<Vec<u8>> {
        let gz = gz?;
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut text)
            .expect("inflate");
        let mut spec: Value = serde_json::from_slice(&text).expect("stored contract");
        spec["endpoints"]
            .as_array_mut()
            .expect("endpoints")
            .remove(0);
        let mut out = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        out.write_all(spec.to_string().as_bytes()).expect("deflate");
        Some(out.finish().expect("deflate"))
    };
    let rows: Vec<(i64, Option<Vec<u8>>)> = conn
        .prepare("SELECT rowid, spec_gz FROM tool_versions")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (rowid, gz) in rows {
        conn.execute(
            "UPDATE tool_versions SET spec_gz = ?2, fingerprint = 'sha256:old-' || tool,
                fingerprint_version = 0 WHERE rowid = ?1",
            rusqlite::params![rowid, older(gz)],
        )
        .unwrap();
    }
    conn.execute(
        "UPDATE tools SET fingerprint = 'sha256:old-' || name, fingerprint_version = 0",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE reviews SET base_fingerprint = 'sha256:old-' || watch",
        [],
    )
    .unwrap();
    let rows: Vec<(i64, Option<Vec<u8>>)> = conn
        .prepare("SELECT id, candidate_gz FROM reviews")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (id, gz) in rows {
        conn.execute(
            "UPDATE reviews SET candidate_gz = ?2, candidate_fingerprint = 'sha256:old-candidate-' || id,
                fingerprint_version = 0 WHERE id = ?1",
            rusqlite::params![id, older(gz)],
        )
        .unwrap();
    }
    conn.execute(
        "UPDATE rejected_candidates SET fingerprint = 'sha256:old-candidate-' || review_id,
            fingerprint_version = 0",
        [],
    )
    .unwrap();
}

#[test]
fn a_projection_bump_re_normalizes_stored_sources_and_raises_no_review() {
    // Plain documents: the contracts are read from the stored sources (nothing to age).
    projection_bump(|pets| pets.bytes(), false);
}

#[test]
fn a_projection_bump_re_normalizes_stored_sources_beside_stored_contracts() {
    // An escape that could spell a hidden character: the contracts are stored beside the
    // sources, and the aged ones are an older reading (one endpoint fewer).
    projection_bump(
        |pets| {
            String::from_utf8(pets.bytes())
                .unwrap()
                .replacen("\"Acme Pets\"", "\"Acme Pets \\u0021\"", 1)
                .into_bytes()
        },
        true,
    );
}

fn projection_bump(bytes: fn(&crate::common::Pets) -> Vec<u8>, stored_contracts: bool) {
    use crate::common::Pets;
    let sb = Sandbox::new();
    sb.write_file("pets.json", &bytes(&Pets::v1()));
    sb.write_file("toys.json", &bytes(&Pets::v1()));
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n\n[[watch]]\nname = \"acme.toys\"\nkind = \"openapi\"\npath = \"toys.json\"\n",
    );
    let (run, _) = sb.check(&[]);
    run.assert_code(0);
    // A breaking candidate of each: pets' stays open, toys' is rejected.
    let breaking = Pets {
        show_by_id: false,
        ..Pets::v1()
    };
    sb.write_file("pets.json", &bytes(&breaking));
    sb.write_file("toys.json", &bytes(&breaking));
    let (_, out) = sb.check(&[]);
    let ids: Vec<i64> = (0..2)
        .map(|i| out["outcomes"][i]["review_id"].as_i64().expect("queued"))
        .collect();
    let cfg = sb.config_arg();
    sb.run(&[
        "pending",
        "reject",
        &ids[1].to_string(),
        "--config",
        &cfg,
        "--reviewer",
        "alice",
        "--reason",
        "no",
    ])
    .assert_code(0);
    let before = sb.registry_version();
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    let contracts: i64 = conn
        .query_row(
            "SELECT count(*) FROM tool_versions WHERE spec_gz IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(contracts, if stored_contracts { 2 } else { 0 });
    drop(conn);
    age_projection(&sb.path("registry.sqlite3"));

    let (run, out) = sb.check(&[]);
    let actions: Vec<(&str, &Value)> = (0..2)
        .map(|i| {
            (
                out["outcomes"][i]["action"].as_str().unwrap(),
                &out["outcomes"][i]["review_id"],
            )
        })
        .collect();
    assert_eq!(
        actions,
        vec![
            ("pending_review", &Value::from(ids[0])),
            ("rejected", &Value::Null)
        ],
        "{}",
        run.describe()
    );
    assert!(
        run.stderr_text().contains("projection_upgrade"),
        "{}",
        run.describe()
    );
    assert_eq!(sb.registry_version(), before, "no contract changed");
    let pending = sb.pending_list();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["id"], ids[0]);
    let history = sb.history("acme.pets");
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0]["note"], "projection-upgrade", "{history:?}");
    // The open review is still the one a reviewer can accept, against the re-read base.
    sb.run(&[
        "pending",
        "accept",
        &ids[0].to_string(),
        "--config",
        &cfg,
        "--reviewer",
        "bob",
        "--reason",
        "ok",
    ])
    .assert_code(0);
    let (_, out) = sb.check(&[]);
    assert_eq!(out["outcomes"][0]["action"], "unchanged", "{out}");
    assert_eq!(out["outcomes"][1]["action"], "rejected", "{out}");
}

/// The same document with what only the wider projection reads: an operation's vendor
/// extension, a server with variables, and a response header's `required`.
fn read_more_completely(mut doc: Value) -> Value {
    doc["servers"] = serde_json::json!([{
        "url": "https://{region}.pets.example/v1",
        "variables": {"region": {"default": "eu", "enum": ["eu", "us"]}}
    }]);
    let get = &mut doc["paths"]["/pets"]["get"];
    get["x-internal-owner"] = Value::from("team-pets");
    doc
}

#[test]
fn a_contract_stored_by_an_earlier_release_is_re_baselined_once_when_read_more_completely() {
    use crate::common::Pets;
    let sb = Sandbox::new();
    // An earlier release read a templated server as its URL with defaults substituted, and
    // nothing of its variables: what it stored is this document's contract.
    let mut v1 = Pets::v1().json();
    v1["servers"] = serde_json::json!([{"url": "https://eu.pets.example/v1"}]);
    let text = |v: &Value| serde_json::to_vec_pretty(v).expect("json");
    sb.write_file("pets.json", &text(&v1));
    sb.write_file("toys.json", &text(&v1));
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n\n[[watch]]\nname = \"acme.toys\"\nkind = \"openapi\"\npath = \"toys.json\"\n",
    );
    sb.check(&[]).0.assert_code(0);
    // What migration 0003 marks on rows an earlier release wrote (no source to read again).
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).expect("open registry");
    conn.execute("UPDATE tools SET legacy_projection = 1", [])
        .expect("mark legacy");
    drop(conn);
    let before = sb.registry_version();

    // pets: the same document, read more completely. toys: that, plus a real breaking change.
    sb.write_file("pets.json", &text(&read_more_completely(v1.clone())));
    let mut toys = read_more_completely(
        Pets {
            show_by_id: false,
            ..Pets::v1()
        }
        .json(),
    );
    toys["servers"] = v1["servers"].clone();
    sb.write_file("toys.json", &text(&toys));
    let (run, out) = sb.check(&[]);
    assert_eq!(
        out["outcomes"][0]["action"],
        "unchanged",
        "{}",
        run.describe()
    );
    assert_eq!(
        out["outcomes"][1]["action"],
        "pending_review",
        "{}",
        run.describe()
    );
    assert!(
        run.stderr_text().contains("projection_upgrade"),
        "{}",
        run.describe()
    );
    let history = sb.history("acme.pets");
    assert_eq!(history[0]["reason"], "projection-upgrade", "{history:?}");
    let pending = sb.pending_list();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["watch"], "acme.toys", "{pending:?}");
    assert_eq!(sb.registry_version(), before + 1, "pets re-baselined once");

    // Once only: a later change to what is now read is drift like any other.
    let mut changed = read_more_completely(v1);
    changed["paths"]["/pets"]["get"]["x-internal-owner"] = Value::from("team-ops");
    sb.write_file("pets.json", &text(&changed));
    let (run, out) = sb.check(&[]);
    assert_eq!(
        out["outcomes"][0]["action"],
        "pending_review",
        "{}",
        run.describe()
    );
}

/// FINGERPRINT_VERSION 2 (issue 30) keeps every GraphQL directive usage: a registry whose
/// GraphQL contract was fingerprinted by the projection before it (which dropped `@oneOf` on a
/// field or a union) re-reads its stored source on open, so the unchanged document raises no
/// review; the usage is then in the contract, and removing it is drift.
#[test]
fn directive_usages_enter_the_projection_without_a_review_for_an_unchanged_document() {
    use schemawatch::core::fingerprint::tool_fingerprint;
    use schemawatch::core::model::Kind;
    use schemawatch::core::normalize::normalize;
    let sdl = "type Query { pet(id: ID!): Pet, name: String @oneOf }\n\
               union Pet @oneOf = Cat | Dog\n\
               type Cat { id: ID! }\n\
               type Dog { id: ID! }\n";
    let sb = Sandbox::new();
    sb.write_file("schema.graphql", sdl.as_bytes());
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.graph\"\nkind = \"graphql\"\npath = \"schema.graphql\"\n",
    );
    let (run, out) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        out["outcomes"][0]["action"],
        "registered",
        "{}",
        run.describe()
    );
    // What the earlier projection stored: the same document without the two usages it could
    // not read, fingerprinted under version 1.
    let earlier = normalize(
        Kind::Graphql,
        "acme.graph",
        sdl.replace(" @oneOf", "").as_bytes(),
    )
    .unwrap();
    let current = normalize(Kind::Graphql, "acme.graph", sdl.as_bytes()).unwrap();
    let (old_fp, new_fp) = (tool_fingerprint(&earlier), tool_fingerprint(&current));
    assert_ne!(old_fp, new_fp, "the usages are in the projection");
    {
        let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
        let stored: i64 = conn
            .query_row(
                "SELECT count(*) FROM tools WHERE fingerprint = ?1",
                [&new_fp],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(stored, 1);
        conn.execute(
            "UPDATE tools SET fingerprint = ?1, fingerprint_version = 1",
            [&old_fp],
        )
        .unwrap();
        conn.execute(
            "UPDATE tool_versions SET fingerprint = ?1, fingerprint_version = 1",
            [&old_fp],
        )
        .unwrap();
    }
    let before = sb.registry_version();
    let (run, out) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(
        out["outcomes"][0]["action"],
        "unchanged",
        "{}",
        run.describe()
    );
    assert!(sb.pending_list().is_empty(), "{}", run.describe());
    assert_eq!(sb.registry_version(), before);
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    let (fp, version): (String, i64) = conn
        .query_row(
            "SELECT fingerprint, fingerprint_version FROM tools",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((fp.as_str(), version), (new_fp.as_str(), 2));
    let note: Option<String> = conn
        .query_row("SELECT note FROM tool_versions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(note.as_deref(), Some("projection-upgrade"));
    // Now read, the union's `@oneOf` removed is drift (it used to read as identical).
    sb.write_file(
        "schema.graphql",
        sdl.replace("union Pet @oneOf", "union Pet").as_bytes(),
    );
    let (run, out) = sb.check(&[]);
    let o = &out["outcomes"][0];
    assert_eq!(o["action"], "pending_review", "{}", run.describe());
    assert_eq!(o["compatibility"], "breaking", "{}", run.describe());
}
