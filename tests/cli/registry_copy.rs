//! `schemawatch registry copy` through the binary: a registry copied file to file reads back
//! the same through every command, a second copy into it is refused (exit 1, nothing
//! changed), a password is never taken from the command line, and (on the test cluster)
//! SQLite to PostgreSQL and back.

use crate::common;

use common::*;
use serde_json::Value;

fn config(registry: &str, url: &str) -> String {
    format!(
        r#"[storage]
path = "{registry}"

[[watch]]
name = "acme.pets"
kind = "openapi"
url = "{url}"
"#
    )
}

/// A registry with a registered watch and a queued (or applied) second version, behind the
/// config `source.toml`; the server is returned to keep it up.
fn source_registry(sb: &Sandbox) -> DocServer {
    let server = DocServer::start(Pets::v1().bytes());
    sb.write_file(
        "source.toml",
        config("source.sqlite3", &server.url()).as_bytes(),
    );
    let cfg = sb.path("source.toml").to_string_lossy().into_owned();
    sb.run(&["check", "--config", &cfg]).assert_code(0);
    server.set_document(Pets::v2().bytes());
    sb.run(&["check", "--config", &cfg]);
    server
}

/// What `pending list`, `history` and `status` print for the registry of `config_file`.
fn read_back(sb: &Sandbox, config_file: &str) -> Vec<Value> {
    let cfg = sb.path(config_file).to_string_lossy().into_owned();
    [
        vec!["pending", "list", "--config", &cfg, "--json"],
        vec!["history", "acme.pets", "--config", &cfg, "--json"],
        vec!["status", "--config", &cfg, "--json"],
    ]
    .iter()
    .map(|args| {
        let run = sb.run(args);
        run.assert_code(0);
        run.json()
    })
    .collect()
}

#[test]
fn a_copy_reads_back_the_same_and_a_second_copy_into_it_is_refused() {
    let sb = Sandbox::new();
    let server = source_registry(&sb);
    sb.write_file(
        "copy.toml",
        config("copy.sqlite3", &server.url()).as_bytes(),
    );
    let run = sb.run(&[
        "registry",
        "copy",
        "--from",
        "source.sqlite3",
        "--to",
        "copy.sqlite3",
    ]);
    run.assert_code(0);
    let out = run.stdout_text();
    assert!(out.contains("verified "), "{}", run.describe());
    let tools = out
        .lines()
        .find(|l| l.starts_with("tools "))
        .unwrap_or_else(|| panic!("no tools line: {out}"));
    assert_eq!(tools.split_whitespace().nth(1), Some("1"), "{out}");
    // The table lines come in one order, whatever the data.
    let tables: Vec<&str> = out
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with("reviews high-water"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(tables.first(), Some(&"registry_head"), "{out}");
    assert_eq!(tables.last(), Some(&"deliveries"), "{out}");
    let original = read_back(&sb, "source.toml");
    assert_eq!(read_back(&sb, "copy.toml"), original);

    let again = sb.run(&[
        "registry",
        "copy",
        "--from",
        "source.sqlite3",
        "--to",
        "copy.sqlite3",
    ]);
    again.assert_code(1);
    assert!(
        again.stderr_text().contains("not empty"),
        "{}",
        again.describe()
    );
    assert_eq!(read_back(&sb, "copy.toml"), original);
}

#[test]
fn passwords_never_come_from_the_command_line() {
    let sb = Sandbox::new();
    // No such option.
    let run = sb.run(&[
        "registry",
        "copy",
        "--from",
        "a.sqlite3",
        "--to",
        "b.sqlite3",
        "--password",
        "s3cret-pw",
    ]);
    run.assert_code(2);
    assert!(
        run.stderr_text().contains("unexpected argument"),
        "{}",
        run.describe()
    );
    // Nor in a URL: refused, and not repeated.
    sb.write_file("a.sqlite3", b"");
    let run = sb.run(&[
        "registry",
        "copy",
        "--from",
        "a.sqlite3",
        "--to",
        "postgresql://sw:s3cret-pw@127.0.0.1:1/registry",
    ]);
    run.assert_code(2);
    assert!(
        run.stderr_text().contains("password in the registry URL"),
        "{}",
        run.describe()
    );
    assert!(find_secret(&sb.transcript(), "s3cret-pw").is_none());
    // A missing source is not created (nor the target).
    let run = sb.run(&[
        "registry",
        "copy",
        "--from",
        "missing.sqlite3",
        "--to",
        "b.sqlite3",
    ]);
    run.assert_code(2);
    assert!(!sb.path("missing.sqlite3").exists() && !sb.path("b.sqlite3").exists());
}

#[test]
fn sqlite_to_postgresql_and_back_reads_back_the_same() {
    let Some(db) = common::postgres::database() else {
        return;
    };
    let sb = Sandbox::new();
    let server = source_registry(&sb);
    let copy = |from: &str, to: &str| {
        let out = sb
            .command(&[
                "registry",
                "copy",
                "--from",
                from,
                "--to",
                to,
                "--ca-file",
                &db.cluster.ca.to_string_lossy(),
            ])
            .env("PGPASSFILE", &db.cluster.passfile)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let url = db.url();
    assert!(copy("source.sqlite3", &url).contains("verified "));
    assert!(copy(&url, "back.sqlite3").contains("verified "));
    sb.write_file(
        "back.toml",
        config("back.sqlite3", &server.url()).as_bytes(),
    );
    assert_eq!(read_back(&sb, "back.toml"), read_back(&sb, "source.toml"));
}
