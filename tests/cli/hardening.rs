//! Issue 20's hostile-input probe, through the binary: each test reproduces one scenario of
//! docs/reliability.md's H rows (a careless operator's config, a hostile local file).

use crate::common;

use common::*;

fn check_config(sb: &Sandbox, text: &str) -> Run {
    sb.write_config(text);
    let cfg = sb.config_arg();
    sb.run(&["config", "check", "--config", &cfg])
}

/// Asserts `config check` refuses the config (exit 2), naming the file, the line and `needle`.
fn assert_refused(sb: &Sandbox, text: &str, line: usize, needle: &str) {
    let run = check_config(sb, text);
    run.assert_code(2);
    let err = run.stderr_text();
    assert!(
        err.contains("schemawatch.toml") && err.contains(&format!("line {line}")),
        "names file and line {line}: {}",
        run.describe()
    );
    assert!(
        err.contains(needle),
        "mentions {needle:?}: {}",
        run.describe()
    );
    assert!(!err.contains("panicked"), "{}", run.describe());
}

const WATCH: &str = "[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n";

/// H9: absurd durations (which used to pass and then panic a worker or the main thread on
/// SIGTERM) and sub-second intervals (3,019 requests in 8 s) are config errors.
#[test]
fn h9_durations_out_of_bounds_are_refused_with_file_and_line() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    for (value, key) in [
        ("500000000000years", "interval"),
        ("1ns", "interval"),
        ("999ms", "interval"),
        ("366days", "interval"),
    ] {
        assert_refused(&sb, &format!("{WATCH}{key} = \"{value}\"\n"), 5, "interval");
    }
    assert_refused(
        &sb,
        &format!("{WATCH}interval = \"1m\"\ntimeout = \"500000000000years\"\n"),
        6,
        "timeout",
    );
    assert_refused(
        &sb,
        &format!("[daemon]\ndrain_timeout = \"500000000000years\"\n\n{WATCH}"),
        2,
        "drain_timeout",
    );
    // `run` refuses the same config before it starts (exit 2, no panic).
    sb.write_config(&format!("{WATCH}interval = \"500000000000years\"\n"));
    let cfg = sb.config_arg();
    let run = sb.run(&["run", "--config", &cfg]);
    run.assert_code(2);
    assert!(
        !run.stderr_text().contains("panicked"),
        "{}",
        run.describe()
    );
    // The bounds themselves are accepted.
    check_config(
        &sb,
        &format!("{WATCH}interval = \"1s\"\ntimeout = \"1h\"\n"),
    )
    .assert_code(0);
    check_config(&sb, &format!("{WATCH}interval = \"365days\"\n")).assert_code(0);
}

pub(crate) fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// H3: a `${file:…}` secret that is a FIFO makes `check` fail at once with a clear error (it
/// used to hang), and a relative secret path resolves against the config file's folder (it
/// used to resolve against the working directory).
#[test]
fn h3_secret_files_are_regular_files_relative_to_the_config() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    let conf = sb.path("conf");
    std::fs::create_dir(&conf).unwrap();
    mkfifo(&conf.join("token.fifo"));
    std::fs::write(conf.join("token.txt"), "relative-secret-4e1\n").unwrap();
    // The working directory (the sandbox) has a decoy of the same name.
    sb.write_file("token.txt", b"wrong-folder-secret\n");
    let config = conf.join("sw.toml");
    let watch = |name: &str, file: &str| {
        format!(
            "[[watch]]\nname = \"{name}\"\nkind = \"openapi\"\nurl = \"{}\"\n[watch.schema_headers]\nAuthorization = \"Bearer ${{file:{file}}}\"\n",
            server.url()
        )
    };
    std::fs::write(&config, watch("acme.fifo", "token.fifo")).unwrap();
    let cfg = config.to_string_lossy().into_owned();
    let started = std::time::Instant::now();
    let run = sb.run(&["check", "--config", &cfg, "--json"]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "check took {:?}",
        started.elapsed()
    );
    run.assert_code(1);
    let outcome = run.json();
    let error = only_outcome(&outcome)["error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        error.contains("not a regular file") && error.contains("token.fifo"),
        "{}",
        run.describe()
    );
    assert_eq!(
        server.counters().requests,
        0,
        "nothing sent without the secret"
    );

    std::fs::write(&config, watch("acme.rel", "token.txt")).unwrap();
    sb.run(&["check", "--config", &cfg, "--json"])
        .assert_code(0);
    assert_eq!(
        server.authorization_values(),
        vec![Some("Bearer relative-secret-4e1".to_string())]
    );
}

/// H6: a registry is created only when no file exists (and never with `create = false`); an
/// empty or foreign file is an error, never taken as a fresh registry (a 0-byte file used to
/// be, with every watch "registered" again as a new trusted baseline).
#[test]
fn h6_registry_files_are_created_only_when_none_exists() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let registry = sb.path("registry.sqlite3");
    let cfg = sb.config_arg();
    // create = false: refused, nothing created.
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\ncreate = false\n\n{WATCH}"
    ));
    let run = sb.run(&["check", "--config", &cfg]);
    run.assert_code(2);
    assert!(
        run.stderr_text().contains("no registry at"),
        "{}",
        run.describe()
    );
    assert!(!registry.exists());
    // A 0-byte file and a text file are errors, and stay as they are.
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n{WATCH}"
    ));
    for (bytes, why) in [
        (&b""[..], "the file is empty"),
        (&b"hello, not a database\n"[..], "not an SQLite database"),
    ] {
        std::fs::write(&registry, bytes).unwrap();
        let run = sb.run(&["check", "--config", &cfg]);
        run.assert_code(2);
        let err = run.stderr_text();
        assert!(
            err.contains("is not a schemawatch registry") && err.contains(why),
            "{}",
            run.describe()
        );
        assert_eq!(std::fs::read(&registry).unwrap(), bytes);
    }
    // No file: created (the default), and then used as it is.
    std::fs::remove_file(&registry).unwrap();
    sb.run(&["check", "--config", &cfg]).assert_code(0);
    assert!(registry.metadata().unwrap().len() > 0);
    sb.run(&["check", "--config", &cfg]).assert_code(0);
    assert_eq!(sb.history("acme.pets").len(), 1);
}

/// H7: a credential in a URL query (`?token=X`) is redacted in every output — after a rotation
/// the watch goes stale, and the stale error used to print both tokens in `status`,
/// `/v1/status` and the log — and `[watch.schema_query]` sends a secret parameter that is
/// never part of the identity, stored or shown (a rotation is not a source change).
#[test]
fn h7_query_credentials_are_never_shown_or_stored() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    let cfg = sb.config_arg();
    let url_watch = |token: &str| {
        format!(
            "[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\nurl = \"{}?version=2&token={token}\"\n",
            server.url()
        )
    };
    sb.write_config(&url_watch("first-token-71c"));
    sb.run(&["check", "--config", &cfg]).assert_code(0);
    sb.write_config(&url_watch("second-token-9d2"));
    let run = sb.run(&["check", "--config", &cfg, "--json"]);
    let outcome = run.json();
    assert_eq!(
        only_outcome(&outcome)["action"],
        "stale",
        "{}",
        run.describe()
    );
    let stale = only_outcome(&outcome)["error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(stale.contains("token=[redacted]"), "{}", run.describe());
    let status = sb.run(&["status", "--config", &cfg]);
    assert!(
        status.stdout_text().contains("token=[redacted]"),
        "{}",
        status.describe()
    );
    sb.status();
    let printed = sb.transcript();
    for token in ["first-token-71c", "second-token-9d2"] {
        assert!(
            find_secret(&printed, token).is_none(),
            "{token} was printed"
        );
    }

    // The secret parameter: sent, never stored or printed; a new value is not a new source.
    let sb = Sandbox::new();
    let cfg = sb.config_arg();
    sb.write_config(&format!(
        "[[watch]]\nname = \"acme.keyed\"\nkind = \"openapi\"\nurl = \"{}\"\n[watch.schema_query]\napi_key = \"${{{TOKEN_VAR}}}\"\n",
        server.url()
    ));
    let before = server.queries().len();
    sb.run(&["check", "--config", &cfg]).assert_code(0);
    let sent = server.queries()[before..].to_vec();
    assert_eq!(sent, vec![Some(format!("api_key={CANARY}"))]);
    let rotated = sb
        .command(&["check", "--config", &cfg, "--json"])
        .env(TOKEN_VAR, "rotated-value-3f0")
        .output()
        .unwrap();
    assert_eq!(
        rotated.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&rotated.stdout)
    );
    let outcome: serde_json::Value = serde_json::from_slice(&rotated.stdout).unwrap();
    assert_ne!(only_outcome(&outcome)["action"], "stale", "{outcome}");
    assert!(
        server.queries().last().unwrap().as_deref() == Some("api_key=rotated-value-3f0"),
        "{:?}",
        server.queries()
    );
    sb.status();
    assert!(
        find_canary(&sb.transcript()).is_none(),
        "the canary was printed"
    );
    for (path, bytes) in sb.all_files() {
        assert!(
            find_canary(&bytes).is_none(),
            "the canary is in {}",
            path.display()
        );
    }
}

/// H10: a file watch's identity does not depend on how `--config` is spelled (a registry
/// written with `--config conf/sw.toml` turned every file watch stale under
/// `--config /abs/conf/sw.toml`), and the relative identities older releases stored are
/// migrated on open.
#[test]
fn h10_file_identities_do_not_depend_on_the_config_spelling() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("conf")).unwrap();
    std::fs::write(sb.path("conf/pets.json"), Pets::v1().bytes()).unwrap();
    let config = sb.path("conf/sw.toml");
    std::fs::write(
        &config,
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n",
    )
    .unwrap();
    let absolute = config.to_string_lossy().into_owned();
    let action = |spelling: &str| {
        let run = sb.run(&["check", "--config", spelling, "--json"]);
        only_outcome(&run.json())["action"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // The working directory is the sandbox: three spellings of one file.
    assert_eq!(action("conf/sw.toml"), "registered");
    assert_eq!(action(&absolute), "unchanged");
    assert_eq!(action("./conf/../conf/sw.toml"), "unchanged");

    // A registry of an older release: the identity stored relative to the working directory.
    let db = rusqlite::Connection::open(sb.path("conf/registry.sqlite3")).unwrap();
    db.execute(
        "UPDATE watch_state SET source_identity = 'path:conf/pets.json' WHERE watch = 'acme.pets'",
        [],
    )
    .unwrap();
    drop(db);
    assert_eq!(action(&absolute), "unchanged");
    let db = rusqlite::Connection::open(sb.path("conf/registry.sqlite3")).unwrap();
    let stored: String = db
        .query_row(
            "SELECT source_identity FROM watch_state WHERE watch = 'acme.pets'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let canonical = std::fs::canonicalize(sb.path("conf/pets.json")).unwrap();
    assert_eq!(stored, format!("path:{}", canonical.display()));
    // A watch whose file really changed is still stale.
    std::fs::write(sb.path("conf/other.json"), Pets::v1().bytes()).unwrap();
    std::fs::write(
        &config,
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"other.json\"\n",
    )
    .unwrap();
    assert_eq!(action(&absolute), "stale");
}

/// H11 (weak points): `config check` refuses a `listen` that is not an address, an unset
/// `${VAR}` in a header, and watch names without a dot or with a leading `-`, naming file and
/// line (all used to pass).
#[test]
fn h11_config_check_refuses_bad_listen_unset_header_vars_and_bad_names() {
    let sb = Sandbox::new();
    assert_refused(
        &sb,
        &format!("[server]\nlisten = \"not-an-addr\"\n\n{WATCH}"),
        2,
        "server.listen",
    );
    assert_refused(
        &sb,
        &format!(
            "{WATCH}[watch.schema_headers]\nAuthorization = \"Bearer ${{SW_SURELY_UNSET_71}}\"\n"
        ),
        2,
        "SW_SURELY_UNSET_71",
    );
    // Only `config check` and `run` insist: an operator's `status` works without the secret.
    let cfg = sb.config_arg();
    sb.run(&["status", "--config", &cfg]).assert_code(0);
    for bad in ["nodot", "-lead.dash"] {
        assert_refused(&sb, &WATCH.replace("acme.pets", bad), 2, "namespace.name");
    }
    check_config(
        &sb,
        &format!("[server]\nlisten = \"[::1]:9477\"\n\n{WATCH}"),
    )
    .assert_code(0);
}

/// H11: a reviewer or reason with control characters is refused (a newline in the reviewer
/// used to forge a log line).
#[test]
fn h11_reviewer_and_reason_refuse_control_characters() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(WATCH);
    let cfg = sb.config_arg();
    sb.run(&["check", "--config", &cfg]).assert_code(0);
    let forged = "alice\n2026-12-01T00:00:00Z  INFO review_accepted reviewer=admin";
    for args in [
        ["--reviewer", forged, "--reason", "ok"],
        ["--reviewer", "alice", "--reason", "ok\u{1b}[2J"],
    ] {
        let mut all = vec!["pending", "accept", "1", "--config", cfg.as_str()];
        all.extend(args);
        let run = sb.run(&all);
        run.assert_code(2);
        assert!(
            run.stderr_text().contains("control characters"),
            "{}",
            run.describe()
        );
    }
}

/// H11: the `pending_review` log line carries the grounds of the first changes and a count
/// (100,000 changes made a 7.3 MB line).
#[test]
fn h11_the_pending_review_log_line_is_capped() {
    let sb = Sandbox::new();
    let mut doc = Pets::v1().json();
    let paths = doc["paths"].as_object_mut().unwrap();
    for i in 0..40 {
        paths.insert(
            format!("/extra{i}"),
            serde_json::json!({"get": {"operationId": format!("extra{i}"), "responses": {"200": {"description": "ok"}}}}),
        );
    }
    sb.write_file("pets.json", doc.to_string().as_bytes());
    sb.write_config(WATCH);
    let cfg = sb.config_arg();
    sb.run(&["check", "--config", &cfg]).assert_code(0);
    sb.write_file("pets.json", &Pets::v1().bytes());
    let run = sb.run(&["check", "--config", &cfg]);
    let log = run.stderr_text();
    let line = log
        .lines()
        .find(|l| l.contains("pending_review"))
        .unwrap_or_else(|| panic!("no pending_review line: {}", run.describe()));
    assert!(line.contains("\"grounds_omitted\":20"), "{line}");
    assert_eq!(
        line.matches("endpoint-removed").count(),
        21,
        "20 grounds and the warrant: {line}"
    );
}
