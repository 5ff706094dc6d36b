//! Issue 29's hostile-input probe, second half, through the binary: provider text that forges
//! CI workflow commands, credentials in `diff` URLs, refused PostgreSQL parameters, change ids,
//! accept files, CI format sizes. Each test reproduces one of docs/reliability.md's H30–H45 rows.

use crate::common;

use common::*;
use serde_json::{json, Value};

/// Provider text that tries every command a CI runner acts on: GitHub's `::` commands (also
/// after blanks and after a lone CR), the legacy `##[…]` anywhere in a line, GitLab's section
/// markers.
const FORGED: &str = "Lists pets.\n::error file=a.yaml,line=1::forged\n::add-mask::SECRET\n  ::stop-commands::tok\nx ##[set-output name=x;]y\r::warning::cr \u{1b}[0Ksection_start:1:evil\r\u{1b}[0K";

/// The lines of `bytes` a GitHub or GitLab runner would act on (lines end at LF or CR).
fn command_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .split(['\n', '\r'])
        .filter(|line| {
            line.trim_start().starts_with("::")
                || line.contains("##[")
                || line.contains("\u{1b}[0K")
                || line.contains("section_start:") && line.contains('\u{1b}')
        })
        .map(str::to_string)
        .collect()
}

fn assert_inert(run: &Run) {
    for (stream, bytes) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        let forged = command_lines(bytes);
        assert!(
            forged.is_empty(),
            "{stream} has lines a CI runner reads as commands: {forged:?}\n{}",
            run.describe()
        );
    }
}

fn pets(description: Option<&str>, extra: bool) -> Value {
    let mut d = json!({
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1.0.0"},
        "paths": {
            "/pets": {"get": {"operationId": "listPets",
                "responses": {"200": {"description": "ok"}}}},
            "/owners": {"get": {"operationId": "listOwners",
                "responses": {"200": {"description": "ok"}}}}
        }
    });
    if let Some(text) = description {
        d["paths"]["/pets"]["get"]["description"] = json!(text);
        // Provider text in a name and a path, too: it reaches messages and change paths.
        d["paths"][format!("/x{text}")] = json!({"get": {"operationId": format!("x{text}"),
            "responses": {"200": {"description": text}}}});
    }
    if !extra {
        d["paths"].as_object_mut().unwrap().remove("/owners");
    }
    d
}

/// H30: the forgery through `diff` in every rendering but `--format github` (whose own
/// commands are the point), `pending show` (text and JSON), `check`, `history`, and the error
/// paths: a document the normalizer refuses (stderr) and a watch whose document it refuses
/// (check's outcome line and its log).
#[test]
fn h30_provider_text_never_starts_a_workflow_command() {
    let sb = Sandbox::new();
    sb.write_file("old.json", &serde_json::to_vec(&pets(None, true)).unwrap());
    sb.write_file(
        "new.json",
        &serde_json::to_vec(&pets(Some(FORGED), false)).unwrap(),
    );
    // The forgery is really in the inputs the outputs are made from.
    assert!(!command_lines(FORGED.as_bytes()).is_empty());
    for extra in [
        &[][..],
        &["--json"],
        &["--markdown"],
        &["--format", "sarif"],
        &["--format", "junit"],
        &["--format", "gitlab"],
        &["--format", "json", "--fail-on", "breaking"],
    ] {
        let mut args = vec!["diff", "old.json", "new.json", "--date", "2026-12-01"];
        args.extend_from_slice(extra);
        let run = sb.run(&args);
        assert!(run.code == 0 || run.code == 1, "{}", run.describe());
        assert!(!run.stdout.is_empty(), "{}", run.describe());
        assert_inert(&run);
    }
    // JSON stays the same JSON: the description reads back exactly.
    let run = sb.run(&["diff", "old.json", "new.json", "--json"]);
    let report = run.json();
    let after: Vec<&Value> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["rule"] == "description-changed")
        .map(|c| &c["after"])
        .collect();
    assert_eq!(after, vec![&json!(FORGED)], "{}", run.describe());
    // `--format github` emits only its own commands, one line per change.
    let run = sb.run(&["diff", "old.json", "new.json", "--format", "github"]);
    for line in run.stdout_text().lines() {
        assert!(
            line.starts_with("::error file=new.json") || line.starts_with("::notice file=new.json"),
            "{line:?}\n{}",
            run.describe()
        );
    }
    assert_inert(&Run {
        stdout: Vec::new(),
        ..run
    });

    // An error message that quotes provider text.
    let bad = json!({"openapi": FORGED, "info": {"title": "P", "version": "1"}, "paths": {}});
    sb.write_file("bad.json", &serde_json::to_vec(&bad).unwrap());
    let run = sb.run(&["diff", "old.json", "bad.json"]);
    run.assert_code(2);
    assert!(
        run.stderr_text().contains("unsupported OpenAPI version"),
        "{}",
        run.describe()
    );
    assert_inert(&run);

    // A watch: the forged candidate becomes a pending review, then the document turns bad.
    sb.write_file("pets.json", &serde_json::to_vec(&pets(None, true)).unwrap());
    sb.write_config(&format!(
        "[storage]\npath = \"{}\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\n",
        sb.path("registry.db").display()
    ));
    let cfg = sb.config_arg();
    sb.run(&["check", "--config", &cfg]).assert_code(0);
    sb.write_file(
        "pets.json",
        &serde_json::to_vec(&pets(Some(FORGED), false)).unwrap(),
    );
    let run = sb.run(&["check", "--config", &cfg]);
    assert_inert(&run);
    let id = sb.pending_list()[0]["id"].as_i64().unwrap();
    let id = id.to_string();
    for extra in [&[][..], &["--json"]] {
        let mut args = vec!["pending", "show", &id, "--config", &cfg];
        args.extend_from_slice(extra);
        let run = sb.run(&args);
        run.assert_code(0);
        assert!(run.stdout_text().contains("listPets"), "{}", run.describe());
        assert_inert(&run);
    }
    for args in [
        vec!["pending", "list", "--config", &cfg],
        vec!["status", "--config", &cfg],
        vec!["history", "acme.pets", "--config", &cfg],
    ] {
        assert_inert(&sb.run(&args));
    }
    sb.write_file("pets.json", &serde_json::to_vec(&bad).unwrap());
    for extra in [&[][..], &["--json"]] {
        let mut args = vec!["check", "--config", &cfg];
        args.extend_from_slice(extra);
        let run = sb.run(&args);
        assert!(
            run.stdout_text().contains("unsupported OpenAPI version"),
            "{}",
            run.describe()
        );
        assert_inert(&run);
    }
    let run = sb.run(&["status", "--config", &cfg]);
    assert_inert(&run);
}

const URL_PASSWORD: &str = "Pw7hunter2Q";
const URL_TOKEN: &str = "Tk9querysecretZ";

fn assert_no_url_secret(what: &str, bytes: &[u8], run: &Run) {
    for secret in [URL_PASSWORD, URL_TOKEN] {
        if let Some(form) = find_secret(bytes, secret) {
            panic!("{what} holds {secret} ({form}):\n{}", run.describe());
        }
    }
}

/// H31: credentials in a URL given to `diff` (userinfo and a `?token=`) in every format, on
/// stdout and in `--format NAME=FILE` files and the GitHub step summary, and in the errors of
/// a refused port, a 404 and a document the normalizer refuses, as the old or the new side.
#[test]
fn h31_diff_urls_with_credentials_are_redacted_in_every_output_and_error() {
    let sb = Sandbox::new();
    sb.write_file("old.json", &Pets::v1().bytes());
    let server = DocServer::start(Pets::v3().bytes());
    let authority = server.url().trim_start_matches("http://").to_string();
    let url = format!("http://reader:{URL_PASSWORD}@{authority}?token={URL_TOKEN}&v=2");
    let summary = sb.path("summary.md");
    for extra in [
        &[][..],
        &["--json", "--fail-on", "breaking"],
        &["--markdown"],
        &["--format", "sarif"],
        &["--format", "junit"],
        &["--format", "github"],
        &["--format", "gitlab"],
        &[
            "--format",
            "sarif=out.sarif",
            "--format",
            "junit=out.xml",
            "--format",
            "gitlab=out.gitlab.json",
            "--format",
            "github=out.github",
            "--format",
            "json=out.json",
        ],
    ] {
        let mut args = vec!["diff", "old.json", url.as_str(), "--date", "2026-12-01"];
        args.extend_from_slice(extra);
        let output = sb
            .command(&args)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .output()
            .unwrap();
        let run = Run {
            args: args.iter().map(|s| s.to_string()).collect(),
            code: output.status.code().unwrap(),
            stdout: output.stdout,
            stderr: output.stderr,
        };
        assert!(run.code == 0 || run.code == 1, "{}", run.describe());
        assert_no_url_secret("stdout", &run.stdout, &run);
        assert_no_url_secret("stderr", &run.stderr, &run);
    }
    // The formats still name the document (redacted), and every file was written.
    for file in [
        "out.sarif",
        "out.xml",
        "out.gitlab.json",
        "out.github",
        "out.json",
        "summary.md",
    ] {
        let bytes = std::fs::read(sb.path(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let fake = Run {
            args: vec![file.into()],
            code: 0,
            stdout: bytes.clone(),
            stderr: Vec::new(),
        };
        assert_no_url_secret(file, &bytes, &fake);
    }
    let sarif = std::fs::read_to_string(sb.path("out.sarif")).unwrap();
    assert!(sarif.contains("token=%5Bredacted%5D"), "{sarif}");
    assert!(server.counters().requests >= 8, "the server was asked");

    // Errors: a refused port and a 404, on either side.
    let dead = format!(
        "http://reader:{URL_PASSWORD}@127.0.0.1:{}/openapi.json?token={URL_TOKEN}",
        dead_port()
    );
    let missing = format!("http://reader:{URL_PASSWORD}@{authority}x?token={URL_TOKEN}");
    for (old, new) in [
        ("old.json", dead.as_str()),
        (dead.as_str(), "old.json"),
        ("old.json", missing.as_str()),
        (url.as_str(), missing.as_str()),
    ] {
        for format in ["text", "sarif", "github"] {
            let run = sb.run(&["diff", old, new, "--format", format]);
            run.assert_code(2);
            assert!(
                run.stderr_text().contains("127.0.0.1"),
                "names the source: {}",
                run.describe()
            );
            assert_no_url_secret("stdout", &run.stdout, &run);
            assert_no_url_secret("stderr", &run.stderr, &run);
        }
    }
}

/// H32: a refused PostgreSQL URL (a password as userinfo or as a query parameter, in either
/// position) and an unparsable URL with credentials are refused without repeating the secret.
#[test]
fn h32_refused_database_urls_do_not_repeat_the_secret() {
    let sb = Sandbox::new();
    sb.write_file("old.json", &Pets::v1().bytes());
    for url in [
        format!("postgresql://app@127.0.0.1:5432/db?password={URL_PASSWORD}"),
        format!("postgres://app@127.0.0.1/db?sslmode=disable&password={URL_PASSWORD}"),
        format!("postgresql://app:{URL_PASSWORD}@127.0.0.1:5432/db"),
        format!("postgresql://app@127.0.0.1/db?passfile={URL_PASSWORD}"),
    ] {
        for args in [
            vec!["diff", "--kind", "postgres", url.as_str(), url.as_str()],
            vec!["diff", "--kind", "postgres", "old.json", url.as_str()],
        ] {
            let run = sb.run(&args);
            run.assert_code(2);
            assert!(
                run.stderr_text().contains("127.0.0.1"),
                "{}",
                run.describe()
            );
            assert_no_url_secret("stderr", &run.stderr, &run);
            assert_no_url_secret("stdout", &run.stdout, &run);
        }
    }
    let bad = format!("http://reader:{URL_PASSWORD}@[::1/openapi.json?token={URL_TOKEN}");
    let run = sb.run(&["diff", "old.json", &bad]);
    run.assert_code(2);
    assert!(
        run.stderr_text().contains("not a URL"),
        "{}",
        run.describe()
    );
    assert_no_url_secret("stderr", &run.stderr, &run);
}

/// `n` operations; `changed`: every description differs and `op0` is gone (one breaking change
/// among thousands of info rows).
fn many_operations(n: usize, changed: bool) -> Value {
    let mut paths = serde_json::Map::new();
    for i in 0..n {
        if changed && i == 0 {
            continue;
        }
        let description = if changed {
            format!("Operation {i}, second wording: [click](https://evil.example/{i}).")
        } else {
            format!("Operation {i}.")
        };
        paths.insert(
            format!("/items/{i}"),
            json!({"get": {"operationId": format!("op{i}"), "description": description,
                "responses": {"200": {"description": "ok"}}}}),
        );
    }
    if changed {
        // Provider text in a message: the operation id of an added endpoint.
        paths.insert(
            "/new".into(),
            json!({"get": {"operationId": "new[click](https://evil.example)",
                "responses": {"200": {"description": "ok"}}}}),
        );
    }
    json!({"openapi": "3.0.3", "info": {"title": "Many", "version": "1"}, "paths": paths})
}

/// H33: `--format github` on a diff of 8,000 changes (was: the step summary grew past
/// GitHub's 1 MiB limit, which drops it whole, and the one breaking change sat among info
/// rows); SARIF messages with provider `[text](url)` (was: rendered as links by viewers).
#[test]
fn h33_the_step_summary_is_capped_most_severe_first_and_sarif_has_no_links() {
    let sb = Sandbox::new();
    sb.write_file(
        "old.json",
        &serde_json::to_vec(&many_operations(8_000, false)).unwrap(),
    );
    sb.write_file(
        "new.json",
        &serde_json::to_vec(&many_operations(8_000, true)).unwrap(),
    );
    let summary = sb.path("summary.md");
    // Something an earlier command of the step wrote stays, and counts toward the limit.
    std::fs::write(&summary, "earlier step output\n".repeat(1000)).unwrap();
    let args = [
        "diff",
        "old.json",
        "new.json",
        "--format",
        "github",
        "--format",
        "sarif=out.sarif",
        "--fail-on",
        "breaking",
    ];
    let output = sb
        .command(&args)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.len() <= 1_048_576, "{} bytes", text.len());
    assert!(text.starts_with(&"earlier step output\n".repeat(1000)));
    let drift = &text[20_000..];
    assert!(
        drift.starts_with("## Contract drift: breaking"),
        "{}",
        &drift[..200]
    );
    // The breaking change is the first row; the rest is counted.
    let first_row = drift
        .lines()
        .find(|l| l.starts_with("| ") && !l.starts_with("| severity"))
        .unwrap();
    assert!(
        first_row.starts_with("| breaking | `endpoint-removed`"),
        "{first_row}"
    );
    let last = drift.lines().last().unwrap();
    assert!(
        last.contains("more changes not shown (0 security, 0 breaking, 0 compatible,"),
        "{last}"
    );
    let rows = drift
        .lines()
        .filter(|l| l.starts_with("| info ") || l.starts_with("| compatible "))
        .count();
    let left: usize = last.split(' ').next().unwrap().parse().unwrap();
    let total: usize = drift
        .lines()
        .find_map(|l| l.strip_prefix("- changes: "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(total > 8_000, "{total}");
    assert_eq!(rows + 1 + left, total, "every change shown or counted");
    assert!(rows > 1_000, "{rows}");

    // SARIF: no message forms a link.
    let sarif: Value =
        serde_json::from_slice(&std::fs::read(sb.path("out.sarif")).unwrap()).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), total);
    assert!(
        results.iter().any(|r| r["message"]["text"]
            .as_str()
            .unwrap()
            .contains("new\\[click\\](https://evil.example)")),
        "the added endpoint's message, escaped"
    );
    let linked: Vec<&str> = results
        .iter()
        .filter_map(|r| r["message"]["text"].as_str())
        .filter(|t| t.contains("](") && !t.contains("\\](") || t.contains("[click]"))
        .collect();
    assert!(linked.is_empty(), "{:?}", &linked[..linked.len().min(3)]);
}

/// The change id of `endpoint-removed` for `op` in `diff old.json new.json --json`.
fn ids_of(run: &Run) -> Vec<(String, String)> {
    run.json()["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["rule"].as_str().unwrap().to_string(),
                c["id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// An accept file: `stale` entries for changes that do not exist, then one entry per id.
fn accept_file(stale: usize, ids: &[&str], expires: &str) -> String {
    let mut text = String::with_capacity(stale * 100);
    for i in 0..stale {
        text.push_str(&format!(
            "[[accept]]\nchange = \"chg2:{i:032x}\"\nreviewer = \"alice\"\nreason = \"r\"\nexpires = {expires}\n\n"
        ));
    }
    for id in ids {
        text.push_str(&format!(
            "[[accept]]\nchange = \"{id}\"\nreviewer = \"bob\"\nreason = \"migrated\"\nexpires = {expires}\n\n"
        ));
    }
    text
}

fn gate_with(sb: &Sandbox, accept: &str) -> Run {
    sb.write_file("accept.toml", accept.as_bytes());
    sb.run(&[
        "diff",
        "old.json",
        "new.json",
        "--json",
        "--fail-on",
        "breaking",
        "--accept",
        "accept.toml",
        "--date",
        "2026-12-01",
    ])
}

/// H34: `expires = 2027-01-01` as a native TOML date (was: "invalid type: map"); stale
/// entries are reported with their lines. The 300,000-entry variant is
/// `h34_a_large_accept_file_is_read_in_one_pass` (ignored; `scripts/accept-scale` times it).
#[test]
fn h34_accept_entries_take_native_dates() {
    let sb = Sandbox::new();
    sb.write_file("old.json", &Pets::v1().bytes());
    sb.write_file("new.json", &Pets::v3().bytes());
    let run = sb.run(&["diff", "old.json", "new.json", "--json"]);
    let ids = ids_of(&run);
    let breaking: Vec<&str> = ids
        .iter()
        .filter(|(rule, _)| rule == "endpoint-removed")
        .map(|(_, id)| id.as_str())
        .collect();
    assert_eq!(breaking.len(), 1, "{}", run.describe());
    for expires in ["2027-01-01", "\"2027-01-01\""] {
        let run = gate_with(&sb, &accept_file(3, &breaking, expires));
        run.assert_code(0);
        let gate = &run.json()["gate"];
        assert_eq!(gate["accepted"], 1, "{}", run.describe());
        assert_eq!(gate["stale"], 3, "{}", run.describe());
        assert!(
            run.stderr_text()
                .contains("accept entry at line 13 (chg2:00000000000000000000000000000002)"),
            "{}",
            run.describe()
        );
    }
    // A date with a time is still refused, naming the line.
    let run = gate_with(&sb, &accept_file(2, &breaking, "2027-01-01T10:00:00"));
    run.assert_code(2);
    assert!(
        run.stderr_text()
            .contains("accept.toml:1: expires 2027-01-01T10:00:00 is not a date"),
        "{}",
        run.describe()
    );
}

/// H34, long: 300,000 entries (was: over 11 minutes; quadratic in line numbering and in the
/// gate's matching). Not timed here: `cargo test --test cli -- --ignored h34_a_large`.
#[test]
#[ignore]
fn h34_a_large_accept_file_is_read_in_one_pass() {
    let sb = Sandbox::new();
    sb.write_file("old.json", &Pets::v1().bytes());
    sb.write_file("new.json", &Pets::v3().bytes());
    let run = sb.run(&["diff", "old.json", "new.json", "--json"]);
    let ids = ids_of(&run);
    let all: Vec<&str> = ids.iter().map(|(_, id)| id.as_str()).collect();
    let run = gate_with(&sb, &accept_file(300_000, &all, "2027-01-01"));
    run.assert_code(0);
    let gate = &run.json()["gate"];
    assert_eq!(gate["accepted"], all.len(), "{gate}");
    assert_eq!(gate["stale"], 300_000, "{gate}");
}

/// H35: change ids are 128 bits (`chg2:`) in every output; a `chg1:` entry still accepts its
/// change with a deprecation warning naming the `chg2:` id; an entry pinning another rule or
/// path accepts nothing (was: 64-bit ids only, a birthday collision about a CPU-hour away).
#[test]
fn h35_change_ids_are_128_bits_and_entries_may_pin_rule_and_path() {
    let sb = Sandbox::new();
    sb.write_file("old.json", &Pets::v1().bytes());
    sb.write_file("new.json", &Pets::v3().bytes());
    let run = sb.run(&[
        "diff",
        "old.json",
        "new.json",
        "--json",
        "--fail-on",
        "breaking",
    ]);
    run.assert_code(1);
    let report = run.json();
    let removed = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["rule"] == "endpoint-removed")
        .unwrap()
        .clone();
    let id = removed["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("chg2:") && id.len() == 37, "{id}");
    // The ready-to-paste entry pins the rule and the path.
    let suggested = removed["accept_entry"].as_str().unwrap();
    assert!(
        suggested.contains(&format!(
            "change = \"{id}\"\nrule = \"endpoint-removed\"\npath = \"{}\"",
            removed["path"].as_str().unwrap()
        )),
        "{suggested}"
    );
    // Every format carries the chg2 id (SARIF keeps chg1 as its v1 fingerprint).
    for format in ["sarif", "gitlab", "github", "junit"] {
        let run = sb.run(&["diff", "old.json", "new.json", "--format", format]);
        assert!(
            run.stdout_text().contains(&id),
            "{format}: {}",
            run.describe()
        );
    }
    let run = sb.run(&["diff", "old.json", "new.json", "--format", "sarif"]);
    let sarif = run.json();
    let prints = &sarif["runs"][0]["results"][0]["partialFingerprints"];
    assert!(
        prints["schemawatchChangeId/v1"]
            .as_str()
            .unwrap()
            .starts_with("chg1:"),
        "{prints}"
    );
    assert!(
        prints["schemawatchChangeId/v2"]
            .as_str()
            .unwrap()
            .starts_with("chg2:"),
        "{prints}"
    );

    // The chg1 form of the same change: the first 16 hex digits.
    let v1 = format!("chg1:{}", &id[5..21]);
    let entry = |change: &str, pins: &str| {
        format!("[[accept]]\nchange = \"{change}\"\n{pins}reviewer = \"bob\"\nreason = \"migrated\"\nexpires = 2027-01-01\n")
    };
    let run = gate_with(&sb, &entry(&v1, ""));
    run.assert_code(0);
    assert_eq!(run.json()["gate"]["accepted"], 1, "{}", run.describe());
    assert!(
        run.stderr_text().contains(&format!(
            "accept entry at line 1 names {v1} by a 64-bit chg1: id, which is deprecated: write change = \"{id}\""
        )),
        "{}",
        run.describe()
    );
    let path = removed["path"].as_str().unwrap();
    let run = gate_with(
        &sb,
        &entry(
            &id,
            &format!("rule = \"endpoint-removed\"\npath = \"{path}\"\n"),
        ),
    );
    run.assert_code(0);
    assert!(!run.stderr_text().contains("warning"), "{}", run.describe());
    for pins in [
        "rule = \"endpoint-added-read-only\"\n".to_string(),
        format!("path = \"{path}.x\"\n"),
    ] {
        for change in [id.as_str(), v1.as_str()] {
            let run = gate_with(&sb, &entry(change, &pins));
            run.assert_code(1);
            let gate = &run.json()["gate"];
            assert_eq!(gate["accepted"], 0, "{}", run.describe());
            assert_eq!(gate["stale"], 1, "{}", run.describe());
            assert!(
                run.stderr_text().contains("the entry does not accept it"),
                "{}",
                run.describe()
            );
        }
    }
    // An unknown rule pin is refused (a typo would otherwise accept nothing, silently).
    let run = gate_with(&sb, &entry(&id, "rule = \"endpoint-removd\"\n"));
    run.assert_code(2);
    assert!(
        run.stderr_text()
            .contains("accept.toml:1: rule \"endpoint-removd\" is not a rule id"),
        "{}",
        run.describe()
    );
}

fn sqlite_run(db: &std::path::Path, sql: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(sql).unwrap();
}

fn sqlite_outcome(sb: &Sandbox) -> Value {
    let (run, value) = sb.check(&[]);
    let o = only_outcome(&value).clone();
    assert_ne!(o["action"], "error", "{}", run.describe());
    o
}

fn review_changes(sb: &Sandbox, o: &Value) -> Vec<(String, String)> {
    let show = sb.pending_show(o["review_id"].as_i64().unwrap_or_else(|| panic!("{o}")));
    show["report"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                c["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// H36: a view over a dropped table, an unknown virtual-table module and two circular views
/// in a watched SQLite database (was: the whole watch failed on every refresh, "no such
/// module"). They are in the contract as unreadable and the rest is watched: a column added to
/// a readable table is seen, and so is a change to an unreadable object's text.
#[test]
fn h36_unreadable_sqlite_objects_do_not_stop_the_watch() {
    let sb = Sandbox::new();
    let db = sb.path("app.db");
    sqlite_run(
        &db,
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         CREATE TABLE gone (z);
         CREATE VIEW broken AS SELECT * FROM gone;
         CREATE VIEW c1 AS SELECT 1 AS one;
         CREATE VIEW c2 AS SELECT * FROM c1;
         DROP TABLE gone;
         PRAGMA writable_schema = ON;
         INSERT INTO sqlite_schema (type, name, tbl_name, rootpage, sql)
           VALUES ('table', 'docs', 'docs', 0, 'CREATE VIRTUAL TABLE docs USING nosuchmodule(body)');
         UPDATE sqlite_schema SET sql = 'CREATE VIEW c1 AS SELECT * FROM c2' WHERE name = 'c1';",
    );
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.app\"\nkind = \"sqlite\"\npath = \"{}\"\n",
        db.display()
    ));
    let o = sqlite_outcome(&sb);
    assert_eq!(o["action"], "registered", "{o}");
    assert_eq!(sqlite_outcome(&sb)["action"], "unchanged");
    // The unreadable objects are in the contract: `diff` against the same database with
    // `users` alone shows them added.
    sqlite_run(
        &sb.path("users.db"),
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
    );
    let run = sb.run(&["diff", "--kind", "sqlite", "--json", "users.db", "app.db"]);
    run.assert_code(0);
    let added: Vec<String> = run.json()["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        added,
        [
            "endpoints.broken",
            "endpoints.c1",
            "endpoints.c2",
            "endpoints.docs"
        ],
        "{}",
        run.describe()
    );
    // A readable catalog's fingerprint is the one the previous release computed.
    sqlite_run(
        &sb.path("readable.db"),
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL); CREATE TABLE posts(id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), body TEXT CHECK (length(body) < 10)) STRICT; CREATE INDEX p_u ON posts(user_id); CREATE VIEW v AS SELECT name FROM users; CREATE TRIGGER t AFTER INSERT ON users BEGIN SELECT 1; END;",
    );
    let run = sb.run(&[
        "diff",
        "--kind",
        "sqlite",
        "--json",
        "readable.db",
        "readable.db",
    ]);
    assert_eq!(
        run.json()["new_fingerprint"],
        "sha256:755c1e303e35eab07508ef7164c48100cbfe2c93ac01b8490edc3ec7a92df41d",
        "{}",
        run.describe()
    );
    let inventory = sb.run(&["catalog", "export", "--config", &sb.config_arg()]);
    inventory.assert_code(0);
    let text = inventory.stdout_text();
    for name in ["users", "broken", "docs", "c1", "c2"] {
        assert!(
            text.contains(&format!("acme.app/{name}\"")),
            "{name}: {text}"
        );
    }

    // A readable table changes: seen (compatible), nothing else moves.
    sqlite_run(&db, "ALTER TABLE users ADD COLUMN email TEXT;");
    let o = sqlite_outcome(&sb);
    assert_eq!(o["action"], "applied", "{o}");
    assert_eq!(o["compatibility"], "compatible", "{o}");

    // An unreadable object's text changes: seen, and not as information only.
    sqlite_run(
        &db,
        "PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = 'CREATE VIRTUAL TABLE docs USING nosuchmodule(body, title)' WHERE name = 'docs';",
    );
    let o = sqlite_outcome(&sb);
    assert_eq!(o["action"], "pending_review", "{o}");
    let changes = review_changes(&sb, &o);
    assert!(
        changes.contains(&(
            "endpoints.docs.meta.unreadable_definition".into(),
            "meta-changed".into()
        )),
        "{changes:?}"
    );
    assert_eq!(changes.len(), 1, "{changes:?}");
    sb.run(&[
        "pending",
        "reject",
        &o["review_id"].to_string(),
        "--reviewer",
        "alice",
        "--reason",
        "test",
        "--config",
        &sb.config_arg(),
    ])
    .assert_code(0);

    // The dropped table comes back: the view is readable again, and the reason it was not is
    // in the review (SQLite's own message).
    sqlite_run(&db, "CREATE TABLE gone (z);");
    let o = sqlite_outcome(&sb);
    let show = sb.pending_show(o["review_id"].as_i64().unwrap_or_else(|| panic!("{o}")));
    let unreadable: Vec<&Value> = show["report"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["path"] == "endpoints.broken.meta.unreadable")
        .map(|c| &c["before"])
        .collect();
    assert_eq!(unreadable, [&json!("no such table: main.gone")], "{show}");
}

/// A fake PostgreSQL server on 127.0.0.1 that answers the startup message with one
/// authentication header announcing `length` bytes, then holds the connection.
fn fake_postgres(length: u32) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut startup = [0u8; 512];
                let _ = stream.read(&mut startup);
                let mut header = vec![b'R'];
                header.extend_from_slice(&length.to_be_bytes());
                header.extend_from_slice(&[0; 16]);
                let _ = stream.write_all(&header);
                stream
                    .set_read_timeout(Some(std::time::Duration::from_secs(20)))
                    .unwrap();
                let _ = stream.read(&mut startup);
            });
        }
    });
    port
}

/// H37: a fake server announcing a 1.36 GB message in its first header (was: the client
/// reserved 1.36 GB for it and waited for the body until the deadline). Refused at the header:
/// the limit is the watch's `max_bytes` plus framing.
#[test]
fn h37_a_forged_postgres_message_length_is_refused_at_the_header() {
    let sb = Sandbox::new();
    let port = fake_postgres(1_360_000_000);
    let url = format!("postgresql://app@127.0.0.1:{port}/db?sslmode=disable");
    let run = sb.run(&["diff", "--kind", "postgres", &url, &url]);
    run.assert_code(2);
    let err = run.stderr_text();
    assert!(
        err.contains("the server announced a message of 1360000000 bytes, more than the 33619968 this watch allows (max_bytes)"),
        "{}",
        run.describe()
    );
    // A watch with a smaller max_bytes refuses a smaller announcement; `check` reports an
    // error outcome and stores nothing.
    let port = fake_postgres(2 * 1024 * 1024);
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pg\"\nkind = \"postgres\"\nurl = \"postgresql://app@127.0.0.1:{port}/db?sslmode=disable\"\nmax_bytes = 1048576\n"
    ));
    let (run, value) = sb.check(&[]);
    let o = only_outcome(&value);
    assert_eq!(o["action"], "error", "{}", run.describe());
    assert!(
        o["error"]
            .as_str()
            .unwrap_or_default()
            .contains("more than the 1114112 this watch allows"),
        "{}",
        run.describe()
    );
}

/// H38: a stored source replaced by a gzip bomb (8 MiB of zeros, 8 KB compressed) in a
/// registry whose watch has `max_bytes = 65536` (was: inflated up to 2 GiB before failing
/// closed on its digest). Inflation stops at 8 × the largest `max_bytes` and the row is
/// refused, naming the bound.
#[test]
fn h38_a_tampered_stored_gzip_is_inflated_only_up_to_a_bound_from_the_config() {
    let sb = Sandbox::new();
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\nmax_bytes = 65536\n",
    );
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.check(&[]).0.assert_code(0);
    let bomb = {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![b' '; 8 << 20]).unwrap();
        gz.finish().unwrap()
    };
    assert!(bomb.len() < 64 * 1024, "{}", bomb.len());
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    assert_eq!(
        conn.execute("UPDATE sources SET gz = ?1", [bomb]).unwrap(),
        1
    );
    drop(conn);
    let cfg = sb.config_arg();
    let run = sb.run(&["catalog", "export", "--config", &cfg]);
    assert_ne!(run.code, 0, "{}", run.describe());
    assert!(
        run.stderr_text()
            .contains("inflates past the bound of 524288 bytes"),
        "{}",
        run.describe()
    );
    // A changed document is compared with the stored contract, read from the bomb: an error
    // outcome, nothing stored.
    sb.write_file("pets.json", &Pets::v2().bytes());
    let (run, value) = sb.check(&[]);
    let o = only_outcome(&value);
    assert_eq!(o["action"], "error", "{}", run.describe());
    assert!(
        o["error"]
            .as_str()
            .unwrap_or_default()
            .contains("inflates past the bound of 524288 bytes"),
        "{}",
        run.describe()
    );
    assert_eq!(sb.registry_version(), 1);
}

/// Every file of the sandbox (registry, WAL) holds `secret` in no form.
fn assert_not_stored(sb: &Sandbox, secret: &str) {
    for (path, bytes) in sb.all_files() {
        if path.ends_with("schemawatch.toml") {
            continue;
        }
        if let Some(form) = find_secret(&bytes, secret) {
            panic!("{} holds {secret} ({form})", path.display());
        }
    }
}

fn url_watch_config(url: &str) -> String {
    format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\nurl = \"{url}\"\n"
    )
}

/// H39: a raw `?token=` in a watch URL (was: stored in the registry as written, in the
/// watch's source identity). Stored only as a keyed digest; a rotation is still a source
/// change (`stale`, as before); an identity stored by an older release in the raw form is
/// rewritten at the first open and the watch stays `unchanged`.
#[test]
fn h39_query_values_are_stored_only_as_keyed_digests() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    let first = format!("{}?version=2&token=first-token-5be19", server.url());
    sb.write_config(&url_watch_config(&first));
    let (run, value) = sb.check(&[]);
    assert_eq!(
        only_outcome(&value)["action"],
        "registered",
        "{}",
        run.describe()
    );
    assert_eq!(sb.check(&[]).1["outcomes"][0]["action"], "unchanged");
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    let identity: String = conn
        .query_row("SELECT source_identity FROM watch_state", [], |r| r.get(0))
        .unwrap();
    assert!(
        identity.starts_with(&format!("url:{}?version=hmac:", server.url()))
            && identity.contains("&token=hmac:"),
        "{identity}"
    );
    drop(conn);
    assert_not_stored(&sb, "first-token-5be19");

    // Rotation: still a source change, said without either value.
    sb.write_config(&url_watch_config(&format!(
        "{}?version=2&token=second-token-77d0",
        server.url()
    )));
    let (run, value) = sb.check(&[]);
    let o = only_outcome(&value);
    assert_eq!(o["action"], "stale", "{}", run.describe());
    assert!(
        o["error"]
            .as_str()
            .unwrap()
            .contains("changed in a query value"),
        "{}",
        run.describe()
    );
    assert_not_stored(&sb, "second-token-77d0");

    // An older release's registry: the identity in the raw form. Not stale; rewritten.
    let sb = Sandbox::new();
    let raw = format!("{}?version=2&token=older-token-c4e2", server.url());
    sb.write_config(&url_watch_config(&raw));
    sb.check(&[]).0.assert_code(0);
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    conn.execute(
        "UPDATE watch_state SET source_identity = ?1",
        [format!("url:{raw}")],
    )
    .unwrap();
    drop(conn);
    let status = sb.status();
    assert_eq!(status["watches"][0]["status"], "registered", "{status}");
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    let identity: String = conn
        .query_row("SELECT source_identity FROM watch_state", [], |r| r.get(0))
        .unwrap();
    assert!(identity.contains("&token=hmac:"), "{identity}");
    conn.execute_batch("VACUUM").unwrap();
    drop(conn);
    assert_not_stored(&sb, "older-token-c4e2");
    let (run, value) = sb.check(&[]);
    assert_eq!(
        only_outcome(&value)["action"],
        "unchanged",
        "{}",
        run.describe()
    );

    // The same raw identity met by a refresh (no open-time migration first): not stale.
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    conn.execute(
        "UPDATE watch_state SET source_identity = ?1",
        [format!("url:{raw}")],
    )
    .unwrap();
    drop(conn);
    let (run, value) = sb.check(&[]);
    assert_eq!(
        only_outcome(&value)["action"],
        "unchanged",
        "{}",
        run.describe()
    );
}
