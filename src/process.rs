//! Child processes we spawn (MCP stdio servers, `git`) and what they leave behind
//! (docs/reliability.md H1).
//!
//! - The process is a child subreaper (`PR_SET_CHILD_SUBREAPER`; as PID 1 of a container it is
//!   one anyway): a grandchild whose parent exits — a double fork, a `setsid()` daemon — is
//!   re-parented to us, so it is still ours to kill and to reap.
//! - Every child spawned through tokio is *tracked* while its handle lives; [`reap_orphans`]
//!   reaps only untracked children (re-parented orphans), so it never steals the exit status
//!   tokio waits for.
//! - Signals go through system calls (rustix), never through a `kill` binary (the distroless
//!   image has none).

use rustix::process::{Pid, Signal, WaitOptions};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Set by [`become_subreaper`]: only then is every untracked child an orphan of ours (a
/// process that uses the library and spawns children of its own — a test harness — must
/// never have them killed or reaped here).
static REAPER: AtomicBool = AtomicBool::new(false);

/// Pids of the children whose tokio handle is alive (tokio reaps those).
static TRACKED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn tracked() -> MutexGuard<'static, BTreeSet<u32>> {
    match TRACKED.lock() {
        Ok(t) => t,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Keeps a child's pid out of [`reap_orphans`] until dropped (drop it with the handle).
#[derive(Debug)]
pub struct Tracked(Option<u32>);

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            tracked().remove(&pid);
        }
    }
}

/// Spawns `command`, tracked: the lock is held across the spawn, so the reaper never sees the
/// new child before it is tracked.
pub fn spawn_tracked(
    command: &mut tokio::process::Command,
) -> std::io::Result<(tokio::process::Child, Tracked)> {
    let mut set = tracked();
    let child = command.spawn()?;
    let pid = child.id();
    if let Some(pid) = pid {
        set.insert(pid);
    }
    Ok((child, Tracked(pid)))
}

/// Makes this process the reaper of its orphaned descendants. Returns whether it is one
/// (always as PID 1).
pub fn become_subreaper() -> bool {
    if std::process::id() == 1 {
        REAPER.store(true, Ordering::SeqCst);
        return true;
    }
    match rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        Ok(()) => {
            REAPER.store(true, Ordering::SeqCst);
            true
        }
        Err(e) => {
            tracing::warn!(event = "subreaper_unavailable", error = %e, "orphaned MCP server descendants cannot be reaped");
            false
        }
    }
}

/// `(pid, ppid)` of every process visible in /proc.
fn process_table() -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

fn children_in(table: &[(u32, u32)], parent: u32) -> impl Iterator<Item = u32> + '_ {
    table
        .iter()
        .filter(move |(_, ppid)| *ppid == parent)
        .map(|(pid, _)| *pid)
}

/// Every descendant of `root` (not `root` itself).
pub fn descendants(root: u32) -> Vec<u32> {
    let table = process_table();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for c in children_in(&table, p) {
            if !out.contains(&c) && c != root {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

/// Our untracked children (orphans re-parented to us) and all their descendants; none unless
/// this process is the reaper ([`become_subreaper`]).
pub fn orphans() -> Vec<u32> {
    if !REAPER.load(Ordering::SeqCst) {
        return Vec::new();
    }
    let me = std::process::id();
    let own = tracked().clone();
    let table = process_table();
    let mut out = Vec::new();
    for orphan in children_in(&table, me).filter(|p| !own.contains(p)) {
        out.push(orphan);
        out.extend(descendants(orphan));
    }
    out
}

fn pid(raw: u32) -> Option<Pid> {
    i32::try_from(raw).ok().and_then(Pid::from_raw)
}

/// SIGKILL to process group `group`.
pub fn kill_group(group: u32) {
    if let Some(g) = pid(group) {
        let _ = rustix::process::kill_process_group(g, Signal::KILL);
    }
}

/// SIGKILL to each of `pids`.
pub fn kill_all(pids: &[u32]) {
    for p in pids.iter().filter_map(|p| pid(*p)) {
        let _ = rustix::process::kill_process(p, Signal::KILL);
    }
}

/// Reaps every exited untracked child (orphans re-parented to us); returns how many. Nothing
/// unless this process is the reaper ([`become_subreaper`]).
pub fn reap_orphans() -> usize {
    if !REAPER.load(Ordering::SeqCst) {
        return 0;
    }
    let me = std::process::id();
    let set = tracked();
    let table = process_table();
    let mut reaped = 0;
    for child in children_in(&table, me).filter(|p| !set.contains(p)) {
        if let Some(p) = pid(child) {
            if let Ok(Some(_)) = rustix::process::waitpid(Some(p), WaitOptions::NOHANG) {
                reaped += 1;
            }
        }
    }
    reaped
}

/// Reaps orphans whenever a child exits (SIGCHLD) and every few seconds, for the life of the
/// runtime. For the daemon, which as PID 1 or subreaper inherits every orphan.
pub fn spawn_reaper() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut chld = signal(SignalKind::child()).ok();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(2));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            match chld.as_mut() {
                Some(s) => {
                    tokio::select! {
                        _ = s.recv() => {}
                        _ = tick.tick() => {}
                    }
                }
                None => {
                    tick.tick().await;
                }
            }
            // /proc scans and waitpid are quick system calls, but keep them off the workers.
            let reaped = tokio::task::spawn_blocking(reap_orphans).await.unwrap_or(0);
            if reaped > 0 {
                tracing::debug!(event = "orphans_reaped", count = reaped);
            }
        }
    });
}
