//! The durable record of a partial file (RELIABILITY §2.3): a header line naming the file,
//! its size, hash and commit, then one line per chunk made durable — its index, where it
//! ends, its CRC-32 and the SHA-256 state after it — appended only after the chunk's
//! `fdatasync`, and `fsync`ed itself. A resume reads the durable prefix back from the disk:
//! every chunk's CRC and the SHA-256 state after it must match what the journal recorded,
//! and the hash carried on is the one of the bytes on disk (a byte flipped in an earlier
//! chunk while the download was stopped is fetched again, never declared verified).
//!
//! Owns: [`Journal`], [`ChunkRecord`], [`JournalHeader`], [`Resume`], and
//! [`resume_point`], the decision on the journal's bytes and the data's (read through a
//! callback), which [`Journal::resume`] and the fuzz target call.
//! The journal and the data are reached through a `WriteStorage` (`k3_io::storage`),
//! the seam where tests fail an operation or cut the power.
//! Must not: be ahead of the data (the caller's order: data → `fdatasync` → append →
//! `fsync`), or trust a line that does not end in `\n` and parse (a torn tail is dropped).

use std::path::{Path, PathBuf};

use k3_io::storage::{read_exact_at, write_all_at, OpenMode, StoredFile, WriteStorage};

use serde::{Deserialize, Serialize};
use sha2::digest::common::hazmat::SerializableState;
use sha2::Sha256;

use super::failpoint;
use crate::durable::{create_dirs, write_atomic_in};
use crate::error::{StoreError, StoreResult};

/// The journal format this build writes; any other version restarts the file (DL-23).
pub const JOURNAL_VERSION: u32 = 1;
/// Reads bytes `start..end` of the partial file, handing them to the sink in order;
/// `None` when they cannot be read.
pub type ReadRange<'a> = dyn FnMut(u64, u64, &mut dyn FnMut(&[u8])) -> Option<()> + 'a;

/// What the partial is a partial of; a journal for anything else is not resumed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct JournalHeader {
    pub k3_journal: u32,
    pub path: String,
    pub size: u64,
    pub sha256: String,
    pub commit: String,
}

/// One chunk made durable.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ChunkRecord {
    pub index: u64,
    pub start: u64,
    pub end: u64,
    pub crc32: u32,
    /// Hex of the SHA-256 state after the chunk.
    pub state: String,
}

/// Where a resumed file continues.
pub struct Resume {
    pub end: u64,
    pub next_index: u64,
    pub hasher: Sha256,
}

pub struct Journal {
    file: Box<dyn StoredFile>,
    path: PathBuf,
    /// The journal's length: where the next line goes.
    end: u64,
}

impl Journal {
    /// A fresh journal for `header` (any old one at `path` is replaced).
    pub fn create(storage: &dyn WriteStorage, path: &Path, header: &JournalHeader) -> StoreResult<Journal> {
        let mut text = serde_json::to_string(header).map_err(|e| StoreError::io(path, std::io::Error::other(e)))?;
        text.push('\n');
        write_atomic_in(storage, path, text.as_bytes(), false)?;
        Journal::open_append(storage, path)
    }

    /// Reads the journal at `path`, checks it describes `header`, and finds the last chunk
    /// whose bytes in `data` still match their CRC; rewrites the journal to end there.
    /// `Ok(None)`: nothing usable (missing, another file or version, or no good chunk).
    pub fn resume(
        storage: &dyn WriteStorage,
        path: &Path,
        header: &JournalHeader,
        data: &dyn StoredFile,
    ) -> StoreResult<Option<(Journal, Resume)>> {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io(path, e)),
        };
        let Some(point) = resume_point(&text, header, &mut |start, end, sink| read_on_disk(data, start, end, sink))
        else {
            return Ok(None);
        };
        let rewritten =
            journal_text(header, &point.records).map_err(|e| StoreError::io(path, std::io::Error::other(e)))?;
        write_atomic_in(storage, path, rewritten.as_bytes(), false)?;
        Ok(Some((Journal::open_append(storage, path)?, point.resume)))
    }

    /// Starts this journal afresh in place: emptied, then `header`, synced. In place because
    /// Windows refuses to replace a file that is open (this journal's own handle). A crash
    /// midway leaves an empty or torn journal, which a resume treats as nothing usable: the
    /// same start from byte 0 this reset records.
    pub fn reset(&mut self, header: &JournalHeader) -> StoreResult<()> {
        let io = |e| StoreError::io(&self.path, e);
        let mut text = serde_json::to_string(header).map_err(|e| io(std::io::Error::other(e)))?;
        text.push('\n');
        self.file.set_len(0).map_err(io)?;
        self.end = 0;
        write_all_at(&*self.file, text.as_bytes(), 0).map_err(io)?;
        self.file.sync_all().map_err(io)?;
        self.end = text.len() as u64;
        Ok(())
    }

    /// Appends `rec` and makes it durable.
    #[cfg(test)]
    pub fn append(&mut self, rec: &ChunkRecord) -> std::io::Result<()> {
        self.append_all(std::slice::from_ref(rec))
    }

    /// Appends `records` and makes them durable with one `fsync` (a group of chunks whose
    /// data was synced together).
    pub fn append_all(&mut self, records: &[ChunkRecord]) -> std::io::Result<()> {
        let mut line = String::new();
        for rec in records {
            line.push_str(&serde_json::to_string(rec).map_err(std::io::Error::other)?);
            line.push('\n');
        }
        if line.is_empty() {
            return Ok(());
        }
        if let Err(e) = write_all_at(&*self.file, line.as_bytes(), self.end) {
            // A torn line is dropped by a resume; the next append starts on a clean one.
            let _ = self.file.set_len(self.end);
            return Err(e);
        }
        failpoint::hit(failpoint::AFTER_JOURNAL_WRITE);
        self.file.sync_data()?;
        self.end += line.len() as u64;
        failpoint::hit(failpoint::AFTER_JOURNAL_SYNC);
        Ok(())
    }

    pub fn remove(self, storage: &dyn WriteStorage) -> StoreResult<()> {
        let path = self.path.clone();
        drop(self.file);
        match storage.remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }

    fn open_append(storage: &dyn WriteStorage, path: &Path) -> StoreResult<Journal> {
        if let Some(dir) = path.parent() {
            create_dirs(dir)?;
        }
        let io = |e| StoreError::io(path, e);
        let file = storage.open(path, OpenMode::ReadWrite { truncate: false }).map_err(io)?;
        let end = file.size().map_err(io)?;
        if let Some(dir) = path.parent() {
            storage.sync_dir(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        Ok(Journal { file, path: path.to_path_buf(), end })
    }
}

/// What a resume keeps of a journal: the records up to the last good chunk, and where the
/// file continues.
pub struct ResumePoint {
    pub records: Vec<ChunkRecord>,
    pub resume: Resume,
}

/// The resume a journal's bytes `text` allow for the file `header` describes, the partial
/// file's bytes read through `read`. `None`: nothing usable (another file or version, no
/// complete line, or no good chunk).
pub fn resume_point(text: &[u8], header: &JournalHeader, read: &mut ReadRange<'_>) -> Option<ResumePoint> {
    let mut lines = complete_lines(text);
    let first = lines.next()?;
    match serde_json::from_slice::<JournalHeader>(first) {
        Ok(h) if h == *header => {}
        _ => return None,
    }
    let mut records: Vec<ChunkRecord> = lines.map_while(|l| serde_json::from_slice(l).ok()).collect();
    let (good, resume) = last_good(&records, header.size, read)?;
    records.truncate(good + 1);
    Some(ResumePoint { records, resume })
}

/// The journal's text for `header` followed by `records`, one JSON line each.
pub fn journal_text(header: &JournalHeader, records: &[ChunkRecord]) -> Result<String, serde_json::Error> {
    let mut text = String::new();
    for line in std::iter::once(serde_json::to_string(header)).chain(records.iter().map(serde_json::to_string)) {
        text.push_str(&line?);
        text.push('\n');
    }
    Ok(text)
}

/// Lines that end in `\n` (a torn last line is not one).
fn complete_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let end = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    text[..end].split(|&b| b == b'\n').filter(|l| !l.is_empty())
}

/// The index of the last record up to which every chunk is intact on disk, with its resume
/// point: each chunk from byte 0 is read back, and it counts only when its CRC and the
/// SHA-256 state after it are the recorded ones (probe finding: a byte flipped in an
/// earlier chunk was resumed past and declared verified). The usable records are indexed
/// from 0, start at byte 0, each chunk non-empty, starting where the one before ended and
/// ending within the file's `size` (`download_journal` fuzz target: a journal whose first
/// chunk did not start at byte 0 was resumed; one ending past the size would have been too).
fn last_good(records: &[ChunkRecord], size: u64, read: &mut ReadRange<'_>) -> Option<(usize, Resume)> {
    let mut expected_start = 0;
    let usable = records
        .iter()
        .enumerate()
        .take_while(|(i, r)| {
            let ok = r.index == *i as u64 && r.start == expected_start && r.end > r.start && r.end <= size;
            expected_start = r.end;
            ok
        })
        .count();
    let mut hasher = Sha256::default();
    let mut good = None;
    for (i, r) in records[..usable].iter().enumerate() {
        let (mut crc, mut after) = (crc32fast::Hasher::new(), hasher.clone());
        let read_back = read(r.start, r.end, &mut |bytes| {
            crc.update(bytes);
            sha2::Digest::update(&mut after, bytes);
        });
        if read_back.is_none() || crc.finalize() != r.crc32 || state_hex(&after) != r.state {
            break;
        }
        hasher = after;
        good = Some((i, Resume { end: r.end, next_index: r.index + 1, hasher: hasher.clone() }));
    }
    good
}

fn read_on_disk(data: &dyn StoredFile, start: u64, end: u64, sink: &mut dyn FnMut(&[u8])) -> Option<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut at = start;
    while at < end {
        let n = ((end - at) as usize).min(buf.len());
        read_exact_at(data, &mut buf[..n], at).ok()?;
        sink(&buf[..n]);
        at += n as u64;
    }
    Some(())
}

/// The serialised SHA-256 state, as a journal stores it.
pub fn state_hex(hasher: &Sha256) -> String {
    hex::encode(hasher.serialize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    fn header() -> JournalHeader {
        JournalHeader {
            k3_journal: JOURNAL_VERSION,
            path: "a.safetensors".into(),
            size: 192,
            sha256: "x".into(),
            commit: "c".into(),
        }
    }

    /// Three 64-byte chunks of `data`, each with its CRC and the hash state after it.
    fn records(data: &[u8]) -> Vec<ChunkRecord> {
        let mut hasher = Sha256::new();
        (0..3u64)
            .map(|i| {
                let (start, end) = (64 * i, 64 * (i + 1));
                let chunk = &data[start as usize..end as usize];
                hasher.update(chunk);
                ChunkRecord { index: i, start, end, crc32: crc32fast::hash(chunk), state: state_hex(&hasher) }
            })
            .collect()
    }

    fn resume(text: &str, data: &[u8]) -> Option<ResumePoint> {
        let mut read = |start: u64, end: u64, sink: &mut dyn FnMut(&[u8])| {
            sink(data.get(start as usize..end as usize)?);
            Some(())
        };
        resume_point(text.as_bytes(), &header(), &mut read)
    }

    /// Probe finding (high): a byte flipped in an earlier durable chunk between a stop and
    /// the resume was resumed past, and the file declared verified though `k3 verify` said
    /// BAD. The resume now stops before the damaged chunk, which is fetched again.
    #[test]
    fn a_byte_flipped_in_an_earlier_chunk_is_fetched_again_not_resumed_past() {
        let data: Vec<u8> = (0..192u32).map(|i| (i * 7 + 3) as u8).collect();
        let text = journal_text(&header(), &records(&data)).unwrap();
        let mut flipped = data.clone();
        flipped[70] ^= 1;
        let point = resume(&text, &flipped).expect("the chunk before the flip resumes");
        assert_eq!((point.resume.end, point.resume.next_index, point.records.len()), (64, 1, 1));
        let mut first = Sha256::new();
        first.update(&data[..64]);
        assert_eq!(state_hex(&point.resume.hasher), state_hex(&first), "the hash carried on is the disk's");
        flipped[70] ^= 1;
        flipped[3] ^= 0x80;
        assert!(resume(&text, &flipped).is_none(), "damage in the first chunk: the file starts again");
    }

    /// A journal whose recorded hash state disagrees with the bytes (its CRCs matching) is
    /// not trusted past the disagreement.
    #[test]
    fn a_recorded_hash_state_that_disagrees_with_the_disk_stops_the_resume() {
        let data: Vec<u8> = (0..192u32).map(|i| (i * 11 + 1) as u8).collect();
        let mut recs = records(&data);
        recs[2].state = recs[1].state.clone();
        let point = resume(&journal_text(&header(), &recs).unwrap(), &data).unwrap();
        assert_eq!(point.resume.end, 128);
    }

    /// Found by the `download_journal` fuzz target (corpus seed
    /// `finding-first-chunk-not-at-zero`).
    #[test]
    fn fuzz_finding_a_resume_starts_at_byte_0_and_stays_within_the_size() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        let good = records(&data);
        let point = resume(&journal_text(&header(), &good).unwrap(), &data).expect("an intact journal resumes");
        assert_eq!((point.resume.end, point.resume.next_index, point.records.len()), (192, 3, 3));

        let mut shifted = good.clone();
        shifted[0].start = 5;
        assert!(resume(&journal_text(&header(), &shifted).unwrap(), &data).is_none(), "first chunk not at byte 0");

        let mut past = good.clone();
        past.push(ChunkRecord {
            index: 3,
            start: 192,
            end: 256,
            crc32: crc32fast::hash(&data[192..256]),
            state: good[2].state.clone(),
        });
        let point = resume(&journal_text(&header(), &past).unwrap(), &data).expect("the chunks within the size resume");
        assert_eq!(point.resume.end, 192, "a chunk past the file's size is not kept");
    }
}
