//! Text a CI runner cannot read as a command (docs/reliability.md H30).
//!
//! A CI runner reads a job's stdout and stderr line by line and acts on some lines: GitHub
//! Actions on a line that starts with `::` once leading whitespace is trimmed (`::error …::`,
//! `::add-mask::`, `::stop-commands::`) and on the legacy `##[command …]` anywhere in a line;
//! GitLab on section markers (`section_start:TS:NAME` followed by CR and `ESC[0K`). Both split
//! lines at LF and at a lone CR. Provider text (descriptions, names, error bodies) reaches
//! every output, so everything the binary prints passes through one of these two functions:
//!
//! - [`inert_text`] for human-readable text and error messages: C0/C1 controls other than TAB
//!   and LF are written as visible escapes (`\u{1b}`), so no CR starts a line and no section
//!   marker forms; a line whose first non-blank characters are `::` gets a `\` before them;
//!   `##[` becomes `#\#[`.
//! - [`inert_json`] for JSON text: serde already escapes controls and no line of its output
//!   starts inside a string, so only `##[` is rewritten, as `#\u0023[`, which is the same
//!   string to a JSON reader.
//!
//! Pure: no I/O.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a line (without its terminator) would start a GitHub workflow command.
fn starts_command(line: &str) -> bool {
    line.trim_start().starts_with("::")
}

/// Whether `text` needs any rewriting by [`inert_text_with`].
fn needs_rewriting(text: &str, escape_controls: bool) -> bool {
    text.contains("##[")
        || text.split('\n').any(starts_command)
        || text
            .chars()
            .any(|c| is_control(c) && (escape_controls || c != '\u{1b}'))
}

/// C0 and C1 controls other than TAB and LF (CR included: a runner ends a line at it).
fn is_control(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n') || c == '\u{2028}' || c == '\u{2029}'
}

/// Human-readable text (any number of lines) that no CI runner reads as a command.
pub fn inert_text(text: &str) -> Cow<'_, str> {
    inert_text_with(text, true)
}

/// [`inert_text`], leaving ESC alone when `escape_controls` is false (coloured log lines on a
/// terminal, where no runner reads them); CR and the other controls are still escaped.
pub fn inert_text_with(text: &str, escape_controls: bool) -> Cow<'_, str> {
    if !needs_rewriting(text, escape_controls) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut escaped = String::with_capacity(line.len());
        for c in line.chars() {
            if is_control(c) && (escape_controls || c != '\u{1b}') {
                let _ = write!(escaped, "\\u{{{:x}}}", c as u32);
            } else {
                escaped.push(c);
            }
        }
        if starts_command(&escaped) {
            let blank = escaped.len() - escaped.trim_start().len();
            escaped.insert(blank, '\\');
        }
        out.push_str(&escaped.replace("##[", "#\\#["));
    }
    Cow::Owned(out)
}

/// JSON text (as serde prints it, compact or pretty) that no CI runner reads as a command.
/// The value is unchanged: `#\u0023[` reads back as `##[`.
pub fn inert_json(text: &str) -> Cow<'_, str> {
    if text.contains("##[") {
        Cow::Owned(text.replace("##[", "#\\u0023["))
    } else {
        Cow::Borrowed(text)
    }
}

/// Whether some line of `text` would be read as a command by a GitHub or GitLab runner
/// (lines split at LF and CR). For tests and assertions.
pub fn has_command_line(text: &str) -> bool {
    text.split(['\n', '\r'])
        .any(|line| starts_command(line) || line.contains("##[") || line.contains("\u{1b}[0K"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORGED: &str = "ok\n::error file=a,line=1::forged\n  ::add-mask::secret\r::stop-commands::tok\nx ##[set-output name=a;]b\n\u{1b}[0Ksection_start:1:evil\r\u{1b}[0Kt";

    #[test]
    fn text_never_starts_a_command() {
        let out = inert_text(FORGED);
        assert!(has_command_line(FORGED));
        assert!(!has_command_line(&out), "{out}");
        assert!(out.contains("\\::error file=a"), "{out}");
        assert!(out.contains("  \\::add-mask::secret\\u{d}"), "{out}");
        assert!(out.contains("x #\\#[set-output"), "{out}");
        assert_eq!(inert_text("plain\ntext: a::b"), "plain\ntext: a::b");
        assert!(matches!(inert_text("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_keeps_its_value() {
        let value = serde_json::json!({"m": FORGED, "list": ["::error::x", "##[x]"]});
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            let out = inert_json(&text);
            assert!(!has_command_line(&out), "{out}");
            let back: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(back, value);
        }
    }
}
