//! `Source::Git`: one blob of a git revision, read with `git cat-file blob -- <rev>:<path>` in
//! the repository of the working directory (a spawned `git`, no shell), under the same size
//! cap and deadline as a download.

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::{FetchError, FetchOutcome};

/// Most bytes of git's error output kept for the message.
const MAX_GIT_STDERR: u64 = 4 * 1024;

/// A file at a git revision. `rev` never starts with `-` (checked by [`GitBlob::new`]), and the
/// object name is passed after `--`, so neither can be taken for an option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitBlob {
    rev: String,
    path: String,
}

/// Why `git:REV:PATH` is not a usable blob name. Messages quote what was given.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GitNameError {
    #[error("the revision is empty (write git:REV:PATH, e.g. git:HEAD:openapi.json)")]
    EmptyRev,
    #[error("the revision {rev:?} starts with `-`, which git could take for an option")]
    OptionLikeRev { rev: String },
    #[error("the path is empty (write git:REV:PATH, e.g. git:HEAD:openapi.json)")]
    EmptyPath,
    #[error("the revision or path contains a NUL or newline character")]
    ControlCharacter,
}

impl GitBlob {
    /// A blob name; `path` is resolved the way git resolves `<rev>:<path>` (from the top of the
    /// work tree, or from the working directory when it starts with `./` or `../`).
    pub fn new(rev: &str, path: &str) -> Result<GitBlob, GitNameError> {
        if rev.is_empty() {
            return Err(GitNameError::EmptyRev);
        }
        if rev.starts_with('-') {
            return Err(GitNameError::OptionLikeRev { rev: rev.into() });
        }
        if path.is_empty() {
            return Err(GitNameError::EmptyPath);
        }
        if [rev, path].iter().any(|s| s.contains(['\0', '\n', '\r'])) {
            return Err(GitNameError::ControlCharacter);
        }
        Ok(GitBlob {
            rev: rev.into(),
            path: path.into(),
        })
    }

    pub fn rev(&self) -> &str {
        &self.rev
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// `<rev>:<path>`, the object name given to git.
    pub fn object(&self) -> String {
        format!("{}:{}", self.rev, self.path)
    }

    /// The same revision, another path from the top of the work tree.
    pub fn sibling(&self, top_relative: &str) -> GitBlob {
        GitBlob {
            rev: self.rev.clone(),
            path: top_relative.trim_start_matches('/').into(),
        }
    }

    /// The blob's path from the top of the work tree, as an absolute path (`/dir/file`), so
    /// relative references resolve inside the tree at the same revision.
    pub async fn tree_path(&self) -> Result<PathBuf, FetchError> {
        let relative = self.path.starts_with("./") || self.path.starts_with("../");
        let prefix = if relative {
            let out = run_git(&["rev-parse", "--show-prefix"], 4096, &self.object()).await?;
            String::from_utf8_lossy(&out).trim_end().to_owned()
        } else {
            String::new()
        };
        let mut absolute = PathBuf::from("/");
        for component in Path::new(&prefix).join(&self.path).components() {
            match component {
                Component::Normal(part) => absolute.push(part),
                Component::ParentDir => {
                    absolute.pop();
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        Ok(absolute)
    }
}

/// Reads the blob, at most `max_bytes`.
pub(super) async fn read_blob(blob: &GitBlob, max_bytes: u64) -> Result<FetchOutcome, FetchError> {
    let object = blob.object();
    let bytes = run_git(&["cat-file", "blob", "--", &object], max_bytes, &object).await?;
    super::file::whole(bytes, max_bytes)
}

/// Runs `git ARGS` in the working directory; its standard output, at most `max_bytes`.
async fn run_git(args: &[&str], max_bytes: u64, object: &str) -> Result<Vec<u8>, FetchError> {
    let failed = |detail: String| FetchError::Git {
        object: object.to_owned(),
        detail,
    };
    let mut command = Command::new("git");
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let (mut child, _tracked) = crate::process::spawn_tracked(&mut command)
        .map_err(|e| failed(format!("cannot run git: {e}")))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(failed("no pipes to git".into()));
    };
    // Drained apart from stdout: a git stopped at the cap must not block us on its stderr.
    let errors = tokio::spawn(async move {
        let mut err = Vec::new();
        let _ = stderr.take(MAX_GIT_STDERR).read_to_end(&mut err).await;
        err
    });
    let mut out = Vec::new();
    let read = stdout
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut out)
        .await;
    if read.is_err() || out.len() as u64 > max_bytes {
        let _ = child.start_kill();
        let _ = child.wait().await;
        return Err(match read {
            Err(e) => failed(format!("cannot read git's output: {e}")),
            Ok(_) => FetchError::TooLarge { limit: max_bytes },
        });
    }
    let status = child
        .wait()
        .await
        .map_err(|e| failed(format!("cannot wait for git: {e}")))?;
    if !status.success() {
        let err = errors.await.unwrap_or_default();
        let text = String::from_utf8_lossy(&err);
        let text = text.trim();
        return Err(failed(if text.is_empty() {
            format!("git exited with {status}")
        } else {
            text.chars().take(500).collect()
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(GitBlob::new("", "a"), Err(GitNameError::EmptyRev));
        assert_eq!(GitBlob::new("HEAD", ""), Err(GitNameError::EmptyPath));
        assert!(matches!(
            GitBlob::new("--output=x", "f"),
            Err(GitNameError::OptionLikeRev { .. })
        ));
        let blob = GitBlob::new("HEAD~1", "dir/a:b.json").unwrap();
        assert_eq!(blob.object(), "HEAD~1:dir/a:b.json");
        assert_eq!(blob.sibling("/dir/c.json").object(), "HEAD~1:dir/c.json");
    }
}
