//! `schemawatch mcp-gateway` with real parts: the PyPI `mcp` client library as the agent
//! (tests/peers/gateway_agent.py) and a PyPI `mcp` server that changes on an out-of-band
//! trigger (tests/peers/gateway_peer.py, a control file) as the upstream; the registry a real
//! SQLite file written by `schemawatch check` and `schemawatch pending accept`.

use crate::common::peers::{self, peers_dir, python_mcp};
use crate::common::{bin, Sandbox};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

macro_rules! need {
    ($found:expr, $what:expr) => {
        match peers::need($found, $what) {
            Some(v) => v,
            None => return,
        }
    };
}

const WATCH: &str = "team.notes";

/// A sandbox whose config watches the gateway peer (state in `ctl`, pids in `pids`), with
/// the first contract accepted by a `check`.
fn sandbox(python: &str, extra: &str) -> Sandbox {
    sandbox_env(python, extra, "")
}

/// [`sandbox`] with more of the peer's environment (`KEY = "value"` lines).
/// `{dir}` in `env` is the sandbox's directory.
fn sandbox_env(python: &str, extra: &str, env: &str) -> Sandbox {
    let sb = Sandbox::new();
    let env = env.replace("{dir}", &sb.dir.path().display().to_string());
    let peer = peers_dir().join("gateway_peer.py");
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"{WATCH}\"\nkind = \"mcp\"\ncommand = [\"{python}\", \"{}\"]\ninterval = \"1h\"\ntimeout = \"120s\"\n{extra}[watch.env]\nCONTROL = \"{}\"\nPIDFILE = \"{}\"\n{env}",
        peer.display(),
        sb.path("ctl").display(),
        sb.path("pids").display(),
    ));
    sb.run(&["check", "--config", &sb.config_arg()])
        .assert_code(0);
    sb
}

fn pids(sb: &Sandbox) -> Vec<u32> {
    std::fs::read_to_string(sb.path("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Whether `pid` is a live process (a zombie counts as gone: it runs nothing).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn an_agent_sees_and_calls_only_what_was_accepted() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "");
    let errlog = sb.path("gateway.err");
    let output = Command::new(&python)
        .arg(peers_dir().join("gateway_agent.py"))
        .args([
            "--bin",
            bin(),
            "--config",
            &sb.config_arg(),
            "--watch",
            WATCH,
        ])
        .arg("--control")
        .arg(sb.path("ctl"))
        .arg("--errlog")
        .arg(&errlog)
        .current_dir(sb.dir.path())
        .output()
        .expect("run the agent");
    let stderr = std::fs::read_to_string(&errlog).unwrap_or_default();
    let text = String::from_utf8_lossy(&output.stdout);
    let seen: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "agent output is not JSON ({e}): {text}\n{}\n--- gateway stderr ---\n{stderr}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert!(
        output.status.success(),
        "{seen}\n--- gateway stderr ---\n{stderr}"
    );
    let names = |key: &str| -> Vec<String> {
        seen[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in {seen}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    // The accepted instructions and every accepted tool; listChanged declared.
    assert_eq!(seen["instructions"], "Notes live on this server.");
    assert_eq!(seen["listChanged"], true);
    assert_eq!(
        names("tools_start"),
        ["ask_model", "echo", "fetch_page", "read_note", "summarize"]
    );
    assert_eq!(seen["echo"]["text"], "hello");
    assert_eq!(seen["echo"]["error"], false);
    // A result carrying tag characters is withheld, naming code points, never the text.
    assert_eq!(seen["fetch_page"]["error"], true);
    let withheld = seen["fetch_page"]["text"].as_str().unwrap();
    assert!(
        withheld.contains("U+E0069") && withheld.contains("(tag)"),
        "{withheld}"
    );
    assert!(!withheld.contains('\u{E0069}'), "{withheld}");
    // The upstream flips read_note: it disappears and a call is refused naming the review.
    assert_eq!(
        names("tools_flipped"),
        ["ask_model", "echo", "fetch_page", "summarize"]
    );
    let refusal = seen["refusal"].as_str().unwrap();
    assert!(refusal.contains(WATCH), "{refusal}");
    assert!(refusal.contains("\"read_note\""), "{refusal}");
    assert!(refusal.contains("open review 1"), "{refusal}");
    // Accepted in the registry: visible again, the agent told by list_changed.
    assert_eq!(seen["accept_exit"], 0);
    assert_eq!(
        names("tools_accepted"),
        ["ask_model", "echo", "fetch_page", "read_note", "summarize"]
    );
    assert_eq!(seen["read_note"]["text"], "note 7");
    assert_eq!(
        seen["list_changed_after"],
        serde_json::json!(["flip", "accept", "hidden"])
    );
    // A description that gains hidden characters never reaches the agent.
    let hidden = names("tools_hidden");
    assert!(!hidden.contains(&"summarize".to_string()), "{hidden:?}");
    assert!(seen["summarize"]
        .as_str()
        .unwrap()
        .contains("\"summarize\""));
    // An unknown name is refused, not resolved to a near match.
    assert!(
        seen["near_match"].as_str().unwrap().contains("unknown"),
        "{seen}"
    );
    // Logged on stderr (the agent's stdout carried only the protocol, or the client would
    // have failed), and the counters at exit.
    assert!(stderr.contains("gateway_item_withheld"), "{stderr}");
    assert!(stderr.contains("gateway_result_withheld"), "{stderr}");
    assert!(stderr.contains("withheld_results=1"), "{stderr}");
    // Every upstream the agent's gateway (and the checks) started is gone.
    let started = pids(&sb);
    assert!(!started.is_empty());
    for pid in started {
        assert!(!alive(pid), "upstream {pid} still runs");
    }
}

/// Starts the gateway as an agent host would and completes `initialize`; the upstream's pid.
fn started_gateway(sb: &Sandbox) -> (std::process::Child, u32) {
    let before = pids(sb).len();
    let mut gateway = Command::new(bin())
        .args([
            "mcp-gateway",
            "--config",
            &sb.config_arg(),
            "--watch",
            WATCH,
        ])
        .current_dir(sb.dir.path())
        .env_remove("SCHEMAWATCH_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the gateway");
    let mut stdin = gateway.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(gateway.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let answer: Value = serde_json::from_str(&line).expect("initialize answer");
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(
        answer["result"]["capabilities"]["tools"].is_object(),
        "{answer}"
    );
    let now = pids(sb);
    assert_eq!(now.len(), before + 1, "one upstream started: {now:?}");
    let upstream = *now.last().unwrap();
    assert!(alive(upstream));
    gateway.stdin = Some(stdin);
    (gateway, upstream)
}

#[test]
fn the_upstream_dies_with_the_agent_side_and_on_sigterm() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "");
    // The agent host goes away: its end of the pipe closes.
    let (mut gateway, upstream) = started_gateway(&sb);
    drop(gateway.stdin.take());
    let status = gateway.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!alive(upstream), "upstream {upstream} outlived the agent");
    // SIGTERM.
    let (mut gateway, upstream) = started_gateway(&sb);
    let term = Command::new("kill")
        .args(["-TERM", &gateway.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = gateway.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!alive(upstream), "upstream {upstream} outlived SIGTERM");
}

#[test]
fn the_gateway_refuses_to_start_without_an_accepted_contract() {
    let sb = Sandbox::new();
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\ncommand = [\"true\"]\n\n[[watch]]\nname = \"c.d\"\nkind = \"openapi\"\nurl = \"http://127.0.0.1:9/x\"\n",
    );
    // No registry file yet.
    let run = sb.run(&[
        "mcp-gateway",
        "--config",
        &sb.config_arg(),
        "--watch",
        "a.b",
    ]);
    run.assert_code(2);
    assert!(run.stderr_text().contains("registry"), "{}", run.describe());
    assert!(run.stdout.is_empty(), "{}", run.describe());
    let run = sb.run(&[
        "mcp-gateway",
        "--config",
        &sb.config_arg(),
        "--watch",
        "c.d",
    ]);
    run.assert_code(2);
    assert!(run.stderr_text().contains("not mcp"), "{}", run.describe());
    let run = sb.run(&[
        "mcp-gateway",
        "--config",
        &sb.config_arg(),
        "--watch",
        "x.y",
    ]);
    run.assert_code(2);
    assert!(
        run.stderr_text().contains("no watch named"),
        "{}",
        run.describe()
    );
}

#[test]
fn the_gateway_refuses_a_registry_or_fingerprint_version_other_than_its_own() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "");
    let db = sb.path("registry.sqlite3");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE tools SET fingerprint_version = 0", [])
        .unwrap();
    let run = sb.run(&[
        "mcp-gateway",
        "--config",
        &sb.config_arg(),
        "--watch",
        WATCH,
    ]);
    run.assert_code(2);
    let err = run.stderr_text();
    assert!(
        err.contains("FINGERPRINT_VERSION 0")
            && err.contains(&format!(
                "version {}",
                schemawatch::core::fingerprint::FINGERPRINT_VERSION
            )),
        "{}",
        run.describe()
    );
    let supported: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    conn.pragma_update(None, "user_version", supported + 1)
        .unwrap();
    drop(conn);
    let run = sb.run(&[
        "mcp-gateway",
        "--config",
        &sb.config_arg(),
        "--watch",
        WATCH,
    ]);
    run.assert_code(2);
    let err = run.stderr_text();
    assert!(
        err.contains(&format!("{}", supported + 1)) && err.contains(&format!("({supported})")),
        "{}",
        run.describe()
    );
    assert!(run.stdout.is_empty(), "{}", run.describe());
}

/// An agent host written by hand: newline-delimited JSON-RPC over the gateway's stdio, a
/// reader thread, and the gateway's stderr in a file.
struct Agent {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
    /// Notifications and server requests seen while waiting for answers.
    seen: Vec<Value>,
    stderr: std::path::PathBuf,
}

impl Agent {
    fn start(sb: &Sandbox, args: &[&str], capabilities: Value) -> Agent {
        Agent::start_with(sb, args, capabilities, &[])
    }

    fn start_with(sb: &Sandbox, args: &[&str], capabilities: Value, env: &[(&str, &str)]) -> Agent {
        let stderr = sb.path(&format!("gateway-{}.err", pids(sb).len()));
        let mut child = Command::new(bin())
            .args([
                "mcp-gateway",
                "--config",
                &sb.config_arg(),
                "--watch",
                WATCH,
            ])
            .args(args)
            .envs(env.iter().copied())
            .current_dir(sb.dir.path())
            .env_remove("SCHEMAWATCH_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("spawn the gateway");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carried a non-protocol line ({e}): {line}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let mut agent = Agent {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
            stderr,
        };
        let init = agent.request(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                               "clientInfo": {"name": "t", "version": "0"}}),
        );
        assert!(init["result"].is_object(), "{init}");
        agent.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        agent
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and reads until its answer; a sampling request met on the way is
    /// answered with "hi".
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.seen.len() as i64 + 1000;
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let message = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("no answer to {method}:\n{}", self.stderr_text()));
            if message.get("method").is_none() && message["id"] == id {
                return message;
            }
            if message["method"] == "elicitation/create" {
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "action": "accept", "content": {"name": "Ada"}}});
                self.send(answer);
            }
            if message["method"] == "sampling/createMessage" {
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "role": "assistant", "content": {"type": "text", "text": "hi"},
                    "model": "test", "stopReason": "endTurn"}});
                self.send(answer);
            }
            self.seen.push(message);
        }
    }

    /// Reads until a notification `method` arrives (or was already seen).
    fn wait_for(&mut self, method: &str) {
        if let Some(i) = self.seen.iter().position(|m| m["method"] == method) {
            self.seen.remove(i);
            return;
        }
        loop {
            let message = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("no {method}:\n{}", self.stderr_text()));
            if message["method"] == method {
                return;
            }
            self.seen.push(message);
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            serde_json::json!({"name": tool, "arguments": arguments}),
        )
    }

    fn tool_names(&mut self) -> Vec<String> {
        let list = self.request("tools/list", serde_json::json!({}));
        let mut names: Vec<String> = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Closes the agent's side and waits for the gateway; its stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}\n{}", self.stderr_text());
        self.stderr_text()
    }
}

/// Waits until `peers` upstream processes have each applied `state` (each writes
/// `applied.<pid>`: with one shared file, one peer's write could stand for both).
fn wait_applied(sb: &Sandbox, state: &str, peers: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let applied = std::fs::read_dir(sb.dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("applied."))
            .filter(|e| std::fs::read_to_string(e.path()).unwrap_or_default() == state)
            .count();
        if applied >= peers {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{applied} of {peers} peers applied {state}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn text(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn strict_freshness_refuses_a_definition_changed_between_list_and_call() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    // The upstream changes without announcing it: only a listing before the call sees it.
    let sb = sandbox(&python, "");
    let config = std::fs::read_to_string(&sb.config).unwrap().replace(
        "[watch.env]\n",
        &format!(
            "[watch.env]\nQUIET = \"1\"\nAPPLIED = \"{}\"\n",
            sb.path("applied").display()
        ),
    );
    sb.write_config(&config);
    let mut strict = Agent::start(&sb, &["--freshness", "strict"], serde_json::json!({}));
    let mut cached = Agent::start(&sb, &[], serde_json::json!({}));
    assert!(strict.tool_names().contains(&"read_note".to_string()));
    assert!(cached.tool_names().contains(&"read_note".to_string()));
    std::fs::write(sb.path("ctl"), "flip").unwrap();
    wait_applied(&sb, "flip", 2);
    // Changed between the agent's list and its call: strict re-lists first and refuses.
    let refused = strict.call("read_note", serde_json::json!({"note_id": "1"}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("drifted"),
        "{refused}"
    );
    // Cached trusts its last listing until the upstream announces a change (documented).
    let forwarded = cached.call("read_note", serde_json::json!({"note_id": "1"}));
    assert_eq!(text(&forwarded), "note 1", "{forwarded}");
    let err = strict.finish();
    assert!(err.contains("refused_calls=1"), "{err}");
    cached.finish();
}

#[test]
fn report_mode_passes_everything_and_counts_what_enforcement_would_withhold() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "");
    std::fs::write(sb.path("ctl"), "flip").unwrap();
    let mut agent = Agent::start(&sb, &["--mode", "report"], serde_json::json!({}));
    assert!(agent.tool_names().contains(&"read_note".to_string()));
    let note = agent.call("read_note", serde_json::json!({"note_id": "2"}));
    assert_eq!(text(&note), "note 2", "{note}");
    let page = agent.call("fetch_page", serde_json::json!({}));
    assert!(text(&page).starts_with("page body\u{E0069}"), "{page}");
    let err = agent.finish();
    assert!(err.contains("gateway_would_refuse"), "{err}");
    assert!(err.contains("would_refuse=1 would_withhold=2"), "{err}");
    assert!(err.contains("refused_calls=0"), "{err}");
}

#[test]
fn sampling_is_refused_unless_allowed_and_results_follow_the_class_policy() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "");
    let caps = serde_json::json!({"sampling": {}});
    let mut agent = Agent::start(&sb, &[], caps.clone());
    let asked = agent.call("ask_model", serde_json::json!({}));
    assert!(text(&asked).starts_with("sampling failed"), "{asked}");
    assert!(
        !agent
            .seen
            .iter()
            .any(|m| m["method"] == "sampling/createMessage"),
        "{:?}",
        agent.seen
    );
    agent.finish();
    let mut agent = Agent::start(&sb, &["--allow-sampling", "--results", "tag=flag"], caps);
    let asked = agent.call("ask_model", serde_json::json!({}));
    assert_eq!(text(&asked), "model said: hi", "{asked}");
    assert!(agent
        .seen
        .iter()
        .any(|m| m["method"] == "sampling/createMessage"));
    // Tag characters flagged, not withheld.
    let page = agent.call("fetch_page", serde_json::json!({}));
    assert!(text(&page).starts_with("page body\u{E0069}"), "{page}");
    let err = agent.finish();
    assert!(err.contains("gateway_result_flagged"), "{err}");
    assert!(err.contains("flagged_results=1"), "{err}");
}

/// One HTTP/1.1 request to 127.0.0.1:`port`: status and body.
fn http(port: u16, method: &str, path: &str, token: Option<&str>) -> (u16, String) {
    use std::io::Read;
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return (0, String::new());
    };
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn the_contract_can_come_from_the_daemons_api_and_a_drift_asks_it_to_refresh() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "");
    let port = peers::free_port();
    let config = std::fs::read_to_string(&sb.config).unwrap().replace(
        "[storage]\n",
        &format!("[server]\nlisten = \"127.0.0.1:{port}\"\nread_token_env = \"GW_READ\"\nrefresh_token_env = \"GW_REFRESH\"\n\n[storage]\n"),
    );
    sb.write_config(&config);
    let env = [
        ("GW_READ", "read-token-1"),
        ("GW_REFRESH", "refresh-token-1"),
    ];
    let mut daemon = peers::ServerProcess(
        Command::new(bin())
            .args(["run", "--config", &sb.config_arg()])
            .current_dir(sb.dir.path())
            .env_remove("SCHEMAWATCH_CONFIG")
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(sb.path("daemon.err")).unwrap())
            .spawn()
            .expect("start the daemon"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while http(port, "GET", "/readyz", None).0 != 200 {
        assert!(daemon.0.try_wait().unwrap().is_none(), "the daemon exited");
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon never got ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The route needs the read token, even on loopback.
    let path = format!("/v1/watches/{WATCH}/contract");
    assert_eq!(http(port, "GET", &path, None).0, 401);
    assert_eq!(http(port, "GET", &path, Some("wrong")).0, 401);
    let (status, body) = http(port, "GET", &path, Some("read-token-1"));
    assert_eq!(status, 200, "{body}");
    let contract: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(contract["instructions"], "Notes live on this server.");
    assert!(
        contract["endpoints"]["TOOL read_note"].is_string(),
        "{contract}"
    );
    assert_eq!(
        http(
            port,
            "GET",
            "/v1/watches/no.such/contract",
            Some("read-token-1")
        )
        .0,
        404
    );

    let mut agent = Agent::start_with(
        &sb,
        &["--contract-from", "api", "--request-refresh"],
        serde_json::json!({}),
        &env,
    );
    assert!(agent.tool_names().contains(&"read_note".to_string()));
    std::fs::write(sb.path("ctl"), "flip").unwrap();
    agent.wait_for("notifications/tools/list_changed");
    assert!(!agent.tool_names().contains(&"read_note".to_string()));
    // The gateway asked the daemon to refresh: the review exists without a `check`, and the
    // gateway learns its id from the API.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let message = loop {
        let refused = agent.call("read_note", serde_json::json!({"note_id": "1"}));
        let message = refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if message.contains("open review 1") {
            break message;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{refused}\n{}",
            agent.stderr_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(message.contains(WATCH), "{message}");
    sb.run(&[
        "pending",
        "accept",
        "1",
        "--reviewer",
        "t",
        "--reason",
        "r",
        "--config",
        &sb.config_arg(),
    ])
    .assert_code(0);
    agent.wait_for("notifications/tools/list_changed");
    assert!(agent.tool_names().contains(&"read_note".to_string()));
    let err = agent.finish();
    assert!(err.contains("gateway_refresh_requested"), "{err}");
    assert!(
        !err.contains("read-token-1") && !err.contains("refresh-token-1"),
        "{err}"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &daemon.0.id().to_string()])
        .status();
    let _ = daemon.0.wait();
}

#[test]
fn an_agent_of_the_2026_era_discovers_listens_and_is_refused() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "");
    let output = Command::new(&python)
        .arg(peers_dir().join("gateway_agent.py"))
        .args([
            "--era",
            "modern",
            "--bin",
            bin(),
            "--config",
            &sb.config_arg(),
        ])
        .args(["--watch", WATCH, "--control"])
        .arg(sb.path("ctl"))
        .arg("--errlog")
        .arg(sb.path("unused.err"))
        .current_dir(sb.dir.path())
        .output()
        .expect("run the agent");
    let text = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let seen: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("agent output is not JSON ({e}): {text}\n{stderr}"));
    assert!(output.status.success(), "{seen}\n{stderr}");
    // server/discover answered (no initialize), the listen stream acknowledged.
    assert_eq!(seen["discovered"], true, "{seen}");
    assert_eq!(seen["honored"], true, "{seen}");
    assert_eq!(
        seen["tools_start"],
        serde_json::json!(["ask_model", "echo", "fetch_page", "read_note", "summarize"])
    );
    // The flip arrives on the listen stream; the tool is gone and refused.
    assert_eq!(seen["event"], "ToolsListChanged");
    assert_eq!(
        seen["tools_flipped"],
        serde_json::json!(["ask_model", "echo", "fetch_page", "summarize"])
    );
    let refusal = seen["refusal"].as_str().unwrap();
    assert!(
        refusal.contains("\"read_note\"") && refusal.contains(WATCH),
        "{refusal}"
    );
    assert_eq!(seen["echo"], "modern");
}

/// A sandbox whose one watch is server-everything over stdio.
fn everything_sandbox(node: &str, js: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"{WATCH}\"\nkind = \"mcp\"\ncommand = [\"{node}\", \"{js}\", \"stdio\"]\ninterval = \"1h\"\ntimeout = \"120s\"\n"
    ));
    sb
}

#[test]
fn in_front_of_server_everything_capability_dependent_tools_stay_withheld() {
    let (node, js) = need!(
        peers::everything(),
        "node + @modelcontextprotocol/server-everything"
    );
    let sb = everything_sandbox(&node, &js);
    // The watch reads the server with no client capabilities: the contract has its 13 tools.
    sb.run(&["check", "--config", &sb.config_arg()])
        .assert_code(0);
    // An agent host declaring roots and elicitation gets two more tools from this server:
    // never reviewed, so withheld.
    let mut agent = Agent::start(
        &sb,
        &[],
        serde_json::json!({"roots": {"listChanged": true}, "elicitation": {}}),
    );
    let tools = agent.tool_names();
    assert!(tools.contains(&"echo".to_string()), "{tools:?}");
    assert!(!tools.contains(&"get-roots-list".to_string()), "{tools:?}");
    assert!(
        !tools.contains(&"trigger-elicitation-request".to_string()),
        "{tools:?}"
    );
    let echo = agent.call("echo", serde_json::json!({"message": "hi"}));
    assert_eq!(text(&echo), "Echo: hi", "{echo}");
    let refused = agent.call("get-roots-list", serde_json::json!({}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not yet accepted"),
        "{refused}"
    );
    // Prompts and resource templates are filtered the same way (all accepted here).
    let prompts = agent.request("prompts/list", serde_json::json!({}));
    assert!(
        prompts["result"]["prompts"].as_array().unwrap().len() >= 3,
        "{prompts}"
    );
    // Progress streams back while the call runs, with the agent's token.
    let long = agent.request(
        "tools/call",
        serde_json::json!({"name": "trigger-long-running-operation",
                           "arguments": {"duration": 1, "steps": 2},
                           "_meta": {"progressToken": "p1"}}),
    );
    assert!(text(&long).contains("completed"), "{long}");
    let progress: Vec<&Value> = agent
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 2, "{:?}", agent.seen);
    assert!(progress
        .iter()
        .all(|m| m["params"]["progressToken"] == "p1"));
    // The server asks the agent host for its roots: forwarded (the default).
    agent.wait_for("roots/list");
    let err = agent.finish();
    assert!(err.contains("withheld_items=2"), "{err}");
}

#[test]
fn an_upstream_over_streamable_http_is_fronted_the_same_way() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = Sandbox::new();
    let port = peers::free_port();
    let control = sb.path("ctl").to_string_lossy().into_owned();
    let mut command = Command::new(&python);
    command.arg(peers_dir().join("gateway_peer.py")).arg("http");
    let _server = peers::start_http(command, port, &[("CONTROL", control.as_str())]);
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"{WATCH}\"\nkind = \"mcp\"\nurl = \"http://127.0.0.1:{port}/mcp\"\ninterval = \"1h\"\ntimeout = \"120s\"\n"
    ));
    // The watch reads it in the 2026-07-28 era (prompts/get names its prompt in Mcp-Name).
    sb.run(&["check", "--config", &sb.config_arg()])
        .assert_code(0);
    let mut agent = Agent::start(&sb, &[], serde_json::json!({}));
    assert!(agent.tool_names().contains(&"read_note".to_string()));
    let echo = agent.call("echo", serde_json::json!({"text": "over http"}));
    assert_eq!(text(&echo), "over http", "{echo}");
    let page = agent.call("fetch_page", serde_json::json!({}));
    assert_eq!(page["result"]["isError"], true, "{page}");
    // The change is announced on the session's GET stream.
    std::fs::write(sb.path("ctl"), "flip").unwrap();
    agent.wait_for("notifications/tools/list_changed");
    assert!(!agent.tool_names().contains(&"read_note".to_string()));
    let refused = agent.call("read_note", serde_json::json!({"note_id": "1"}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    agent.finish();
}

#[test]
fn an_agent_hosts_small_environment_is_enough_when_only_other_watches_need_variables() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "");
    let config = std::fs::read_to_string(&sb.config).unwrap();
    sb.write_config(&format!(
        "{config}\n[[watch]]\nname = \"other.api\"\nkind = \"openapi\"\nurl = \"http://127.0.0.1:9/openapi.json\"\n[watch.schema_headers]\nAuthorization = \"Bearer ${{GW_UNSET_SECRET}}\"\n\n[[watch]]\nname = \"other.mcp\"\nkind = \"mcp\"\ncommand = [\"true\"]\n[watch.env]\nTOKEN = \"${{GW_OTHER_UNSET}}\"\n"
    ));
    let mut gateway = Command::new(bin())
        .args([
            "mcp-gateway",
            "--config",
            &sb.config_arg(),
            "--watch",
            WATCH,
        ])
        .current_dir(sb.dir.path())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the gateway");
    let mut stdin = gateway.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{}}}}"#
    )
    .unwrap();
    writeln!(stdin, "this is not JSON").unwrap();
    let mut lines = BufReader::new(gateway.stdout.take().unwrap()).lines();
    let init: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(
        init["result"]["instructions"], "Notes live on this server.",
        "{init}"
    );
    let list: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert!(
        list["result"]["tools"].as_array().unwrap().len() >= 4,
        "{list}"
    );
    let garbage: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
    assert_eq!(garbage["id"], Value::Null, "{garbage}");
    drop(stdin);
    assert!(gateway.wait().unwrap().success());
}

#[test]
fn an_upstream_that_cannot_start_is_an_initialize_error_naming_it() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "");
    let config = std::fs::read_to_string(&sb.config)
        .unwrap()
        .replace(&format!("[\"{python}\""), "[\"/nonexistent/mcp-server\"");
    sb.write_config(&config);
    let mut gateway = Command::new(bin())
        .args([
            "mcp-gateway",
            "--config",
            &sb.config_arg(),
            "--watch",
            WATCH,
        ])
        .current_dir(sb.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the gateway");
    let mut stdin = gateway.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .unwrap();
    let mut lines = BufReader::new(gateway.stdout.take().unwrap()).lines();
    let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(WATCH) && message.contains("/nonexistent/mcp-server"),
        "{answer}"
    );
    drop(stdin);
    assert!(gateway.wait().unwrap().success());
}

#[test]
fn resources_are_read_only_through_accepted_resources_and_templates() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = sandbox(&python, "mcp_resources = \"all\"\n");
    let mut agent = Agent::start(&sb, &[], serde_json::json!({}));
    let resources = agent.request("resources/list", serde_json::json!({}));
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{resources}"))
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["cfg://main"], "{resources}");
    let templates = agent.request("resources/templates/list", serde_json::json!({}));
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "notes://{id}"
    );
    let config = agent.request("resources/read", serde_json::json!({"uri": "cfg://main"}));
    assert_eq!(
        config["result"]["contents"][0]["text"], "colour = blue",
        "{config}"
    );
    // An expansion of the accepted template (level 1) is read; nothing else is.
    let note = agent.request("resources/read", serde_json::json!({"uri": "notes://42"}));
    assert_eq!(note["result"]["contents"][0]["text"], "note 42", "{note}");
    for uri in ["notes://4/2", "cfg://other", "file:///etc/passwd"] {
        let refused = agent.request("resources/read", serde_json::json!({"uri": uri}));
        assert_eq!(refused["error"]["code"], -32602, "{uri}: {refused}");
    }
    // A prompt without arguments is accepted with its messages, and served.
    let prompt = agent.request("prompts/get", serde_json::json!({"name": "greeting"}));
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"], "Say hello to the user.",
        "{prompt}"
    );
    let err = agent.finish();
    assert!(err.contains("refused_calls=3"), "{err}");
}

/// A sandbox whose peer has the input tools (`ask_name`, `ask_sample`, `wait_cancel`,
/// cancellations recorded in `cancelled`), 2026-07-28-only when `modern_only`.
fn input_sandbox(python: &str, modern_only: bool) -> Sandbox {
    let env = format!(
        "INPUT_TOOLS = \"1\"\nCANCELLED = \"{{dir}}/cancelled\"\n{}",
        if modern_only {
            "MODERN_ONLY = \"1\"\n"
        } else {
            ""
        }
    );
    sandbox_env(python, "", &env)
}

#[test]
fn a_2026_only_upstream_is_fronted_and_its_input_required_rounds_reach_a_legacy_agent() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    let sb = input_sandbox(&python, true);
    let caps = serde_json::json!({"elicitation": {}, "sampling": {}});
    let mut agent = Agent::start(&sb, &[], caps.clone());
    assert_eq!(
        agent.tool_names(),
        [
            "ask_model",
            "ask_name",
            "ask_sample",
            "echo",
            "fetch_page",
            "read_note",
            "summarize",
            "wait_cancel"
        ]
    );
    // The upstream asks for a name (an input-required result): the legacy agent gets an
    // elicitation/create, its answer goes back with the retried call.
    let named = agent.call("ask_name", serde_json::json!({}));
    assert_eq!(text(&named), "hello Ada", "{named}");
    assert!(agent
        .seen
        .iter()
        .any(|m| m["method"] == "elicitation/create"));
    // Sampling is refused by default, with why.
    let sampled = agent.call("ask_sample", serde_json::json!({}));
    let message = sampled["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("sampling/createMessage") && message.contains("--allow-sampling"),
        "{sampled}"
    );
    assert!(!agent
        .seen
        .iter()
        .any(|m| m["method"] == "sampling/createMessage"));
    // The flip is still announced (on the upstream's subscriptions/listen stream).
    std::fs::write(sb.path("ctl"), "flip").unwrap();
    agent.wait_for("notifications/tools/list_changed");
    assert!(!agent.tool_names().contains(&"read_note".to_string()));
    let err = agent.finish();
    assert!(err.contains("era=Modern"), "{err}");
    // The process that refused initialize and the one that served: both gone.
    let started = pids(&sb);
    assert!(started.len() >= 3, "check, refused, served: {started:?}");
    assert!(started.iter().all(|p| !alive(*p)), "{started:?}");
    let mut agent = Agent::start(&sb, &["--allow-sampling"], caps);
    let sampled = agent.call("ask_sample", serde_json::json!({}));
    assert_eq!(text(&sampled), "model said: hi", "{sampled}");
    agent.finish();
}

/// A 2026-07-28 agent speaking raw JSON-RPC lines to the gateway.
fn modern_meta() -> Value {
    serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}})
}

/// The gateway with a 2026-07-28 agent speaking raw JSON-RPC lines (no SDK helper needed
/// for the rounds the tests drive by hand).
struct RawModern {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    stderr: std::path::PathBuf,
}

impl RawModern {
    fn start(sb: &Sandbox) -> RawModern {
        let stderr = sb.path("modern.err");
        let mut child = Command::new(bin())
            .args([
                "mcp-gateway",
                "--config",
                &sb.config_arg(),
                "--watch",
                WATCH,
            ])
            .current_dir(sb.dir.path())
            .env_remove("SCHEMAWATCH_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("spawn the gateway");
        RawModern {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            stderr,
        }
    }

    /// Sends a request with the 2026-07-28 `_meta` and reads until its answer.
    fn ask(&mut self, id: i64, method: &str, mut params: Value) -> Value {
        params["_meta"] = modern_meta();
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin.as_mut().unwrap(), "{request}").unwrap();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "gateway closed"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Closes the agent's side; the gateway's stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
        std::fs::read_to_string(&self.stderr).unwrap()
    }
}

#[test]
fn a_2026_agent_in_front_of_a_legacy_only_upstream_is_served_over_initialize() {
    let (node, js) = need!(
        peers::everything(),
        "node + @modelcontextprotocol/server-everything"
    );
    let sb = everything_sandbox(&node, &js);
    sb.run(&["check", "--config", &sb.config_arg()])
        .assert_code(0);
    let mut modern = RawModern::start(&sb);
    let discovered = modern.ask(1, "server/discover", serde_json::json!({}));
    assert_eq!(
        discovered["result"]["supportedVersions"],
        serde_json::json!(["2026-07-28"])
    );
    let echo = modern.ask(
        2,
        "tools/call",
        serde_json::json!({"name": "echo", "arguments": {"message": "hi"}}),
    );
    assert_eq!(text(&echo), "Echo: hi", "{echo}");
    assert_eq!(echo["result"]["resultType"], "complete", "{echo}");
    // Capability-dependent tools of this server are withheld as for a legacy agent.
    let refused = modern.ask(
        3,
        "tools/call",
        serde_json::json!({"name": "get-roots-list", "arguments": {}}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let err = modern.finish();
    assert!(err.contains("era=Legacy"), "{err}");
}

#[test]
fn a_2026_agent_gets_input_required_rounds_under_the_policy() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    for modern_only in [true, false] {
        let sb = input_sandbox(&python, modern_only);
        let mut modern = RawModern::start(&sb);
        let mut ask = |id: i64, method: &str, params: Value| modern.ask(id, method, params);
        let discovered = ask(1, "server/discover", serde_json::json!({}));
        assert!(
            discovered["result"]["capabilities"]["tools"].is_object(),
            "{discovered}"
        );
        let round = ask(
            2,
            "tools/call",
            serde_json::json!({"name": "ask_name", "arguments": {}}),
        );
        let result = &round["result"];
        assert_eq!(result["resultType"], "input_required", "{round}");
        let (key, request) = result["inputRequests"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        assert_eq!(request["method"], "elicitation/create");
        let answered = ask(
            3,
            "tools/call",
            serde_json::json!({"name": "ask_name", "arguments": {},
                "inputResponses": {key.clone(): {"action": "accept", "content": {"name": "Bo"}}},
                "requestState": result["requestState"]}),
        );
        assert_eq!(text(&answered), "hello Bo", "{answered}");
        let sampled = ask(
            4,
            "tools/call",
            serde_json::json!({"name": "ask_sample", "arguments": {}}),
        );
        let message = sampled["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("sampling/createMessage") && message.contains("--allow-sampling"),
            "{sampled}"
        );
        let err = modern.finish();
        assert!(err.contains("era=Modern"), "{err}");
    }
}

#[test]
fn a_cancellation_reaches_the_upstream_with_its_id_mapped_while_progress_streams() {
    let python = need!(python_mcp(), "python with PyPI mcp 2.x");
    for modern_only in [false, true] {
        let sb = input_sandbox(&python, modern_only);
        let cancelled = sb.path("cancelled");
        let mut agent = Agent::start(&sb, &[], serde_json::json!({}));
        // Occupy the agent's id space so the upstream's id differs from the agent's.
        agent.call("echo", serde_json::json!({"text": "one"}));
        agent.send(
            serde_json::json!({"jsonrpc": "2.0", "id": "call-7", "method": "tools/call",
            "params": {"name": "wait_cancel", "arguments": {}, "_meta": {"progressToken": "tok"}}}),
        );
        let mut progress = 0;
        while progress < 2 {
            let message = agent
                .lines
                .recv_timeout(std::time::Duration::from_secs(120))
                .expect("progress");
            if message["method"] == "notifications/progress" {
                assert_eq!(message["params"]["progressToken"], "tok", "{message}");
                progress += 1;
            }
        }
        agent.send(
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "call-7", "reason": "the user stopped it"}}),
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let record = loop {
            let text = std::fs::read_to_string(&cancelled).unwrap_or_default();
            if !text.is_empty() {
                break text;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the upstream was never cancelled"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        // The upstream's request id is the gateway's integer, not the agent's string.
        let id = record.trim().strip_prefix("cancelled ").unwrap();
        assert!(id.parse::<i64>().is_ok(), "{record}");
        // The gateway still serves the agent.
        let echoed = agent.call("echo", serde_json::json!({"text": "two"}));
        assert_eq!(text(&echoed), "two");
        agent.finish();
    }
}
