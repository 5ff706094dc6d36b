//! Issue 32: the review UI driven in a real headless Chromium (Debian `chromium` and
//! `chromium-driver`) through WebDriver (fantoccini): sign in as a reviewer, accept a pending
//! review, see the watch applied, the registry version moved and the name in history; CSRF and
//! cookie-only `/v1` refusals; a second tab accepting a superseded review; a hostile contract
//! rendered inert; no CSP report; the npm `axe-core` engine on the overview, watch and review
//! pages (no serious or critical violation). Screenshots land in `target/ui-screenshots/`.

use crate::common;
use crate::service::{file_watch, http, Daemon, PATIENCE};
use crate::ui::{
    form_request, reviewer_config_with, start_with_reviewers, wait_review, ALICE_TOKEN,
};
use common::peers::{axe_core, chromium, free_port, need, start_http};
use common::*;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn openapi(paths: Value) -> Vec<u8> {
    serde_json::to_vec_pretty(&json!({
        "openapi": "3.0.3",
        "info": {"title": "Evil", "version": "1"},
        "paths": paths,
    }))
    .unwrap()
}

fn op(id: &str, description: &str) -> Value {
    json!({"get": {
        "operationId": id,
        "description": description,
        "responses": {"200": {"description": "ok"}}
    }})
}

/// What a hostile provider writes: markup, an event handler, a `javascript:` link, bidi
/// overrides and tag characters, in descriptions and in a path.
const HOSTILE: &str = "<script>window.__pwned=1</script>\"><img src=x onerror=\"window.__pwned=2\"> [docs](javascript:window.__pwned=3) <a href=\"javascript:window.__pwned=4\">x</a> \u{202E}txt.exe\u{202C} \u{E0041}\u{E0042}";

fn evil_v1() -> Vec<u8> {
    let mut paths = serde_json::Map::new();
    paths.insert("/items".into(), op("listItems", "List items"));
    paths.insert("/old".into(), op("oldItems", "Old"));
    openapi(Value::Object(paths))
}

fn evil(n: u32) -> Vec<u8> {
    let mut paths = serde_json::Map::new();
    paths.insert("/items".into(), op("listItems", &format!("{HOSTILE} #{n}")));
    paths.insert(
        format!("/x<script>window.__pwned=5</script>\"><img src=x onerror=window.__pwned=6>{n}"),
        op(&format!("evil{n}"), HOSTILE),
    );
    openapi(Value::Object(paths))
}

fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/ui-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Chromium's switches: headless, loopback only, nothing phoning home.
fn capabilities(
    browser: &std::path::Path,
    profile: &std::path::Path,
) -> serde_json::Map<String, Value> {
    let mut args = vec![
        "--headless=new".to_string(),
        "--disable-dev-shm-usage".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-default-apps".into(),
        "--disable-extensions".into(),
        "--no-first-run".into(),
        "--window-size=1280,1000".into(),
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    if rustix::process::geteuid().is_root() {
        args.push("--no-sandbox".into());
    }
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"binary": browser.to_string_lossy(), "args": args}),
    );
    caps
}

/// Waits until `pred` holds on the page source.
async fn wait_source(c: &Client, what: &str, pred: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let source = c.source().await.unwrap();
        if pred(&source) {
            return source;
        }
        assert!(start.elapsed() < PATIENCE, "{what} never showed:\n{source}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The axe-core violations of the current page that are serious or critical.
async fn axe_serious(c: &Client, axe: &str) -> Vec<Value> {
    c.execute(axe, vec![]).await.expect("inject axe-core");
    let result = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, {resultTypes: ['violations']})
               .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                   nodes: v.nodes.map(n => n.html).slice(0, 3)}))))
               .catch(e => done({error: String(e)}));",
            vec![],
        )
        .await
        .expect("axe.run");
    let list = result
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("axe failed: {result}"));
    list.into_iter()
        .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
        .collect()
}

async fn registry_version(d: &Daemon) -> i64 {
    let (status, body) = http(d.api, "GET", "/v1/status", None, &[], None);
    assert_eq!(status, 200);
    serde_json::from_str::<Value>(&body).unwrap()["registry_version"]
        .as_i64()
        .unwrap()
}

#[test]
fn review_ui_in_a_real_chromium() {
    let Some((driver, browser)) = need(chromium(), "Debian chromium and chromium-driver") else {
        return;
    };
    let Some(axe_path) = need(axe_core(), "npm axe-core (tests/peers)") else {
        return;
    };
    let axe = std::fs::read_to_string(axe_path).unwrap();
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_file("evil.json", &evil_v1());
    sb.write_file("bob.token", b"unused-bob-token\n");
    let config = reviewer_config_with("", &file_watch("evil.api", "evil.json", "1s"));
    sb.write_config(&config);
    let d = start_with_reviewers(&sb);
    d.wait_json("/v1/status", |v| {
        v["watches"]
            .as_array()
            .is_some_and(|w| w.len() == 2 && w.iter().all(|w| w["status"] == "unchanged"))
    });
    sb.write_file("pets.json", &Pets::v3().bytes());
    let pets_review = wait_review(&d, 0);
    sb.write_file("evil.json", &evil(1));
    let evil_review = wait_review(&d, pets_review);

    let port = free_port();
    let profile = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(&driver);
    command.arg(format!("--port={port}"));
    let home = profile.path().to_string_lossy().into_owned();
    let _driver = start_http(command, port, &[("HOME", home.as_str())]);
    let base = format!("http://{}", d.api);
    let shots = screenshots();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
        connector.enforce_http(true);
        let c = ClientBuilder::new(connector)
            .capabilities(capabilities(&browser, &profile.path().join("chromium")))
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a WebDriver session");

        // Every page needs a session: the overview sends to the login form.
        c.goto(&format!("{base}/ui/")).await.unwrap();
        assert!(c.current_url().await.unwrap().path().ends_with("/ui/login"));
        c.find(Locator::Id("token")).await.unwrap().send_keys(ALICE_TOKEN).await.unwrap();
        c.find(Locator::Id("sign-in")).await.unwrap().click().await.unwrap();
        let overview = wait_source(&c, "the overview", |s| s.contains("Signed in as")).await;
        assert!(overview.contains("Pending review") && overview.contains("acme.pets"));
        std::fs::write(shots.join("overview.png"), c.screenshot().await.unwrap()).unwrap();
        let bad = axe_serious(&c, &axe).await;
        assert!(bad.is_empty(), "axe on the overview: {bad:#?}");

        // The review page: accept as alice.
        let before = registry_version(&d).await;
        c.goto(&format!("{base}/ui/reviews/{pets_review}")).await.unwrap();
        let page = wait_source(&c, "the review", |s| s.contains("accept-reason")).await;
        assert!(page.contains("chg2:") && page.contains("[[accept]]"), "{page}");
        assert!(page.contains("line "), "source lines for OpenAPI: {page}");
        std::fs::write(shots.join("review.png"), c.screenshot().await.unwrap()).unwrap();
        let bad = axe_serious(&c, &axe).await;
        assert!(bad.is_empty(), "axe on the review page: {bad:#?}");

        // A /ui POST without the CSRF token is 403; a cookie-only /v1 POST is 401.
        let session = c.get_named_cookie("sw_session").await.unwrap();
        let cookie = format!("sw_session={}", session.value());
        let (status, _, _) = form_request(
            &d,
            "POST",
            &format!("/ui/reviews/{pets_review}/accept"),
            &[("Cookie", &cookie)],
            Some(&[("reason", "no csrf")]),
        );
        assert_eq!(status, 403);
        let (status, _) = http(
            d.api,
            "POST",
            &format!("/v1/pending/{pets_review}/accept"),
            None,
            &[("Cookie", &cookie)],
            Some(r#"{"reason":"cookie only"}"#),
        );
        assert_eq!(status, 401);

        c.find(Locator::Id("accept-reason"))
            .await
            .unwrap()
            .send_keys("announced in the provider's changelog")
            .await
            .unwrap();
        c.find(Locator::Id("accept")).await.unwrap().click().await.unwrap();
        let watch = wait_source(&c, "the watch page", |s| s.contains("id=\"decided\"")).await;
        assert!(watch.contains(">applied<"), "the watch is applied: {watch}");
        assert!(watch.contains("via=reviewer"), "{watch}");
        let history = c.find(Locator::Id("history")).await.unwrap().text().await.unwrap();
        assert!(history.contains("alice"), "{history}");
        assert!(registry_version(&d).await > before, "the registry version moved");
        let bad = axe_serious(&c, &axe).await;
        assert!(bad.is_empty(), "axe on the watch page: {bad:#?}");

        // A hostile contract renders inert, hidden characters escaped and named.
        let first = c.window().await.unwrap();
        let tab = c.new_window(true).await.unwrap();
        c.switch_to_window(tab.handle.clone()).await.unwrap();
        c.goto(&format!("{base}/ui/reviews/{evil_review}")).await.unwrap();
        let page = wait_source(&c, "the hostile review", |s| s.contains("accept-reason")).await;
        let live = c
            .execute(
                "return {
                   pwned: window.__pwned === undefined ? null : window.__pwned,
                   scripts: document.querySelectorAll('script').length,
                   imgs: document.querySelectorAll('img, iframe, object, embed').length,
                   js_links: Array.from(document.querySelectorAll('a')).filter(a => a.protocol === 'javascript:').length,
                   handlers: Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length
                 };",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            live,
            json!({"pwned": null, "scripts": 0, "imgs": 0, "js_links": 0, "handlers": 0}),
            "the hostile contract is inert"
        );
        assert!(page.contains("U+202E RIGHT-TO-LEFT OVERRIDE"), "{page}");
        // The hostile changes themselves, scrolled into view.
        c.execute(
            "document.querySelector('li.change').scrollIntoView();",
            vec![],
        )
        .await
        .unwrap();
        std::fs::write(shots.join("review-hostile.png"), c.screenshot().await.unwrap()).unwrap();
        assert!(page.contains("\\u{202E}") && page.contains("\\u{E0041}"), "{page}");
        assert!(page.contains("&lt;script&gt;") || page.contains("&lt;script>"), "{page}");

        // A newer candidate supersedes it while the tab is open: accepting says so.
        sb.write_file("evil.json", &evil(2));
        let newer = wait_review(&d, evil_review);
        assert!(newer > evil_review);
        c.find(Locator::Id("accept-reason"))
            .await
            .unwrap()
            .send_keys("from a stale tab")
            .await
            .unwrap();
        c.find(Locator::Id("accept")).await.unwrap().click().await.unwrap();
        let page = wait_source(&c, "the superseded answer", |s| s.contains("id=\"banner\"")).await;
        assert!(page.contains("superseded"), "{page}");
        c.close_window().await.unwrap();
        c.switch_to_window(first).await.unwrap();
        c.close().await.unwrap();
    });

    assert_eq!(sb.pending_show(evil_review)["state"], "superseded");
    let history = sb.history("acme.pets");
    assert_eq!(history[0]["reviewer"], "alice");
    assert_eq!(history[0]["via"], "reviewer");
    // The CSP report endpoint received nothing during these flows.
    assert_eq!(d.count_events("csp_report"), 0, "{}", d.log_text());
    let log = d.log_text();
    assert!(!log.contains(ALICE_TOKEN));
    assert!(find_canary(log.as_bytes()).is_none());
}
