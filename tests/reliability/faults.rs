//! The fault catalogue (docs/reliability.md): the real `schemawatch check` binary against a
//! scriptable raw-TCP server on 127.0.0.1 that misbehaves on purpose (network faults A*,
//! hostile documents B*), plus storage faults (C*), lifecycle (D*) and credential checks
//! (E*). Every scenario first registers a good snapshot, then injects its fault, then runs
//! the invariant oracle (tests/reliability/oracle.rs) and, where the fault must not write,
//! asserts that contract state is untouched (I3). The canary is configured as the
//! `Authorization` header of every watch and searched for in the registry files and in every
//! byte the binary printed.
//!
//! Timing assertions are upper bounds with ≥ 2× slack.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::oracle;
use serde_json::Value;

const WATCH: &str = "faults.target";

// ---------------------------------------------------------------------------------------
// A scriptable hostile HTTP server (raw TCP, one thread per connection)
// ---------------------------------------------------------------------------------------

enum Reply {
    /// Write these bytes, then close.
    Raw(Vec<u8>),
    /// Accept, read the request, send nothing for this long.
    Hang(Duration),
    /// Send `head`, then one byte of `body` every `every`, for at most `max`.
    Trickle {
        head: Vec<u8>,
        every: Duration,
        max: Duration,
    },
}

type Handler = Arc<dyn Fn(&str, &str) -> Reply + Send + Sync>;

struct Hostile {
    addr: SocketAddr,
    handler: Arc<Mutex<Handler>>,
    /// The head of every request received (for header assertions).
    requests: Arc<Mutex<Vec<String>>>,
}

fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

fn ok_json(body: &[u8], etag: &str) -> Vec<u8> {
    response(
        "200 OK",
        &[("Content-Type", "application/json"), ("ETag", etag)],
        body,
    )
}

fn read_head(stream: &mut TcpStream) -> String {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut byte = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 64 * 1024 {
        match stream.read(&mut byte) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&byte[..n]),
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn serve_conn(mut stream: TcpStream, handler: Handler, requests: Arc<Mutex<Vec<String>>>) {
    let head = read_head(&mut stream);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    requests.lock().unwrap().push(head.clone());
    match handler(&path, &head) {
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes);
            let _ = stream.flush();
        }
        Reply::Hang(d) => std::thread::sleep(d),
        Reply::Trickle { head, every, max } => {
            let _ = stream.write_all(&head);
            let start = Instant::now();
            while start.elapsed() < max {
                if stream.write_all(b" ").is_err() {
                    break;
                }
                std::thread::sleep(every);
            }
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

impl Hostile {
    fn start(handler: Handler) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let handler = Arc::new(Mutex::new(handler));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (h, r) = (handler.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let handler = h.lock().unwrap().clone();
                let requests = r.clone();
                std::thread::spawn(move || serve_conn(stream, handler, requests));
            }
        });
        Hostile {
            addr,
            handler,
            requests,
        }
    }

    fn serving(body: Vec<u8>) -> Hostile {
        Hostile::start(Arc::new(move |_, _| Reply::Raw(ok_json(&body, "\"v1\""))))
    }

    fn set(&self, handler: impl Fn(&str, &str) -> Reply + Send + Sync + 'static) {
        *self.handler.lock().unwrap() = Arc::new(handler);
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

// ---------------------------------------------------------------------------------------
// One scenario: a sandbox with one registered watch, the oracle after every step
// ---------------------------------------------------------------------------------------

struct Scenario {
    id: &'static str,
    server: Hostile,
    sb: common::Sandbox,
    db: PathBuf,
    expect: oracle::Expect,
}

fn watch_config(kind: &str, url: &str, extra: &str) -> String {
    format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"{WATCH}\"\nkind = \"{kind}\"\nurl = \"{url}\"\ntimeout = \"2s\"\nmax_bytes = 1048576\n{extra}\n[watch.schema_headers]\nAuthorization = \"Bearer ${{{}}}\"\n",
        oracle::TOKEN_VAR
    )
}

fn pets_v1() -> Vec<u8> {
    common::Pets::v1().bytes()
}

impl Scenario {
    /// A registered `openapi` watch on a hostile server that serves the v1 petstore.
    fn new(id: &'static str) -> Scenario {
        Scenario::with(id, "openapi", pets_v1(), "")
    }

    fn with(id: &'static str, kind: &str, good: Vec<u8>, extra: &str) -> Scenario {
        let server = Hostile::serving(good);
        let sb = common::Sandbox::new();
        sb.write_config(&watch_config(kind, &server.url("/doc"), extra));
        let db = sb.path("registry.sqlite3");
        let mut s = Scenario {
            id,
            server,
            sb,
            db,
            expect: oracle::Expect {
                contiguous: true,
                ..Default::default()
            },
        };
        let o = s.check();
        assert_eq!(o["action"], "registered", "{id}: setup: {o}");
        s.facts();
        s
    }

    fn check_run(&self) -> (common::Run, Value) {
        let cfg = self.sb.config_arg();
        let run = self.sb.run(&["check", "--config", &cfg, "--json"]);
        assert!(
            run.code == 0 || run.code == 1,
            "{}: check crashed or failed on usage:\n{}",
            self.id,
            run.describe()
        );
        let v = run.json();
        (run, v)
    }

    /// One check; its single outcome.
    fn check(&self) -> Value {
        let (_, v) = self.check_run();
        common::only_outcome(&v).clone()
    }

    /// The oracle (I1, I2, I4, I5, I6 over the registry and every byte printed so far).
    fn facts(&mut self) -> oracle::Facts {
        self.expect.texts = vec![("CLI transcript".into(), self.sb.transcript())];
        let (facts, violations) = oracle::check(&self.db, &self.expect);
        assert!(
            violations.is_empty(),
            "{}: invariant violations:\n  {}",
            self.id,
            violations.join("\n  ")
        );
        facts
    }

    /// Injects `fault`, checks once, asserts an `error` outcome that wrote nothing; returns
    /// the outcome and the elapsed wall time of the check.
    fn expect_error(
        &mut self,
        fault: impl Fn(&str, &str) -> Reply + Send + Sync + 'static,
    ) -> (Value, Duration) {
        let before = self.facts();
        self.server.set(fault);
        let start = Instant::now();
        let o = self.check();
        let took = start.elapsed();
        assert_eq!(o["action"], "error", "{}: expected an error: {o}", self.id);
        let after = self.facts();
        oracle::assert_untouched(&before, &after, self.id);
        assert_eq!(
            after.watch_status.get(WATCH).map(String::as_str),
            Some("error"),
            "{}",
            self.id
        );
        (o, took)
    }

    /// The watch recovers once the server behaves again (a fault leaves no residue).
    fn recovers(&mut self) {
        let good = pets_v1();
        self.server
            .set(move |_, _| Reply::Raw(ok_json(&good, "\"v1\"")));
        let o = self.check();
        assert_eq!(o["action"], "unchanged", "{}: recovery: {o}", self.id);
        self.facts();
    }
}

fn error_text(o: &Value) -> String {
    o["error"].as_str().unwrap_or("").to_lowercase()
}

// ---------------------------------------------------------------------------------------
// A. Network faults
// ---------------------------------------------------------------------------------------

#[test]
fn a2_headers_never_sent_stops_at_the_deadline() {
    let mut s = Scenario::new("A2");
    let (_, took) = s.expect_error(|_, _| Reply::Hang(Duration::from_secs(15)));
    assert!(
        took < Duration::from_secs(8),
        "A2 took {took:?} (deadline 2s)"
    );
    s.recovers();
}

#[test]
fn a3_slowloris_body_stops_at_the_total_deadline() {
    let mut s = Scenario::new("A3");
    let (_, took) = s.expect_error(|_, _| Reply::Trickle {
        head:
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
                .to_vec(),
        every: Duration::from_millis(200),
        max: Duration::from_secs(15),
    });
    assert!(
        took < Duration::from_secs(8),
        "A3 took {took:?} (deadline 2s)"
    );
    s.recovers();
}

#[test]
fn a4_tls_handshake_stall_stops_at_the_deadline() {
    // A fresh watch on https:// whose server accepts TCP and never answers the ClientHello.
    let server = Hostile::start(Arc::new(|_, _| Reply::Hang(Duration::from_secs(15))));
    let sb = common::Sandbox::new();
    let https = server.url("/doc").replace("http://", "https://");
    sb.write_config(&watch_config("openapi", &https, ""));
    let cfg = sb.config_arg();
    let start = Instant::now();
    let run = sb.run(&["check", "--config", &cfg, "--json"]);
    let took = start.elapsed();
    assert_eq!(common::only_outcome(&run.json())["action"], "error", "A4");
    assert!(took < Duration::from_secs(8), "A4 took {took:?}");
    let expect = oracle::Expect {
        contiguous: true,
        texts: vec![("A4 transcript".into(), sb.transcript())],
        ..Default::default()
    };
    let facts = oracle::assert_invariants(&sb.path("registry.sqlite3"), &expect);
    assert_eq!(facts.head, 0, "A4: a snapshot from a failed handshake");
}

#[test]
fn a5_a6_truncated_bodies_are_never_parsed() {
    let mut s = Scenario::new("A5/A6");
    let doc = common::Pets::v2().bytes();
    // A5: the connection closes mid-body (Content-Length larger than what is sent).
    let d = doc.clone();
    let (o, _) = s.expect_error(move |_, _| {
        let mut r = ok_json(&d, "\"v2\"");
        r.truncate(r.len() - d.len() / 2);
        Reply::Raw(r)
    });
    assert!(!error_text(&o).is_empty());
    // A6: chunked encoding without the terminating chunk. The chunk holds a complete document,
    // so only framing tells that it is incomplete.
    let d = doc.clone();
    s.expect_error(move |_, _| {
        let mut r = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
        r.extend_from_slice(format!("{:x}\r\n", d.len()).as_bytes());
        r.extend_from_slice(&d);
        r.extend_from_slice(b"\r\n");
        Reply::Raw(r)
    });
    s.recovers();
}

#[test]
fn a7_a8_server_errors_and_rate_limits_are_errors_not_drift() {
    let mut s = Scenario::new("A7/A8");
    for status in [
        "500 Internal Server Error",
        "502 Bad Gateway",
        "503 Service Unavailable",
        "504 Gateway Timeout",
    ] {
        s.expect_error(move |_, _| {
            Reply::Raw(response(
                status,
                &[("Content-Type", "application/json")],
                b"{}",
            ))
        });
    }
    for retry_after in ["7", "Wed, 21 Oct 2015 07:28:00 GMT", "garbage", "999999999"] {
        s.expect_error(move |_, _| {
            Reply::Raw(response(
                "429 Too Many Requests",
                &[("Retry-After", retry_after)],
                b"slow down",
            ))
        });
    }
    s.recovers();
}

#[test]
fn a9_a11_redirect_loops_and_foreign_schemes_are_refused() {
    let mut s = Scenario::new("A9/A11");
    s.expect_error(|path, _| Reply::Raw(response("302 Found", &[("Location", path)], b"")));
    for target in [
        "file:///etc/passwd",
        "ftp://127.0.0.1/x",
        "gopher://127.0.0.1/x",
    ] {
        s.expect_error(move |_, _| Reply::Raw(response("302 Found", &[("Location", target)], b"")));
    }
    s.recovers();
}

#[test]
fn a10_e3_cross_origin_redirect_never_carries_the_credential() {
    let mut s = Scenario::new("A10/E3");
    // The sink is another origin (localhost vs 127.0.0.1, another port) serving a changed doc.
    let v2 = common::Pets::v2().bytes();
    let sink = Hostile::serving(v2);
    let target = sink.url("/doc").replace("127.0.0.1", "localhost");
    let before = s.facts();
    s.server
        .set(move |_, _| Reply::Raw(response("302 Found", &[("Location", target.as_str())], b"")));
    let o = s.check();
    let after = s.facts();
    for head in sink.requests() {
        assert!(
            oracle::find_canary(head.as_bytes()).is_none(),
            "A10: the credential was sent cross-origin:\n{head}"
        );
        assert!(
            !head.to_lowercase().contains("\nreferer:"),
            "A10: Referer sent cross-origin:\n{head}"
        );
    }
    // Either refused (error, untouched) or followed without the credential.
    if o["action"] == "error" {
        oracle::assert_untouched(&before, &after, "A10");
    }
    eprintln!(
        "A10: outcome {o}, {} request(s) at the sink",
        sink.requests().len()
    );
}

#[test]
fn a13_compression_bomb_is_capped_on_decoded_bytes() {
    let mut s = Scenario::new("A13");
    let bomb = gzip_zeros(16 * 1024 * 1024);
    assert!(bomb.len() < 200 * 1024, "the bomb is small on the wire");
    let (o, _) = s.expect_error(move |_, _| {
        Reply::Raw(response(
            "200 OK",
            &[
                ("Content-Type", "application/json"),
                ("Content-Encoding", "gzip"),
            ],
            &bomb,
        ))
    });
    eprintln!("A13: {o}");
    s.recovers();
}

#[test]
fn a14_oversized_bodies_are_rejected() {
    let mut s = Scenario::new("A14");
    // Announced 10 GB: rejected before reading.
    s.expect_error(|_, _| {
        Reply::Raw(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\nConnection: close\r\n\r\n{\"openapi\":"
                .to_vec(),
        )
    });
    // 2 MiB of valid JSON with no length (close-delimited), over the 1 MiB cap.
    s.expect_error(|_, _| {
        let mut r =
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n["
                .to_vec();
        r.extend(std::iter::repeat_n(b'1', 2 * 1024 * 1024));
        r.push(b']');
        Reply::Raw(r)
    });
    s.recovers();
}

#[test]
fn a15_a16_wrong_or_implausible_content_writes_no_snapshot() {
    let mut s = Scenario::new("A15/A16");
    // A15: an HTML login page with 200.
    s.expect_error(|_, _| {
        Reply::Raw(response(
            "200 OK",
            &[("Content-Type", "text/html")],
            b"<!doctype html><html><body><form action=/login>Sign in</form></body></html>",
        ))
    });
    // A15: the right document as text/plain is parsed by the watch's declared format.
    let v1 = pets_v1();
    s.server
        .set(move |_, _| Reply::Raw(response("200 OK", &[("Content-Type", "text/plain")], &v1)));
    assert_eq!(s.check()["action"], "unchanged", "A15: text/plain");
    s.facts();
    // A16: `{}` and an empty body.
    s.expect_error(|_, _| Reply::Raw(ok_json(b"{}", "\"empty\"")));
    s.expect_error(|_, _| Reply::Raw(ok_json(b"", "\"nothing\"")));
    // A16: a valid document without any path is a breaking change: reviewed, never applied.
    let before = s.facts();
    let empty = br#"{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{}}"#.to_vec();
    s.server
        .set(move |_, _| Reply::Raw(ok_json(&empty, "\"no-paths\"")));
    let o = s.check();
    assert_eq!(o["action"], "pending_review", "A16: {o}");
    let after = s.facts();
    assert_eq!(
        before.tools, after.tools,
        "A16: an empty contract was applied"
    );
    assert_eq!(after.open_reviews(), 1);
}

#[test]
fn a17_a18_a21_validators() {
    // Registration without validators: a later 304 is unsolicited.
    let v1 = pets_v1();
    let server = Hostile::start(Arc::new(move |_, _| {
        Reply::Raw(response(
            "200 OK",
            &[("Content-Type", "application/json")],
            &v1,
        ))
    }));
    let sb = common::Sandbox::new();
    sb.write_config(&watch_config("openapi", &server.url("/doc"), ""));
    let mut s = Scenario {
        id: "A17",
        server,
        db: sb.path("registry.sqlite3"),
        sb,
        expect: oracle::Expect {
            contiguous: true,
            ..Default::default()
        },
    };
    assert_eq!(s.check()["action"], "registered");
    s.expect_error(|_, _| Reply::Raw(response("304 Not Modified", &[], b"")));

    // A18/A21: a weak ETag is sent back verbatim; the 304 that answers it is `unchanged`.
    let mut s = Scenario::new("A18/A21");
    let v1 = pets_v1();
    s.server.set(move |_, head| {
        if head.contains("If-None-Match: W/\"weak-1\"")
            || head.contains("if-none-match: W/\"weak-1\"")
        {
            Reply::Raw(response(
                "304 Not Modified",
                &[("ETag", "W/\"weak-1\"")],
                b"",
            ))
        } else {
            Reply::Raw(ok_json(&v1, "W/\"weak-1\""))
        }
    });
    let before = s.facts();
    for _ in 0..3 {
        assert_eq!(s.check()["action"], "unchanged");
    }
    let after = s.facts();
    oracle::assert_untouched(&before, &after, "A18");
    let last = s.server.requests().pop().unwrap_or_default().to_lowercase();
    assert!(last.contains("if-none-match: w/\"weak-1\""), "A21: {last}");
}

#[test]
fn a19_a20_content_hash_wins_over_validators() {
    let mut s = Scenario::new("A19/A20");
    let before = s.facts();
    // A19: a new ETag every request, same content: never a new version.
    let counter = Arc::new(Mutex::new(0u32));
    let v1 = pets_v1();
    s.server.set(move |_, _| {
        let mut n = counter.lock().unwrap();
        *n += 1;
        Reply::Raw(ok_json(&v1, &format!("\"node-{n}\"")))
    });
    for _ in 0..5 {
        assert_eq!(s.check()["action"], "unchanged", "A19");
    }
    oracle::assert_untouched(&before, &s.facts(), "A19");
    // A20: same ETag, different content on a 200: the content wins.
    let v2 = common::Pets::v2().bytes();
    s.server.set(move |_, _| Reply::Raw(ok_json(&v2, "\"v1\"")));
    let o = s.check();
    assert_eq!(o["action"], "applied", "A20: {o}");
    let f = s.facts();
    assert_eq!(f.head, before.head + 1);
}

#[test]
fn a24_proxy_environment_is_not_used() {
    let mut s = Scenario::new("A24");
    let sink = Hostile::serving(b"{}".to_vec());
    let proxy = format!("http://{}", sink.addr);
    let cfg = s.sb.config_arg();
    let out =
        s.sb.command(&["check", "--config", &cfg, "--json"])
            .env("HTTP_PROXY", &proxy)
            .env("http_proxy", &proxy)
            .env("ALL_PROXY", &proxy)
            .output()
            .expect("run");
    s.expect.texts.push((
        "A24 output".into(),
        [out.stdout.as_slice(), out.stderr.as_slice()].concat(),
    ));
    assert_eq!(out.status.code(), Some(0), "A24: {out:?}");
    assert!(
        sink.requests().is_empty(),
        "A24: a proxy from the environment was used: {:?}",
        sink.requests()
    );
    let (_, violations) = oracle::check(&s.db, &s.expect);
    assert!(violations.is_empty(), "{violations:?}");
}

// ---------------------------------------------------------------------------------------
// B. Hostile documents (served over HTTP to the real binary)
// ---------------------------------------------------------------------------------------

fn serve_bytes(bytes: Vec<u8>) -> impl Fn(&str, &str) -> Reply + Send + Sync + 'static {
    move |_, _| Reply::Raw(ok_json(&bytes, "\"hostile\""))
}

#[test]
fn b1_b5_b7_b8_malformed_json_is_rejected() {
    let mut s = Scenario::new("B1-B8");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("B1 100k-deep array", "[".repeat(100_000).into_bytes()),
        ("B1 100k-deep object", "{\"a\":".repeat(100_000).into_bytes()),
        (
            "B5 duplicate keys",
            br#"{"openapi":"3.0.3","openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{}}"#
                .to_vec(),
        ),
        ("B7 invalid UTF-8", {
            let mut d = pets_v1();
            let i = d.iter().position(|&b| b == b'A').unwrap_or(0);
            d[i] = 0xff;
            d
        }),
        (
            "B7 lone surrogate",
            br#"{"openapi":"3.0.3","info":{"title":"\ud800","version":"1"},"paths":{}}"#.to_vec(),
        ),
        ("B8 NaN", br#"{"openapi":"3.0.3","x":NaN}"#.to_vec()),
        ("B8 comment", b"// c\n{\"openapi\":\"3.0.3\"}".to_vec()),
        ("B8 trailing comma", br#"{"openapi":"3.0.3",}"#.to_vec()),
        ("B6 1e400", br#"{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{},"x-n":1e400}"#.to_vec()),
    ];
    for (what, bytes) in cases {
        s.id = "B1-B8";
        let before = s.facts();
        s.server.set(serve_bytes(bytes));
        let o = s.check();
        let after = s.facts();
        assert_ne!(o["action"], "applied", "{what}: {o}");
        assert_ne!(o["action"], "registered", "{what}: {o}");
        if o["action"] == "error" {
            oracle::assert_untouched(&before, &after, what);
        } else {
            // Accepted (e.g. an extension carrying 1e400): must not change the contract.
            assert_eq!(before.tools, after.tools, "{what}: {o}");
            eprintln!("{what}: accepted as {o}");
        }
    }
    s.recovers();
}

#[test]
fn b3_yaml_alias_bomb_is_rejected_quickly() {
    let mut s = Scenario::new("B3");
    let mut bomb = String::from("openapi: 3.0.3\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (i, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
        .iter()
        .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
    {
        bomb.push_str(&format!(
            "{i}: &{i} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
    }
    bomb.push_str("info: {title: x, version: '1'}\npaths: {}\n");
    // The guard is a count (events replayed through aliases), not a clock: the refusal must
    // name it, whatever the machine's load (wall time is reported, never asserted).
    let (o, took) = s.expect_error(serve_bytes(bomb.into_bytes()));
    assert!(
        o.to_string().contains("alias replay limit exceeded"),
        "B3: the error must name the alias budget: {o}"
    );
    eprintln!("B3 refused in {took:?}");
    s.recovers();
}

#[test]
fn b6_huge_numbers_fingerprint_idempotently() {
    let mut s = Scenario::new("B6");
    let mut doc = common::Pets::v1().json();
    doc["paths"]["/pets"]["get"]["parameters"][0]["schema"]["maximum"] =
        serde_json::from_str("123456789012345678901234567890").expect("number");
    let bytes = serde_json::to_vec(&doc).expect("json");
    s.server.set(serve_bytes(bytes));
    let o = s.check();
    assert_ne!(o["action"], "error", "B6: {o}");
    let h = s.facts().head;
    for _ in 0..3 {
        assert_eq!(s.check()["action"], "unchanged", "B6: flapping fingerprint");
    }
    assert_eq!(s.facts().head, h);
}

#[test]
fn b9_b10_ref_cycles_terminate_and_external_refs_are_never_fetched() {
    let mut s = Scenario::new("B9/B10");
    let sink = Hostile::serving(b"{}".to_vec());
    let mut doc = common::Pets::v1().json();
    doc["components"]["schemas"]["Pet"]["properties"]["parent"] =
        serde_json::json!({"$ref": "#/components/schemas/Pet"});
    doc["components"]["schemas"]["Pet"]["properties"]["remote"] =
        serde_json::json!({"$ref": sink.url("/x.json")});
    doc["components"]["schemas"]["Pet"]["properties"]["local"] =
        serde_json::json!({"$ref": "file:///etc/passwd"});
    doc["components"]["schemas"]["Pet"]["properties"]["meta"] =
        serde_json::json!({"$ref": "http://169.254.169.254/latest/meta-data/"});
    let bytes = serde_json::to_vec(&doc).expect("json");
    s.server.set(serve_bytes(bytes));
    let start = Instant::now();
    let o = s.check();
    assert!(start.elapsed() < Duration::from_secs(10));
    s.facts();
    assert!(
        sink.requests().is_empty(),
        "B10: an external $ref was fetched"
    );
    eprintln!("B9/B10: {o}");
}

#[test]
fn b11_xml_bombs_and_xxe_are_rejected() {
    let good = common::corpus::read("odata/odatademo/v4.xml");
    let mut s = Scenario::with("B11", "odata", good, "");
    let bomb = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0"><edmx:DataServices><Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="&lol3;"/></edmx:DataServices></edmx:Edmx>"#;
    let xxe = r#"<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0"><edmx:DataServices><Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="&xxe;"/></edmx:DataServices></edmx:Edmx>"#;
    for doc in [bomb, xxe, "<not-edmx/>", "<edmx:Edmx"] {
        let bytes = doc.as_bytes().to_vec();
        s.expect_error(move |_, _| {
            Reply::Raw(response(
                "200 OK",
                &[("Content-Type", "application/xml")],
                &bytes,
            ))
        });
    }
}

#[test]
fn b17_terminal_escapes_never_reach_the_terminal() {
    let mut s = Scenario::new("B17");
    let mut doc = common::Pets::v1().json();
    doc["paths"]["/pets"]["get"]["description"] = Value::from(
        "evil \u{1b}[2J\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{7}\r\nINFO forged log line",
    );
    doc["paths"]["/pets"]["get"]["parameters"][0]["required"] = Value::from(true);
    let bytes = serde_json::to_vec(&doc).expect("json");
    s.server.set(serve_bytes(bytes));
    let cfg = s.sb.config_arg();
    let run = s.sb.run(&["check", "--config", &cfg]);
    let review = s.facts().reviews.first().map(|r| r.id);
    let mut printed = [run.stdout.clone(), run.stderr.clone()].concat();
    if let Some(id) = review {
        let shown =
            s.sb.run(&["pending", "show", &id.to_string(), "--config", &cfg]);
        printed.extend_from_slice(&shown.stdout);
    }
    // (The log lines' own colours are ANSI sequences too; only the injected ones count.)
    for injected in [&b"\x1b[2J"[..], b"\x1b]8;;", b"\x07", b"\r\nINFO forged"] {
        assert!(
            !printed.windows(injected.len()).any(|w| w == injected),
            "B17: injected control sequence {injected:?} printed raw:\n{}",
            String::from_utf8_lossy(&printed).escape_debug()
        );
    }
}

// ---------------------------------------------------------------------------------------
// C. Storage faults
// ---------------------------------------------------------------------------------------

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

fn sh(cmd: &str, args: &[&str]) -> Result<Output, String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "{cmd} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Unmounts on drop.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn c4_disk_full_is_an_error_then_recovers() {
    if !is_root() {
        eprintln!("C4 skipped: mounting a tmpfs needs root");
        return;
    }
    let server = Hostile::serving(pets_v1());
    let sb = common::Sandbox::new();
    let dir = sb.path("small");
    std::fs::create_dir(&dir).expect("mkdir");
    let d = dir.to_string_lossy().into_owned();
    if let Err(e) = sh("mount", &["-t", "tmpfs", "-o", "size=2m", "tmpfs", &d]) {
        assert!(!oracle::peers_required(), "C4: mount failed as root: {e}");
        eprintln!("C4 skipped: {e}");
        return;
    }
    let _mount = Mount(dir.clone());
    let db = dir.join("registry.sqlite3");
    sb.write_config(&watch_config("openapi", &server.url("/doc"), "").replace(
        "path = \"registry.sqlite3\"",
        "path = \"small/registry.sqlite3\"",
    ));
    let mut s = Scenario {
        id: "C4",
        server,
        sb,
        db,
        expect: oracle::Expect {
            contiguous: true,
            ..Default::default()
        },
    };
    assert_eq!(s.check()["action"], "registered");
    let before = s.facts();
    // Fill the disk, then serve a big compatible change.
    // Leave 96 KiB: enough to open the registry, not enough for the write below.
    let filler = common::fill_disk(&dir, 96 * 1024);
    let big = common::incompressible_pets_v2();
    s.server.set(serve_bytes(big));
    let cfg = s.sb.config_arg();
    let run = s.sb.run(&["check", "--config", &cfg, "--json"]);
    assert!(
        run.code == 1 || run.code == 2,
        "C4: a full disk is not an error:\n{}",
        run.describe()
    );
    eprintln!(
        "C4: disk full -> exit {}: {}",
        run.code,
        run.stdout_text() + &run.stderr_text()
    );
    let after = s.facts();
    oracle::assert_untouched(&before, &after, "C4");
    // Space comes back: the write goes through, no manual repair.
    std::fs::remove_file(&filler).expect("rm filler");
    let o = s.check();
    assert_eq!(o["action"], "applied", "C4 recovery: {o}");
    s.facts();
}

#[test]
fn c5_locked_registry_waits_and_reads_keep_working() {
    let mut s = Scenario::new("C5");
    let db = s.db.clone();
    let locker = rusqlite::Connection::open(&db).expect("open");
    locker
        .execute_batch("BEGIN IMMEDIATE; UPDATE registry_head SET registry_version = registry_version WHERE id = 1;")
        .expect("lock");
    // Reads are served while a writer holds the lock (WAL).
    let cfg = s.sb.config_arg();
    let start = Instant::now();
    s.sb.run(&["status", "--config", &cfg, "--json"])
        .assert_code(0);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "C5: status blocked"
    );
    // A write waits for the lock (busy_timeout), then commits.
    s.server.set(serve_bytes(common::Pets::v2().bytes()));
    let unlock = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        locker.execute_batch("COMMIT").expect("unlock");
    });
    let o = s.check();
    unlock.join().expect("unlock thread");
    assert_eq!(o["action"], "applied", "C5: {o}");
    s.facts();
}

#[test]
fn c6_corrupt_page_is_refused_and_kept() {
    let mut s = Scenario::new("C6");
    s.facts();
    let len = std::fs::metadata(&s.db).expect("db").len();
    assert!(len >= 3 * 4096, "C6: registry is only {len} bytes");
    {
        use std::io::{Seek, SeekFrom};
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&s.db)
            .expect("open db");
        // Scribble over every b-tree page header after the first.
        for page in 1..(len / 4096) {
            f.seek(SeekFrom::Start(page * 4096)).expect("seek");
            f.write_all(&[0xA5; 64]).expect("scribble");
        }
    }
    let cfg = s.sb.config_arg();
    let run = s.sb.run(&["check", "--config", &cfg, "--json"]);
    assert_ne!(
        run.code,
        0,
        "C6: a corrupt registry was used:\n{}",
        run.describe()
    );
    let text = run.stderr_text().to_lowercase();
    assert!(
        text.contains("integrity") || text.contains("malformed") || text.contains("corrupt"),
        "C6: the error is not actionable:\n{}",
        run.describe()
    );
    assert!(s.db.exists(), "C6: the corrupt file was removed");
    assert_eq!(std::fs::metadata(&s.db).expect("db").len(), len);
}

#[test]
fn c7_corrupt_row_fails_closed() {
    let s = Scenario::new("C7");
    {
        let conn = rusqlite::Connection::open(&s.db).expect("open");
        conn.execute("UPDATE tools SET spec_json = '{\"truncated\":' ", [])
            .expect("corrupt row");
    }
    s.server.set(serve_bytes(common::Pets::v2().bytes()));
    let cfg = s.sb.config_arg();
    let run = s.sb.run(&["check", "--config", &cfg, "--json"]);
    assert_ne!(
        run.code,
        0,
        "C7: compared against a corrupt baseline:\n{}",
        run.describe()
    );
    let conn = rusqlite::Connection::open(&s.db).expect("open");
    let head: i64 = conn
        .query_row("SELECT registry_version FROM registry_head", [], |r| {
            r.get(0)
        })
        .expect("head");
    assert_eq!(head, 1, "C7: a version was written over a corrupt baseline");
    let open: i64 = conn
        .query_row("SELECT count(*) FROM reviews", [], |r| r.get(0))
        .expect("reviews");
    assert_eq!(
        open, 0,
        "C7: a review was queued against a corrupt baseline"
    );
}

#[test]
fn c10_read_only_directory_is_refused_clearly() {
    if !is_root() {
        eprintln!("C10 skipped: a read-only bind mount needs root");
        return;
    }
    let mut s = Scenario::new("C10");
    let before = s.facts();
    let d = s.sb.dir.path().to_string_lossy().into_owned();
    if let Err(e) = sh("mount", &["--bind", &d, &d]) {
        assert!(
            !oracle::peers_required(),
            "C10: bind mount failed as root: {e}"
        );
        eprintln!("C10 skipped: {e}");
        return;
    }
    let mount = Mount(PathBuf::from(&d));
    sh("mount", &["-o", "remount,bind,ro", &d, &d]).expect("remount read-only");
    s.server.set(serve_bytes(common::Pets::v2().bytes()));
    let cfg = s.sb.config_arg();
    let run = s.sb.run(&["check", "--config", &cfg, "--json"]);
    assert_ne!(
        run.code,
        0,
        "C10: wrote to a read-only directory?\n{}",
        run.describe()
    );
    assert!(
        run.stderr_text().contains("cannot open registry"),
        "C10: the error does not name the registry:\n{}",
        run.describe()
    );
    drop(mount);
    let after = s.facts();
    oracle::assert_untouched(&before, &after, "C10");
    assert_eq!(s.check()["action"], "applied", "C10 recovery");
    s.facts();
}

// ---------------------------------------------------------------------------------------
// D. Lifecycle
// ---------------------------------------------------------------------------------------

#[test]
fn d1_sigterm_mid_fetch_exits_cleanly() {
    let mut s = Scenario::new("D1");
    let before = s.facts();
    s.server.set(|_, _| Reply::Trickle {
        head:
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
                .to_vec(),
        every: Duration::from_millis(100),
        max: Duration::from_secs(20),
    });
    let text = watch_config("openapi", &s.server.url("/doc"), "interval = \"1s\"")
        .replace("timeout = \"2s\"", "timeout = \"30s\"")
        .replace(
            "\n[[watch]]",
            "\n[daemon]\ndrain_timeout = \"2s\"\n\n[server]\nlisten = \"127.0.0.1:0\"\n\n[[watch]]",
        );
    s.sb.write_config(&text);
    let cfg = s.sb.config_arg();
    let child =
        s.sb.command(&["run", "--config", &cfg])
            .spawn()
            .expect("spawn run");
    // Wait until the daemon is mid-fetch.
    let deadline = Instant::now() + Duration::from_secs(30);
    let n0 = s.server.requests().len();
    while s.server.requests().len() == n0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    sh("kill", &["-TERM", &child.id().to_string()]).expect("kill -TERM");
    let out = child.wait_with_output().expect("wait");
    let took = start.elapsed();
    s.expect.texts.push((
        "D1 daemon output".into(),
        [out.stdout.as_slice(), out.stderr.as_slice()].concat(),
    ));
    assert_eq!(
        out.status.code(),
        Some(0),
        "D1: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took < Duration::from_secs(10),
        "D1: SIGTERM to exit took {took:?}"
    );
    let (after, violations) = oracle::check(&s.db, &s.expect);
    assert!(violations.is_empty(), "D1: {violations:?}");
    oracle::assert_untouched(&before, &after, "D1");
    eprintln!("D1: SIGTERM to exit {took:?}");
}

#[test]
fn d6_wall_clock_jumps_do_not_reorder_the_registry() {
    let Some(lib) = common::peers::need(
        common::peers::faketime_lib(),
        "Debian libfaketime (apt-get install libfaketime)",
    ) else {
        return;
    };
    let mut s = Scenario::new("D6");
    let cfg = s.sb.config_arg();
    let mut heads = vec![s.facts().head];
    for (offset, doc) in [("+3d", common::Pets::v2()), ("-3d", common::Pets::v1())] {
        s.server.set(serve_bytes(doc.bytes()));
        let out =
            s.sb.command(&["check", "--config", &cfg, "--json"])
                .env("LD_PRELOAD", &lib)
                .env("FAKETIME", offset)
                .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
                .output()
                .expect("run under libfaketime");
        s.expect.texts.push((
            format!("D6 {offset}"),
            [out.stdout.as_slice(), out.stderr.as_slice()].concat(),
        ));
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "D6 {offset}: {out:?}"
        );
        let (facts, violations) = oracle::check(&s.db, &s.expect);
        assert!(violations.is_empty(), "D6: {violations:?}");
        heads.push(facts.head);
    }
    let last = s.sb.history(WATCH);
    assert!(
        heads.windows(2).all(|w| w[0] <= w[1]),
        "D6: heads {heads:?}"
    );
    assert!(heads[1] > heads[0], "D6: the +3d apply did not commit");
    eprintln!("D6: heads {heads:?}, history {}", Value::from(last));
}

#[test]
fn d_restart_with_a_pending_review_never_duplicates_it() {
    let mut s = Scenario::new("D-restart");
    s.server.set(serve_bytes(common::Pets::v3().bytes()));
    assert_eq!(s.check()["action"], "pending_review");
    for _ in 0..3 {
        let o = s.check();
        assert_eq!(o["action"], "pending_review", "{o}");
    }
    let f = s.facts();
    assert_eq!(f.reviews.len(), 1, "D-restart: {f:?}");
    assert_eq!(s.sb.pending_list().len(), 1);
}

// ---------------------------------------------------------------------------------------
// E. Security
// ---------------------------------------------------------------------------------------

#[test]
fn e6_caller_supplied_validators_never_reach_the_server() {
    let server = Hostile::serving(pets_v1());
    let sb = common::Sandbox::new();
    let text = format!(
        "{}If-None-Match = \"${{{}}}\"\n",
        watch_config("openapi", &server.url("/doc"), ""),
        oracle::TOKEN_VAR
    );
    sb.write_config(&text);
    let cfg = sb.config_arg();
    let run = sb.run(&["check", "--config", &cfg, "--json"]);
    for head in server.requests() {
        for line in head.lines() {
            let lower = line.to_ascii_lowercase();
            if lower.starts_with("if-none-match:") {
                assert!(
                    oracle::find_canary(line.as_bytes()).is_none(),
                    "E6: a caller-supplied If-None-Match was sent: {head}"
                );
            }
            if oracle::find_canary(line.as_bytes()).is_some() {
                assert!(
                    lower.starts_with("authorization:"),
                    "E6: the credential left in another header: {line}"
                );
            }
        }
    }
    let db = sb.path("registry.sqlite3");
    let expect = oracle::Expect {
        texts: vec![("E6 transcript".into(), sb.transcript())],
        ..Default::default()
    };
    if db.exists() {
        let (_, violations) = oracle::check(&db, &expect);
        assert!(violations.is_empty(), "E6: {violations:?}");
    } else {
        assert!(oracle::find_canary(&sb.transcript()).is_none());
    }
    eprintln!("E6: exit {}", run.code);
}

#[test]
fn e1_canary_in_every_output_form_with_trace_logs() {
    let mut s = Scenario::new("E1");
    let cfg = s.sb.config_arg();
    // Drive every read command and one review cycle with trace logging.
    s.server.set(serve_bytes(common::Pets::v3().bytes()));
    let out =
        s.sb.command(&["check", "--config", &cfg, "--json"])
            .env("RUST_LOG", "trace")
            .output()
            .expect("run");
    s.expect.texts.push((
        "trace-level check".into(),
        [out.stdout.as_slice(), out.stderr.as_slice()].concat(),
    ));
    s.sb.status();
    s.sb.history(WATCH);
    let pending = s.sb.pending_list();
    if let Some(id) = pending.first().and_then(|p| p["id"].as_i64()) {
        s.sb.pending_show(id);
    }
    let facts = s.facts();
    assert_eq!(facts.open_reviews(), 1);
    // Every sandbox file, config included, is free of the value (it holds `${VAR}` only).
    for (path, bytes) in s.sb.all_files() {
        assert!(
            oracle::find_canary(&bytes).is_none(),
            "E1: canary in {}",
            path.display()
        );
    }
}

// ---------------------------------------------------------------------------------------
// A tiny gzip encoder for the bomb: fixed-Huffman deflate of one literal zero followed by
// back-references of length 258 at distance 1 (13 bits per 258 bytes).
// ---------------------------------------------------------------------------------------

struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u64, count: u32) {
        self.acc |= value << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// Huffman codes go most significant bit first.
    fn code(&mut self, code: u64, len: u32) {
        let mut rev = 0u64;
        for i in 0..len {
            rev |= ((code >> i) & 1) << (len - 1 - i);
        }
        self.put(rev, len);
    }
}

fn crc32(data_len: usize) -> u32 {
    let mut table = [0u32; 256];
    for (i, t) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *t = c;
    }
    let mut crc = 0xFFFF_FFFFu32;
    for _ in 0..data_len {
        crc = table[(crc as u8) as usize] ^ (crc >> 8);
    }
    !crc
}

fn gzip_zeros(len: usize) -> Vec<u8> {
    let mut b = Bits {
        out: vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255],
        acc: 0,
        n: 0,
    };
    b.put(1, 1); // BFINAL
    b.put(1, 2); // BTYPE = fixed Huffman
    b.code(0x30, 8); // literal 0
    let mut left = len - 1;
    while left >= 258 {
        b.code(0xC5, 8); // length code 285 = 258
        b.code(0, 5); // distance code 0 = 1
        left -= 258;
    }
    for _ in 0..left {
        b.code(0x30, 8);
    }
    b.code(0, 7); // end of block (256)
    if b.n > 0 {
        b.out.push(b.acc as u8);
    }
    let mut out = b.out;
    out.extend_from_slice(&crc32(len).to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out
}

#[test]
fn gzip_bomb_encoder_is_valid() {
    // The fetcher decodes a small one completely (so the bomb is a real gzip stream).
    let small = gzip_zeros(1000);
    let mut s = Scenario::new("gzip");
    s.server.set(move |_, _| {
        Reply::Raw(response(
            "200 OK",
            &[
                ("Content-Type", "application/json"),
                ("Content-Encoding", "gzip"),
            ],
            &small,
        ))
    });
    // 1000 NUL bytes are not JSON: a parse error, not a decoding error.
    let o = s.check();
    assert_eq!(o["action"], "error");
    let e = error_text(&o);
    assert!(
        !e.contains("gzip") && !e.contains("decod"),
        "encoder invalid: {e}"
    );
    s.facts();
}
