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
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
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
        let mut child = command.spawn().map_err(|e| McpError::Spawn {
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
            stdin: Some(stdin),
            stdout,
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
            let n = self
                .stdout
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
        let until = wait.map(|w| crate::daemon::later(tokio::time::Instant::now(), w));
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

    pub(super) async fn notify(&mut self, method: &str) -> Result<(), McpError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
            .await
    }

    /// Closes stdin, waits briefly, kills what is left of its process group, and reaps.
    pub(super) async fn close(mut self) {
        drop(self.stdin.take());
        let group = self.child.id();
        let exited = matches!(
            tokio::time::timeout(EXIT_GRACE, self.child.wait()).await,
            Ok(Ok(_))
        );
        if let Some(group) = group {
            kill_group(group).await;
        }
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

/// SIGKILL to every process left in the child's group (grandchildren a wrapper such as `npx`
/// started). Uses kill(1): no `unsafe` and no extra crate; where it is missing, only the direct
/// child is killed (by `start_kill`).
async fn kill_group(group: u32) {
    #[cfg(unix)]
    {
        let run = Command::new("kill")
            .args(["-KILL", "--", &format!("-{group}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .status();
        let _ = tokio::time::timeout(REAP_WAIT, run).await;
    }
    #[cfg(not(unix))]
    let _ = group;
}
