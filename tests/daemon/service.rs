//! Integration tests of the daemon: the real `schemawatch run` process against a real HTTP
//! server on 127.0.0.1 (in process), with its API on a free loopback port. Readiness, drift
//! picked up within the interval (in `/v1/pending` and in a WARN log line), metrics that
//! move, SIGHUP with a valid and an invalid config, SIGTERM draining while a slow provider is
//! mid-response, the token-protected review actions and the Host-header check.
//!
//! Timing: nothing asserts a lower bound; waits are polls with generous upper bounds.

use crate::common;

use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) const ADMIN_VAR: &str = "SW_TEST_ADMIN_TOKEN";
pub(crate) const ADMIN_TOKEN: &str = "admin-token-7d3c";
/// Upper bound of every wait (a loaded 2-core CI machine is slow, never this slow).
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// A running `schemawatch run`, its JSON log lines collected by a reader thread.
pub(crate) struct Daemon {
    pub(crate) child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    pub(crate) api: SocketAddr,
}

impl Daemon {
    pub(crate) fn start(sb: &Sandbox, token: Option<&str>) -> Daemon {
        let config = sb.config_arg();
        let cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
        Daemon::start_command(cmd, token)
    }

    /// `start`, with the open-files limit lowered to `nofile` (`ulimit -n`).
    pub(crate) fn start_with_nofile(sb: &Sandbox, token: Option<&str>, nofile: u32) -> Daemon {
        let config = sb.config_arg();
        let mut cmd = sb.command(&[]);
        let mut sh = std::process::Command::new("sh");
        sh.args(["-c", &format!("ulimit -n {nofile} && exec \"$0\" \"$@\"")])
            .arg(bin())
            .args(["run", "--config", &config, "--log-format", "json"])
            .current_dir(sb.dir.path());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        let _ = &mut cmd;
        Daemon::start_command(sh, token)
    }

    pub(crate) fn start_command(cmd: std::process::Command, token: Option<&str>) -> Daemon {
        // DEBUG for our own events: the tests count every refresh (`unchanged` is DEBUG).
        Daemon::start_logging(cmd, token, "info,schemawatch=debug")
    }

    /// `start_command` with `RUST_LOG` set to `filter`.
    pub(crate) fn start_logging(
        mut cmd: std::process::Command,
        token: Option<&str>,
        filter: &str,
    ) -> Daemon {
        cmd.env("RUST_LOG", filter)
            .stderr(Stdio::piped())
            .stdout(Stdio::null());
        match token {
            Some(t) => cmd.env(ADMIN_VAR, t),
            None => cmd.env_remove(ADMIN_VAR),
        };
        let mut child = cmd.spawn().expect("spawn schemawatch run");
        let stderr = child.stderr.take().expect("stderr piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        let mut daemon = Daemon {
            child,
            lines,
            api: "127.0.0.1:1".parse().unwrap(),
        };
        let listening = daemon.wait_for_log("api_listening", |_| true);
        daemon.api = listening["addr"].as_str().unwrap().parse().unwrap();
        daemon
    }

    pub(crate) fn logs(&self) -> Vec<Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    pub(crate) fn log_text(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Waits for a log event named `event` that satisfies `pred`.
    pub(crate) fn wait_for_log(&mut self, event: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            if let Some(v) = self
                .logs()
                .into_iter()
                .find(|v| v["event"] == event && pred(v))
            {
                return v;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "daemon exited ({status}) before logging {event}:\n{}",
                    self.log_text()
                );
            }
            assert!(
                start.elapsed() < PATIENCE,
                "no {event} log event within {PATIENCE:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn count_events(&self, event: &str) -> usize {
        self.logs().iter().filter(|v| v["event"] == event).count()
    }

    pub(crate) fn get(&self, path: &str) -> (u16, String) {
        http(self.api, "GET", path, None, &[], None)
    }

    pub(crate) fn get_json(&self, path: &str) -> Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
    }

    /// Polls `GET path` until `pred` holds on its JSON.
    pub(crate) fn wait_json(&self, path: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let v = self.get_json(path);
            if pred(&v) {
                return v;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "GET {path} never satisfied the condition; last {v}\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn metric(&self, series: &str) -> Option<f64> {
        let (status, text) = self.get("/metrics");
        assert_eq!(status, 200);
        text.lines()
            .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    pub(crate) fn wait_metric(&self, series: &str, pred: impl Fn(f64) -> bool) -> f64 {
        let start = Instant::now();
        loop {
            if let Some(v) = self.metric(series).filter(|v| pred(*v)) {
                return v;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "metric {series} never satisfied the condition (now {:?})",
                self.metric(series)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Sends SIGTERM and waits (at most `limit`) for the exit.
    pub(crate) fn terminate(&mut self, limit: Duration) -> (ExitStatus, Duration) {
        let start = Instant::now();
        self.signal("TERM");
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return (status, start.elapsed());
            }
            assert!(
                start.elapsed() < limit,
                "still running {limit:?} after SIGTERM:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 client (Connection: close), so the tests control every header.
pub(crate) fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    host: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, String) {
    let (status, _, body) = http_with_head(addr, method, path, host, headers, body);
    (status, body)
}

/// [`http`], also answering the response head (status line and headers).
pub(crate) fn http_with_head(
    addr: SocketAddr,
    method: &str,
    path: &str,
    host: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the API");
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let host = host.map_or_else(|| addr.to_string(), str::to_string);
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    if method == "POST" {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad answer: {text}"));
    (status, head.to_string(), body.to_string())
}

pub(crate) fn config_text(watches: &str, extra: &str) -> String {
    format!(
        r#"[storage]
path = "registry.sqlite3"

[daemon]
max_concurrency = 2
drain_timeout = "2s"
{extra}
[server]
listen = "127.0.0.1:0"

{watches}"#
    )
}

/// `text` (from [`config_text`]) with `server.admin_token_env` naming the test's admin token
/// variable (a daemon refuses to start when that variable is unset).
pub(crate) fn with_admin_token(text: &str) -> String {
    text.replace(
        "[server]\n",
        &format!("[server]\nadmin_token_env = \"{ADMIN_VAR}\"\n"),
    )
}

pub(crate) fn url_watch(name: &str, url: &str, interval: &str) -> String {
    format!(
        "[[watch]]\nname = \"{name}\"\nkind = \"openapi\"\nurl = \"{url}\"\ninterval = \"{interval}\"\n\n"
    )
}

pub(crate) fn file_watch(name: &str, path: &str, interval: &str) -> String {
    format!(
        "[[watch]]\nname = \"{name}\"\nkind = \"openapi\"\npath = \"{path}\"\ninterval = \"{interval}\"\n\n"
    )
}

#[test]
fn daemon_picks_up_drift_and_serves_reviews_behind_a_token() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    sb.write_config(&with_admin_token(&config_text(
        &url_watch("acme.pets", &server.url(), "1s"),
        "",
    )));
    let mut d = Daemon::start(&sb, Some(ADMIN_TOKEN));

    // Readiness and liveness; probes answer any Host.
    assert_eq!(d.get("/healthz").0, 200);
    assert_eq!(d.get("/readyz").0, 200);
    let (status, _) = http(d.api, "GET", "/readyz", Some("probe.example:80"), &[], None);
    assert_eq!(status, 200);

    // First refresh registers; later ones are 304s, and the metrics show it.
    d.wait_json("/v1/status", |v| v["watches"][0]["status"] == "unchanged");
    let not_modified = d.wait_metric(
        "schemawatch_fetch_not_modified_total{kind=\"openapi\"}",
        |v| v >= 1.0,
    );
    assert!(server.counters().not_modified >= 1);
    let last_check = d
        .metric("schemawatch_watch_last_check_timestamp_seconds{watch=\"acme.pets\"}")
        .expect("last-check series");
    assert!(d.metric("schemawatch_registry_version").unwrap_or(0.0) >= 1.0);
    assert_eq!(
        d.metric("schemawatch_config_last_reload_successful"),
        Some(1.0)
    );

    // A breaking change shows up in /v1/pending and as one WARN event with stable fields.
    server.set_document(Pets::v3().bytes());
    let pending = d.wait_json("/v1/pending", |v| {
        v.as_array().is_some_and(|a| !a.is_empty())
    });
    let review = &pending[0];
    let id = review["id"].as_i64().expect("review id");
    assert_eq!(review["watch"], "acme.pets");
    assert_eq!(review["compatibility"], "breaking");
    let warn = d.wait_for_log("pending_review", |_| true);
    assert_eq!(warn["level"], "WARN", "{warn}");
    assert_eq!(warn["watch"], "acme.pets");
    assert_eq!(warn["review_id"], id);
    assert_eq!(warn["compatibility"], "breaking");
    assert!(warn["change_count"].as_i64().unwrap_or(0) >= 1, "{warn}");
    d.wait_metric("schemawatch_pending_reviews", |v| v == 1.0);
    // Metrics moved: a later check timestamp, more 304s or fetched bytes.
    d.wait_metric(
        "schemawatch_watch_last_check_timestamp_seconds{watch=\"acme.pets\"}",
        |v| v > last_check,
    );
    assert!(
        d.metric("schemawatch_fetch_bytes_total{kind=\"openapi\"}")
            .unwrap_or(0.0)
            > 0.0
    );
    let _ = not_modified;

    // The API answers with the CLI's JSON shapes (the CLI reads the same registry file).
    let cli_list = sb.pending_list();
    assert_eq!(Value::Array(cli_list), d.get_json("/v1/pending"));
    assert_eq!(
        sb.pending_show(id),
        d.get_json(&format!("/v1/pending/{id}"))
    );
    let cli_status = sb.status();
    let api_status = d.get_json("/v1/status");
    assert_eq!(
        cli_status["watches"][0]["watch"],
        api_status["watches"][0]["watch"]
    );
    let mut cli_keys: Vec<_> = cli_status["watches"][0]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    let mut api_keys: Vec<_> = api_status["watches"][0]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    cli_keys.sort();
    api_keys.sort();
    assert_eq!(cli_keys, api_keys);
    assert_eq!(d.get_json("/v1/watches/acme.pets")["watch"], "acme.pets");
    assert_eq!(d.get("/v1/watches/nope.none").0, 404);
    assert_eq!(d.get("/v1/pending/999999").0, 404);

    // DNS rebinding: /v1 answers only to its own Host.
    let (status, _) = http(
        d.api,
        "GET",
        "/v1/status",
        Some("evil.example:80"),
        &[],
        None,
    );
    assert_eq!(status, 403);
    let localhost = format!("localhost:{}", d.api.port());
    let (status, _) = http(d.api, "GET", "/v1/status", Some(&localhost), &[], None);
    assert_eq!(status, 200);

    // Accept needs the bearer token.
    let path = format!("/v1/pending/{id}/accept");
    let body = r#"{"reviewer":"alice","reason":"provider announced the removal"}"#;
    let (status, _) = http(d.api, "POST", &path, None, &[], Some(body));
    assert_eq!(status, 401);
    let wrong = [("Authorization", "Bearer not-the-token")];
    let (status, _) = http(d.api, "POST", &path, None, &wrong, Some(body));
    assert_eq!(status, 401);
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let auth = [("Authorization", bearer.as_str())];
    let (status, _) = http(
        d.api,
        "POST",
        &path,
        Some("evil.example:80"),
        &auth,
        Some(body),
    );
    assert_eq!(status, 403, "a good token does not lift the Host check");
    let (status, answer) = http(d.api, "POST", &path, None, &auth, Some(body));
    assert_eq!(status, 200, "{answer}");
    let accepted: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(accepted["id"], id);
    assert_eq!(accepted["state"], "accepted");
    assert!(accepted["registry_version"].as_i64().unwrap() >= 2);
    let (status, _) = http(d.api, "POST", &path, None, &auth, Some(body));
    assert_eq!(status, 409, "a decided review cannot be accepted twice");
    d.wait_metric("schemawatch_pending_reviews", |v| v == 0.0);

    // POST /v1/check answers like `check --json`.
    let (status, answer) = http(d.api, "POST", "/v1/check", None, &auth, Some(""));
    assert_eq!(status, 200, "{answer}");
    let check: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(check["outcomes"][0]["watch"], "acme.pets");
    assert!(check["registry_version"].as_i64().is_some());
    let (status, _) = http(d.api, "POST", "/v1/check", None, &[], Some(""));
    assert_eq!(status, 401);

    let (status, _) = d.terminate(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{}", d.log_text());
    assert!(find_canary(d.log_text().as_bytes()).is_none());
    assert!(!d.log_text().contains(ADMIN_TOKEN));
}

#[test]
fn without_a_token_review_actions_are_forbidden() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(&config_text(
        &file_watch("acme.pets", "pets.json", "1h"),
        "",
    ));
    let mut d = Daemon::start(&sb, None);
    let body = r#"{"reviewer":"alice","reason":"x"}"#;
    let (status, _) = http(d.api, "POST", "/v1/pending/1/accept", None, &[], Some(body));
    assert_eq!(status, 403);
    let auth = [("Authorization", "Bearer anything")];
    let (status, _) = http(
        d.api,
        "POST",
        "/v1/pending/1/reject",
        None,
        &auth,
        Some(body),
    );
    assert_eq!(status, 403);
    let (status, _) = http(d.api, "POST", "/v1/check", None, &auth, Some(""));
    assert_eq!(status, 403);
    let (status, _) = d.terminate(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
}

#[test]
fn sighup_applies_a_valid_config_and_keeps_running_on_an_invalid_one() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_file("more.json", &Pets::v2().bytes());
    let one = file_watch("acme.pets", "pets.json", "1s");
    // A fixed port, so `schemawatch healthcheck` can find the daemon from the config.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config_text = |watches: &str, extra: &str| {
        config_text(watches, extra).replace("127.0.0.1:0", &format!("127.0.0.1:{port}"))
    };
    sb.write_config(&config_text(&one, ""));
    let mut d = Daemon::start(&sb, None);
    d.wait_json("/v1/watches", |v| {
        v[0]["status"] == "registered" || v[0]["status"] == "unchanged"
    });

    // The healthcheck command finds the running daemon.
    let config = sb.config_arg();
    sb.run(&["healthcheck", "--config", &config]).assert_code(0);

    // Valid: a watch is added without a restart. (The listen address stays as bound.)
    let two = format!("{one}{}", file_watch("acme.more", "more.json", "1s"));
    sb.write_config(&config_text(&two, ""));
    d.signal("HUP");
    d.wait_for_log("config_reloaded", |v| v["added"] == 1);
    let watches = d.wait_json("/v1/watches", |v| {
        v.as_array().is_some_and(|a| a.len() == 2) && v[1]["status"] != "idle"
    });
    assert_eq!(watches[1]["watch"], "acme.more");
    assert_eq!(
        d.metric("schemawatch_config_last_reload_successful"),
        Some(1.0)
    );
    assert_eq!(d.metric("schemawatch_watches"), Some(2.0));

    // Invalid: logged at ERROR with the reason; the old config keeps running.
    sb.write_config(&config_text(&two, "bogus_key = 1\n"));
    d.signal("HUP");
    let failed = d.wait_for_log("config_reload_failed", |_| true);
    assert_eq!(failed["level"], "ERROR");
    assert!(
        failed["error"].as_str().unwrap_or("").contains("bogus_key"),
        "{failed}"
    );
    assert_eq!(
        d.metric("schemawatch_config_last_reload_successful"),
        Some(0.0)
    );
    assert_eq!(d.get_json("/v1/watches").as_array().map(Vec::len), Some(2));
    // Both watches are still refreshed.
    let before = d.count_events("refresh");
    let start = Instant::now();
    while d.count_events("refresh") < before + 2 {
        assert!(
            start.elapsed() < PATIENCE,
            "refreshes stopped after a failed reload"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Valid again, removing a watch.
    sb.write_config(&config_text(&one, ""));
    d.signal("HUP");
    d.wait_for_log("config_reloaded", |v| v["removed"] == 1);
    assert_eq!(d.get_json("/v1/watches").as_array().map(Vec::len), Some(1));
    assert_eq!(
        d.metric("schemawatch_config_last_reload_successful"),
        Some(1.0)
    );

    let (status, _) = d.terminate(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
    // Nobody answers any more.
    let code = sb.run(&["healthcheck", "--config", &config]).code;
    assert_ne!(code, 0);
}

/// A provider that answers after `delay`, counting requests.
struct SlowServer {
    _runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    requests: Arc<AtomicUsize>,
}

impl SlowServer {
    fn start(delay: Duration) -> SlowServer {
        use axum::routing::get;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let requests = Arc::new(AtomicUsize::new(0));
        let r = requests.clone();
        let body = Pets::v1().bytes();
        let app = axum::Router::new().route(
            "/{doc}",
            get(move || {
                let (r, body) = (r.clone(), body.clone());
                async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    body
                }
            }),
        );
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        SlowServer {
            _runtime: runtime,
            addr,
            requests,
        }
    }

    fn url(&self, doc: &str) -> String {
        format!("http://{}/{doc}", self.addr)
    }
}

#[test]
fn sigterm_drains_within_the_deadline_while_a_provider_is_mid_response() {
    let server = SlowServer::start(Duration::from_secs(120));
    let sb = Sandbox::new();
    let watch = format!(
        "{}\ntimeout = \"100s\"\n\n",
        url_watch("slow.api", &server.url("openapi.json"), "1s").trim_end()
    );
    sb.write_config(&config_text(&watch, ""));
    let mut d = Daemon::start(&sb, None);
    let start = Instant::now();
    while server.requests.load(Ordering::SeqCst) == 0 {
        assert!(start.elapsed() < PATIENCE, "the daemon never fetched");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(d.metric("schemawatch_refreshes_in_flight"), Some(1.0));
    // drain_timeout is 2 s; allow far more than 2x for a loaded machine.
    let (status, took) = d.terminate(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "{}", d.log_text());
    let logs = d.logs();
    assert!(
        logs.iter()
            .any(|v| v["event"] == "refresh_abandoned" && v["watch"] == "slow.api"),
        "{}",
        d.log_text()
    );
    assert!(logs.iter().any(|v| v["event"] == "daemon_stopped"));
    eprintln!("SIGTERM to exit with a refresh in flight: {took:?} (drain_timeout 2s)");
}

#[test]
fn pins_are_checked_over_the_api_like_the_cli() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(&config_text(
        &file_watch("acme.pets", "pets.json", "1h"),
        "",
    ));
    // Registered before the daemon starts: nothing here waits for its first refresh.
    sb.run(&["check", "--config", &sb.config_arg()])
        .assert_code(0);
    let mut d = Daemon::start(&sb, None);
    d.wait_json("/v1/status", |v| v["watches"][0]["fingerprint"].is_string());
    let pin = sb.run(&["pin", "capture", "--config", &sb.config_arg()]);
    pin.assert_code(0);
    let pin_text = pin.stdout_text();
    let (status, body) = http(d.api, "POST", "/v1/pins/check", None, &[], Some(&pin_text));
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["status"], "eligible");
    assert_eq!(answer["reasons"], serde_json::json!([]));
    // The CLI gives the same answer from the same registry.
    let pin_file = sb.write_file("pin.json", pin_text.as_bytes());
    let cli = sb.run(&[
        "pin",
        "check",
        &pin_file.display().to_string(),
        "--config",
        &sb.config_arg(),
        "--json",
    ]);
    cli.assert_code(0);
    assert_eq!(cli.json(), answer);
    // A malformed pin is invalid_snapshot, never eligible.
    let (status, body) = http(
        d.api,
        "POST",
        "/v1/pins/check",
        None,
        &[],
        Some("{\"tools\":[]}"),
    );
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["reasons"], serde_json::json!(["invalid_snapshot"]));
    let (status, _) = d.terminate(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
}
