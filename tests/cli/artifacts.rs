//! Review artifacts through the real binary and real registry changes: catalog export and diff,
//! pins and their reason codes, surface triage, provenance stamps and `inspect diff`.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_schemawatch"));
    c.env_remove("SCHEMAWATCH_CONFIG").env("RUST_LOG", "warn");
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// A pet store; `edit` changes it.
fn doc(edit: impl FnOnce(&mut Value)) -> Value {
    let mut d = json!({
        "openapi": "3.0.3",
        "info": {"title": "Pets (internal)", "version": "1"},
        "servers": [{"url": "https://pets.internal.example/v1"}],
        "paths": {
            "/pets": {
                "get": {"operationId": "listPets", "description": "SECRET-DESCRIPTION",
                        "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}],
                        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}},
                "post": {"operationId": "createPet",
                         "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
                         "responses": {"201": {"description": "created"}}}
            },
            "/pets/{id}": {
                "delete": {"operationId": "deletePet",
                           "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                           "responses": {"204": {"description": "gone"}}}
            }
        },
        "components": {"schemas": {"Pet": {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "tag": {"type": "string"}}}}}
    });
    edit(&mut d);
    d
}

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    config: String,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::write(
            root.join("sw.toml"),
            "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n",
        )
        .unwrap();
        let config = root.join("sw.toml").display().to_string();
        Env {
            _dir: dir,
            root,
            config,
        }
    }

    fn serve(&self, d: &Value) {
        std::fs::write(self.root.join("pets.json"), serde_json::to_vec(d).unwrap()).unwrap();
    }

    fn check(&self) -> Value {
        let o = run(&["check", "--config", &self.config, "--json"]);
        json_of(&o)
    }

    fn export(&self) -> String {
        let o = run(&["catalog", "export", "--config", &self.config]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        stdout(&o)
    }

    fn pin_check(&self, pin: &Path) -> (i32, Value) {
        let o = run(&[
            "pin",
            "check",
            &pin.display().to_string(),
            "--config",
            &self.config,
            "--json",
        ]);
        (o.status.code().unwrap_or(-1), json_of(&o))
    }

    fn capture(&self, name: &str) -> PathBuf {
        let o = run(&["pin", "capture", "--config", &self.config]);
        assert!(o.status.success());
        let path = self.root.join(name);
        std::fs::write(&path, o.stdout).unwrap();
        path
    }

    fn accept_open(&self) {
        let list = json_of(&run(&[
            "pending",
            "list",
            "--config",
            &self.config,
            "--json",
        ]));
        let id = list[0]["id"].as_i64().expect("an open review").to_string();
        let o = run(&[
            "pending",
            "accept",
            &id,
            "--config",
            &self.config,
            "--reviewer",
            "alice",
            "--reason",
            "ok",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

fn version_of(inventory: &str, tool: &str) -> String {
    let v: Value = serde_json::from_str(inventory).unwrap();
    v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool_id"] == tool)
        .unwrap()["version"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn catalog_pins_and_versions_follow_real_changes() {
    let env = Env::new();
    env.serve(&doc(|_| {}));
    assert_eq!(env.check()["outcomes"][0]["action"], "registered");

    let v1 = env.export();
    let inventory: Value = serde_json::from_str(&v1).unwrap();
    assert_eq!(inventory["schema_version"], "schemawatch.tool_inventory.v1");
    let classes: Vec<(&str, &str, &str)> = inventory["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["tool_id"].as_str().unwrap(),
                r["side_effect_class"].as_str().unwrap(),
                r["version"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        classes,
        vec![
            ("tool:acme.pets/createPet", "non-idempotent-write", "1.0.0"),
            ("tool:acme.pets/deletePet", "destructive", "1.0.0"),
            ("tool:acme.pets/listPets", "read-only", "1.0.0"),
        ]
    );
    // Content-free: no paths, server names or descriptions.
    for leak in [
        "/pets",
        "internal.example",
        "SECRET-DESCRIPTION",
        "Pets (internal)",
    ] {
        assert!(!v1.contains(leak), "{leak} leaked into the inventory");
    }

    let pin0 = env.capture("pin0.json");
    assert_eq!(
        env.pin_check(&pin0),
        (
            0,
            json!({"snapshot_digest": json!(serde_json::from_slice::<Value>(&std::fs::read(&pin0).unwrap()).unwrap()["snapshot_digest"]), "status": "eligible", "reasons": []})
        )
    );

    // A compatible change: listPets gets an optional parameter -> 1.1.0; the pin is not followed.
    env.serve(&doc(|d| {
        d["paths"]["/pets"]["get"]["parameters"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "tag", "in": "query", "schema": {"type": "string"}}));
    }));
    assert_eq!(env.check()["outcomes"][0]["action"], "applied");
    let v2 = env.export();
    assert_eq!(version_of(&v2, "tool:acme.pets/listPets"), "1.1.0");
    assert_eq!(version_of(&v2, "tool:acme.pets/createPet"), "1.0.0");
    let (code, answer) = env.pin_check(&pin0);
    assert_eq!(code, 1);
    assert_eq!(answer["status"], "re-review-required");
    assert_eq!(
        answer["reasons"],
        json!(["implementation_changed", "schema_changed"])
    );

    // catalog diff of the two inventories: one changed record keyed by (tool_id, version) —
    // a version replacement reads as removed + added.
    std::fs::write(env.root.join("v1.json"), &v1).unwrap();
    std::fs::write(env.root.join("v2.json"), &v2).unwrap();
    let o = run(&[
        "catalog",
        "diff",
        &env.root.join("v1.json").display().to_string(),
        &env.root.join("v2.json").display().to_string(),
    ]);
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["added"][0]["version"], "1.1.0");
    assert_eq!(d["removed"][0]["version"], "1.0.0");
    assert_eq!(d["unchanged"].as_array().unwrap().len(), 2);
    let md = run(&[
        "catalog",
        "diff",
        &env.root.join("v1.json").display().to_string(),
        &env.root.join("v2.json").display().to_string(),
        "--format",
        "markdown",
    ]);
    assert!(stdout(&md).starts_with("# Tool catalog diff\n"));
    // Reordered input, same bytes.
    let mut reordered: Value = serde_json::from_str(&v2).unwrap();
    reordered["tools"].as_array_mut().unwrap().reverse();
    std::fs::write(
        env.root.join("v2r.json"),
        serde_json::to_string_pretty(&reordered).unwrap(),
    )
    .unwrap();
    let o2 = run(&[
        "catalog",
        "diff",
        &env.root.join("v1.json").display().to_string(),
        &env.root.join("v2r.json").display().to_string(),
    ]);
    assert_eq!(o.stdout, o2.stdout);

    // A side-effect escalation accepted by a reviewer: deletePet's operation now... listPets becomes POST.
    let pin1 = env.capture("pin1.json");
    env.serve(&doc(|d| {
        d["paths"]["/pets"]["get"]["parameters"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "tag", "in": "query", "schema": {"type": "string"}}));
        let list = d["paths"]["/pets"]["get"].take();
        d["paths"]["/pets"].as_object_mut().unwrap().remove("get");
        d["paths"]["/pets"]["put"] = list;
    }));
    assert_eq!(
        env.check()["outcomes"][0]["compatibility"],
        "security_review"
    );
    env.accept_open();
    let (code, answer) = env.pin_check(&pin1);
    assert_eq!(code, 1);
    assert!(
        answer["reasons"]
            .as_array()
            .unwrap()
            .contains(&json!("side_effect_changed")),
        "{answer}"
    );
    assert_eq!(
        version_of(&env.export(), "tool:acme.pets/listPets"),
        "2.0.0"
    );

    // A tool removed (accepted): tool_unavailable.
    let pin2 = env.capture("pin2.json");
    env.serve(&doc(|d| {
        d["paths"]["/pets"]["get"]["parameters"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "tag", "in": "query", "schema": {"type": "string"}}));
        let list = d["paths"]["/pets"]["get"].take();
        d["paths"]["/pets"].as_object_mut().unwrap().remove("get");
        d["paths"]["/pets"]["put"] = list;
        d["paths"].as_object_mut().unwrap().remove("/pets/{id}");
    }));
    assert_eq!(env.check()["outcomes"][0]["action"], "pending_review");
    env.accept_open();
    assert_eq!(
        env.pin_check(&pin2).1["reasons"],
        json!(["tool_unavailable"])
    );

    // A tampered or malformed pin is invalid (exit 2).
    let mut tampered: Value = serde_json::from_slice(&std::fs::read(&pin2).unwrap()).unwrap();
    tampered["tools"][0]["version"] = json!("9.9.9");
    let bad = env.root.join("bad.json");
    std::fs::write(&bad, serde_json::to_string(&tampered).unwrap()).unwrap();
    assert_eq!(
        env.pin_check(&bad),
        (
            2,
            json!({"snapshot_digest": tampered["snapshot_digest"], "status": "re-review-required", "reasons": ["invalid_snapshot"]})
        )
    );
}

#[test]
fn strict_inventory_errors_are_value_free() {
    let env = Env::new();
    let bad = env.root.join("bad.json");
    std::fs::write(&bad, r#"{"schema_version":"schemawatch.tool_inventory.v1","tools":[{"tool_id":"tool:a.b/x","version":"1.0.0","capability_class":"capability:openapi/GET","side_effect_class":"read-only","schema_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","path":"/SECRET/admin"}]}"#).unwrap();
    let good = env.root.join("good.json");
    std::fs::write(
        &good,
        r#"{"schema_version":"schemawatch.tool_inventory.v1","tools":[]}"#,
    )
    .unwrap();
    let o = run(&[
        "catalog",
        "diff",
        &good.display().to_string(),
        &bad.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    // The unknown field is named, never its value (docs/reliability.md H11).
    assert!(
        err.contains("candidate.tools[0].path: unknown_field"),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
}

#[test]
fn triage_buckets_and_classification_drift() {
    let env = Env::new();
    env.serve(&doc(|_| {}));
    env.check();
    let o = run(&["triage", "--config", &env.config, "--json"]);
    let summary = json_of(&o);
    assert_eq!(summary["total"], 3);
    assert_eq!(
        summary["counts"],
        json!({"real_dispatch": 2, "read_only": 1, "native_only": 0})
    );
    assert_eq!(summary["executes_server_side"], 3);
    let class = env.root.join("classes.toml");
    std::fs::write(&class, "real_dispatch = [\"acme.pets/createPet\", \"acme.pets/deletePet\"]\nread_only = [\"acme.pets/listPets\"]\n").unwrap();
    let ok = run(&[
        "triage",
        "--config",
        &env.config,
        "--classification",
        &class.display().to_string(),
        "--json",
    ]);
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(json_of(&ok)["drift"]["ok"], true);
    std::fs::write(&class, "real_dispatch = [\"acme.pets/createPet\", \"acme.pets/listPets\"]\nread_only = [\"acme.pets/listPets\", \"acme.gone/x\"]\nmaybe = []\n").unwrap();
    let drift = run(&[
        "triage",
        "--config",
        &env.config,
        "--classification",
        &class.display().to_string(),
        "--json",
    ]);
    assert_eq!(drift.status.code(), Some(1));
    let d = &json_of(&drift)["drift"];
    assert_eq!(d["unclassified"], json!(["acme.pets/deletePet"]));
    assert_eq!(
        d["multiply_classified"],
        json!({"acme.pets/listPets": ["read_only", "real_dispatch"]})
    );
    assert_eq!(d["unknown_buckets"], json!(["maybe"]));
    assert_eq!(d["unknown_tools"], json!(["acme.gone/x"]));
}

#[test]
fn review_artifacts_are_stamped_and_inspect_diff_reads_two_registries() {
    let env = Env::new();
    env.serve(&doc(|_| {}));
    env.check();
    let old_db = env.root.join("old.sqlite3");
    // A consistent copy of the registry as it stands (VACUUM INTO writes a standalone file).
    rusqlite::Connection::open(env.root.join("registry.sqlite3"))
        .unwrap()
        .execute("VACUUM INTO ?1", [old_db.display().to_string()])
        .unwrap();
    env.serve(&doc(|d| {
        d["components"]["schemas"]["Pet"]["properties"]
            .as_object_mut()
            .unwrap()
            .remove("tag");
    }));
    assert_eq!(env.check()["outcomes"][0]["action"], "pending_review");
    env.accept_open();

    let list = json_of(&run(&[
        "pending",
        "list",
        "--config",
        &env.config,
        "--json",
    ]));
    assert_eq!(list, json!([]));
    let show = json_of(&run(&[
        "pending",
        "show",
        "1",
        "--config",
        &env.config,
        "--json",
    ]));
    for key in ["claim", "grounds", "warrant", "qualifier", "rebuttal"] {
        assert!(show["_toulmin"].get(key).is_some(), "{key} missing: {show}");
    }
    for key in ["scope", "signal_type", "attribution", "uncertainty"] {
        assert!(show["_tags"].get(key).is_some(), "{key} missing");
    }
    assert_eq!(show["_toulmin"]["qualifier"], "CERTAIN");

    let a = env.root.join("a.json");
    let b = env.root.join("b.json");
    std::fs::write(&a, serde_json::to_vec(&doc(|_| {})).unwrap()).unwrap();
    std::fs::write(
        &b,
        serde_json::to_vec(&doc(|d| {
            d["components"]["schemas"]["Pet"]["properties"]["tag"]["contentEncoding"] =
                json!("base64")
        }))
        .unwrap(),
    )
    .unwrap();
    let stamped = json_of(&run(&[
        "diff",
        &a.display().to_string(),
        &b.display().to_string(),
        "--json",
        "--provenance",
    ]));
    assert_eq!(
        stamped["_toulmin"]["qualifier"], "PROBABLE",
        "an unmodelled keyword decided it"
    );
    assert!(stamped["changes"].is_array());

    let before = std::fs::read(&old_db).unwrap();
    let new_db = env.root.join("registry.sqlite3").display().to_string();
    let o = run(&[
        "inspect",
        "diff",
        "acme.pets",
        "--old-db",
        &old_db.display().to_string(),
        "--new-db",
        &new_db,
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = json_of(&o);
    assert_eq!(report["compatibility"], "breaking");
    assert!(report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["path"] == "components.schemas.Pet.properties.tag"));
    let one = json_of(&run(&[
        "inspect",
        "diff",
        "acme.pets",
        "--old-db",
        &old_db.display().to_string(),
        "--new-db",
        &new_db,
        "--endpoint",
        "deletePet",
        "--json",
    ]));
    assert_eq!(one["compatibility"], "identical");
    assert_eq!(
        std::fs::read(&old_db).unwrap(),
        before,
        "inspect never writes"
    );
}

#[test]
fn a_new_endpoint_missing_from_the_classification_needs_security_review() {
    let env = Env::new();
    std::fs::write(
        env.root.join("sw.toml"),
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\nclassification = \"surface.toml\"\n",
    )
    .unwrap();
    std::fs::write(
        env.root.join("surface.toml"),
        "real_dispatch = [\"acme.pets/createPet\", \"acme.pets/deletePet\"]\nread_only = [\"acme.pets/listPets\"]\n",
    )
    .unwrap();
    env.serve(&doc(|_| {}));
    assert_eq!(env.check()["outcomes"][0]["action"], "registered");
    // A new read-only endpoint is normally compatible; unclassified, it needs security review.
    let with_toys = |d: &mut Value| {
        d["paths"]["/toys"] = json!({"get": {"operationId": "listToys", "responses": {"200": {"description": "ok"}}}});
    };
    env.serve(&doc(with_toys));
    let o = run(&["check", "--config", &env.config, "--json"]);
    let outcome = &json_of(&o)["outcomes"][0];
    assert_eq!(outcome["action"], "pending_review");
    assert_eq!(outcome["compatibility"], "security_review");
    // The WARN event of a pending review carries the verdict's reasoning.
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        log.contains("pending_review")
            && log.contains("_toulmin")
            && log.contains("endpoint-unclassified"),
        "{log}"
    );
    // Once classified, the same change is compatible and applies.
    std::fs::write(
        env.root.join("surface.toml"),
        "real_dispatch = [\"acme.pets/createPet\", \"acme.pets/deletePet\"]\nread_only = [\"acme.pets/listPets\", \"acme.pets/listToys\"]\n",
    )
    .unwrap();
    assert_eq!(env.check()["outcomes"][0]["action"], "applied");
}

#[test]
fn an_info_override_of_endpoint_unclassified_takes_effect() {
    let env = Env::new();
    std::fs::write(
        env.root.join("sw.toml"),
        "[severity]\nendpoint-unclassified = \"info\"\n\n[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\nclassification = \"surface.toml\"\n",
    )
    .unwrap();
    std::fs::write(
        env.root.join("surface.toml"),
        "real_dispatch = [\"acme.pets/createPet\", \"acme.pets/deletePet\"]\nread_only = [\"acme.pets/listPets\"]\n",
    )
    .unwrap();
    env.serve(&doc(|_| {}));
    assert_eq!(env.check()["outcomes"][0]["action"], "registered");
    // The same unclassified read-only endpoint as above: with the rule at info it is not held
    // for review on that account, so the compatible change applies.
    env.serve(&doc(|d| {
        d["paths"]["/toys"] = json!({"get": {"operationId": "listToys", "responses": {"200": {"description": "ok"}}}});
    }));
    let o = run(&["check", "--config", &env.config, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let outcome = &json_of(&o)["outcomes"][0];
    assert_eq!(outcome["action"], "applied", "{outcome:#}");
    assert_eq!(outcome["compatibility"], "compatible", "{outcome:#}");
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(!log.contains("pending_review"), "{log}");
}

/// Inventories and pins are named in the source grammar too: a CI job compares the inventory
/// committed on the base branch (`git:REV:PATH`) with the one it just exported, and checks a
/// pin piped in on standard input.
#[test]
fn artifacts_are_read_from_git_revisions_and_standard_input() {
    let env = Env::new();
    let git = |args: &[&str]| {
        crate::common::git(&env.root, args);
    };
    env.serve(&doc(|_| {}));
    env.check();
    std::fs::write(env.root.join("inventory.json"), env.export()).unwrap();
    git(&["init", "-q"]);
    git(&["add", "inventory.json"]);
    git(&["commit", "-q", "-m", "base"]);

    // A compatible change moves the version; the working tree's inventory follows it.
    env.serve(&doc(|d| {
        d["paths"]["/pets"]["get"]["parameters"][0]["description"] = json!("how many");
        d["paths"]["/owners"] = json!({"get": {"operationId": "listOwners",
            "responses": {"200": {"description": "ok"}}}});
    }));
    env.check();
    std::fs::write(env.root.join("inventory.json"), env.export()).unwrap();
    let o = bin()
        .args([
            "catalog",
            "diff",
            "git:HEAD:inventory.json",
            "inventory.json",
        ])
        .current_dir(&env.root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let diff = json_of(&o);
    assert!(
        !diff["added"].as_array().unwrap().is_empty(),
        "the new endpoint is an addition: {diff}"
    );

    // A pin on standard input.
    let pin = env.capture("pin.json");
    let mut child = bin()
        .args(["pin", "check", "-", "--config", &env.config, "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&pin).unwrap())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(json_of(&o)["status"], "eligible");

    // A stdio server holds no artifact.
    let o = bin()
        .args(["pin", "check", r#"cmd:["true"]"#, "--config", &env.config])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("holds no document"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
