//! Stability and sunset policy (issue 31, item 2) through `diff`: the direction-aware rules
//! split out of `extension-changed`, the `[policy]` / `[watch.policy]` keys read from the
//! accepted (old) side on the check date (`--date`), every accepted date form and a bad one.

use crate::common::{change, Sandbox};
use serde_json::{json, Value};

/// `getA` (GET /a) returns an object with `x`; `getB` (GET /b) is plain. `edit_a` changes
/// `getA`'s operation object.
fn doc(edit_a: impl FnOnce(&mut Value)) -> Value {
    let mut d = json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {"get": {"operationId": "getA", "responses": {"200": {"description": "ok",
                "content": {"application/json": {"schema": {"type": "object",
                    "properties": {"x": {"type": "string"}}, "required": ["x"]}}}}}}},
            "/b": {"get": {"operationId": "getB", "responses": {"200": {"description": "ok"}}}}
        }
    });
    edit_a(&mut d["paths"]["/a"]["get"]);
    d
}

/// `doc` without the response property `x` of `getA` (a breaking change at getA).
fn without_x(edit_a: impl FnOnce(&mut Value)) -> Value {
    let mut d = doc(edit_a);
    let schema =
        &mut d["paths"]["/a"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    schema["properties"] = json!({});
    schema["required"] = json!([]);
    d
}

/// `doc` without `getA` at all.
fn without_a() -> Value {
    let mut d = doc(|_| {});
    d["paths"].as_object_mut().unwrap().remove("/a");
    d
}

/// `diff OLD NEW --json --fail-on breaking` plus `extra`: (exit code, report).
fn diff(sb: &Sandbox, old: &Value, new: &Value, extra: &[&str]) -> (i32, Value) {
    let o = sb.write_file("old.json", old.to_string().as_bytes());
    let n = sb.write_file("new.json", new.to_string().as_bytes());
    let (o, n) = (o.to_string_lossy(), n.to_string_lossy());
    let mut args = vec!["diff", &o, &n, "--json", "--fail-on", "breaking"];
    args.extend_from_slice(extra);
    let run = sb.run(&args);
    assert!(run.code == 0 || run.code == 1, "{}", run.describe());
    (run.code, run.json())
}

/// A config with `policy` as its top-level `[policy]` table and one watch `acme.t` with
/// `watch_policy` as its `[watch.policy]`.
fn config(sb: &Sandbox, policy: &str, watch_policy: &str) -> String {
    let path = sb.write_file(
        "policy.toml",
        format!(
            "[policy]\n{policy}\n[[watch]]\nname = \"acme.t\"\nkind = \"openapi\"\npath = \"new.json\"\n[watch.policy]\n{watch_policy}\n"
        )
        .as_bytes(),
    );
    path.to_string_lossy().into_owned()
}

fn rules(report: &Value) -> Vec<String> {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap().to_string())
        .collect()
}

fn level(level: &'static str) -> impl FnOnce(&mut Value) {
    move |op: &mut Value| op["x-stability-level"] = json!(level)
}

fn sunset(date: &'static str) -> impl FnOnce(&mut Value) {
    move |op: &mut Value| op["x-sunset"] = json!(date)
}

#[test]
fn each_stability_direction_is_judged_and_extension_changed_stays_silent() {
    let sb = Sandbox::new();
    // A level where none was lowers it from stable.
    let (code, report) = diff(&sb, &doc(|_| {}), &doc(level("beta")), &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(rules(&report), ["stability-lowered"], "{report}");
    assert_eq!(report["compatibility"], "breaking");
    assert_eq!(change(&report, "stability-lowered")["before"], Value::Null);
    assert_eq!(change(&report, "stability-lowered")["after"], "beta");
    let (code, report) = diff(&sb, &doc(level("beta")), &doc(level("draft")), &[]);
    assert_eq!(
        (code, rules(&report)),
        (1, vec!["stability-lowered".into()])
    );
    let (code, report) = diff(&sb, &doc(level("alpha")), &doc(level("beta")), &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(rules(&report), ["stability-raised"]);
    assert_eq!(report["compatibility"], "compatible");
    assert_eq!(change(&report, "stability-raised")["severity"], "info");
    // Removing the level raises it to stable; a level that names nothing stays unmodelled.
    let (_, report) = diff(&sb, &doc(level("beta")), &doc(|_| {}), &[]);
    assert_eq!(rules(&report), ["stability-raised"]);
    let (code, report) = diff(&sb, &doc(|_| {}), &doc(level("gamma")), &[]);
    assert_eq!(
        (code, rules(&report)),
        (1, vec!["extension-changed".into()])
    );
}

#[test]
fn each_sunset_direction_is_judged() {
    let sb = Sandbox::new();
    let cases: [(Value, Value, &str, &str); 5] = [
        (
            doc(|_| {}),
            doc(sunset("2027-01-31")),
            "sunset-added",
            "breaking",
        ),
        (
            doc(sunset("2027-06-01")),
            doc(sunset("2027-01-31")),
            "sunset-advanced",
            "breaking",
        ),
        (
            doc(sunset("2027-01-31")),
            doc(sunset("2027-06-01")),
            "sunset-postponed",
            "info",
        ),
        (
            doc(sunset("2027-01-31")),
            doc(|_| {}),
            "sunset-removed",
            "info",
        ),
        (
            doc(sunset("2027-01-31")),
            doc(sunset("end of January")),
            "sunset-date-invalid",
            "breaking",
        ),
    ];
    for (old, new, rule, severity) in cases {
        let (_, report) = diff(&sb, &old, &new, &[]);
        assert_eq!(rules(&report), [rule], "{report}");
        assert_eq!(change(&report, rule)["severity"], severity, "{report}");
        assert_eq!(change(&report, rule)["path"], "endpoints.getA.x-sunset");
    }
}

#[test]
fn every_date_form_is_read_and_a_bad_one_is_its_own_breaking_change() {
    let sb = Sandbox::new();
    let policy = config(&sb, "allow_removal_after_sunset = true", "");
    // Each form names 2027-01-31 (UTC): removal is compatible on that day, not the day before.
    for form in [
        "2027-01-31",
        "2027-01-31T10:00:00Z",
        "2027-01-30T23:00:00-02:00",
        "Sun, 31 Jan 2027 10:00:00 GMT",
        "@1801439999",
    ] {
        let old = doc(|op| op["x-sunset"] = json!(form));
        let (code, report) = diff(
            &sb,
            &old,
            &without_a(),
            &["--config", &policy, "--date", "2027-01-31"],
        );
        assert_eq!(code, 0, "{form}: {report}");
        assert_eq!(report["compatibility"], "compatible", "{form}: {report}");
        let (code, _) = diff(
            &sb,
            &old,
            &without_a(),
            &["--config", &policy, "--date", "2027-01-30"],
        );
        assert_eq!(code, 1, "{form}: removal before the sunset passes");
    }
    // The same date from a declared Sunset response header's example, and an RFC 9745
    // Deprecation header with a structured date.
    let old = doc(|op| {
        op["responses"]["200"]["headers"] = json!({
            "Sunset": {"schema": {"type": "string", "example": "Sun, 31 Jan 2027 10:00:00 GMT"}},
            "Deprecation": {"schema": {"type": "string", "example": "@1767225600"}}
        });
    });
    let (code, report) = diff(
        &sb,
        &old,
        &without_a(),
        &["--config", &policy, "--date", "2027-02-01"],
    );
    assert_eq!(code, 0, "{report}");
    // An unparsable date is a breaking change of its own, and never a passed sunset.
    let (code, report) = diff(&sb, &doc(|_| {}), &doc(sunset("31.01.2027")), &[]);
    assert_eq!(code, 1);
    assert_eq!(rules(&report), ["sunset-date-invalid"]);
    let (code, report) = diff(
        &sb,
        &doc(sunset("31.01.2027")),
        &without_a(),
        &["--config", &policy, "--date", "2030-01-01"],
    );
    assert_eq!(code, 1, "{report}");
    assert_eq!(change(&report, "endpoint-removed")["severity"], "breaking");
    assert!(change(&report, "endpoint-removed").get("policy").is_none());
}

#[test]
fn removal_after_and_before_the_accepted_sunset() {
    let sb = Sandbox::new();
    let old = doc(sunset("2027-01-31"));
    let allow = config(&sb, "", "allow_removal_after_sunset = true");
    // After the sunset, with the watch's policy: compatible, and the change says why.
    let (code, report) = diff(
        &sb,
        &old,
        &without_a(),
        &[
            "--config",
            &allow,
            "--watch",
            "acme.t",
            "--date",
            "2027-03-01",
        ],
    );
    assert_eq!(code, 0, "{report}");
    let removed = change(&report, "endpoint-removed");
    assert_eq!(removed["severity"], "compatible");
    assert!(
        removed["policy"]
            .as_str()
            .unwrap()
            .starts_with("allow_removal_after_sunset"),
        "{removed}"
    );
    // Before the sunset: breaking.
    let (code, report) = diff(
        &sb,
        &old,
        &without_a(),
        &[
            "--config",
            &allow,
            "--watch",
            "acme.t",
            "--date",
            "2027-01-30",
        ],
    );
    assert_eq!(code, 1);
    assert!(change(&report, "endpoint-removed").get("policy").is_none());
    // Without the policy (the config alone: the top-level [policy] says nothing): breaking.
    let (code, _) = diff(
        &sb,
        &old,
        &without_a(),
        &["--config", &allow, "--date", "2027-03-01"],
    );
    assert_eq!(code, 1);
    // A sunset only the provider's new document states is not read: removing an endpoint
    // whose accepted contract had no sunset stays breaking.
    let (code, _) = diff(
        &sb,
        &doc(|_| {}),
        &without_a(),
        &[
            "--config",
            &allow,
            "--watch",
            "acme.t",
            "--date",
            "2030-01-01",
        ],
    );
    assert_eq!(code, 1);
}

#[test]
fn min_stability_demotes_changes_below_it_read_from_the_accepted_side() {
    let sb = Sandbox::new();
    let policy = config(&sb, "min_stability = \"stable\"", "");
    // Accepted beta: the breaking change at getA is info, with the policy's reason.
    let (code, report) = diff(
        &sb,
        &doc(level("beta")),
        &without_x(level("beta")),
        &["--config", &policy],
    );
    assert_eq!(code, 0, "{report}");
    let removed = change(&report, "response-property-removed");
    assert_eq!(removed["severity"], "info");
    assert_eq!(
        removed["policy"],
        "min_stability: the accepted stability beta is below stable"
    );
    // The provenance grounds say why.
    let (_, stamped) = diff(
        &sb,
        &doc(level("beta")),
        &without_x(level("beta")),
        &["--config", &policy, "--provenance"],
    );
    let grounds = stamped["_toulmin"]["grounds"].to_string();
    assert!(
        grounds.contains("(policy: min_stability: the accepted stability beta is below stable)"),
        "{grounds}"
    );
    // Without the policy the same change is breaking, with the same id.
    let (code, plain) = diff(&sb, &doc(level("beta")), &without_x(level("beta")), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        change(&plain, "response-property-removed")["id"],
        removed["id"]
    );
    // A provider lowering its own stability does not lower protection: the accepted side is
    // stable, so the lowering and the removal stay breaking.
    let (code, report) = diff(
        &sb,
        &doc(|_| {}),
        &without_x(level("draft")),
        &["--config", &policy],
    );
    assert_eq!(code, 1, "{report}");
    assert_eq!(change(&report, "stability-lowered")["severity"], "breaking");
    assert_eq!(
        change(&report, "response-property-removed")["severity"],
        "breaking"
    );
    // The watch's [watch.policy] overrides the top-level key.
    let lower = config(
        &sb,
        "min_stability = \"stable\"",
        "min_stability = \"alpha\"",
    );
    let (code, _) = diff(
        &sb,
        &doc(level("beta")),
        &without_x(level("beta")),
        &["--config", &lower, "--watch", "acme.t"],
    );
    assert_eq!(code, 1, "beta is not below alpha");
}

#[test]
fn a_policy_never_lowers_a_security_change() {
    let sb = Sandbox::new();
    let policy = config(&sb, "min_stability = \"stable\"", "");
    let secured = |op: &mut Value| {
        op["x-stability-level"] = json!("beta");
        op["security"] = json!([{"key": []}]);
    };
    let with_scheme = |mut d: Value| {
        d["components"] =
            json!({"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "K"}}});
        d
    };
    let (_, report) = diff(
        &sb,
        &with_scheme(doc(secured)),
        &with_scheme(doc(level("beta"))),
        &["--config", &policy],
    );
    assert_eq!(report["compatibility"], "security_review", "{report}");
    let security = change(&report, "security-requirements-changed");
    assert_eq!(security["severity"], "security");
    assert!(security.get("policy").is_none());
}

#[test]
fn an_override_of_extension_changed_keeps_applying_to_the_split_rules() {
    let sb = Sandbox::new();
    let (code, report) = diff(
        &sb,
        &doc(|_| {}),
        &doc(level("beta")),
        &["--severity", "extension-changed=info"],
    );
    assert_eq!(code, 0, "{report}");
    assert_eq!(change(&report, "stability-lowered")["severity"], "info");
    // The same through a config's [severity]; the split rule's own override wins.
    let path = sb.write_file(
        "severity.toml",
        b"[severity]\nextension-changed = \"info\"\nsunset-added = \"security\"\n",
    );
    let path = path.to_string_lossy();
    let (_, report) = diff(
        &sb,
        &doc(|_| {}),
        &doc(|op| {
            op["x-stability-level"] = json!("beta");
            op["x-sunset"] = json!("2027-01-31");
        }),
        &["--config", &path],
    );
    assert_eq!(change(&report, "stability-lowered")["severity"], "info");
    assert_eq!(change(&report, "sunset-added")["severity"], "security");
}

#[test]
fn policy_config_errors_are_specific() {
    let sb = Sandbox::new();
    let old = sb.write_file("old.json", doc(|_| {}).to_string().as_bytes());
    let old = old.to_string_lossy();
    for (table, expected) in [
        (
            "[policy]\nmin_stability = \"gamma\"\n",
            "min_stability \"gamma\": expected draft, alpha, beta or stable",
        ),
        ("[policy]\nmin_stablity = \"beta\"\n", "unknown field `min_stablity`"),
        (
            "[policy]\nsunset_warning = \"soon\"\n",
            "sunset_warning: \"soon\" is not a duration",
        ),
        (
            "[[watch]]\nname = \"acme.t\"\nkind = \"openapi\"\npath = \"old.json\"\n[watch.policy]\nsunset_warning = \"2h\"\n",
            "sunset_warning: \"2h\" is out of range",
        ),
    ] {
        let path = sb.write_file("bad.toml", table.as_bytes());
        let path = path.to_string_lossy();
        let run = sb.run(&["diff", &old, &old, "--config", &path]);
        assert_eq!(run.code, 2, "{}", run.describe());
        assert!(run.stderr_text().contains(expected), "{}", run.describe());
    }
}

/// A vendored oasdiff document (`tests/fixtures/oasdiff-sunset/`).
fn oasdiff(name: &str) -> String {
    format!(
        "{}/tests/fixtures/oasdiff-sunset/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `diff` of two oasdiff documents: (exit code, report).
fn diff_oasdiff(sb: &Sandbox, old: &str, new: &str, extra: &[&str]) -> (i32, Value) {
    let (o, n) = (oasdiff(old), oasdiff(new));
    let mut args = vec!["diff", &o, &n, "--json", "--fail-on", "breaking"];
    args.extend_from_slice(extra);
    let run = sb.run(&args);
    assert!(run.code == 0 || run.code == 1, "{}", run.describe());
    (run.code, run.json())
}

#[test]
fn oasdiffs_deprecation_sunset_and_stability_documents() {
    let sb = Sandbox::new();
    // Deprecating with a sunset: the sunset is breaking, the deprecation itself info.
    let (code, report) = diff_oasdiff(
        &sb,
        "deprecation/base.yaml",
        "deprecation/deprecated-future.yaml",
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(change(&report, "sunset-added")["after"], "9999-08-10");
    assert_eq!(change(&report, "deprecated-changed")["severity"], "info");
    assert!(!rules(&report).contains(&"extension-changed".to_string()));
    // An invalid sunset is its own breaking change.
    let (_, report) = diff_oasdiff(
        &sb,
        "deprecation/base.yaml",
        "deprecation/deprecated-with-invalid-sunset.yaml",
        &[],
    );
    assert_eq!(change(&report, "sunset-date-invalid")["after"], "invalid");
    // Removing the deprecated operation: compatible once its sunset (2022-08-10) has passed
    // under allow_removal_after_sunset; breaking before it, and for a future sunset.
    let allow = config(&sb, "allow_removal_after_sunset = true", "");
    let (code, report) = diff_oasdiff(
        &sb,
        "deprecation/deprecated-past.yaml",
        "deprecation/sunset.yaml",
        &["--config", &allow, "--date", "2026-12-05"],
    );
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["compatibility"], "compatible");
    let (code, _) = diff_oasdiff(
        &sb,
        "deprecation/deprecated-past.yaml",
        "deprecation/sunset.yaml",
        &["--config", &allow, "--date", "2022-08-09"],
    );
    assert_eq!(code, 1);
    let (code, _) = diff_oasdiff(
        &sb,
        "deprecation/deprecated-future.yaml",
        "deprecation/sunset.yaml",
        &["--config", &allow, "--date", "2026-12-05"],
    );
    assert_eq!(code, 1);
    // A beta endpoint gaining a sunset is info under min_stability = "stable".
    let stable = config(&sb, "min_stability = \"stable\"", "");
    let (code, report) = diff_oasdiff(
        &sb,
        "deprecation/base-beta-stability.yaml",
        "deprecation/deprecated-future-beta-stability.yaml",
        &["--config", &stable],
    );
    assert_eq!(code, 0, "{report}");
    assert_eq!(change(&report, "sunset-added")["severity"], "info");
    // Stable to draft is lowered.
    let (code, report) = diff_oasdiff(
        &sb,
        "stability/base-endpoint-stable.yaml",
        "stability/revision-endpoint-draft.yaml",
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(change(&report, "stability-lowered")["before"], "stable");
    assert_eq!(change(&report, "stability-lowered")["after"], "draft");
}

/// Today (UTC) plus `days`, as `YYYY-MM-DD`.
pub(crate) fn day_from_today(days: i64) -> String {
    schemawatch::ci::accept::Date::today()
        .plus_days(days)
        .to_string()
}

/// A registry written before the sunsets migration (its tables dropped, its schema version
/// set back) gains the facts of its accepted contracts on open: `status` shows the next
/// in-scope sunset without the document being fetched again.
#[test]
fn a_registry_written_before_the_sunsets_migration_is_backfilled_on_open() {
    let sb = Sandbox::new();
    let soon = day_from_today(10);
    let later = day_from_today(40);
    let mut document = doc(|op| op["x-sunset"] = json!(soon.clone()));
    document["paths"]["/b"]["get"]["x-sunset"] = json!(later.clone());
    document["paths"]["/c"] = json!({"get": {"operationId": "getC", "x-sunset": day_from_today(2),
        "responses": {"200": {"description": "ok"}}}});
    sb.write_file("api.json", document.to_string().as_bytes());
    sb.write_config(
        "[storage]\npath = \"registry.sqlite3\"\n[[watch]]\nname = \"acme.t\"\nkind = \"openapi\"\npath = \"api.json\"\nuses = [\"getA\", \"GET /b\"]\n",
    );
    let (run, _) = sb.check(&[]);
    run.assert_code(0);
    let row = &sb.status()["watches"][0];
    // getC's sunset is the earliest, but the consumer does not use getC.
    assert_eq!(
        row["next_sunset"],
        json!({"endpoint": "getA", "date": soon})
    );
    // Back to the schema before the migration (0010), undoing the later ones too: 0011's
    // change counter, 0012's index. A later migration adds its undo here.
    {
        let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
        conn.execute_batch(
            "DROP INDEX reviews_watch;
             ALTER TABLE registry_head DROP COLUMN changes;
             DROP TABLE sunsets; DROP TABLE sunset_versions; DROP TABLE sunset_alerts;
             DELETE FROM schema_migrations WHERE version >= 10;
             PRAGMA user_version = 9;",
        )
        .unwrap();
        let latest: i64 = conn
            .query_row("SELECT max(version) FROM schema_migrations", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(latest, 9);
    }
    // The document is gone: only the stored contract can answer.
    std::fs::remove_file(sb.path("api.json")).unwrap();
    let row = &sb.status()["watches"][0];
    assert_eq!(
        row["next_sunset"],
        json!({"endpoint": "getA", "date": soon})
    );
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM sunsets WHERE watch = 'acme.t'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 3, "getA, getB and getC state a sunset");
}
