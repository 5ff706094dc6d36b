//! Issue 29's hostile-input probe against the daemon (`schemawatch run`), round 2: each test
//! reproduces one scenario of docs/reliability.md's H rows (H16 onwards).

use crate::common;
use crate::service::*;

use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `GET path` with a read timeout: the status, or `None` when the connection was closed or
/// timed out without an answer (what a starved probe sees).
fn probe(addr: SocketAddr, path: &str, limit: Duration) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(limit)).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok()?;
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The head of a `POST path` announcing `length` body bytes, on a fresh connection.
fn post_head(addr: SocketAddr, path: &str, length: usize) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect to the API");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream
}

/// The status of whatever the server answers on `stream` within `limit` (`None`: nothing).
fn answer_status(stream: &mut TcpStream, limit: Duration) -> Option<u16> {
    stream.set_read_timeout(Some(limit)).ok()?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&buf[..n]);
                if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace().nth(1)?.parse().ok()
}

/// H16: 70 clients trickling a 1 MB body into `POST /v1/pins/check` (one byte every 2 s)
/// used to hold every connection slot: `/healthz` was refused for as long as they trickled.
/// Now the probes keep a reserve of their own, a body must arrive within the read timeout
/// (`[server] read_timeout`, 4 s here: the trickler gets 408 and is closed), and a body over
/// the route's limit is refused (413) from its `Content-Length`, before any of it is read.
#[test]
fn h16_slow_request_bodies_never_starve_the_probes() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(
        &config_text(&file_watch("acme.pets", "pets.json", "1h"), "")
            .replace("[server]\n", "[server]\nread_timeout = \"4s\"\n"),
    );
    let mut daemon = Daemon::start(&sb, None);
    daemon.wait_for_log("daemon_started", |_| true);
    let addr = daemon.api;

    // A body over the limit (2 MiB for a pin) is refused at once, nothing of it sent.
    let mut big = post_head(addr, "/v1/pins/check", 3_000_000);
    assert_eq!(
        answer_status(&mut big, Duration::from_secs(5)),
        Some(413),
        "{}",
        daemon.log_text()
    );
    // A review decision has a small limit of its own.
    let mut decision = post_head(addr, "/v1/pending/1/accept", 100_000);
    assert_eq!(
        answer_status(&mut decision, Duration::from_secs(5)),
        Some(413)
    );

    let started = Instant::now();
    let mut tricklers: Vec<TcpStream> = (0..70)
        .map(|_| {
            let mut s = post_head(addr, "/v1/pins/check", 1_000_000);
            s.write_all(b"{").unwrap();
            s
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<TcpStream> = tricklers.iter().map(|s| s.try_clone().unwrap()).collect();
    let trickle = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut writers = writers;
            // Bounded: at most 15 rounds of one byte per connection, 2 s apart.
            for _ in 0..15 {
                for _ in 0..20 {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                for w in &mut writers {
                    let _ = w.write_all(b" ");
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..5 {
        for path in ["/healthz", "/readyz"] {
            let asked = Instant::now();
            let status = probe(addr, path, Duration::from_secs(5));
            assert_eq!(
                status,
                Some(200),
                "{path} while bodies trickle (after {:?})",
                asked.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(400));
    }
    // Every trickler that got a slot is answered 408 by the read timeout (4 s) plus a
    // margin; the few beyond the connection cap were refused (503) or closed.
    let mut timed_out = 0;
    for s in &mut tricklers {
        let left = (started + Duration::from_secs(19)).saturating_duration_since(Instant::now());
        let status = answer_status(s, left.max(Duration::from_millis(1)));
        assert!(
            matches!(status, Some(408) | Some(503) | None),
            "a trickling body got {status:?}"
        );
        timed_out += usize::from(status == Some(408));
    }
    assert!(timed_out >= 60, "only {timed_out} of 70 got 408");
    stop.store(true, Ordering::SeqCst);
    trickle.join().unwrap();
    // The API still answers a normal request afterwards.
    assert_eq!(probe(addr, "/v1/status", PATIENCE), Some(200));
    let (status, _) = daemon.terminate(PATIENCE);
    assert!(status.success());
}

/// H17: under `run`, a FIFO as a watch's `path` (was: one blocked thread leaked per refresh,
/// SIGTERM ignored after `daemon_stopped`) fails each refresh at once and SIGTERM exits.
#[test]
fn h17_a_fifo_document_neither_leaks_readers_nor_blocks_shutdown() {
    let sb = Sandbox::new();
    let status = std::process::Command::new("mkfifo")
        .arg(sb.path("pets.fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    sb.write_config(&config_text(
        &file_watch("acme.fifo", "pets.fifo", "1s"),
        "",
    ));
    let mut daemon = Daemon::start(&sb, None);
    let failed = daemon.wait_for_log("refresh_failed", |_| true);
    assert!(
        failed["error"]
            .as_str()
            .unwrap_or("")
            .contains("not a regular file"),
        "{failed}"
    );
    // Refreshes go on failing (none is stuck behind a blocked read).
    let wait = Instant::now();
    while daemon.count_events("refresh_failed") < 3 {
        assert!(wait.elapsed() < PATIENCE, "{}", daemon.log_text());
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, took) = daemon.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(10));
}

/// H18: a specific address that is not loopback, without an admin token (was: accepted; only
/// `0.0.0.0` and `[::]` were refused), is refused by `config check` and by `run` before it
/// binds anything; loopback addresses other than 127.0.0.1 stay fine.
#[test]
fn h18_a_non_loopback_listen_needs_an_admin_token() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let cfg = sb.config_arg();
    let watch = file_watch("acme.pets", "pets.json", "1h");
    for listen in ["192.0.2.10:9477", "[2001:db8::1]:9477", "0.0.0.0:0"] {
        sb.write_config(&config_text(&watch, "").replace("127.0.0.1:0", listen));
        for args in [
            vec!["config", "check", "--config", &cfg],
            vec!["run", "--config", &cfg],
        ] {
            let run = sb.run(&args);
            assert_eq!(run.code, 2, "{listen} {args:?}: {}", run.describe());
            let err = run.stderr_text();
            assert!(
                err.contains("without an admin token") && err.contains(listen),
                "{listen} {args:?}: {}",
                run.describe()
            );
        }
    }
    // Loopback in any spelling needs no token.
    for listen in ["127.0.0.2:9477", "[::1]:9477", "[::ffff:127.0.0.1]:9477"] {
        sb.write_config(&config_text(&watch, "").replace("127.0.0.1:0", listen));
        let run = sb.run(&["config", "check", "--config", &cfg]);
        assert_eq!(run.code, 0, "{listen}: {}", run.describe());
    }
}

/// H19: on SIGHUP, the `config_reload_failed` ERROR for a TOML error names the file, line and
/// column but never the offending value (was: the line's text, a secret header included).
#[test]
fn h19_a_reload_error_never_quotes_the_value() {
    const SECRET: &str = "s3cr3t-0dd5-value";
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let watch = file_watch("acme.pets", "pets.json", "1h");
    sb.write_config(&config_text(&watch, ""));
    let mut daemon = Daemon::start(&sb, None);
    daemon.wait_for_log("daemon_started", |_| true);
    sb.write_config(&config_text(
        &format!("{watch}[watch.schema_headers]\nAuthorization = \"Bearer {SECRET}\n"),
        "",
    ));
    daemon.signal("HUP");
    let failed = daemon.wait_for_log("config_reload_failed", |_| true);
    assert_eq!(failed["level"], "ERROR");
    let error = failed["error"].as_str().unwrap_or("");
    assert!(
        error.contains("line ") && error.contains("column"),
        "{failed}"
    );
    assert!(
        !daemon.log_text().contains("s3cr3t"),
        "{}",
        daemon.log_text()
    );
    let (status, _) = daemon.terminate(PATIENCE);
    assert!(status.success());
}

/// H21: SIGHUP with a symlink loop under a `**` include glob (was: the daemon grew 10 MB/s
/// and then ignored SIGTERM) reloads at once with the real files, and SIGTERM right after a
/// reload still exits.
#[test]
fn h21_a_reload_through_a_symlink_loop_ends_and_sigterm_exits() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    std::fs::create_dir_all(sb.path("w/sub")).unwrap();
    std::os::unix::fs::symlink(".", sb.path("w/a")).unwrap();
    std::os::unix::fs::symlink("..", sb.path("w/sub/b")).unwrap();
    sb.write_file(
        "w/sub/more.toml",
        &format!(
            "[[watch]]\nname = \"acme.more\"\nkind = \"openapi\"\npath = \"{}\"\ninterval = \"1h\"\n",
            sb.path("pets.json").display()
        )
        .into_bytes(),
    );
    let watch = file_watch("acme.pets", "pets.json", "1h");
    sb.write_config(&config_text(&watch, ""));
    let mut daemon = Daemon::start(&sb, None);
    daemon.wait_for_log("daemon_started", |_| true);
    sb.write_config(&format!(
        "include = [\"w/**/*.toml\"]\n{}",
        config_text(&watch, "")
    ));
    daemon.signal("HUP");
    daemon.wait_for_log("config_reloaded", |v| v["added"] == 1);
    daemon.signal("HUP");
    let (status, took) = daemon.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(10));
}

/// H23: a reviewer name cannot imitate log fields (was: `reviewer=alice accepted=true`, read
/// by a log parser as two fields): the text log quotes it, the JSON log keeps it one string.
#[test]
fn h23_a_reviewer_name_cannot_forge_log_fields() {
    let forged = "alice accepted=true via=cli";
    for format in ["text", "json"] {
        let sb = Sandbox::new();
        sb.write_file("pets.json", &Pets::v1().bytes());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        sb.write_config(
            &with_admin_token(&config_text(
                &file_watch("acme.pets", "pets.json", "1s"),
                "",
            ))
            .replace("127.0.0.1:0", &format!("127.0.0.1:{port}")),
        );
        let log = std::fs::File::create(sb.path("daemon.log")).unwrap();
        let config = sb.config_arg();
        let mut child = sb
            .command(&["run", "--config", &config, "--log-format", format])
            .env("RUST_LOG", "info")
            .env(ADMIN_VAR, ADMIN_TOKEN)
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let started = Instant::now();
        let wait = |what: &str, ok: &dyn Fn() -> bool| {
            while !ok() {
                assert!(started.elapsed() < PATIENCE, "{what}");
                std::thread::sleep(Duration::from_millis(100));
            }
        };
        wait("registered", &|| {
            probe(addr, "/readyz", Duration::from_secs(5)) == Some(200)
                && std::fs::read_to_string(sb.path("daemon.log"))
                    .unwrap_or_default()
                    .contains("registered")
        });
        sb.write_file("pets.json", &Pets::v3().bytes());
        wait("a pending review", &|| {
            http(addr, "GET", "/v1/pending", None, &[], None)
                .1
                .contains("\"id\"")
        });
        let auth = format!("Bearer {ADMIN_TOKEN}");
        let body = serde_json::json!({"reviewer": forged, "reason": "ok"}).to_string();
        let (status, answer) = http(
            addr,
            "POST",
            "/v1/pending/1/accept",
            None,
            &[("Authorization", &auth)],
            Some(&body),
        );
        assert_eq!(status, 200, "{answer}");
        let _ = child.kill();
        let _ = child.wait();
        let text = std::fs::read_to_string(sb.path("daemon.log")).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains("review_accepted"))
            .unwrap_or_else(|| panic!("no review_accepted line:\n{text}"));
        if format == "text" {
            assert!(
                line.contains(&format!("reviewer={forged:?}")),
                "the reviewer is not quoted: {line}"
            );
        } else {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["reviewer"], forged, "{line}");
            assert_eq!(v["via"], "admin", "{line}");
        }
    }
}

/// `sb`'s daemon (JSON logs) started by `sh -c '<limits>; exec schemawatch run …'`.
fn start_under(sb: &Sandbox, limits: &str) -> Daemon {
    let config = sb.config_arg();
    let cmd = sb.command(&[]);
    let mut sh = std::process::Command::new("sh");
    sh.args(["-c", &format!("{limits} && exec \"$0\" \"$@\"")])
        .arg(bin())
        .args(["run", "--config", &config, "--log-format", "json"])
        .current_dir(sb.dir.path());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    Daemon::start_command(sh, None)
}

/// `args` of the binary run by `sh -c '<limits>; exec schemawatch …'`.
fn run_under(sb: &Sandbox, limits: &str, args: &[&str]) -> Run {
    let cmd = sb.command(&[]);
    let mut sh = std::process::Command::new("sh");
    sh.args(["-c", &format!("{limits} && exec \"$0\" \"$@\"")])
        .arg(bin())
        .args(args)
        .current_dir(sb.dir.path());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    let output = sh.output().unwrap();
    Run {
        args: args.iter().map(|s| s.to_string()).collect(),
        code: output.status.code().expect("exited normally"),
        stdout: output.stdout,
        stderr: output.stderr,
    }
}

/// H24: `max_concurrency = 4` (the default) under `ulimit -n 64` (was: every API connection
/// closed at accept, `config check` ok, no WARN) runs one refresh at a time with a WARN, and
/// the API answers; `config check` says so. Below what one refresh needs it refuses to start.
/// With a soft limit under a higher hard one, the daemon raises its soft limit instead.
#[test]
fn h24_the_descriptor_budget_is_fitted_at_start() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let config = config_text(&file_watch("acme.pets", "pets.json", "1s"), "")
        .replace("max_concurrency = 2", "max_concurrency = 4");
    sb.write_config(&config);
    let cfg = sb.config_arg();

    let check = run_under(&sb, "ulimit -n 64", &["config", "check", "--config", &cfg]);
    assert_eq!(check.code, 0, "{}", check.describe());
    assert!(
        check.stderr_text().contains("warning")
            && check.stderr_text().contains("running 1 refresh"),
        "{}",
        check.describe()
    );

    let mut daemon = start_under(&sb, "ulimit -n 64");
    let warned = daemon.wait_for_log("descriptor_budget", |_| true);
    assert_eq!(warned["level"], "WARN", "{warned}");
    assert_eq!(warned["max_concurrency"], 1, "{warned}");
    assert_eq!(warned["configured_max_concurrency"], 4, "{warned}");
    daemon.wait_for_log("refresh", |v| v["action"] == "registered");
    for _ in 0..3 {
        let (status, body) = daemon.get("/v1/status");
        assert_eq!(status, 200, "{body}\n{}", daemon.log_text());
    }
    let (status, _) = daemon.terminate(PATIENCE);
    assert!(status.success());

    // Not even one refresh beside a few API connections: refused, by both.
    for args in [
        vec!["config", "check", "--config", &cfg],
        vec!["run", "--config", &cfg],
    ] {
        let run = run_under(&sb, "ulimit -n 60", &args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.describe());
        assert!(
            run.stderr_text()
                .contains("RLIMIT_NOFILE 60 leaves no room"),
            "{args:?}: {}",
            run.describe()
        );
    }

    // A low soft limit under a higher hard one is raised: no WARN, four refreshes at once.
    let mut daemon = start_under(&sb, "ulimit -Sn 64 && ulimit -Hn 4096");
    daemon.wait_for_log("descriptor_limit_raised", |v| v["to"] == 4096);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", daemon.child.id())).unwrap();
    let open_files = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert!(
        open_files.split_whitespace().nth(3) == Some("4096"),
        "{open_files}"
    );
    assert_eq!(
        daemon.count_events("descriptor_budget"),
        0,
        "{}",
        daemon.log_text()
    );
    let (status, _) = daemon.terminate(PATIENCE);
    assert!(status.success());
}

/// Waits until acme.pets's failure streak (the `consecutive_failures` gauge) reaches 3.
fn wait_for_a_streak_of_three(daemon: &Daemon) {
    let streak = |metrics: &str| -> i64 {
        metrics
            .lines()
            .find(|l| l.starts_with("schemawatch_watch_consecutive_failures{watch=\"acme.pets\"}"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + PATIENCE;
    while streak(&daemon.get("/metrics").1) < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the failure streak stays below 3: {}",
            daemon.get("/metrics").1
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A daemon refreshing acme.pets from `server` every second, its registry the PostgreSQL
/// `[storage]` lines `storage` name, the password from `passfile` (PGPASSFILE).
fn start_on_postgres(
    sb: &Sandbox,
    server: &DocServer,
    storage: &str,
    passfile: &std::path::Path,
) -> Daemon {
    let watch = format!(
        "[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\nurl = \"{}\"\ninterval = \"1s\"\n\n",
        server.url()
    );
    sb.write_config(&config_text(&watch, "").replace("path = \"registry.sqlite3\"", storage));
    let config = sb.config_arg();
    let mut cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
    cmd.env("PGPASSFILE", passfile);
    Daemon::start_command(cmd, None)
}

fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Issue 33, item 4, on SQLite: the registry refuses writes (its disk is full) under a running
/// daemon. Refreshes fail under class `registry`, `/healthz` answers, `/readyz` says not ready;
/// when space comes back the change is applied and the daemon is ready again, without a
/// restart. (A tmpfs of 2 MiB: needs root, as the reliability suite's C4.)
#[test]
fn a_registry_that_refuses_writes_makes_the_daemon_unready_until_it_recovers() {
    if !is_root() {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    let small = sb.path("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(&small)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        assert!(
            std::env::var_os("SCHEMAWATCH_REQUIRE_PEERS").is_none(),
            "mount failed as root"
        );
        eprintln!("skipped: mount failed");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .status();
        }
    }
    let _unmount = Unmount(small.clone());
    let watch = format!(
        "[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\nurl = \"{}\"\ninterval = \"1s\"\n\n",
        server.url()
    );
    sb.write_config(&config_text(&watch, "").replace(
        "path = \"registry.sqlite3\"",
        "path = \"small/registry.sqlite3\"",
    ));
    let mut daemon = Daemon::start(&sb, None);
    daemon.wait_for_log("refresh", |v| v["action"] == "registered");
    assert_eq!(daemon.get("/readyz").0, 200);

    // Fill the disk, leaving too little for the change below.
    let filler = fill_disk(&small, 96 * 1024);
    server.set_document(incompressible_pets_v2());
    daemon.wait_for_log("registry_failing", |_| true);
    assert_eq!(daemon.get("/readyz").0, 503);
    assert_eq!(daemon.get("/healthz").0, 200);
    let (_, metrics) = daemon.get("/metrics");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("schemawatch_refresh_errors_total")
                && l.contains("class=\"registry\"")
                && !l.ends_with(" 0")),
        "{metrics}"
    );

    // The streak the registry cannot store is counted in memory: the backoff grows.
    wait_for_a_streak_of_three(&daemon);
    assert_eq!(daemon.get("/readyz").0, 503);

    // Space comes back: the change goes through and the daemon is ready, no restart.
    std::fs::remove_file(&filler).unwrap();
    daemon.wait_for_log("registry_recovered", |_| true);
    daemon.wait_for_log("refresh", |v| v["action"] == "applied");
    assert_eq!(daemon.get("/readyz").0, 200);
    let (status, _) = daemon.terminate(PATIENCE);
    assert!(status.success());
}

/// Issue 33, items 4 and 6, on PostgreSQL: the registry's server is stopped (as a crash would)
/// under a running daemon, on a cluster of this test's own. Refreshes fail under class
/// `registry` with their streak kept in memory, `/healthz` answers and `/readyz` says not
/// ready; once the server is back the daemon reconnects, applies the change the source made
/// meanwhile and is ready again, without a restart. The daemon's sessions stay within the
/// cluster's `max_connections`.
#[test]
fn a_postgresql_registry_stopped_under_the_daemon_makes_it_unready_until_it_returns() {
    let Some(cluster) = common::postgres::PrivateCluster::create(12) else {
        return;
    };
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    let storage = format!(
        "url = \"{}\"\nca_file = \"{}\"\npool_size = 4\nconnect_timeout = \"2s\"",
        cluster.url,
        cluster.ca.display()
    );
    let mut daemon = start_on_postgres(&sb, &server, &storage, &cluster.passfile);
    daemon.wait_for_log("refresh", |v| v["action"] == "registered");
    assert_eq!(daemon.get("/readyz").0, 200);

    cluster.stop();
    server.set_document(Pets::v2().bytes());
    daemon.wait_for_log("registry_failing", |_| true);
    assert_eq!(daemon.get("/readyz").0, 503);
    assert_eq!(daemon.get("/healthz").0, 200);
    wait_for_a_streak_of_three(&daemon);
    let (_, metrics) = daemon.get("/metrics");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("schemawatch_refresh_errors_total")
                && l.contains("class=\"registry\"")
                && !l.ends_with(" 0")),
        "{metrics}"
    );
    assert_eq!(daemon.get("/readyz").0, 503);

    cluster.start();
    daemon.wait_for_log("registry_recovered", |_| true);
    daemon.wait_for_log("refresh", |v| v["action"] == "applied");
    assert_eq!(daemon.get("/readyz").0, 200);
    let (status, _) = daemon.terminate(PATIENCE);
    assert!(status.success());
    // No password in anything the daemon wrote.
    let password = std::fs::read_to_string(&cluster.passfile).unwrap();
    let password = password.trim().rsplit(':').next().unwrap();
    assert!(!daemon.log_text().contains(password));
}

/// Issue 33, item 1, on PostgreSQL: "is this still the registry I opened" is the registry id.
/// The database is dropped and created again, empty, under a running daemon: the daemon logs
/// `registry_replaced` (`deleted`), is not ready, and creates nothing in the new database.
#[test]
fn a_postgresql_registry_dropped_under_the_daemon_is_never_recreated() {
    let Some(db) = common::postgres::database() else {
        return;
    };
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    let storage = format!(
        "url = \"{}\"\nca_file = \"{}\"\npool_size = 4",
        db.url(),
        db.cluster.ca.display()
    );
    let mut daemon = start_on_postgres(&sb, &server, &storage, &db.cluster.passfile);
    daemon.wait_for_log("refresh", |v| v["action"] == "registered");
    assert_eq!(daemon.get("/readyz").0, 200);

    let name = &db.name;
    db.cluster.sql(
        "postgres",
        &format!("DROP DATABASE \"{name}\" WITH (FORCE)"),
    );
    db.cluster
        .sql("postgres", &format!("CREATE DATABASE \"{name}\""));
    daemon.wait_for_log("registry_replaced", |v| v["what"] == "deleted");
    assert_eq!(daemon.get("/readyz").0, 503);
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        db.sql("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"),
        "0",
        "nothing created in the new database"
    );
    daemon.terminate(PATIENCE);
}
