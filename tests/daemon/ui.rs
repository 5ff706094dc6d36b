//! Issue 32: reviewer identities on `/v1`, the review UI in `/ui` (driven over HTTP here and in
//! a real headless Chromium through WebDriver), and the Atom feeds.

use crate::common;
use crate::service::{config_text, file_watch, http, with_admin_token, Daemon, ADMIN_TOKEN};
use common::*;
use serde_json::Value;

pub(crate) const ALICE_VAR: &str = "SW_TEST_ALICE_TOKEN";
pub(crate) const ALICE_TOKEN: &str = "alice-token-5b1e";
pub(crate) const BOB_FILE_TOKEN: &str = "bob-token-one-9a2f";
pub(crate) const BOB_ROTATED: &str = "bob-token-two-c4d0";

/// A config with the admin token, reviewers alice (env) and bob (file) and one file watch.
pub(crate) fn reviewer_config(extra_server: &str) -> String {
    reviewer_config_with(extra_server, "")
}

/// [`reviewer_config`] with more `[[watch]]` tables.
pub(crate) fn reviewer_config_with(extra_server: &str, watches: &str) -> String {
    let text = with_admin_token(&config_text(
        &format!("{}{watches}", file_watch("acme.pets", "pets.json", "1s")),
        "",
    ));
    let text = text.replace("[server]\n", &format!("[server]\n{extra_server}"));
    format!(
        "{text}\n[[reviewer]]\nname = \"alice\"\ntoken_env = \"{ALICE_VAR}\"\n\n[[reviewer]]\nname = \"bob\"\ntoken_file = \"bob.token\"\n"
    )
}

pub(crate) fn start_with_reviewers(sb: &Sandbox) -> Daemon {
    let config = sb.config_arg();
    let mut cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
    cmd.env(ALICE_VAR, ALICE_TOKEN);
    Daemon::start_command(cmd, Some(ADMIN_TOKEN))
}

/// Waits for an open review and answers its id.
pub(crate) fn wait_review(d: &Daemon, after: i64) -> i64 {
    let pending = d.wait_json("/v1/pending", |v| {
        v.as_array()
            .is_some_and(|a| a.iter().any(|r| r["id"].as_i64() > Some(after)))
    });
    pending
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .max()
        .unwrap()
}

pub(crate) fn post_decision(d: &Daemon, path: &str, token: &str, body: &Value) -> (u16, String) {
    let auth = format!("Bearer {token}");
    http(
        d.api,
        "POST",
        path,
        None,
        &[("Authorization", &auth)],
        Some(&body.to_string()),
    )
}

#[test]
fn reviewer_tokens_decide_as_their_own_name_and_history_says_how() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_file("bob.token", format!("{BOB_FILE_TOKEN}\n").as_bytes());
    sb.write_config(&reviewer_config(""));
    let d = start_with_reviewers(&sb);
    d.wait_json("/v1/status", |v| v["watches"][0]["status"] == "unchanged");

    // Review 1: alice's token may not name bob; without a name it records alice.
    sb.write_file("pets.json", &Pets::v3().bytes());
    let first = wait_review(&d, 0);
    let accept = format!("/v1/pending/{first}/accept");
    let forged = serde_json::json!({"reviewer": "bob", "reason": "looks fine"});
    assert_eq!(post_decision(&d, &accept, ALICE_TOKEN, &forged).0, 403);
    let wrong = serde_json::json!({"reason": "looks fine"});
    assert_eq!(post_decision(&d, &accept, "not-a-token", &wrong).0, 401);
    let (status, body) = post_decision(&d, &accept, ALICE_TOKEN, &wrong);
    assert_eq!(status, 200, "{body}");

    // Review 2: bob's file token, rotated without a restart: the old one no longer works.
    let required = Pets {
        limit_required: true,
        ..Pets::v3()
    };
    sb.write_file("pets.json", &required.bytes());
    let second = wait_review(&d, first);
    sb.write_file("bob.token", format!("{BOB_ROTATED}\n").as_bytes());
    let reason = serde_json::json!({"reviewer": "bob", "reason": "announced"});
    let reject = format!("/v1/pending/{second}/reject");
    assert_eq!(post_decision(&d, &reject, BOB_FILE_TOKEN, &reason).0, 401);
    let (status, body) = post_decision(&d, &reject, BOB_ROTATED, &reason);
    assert_eq!(status, 200, "{body}");

    // Review 3: the admin token must name a reviewer, and history says via=admin.
    let narrower = Pets {
        limit_required: true,
        limit_maximum: 50,
        ..Pets::v3()
    };
    sb.write_file("pets.json", &narrower.bytes());
    let third = wait_review(&d, second);
    let accept = format!("/v1/pending/{third}/accept");
    let unnamed = serde_json::json!({"reason": "rollback"});
    assert_eq!(post_decision(&d, &accept, ADMIN_TOKEN, &unnamed).0, 400);
    let named = serde_json::json!({"reviewer": "carol", "reason": "rollback"});
    let (status, body) = post_decision(&d, &accept, ADMIN_TOKEN, &named);
    assert_eq!(status, 200, "{body}");

    let history = sb.history("acme.pets");
    let by_review = |id: i64| {
        history
            .iter()
            .find(|h| h["review_id"] == id)
            .unwrap_or_else(|| panic!("no history row of review {id}: {history:?}"))
    };
    assert_eq!(by_review(first)["reviewer"], "alice");
    assert_eq!(by_review(first)["via"], "reviewer");
    assert_eq!(by_review(third)["reviewer"], "carol");
    assert_eq!(by_review(third)["via"], "admin");
    let show = sb.pending_show(second);
    assert_eq!(show["reviewer"], "bob");
    let log = d.log_text();
    for secret in [ALICE_TOKEN, BOB_FILE_TOKEN, BOB_ROTATED, ADMIN_TOKEN] {
        assert!(!log.contains(secret), "a token in the log");
    }
}

/// One HTTP/1.1 exchange (Connection: close) with a form body: (status, head, body).
pub(crate) fn form_request(
    d: &Daemon,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    form: Option<&[(&str, &str)]>,
) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(d.api).expect("connect");
    stream
        .set_read_timeout(Some(crate::service::PATIENCE))
        .unwrap();
    let body = form.map(|pairs| {
        let mut s = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs {
            s.append_pair(k, v);
        }
        s.finish()
    });
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {}\r\n", d.api));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(body) = &body {
        request.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    } else if method == "POST" {
        request.push_str("Content-Length: 0\r\n");
    }
    request.push_str("\r\n");
    request.push_str(body.as_deref().unwrap_or(""));
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// The value of cookie `name` set by a response head.
pub(crate) fn set_cookie_value(head: &str, name: &str) -> Option<String> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|(_, v)| v.trim().split(';').next())
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, v)| *k == name && !v.is_empty())
        .map(|(_, v)| v.to_string())
}

pub(crate) fn header_value(head: &str, name: &str) -> Option<String> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_string())
}

/// The value of the hidden `csrf` input of a page.
pub(crate) fn csrf_in(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    page[at..].split('"').next().unwrap().to_string()
}

/// Signs in over HTTP with `token`: the session cookie value.
pub(crate) fn sign_in(d: &Daemon, token: &str) -> String {
    let (status, head, page) = form_request(d, "GET", "/ui/login", &[], None);
    assert_eq!(status, 200, "{page}");
    let pre = set_cookie_value(&head, "sw_login").expect("a login cookie");
    let csrf = csrf_in(&page);
    let cookie = format!("sw_login={pre}");
    let (status, head, body) = form_request(
        d,
        "POST",
        "/ui/login",
        &[("Cookie", &cookie)],
        Some(&[("csrf", &csrf), ("token", token)]),
    );
    assert_eq!(status, 303, "{head}\n{body}");
    set_cookie_value(&head, "sw_session").expect("a session cookie")
}

#[test]
fn ui_sessions_csrf_headers_and_cookies_never_authenticate_v1() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_file("bob.token", format!("{BOB_FILE_TOKEN}\n").as_bytes());
    sb.write_config(&reviewer_config(""));
    let d = start_with_reviewers(&sb);
    d.wait_json("/v1/status", |v| v["watches"][0]["status"] == "unchanged");
    sb.write_file("pets.json", &Pets::v3().bytes());
    let id = wait_review(&d, 0);

    // Without a session every page sends to the login form; the headers are strict.
    let (status, head, _) = form_request(&d, "GET", "/ui/", &[], None);
    assert_eq!(status, 303);
    assert_eq!(
        header_value(&head, "location").as_deref(),
        Some("/ui/login")
    );
    let csp = header_value(&head, "content-security-policy").expect("a CSP");
    for part in [
        "default-src 'none'",
        "style-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "report-uri /ui/csp-report",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert_eq!(
        header_value(&head, "referrer-policy").as_deref(),
        Some("no-referrer")
    );
    // The Host check of /v1 holds for /ui.
    let (status, _, _) = form_request(&d, "GET", "/ui/login", &[("Host", "evil.example")], None);
    assert_eq!(status, 403);

    let version_before = sb.registry_version();
    let session = sign_in(&d, ALICE_TOKEN);
    assert_eq!(
        sb.registry_version(),
        version_before,
        "a session never bumps registry_version"
    );
    let (_, head, _) = form_request(&d, "GET", "/ui/login", &[], None);
    let pre = set_cookie_value(&head, "sw_login").unwrap();
    let cookie = format!("sw_session={session}");
    let (status, _, page) = form_request(&d, "GET", "/ui/", &[("Cookie", &cookie)], None);
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("Signed in as <strong>alice</strong>"),
        "{page}"
    );
    assert!(page.contains("acme.pets"));
    let (status, head, page) = form_request(
        &d,
        "GET",
        &format!("/ui/reviews/{id}"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(status, 200, "{page}");
    assert!(
        header_value(&head, "set-cookie").is_none(),
        "no write per page view"
    );
    let csrf = csrf_in(&page);

    // The session cookie flags.
    let (_, login_head, _) = {
        let (_, h, p) = form_request(&d, "GET", "/ui/login", &[], None);
        let pre2 = set_cookie_value(&h, "sw_login").unwrap();
        let c = format!("sw_login={pre2}");
        let csrf2 = csrf_in(&p);
        form_request(
            &d,
            "POST",
            "/ui/login",
            &[("Cookie", &c)],
            Some(&[("csrf", &csrf2), ("token", BOB_FILE_TOKEN)]),
        )
    };
    let set = header_value(&login_head, "set-cookie").unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/ui"),
        "{set}"
    );
    assert!(
        !set.contains("Secure"),
        "plain http public_url: no Secure flag"
    );

    // A /ui POST without (or with a wrong) CSRF token is 403 and changes nothing.
    let accept = format!("/ui/reviews/{id}/accept");
    let (status, _, _) = form_request(
        &d,
        "POST",
        &accept,
        &[("Cookie", &cookie)],
        Some(&[("reason", "ok")]),
    );
    assert_eq!(status, 403);
    let (status, _, _) = form_request(
        &d,
        "POST",
        &accept,
        &[("Cookie", &cookie)],
        Some(&[("reason", "ok"), ("csrf", "forged")]),
    );
    assert_eq!(status, 403);
    // A login without its CSRF token is 403.
    let (status, _, _) = form_request(
        &d,
        "POST",
        "/ui/login",
        &[("Cookie", &format!("sw_login={pre}"))],
        Some(&[("token", ALICE_TOKEN)]),
    );
    assert_eq!(status, 403);
    // Cookies never authenticate /v1.
    let (status, _) = http(
        d.api,
        "POST",
        &format!("/v1/pending/{id}/accept"),
        None,
        &[("Cookie", &cookie)],
        Some(r#"{"reason":"cookie"}"#),
    );
    assert_eq!(status, 401);
    assert_eq!(sb.pending_show(id)["state"], "open");

    // With the token: accepted as alice, via=reviewer, and the watch page says so.
    let (status, head, body) = form_request(
        &d,
        "POST",
        &accept,
        &[("Cookie", &cookie)],
        Some(&[("reason", "announced in the changelog"), ("csrf", &csrf)]),
    );
    assert_eq!(status, 303, "{body}");
    let location = header_value(&head, "location").unwrap();
    assert!(location.starts_with("/ui/watches/acme.pets"), "{location}");
    let (status, _, page) = form_request(&d, "GET", &location, &[("Cookie", &cookie)], None);
    assert_eq!(status, 200);
    assert!(
        page.contains("via=reviewer") && page.contains("alice"),
        "{page}"
    );
    let history = sb.history("acme.pets");
    assert_eq!(history[0]["reviewer"], "alice");
    assert_eq!(history[0]["via"], "reviewer");
    // Accepting again: already decided (409), nothing written.
    let (status, _, page) = form_request(
        &d,
        "POST",
        &accept,
        &[("Cookie", &cookie)],
        Some(&[("reason", "again"), ("csrf", &csrf)]),
    );
    assert_eq!(status, 409);
    assert!(page.contains("already decided"), "{page}");

    // Logout ends the session server-side.
    let (status, _, _) = form_request(
        &d,
        "POST",
        "/ui/logout",
        &[("Cookie", &cookie)],
        Some(&[("csrf", &csrf)]),
    );
    assert_eq!(status, 303);
    let (status, _, _) = form_request(&d, "GET", "/ui/", &[("Cookie", &cookie)], None);
    assert_eq!(status, 303);

    // Failed logins are rate-limited per address.
    let mut statuses = Vec::new();
    for _ in 0..7 {
        let (_, h, p) = form_request(&d, "GET", "/ui/login", &[], None);
        let pre = set_cookie_value(&h, "sw_login").unwrap();
        let c = format!("sw_login={pre}");
        let csrf = csrf_in(&p);
        let (status, _, _) = form_request(
            &d,
            "POST",
            "/ui/login",
            &[("Cookie", &c)],
            Some(&[("csrf", &csrf), ("token", "wrong-token")]),
        );
        statuses.push(status);
    }
    assert_eq!(&statuses[..5], &[401; 5]);
    assert_eq!(statuses[6], 429, "{statuses:?}");

    // The canary scan: tokens, session cookies and CSRF tokens in none of their encodings in
    // the log, any file of the sandbox (the registry and its WAL; sessions are stored hashed)
    // but the reviewer's own token file, or any CLI output of the test.
    let _ = sb.run(&["status", "--config", &sb.config_arg(), "--json"]);
    let _ = sb.run(&["notify", "list", "--config", &sb.config_arg(), "--json"]);
    let log = d.log_text();
    let files = sb.all_files();
    let transcript = sb.transcript();
    for secret in [
        session.as_str(),
        csrf.as_str(),
        ALICE_TOKEN,
        BOB_FILE_TOKEN,
        ADMIN_TOKEN,
    ] {
        assert_eq!(
            find_secret(log.as_bytes(), secret),
            None,
            "a secret in the log"
        );
        assert_eq!(
            find_secret(&transcript, secret),
            None,
            "a secret in CLI output"
        );
        for (path, bytes) in &files {
            if path.ends_with("bob.token") {
                continue;
            }
            assert_eq!(
                find_secret(bytes, secret),
                None,
                "a secret in {}",
                path.display()
            );
        }
    }
    assert_eq!(d.count_events("csp_report"), 0);
}

const FEED_VAR: &str = "SW_TEST_FEED_TOKEN";
const FEED_TOKEN: &str = "feed-token-31e7";

/// Parses an Atom document with PyPI feedparser: its bozo flag, feed id and entries.
fn feedparser(python: &str, sb: &Sandbox, xml: &str) -> Value {
    let path = sb.write_file("feed.atom", xml.as_bytes());
    let script = "import feedparser, json, sys
d = feedparser.parse(open(sys.argv[1], 'rb').read())
print(json.dumps({'bozo': d.bozo, 'version': d.version, 'id': d.feed.get('id'),
  'entries': [{'id': e.id, 'title': e.title, 'updated': e.updated, 'link': e.get('link'),
               'category': e.tags[0].term if e.get('tags') else None} for e in d.entries]}))";
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .arg(&path)
        .output()
        .expect("run feedparser");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn atom_feeds_parse_with_feedparser_and_need_the_feed_token() {
    let Some(python) = common::peers::need(
        common::peers::python_feedparser(),
        "PyPI feedparser (tests/peers/.venv)",
    ) else {
        return;
    };
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_file("bob.token", b"bob\n");
    sb.write_config(&reviewer_config(&format!(
        "feed_token_env = \"{FEED_VAR}\"\npublic_url = \"https://reviews.example.org/sw/\"\nallowed_hosts = [\"reviews.example.org:443\"]\n"
    )));
    let config = sb.config_arg();
    let mut cmd = sb.command(&["run", "--config", &config, "--log-format", "json"]);
    cmd.env(ALICE_VAR, ALICE_TOKEN).env(FEED_VAR, FEED_TOKEN);
    let d = Daemon::start_command(cmd, Some(ADMIN_TOKEN));
    d.wait_json("/v1/status", |v| v["watches"][0]["status"] == "unchanged");
    sb.write_file("pets.json", &Pets::v3().bytes());
    let id = wait_review(&d, 0);
    let (status, _) = post_decision(
        &d,
        &format!("/v1/pending/{id}/accept"),
        ALICE_TOKEN,
        &serde_json::json!({"reason": "ok"}),
    );
    assert_eq!(status, 200);

    // No token, a wrong one: 401. The query token and HTTP Basic both read it.
    assert_eq!(d.get("/v1/feed.atom").0, 401);
    assert_eq!(d.get("/v1/feed.atom?token=nope").0, 401);
    let (status, head, xml) = form_request(
        &d,
        "GET",
        &format!("/v1/feed.atom?token={FEED_TOKEN}"),
        &[],
        None,
    );
    assert_eq!(status, 200, "{xml}");
    assert!(header_value(&head, "content-type")
        .unwrap()
        .starts_with("application/atom+xml"));
    use base64::Engine;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("reader:{FEED_TOKEN}"))
    );
    let (status, _, by_basic) = form_request(
        &d,
        "GET",
        "/v1/watches/acme.pets/feed.atom",
        &[("Authorization", &basic)],
        None,
    );
    assert_eq!(status, 200, "{by_basic}");
    assert_eq!(
        form_request(
            &d,
            "GET",
            "/v1/watches/nope.none/feed.atom",
            &[("Authorization", &basic)],
            None
        )
        .0,
        404
    );

    let feed = feedparser(&python, &sb, &xml);
    assert_eq!(feed["bozo"], false, "{feed}");
    assert_eq!(feed["version"], "atom10");
    let entries = feed["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["category"].as_str().unwrap())
        .collect();
    // Newest first: the acceptance, the review, the registration.
    assert_eq!(kinds.first(), Some(&"review_accepted"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"registered"), "{kinds:?}");
    let (registry_id, created): (String, String) =
        rusqlite::Connection::open(sb.path("registry.sqlite3"))
            .unwrap()
            .query_row(
                "SELECT registry_id, created_at FROM registry_meta WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
    let first = entries[0]["id"].as_str().unwrap();
    let prefix = format!("tag:reviews.example.org,{}:{registry_id}/", &created[..10]);
    assert!(first.starts_with(&prefix), "{first} vs {prefix}");
    let seqs: Vec<i64> = entries
        .iter()
        .map(|e| {
            e["id"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] > w[1]), "{seqs:?}");
    assert_eq!(
        entries[0]["link"],
        format!("https://reviews.example.org/sw/ui/reviews/{id}")
    );
    let watch_feed = feedparser(&python, &sb, &by_basic);
    assert_eq!(watch_feed["bozo"], false);
    assert_eq!(
        watch_feed["entries"].as_array().unwrap().len(),
        entries.len(),
        "one watch: the same events"
    );
    // Content-free: no change text in the feed; the token never in a log line.
    assert!(
        !xml.contains("petId") && !xml.contains("showPetById"),
        "{xml}"
    );
    let log = d.log_text();
    assert!(!log.contains(FEED_TOKEN), "the query string was logged");
}

#[test]
fn ui_under_a_path_prefix_with_single_sign_on_paging_compare_and_csp_reports() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_file("bob.token", b"bob-token\n");
    // 55 more watches of the same document: the "all" section pages (50 rows a page).
    let mut more: String = (0..55)
        .map(|i| file_watch(&format!("fleet.w{i:02}"), "pets.json", "1h"))
        .collect();
    more.push_str(&file_watch("broken.w", "missing.json", "1s"));
    sb.write_config(&reviewer_config_with(
        "public_url = \"https://reviews.example.org/sw/\"\nallowed_hosts = [\"reviews.example.org:443\"]\ntrusted_user_header = \"X-Forwarded-User\"\ntrusted_proxies = [\"127.0.0.0/8\"]\n",
        &more,
    ));
    let d = start_with_reviewers(&sb);
    // The listing reads the config: idle watches are listed too.
    d.wait_json("/v1/watches/acme.pets", |v| v["status"] == "unchanged");

    // Every link, redirect, cookie path and the report-uri carry the prefix.
    let (status, head, _) = form_request(&d, "GET", "/ui/", &[], None);
    assert_eq!(status, 303);
    assert_eq!(
        header_value(&head, "location").as_deref(),
        Some("/sw/ui/login")
    );
    assert!(header_value(&head, "content-security-policy")
        .unwrap()
        .contains("report-uri /sw/ui/csp-report"));
    let (_, _, login) = form_request(&d, "GET", "/ui/login", &[], None);
    assert!(login.contains("action=\"/sw/ui/login\""), "{login}");
    assert!(
        login.contains("href=\"/sw/ui/assets/style.css\""),
        "{login}"
    );

    // Single sign-on: a trusted peer naming a configured reviewer gets a session; an unknown
    // name gets the form.
    let (status, head, _) = form_request(
        &d,
        "GET",
        "/ui/login",
        &[("X-Forwarded-User", "mallory")],
        None,
    );
    assert_eq!(status, 200);
    assert!(set_cookie_value(&head, "sw_session").is_none());
    let (status, head, _) =
        form_request(&d, "GET", "/ui/login", &[("X-Forwarded-User", "bob")], None);
    assert_eq!(status, 303, "{head}");
    let set = header_value(&head, "set-cookie").unwrap();
    assert!(
        set.contains("Path=/sw/ui") && set.contains("Secure"),
        "{set}"
    );
    let session = set_cookie_value(&head, "sw_session").unwrap();
    let cookie = format!("sw_session={session}");

    // The overview: counts, sections in order, the name filter, paging with a cursor.
    let (status, _, page) = form_request(&d, "GET", "/ui/", &[("Cookie", &cookie)], None);
    assert_eq!(status, 200);
    let order: Vec<usize> = ["Pending review", "Error", "Stale", "All watches"]
        .iter()
        .map(|h| {
            page.find(&format!(">{h}</h2>"))
                .unwrap_or_else(|| panic!("{h}: {page}"))
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]));
    assert!(page.contains("href=\"/sw/ui/watches/acme.pets\""));
    let next = page
        .split("href=\"")
        .filter_map(|s| s.split('"').next())
        .find(|h| h.contains("section=all") && h.contains("cursor="))
        .expect("a next page of all watches")
        .replace("&amp;", "&")
        .replace("&#38;", "&");
    assert!(next.starts_with("/sw/ui/?"), "{next}");
    let (status, _, second) = form_request(
        &d,
        "GET",
        next.strip_prefix("/sw").unwrap(),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(status, 200, "{second}");
    assert!(
        second.contains("fleet.w54") && !second.contains(">fleet.w00<"),
        "{second}"
    );
    let (_, _, filtered) = form_request(&d, "GET", "/ui/?q=acme", &[("Cookie", &cookie)], None);
    assert!(
        filtered.contains("acme.pets") && !filtered.contains("fleet.w"),
        "{filtered}"
    );

    // A failing watch: in the Error section, and its page names the failure's class once
    // its `refresh_failed` event is written.
    let start = std::time::Instant::now();
    loop {
        let (_, _, page) = form_request(
            &d,
            "GET",
            "/ui/?section=error",
            &[("Cookie", &cookie)],
            None,
        );
        let (_, _, watch) = form_request(
            &d,
            "GET",
            "/ui/watches/broken.w",
            &[("Cookie", &cookie)],
            None,
        );
        if page.contains(">broken.w<") && watch.contains("Last error class</dt><dd>fetch") {
            break;
        }
        assert!(
            start.elapsed() < crate::service::PATIENCE,
            "{page}\n{watch}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    // Two stored versions: the watch page compares them (one version read at a time).
    sb.write_file("pets.json", &Pets::v2().bytes());
    d.wait_json("/v1/watches/acme.pets", |v| v["status"] == "applied");
    let (status, _, watch) = form_request(
        &d,
        "GET",
        "/ui/watches/acme.pets?from=1&to=2",
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(status, 200, "{watch}");
    assert!(watch.contains("Version 1 → 2"), "{watch}");
    assert!(
        watch.contains("parameter-added") || watch.contains("chg2:"),
        "{watch}"
    );

    // The CSP report endpoint: 204, a count logged (never the content), bounded, rate-limited.
    let report = r#"{"csp-report":{"document-uri":"https://x/secret-path","violated-directive":"style-src"}}"#;
    for _ in 0..25 {
        let (status, _, _) = crate::service::http_with_head(
            d.api,
            "POST",
            "/ui/csp-report",
            None,
            &[],
            Some(report),
        );
        assert_eq!(status, 204);
    }
    let big = "x".repeat(20_000);
    let (status, _, _) =
        crate::service::http_with_head(d.api, "POST", "/ui/csp-report", None, &[], Some(&big));
    assert_eq!(status, 413);
    assert_eq!(
        d.count_events("csp_report"),
        20,
        "rate-limited to 20 lines a minute"
    );
    assert!(!d.log_text().contains("secret-path"));
}

/// A pruned review (`[storage] keep_reviews`) has a page of its own: its summary and state,
/// the note that its candidate and report were dropped, and no decision forms.
#[test]
fn a_pruned_review_says_so_and_offers_no_decision() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_file("bob.token", BOB_FILE_TOKEN.as_bytes());
    sb.write_config(&reviewer_config("").replace("[storage]\n", "[storage]\nkeep_reviews = 1\n"));
    let (run, _) = sb.check(&[]);
    run.assert_code(0);
    // Three flaps: each queues a review that the return to v1 supersedes.
    let mut ids = Vec::new();
    for _ in 0..3 {
        sb.write_file(
            "pets.json",
            &Pets {
                show_by_id: false,
                ..Pets::v1()
            }
            .bytes(),
        );
        let (_, out) = sb.check(&[]);
        assert_eq!(out["outcomes"][0]["action"], "pending_review", "{out}");
        ids.push(out["outcomes"][0]["review_id"].as_i64().unwrap());
        sb.write_file("pets.json", &Pets::v1().bytes());
        let (_, out) = sb.check(&[]);
        assert_eq!(out["outcomes"][0]["action"], "unchanged", "{out}");
    }
    assert_eq!(sb.pending_show(ids[0])["pruned"], true);
    let d = start_with_reviewers(&sb);
    let cookie = format!("sw_session={}", sign_in(&d, ALICE_TOKEN));
    let (status, _, pruned) = form_request(
        &d,
        "GET",
        &format!("/ui/reviews/{}", ids[0]),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(status, 200, "{pruned}");
    assert!(pruned.contains("Pruned at"), "{pruned}");
    assert!(pruned.contains("Superseded"), "{pruned}");
    assert!(!pruned.contains("/accept\""), "{pruned}");
    // The newest closed review keeps its report.
    let (status, _, kept) = form_request(
        &d,
        "GET",
        &format!("/ui/reviews/{}", ids[2]),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(status, 200);
    assert!(!kept.contains("Pruned at"), "{kept}");
    assert!(kept.contains("/pets/{petId}"), "{kept}");
}
