//! Issue 32: reviewer identities on `/v1`, the review UI in `/ui` (driven over HTTP here and in
//! a real headless Chromium through WebDriver), and the Atom feeds.

use crate::common;
use crate::service::{config_text, file_watch, http, with_admin_token, Daemon, ADMIN_TOKEN};
use common::*;
use serde_json::Value;

pub(crate) const ALICE_VAR: &str = "SW_TEST_ALICE_TOKEN";
pub(crate) const ALICE_TOKEN: &str = "alice-token-5b1e";
pub(crate) const BOB_FILE_TOKEN: &str = "bob-token-one-9a2f";
pub(crate) const BOB_ROTATED: &str = "bob-token-two-c4d0";

/// A config with the admin token, reviewers alice (env) and bob (file) and one file watch.
pub(crate) fn reviewer_config(extra_server: &str) -> String {
    let text = with_admin_token(&config_text(
        &file_watch("acme.pets", "pets.json", "1s"),
        "",
    ));
    let text = text.replace("[server]\n", &format!("[server]\n{extra_server}"));
    format!(
        "{text}\n[[reviewer]]\nname = \"alice\"\ntoken_env = \"{ALICE_VAR}\"\n\n[[reviewer]]\nname = \"bob\"\ntoken_file = \"bob.token\"\n"
    )
}

pub(crate) fn start_with_reviewers(sb: &Sandbox) -> Daemon {
    let config = sb.config_arg();
    let mut cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
    cmd.env(ALICE_VAR, ALICE_TOKEN);
    Daemon::start_command(cmd, Some(ADMIN_TOKEN))
}

/// Waits for an open review and answers its id.
pub(crate) fn wait_review(d: &Daemon, after: i64) -> i64 {
    let pending = d.wait_json("/v1/pending", |v| {
        v.as_array()
            .is_some_and(|a| a.iter().any(|r| r["id"].as_i64() > Some(after)))
    });
    pending
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .max()
        .unwrap()
}

pub(crate) fn post_decision(d: &Daemon, path: &str, token: &str, body: &Value) -> (u16, String) {
    let auth = format!("Bearer {token}");
    http(
        d.api,
        "POST",
        path,
        None,
        &[("Authorization", &auth)],
        Some(&body.to_string()),
    )
}

#[test]
fn reviewer_tokens_decide_as_their_own_name_and_history_says_how() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_file("bob.token", format!("{BOB_FILE_TOKEN}\n").as_bytes());
    sb.write_config(&reviewer_config(""));
    let d = start_with_reviewers(&sb);
    d.wait_json("/v1/status", |v| v["watches"][0]["status"] == "unchanged");

    // Review 1: alice's token may not name bob; without a name it records alice.
    sb.write_file("pets.json", &Pets::v3().bytes());
    let first = wait_review(&d, 0);
    let accept = format!("/v1/pending/{first}/accept");
    let forged = serde_json::json!({"reviewer": "bob", "reason": "looks fine"});
    assert_eq!(post_decision(&d, &accept, ALICE_TOKEN, &forged).0, 403);
    let wrong = serde_json::json!({"reason": "looks fine"});
    assert_eq!(post_decision(&d, &accept, "not-a-token", &wrong).0, 401);
    let (status, body) = post_decision(&d, &accept, ALICE_TOKEN, &wrong);
    assert_eq!(status, 200, "{body}");

    // Review 2: bob's file token, rotated without a restart: the old one no longer works.
    let required = Pets {
        limit_required: true,
        ..Pets::v3()
    };
    sb.write_file("pets.json", &required.bytes());
    let second = wait_review(&d, first);
    sb.write_file("bob.token", format!("{BOB_ROTATED}\n").as_bytes());
    let reason = serde_json::json!({"reviewer": "bob", "reason": "announced"});
    let reject = format!("/v1/pending/{second}/reject");
    assert_eq!(post_decision(&d, &reject, BOB_FILE_TOKEN, &reason).0, 401);
    let (status, body) = post_decision(&d, &reject, BOB_ROTATED, &reason);
    assert_eq!(status, 200, "{body}");

    // Review 3: the admin token must name a reviewer, and history says via=admin.
    let narrower = Pets {
        limit_required: true,
        limit_maximum: 50,
        ..Pets::v3()
    };
    sb.write_file("pets.json", &narrower.bytes());
    let third = wait_review(&d, second);
    let accept = format!("/v1/pending/{third}/accept");
    let unnamed = serde_json::json!({"reason": "rollback"});
    assert_eq!(post_decision(&d, &accept, ADMIN_TOKEN, &unnamed).0, 400);
    let named = serde_json::json!({"reviewer": "carol", "reason": "rollback"});
    let (status, body) = post_decision(&d, &accept, ADMIN_TOKEN, &named);
    assert_eq!(status, 200, "{body}");

    let history = sb.history("acme.pets");
    let by_review = |id: i64| {
        history
            .iter()
            .find(|h| h["review_id"] == id)
            .unwrap_or_else(|| panic!("no history row of review {id}: {history:?}"))
    };
    assert_eq!(by_review(first)["reviewer"], "alice");
    assert_eq!(by_review(first)["via"], "reviewer");
    assert_eq!(by_review(third)["reviewer"], "carol");
    assert_eq!(by_review(third)["via"], "admin");
    let show = sb.pending_show(second);
    assert_eq!(show["reviewer"], "bob");
    let log = d.log_text();
    for secret in [ALICE_TOKEN, BOB_FILE_TOKEN, BOB_ROTATED, ADMIN_TOKEN] {
        assert!(!log.contains(secret), "a token in the log");
    }
}
