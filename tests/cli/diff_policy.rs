//! `diff` classifies with the policy a watch has: `--config` brings the config's `[severity]`,
//! `--watch` that watch's `[watch.severity]`, and `--severity RULE=LEVEL` overrides on top.

use crate::common::Sandbox;

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
