//! Adopting a copy the Hugging Face tools already made (PRODUCT.md §4.2): the cache's
//! `models--{owner}--{name}/snapshots/{commit}/{file}` → `blobs/{sha256}` layout. A file
//! found there with the pinned size and hash is verified in place and linked into the
//! store (a symbolic link to the blob): used, never copied.
//!
//! Owns: [`cached_blob`]. Must not: write inside the cache, or adopt a blob whose name is
//! not the pinned SHA-256 for an LFS file.

use std::path::{Path, PathBuf};

use crate::hub::{FileHash, RepoFile};

/// The cache's blob for `file` of `repo` at `commit`, when the cache has one.
pub fn cached_blob(hub_cache: &Path, repo: &str, commit: &str, file: &RepoFile) -> Option<PathBuf> {
    let folder = hub_cache.join(format!("models--{}", repo.replace('/', "--")));
    let mut snapshot = folder.join("snapshots").join(commit);
    for part in file.path.split('/') {
        snapshot.push(part);
    }
    let blob = std::fs::canonicalize(&snapshot).ok()?;
    if !blob.starts_with(std::fs::canonicalize(folder.join("blobs")).ok()?) {
        return None;
    }
    let named_right = match &file.hash {
        FileHash::Sha256(sha) => blob.file_name().is_some_and(|n| n == sha.as_str()),
        FileHash::GitBlob(_) => true,
    };
    let sized_right = std::fs::metadata(&blob).is_ok_and(|m| m.is_file() && m.len() == file.size);
    (named_right && sized_right).then_some(blob)
}
