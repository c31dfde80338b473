//! Where everything of a store lives (PRODUCT.md §4.3): the files at their repository
//! paths (`hf download --local-dir` compatible), `.cache/huggingface/download/*.metadata`
//! for the Hugging Face tools, and our own `.k3-desktop/` (manifest, journals, partials,
//! lock, the packed trunk by default).
//!
//! Owns: [`StoreLayout`]. Must not: be given a repository path that `hub::names` did not
//! accept (every join below trusts that check).

use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct StoreLayout {
    root: PathBuf,
}

impl StoreLayout {
    pub fn new(root: impl Into<PathBuf>) -> StoreLayout {
        StoreLayout { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the finished, verified file lives.
    pub fn file(&self, repo_path: &str) -> PathBuf {
        join(&self.root, repo_path, "")
    }

    pub fn k3_dir(&self) -> PathBuf {
        self.root.join(".k3-desktop")
    }

    /// Where the packed trunk goes unless the user names another folder
    /// (`<store>/.k3-desktop/trunk`): the CLI's `k3 download`, the wizard and a folder
    /// opened by path all look here.
    pub fn default_trunk(&self) -> PathBuf {
        self.k3_dir().join("trunk")
    }

    pub fn manifest(&self) -> PathBuf {
        self.k3_dir().join("manifest.json")
    }

    pub fn lock(&self) -> PathBuf {
        self.k3_dir().join("lock")
    }

    /// The file being downloaded, until it verifies and is renamed to [`Self::file`].
    pub fn partial(&self, repo_path: &str) -> PathBuf {
        join(&self.k3_dir().join("partial"), repo_path, ".part")
    }

    /// The durable record of which chunks of the partial are on disk.
    pub fn journal(&self, repo_path: &str) -> PathBuf {
        join(&self.k3_dir().join("journal"), repo_path, ".journal")
    }

    /// `hf`'s record that the file is complete (commit, etag, time).
    pub fn hf_metadata(&self, repo_path: &str) -> PathBuf {
        join(&self.hf_dir().join("download"), repo_path, ".metadata")
    }

    pub fn hf_dir(&self) -> PathBuf {
        self.root.join(".cache").join("huggingface")
    }
}

fn join(base: &Path, repo_path: &str, suffix: &str) -> PathBuf {
    let mut out = base.to_path_buf();
    let mut parts = repo_path.split('/').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            out.push(format!("{part}{suffix}"));
        } else {
            out.push(part);
        }
    }
    out
}
