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

fn read_secret_file(path: PathBuf) -> Result<String, SecretError> {
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(error) => return Err(SecretError::File { path, error }),
    };
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
    fn var_names() {
        assert!(is_var_name("TOKEN_2"));
        assert!(is_var_name("_x"));
        assert!(!is_var_name("2X"));
        assert!(!is_var_name("A-B"));
        assert!(!is_var_name(""));
    }
}
