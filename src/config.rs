//! The TOML configuration: storage, daemon settings, severity overrides and watches.
//! Unknown keys are errors that name the key and its line; relative paths resolve against the
//! config file's folder; `${VAR}` expands in `storage.path`. Header values are kept as templates
//! here and expanded only when a fetch needs them, so secrets never sit in this struct.

use crate::core::diff::rules::{self, SeverityOverrides};
use crate::core::model::{Kind, Severity};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub path: PathBuf,
    pub storage: Storage,
    pub daemon: Daemon,
    pub server: Server,
    pub severity: SeverityOverrides,
    pub watches: Vec<WatchConfig>,
}

#[derive(Debug, Clone)]
pub struct Storage {
    pub path: PathBuf,
    pub keep_versions: u32,
}

#[derive(Debug, Clone)]
pub struct Daemon {
    pub max_concurrency: usize,
    pub drain_timeout: Duration,
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone)]
pub struct Server {
    pub listen: String,
    pub admin_token_env: Option<String>,
}

/// Where a watch's document comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceConfig {
    Url(url::Url),
    Path(PathBuf),
    /// An MCP server over stdio: the program and its arguments, plus environment variables
    /// for the child (value templates: `${VAR}`, `${file:PATH}`; expanded at spawn time).
    Command {
        argv: Vec<String>,
        env: BTreeMap<String, String>,
    },
}

/// The identity of a stdio command: its argv (environment values may be secrets, so they are
/// not part of it).
pub fn command_identity(argv: &[String]) -> String {
    format!(
        "command:{}",
        serde_json::to_string(argv).unwrap_or_else(|_| argv.join(" "))
    )
}

/// What an OpenAPI watch does with external `$ref`s (`external_refs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExternalRefs {
    /// Fetch referenced documents on the root's origin (for a file: its folder and below).
    #[default]
    SameOrigin,
    /// Refuse any external `$ref` (an error outcome).
    None,
}

impl ExternalRefs {
    pub fn parse(text: &str) -> Option<ExternalRefs> {
        match text {
            "same-origin" => Some(ExternalRefs::SameOrigin),
            "none" => Some(ExternalRefs::None),
            _ => None,
        }
    }
}

pub use crate::mcp::McpResources;

#[derive(Debug, Clone)]
pub struct WatchConfig {
    pub name: String,
    pub kind: Kind,
    pub source: SourceConfig,
    pub interval: Duration,
    pub apply_compatible: bool,
    pub timeout: Duration,
    pub max_bytes: u64,
    pub ca_file: Option<PathBuf>,
    pub proxy: Option<String>,
    /// Header name → value template (`${VAR}`, `${file:PATH}`); never logged or stored.
    pub schema_headers: BTreeMap<String, String>,
    /// Global `[severity]` merged with this watch's `[watch.severity]`.
    pub severity: SeverityOverrides,
    /// OpenAPI external `$ref` policy (`external_refs`, default same-origin).
    pub external_refs: ExternalRefs,
    /// Which MCP resources are in the contract (`mcp_resources`, default templates).
    pub mcp_resources: McpResources,
    /// A surface classification file (`triage --classification` format): a new endpoint it does
    /// not classify is a security change.
    pub classification: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    storage: Option<RawStorage>,
    daemon: Option<RawDaemon>,
    server: Option<RawServer>,
    #[serde(default)]
    severity: BTreeMap<String, String>,
    #[serde(default)]
    watch: Vec<RawWatch>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStorage {
    path: Option<String>,
    keep_versions: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDaemon {
    max_concurrency: Option<usize>,
    drain_timeout: Option<String>,
    log_format: Option<LogFormat>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    listen: Option<String>,
    admin_token_env: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWatch {
    name: String,
    kind: String,
    url: Option<String>,
    path: Option<String>,
    command: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    interval: Option<String>,
    apply_compatible: Option<bool>,
    timeout: Option<String>,
    max_bytes: Option<toml::Value>,
    ca_file: Option<String>,
    proxy: Option<String>,
    external_refs: Option<String>,
    mcp_resources: Option<String>,
    classification: Option<String>,
    #[serde(default)]
    schema_headers: BTreeMap<String, String>,
    #[serde(default)]
    severity: BTreeMap<String, String>,
}

pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);
/// A watch's default `timeout` and `max_bytes` are those of every fetch (defined once there).
pub use crate::fetch::{DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT};

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(path, &text)
    }

    /// Parses config text; `path` locates relative paths and names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| invalid(describe_toml_error(text, &e)))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let resolve = |p: &str| -> Result<PathBuf, ConfigError> {
            let expanded = expand_env(p).map_err(|var| {
                invalid(format!(
                    "environment variable {var} is not set (used in a path)"
                ))
            })?;
            let p = PathBuf::from(expanded);
            Ok(if p.is_absolute() { p } else { base.join(p) })
        };

        let storage = raw.storage.unwrap_or(RawStorage {
            path: None,
            keep_versions: None,
        });
        let storage = Storage {
            path: resolve(storage.path.as_deref().unwrap_or("registry.sqlite3"))?,
            keep_versions: storage.keep_versions.unwrap_or(100).max(1),
        };
        let daemon = raw.daemon.unwrap_or(RawDaemon {
            max_concurrency: None,
            drain_timeout: None,
            log_format: None,
        });
        let daemon = Daemon {
            max_concurrency: daemon.max_concurrency.unwrap_or(4).max(1),
            drain_timeout: match daemon.drain_timeout {
                Some(t) => {
                    parse_duration(&t).map_err(|e| invalid(format!("daemon.drain_timeout: {e}")))?
                }
                None => Duration::from_secs(20),
            },
            log_format: daemon.log_format.unwrap_or(LogFormat::Text),
        };
        let server = raw.server.unwrap_or(RawServer {
            listen: None,
            admin_token_env: None,
        });
        let server = Server {
            listen: server.listen.unwrap_or_else(|| "127.0.0.1:9477".into()),
            admin_token_env: server.admin_token_env,
        };
        let global_severity =
            parse_overrides(&raw.severity).map_err(|m| invalid(format!("[severity]: {m}")))?;

        let mut names = BTreeSet::new();
        let mut watches = Vec::new();
        for (i, w) in raw.watch.into_iter().enumerate() {
            let at = format!("watch #{} ({:?})", i + 1, w.name);
            if !valid_watch_name(&w.name) {
                return Err(invalid(format!(
                    "{at}: name must be `namespace.name` of letters, digits, '-', '_' and '.'"
                )));
            }
            if !names.insert(w.name.clone()) {
                return Err(invalid(format!("{at}: duplicate watch name")));
            }
            let kind = Kind::parse(&w.kind).ok_or_else(|| {
                invalid(format!(
                    "{at}: unknown kind {:?} (expected one of openapi, openrpc, odata, graphql, mcp, optimade)",
                    w.kind
                ))
            })?;
            if w.command.is_some() && kind != Kind::Mcp {
                return Err(invalid(format!("{at}: `command` is only for kind \"mcp\"")));
            }
            if w.env.is_some() && w.command.is_none() {
                return Err(invalid(format!(
                    "{at}: `env` is only for an MCP `command` (stdio)"
                )));
            }
            let source = match (&w.url, &w.path) {
                (None, None) if w.command.is_some() => {
                    let argv = w.command.clone().unwrap_or_default();
                    if argv.first().is_none_or(|p| p.is_empty()) {
                        return Err(invalid(format!("{at}: `command` needs a program")));
                    }
                    SourceConfig::Command {
                        argv,
                        env: w.env.clone().unwrap_or_default(),
                    }
                }
                _ if w.command.is_some() => {
                    return Err(invalid(format!(
                        "{at}: set exactly one of `url`, `path` or `command`"
                    )))
                }
                (Some(u), None) => {
                    let url = url::Url::parse(u).map_err(|e| invalid(format!("{at}: url: {e}")))?;
                    if !matches!(url.scheme(), "http" | "https") {
                        return Err(invalid(format!("{at}: url must be http or https")));
                    }
                    SourceConfig::Url(url)
                }
                (None, Some(p)) => SourceConfig::Path(resolve(p)?),
                _ => return Err(invalid(format!("{at}: set exactly one of `url` or `path`"))),
            };
            let duration = |key: &str, v: &Option<String>, default: Duration| match v {
                Some(t) => parse_duration(t).map_err(|e| invalid(format!("{at}: {key}: {e}"))),
                None => Ok(default),
            };
            let mut severity = global_severity.clone();
            severity.extend(
                parse_overrides(&w.severity)
                    .map_err(|m| invalid(format!("{at}: [watch.severity]: {m}")))?,
            );
            for name in w.schema_headers.keys() {
                if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    return Err(invalid(format!(
                        "{at}: schema_headers: invalid header name {name:?}"
                    )));
                }
            }
            let external_refs = match &w.external_refs {
                None => ExternalRefs::default(),
                Some(_) if kind != Kind::Openapi => {
                    return Err(invalid(format!(
                        "{at}: external_refs is only for kind \"openapi\""
                    )))
                }
                Some(v) => ExternalRefs::parse(v).ok_or_else(|| {
                    invalid(format!(
                        "{at}: external_refs: unknown value {v:?} (expected \"same-origin\" or \"none\")"
                    ))
                })?,
            };
            let mcp_resources = match &w.mcp_resources {
                None => McpResources::default(),
                Some(_) if kind != Kind::Mcp => {
                    return Err(invalid(format!(
                        "{at}: mcp_resources is only for kind \"mcp\""
                    )))
                }
                Some(v) => McpResources::parse(v).ok_or_else(|| {
                    invalid(format!(
                        "{at}: mcp_resources: unknown value {v:?} (expected \"templates\", \"all\" or \"none\")"
                    ))
                })?,
            };
            watches.push(WatchConfig {
                external_refs,
                mcp_resources,
                classification: w.classification.as_deref().map(resolve).transpose()?,
                kind,
                source,
                interval: duration("interval", &w.interval, DEFAULT_INTERVAL)?,
                apply_compatible: w.apply_compatible.unwrap_or(true),
                timeout: duration("timeout", &w.timeout, DEFAULT_TIMEOUT)?,
                max_bytes: match &w.max_bytes {
                    None => DEFAULT_MAX_BYTES,
                    Some(v) => {
                        parse_size(v).map_err(|e| invalid(format!("{at}: max_bytes: {e}")))?
                    }
                },
                ca_file: w.ca_file.as_deref().map(resolve).transpose()?,
                proxy: w.proxy,
                schema_headers: w.schema_headers,
                severity,
                name: w.name,
            });
        }
        Ok(Config {
            path: path.to_path_buf(),
            storage,
            daemon,
            server,
            severity: global_severity,
            watches,
        })
    }

    pub fn watch(&self, name: &str) -> Option<&WatchConfig> {
        self.watches.iter().find(|w| w.name == name)
    }
}

fn valid_watch_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !name.starts_with('.')
        && !name.ends_with('.')
}

/// Checks `rule-id = "level"` overrides (config tables, `diff --severity`): every id must name
/// a rule (or one of its aliases), every level a severity.
pub fn parse_overrides(raw: &BTreeMap<String, String>) -> Result<SeverityOverrides, String> {
    let mut out = SeverityOverrides::new();
    for (id, level) in raw {
        if rules::find(id).is_none() {
            return Err(format!("unknown rule id {id:?} (see docs/rules.md)"));
        }
        let severity = Severity::parse(level).ok_or_else(|| {
            format!("rule {id}: unknown severity {level:?} (expected info, compatible, breaking or security)")
        })?;
        out.insert(id.clone(), severity);
    }
    Ok(out)
}

/// Parses a humantime duration such as `5m` or `30s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let d =
        humantime::parse_duration(text).map_err(|e| format!("{text:?} is not a duration ({e})"))?;
    if d.is_zero() {
        return Err(format!("{text:?} must be greater than zero"));
    }
    Ok(d)
}

/// Parses a byte size: an integer, or a string like `32MiB`, `500KB`, `1GiB`.
pub fn parse_size(value: &toml::Value) -> Result<u64, String> {
    match value {
        toml::Value::Integer(n) if *n > 0 => Ok(*n as u64),
        toml::Value::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (digits, unit) = s.split_at(split);
            let n: u64 = digits.parse().map_err(|_| format!("{s:?} is not a size"))?;
            let factor: u64 = match unit.trim() {
                "" | "B" => 1,
                "KB" => 1000,
                "KiB" => 1024,
                "MB" => 1_000_000,
                "MiB" => 1024 * 1024,
                "GB" => 1_000_000_000,
                "GiB" => 1024 * 1024 * 1024,
                other => {
                    return Err(format!(
                        "unknown size unit {other:?} (use B, KB, KiB, MB, MiB, GB, GiB)"
                    ))
                }
            };
            n.checked_mul(factor)
                .filter(|v| *v > 0)
                .ok_or_else(|| format!("{s:?} is out of range"))
        }
        _ => Err("expected a positive integer or a string like \"32MiB\"".into()),
    }
}

/// Expands `${VAR}` from the environment; returns the name of the first unset variable.
pub fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let var = &after[..end];
        out.push_str(&std::env::var(var).map_err(|_| var.to_string())?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A TOML error as `line N: message`, naming the key when there is one.
fn describe_toml_error(text: &str, err: &toml::de::Error) -> String {
    let message = err.message().trim().to_string();
    match err.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            let snippet: String = text[span.start.min(text.len())..span.end.min(text.len())]
                .chars()
                .take(60)
                .collect();
            format!("line {line}: {message} (at `{snippet}`)")
        }
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("/etc/sw/config.toml"), text)
    }

    #[test]
    fn defaults_and_relative_paths() {
        let c =
            parse("[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\npath = \"x.json\"\n").unwrap();
        assert_eq!(c.storage.path, PathBuf::from("/etc/sw/registry.sqlite3"));
        assert_eq!(c.storage.keep_versions, 100);
        let w = &c.watches[0];
        assert_eq!(w.source, SourceConfig::Path("/etc/sw/x.json".into()));
        assert!(w.apply_compatible);
        assert_eq!(
            (w.interval, w.max_bytes),
            (DEFAULT_INTERVAL, DEFAULT_MAX_BYTES)
        );
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let err = parse("[storage]\npath = \"r.db\"\nbogus = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3") && err.contains("bogus"), "{err}");
    }

    #[test]
    fn severity_overrides_are_checked() {
        let err = parse("[severity]\nnot-a-rule = \"info\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not-a-rule"), "{err}");
        let c = parse(
            "[severity]\nendpoint-removed = \"info\"\n[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\npath = \"x\"\n[watch.severity]\nrequest-enum-value-added = \"breaking\"\n",
        )
        .unwrap();
        assert_eq!(c.watches[0].severity.len(), 2);
    }

    #[test]
    fn mcp_command_sources() {
        let c = parse("[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\ncommand = [\"node\", \"server.js\"]\nenv = { TOKEN = \"${T}\" }\n").unwrap();
        match &c.watches[0].source {
            SourceConfig::Command { argv, env } => {
                assert_eq!(argv, &["node".to_string(), "server.js".to_string()]);
                assert_eq!(env.get("TOKEN").map(String::as_str), Some("${T}"));
                assert_eq!(command_identity(argv), r#"command:["node","server.js"]"#);
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            "[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\ncommand = [\"x\"]\n",
            "[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\ncommand = []\n",
            "[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\ncommand = [\"x\"]\nurl = \"http://127.0.0.1/mcp\"\n",
            "[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\nurl = \"http://127.0.0.1/mcp\"\nenv = { A = \"b\" }\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mcp_resources_policy() {
        let w = "[[watch]]\nname = \"a.b\"\nkind = \"mcp\"\ncommand = [\"srv\"]\n";
        assert_eq!(
            parse(w).unwrap().watches[0].mcp_resources,
            McpResources::Templates
        );
        for (text, want) in [
            ("all", McpResources::All),
            ("none", McpResources::None),
            ("templates", McpResources::Templates),
        ] {
            let c = parse(&format!("{w}mcp_resources = \"{text}\"\n")).unwrap();
            assert_eq!(c.watches[0].mcp_resources, want);
        }
        let err = parse(&format!("{w}mcp_resources = \"some\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("mcp_resources") && err.contains("some"),
            "{err}"
        );
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"openrpc\"\npath = \"x\"\nmcp_resources = \"all\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("mcp_resources"), "{err}");
    }

    #[test]
    fn external_refs_policy() {
        let w = "[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\npath = \"x\"\n";
        assert_eq!(
            parse(w).unwrap().watches[0].external_refs,
            ExternalRefs::SameOrigin
        );
        let none = parse(&format!("{w}external_refs = \"none\"\n")).unwrap();
        assert_eq!(none.watches[0].external_refs, ExternalRefs::None);
        let err = parse(&format!("{w}external_refs = \"everywhere\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("external_refs") && err.contains("everywhere"),
            "{err}"
        );
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"openrpc\"\npath = \"x\"\nexternal_refs = \"none\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("external_refs"), "{err}");
    }

    #[test]
    fn sizes_and_sources() {
        assert_eq!(
            parse_size(&toml::Value::String("32MiB".into())),
            Ok(32 << 20)
        );
        assert!(parse_size(&toml::Value::String("3 parsecs".into())).is_err());
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"openapi\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one of"), "{err}");
        let err = parse("[[watch]]\nname = \"a.b\"\nkind = \"soap\"\npath = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("soap"), "{err}");
    }
}
