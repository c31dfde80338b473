//! One LFS file from the pinned commit to a verified file at its final name: resume from
//! the journal, range GETs through every lie the network tells (RELIABILITY DL-04…16),
//! chunks made durable as they arrive with the SHA-256 computed on the way (no second
//! read), a full-drive pause, and the hash check before the rename.
//!
//! Owns: [`fetch_lfs`] and the retry loop of one file. Must not: append a body that does
//! not start at the durable end, keep bytes past the file's size, or rename a file whose
//! hash did not match (a mismatch re-downloads once, then stops with both hashes).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k3_io::segment_sums::SegmentPlan;

use super::chunk_buf::{chunk_end_target, ChunkBuf};
use super::context::Context;
use super::events::{DownloadEvent, FileState};
use super::partial::PartialFile;
use super::response::{classify, Answer, Verdict};
use super::space::free_bytes;
use super::writer::ChunkWriter;
use crate::error::{StoreError, StoreResult};
use crate::hub::api::{describe, tls_failure};
use crate::hub::RepoFile;
use crate::retry::{retry_after, Backoff};

/// Consecutive "expired URL" answers re-resolved before giving up.
const MAX_RERESOLVES: u32 = 5;

/// How one request ended.
enum AttemptEnd {
    Complete,
    Retry { reason: String, retry_after: Option<Duration> },
    ReResolve { reason: String },
    NoSpace { reason: String },
}

/// Fetches `file` (hash `sha256`) into the store, or returns why it cannot.
/// A shard's `plan` makes the download compute its segment CRC32Cs too, kept beside it
/// for the pack.
pub async fn fetch_lfs(
    ctx: &Context,
    idx: usize,
    file: &RepoFile,
    sha256: &str,
    plan: Option<Arc<SegmentPlan>>,
) -> StoreResult<()> {
    let mut mismatches = 0;
    loop {
        let part = ctx
            .blocking({
                let (layout, file, sha, commit) =
                    (ctx.layout.clone(), file.clone(), sha256.to_string(), ctx.commit.clone());
                let plan = plan.clone();
                move || {
                    let mut part = PartialFile::open(&layout, &file, &sha, &commit)?;
                    if let Some(plan) = plan {
                        part.track_segments(plan)?;
                    }
                    Ok(part)
                }
            })
            .await?;
        if part.durable_end() > 0 {
            ctx.notice(&file.path, format!("resuming at byte {} of {}", part.durable_end(), file.size));
        }
        ctx.tracker.set_have(idx, part.durable_end());
        ctx.file_state(&file.path, FileState::Downloading, None);
        let part = download_body(ctx, idx, file, ChunkWriter::new(part, ctx.opts.sync_bytes)).await?;
        ctx.file_state(&file.path, FileState::Verifying, None);
        let got = part.digest();
        if got == sha256 {
            let dest = ctx.layout.file(&file.path);
            let segments = part.segments();
            ctx.blocking(move || part.commit_to(&dest)).await?;
            return ctx.record_verified(file, segments).await;
        }
        mismatches += 1;
        ctx.blocking(move || part.discard()).await?;
        ctx.tracker.set_have(idx, 0);
        if mismatches >= 2 {
            return Err(StoreError::HashMismatch { path: file.path.clone(), expected: sha256.into(), got });
        }
        ctx.notice(
            &file.path,
            format!(
                "failed its integrity check (expected {}…, got {}…); re-downloading this file only ({} bytes)",
                &sha256[..8],
                &got[..8],
                file.size
            ),
        );
    }
}

/// Requests and writes until every byte of `file` is durable.
async fn download_body(ctx: &Context, idx: usize, file: &RepoFile, mut w: ChunkWriter) -> StoreResult<PartialFile> {
    let url = ctx.hub.file_url(&ctx.opts.repo, &ctx.commit, &file.path);
    let mut backoff = Backoff::new(ctx.opts.backoff_base, ctx.opts.backoff_cap);
    let mut reresolves = 0;
    loop {
        let before = w.end_with_in_flight();
        if before >= file.size {
            return w.into_part().await.map_err(|e| StoreError::io(ctx.layout.partial(&file.path), e));
        }
        let end = attempt(ctx, idx, file, &url, &mut w).await;
        // Settle the last write even when stopping, so it is journaled before we return.
        let settled = w.settle().await;
        let end = end?;
        if let Err(e) = settled {
            if is_no_space(&e) {
                wait_for_space(ctx, file, e.to_string()).await?;
                continue;
            }
            return Err(StoreError::io(ctx.layout.partial(&file.path), e));
        }
        let durable = w.end_with_in_flight();
        ctx.tracker.set_have(idx, durable);
        if durable > before {
            backoff.reset();
        }
        match end {
            AttemptEnd::Complete => {}
            AttemptEnd::NoSpace { reason } => wait_for_space(ctx, file, reason).await?,
            AttemptEnd::ReResolve { reason } => {
                reresolves = if durable > before { 1 } else { reresolves + 1 };
                if reresolves > MAX_RERESOLVES {
                    return Err(StoreError::Denied {
                        url,
                        status: 403,
                        token_path: ctx.hub.settings().token_path.clone(),
                    });
                }
                ctx.notice(&file.path, format!("{reason}; asking the hub for a fresh URL at byte {durable}"));
            }
            AttemptEnd::Retry { reason, retry_after } => {
                ctx.wait_to_retry(&file.path, reason, &mut backoff, retry_after).await?
            }
        }
    }
}

/// One GET from the durable end: check the answer, then stream the body into chunks.
async fn attempt(
    ctx: &Context,
    idx: usize,
    file: &RepoFile,
    url: &str,
    w: &mut ChunkWriter,
) -> StoreResult<AttemptEnd> {
    let offset = w.end_with_in_flight();
    let sent = tokio::select! {
        _ = ctx.stop.cancelled() => return Err(StoreError::Stopped),
        r = tokio::time::timeout(ctx.opts.stall_timeout, ctx.hub.get_range(url, offset, None)) => r,
    };
    let mut resp = match sent {
        Err(_) => {
            return Ok(AttemptEnd::Retry {
                reason: format!("no answer in {:?}", ctx.opts.stall_timeout),
                retry_after: None,
            })
        }
        Ok(Err(e)) => match tls_failure(url, &e) {
            Some(fatal) => return Err(fatal),
            None => return Ok(AttemptEnd::Retry { reason: describe(&e), retry_after: None }),
        },
        Ok(Ok(r)) => r,
    };
    let header = |name| resp.headers().get(name).and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok());
    let answer = Answer {
        status: resp.status().as_u16(),
        content_range: header(reqwest::header::CONTENT_RANGE),
        content_type: header(reqwest::header::CONTENT_TYPE),
        retry_after: header(reqwest::header::RETRY_AFTER).and_then(|v| retry_after(v, std::time::SystemTime::now())),
        from_hub: ctx.hub.is_hub_host(resp.url()),
    };
    let start = match classify(&answer, offset, file.size) {
        Verdict::Body { start } => start,
        Verdict::AlreadyComplete => return Ok(AttemptEnd::Complete),
        Verdict::Restart { reason } => {
            restart(ctx, file, w, &reason).await?;
            return Ok(AttemptEnd::Retry { reason, retry_after: None });
        }
        Verdict::Retry { reason, retry_after } => return Ok(AttemptEnd::Retry { reason, retry_after }),
        Verdict::ReResolve { reason } => return Ok(AttemptEnd::ReResolve { reason }),
        Verdict::Fatal { status, reason } => return Err(fatal(ctx, url, status, reason)),
    };
    if start != offset {
        restart(
            ctx,
            file,
            w,
            "the server ignored the Range request (HTTP 200); restarting this file from byte 0, never appending",
        )
        .await?;
    }
    stream_body(ctx, idx, file, &mut resp, start, w).await
}

async fn stream_body(
    ctx: &Context,
    idx: usize,
    file: &RepoFile,
    resp: &mut reqwest::Response,
    start: u64,
    w: &mut ChunkWriter,
) -> StoreResult<AttemptEnd> {
    let chunk = ctx.opts.chunk_bytes;
    let mut buf = ChunkBuf::new(chunk_end_target(start, file.size, chunk));
    let mut at = start;
    let (mut window_start, mut window_bytes) = (Instant::now(), 0u64);
    let end = loop {
        let next = tokio::select! {
            _ = ctx.stop.cancelled() => break None,
            r = tokio::time::timeout(ctx.opts.stall_timeout, resp.chunk()) => r,
        };
        let bytes = match next {
            Err(_) => break Some(retry(format!("no data for {:?}: reconnecting", ctx.opts.stall_timeout))),
            Ok(Err(e)) => {
                break Some(retry(format!("the connection failed at byte {at} of {}: {}", file.size, describe(&e))))
            }
            Ok(Ok(None)) if at == file.size => break Some(AttemptEnd::Complete),
            Ok(Ok(None)) => break Some(retry(format!("the connection closed at byte {at} of {}", file.size))),
            Ok(Ok(Some(bytes))) => bytes,
        };
        let room = usize::try_from(file.size - at).unwrap_or(usize::MAX);
        let take = bytes.len().min(room);
        let mut rest = &bytes[..take];
        while !rest.is_empty() {
            let pushed = buf.push(rest);
            rest = &rest[pushed..];
            at += pushed as u64;
            if buf.is_full() {
                match w.write(buf).await {
                    Ok(next) => buf = next,
                    Err(e) => return write_failed(ctx, file, e),
                }
                buf.reset(chunk_end_target(at, file.size, chunk));
            }
        }
        window_bytes += take as u64;
        ctx.tracker.add_received(take as u64);
        ctx.tracker.set_have(idx, at);
        if take < bytes.len() {
            ctx.notice(
                &file.path,
                format!("the server sent more than the file's {} bytes; stopped at its end", file.size),
            );
            break Some(AttemptEnd::Complete);
        }
        if at == file.size {
            // The body should end here; a server that goes on is flagged (DL-07).
            if let Ok(Ok(Some(more))) = tokio::time::timeout(Duration::from_millis(200), resp.chunk()).await {
                if !more.is_empty() {
                    ctx.notice(
                        &file.path,
                        format!("the server sent more than the file's {} bytes; stopped at its end", file.size),
                    );
                }
            }
            break Some(AttemptEnd::Complete);
        }
        if window_start.elapsed() >= ctx.opts.stall_timeout {
            if window_bytes < ctx.opts.min_window_bytes {
                break Some(retry(format!("only {window_bytes} bytes in {:?}: reconnecting", ctx.opts.stall_timeout)));
            }
            (window_start, window_bytes) = (Instant::now(), 0);
        }
    };
    // Keep the validated prefix: every byte received is made durable before the next try.
    if !buf.is_empty() {
        if let Err(e) = w.write(buf).await {
            return write_failed(ctx, file, e);
        }
    }
    end.ok_or(StoreError::Stopped)
}

fn retry(reason: String) -> AttemptEnd {
    AttemptEnd::Retry { reason, retry_after: None }
}

fn write_failed(ctx: &Context, file: &RepoFile, e: std::io::Error) -> StoreResult<AttemptEnd> {
    if is_no_space(&e) {
        return Ok(AttemptEnd::NoSpace { reason: e.to_string() });
    }
    Err(StoreError::io(ctx.layout.partial(&file.path), e))
}

async fn restart(ctx: &Context, file: &RepoFile, w: &mut ChunkWriter, reason: &str) -> StoreResult<()> {
    let part = w.restart().await.map_err(|e| StoreError::io(ctx.layout.partial(&file.path), e))?;
    if let Some(part) = part {
        part.restart()?;
    }
    w.restarted();
    ctx.notice(&file.path, reason.to_string());
    Ok(())
}

fn fatal(ctx: &Context, url: &str, status: u16, reason: String) -> StoreError {
    match status {
        401 | 403 => StoreError::Denied { url: url.into(), status, token_path: ctx.hub.settings().token_path.clone() },
        404 => StoreError::NotFound { url: url.into() },
        _ => StoreError::Http { url: url.into(), status, message: reason },
    }
}

/// Pauses until the store's drive has room for one more chunk (DL-17), then returns.
async fn wait_for_space(ctx: &Context, file: &RepoFile, reason: String) -> StoreResult<()> {
    let needed = ctx.opts.chunk_bytes as u64 + (1 << 20);
    let dir = ctx.layout.k3_dir();
    let mut announced = false;
    loop {
        let free = free_bytes(&dir)?;
        if free >= needed {
            if announced {
                ctx.notice(&file.path, format!("space is free again ({free} bytes): resuming"));
            }
            return Ok(());
        }
        if !announced {
            ctx.emit(DownloadEvent::Paused {
                path: file.path.clone(),
                reason: format!("the drive is full ({reason}); durable bytes are kept"),
                free,
                needed,
            });
            announced = true;
        }
        ctx.sleep(ctx.opts.space_poll).await?;
    }
}

fn is_no_space(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
}
