//! The store's own record (`.k3-desktop/manifest.json`): the pinned commit, every file
//! with its size and hash, and for each verified file the (inode, size, mtime) it had when
//! its hash matched, so a later open can tell the verified bytes are still the ones there
//! (RELIABILITY §1 "Nothing served unverified").
//!
//! Owns: [`Manifest`], [`VerifiedRecord`], [`ManifestStore`] (one writer, atomic saves).
//! Must not: record a file as verified before its hash matched and it sits at its final
//! name, or be written any way but `durable::write_atomic`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::durable::write_atomic;
use crate::error::{StoreError, StoreResult};
use crate::hub::RepoFile;

/// The manifest format this build writes and reads; another version is re-verified.
pub const MANIFEST_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub version: u32,
    pub repo: String,
    pub commit: String,
    pub files: Vec<ManifestFile>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ManifestFile {
    #[serde(flatten)]
    pub file: RepoFile,
    pub verified: Option<VerifiedRecord>,
}

pub use k3_io::provenance::VerifiedRecord;

impl Manifest {
    pub fn new(repo: &str, commit: &str, files: &[RepoFile]) -> Manifest {
        Manifest {
            version: MANIFEST_VERSION,
            repo: repo.into(),
            commit: commit.into(),
            files: files.iter().map(|f| ManifestFile { file: f.clone(), verified: None }).collect(),
        }
    }

    /// The manifest at `path`, `None` when there is none. A manifest of another version
    /// loses its verified records (every file is hashed again, DL-23).
    pub fn load(path: &Path) -> StoreResult<Option<Manifest>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io(path, e)),
        };
        #[derive(Deserialize)]
        struct Version {
            version: u32,
            repo: String,
            commit: String,
        }
        let bad = |detail: String| StoreError::BadManifest { path: path.to_path_buf(), detail };
        let head: Version = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if head.version != MANIFEST_VERSION {
            return Ok(Some(Manifest {
                version: MANIFEST_VERSION,
                repo: head.repo,
                commit: head.commit,
                files: Vec::new(),
            }));
        }
        serde_json::from_slice(&bytes).map(Some).map_err(|e| bad(e.to_string()))
    }

    pub fn entry(&self, path: &str) -> Option<&ManifestFile> {
        self.files.iter().find(|f| f.file.path == path)
    }

    /// Whether `file` is recorded verified with the same hash and still on disk as it was.
    pub fn is_verified(&self, file: &RepoFile, on_disk: &Path) -> bool {
        self.entry(&file.path).is_some_and(|e| e.file == *file && e.verified.is_some_and(|v| v.still_matches(on_disk)))
    }
}

/// The manifest of one running download, saved after every change.
pub struct ManifestStore {
    path: PathBuf,
    manifest: Mutex<Manifest>,
}

impl ManifestStore {
    /// Starts from `old`'s verified records for files whose hash is unchanged.
    pub fn create(
        path: PathBuf,
        repo: &str,
        commit: &str,
        files: &[RepoFile],
        old: Option<&Manifest>,
    ) -> StoreResult<ManifestStore> {
        let mut manifest = Manifest::new(repo, commit, files);
        if let Some(old) = old.filter(|o| o.commit == commit) {
            for f in &mut manifest.files {
                f.verified = old.entry(&f.file.path).filter(|o| o.file == f.file).and_then(|o| o.verified);
            }
        }
        write_atomic(&path, &to_json(&manifest)?)?;
        Ok(ManifestStore { path, manifest: Mutex::new(manifest) })
    }

    pub fn snapshot(&self) -> Manifest {
        self.lock().clone()
    }

    /// Records `repo_path` as verified with `record` (or clears it with `None`) and saves.
    pub fn set_verified(&self, repo_path: &str, record: Option<VerifiedRecord>) -> StoreResult<()> {
        let mut m = self.lock();
        if let Some(f) = m.files.iter_mut().find(|f| f.file.path == repo_path) {
            f.verified = record;
        }
        write_atomic(&self.path, &to_json(&m)?)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Manifest> {
        self.manifest.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn to_json(m: &Manifest) -> StoreResult<Vec<u8>> {
    serde_json::to_vec_pretty(m)
        .map_err(|e| StoreError::BadManifest { path: PathBuf::from("manifest.json"), detail: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::FileHash;

    /// The engine reads this file through `k3_io::provenance` to tie saved states to the
    /// shards' hashes: what the store writes, it must read.
    #[test]
    fn the_manifest_the_store_writes_names_each_verified_shards_hash_to_k3_io() {
        let root = std::env::temp_dir().join(format!("k3-manifest-provenance-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join(".k3-desktop")).unwrap();
        let sha = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";
        let file = RepoFile { path: "m-1.safetensors".into(), size: 3, hash: FileHash::Sha256(sha.into()) };
        std::fs::write(root.join(&file.path), b"foo").unwrap();
        let manifest = root.join(k3_io::provenance::STORE_MANIFEST);
        let store = ManifestStore::create(manifest, "o/n", "c", std::slice::from_ref(&file), None).unwrap();
        let shard = root.join(&file.path);
        assert_eq!(k3_io::provenance::recorded_sha256(&root, &shard), None, "not verified yet");
        store.set_verified(&file.path, Some(VerifiedRecord::of(&shard).unwrap())).unwrap();
        assert_eq!(k3_io::provenance::recorded_sha256(&root, &shard).as_deref(), Some(sha));
        let _ = std::fs::remove_dir_all(&root);
    }
}
