//! Fetch behaviour against real in-process servers on 127.0.0.1 (axum, or raw TCP where
//! the framing itself must misbehave). No mocks, no external network.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::Path as AxumPath;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use schemawatch::fetch::{
    expand_header_value, fetch, FetchError, FetchOutcome, FetchRequest, HeaderProblem, SecretError,
    Source, Validators,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const CANARY: &str = "canary-7f3a9c1e-do-not-leak";
const UNSET_VAR: &str = "SCHEMAWATCH_TEST_FETCH_SURELY_UNSET";
const MIB: usize = 1024 * 1024;

/// A `${file:...}` reference to a secret file holding `value`, written once per process. The
/// tests share one process, so secrets come from files rather than from variables set in the
/// test process (`${VAR}` expansion is exercised through the binary with `Command::env`).
fn secret_ref(name: &str, value: &str) -> String {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("fetch-secrets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("secret folder");
        dir
    });
    let path = dir.join(name);
    if !path.exists() {
        let partial = dir.join(format!("{name}.{:?}", std::thread::current().id()));
        std::fs::write(&partial, value).unwrap();
        std::fs::rename(&partial, &path).unwrap();
    }
    format!("${{file:{}}}", path.display())
}

/// A reference that expands to the canary.
fn canary_ref() -> String {
    secret_ref("canary", CANARY)
}

/// A reference that expands to a value with a CR LF in it (header injection).
fn newline_ref() -> String {
    secret_ref("newline", &format!("{CANARY}\r\nX-Injected: 1"))
}

type Seen = Arc<Mutex<Vec<HeaderMap>>>;

fn seen() -> Seen {
    Arc::new(Mutex::new(Vec::new()))
}

fn record(seen: &Seen, headers: &HeaderMap) {
    seen.lock().unwrap().push(headers.clone());
}

fn last_seen(seen: &Seen) -> HeaderMap {
    seen.lock()
        .unwrap()
        .last()
        .cloned()
        .expect("server saw a request")
}

async fn spawn(router: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    addr
}

/// A raw HTTP/1.1 server: reads one request head per connection, then hands the socket
/// to `respond`, which writes whatever bytes (and framing errors) the test needs.
async fn spawn_raw<F, Fut>(respond: F) -> SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let respond = Arc::new(respond);
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let respond = respond.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                respond(stream).await;
            });
        }
    });
    addr
}

fn url(addr: SocketAddr, path: &str) -> url::Url {
    url::Url::parse(&format!("http://{addr}{path}")).unwrap()
}

fn request(source: Source) -> FetchRequest {
    let mut request = FetchRequest::new(source);
    request.timeout = Duration::from_secs(10);
    request.connect_timeout = Duration::from_secs(5);
    request
}

fn http_request(addr: SocketAddr, path: &str) -> FetchRequest {
    request(Source::Url(url(addr, path)))
}

fn with_headers(mut request: FetchRequest, headers: &[(&str, &str)]) -> FetchRequest {
    request.headers = headers
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect::<BTreeMap<_, _>>();
    request
}

fn body_of(outcome: FetchOutcome) -> (Vec<u8>, Validators, Option<String>) {
    match outcome {
        FetchOutcome::Body {
            bytes,
            validators,
            final_url,
        } => (bytes, validators, final_url),
        FetchOutcome::NotModified => panic!("expected a body, got NotModified"),
    }
}

/// Display and Debug of an error must not contain the canary.
fn assert_no_canary(error: &FetchError) {
    let text = format!("{error} | {error:?}");
    assert!(!text.contains(CANARY), "secret leaked: {text}");
}

fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|value| value.to_str().unwrap().to_owned())
}

// ---------------------------------------------------------------- conditional GET

#[tokio::test]
async fn etag_flow_returns_validators_then_not_modified() {
    let seen = seen();
    let recorder = seen.clone();
    let app = Router::new().route(
        "/schema",
        get(move |headers: HeaderMap| {
            let recorder = recorder.clone();
            async move {
                record(&recorder, &headers);
                if header_str(&headers, "if-none-match").as_deref() == Some("\"v1\"") {
                    return StatusCode::NOT_MODIFIED.into_response();
                }
                ([(header::ETAG, "\"v1\"")], "{\"openapi\":\"3.1.0\"}").into_response()
            }
        }),
    );
    let addr = spawn(app).await;

    let first = fetch(&http_request(addr, "/schema")).await.unwrap();
    let (bytes, validators, final_url) = body_of(first);
    assert_eq!(bytes, b"{\"openapi\":\"3.1.0\"}");
    assert_eq!(validators.etag.as_deref(), Some("\"v1\""));
    assert_eq!(validators.last_modified, None);
    assert_eq!(final_url, Some(format!("http://{addr}/schema")));
    let first_headers = last_seen(&seen);
    assert!(first_headers.get("if-none-match").is_none());
    assert_eq!(
        header_str(&first_headers, "accept").as_deref(),
        Some("application/json, application/yaml;q=0.9, */*;q=0.5")
    );
    assert_eq!(
        header_str(&first_headers, "user-agent"),
        Some(format!("schemawatch/{}", env!("CARGO_PKG_VERSION")))
    );

    let mut second = http_request(addr, "/schema");
    second.validators = Some(validators);
    assert_eq!(fetch(&second).await.unwrap(), FetchOutcome::NotModified);
    let second_headers = last_seen(&seen);
    assert_eq!(
        header_str(&second_headers, "if-none-match").as_deref(),
        Some("\"v1\"")
    );
    assert!(second_headers.get("if-modified-since").is_none());
}

#[tokio::test]
async fn last_modified_only_sends_the_servers_own_string() {
    const STAMP: &str = "Wed, 21 Oct 2015 07:28:00 GMT";
    let seen = seen();
    let recorder = seen.clone();
    let app = Router::new().route(
        "/schema",
        get(move |headers: HeaderMap| {
            let recorder = recorder.clone();
            async move {
                record(&recorder, &headers);
                if headers.contains_key("if-modified-since") {
                    return StatusCode::NOT_MODIFIED.into_response();
                }
                ([(header::LAST_MODIFIED, STAMP)], "{}").into_response()
            }
        }),
    );
    let addr = spawn(app).await;

    let (_, validators, _) = body_of(fetch(&http_request(addr, "/schema")).await.unwrap());
    assert_eq!(
        validators,
        Validators {
            etag: None,
            last_modified: Some(STAMP.to_owned())
        }
    );

    let mut second = http_request(addr, "/schema");
    second.validators = Some(validators);
    assert_eq!(fetch(&second).await.unwrap(), FetchOutcome::NotModified);
    let headers = last_seen(&seen);
    assert_eq!(
        header_str(&headers, "if-modified-since").as_deref(),
        Some(STAMP)
    );
    assert!(headers.get("if-none-match").is_none());
}

#[tokio::test]
async fn caller_supplied_conditional_headers_are_stripped() {
    let seen = seen();
    let recorder = seen.clone();
    // Answers 304 to any conditional request, so a leaked validator would show up twice.
    let app = Router::new().route(
        "/schema",
        get(move |headers: HeaderMap| {
            let recorder = recorder.clone();
            async move {
                record(&recorder, &headers);
                if headers.contains_key("if-none-match")
                    || headers.contains_key("if-modified-since")
                {
                    return StatusCode::NOT_MODIFIED.into_response();
                }
                "{}".into_response()
            }
        }),
    );
    let addr = spawn(app).await;
    let request = with_headers(
        http_request(addr, "/schema"),
        &[
            ("If-None-Match", "\"stale\""),
            ("if-modified-since", "Wed, 21 Oct 2015 07:28:00 GMT"),
            ("IF-MATCH", "*"),
            ("If-Unmodified-Since", "Wed, 21 Oct 2015 07:28:00 GMT"),
            ("If-Range", "\"x\""),
            ("X-Kept", "yes"),
        ],
    );
    let (bytes, _, _) = body_of(fetch(&request).await.unwrap());
    assert_eq!(bytes, b"{}");
    let headers = last_seen(&seen);
    for name in [
        "if-none-match",
        "if-modified-since",
        "if-match",
        "if-unmodified-since",
        "if-range",
    ] {
        assert!(headers.get(name).is_none(), "{name} was sent");
    }
    assert_eq!(header_str(&headers, "x-kept").as_deref(), Some("yes"));
}

#[tokio::test]
async fn unsolicited_304_is_an_error_and_a_solicited_one_is_not() {
    let app = Router::new().route("/304", get(|| async { StatusCode::NOT_MODIFIED }));
    let addr = spawn(app).await;
    let error = fetch(&http_request(addr, "/304")).await.unwrap_err();
    assert!(
        matches!(error, FetchError::UnexpectedNotModified),
        "{error:?}"
    );

    let mut conditional = http_request(addr, "/304");
    conditional.validators = Some(Validators {
        etag: Some("\"v1\"".to_owned()),
        last_modified: None,
    });
    assert_eq!(
        fetch(&conditional).await.unwrap(),
        FetchOutcome::NotModified
    );

    // Stored validators that hold neither value make the request unconditional.
    let mut empty = http_request(addr, "/304");
    empty.validators = Some(Validators::default());
    assert!(matches!(
        fetch(&empty).await,
        Err(FetchError::UnexpectedNotModified)
    ));
}

// ---------------------------------------------------------------- status and transport

#[tokio::test]
async fn error_statuses_are_typed() {
    let app = Router::new()
        .route(
            "/500",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
        )
        .route(
            "/429",
            get(|| async { (StatusCode::TOO_MANY_REQUESTS, "slow down") }),
        )
        .route(
            "/206",
            get(|| async { (StatusCode::PARTIAL_CONTENT, "{\"part") }),
        );
    let addr = spawn(app).await;
    for status in [500u16, 429, 206] {
        let error = fetch(&http_request(addr, &format!("/{status}")))
            .await
            .unwrap_err();
        match error {
            FetchError::Status { status: got } => assert_eq!(got, status),
            other => panic!("expected Status {status}, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn unreachable_port_is_a_connect_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let request = http_request(SocketAddr::from(([127, 0, 0, 1], port)), "/");
    let error = fetch(&request).await.unwrap_err();
    assert!(matches!(error, FetchError::Connect { .. }), "{error:?}");
}

#[tokio::test]
async fn unsupported_scheme_is_rejected() {
    let request = request(Source::Url(url::Url::parse("ftp://127.0.0.1/x").unwrap()));
    assert!(matches!(
        fetch(&request).await,
        Err(FetchError::BadUrl { .. })
    ));
}

#[tokio::test]
async fn undecodable_content_encoding_is_rejected() {
    let app = Router::new().route(
        "/zstd",
        get(|| async {
            (
                [(header::CONTENT_ENCODING, "zstd")],
                vec![0x28u8, 0xb5, 0x2f, 0xfd],
            )
        }),
    );
    let addr = spawn(app).await;
    let error = fetch(&http_request(addr, "/zstd")).await.unwrap_err();
    assert!(
        matches!(&error, FetchError::UnsupportedEncoding { encoding } if encoding == "zstd"),
        "{error:?}"
    );
}

#[tokio::test]
async fn body_shorter_than_content_length_is_truncated() {
    let addr = spawn_raw(|mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"openapi\"")
            .await;
        let _ = stream.shutdown().await;
    })
    .await;
    let error = fetch(&http_request(addr, "/")).await.unwrap_err();
    assert!(matches!(error, FetchError::Truncated), "{error:?}");
}

#[tokio::test]
async fn chunked_body_without_final_chunk_is_truncated() {
    let addr = spawn_raw(|mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n")
            .await;
        let _ = stream.shutdown().await;
    })
    .await;
    let error = fetch(&http_request(addr, "/")).await.unwrap_err();
    assert!(matches!(error, FetchError::Truncated), "{error:?}");
}

#[tokio::test]
async fn reset_mid_body_is_truncated() {
    let addr = spawn_raw(|mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"openapi\"")
            .await;
        let _ = stream.flush().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        // SO_LINGER 0: close with RST instead of FIN.
        let _ = stream.set_zero_linger();
        drop(stream);
    })
    .await;
    let error = fetch(&http_request(addr, "/")).await.unwrap_err();
    assert!(matches!(error, FetchError::Truncated), "{error:?}");
}

#[tokio::test]
async fn total_deadline_spans_redirect_hops() {
    // Each hop is well inside the deadline; only the total across hops exceeds it.
    let app = Router::new()
        .route(
            "/slow/{n}",
            get(|AxumPath(n): AxumPath<u32>| async move {
                tokio::time::sleep(Duration::from_millis(400)).await;
                let next = if n >= 4 {
                    "/done".to_owned()
                } else {
                    format!("/slow/{}", n + 1)
                };
                (StatusCode::FOUND, [(header::LOCATION, next)])
            }),
        )
        .route("/done", get(|| async { "ok" }));
    let addr = spawn(app).await;
    let mut request = http_request(addr, "/slow/0");
    request.timeout = Duration::from_secs(1);
    let started = Instant::now();
    let error = fetch(&request).await.unwrap_err();
    assert!(matches!(error, FetchError::Timeout), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn trickling_body_is_stopped_by_the_total_deadline() {
    let addr = spawn_raw(|mut stream| async move {
        if stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
        for _ in 0..1000 {
            if stream.write_all(b" ").await.is_err() || stream.flush().await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let mut request = http_request(addr, "/");
    request.timeout = Duration::from_secs(1);
    let started = Instant::now();
    let error = fetch(&request).await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(matches!(error, FetchError::Timeout), "{error:?}");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert!(elapsed >= Duration::from_millis(900), "took {elapsed:?}");
}

#[tokio::test]
async fn server_that_never_answers_is_stopped_by_the_total_deadline() {
    let addr = spawn_raw(|stream| async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(stream);
    })
    .await;
    let mut request = http_request(addr, "/");
    request.timeout = Duration::from_millis(500);
    let started = Instant::now();
    assert!(matches!(fetch(&request).await, Err(FetchError::Timeout)));
    assert!(started.elapsed() < Duration::from_secs(5));
}

// ---------------------------------------------------------------- body cap

#[tokio::test]
async fn large_identity_body_is_too_large() {
    let app = Router::new().route("/big", get(|| async { vec![b' '; 3 * MIB] }));
    let addr = spawn(app).await;
    let mut request = http_request(addr, "/big");
    request.max_bytes = MIB as u64;
    let error = fetch(&request).await.unwrap_err();
    assert!(
        matches!(error, FetchError::TooLarge { limit } if limit == MIB as u64),
        "{error:?}"
    );

    // Exactly at the cap is fine.
    request.max_bytes = 3 * MIB as u64;
    let (bytes, _, _) = body_of(fetch(&request).await.unwrap());
    assert_eq!(bytes.len(), 3 * MIB);
}

#[tokio::test]
async fn streamed_body_without_length_is_capped_while_reading() {
    // Chunked framing: no Content-Length to reject early, so only counting can stop it.
    let addr = spawn_raw(|mut stream| async move {
        if stream
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..64 {
            let frame = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
            if stream.write_all(&frame).await.is_err() {
                return;
            }
        }
        let _ = stream.write_all(b"0\r\n\r\n").await;
    })
    .await;
    let mut request = http_request(addr, "/");
    request.max_bytes = MIB as u64;
    let error = fetch(&request).await.unwrap_err();
    assert!(matches!(error, FetchError::TooLarge { .. }), "{error:?}");
}

/// CRC-32 (IEEE), as the gzip trailer needs.
fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (i, entry) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *entry = c;
    }
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in data {
        crc = table[((crc ^ byte as u32) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc ^ 0xFFFF_FFFF
}

struct BitWriter {
    out: Vec<u8>,
    acc: u32,
    len: u32,
}

impl BitWriter {
    fn bits(&mut self, value: u32, count: u32) {
        for i in 0..count {
            self.acc |= ((value >> i) & 1) << self.len;
            self.len += 1;
            if self.len == 8 {
                self.out.push(self.acc as u8);
                self.acc = 0;
                self.len = 0;
            }
        }
    }

    /// Huffman codes go most significant bit first (RFC 1951 §3.1.1).
    fn code(&mut self, code: u32, count: u32) {
        for i in (0..count).rev() {
            self.bits((code >> i) & 1, 1);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.len > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// gzip of `len` copies of `byte` (< 144), hand-encoded with one fixed-Huffman block:
/// a literal, then length-258/distance-1 back-references. No compressor crate needed,
/// and the ratio (about 160:1) makes it a real decompression bomb.
fn gzip_run(byte: u8, len: usize) -> Vec<u8> {
    assert!(byte < 144 && len >= 1);
    let mut w = BitWriter {
        out: Vec::new(),
        acc: 0,
        len: 0,
    };
    w.bits(1, 1); // BFINAL
    w.bits(1, 2); // BTYPE = fixed Huffman
    let literal = |w: &mut BitWriter| w.code(0x30 + byte as u32, 8);
    literal(&mut w);
    let mut remaining = len - 1;
    while remaining >= 258 {
        w.code(0xC0 + (285 - 280), 8); // length 258
        w.code(0, 5); // distance code 0 = distance 1
        remaining -= 258;
    }
    for _ in 0..remaining {
        literal(&mut w);
    }
    w.code(0, 7); // end of block (256)
    let deflate = w.finish();

    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    gz.extend_from_slice(&deflate);
    gz.extend_from_slice(&crc32(&vec![byte; len]).to_le_bytes());
    gz.extend_from_slice(&(len as u32).to_le_bytes());
    gz
}

#[tokio::test]
async fn gzip_body_is_decoded_and_the_cap_counts_decoded_bytes() {
    let small = gzip_run(b'a', 100_000);
    let bomb = gzip_run(b'a', 3 * MIB);
    assert!(
        bomb.len() < 64 * 1024,
        "bomb is {} bytes on the wire",
        bomb.len()
    );
    let app = Router::new()
        .route(
            "/small",
            get(move || {
                let small = small.clone();
                async move { ([(header::CONTENT_ENCODING, "gzip")], small) }
            }),
        )
        .route(
            "/bomb",
            get(move || {
                let bomb = bomb.clone();
                async move { ([(header::CONTENT_ENCODING, "gzip")], bomb) }
            }),
        );
    let addr = spawn(app).await;

    // The hand-made encoder is right: reqwest inflates it to the exact original.
    let mut request = http_request(addr, "/small");
    request.max_bytes = MIB as u64;
    let (bytes, _, _) = body_of(fetch(&request).await.unwrap());
    assert_eq!(bytes, vec![b'a'; 100_000]);

    // ~20 KiB on the wire, 3 MiB decoded: refused by the decoded-byte cap.
    let mut request = http_request(addr, "/bomb");
    request.max_bytes = MIB as u64;
    let error = fetch(&request).await.unwrap_err();
    assert!(
        matches!(error, FetchError::TooLarge { limit } if limit == MIB as u64),
        "{error:?}"
    );
}

// ---------------------------------------------------------------- redirects

#[tokio::test]
async fn same_origin_redirect_keeps_credentials() {
    let seen = seen();
    let recorder = seen.clone();
    let app = Router::new()
        .route(
            "/start",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "final?x=1")]) }),
        )
        .route(
            "/final",
            get(move |headers: HeaderMap| {
                let recorder = recorder.clone();
                async move {
                    record(&recorder, &headers);
                    "{}"
                }
            }),
        );
    let addr = spawn(app).await;
    let request = with_headers(
        http_request(addr, "/start"),
        &[("X-Api-Key", &canary_ref())],
    );
    let (bytes, _, final_url) = body_of(fetch(&request).await.unwrap());
    assert_eq!(bytes, b"{}");
    // Reported with query values redacted (docs/reliability.md H7).
    assert_eq!(final_url, Some(format!("http://{addr}/final?x=[redacted]")));
    let headers = last_seen(&seen);
    assert_eq!(header_str(&headers, "x-api-key").as_deref(), Some(CANARY));
    assert!(headers.get("referer").is_none());
}

#[tokio::test]
async fn cross_origin_redirect_sends_no_configured_header_and_no_referer() {
    let secret_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret_file.path(), format!("{CANARY}-file\n")).unwrap();

    let seen = seen();
    let recorder = seen.clone();
    let sink = spawn(Router::new().route(
        "/sink",
        get(move |headers: HeaderMap| {
            let recorder = recorder.clone();
            async move {
                record(&recorder, &headers);
                "{\"from\":\"sink\"}"
            }
        }),
    ))
    .await;
    let target = format!("http://{sink}/sink");
    let origin = spawn(Router::new().route(
        "/start",
        get(move || {
            let target = target.clone();
            async move { (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, target)]) }
        }),
    ))
    .await;
    assert_ne!(origin.port(), sink.port());

    let request = with_headers(
        http_request(origin, "/start"),
        &[
            ("Authorization", &format!("Bearer {}", canary_ref())),
            (
                "X-Api-Key",
                &format!("${{file:{}}}", secret_file.path().display()),
            ),
            ("Cookie", &format!("session={}", canary_ref())),
            ("Accept", "application/x-custom"),
        ],
    );
    let (bytes, _, final_url) = body_of(fetch(&request).await.unwrap());
    assert_eq!(bytes, b"{\"from\":\"sink\"}");
    assert_eq!(final_url, Some(format!("http://{sink}/sink")));

    let headers = last_seen(&seen);
    for name in ["authorization", "x-api-key", "cookie", "referer"] {
        assert!(
            headers.get(name).is_none(),
            "{name} reached the other origin"
        );
    }
    for (name, value) in &headers {
        assert!(
            !value
                .as_bytes()
                .windows(CANARY.len())
                .any(|w| w == CANARY.as_bytes()),
            "canary in {name}"
        );
    }
    // Our default Accept replaces the configured one on a foreign origin.
    assert_eq!(
        header_str(&headers, "accept").as_deref(),
        Some("application/json, application/yaml;q=0.9, */*;q=0.5")
    );
}

#[tokio::test]
async fn redirect_loop_is_too_many_redirects() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = Router::new().route(
        "/loop/{n}",
        get(move |AxumPath(n): AxumPath<u32>| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                let next = format!("/loop/{}", n + 1);
                (StatusCode::FOUND, [(header::LOCATION, next)])
            }
        }),
    );
    let addr = spawn(app).await;
    let request = with_headers(
        http_request(addr, "/loop/0"),
        &[("Authorization", &format!("Bearer {}", canary_ref()))],
    );
    let error = fetch(&request).await.unwrap_err();
    assert!(matches!(error, FetchError::TooManyRedirects), "{error:?}");
    assert_no_canary(&error);
    // The first request plus five followed redirects; the sixth is refused.
    assert_eq!(hits.load(Ordering::SeqCst), 6);
}

#[tokio::test]
async fn five_redirects_are_followed() {
    let app = Router::new()
        .route(
            "/hop/{n}",
            get(|AxumPath(n): AxumPath<u32>| async move {
                let next = if n >= 4 {
                    "/done".to_owned()
                } else {
                    format!("/hop/{}", n + 1)
                };
                (StatusCode::MOVED_PERMANENTLY, [(header::LOCATION, next)])
            }),
        )
        .route("/done", get(|| async { "ok" }));
    let addr = spawn(app).await;
    let (bytes, _, _) = body_of(fetch(&http_request(addr, "/hop/0")).await.unwrap());
    assert_eq!(bytes, b"ok");
}

#[tokio::test]
async fn redirect_to_another_scheme_or_without_location_fails() {
    let app = Router::new()
        .route(
            "/file",
            get(|| async {
                (
                    StatusCode::FOUND,
                    [(header::LOCATION, "file:///etc/passwd")],
                )
            }),
        )
        .route("/nowhere", get(|| async { StatusCode::FOUND }));
    let addr = spawn(app).await;
    assert!(matches!(
        fetch(&http_request(addr, "/file")).await,
        Err(FetchError::BadUrl { .. })
    ));
    assert!(matches!(
        fetch(&http_request(addr, "/nowhere")).await,
        Err(FetchError::BadRedirect { status: 302 })
    ));
}

// ---------------------------------------------------------------- secrets

#[tokio::test]
async fn header_values_never_appear_in_errors() {
    let app = Router::new().route(
        "/500",
        get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
    );
    let addr = spawn(app).await;
    let auth = format!("Bearer {}", canary_ref());

    // Server error.
    let request = with_headers(http_request(addr, "/500"), &[("Authorization", &auth)]);
    let error = fetch(&request).await.unwrap_err();
    assert!(matches!(error, FetchError::Status { status: 500 }));
    assert_no_canary(&error);

    // A missing secret file, after a header holding the canary was already expanded.
    let request = with_headers(
        http_request(addr, "/500"),
        &[
            ("Authorization", &auth),
            ("X-Token", "${file:/nonexistent/schemawatch/secret}"),
        ],
    );
    let error = fetch(&request).await.unwrap_err();
    assert_no_canary(&error);
    let text = error.to_string();
    assert!(text.contains("X-Token"), "{text}");
    assert!(text.contains("/nonexistent/schemawatch/secret"), "{text}");
    assert!(matches!(
        error,
        FetchError::Header {
            reason: HeaderProblem::Secret(SecretError::File { .. }),
            ..
        }
    ));

    // Connection refused.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let request = with_headers(
        http_request(SocketAddr::from(([127, 0, 0, 1], port)), "/"),
        &[("Authorization", &auth)],
    );
    let error = fetch(&request).await.unwrap_err();
    assert_no_canary(&error);

    // A value with a newline (header injection) names the header only.
    let request = with_headers(
        http_request(addr, "/500"),
        &[("X-Injected", &newline_ref())],
    );
    let error = fetch(&request).await.unwrap_err();
    assert_no_canary(&error);
    assert!(matches!(
        &error,
        FetchError::Header { name, reason: HeaderProblem::InvalidValue } if name == "X-Injected"
    ));

    // Userinfo in the URL stays out of errors too.
    let mut with_userinfo = url(SocketAddr::from(([127, 0, 0, 1], port)), "/");
    with_userinfo.set_username("user").unwrap();
    with_userinfo.set_password(Some(CANARY)).unwrap();
    let error = fetch(&request_for(with_userinfo)).await.unwrap_err();
    assert!(matches!(error, FetchError::Connect { .. }));
    assert_no_canary(&error);
}

fn request_for(url: url::Url) -> FetchRequest {
    request(Source::Url(url))
}

#[test]
fn request_debug_hides_header_values() {
    let mut request = request(Source::Url(url::Url::parse("http://127.0.0.1/").unwrap()));
    request.headers.insert(
        "Authorization".to_owned(),
        format!("Bearer literal-{CANARY}"),
    );
    request.proxy = Some(format!("http://user:{CANARY}@127.0.0.1:3128"));
    let debug = format!("{request:?}");
    assert!(debug.contains("Authorization"), "{debug}");
    assert!(!debug.contains(CANARY), "{debug}");
}

#[test]
fn unset_variable_error_names_the_variable() {
    let error = expand_header_value(&format!("Bearer ${{{UNSET_VAR}}}")).unwrap_err();
    assert!(matches!(&error, SecretError::UnsetVar { name } if name == UNSET_VAR));
    assert!(error.to_string().contains(UNSET_VAR));
}

#[tokio::test]
async fn unset_variable_in_a_header_is_a_header_error() {
    let request = with_headers(
        request(Source::Url(url::Url::parse("http://127.0.0.1:9/").unwrap())),
        &[("Authorization", &format!("Bearer ${{{UNSET_VAR}}}"))],
    );
    let error = fetch(&request).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("Authorization") && text.contains(UNSET_VAR),
        "{text}"
    );
}

#[test]
fn file_reference_reads_and_trims_the_trailing_newline() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "tok-123\n").unwrap();
    // PATH is set in every test process; its value is whatever this process sees.
    let path = std::env::var("PATH").expect("PATH is set");
    let template = format!("Bearer ${{file:{}}} (${{PATH}})", file.path().display());
    assert_eq!(
        expand_header_value(&template).unwrap(),
        format!("Bearer tok-123 ({path})")
    );

    std::fs::write(file.path(), "tok-456\r\n").unwrap();
    let template = format!("${{file:{}}}", file.path().display());
    assert_eq!(expand_header_value(&template).unwrap(), "tok-456");

    // An expanded value is never expanded again.
    std::fs::write(file.path(), "${PATH}").unwrap();
    assert_eq!(expand_header_value(&template).unwrap(), "${PATH}");
}

#[test]
fn missing_secret_file_names_the_path() {
    let error = expand_header_value("${file:/nonexistent/schemawatch/token}").unwrap_err();
    assert!(matches!(error, SecretError::File { .. }));
    assert!(error.to_string().contains("/nonexistent/schemawatch/token"));
}

// ---------------------------------------------------------------- files

#[tokio::test]
async fn path_source_reads_the_file_under_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schema.json");
    std::fs::write(&path, b"{\"openapi\":\"3.1.0\"}").unwrap();

    let mut request = request(Source::Path(path.clone()));
    request.validators = Some(Validators {
        etag: Some("\"ignored\"".to_owned()),
        last_modified: None,
    });
    let (bytes, validators, final_url) = body_of(fetch(&request).await.unwrap());
    assert_eq!(bytes, b"{\"openapi\":\"3.1.0\"}");
    assert_eq!(validators, Validators::default());
    assert_eq!(final_url, None);

    request.max_bytes = 5;
    assert!(matches!(
        fetch(&request).await,
        Err(FetchError::TooLarge { limit: 5 })
    ));

    let missing = dir.path().join("missing.yaml");
    let error = fetch(&self::request(Source::Path(missing.clone())))
        .await
        .unwrap_err();
    assert!(matches!(error, FetchError::Io { .. }), "{error:?}");
    assert!(
        error.to_string().contains(&missing.display().to_string()),
        "{error}"
    );
}

#[tokio::test]
async fn path_source_caps_files_without_a_real_size() {
    // /dev/zero reports size 0 and never ends: a device is refused before any read (H17).
    let mut request = request(Source::Path("/dev/zero".into()));
    request.max_bytes = 1024;
    assert!(matches!(
        fetch(&request).await,
        Err(FetchError::NotRegular { .. })
    ));
    // A regular file under /proc reports size 0 and holds more: only the bounded read stops it.
    let mut request = self::request(Source::Path("/proc/self/maps".into()));
    request.max_bytes = 16;
    assert!(matches!(
        fetch(&request).await,
        Err(FetchError::TooLarge { limit: 16 })
    ));
}

// ---------------------------------------------------------------- TLS

/// Test-only CA (EC P-256, valid 2000-2125), generated with openssl for this file.
const TEST_CA_PEM: &str = "\
-----BEGIN CERTIFICATE-----
MIIBcDCCARagAwIBAgICEAAwCgYIKoZIzj0EAwIwHjEcMBoGA1UEAwwTc2NoZW1h
d2F0Y2ggdGVzdCBDQTAgFw0wMDAxMDEwMDAwMDBaGA8yMTI1MDEwMTAwMDAwMFow
HjEcMBoGA1UEAwwTc2NoZW1hd2F0Y2ggdGVzdCBDQTBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABGdW8GfWMF5Luevdx/x2PPs4GCHBMLqzNg4fqvzVPmnr/YsOgV1G
1vlXeetgDpQymUha1nJbv1MJ4K3yEr5lfPKjQjBAMA8GA1UdEwEB/wQFMAMBAf8w
DgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBTda6lB8IHdrngbl4y+zYJHxTkE9jAK
BggqhkjOPQQDAgNIADBFAiAljTxMc0BhDUhuOP2zkOrFOJ1GsVDIviVOglIpmGf+
bgIhALsgbJiD8DVFLU64LHkIOKcQOJW0bGJhdghWfT5uetzO
-----END CERTIFICATE-----
";
/// Leaf for IP 127.0.0.1, signed by `TEST_CA_PEM`.
const TEST_LEAF_PEM: &str = "\
-----BEGIN CERTIFICATE-----
MIIBrTCCAVKgAwIBAgICEAEwCgYIKoZIzj0EAwIwHjEcMBoGA1UEAwwTc2NoZW1h
d2F0Y2ggdGVzdCBDQTAgFw0wMDAxMDEwMDAwMDBaGA8yMTI1MDEwMTAwMDAwMFow
FDESMBAGA1UEAwwJMTI3LjAuMC4xMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE
1apkyG8we/gmsFFXucQNVdQTU/q6iTwepiEaVgtV1eTwH9GHJ6/wKpArXcyM5kij
kASfvJ9XFWgPme6zXnFfx6OBhzCBhDAMBgNVHRMBAf8EAjAAMA4GA1UdDwEB/wQE
AwIHgDATBgNVHSUEDDAKBggrBgEFBQcDATAPBgNVHREECDAGhwR/AAABMB0GA1Ud
DgQWBBSNvub44D0m2D/nrI7pT2/ozDcezzAfBgNVHSMEGDAWgBTda6lB8IHdrngb
l4y+zYJHxTkE9jAKBggqhkjOPQQDAgNJADBGAiEA46YrP7ps7zTdow6XS4y0cGJV
ogwCQPq8FPDpLBqV3xICIQDaE7+49A0VoxaBFQiu4PcFA2miTonzfvSS3UOP4wGu
dA==
-----END CERTIFICATE-----
";
/// Private key of `TEST_LEAF_PEM`; test-only, protects nothing.
const TEST_LEAF_KEY: &str = "\
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgMhf7d2up9p8gwqKI
UsQEI0kvdOxoKaTNxWHaclqd43yhRANCAATVqmTIbzB7+CawUVe5xA1V1BNT+rqJ
PB6mIRpWC1XV5PAf0Ycnr/AqkCtdzIzmSKOQBJ+8n1cVaA+Z7rNecV/H
-----END PRIVATE KEY-----
";

/// A blocking HTTPS/1.1 server on a thread (rustls directly; no extra dev-dependency).
fn spawn_tls() -> SocketAddr {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{Read, Write};

    let certs = CertificateDer::pem_slice_iter(TEST_LEAF_PEM.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(TEST_LEAF_KEY.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let config = Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { return };
            let config = config.clone();
            std::thread::spawn(move || {
                let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = b"{\"tls\":true}";
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tls.write_all(body);
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    addr
}

#[tokio::test]
async fn https_trusts_the_configured_ca_file_and_only_then() {
    let addr = spawn_tls();
    let https = url::Url::parse(&format!("https://{addr}/schema")).unwrap();

    let error = fetch(&request(Source::Url(https.clone())))
        .await
        .unwrap_err();
    assert!(matches!(error, FetchError::Tls { .. }), "{error:?}");

    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, TEST_CA_PEM).unwrap();
    let mut trusted = request(Source::Url(https));
    trusted.ca_file = Some(ca_path);
    let (bytes, _, _) = body_of(fetch(&trusted).await.unwrap());
    assert_eq!(bytes, b"{\"tls\":true}");

    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    trusted.ca_file = Some(not_pem.clone());
    let error = fetch(&trusted).await.unwrap_err();
    assert!(
        matches!(&error, FetchError::CaFile { path, .. } if *path == not_pem),
        "{error:?}"
    );
    trusted.ca_file = Some(dir.path().join("missing.pem"));
    assert!(matches!(
        fetch(&trusted).await,
        Err(FetchError::CaFile { .. })
    ));
}
