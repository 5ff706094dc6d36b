//! Many watches from the command line (issue 17): `include = [...]` watch files checked by
//! `config check` and read by every command, and `status --status` filtering.

use crate::common::*;

fn watch(name: &str, path: &str) -> String {
    format!("[[watch]]\nname = \"{name}\"\nkind = \"openapi\"\npath = \"{path}\"\n\n")
}

#[test]
fn config_check_validates_every_included_file() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("watches.d/team")).unwrap();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_file(
        "watches.d/b.toml",
        watch("inc.b", "../pets.json").as_bytes(),
    );
    sb.write_file(
        "watches.d/a.toml",
        watch("inc.a", "../pets.json").as_bytes(),
    );
    sb.write_file(
        "watches.d/team/c.toml",
        watch("inc.c", "../../pets.json").as_bytes(),
    );
    sb.write_config(&format!(
        "include = [\"watches.d/*.toml\", \"watches.d/*/*.toml\"]\n\n{}",
        watch("main.pets", "pets.json")
    ));
    let config = sb.config_arg();
    let ok = sb.run(&["config", "check", "--config", &config]);
    ok.assert_code(0);
    assert!(
        ok.stdout_text()
            .contains("ok (4 watches, 3 included files, registry"),
        "{}",
        ok.describe()
    );
    // Every command reads them: main file first, then the included files in path order;
    // relative paths resolve against each included file's folder.
    let (run, check) = sb.check(&[]);
    run.assert_code(0);
    let watches: Vec<&str> = check["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            assert_eq!(o["action"], "registered", "{o}");
            o["watch"].as_str().unwrap()
        })
        .collect();
    assert_eq!(watches, ["main.pets", "inc.a", "inc.b", "inc.c"]);

    // An included file holds [[watch]] tables only: the error names the file and the line.
    sb.write_file(
        "watches.d/b.toml",
        format!(
            "{}[daemon]\nmax_concurrency = 2\n",
            watch("inc.b", "../pets.json")
        )
        .as_bytes(),
    );
    let bad = sb.run(&["config", "check", "--config", &config]);
    bad.assert_code(2);
    let err = bad.stderr_text();
    assert!(
        err.contains("b.toml") && err.contains("line 6"),
        "{}",
        bad.describe()
    );

    // A duplicate name across files names both places, each with its file and line.
    sb.write_file(
        "watches.d/b.toml",
        format!("\n{}", watch("inc.a", "x.json")).as_bytes(),
    );
    let dup = sb.run(&["config", "check", "--config", &config]);
    dup.assert_code(2);
    let err = dup.stderr_text();
    assert!(
        err.contains("b.toml: line 3")
            && err.contains("duplicate watch name")
            && err.contains("a.toml, line 2"),
        "{}",
        dup.describe()
    );
}

#[test]
fn status_filters_by_status() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(&format!(
        "{}{}{}",
        watch("st.ok", "pets.json"),
        watch("st.gone", "missing.json"),
        watch("st.ok2", "pets.json")
    ));
    let (run, _) = sb.check(&[]);
    run.assert_code(1);
    let config = sb.config_arg();
    let errors = sb.run(&["status", "--config", &config, "--status", "error", "--json"]);
    errors.assert_code(0);
    let json = errors.json();
    let rows = json["watches"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{json}");
    assert_eq!(rows[0]["watch"], "st.gone");
    assert!(json["registry_version"].is_i64());
    let registered = sb.run(&["status", "--config", &config, "--status", "registered"]);
    registered.assert_code(0);
    let text = registered.stdout_text();
    assert!(
        text.contains("st.ok") && text.contains("st.ok2") && !text.contains("st.gone"),
        "{text}"
    );
    let none = sb.run(&[
        "status",
        "--config",
        &config,
        "--status",
        "pending_review",
        "--json",
    ]);
    assert_eq!(none.json()["watches"], serde_json::json!([]));
    let bad = sb.run(&["status", "--config", &config, "--status", "broken"]);
    bad.assert_code(2);
    assert!(
        bad.stderr_text().contains("pending_review"),
        "{}",
        bad.describe()
    );
}
