//! Running many watches (issue 17): bounded metrics and their per-watch switch, the paged and
//! filterable API with `/v1/summary`, quiet logs with the periodic `summary` event, gauges
//! recounted when another process changes the registry, and watch files in a directory that
//! SIGHUP re-reads without disturbing the schedule of unchanged watches.
//!
//! Timing: waits are polls with a deadline; watches meant to stay quiet have a 1 h interval.

use crate::common;
use crate::service::*;

use common::*;
use serde_json::Value;
use std::time::Duration;

/// A watch name starting with `prefix` whose first refresh comes within 300 ms (the first
/// refresh of a watch comes after a fixed per-watch fraction of `min(interval, 30 s)`).
fn prompt_name(prefix: &str) -> String {
    (0..1000)
        .map(|i| format!("{prefix}{i}"))
        .find(|name| {
            let text = format!(
                "[[watch]]\nname = \"{name}\"\nkind = \"openapi\"\npath = \"x\"\ninterval = \"1h\"\n"
            );
            let config =
                schemawatch::config::Config::parse(std::path::Path::new("/x/c.toml"), &text)
                    .unwrap();
            schemawatch::daemon::first_delay(&config.watches[0], 1) < Duration::from_millis(300)
        })
        .expect("some name has a short first delay")
}

fn metric_lines(d: &Daemon, prefix: &str) -> Vec<String> {
    let (status, text) = d.get("/metrics");
    assert_eq!(status, 200);
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// Follows a `Link: <path>; rel="next"` header of a response head.
fn next_link(head: &str) -> Option<String> {
    head.lines()
        .find(|l| l.to_ascii_lowercase().starts_with("link:"))
        .and_then(|l| l.split_once('<'))
        .and_then(|(_, rest)| rest.split_once('>'))
        .filter(|(_, rest)| rest.contains("rel=\"next\""))
        .map(|(path, _)| path.to_string())
}

fn watch_names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|w| w["watch"].as_str().unwrap().to_string())
        .collect()
}

/// At INFO (the default an operator runs with): no line per unchanged refresh, a failing
/// watch warns on the first error and then every `error_log_every`, a `summary` event comes
/// every `summary_interval`; the metrics hold aggregates and, under `auto` with few watches,
/// one status series per watch.
#[test]
fn logs_are_quiet_and_metrics_bounded() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let down = format!("http://127.0.0.1:{}/openapi.json", dead_port());
    let watches = format!(
        "{}{}",
        file_watch("ops.ok", "pets.json", "1s"),
        url_watch("ops.down", &down, "1s")
    );
    sb.write_config(&config_text(
        &watches,
        "error_log_every = 2\nsummary_interval = \"1s\"\n",
    ));
    let config = sb.config_arg();
    let cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
    let mut d = Daemon::start_logging(cmd, None, "info");

    d.wait_for_log("refresh", |v| {
        v["action"] == "registered" && v["watch"] == "ops.ok"
    });
    d.wait_json("/v1/watches/ops.ok", |v| v["status"] == "unchanged");
    // Failures 1 and 3 are logged (WARN), failure 2 is not.
    let third = d.wait_for_log("refresh_failed", |v| v["consecutive_failures"] == 3);
    assert_eq!(third["level"], "WARN", "{third}");
    assert_eq!(third["class"], "connect", "{third}");
    let summary = d.wait_for_log("summary", |_| true);
    assert_eq!(summary["level"], "INFO", "{summary}");
    assert_eq!(summary["watches"], 2, "{summary}");
    let by_status: Value =
        serde_json::from_str(summary["by_status"].as_str().expect("by_status")).unwrap();
    assert_eq!(by_status.as_object().map(|o| o.len()), Some(9), "{summary}");
    for key in [
        "registry_version",
        "open_reviews",
        "overdue",
        "errors_by_class",
    ] {
        assert!(!summary[key].is_null(), "{key}: {summary}");
    }

    let logs = d.logs();
    let failures: Vec<i64> = logs
        .iter()
        .filter(|v| v["event"] == "refresh_failed")
        .map(|v| {
            assert_eq!(v["level"], "WARN", "{v}");
            v["consecutive_failures"].as_i64().unwrap()
        })
        .collect();
    assert!(
        failures.iter().all(|f| f % 2 == 1),
        "only failures 1, 3, 5, … are logged: {failures:?}"
    );
    assert!(
        !logs
            .iter()
            .any(|v| v["event"] == "refresh" && v["action"] == "unchanged"),
        "an unchanged refresh is DEBUG:\n{}",
        d.log_text()
    );

    // /v1/summary: the same fields, from memory.
    let s = d.get_json("/v1/summary");
    let mut keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "by_status",
            "errors_by_class",
            "open_reviews",
            "overdue",
            "registry_version",
            "watches"
        ]
    );
    assert_eq!(s["watches"], 2);
    assert!(
        s["errors_by_class"]["connect"].as_i64().unwrap_or(0) >= 3,
        "{s}"
    );
    assert_eq!(s["by_status"]["unchanged"], 1, "{s}");
    assert_eq!(s["by_status"]["error"], 1, "{s}");
    assert_eq!(s["open_reviews"], 0);

    // Metrics: aggregates by kind, action and class; one status series per watch (auto, 2).
    let text = d.get("/metrics").1;
    for series in [
        "schemawatch_watches_by_status{status=\"unchanged\"} 1",
        "schemawatch_watches_by_status{status=\"error\"} 1",
        "schemawatch_watches_overdue 0",
        "schemawatch_watch_status{watch=\"ops.ok\",status=\"unchanged\"} 1",
        "schemawatch_watch_status{watch=\"ops.down\",status=\"error\"} 1",
    ] {
        assert!(text.contains(series), "{series} missing:\n{text}");
    }
    for prefix in [
        "schemawatch_refreshes_total{kind=\"openapi\",action=\"unchanged\",outcome=\"unchanged\"}",
        "schemawatch_refresh_errors_total{kind=\"openapi\",class=\"connect\"}",
        "schemawatch_fetch_bytes_total{kind=\"openapi\"}",
        "schemawatch_schedule_lag_seconds_count",
        "schemawatch_refresh_duration_seconds_count{kind=\"openapi\",action=\"error\",outcome=\"error\"}",
    ] {
        assert!(text.contains(prefix), "{prefix} missing:\n{text}");
    }
    assert_eq!(metric_lines(&d, "schemawatch_watch_status{").len(), 2);
    let (status, _) = d.terminate(PATIENCE);
    assert_eq!(status.code(), Some(0));
}

/// Above 1,000 watches `auto` turns per-watch series off (a WARN says so); `true` keeps them.
#[test]
fn per_watch_metrics_auto_turns_off_above_the_threshold() {
    let sb = Sandbox::new();
    let watches: String = (0..1001)
        .map(|i| file_watch(&format!("many.w{i}"), "missing.json", "1h"))
        .collect();
    for (setting, per_watch) in [("", false), ("per_watch_metrics = true\n", true)] {
        let text = config_text(&watches, "").replace("[server]\n", &format!("[server]\n{setting}"));
        sb.write_config(&text);
        let mut d = Daemon::start(&sb, None);
        let warned = d
            .logs()
            .iter()
            .any(|v| v["event"] == "per_watch_metrics_off");
        if per_watch {
            assert!(!warned);
            assert_eq!(metric_lines(&d, "schemawatch_watch_status{").len(), 1001);
        } else {
            let warn = d.wait_for_log("per_watch_metrics_off", |_| true);
            assert_eq!(warn["level"], "WARN", "{warn}");
            assert_eq!(warn["watches"], 1001, "{warn}");
            assert!(metric_lines(&d, "schemawatch_watch_").is_empty());
            assert!(d
                .get("/metrics")
                .1
                .contains("schemawatch_watches_by_status{status=\"idle\"}"));
        }
        assert_eq!(d.metric("schemawatch_watches"), Some(1001.0));
        let (status, _) = d.terminate(PATIENCE);
        assert_eq!(status.code(), Some(0));
    }
}

/// `status=`, `q=`, `limit=` and `cursor=` on the listings; the cursor stays valid when
/// watches are added and removed (SIGHUP) between pages; bad parameters are 400.
#[test]
fn listings_filter_and_page_across_a_reload() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let config = |names: &[&str]| {
        let watches: String = names
            .iter()
            .map(|n| {
                let path = if n.ends_with('x') {
                    "missing.json"
                } else {
                    "pets.json"
                };
                file_watch(n, path, "1s")
            })
            .collect();
        config_text(&watches, "")
    };
    sb.write_config(&config(&["pg.e", "pg.cx", "pg.a", "pg.dx", "pg.b"]));
    let mut d = Daemon::start(&sb, None);
    let errors = d.wait_json("/v1/watches?status=error", |v| {
        v.as_array().is_some_and(|a| a.len() == 2)
    });
    assert_eq!(
        watch_names(&errors),
        ["pg.cx", "pg.dx"],
        "config order when whole"
    );
    assert_eq!(watch_names(&d.get_json("/v1/watches?q=g.b")), ["pg.b"]);
    assert!(d
        .get_json("/v1/watches?q=PG")
        .as_array()
        .unwrap()
        .is_empty());
    // The same filter on /v1/status, shape unchanged.
    let status = d.get_json("/v1/status?status=error&q=dx");
    assert_eq!(watch_names(&status["watches"]), ["pg.dx"]);
    assert!(status["registry_version"].is_i64());

    // Page 1, then a reload that removes a watch after the cursor and adds two (one before
    // the cursor, one after): page 2 starts right after the last name of page 1.
    let (code, head, body) = http_with_head(d.api, "GET", "/v1/watches?limit=2", None, &[], None);
    assert_eq!(code, 200, "{body}");
    let page1: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(watch_names(&page1), ["pg.a", "pg.b"]);
    let next = next_link(&head).unwrap_or_else(|| panic!("no Link: {head}"));
    assert!(next.starts_with("/v1/watches?limit=2&cursor="), "{next}");
    sb.write_config(&config(&[
        "pg.e", "pg.a", "pg.a2", "pg.bb", "pg.dx", "pg.b",
    ]));
    d.signal("HUP");
    d.wait_for_log("config_reloaded", |v| v["added"] == 2 && v["removed"] == 1);
    let (_, head, body) = http_with_head(d.api, "GET", &next, None, &[], None);
    assert_eq!(
        watch_names(&serde_json::from_str(&body).unwrap()),
        ["pg.bb", "pg.dx"]
    );
    let last = next_link(&head).expect("a third page");
    let (_, head, body) = http_with_head(d.api, "GET", &last, None, &[], None);
    assert_eq!(watch_names(&serde_json::from_str(&body).unwrap()), ["pg.e"]);
    assert_eq!(next_link(&head), None, "no Link after the last page");
    // Filters travel in the Link.
    let (_, head, _) = http_with_head(d.api, "GET", "/v1/status?q=pg&limit=1", None, &[], None);
    assert!(next_link(&head).is_some_and(|l| l.starts_with("/v1/status?q=pg&limit=1&cursor=")));

    // /v1/pending takes the same parameters.
    assert_eq!(
        d.get_json("/v1/pending?status=pending_review&limit=5"),
        Value::Array(vec![])
    );
    for bad in [
        "/v1/watches?status=bogus",
        "/v1/watches?limit=0",
        "/v1/watches?limit=1001",
        "/v1/watches?cursor=zz",
        "/v1/pending?cursor=n1g",
        "/v1/watches?nope=1",
    ] {
        let (code, body) = d.get(bad);
        assert_eq!(code, 400, "{bad}: {body}");
        assert!(serde_json::from_str::<Value>(&body).unwrap()["error"].is_string());
    }
    let (status, _) = d.terminate(PATIENCE);
    assert_eq!(status.code(), Some(0));
}

/// A review queued and accepted by CLI commands beside the daemon (a cron `check`, a
/// `pending accept`) shows in `/v1/summary` and the metrics without a refresh by the daemon:
/// the gauges are recounted when the registry's `data_version` moves.
#[test]
fn gauges_follow_registry_changes_made_by_another_process() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let name = prompt_name("ext.w");
    sb.write_config(&config_text(&file_watch(&name, "pets.json", "1h"), ""));
    let d = Daemon::start(&sb, None);
    d.wait_json(&format!("/v1/watches/{name}"), |v| {
        v["status"] == "registered"
    });

    sb.write_file("pets.json", &Pets::v3().bytes());
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "pending_review", "{check}");
    let s = d.wait_json("/v1/summary", |s| s["open_reviews"] == 1);
    assert_eq!(s["by_status"]["pending_review"], 1, "{s}");
    d.wait_metric("schemawatch_pending_reviews", |v| v == 1.0);

    let id = sb.pending_list()[0]["id"].as_i64().unwrap().to_string();
    sb.run(&[
        "pending",
        "accept",
        &id,
        "--reviewer",
        "alice",
        "--reason",
        "announced",
        "--config",
        &sb.config_arg(),
    ])
    .assert_code(0);
    let s = d.wait_json("/v1/summary", |s| s["open_reviews"] == 0);
    assert!(s["registry_version"].as_i64().unwrap() >= 2, "{s}");
    d.wait_metric("schemawatch_pending_reviews", |v| v == 0.0);
}

/// `include` globs: SIGHUP re-reads the included files, adds what is new, keeps the schedule
/// of unchanged watches (not refreshed again), and refuses a duplicate across files, naming
/// both places.
#[test]
fn included_watch_files_reload_without_disturbing_unchanged_watches() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    std::fs::create_dir_all(sb.path("watches.d")).unwrap();
    let kept = prompt_name("inc.main");
    let included = prompt_name("inc.file");
    sb.write_file(
        "watches.d/10-first.toml",
        file_watch(&included, "../pets.json", "1h").as_bytes(),
    );
    let text = config_text(&file_watch(&kept, "pets.json", "1h"), "")
        .replace("[storage]", "include = [\"watches.d/*.toml\"]\n\n[storage]");
    sb.write_config(&text);
    let mut d = Daemon::start(&sb, None);
    for name in [&kept, &included] {
        d.wait_json(&format!("/v1/watches/{name}"), |v| {
            v["status"] == "registered"
        });
    }
    let last_check = |d: &Daemon, name: &str| {
        d.metric(&format!(
            "schemawatch_watch_last_check_timestamp_seconds{{watch=\"{name}\"}}"
        ))
        .expect("per-watch series (few watches)")
    };
    let before = (last_check(&d, &kept), last_check(&d, &included));

    sb.write_file(
        "watches.d/20-second.toml",
        file_watch("inc.added", "../pets.json", "1s").as_bytes(),
    );
    d.signal("HUP");
    let reloaded = d.wait_for_log("config_reloaded", |_| true);
    assert_eq!(reloaded["added"], 1, "{reloaded}");
    assert_eq!(reloaded["unchanged"], 2, "{reloaded}");
    d.wait_json("/v1/watches/inc.added", |v| v["status"] == "unchanged");
    // Both unchanged watches would have been refreshed within 300 ms of a restart of their
    // schedule; inc.added has been refreshed twice since.
    assert_eq!((last_check(&d, &kept), last_check(&d, &included)), before);

    sb.write_file(
        "watches.d/30-dup.toml",
        format!("\n{}", file_watch(&kept, "../pets.json", "1h")).as_bytes(),
    );
    d.signal("HUP");
    let failed = d.wait_for_log("config_reload_failed", |_| true);
    let error = failed["error"].as_str().unwrap_or("");
    assert!(
        error.contains("30-dup.toml: line 3")
            && error.contains("schemawatch.toml, line ")
            && error.contains("duplicate"),
        "{failed}"
    );
    assert_eq!(d.get_json("/v1/watches").as_array().map(Vec::len), Some(3));
    let (status, _) = d.terminate(PATIENCE);
    assert_eq!(status.code(), Some(0));
}
