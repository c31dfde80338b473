//! Checking files already on disk against the pinned hashes: the in-place hash that
//! adoption, a restart after a crash (DL-21) and `k3 verify` use, reading with the page
//! cache dropped behind it so a 1.56 TB check does not evict everything else.
//!
//! Owns: [`hash_file`], [`verify_store`] (each also `_until` a stop request), [`VerifyReport`].
//! Must not: call a file verified unless every byte was hashed.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use k3_io::segment_sums::{SegmentCrcs, SegmentPlan};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::download::layout::StoreLayout;
use crate::download::manifest::{Manifest, ManifestStore, VerifiedRecord};
use crate::download::small::git_blob_id;
use crate::error::{StoreError, StoreResult};
use crate::hub::{FileHash, RepoFile};

const READ_BLOCK: usize = 8 << 20;

/// The hash of `path` in the form `hash` names (hex), with `progress(bytes)` after each
/// block; `None` when the file's size is not `expected_size`.
pub fn hash_file(
    path: &Path,
    hash: &FileHash,
    expected_size: u64,
    progress: &mut dyn FnMut(u64),
) -> StoreResult<Option<String>> {
    hash_file_until(path, hash, expected_size, progress, &|| false)
}

/// [`hash_file`] that ends with [`StoreError::Stopped`] at the first block after `stop()`
/// says so (a verify of a 1.56 TB store can be stopped within one 8 MiB read).
pub fn hash_file_until(
    path: &Path,
    hash: &FileHash,
    expected_size: u64,
    progress: &mut dyn FnMut(u64),
    stop: &dyn Fn() -> bool,
) -> StoreResult<Option<String>> {
    hash_file_observed(path, hash, expected_size, (progress, &mut |_| {}), stop)
}

/// What sees every block of a file being hashed, in order.
type Observe<'a> = dyn FnMut(&[u8]) + 'a;

/// [`hash_file_until`] handing every block, in order, to `observe` as well.
fn hash_file_observed(
    path: &Path,
    hash: &FileHash,
    expected_size: u64,
    (progress, observe): (&mut dyn FnMut(u64), &mut Observe<'_>),
    stop: &dyn Fn() -> bool,
) -> StoreResult<Option<String>> {
    let mut f = File::open(path).map_err(|e| StoreError::io(path, e))?;
    let len = f.metadata().map_err(|e| StoreError::io(path, e))?.len();
    if len != expected_size {
        return Ok(None);
    }
    if let FileHash::GitBlob(_) = hash {
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(|e| StoreError::io(path, e))?;
        return Ok(Some(git_blob_id(&bytes)));
    }
    let mut h = Sha256::new();
    let mut buf = vec![0u8; READ_BLOCK];
    let mut done = 0u64;
    loop {
        if stop() {
            return Err(StoreError::Stopped);
        }
        let n = f.read(&mut buf).map_err(|e| StoreError::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        observe(&buf[..n]);
        done += n as u64;
        k3_io::os::drop_cached(&f, 0, done);
        progress(n as u64);
    }
    if done != expected_size {
        return Ok(None);
    }
    Ok(Some(hex::encode(h.finalize())))
}

/// [`file_matches`] that, for a shard, also computes its segment CRC32Cs
/// (`k3_io::segment_sums`) from the same read, for the pack.
pub fn file_matches_summing(
    path: &Path,
    file: &RepoFile,
    progress: &mut dyn FnMut(u64),
) -> StoreResult<(bool, Option<SegmentCrcs>)> {
    let plan = file.is_shard().then(|| SegmentPlan::of_file(path).ok()).flatten();
    let mut segments = plan.map(|p| SegmentCrcs::new(Arc::new(p)));
    let mut observe = |bytes: &[u8]| {
        if let Some(s) = &mut segments {
            s.update(bytes);
        }
    };
    let got = hash_file_observed(path, &file.hash, file.size, (progress, &mut observe), &|| false)?;
    let matches = got.as_deref() == Some(file.hash.etag());
    Ok((matches, segments.filter(|_| matches)))
}

/// Whether `path` holds exactly `file` (size and hash).
pub fn file_matches(path: &Path, file: &RepoFile, progress: &mut dyn FnMut(u64)) -> StoreResult<bool> {
    Ok(hash_file(path, &file.hash, file.size, progress)?.as_deref() == Some(file.hash.etag()))
}

#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    pub store: std::path::PathBuf,
    pub commit: String,
    pub files: usize,
    pub bytes: u64,
    /// Files missing, of the wrong size, or whose hash does not match.
    pub bad: Vec<BadFile>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BadFile {
    pub path: String,
    pub problem: String,
}

/// Re-hashes every file of the store's manifest; refreshes the verified records of the
/// good ones and clears those of the bad.
pub fn verify_store(store: &Path, progress: &mut dyn FnMut(&str, u64)) -> StoreResult<VerifyReport> {
    verify_store_until(store, progress, &|| false)
}

/// [`verify_store`] that ends with [`StoreError::Stopped`] soon after `stop()` says so; the
/// file being hashed then keeps the record it had (nothing is marked verified unhashed).
pub fn verify_store_until(
    store: &Path,
    progress: &mut dyn FnMut(&str, u64),
    stop: &dyn Fn() -> bool,
) -> StoreResult<VerifyReport> {
    let layout = StoreLayout::new(store);
    let manifest = Manifest::load(&layout.manifest())?.ok_or_else(|| StoreError::BadManifest {
        path: layout.manifest(),
        detail: "no manifest: this folder was not downloaded or adopted by k3".into(),
    })?;
    let files: Vec<RepoFile> = manifest.files.iter().map(|f| f.file.clone()).collect();
    let records = ManifestStore::create(layout.manifest(), &manifest.repo, &manifest.commit, &files, Some(&manifest))?;
    let mut bad = Vec::new();
    for file in &files {
        let path = layout.file(&file.path);
        let problem = match hash_file_until(&path, &file.hash, file.size, &mut |n| progress(&file.path, n), stop) {
            Err(StoreError::Stopped) => return Err(StoreError::Stopped),
            Ok(Some(got)) if got == file.hash.etag() => None,
            Ok(Some(got)) => Some(format!("hash {got}, expected {}", file.hash.etag())),
            Ok(None) => Some(format!("not {} bytes", file.size)),
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Some("missing".into())
            }
            Err(e) => Some(e.to_string()),
        };
        let record = match problem {
            None => Some(VerifiedRecord::of(&path).map_err(|e| StoreError::io(&path, e))?),
            Some(_) => None,
        };
        records.set_verified(&file.path, record)?;
        if let Some(problem) = problem {
            bad.push(BadFile { path: file.path.clone(), problem });
        }
    }
    Ok(VerifyReport {
        store: store.to_path_buf(),
        commit: manifest.commit,
        files: files.len(),
        bytes: files.iter().map(|f| f.size).sum(),
        bad,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_stop_request_ends_the_hash_within_one_block_and_never_yields_a_hash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shard");
        let size = 3 * READ_BLOCK as u64 + 5;
        std::fs::write(&path, vec![7u8; size as usize]).unwrap();
        let hash = FileHash::Sha256(String::new());
        let whole = hash_file(&path, &hash, size, &mut |_| {}).unwrap();
        assert_eq!(whole.map(|h| h.len()), Some(64), "the full hash without a stop");
        let blocks = Cell::new(0);
        let got = hash_file_until(&path, &hash, size, &mut |_| blocks.set(blocks.get() + 1), &|| blocks.get() >= 2);
        assert!(matches!(got, Err(StoreError::Stopped)), "{got:?}");
        assert_eq!(blocks.get(), 2, "stopped at the first block after the request");
    }
}
