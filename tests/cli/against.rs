//! `diff --against REV FILE...` (the pre-commit form, docs/design.md): each FILE compared with
//! its version at REV in a real git repository made by the test.

use crate::common::git;
use crate::common::{Run, Sandbox};
use serde_json::{json, Value};
use std::path::Path;

/// An OpenAPI document with one GET endpoint per name (`/pets` → `listPets`).
fn doc(endpoints: &[&str]) -> Vec<u8> {
    let mut paths = serde_json::Map::new();
    for name in endpoints {
        let op = format!("list{}{}", name[..1].to_uppercase(), &name[1..]);
        paths.insert(
            format!("/{name}"),
            json!({"get": {"operationId": op, "responses": {"200": {"description": "ok"}}}}),
        );
    }
    serde_json::to_vec_pretty(&json!({
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1.0.0"},
        "paths": paths,
    }))
    .unwrap()
}

fn base() -> Vec<u8> {
    doc(&["pets", "owners"])
}

/// `/owners` removed: breaking (`endpoint-removed`).
fn breaking() -> Vec<u8> {
    doc(&["pets"])
}

/// `/toys` added: compatible.
fn compatible() -> Vec<u8> {
    doc(&["pets", "owners", "toys"])
}

/// A sandbox that is a git repository with `files` committed (none: HEAD is unborn).
fn repo(files: &[(&str, Vec<u8>)]) -> Sandbox {
    let sb = Sandbox::new();
    let dir = sb.dir.path();
    git(dir, &["init", "-q"]);
    if !files.is_empty() {
        for (name, bytes) in files {
            write(dir, name, bytes);
            git(dir, &["add", name]);
        }
        git(dir, &["commit", "-q", "-m", "base"]);
    }
    sb
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

fn against(sb: &Sandbox, rev: &str, rest: &[&str]) -> Run {
    let mut args = vec!["diff", "--against", rev];
    args.extend_from_slice(rest);
    sb.run(&args)
}

#[test]
fn a_breaking_change_against_head_fails_naming_the_file_and_the_rule() {
    let sb = repo(&[("openapi.json", base())]);
    write(sb.dir.path(), "openapi.json", &breaking());
    let run = against(&sb, "HEAD", &["openapi.json"]);
    run.assert_code(1);
    let out = run.stdout_text();
    assert!(out.contains("openapi.json"), "{}", run.describe());
    assert!(out.contains("endpoint-removed"), "{}", run.describe());
    // The default gate of this form is `breaking`: the text carries the gate line.
    assert!(out.contains("fail on breaking"), "{}", run.describe());
}

#[test]
fn a_compatible_change_passes_unless_fail_on_says_otherwise() {
    let sb = repo(&[("openapi.json", base())]);
    write(sb.dir.path(), "openapi.json", &compatible());
    against(&sb, "HEAD", &["openapi.json"]).assert_code(0);
    against(&sb, "HEAD", &["--fail-on", "compatible", "openapi.json"]).assert_code(1);
    // An unchanged file passes too.
    write(sb.dir.path(), "openapi.json", &base());
    against(&sb, "HEAD", &["openapi.json"]).assert_code(0);
}

#[test]
fn a_file_new_at_rev_passes_without_a_comparison() {
    let sb = repo(&[("openapi.json", base())]);
    write(sb.dir.path(), "second.json", &breaking());
    let run = against(&sb, "HEAD", &["second.json"]);
    run.assert_code(0);
    assert!(
        run.stdout_text().contains("second.json: new (not in HEAD)"),
        "{}",
        run.describe()
    );
}

#[test]
fn every_file_is_reported_in_order_and_the_worst_decides() {
    let sb = repo(&[("a.json", base()), ("b.json", base())]);
    write(sb.dir.path(), "a.json", &compatible());
    write(sb.dir.path(), "b.json", &breaking());
    write(sb.dir.path(), "c.json", &base());
    let run = against(&sb, "HEAD", &["a.json", "b.json", "c.json"]);
    run.assert_code(1);
    let out = run.stdout_text();
    let at = |needle: &str| {
        out.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing:\n{}", run.describe()))
    };
    assert!(
        at("a.json") < at("b.json") && at("b.json") < at("c.json: new"),
        "{out}"
    );
    // The failing file was not the last one: the later files were still compared.
    let run = against(&sb, "HEAD", &["b.json", "a.json"]);
    run.assert_code(1);
    assert!(run.stdout_text().contains("a.json"), "{}", run.describe());
}

#[test]
fn json_lists_every_file_with_its_report() {
    let sb = repo(&[("openapi.json", base())]);
    write(sb.dir.path(), "openapi.json", &breaking());
    write(sb.dir.path(), "second.json", &base());
    let run = against(&sb, "HEAD", &["--json", "openapi.json", "second.json"]);
    run.assert_code(1);
    let v: Value = run.json();
    assert_eq!(v["against"], "HEAD", "{v}");
    assert_eq!(v["failed"], true, "{v}");
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{v}");
    assert_eq!(files[0]["file"], "openapi.json");
    assert_eq!(files[0]["new"], false);
    assert_eq!(files[0]["report"]["compatibility"], "breaking");
    assert_eq!(files[0]["report"]["gate"]["failed"], true);
    assert_eq!(files[0]["report"]["gate"]["fail_on"], "breaking");
    assert_eq!(files[1]["file"], "second.json");
    assert_eq!(files[1]["new"], true);
    assert!(files[1]["report"].is_null(), "{v}");
}

#[test]
fn an_accept_file_applies_to_every_file() {
    let sb = repo(&[("openapi.json", base())]);
    write(sb.dir.path(), "openapi.json", &breaking());
    let report = against(&sb, "HEAD", &["--json", "openapi.json"]).json();
    let id = report["files"][0]["report"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["rule"] == "endpoint-removed")
        .map(|c| c["id"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no endpoint-removed change: {report}"));
    sb.write_file(
        "accept.toml",
        format!(
            "[[accept]]\nchange = \"{id}\"\nreviewer = \"alice\"\nreason = \"announced\"\nexpires = \"2026-12-31\"\n"
        )
        .as_bytes(),
    );
    against(
        &sb,
        "HEAD",
        &[
            "--accept",
            "accept.toml",
            "--date",
            "2026-12-01",
            "openapi.json",
        ],
    )
    .assert_code(0);
}

#[test]
fn an_unborn_head_makes_every_file_new() {
    let sb = repo(&[]);
    write(sb.dir.path(), "openapi.json", &base());
    let run = against(&sb, "HEAD", &["openapi.json"]);
    run.assert_code(0);
    assert!(
        run.stdout_text()
            .contains("openapi.json: new (not in HEAD)"),
        "{}",
        run.describe()
    );
}

#[test]
fn paths_are_relative_to_the_working_directory() {
    let sb = repo(&[("api/openapi.json", base())]);
    write(sb.dir.path(), "api/openapi.json", &breaking());
    let out = sb
        .command(&["diff", "--against", "HEAD", "openapi.json"])
        .current_dir(sb.path("api"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("endpoint-removed"));
}

#[test]
fn bad_revisions_sources_and_outputs_are_usage_errors() {
    let sb = repo(&[("openapi.json", base())]);
    write(sb.dir.path(), "openapi.json", &breaking());
    for (args, needle) in [
        (
            &["diff", "--against", "no-such-rev", "openapi.json"][..],
            "no-such-rev",
        ),
        (&["diff", "--against", "-x", "openapi.json"][..], "-x"),
        (
            &["diff", "--against", "HEAD", "missing.json"][..],
            "missing.json",
        ),
        (&["diff", "--against", "HEAD", "-"][..], "-"),
        (
            &["diff", "--against", "HEAD", "git:HEAD:openapi.json"][..],
            "git:",
        ),
        (
            &[
                "diff",
                "--against",
                "HEAD",
                "http://127.0.0.1:9/openapi.json",
            ][..],
            "http",
        ),
        (
            &[
                "diff",
                "--against",
                "HEAD",
                "--format",
                "sarif=out.sarif",
                "openapi.json",
            ][..],
            "--format",
        ),
        (
            &[
                "diff",
                "--against",
                "HEAD",
                "--kind",
                "sqlite",
                "openapi.json",
            ][..],
            "sqlite",
        ),
        (&["diff", "--against", "HEAD"][..], "FILE"),
    ] {
        let run = sb.run(args);
        run.assert_code(2);
        assert!(
            run.stderr_text().contains(needle),
            "{needle}: {}",
            run.describe()
        );
    }
    assert!(
        !sb.path("out.sarif").exists(),
        "nothing is written on a usage error"
    );
    // The two-argument form is unchanged: exactly OLD and NEW.
    sb.run(&["diff", "openapi.json"]).assert_code(2);
    sb.run(&[
        "diff",
        "git:HEAD:openapi.json",
        "openapi.json",
        "--fail-on",
        "breaking",
    ])
    .assert_code(1);
}
