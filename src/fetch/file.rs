//! `Source::Path` and `Source::Stdin`: a local schema file or standard input, under the same
//! size cap as a download.

use std::path::Path;

use tokio::io::AsyncReadExt;

use super::{FetchError, FetchOutcome, Validators};

/// Read at most `max_bytes` of a regular file. The open is non-blocking and the type checked
/// before any read (docs/reliability.md H17): opening a FIFO for reading would otherwise wait
/// for a writer forever, on a blocking thread no deadline can stop. The metadata check rejects
/// a big regular file without reading it; the bounded read still protects against files that
/// grow or lie about their size (files under `/proc`), and the size only sizes the first
/// allocation up to [`FIRST_ALLOCATION`].
pub(super) async fn read_capped(path: &Path, max_bytes: u64) -> Result<FetchOutcome, FetchError> {
    let io_error = |error| FetchError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = tokio::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .await
        .map_err(io_error)?;
    let metadata = file.metadata().await.map_err(io_error)?;
    if !metadata.is_file() {
        return Err(FetchError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    if metadata.len() > max_bytes {
        return Err(FetchError::TooLarge { limit: max_bytes });
    }
    let first = metadata.len().min(max_bytes).min(FIRST_ALLOCATION);
    let mut bytes = Vec::with_capacity(usize::try_from(first).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .await
        .map_err(io_error)?;
    whole(bytes, max_bytes)
}

/// The most a file's stated size reserves before anything is read; past it the buffer grows
/// with what actually arrives.
const FIRST_ALLOCATION: u64 = 8 * 1024 * 1024;

/// Standard input, at most `max_bytes` (a blocking read on its own thread).
pub(super) async fn read_stdin_capped(max_bytes: u64) -> Result<FetchOutcome, FetchError> {
    let read = tokio::task::spawn_blocking(move || {
        use std::io::Read as _;
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map(|_| bytes)
    })
    .await
    .map_err(|e| FetchError::Stdin {
        error: std::io::Error::other(e.to_string()),
    })?;
    let bytes = read.map_err(|error| FetchError::Stdin { error })?;
    whole(bytes, max_bytes)
}

/// A document read with a cap of `max_bytes + 1`: whole, or too large.
pub(super) fn whole(bytes: Vec<u8>, max_bytes: u64) -> Result<FetchOutcome, FetchError> {
    if bytes.len() as u64 > max_bytes {
        return Err(FetchError::TooLarge { limit: max_bytes });
    }
    Ok(FetchOutcome::Body {
        bytes,
        validators: Validators::default(),
        final_url: None,
    })
}
