//! The source grammar through the binary: every form of a document argument of `diff`, read
//! the way a watch of that kind reads it, against real loopback servers, real MCP peers and
//! real git repositories (made in temp dirs).

use crate::common;
use crate::common::git;

use common::peers::{everything, everything_http, need};
use common::{Pets, Sandbox};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// A minimal HTTP/1.1 server on 127.0.0.1: fixed bodies by path, and the path of every request.
struct PathServer {
    base: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl PathServer {
    fn start(routes: Vec<(&'static str, String)>) -> PathServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(&stream);
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                // Skip the headers.
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = request_line.split(' ').nth(1).unwrap_or("").to_string();
                log.lock().unwrap().push(path.clone());
                let (status, body) = match routes.iter().find(|(p, _)| *p == path) {
                    Some((_, body)) => ("200 OK", body.clone()),
                    None => ("404 Not Found", String::new()),
                };
                let _ = write!(
                    &stream,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        PathServer { base, seen }
    }

    fn seen(&self) -> Vec<String> {
        let mut seen = self.seen.lock().unwrap().clone();
        seen.sort();
        seen
    }
}

fn optimade_routes(properties: &str) -> Vec<(&'static str, String)> {
    let info = r#"{"meta":{"api_version":"1.1.0"},"data":{"type":"info","id":"/","attributes":{
        "api_version":"1.1.0","available_api_versions":[{"url":"http://127.0.0.1/v1/","version":"1.1.0"}],
        "formats":["json"],"entry_types_by_format":{"json":["structures"]},
        "available_endpoints":["info","structures"],"is_index":false}}}"#;
    let structures = format!(
        r#"{{"meta":{{}},"data":{{"description":"structures","formats":["json"],
        "output_fields_by_format":{{"json":["id"]}},"properties":{{{properties}}}}}}}"#
    );
    vec![
        ("/v1/info", info.to_string()),
        ("/v1/info/structures", structures),
    ]
}

#[test]
fn optimade_url_is_read_like_a_watch_reads_it() {
    let id = r#""id":{"description":"ID","type":"string"}"#;
    let old = PathServer::start(optimade_routes(id));
    let new = PathServer::start(optimade_routes(&format!(
        r#"{id},"volume":{{"description":"cell volume","type":"float","unit":"Å^3"}}"#
    )));
    let sb = Sandbox::new();
    let run = sb.run(&[
        "diff",
        "--kind",
        "optimade",
        &format!("{}/v1", old.base),
        &format!("{}/v1", new.base),
        "--json",
    ]);
    run.assert_code(0);
    let report = run.json();
    assert_ne!(report["compatibility"], "identical", "{}", run.describe());
    for server in [&old, &new] {
        assert_eq!(server.seen(), ["/v1/info", "/v1/info/structures"]);
    }
}

#[test]
fn mcp_cmd_and_http_sources_speak_mcp() {
    let Some((node, js)) = need(
        everything(),
        "node + @modelcontextprotocol/server-everything",
    ) else {
        return;
    };
    let cmd = serde_json::to_string(&["node".to_string(), js.clone(), "stdio".into()]).unwrap();
    let cmd = format!("cmd:{cmd}");
    let sb = Sandbox::new();
    let run = sb.run(&["diff", "--kind", "mcp", &cmd, &cmd, "--json"]);
    run.assert_code(0);
    assert_eq!(
        run.json()["compatibility"],
        "identical",
        "{}",
        run.describe()
    );
    assert!(run.json()["old_fingerprint"].as_str().is_some());

    // Over Streamable HTTP the tools are the same; only the transport (part of the contract)
    // differs.
    let (_server, url) = everything_http(&node, &js);
    let run = sb.run(&["diff", "--kind", "mcp", &url, &url, "--json"]);
    run.assert_code(0);
    assert_eq!(
        run.json()["compatibility"],
        "identical",
        "{}",
        run.describe()
    );
    let run = sb.run(&["diff", "--kind", "mcp", &cmd, &url, "--json"]);
    run.assert_code(0);
    let changes = run.json()["changes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        changes
            .iter()
            .all(|c| !c["path"].as_str().unwrap_or("").starts_with("tools/")),
        "{}",
        run.describe()
    );

    // --env reaches the child, which otherwise gets a minimal environment.
    let probe = r#"cmd:["sh","-c","printf '%s' \"$SW_PROBE\" >probe.txt; exit 1"]"#;
    let run = sb.run(&[
        "diff",
        "--kind",
        "mcp",
        "--env",
        "SW_PROBE=seen",
        probe,
        probe,
    ]);
    run.assert_code(2);
    assert_eq!(
        std::fs::read_to_string(sb.path("probe.txt")).unwrap(),
        "seen"
    );
}

#[test]
fn a_source_that_cannot_serve_the_kind_is_a_usage_error() {
    let sb = Sandbox::new();
    let old = sb.write_file("old.json", &Pets::v1().bytes());
    let old = old.to_string_lossy().into_owned();
    let run = sb.run(&["diff", r#"cmd:["true"]"#, &old]);
    run.assert_code(2);
    let err = run.stderr_text();
    assert!(err.contains("cmd:") && err.contains("openapi"), "{err}");
    for bad in ["git:HEAD", "cmd:node", "git::x.json"] {
        sb.run(&["diff", bad, &old]).assert_code(2);
    }
    let run = sb.run(&["diff", "--env", "A=1", &old, &old]);
    run.assert_code(2);
    assert!(run.stderr_text().contains("--env"), "{}", run.describe());
}

#[test]
fn dash_reads_standard_input_and_dot_slash_forces_a_path() {
    let sb = Sandbox::new();
    sb.write_file("git:v2.json", &Pets::v2().bytes());
    let mut child = sb
        .command(&["diff", "-", "./git:v2.json", "--json"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&Pets::v1().bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_ne!(report["compatibility"], "identical");
    sb.run(&["diff", "-", "-"]).assert_code(2);
}

/// A repository with two commits: v1 of the petstore (with an external `$ref` to
/// `schemas/pet.json`), then v2 of both files. Returns the first commit.
fn two_commit_repo(dir: &Path) -> String {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let root = r#"{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/pets":{"get":{
        "responses":{"200":{"description":"ok","content":{"application/json":{"schema":
        {"$ref":"schemas/pet.json"}}}}}}}}}"#;
    git(dir, &["init", "-q"]);
    write("api/openapi.json", root);
    write(
        "api/schemas/pet.json",
        r#"{"type":"object","properties":{"name":{"type":"string"}}}"#,
    );
    git(dir, &["add", "."]);
    git(dir, &["commit", "-qm", "v1"]);
    let first = git(dir, &["rev-parse", "HEAD"]);
    // The referenced document loses a property: a breaking change visible only through the ref.
    write(
        "api/schemas/pet.json",
        r#"{"type":"object","properties":{}}"#,
    );
    git(dir, &["commit", "-qam", "v2"]);
    first
}

fn diff_in(dir: &Path, args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = Command::new(common::bin())
        .arg("diff")
        .args(args)
        .arg("--json")
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run schemawatch");
    let report = serde_json::from_slice(&out.stdout).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        report,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn git_sources_read_a_revision_and_its_refs_at_that_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let first = two_commit_repo(&repo);

    // HEAD against the working tree: identical.
    let (code, report, err) = diff_in(&repo, &["git:HEAD:api/openapi.json", "api/openapi.json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(report["compatibility"], "identical");
    // The first commit's ref target differs: the ref resolved at that revision.
    let (code, report, err) = diff_in(
        &repo,
        &[
            &format!("git:{first}:api/openapi.json"),
            "git:HEAD:api/openapi.json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(report["compatibility"], "breaking", "{report}");
    // PATH resolved the way git resolves it: `./` from the working directory.
    let (code, report, err) = diff_in(
        &repo.join("api"),
        &["git:HEAD~1:./openapi.json", "git:HEAD~1:api/openapi.json"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(report["compatibility"], "identical");
    // A missing path is an input error.
    let (code, _, err) = diff_in(&repo, &["git:HEAD:nope.json", "api/openapi.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("nope.json"), "{err}");

    // A shallow clone that fetched the base revision explicitly.
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            &format!("file://{}", repo.display()),
            "clone",
        ],
    );
    let (code, _, _) = diff_in(
        &clone,
        &[&format!("git:{first}:api/openapi.json"), "api/openapi.json"],
    );
    assert_eq!(code, 2, "the base revision is not in the shallow clone yet");
    git(&clone, &["fetch", "-q", "--depth", "1", "origin", &first]);
    let (code, report, err) = diff_in(
        &clone,
        &[&format!("git:{first}:api/openapi.json"), "api/openapi.json"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(report["compatibility"], "breaking");
}

#[test]
fn an_option_like_revision_is_refused_before_git_runs() {
    let tmp = tempfile::tempdir().unwrap();
    two_commit_repo(tmp.path());
    let (code, _, err) = diff_in(tmp.path(), &["git:--output=x:f", "api/openapi.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("--output=x"), "{err}");
    assert!(!tmp.path().join("x").exists());
    assert!(!tmp.path().join("x:f").exists());
    // Outside a repository: an input error naming git's complaint.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("a.json"), Pets::v1().bytes()).unwrap();
    let (code, _, err) = diff_in(elsewhere.path(), &["git:HEAD:a.json", "a.json"]);
    assert_eq!(code, 2, "{err}");
}

/// Every kind's declared name is a `--kind` value that reaches its `sources::load` arm, and a
/// config `kind` that `config check` accepts; an unknown name is refused with every kind
/// listed, by `--kind` and by the config alike (`core::kinds` is the one list).
#[test]
fn every_declared_kind_is_accepted_by_kind_and_the_config_and_listed_when_refused() {
    use schemawatch::core::model::Kind;
    let sb = Sandbox::new();
    let missing = sb.path("missing.doc");
    let missing = missing.to_string_lossy().into_owned();
    for kind in Kind::ALL {
        let name = kind.as_str();
        // A missing file: the kind is accepted and its fetch arm reports the source.
        let run = sb.run(&["diff", "--kind", name, &missing, &missing]);
        run.assert_code(2);
        let err = run.stderr_text();
        assert!(
            !err.contains("invalid value") && err.contains("missing.doc"),
            "--kind {name}: {}",
            run.describe()
        );
        let source = if kind == Kind::Postgres {
            "url = \"postgresql://u@127.0.0.1:9/db\"".to_string()
        } else {
            format!("path = {:?}", missing)
        };
        let config = sb.write_file(
            &format!("{name}.toml"),
            format!("[[watch]]\nname = \"a.b\"\nkind = \"{name}\"\n{source}\n").as_bytes(),
        );
        let config = config.to_string_lossy().into_owned();
        sb.run(&["config", "check", "--config", &config])
            .assert_code(0);
    }
    let run = sb.run(&["diff", "--kind", "soap", &missing, &missing]);
    run.assert_code(2);
    let err = run.stderr_text();
    let config = sb.write_file(
        "soap.toml",
        b"[[watch]]\nname = \"a.b\"\nkind = \"soap\"\npath = \"x\"\n",
    );
    let config = config.to_string_lossy().into_owned();
    let refused = sb.run(&["config", "check", "--config", &config]);
    refused.assert_code(2);
    let config_err = refused.stderr_text();
    for kind in Kind::ALL {
        assert!(err.contains(kind.as_str()), "--kind soap: {err}");
        assert!(
            config_err.contains(kind.as_str()),
            "kind = \"soap\": {config_err}"
        );
    }
}
