//! Container semantics without Docker (docs/reliability.md §2, P17): the binary runs under
//! bubblewrap as PID 1 of a new PID namespace, as uid/gid 65532 in a user namespace, on a
//! read-only root with one writable state directory (the volume) and a tmpfs /tmp, like the
//! distroless image of deploy/container/Dockerfile with `readOnlyRootFilesystem: true`.
//! It must get ready, write its registry only to the volume, answer `schemawatch healthcheck`
//! (the image's HEALTHCHECK) and exit 0 on SIGTERM (PID 1 gets only the signals it handles).
//!
//! The volume is mounted at `/mnt` here (bwrap cannot create a new mount point on a
//! read-only root; the image's `/var/lib/schemawatch` exists in the image).
//!
//! Without `bwrap` the test is skipped with a message, except when
//! `SCHEMAWATCH_REQUIRE_PEERS=1` (set by `.ci/run`, which installs bubblewrap).

use crate::common;

use common::*;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bwrap() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("bwrap"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("SCHEMAWATCH_REQUIRE_PEERS").as_deref() != Ok("1"),
            "bwrap is required (SCHEMAWATCH_REQUIRE_PEERS=1); install the Debian package `bubblewrap`"
        );
        eprintln!("SKIPPED: bwrap not installed (apt-get install bubblewrap)");
    }
    found
}

/// `schemawatch run --config /mnt/schemawatch.toml` under bubblewrap like the image runs it:
/// PID 1 of a new PID namespace, uid/gid 65532, a read-only root, a tmpfs /tmp, and `state`
/// (holding the binary and the config) as the one writable volume at /mnt.
fn run_in_sandbox(bwrap: &std::path::Path, state: &std::path::Path) -> std::process::Child {
    Command::new(bwrap)
        .args(["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"])
        .args(["--tmpfs", "/tmp"])
        .arg("--bind")
        .arg(state)
        .arg("/mnt")
        .args([
            "--unshare-pid",
            "--unshare-user",
            "--uid",
            "65532",
            "--gid",
            "65532",
        ])
        .args(["--as-pid-1", "--die-with-parent", "--clearenv"])
        .args(["--setenv", "RUST_LOG", "info,schemawatch=debug"])
        .arg("/mnt/schemawatch")
        .args(["run", "--config", "/mnt/schemawatch.toml"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bwrap")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn runs_as_pid_1_non_root_on_a_read_only_root() {
    let Some(bwrap) = bwrap() else {
        return;
    };
    let sb = Sandbox::new();
    let state = sb.path("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("pets.json"), Pets::v1().bytes()).unwrap();
    // The binary travels in the volume: the sandbox's tmpfs /tmp would hide a checkout (and so
    // its target folder) that lives under /tmp.
    std::fs::copy(bin(), state.join("schemawatch")).expect("copy the binary into the volume");
    let port = free_port();
    std::fs::write(
        state.join("schemawatch.toml"),
        format!(
            "[storage]\npath = \"/mnt/registry.sqlite3\"\n\n[daemon]\ndrain_timeout = \"2s\"\n\n[server]\nlisten = \"127.0.0.1:{port}\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"/mnt/pets.json\"\ninterval = \"1s\"\n"
        ),
    )
    .unwrap();
    let mut child = run_in_sandbox(&bwrap, &state);
    // The healthcheck command (the image's HEALTHCHECK) sees it ready, and it registers.
    let config = state.join("schemawatch.toml");
    let config = config.to_str().unwrap();
    let start = Instant::now();
    while sb.run(&["healthcheck", "--config", config]).code != 0 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "daemon exited in the sandbox"
        );
        assert!(start.elapsed() < Duration::from_secs(60), "never ready");
        std::thread::sleep(Duration::from_millis(100));
    }
    let registry = state.join("registry.sqlite3");
    while !registry.exists() {
        assert!(start.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(50));
    }
    // The daemon is PID 1 of its namespace (bwrap's child, seen from here).
    let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id()))
        .expect("bwrap's children");
    let pid: u32 = children
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the sandboxed daemon");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let nspid = status
        .lines()
        .find(|l| l.starts_with("NSpid:"))
        .unwrap_or("");
    assert!(nspid.trim_end().ends_with("\t1"), "not PID 1: {nspid:?}");

    let sent = Instant::now();
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut log = String::new();
            use std::io::Read;
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut log);
            }
            assert_eq!(status.code(), Some(0), "{log}");
            assert!(log.contains("daemon_stopped"), "{log}");
            eprintln!("PID 1 SIGTERM to exit: {:?}", sent.elapsed());
            break;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(15),
            "PID 1 ignored SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Only the volume was written: the registry (with its WAL files) and nothing else new.
    let mut names: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.contains(&"registry.sqlite3".to_string()), "{names:?}");
}

/// What the image and the pod spec promise, checked on the files (no Docker, no cluster).
#[test]
fn dockerfile_and_sidecar_keep_their_promises() {
    let root = env!("CARGO_MANIFEST_DIR");
    let docker = std::fs::read_to_string(format!("{root}/deploy/container/Dockerfile")).unwrap();
    for needle in [
        "+crt-static",
        "distroless/static-debian12:nonroot",
        "USER 65532:65532",
        "HEALTHCHECK",
        "\"healthcheck\"",
        "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
        "VOLUME [\"/var/lib/schemawatch\"]",
        "STOPSIGNAL SIGTERM",
    ] {
        assert!(docker.contains(needle), "Dockerfile lacks {needle:?}");
    }
    let pod = std::fs::read_to_string(format!("{root}/deploy/kubernetes/sidecar.yaml")).unwrap();
    for needle in [
        "restartPolicy: Always",
        "readOnlyRootFilesystem: true",
        "runAsNonRoot: true",
        "allowPrivilegeEscalation: false",
        "drop: [ALL]",
        "path: /readyz",
        "path: /healthz",
        "mountPath: /var/lib/schemawatch",
        "path = \"/var/lib/schemawatch/registry.sqlite3\"",
    ] {
        assert!(pod.contains(needle), "sidecar.yaml lacks {needle:?}");
    }
    let number_after = |text: &str, key: &str| -> u64 {
        let at = text.find(key).unwrap_or_else(|| panic!("no {key}")) + key.len();
        text[at..]
            .trim_start_matches([' ', ':', '=', '"'])
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    let grace = number_after(&pod, "terminationGracePeriodSeconds: ");
    let drain = number_after(&pod, "drain_timeout = ");
    assert!(grace > drain, "grace {grace}s must exceed drain {drain}s");
}

/// `(pid, ppid, state, argv)` of every process in /proc (seen from the host namespace).
fn processes() -> Vec<(u32, u32, char, Vec<String>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let mut fields = stat[close + 1..].split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let argv = std::fs::read(format!("/proc/{pid}/cmdline"))
            .unwrap_or_default()
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        out.push((pid, ppid, state, argv));
    }
    out
}

/// H1: as PID 1, with an MCP stdio server that double-forks every refresh (an orphan that exits,
/// a `setsid()` sleeper), no zombies pile up and no sleeper outlives its refresh (the probe:
/// 4 zombies after 9 s, 9 after 15 s; the sleepers survived; the group kill needed `kill`).
#[test]
fn h1_as_pid_1_orphans_are_reaped_and_descendants_killed() {
    let Some(bwrap) = bwrap() else {
        return;
    };
    let python = std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("python3"))
                .find(|p| p.is_file())
        })
        .expect("python3");
    let sb = Sandbox::new();
    let state = sb.path("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::copy(bin(), state.join("schemawatch")).expect("copy the binary into the volume");
    std::fs::copy(
        format!("{}/tests/peers/forking-mcp.py", env!("CARGO_MANIFEST_DIR")),
        state.join("forking-mcp.py"),
    )
    .unwrap();
    let mark = format!("{}", 36_000 + std::process::id() % 10_000);
    let port = free_port();
    std::fs::write(
        state.join("schemawatch.toml"),
        format!(
            "[storage]\npath = \"/mnt/registry.sqlite3\"\n\n[daemon]\ndrain_timeout = \"2s\"\n\n[server]\nlisten = \"127.0.0.1:{port}\"\n\n[[watch]]\nname = \"acme.forks\"\nkind = \"mcp\"\ncommand = [\"{}\", \"/mnt/forking-mcp.py\", \"{mark}\"]\ninterval = \"1s\"\n",
            python.display()
        ),
    )
    .unwrap();
    let mut child = run_in_sandbox(&bwrap, &state);
    let start = Instant::now();
    let daemon = loop {
        let found = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id()))
            .ok()
            .and_then(|c| {
                c.split_whitespace()
                    .next()
                    .and_then(|p| p.parse::<u32>().ok())
            });
        if let Some(pid) = found {
            break pid;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no daemon");
        std::thread::sleep(Duration::from_millis(50));
    };
    let sleepers = |table: &[(u32, u32, char, Vec<String>)]| {
        table
            .iter()
            .filter(|(_, _, s, argv)| {
                *s != 'Z' && argv.len() == 2 && argv[0] == "sleep" && argv[1] == mark
            })
            .count()
    };
    // About six refreshes, each leaving an orphan and a sleeper behind.
    std::thread::sleep(Duration::from_secs(6));
    let (mut max_zombies, mut max_sleepers) = (0, 0);
    for _ in 0..15 {
        let table = processes();
        let zombies = table
            .iter()
            .filter(|(_, ppid, s, _)| *ppid == daemon && *s == 'Z')
            .count();
        max_zombies = max_zombies.max(zombies);
        max_sleepers = max_sleepers.max(sleepers(&table));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(child.try_wait().unwrap().is_none(), "the daemon exited");
    let ok = Command::new("kill")
        .args(["-TERM", &daemon.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let status = child.wait().unwrap();
    let mut log = String::new();
    use std::io::Read;
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut log);
    }
    assert!(
        log.contains("\"acme.forks\"") || log.contains("acme.forks"),
        "{log}"
    );
    assert!(
        log.matches("action=\"unchanged\"").count() + log.matches("action=unchanged").count() >= 2,
        "the watch refreshed several times: {log}"
    );
    assert_eq!(status.code(), Some(0), "{log}");
    // One refresh may be in flight (its sleeper alive, a child just exited).
    assert!(
        max_zombies <= 2,
        "{max_zombies} zombies under PID 1:\n{log}"
    );
    assert!(
        max_sleepers <= 1,
        "{max_sleepers} setsid() sleepers alive:\n{log}"
    );
    // And nothing is left after the daemon is gone.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(sleepers(&processes()), 0, "a sleeper outlived the daemon");
}
