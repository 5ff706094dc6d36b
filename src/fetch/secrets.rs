//! Expansion of `${VAR}` and `${file:PATH}` references in configured header values.
//!
//! Header values are credentials. Every error here names the variable or the file, never
//! a value or a piece of the template, so an error can be logged or shown as it is.

use std::io::Read;
use std::path::PathBuf;

/// Upper bound on a `${file:...}` secret; a header value is small, and `/dev/zero` must not
/// hang or exhaust memory.
pub const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// Why a header value template could not be expanded. Never carries a secret value.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// `${VAR}` names a variable that is not set.
    #[error("environment variable `{name}` is not set")]
    UnsetVar { name: String },
    /// `${VAR}` is set but not valid UTF-8, so it cannot be a header value.
    #[error("environment variable `{name}` is not valid UTF-8")]
    NotUnicodeVar { name: String },
    /// `${...}` holds something that is neither a variable name nor `file:PATH`.
    /// Only the position is reported: the template may hold a literal credential.
    #[error(
        "invalid `${{...}}` reference at byte {offset} (expected `${{NAME}}` or `${{file:PATH}}`)"
    )]
    InvalidReference { offset: usize },
    /// `${` without a closing `}`.
    #[error("unterminated `${{` at byte {offset}")]
    Unterminated { offset: usize },
    /// `${file:PATH}` could not be read.
    #[error("cannot read secret file {}: {error}", path.display())]
    File {
        path: PathBuf,
        error: std::io::Error,
    },
    /// `${file:PATH}` is larger than [`MAX_SECRET_FILE_BYTES`].
    #[error("secret file {} is larger than {limit} bytes", path.display())]
    FileTooLarge { path: PathBuf, limit: u64 },
    /// `${file:PATH}` is a FIFO, a device, a socket or a folder: only a regular file is read
    /// (a FIFO would block the read forever, docs/reliability.md H3).
    #[error("secret file {} is not a regular file", path.display())]
    NotRegular { path: PathBuf },
    /// Reading the secrets did not finish within the fetch's deadline.
    #[error("reading the secret files did not finish within {}", humantime::format_duration(*within))]
    Timeout { within: std::time::Duration },
    /// `${file:PATH}` is not valid UTF-8.
    #[error("secret file {} is not valid UTF-8", path.display())]
    FileNotUtf8 { path: PathBuf },
}

/// Expand `${VAR}` (environment) and `${file:PATH}` (file contents, trailing newline
/// trimmed) in a header value template. Text outside `${...}` is kept literally; expanded
/// values are inserted as they are and never expanded again.
pub fn expand_header_value(template: &str) -> Result<String, SecretError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    let mut consumed = 0usize;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let offset = consumed + start;
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or(SecretError::Unterminated { offset })?;
        let reference = &after[..end];
        out.push_str(&resolve(reference, offset)?);
        let used = start + 2 + end + 1;
        consumed += used;
        rest = &rest[used..];
    }
    out.push_str(rest);
    Ok(out)
}

fn resolve(reference: &str, offset: usize) -> Result<String, SecretError> {
    if let Some(path) = reference.strip_prefix("file:") {
        if path.is_empty() {
            return Err(SecretError::InvalidReference { offset });
        }
        return read_secret_file(PathBuf::from(path));
    }
    if !is_var_name(reference) {
        return Err(SecretError::InvalidReference { offset });
    }
    match std::env::var(reference) {
        Ok(value) => Ok(value),
        Err(std::env::VarError::NotPresent) => Err(SecretError::UnsetVar {
            name: reference.to_owned(),
        }),
        Err(std::env::VarError::NotUnicode(_)) => Err(SecretError::NotUnicodeVar {
            name: reference.to_owned(),
        }),
    }
}

/// Portable environment variable names only, so a typo such as `${ TOKEN}` fails loudly.
fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Rewrites every relative `${file:PATH}` of a template as an absolute one under `base` (the
/// config file's folder), like every other path of the config. Only paths are touched.
pub fn absolutize_file_refs(template: &str, base: &std::path::Path) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${file:") {
        let after = &rest[start + 7..];
        let Some(end) = after.find('}') else { break };
        let path = &after[..end];
        out.push_str(&rest[..start + 7]);
        if !path.is_empty() && std::path::Path::new(path).is_relative() {
            out.push_str(&base.join(path).to_string_lossy());
        } else {
            out.push_str(path);
        }
        out.push('}');
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Expands `templates` on a blocking thread, off the async runtime, within `within`.
pub async fn expand_all_within(
    templates: &std::collections::BTreeMap<String, String>,
    within: std::time::Duration,
) -> Result<std::collections::BTreeMap<String, String>, (String, SecretError)> {
    let owned = templates.clone();
    let task = tokio::task::spawn_blocking(move || {
        owned
            .into_iter()
            .map(|(name, template)| match expand_header_value(&template) {
                Ok(value) => Ok((name, value)),
                Err(e) => Err((name, e)),
            })
            .collect::<Result<std::collections::BTreeMap<_, _>, _>>()
    });
    let first = || templates.keys().next().cloned().unwrap_or_default();
    match tokio::time::timeout(within, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) | Err(_) => Err((first(), SecretError::Timeout { within })),
    }
}

fn read_secret_file(path: PathBuf) -> Result<String, SecretError> {
    // Non-blocking open: opening a FIFO for reading would otherwise wait for a writer.
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(&path)
    {
        Ok(file) => file,
        Err(error) => return Err(SecretError::File { path, error }),
    };
    match file.metadata() {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(SecretError::NotRegular { path }),
        Err(error) => return Err(SecretError::File { path, error }),
    }
    let mut bytes = Vec::new();
    if let Err(error) = file.take(MAX_SECRET_FILE_BYTES + 1).read_to_end(&mut bytes) {
        return Err(SecretError::File { path, error });
    }
    if bytes.len() as u64 > MAX_SECRET_FILE_BYTES {
        return Err(SecretError::FileTooLarge {
            path,
            limit: MAX_SECRET_FILE_BYTES,
        });
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(SecretError::FileNotUtf8 { path });
    };
    // Secret files are usually written with a trailing newline (`echo`, editors,
    // Kubernetes secrets), which would otherwise make the header value invalid.
    Ok(text.trim_end_matches(['\n', '\r']).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_text_is_kept() {
        let out = expand_header_value("plain $ value $NOTVAR {x}");
        assert_eq!(out.ok().as_deref(), Some("plain $ value $NOTVAR {x}"));
    }

    #[test]
    fn bad_references_report_position_only() {
        for (template, offset) in [("ab${", 2), ("x${ bad }", 1), ("${}", 0), ("${file:}", 0)] {
            let err = match expand_header_value(template) {
                Err(err) => err,
                Ok(_) => panic!("template {template:?} should fail"),
            };
            let msg = err.to_string();
            assert!(msg.contains(&format!("byte {offset}")), "{msg}");
            assert!(!msg.contains("bad"), "{msg}");
        }
    }

    #[test]
    fn relative_secret_files_resolve_against_the_config_folder() {
        let base = std::path::Path::new("/etc/sw");
        assert_eq!(
            absolutize_file_refs("Bearer ${file:tok} ${file:/abs} ${VAR} ${file:}", base),
            "Bearer ${file:/etc/sw/tok} ${file:/abs} ${VAR} ${file:}"
        );
        assert_eq!(absolutize_file_refs("x ${file:a", base), "x ${file:a");
    }

    #[test]
    fn var_names() {
        assert!(is_var_name("TOKEN_2"));
        assert!(is_var_name("_x"));
        assert!(!is_var_name("2X"));
        assert!(!is_var_name("A-B"));
        assert!(!is_var_name(""));
    }
}
