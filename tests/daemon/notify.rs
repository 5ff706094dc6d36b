//! Notifications (issue 26) against real receivers: a loopback Standard Webhooks receiver that
//! verifies every delivery with the PyPI `standardwebhooks` library and dedups by
//! `webhook-id` (tests/peers/webhook_receiver.py), and the npm `adaptivecards` parser for the
//! Teams card (tests/peers/check_card.cjs). The daemon delivers its own commits and other
//! processes' (a CLI accept); a cron-style `check` with no daemon delivers before it exits.
//!
//! Timing: waits are polls with a deadline; nothing asserts a lower bound.

use crate::common;
use crate::service::*;

use common::peers::{faketime_lib, free_port, need, peers_dir, runs, ServerProcess};
use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SECRET_OLD: &str = "whsec_b2xkIHNlY3JldCBmb3IgdGVzdHMgb25seQ==";
const SECRET_NEW: &str = "whsec_bmV3IHNlY3JldCBmb3IgdGVzdHMgb25seSE=";
const URL_VAR: &str = "SW_TEST_HOOK_URL";

fn python() -> Option<PathBuf> {
    let venv = peers_dir().join(".venv/bin/python");
    (venv.is_file()
        && runs(
            venv.to_str().unwrap_or(""),
            &["-c", "import standardwebhooks"],
        ))
    .then_some(venv)
}

/// The receiver process, on a fixed port so it can be stopped and started again.
struct Receiver {
    python: PathBuf,
    port: u16,
    dir: PathBuf,
    secrets: Vec<&'static str>,
    process: Option<ServerProcess>,
}

impl Receiver {
    fn new(python: PathBuf, dir: PathBuf, secrets: &[&'static str]) -> Receiver {
        Receiver {
            python,
            port: free_port(),
            dir,
            secrets: secrets.to_vec(),
            process: None,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("receiver.log")
    }

    fn control(&self, json: &str) {
        let tmp = self.dir.join("control.tmp");
        std::fs::write(&tmp, json).unwrap();
        std::fs::rename(tmp, self.dir.join("control.json")).unwrap();
    }

    fn start(&mut self) {
        let port_file = self.dir.join("port");
        let _ = std::fs::remove_file(&port_file);
        let mut cmd = Command::new(&self.python);
        cmd.arg(peers_dir().join("webhook_receiver.py"))
            .args(["--port", &self.port.to_string()])
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(self.log_path())
            .arg("--control")
            .arg(self.dir.join("control.json"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for s in &self.secrets {
            cmd.args(["--secret", s]);
        }
        let process = ServerProcess(cmd.spawn().expect("spawn the webhook receiver"));
        let deadline = Instant::now() + PATIENCE;
        while !port_file.exists() {
            assert!(Instant::now() < deadline, "the receiver never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.process = Some(process);
    }

    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.log_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Polls the log until `pred` holds for the requests seen so far.
    fn wait(&self, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let requests = self.requests();
            if pred(&requests) {
                return requests;
            }
            assert!(
                Instant::now() < deadline,
                "receiver never saw {what}; it saw:\n{}",
                requests
                    .iter()
                    .map(|r| format!(
                        "{} {} {} {}",
                        r["path"], r["status"], r["outcome"], r["body"]["type"]
                    ))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn applied_of_type<'a>(requests: &'a [Value], kind: &str) -> Vec<&'a Value> {
    requests
        .iter()
        .filter(|r| r["outcome"] == "applied" && r["body"]["type"] == kind)
        .collect()
}

fn webhook_sink(name: &str, extra: &str) -> String {
    format!(
        "[[notify]]\nname = \"{name}\"\nkind = \"webhook\"\nurl = \"${{{URL_VAR}}}\"\nsecrets = [\"{SECRET_OLD}\", \"{SECRET_NEW}\"]\n{extra}\n"
    )
}

fn notifications_block() -> &'static str {
    "[notifications]\ntimeout = \"2s\"\n\n"
}

fn notify_list(sb: &Sandbox, url: &str) -> Value {
    let config = sb.config_arg();
    let mut cmd = sb.command(&["notify", "list", "--config", &config, "--json"]);
    cmd.env(URL_VAR, url);
    let out = cmd.output().expect("notify list");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("notify list --json")
}

fn run_with_url(sb: &Sandbox, url: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = sb.command(args);
    cmd.env(URL_VAR, url);
    cmd.output().expect("run schemawatch")
}

fn pets_breaking() -> Vec<u8> {
    Pets {
        show_by_id: false,
        ..Pets::v1()
    }
    .bytes()
}

/// Receiver down → a review is queued → daemon restarted → receiver up: the event arrives
/// once, verified, with the same `webhook-id` the registry gave it.
#[test]
fn deliveries_survive_a_receiver_down_and_a_daemon_restart() {
    let Some(python) = need(python(), "PyPI standardwebhooks (tests/peers/.venv)") else {
        return;
    };
    let sb = Sandbox::new();
    let mut receiver = Receiver::new(python, sb.dir.path().to_path_buf(), &[SECRET_NEW]);
    let url = receiver.url("/webhook");
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(&format!(
        "{}{}{}",
        config_text(&file_watch("acme.pets", "pets.json", "1s"), ""),
        notifications_block(),
        webhook_sink("hook", "events = [\"pending_review\", \"review_accepted\"]")
    ));
    let start = |sb: &Sandbox| {
        let config = sb.config_arg();
        let mut cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
        cmd.env(URL_VAR, &url);
        Daemon::start_command(cmd, None)
    };
    let mut d = start(&sb);
    d.wait_json("/v1/status", |v| v.to_string().contains("registered"));
    sb.write_file("pets.json", &pets_breaking());
    d.wait_json("/v1/pending", |v| v.to_string().contains("acme.pets"));
    // The receiver is down: the delivery is tried, fails, and stays pending.
    let deadline = Instant::now() + PATIENCE;
    let pending = loop {
        let list = notify_list(&sb, &url);
        let rows = list["notifications"].as_array().unwrap().clone();
        if let Some(row) = rows
            .iter()
            .find(|r| r["event"] == "pending_review" && r["attempts"].as_i64() >= Some(1))
        {
            break row.clone();
        }
        assert!(Instant::now() < deadline, "no failed attempt: {list}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(pending["state"], "pending");
    assert_eq!(pending["last_error"], "connect");
    d.terminate(PATIENCE);
    receiver.start();
    let _d = start(&sb);
    let requests = receiver.wait("the pending_review delivery", |r| {
        !applied_of_type(r, "schemawatch.pending_review").is_empty()
    });
    let applied = applied_of_type(&requests, "schemawatch.pending_review");
    assert_eq!(applied.len(), 1);
    let r = applied[0];
    assert_eq!(r["verified"], true);
    assert_eq!(r["webhook_id"], pending["event_id"]);
    assert_eq!(
        r["signature_count"], 2,
        "signed with both secrets while rotating"
    );
    let data = &r["body"]["data"];
    assert_eq!(data["schema_version"], "schemawatch.event.v1");
    assert_eq!(data["watch"], "acme.pets");
    assert_eq!(data["compatibility"], "breaking");
    assert!(data["review_id"].as_i64().is_some());
    assert!(data.get("changes").is_none(), "content-free by default");
    // Delivered once: the registry says so too, and nothing is sent again.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let list = notify_list(&sb, &url);
        if list["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["event_id"] == pending["event_id"] && r["state"] == "delivered")
        {
            break;
        }
        assert!(Instant::now() < deadline, "{list}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(receiver
        .requests()
        .iter()
        .all(|r| r["outcome"] != "duplicate"));
    assert_no_secret(&sb, &url, &d.log_text());
}

/// No secret reaches a log, the registry or any output: the sink URL (with its token) and
/// the signing secrets.
fn assert_no_secret(sb: &Sandbox, url: &str, logs: &str) {
    let registry = std::fs::read(sb.path("registry.sqlite3")).unwrap_or_default();
    let mut outputs = sb.transcript();
    outputs.extend_from_slice(logs.as_bytes());
    for secret in [
        url,
        SECRET_OLD,
        SECRET_NEW,
        "bmV3IHNlY3JldCBmb3IgdGVzdHMgb25seSE",
    ] {
        for (what, bytes) in [("registry", &registry), ("outputs and logs", &outputs)] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{what} holds a secret"
            );
        }
    }
}

/// A CLI `pending accept` while the daemon runs reaches the receiver (through the change
/// counter); with no daemon, a cron-style `check` delivers what is due before it exits, and
/// `--no-notify` leaves it for later.
#[test]
fn cli_writes_are_delivered_by_the_daemon_and_a_cron_check_delivers_alone() {
    let Some(python) = need(python(), "PyPI standardwebhooks (tests/peers/.venv)") else {
        return;
    };
    let sb = Sandbox::new();
    let mut receiver = Receiver::new(python, sb.dir.path().to_path_buf(), &[SECRET_OLD]);
    receiver.start();
    let url = format!("{}?token=hook-canary-7f3a", receiver.url("/webhook"));
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(&format!(
        "{}{}{}",
        config_text(&file_watch("acme.pets", "pets.json", "1h"), ""),
        notifications_block(),
        webhook_sink("hook", "include_changes = true")
    ));
    let config = sb.config_arg();
    // No daemon: the check delivers its own `registered`.
    let out = run_with_url(&sb, &url, &["check", "--config", &config, "--no-notify"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(receiver.requests().is_empty(), "--no-notify sent something");
    sb.write_file("pets.json", &pets_breaking());
    let out = run_with_url(&sb, &url, &["check", "--config", &config]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = receiver.requests();
    assert_eq!(
        applied_of_type(&requests, "schemawatch.registered").len(),
        1
    );
    let review = applied_of_type(&requests, "schemawatch.pending_review");
    assert_eq!(review.len(), 1);
    let changes = review[0]["body"]["data"]["changes"].as_array().unwrap();
    assert!(changes.iter().any(|c| c["rule"] == "endpoint-removed"));
    assert!(changes
        .iter()
        .all(|c| c["id"].as_str().unwrap().starts_with("chg")));
    let id = review[0]["body"]["data"]["review_id"].as_i64().unwrap();

    // With the daemon running, a CLI accept is delivered by the daemon.
    let mut cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
    cmd.env(URL_VAR, &url);
    let d = Daemon::start_command(cmd, None);
    let out = run_with_url(
        &sb,
        &url,
        &[
            "pending",
            "accept",
            &id.to_string(),
            "--reviewer",
            "alice",
            "--reason",
            "ok",
            "--config",
            &config,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = receiver.wait("review_accepted", |r| {
        !applied_of_type(r, "schemawatch.review_accepted").is_empty()
    });
    let accepted = applied_of_type(&requests, "schemawatch.review_accepted");
    assert_eq!(accepted[0]["body"]["data"]["reviewer"], "alice");
    assert!(requests.iter().all(|r| r["verified"] != false));
    assert_no_secret(&sb, &url, &d.log_text());
    assert_no_secret(&sb, "hook-canary-7f3a", &d.log_text());
}

/// 429 with Retry-After is retried after it; a 302 is a failure and never followed; a 410
/// disables the sink until its configuration changes; a filter keeps compatible applies out;
/// a removed sink fails its pending rows.
#[test]
fn receivers_answers_filters_and_removed_sinks() {
    let Some(python) = need(python(), "PyPI standardwebhooks (tests/peers/.venv)") else {
        return;
    };
    let Some(faketime) = need(
        faketime_lib(),
        "Debian libfaketime (apt-get install libfaketime)",
    ) else {
        return;
    };
    let sb = Sandbox::new();
    let mut receiver = Receiver::new(python, sb.dir.path().to_path_buf(), &[SECRET_NEW]);
    receiver.start();
    let url = receiver.url("/webhook");
    sb.write_file("pets.json", &Pets::v1().bytes());
    let with_sinks = |sinks: &str| {
        format!(
            "{}{}{}",
            config_text(&file_watch("acme.pets", "pets.json", "1h"), ""),
            notifications_block(),
            sinks
        )
    };
    sb.write_config(&with_sinks(&webhook_sink(
        "hook",
        "min_compatibility = \"breaking\"",
    )));
    let config = sb.config_arg();
    // Each `check` runs `ahead` seconds in the future (libfaketime): the waits a sink asks
    // for (Retry-After, the retry backoff) pass without the test sleeping through them.
    let check_at = |sb: &Sandbox, url: &str, ahead: u32| {
        let mut cmd = sb.command(&["check", "--config", &config]);
        cmd.env(URL_VAR, url)
            .env("LD_PRELOAD", &faketime)
            .env("FAKETIME", format!("+{ahead}s"))
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        let out = cmd.output().expect("run schemawatch under libfaketime");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // 429 then OK: the first attempt is refused, the retry (after Retry-After) delivered.
    receiver.control(r#"{"status": 429, "retry_after": "1", "times": 1}"#);
    check_at(&sb, &url, 0);
    let list = notify_list(&sb, &url);
    let row = &list["notifications"][0];
    assert_eq!(
        (row["state"].as_str(), row["last_status"].as_i64()),
        (Some("pending"), Some(429))
    );
    assert_eq!(row["last_error"], "rate_limited");
    // The retry waits for the Retry-After, and at least the first backoff (2.5–5 s).
    check_at(&sb, &url, 6);
    assert_eq!(
        applied_of_type(&receiver.requests(), "schemawatch.registered").len(),
        1,
        "the 429 was never retried: {}",
        notify_list(&sb, &url)
    );
    // A compatible apply is filtered out (min_compatibility = breaking): no delivery row.
    sb.write_file(
        "pets.json",
        &Pets {
            tag_param: true,
            ..Pets::v1()
        }
        .bytes(),
    );
    check_at(&sb, &url, 6);
    let list = notify_list(&sb, &url);
    assert!(
        list["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["event"] != "applied"),
        "{list}"
    );
    // A 302 is a failure; its Location is never requested.
    receiver.control(&format!(
        r#"{{"status": 302, "location": "{}", "times": 1}}"#,
        receiver.url("/redirected")
    ));
    sb.write_file("pets.json", &pets_breaking());
    check_at(&sb, &url, 6);
    let list = notify_list(&sb, &url);
    let review = list["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["event"] == "pending_review")
        .cloned()
        .expect("a pending_review delivery");
    assert_eq!(review["last_error"], "redirect");
    assert!(receiver
        .requests()
        .iter()
        .all(|r| r["path"] != "/redirected"));
    // 410: disabled, nothing more is sent to it until its configuration changes. The retry
    // after the 302 is due 2.5–5 s after it.
    receiver.control(r#"{"status": 410}"#);
    check_at(&sb, &url, 14);
    assert!(
        receiver.requests().iter().any(|r| r["status"] == 410),
        "never retried after the 302"
    );
    let seen = receiver.requests().len();
    std::fs::remove_file(sb.path("control.json")).ok();
    // The next retry would be due 5–10 s after the 410: 16 s later, nothing is sent.
    check_at(&sb, &url, 30);
    assert_eq!(
        receiver.requests().len(),
        seen,
        "a disabled sink was sent to"
    );
    // Its configuration changes (a new URL): enabled again, the pending row is delivered.
    // Another URL of the same receiver (a fragment is never sent).
    let url2 = format!("{url}#v2");
    check_at(&sb, &url2, 30);
    let requests = receiver.requests();
    assert_eq!(
        applied_of_type(&requests, "schemawatch.pending_review").len(),
        1,
        "{}\n{requests:?}",
        notify_list(&sb, &url2)
    );
    // A removed sink fails its pending rows with `sink_removed`.
    receiver.control(r#"{"status": 500}"#);
    sb.write_file("pets.json", &Pets::v1().bytes());
    check_at(&sb, &url, 30);
    sb.write_config(&with_sinks(""));
    check_at(&sb, &url, 30);
    let list = notify_list(&sb, &url);
    let removed: Vec<&Value> = list["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["last_error"] == "sink_removed")
        .collect();
    assert!(!removed.is_empty(), "{list}");
    assert!(removed.iter().all(|r| r["state"] == "failed"));
}

/// 1,000 registrations to a chat sink arrive as one digest; a Teams card parses with the
/// `adaptivecards` library (parse and validation events are failures).
#[test]
fn chat_sinks_get_one_digest_for_a_flood_and_cards_that_parse() {
    let Some(python) = need(python(), "PyPI standardwebhooks (tests/peers/.venv)") else {
        return;
    };
    let card_checker = peers_dir().join("check_card.cjs");
    let node_ok =
        peers_dir().join("node_modules/adaptivecards").is_dir() && runs("node", &["--version"]);
    let Some(()) = need(
        node_ok.then_some(()),
        "npm adaptivecards (tests/peers/node_modules)",
    ) else {
        return;
    };
    let sb = Sandbox::new();
    let mut receiver = Receiver::new(python, sb.dir.path().to_path_buf(), &[SECRET_NEW]);
    receiver.start();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let watches: String = (0..1000)
        .map(|i| file_watch(&format!("flood.w{i:04}"), "pets.json", "1h"))
        .collect();
    sb.write_config(&format!(
        "{}{}[[notify]]\nname = \"chat\"\nkind = \"slack\"\nurl = \"{}\"\nevents = [\"registered\", \"pending_review\"]\n\n[[notify]]\nname = \"cards\"\nkind = \"teams\"\nurl = \"{}\"\nwatches = [\"flood.w0001\"]\n",
        config_text(&watches, ""),
        notifications_block(),
        receiver.url("/slack"),
        receiver.url("/teams"),
    ));
    let config = sb.config_arg();
    let out = sb.run(&["check", "--config", &config]);
    assert_eq!(out.code, 0, "{}", out.describe());
    let slack: Vec<Value> = receiver
        .requests()
        .into_iter()
        .filter(|r| r["path"] == "/slack")
        .collect();
    assert_eq!(slack.len(), 1, "one digest for 1,000 registrations");
    let text = slack[0]["body"].to_string();
    assert!(
        text.contains("1000 events") && text.contains("1000 registered"),
        "{text}"
    );
    // The Teams sink (registered is not among a chat sink's defaults) gets a pending review.
    std::fs::write(sb.path("other.json"), pets_breaking()).unwrap();
    let cfg = std::fs::read_to_string(sb.path("schemawatch.toml")).unwrap();
    sb.write_config(&cfg.replacen(
        "name = \"flood.w0001\"\nkind = \"openapi\"\npath = \"pets.json\"",
        "name = \"flood.w0001\"\nkind = \"openapi\"\npath = \"other.json\"",
        1,
    ));
    let out = sb.run(&["check", "--config", &config, "--watch", "flood.w0001"]);
    assert_eq!(out.code, 0, "{}", out.describe());
    let teams: Vec<Value> = receiver
        .requests()
        .into_iter()
        .filter(|r| r["path"] == "/teams")
        .collect();
    assert_eq!(teams.len(), 1, "{teams:?}");
    let payload = sb.write_file("card.json", teams[0]["body"].to_string().as_bytes());
    let checked = Command::new("node")
        .arg(&card_checker)
        .arg(&payload)
        .output()
        .expect("node check_card.cjs");
    assert!(
        checked.status.success(),
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    // An included file cannot add a sink.
    std::fs::create_dir_all(sb.path("watches.d")).unwrap();
    sb.write_file(
        "watches.d/evil.toml",
        b"[[notify]]\nname = \"x\"\nkind = \"slack\"\nurl = \"http://127.0.0.1:1/\"\n",
    );
    sb.write_config(&format!("include = [\"watches.d/*.toml\"]\n{cfg}"));
    let out = sb.run(&["config", "check", "--config", &config]);
    assert_eq!(out.code, 2, "{}", out.describe());
    assert!(
        out.stderr_text().contains("evil.toml"),
        "{}",
        out.describe()
    );
}

/// `POST /v1/watches/{name}/refresh`: 202 with Location, the refresh happens, N asks give
/// one; 404 unknown, 401 without the token; the refresh token can do nothing else.
#[test]
fn refresh_on_demand_goes_through_the_scheduler() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(
        &with_admin_token(&config_text(
            &file_watch("acme.pets", "pets.json", "1h"),
            "",
        ))
        .replace(
            "[server]\n",
            "[server]\nrefresh_token_env = \"SW_TEST_REFRESH\"\n",
        ),
    );
    let config = sb.config_arg();
    // Registered before the daemon starts: nothing here waits for its first refresh.
    sb.run(&["check", "--config", &config]).assert_code(0);
    let mut cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
    cmd.env("SW_TEST_REFRESH", "refresh-token-1");
    let mut d = Daemon::start_command(cmd, Some(ADMIN_TOKEN));
    d.wait_json("/v1/status", |v| v.to_string().contains("registered"));
    sb.write_file("pets.json", &pets_breaking());
    let api = d.api;
    let post = move |path: &str, token: &str, body: &str| {
        let auth = format!("Bearer {token}");
        http_with_head(
            api,
            "POST",
            path,
            None,
            &[("Authorization", &auth)],
            Some(body),
        )
    };
    let refresh = |token: &str, name: &str| post(&format!("/v1/watches/{name}/refresh"), token, "");
    assert_eq!(refresh("wrong", "acme.pets").0, 401);
    assert_eq!(refresh("refresh-token-1", "acme.nope").0, 404);
    let (status, head, _) = refresh("refresh-token-1", "acme.pets");
    assert_eq!(status, 202, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("location: /v1/watches/acme.pets"),
        "{head}"
    );
    for _ in 0..3 {
        assert_eq!(refresh(ADMIN_TOKEN, "acme.pets").0, 202);
    }
    // The 1 h watch refreshed now: the breaking change is queued.
    d.wait_json("/v1/pending", |v| v.to_string().contains("acme.pets"));
    // The refresh token cannot accept a review.
    let (status, _, _) = post(
        "/v1/pending/1/accept",
        "refresh-token-1",
        r#"{"reviewer": "r", "reason": "x"}"#,
    );
    assert_eq!(status, 401);
    let _ = d.wait_for_log("pending_review", |_| true);
}

/// Three cron-style `check`s racing over the same due deliveries (no daemon): each delivery
/// is sent once per attempt (the claim is one transaction), so the receiver never sees an id
/// twice. `notify test` prints a status and an error class, never the URL; `GET
/// /v1/notifications` carries no secret either.
#[test]
fn racing_checks_send_each_delivery_once_and_outputs_hold_no_secret() {
    let Some(python) = need(python(), "PyPI standardwebhooks (tests/peers/.venv)") else {
        return;
    };
    let sb = Sandbox::new();
    let mut receiver = Receiver::new(python, sb.dir.path().to_path_buf(), &[SECRET_NEW]);
    receiver.start();
    let url = format!("{}?token=race-canary-91c2", receiver.url("/webhook"));
    sb.write_file("pets.json", &Pets::v1().bytes());
    let watches: String = (0..40)
        .map(|i| file_watch(&format!("race.w{i:02}"), "pets.json", "1h"))
        .collect();
    sb.write_config(&format!(
        "{}{}{}",
        config_text(&watches, ""),
        notifications_block(),
        webhook_sink("hook", "")
    ));
    let config = sb.config_arg();
    let out = run_with_url(&sb, &url, &["check", "--config", &config, "--no-notify"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let racers: Vec<_> = (0..3)
        .map(|i| {
            let mut cmd = sb.command(&[
                "check",
                "--config",
                &config,
                "--watch",
                &format!("race.w{i:02}"),
            ]);
            cmd.env(URL_VAR, &url);
            cmd.spawn().expect("spawn check")
        })
        .collect();
    for mut r in racers {
        assert!(r.wait().unwrap().success());
    }
    let requests = receiver.requests();
    let applied = applied_of_type(&requests, "schemawatch.registered");
    assert_eq!(applied.len(), 40, "every registration delivered");
    assert!(
        requests.iter().all(|r| r["outcome"] != "duplicate"),
        "a delivery was sent twice"
    );
    // notify test: a status and a class, never the URL or the body.
    let ok = run_with_url(&sb, &url, &["notify", "test", "hook", "--config", &config]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&ok.stdout),
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(ok.status.success() && text.contains("status 200"), "{text}");
    assert!(receiver
        .requests()
        .iter()
        .any(|r| r["body"]["type"] == "schemawatch.test"));
    let down = format!(
        "http://127.0.0.1:{}/webhook?token=race-canary-91c2",
        dead_port()
    );
    let failed = run_with_url(&sb, &down, &["notify", "test", "hook", "--config", &config]);
    let failed_text = format!(
        "{}{}",
        String::from_utf8_lossy(&failed.stdout),
        String::from_utf8_lossy(&failed.stderr)
    );
    assert_eq!(failed.status.code(), Some(1), "{failed_text}");
    assert!(failed_text.contains("error class connect"), "{failed_text}");
    let list = run_with_url(&sb, &url, &["notify", "list", "--config", &config]);
    for text in [
        &text,
        &failed_text,
        &String::from_utf8_lossy(&list.stdout).into_owned(),
    ] {
        assert!(
            !text.contains("race-canary-91c2") && !text.contains("127.0.0.1:"),
            "{text}"
        );
    }
    // The API's listing: the same rows, no secret.
    let mut cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
    cmd.env(URL_VAR, &url);
    let d = Daemon::start_command(cmd, None);
    let (status, body) = d.get("/v1/notifications?limit=5");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["notifications"].as_array().unwrap().len(), 5);
    assert!(!body.contains("race-canary-91c2"));
    assert_no_secret(&sb, "race-canary-91c2", &d.log_text());
}

/// Beyond loopback, `/v1` reads need a token (admin or read; the read token can do nothing
/// else); `allowed_hosts` admits a reverse proxy's Host, exactly; probes need nothing.
#[test]
fn reads_beyond_loopback_need_a_token_and_allowed_hosts_admit_a_proxy() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let text = with_admin_token(&config_text(
        &file_watch("acme.pets", "pets.json", "1h"),
        "",
    ))
    .replace("listen = \"127.0.0.1:0\"", "listen = \"0.0.0.0:0\"")
    .replace(
        "[server]\n",
        "[server]\nread_token_env = \"SW_TEST_READ\"\nallowed_hosts = [\"proxy.example:8443\"]\n",
    );
    sb.write_config(&text);
    let config = sb.config_arg();
    let mut cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
    cmd.env("SW_TEST_READ", "read-token-5");
    let d = Daemon::start_command(cmd, Some(ADMIN_TOKEN));
    let get = |host: Option<&str>, token: Option<&str>, path: &str| {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        http(d.api, "GET", path, host, &headers, None).0
    };
    assert_eq!(get(None, None, "/healthz"), 200);
    assert_eq!(get(None, None, "/v1/status"), 401);
    assert_eq!(get(None, Some("wrong"), "/v1/status"), 401);
    assert_eq!(get(None, Some("read-token-5"), "/v1/status"), 200);
    assert_eq!(get(None, Some(ADMIN_TOKEN), "/v1/notifications"), 200);
    assert_eq!(
        get(
            Some("proxy.example:8443"),
            Some("read-token-5"),
            "/v1/status"
        ),
        200
    );
    assert_eq!(
        get(
            Some("proxy.example:9999"),
            Some("read-token-5"),
            "/v1/status"
        ),
        403
    );
    assert_eq!(
        get(
            Some("evil.example:8443"),
            Some("read-token-5"),
            "/v1/status"
        ),
        403
    );
    // The read token cannot queue a refresh.
    let auth = "Bearer read-token-5";
    let (status, _) = http(
        d.api,
        "POST",
        "/v1/watches/acme.pets/refresh",
        None,
        &[("Authorization", auth)],
        Some(""),
    );
    assert_eq!(status, 401);
}
