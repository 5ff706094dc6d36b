//! The Atom feeds of the event log (`GET /v1/feed.atom`, `/v1/watches/{name}/feed.atom`):
//! newest first and content-free (the event's name, its watch, review id, registry version and
//! time; never a change's text). Entry ids are RFC 4151 tag URIs,
//! `tag:<host of public_url, else "schemawatch">,<registry creation date>:<registry id>/<sequence>`,
//! so an entry keeps its id across restarts and a re-created registry never reuses one.
//! Pure: the same events give the same bytes.

use crate::registry::events::StoredEvent;

/// Entries a feed holds.
pub const FEED_ENTRIES: usize = 100;

/// Text safe in XML 1.0 character data and attribute values: markup characters as entities,
/// characters XML cannot carry dropped, hidden characters as visible escapes.
fn xml(text: &str) -> String {
    let visible = crate::core::hidden::escape_hidden(text);
    let mut out = String::with_capacity(visible.len());
    for c in visible.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The tag URI authority and date: `public_url`'s host (else `schemawatch`) and the registry's
/// creation date (`YYYY-MM-DD`).
pub fn tag_prefix(public_url: Option<&url::Url>, created_at: &str) -> String {
    let host = public_url
        .and_then(|u| u.host_str())
        .map_or_else(|| "schemawatch".to_string(), str::to_ascii_lowercase);
    let date: String = created_at.chars().take(10).collect();
    format!("tag:{host},{date}:")
}

/// Where the feed's entries link (the review UI), when `public_url` is set.
fn entry_link(public_url: Option<&url::Url>, e: &StoredEvent) -> Option<String> {
    let base = public_url?;
    let base = base.as_str().trim_end_matches('/');
    match (e.data.review_id, &e.data.watch) {
        (Some(id), _) => Some(format!("{base}/ui/reviews/{id}")),
        (None, Some(watch)) => Some(format!(
            "{base}/ui/watches/{}",
            url::form_urlencoded::byte_serialize(watch.as_bytes()).collect::<String>()
        )),
        _ => None,
    }
}

/// The feed document. `watch`: the feed of one watch (`None`: every event). `events` newest
/// first.
pub fn atom(
    events: &[StoredEvent],
    registry: (&str, &str),
    public_url: Option<&url::Url>,
    watch: Option<&str>,
) -> String {
    let (registry_id, created_at) = registry;
    let tag = tag_prefix(public_url, created_at);
    let updated = events.first().map_or(created_at, |e| e.created_at.as_str());
    let (feed_id, title) = match watch {
        Some(w) => (
            format!("{tag}{registry_id}/watch/{w}"),
            format!("schemawatch events of {}", xml(w)),
        ),
        None => (
            format!("{tag}{registry_id}/events"),
            "schemawatch events".to_string(),
        ),
    };
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    out.push_str("<feed xmlns=\"http://www.w3.org/2005/Atom\">\n");
    out.push_str(&format!("  <id>{}</id>\n", xml(&feed_id)));
    out.push_str(&format!("  <title>{title}</title>\n"));
    out.push_str(&format!("  <updated>{}</updated>\n", xml(updated)));
    out.push_str("  <author><name>schemawatch</name></author>\n");
    out.push_str("  <generator>schemawatch</generator>\n");
    if let Some(base) = public_url {
        out.push_str(&format!(
            "  <link rel=\"alternate\" href=\"{}/ui/\"/>\n",
            xml(base.as_str().trim_end_matches('/'))
        ));
    }
    for e in events {
        let mut what = e.event.as_str().replace('_', " ");
        if let Some(w) = &e.data.watch {
            what.push_str(": ");
            what.push_str(w);
        }
        if let Some(id) = e.data.review_id {
            what.push_str(&format!(" (review {id})"));
        }
        out.push_str("  <entry>\n");
        out.push_str(&format!(
            "    <id>{}</id>\n",
            xml(&format!("{tag}{registry_id}/{}", e.sequence))
        ));
        out.push_str(&format!("    <title>{}</title>\n", xml(&what)));
        out.push_str(&format!("    <updated>{}</updated>\n", xml(&e.created_at)));
        out.push_str(&format!(
            "    <category term=\"{}\"/>\n",
            xml(e.event.as_str())
        ));
        if let Some(link) = entry_link(public_url, e) {
            out.push_str(&format!(
                "    <link rel=\"alternate\" href=\"{}\"/>\n",
                xml(&link)
            ));
        }
        let mut facts = Vec::new();
        if let Some(v) = e.data.registry_version {
            facts.push(format!("registry version {v}"));
        }
        if let Some(c) = e.data.compatibility {
            facts.push(format!("compatibility {}", c.as_str()));
        }
        if let Some(n) = e.data.change_count {
            facts.push(format!("{n} change(s)"));
        }
        if let Some(r) = &e.data.reviewer {
            facts.push(format!("by {r}"));
        }
        if let Some(class) = &e.data.error_class {
            facts.push(format!("error class {class}"));
        }
        if !facts.is_empty() {
            out.push_str(&format!(
                "    <summary>{}</summary>\n",
                xml(&facts.join(", "))
            ));
        }
        out.push_str("  </entry>\n");
    }
    out.push_str("</feed>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_ids_and_escaping() {
        let url = url::Url::parse("https://Reviews.Example.org/sw/").unwrap();
        assert_eq!(
            tag_prefix(Some(&url), "2026-12-05T11:00:00Z"),
            "tag:reviews.example.org,2026-12-05:"
        );
        assert_eq!(
            tag_prefix(None, "2026-01-02T00:00:00Z"),
            "tag:schemawatch,2026-01-02:"
        );
        assert_eq!(
            xml("<a href=\"x\">&'\u{1b}\u{202E}"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;\\u{1B}\\u{202E}"
        );
    }
}
