//! What the fake hub serves in tests and examples: the tiny same-graph model as the hub
//! lists it (json files in git, shards and `tiktoken.model` in LFS), and deterministic
//! incompressible blobs.

use std::path::Path;

use bytes::Bytes;

use super::HubFile;

/// Every file of the checkpoint folder `dir` (not its subfolders), as hub files.
pub fn checkpoint_files(dir: &Path) -> std::io::Result<Vec<HubFile>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.is_file() {
            continue;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let lfs = name.ends_with(".safetensors") || name == "tiktoken.model";
        files.push(HubFile { path: name, bytes: Bytes::from(std::fs::read(&path)?), lfs });
    }
    Ok(files)
}

/// `len` deterministic bytes (xorshift from `seed`), so every run serves the same blobs.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
