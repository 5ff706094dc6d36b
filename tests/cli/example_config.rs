//! The config the README's first command runs (`config/example.toml`), copied out of the
//! checkout as a user would copy it: it validates, one `check` registers both example schemas
//! into a registry beside the copied config, and a second `check` finds them unchanged.

use crate::common::Sandbox;
use std::path::Path;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        // A registry left by someone running the daemon in the checkout is not part of it.
        if name == "state" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn the_shipped_example_config_checks_from_a_copy() {
    let sb = Sandbox::new();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let copy = sb.path("config");
    copy_tree(&shipped, &copy);
    let config = copy.join("example.toml");
    let config = config.to_str().unwrap();

    sb.run(&["config", "check", "--config", config])
        .assert_code(0);

    let first = sb.run(&["check", "--config", config, "--json"]);
    first.assert_code(0);
    let report = first.json();
    let mut actions: Vec<(String, String)> = report["outcomes"]
        .as_array()
        .expect("outcomes")
        .iter()
        .map(|o| {
            assert!(o["error"].is_null(), "{o}");
            (
                o["watch"].as_str().unwrap().to_string(),
                o["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    actions.sort();
    assert_eq!(
        actions,
        [
            ("example.inventory".to_string(), "registered".to_string()),
            ("example.pets".to_string(), "registered".to_string()),
        ],
        "{report}"
    );
    // `storage.path` is relative to the config file's folder: the copy's, not the checkout's.
    assert!(copy.join("state/registry.sqlite3").is_file());

    let second = sb.run(&["check", "--config", config, "--json"]);
    second.assert_code(0);
    for o in second.json()["outcomes"].as_array().unwrap() {
        assert_eq!(o["action"], "unchanged", "{o}");
    }
    let status = sb.run(&["status", "--config", config, "--json"]);
    status.assert_code(0);
    assert_eq!(status.json()["watches"].as_array().unwrap().len(), 2);
}
