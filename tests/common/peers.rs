//! The real test peers (tests/peers/, see its README): where they are installed, how a test
//! finds them, and how an HTTP peer is started and always reaped. A test skips only when a
//! peer is missing, and fails instead when `SCHEMAWATCH_REQUIRE_PEERS=1` (set by `.ci/run`).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

pub fn require_peers() -> bool {
    std::env::var("SCHEMAWATCH_REQUIRE_PEERS").as_deref() == Ok("1")
}

/// `found`, or `None` after saying the test is skipped (a panic under
/// SCHEMAWATCH_REQUIRE_PEERS=1).
pub fn need<T>(found: Option<T>, what: &str) -> Option<T> {
    if found.is_none() {
        if require_peers() {
            panic!("{what} is missing and SCHEMAWATCH_REQUIRE_PEERS=1 (see tests/peers/README.md)");
        }
        eprintln!("SKIPPED: {what} is missing (see tests/peers/README.md)");
    }
    found
}

/// Debian's libfaketime (package `libfaketime`, installed by `scripts/test` as root): a
/// process run with `LD_PRELOAD` set to it and `FAKETIME="+20s"` lives 20 s ahead.
pub fn faketime_lib() -> Option<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

pub fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// `node` and the installed server-everything entry point.
pub fn everything() -> Option<(String, String)> {
    let js = peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    (js.is_file() && runs("node", &["--version"]))
        .then(|| ("node".to_string(), js.to_string_lossy().into_owned()))
}

/// server-everything over Streamable HTTP, forced onto 127.0.0.1; its `/mcp` URL.
pub fn everything_http(node: &str, js: &str) -> (ServerProcess, String) {
    let port = free_port();
    let mut command = Command::new(node);
    command
        .arg("--require")
        .arg(peers_dir().join("bind-localhost.cjs"))
        .arg(js)
        .arg("streamableHttp");
    let server = start_http(command, port, &[]);
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A server process killed and reaped when the test ends, however it ends.
pub struct ServerProcess(pub Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts an HTTP peer and waits until its port accepts connections.
pub fn start_http(mut command: Command, port: u16, env: &[(&str, &str)]) -> ServerProcess {
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PORT", port.to_string())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut server = ServerProcess(command.spawn().expect("spawn HTTP peer"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.0.try_wait() {
            panic!("HTTP peer exited early: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "HTTP peer never listened on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

/// A python that can import the PyPI `mcp` 2.x server and client APIs: the test venv, else
/// `python3`.
pub fn python_mcp() -> Option<String> {
    let venv = peers_dir().join(".venv/bin/python");
    let probe = ["-c", "import mcp.server.mcpserver, mcp.client.stdio"];
    if venv.is_file() && runs(&venv.to_string_lossy(), &probe) {
        return Some(venv.to_string_lossy().into_owned());
    }
    runs("python3", &probe).then(|| "python3".to_string())
}

/// chromedriver and the Chromium it drives (Debian `chromium-driver`, `chromium`).
pub fn chromium() -> Option<(PathBuf, PathBuf)> {
    let driver = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())?;
    let browser = ["/usr/bin/chromium", "/usr/lib/chromium/chromium"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())?;
    Some((driver, browser))
}

/// The npm `axe-core` engine's browser build (tests/peers).
pub fn axe_core() -> Option<PathBuf> {
    let js = peers_dir().join("node_modules/axe-core/axe.min.js");
    js.is_file().then_some(js)
}

/// A python that can import PyPI `feedparser`: the test venv, else `python3`.
pub fn python_feedparser() -> Option<String> {
    let venv = peers_dir().join(".venv/bin/python");
    let probe = ["-c", "import feedparser"];
    if venv.is_file() && runs(&venv.to_string_lossy(), &probe) {
        return Some(venv.to_string_lossy().into_owned());
    }
    runs("python3", &probe).then(|| "python3".to_string())
}
