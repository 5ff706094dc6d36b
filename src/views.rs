//! The JSON documents shared by the CLI's `--json` output and the HTTP API, so both always
//! answer with the same shapes: `check`, `status`, `pending list`, `pending show`, the
//! results of `pending accept|reject`, `history` and `triage --classification`.

use crate::artifacts::triage::TriageDrift;
use crate::config::{Config, WatchConfig};
use crate::core::report::report_json;
use crate::refresh::Outcome;
use crate::registry::{
    HistoryEntry, Registry, RegistryError, Review, ReviewHead, SunsetFact, WatchState, WatchStatus,
};
use serde_json::{json, Value};

/// `check --json` and `POST /v1/check`.
pub fn check_json(registry_version: i64, outcomes: &[Outcome]) -> Value {
    json!({ "registry_version": registry_version, "outcomes": outcomes })
}

/// Which watches a listing keeps: `status=` (the watch's status) and `q=` (a case-sensitive
/// substring of its name); both optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub status: Option<WatchStatus>,
    pub q: Option<String>,
}

impl Filter {
    fn keeps(&self, name: &str, status: WatchStatus) -> bool {
        self.status.is_none_or(|s| s == status) && self.q.as_ref().is_none_or(|q| name.contains(q))
    }
}

/// A page of a listing: names strictly after `after`, at most `limit`, in name order. Without
/// either, a listing is whole and in its usual order (config order; newest review first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub after: Option<String>,
    pub limit: Option<usize>,
}

impl Page {
    fn paged(&self) -> bool {
        self.after.is_some() || self.limit.is_some()
    }
}

/// Rows of a listing, and the last name of this page when more rows follow it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub rows: Vec<Value>,
    pub next_after: Option<String>,
}

/// Cuts `items` (name, item) to `page` — sorted by name, after the cursor, at most `limit` —
/// with the last name kept when more items follow.
fn cut<T>(mut items: Vec<(&str, T)>, page: &Page) -> (Vec<T>, Option<String>) {
    if !page.paged() {
        return (items.into_iter().map(|(_, t)| t).collect(), None);
    }
    items.sort_by(|a, b| a.0.cmp(b.0));
    let start = match &page.after {
        Some(after) => items.partition_point(|(n, _)| *n <= after.as_str()),
        None => 0,
    };
    let limit = page.limit.unwrap_or(usize::MAX);
    let rest = items.len() - start.min(items.len());
    let kept: Vec<(&str, T)> = items.into_iter().skip(start).take(limit).collect();
    let next_after = (rest > limit)
        .then(|| kept.last().map(|(n, _)| n.to_string()))
        .flatten();
    (kept.into_iter().map(|(_, t)| t).collect(), next_after)
}

/// [`cut`], then renders only the rows that are kept.
fn paginate<T>(items: Vec<(&str, T)>, page: &Page, render: impl Fn(T) -> Value) -> Listing {
    let (kept, next_after) = cut(items, page);
    Listing {
        rows: kept.into_iter().map(render).collect(),
        next_after,
    }
}

fn row_json(
    watch: &WatchConfig,
    state: Option<&WatchState>,
    pending: i64,
    fingerprint: Option<&String>,
    sunsets: &[SunsetFact],
) -> Value {
    let next_sunset = crate::refresh::sunsets::next_sunset(watch, sunsets, crate::refresh::today())
        .map(|(endpoint, date)| json!({"endpoint": endpoint, "date": date}));
    json!({
        "next_sunset": next_sunset,
        "watch": watch.name,
        "kind": watch.kind.as_str(),
        "status": state.map_or("idle", |s| s.status.as_str()),
        "last_compatibility": state.and_then(|s| s.last_compatibility),
        "pending_change_count": pending,
        "last_checked_at": state.and_then(|s| s.last_checked_at.clone()),
        "last_error": state.and_then(|s| s.last_error.clone()),
        "consecutive_failures": state.map_or(0, |s| s.consecutive_failures),
        "fingerprint": fingerprint,
    })
}

/// One row of `status --json`'s `watches` (and of `/v1/watches`).
pub fn watch_row(
    config: &Config,
    registry: &Registry,
    name: &str,
) -> Result<Option<Value>, RegistryError> {
    let Some(watch) = config.watch(name) else {
        return Ok(None);
    };
    let state = registry.watch_state(&watch.name)?;
    // The fingerprint only, like the listing: no contract is read (or normalized again).
    let fingerprint = registry.fingerprint(&watch.name)?;
    let pending = registry.open_change_count(&watch.name)?;
    let sunsets = registry.sunsets_of(&watch.name)?;
    Ok(Some(row_json(
        watch,
        state.as_ref(),
        pending,
        fingerprint.as_ref(),
        &sunsets,
    )))
}

/// Every configured watch's row, in config order.
pub fn watch_rows(config: &Config, registry: &Registry) -> Result<Vec<Value>, RegistryError> {
    Ok(watch_listing(config, registry, &Filter::default(), &Page::default())?.rows)
}

/// The configured watches' rows that `filter` keeps, cut to `page`: four queries in all, or
/// three per row of a page without a status filter (and one for the stored sunsets).
pub fn watch_listing(
    config: &Config,
    registry: &Registry,
    filter: &Filter,
    page: &Page,
) -> Result<Listing, RegistryError> {
    if page.paged() && filter.status.is_none() {
        // A page without a status filter is chosen from the config alone: the registry is
        // asked about the page's watches only (three indexed reads each).
        let items = config
            .watches
            .iter()
            .filter(|w| filter.q.as_ref().is_none_or(|q| w.name.contains(q)))
            .map(|w| (w.name.as_str(), w))
            .collect();
        let (kept, next_after) = cut(items, page);
        let sunsets = registry.sunsets()?;
        let rows = kept
            .into_iter()
            .map(|w| {
                let state = registry.watch_state(&w.name)?;
                let pending = registry.open_change_count(&w.name)?;
                let fingerprint = registry.fingerprint(&w.name)?;
                Ok(row_json(
                    w,
                    state.as_ref(),
                    pending,
                    fingerprint.as_ref(),
                    &sunsets,
                ))
            })
            .collect::<Result<_, RegistryError>>()?;
        return Ok(Listing { rows, next_after });
    }
    let states = registry.watch_state_map()?;
    let fingerprints = registry.fingerprints()?;
    let pending = registry.open_change_counts()?;
    let sunsets = registry.sunsets()?;
    let items = config
        .watches
        .iter()
        .filter_map(|w| {
            let state = states.get(&w.name);
            let status = state.map_or(WatchStatus::Idle, |s| s.status);
            filter
                .keeps(&w.name, status)
                .then_some((w.name.as_str(), (w, state)))
        })
        .collect();
    Ok(paginate(items, page, |(w, state)| {
        row_json(
            w,
            state,
            pending.get(&w.name).copied().unwrap_or(0),
            fingerprints.get(&w.name),
            &sunsets,
        )
    }))
}

/// Several status-filtered listings of the same name filter (the review UI's overview
/// sections), from one read of the registry: four queries in all, however many sections.
pub fn sectioned_listings(
    config: &Config,
    registry: &Registry,
    q: Option<&str>,
    sections: &[(Option<WatchStatus>, Page)],
) -> Result<Vec<Listing>, RegistryError> {
    let states = registry.watch_state_map()?;
    let fingerprints = registry.fingerprints()?;
    let pending = registry.open_change_counts()?;
    let sunsets = registry.sunsets()?;
    Ok(sections
        .iter()
        .map(|(status, page)| {
            let filter = Filter {
                status: *status,
                q: q.map(str::to_string),
            };
            let items = config
                .watches
                .iter()
                .filter_map(|w| {
                    let state = states.get(&w.name);
                    let s = state.map_or(WatchStatus::Idle, |s| s.status);
                    filter
                        .keeps(&w.name, s)
                        .then_some((w.name.as_str(), (w, state)))
                })
                .collect();
            paginate(items, page, |(w, state)| {
                row_json(
                    w,
                    state,
                    pending.get(&w.name).copied().unwrap_or(0),
                    fingerprints.get(&w.name),
                    &sunsets,
                )
            })
        })
        .collect())
}

/// `status --json` and `GET /v1/status`.
pub fn status_json(config: &Config, registry: &Registry) -> Result<Value, RegistryError> {
    Ok(status_listing(config, registry, &Filter::default(), &Page::default())?.0)
}

/// `status --json` (and `GET /v1/status`) with a filter and a page; the page's last name when
/// more rows follow.
pub fn status_listing(
    config: &Config,
    registry: &Registry,
    filter: &Filter,
    page: &Page,
) -> Result<(Value, Option<String>), RegistryError> {
    let registry_version = registry.registry_version()?;
    let listing = watch_listing(config, registry, filter, page)?;
    Ok((
        json!({ "registry_version": registry_version, "watches": listing.rows }),
        listing.next_after,
    ))
}

/// One entry of `pending list --json`.
pub fn review_summary(r: &ReviewHead) -> Value {
    json!({
        "id": r.id,
        "watch": r.watch,
        "compatibility": r.compatibility,
        "change_count": r.change_count,
        "created_at": r.created_at,
        "base_registry_version": r.base_registry_version,
        "candidate_fingerprint": r.candidate_fingerprint,
        "state": r.state,
    })
}

/// `pending list --json` and `GET /v1/pending`.
pub fn pending_list_json(reviews: &[ReviewHead]) -> Value {
    Value::Array(reviews.iter().map(review_summary).collect())
}

/// The open reviews that `filter` keeps (by their watch's name and status), cut to `page`
/// (paged: in watch-name order; a watch has at most one open review).
pub fn pending_listing(
    registry: &Registry,
    filter: &Filter,
    page: &Page,
) -> Result<Listing, RegistryError> {
    let reviews = registry.review_heads(true)?;
    let states = match filter.status {
        Some(_) => registry.watch_state_map()?,
        None => Default::default(),
    };
    let items = reviews
        .iter()
        .filter(|r| {
            let status = states.get(&r.watch).map_or(WatchStatus::Idle, |s| s.status);
            filter.q.as_ref().is_none_or(|q| r.watch.contains(q))
                && filter.status.is_none_or(|s| s == status)
        })
        .map(|r| (r.watch.as_str(), r))
        .collect();
    Ok(paginate(items, page, review_summary))
}

/// `pending show ID --json` and `GET /v1/pending/{id}`.
pub fn review_detail(review: &Review) -> Value {
    let mut value = review_summary(&review.head());
    value["reviewer"] = json!(review.reviewer);
    value["reason"] = json!(review.reason);
    value["decided_at"] = json!(review.decided_at);
    value["pruned_at"] = json!(review.pruned_at);
    match &review.report {
        Some(report) => {
            value["report"] = report_json(report);
            // Every review artifact carries its reasoning (provenance stamp).
            crate::artifacts::provenance::stamp(value, report, &format!("review:{}", review.watch))
        }
        // `[storage] keep_reviews` dropped the candidate and report of this closed review:
        // its metadata is all there is, and the answer says so rather than erroring.
        None => {
            value["report"] = Value::Null;
            value["pruned"] = json!(true);
            value
        }
    }
}

/// `pending accept ID --json` and `POST /v1/pending/{id}/accept`.
pub fn accepted_json(id: i64, registry_version: i64) -> Value {
    json!({"id": id, "state": "accepted", "registry_version": registry_version})
}

/// `pending reject ID --json` and `POST /v1/pending/{id}/reject`.
pub fn rejected_json(id: i64) -> Value {
    json!({"id": id, "state": "rejected"})
}

/// `history TOOL --json`: the applied versions, newest first, as the registry stores them.
pub fn history_json(entries: &[HistoryEntry]) -> Result<Value, serde_json::Error> {
    serde_json::to_value(entries)
}

/// `triage --classification FILE --json`: the surface summary and the classification's drift.
pub fn triage_drift_json(summary: Value, drift: &TriageDrift) -> Value {
    json!({"summary": summary, "drift": drift.to_json()})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(names: &[&str]) -> Config {
        let text: String = names
            .iter()
            .map(|n| format!("[[watch]]\nname = \"{n}\"\nkind = \"openapi\"\npath = \"x.json\"\n"))
            .collect();
        Config::parse(std::path::Path::new("/nowhere/c.toml"), &text).unwrap()
    }

    fn names(listing: &Listing) -> Vec<String> {
        listing
            .rows
            .iter()
            .map(|r| r["watch"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn listings_filter_and_page_with_a_cursor_that_survives_edits() {
        let dir = tempfile::tempdir().unwrap();
        let mut registry = Registry::open(&dir.path().join("r.sqlite3")).unwrap();
        registry
            .record_watch(&WatchState {
                status: WatchStatus::Error,
                ..WatchState::new("ns.d", crate::core::model::Kind::Openapi)
            })
            .unwrap();
        let c = config(&["ns.e", "ns.c", "ns.a", "ns.d", "ns.b"]);
        let all = watch_listing(&c, &registry, &Filter::default(), &Page::default()).unwrap();
        // Whole: config order, no next page.
        assert_eq!(names(&all), ["ns.e", "ns.c", "ns.a", "ns.d", "ns.b"]);
        assert_eq!(all.next_after, None);
        let errors = Filter {
            status: Some(WatchStatus::Error),
            q: None,
        };
        let only = watch_listing(&c, &registry, &errors, &Page::default()).unwrap();
        assert_eq!(names(&only), ["ns.d"]);
        assert_eq!(only.rows[0]["status"], "error");
        let q = Filter {
            status: None,
            q: Some("s.b".into()),
        };
        assert_eq!(
            names(&watch_listing(&c, &registry, &q, &Page::default()).unwrap()),
            ["ns.b"]
        );
        let upper = Filter {
            status: None,
            q: Some("NS".into()),
        };
        assert!(watch_listing(&c, &registry, &upper, &Page::default())
            .unwrap()
            .rows
            .is_empty());

        // Paged: name order; the cursor is the last name, so edits between pages neither
        // repeat nor skip the rows after it.
        let first = Page {
            after: None,
            limit: Some(2),
        };
        let page1 = watch_listing(&c, &registry, &Filter::default(), &first).unwrap();
        assert_eq!(names(&page1), ["ns.a", "ns.b"]);
        assert_eq!(page1.next_after.as_deref(), Some("ns.b"));
        let edited = config(&["ns.e", "ns.c", "ns.a", "ns.a0", "ns.bb", "ns.d"]);
        let next = Page {
            after: page1.next_after.clone(),
            limit: Some(2),
        };
        let page2 = watch_listing(&edited, &registry, &Filter::default(), &next).unwrap();
        assert_eq!(names(&page2), ["ns.bb", "ns.c"]);
        let last = Page {
            after: page2.next_after.clone(),
            limit: Some(2),
        };
        let page3 = watch_listing(&edited, &registry, &Filter::default(), &last).unwrap();
        assert_eq!(names(&page3), ["ns.d", "ns.e"]);
        assert_eq!(page3.next_after, None, "no page after the last");
        // The status JSON keeps its shape.
        let (status, _) = status_listing(&c, &registry, &errors, &Page::default()).unwrap();
        assert_eq!(status["watches"].as_array().map(Vec::len), Some(1));
        assert!(status["registry_version"].is_i64());
        assert_eq!(
            pending_listing(&registry, &Filter::default(), &first)
                .unwrap()
                .rows,
            Vec::<Value>::new()
        );
    }
}

/// Filters and page of `notify list` / `GET /v1/notifications`.
#[derive(Debug, Clone, Default)]
pub struct NotificationQuery {
    pub sink: Option<String>,
    pub state: Option<String>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

/// An opaque cursor: `text` hex-encoded behind a version `tag` (listings' `n1`, deliveries'
/// `d1`), so it is compared, never looked up, and survives rows added between pages.
pub fn encode_cursor(tag: &str, text: &str) -> String {
    let mut out = String::from(tag);
    for b in text.bytes() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The text of a cursor [`encode_cursor`] made with `tag`; `None` for anything else.
pub fn decode_cursor(tag: &str, cursor: &str) -> Option<String> {
    let hex = cursor.strip_prefix(tag)?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect();
    String::from_utf8(bytes?).ok()
}

/// A delivery cursor: the last (event sequence, sink) of the previous page.
fn delivery_cursor(seq: i64, sink: &str) -> String {
    encode_cursor("d1", &format!("{seq}\u{0}{sink}"))
}

fn parse_delivery_cursor(cursor: &str) -> Option<(i64, String)> {
    let text = decode_cursor("d1", cursor)?;
    let (seq, sink) = text.split_once('\u{0}')?;
    Some((seq.parse().ok()?, sink.to_string()))
}

/// Deliveries newest first: `{"notifications": [...], "pending": {sink: n}}`, and the cursor of
/// the next page when one follows. The same JSON from the CLI and the API.
pub fn notifications_json(
    registry: &Registry,
    q: &NotificationQuery,
) -> Result<Result<(Value, Option<String>), String>, RegistryError> {
    use crate::registry::events::{DeliveryQuery, DELIVERED, FAILED, PENDING};
    if let Some(state) = &q.state {
        if ![PENDING, DELIVERED, FAILED].contains(&state.as_str()) {
            return Ok(Err(format!(
                "state: expected one of {PENDING}, {DELIVERED}, {FAILED}"
            )));
        }
    }
    let before = match &q.cursor {
        None => None,
        Some(c) => match parse_delivery_cursor(c) {
            Some(b) => Some(b),
            None => return Ok(Err("cursor: not a cursor this command gave out".into())),
        },
    };
    let limit = q.limit.unwrap_or(100).clamp(1, 1000);
    let mut rows = registry.deliveries(&DeliveryQuery {
        sink: q.sink.clone(),
        state: q.state.clone(),
        before,
        limit: limit + 1,
    })?;
    let next = (rows.len() > limit).then(|| {
        rows.truncate(limit);
        rows.last()
            .map(|r| delivery_cursor(r.sequence, &r.sink))
            .unwrap_or_default()
    });
    let pending: serde_json::Map<String, Value> = registry
        .pending_by_sink()?
        .into_iter()
        .map(|(sink, n)| (sink, json!(n)))
        .collect();
    Ok(Ok((
        json!({"notifications": rows, "pending": pending}),
        next.filter(|c| !c.is_empty()),
    )))
}
