//! Issue 29's hostile-input probe, round 2, through the binary: a careless operator's local
//! files (FIFOs, configs, read-only registries, sizes). Each test reproduces one scenario of
//! docs/reliability.md's H rows (H16 onwards).

use crate::common;

use common::*;
use std::process::Child;
use std::time::{Duration, Instant};

/// Waits at most `limit` for a spawned run; a run still going then is killed and the test
/// fails (what a hang used to look like).
fn finish_within(sb: &Sandbox, spawned: (Vec<String>, Child), limit: Duration) -> Run {
    let (args, mut child) = spawned;
    let started = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let run = sb.finish((args.clone(), child));
            panic!(
                "{args:?} still running after {limit:?}:\n{}",
                run.describe()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    sb.finish((args, child))
}

fn mkfifo(sb: &Sandbox, name: &str) {
    let status = std::process::Command::new("mkfifo")
        .arg(sb.path(name))
        .status()
        .unwrap();
    assert!(status.success());
}

const ROOT_WITH_REF: &str = r#"openapi: 3.0.3
info: {title: pets, version: "1"}
paths:
  /pets:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                $ref: "defs.fifo#/Pet"
"#;

/// H17: a FIFO as a watch's `path` or as a `$ref` target (was: `check` printed its error at
/// the deadline and never exited; `diff` with a `$ref` to it hung past its deadline) is
/// refused at once as "not a regular file", with nothing registered.
#[test]
fn h17_a_fifo_as_a_document_or_ref_target_is_refused_at_once() {
    let sb = Sandbox::new();
    mkfifo(&sb, "pets.fifo");
    mkfifo(&sb, "defs.fifo");
    sb.write_file("root.yaml", ROOT_WITH_REF.as_bytes());
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.fifo\"\nkind = \"openapi\"\npath = \"pets.fifo\"\ntimeout = \"5s\"\n\n[[watch]]\nname = \"acme.ref\"\nkind = \"openapi\"\npath = \"root.yaml\"\ntimeout = \"5s\"\n",
    );
    let cfg = sb.config_arg();
    let limit = Duration::from_secs(20);
    let run = finish_within(&sb, sb.spawn(&["check", "--config", &cfg, "--json"]), limit);
    run.assert_code(1);
    let check = run.json();
    for watch in ["acme.fifo", "acme.ref"] {
        let outcome = outcome_for(&check, watch);
        assert_eq!(outcome["action"], "error", "{outcome}");
        assert!(
            outcome["error"]
                .as_str()
                .unwrap_or("")
                .contains("not a regular file"),
            "{outcome}"
        );
    }
    assert_eq!(sb.registry_version(), 0);
    // `diff` of a FIFO, and of a document with a `$ref` to one.
    for new in ["pets.fifo", "root.yaml"] {
        let run = finish_within(
            &sb,
            sb.spawn(&["diff", "--kind", "openapi", "pets.json", new]),
            limit,
        );
        assert_eq!(run.code, 2, "{}", run.describe());
        assert!(
            run.stderr_text().contains("not a regular file"),
            "{}",
            run.describe()
        );
    }
}

/// H19: a TOML error in a config quotes neither the offending value nor its line (was:
/// `(at `…`)` with the text, and serde's `invalid type: string "…"`): a secret pasted into
/// the wrong place, or a header value with a typo, stays out of the terminal. File, line and
/// column still say where.
#[test]
fn h19_toml_errors_say_where_never_what() {
    const SECRET: &str = "s3cr3t-0dd5-value";
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let cfg = sb.config_arg();
    let watch = "[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n";
    for (text, line, column) in [
        // An unterminated header value.
        (
            format!("{watch}[watch.schema_headers]\nAuthorization = \"Bearer {SECRET}\n"),
            6,
            "Authorization = \"Bearer ".len() + SECRET.len() + 1,
        ),
        // A secret where a number belongs.
        (
            format!("[storage]\nkeep_versions = \"{SECRET}\"\n\n{watch}"),
            2,
            17,
        ),
        // A secret where a table belongs.
        (format!("storage = \"{SECRET}\"\n\n{watch}"), 1, 11),
        // A secret as a bare value.
        (
            format!("[storage]\nkeep_versions = {SECRET}\n\n{watch}"),
            2,
            17,
        ),
    ] {
        sb.write_config(&text);
        let run = sb.run(&["config", "check", "--config", &cfg]);
        assert_eq!(run.code, 2, "{}", run.describe());
        let err = run.stderr_text();
        assert!(!err.contains(SECRET), "the value is quoted back: {err}");
        assert!(
            !err.contains("s3cr3t"),
            "part of the value is quoted back: {err}"
        );
        assert!(
            err.contains("schemawatch.toml")
                && err.contains(&format!("line {line}, column {column}:")),
            "{text}\n{err}"
        );
    }
}

/// H20: a config that includes itself through another spelling (`./schemawatch.toml`, a
/// glob run from a relative `--config`, a symlink to it) is recognised by its canonical path
/// and skipped (was: compared as text, so it was read as an included file and refused: "an
/// included file holds only [[watch]] tables").
#[test]
fn h20_a_config_never_includes_itself_under_another_spelling() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    std::os::unix::fs::symlink("schemawatch.toml", sb.path("link.toml")).unwrap();
    std::fs::create_dir(sb.path("watches.d")).unwrap();
    sb.write_file(
        "watches.d/more.toml",
        b"[[watch]]\nname = \"acme.more\"\nkind = \"openapi\"\npath = \"../pets.json\"\n",
    );
    sb.write_config(
        "include = [\"./schemawatch.toml\", \"link.toml\", \"*.toml\", \"watches.d/*.toml\"]\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n",
    );
    for config in [
        sb.config_arg().as_str(),
        "schemawatch.toml",
        "./schemawatch.toml",
        "link.toml",
    ] {
        let run = sb.run(&["config", "check", "--config", config]);
        assert_eq!(run.code, 0, "--config {config}: {}", run.describe());
        assert!(
            run.stdout_text().contains("2 watches, 1 included file"),
            "--config {config}: {}",
            run.describe()
        );
    }
}

/// H21: a symlink loop under a `**` include glob (was: `config check` grew without bound,
/// 570 MB) is not followed: folder symlinks are never walked into, so `config check` ends at
/// once with the real files; more matches than the bound are a clear error.
#[test]
fn h21_include_globs_do_not_follow_symlink_loops_and_are_bounded() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    std::fs::create_dir_all(sb.path("w/sub")).unwrap();
    // Two loops: every path through them is a new path (2^n of them), as a glob sees it.
    std::os::unix::fs::symlink(".", sb.path("w/a")).unwrap();
    std::os::unix::fs::symlink("..", sb.path("w/sub/b")).unwrap();
    sb.write_file(
        "w/sub/more.toml",
        b"[[watch]]\nname = \"acme.more\"\nkind = \"openapi\"\npath = \"../../pets.json\"\n",
    );
    sb.write_config(
        "include = [\"w/**/*.toml\"]\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n",
    );
    let cfg = sb.config_arg();
    let run = finish_within(
        &sb,
        sb.spawn(&["config", "check", "--config", &cfg]),
        Duration::from_secs(20),
    );
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(
        run.stdout_text().contains("2 watches, 1 included file"),
        "{}",
        run.describe()
    );
    // More files than the bound (10,000): refused, naming the pattern and the bound.
    std::fs::create_dir(sb.path("many")).unwrap();
    for i in 0..10_001 {
        std::fs::write(sb.path(&format!("many/{i}.toml")), "").unwrap();
    }
    sb.write_config("include = [\"many/*.toml\"]\n");
    let run = sb.run(&["config", "check", "--config", &cfg]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(
        run.stderr_text().contains("more than 10000 files")
            && run.stderr_text().contains("many/*.toml"),
        "{}",
        run.describe()
    );
}

/// `args` as an unprivileged user (nobody) when the tests run as root, whom file modes do not
/// stop; as the current user otherwise.
fn run_unprivileged(sb: &Sandbox, args: &[&str]) -> Run {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false);
    if !root {
        return sb.run(args);
    }
    let mut cmd = sb.command(&[]);
    let mut wrapped = std::process::Command::new("setpriv");
    wrapped
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", bin()])
        .args(args)
        .current_dir(sb.dir.path())
        .stdin(std::process::Stdio::null());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    let _ = &mut cmd;
    let output = wrapped.output().expect("run setpriv");
    Run {
        args: args.iter().map(|s| s.to_string()).collect(),
        code: output.status.code().expect("exited normally"),
        stdout: output.stdout,
        stderr: output.stderr,
    }
}

/// H22: the read-only commands work on a read-only registry (a 0444 file in a 0555 folder,
/// as a backup or a mounted snapshot is): `status`, `history`, `pending list` / `show`,
/// `catalog export`, `pin capture` and `triage` (was: "attempt to write a readonly database"
/// from each); a write (`check`) is still refused, and nothing is written.
#[test]
fn h22_read_only_commands_work_on_a_read_only_registry() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n",
    );
    let (run, _) = sb.check(&[]);
    run.assert_code(0);
    sb.write_file("pets.json", &Pets::v3().bytes());
    let (run, check) = sb.check(&[]);
    assert_eq!(
        only_outcome(&check)["action"],
        "pending_review",
        "{}",
        run.describe()
    );
    let review = only_outcome(&check)["review_id"].as_i64().unwrap();
    let review = review.to_string();
    let cfg = sb.config_arg();
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
    };
    for entry in std::fs::read_dir(sb.dir.path()).unwrap() {
        mode(&entry.unwrap().path(), 0o444);
    }
    mode(sb.dir.path(), 0o555);
    let before: Vec<(std::path::PathBuf, Vec<u8>)> = sb.all_files();
    for args in [
        vec!["status", "--config", &cfg],
        vec!["status", "--config", &cfg, "--json"],
        vec!["history", "acme.pets", "--config", &cfg],
        vec!["pending", "list", "--config", &cfg],
        vec!["pending", "show", &review, "--config", &cfg],
        vec!["catalog", "export", "--config", &cfg],
        vec!["pin", "capture", "--config", &cfg],
        vec!["triage", "--config", &cfg],
    ] {
        let run = run_unprivileged(&sb, &args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.describe());
        assert!(!run.stdout.is_empty(), "{args:?}: {}", run.describe());
    }
    let status = run_unprivileged(&sb, &["status", "--config", &cfg, "--json"]);
    assert!(
        status.stdout_text().contains("acme.pets"),
        "{}",
        status.describe()
    );
    // A write is refused, clearly.
    let run = run_unprivileged(&sb, &["check", "--config", &cfg]);
    assert_ne!(run.code, 0, "{}", run.describe());
    assert!(run.stderr_text().contains("registry"), "{}", run.describe());
    mode(sb.dir.path(), 0o755);
    assert_eq!(
        sb.all_files(),
        before,
        "a read-only command wrote something"
    );
}

/// H25: `max_bytes` has an upper bound, 1 GiB (was: any size, `9223372036854775807` or
/// `"8000000GiB"` included, so a provider could make a watch hold any amount in memory):
/// `config check` refuses a larger one naming the watch, the line and the bound.
#[test]
fn h25_max_bytes_is_bounded() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let cfg = sb.config_arg();
    let watch = "[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n";
    for value in [
        "\"1025MiB\"",
        "\"8000000GiB\"",
        "9223372036854775807",
        "1073741825",
    ] {
        sb.write_config(&format!("{watch}max_bytes = {value}\n"));
        let run = sb.run(&["config", "check", "--config", &cfg]);
        assert_eq!(run.code, 2, "{value}: {}", run.describe());
        let err = run.stderr_text();
        assert!(
            err.contains("max_bytes")
                && err.contains("above the largest allowed, 1GiB")
                && err.contains("acme.pets")
                && err.contains("line 2"),
            "{value}: {err}"
        );
    }
    for value in ["\"1GiB\"", "1073741824", "\"32MiB\""] {
        sb.write_config(&format!("{watch}max_bytes = {value}\n"));
        let run = sb.run(&["config", "check", "--config", &cfg]);
        assert_eq!(run.code, 0, "{value}: {}", run.describe());
    }
    // The document is still read whole under a large cap.
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n{watch}max_bytes = \"1GiB\"\n"
    ));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered");
}
