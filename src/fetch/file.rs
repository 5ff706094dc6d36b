//! `Source::Path` and `Source::Stdin`: a local schema file or standard input, under the same
//! size cap as a download.

use std::path::Path;

use tokio::io::AsyncReadExt;

use super::{FetchError, FetchOutcome, Validators};

/// Read at most `max_bytes`. The metadata check rejects a big regular file without reading
/// it; the bounded read still protects against files that grow or lie about their size
/// (FIFOs, `/dev/zero`, files under `/proc`).
pub(super) async fn read_capped(path: &Path, max_bytes: u64) -> Result<FetchOutcome, FetchError> {
    let io_error = |error| FetchError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = tokio::fs::File::open(path).await.map_err(io_error)?;
    let metadata = file.metadata().await.map_err(io_error)?;
    if metadata.is_file() && metadata.len() > max_bytes {
        return Err(FetchError::TooLarge { limit: max_bytes });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len().min(max_bytes)).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .await
        .map_err(io_error)?;
    whole(bytes, max_bytes)
}

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
