//! The one grammar of a command-line argument that names a document:
//!
//! - `-`: standard input;
//! - `./…` or `/…`: a file path, whatever follows (so a file named `git:x` is `./git:x`);
//! - `http://…` / `https://…`: a URL;
//! - `git:REV:PATH`: the file PATH at revision REV of the working directory's repository;
//! - `cmd:<JSON argv>`: an MCP stdio server, e.g. `cmd:["npx","-y","server"]`;
//! - `sqlite:PATH`: a SQLite database file (for `--kind sqlite`, a plain path is one too);
//! - `postgresql://user@host:port/db` (or `postgres://`): a PostgreSQL database, never with a
//!   password in it (refused: it would show in `ps`);
//! - anything else: a file path.
//!
//! The prefix never implies the kind: `--kind` decides, and [`super::load`] refuses a source
//! that cannot serve it.

use super::Source;
use crate::fetch::{GitBlob, GitNameError};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Why an argument is not a usable source. Messages quote the argument, never an `--env` value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GrammarError {
    #[error("empty source (name a file, `-`, a URL, `git:REV:PATH` or `cmd:[...]`)")]
    Empty,
    #[error("{text}: not a URL: {reason}")]
    BadUrl { text: String, reason: String },
    #[error("{text}: expected git:REV:PATH (a file at a revision, e.g. git:HEAD:openapi.json)")]
    GitWithoutPath { text: String },
    #[error("{text}: {reason}")]
    Git { text: String, reason: GitNameError },
    #[error("{text}: expected cmd: followed by a JSON array of strings, the program first (e.g. cmd:[\"node\",\"server.js\"]): {reason}")]
    BadCommand { text: String, reason: String },
    #[error("{text}: expected sqlite:PATH (a SQLite database file)")]
    SqliteWithoutPath { text: String },
    #[error("{text}: {reason}")]
    Database {
        text: String,
        reason: super::postgres::UrlError,
    },
    #[error("standard input (`-`) can be read only once")]
    StdinTwice,
    #[error("--env {text}: expected NAME=VALUE with a name of letters, digits and `_`")]
    BadEnv { text: String },
    #[error("--env {name} is given more than once")]
    DuplicateEnv { name: String },
    #[error("--env is only for a `cmd:` source (an MCP stdio server)")]
    EnvWithoutCommand,
}

impl Source {
    /// Parses one command-line argument (see the module documentation).
    pub fn parse(text: &str) -> Result<Source, GrammarError> {
        if text.is_empty() {
            return Err(GrammarError::Empty);
        }
        if text == "-" {
            return Ok(Source::Stdin);
        }
        if text.starts_with("./") || text.starts_with('/') {
            return Ok(Source::Path(PathBuf::from(text)));
        }
        if let Some(rest) = text.strip_prefix("git:") {
            let (rev, path) = rest
                .split_once(':')
                .ok_or_else(|| GrammarError::GitWithoutPath { text: text.into() })?;
            let blob = GitBlob::new(rev, path).map_err(|reason| GrammarError::Git {
                text: text.into(),
                reason,
            })?;
            return Ok(Source::Git(blob));
        }
        if let Some(path) = text.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Err(GrammarError::SqliteWithoutPath { text: text.into() });
            }
            return Ok(Source::Sqlite(PathBuf::from(path)));
        }
        if let Some(rest) = text.strip_prefix("cmd:") {
            let bad = |reason: String| GrammarError::BadCommand {
                text: text.into(),
                reason,
            };
            let argv: Vec<String> = serde_json::from_str(rest).map_err(|e| bad(e.to_string()))?;
            if argv.first().is_none_or(|program| program.is_empty()) {
                return Err(bad("no program".into()));
            }
            return Ok(Source::Command {
                argv,
                env: BTreeMap::new(),
            });
        }
        let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
        if lower.starts_with("postgresql://") || lower.starts_with("postgres://") {
            let url = url::Url::parse(text).map_err(|_| GrammarError::Database {
                text: "a postgresql:// URL".into(),
                reason: super::postgres::UrlError::Incomplete,
            })?;
            // Quote the URL without its userinfo or any query value (`?password=` is refused
            // and must not be repeated, docs/reliability.md H32).
            super::postgres::parse_url(&url).map_err(|reason| GrammarError::Database {
                text: crate::fetch::redact_url(&url),
                reason,
            })?;
            return Ok(Source::Postgres(url));
        }
        if lower.starts_with("http://") || lower.starts_with("https://") {
            let url = url::Url::parse(text).map_err(|e| GrammarError::BadUrl {
                text: shown_argument(text),
                reason: e.to_string(),
            })?;
            return Ok(Source::Url(url));
        }
        Ok(Source::Path(PathBuf::from(text)))
    }
}

/// A command-line argument as it may be shown in an output or a message: a URL without its
/// userinfo and with every query value `[redacted]`, as watch URLs are shown
/// (docs/reliability.md H31); an unparsable URL cut before its query, its userinfo dropped.
/// Anything else as given.
pub fn shown_argument(text: &str) -> String {
    let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
    let is_url = ["http://", "https://", "postgresql://", "postgres://"]
        .iter()
        .any(|scheme| lower.starts_with(scheme));
    if !is_url {
        return text.to_string();
    }
    if let Ok(url) = url::Url::parse(text) {
        return crate::fetch::redact_url(&url);
    }
    let text = text.split(['?', '#']).next().unwrap_or_default();
    match text.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let rest = match rest[..authority_end].rfind('@') {
                Some(at) => &rest[at + 1..],
                None => rest,
            };
            format!("{scheme}://{rest}")
        }
        None => text.to_string(),
    }
}

/// Parses `--env NAME=VALUE` arguments. Values are templates like a watch's `env`
/// (`${VAR}`, `${file:PATH}`, expanded when the server is spawned).
pub fn parse_env(pairs: &[String]) -> Result<BTreeMap<String, String>, GrammarError> {
    let mut env = BTreeMap::new();
    for pair in pairs {
        let bad = || GrammarError::BadEnv {
            // The name only: the value may be a secret.
            text: pair.split('=').next().unwrap_or_default().to_owned(),
        };
        let (name, value) = pair.split_once('=').ok_or_else(bad)?;
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid || value.contains('\0') {
            return Err(bad());
        }
        if env.insert(name.to_owned(), value.to_owned()).is_some() {
            return Err(GrammarError::DuplicateEnv { name: name.into() });
        }
    }
    Ok(env)
}

/// Parses the document arguments of one command and its `--env` pairs: standard input at most
/// once, and `--env` only when some argument is a `cmd:` source (each gets all of them).
pub fn parse_arguments(texts: &[&str], env: &[String]) -> Result<Vec<Source>, GrammarError> {
    let env = parse_env(env)?;
    let mut sources = texts
        .iter()
        .map(|text| Source::parse(text))
        .collect::<Result<Vec<_>, _>>()?;
    if sources.iter().filter(|s| **s == Source::Stdin).count() > 1 {
        return Err(GrammarError::StdinTwice);
    }
    let mut has_command = false;
    for source in &mut sources {
        if let Source::Command { env: child, .. } = source {
            child.clone_from(&env);
            has_command = true;
        }
    }
    if !env.is_empty() && !has_command {
        return Err(GrammarError::EnvWithoutCommand);
    }
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Source {
        match Source::parse(text) {
            Ok(source) => source,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    #[test]
    fn every_form() {
        assert_eq!(parse("-"), Source::Stdin);
        assert_eq!(parse("spec.yaml"), Source::Path("spec.yaml".into()));
        assert_eq!(parse("./git:x"), Source::Path("./git:x".into()));
        assert_eq!(parse("/tmp/cmd:x"), Source::Path("/tmp/cmd:x".into()));
        assert_eq!(parse("file:///x"), Source::Path("file:///x".into()));
        assert!(matches!(parse("https://h/v1"), Source::Url(_)));
        assert_eq!(parse("sqlite:app.db"), Source::Sqlite("app.db".into()));
        assert!(matches!(
            parse("postgresql://app@db/shop"),
            Source::Postgres(_)
        ));
        let refused = Source::parse("postgresql://app:hunter2@db/shop").unwrap_err();
        assert!(!refused.to_string().contains("hunter2"), "{refused}");
        assert_eq!(parse("./sqlite:x"), Source::Path("./sqlite:x".into()));
        assert!(matches!(parse("HTTP://h/v1"), Source::Url(_)));
        match parse("git:HEAD~1:api/openapi.json") {
            Source::Git(blob) => assert_eq!(blob.object(), "HEAD~1:api/openapi.json"),
            other => panic!("{other:?}"),
        }
        match parse(r#"cmd:["npx","-y","@modelcontextprotocol/server-everything"]"#) {
            Source::Command { argv, env } => {
                assert_eq!(argv.len(), 3);
                assert!(env.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_forms_are_refused() {
        assert_eq!(Source::parse(""), Err(GrammarError::Empty));
        assert!(matches!(
            Source::parse("sqlite:"),
            Err(GrammarError::SqliteWithoutPath { .. })
        ));
        assert!(matches!(
            Source::parse("git:--output=x:f"),
            Err(GrammarError::Git {
                reason: GitNameError::OptionLikeRev { .. },
                ..
            })
        ));
        assert!(matches!(
            Source::parse("git:HEAD"),
            Err(GrammarError::GitWithoutPath { .. })
        ));
        for text in ["cmd:", "cmd:[]", "cmd:[\"\"]", "cmd:node", "cmd:[1]"] {
            assert!(
                matches!(Source::parse(text), Err(GrammarError::BadCommand { .. })),
                "{text}"
            );
        }
        assert!(matches!(
            Source::parse("http://"),
            Err(GrammarError::BadUrl { .. })
        ));
    }

    #[test]
    fn arguments_and_env() {
        let env = vec!["A=1".to_string(), "B_2=${file:/run/t}".to_string()];
        let sources = parse_arguments(&["cmd:[\"a\"]", "x.json"], &env).unwrap();
        match &sources[0] {
            Source::Command { env, .. } => assert_eq!(env.len(), 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_arguments(&["-", "-"], &[]),
            Err(GrammarError::StdinTwice)
        );
        assert_eq!(
            parse_arguments(&["a", "b"], &env),
            Err(GrammarError::EnvWithoutCommand)
        );
        let secret = "NAME SECRET=1".to_string();
        let error = parse_env(&[secret]).unwrap_err().to_string();
        assert!(!error.contains("SECRET=1"), "{error}");
        assert!(matches!(
            parse_env(&["A=1".into(), "A=2".into()]),
            Err(GrammarError::DuplicateEnv { .. })
        ));
        assert!(parse_env(&["NOVALUE".into()]).is_err());
    }
}
