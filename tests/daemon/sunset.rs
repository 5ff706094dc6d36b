//! Sunset alerts (issue 31, item 3): the daemon raises `sunset_approaching` (a WARN line, an
//! event of the event log, the `schemawatch_sunsets_approaching` gauge) once per endpoint and
//! date for an in-scope accepted sunset within `sunset_warning`, and never again after a
//! restart; `/v1/watches` shows the next in-scope sunset.

use crate::common::*;
use crate::service::{config_text, file_watch, Daemon};
use serde_json::{json, Value};
use std::time::Duration;

/// Today (UTC) plus `days`, as `YYYY-MM-DD`.
fn day_from_today(days: i64) -> String {
    schemawatch::ci::accept::Date::today()
        .plus_days(days)
        .to_string()
}

/// `getA` sunsets in 5 days, `getB` in 100 (beyond the 30-day warning), `getC` in 3 but the
/// consumer does not use it.
fn document() -> Value {
    let op = |id: &str, sunset: String| {
        json!({"get": {"operationId": id, "x-sunset": sunset,
            "responses": {"200": {"description": "ok"}}}})
    };
    json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": op("getA", day_from_today(5)),
            "/b": op("getB", day_from_today(100)),
            "/c": op("getC", day_from_today(3)),
        }
    })
}

fn alert_events(sb: &Sandbox) -> Vec<Value> {
    let conn = rusqlite::Connection::open(sb.path("registry.sqlite3")).unwrap();
    let mut stmt = conn
        .prepare("SELECT data_json FROM events WHERE event = 'sunset_approaching' ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|d| serde_json::from_str(&d.unwrap()).unwrap())
        .collect()
}

#[test]
fn a_sunset_alert_is_raised_once_across_a_restart() {
    let sb = Sandbox::new();
    sb.write_file("api.json", document().to_string().as_bytes());
    let watch = file_watch("acme.t", "api.json", "1s") + "uses = [\"getA\", \"getB\"]\n";
    sb.write_config(&config_text(&watch, ""));
    let mut daemon = Daemon::start(&sb, None);
    let alert = daemon.wait_for_log("sunset_approaching", |_| true);
    assert_eq!(alert["level"], "WARN", "{alert}");
    assert_eq!(alert["watch"], "acme.t");
    assert_eq!(alert["endpoint"], "getA");
    assert_eq!(alert["sunset"], day_from_today(5));
    daemon.wait_metric("schemawatch_sunsets_approaching", |v| v == 1.0);
    // A few more refreshes: still one alert.
    let refreshes = |d: &Daemon| {
        d.logs()
            .iter()
            .filter(|v| v["event"] == "unchanged" || v["event"] == "refresh")
            .count()
    };
    let seen = refreshes(&daemon);
    let start = std::time::Instant::now();
    while refreshes(&daemon) < seen + 2 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(daemon.count_events("sunset_approaching"), 1);
    let watches = daemon.get_json("/v1/watches");
    assert_eq!(
        watches[0]["next_sunset"],
        json!({"endpoint": "getA", "date": day_from_today(5)}),
        "{watches}"
    );
    daemon.terminate(Duration::from_secs(10));
    let events = alert_events(&sb);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["endpoint"], "getA");
    assert_eq!(events[0]["watch"], "acme.t");

    // After a restart the alert is remembered: the gauge still counts the sunset, no new
    // WARN line, no new event.
    let mut daemon = Daemon::start(&sb, None);
    daemon.wait_metric("schemawatch_sunsets_approaching", |v| v == 1.0);
    let seen = refreshes(&daemon);
    let start = std::time::Instant::now();
    while refreshes(&daemon) < seen + 2 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        daemon.count_events("sunset_approaching"),
        0,
        "{}",
        daemon.log_text()
    );
    daemon.terminate(Duration::from_secs(10));
    assert_eq!(alert_events(&sb).len(), 1);
}
