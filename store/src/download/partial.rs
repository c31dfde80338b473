//! A file being downloaded: its bytes under `.k3-desktop/partial/`, the SHA-256 of
//! everything durable so far, and the journal that lets a new process continue from the
//! last durable chunk without reading the file again.
//!
//! Owns: [`PartialFile`] and the order of a chunk's steps: write → `fdatasync` → journal
//! append → journal `fsync` (RELIABILITY §2.3), and the end: `fsync` → verify → rename →
//! `fsync(dir)`.
//! Must not: let the hash cover bytes that are not durable, leave bytes past the durable
//! end after a failed write, or rename a file whose hash did not match.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::failpoint;
use super::journal::{state_hex, ChunkRecord, Journal, JournalHeader, JOURNAL_VERSION};
use super::layout::StoreLayout;
use crate::durable::{create_dirs, fsync_dir};
use crate::error::{StoreError, StoreResult};
use crate::hub::RepoFile;

pub struct PartialFile {
    file: File,
    path: PathBuf,
    journal: Journal,
    journal_path: PathBuf,
    header: JournalHeader,
    hasher: Sha256,
    end: u64,
    next_index: u64,
}

impl PartialFile {
    /// Opens the partial of `file`, continuing from its journal when that is intact, or
    /// from byte 0 otherwise.
    pub fn open(layout: &StoreLayout, file: &RepoFile, sha256: &str, commit: &str) -> StoreResult<PartialFile> {
        let path = layout.partial(&file.path);
        let journal_path = layout.journal(&file.path);
        for dir in [path.parent(), journal_path.parent()].into_iter().flatten() {
            create_dirs(dir)?;
        }
        let header = JournalHeader {
            k3_journal: JOURNAL_VERSION,
            path: file.path.clone(),
            size: file.size,
            sha256: sha256.into(),
            commit: commit.into(),
        };
        let data = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        if let Some((journal, resume)) = Journal::resume(&journal_path, &header, &data)? {
            data.set_len(resume.end).map_err(|e| StoreError::io(&path, e))?;
            return Ok(PartialFile {
                file: data,
                path,
                journal,
                journal_path,
                header,
                hasher: resume.hasher,
                end: resume.end,
                next_index: resume.next_index,
            });
        }
        data.set_len(0).map_err(|e| StoreError::io(&path, e))?;
        let journal = Journal::create(&journal_path, &header)?;
        Ok(PartialFile {
            file: data,
            path,
            journal,
            journal_path,
            header,
            hasher: Sha256::new(),
            end: 0,
            next_index: 0,
        })
    }

    /// Bytes durable on disk (and covered by the hash).
    pub fn durable_end(&self) -> u64 {
        self.end
    }

    pub fn size(&self) -> u64 {
        self.header.size
    }

    /// Makes `chunk` (the bytes at [`Self::durable_end`]) durable and journals it. On error
    /// the file is cut back to the old end, so nothing half-written remains.
    pub fn append(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        let start = self.end;
        let result = (|| {
            self.file.write_all_at(chunk, start)?;
            failpoint::hit(failpoint::AFTER_WRITE);
            self.file.sync_data()
        })();
        if let Err(e) = result {
            let _ = self.file.set_len(start);
            return Err(e);
        }
        failpoint::hit(failpoint::AFTER_DATA_SYNC);
        self.hasher.update(chunk);
        let end = start + chunk.len() as u64;
        let record = ChunkRecord {
            index: self.next_index,
            start,
            end,
            crc32: crc32fast::hash(chunk),
            state: state_hex(&self.hasher),
        };
        self.journal.append(&record)?;
        self.end = end;
        self.next_index += 1;
        Ok(())
    }

    /// Starts again from byte 0 (the server ignored a Range request: never append).
    pub fn restart(&mut self) -> StoreResult<()> {
        self.file.set_len(0).map_err(|e| StoreError::io(&self.path, e))?;
        self.journal = Journal::create(&self.journal_path, &self.header)?;
        self.hasher = Sha256::new();
        self.end = 0;
        self.next_index = 0;
        Ok(())
    }

    /// The SHA-256 of the whole file (hex), once every byte is durable.
    pub fn digest(&self) -> String {
        hex::encode(self.hasher.clone().finalize())
    }

    /// Moves the verified file to `dest` durably and drops the journal. Call only after
    /// [`Self::digest`] matched.
    pub fn commit_to(self, dest: &Path) -> StoreResult<()> {
        self.file.sync_all().map_err(|e| StoreError::io(&self.path, e))?;
        let dir = dest.parent().unwrap_or(Path::new("."));
        create_dirs(dir)?;
        std::fs::rename(&self.path, dest).map_err(|e| StoreError::io(dest, e))?;
        failpoint::hit(failpoint::AFTER_RENAME);
        fsync_dir(dir)?;
        failpoint::hit(failpoint::AFTER_DIR_SYNC);
        self.journal.remove()
    }

    /// Deletes the partial and its journal (a hash mismatch: those bytes are never kept).
    pub fn discard(self) -> StoreResult<()> {
        drop(self.file);
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(StoreError::io(&self.path, e)),
            _ => {}
        }
        self.journal.remove()
    }
}
