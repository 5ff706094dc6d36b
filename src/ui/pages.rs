//! The UI's pages: what each shows, read from the registry and rendered through askama's
//! autoescaping templates (`templates/ui/`). Provider text is escaped by the templates and its
//! hidden characters are shown as visible escapes with their names.

use super::{CompareQuery, OverviewQuery, UiError, Who};
use crate::config::Config;
use crate::core::hidden::{escape_hidden, hidden_items, Hidden};
use crate::core::json::to_canonical_string;
use crate::core::model::{Change, DriftReport, ValueOrd};
use crate::core::report::{change_id, group_of};
use crate::registry::{Registry, RegistryError, ReviewState, WatchStatus};
use crate::views::{self, Page};
use askama::Template;
use axum::http::StatusCode;
use serde_json::Value;

/// Rows per overview section (and per page of one section).
pub const SECTION_ROWS: usize = 50;

/// What every page's frame shows: the link prefix, the signed-in reviewer, the CSRF token of
/// the sign-out form.
pub struct Chrome {
    pub prefix: String,
    pub reviewer: Option<String>,
    pub csrf: String,
}

impl Chrome {
    fn of(prefix: &str, who: &Who) -> Chrome {
        Chrome {
            prefix: prefix.to_string(),
            reviewer: Some(who.reviewer.clone()),
            csrf: who.csrf.clone(),
        }
    }
}

fn render<T: Template>(page: &T) -> Result<String, UiError> {
    page.render()
        .map_err(|e| UiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("rendering: {e}")))
}

/// A path segment, percent-encoded (watch names in links).
pub fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn query_string(pairs: &[(&str, &str)]) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        q.append_pair(k, v);
    }
    q.finish()
}

#[derive(Template)]
#[template(path = "ui/error.html")]
struct ErrorPage {
    chrome: Chrome,
    status: String,
    message: String,
}

pub fn error_page(status: StatusCode, message: &str) -> String {
    let page = ErrorPage {
        chrome: Chrome {
            prefix: String::new(),
            reviewer: None,
            csrf: String::new(),
        },
        status: status.to_string(),
        message: message.to_string(),
    };
    page.render()
        .unwrap_or_else(|_| "<!DOCTYPE html><title>error</title>".to_string())
}

#[derive(Template)]
#[template(path = "ui/login.html")]
struct LoginPage {
    chrome: Chrome,
    login_csrf: String,
    message: Option<String>,
    none_configured: bool,
}

pub fn login_page(
    prefix: &str,
    csrf: &str,
    message: Option<&str>,
    none_configured: bool,
) -> String {
    let page = LoginPage {
        chrome: Chrome {
            prefix: prefix.to_string(),
            reviewer: None,
            csrf: String::new(),
        },
        login_csrf: csrf.to_string(),
        message: message.map(str::to_string),
        none_configured,
    };
    page.render()
        .unwrap_or_else(|_| "<!DOCTYPE html><title>error</title>".to_string())
}

/// Provider text as shown: hidden characters as escapes, and their names.
pub struct Text {
    pub shown: String,
    pub hidden: String,
}

/// The Unicode name of the hidden characters a reviewer most needs to recognise.
fn char_name(c: char) -> Option<String> {
    let name = match c as u32 {
        0x200B => "ZERO WIDTH SPACE",
        0x200C => "ZERO WIDTH NON-JOINER",
        0x200D => "ZERO WIDTH JOINER",
        0x200E => "LEFT-TO-RIGHT MARK",
        0x200F => "RIGHT-TO-LEFT MARK",
        0x202A => "LEFT-TO-RIGHT EMBEDDING",
        0x202B => "RIGHT-TO-LEFT EMBEDDING",
        0x202C => "POP DIRECTIONAL FORMATTING",
        0x202D => "LEFT-TO-RIGHT OVERRIDE",
        0x202E => "RIGHT-TO-LEFT OVERRIDE",
        0x2060 => "WORD JOINER",
        0x2066 => "LEFT-TO-RIGHT ISOLATE",
        0x2067 => "RIGHT-TO-LEFT ISOLATE",
        0x2068 => "FIRST STRONG ISOLATE",
        0x2069 => "POP DIRECTIONAL ISOLATE",
        0xFEFF => "ZERO WIDTH NO-BREAK SPACE",
        0x00AD => "SOFT HYPHEN",
        0xE0001 => "LANGUAGE TAG",
        0xE007F => "CANCEL TAG",
        t @ 0xE0020..=0xE007E => {
            let ascii = char::from_u32(t - 0xE0000).unwrap_or('?');
            return Some(format!("TAG {ascii:?}"));
        }
        0xFE00..=0xFE0F | 0xE0100..=0xE01EF => "VARIATION SELECTOR",
        0x0000..=0x001F | 0x007F..=0x009F => "CONTROL",
        _ => return None,
    };
    Some(name.to_string())
}

pub fn text(raw: &str) -> Text {
    let mut names: Vec<String> = Vec::new();
    for item in hidden_items(raw) {
        let name = match item {
            Hidden::Char(c) => match char_name(c) {
                Some(n) => format!("{} {n}", item.name()),
                None => item.name(),
            },
            Hidden::HtmlComment => item.name(),
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Text {
        shown: escape_hidden(raw),
        hidden: names.join(", "),
    }
}

/// A value before or after a change, as canonical JSON (cut at 400 characters).
fn value_text(v: &Option<ValueOrd>) -> Text {
    match v {
        None => text("—"),
        Some(v) => {
            let full = to_canonical_string(&v.0);
            if full.chars().count() > 400 {
                let cut: String = full.chars().take(399).collect();
                text(&format!("{cut}…"))
            } else {
                text(&full)
            }
        }
    }
}

pub struct ChangeView {
    pub severity: String,
    pub message: Text,
    pub path: Text,
    pub rule: String,
    pub before: Text,
    pub after: Text,
    pub id: String,
    pub accept_entry: String,
    pub source: Option<String>,
}

pub struct Group {
    pub title: Text,
    pub changes: Vec<ChangeView>,
}

pub struct ReportView {
    pub compatibility: String,
    pub old_fingerprint: String,
    pub new_fingerprint: String,
    pub count: usize,
    pub groups: Vec<Group>,
}

/// A TOML basic string (for the CI accept entry).
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || crate::core::hidden::is_hidden(c) => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The drift report grouped by endpoint (changes are sorted, so a group's changes are
/// consecutive), each change with its id, a CI accept entry and, when `sources` has it, its
/// line in the candidate document.
fn report_view(
    report: &DriftReport,
    reviewer: &str,
    sources: &[Option<crate::core::locate::Location>],
) -> ReportView {
    let expires = crate::ci::accept::Date::today().plus_days(30);
    let mut groups: Vec<Group> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    for (i, c) in report.changes.iter().enumerate() {
        let key = group_of(&c.path);
        let view = change_view(c, reviewer, expires, sources.get(i).cloned().flatten());
        match keys.iter().position(|k| *k == key) {
            Some(at) => {
                if let Some(g) = groups.get_mut(at) {
                    g.changes.push(view);
                }
            }
            None => {
                keys.push(key.clone());
                groups.push(Group {
                    title: text(&key.replace('`', "")),
                    changes: vec![view],
                });
            }
        }
    }
    ReportView {
        compatibility: report.compatibility.as_str().to_string(),
        old_fingerprint: report.old_fingerprint.clone(),
        new_fingerprint: report.new_fingerprint.clone(),
        count: report.changes.len(),
        groups,
    }
}

fn change_view(
    c: &Change,
    reviewer: &str,
    expires: crate::ci::accept::Date,
    source: Option<crate::core::locate::Location>,
) -> ChangeView {
    let id = change_id(c);
    let accept_entry = format!(
        "[[accept]]\nchange = {}\nreviewer = {}\nreason = \"…\"\nexpires = \"{expires}\"\n",
        toml_string(&id),
        toml_string(reviewer),
    );
    ChangeView {
        severity: c.severity.as_str().to_string(),
        message: text(&c.message),
        path: text(&c.path),
        rule: c.rule.clone(),
        before: value_text(&c.before),
        after: value_text(&c.after),
        id,
        accept_entry,
        source: source.map(|l| {
            let pointer = if l.pointer.is_empty() {
                "/"
            } else {
                &l.pointer
            };
            format!(
                "line {}, column {} ({})",
                l.position.line,
                l.position.column,
                escape_hidden(pointer)
            )
        }),
    }
}

pub struct Count {
    pub status: String,
    pub n: i64,
}

pub struct Row {
    pub name: Text,
    pub href: String,
    pub kind: String,
    pub status: String,
    pub last_checked: String,
    pub last_error: String,
    pub review: Option<(i64, String)>,
}

pub struct Section {
    pub title: String,
    pub anchor: String,
    pub rows: Vec<Row>,
    pub next: Option<String>,
}

#[derive(Template)]
#[template(path = "ui/overview.html")]
struct OverviewPage {
    chrome: Chrome,
    counts: Vec<Count>,
    total: i64,
    registry_version: String,
    q: String,
    sections: Vec<Section>,
    single: bool,
}

/// The sections of the overview, in order: (query value, title, status filter).
const SECTIONS: &[(&str, &str, Option<WatchStatus>)] = &[
    (
        "pending_review",
        "Pending review",
        Some(WatchStatus::PendingReview),
    ),
    ("error", "Error", Some(WatchStatus::Error)),
    ("stale", "Stale", Some(WatchStatus::Stale)),
    ("all", "All watches", None),
];

fn str_of(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_default()
}

pub fn overview(
    config: &Config,
    registry: &Registry,
    prefix: &str,
    who: &Who,
    query: &OverviewQuery,
    summary: &Value,
) -> Result<String, UiError> {
    let bad = |m: &str| UiError::new(StatusCode::BAD_REQUEST, m);
    let q = query.q.clone().filter(|q| !q.is_empty());
    let chosen: Vec<&(&str, &str, Option<WatchStatus>)> = match &query.section {
        None => SECTIONS.iter().collect(),
        Some(s) => vec![SECTIONS
            .iter()
            .find(|(k, _, _)| k == s)
            .ok_or_else(|| bad("section: not a section of this page"))?],
    };
    let after = match &query.cursor {
        None => None,
        Some(c) => Some(
            views::decode_cursor("n1", c)
                .ok_or_else(|| bad("cursor: not a cursor this page gave out"))?,
        ),
    };
    let wanted: Vec<(Option<WatchStatus>, Page)> = chosen
        .iter()
        .map(|(_, _, status)| {
            (
                *status,
                Page {
                    after: after.clone(),
                    limit: Some(SECTION_ROWS),
                },
            )
        })
        .collect();
    let listings = views::sectioned_listings(config, registry, q.as_deref(), &wanted)?;
    let open: std::collections::HashMap<String, i64> = registry
        .review_heads(true)?
        .into_iter()
        .map(|h| (h.watch, h.id))
        .collect();
    let sections = chosen
        .iter()
        .zip(listings)
        .map(|((key, title, _), listing)| {
            let rows = listing
                .rows
                .iter()
                .map(|row| {
                    let name = str_of(&row["watch"]);
                    Row {
                        href: format!("{prefix}/ui/watches/{}", path_segment(&name)),
                        review: open
                            .get(&name)
                            .map(|id| (*id, format!("{prefix}/ui/reviews/{id}"))),
                        name: text(&name),
                        kind: str_of(&row["kind"]),
                        status: str_of(&row["status"]),
                        last_checked: str_of(&row["last_checked_at"]),
                        last_error: str_of(&row["last_error"]),
                    }
                })
                .collect();
            let next = listing.next_after.map(|after| {
                let cursor = views::encode_cursor("n1", &after);
                let mut pairs = vec![("section", *key), ("cursor", cursor.as_str())];
                if let Some(q) = &q {
                    pairs.push(("q", q.as_str()));
                }
                format!("{prefix}/ui/?{}", query_string(&pairs))
            });
            Section {
                title: title.to_string(),
                anchor: key.to_string(),
                rows,
                next,
            }
        })
        .collect();
    let by_status = summary["by_status"].as_object();
    let counts: Vec<Count> = WatchStatus::ALL
        .iter()
        .map(|s| Count {
            status: s.as_str().to_string(),
            n: by_status
                .and_then(|m| m.get(s.as_str()))
                .and_then(Value::as_i64)
                .unwrap_or(0),
        })
        .collect();
    let page = OverviewPage {
        chrome: Chrome::of(prefix, who),
        total: counts.iter().map(|c| c.n).sum(),
        counts,
        registry_version: summary["registry_version"].to_string(),
        q: q.unwrap_or_default(),
        sections,
        single: query.section.is_some(),
    };
    render(&page)
}

pub struct HistoryRow {
    pub version: i64,
    pub registry_version: i64,
    pub applied_at: String,
    pub compatibility: String,
    pub reviewer: Text,
    pub via: String,
    pub reason: Text,
    pub review: Option<(i64, String)>,
    pub note: String,
    pub fingerprint: String,
}

#[derive(Template)]
#[template(path = "ui/watch.html")]
struct WatchPage {
    chrome: Chrome,
    name: Text,
    action: String,
    kind: String,
    status: String,
    last_checked: String,
    last_error: String,
    error_class: String,
    failures: i64,
    open_review: Option<(i64, String)>,
    decided: Option<i64>,
    history: Vec<HistoryRow>,
    versions: Vec<i64>,
    from: i64,
    to: i64,
    report: Option<ReportView>,
    compare_note: String,
}

pub fn watch(
    config: &Config,
    registry: &Registry,
    prefix: &str,
    who: &Who,
    name: &str,
    query: &CompareQuery,
) -> Result<String, UiError> {
    let Some(watch) = config.watch(name) else {
        return Err(UiError::new(
            StatusCode::NOT_FOUND,
            format!("no watch named {name:?}"),
        ));
    };
    let row = views::watch_row(config, registry, name)?.unwrap_or(Value::Null);
    // The class of the current failure streak, when its `refresh_failed` event was written
    // (after `error_after` failures): one indexed read of the watch's newest events.
    let error_class = if row["status"] == "error" {
        registry
            .events(Some(name), None, 20)?
            .into_iter()
            .take_while(|e| e.event != crate::core::event::EventKind::WatchRecovered)
            .find_map(|e| e.data.error_class)
            .unwrap_or_default()
    } else {
        String::new()
    };
    let history = registry.history(name)?;
    let open_review = registry
        .open_review_for(name)?
        .map(|id| (id, format!("{prefix}/ui/reviews/{id}")));
    let versions: Vec<i64> = history.iter().map(|h| h.version).collect();
    let newest = versions.first().copied().unwrap_or(0);
    let to = query.to.unwrap_or(newest);
    let from = query
        .from
        .unwrap_or_else(|| versions.iter().copied().find(|v| *v < to).unwrap_or(to));
    let mut compare_note = String::new();
    let mut report = None;
    if versions.len() < 2 && query.from.is_none() {
        compare_note = "Only one version is stored: nothing to compare yet.".into();
    } else if from == to {
        compare_note = "Choose two different versions to compare.".into();
    } else {
        // One stored version read at a time; the two contracts are compared, then dropped.
        let old = registry.version_spec(name, from)?;
        let new = registry.version_spec(name, to)?;
        match (old, new) {
            (Some(old), Some(new)) => {
                let policy = crate::refresh::watch_policy(watch)
                    .map_err(|e| UiError::new(StatusCode::INTERNAL_SERVER_ERROR, e))?;
                let drift = crate::core::diff::classify(&old, &new, &policy);
                drop((old, new));
                report = Some(report_view(&drift, &who.reviewer, &[]));
            }
            _ => {
                compare_note = format!(
                "Version {from} or {to} is not stored (only the last [storage] keep_versions are)."
            )
            }
        }
    }
    let history = history
        .into_iter()
        .map(|h| HistoryRow {
            version: h.version,
            registry_version: h.registry_version,
            applied_at: h.applied_at,
            compatibility: h
                .compatibility
                .map(|c| c.as_str())
                .unwrap_or_default()
                .to_string(),
            reviewer: text(h.reviewer.as_deref().unwrap_or("")),
            via: h.via.map(|v| v.as_str()).unwrap_or_default().to_string(),
            reason: text(h.reason.as_deref().unwrap_or("")),
            review: h
                .review_id
                .map(|id| (id, format!("{prefix}/ui/reviews/{id}"))),
            note: h.note.unwrap_or_default(),
            fingerprint: h.fingerprint,
        })
        .collect();
    let page = WatchPage {
        chrome: Chrome::of(prefix, who),
        action: format!("{prefix}/ui/watches/{}", path_segment(name)),
        name: text(name),
        kind: watch.kind.as_str().to_string(),
        status: str_of(&row["status"]),
        last_checked: str_of(&row["last_checked_at"]),
        last_error: str_of(&row["last_error"]),
        error_class,
        failures: row["consecutive_failures"].as_i64().unwrap_or(0),
        open_review,
        decided: query.decided,
        history,
        versions,
        from,
        to,
        report,
        compare_note,
    };
    render(&page)
}

/// Why a decision form came back instead of the watch page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Banner {
    NeedReason,
    NotOpen,
}

#[derive(Template)]
#[template(path = "ui/review.html")]
struct ReviewPage {
    chrome: Chrome,
    id: i64,
    watch: Text,
    watch_href: String,
    state: String,
    state_note: String,
    banner: String,
    compatibility: String,
    created_at: String,
    base_registry_version: i64,
    base_fingerprint: String,
    candidate_fingerprint: String,
    change_count: i64,
    open: bool,
    report: Option<ReportView>,
    unavailable: String,
    accept_action: String,
    reject_action: String,
}

pub fn review(
    _config: &Config,
    registry: &Registry,
    prefix: &str,
    who: &Who,
    id: i64,
    banner: Option<Banner>,
) -> Result<String, UiError> {
    let review = match registry.review(id) {
        Ok(r) => r,
        Err(RegistryError::SourceUnreadable { problem, .. }) => {
            return Err(UiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("review {id} is stored as its source document only, and this release cannot read it: {problem}"),
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let decided_by = match (&review.reviewer, registry.review_via(id)?) {
        (Some(r), Some(via)) => format!(" by {r} (via={via})"),
        (Some(r), None) => format!(" by {r}"),
        _ => String::new(),
    };
    let state_note = match review.state {
        ReviewState::Open => "Open: waiting for a decision.".to_string(),
        ReviewState::Accepted => format!(
            "Already decided: accepted{decided_by} at {}.",
            review.decided_at.as_deref().unwrap_or("?")
        ),
        ReviewState::Rejected => format!(
            "Already decided: rejected{decided_by} at {}.",
            review.decided_at.as_deref().unwrap_or("?")
        ),
        ReviewState::Superseded => {
            "Superseded: a newer candidate replaced it, or the source went back to the accepted contract.".to_string()
        }
    };
    let banner = match banner {
        None => String::new(),
        Some(Banner::NeedReason) => "A reason is required.".to_string(),
        Some(Banner::NotOpen) => match review.state {
            ReviewState::Superseded => "Not applied: this review is superseded.".to_string(),
            ReviewState::Open => {
                "Not applied: superseded — the accepted contract moved since this review was queued."
                    .to_string()
            }
            _ => "Not applied: this review was already decided.".to_string(),
        },
    };
    let unavailable = match &review.pruned_at {
        Some(at) if review.report.is_none() => format!(
            "Pruned at {at}: the candidate and report were dropped ([storage] keep_reviews); only this summary remains."
        ),
        _ => String::new(),
    };
    let report = match &review.report {
        None => None,
        Some(report) => {
            // Source lines in the candidate document, for kinds with source pointers.
            let kind = review.candidate.as_ref().map(|c| c.kind);
            let sources = match kind {
                Some(kind) if kind.decl().pointers.is_some() => {
                    match registry.review_document(id)? {
                        Some(bytes) => crate::core::normalize::source::locate_changes(
                            kind,
                            &bytes,
                            &report.changes,
                        ),
                        None => Vec::new(),
                    }
                }
                _ => Vec::new(),
            };
            Some(report_view(report, &who.reviewer, &sources))
        }
    };
    let page = ReviewPage {
        chrome: Chrome::of(prefix, who),
        id,
        watch_href: format!("{prefix}/ui/watches/{}", path_segment(&review.watch)),
        watch: text(&review.watch),
        state: review.state.to_string(),
        state_note,
        banner,
        compatibility: review.compatibility.as_str().to_string(),
        created_at: review.created_at.clone(),
        base_registry_version: review.base_registry_version,
        base_fingerprint: review
            .base_fingerprint
            .clone()
            .unwrap_or_else(|| "none (first version)".into()),
        candidate_fingerprint: review.candidate_fingerprint.clone(),
        change_count: review.change_count,
        open: review.state == ReviewState::Open,
        report,
        unavailable,
        accept_action: format!("{prefix}/ui/reviews/{id}/accept"),
        reject_action: format!("{prefix}/ui/reviews/{id}/reject"),
    };
    render(&page)
}
