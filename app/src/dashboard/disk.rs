//! The Disk tab's space per drive: each volume that holds the model store, the packed
//! trunk or the app's data, with what of ours is on it.
//!
//! Owns: [`DriveUsage`], [`drive_usage`].
//! Must not: walk big folders: the store's size is the model summary's shard total, the
//! trunk's is `trunk.bin`'s length, and only the `partial/` folder (files still
//! downloading) and the history file are listed. Asked every few seconds at most.

use std::path::{Path, PathBuf};

/// One volume and our files on it.
#[derive(Debug, Clone, PartialEq)]
pub struct DriveUsage {
    pub mount: String,
    pub fs: String,
    /// `ssd`, `hdd`, `virtual` or `unknown`.
    pub kind: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// What of ours lives here: model store, trunk, partial downloads, app data.
    pub parts: Vec<UsagePart>,
}

/// Bytes of one of our folders.
#[derive(Debug, Clone, PartialEq)]
pub struct UsagePart {
    /// `store`, `trunk`, `partial` or `appData`.
    pub key: String,
    pub path: String,
    pub bytes: u64,
}

/// Our folders, as the app knows them.
#[derive(Debug, Clone)]
pub struct OurFolders {
    pub store: Option<(PathBuf, u64)>,
    pub trunk: Option<PathBuf>,
    pub app_data: PathBuf,
}

/// The volumes of our folders, each once, with our bytes on each.
pub fn drive_usage(folders: &OurFolders) -> Result<Vec<DriveUsage>, String> {
    let mut parts: Vec<(PathBuf, UsagePart)> = Vec::new();
    // A folder that does not exist (yet) has no volume to show.
    let mut add = |key: &str, path: &Path, bytes: u64| {
        if path.exists() {
            parts.push((path.to_path_buf(), UsagePart { key: key.into(), path: path.display().to_string(), bytes }))
        }
    };
    if let Some((store, bytes)) = &folders.store {
        add("store", store, *bytes);
        let partial = store.join(".k3-desktop").join("partial");
        if partial.is_dir() {
            add("partial", &partial, folder_bytes(&partial, 3));
        }
    }
    if let Some(trunk) = &folders.trunk {
        let bin = std::fs::metadata(trunk.join("trunk.bin")).map_or(0, |m| m.len());
        add("trunk", trunk, bin);
    }
    add("appData", &folders.app_data, folder_bytes(&folders.app_data, 1));
    let paths: Vec<PathBuf> = parts.iter().map(|(p, _)| p.clone()).collect();
    let drives = k3_store::doctor::drives::list_drives(&paths).map_err(|e| e.to_string())?;
    Ok(drives
        .into_iter()
        .map(|d| DriveUsage {
            mount: d.mount_point.display().to_string(),
            fs: d.fs_type.clone(),
            kind: crate::setup::facts::kind(d.kind).to_string(),
            total_bytes: d.total_bytes,
            free_bytes: d.free_bytes,
            parts: parts.iter().filter(|(p, _)| d.paths.contains(p)).map(|(_, u)| u.clone()).collect(),
        })
        .collect())
}

/// Bytes of the regular files under `dir`, `depth` levels deep at most.
fn folder_bytes(dir: &Path, depth: usize) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            Ok(t) if t.is_dir() && depth > 1 => folder_bytes(&e.path(), depth - 1),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_folders_on_one_volume_are_listed_once_with_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (store, trunk, data) = (dir.path().join("store"), dir.path().join("trunk"), dir.path().join("data"));
        for d in [&store.join(".k3-desktop/partial/sub"), &trunk, &data] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(store.join(".k3-desktop/partial/sub/a.part"), vec![0; 1000]).unwrap();
        std::fs::write(trunk.join("trunk.bin"), vec![0; 4096]).unwrap();
        std::fs::write(data.join("chats.sqlite"), vec![0; 300]).unwrap();
        let folders = OurFolders { store: Some((store.clone(), 5_000_000)), trunk: Some(trunk), app_data: data };
        let drives = drive_usage(&folders).unwrap();
        assert_eq!(drives.len(), 1, "one temp volume: {drives:?}");
        let d = &drives[0];
        assert!(d.total_bytes >= d.free_bytes && d.total_bytes > 0);
        let bytes = |key: &str| d.parts.iter().find(|p| p.key == key).map(|p| p.bytes);
        assert_eq!(
            (bytes("store"), bytes("partial"), bytes("trunk"), bytes("appData")),
            (Some(5_000_000), Some(1000), Some(4096), Some(300))
        );
    }
}
