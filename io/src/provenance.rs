//! Where a checkpoint file came from, as far as the disk can say: the record of a file as
//! it was when its hash was checked, and the SHA-256 a checkpoint's own records give a
//! shard (a saved state ties itself to these, issue 44).
//!
//! Owns: [`VerifiedRecord`] (inode, size, modification time of a verified file; the
//! store's manifest keeps one per verified file), [`STORE_MANIFEST`] (where the store keeps
//! that manifest in a model folder) and [`recorded_sha256`]: a shard's SHA-256 from the
//! Hugging Face cache's blob name (`blobs/<sha256>`, a snapshot's files link there) or
//! from the store's manifest while its verified record still matches the file.
//! Must not: hash anything (a 1.56 TB checkpoint is not read to name it), or return a hash
//! for a file that changed since it was checked, as far as inode, size and time tell.
//! Easy to break: the manifest is the store's file (`k3_store::download::manifest`); this
//! reads only `files[].path`, `files[].hash.sha256` and `files[].verified`, and a test
//! in the store checks the two agree.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The store's manifest, relative to the model folder.
pub const STORE_MANIFEST: &str = ".k3-desktop/manifest.json";

/// What a verified file looked like on disk when its hash matched.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VerifiedRecord {
    pub inode: u64,
    pub size: u64,
    pub mtime_ns: i64,
}

impl VerifiedRecord {
    pub fn of(path: &Path) -> std::io::Result<VerifiedRecord> {
        let m = std::fs::metadata(path)?;
        Ok(VerifiedRecord { inode: inode(&m), size: m.len(), mtime_ns: mtime_ns(&m) })
    }

    /// Whether `path` still is the file that was verified.
    pub fn still_matches(&self, path: &Path) -> bool {
        VerifiedRecord::of(path).is_ok_and(|now| now == *self)
    }
}

/// The file's inode number (Unix); 0 on Windows, where std has no stable file index and the
/// size and modification time identify the verified file.
#[cfg(unix)]
fn inode(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

#[cfg(not(unix))]
fn inode(_m: &std::fs::Metadata) -> u64 {
    0
}

/// The modification time in nanoseconds since the Unix epoch (negative before it).
fn mtime_ns(m: &std::fs::Metadata) -> i64 {
    let Ok(modified) = m.modified() else { return 0 };
    match modified.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    }
}

/// The parts of the store's manifest read here.
#[derive(Deserialize)]
struct ManifestView {
    files: Vec<FileView>,
}

#[derive(Deserialize)]
struct FileView {
    path: String,
    hash: HashView,
    verified: Option<VerifiedRecord>,
}

/// A file's hash as the manifest spells it; a git blob id (small files) names no shard.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum HashView {
    Sha256(String),
    GitBlob(serde::de::IgnoredAny),
}

fn is_sha256(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The SHA-256 the checkpoint's own records give `shard` of `model_dir`, if any: the name
/// of the Hugging Face cache blob it resolves to, else the store manifest's hash for it
/// while the file is still the one the store verified.
pub fn recorded_sha256(model_dir: &Path, shard: &Path) -> Option<String> {
    let resolved = std::fs::canonicalize(shard).ok()?;
    let blob_name = resolved.file_name().and_then(|n| n.to_str()).filter(|n| is_sha256(n));
    let in_blobs = resolved.parent().and_then(Path::file_name).is_some_and(|d| d == "blobs");
    if let (Some(name), true) = (blob_name, in_blobs) {
        return Some(name.to_string());
    }
    let bytes = std::fs::read(model_dir.join(STORE_MANIFEST)).ok()?;
    let manifest: ManifestView = serde_json::from_slice(&bytes).ok()?;
    let relative = shard.strip_prefix(model_dir).ok()?.to_str()?.replace('\\', "/");
    let entry = manifest.files.into_iter().find(|f| f.path == relative)?;
    match (entry.hash, entry.verified) {
        (HashView::Sha256(sha), Some(v)) if v.still_matches(shard) && is_sha256(&sha) => Some(sha),
        (HashView::Sha256(_) | HashView::GitBlob(_), _) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";

    #[cfg(unix)]
    #[test]
    fn a_cache_blob_name_is_the_shards_hash() {
        let dir = std::env::temp_dir().join(format!("k3-provenance-blob-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (blobs, snap) = (dir.join("blobs"), dir.join("snapshots/abc"));
        std::fs::create_dir_all(&blobs).unwrap();
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::write(blobs.join(SHA), b"foo").unwrap();
        let shard = snap.join("model-00001-of-00001.safetensors");
        std::os::unix::fs::symlink(blobs.join(SHA), &shard).unwrap();
        assert_eq!(recorded_sha256(&snap, &shard).as_deref(), Some(SHA));
        std::fs::write(snap.join("plain.safetensors"), b"foo").unwrap();
        assert_eq!(recorded_sha256(&snap, &snap.join("plain.safetensors")), None, "no record, no hash");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_store_manifest_names_a_hash_only_while_the_file_is_the_verified_one() {
        let dir = std::env::temp_dir().join(format!("k3-provenance-manifest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".k3-desktop")).unwrap();
        let shard = dir.join("s.safetensors");
        std::fs::write(&shard, b"foo").unwrap();
        let record = VerifiedRecord::of(&shard).unwrap();
        let manifest = serde_json::json!({ "version": 1, "repo": "o/n", "commit": "c", "files": [
            { "path": "s.safetensors", "size": 3, "hash": { "sha256": SHA }, "verified": record },
        ]});
        std::fs::write(dir.join(STORE_MANIFEST), manifest.to_string()).unwrap();
        assert_eq!(recorded_sha256(&dir, &shard).as_deref(), Some(SHA));
        std::fs::write(&shard, b"food").unwrap();
        assert_eq!(recorded_sha256(&dir, &shard), None, "changed since it was verified");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
