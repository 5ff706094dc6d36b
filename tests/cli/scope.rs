//! Consumer scope (`uses`): changes outside the endpoints a consumer uses are demoted to
//! `info` and marked `out_of_scope`, through `diff --uses`, `--config --watch` and the daemon's
//! one-shot `check`. Some changes are never out of scope; a typo is an error.

use crate::common::{change, only_outcome, Sandbox};
use serde_json::{json, Value};

/// `listPets` (GET /pets) and `listOwners` (GET /owners) both reach `Pet`; `listOrders`
/// reaches `Order`; GET /stores has no operationId.
fn old_doc() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}}},
            "/owners": {"get": {"operationId": "listOwners", "responses": {"200": {"description": "ok",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}}},
            "/orders": {"get": {"operationId": "listOrders", "responses": {"200": {"description": "ok",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Order"}}}}}}},
            "/stores/{id}": {"get": {"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok",
                "content": {"application/json": {"schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}}}}}
        },
        "components": {"schemas": {
            "Pet": {"type": "object", "properties": {"name": {"type": "string"}, "tag": {"type": "string"}}, "required": ["name", "tag"]},
            "Order": {"type": "object", "properties": {"id": {"type": "string"}, "total": {"type": "number"}}, "required": ["id", "total"]}
        }}
    })
}

/// The provider removes `Order.total` (breaking for `listOrders`) and adds a write endpoint.
fn new_doc() -> Value {
    let mut d = old_doc();
    d["components"]["schemas"]["Order"]["properties"]
        .as_object_mut()
        .unwrap()
        .remove("total");
    d["components"]["schemas"]["Order"]["required"] = json!(["id"]);
    d["paths"]["/admin"] =
        json!({"post": {"operationId": "wipe", "responses": {"200": {"description": "ok"}}}});
    d
}

fn write(sb: &Sandbox, name: &str, doc: &Value) -> String {
    sb.write_file(name, doc.to_string().as_bytes())
        .to_string_lossy()
        .into_owned()
}

/// `diff OLD NEW --json --fail-on breaking` with a uses file of `entries` and `extra` args.
fn diff_with(
    sb: &Sandbox,
    old: &Value,
    new: &Value,
    entries: &[&str],
    extra: &[&str],
) -> (i32, Value, String) {
    let (o, n) = (write(sb, "old.json", old), write(sb, "new.json", new));
    let uses = sb.write_file(
        "uses.txt",
        format!("# what we call\n{}\n", entries.join("\n")).as_bytes(),
    );
    let uses = uses.to_string_lossy().into_owned();
    let mut args = vec![
        "diff",
        &o,
        &n,
        "--json",
        "--fail-on",
        "breaking",
        "--uses",
        &uses,
    ];
    args.extend_from_slice(extra);
    let run = sb.run(&args);
    let value = if run.code == 2 {
        Value::Null
    } else {
        run.json()
    };
    (run.code, value, run.stderr_text())
}

#[test]
fn changes_outside_the_used_endpoints_are_demoted_with_their_ids_kept() {
    let sb = Sandbox::new();
    let (code, scoped, _) = diff_with(&sb, &old_doc(), &new_doc(), &["listPets"], &[]);
    assert_eq!(code, 0, "{scoped}");
    assert_eq!(scoped["compatibility"], "compatible", "{scoped}");
    let added = change(&scoped, "endpoint-added-write");
    assert_eq!(added["severity"], "info");
    assert_eq!(added["out_of_scope"], true);
    assert_eq!(scoped["gate"]["out_of_scope"], 2, "{scoped}");
    // --strict ignores the scope: the same changes, same ids, at their own severity.
    let (code, strict, _) = diff_with(&sb, &old_doc(), &new_doc(), &["listPets"], &["--strict"]);
    assert_eq!(code, 1);
    assert_eq!(strict["compatibility"], "security_review");
    let strict_added = change(&strict, "endpoint-added-write");
    assert_eq!(strict_added["id"], added["id"]);
    assert_eq!(strict_added["severity"], "security");
    assert!(strict_added.get("out_of_scope").is_none());
    assert!(strict["gate"].get("out_of_scope").is_none());
}

#[test]
fn a_used_endpoint_reaching_the_changed_definition_keeps_it_in_scope() {
    let sb = Sandbox::new();
    let (code, report, _) = diff_with(&sb, &old_doc(), &new_doc(), &["listOrders"], &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["compatibility"], "breaking");
    let removed = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["severity"] == "breaking")
        .unwrap_or_else(|| panic!("{report}"));
    assert!(removed.get("out_of_scope").is_none(), "{report}");
}

#[test]
fn a_definition_shared_by_a_used_and_an_unused_endpoint_stays_in_scope() {
    let sb = Sandbox::new();
    let mut new = old_doc();
    new["components"]["schemas"]["Pet"]["properties"]
        .as_object_mut()
        .unwrap()
        .remove("tag");
    new["components"]["schemas"]["Pet"]["required"] = json!(["name"]);
    // listOwners is walked first (alphabetically) and is unused; listPets shares Pet.
    for used in ["listPets", "listOwners"] {
        let (code, report, _) = diff_with(&sb, &old_doc(), &new, &[used], &[]);
        assert_eq!(code, 1, "{used}: {report}");
        assert_eq!(report["compatibility"], "breaking", "{used}: {report}");
        assert!(report["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c.get("out_of_scope").is_none()));
    }
    // Used by neither: the change is out of scope.
    let (code, report, _) = diff_with(&sb, &old_doc(), &new, &["listOrders"], &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["gate"]["out_of_scope"],
        report["changes"].as_array().unwrap().len()
    );
}

#[test]
fn an_endpoint_is_named_by_its_operation_id_or_its_identity() {
    let sb = Sandbox::new();
    let mut new = old_doc();
    new["paths"]["/stores/{id}"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"]["required"] = json!([]);
    for (entry, in_scope) in [
        ("GET /stores/{}", true),
        ("GET /pets", false),
        ("listPets", false),
    ] {
        let (code, report, _) = diff_with(&sb, &old_doc(), &new, &[entry], &[]);
        assert_eq!(code, if in_scope { 1 } else { 0 }, "{entry}: {report}");
    }
    // `GET /pets` names listPets by its identity: a removal of it is in scope.
    let mut gone = old_doc();
    gone["paths"].as_object_mut().unwrap().remove("/pets");
    let (code, report, _) = diff_with(&sb, &old_doc(), &gone, &["GET /pets"], &[]);
    assert_eq!(code, 1, "{report}");
    assert!(change(&report, "endpoint-removed")
        .get("out_of_scope")
        .is_none());
}

#[test]
fn a_removed_used_endpoint_stays_in_scope_and_a_typo_is_exit_2() {
    let sb = Sandbox::new();
    let mut gone = old_doc();
    gone["paths"].as_object_mut().unwrap().remove("/pets");
    let (code, report, _) = diff_with(&sb, &old_doc(), &gone, &["listPets"], &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(change(&report, "endpoint-removed")["severity"], "breaking");

    let (code, _, stderr) = diff_with(&sb, &old_doc(), &new_doc(), &["listPets", "listPest"], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("\"listPest\""), "{stderr}");
    assert!(!stderr.contains("\"listPets\""), "{stderr}");
    let (code, report, _) = diff_with(
        &sb,
        &old_doc(),
        &new_doc(),
        &["listPets", "listPest"],
        &["--allow-unknown-uses"],
    );
    assert_eq!(code, 0, "{report}");
}

#[test]
fn ci_renderings_show_out_of_scope_changes_as_notes() {
    let sb = Sandbox::new();
    let (o, n) = (
        write(&sb, "old.json", &old_doc()),
        write(&sb, "new.json", &new_doc()),
    );
    let uses = sb
        .write_file("uses.txt", b"listPets\n")
        .to_string_lossy()
        .into_owned();
    let run = sb.run(&[
        "diff",
        &o,
        &n,
        "--uses",
        &uses,
        "--fail-on",
        "breaking",
        "--format",
        "github",
    ]);
    run.assert_code(0);
    let out = run.stdout_text();
    assert!(!out.contains("::error"), "{out}");
    assert!(
        out.contains("::notice") && out.contains("out of the consumer"),
        "{out}"
    );
    let run = sb.run(&[
        "diff",
        &o,
        &n,
        "--uses",
        &uses,
        "--fail-on",
        "breaking",
        "--format",
        "sarif",
    ]);
    run.assert_code(0);
    let sarif = run.json();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert!(
        results
            .iter()
            .all(|r| r["level"] == "note" && r["properties"]["out_of_scope"] == true),
        "{sarif}"
    );
    let run = sb.run(&[
        "diff",
        &o,
        &n,
        "--uses",
        &uses,
        "--fail-on",
        "breaking",
        "--format",
        "junit",
    ]);
    run.assert_code(0);
    let junit = run.stdout_text();
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(
        junit.contains("<skipped") && junit.contains("out of the consumer"),
        "{junit}"
    );
    let run = sb.run(&[
        "diff",
        &o,
        &n,
        "--uses",
        &uses,
        "--fail-on",
        "breaking",
        "--format",
        "gitlab",
    ]);
    run.assert_code(0);
    let gl = run.json();
    assert!(
        gl.as_array()
            .unwrap()
            .iter()
            .all(|i| i["severity"] == "info"),
        "{gl}"
    );
}

fn mcp_snapshot(tools: &[&str], prompts: &[&str]) -> Value {
    json!({
        "tools": tools.iter().map(|t| json!({"name": t, "description": format!("{t} things"), "inputSchema": {"type": "object"}})).collect::<Vec<_>>(),
        "prompts": prompts.iter().map(|p| json!({"name": p, "description": "p"})).collect::<Vec<_>>(),
    })
}

#[test]
fn mcp_security_changes_are_never_out_of_scope_and_prompts_are_named_with_their_prefix() {
    let sb = Sandbox::new();
    let old = mcp_snapshot(&["search"], &["greet"]);
    let new = mcp_snapshot(&["search", "delete_all"], &["greet"]);
    let (code, report, stderr) = diff_with(
        &sb,
        &old,
        &new,
        &["prompt:greet", "search"],
        &["--kind", "mcp"],
    );
    assert_eq!(code, 1, "{report} {stderr}");
    assert_eq!(report["compatibility"], "security_review");
    assert!(change(&report, "tool-added").get("out_of_scope").is_none());
    let (code, _, stderr) = diff_with(&sb, &old, &new, &["greet"], &["--kind", "mcp"]);
    assert_eq!(code, 2, "a prompt is `prompt:NAME`: {stderr}");
}

#[test]
fn graphql_fields_are_named_bare_or_by_identity_and_types_by_name() {
    let sb = Sandbox::new();
    let old = "type Query { order(id: ID!): Order\n pets: [String] }\ntype Order { id: ID!\n total: Float! }\n";
    let new = "type Query { order(id: ID!): Order\n pets: [Int] }\ntype Order { id: ID! }\n";
    let o = sb
        .write_file("old.graphql", old.as_bytes())
        .to_string_lossy()
        .into_owned();
    let n = sb
        .write_file("new.graphql", new.as_bytes())
        .to_string_lossy()
        .into_owned();
    let run = |entries: &str| {
        let uses = sb
            .write_file("uses.txt", entries.as_bytes())
            .to_string_lossy()
            .into_owned();
        let run = sb.run(&[
            "diff", &o, &n, "--kind", "graphql", "--json", "--uses", &uses,
        ]);
        assert_ne!(run.code, 2, "{entries}: {}", run.describe());
        run.json()
    };
    let count = |report: &Value| {
        report["changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c.get("out_of_scope").is_none())
            .count()
    };
    for entries in ["order\n", "QUERY Query.order\n", "Order\n"] {
        let report = run(entries);
        assert!(
            report["changes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c.get("out_of_scope").is_none()
                    && c["path"].as_str().unwrap().contains("total")),
            "{entries}: {report}"
        );
        assert!(
            report["changes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["out_of_scope"] == true),
            "{entries}: {report}"
        );
        assert!(count(&report) > 0);
    }
}

#[test]
fn diff_config_watch_applies_the_watch_uses_and_the_daemon_only_reports_demoted_drift() {
    let sb = Sandbox::new();
    let doc = write(&sb, "api.json", &old_doc());
    sb.write_config(&format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"{doc}\"\nuses = [\"listPets\"]\n\n[[watch]]\nname = \"acme.applied\"\nkind = \"openapi\"\npath = \"{doc}\"\nuses = [\"listPets\"]\napply_out_of_scope = true\n"
    ));
    let cfg = sb.config_arg();
    sb.run(&["config", "check", "--config", &cfg])
        .assert_code(0);
    let (run, _) = sb.check(&[]);
    run.assert_code(0);
    // Only out-of-scope drift: reported, never applied, unless the watch says so.
    let mut new = old_doc();
    new["components"]["schemas"]["Order"]["description"] = json!("an order");
    new["paths"]["/orders"]["get"]["description"] = json!("orders");
    new["paths"]["/orders"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] =
        json!({"type": "object"});
    write(&sb, "api.json", &new);
    let (run, check) = sb.check(&["acme.pets"]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "report_only", "{check}");
    let (_, check) = sb.check(&["acme.applied"]);
    assert_eq!(only_outcome(&check)["action"], "applied", "{check}");
    // `diff --config --watch` judges as the watch does.
    let old = write(&sb, "old.json", &old_doc());
    let newp = write(&sb, "new.json", &new_doc());
    let run = sb.run(&[
        "diff",
        &old,
        &newp,
        "--config",
        &cfg,
        "--watch",
        "acme.pets",
        "--json",
        "--fail-on",
        "breaking",
    ]);
    run.assert_code(0);
    assert_eq!(run.json()["compatibility"], "compatible");
    let run = sb.run(&[
        "diff",
        &old,
        &newp,
        "--config",
        &cfg,
        "--watch",
        "acme.pets",
        "--strict",
        "--fail-on",
        "breaking",
    ]);
    run.assert_code(1);
}

#[test]
fn config_errors_name_the_scope_settings() {
    let sb = Sandbox::new();
    sb.write_file("surface.toml", b"read_only = []\n");
    let cfg = sb.config_arg();
    for (extra, needle) in [
        ("uses = []\n", "uses is empty"),
        (
            "uses = [\"a\"]\nuses_file = \"u.txt\"\n",
            "at most one of `uses` or `uses_file`",
        ),
        ("apply_out_of_scope = true\n", "need `uses` or `uses_file`"),
        ("uses_file = \"missing.txt\"\n", "cannot read uses file"),
        ("uses_file = \"surface.toml\"\n", "needs a bucket"),
    ] {
        sb.write_config(&format!(
            "[[watch]]\nname = \"acme.w\"\nkind = \"openapi\"\npath = \"a.json\"\n{extra}"
        ));
        let run = sb.run(&["config", "check", "--config", &cfg]);
        assert_eq!(run.code, 2, "{extra}: {}", run.describe());
        assert!(
            run.stderr_text().contains(needle),
            "{extra}: {}",
            run.stderr_text()
        );
    }
}

#[test]
fn a_typo_in_a_watch_uses_fails_the_refresh_and_names_the_entry() {
    let sb = Sandbox::new();
    let doc = write(&sb, "api.json", &old_doc());
    let config = |uses: &str| {
        format!("[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"{doc}\"\n{uses}")
    };
    sb.write_config(&config("uses = [\"listPest\"]\n"));
    sb.check(&[]).0.assert_code(0);
    write(&sb, "api.json", &new_doc());
    let (run, check) = sb.check(&[]);
    assert_eq!(run.code, 1, "{}", run.describe());
    assert_eq!(only_outcome(&check)["action"], "error", "{check}");
    assert!(check.to_string().contains("listPest"), "{check}");
    sb.write_config(&config(
        "uses = [\"listPest\"]\nallow_unknown_uses = true\n",
    ));
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "report_only", "{check}");
}

#[test]
fn a_classification_bucket_is_a_uses_file() {
    let sb = Sandbox::new();
    let (o, n) = (
        write(&sb, "old.json", &old_doc()),
        write(&sb, "new.json", &new_doc()),
    );
    let surface = sb.write_file(
        "surface.toml",
        b"read_only = [\"acme.pets/listOrders\"]\nreal_dispatch = [\"acme.pets/listPets\"]\n",
    );
    let surface = surface.to_string_lossy().into_owned();
    let verdict = |bucket: &str| {
        let uses = format!("{surface}#{bucket}");
        let run = sb.run(&["diff", &o, &n, "--uses", &uses, "--json"]);
        run.assert_code(0);
        run.json()["compatibility"].as_str().unwrap().to_string()
    };
    assert_eq!(verdict("read_only"), "breaking");
    assert_eq!(verdict("real_dispatch"), "compatible");
    let run = sb.run(&["diff", &o, &n, "--uses", &surface]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(run.stderr_text().contains("needs a bucket"));
}

#[test]
fn a_security_scheme_change_stays_in_scope_at_the_used_endpoint() {
    let sb = Sandbox::new();
    let mut old = old_doc();
    old["components"]["securitySchemes"] =
        json!({"key": {"type": "apiKey", "in": "header", "name": "X-Key"}});
    old["paths"]["/pets"]["get"]["security"] = json!([{"key": []}]);
    old["paths"]["/orders"]["get"]["security"] = json!([{"key": []}]);
    // The provider drops auth from an endpoint the consumer never calls: out of scope.
    let mut unused = old.clone();
    unused["paths"]["/orders"]["get"]["security"] = json!([]);
    let (code, report, _) = diff_with(&sb, &old, &unused, &["listPets"], &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        change(&report, "security-requirements-changed")["out_of_scope"],
        true
    );
    // The scheme itself changes: it is part of the used endpoint's requirement too.
    let mut scheme = old.clone();
    scheme["components"]["securitySchemes"]["key"]["name"] = json!("X-Other");
    let (code, report, _) = diff_with(&sb, &old, &scheme, &["listPets"], &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["compatibility"], "security_review");
    assert!(report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["rule"] == "security-requirements-changed"
            && c.get("out_of_scope").is_none()
            && c["path"].as_str().unwrap().contains("listPets")));
}

#[test]
fn an_endpoint_extension_is_scoped_but_a_document_extension_never_is() {
    let sb = Sandbox::new();
    let mut new = old_doc();
    new["paths"]["/orders"]["get"]["x-internal"] = json!(true);
    let (code, report, _) = diff_with(&sb, &old_doc(), &new, &["listPets"], &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(change(&report, "extension-changed")["out_of_scope"], true);
    let mut new = old_doc();
    new["x-gateway"] = json!({"route": "elsewhere"});
    let (code, report, _) = diff_with(&sb, &old_doc(), &new, &["listPets"], &[]);
    assert_eq!(code, 1, "{report}");
    assert!(change(&report, "extension-changed")
        .get("out_of_scope")
        .is_none());
}

/// A typo is caught before any drift: `config check` and `run` judge each watch's `uses`
/// against the accepted contract and the candidate of its open review.
#[test]
fn a_typo_in_a_watch_uses_is_a_config_error_at_config_check_and_at_start() {
    let sb = Sandbox::new();
    let doc = write(&sb, "api.json", &old_doc());
    let cfg = sb.config_arg();
    let config = |uses: &str| {
        sb.write_config(&format!("[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"{doc}\"\n{uses}"));
    };
    // No registry yet: nothing to judge against, the first refresh registers.
    config("uses = [\"listPest\"]\n");
    sb.run(&["config", "check", "--config", &cfg])
        .assert_code(0);
    config("uses = [\"listOrders\"]\n");
    sb.check(&[]).0.assert_code(0);
    // The provider removes a field listOrders returns and adds `wipe`: a review opens.
    write(&sb, "api.json", &new_doc());
    let (_, check) = sb.check(&[]);
    assert_eq!(only_outcome(&check)["action"], "pending_review", "{check}");
    // `wipe` is only in the open review's candidate: it names something.
    config("uses = [\"listOrders\", \"wipe\"]\n");
    sb.run(&["config", "check", "--config", &cfg])
        .assert_code(0);
    config("uses = [\"listOrders\", \"listPest\", \"wpie\"]\n");
    let run = sb.run(&["config", "check", "--config", &cfg]);
    assert_eq!(run.code, 2, "{}", run.describe());
    let err = run.stderr_text();
    assert!(
        err.contains("\"listPest\", \"wpie\"")
            && err.contains("acme.pets")
            && err.contains("open review")
            && !err.contains("\"listOrders\""),
        "{err}"
    );
    let run = sb.run(&["run", "--config", &cfg]);
    assert_ne!(run.code, 0, "{}", run.describe());
    assert!(
        run.stderr_text().contains("refusing to start")
            && run.stderr_text().contains("\"listPest\", \"wpie\""),
        "{}",
        run.describe()
    );
    // Said on purpose: the entries need not name anything yet.
    config("uses = [\"listOrders\", \"listPest\", \"wpie\"]\nallow_unknown_uses = true\n");
    sb.run(&["config", "check", "--config", &cfg])
        .assert_code(0);
}

/// `diff DOC DOC --uses` with one entry: exit 0 when it names something, 2 when not.
fn names_something(sb: &Sandbox, kind: &str, doc: &str, entry: &str) -> bool {
    let uses = sb.write_file("uses.txt", format!("{entry}\n").as_bytes());
    let uses = uses.to_string_lossy().into_owned();
    let run = sb.run(&["diff", "--kind", kind, doc, doc, "--uses", &uses]);
    match run.code {
        0 => true,
        2 => {
            assert!(
                run.stderr_text()
                    .contains(&format!("{entry:?} names nothing")),
                "{entry}: {}",
                run.describe()
            );
            false
        }
        _ => panic!("{entry}: {}", run.describe()),
    }
}

fn corpus(rel: &str) -> String {
    format!("{}/tests/corpus/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// The entry forms README "Scope and policy" lists for OpenRPC, OData, OPTIMADE and SQLite,
/// each accepted, and near misses refused.
#[test]
fn openrpc_odata_optimade_and_sqlite_entries_are_named_as_documented() {
    let sb = Sandbox::new();
    let rpc = corpus("openrpc/open-rpc-examples/params-by-name-petstore-openrpc.json");
    for entry in ["list_pets", "CALL list_pets"] {
        assert!(names_something(&sb, "openrpc", &rpc, entry), "{entry}");
    }
    for entry in ["list_pet", "CALL /list_pets", "GET list_pets"] {
        assert!(!names_something(&sb, "openrpc", &rpc, entry), "{entry}");
    }
    let odata = corpus("odata/trippin/v2019-inmemory.xml");
    for entry in [
        "People",
        "People.get",
        "People.create",
        "GET /People",
        "GET /People({})",
        "ResetDataSource",
        "ACTION /ResetDataSource",
        "GetNearestAirport",
        "GetNearestAirport()",
    ] {
        assert!(names_something(&sb, "odata", &odata, entry), "{entry}");
    }
    for entry in ["Peple", "People.fetch", "GET People"] {
        assert!(!names_something(&sb, "odata", &odata, entry), "{entry}");
    }
    let entries = corpus("optimade/info-structures/v2026-06-30.json");
    for entry in [
        "structures",
        "structures.get",
        "GET /structures",
        "GET /structures/{}",
    ] {
        assert!(names_something(&sb, "optimade", &entries, entry), "{entry}");
    }
    let index = corpus("optimade/providers-index-info/v2020-02-12.json");
    for entry in ["info", "GET /info", "links"] {
        assert!(names_something(&sb, "optimade", &index, entry), "{entry}");
    }
    for entry in ["structure", "GET /structures/{id}"] {
        assert!(
            !names_something(&sb, "optimade", &entries, entry),
            "{entry}"
        );
    }
    let db = sb.path("app.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);
             CREATE VIEW user_names AS SELECT name FROM users;",
        )
        .unwrap();
    let db = db.to_string_lossy().into_owned();
    for entry in ["users", "TABLE users", "user_names", "VIEW user_names"] {
        assert!(names_something(&sb, "sqlite", &db, entry), "{entry}");
    }
    for entry in ["main.users", "usres", "TABLE user_names"] {
        assert!(!names_something(&sb, "sqlite", &db, entry), "{entry}");
    }
}

/// PostgreSQL tables and functions by `schema.table` / `schema.fn(args)`, checked at
/// `config check` against the registered contract (the real throwaway cluster).
#[test]
fn postgres_entries_are_schema_qualified_and_checked_at_config_check() {
    let Some(db) = crate::common::postgres::database() else {
        return;
    };
    db.sql("CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL)");
    db.sql("CREATE FUNCTION customer_count(min_id integer) RETURNS bigint STABLE LANGUAGE sql AS 'SELECT count(*) FROM customers WHERE id >= min_id'");
    let role = format!("{}_reader", db.name);
    db.sql(&format!(
        "CREATE ROLE \"{role}\" LOGIN PASSWORD '{}'",
        crate::common::CANARY
    ));
    let url = db.url().replacen("schemawatch@", &format!("{role}@"), 1);
    let sb = Sandbox::new();
    let cfg = sb.config_arg();
    let config = |uses: &str| {
        sb.write_config(&format!(
            "[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.db\"\nkind = \"postgres\"\nurl = \"{url}\"\nca_file = \"{}\"\npassword = \"${{{}}}\"\n{uses}",
            db.cluster.ca.display(),
            crate::common::TOKEN_VAR,
        ));
    };
    config("");
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    assert_eq!(only_outcome(&check)["action"], "registered", "{check}");
    config("uses = [\"public.customers\", \"public.customer_count(min_id integer)\"]\n");
    sb.run(&["config", "check", "--config", &cfg])
        .assert_code(0);
    for typo in [
        "customers",
        "public.customer",
        "public.customer_count(integer)",
    ] {
        config(&format!("uses = [\"public.customers\", \"{typo}\"]\n"));
        let run = sb.run(&["config", "check", "--config", &cfg]);
        assert_eq!(run.code, 2, "{typo}: {}", run.describe());
        assert!(run.stderr_text().contains(typo), "{}", run.describe());
    }
}

/// A pin file is a uses file: its `tool:WATCH/NAME` ids, those of `--watch` or of the only
/// watch it names; a pin naming several watches without `--watch` is exit 2.
#[test]
fn a_pin_file_is_a_uses_file_of_one_watch() {
    let sb = Sandbox::new();
    let mut small = old_doc();
    for path in ["/owners", "/orders", "/stores/{id}"] {
        small["paths"].as_object_mut().unwrap().remove(path);
    }
    let (full, small) = (
        write(&sb, "full.json", &old_doc()),
        write(&sb, "small.json", &small),
    );
    sb.write_config(&format!("[storage]\npath = \"registry.sqlite3\"\n\n[[watch]]\nname = \"acme.full\"\nkind = \"openapi\"\npath = \"{full}\"\n\n[[watch]]\nname = \"acme.small\"\nkind = \"openapi\"\npath = \"{small}\"\n"));
    let cfg = sb.config_arg();
    sb.check(&[]).0.assert_code(0);
    let capture = |watches: &[&str]| {
        let mut args = vec!["pin", "capture", "--config", cfg.as_str()];
        for w in watches {
            args.extend(["--watch", w]);
        }
        let run = sb.run(&args);
        run.assert_code(0);
        run.stdout_text()
    };
    let one = sb.write_file("one.pin.json", capture(&["acme.small"]).as_bytes());
    let both = sb.write_file("both.pin.json", capture(&[]).as_bytes());
    let (one, both) = (one.to_string_lossy(), both.to_string_lossy());
    let (o, n) = (
        write(&sb, "old.json", &old_doc()),
        write(&sb, "new.json", &new_doc()),
    );
    let verdict = |extra: &[&str]| {
        let mut args = vec!["diff", o.as_str(), n.as_str(), "--json"];
        args.extend_from_slice(extra);
        let run = sb.run(&args);
        assert_eq!(run.code, 0, "{extra:?}: {}", run.describe());
        run.json()["compatibility"].as_str().unwrap().to_string()
    };
    // Unscoped, the new write endpoint is security_review; acme.small uses listPets only, so
    // both it and the Order change are out of its scope; acme.full uses listOrders (breaking).
    assert_eq!(verdict(&["--uses", &one]), "compatible");
    assert_eq!(verdict(&[]), "security_review");
    let run = sb.run(&["diff", &o, &n, "--uses", &both]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(run.stderr_text().contains("--watch"), "{}", run.describe());
    assert_eq!(
        verdict(&["--config", &cfg, "--watch", "acme.small", "--uses", &both]),
        "compatible"
    );
    assert_eq!(
        verdict(&["--config", &cfg, "--watch", "acme.full", "--uses", &both]),
        "breaking"
    );
}
