//! A file being downloaded: its bytes under `.k3-desktop/partial/`, the SHA-256 of
//! everything durable so far (and a shard's segment CRC32Cs, `k3_io::segment_sums`, which
//! the pack names experts' checksums from), and the journal that lets a new process
//! continue from the last durable chunk.
//!
//! Owns: [`PartialFile`], [`ChunkHasher`] and the order of a group's steps: its chunks
//! written (and hashed, on another thread) → `fdatasync` → their journal records appended
//! → journal `fsync` (RELIABILITY §2.3), and the end: `fsync` → verify → rename →
//! `fsync(dir)`.
//! Every operation on the partial and its journal goes through a `WriteStorage` (the seam
//! of `k3_io::storage`; [`PartialFile::open_in`]), where tests inject faults.
//! Must not: let the hash cover bytes that are not durable, leave bytes past the durable
//! end after a failed write, or rename a file whose hash did not match.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k3_io::segment_sums::{SegmentCrcs, SegmentPlan};
use k3_io::storage::{read_exact_at, write_all_uncached_at, OpenMode, OsStorage, StoredFile, WriteStorage};

use sha2::{Digest, Sha256};

use super::failpoint;
use super::journal::{state_hex, ChunkRecord, Journal, JournalHeader, JOURNAL_VERSION};
use super::layout::StoreLayout;
use crate::durable::create_dirs;
use crate::error::{StoreError, StoreResult};
use crate::hub::RepoFile;

pub struct PartialFile {
    storage: Arc<dyn WriteStorage>,
    file: Arc<dyn StoredFile>,
    path: PathBuf,
    journal: Journal,
    header: JournalHeader,
    sums: RunningSums,
    end: u64,
    next_index: u64,
}

/// What runs over a partial file's bytes in order: the SHA-256 the hub pins, and for a
/// shard the segment CRC32Cs the pack names its experts' checksums from.
#[derive(Clone)]
struct RunningSums {
    sha: Sha256,
    segments: Option<SegmentCrcs>,
}

impl RunningSums {
    fn new(sha: Sha256) -> RunningSums {
        RunningSums { sha, segments: None }
    }

    fn update(&mut self, bytes: &[u8]) {
        self.sha.update(bytes);
        if let Some(s) = &mut self.segments {
            s.update(bytes);
        }
    }

    /// Both again from byte 0.
    fn restart(&mut self) {
        self.sha = Sha256::new();
        if let Some(s) = &mut self.segments {
            *s = SegmentCrcs::new(s.plan());
        }
    }
}

/// Bytes read at once when the segment sums catch up with a resumed prefix.
const CATCH_UP_BYTES: u64 = 8 << 20;

impl PartialFile {
    /// Opens the partial of `file`, continuing from its journal when that is intact, or
    /// from byte 0 otherwise.
    pub fn open(layout: &StoreLayout, file: &RepoFile, sha256: &str, commit: &str) -> StoreResult<PartialFile> {
        PartialFile::open_in(Arc::new(OsStorage), layout, file, sha256, commit)
    }

    /// [`Self::open`] with every operation going through `storage`.
    pub fn open_in(
        storage: Arc<dyn WriteStorage>,
        layout: &StoreLayout,
        file: &RepoFile,
        sha256: &str,
        commit: &str,
    ) -> StoreResult<PartialFile> {
        let path = layout.partial(&file.path);
        let journal_path = layout.journal(&file.path);
        for dir in [path.parent(), journal_path.parent()].into_iter().flatten() {
            create_dirs(dir)?;
            inside_store(layout, dir)?;
        }
        let header = JournalHeader {
            k3_journal: JOURNAL_VERSION,
            path: file.path.clone(),
            size: file.size,
            sha256: sha256.into(),
            commit: commit.into(),
        };
        let data =
            storage.open(&path, OpenMode::ReadWrite { truncate: false }).map_err(|e| StoreError::io(&path, e))?;
        let data: Arc<dyn StoredFile> = Arc::from(data);
        if let Some((journal, resume)) = Journal::resume(&*storage, &journal_path, &header, &*data)? {
            data.set_len(resume.end).map_err(|e| StoreError::io(&path, e))?;
            return Ok(PartialFile {
                storage,
                file: data,
                path,
                journal,
                header,
                sums: RunningSums::new(resume.hasher),
                end: resume.end,
                next_index: resume.next_index,
            });
        }
        data.set_len(0).map_err(|e| StoreError::io(&path, e))?;
        let journal = Journal::create(&*storage, &journal_path, &header)?;
        let sums = RunningSums::new(Sha256::new());
        Ok(PartialFile { storage, file: data, path, journal, header, sums, end: 0, next_index: 0 })
    }

    /// Computes the segment CRC32Cs of `plan` (this file is a shard) along with the hash
    /// from now on. A resumed durable prefix is read once more for them, now: the journal
    /// keeps no segment state (a resume is rare, and one shard's prefix is at most its size).
    pub fn track_segments(&mut self, plan: Arc<SegmentPlan>) -> StoreResult<()> {
        let mut segments = SegmentCrcs::new(plan);
        let mut buf = vec![0u8; CATCH_UP_BYTES.min(self.end) as usize];
        let mut at = 0;
        while at < self.end {
            let n = (self.end - at).min(CATCH_UP_BYTES) as usize;
            read_exact_at(&*self.file, &mut buf[..n], at).map_err(|e| StoreError::io(&self.path, e))?;
            segments.update(&buf[..n]);
            at += n as u64;
        }
        self.sums.segments = Some(segments);
        Ok(())
    }

    /// The shard's segment CRC32Cs over the durable bytes (`None` for a file that is not
    /// a shard); [`SegmentCrcs::finish`] makes the sidecar once the file is verified.
    pub fn segments(&self) -> Option<SegmentCrcs> {
        self.sums.segments.clone()
    }

    /// Bytes durable on disk (and covered by the hash).
    pub fn durable_end(&self) -> u64 {
        self.end
    }

    pub fn size(&self) -> u64 {
        self.header.size
    }

    /// The data file, for writes past the durable end ([`write_chunk`]) on other threads.
    pub fn data(&self) -> Arc<dyn StoredFile> {
        self.file.clone()
    }

    /// The hash as it stands at the durable end, to hash the chunks after it.
    pub fn hasher(&self) -> ChunkHasher {
        ChunkHasher { sums: self.sums.clone(), next_index: self.next_index, end: self.end }
    }

    /// Makes `chunks` (written at the durable end, in order, by [`write_chunk`]) durable
    /// with one `fdatasync`, then journals them with one `fsync`. On error the file is cut
    /// back to the old durable end, so nothing unjournaled remains.
    pub fn commit(&mut self, chunks: &[HashedChunk]) -> std::io::Result<()> {
        let Some(last) = chunks.last() else { return Ok(()) };
        let result = (|| {
            self.file.sync_data()?;
            failpoint::hit(failpoint::AFTER_DATA_SYNC);
            let records: Vec<ChunkRecord> = chunks.iter().map(|c| c.record.clone()).collect();
            self.journal.append_all(&records)
        })();
        if let Err(e) = result {
            let _ = self.roll_back();
            return Err(e);
        }
        self.end = last.record.end;
        self.sums = last.sums.clone();
        self.next_index = last.record.index + 1;
        Ok(())
    }

    /// Cuts the file back to the durable end (a write or a commit after it failed).
    pub fn roll_back(&self) -> std::io::Result<()> {
        self.file.set_len(self.end)
    }

    /// Makes `chunk` (the bytes at [`Self::durable_end`]) durable and journals it, on this
    /// thread. On error the file is cut back to the old end.
    pub fn append(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        let mut hasher = self.hasher();
        if let Err(e) = write_chunk(&*self.file, chunk, self.end) {
            let _ = self.roll_back();
            return Err(e);
        }
        let hashed = hasher.hash(chunk);
        self.commit(&[hashed])
    }

    /// Starts again from byte 0 (the server ignored a Range request: never append).
    pub fn restart(&mut self) -> StoreResult<()> {
        self.file.set_len(0).map_err(|e| StoreError::io(&self.path, e))?;
        self.journal.reset(&self.header)?;
        self.sums.restart();
        self.end = 0;
        self.next_index = 0;
        Ok(())
    }

    /// The SHA-256 of the whole file (hex), once every byte is durable.
    pub fn digest(&self) -> String {
        hex::encode(self.sums.sha.clone().finalize())
    }

    /// Moves the verified file to `dest` durably and drops the journal. Call only after
    /// [`Self::digest`] matched.
    pub fn commit_to(self, dest: &Path) -> StoreResult<()> {
        self.file.sync_all().map_err(|e| StoreError::io(&self.path, e))?;
        let dir = dest.parent().unwrap_or(Path::new("."));
        create_dirs(dir)?;
        self.storage.rename(&self.path, dest).map_err(|e| StoreError::io(dest, e))?;
        failpoint::hit(failpoint::AFTER_RENAME);
        self.storage.sync_dir(dir).map_err(|e| StoreError::io(dir, e))?;
        failpoint::hit(failpoint::AFTER_DIR_SYNC);
        self.journal.remove(&*self.storage)
    }

    /// Deletes the partial and its journal (a hash mismatch: those bytes are never kept).
    pub fn discard(self) -> StoreResult<()> {
        drop(self.file);
        match self.storage.remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(StoreError::io(&self.path, e)),
            _ => {}
        }
        self.journal.remove(&*self.storage)
    }
}

/// Writes `chunk` at `at`, not yet durable (a group's [`PartialFile::commit`] makes it so).
/// Its aligned blocks bypass the page cache where the system allows it: a download's bytes
/// are not read again soon, and copying them into the cache cost half of `k3 download`'s CPU.
pub fn write_chunk(data: &dyn StoredFile, chunk: &[u8], at: u64) -> std::io::Result<()> {
    write_all_uncached_at(data, chunk, at)?;
    failpoint::hit(failpoint::AFTER_WRITE);
    Ok(())
}

/// The SHA-256 running past the durable end, moved to a hashing thread and back: each
/// chunk's journal record (its CRC-32 and the state after it) is made here.
pub struct ChunkHasher {
    sums: RunningSums,
    next_index: u64,
    end: u64,
}

/// A chunk hashed: its journal record and the SHA-256 state after it.
pub struct HashedChunk {
    pub record: ChunkRecord,
    sums: RunningSums,
}

impl ChunkHasher {
    /// Hashes the next chunk (the bytes at this hasher's end).
    pub fn hash(&mut self, chunk: &[u8]) -> HashedChunk {
        self.sums.update(chunk);
        let start = self.end;
        self.end += chunk.len() as u64;
        let record = ChunkRecord {
            index: self.next_index,
            start,
            end: self.end,
            crc32: crc32fast::hash(chunk),
            state: state_hex(&self.sums.sha),
        };
        self.next_index += 1;
        HashedChunk { record, sums: self.sums.clone() }
    }
}

/// Refuses a bookkeeping folder that resolves outside the store (a link planted in
/// `.k3-desktop/`): the download writes only inside the folder the user chose.
fn inside_store(layout: &StoreLayout, dir: &std::path::Path) -> StoreResult<()> {
    let resolve = |p: &std::path::Path| std::fs::canonicalize(p).map_err(|e| StoreError::io(p, e));
    if resolve(dir)?.starts_with(resolve(layout.root())?) {
        return Ok(());
    }
    let outside = std::io::Error::other("resolves outside the store (a symbolic link?); remove it and download again");
    Err(StoreError::io(dir, outside))
}

#[cfg(test)]
mod tests {
    //! DL-03 without a real power cut: the states a cut can leave (a torn journal line, a
    //! last chunk whose bytes did not reach the disk, a journal of another file) and what a
    //! resume makes of them.

    use std::io::Write;

    use super::*;
    use crate::hub::FileHash;

    const CHUNK: usize = 64 << 10;

    fn setup(name: &str) -> (tempfile::TempDir, StoreLayout, RepoFile, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let layout = StoreLayout::new(dir.path());
        let bytes: Vec<u8> = (0..CHUNK * 5 + 77).map(|i| (i * 31 % 251) as u8).collect();
        let sha = hex::encode(Sha256::digest(&bytes));
        let file = RepoFile { path: format!("sub/{name}.bin"), size: bytes.len() as u64, hash: FileHash::Sha256(sha) };
        (dir, layout, file, bytes)
    }

    fn sha(file: &RepoFile) -> String {
        file.hash.etag().to_string()
    }

    /// Writes the first `chunks` chunks durably, as a download would.
    fn write_chunks(layout: &StoreLayout, file: &RepoFile, bytes: &[u8], chunks: usize) {
        let mut p = PartialFile::open(layout, file, &sha(file), "c0mmit").unwrap();
        for c in bytes.chunks(CHUNK).take(chunks) {
            p.append(c).unwrap();
        }
    }

    fn finish(layout: &StoreLayout, file: &RepoFile, bytes: &[u8]) -> String {
        let mut p = PartialFile::open(layout, file, &sha(file), "c0mmit").unwrap();
        let from = p.durable_end() as usize;
        for c in bytes[from..].chunks(CHUNK) {
            p.append(c).unwrap();
        }
        p.digest()
    }

    #[test]
    fn a_resume_continues_at_the_last_chunk_and_the_hash_covers_the_whole_file() {
        let (_d, layout, file, bytes) = setup("plain");
        write_chunks(&layout, &file, &bytes, 3);
        let p = PartialFile::open(&layout, &file, &sha(&file), "c0mmit").unwrap();
        assert_eq!(p.durable_end(), 3 * CHUNK as u64);
        drop(p);
        assert_eq!(finish(&layout, &file, &bytes), sha(&file));
    }

    #[test]
    fn dl_03_a_torn_journal_line_is_dropped() {
        let (_d, layout, file, bytes) = setup("torn");
        write_chunks(&layout, &file, &bytes, 3);
        let mut j = std::fs::OpenOptions::new().append(true).open(layout.journal(&file.path)).unwrap();
        j.write_all(br#"{"index":3,"start":196608,"end":262"#).unwrap();
        let p = PartialFile::open(&layout, &file, &sha(&file), "c0mmit").unwrap();
        assert_eq!(p.durable_end(), 3 * CHUNK as u64);
        drop(p);
        assert_eq!(finish(&layout, &file, &bytes), sha(&file));
    }

    #[test]
    fn dl_03_a_last_chunk_that_never_reached_the_disk_is_rolled_back() {
        let (_d, layout, file, bytes) = setup("lost");
        write_chunks(&layout, &file, &bytes, 4);
        // The device lost the last chunk's bytes although the journal has them: zeros.
        let data = std::fs::OpenOptions::new().write(true).open(layout.partial(&file.path)).unwrap();
        k3_io::os::write_all_at(&data, &vec![0u8; CHUNK], 3 * CHUNK as u64).unwrap();
        let p = PartialFile::open(&layout, &file, &sha(&file), "c0mmit").unwrap();
        assert_eq!(p.durable_end(), 3 * CHUNK as u64, "the lost chunk is fetched again");
        drop(p);
        assert_eq!(finish(&layout, &file, &bytes), sha(&file));
        // A truncated file (the last chunks gone entirely) rolls back the same way.
        let (_d2, layout, file, bytes) = setup("short");
        write_chunks(&layout, &file, &bytes, 4);
        std::fs::OpenOptions::new()
            .write(true)
            .open(layout.partial(&file.path))
            .unwrap()
            .set_len(2 * CHUNK as u64 + 5)
            .unwrap();
        let p = PartialFile::open(&layout, &file, &sha(&file), "c0mmit").unwrap();
        assert_eq!(p.durable_end(), 2 * CHUNK as u64);
        drop(p);
        assert_eq!(finish(&layout, &file, &bytes), sha(&file));
    }

    #[test]
    fn dl_13_and_dl_23_a_journal_of_another_commit_or_version_restarts_the_file() {
        let (_d, layout, file, bytes) = setup("other");
        write_chunks(&layout, &file, &bytes, 2);
        let p = PartialFile::open(&layout, &file, &sha(&file), "another-commit").unwrap();
        assert_eq!(p.durable_end(), 0, "bytes of another commit were kept");
        drop(p);
        write_chunks(&layout, &file, &bytes, 2);
        let path = layout.journal(&file.path);
        let text = std::fs::read_to_string(&path).unwrap().replacen("\"k3_journal\":1", "\"k3_journal\":99", 1);
        std::fs::write(&path, text).unwrap();
        let p = PartialFile::open(&layout, &file, &sha(&file), "c0mmit").unwrap();
        assert_eq!(p.durable_end(), 0, "a journal of another version was trusted");
    }

    /// Probe finding (medium): a `.part` replaced by a symbolic link to a file elsewhere had
    /// that file overwritten. The partial is never opened through a link, and a bookkeeping
    /// folder that resolves outside the store is refused.
    #[cfg(unix)]
    #[test]
    fn a_partial_replaced_by_a_link_or_a_folder_leading_outside_is_never_written_through() {
        let (_d, layout, file, bytes) = setup("linked");
        write_chunks(&layout, &file, &bytes, 2);
        let elsewhere = tempfile::tempdir().unwrap();
        let victim = elsewhere.path().join("precious.txt");
        std::fs::write(&victim, b"keep me").unwrap();
        let part = layout.partial(&file.path);
        std::fs::remove_file(&part).unwrap();
        std::os::unix::fs::symlink(&victim, &part).unwrap();
        assert!(PartialFile::open(&layout, &file, &sha(&file), "c0mmit").is_err(), "opened through the link");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");

        let (_d2, layout, file, _) = setup("outside");
        let partial_dir = layout.partial(&file.path).parent().unwrap().to_path_buf();
        std::fs::create_dir_all(partial_dir.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &partial_dir).unwrap();
        let e = PartialFile::open(&layout, &file, &sha(&file), "c0mmit").err().expect("a folder outside the store");
        assert!(e.to_string().contains("outside the store"), "{e}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 1, "nothing was written outside");
    }
}
