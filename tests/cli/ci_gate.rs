//! The CI gate through the binary: change ids, change-scoped accept entries that expire, the
//! formats (SARIF validated against the vendored schema and by the official validator, JUnit,
//! GitHub, GitLab), and the workflow of docs/ci.md in a real shallow clone.

use crate::common::git;
use crate::common::peers::{need, peers_dir};
use crate::common::Sandbox;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Two endpoints; the candidate removes one and narrows a response enum of the other (two
/// breaking changes), and its description gains provider text that tries to forge output.
fn base() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1.4.0"},
        "paths": {
            "/pets": {"get": {"operationId": "listPets",
                "responses": {"200": {"description": "ok", "content": {"application/json":
                    {"schema": {"type": "string", "enum": ["cat"]}}}}}}},
            "/owners": {"get": {"operationId": "listOwners",
                "responses": {"200": {"description": "ok"}}}}
        }
    })
}

fn candidate() -> Value {
    let mut d = base();
    d["info"]["version"] = json!("1.5.0");
    d["paths"]["/pets"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        ["enum"] = json!(["cat", "dog"]);
    d["paths"]["/pets"]["get"]["description"] =
        json!("Lists pets.\n::error::forged <b>bold</b> [x](https://evil.example)");
    d["paths"].as_object_mut().unwrap().remove("/owners");
    d
}

struct Gate {
    sb: Sandbox,
}

impl Gate {
    fn new() -> Gate {
        let sb = Sandbox::new();
        sb.write_file("old.json", &serde_json::to_vec(&base()).unwrap());
        sb.write_file("openapi.json", &serde_json::to_vec(&candidate()).unwrap());
        Gate { sb }
    }

    fn diff(&self, extra: &[&str]) -> crate::common::Run {
        let mut args = vec!["diff", "old.json", "openapi.json"];
        if !extra.contains(&"--date") {
            args.extend(["--date", "2026-12-01"]);
        }
        args.extend_from_slice(extra);
        self.sb.run(&args)
    }

    fn json(&self, extra: &[&str]) -> (i32, Value) {
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        let run = self.diff(&args);
        (run.code, run.json())
    }

    /// The ids of the breaking changes, sorted.
    fn breaking_ids(&self) -> Vec<String> {
        let (_, report) = self.json(&[]);
        let mut ids: Vec<String> = report["changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["severity"] == "breaking")
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    }

    fn accept(&self, entries: &[(&str, &str)]) -> String {
        let mut text = String::from("# reviewed drift\n");
        for (id, expires) in entries {
            text.push_str(&format!(
                "\n[[accept]]\nchange = \"{id}\"\nreviewer = \"alice\"\nreason = \"clients migrated\"\nexpires = \"{expires}\"\n"
            ));
        }
        self.sb.write_file("accept.toml", text.as_bytes());
        "accept.toml".to_string()
    }
}

#[test]
fn change_ids_are_stable_across_runs_key_order_and_document_order() {
    let g = Gate::new();
    let ids = g.breaking_ids();
    assert_eq!(ids.len(), 2, "two breaking changes: {ids:?}");
    for id in &ids {
        assert!(id.starts_with("chg2:") && id.len() == 37, "{id}");
    }
    assert_eq!(g.breaking_ids(), ids, "the same across runs");
    // The same documents written with every object's keys (paths included) in reverse order
    // (serde_json's own maps are sorted, so the text is written by hand).
    fn reversed(v: &Value, out: &mut String) {
        match v {
            Value::Object(object) => {
                out.push('{');
                for (i, key) in object.keys().rev().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(key).unwrap());
                    out.push(':');
                    reversed(&object[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    reversed(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&serde_json::to_string(other).unwrap()),
        }
    }
    let reorder = |v: &Value| {
        let mut text = String::new();
        reversed(v, &mut text);
        assert!(
            text.starts_with("{\"paths\""),
            "keys really are reordered: {text}"
        );
        text
    };
    g.sb.write_file("old.json", reorder(&base()).as_bytes());
    g.sb.write_file("openapi.json", reorder(&candidate()).as_bytes());
    assert_eq!(g.breaking_ids(), ids, "the same for reordered inputs");
}

#[test]
fn accept_entries_are_scoped_to_one_change_and_expire() {
    let g = Gate::new();
    let ids = g.breaking_ids();
    let fail = ["--fail-on", "breaking"];

    // Without an accept file: fails, and offers ready-to-paste entries.
    let (code, report) = g.json(&fail);
    assert_eq!(code, 1);
    assert_eq!(report["gate"]["failed"], true);
    let entry = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == ids[0].as_str())
        .unwrap()["accept_entry"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        entry.contains(&ids[0]) && entry.contains("expires = \"2026-12-31\""),
        "{entry}"
    );

    // Accepting exactly one of the two still fails.
    let file = g.accept(&[(&ids[0], "2027-01-31")]);
    let (code, report) = g.json(&["--fail-on", "breaking", "--accept", &file]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["gate"]["accepted"], 1);
    assert_eq!(report["gate"]["unaccepted"], 1);
    assert_eq!(
        report["compatibility"], "breaking",
        "the verdict stays the classifier's"
    );
    let accepted = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == ids[0].as_str())
        .unwrap();
    assert_eq!(
        accepted["accepted"],
        json!({"reviewer": "alice", "reason": "clients migrated", "expires": "2027-01-31"})
    );

    // Accepting both passes.
    let file = g.accept(&[(&ids[0], "2027-01-31"), (&ids[1], "2026-12-01")]);
    let (code, report) = g.json(&["--fail-on", "breaking", "--accept", &file]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["gate"]["failed"], false);

    // The next day the second entry has expired: it counts again, and says so.
    let run = g.diff(&[
        "--json",
        "--fail-on",
        "breaking",
        "--accept",
        &file,
        "--date",
        "2026-12-02",
    ]);
    assert_eq!(run.code, 1, "{}", run.describe());
    assert_eq!(run.json()["gate"]["expired"], 1);
    assert!(
        run.stderr_text().contains("expired on 2026-12-01"),
        "{}",
        run.describe()
    );

    // A stale entry warns; --strict-accept makes it fail.
    let file = g.accept(&[
        (&ids[0], "2027-01-31"),
        (&ids[1], "2027-01-31"),
        ("chg1:0000000000000000", "2027-01-31"),
    ]);
    let run = g.diff(&["--fail-on", "breaking", "--accept", &file]);
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(run.stderr_text().contains("stale"), "{}", run.describe());
    let run = g.diff(&[
        "--fail-on",
        "breaking",
        "--accept",
        &file,
        "--strict-accept",
    ]);
    assert_eq!(run.code, 1, "{}", run.describe());
}

#[test]
fn a_malformed_accept_file_is_a_usage_error_naming_file_and_line() {
    let g = Gate::new();
    let ids = g.breaking_ids();
    for (text, line, needle) in [
        (
            format!("\n[[accept]]\nchange = \"{}\"\nreviewer = \"a\"\nreason = \"b\"\nexpires = \"2027-13-01\"\n", ids[0]),
            2,
            "not a date",
        ),
        ("[[accept]]\nchange = \n".to_string(), 2, ""),
        (
            format!("[[accept]]\nchange = \"{0}\"\nreviewer = \"a\"\nreason = \"b\"\nexpires = \"2027-01-01\"\n\n[[accept]]\nchange = \"{0}\"\nreviewer = \"c\"\nreason = \"d\"\nexpires = \"2027-01-01\"\n", ids[0]),
            7,
            "a second entry",
        ),
    ] {
        g.sb.write_file("bad.toml", text.as_bytes());
        let run = g.diff(&["--fail-on", "breaking", "--accept", "bad.toml"]);
        assert_eq!(run.code, 2, "{}", run.describe());
        let stderr = run.stderr_text();
        assert!(stderr.contains(&format!("bad.toml:{line}:")), "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
}

#[test]
fn hints_and_formats_keep_provider_text_inert() {
    let g = Gate::new();
    let (_, report) = g.json(&[]);
    assert!(
        report["hints"][0]
            .as_str()
            .unwrap()
            .contains("1.4.0 → 1.5.0"),
        "{report}"
    );
    let run = g.diff(&[
        "--fail-on",
        "breaking",
        "--format",
        "github",
        "--format",
        "junit=report.xml",
        "--format",
        "gitlab=quality.json",
        "--format",
        "sarif=out.sarif",
    ]);
    assert_eq!(run.code, 1, "{}", run.describe());
    let github = run.stdout_text();
    for line in github.lines() {
        assert!(
            line.starts_with("::error file=openapi.json,")
                || line.starts_with("::notice file=openapi.json,"),
            "every line is one command of ours: {line}"
        );
    }
    assert!(!github.contains("\n::error::forged"), "{github}");
    let junit = std::fs::read_to_string(g.sb.path("report.xml")).unwrap();
    assert!(junit.contains("failures=\"2\""), "{junit}");
    assert!(!junit.contains("<b>"), "{junit}");
    let gitlab: Value =
        serde_json::from_slice(&std::fs::read(g.sb.path("quality.json")).unwrap()).unwrap();
    assert!(gitlab
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["fingerprint"].as_str().unwrap().starts_with("chg2:")));
    // Two formats on stdout is a usage error.
    let run = g.diff(&["--format", "json", "--format", "github"]);
    assert_eq!(run.code, 2, "{}", run.describe());
}

/// Writes a SARIF file for a fixture with an accepted change too (suppressions).
fn sarif_fixtures(g: &Gate) -> Vec<PathBuf> {
    let ids = g.breaking_ids();
    let file = g.accept(&[(&ids[0], "2027-01-31")]);
    let mut out = Vec::new();
    for (name, extra) in [
        ("plain.sarif", vec![]),
        ("accepted.sarif", vec!["--accept", file.as_str()]),
    ] {
        let target = format!("sarif={name}");
        let mut args = vec!["--fail-on", "breaking", "--format", target.as_str()];
        args.extend(extra);
        let run = g.diff(&args);
        assert!(run.code == 1, "{}", run.describe());
        out.push(g.sb.path(name));
    }
    out
}

#[test]
fn sarif_validates_against_the_vendored_schema_and_the_official_validator() {
    let g = Gate::new();
    let files = sarif_fixtures(&g);
    let accepted: Value = serde_json::from_slice(&std::fs::read(&files[1]).unwrap()).unwrap();
    assert!(
        accepted["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["suppressions"][0]["kind"] == "external"),
        "{accepted}"
    );

    // The SARIF 2.1.0 JSON Schema, with Python's jsonschema (a pinned test peer).
    let python = peers_dir().join(".venv/bin/python");
    let python = need(
        python.is_file().then_some(python),
        "the Python test peers (tests/peers/.venv with jsonschema)",
    );
    if let Some(python) = python {
        let schema =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sarif-schema-2.1.0.json");
        let script = "import json,sys\nimport jsonschema\nschema=json.load(open(sys.argv[1]))\nfor f in sys.argv[2:]:\n    jsonschema.Draft202012Validator(schema).validate(json.load(open(f)))\nprint('valid', len(sys.argv)-2)\n";
        let out = Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(&schema)
            .args(&files)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "schema validation failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The official validator (npm @microsoft/sarif-multitool, a .NET program), once on both.
    let tool = peers_dir().join("sarif/node_modules/@microsoft/sarif-multitool/bin.js");
    let node = crate::common::peers::runs("node", &["--version"]).then_some("node");
    let Some(node) = need(
        node.filter(|_| tool.is_file()),
        "node and tests/peers/sarif",
    ) else {
        return;
    };
    let bundle = g.sb.path("dotnet-bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    let out = Command::new(node)
        .arg(&tool)
        .arg("validate")
        .args(&files)
        .arg("--output")
        .arg(g.sb.path("validation.sarif"))
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env("DOTNET_BUNDLE_EXTRACT_BASE_DIR", &bundle)
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .env("HOME", g.sb.path("."))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "validator failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(g.sb.path("validation.sarif")).unwrap()).unwrap();
    let errors: Vec<&Value> = report["runs"][0]["results"]
        .as_array()
        .map(|r| r.iter().filter(|r| r["level"] == "error").collect())
        .unwrap_or_default();
    assert!(errors.is_empty(), "validator errors: {errors:#?}");
}

/// The commands of docs/ci.md in a real shallow clone: the base branch fetched with
/// `--depth=1`, the pull request's spec compared with it, SARIF written, GitHub output printed.
#[test]
fn the_documented_ci_workflow_runs_in_a_shallow_clone() {
    let sb = Sandbox::new();
    let upstream = sb.path("upstream");
    std::fs::create_dir(&upstream).unwrap();
    git(&upstream, &["init", "-q"]);
    std::fs::write(
        upstream.join("openapi.json"),
        serde_json::to_vec(&base()).unwrap(),
    )
    .unwrap();
    git(&upstream, &["add", "openapi.json"]);
    git(&upstream, &["commit", "-q", "-m", "base"]);
    git(&upstream, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(
        upstream.join("openapi.json"),
        serde_json::to_vec(&candidate()).unwrap(),
    )
    .unwrap();
    git(&upstream, &["commit", "-q", "-am", "drift"]);

    let work = sb.path("work");
    let url = format!("file://{}", upstream.display());
    git(
        sb.dir.path(),
        &[
            "clone", "-q", "--depth", "1", "--branch", "feature", &url, "work",
        ],
    );
    git(
        &work,
        &[
            "fetch",
            "-q",
            "--depth=1",
            "origin",
            "main:refs/remotes/origin/main",
        ],
    );

    let run = |extra: &[&str]| {
        let mut args = vec![
            "diff",
            "git:origin/main:openapi.json",
            "openapi.json",
            "--fail-on",
            "breaking",
            "--accept",
            ".schemawatch-accept.toml",
            "--format",
            "sarif=schemawatch.sarif",
            "--format",
            "github",
            "--date",
            "2026-12-01",
        ];
        args.extend_from_slice(extra);
        let out = sb
            .command(&args)
            .current_dir(&work)
            .env("GITHUB_STEP_SUMMARY", work.join("summary.md"))
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    std::fs::write(work.join(".schemawatch-accept.toml"), "").unwrap();
    let (code, github) = run(&[]);
    assert_eq!(code, 1, "{github}");
    assert_eq!(github.matches("::error ").count(), 2, "{github}");
    let sarif: Value =
        serde_json::from_slice(&std::fs::read(work.join("schemawatch.sarif")).unwrap()).unwrap();
    assert!(sarif["runs"][0]["results"].as_array().unwrap().len() >= 2);
    let summary = std::fs::read_to_string(work.join("summary.md")).unwrap();
    assert!(
        summary.starts_with("## Contract drift: breaking"),
        "{summary}"
    );

    // Accept both (as a reviewer would, from the SARIF fingerprints): the job passes.
    let mut accept = String::new();
    for r in sarif["runs"][0]["results"].as_array().unwrap() {
        if r["level"] == "error" {
            accept.push_str(&format!(
                "[[accept]]\nchange = \"{}\"\nreviewer = \"bob\"\nreason = \"v2 clients\"\nexpires = \"2027-02-01\"\nfile = \"openapi.json\"\n\n",
                r["partialFingerprints"]["schemawatchChangeId/v1"].as_str().unwrap()
            ));
        }
    }
    std::fs::write(work.join(".schemawatch-accept.toml"), accept).unwrap();
    let (code, github) = run(&[]);
    assert_eq!(code, 0, "{github}");
    assert_eq!(github.matches("::error ").count(), 0, "{github}");
}

/// The new document of the source-line fixtures, as YAML; the JSON fixture is the same
/// document pretty-printed. Markers name the lines the changes must land on.
const LINES_YAML: &str = r##"openapi: 3.0.3
info: {title: Pets, version: "2"}
paths:
  /pets:
    get:
      operationId: listPets
      parameters:
        - $ref: '#/components/parameters/limit'
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Pet'
  /pets/{petId}:
    get:
      operationId: showPetById
      parameters:
        - name: petId
          in: path
          required: true
          schema: {type: string}
      responses:
        '200': {description: ok}
components:
  parameters:
    limit:
      name: limit
      in: query
      schema:
        type: integer
        maximum: 50
  schemas:
    Pet:
      type: object
      properties:
        name: {type: string}
        kind:
          type: string
          enum: [cat, dog]
"##;

/// The old document: `maximum` was 100, Pet had a `tag`, `kind` one value, and
/// `/pets/{petId}` had a `delete`.
fn lines_old() -> Value {
    let mut d: Value = serde_json::from_str(&lines_json()).unwrap();
    d["components"]["parameters"]["limit"]["schema"]["maximum"] = json!(100);
    d["components"]["schemas"]["Pet"]["properties"]["tag"] = json!({"type": "string"});
    d["components"]["schemas"]["Pet"]["properties"]["kind"]["enum"] = json!(["cat"]);
    d["paths"]["/pets/{petId}"]["delete"] = json!({"operationId": "deletePet",
        "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": {"204": {"description": "gone"}}});
    d
}

fn lines_json() -> String {
    let value: Value = serde_json::from_str(
        r##"{"openapi":"3.0.3","info":{"title":"Pets","version":"2"},"paths":{"/pets":{"get":{"operationId":"listPets","parameters":[{"$ref":"#/components/parameters/limit"}],"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Pet"}}}}}}},"/pets/{petId}":{"get":{"operationId":"showPetById","parameters":[{"name":"petId","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}},"components":{"parameters":{"limit":{"name":"limit","in":"query","schema":{"type":"integer","maximum":50}}},"schemas":{"Pet":{"type":"object","properties":{"name":{"type":"string"},"kind":{"type":"string","enum":["cat","dog"]}}}}}}"##,
    )
    .unwrap();
    serde_json::to_string_pretty(&value).unwrap()
}

/// Line and column (1-based) of the first line of `text` that, trimmed, starts with
/// `marker`, after the first line starting with `after` (so `properties` means Pet's).
fn line_of(text: &str, after: &str, marker: &str) -> (u64, u64) {
    let start = text
        .lines()
        .position(|l| l.trim_start().starts_with(after))
        .unwrap();
    let (i, line) = text
        .lines()
        .enumerate()
        .skip(start)
        .find(|(_, l)| l.trim_start().starts_with(marker))
        .unwrap_or_else(|| panic!("no {marker} after {after}"));
    (
        i as u64 + 1,
        (line.len() - line.trim_start().len()) as u64 + 1,
    )
}

#[test]
fn every_change_has_the_line_of_its_changed_node_in_json_and_yaml() {
    let sb = Sandbox::new();
    sb.write_file("old.json", &serde_json::to_vec(&lines_old()).unwrap());
    let json_text = lines_json();
    sb.write_file("new.json", json_text.as_bytes());
    sb.write_file("new.yaml", LINES_YAML.as_bytes());
    for (file, text, q) in [
        ("new.json", json_text.as_str(), "\""),
        ("new.yaml", LINES_YAML, ""),
    ] {
        let key = |k: &str| format!("{q}{k}{q}:");
        // Each change lands on its node in the new document; a removal on the nearest parent
        // that survives (Pet's properties, the path item of the removed operation).
        let expected = [
            (
                "request-constraint-tightened",
                line_of(text, &key("limit"), &key("maximum")),
            ),
            (
                "response-enum-value-added",
                line_of(text, &key("Pet"), &key("enum")),
            ),
            (
                "response-property-removed",
                line_of(text, &key("Pet"), &key("properties")),
            ),
            (
                "endpoint-removed",
                line_of(text, &key("paths"), &key("/pets/{petId}")),
            ),
        ];
        let run = sb.run(&["diff", "old.json", file, "--json"]);
        let report = run.json();
        let changes = report["changes"].as_array().unwrap();
        assert_eq!(changes.len(), expected.len(), "{report:#}");
        for (rule, (line, column)) in expected {
            let c = changes.iter().find(|c| c["rule"] == rule).unwrap();
            assert_eq!(
                (
                    c["location"]["line"].as_u64(),
                    c["location"]["column"].as_u64()
                ),
                (Some(line), Some(column)),
                "{file} {rule}: {c:#}"
            );
        }
        // Messages name the endpoint as the document writes it; `path` and `before` keep the
        // matching identity.
        let removed = changes
            .iter()
            .find(|c| c["rule"] == "endpoint-removed")
            .unwrap();
        assert_eq!(
            removed["message"],
            "Endpoint deletePet (DELETE /pets/{petId}) was removed."
        );
        assert_eq!(removed["path"], "endpoints.deletePet");
        assert_eq!(removed["before"], "DELETE /pets/{}");
        let run = sb.run(&[
            "diff",
            "old.json",
            file,
            "--format",
            "github",
            "--format",
            "sarif=out.sarif",
            "--format",
            "gitlab=gl.json",
        ]);
        let github = run.stdout_text();
        let (line, column) = expected[0].1;
        assert!(
            github.contains(&format!(
                "::error file={file},line={line},col={column},title=request-constraint-tightened::"
            )),
            "{github}"
        );
        let sarif: Value =
            serde_json::from_slice(&std::fs::read(sb.path("out.sarif")).unwrap()).unwrap();
        for r in sarif["runs"][0]["results"].as_array().unwrap() {
            let rule = r["ruleId"].as_str().unwrap();
            let (line, column) = expected.iter().find(|(id, _)| *id == rule).unwrap().1;
            let region = &r["locations"][0]["physicalLocation"]["region"];
            assert_eq!(region["startLine"].as_u64(), Some(line), "{file} {rule}");
            assert_eq!(
                region["startColumn"].as_u64(),
                Some(column),
                "{file} {rule}"
            );
        }
        let gitlab: Value =
            serde_json::from_slice(&std::fs::read(sb.path("gl.json")).unwrap()).unwrap();
        assert!(gitlab
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["location"]["lines"]["begin"].as_u64() > Some(1)));
    }
}
