//! [`ScratchFile`]: incompressible bytes on the drive under test, written without filling
//! the page cache, removed on drop (also after an error or a cancel).
//!
//! Owns: the scratch file's name, its O_DIRECT writes from one aligned buffer, and the
//! fallback where a file system refuses O_DIRECT (buffered writes, `fdatasync`, then
//! `POSIX_FADV_DONTNEED`, a chunk at a time).
//! Must not: leave the file behind: [`ScratchFile`] exists before the first byte is
//! written, so every early return removes it; or fill the drive: a size that would leave
//! less than [`SPACE_LEFT_FREE`] is refused before a byte is written.
//! Easy to break: O_DIRECT writes need whole 4096-byte pages: sizes round up to MiB.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use k3_io::Blob;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::cache::drop_cached_file;
use super::{DiskBenchError, MIB};

/// Bytes written per call.
const CHUNK_BYTES: usize = 16 * MIB;

/// Space a scratch file must leave free on its drive.
pub const SPACE_LEFT_FREE: u64 = 1 << 30;

/// Scratch files made by this process so far (names stay distinct).
static MADE: AtomicUsize = AtomicUsize::new(0);

/// A file of incompressible bytes on the drive under test, removed on drop.
pub struct ScratchFile {
    path: PathBuf,
}

impl ScratchFile {
    /// Writes `bytes` (rounded up to MiB) of seeded random data into `dir`, keeping it out
    /// of the page cache; stops with [`DiskBenchError::Cancelled`] when `cancel` is raised.
    pub fn create(dir: &Path, bytes: u64, cancel: &AtomicBool) -> Result<ScratchFile, DiskBenchError> {
        let total = bytes.div_ceil(MIB as u64).saturating_mul(MIB as u64);
        // Probe finding: a 10 TB scratch size wrote until the file system was full.
        let free = fs4::available_space(dir).map_err(|e| DiskBenchError::io(dir, e))?;
        if total.saturating_add(SPACE_LEFT_FREE) > free {
            return Err(DiskBenchError::NoSpace { dir: dir.to_path_buf(), needs: total, free });
        }
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".k3-disk-bench-{}-{n}.bin", std::process::id()));
        let scratch = ScratchFile { path };
        let (file, direct) = open_for_writing(&scratch.path)?;
        let mut rng = ChaCha8Rng::seed_from_u64(0x6b33);
        let mut chunk = Blob::zeroed(CHUNK_BYTES);
        let mut done = 0u64;
        while done < total {
            if cancel.load(Ordering::Relaxed) {
                return Err(DiskBenchError::Cancelled);
            }
            let len = (total - done).min(CHUNK_BYTES as u64) as usize;
            let buf = &mut chunk.pages_mut()[..len];
            rng.fill_bytes(buf);
            k3_io::os::write_all_at(&file, buf, done).map_err(|e| DiskBenchError::io(&scratch.path, e))?;
            if !direct {
                file.sync_data().map_err(|e| DiskBenchError::io(&scratch.path, e))?;
                drop_cached_file(&file, &scratch.path)?;
            }
            done += len as u64;
        }
        file.sync_all().map_err(|e| DiskBenchError::io(&scratch.path, e))?;
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Opens `path` for writes that bypass the page cache (`k3_io::os`), or buffered
/// ones where the file system refuses; true when they bypass it.
fn open_for_writing(path: &Path) -> Result<(File, bool), DiskBenchError> {
    let (file, bypass) = k3_io::os::create_uncached(path).map_err(|e| DiskBenchError::io(path, e))?;
    Ok((file, bypass.bypasses_cache()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_file_has_its_size_and_is_removed_on_drop_and_on_cancel() {
        let dir = tempfile::tempdir().unwrap();
        let never = AtomicBool::new(false);
        let s = ScratchFile::create(dir.path(), 3 * MIB as u64 - 5, &never).unwrap();
        assert_eq!(std::fs::metadata(s.path()).unwrap().len(), 3 * MIB as u64);
        let bytes = std::fs::read(s.path()).unwrap();
        assert!(bytes.iter().filter(|&&b| b == 0).count() < bytes.len() / 100, "random bytes, not zeros");
        let path = s.path().to_path_buf();
        drop(s);
        assert!(!path.exists());
        let cancelled = AtomicBool::new(true);
        let err = ScratchFile::create(dir.path(), 32 * MIB as u64, &cancelled).err();
        assert!(matches!(err, Some(DiskBenchError::Cancelled)), "{err:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "a cancelled scratch file is removed");
    }
}
