//! `diff` classifies with the policy a watch has: `--config` brings the config's `[severity]`,
//! `--watch` that watch's `[watch.severity]`, and `--severity RULE=LEVEL` overrides on top.

use crate::common::Sandbox;
use serde_json::{json, Value};

const OLD: &str = r#"{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/pets":{"get":{"operationId":"listPets","responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"string","enum":["cat"]}}}}}}}}}"#;

/// A response enum gains a value: `response-enum-value-added`, breaking by default.
fn documents(sb: &Sandbox) -> (String, String) {
    let old = sb.write_file("old.json", OLD.as_bytes());
    let new = sb.write_file(
        "new.json",
        OLD.replace(r#"["cat"]"#, r#"["cat","dog"]"#).as_bytes(),
    );
    (
        old.to_string_lossy().into_owned(),
        new.to_string_lossy().into_owned(),
    )
}

fn verdict(sb: &Sandbox, extra: &[&str]) -> (i32, String) {
    let (old, new) = documents(sb);
    let mut args = vec![
        "diff",
        old.as_str(),
        new.as_str(),
        "--json",
        "--fail-on",
        "breaking",
    ];
    args.extend_from_slice(extra);
    let run = sb.run(&args);
    if run.code == 2 {
        return (2, run.stderr_text());
    }
    let report = run.json();
    (
        run.code,
        report["compatibility"].as_str().unwrap().to_string(),
    )
}

#[test]
fn the_default_policy_calls_a_new_response_enum_value_breaking() {
    let sb = Sandbox::new();
    assert_eq!(verdict(&sb, &[]), (1, "breaking".to_string()));
}

#[test]
fn a_command_line_override_changes_the_verdict() {
    let sb = Sandbox::new();
    assert_eq!(
        verdict(&sb, &["--severity", "response-enum-value-added=compatible"]),
        (0, "compatible".to_string())
    );
}

#[test]
fn the_config_and_the_named_watch_bring_their_overrides() {
    let sb = Sandbox::new();
    sb.write_config(
        "[severity]\nresponse-enum-value-added = \"info\"\n\n\
         [[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"new.json\"\n\
         [watch.severity]\nresponse-enum-value-added = \"security\"\n",
    );
    let config = sb.config_arg();
    // The global `[severity]`: info only, so the two documents are compatible.
    assert_eq!(
        verdict(&sb, &["--config", &config]),
        (0, "compatible".to_string())
    );
    // The watch's own override wins over the global one.
    assert_eq!(
        verdict(&sb, &["--config", &config, "--watch", "acme.pets"]),
        (1, "security_review".to_string())
    );
    // And the command line wins over both.
    assert_eq!(
        verdict(
            &sb,
            &[
                "--config",
                &config,
                "--watch",
                "acme.pets",
                "--severity",
                "response-enum-value-added=compatible"
            ]
        ),
        (0, "compatible".to_string())
    );
}

#[test]
fn bad_policy_arguments_are_usage_errors_that_name_the_problem() {
    let sb = Sandbox::new();
    sb.write_config("[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"new.json\"\n");
    let config = sb.config_arg();
    for (extra, needle) in [
        (vec!["--severity", "no-such-rule=info"], "no-such-rule"),
        (
            vec!["--severity", "response-enum-value-added"],
            "RULE=LEVEL",
        ),
        (vec!["--severity", "response-enum-value-added=loud"], "loud"),
        (
            vec!["--config", config.as_str(), "--watch", "acme.cats"],
            "acme.cats",
        ),
    ] {
        let (code, stderr) = verdict(&sb, &extra);
        assert_eq!(code, 2, "{extra:?}");
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
    }
}

/// One endpoint that takes a `Pet` and returns one; `edit` changes the schemas of the new
/// document (`request`, `response`).
fn pet_documents(sb: &Sandbox, edit: impl Fn(&mut Value, &mut Value)) -> (String, String) {
    let schemas = |request: Value, response: Value| {
        json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": {"/pets": {"post": {"operationId": "createPet",
                "requestBody": {"required": true, "content": {"application/json": {"schema": request}}},
                "responses": {"200": {"description": "ok",
                    "content": {"application/json": {"schema": response}}}}}}}})
    };
    let base = || {
        json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "tag": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "id": {"type": "string", "readOnly": true},
            "secret": {"type": "string", "writeOnly": true}}})
    };
    let (mut request, mut response) = (base(), base());
    edit(&mut request, &mut response);
    sb.write_file(
        "old.json",
        &serde_json::to_vec(&schemas(base(), base())).unwrap(),
    );
    sb.write_file(
        "new.json",
        &serde_json::to_vec(&schemas(request, response)).unwrap(),
    );
    ("old.json".into(), "new.json".into())
}

/// The gate's exit code, verdict and rule ids for a pet edit.
fn gate(edit: impl Fn(&mut Value, &mut Value)) -> (i32, String, Vec<String>) {
    let sb = Sandbox::new();
    let (old, new) = pet_documents(&sb, edit);
    let run = sb.run(&["diff", &old, &new, "--json", "--fail-on", "breaking"]);
    let report = run.json();
    let rules = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap().to_string())
        .collect();
    (
        run.code,
        report["compatibility"].as_str().unwrap().to_string(),
        rules,
    )
}

fn push_required(schema: &mut Value, name: &str) {
    schema["required"].as_array_mut().unwrap().push(json!(name));
}

#[test]
fn read_only_is_ignored_on_the_request_side_and_write_only_on_the_response_side() {
    // A readOnly property the caller never sends becomes required in the request schema; a
    // writeOnly one the caller never receives disappears from the response.
    let (code, verdict, rules) = gate(|request, response| {
        push_required(request, "id");
        response["properties"]
            .as_object_mut()
            .unwrap()
            .remove("secret");
    });
    assert_eq!((code, verdict.as_str()), (0, "compatible"), "{rules:?}");
    assert!(
        rules.iter().all(|r| r == "read-write-only-side-ignored"),
        "{rules:?}"
    );
    // The same edits on the other side still gate.
    let (code, verdict, rules) = gate(|request, _| push_required(request, "secret"));
    assert_eq!((code, verdict.as_str()), (1, "breaking"), "{rules:?}");
    let (code, _, rules) = gate(|_, response| {
        response["properties"].as_object_mut().unwrap().remove("id");
    });
    assert_eq!(code, 1, "{rules:?}");
}

#[test]
fn an_any_of_branch_is_judged_by_the_side_it_is_on() {
    let three = || json!({"anyOf": [{"type": "boolean"}, {"type": "string"}, {"type": "integer"}]});
    // Added: the caller may send more (compatible); a caller may receive more (breaking).
    let (code, verdict, rules) = gate(|request, _| request["properties"]["tag"] = three());
    assert_eq!((code, verdict.as_str()), (0, "compatible"), "{rules:?}");
    assert_eq!(rules, ["request-branch-added"]);
    let (code, verdict, rules) = gate(|_, response| response["properties"]["tag"] = three());
    assert_eq!((code, verdict.as_str()), (1, "breaking"), "{rules:?}");
    assert_eq!(rules, ["response-branch-added"]);
    // Removed: the reverse.
    let one = || json!({"anyOf": [{"type": "integer"}]});
    let (code, verdict, rules) = gate(|request, _| request["properties"]["tag"] = one());
    assert_eq!((code, verdict.as_str()), (1, "breaking"), "{rules:?}");
    assert_eq!(rules, ["request-branch-removed"]);
    let (code, verdict, rules) = gate(|_, response| response["properties"]["tag"] = one());
    assert_eq!((code, verdict.as_str()), (0, "compatible"), "{rules:?}");
    assert_eq!(rules, ["response-branch-removed"]);
}
