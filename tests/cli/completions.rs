//! Shell completions (`schemawatch completions bash|zsh|fish`, clap_complete) and the man pages
//! (`schemawatch man [--dir DIR]`, clap_mangen) are generated from the command-line definition:
//! both cover every subcommand, nested ones included, and the flags of `diff`.
//!

use crate::common::Sandbox;

/// The subcommands `schemawatch PATH... --help` lists under "Commands:" (`help` left out).
fn subcommands(sb: &Sandbox, path: &[&str]) -> Vec<String> {
    let mut args = path.to_vec();
    args.push("--help");
    let run = sb.run(&args);
    run.assert_code(0);
    let text = run.stdout_text();
    let mut names = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.trim_end() == "Commands:" {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if line.trim().is_empty() {
            break;
        }
        // A command starts at two spaces; wrapped descriptions are indented further.
        if let Some(rest) = line.strip_prefix("  ") {
            if !rest.starts_with(' ') {
                let name = rest.split_whitespace().next().unwrap_or_default();
                if name != "help" {
                    names.push(name.to_string());
                }
            }
        }
    }
    names
}

/// Every command path: `["run"]`, `["pending"]`, `["pending", "accept"]`, ...
fn command_paths(sb: &Sandbox) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut queue: Vec<Vec<String>> = subcommands(sb, &[])
        .into_iter()
        .map(|name| vec![name])
        .collect();
    while let Some(path) = queue.pop() {
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        for sub in subcommands(sb, &refs) {
            let mut child = path.clone();
            child.push(sub);
            queue.push(child);
        }
        out.push(path);
    }
    out.sort();
    out
}

/// `word` occurs with no letter, digit, `-` or `_` on either side.
fn has_word(text: &str, word: &str) -> bool {
    let is_part = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_part) && !after.is_some_and(is_part)
    })
}

#[test]
fn the_help_lists_the_commands_this_test_walks() {
    let sb = Sandbox::new();
    let paths = command_paths(&sb);
    // A guard on the parser above: the walk must see the known commands, nested ones too.
    for expected in [
        &["run"][..],
        &["diff"][..],
        &["pending", "accept"][..],
        &["notify", "list"][..],
        &["completions"][..],
        &["man"][..],
    ] {
        assert!(
            paths.iter().any(|p| p == expected),
            "{expected:?} not found in {paths:?}"
        );
    }
}

#[test]
fn completions_cover_every_subcommand_for_each_shell() {
    let sb = Sandbox::new();
    let paths = command_paths(&sb);
    for shell in ["bash", "zsh", "fish"] {
        let run = sb.run(&["completions", shell]);
        run.assert_code(0);
        let script = run.stdout_text();
        for path in &paths {
            let name = path.last().unwrap();
            assert!(
                has_word(&script, name),
                "{shell} completion lacks {}",
                path.join(" ")
            );
        }
        for flag in ["against", "fail-on", "accept", "format"] {
            // fish names a long option `-l NAME`; bash and zsh spell `--NAME`.
            let spelled = if shell == "fish" {
                format!("-l {flag}")
            } else {
                format!("--{flag}")
            };
            assert!(
                script.contains(&spelled),
                "{shell} completion lacks diff {spelled}"
            );
        }
    }
    sb.run(&["completions", "tcsh"]).assert_code(2);
}

#[test]
fn the_bash_completion_loads_in_bash() {
    let sb = Sandbox::new();
    let run = sb.run(&["completions", "bash"]);
    run.assert_code(0);
    let file = sb.write_file("schemawatch.bash", &run.stdout);
    let out = std::process::Command::new("bash")
        .args([
            "--norc",
            "--noprofile",
            "-c",
            "source \"$1\" && complete -p schemawatch",
        ])
        .arg("bash")
        .arg(&file)
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("schemawatch"));
}

#[test]
fn man_pages_cover_every_subcommand() {
    let sb = Sandbox::new();
    let paths = command_paths(&sb);
    // To stdout: the top page, listing every top-level command.
    let run = sb.run(&["man"]);
    run.assert_code(0);
    let page = run.stdout_text();
    assert!(
        page.contains(".TH schemawatch 1") || page.contains(".TH SCHEMAWATCH 1"),
        "{page}"
    );
    for path in paths.iter().filter(|p| p.len() == 1) {
        // roff escapes '-' as '\-'; clap_mangen lists a subcommand as `schemawatch\-NAME(1)`.
        let name = path[0].replace('-', "\\-");
        assert!(
            page.contains(&format!("\\-{name}(")) || has_word(&page, &name),
            "schemawatch(1) lacks {}",
            path[0]
        );
    }
    // With --dir: one page per command, nested ones included.
    let dir = sb.path("man");
    let dir_arg = dir.to_string_lossy().into_owned();
    sb.run(&["man", "--dir", &dir_arg]).assert_code(0);
    assert!(dir.join("schemawatch.1").is_file());
    for path in &paths {
        let file = dir.join(format!("schemawatch-{}.1", path.join("-")));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(text.contains(".TH "), "{}", file.display());
    }
}
