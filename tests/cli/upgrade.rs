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
