//! `schemawatch_oldest_pending_review_timestamp_seconds` (issue 34; the alert
//! SchemawatchReviewPendingTooLong in deploy/prometheus/alerts.yml): one unlabelled gauge, the
//! creation time of the oldest open review in Unix seconds, 0 when none is open; set at start
//! and recounted when another process changes the registry.

use crate::common;
use crate::service::*;

use common::*;

const GAUGE: &str = "schemawatch_oldest_pending_review_timestamp_seconds";

fn unix_seconds(rfc3339: &str) -> f64 {
    humantime::parse_rfc3339_weak(rfc3339)
        .unwrap_or_else(|e| panic!("{rfc3339}: {e}"))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn the_oldest_pending_review_gauge_follows_open_reviews() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(&config_text(&file_watch("age.pets", "pets.json", "1h"), ""));
    // Registered by a one-shot check before the daemon starts.
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");

    let d = Daemon::start(&sb, None);
    // No open review: 0 (a series without labels: `metric` matches `NAME VALUE` only).
    d.wait_metric(GAUGE, |v| v == 0.0);
    let (_, text) = d.get("/metrics");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(GAUGE)).collect();
    assert_eq!(lines.len(), 1, "one series, no labels: {lines:?}");

    // A breaking change queued by another process (a cron `check`).
    sb.write_file("pets.json", &Pets::v3().bytes());
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "pending_review", "{check}");
    let created = unix_seconds(sb.pending_list()[0]["created_at"].as_str().unwrap());
    let value = d.wait_metric(GAUGE, |v| v > 0.0);
    assert!(
        (value - created).abs() < 1.5,
        "gauge {value} vs the review's created_at {created}"
    );

    // Decided: back to 0.
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
    d.wait_metric(GAUGE, |v| v == 0.0);
}
