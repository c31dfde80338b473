//! A shard's segment checksums, computed while its bytes stream in, so the pack can name
//! every routed expert's CRC32C without reading 1.5 TB of experts again (issue 44 item 1).
//!
//! Owns: [`SegmentPlan`] — where a shard's segments start and end (the file's start, the
//! data section's, every tensor's first and past-last byte, the file's end), from its
//! safetensors header; [`SegmentCrcs`] — the CRC32C of each segment, fed the file's bytes
//! in order (the download's hashing thread does); [`SegmentSums`] — the sidecar
//! `.k3-desktop/crc32c/<repo path>.json` in the model folder, with the shard's
//! [`VerifiedRecord`], and [`SegmentSums::range_crc`], the CRC32C of any run of whole
//! segments (an expert's tensors) combined from theirs.
//! Must not: give a CRC for a file that changed since its hash was checked (inode, size
//! and time, as the store's manifest tells), or for a range that does not start and end on
//! segment boundaries.
//! Easy to break: the CRC must be over exactly the bytes the expert cache reads
//! (`[start, start + len)` of the expert's contiguous run) — the combine is exact only when
//! the range is a union of whole segments.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::format::remote::{header_len, header_tensors, PREFIX_BYTES};
use crate::format::CheckpointFault;
use crate::provenance::VerifiedRecord;

const FORMAT: &str = "k3-desktop segment crc32c v1";

/// A shard's segment boundaries: strictly increasing, from 0 to the file's length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentPlan {
    boundaries: Vec<u64>,
}

impl SegmentPlan {
    /// The plan of a `file_len`-byte shard whose header (the bytes after the 8-byte length
    /// prefix) is `header`.
    pub fn from_header(header: &[u8], file_len: u64) -> Result<SegmentPlan, CheckpointFault> {
        let tensors = header_tensors(header, file_len)?;
        let data_start = PREFIX_BYTES + header.len() as u64;
        let mut boundaries = vec![0, data_start, file_len];
        for t in &tensors {
            boundaries.push(t.offset);
            boundaries.push(t.offset.saturating_add(t.nbytes));
        }
        boundaries.retain(|&b| b <= file_len);
        boundaries.sort_unstable();
        boundaries.dedup();
        Ok(SegmentPlan { boundaries })
    }

    /// The plan of the shard at `path`, its header read from the file.
    pub fn of_file(path: &Path) -> std::io::Result<SegmentPlan> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let file_len = file.metadata()?.len();
        let mut prefix = [0u8; PREFIX_BYTES as usize];
        file.read_exact(&mut prefix)?;
        let fault = |f: CheckpointFault| std::io::Error::new(std::io::ErrorKind::InvalidData, f.to_string());
        let len = header_len(prefix, file_len).map_err(fault)?;
        let mut header = vec![0u8; usize::try_from(len).map_err(|_| std::io::ErrorKind::InvalidData)?];
        file.read_exact(&mut header)?;
        SegmentPlan::from_header(&header, file_len).map_err(fault)
    }

    pub fn file_len(&self) -> u64 {
        self.boundaries.last().copied().unwrap_or(0)
    }
}

/// The CRC32C of each segment of a plan, over the bytes fed so far (from byte 0, in order).
#[derive(Debug, Clone)]
pub struct SegmentCrcs {
    plan: Arc<SegmentPlan>,
    done: Vec<u32>,
    crc: u32,
    at: u64,
}

impl SegmentCrcs {
    pub fn new(plan: Arc<SegmentPlan>) -> SegmentCrcs {
        SegmentCrcs { plan, done: Vec::new(), crc: 0, at: 0 }
    }

    /// The plan these sums follow.
    pub fn plan(&self) -> Arc<SegmentPlan> {
        self.plan.clone()
    }

    /// Bytes fed so far.
    pub fn position(&self) -> u64 {
        self.at
    }

    /// Feeds the file's next bytes; bytes past the plan's end are not counted.
    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let Some(&end) = self.plan.boundaries.get(self.done.len() + 1) else { return };
            let take = bytes.len().min(usize::try_from(end - self.at).unwrap_or(usize::MAX));
            self.crc = crc32c::crc32c_append(self.crc, &bytes[..take]);
            self.at += take as u64;
            bytes = &bytes[take..];
            if self.at == end {
                self.done.push(std::mem::take(&mut self.crc));
            }
        }
    }

    /// The sidecar for the whole file, once every byte was fed; `record` is the verified
    /// file's.
    pub fn finish(&self, record: VerifiedRecord) -> Option<SegmentSums> {
        let complete = self.done.len() + 1 == self.plan.boundaries.len() && self.at == self.plan.file_len();
        complete.then(|| SegmentSums {
            format: FORMAT.into(),
            verified: record,
            boundaries: self.plan.boundaries.clone(),
            crc32c: self.done.clone(),
        })
    }
}

/// A shard's sidecar: its segments' CRC32Cs and the verified file they belong to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentSums {
    format: String,
    verified: VerifiedRecord,
    boundaries: Vec<u64>,
    crc32c: Vec<u32>,
}

/// Where the sidecar of `repo_path` lives in the model folder `model_dir`.
pub fn sidecar_path(model_dir: &Path, repo_path: &str) -> PathBuf {
    let mut path = model_dir.join(".k3-desktop").join("crc32c");
    for part in repo_path.split('/') {
        path.push(part);
    }
    path.as_mut_os_string().push(".json");
    path
}

impl SegmentSums {
    /// The sidecar as bytes to write.
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(self)
    }

    /// The sidecar of the shard at `shard` in `model_dir`, when there is a well-formed one
    /// and the shard is still the file it was computed over.
    pub fn load(model_dir: &Path, shard: &Path) -> Option<SegmentSums> {
        let relative = shard.strip_prefix(model_dir).ok()?.to_str()?.replace('\\', "/");
        let bytes = std::fs::read(sidecar_path(model_dir, &relative)).ok()?;
        let sums: SegmentSums = serde_json::from_slice(&bytes).ok()?;
        let b = &sums.boundaries;
        let well_formed = sums.format == FORMAT
            && b.first() == Some(&0)
            && b.windows(2).all(|w| w[0] < w[1])
            && b.len() == sums.crc32c.len() + 1
            && b.last() == Some(&sums.verified.size);
        (well_formed && sums.verified.still_matches(shard)).then_some(sums)
    }

    /// The CRC32C of bytes `[start, end)`, when both are segment boundaries.
    pub fn range_crc(&self, start: u64, end: u64) -> Option<u32> {
        let first = self.boundaries.binary_search(&start).ok()?;
        let last = self.boundaries.binary_search(&end).ok()?;
        (first < last).then(|| {
            (first..last).fold(0u32, |crc, i| {
                let len = self.boundaries[i + 1] - self.boundaries[i];
                crc32c::crc32c_combine(crc, self.crc32c[i], len as usize)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(boundaries: &[u64]) -> Arc<SegmentPlan> {
        Arc::new(SegmentPlan { boundaries: boundaries.to_vec() })
    }

    const RECORD: VerifiedRecord = VerifiedRecord { inode: 1, size: 100, mtime_ns: 2 };

    /// Fed in any pieces, each range of whole segments has the CRC32C of its bytes.
    #[test]
    fn a_run_of_segments_has_the_crc_of_its_bytes_however_the_bytes_arrived() {
        let bytes: Vec<u8> = (0..100u32).map(|i| (i * 7 + 3) as u8).collect();
        let p = plan(&[0, 8, 30, 31, 64, 100]);
        for piece in [1, 3, 7, 64, 100] {
            let mut crcs = SegmentCrcs::new(p.clone());
            bytes.chunks(piece).for_each(|c| crcs.update(c));
            let sums = crcs.finish(RECORD).expect("every byte fed");
            for (s, e) in [(0, 8), (8, 64), (30, 31), (0, 100), (31, 100)] {
                let want = crc32c::crc32c(&bytes[s as usize..e as usize]);
                assert_eq!(sums.range_crc(s, e), Some(want), "[{s}, {e}) in pieces of {piece}");
            }
            assert_eq!(sums.range_crc(8, 9), None, "9 is not a boundary");
            assert_eq!(sums.range_crc(30, 30), None, "an empty range");
        }
    }

    #[test]
    fn an_incomplete_file_has_no_sidecar() {
        let mut crcs = SegmentCrcs::new(plan(&[0, 8, 100]));
        crcs.update(&[0; 99]);
        assert!(crcs.finish(RECORD).is_none());
        crcs.update(&[0; 5]);
        assert_eq!(crcs.position(), 100, "bytes past the end are not counted");
        assert!(crcs.finish(RECORD).is_some());
    }

    #[test]
    fn the_sidecar_lives_beside_the_store_manifest_under_the_repo_path() {
        let p = sidecar_path(Path::new("/m"), "sub/model-00001.safetensors");
        assert_eq!(p, Path::new("/m/.k3-desktop/crc32c/sub/model-00001.safetensors.json"));
    }
}
