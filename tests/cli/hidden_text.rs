//! Hidden model-facing text: a tool description that gains tag characters (U+E0000 block) is
//! `security_review`; text and Markdown show the characters as visible escapes, JSON keeps the
//! exact strings.

use crate::common::Sandbox;
use serde_json::json;

fn documents(sb: &Sandbox) -> (String, String) {
    let tools = |description: &str| {
        json!({"tools": [{"name": "read_note", "description": description,
                          "inputSchema": {"type": "object"}}]})
        .to_string()
    };
    let old = sb.write_file("old.json", tools("Read a note.").as_bytes());
    // "Read a note." followed by the invisible tag spelling of "AB".
    let new = sb.write_file(
        "new.json",
        tools("Read a note.\u{E0041}\u{E0042}").as_bytes(),
    );
    (
        old.to_string_lossy().into_owned(),
        new.to_string_lossy().into_owned(),
    )
}

#[test]
fn a_description_gaining_tag_characters_is_security_review_and_shown_escaped() {
    let sb = Sandbox::new();
    let (old, new) = documents(&sb);
    let base = ["diff", old.as_str(), new.as_str(), "--kind", "mcp"];

    let run = sb.run(&[&base[..], &["--json"]].concat());
    run.assert_code(0);
    let report = run.json();
    assert_eq!(report["compatibility"], "security_review");
    let hit = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["rule"] == "hidden-text-added")
        .expect("hidden-text-added reported");
    assert_eq!(hit["path"], "endpoints.read_note.description");
    assert_eq!(hit["severity"], "security");
    assert_eq!(hit["after"], "Read a note.\u{E0041}\u{E0042}");
    assert!(hit["message"]
        .as_str()
        .unwrap()
        .contains("U+E0041, U+E0042"));

    for format in [&[][..], &["--markdown"][..]] {
        let run = sb.run(&[&base[..], format].concat());
        run.assert_code(0);
        let out = run.stdout_text();
        assert!(out.contains("hidden-text-added"), "{out}");
        assert!(out.contains("\\u{E0041}\\u{E0042}"), "{out}");
        assert!(!out.contains('\u{E0041}'), "raw tag character in {out}");
    }
}
