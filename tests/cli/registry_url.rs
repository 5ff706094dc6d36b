//! `[storage] url`: the registry on the harness PostgreSQL cluster through the binary. A
//! fresh database becomes a registry (or is refused with `create = false`); the password
//! comes from `password_file`, `password = "${VAR}"` or PGPASSFILE, never from PGPASSWORD;
//! and the password shows in no output, no log line and no registry row.

use crate::common;

use common::postgres::{self, Database};
use common::*;
use std::process::Output;

/// A login role owning `db` (so it may create the registry's tables in its `public` schema),
/// whose password is the credential canary.
fn owner_role(db: &Database) -> String {
    let role = format!("{}_owner", db.name);
    db.sql(&format!("CREATE ROLE \"{role}\" LOGIN PASSWORD '{CANARY}'"));
    db.sql(&format!(
        "ALTER DATABASE \"{}\" OWNER TO \"{role}\"",
        db.name
    ));
    role
}

/// `postgresql://ROLE@127.0.0.1:PORT/DB`.
fn url_for(db: &Database, role: &str) -> String {
    db.url().replacen("schemawatch@", &format!("{role}@"), 1)
}

/// A config whose registry is `db` as `role`, with `password_line` (say `password_file =
/// "pw"`) and `extra` lines in `[storage]`, and no watch.
fn config(db: &Database, role: &str, password_line: &str, extra: &str) -> String {
    format!(
        "[storage]\nurl = \"{}\"\nca_file = \"{}\"\n{password_line}\n{extra}\n",
        url_for(db, role),
        db.cluster.ca.display()
    )
}

/// Runs the binary with PGPASSFILE pointing nowhere (so only the configured source can supply
/// a password) and `env` set on top.
fn run(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = sb.command(args);
    cmd.env("PGPASSFILE", sb.path("no-such-passfile"))
        .env_remove("PGPASSWORD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run schemawatch")
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every table of `db`'s `public` schema, every row, as text.
fn dump(db: &Database) -> String {
    db.sql(
        "SELECT string_agg(table_name || ': ' || query_to_xml(format('SELECT * FROM %I', table_name), true, false, '')::text, E'\\n')
           FROM information_schema.tables WHERE table_schema = 'public'",
    )
}

/// `watch reset acme.shop`: a write through the registry (until the contracts move lands,
/// `status` and every command reading contracts answer `NotOnPostgres` on PostgreSQL). On a
/// registry without that watch's state it answers `no stored state` (exit 1).
fn reset(sb: &Sandbox, env: &[(&str, &str)]) -> Output {
    let cfg = sb.config_arg();
    run(sb, &["watch", "reset", "acme.shop", "--config", &cfg], env)
}

/// Whether `out` is the registry's own answer to [`reset`] on a fresh registry.
fn answered(out: &Output) -> bool {
    out.status.code() == Some(1)
        && String::from_utf8_lossy(&out.stderr).contains("no stored state for \"acme.shop\"")
}

fn registry_tables(db: &Database) -> String {
    db.sql("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('schema_migrations', 'registry_head')")
}

/// `config check` names the registry by its URL (no password); `status` against a fresh
/// database creates the registry there and lists no watch; `create = false` refuses a
/// database that holds no registry, creating nothing.
#[test]
fn a_registry_url_names_the_database_and_becomes_the_registry() {
    let Some(db) = postgres::database() else {
        return;
    };
    let role = owner_role(&db);
    let sb = Sandbox::new();
    sb.write_file("pw", format!("{CANARY}\n").as_bytes());
    let cfg = sb.config_arg();

    sb.write_config(&config(
        &db,
        &role,
        "password_file = \"pw\"",
        "create = false",
    ));
    let refused = reset(&sb, &[]);
    assert_ne!(refused.status.code(), Some(0), "{}", describe(&refused));
    let text = describe(&refused);
    assert!(
        text.contains("no registry at") && text.contains(&url_for(&db, &role)),
        "{text}"
    );
    assert_eq!(registry_tables(&db), "0", "nothing created");

    sb.write_config(&config(&db, &role, "password_file = \"pw\"", ""));
    let checked = run(&sb, &["config", "check", "--config", &cfg], &[]);
    assert_eq!(checked.status.code(), Some(0), "{}", describe(&checked));
    let shown = format!("storage: {}", url_for(&db, &role));
    assert!(
        String::from_utf8_lossy(&checked.stdout).contains(&shown),
        "{}",
        describe(&checked)
    );

    let fresh = reset(&sb, &[]);
    assert!(answered(&fresh), "{}", describe(&fresh));
    assert_eq!(registry_tables(&db), "2", "the registry was created");
    // A watch in `error` is reset through the binary, and the row says so.
    db.sql("INSERT INTO watch_state (watch, kind, status, last_error, consecutive_failures) VALUES ('acme.shop', 'openapi', 'error', 'boom', 3)");
    let out = reset(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("reset acme.shop"),
        "{}",
        describe(&out)
    );
    assert_eq!(
        db.sql("SELECT status || '|' || consecutive_failures || '|' || COALESCE(last_error, '-') FROM watch_state WHERE watch = 'acme.shop'"),
        "idle|0|-"
    );
    // A database holding someone else's tables is never taken as a new registry.
    let other = postgres::database().expect("a second database");
    let other_role = owner_role(&other);
    other.sql(&format!(
        "CREATE TABLE orders (id int); ALTER TABLE orders OWNER TO \"{other_role}\""
    ));
    let foreign = Sandbox::new();
    foreign.write_file("pw", format!("{CANARY}\n").as_bytes());
    foreign.write_config(&config(&other, &other_role, "password_file = \"pw\"", ""));
    let refused = reset(&foreign, &[]);
    assert_ne!(refused.status.code(), Some(0), "{}", describe(&refused));
    assert!(
        describe(&refused).contains("is not a schemawatch registry"),
        "{}",
        describe(&refused)
    );
    assert_eq!(
        registry_tables(&other),
        "0",
        "nothing created beside orders"
    );
    // `create = false` opens the registry now that it exists.
    sb.write_config(&config(
        &db,
        &role,
        "password_file = \"pw\"",
        "create = false",
    ));
    let out = reset(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
}

/// Every command works on a PostgreSQL registry (issue 33, item 5): `check` registers and
/// queues a breaking change, `status`, `pending list|show|accept`, `history`, `catalog export`,
/// `pin capture`, `inspect diff` with a URL for the registry, `watch reset` and `watch forget`
/// answer as on SQLite; none panics (the blocking client never runs on a runtime worker), and
/// the password shows in no output.
#[test]
fn every_command_works_on_a_postgresql_registry() {
    let Some(db) = postgres::database() else {
        return;
    };
    let role = owner_role(&db);
    let sb = Sandbox::new();
    sb.write_file("pw", format!("{CANARY}\n").as_bytes());
    let v1 = br#"{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"operationId":"getA","responses":{"200":{"description":"ok"}}}},"/b":{"get":{"operationId":"getB","responses":{"200":{"description":"ok"}}}}}}"#;
    // `/b` removed: breaking, queued for review.
    let v2 = br#"{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"operationId":"getA","responses":{"200":{"description":"ok"}}}}}}"#;
    sb.write_file("doc.json", v1);
    let cfg = sb.config_arg();
    sb.write_config(&format!(
        "{}[server]\nlisten = \"127.0.0.1:0\"\n\n[[watch]]\nname = \"acme.shop\"\nkind = \"openapi\"\npath = \"doc.json\"\n",
        config(&db, &role, "password_file = \"pw\"", "")
    ));
    let outputs = std::cell::RefCell::new(String::new());
    let ok = |args: &[&str], codes: &[i32]| -> String {
        let out = run(&sb, args, &[]);
        let text = describe(&out);
        assert!(
            out.status.code().is_some_and(|c| codes.contains(&c)) && !text.contains("panicked"),
            "{args:?}: {text}"
        );
        outputs.borrow_mut().push_str(&text);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let checked = ok(&["check", "--config", &cfg], &[0]);
    assert!(checked.contains("registered"), "{checked}");
    sb.write_file("doc.json", v2);
    ok(&["check", "--config", &cfg], &[0, 1]);
    let pending = ok(&["pending", "list", "--config", &cfg, "--json"], &[0]);
    let reviews: serde_json::Value = serde_json::from_str(&pending).expect("json");
    let id = reviews[0]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("{pending}"));
    ok(
        &["pending", "show", &id.to_string(), "--config", &cfg],
        &[0],
    );
    ok(
        &[
            "pending",
            "accept",
            &id.to_string(),
            "--config",
            &cfg,
            "--reviewer",
            "ana",
            "--reason",
            "ok",
        ],
        &[0],
    );
    let history = ok(&["history", "acme.shop", "--config", &cfg], &[0]);
    assert_eq!(
        history.lines().filter(|l| l.starts_with('v')).count(),
        2,
        "{history}"
    );
    let status = ok(&["status", "--config", &cfg, "--json"], &[0]);
    let status: serde_json::Value = serde_json::from_str(&status).expect("json");
    assert_eq!(status["registry_version"], 2, "{status}");
    ok(&["catalog", "export", "--config", &cfg], &[0]);
    ok(&["pin", "capture", "--config", &cfg], &[0]);
    // `inspect diff` reads the same registry through its URL (the password from PGPASSFILE).
    let passfile = sb.write_file(
        "pgpass",
        format!(
            "127.0.0.1:{}:{}:{role}:{CANARY}\n",
            url::Url::parse(&db.url()).unwrap().port().unwrap(),
            db.name
        )
        .as_bytes(),
    );
    std::fs::set_permissions(
        &passfile,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let url = url_for(&db, &role);
    let diff = run(
        &sb,
        &[
            "inspect",
            "diff",
            "acme.shop",
            "--old-db",
            &url,
            "--new-db",
            &url,
            "--json",
        ],
        &[
            ("PGPASSFILE", passfile.to_str().unwrap()),
            ("PGSSLROOTCERT", db.cluster.ca.to_str().unwrap()),
        ],
    );
    assert!(diff.status.success(), "{}", describe(&diff));
    let same: serde_json::Value = serde_json::from_slice(&diff.stdout).expect("json");
    assert_eq!(same["compatibility"], "identical", "{same}");
    outputs.borrow_mut().push_str(&describe(&diff));
    ok(&["watch", "reset", "acme.shop", "--config", &cfg], &[0]);
    // Forgotten once it is out of the config.
    sb.write_config(&config(&db, &role, "password_file = \"pw\"", ""));
    ok(&["watch", "forget", "acme.shop", "--config", &cfg], &[0]);
    let status = ok(&["status", "--config", &cfg, "--json"], &[0]);
    let status: serde_json::Value = serde_json::from_str(&status).expect("json");
    assert_eq!(status["registry_version"], 3, "forget bumps: {status}");
    assert!(
        !outputs.borrow().contains(CANARY),
        "the password in an output"
    );
    assert!(!dump(&db).contains(CANARY), "the password in the registry");
}

/// `status` lists a fresh PostgreSQL registry's (no) watches.
#[test]
fn status_on_a_fresh_registry_url_is_clean() {
    let Some(db) = postgres::database() else {
        return;
    };
    let role = owner_role(&db);
    let sb = Sandbox::new();
    sb.write_file("pw", format!("{CANARY}\n").as_bytes());
    let cfg = sb.config_arg();
    sb.write_config(&config(&db, &role, "password_file = \"pw\"", ""));
    let status = run(&sb, &["status", "--config", &cfg, "--json"], &[]);
    assert_eq!(status.status.code(), Some(0), "{}", describe(&status));
    let value: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(value["watches"], serde_json::json!([]), "{value}");
    assert_eq!(value["registry_version"], 0, "{value}");
}

/// PGPASSWORD holding the right password is not used (the watch kind reads it; the registry
/// must not): without another source the connection is refused; with `password_file` it
/// succeeds whatever PGPASSWORD says. `password = "${VAR}"` reads the variable, and PGPASSFILE
/// is matched by host, port, database and user.
#[test]
fn the_registry_password_never_comes_from_pgpassword() {
    let Some(db) = postgres::database() else {
        return;
    };
    let role = owner_role(&db);
    let sb = Sandbox::new();
    sb.write_file("pw", format!("{CANARY}\n").as_bytes());

    sb.write_config(&config(&db, &role, "", ""));
    let refused = reset(&sb, &[("PGPASSWORD", CANARY)]);
    assert_ne!(refused.status.code(), Some(0), "{}", describe(&refused));
    assert!(
        describe(&refused).contains("cannot connect to the registry database"),
        "{}",
        describe(&refused)
    );
    assert_eq!(registry_tables(&db), "0");

    sb.write_config(&config(&db, &role, "password_file = \"pw\"", ""));
    let ok = reset(&sb, &[("PGPASSWORD", "wrong-pgpassword")]);
    assert!(answered(&ok), "{}", describe(&ok));

    sb.write_config(&config(&db, &role, "password = \"${SW_TEST_TOKEN}\"", ""));
    let ok = reset(&sb, &[("PGPASSWORD", "wrong-pgpassword")]);
    assert!(answered(&ok), "{}", describe(&ok));

    // PGPASSFILE: a line for another database first, then this one's.
    let port = url::Url::parse(&db.url()).unwrap().port().unwrap();
    let passfile = sb.write_file(
        "pgpass",
        format!(
            "127.0.0.1:{port}:other:{role}:nope\n127.0.0.1:{port}:{}:{role}:{CANARY}\n",
            db.name
        )
        .as_bytes(),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    sb.write_config(&config(&db, &role, "", ""));
    let passfile = passfile.display().to_string();
    let ok = reset(
        &sb,
        &[
            ("PGPASSFILE", &passfile),
            ("PGPASSWORD", "wrong-pgpassword"),
        ],
    );
    assert!(answered(&ok), "{}", describe(&ok));
}

/// The credential canary: the registry's password (from `password_file`) is in no output or
/// debug log of a command that opens the registry, in no row of the registry, and not in the
/// error when it is wrong (the wrong one is not echoed either).
#[test]
fn the_registry_password_shows_nowhere() {
    let Some(db) = postgres::database() else {
        return;
    };
    let role = owner_role(&db);
    let sb = Sandbox::new();
    sb.write_file("pw", format!("{CANARY}\n").as_bytes());
    let cfg = sb.config_arg();
    sb.write_config(&config(&db, &role, "password_file = \"pw\"", ""));
    let mut transcript = Vec::new();
    // The first run creates the registry (every migration), the second resets a watch (a
    // write transaction, an event with its deliveries).
    let fresh = reset(&sb, &[]);
    assert!(answered(&fresh), "{}", describe(&fresh));
    db.sql("INSERT INTO watch_state (watch, kind, status, last_error, consecutive_failures) VALUES ('acme.shop', 'openapi', 'error', 'boom', 3)");
    let reset_run = reset(&sb, &[]);
    assert_eq!(reset_run.status.code(), Some(0), "{}", describe(&reset_run));
    let checked = run(&sb, &["config", "check", "--config", &cfg], &[]);
    assert_eq!(checked.status.code(), Some(0), "{}", describe(&checked));
    // `status` logs at the level RUST_LOG asks (debug): the connection, every migration
    // check and statement. Until the contracts move it then stops at `NotOnPostgres`.
    let status = run(&sb, &["status", "--config", &cfg, "--json"], &[]);
    assert!(
        matches!(status.status.code(), Some(0 | 2)),
        "{}",
        describe(&status)
    );
    for out in [&fresh, &reset_run, &checked, &status] {
        transcript.extend_from_slice(&out.stdout);
        transcript.extend_from_slice(&out.stderr);
    }
    assert!(
        String::from_utf8_lossy(&transcript).contains("DEBUG"),
        "the scan covers debug logs"
    );
    assert_eq!(find_canary(&transcript), None);
    let rows = dump(&db);
    assert!(rows.contains("registry_head"), "{rows}");
    assert_eq!(find_canary(rows.as_bytes()), None, "{rows}");

    let wrong = "wrong-5e1f0c3a9b-password";
    sb.write_file("pw", format!("{wrong}\n").as_bytes());
    let out = reset(&sb, &[]);
    assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
    let text = describe(&out);
    assert!(text.contains("password authentication failed"), "{text}");
    assert_eq!(find_secret(text.as_bytes(), wrong), None, "{text}");
    assert_eq!(find_canary(text.as_bytes()), None, "{text}");
}
