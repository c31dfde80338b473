//! Settings › Model folder: where the model in use lives, which commit it is, how many of
//! its files are verified (their recorded inode, size and mtime still match the hashed file),
//! where its packed trunk is — and "Verify now", which hashes every file again.
//!
//! Owns: [`ModelFolderView`], [`folder_view`], the verify job's events and result.
//! Must not: call a file verified unless every byte of it was hashed: the counts come from
//! the store's manifest records, and a stopped verify leaves each file's record as it was.

use std::path::Path;

use k3_store::download::layout::StoreLayout;
use k3_store::download::manifest::Manifest;
use k3_store::verify::VerifyReport;

/// What Settings › Model folder shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFolderView {
    pub path: String,
    pub name: String,
    pub is_demo: bool,
    /// The trunk unpinned layers stream from (`None`: not packed; the trunk stays in RAM).
    pub trunk: Option<String>,
    /// From the store's manifest, when the folder was downloaded or adopted by k3.
    pub repo: Option<String>,
    pub commit: Option<String>,
    pub files: u32,
    pub verified_files: u32,
    pub bytes: u64,
    /// Why there is no manifest, or what is wrong with it.
    pub note: Option<String>,
}

/// The folder's view; `trunk` is the packed trunk in use.
pub fn folder_view(path: &Path, name: &str, is_demo: bool, trunk: Option<&Path>) -> ModelFolderView {
    let layout = StoreLayout::new(path);
    let mut view = ModelFolderView {
        path: path.display().to_string(),
        name: name.to_string(),
        is_demo,
        trunk: trunk.map(|t| t.display().to_string()),
        repo: None,
        commit: None,
        files: 0,
        verified_files: 0,
        bytes: 0,
        note: None,
    };
    match Manifest::load(&layout.manifest()) {
        Ok(Some(m)) => {
            view.files = m.files.len() as u32;
            view.bytes = m.files.iter().map(|f| f.file.size).sum();
            view.verified_files =
                m.files.iter().filter(|f| m.is_verified(&f.file, &layout.file(&f.file.path))).count() as u32;
            view.repo = Some(m.repo);
            view.commit = Some(m.commit);
        }
        Ok(None) => {
            view.note = Some("Not downloaded or adopted by k3: there are no pinned hashes to verify it against.".into())
        }
        Err(e) => view.note = Some(e.to_string()),
    }
    view
}

/// Progress of "Verify now".
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyProgress {
    pub file: String,
    pub done_bytes: u64,
    pub total_bytes: u64,
}

/// How "Verify now" ended.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyOutcome {
    pub files: u32,
    pub bytes: u64,
    /// `path: problem` of each missing, resized or mismatching file.
    pub bad: Vec<String>,
    pub seconds: f64,
    pub view: ModelFolderView,
}

impl VerifyOutcome {
    pub fn of(r: &VerifyReport, seconds: f64, view: ModelFolderView) -> VerifyOutcome {
        VerifyOutcome {
            files: r.files as u32,
            bytes: r.bytes,
            bad: r.bad.iter().map(|b| format!("{}: {}", b.path, b.problem)).collect(),
            seconds,
            view,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_without_a_manifest_says_why_it_cannot_be_verified() {
        let dir = tempfile::tempdir().unwrap();
        let v = folder_view(dir.path(), "m", false, None);
        assert_eq!((v.files, v.verified_files, v.commit), (0, 0, None));
        assert!(v.note.is_some_and(|n| n.contains("no pinned hashes")));
    }

    #[test]
    fn verified_files_are_those_whose_record_still_matches_the_file() {
        use k3_store::download::manifest::{ManifestStore, VerifiedRecord};
        use k3_store::hub::{FileHash, RepoFile};
        let dir = tempfile::tempdir().unwrap();
        let layout = StoreLayout::new(dir.path());
        std::fs::create_dir_all(layout.manifest().parent().unwrap()).unwrap();
        let files: Vec<RepoFile> = ["a.safetensors", "b.safetensors"]
            .iter()
            .map(|p| {
                std::fs::write(layout.file(p), b"weights").unwrap();
                RepoFile { path: p.to_string(), size: 7, hash: FileHash::Sha256("00".repeat(32)) }
            })
            .collect();
        let store =
            ManifestStore::create(layout.manifest(), "moonshotai/Kimi-K3", &"c".repeat(40), &files, None).unwrap();
        store.set_verified("a.safetensors", Some(VerifiedRecord::of(&layout.file("a.safetensors")).unwrap())).unwrap();
        let v = folder_view(dir.path(), "Kimi-K3", false, None);
        assert_eq!((v.files, v.verified_files, v.bytes), (2, 1, 14));
        assert_eq!(v.commit.as_deref(), Some("c".repeat(40).as_str()));
        // A file rewritten since it was hashed is no longer verified.
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(layout.file("a.safetensors"), b"WEIGHTS").unwrap();
        assert_eq!(folder_view(dir.path(), "Kimi-K3", false, None).verified_files, 0);
    }
}
