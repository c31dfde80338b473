//! Whole small answers from the hub, retried through transient failures: a git-stored
//! file (config, tokenizer config, index) or a byte range of a shard (its header).
//!
//! Owns: [`fetch_bytes`]. Must not: hold more than the asked-for bytes in memory, or
//! accept a 206 for another range than the one asked for.

use std::time::Duration;

use super::context::Context;
use super::response::{classify, Answer, Verdict};
use crate::error::{StoreError, StoreResult};
use crate::hub::api::{describe, tls_failure};
use crate::hub::RepoFile;
use crate::retry::{retry_after, Backoff};

/// Bytes `start .. start + len` of `file` (the whole file for `start = 0, len = size`).
pub async fn fetch_bytes(ctx: &Context, file: &RepoFile, start: u64, len: u64) -> StoreResult<Vec<u8>> {
    let url = ctx.hub.file_url(&ctx.opts.repo, &ctx.commit, &file.path);
    let mut backoff = Backoff::new(ctx.opts.backoff_base, ctx.opts.backoff_cap);
    loop {
        let (reason, wait) = match once(ctx, &url, file, start, len).await? {
            Ok(bytes) => return Ok(bytes),
            Err(why) => why,
        };
        ctx.wait_to_retry(&file.path, reason, &mut backoff, wait).await?;
    }
}

type Transient = (String, Option<Duration>);

async fn once(
    ctx: &Context,
    url: &str,
    file: &RepoFile,
    start: u64,
    len: u64,
) -> StoreResult<Result<Vec<u8>, Transient>> {
    let whole = start == 0 && len == file.size;
    let last = (start + len).saturating_sub(1);
    let sent = tokio::select! {
        _ = ctx.stop.cancelled() => return Err(StoreError::Stopped),
        r = tokio::time::timeout(ctx.opts.stall_timeout, async {
            if whole { ctx.hub.get_whole(url).await } else { ctx.hub.get_range(url, start, Some(last)).await }
        }) => r,
    };
    let mut resp = match sent {
        Err(_) => return Ok(Err((format!("no answer in {:?}", ctx.opts.stall_timeout), None))),
        Ok(Err(e)) => match tls_failure(url, &e) {
            Some(fatal) => return Err(fatal),
            None => return Ok(Err((describe(&e), None))),
        },
        Ok(Ok(r)) => r,
    };
    let h = |n| resp.headers().get(n).and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok());
    let status = resp.status().as_u16();
    let content_range = h(reqwest::header::CONTENT_RANGE).map(str::to_string);
    let answer = Answer {
        status,
        content_range: None,
        content_type: h(reqwest::header::CONTENT_TYPE),
        retry_after: h(reqwest::header::RETRY_AFTER).and_then(|v| retry_after(v, std::time::SystemTime::now())),
        from_hub: ctx.hub.is_hub_host(resp.url()),
    };
    // A range with an end is not what `classify` checks (it expects ranges to the end of
    // the file), so a 206 is checked here and everything else goes through `classify`.
    let skip = if status == 206 && !whole {
        let expected = format!("bytes {start}-{last}/{}", file.size);
        if content_range.as_deref().map(str::trim) != Some(expected.as_str()) {
            return Ok(Err((format!("206 with Content-Range {content_range:?}, expected {expected:?}"), None)));
        }
        0
    } else {
        match classify(&answer, 0, file.size) {
            Verdict::Body { start: 0 } => start,
            Verdict::Body { .. } | Verdict::AlreadyComplete | Verdict::Restart { .. } => {
                return Ok(Err((format!("unexpected HTTP {status}"), None)))
            }
            Verdict::Retry { reason, retry_after } => return Ok(Err((reason, retry_after))),
            Verdict::ReResolve { reason } => return Ok(Err((reason, None))),
            Verdict::Fatal { status: 401 | 403, .. } => {
                return Err(StoreError::Denied {
                    url: url.into(),
                    status,
                    token_path: ctx.hub.settings().token_path.clone(),
                })
            }
            Verdict::Fatal { status: 404, .. } => return Err(StoreError::NotFound { url: url.into() }),
            Verdict::Fatal { status, reason } => {
                return Err(StoreError::Http { url: url.into(), status, message: reason })
            }
        }
    };
    read_span(ctx, &mut resp, skip, len).await
}

/// Skips `skip` bytes of the body and returns the next `len`.
async fn read_span(
    ctx: &Context,
    resp: &mut reqwest::Response,
    mut skip: u64,
    len: u64,
) -> StoreResult<Result<Vec<u8>, Transient>> {
    let cap = usize::try_from(len)
        .map_err(|_| StoreError::Network { url: resp.url().to_string(), message: "range too large".into() })?;
    let mut out = Vec::with_capacity(cap.min(64 << 20));
    while out.len() < cap {
        let next = tokio::select! {
            _ = ctx.stop.cancelled() => return Err(StoreError::Stopped),
            r = tokio::time::timeout(ctx.opts.stall_timeout, resp.chunk()) => r,
        };
        let mut bytes = match next {
            Err(_) => return Ok(Err(("no data: reconnecting".into(), None))),
            Ok(Err(e)) => return Ok(Err((describe(&e), None))),
            Ok(Ok(None)) => return Ok(Err((format!("the answer ended after {} of {len} bytes", out.len()), None))),
            Ok(Ok(Some(b))) => b,
        };
        if skip > 0 {
            let n = (bytes.len() as u64).min(skip);
            skip -= n;
            bytes = bytes.slice(n as usize..);
        }
        let take = bytes.len().min(cap - out.len());
        out.extend_from_slice(&bytes[..take]);
    }
    Ok(Ok(out))
}
