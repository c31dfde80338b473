//! The download: a Hugging Face repository at a pinned commit into a store folder that
//! survives kills, crashes, full drives and every protocol lie of RELIABILITY §2.3, and
//! marks nothing verified that was not hashed in full.
//!
//! Owns: [`download`] (the whole run) and its pieces. Layout, from the outside in:
//! `options` and `events` (the API) → this file (pin, list, plan, preflight, schedule) →
//! `fetch` (one LFS file) / `small` (one git file) / `header` (a shard's header first) →
//! `writer` → `partial` → `journal` (durability), with `response` (what an answer means),
//! `ranged` (small ranges), `space`, `lock`, `manifest`, `layout`, `progress`, `context`
//! and `failpoint` (the kill tests' crash points) beside them.
//! Must not: fetch anything from another commit than the pinned one, or start before the
//! space check passed.

pub mod chunk_buf;
pub mod context;
pub mod events;
pub mod failpoint;
pub mod fetch;
pub mod header;
pub mod hf_cache;
pub mod journal;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod options;
pub mod partial;
pub mod progress;
pub mod ranged;
pub mod response;
pub mod shortfall;
pub mod small;
pub mod space;
pub mod writer;

use std::sync::Arc;

use k3_io::segment_sums::SegmentCrcs;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use events::{DownloadEvent, EventSink, FileState, ProgressSnapshot};
pub use options::DownloadOptions;

use context::Context;
use layout::StoreLayout;
use lock::StoreLock;
use manifest::{Manifest, ManifestStore};
use progress::{run_ticker, Tracker};
use space::Need;

use crate::durable::create_dirs;
use crate::error::{StoreError, StoreResult};
use crate::hub::names::is_commit;
use crate::hub::{FileHash, HubClient, RepoFile};
use crate::retry::Backoff;
use crate::verify::file_matches_summing;

/// What a finished download holds.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DownloadSummary {
    pub commit: String,
    pub files: usize,
    pub total_bytes: u64,
}

/// Downloads `opts.repo` at `opts.revision` into `opts.store` until every file is
/// verified, `stop` is cancelled (`Err(Stopped)`, partials kept) or a file fails for good.
pub async fn download(
    opts: DownloadOptions,
    hub: HubClient,
    events: EventSink,
    stop: CancellationToken,
) -> StoreResult<DownloadSummary> {
    let layout = StoreLayout::new(&opts.store);
    check_file_system(layout.root(), &events)?;
    create_dirs(&layout.k3_dir())?;
    let _lock = StoreLock::acquire(&layout)?;
    let old = Manifest::load(&layout.manifest())?.filter(|m| m.repo == opts.repo);
    let notice = |url: &str, reason: &str, wait: std::time::Duration| {
        events(DownloadEvent::Retrying {
            path: url.into(),
            reason: reason.into(),
            attempt: 0,
            wait_seconds: wait.as_secs_f64(),
        })
    };
    let mut backoff = Backoff::new(opts.backoff_base, opts.backoff_cap);
    let commit = pin(&opts, &hub, old.as_ref(), &mut backoff, &stop, &notice).await?;
    let files = hub.list_files(&opts.repo, &commit, &mut backoff, &stop, &notice).await?;
    let manifest = Arc::new(ManifestStore::create(layout.manifest(), &opts.repo, &commit, &files, old.as_ref())?);
    let snapshot = manifest.snapshot();
    let done: Vec<bool> = files.iter().map(|f| snapshot.is_verified(f, &layout.file(&f.path))).collect();
    let kept = kept_bytes(&layout, &files, &done);
    let total_bytes: u64 = files.iter().map(|f| f.size).sum();
    events(DownloadEvent::Pinned {
        repo: opts.repo.clone(),
        commit: commit.clone(),
        files: files.len(),
        total_bytes,
        kept_bytes: kept,
    });
    preflight(&opts, &layout, total_bytes, kept, &events)?;

    let tracker = Arc::new(Tracker::new(&files.iter().map(|f| f.size).collect::<Vec<_>>()));
    for (i, f) in files.iter().enumerate() {
        if done[i] {
            tracker.set_have(i, f.size);
        }
        let state = if done[i] { FileState::Verified } else { FileState::Queued };
        events(DownloadEvent::FileState { path: f.path.clone(), state, detail: None });
    }
    let ticker_stop = CancellationToken::new();
    let ticker = tokio::spawn(run_ticker(tracker.clone(), events.clone(), opts.progress_interval, ticker_stop.clone()));
    let ctx = Arc::new(Context {
        hub,
        commit: commit.clone(),
        layout,
        opts,
        events: events.clone(),
        stop,
        tracker,
        manifest,
    });
    let result = fetch_all(&ctx, &files, &done).await;
    ticker_stop.cancel();
    let _ = ticker.await;
    result?;
    events(DownloadEvent::Complete { commit: commit.clone(), files: files.len(), total_bytes });
    Ok(DownloadSummary { commit, files: files.len(), total_bytes })
}

/// The commit to fetch: the store's pinned one when it has one (DL-13: the pinned commit
/// wins over a branch that moved), else the revision resolved now.
async fn pin(
    opts: &DownloadOptions,
    hub: &HubClient,
    old: Option<&Manifest>,
    backoff: &mut Backoff,
    stop: &CancellationToken,
    notice: crate::hub::api::RetryNotice<'_>,
) -> StoreResult<String> {
    let requested = opts.revision.as_str();
    match old {
        Some(m) if is_commit(requested) && requested != m.commit => Err(StoreError::CommitMismatch {
            store: opts.store.clone(),
            pinned: m.commit.clone(),
            requested: requested.into(),
            resolved: requested.into(),
        }),
        Some(m) => Ok(m.commit.clone()),
        None if is_commit(requested) => Ok(requested.into()),
        None => hub.pin_commit(&opts.repo, requested, backoff, stop, notice).await,
    }
}

/// Bytes already kept: verified files and the durable part of partials.
fn kept_bytes(layout: &StoreLayout, files: &[RepoFile], done: &[bool]) -> u64 {
    files
        .iter()
        .zip(done)
        .map(|(f, &d)| {
            if d {
                f.size
            } else {
                std::fs::metadata(layout.partial(&f.path)).map(|m| m.len().min(f.size)).unwrap_or(0)
            }
        })
        .sum()
}

/// Refuses to start when the store's drive (and the trunk's, when another) lacks room
/// for what is left + the trunk + 1% (DL-17).
fn preflight(
    opts: &DownloadOptions,
    layout: &StoreLayout,
    total: u64,
    kept: u64,
    events: &EventSink,
) -> StoreResult<()> {
    let store_dev = space::device_of(layout.root())?;
    let trunk_dir = opts.trunk_dir.clone().unwrap_or_else(|| layout.default_trunk());
    let trunk_probe = trunk_dir
        .ancestors()
        .find(|p| p.exists())
        .map(|p| p.to_path_buf())
        .unwrap_or_else(|| layout.root().to_path_buf());
    let same_drive = space::device_of(&trunk_probe)? == store_dev;
    let mut need = Need { checkpoint: total.saturating_sub(kept), trunk: 0, margin: total / 100 };
    if same_drive {
        need.trunk = opts.trunk_bytes;
    } else if opts.trunk_bytes > 0 {
        let trunk_need = Need { checkpoint: 0, trunk: opts.trunk_bytes, margin: 0 };
        events(DownloadEvent::SpaceChecked {
            dir: trunk_probe.clone(),
            need: trunk_need.clone(),
            free: space::free_bytes(&trunk_probe)?,
        });
        space::check(&trunk_probe, trunk_need)?;
    }
    events(DownloadEvent::SpaceChecked {
        dir: layout.root().to_path_buf(),
        need: need.clone(),
        free: space::free_bytes(layout.root())?,
    });
    space::check(layout.root(), need)
}

/// FAT refused (no file over 4 GiB: a shard is ~17 GB), read-only refused, a network file
/// system warned about (its locks and syncs are not to be trusted: DL-19).
fn check_file_system(dir: &std::path::Path, events: &EventSink) -> StoreResult<()> {
    let Some(mount) = crate::doctor::drives::mount_of_dir(dir) else { return Ok(()) };
    let refuse = |reason: String| Err(StoreError::UnsuitableDrive { dir: dir.to_path_buf(), reason });
    if crate::doctor::mounts::is_fat(&mount.fs_type) {
        return refuse(format!(
            "it is on a {} (FAT) file system, which cannot hold files over 4 GiB, and shards are about 17 GB",
            mount.fs_type
        ));
    }
    if mount.read_only() {
        return refuse(format!("{} is mounted read-only", mount.mount_point.display()));
    }
    if crate::doctor::mounts::is_network_fs(&mount.fs_type) {
        events(DownloadEvent::Notice {
            path: dir.display().to_string(),
            message: format!("this is a network file system ({}): downloads work, but locks and syncs there are not trustworthy, and streaming from it will be slow", mount.fs_type),
        });
    }
    Ok(())
}

/// Small files first (one at a time), then `config.json` checked, then the shards,
/// `jobs` at a time; a file that fails for good does not stop the others.
async fn fetch_all(ctx: &Arc<Context>, files: &[RepoFile], done: &[bool]) -> StoreResult<()> {
    let mut failed = Vec::new();
    for (i, f) in files.iter().enumerate().filter(|(i, f)| !done[*i] && !f.is_shard()) {
        match fetch_one(ctx, i, f).await {
            Err(StoreError::Stopped) => return Err(StoreError::Stopped),
            Err(e) => failed.push((f.path.clone(), e)),
            Ok(()) => {}
        }
    }
    check_config(ctx, files)?;
    let permits = Arc::new(Semaphore::new(ctx.opts.jobs.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, f) in files.iter().enumerate().filter(|(i, f)| !done[*i] && f.is_shard()) {
        let (ctx, f, permits) = (ctx.clone(), f.clone(), permits.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let result = fetch_one(&ctx, i, &f).await;
            (f.path, result)
        });
    }
    let mut stopped = false;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((_, Ok(()))) => {}
            Ok((_, Err(StoreError::Stopped))) => stopped = true,
            Ok((path, Err(e))) => failed.push((path, e)),
            Err(e) => {
                failed.push(("(task)".into(), StoreError::io(ctx.layout.root(), std::io::Error::other(e.to_string()))))
            }
        }
    }
    if stopped {
        return Err(StoreError::Stopped);
    }
    if !failed.is_empty() {
        return Err(StoreError::FilesFailed { failed, total: files.len() });
    }
    Ok(())
}

/// One file: adopt it if it is already there and right, else fetch it.
async fn fetch_one(ctx: &Arc<Context>, idx: usize, f: &RepoFile) -> StoreResult<()> {
    ctx.tracker.started();
    let result = adopt_or_fetch(ctx, idx, f).await;
    ctx.tracker.finished();
    if let Err(e) = &result {
        if !matches!(e, StoreError::Stopped) {
            ctx.file_state(&f.path, FileState::Failed, Some(e.to_string()));
        }
    }
    result
}

async fn adopt_or_fetch(ctx: &Arc<Context>, idx: usize, f: &RepoFile) -> StoreResult<()> {
    let dest = ctx.layout.file(&f.path);
    if dest.is_file() {
        ctx.file_state(&f.path, FileState::Verifying, Some("already on disk: hashing it in place".into()));
        let (path, file) = (dest.clone(), f.clone());
        let (matches, segments) = ctx.blocking(move || file_matches_summing(&path, &file, &mut |_| {})).await?;
        if matches {
            ctx.tracker.set_have(idx, f.size);
            return ctx.record_verified(f, segments).await;
        }
        ctx.notice(&f.path, "the copy on disk does not match the pinned hash; downloading it".into());
    } else if let Some(blob) = hf_cache::cached_blob(&ctx.hub.settings().hub_cache, &ctx.opts.repo, &ctx.commit, f) {
        if let Some(segments) = adopt_cached(ctx, f, &blob, &dest).await? {
            ctx.tracker.set_have(idx, f.size);
            return ctx.record_verified(f, segments).await;
        }
    }
    match &f.hash {
        FileHash::GitBlob(id) => small::fetch_git_file(ctx, f, id).await,
        FileHash::Sha256(sha) => {
            let plan = if f.is_shard() { Some(header::check_remote_header(ctx, f).await?) } else { None };
            fetch::fetch_lfs(ctx, idx, f, sha, plan).await
        }
    }
}

/// Hashes the Hugging Face cache's `blob` in place and, when it is `f`, links it into the
/// store at `dest`; `Some` (with a shard's segment sums) when it did.
async fn adopt_cached(
    ctx: &Arc<Context>,
    f: &RepoFile,
    blob: &std::path::Path,
    dest: &std::path::Path,
) -> StoreResult<Option<Option<SegmentCrcs>>> {
    ctx.file_state(
        &f.path,
        FileState::Verifying,
        Some(format!("found in the Hugging Face cache ({}): hashing it in place", blob.display())),
    );
    let (path, file) = (blob.to_path_buf(), f.clone());
    let (matches, segments) = ctx.blocking(move || file_matches_summing(&path, &file, &mut |_| {})).await?;
    if !matches {
        ctx.notice(
            &f.path,
            format!("the Hugging Face cache's copy {} does not match the pinned hash; downloading it", blob.display()),
        );
        return Ok(None);
    }
    let (blob, dest) = (blob.to_path_buf(), dest.to_path_buf());
    ctx.blocking(move || {
        let dir = dest.parent().unwrap_or(std::path::Path::new("."));
        create_dirs(dir)?;
        link_file(&blob, &dest).map_err(|e| StoreError::io(&dest, e))?;
        crate::durable::fsync_dir(dir)
    })
    .await?;
    ctx.notice(&f.path, "adopted from the Hugging Face cache (linked, not copied)".into());
    Ok(Some(segments))
}

/// `config.json`, once fetched, must be a Kimi K3 config before any shard is fetched.
fn check_config(ctx: &Context, files: &[RepoFile]) -> StoreResult<()> {
    if !files.iter().any(|f| f.path == "config.json") {
        return Ok(());
    }
    k3_io::config::ModelConfig::load(&ctx.layout.file("config.json")).map(|_| ()).map_err(StoreError::BadConfig)
}

/// Puts a link to `blob` at `dest`: a symbolic link on Unix; on Windows a symbolic link
/// where the user may make one (developer mode or an administrator), else a hard link
/// (the Hugging Face cache and the store on one volume), as the hub's own client does.
fn link_file(blob: &std::path::Path, dest: &std::path::Path) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::symlink(blob, dest);
    #[cfg(windows)]
    return std::os::windows::fs::symlink_file(blob, dest).or_else(|_| std::fs::hard_link(blob, dest));
}
