//! The stdio transport: newline-delimited JSON-RPC with a child process.
//!
//! The child gets a minimal environment (`PATH`, `HOME`) plus the watch's `env`, never the
//! daemon's own variables. Its stderr is drained (and discarded: it may echo secrets) so it
//! cannot block on a full pipe. Shutdown (spec): close stdin, give it a moment, then kill;
//! the child is always reaped, and `kill_on_drop` covers a cancelled refresh.

use super::{
    answer_server_request, classify_message, parse_messages, Budget, Incoming, McpError, Reply,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long a child may take to exit after its stdin closes before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// How long to wait for the kernel to report a killed child's exit.
const REAP_WAIT: Duration = Duration::from_secs(5);
/// The only variables the child inherits from the daemon.
const INHERITED_ENV: &[&str] = &["PATH", "HOME"];
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

pub(super) struct StdioConn {
    child: Child,
    /// Keeps the child out of the orphan reaper while tokio owns it.
    _tracked: crate::process::Tracked,
    /// Set once [`StdioConn::close`] has killed what the child left; otherwise drop does.
    closed: bool,
    stdin: Option<ChildStdin>,
    /// `None` once a long-lived session took it ([`StdioConn::take_pipes`]).
    stdout: Option<ChildStdout>,
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    budget: Budget,
    next_id: i64,
}

/// The child's environment values, expanded (secret files read) off the async runtime within
/// `within` (docs/reliability.md H3).
pub(super) async fn expand_env(
    env: &BTreeMap<String, String>,
    within: Duration,
) -> Result<BTreeMap<String, String>, McpError> {
    if env.is_empty() {
        return Ok(BTreeMap::new());
    }
    crate::fetch::expand_all_within(env, within)
        .await
        .map_err(|(name, e)| McpError::Env {
            name,
            reason: e.to_string(),
        })
}

impl StdioConn {
    /// Spawns `argv` with `env` (already expanded by [`expand_env`]).
    pub(super) fn spawn(
        argv: &[String],
        env: &BTreeMap<String, String>,
        budget: Budget,
    ) -> Result<StdioConn, McpError> {
        let (program, args) = argv.split_first().ok_or(McpError::EmptyCommand)?;
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so shutdown also reaches what it spawned (`npx` → node).
        #[cfg(unix)]
        command.process_group(0);
        for name in INHERITED_ENV {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            } else if *name == "PATH" {
                command.env(name, DEFAULT_PATH);
            }
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let (mut child, tracked) =
            crate::process::spawn_tracked(&mut command).map_err(|e| McpError::Spawn {
                program: program.clone(),
                detail: e.to_string(),
            })?;
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.start_kill();
            return Err(McpError::Spawn {
                program: program.clone(),
                detail: "no stdio pipes".into(),
            });
        };
        // Drain stderr for the child's lifetime; the task ends at EOF (the child exited).
        tokio::spawn(async move {
            let mut sink = tokio::io::sink();
            let _ = tokio::io::copy(&mut stderr, &mut sink).await;
        });
        Ok(StdioConn {
            child,
            _tracked: tracked,
            closed: false,
            stdin: Some(stdin),
            stdout: Some(stdout),
            buf: Vec::new(),
            scanned: 0,
            budget,
            next_id: 0,
        })
    }

    async fn send(&mut self, message: &Value) -> Result<(), McpError> {
        let mut line = serde_json::to_vec(message).map_err(|e| McpError::Protocol {
            detail: e.to_string(),
        })?;
        line.push(b'\n');
        let stdin = self.stdin.as_mut().ok_or_else(|| McpError::Transport {
            detail: "stdin already closed".into(),
        })?;
        stdin
            .write_all(&line)
            .await
            .map_err(|e| McpError::Transport {
                detail: format!("cannot write to the server: {e}"),
            })?;
        stdin.flush().await.map_err(|e| McpError::Transport {
            detail: format!("cannot write to the server: {e}"),
        })
    }

    /// The next non-empty line of stdout, or `None` at EOF.
    async fn next_line(&mut self) -> Result<Option<Vec<u8>>, McpError> {
        loop {
            if let Some(pos) = self.buf[self.scanned..].iter().position(|b| *b == b'\n') {
                let end = self.scanned + pos;
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                self.scanned = 0;
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(Some(line));
            }
            self.scanned = self.buf.len();
            let mut chunk = [0u8; 16 * 1024];
            let stdout = self.stdout.as_mut().ok_or_else(|| McpError::Transport {
                detail: "stdout already taken".into(),
            })?;
            let n = stdout
                .read(&mut chunk)
                .await
                .map_err(|e| McpError::Transport {
                    detail: format!("cannot read from the server: {e}"),
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.budget.take(n)?;
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    async fn exit_status(&mut self) -> String {
        match tokio::time::timeout(EXIT_GRACE, self.child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            _ => "still running".into(),
        }
    }

    /// Sends a request and reads until its answer. With `wait`, silence for that long is
    /// [`McpError::ProbeSilent`] (used for the era probe).
    pub(super) async fn call(
        &mut self,
        method: &str,
        params: Value,
        wait: Option<Duration>,
    ) -> Result<Reply, McpError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let until = wait.map(|w| crate::fetch::later(tokio::time::Instant::now(), w));
        loop {
            let line = match until {
                Some(t) => match tokio::time::timeout_at(t, self.next_line()).await {
                    Ok(line) => line?,
                    Err(_) => return Err(McpError::ProbeSilent),
                },
                None => self.next_line().await?,
            };
            let Some(line) = line else {
                let status = self.exit_status().await;
                return Err(McpError::Closed {
                    method: method.into(),
                    status,
                });
            };
            for message in parse_messages(&line)? {
                match classify_message(&message, id)? {
                    Incoming::Reply(reply) => return Ok(reply),
                    Incoming::Request { id, method } => {
                        // A server that cannot take the answer is noticed on our next write.
                        let _ = self.send(&answer_server_request(&id, &method)).await;
                    }
                    Incoming::Ignore => {}
                }
            }
        }
    }

    /// The child's stdin and stdout, for a session that reads and writes them itself; the
    /// child stays owned (closed, killed and reaped) by this connection.
    pub(super) fn take_pipes(&mut self) -> Option<(ChildStdin, ChildStdout)> {
        Some((self.stdin.take()?, self.stdout.take()?))
    }

    pub(super) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits until the child exits (without reaping what it spawned: [`StdioConn::close`]).
    pub(super) async fn exited(&mut self) -> String {
        match self.child.wait().await {
            Ok(status) => status.to_string(),
            Err(e) => format!("unknown ({e})"),
        }
    }

    pub(super) async fn notify(&mut self, method: &str) -> Result<(), McpError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
            .await
    }

    /// Closes stdin, waits briefly, then kills every descendant — its process group, those that
    /// left it (`setsid()`), and orphans re-parented to us — and reaps.
    pub(super) async fn close(mut self) {
        drop(self.stdin.take());
        let group = self.child.id();
        let exited = matches!(
            tokio::time::timeout(EXIT_GRACE, self.child.wait()).await,
            Ok(Ok(_))
        );
        self.closed = true;
        if let Some(group) = group {
            kill_family(group, !exited);
        }
        crate::process::reap_orphans();
        if exited {
            return;
        }
        let _ = self.child.start_kill();
        if tokio::time::timeout(REAP_WAIT, self.child.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                event = "mcp_child_not_reaped",
                pid = self.child.id(),
                "MCP server did not exit after SIGKILL"
            );
        }
    }
}

/// SIGKILL to every descendant of the child `root` (also its process group): those still
/// below it, those in its group, and the orphans re-parented to us (a descendant whose parent
/// exited; with several MCP servers at once, an orphan of another server's is killed too: an
/// orphan is never part of a running server's contract). System calls only: no `kill` binary.
/// `alive`: `root` has not been reaped (else its pid may be reused: only its group, which
/// outlives it while a member lives, is signalled).
fn kill_family(root: u32, alive: bool) {
    let mut targets = if alive {
        crate::process::descendants(root)
    } else {
        Vec::new()
    };
    targets.extend(crate::process::orphans());
    crate::process::kill_group(root);
    crate::process::kill_all(&targets);
}

impl Drop for StdioConn {
    /// A cancelled refresh drops the connection without `close`: tokio kills the child
    /// (`kill_on_drop`), this kills what it started.
    fn drop(&mut self) {
        if !self.closed {
            if let Some(root) = self.child.id() {
                kill_family(root, true);
            }
        }
    }
}
