//! The body each sink kind receives: Standard Webhooks JSON, a Slack Block Kit message, a
//! Teams Workflows message carrying an Adaptive Card 1.4, and the chat digest. Pure and
//! byte-stable: the same event renders the same bytes (keys sorted, no clock read here).

use crate::config::SinkKind;
use crate::core::event::{severity_order, EventData, EventKind, EVENT_SCHEMA_VERSION};
use crate::registry::events::StoredEvent;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Slack's documented limits (Block Kit): header text, section text, blocks per message.
pub const SLACK_HEADER_MAX: usize = 150;
pub const SLACK_SECTION_MAX: usize = 3000;
pub const SLACK_BLOCKS_MAX: usize = 50;
/// Rule ids named in a chat message (the rest are counted).
const TOP_RULES: usize = 5;
/// Watches named in a digest (the rest are counted).
const TOP_WATCHES: usize = 10;

/// Where an event's review (or watch) can be opened, when `public_url` is set.
pub fn link(public_url: Option<&url::Url>, data: &EventData) -> Option<String> {
    let base = public_url?;
    let base = base.as_str().trim_end_matches('/');
    match (data.review_id, &data.watch) {
        (Some(id), _) => Some(format!("{base}/v1/pending/{id}")),
        (None, Some(watch)) => Some(format!("{base}/v1/watches/{watch}")),
        _ => None,
    }
}

/// The `data` object of a webhook body.
fn webhook_data(
    event: &StoredEvent,
    public_url: Option<&url::Url>,
    include_changes: bool,
) -> Value {
    let mut data = match serde_json::to_value(&event.data) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if !include_changes {
        data.remove("changes");
    }
    data.insert("schema_version".into(), json!(EVENT_SCHEMA_VERSION));
    data.insert("id".into(), json!(event.id));
    data.insert("sequence".into(), json!(event.sequence));
    data.insert("event".into(), json!(event.event.as_str()));
    if let Some(link) = link(public_url, &event.data) {
        data.insert("link".into(), json!(link));
    }
    Value::Object(data)
}

/// A Standard Webhooks body: `{"type": "schemawatch.<event>", "timestamp", "data"}`.
pub fn webhook(
    event: &StoredEvent,
    public_url: Option<&url::Url>,
    include_changes: bool,
) -> Vec<u8> {
    let body = json!({
        "type": format!("schemawatch.{}", event.event.as_str()),
        "timestamp": event.created_at,
        "data": webhook_data(event, public_url, include_changes),
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The body of `notify test`.
pub fn webhook_test(id: &str, timestamp: &str) -> Vec<u8> {
    let body = json!({
        "type": "schemawatch.test",
        "timestamp": timestamp,
        "data": {"schema_version": EVENT_SCHEMA_VERSION, "id": id, "event": "test"},
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// Slack mrkdwn: `&`, `<` and `>` escaped, so provider text can never form a link or a
/// mention (`<!channel>`).
pub fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Teams (Adaptive Card TextBlock) markdown: the characters that start markup escaped.
fn card_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '>' | '<' | '~' | '|' | '!'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// At most `max` characters, an ellipsis marking a cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn title(event: EventKind, data: &EventData) -> String {
    let what = event.as_str().replace('_', " ");
    match &data.watch {
        Some(w) => format!("schemawatch: {what} — {w}"),
        None => format!("schemawatch: {what}"),
    }
}

/// The facts of an event as (label, value) pairs, values raw (escape per sink).
fn facts(event: &StoredEvent) -> Vec<(&'static str, String)> {
    let d = &event.data;
    let mut facts = Vec::new();
    if let Some(w) = &d.watch {
        facts.push(("Watch", w.clone()));
    }
    if let Some(k) = d.kind.as_deref().filter(|k| !k.is_empty()) {
        facts.push(("Kind", k.to_string()));
    }
    if let Some(c) = d.compatibility {
        facts.push(("Compatibility", c.as_str().to_string()));
    }
    if let Some(n) = d.change_count {
        let by: Vec<String> = severity_order()
            .iter()
            .filter_map(|s| {
                d.counts
                    .get(s.as_str())
                    .map(|n| format!("{n} {}", s.as_str()))
            })
            .collect();
        let detail = if by.is_empty() {
            String::new()
        } else {
            format!(" ({})", by.join(", "))
        };
        facts.push(("Changes", format!("{n}{detail}")));
    }
    if let Some(id) = d.review_id {
        facts.push(("Review", id.to_string()));
    }
    if let Some(v) = d.registry_version {
        facts.push(("Registry version", v.to_string()));
    }
    if let Some(n) = d.consecutive_failures {
        facts.push(("Failures in a row", n.to_string()));
    }
    if let Some(c) = &d.error_class {
        facts.push(("Error class", c.to_string()));
    }
    if let Some(r) = &d.reviewer {
        facts.push(("Reviewer", r.clone()));
    }
    if !d.rules.is_empty() {
        let mut rules: Vec<&str> = d.rules.iter().take(TOP_RULES).map(String::as_str).collect();
        let more = d.rules.len().saturating_sub(TOP_RULES);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        rules.sort_unstable();
        facts.push(("Rules", format!("{}{more}", rules.join(", "))));
    }
    facts
}

/// A Slack incoming-webhook message for one event.
pub fn slack(event: &StoredEvent, public_url: Option<&url::Url>) -> Vec<u8> {
    let header = clip(&title(event.event, &event.data), SLACK_HEADER_MAX);
    let lines: Vec<String> = facts(event)
        .into_iter()
        .map(|(k, v)| format!("*{k}:* {}", slack_escape(&v)))
        .collect();
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "text": header}}),
        json!({"type": "section", "text": {"type": "mrkdwn", "text": clip(&format!("{}\n{}", slack_escape(event.event.doc()), lines.join("\n")), SLACK_SECTION_MAX)}}),
    ];
    if let Some(link) = link(public_url, &event.data) {
        let label = if event.data.review_id.is_some() {
            "Open the review"
        } else {
            "Open the watch"
        };
        blocks.push(json!({"type": "actions", "elements": [
            {"type": "button", "text": {"type": "plain_text", "text": label}, "url": link}
        ]}));
    }
    blocks.push(json!({"type": "context", "elements": [
        {"type": "mrkdwn", "text": slack_escape(&format!("event {}", event.id))}
    ]}));
    blocks.truncate(SLACK_BLOCKS_MAX);
    let body = json!({"text": header, "blocks": blocks});
    serde_json::to_vec(&body).unwrap_or_default()
}

fn card(body: Vec<Value>, link: Option<(String, &str)>) -> Vec<u8> {
    let mut content = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    });
    if let (Some((url, label)), Some(obj)) = (link, content.as_object_mut()) {
        obj.insert(
            "actions".into(),
            json!([{"type": "Action.OpenUrl", "title": label, "url": url}]),
        );
    }
    let body = json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "content": content,
        }],
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// A Teams Workflows message: an Adaptive Card 1.4 attachment.
pub fn teams(event: &StoredEvent, public_url: Option<&url::Url>) -> Vec<u8> {
    let facts: Vec<Value> = facts(event)
        .into_iter()
        .map(|(k, v)| json!({"title": k, "value": card_escape(&v)}))
        .collect();
    let body = vec![
        json!({"type": "TextBlock", "text": card_escape(&title(event.event, &event.data)), "weight": "Bolder", "size": "Medium", "wrap": true}),
        json!({"type": "TextBlock", "text": card_escape(event.event.doc()), "wrap": true}),
        json!({"type": "FactSet", "facts": facts}),
    ];
    let label = if event.data.review_id.is_some() {
        "Open the review"
    } else {
        "Open the watch"
    };
    card(body, link(public_url, &event.data).map(|l| (l, label)))
}

/// The test message of `notify test` for a chat sink.
pub fn chat_test(kind: SinkKind) -> Vec<u8> {
    let text = "schemawatch: test notification";
    match kind {
        SinkKind::Teams => card(
            vec![json!({"type": "TextBlock", "text": text, "wrap": true})],
            None,
        ),
        _ => serde_json::to_vec(&json!({"text": text, "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}}
        ]}))
        .unwrap_or_default(),
    }
}

/// One message for many due events of one chat sink: counts by event and compatibility, the
/// watches with most events.
pub fn digest(kind: SinkKind, events: &[&StoredEvent], public_url: Option<&url::Url>) -> Vec<u8> {
    let mut by_event: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_compat: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_watch: BTreeMap<&str, usize> = BTreeMap::new();
    for e in events {
        *by_event.entry(e.event.as_str()).or_default() += 1;
        if let Some(c) = e.data.compatibility {
            *by_compat.entry(c.as_str()).or_default() += 1;
        }
        if let Some(w) = &e.data.watch {
            *by_watch.entry(w.as_str()).or_default() += 1;
        }
    }
    let mut watches: Vec<(&str, usize)> = by_watch.into_iter().collect();
    watches.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let more = watches.len().saturating_sub(TOP_WATCHES);
    watches.truncate(TOP_WATCHES);
    let title = format!("schemawatch: {} events", events.len());
    let list = |m: &BTreeMap<&str, usize>| {
        m.iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let events_line = list(&by_event);
    let compat_line = list(&by_compat);
    let mut watch_line = watches
        .iter()
        .map(|(w, n)| format!("{w} ({n})"))
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        watch_line.push_str(&format!(" and {more} more"));
    }
    let overview = public_url.map(|u| format!("{}/v1/status", u.as_str().trim_end_matches('/')));
    match kind {
        SinkKind::Teams => {
            let mut facts = vec![json!({"title": "Events", "value": card_escape(&events_line)})];
            if !compat_line.is_empty() {
                facts.push(json!({"title": "Compatibility", "value": card_escape(&compat_line)}));
            }
            facts.push(json!({"title": "Watches", "value": card_escape(&watch_line)}));
            card(
                vec![
                    json!({"type": "TextBlock", "text": card_escape(&title), "weight": "Bolder", "size": "Medium", "wrap": true}),
                    json!({"type": "FactSet", "facts": facts}),
                ],
                overview.map(|l| (l, "Open the status")),
            )
        }
        _ => {
            let mut text = format!("*Events:* {}", slack_escape(&events_line));
            if !compat_line.is_empty() {
                text.push_str(&format!(
                    "\n*Compatibility:* {}",
                    slack_escape(&compat_line)
                ));
            }
            text.push_str(&format!("\n*Watches:* {}", slack_escape(&watch_line)));
            let mut blocks = vec![
                json!({"type": "header", "text": {"type": "plain_text", "text": clip(&title, SLACK_HEADER_MAX)}}),
                json!({"type": "section", "text": {"type": "mrkdwn", "text": clip(&text, SLACK_SECTION_MAX)}}),
            ];
            if let Some(l) = overview {
                blocks.push(json!({"type": "actions", "elements": [
                    {"type": "button", "text": {"type": "plain_text", "text": "Open the status"}, "url": l}
                ]}));
            }
            serde_json::to_vec(&json!({"text": title, "blocks": blocks})).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::Compatibility;

    fn event(watch: &str, rules: &[&str]) -> StoredEvent {
        StoredEvent {
            id: "abc-7".into(),
            sequence: 7,
            event: EventKind::PendingReview,
            created_at: "2026-12-04T10:00:00Z".into(),
            data: EventData {
                watch: Some(watch.into()),
                kind: Some("openapi".into()),
                compatibility: Some(Compatibility::Breaking),
                review_id: Some(3),
                change_count: Some(2),
                rules: rules.iter().map(|r| r.to_string()).collect(),
                ..EventData::default()
            },
        }
    }

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn slack_text_can_never_mention_or_link() {
        let e = event("a.b", &["<!channel>", "<https://evil|x>", "a&b"]);
        let body = parse(&slack(&e, None));
        let text = body.to_string();
        assert!(
            !text.contains("<!channel>") && !text.contains("<https://"),
            "{text}"
        );
        assert!(text.contains("&lt;!channel&gt;") && text.contains("a&amp;b"));
        assert!(body.get("link_names").is_none());
    }

    #[test]
    fn slack_messages_stay_within_the_documented_limits() {
        let long: Vec<String> = (0..500)
            .map(|i| format!("rule-{i}-{}", "x".repeat(40)))
            .collect();
        let refs: Vec<&str> = long.iter().map(String::as_str).collect();
        let name = format!("ns.{}", "w".repeat(300));
        let mut e = event(&name, &refs);
        e.data.counts.insert("breaking".into(), 2);
        let url = url::Url::parse("https://sw.example/prefix/").unwrap();
        for bytes in [
            slack(&e, Some(&url)),
            digest(SinkKind::Slack, &[&e; 3], Some(&url)),
        ] {
            let body = parse(&bytes);
            let blocks = body["blocks"].as_array().unwrap();
            assert!(blocks.len() <= SLACK_BLOCKS_MAX);
            for b in blocks {
                match b["type"].as_str().unwrap() {
                    "header" => assert!(
                        b["text"]["text"].as_str().unwrap().chars().count() <= SLACK_HEADER_MAX
                    ),
                    "section" => assert!(
                        b["text"]["text"].as_str().unwrap().chars().count() <= SLACK_SECTION_MAX
                    ),
                    _ => {}
                }
            }
        }
        let body = parse(&slack(&e, Some(&url)));
        assert!(body
            .to_string()
            .contains("https://sw.example/prefix/v1/pending/3"));
    }

    #[test]
    fn webhook_bodies_are_content_free_unless_asked_and_byte_stable() {
        let mut e = event("a.b", &["endpoint-removed"]);
        e.data.changes.push(crate::core::event::ChangeRef {
            id: "chg1:00".into(),
            rule: "endpoint-removed".into(),
            severity: crate::core::model::Severity::Breaking,
            path: "endpoints.GET /x".into(),
        });
        let plain = parse(&webhook(&e, None, false));
        assert_eq!(plain["type"], "schemawatch.pending_review");
        assert_eq!(plain["data"]["schema_version"], EVENT_SCHEMA_VERSION);
        assert_eq!(plain["data"]["sequence"], 7);
        assert!(plain["data"].get("changes").is_none());
        let with = parse(&webhook(&e, None, true));
        assert_eq!(with["data"]["changes"][0]["path"], "endpoints.GET /x");
        assert_eq!(webhook(&e, None, true), webhook(&e, None, true));
    }
}
