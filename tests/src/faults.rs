//! Storages that fail on purpose, for the seam of `k3_io::storage` (issue 13 item
//! 2, RELIABILITY §4 "Trait seam for faults"): no root, no FUSE.
//!
//! Owns: [`FaultyRead`] — wraps the OS `pread` and, on the reads a [`Target`] matches,
//! injects a [`ReadFault`] (EIO, EINTR, a short read, a delay, a length never asked for)
//! per a [`Times`] schedule, armed and cleared while an engine runs; [`FaultyStorage`] —
//! wraps the real file system for writers and fails its N-th operation with an errno, makes
//! it a short write, or cuts the power there: that operation and every later one fail, and
//! [`FaultyStorage::reboot`] puts every file it touched back to what its last `fsync` made
//! durable, or [`FaultyStorage::reboot_torn`] lets each unsynced 512-byte sector land or not.
//! A failed `fsync` loses the data it was to make durable, as Linux does: the pages dirty
//! at the failure are marked clean, so a later `fsync` that succeeds does not write them
//! unless they were written again.
//! Must not: pass vacuously: both count the faults they injected, and tests assert it.
//! Easy to break: the power-cut model drops unsynced *data*; a rename or removal is taken as
//! durable at once (the writers under test `fsync` the folder right after, and the model
//! does not check that they do).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k3_io::storage::{OpenMode, OsRead, OsStorage, PositionedRead, StoredFile, WriteStorage};

/// The errnos tests schedule, for crates without `libc`.
pub use libc::{EIO, ENOSPC};

/// What an armed [`FaultyRead`] does to a read it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFault {
    /// `EIO`, nothing read.
    Eio,
    /// `EINTR`, nothing read.
    Eintr,
    /// Half the asked bytes (whole 4096-byte pages, at least one), as O_DIRECT stops short.
    Short,
    /// The read happens after a pause.
    Delay(Duration),
    /// The read happens and reports one page more than asked.
    TooLong,
}

/// Which reads a fault applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Any,
    /// Reads of this file.
    File(PathBuf),
    /// Reads of this file that cover the byte at this offset.
    Byte(PathBuf, u64),
}

impl Target {
    fn matches(&self, path: &Path, offset: u64, len: usize) -> bool {
        match self {
            Target::Any => true,
            Target::File(p) => p == path,
            Target::Byte(p, at) => p == path && offset <= *at && *at < offset + len as u64,
        }
    }
}

/// How many matching reads are faulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Times {
    /// The first `n` matching reads.
    First(usize),
    /// Every matching read until cleared (a bad sector).
    Always,
}

#[derive(Debug)]
struct Armed {
    target: Target,
    times: Times,
    fault: ReadFault,
}

/// The OS `pread` with faults injected while armed.
#[derive(Debug, Default)]
pub struct FaultyRead {
    armed: Mutex<Option<Armed>>,
    injected: AtomicUsize,
}

impl FaultyRead {
    pub fn new() -> Arc<FaultyRead> {
        Arc::new(FaultyRead::default())
    }

    /// From now on, `fault` on the reads `target` matches, `times` of them.
    pub fn arm(&self, target: Target, times: Times, fault: ReadFault) {
        *self.lock() = Some(Armed { target, times, fault });
    }

    /// No more faults (the disk is well again).
    pub fn clear(&self) {
        *self.lock() = None;
    }

    /// Faults injected so far.
    pub fn injected(&self) -> usize {
        self.injected.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Option<Armed>> {
        self.armed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The fault for this read, if any (consuming one of a `First(n)` schedule).
    fn take(&self, path: &Path, offset: u64, len: usize) -> Option<ReadFault> {
        let mut armed = self.lock();
        let a = armed.as_mut()?;
        if !a.target.matches(path, offset, len) {
            return None;
        }
        let fault = a.fault;
        match &mut a.times {
            Times::Always => {}
            Times::First(0) => return None,
            Times::First(n) => *n -= 1,
        }
        self.injected.fetch_add(1, Ordering::Relaxed);
        Some(fault)
    }
}

impl PositionedRead for FaultyRead {
    fn read_at(&self, file: &File, path: &Path, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let Some(fault) = self.take(path, offset, buf.len()) else {
            return OsRead.read_at(file, path, buf, offset);
        };
        match fault {
            ReadFault::Eio => Err(io::Error::from_raw_os_error(libc::EIO)),
            ReadFault::Eintr => Err(io::Error::from(io::ErrorKind::Interrupted)),
            ReadFault::Short => {
                let short = (buf.len() / 2 / 4096 * 4096).max(4096).min(buf.len());
                OsRead.read_at(file, path, &mut buf[..short], offset)
            }
            ReadFault::Delay(pause) => {
                std::thread::sleep(pause);
                OsRead.read_at(file, path, buf, offset)
            }
            ReadFault::TooLong => OsRead.read_at(file, path, buf, offset).map(|n| n + 4096),
        }
    }
}

/// What a [`FaultyStorage`] does at its N-th operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFault {
    /// Count operations only.
    None,
    /// Operation `at` (from 0) fails with the errno; the others work.
    Fail { at: usize, errno: i32 },
    /// The `nth` `fsync` or `fdatasync` (from 0) fails with the errno.
    FailSync { nth: usize, errno: i32 },
    /// Operation `at`, a write, writes only the first half of its bytes (at least one) and
    /// says so; operation `at + 1` (the caller writing the rest) fails with the errno.
    Short { at: usize, errno: i32 },
    /// The power goes at operation `at`: it and every later one fail with `EIO`, and
    /// nothing more reaches the disk until [`FaultyStorage::reboot`].
    PowerCut { at: usize },
}

/// Every file a [`FaultyStorage`] opened: where it is now, its contents as of its last
/// `fsync` (`None`: never synced, so a power cut leaves no such file), and the pages a
/// failed `fsync` lost (dirty at that failure, not written since).
#[derive(Debug, Default)]
struct Files {
    paths: BTreeMap<PathBuf, usize>,
    durable: Vec<Option<Vec<u8>>>,
    lost: Vec<BTreeSet<usize>>,
}

/// The sector size of the power-cut model: a sector lands whole or not at all.
const SECTOR: usize = 512;
/// The page cache's page: a write to any byte of one makes all of it dirty again.
const PAGE: usize = 4096;

/// The bytes of block `i` of `size` bytes of `bytes` (fewer, or none, past its end).
fn block(bytes: &[u8], size: usize, i: usize) -> &[u8] {
    let start = (i * size).min(bytes.len());
    &bytes[start..(start + size).min(bytes.len())]
}

/// `out`'s block `i` of `size` bytes set to `from`'s (zeros past `from`'s end).
fn copy_block(out: &mut [u8], from: &[u8], size: usize, i: usize) {
    let at = (i * size).min(out.len());
    let end = (at + size).min(out.len());
    let src = block(from, size, i);
    let n = src.len().min(end - at);
    out[at..at + n].copy_from_slice(&src[..n]);
    out[at + n..end].fill(0);
}

/// The pages where `current` and `durable` differ.
fn dirty_pages(durable: Option<&[u8]>, current: &[u8]) -> BTreeSet<usize> {
    let durable = durable.unwrap_or_default();
    let pages = current.len().max(durable.len()).div_ceil(PAGE);
    (0..pages).filter(|&i| block(current, PAGE, i) != block(durable, PAGE, i)).collect()
}

/// What a successful `fsync` makes durable: `current`, except the `lost` pages, which
/// keep their `durable` bytes.
fn after_sync(durable: Option<&[u8]>, lost: &BTreeSet<usize>, current: Vec<u8>) -> Vec<u8> {
    let mut out = current;
    for &page in lost {
        copy_block(&mut out, durable.unwrap_or_default(), PAGE, page);
    }
    out
}

/// A power cut's result: each sector where `current` and `durable` differ comes from
/// either, at random (the `lost` pages' from `durable`), and the length is either's.
fn torn(durable: &[u8], lost: &BTreeSet<usize>, current: &[u8], rng: &mut u64) -> Vec<u8> {
    let mut coin = || {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng & 1 == 1
    };
    let len = if coin() { current.len() } else { durable.len() };
    let mut out = vec![0u8; len];
    for i in 0..len.div_ceil(SECTOR) {
        // A coin for every sector, equal or not: the seed then tears the same sectors
        // whatever bytes a run's clock or SQLite's random salts put in them.
        let heads = coin();
        let lands =
            heads && block(current, SECTOR, i) != block(durable, SECTOR, i) && !lost.contains(&(i * SECTOR / PAGE));
        copy_block(&mut out, if lands { current } else { durable }, SECTOR, i);
    }
    out
}

/// The real file system with one scheduled fault and a power-cut model.
#[derive(Debug, Clone)]
pub struct FaultyStorage(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    fault: WriteFault,
    ops: AtomicUsize,
    syncs: AtomicUsize,
    /// The operation from which the power is off ([`FaultyStorage::cut_power`]).
    cut_at: AtomicUsize,
    files: Mutex<Files>,
    /// Each operation's name, in order.
    log: Mutex<Vec<&'static str>>,
}

impl Shared {
    /// Counts one operation (`name`) and says whether it may run.
    fn step(&self, name: &'static str) -> io::Result<()> {
        self.step_or_short(name).map(|_short| ())
    }

    /// As [`Shared::step`]; `Ok(true)`: a write that must stop halfway.
    fn step_or_short(&self, name: &'static str) -> io::Result<bool> {
        let n = self.ops.fetch_add(1, Ordering::Relaxed);
        self.log.lock().unwrap_or_else(|p| p.into_inner()).push(name);
        if n >= self.cut_at.load(Ordering::Relaxed) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let sync = if name.starts_with("sync_") && name != "sync_dir" {
            Some(self.syncs.fetch_add(1, Ordering::Relaxed))
        } else {
            None
        };
        match self.fault {
            WriteFault::FailSync { nth, errno } if sync == Some(nth) => Err(io::Error::from_raw_os_error(errno)),
            WriteFault::Fail { at, errno } if n == at => Err(io::Error::from_raw_os_error(errno)),
            WriteFault::Short { at, errno } if n == at + 1 => Err(io::Error::from_raw_os_error(errno)),
            WriteFault::Short { at, .. } if n == at => Ok(true),
            WriteFault::PowerCut { at } if n >= at => Err(io::Error::from_raw_os_error(libc::EIO)),
            WriteFault::None
            | WriteFault::Fail { .. }
            | WriteFault::FailSync { .. }
            | WriteFault::Short { .. }
            | WriteFault::PowerCut { .. } => Ok(false),
        }
    }

    /// Whether the power is off (a cut was scheduled and reached).
    fn power_is_off(&self) -> bool {
        let ops = self.ops.load(Ordering::Relaxed);
        ops > self.cut_at.load(Ordering::Relaxed) || matches!(self.fault, WriteFault::PowerCut { at } if ops > at)
    }

    fn files(&self) -> MutexGuard<'_, Files> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl FaultyStorage {
    pub fn new(fault: WriteFault) -> FaultyStorage {
        let (ops, syncs, files, log) = (AtomicUsize::new(0), AtomicUsize::new(0), Mutex::default(), Mutex::default());
        let cut_at = AtomicUsize::new(usize::MAX);
        FaultyStorage(Arc::new(Shared { fault, ops, syncs, cut_at, files, log }))
    }

    /// The power goes now: every later operation fails with `EIO`.
    pub fn cut_power(&self) {
        self.0.cut_at.store(self.0.ops.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Whether the power is off ([`FaultyStorage::cut_power`] or a scheduled cut reached).
    pub fn power_is_off(&self) -> bool {
        self.0.power_is_off()
    }

    /// Whether the scheduled fault has happened (or the power is off).
    pub fn fault_reached(&self) -> bool {
        let (ops, syncs) = (self.ops(), self.0.syncs.load(Ordering::Relaxed));
        match self.0.fault {
            WriteFault::None => self.0.power_is_off(),
            WriteFault::Fail { at, .. } | WriteFault::Short { at, .. } | WriteFault::PowerCut { at } => ops > at,
            WriteFault::FailSync { nth, .. } => syncs > nth,
        }
    }

    /// Operations seen so far (a clean run's count is the loop bound of a fault sweep).
    pub fn ops(&self) -> usize {
        self.0.ops.load(Ordering::Relaxed)
    }

    /// The name of every operation so far, in order (`"write_at"`, `"sync_data"`, `"rename"`…).
    pub fn log(&self) -> Vec<&'static str> {
        self.0.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// After a power cut whose unsynced writes landed in part: each file this storage
    /// opened gets, sector by sector where they differ, what its last `fsync` made durable
    /// or what was written since (never what a failed `fsync` lost), and either length;
    /// `seed` picks. A file never synced is removed.
    pub fn reboot_torn(&self, seed: u64) -> io::Result<()> {
        let files = self.0.files();
        // splitmix64's finalizer: small seeds start the xorshift far apart.
        let mut rng = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        rng = (rng ^ (rng >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        rng = (rng ^ (rng >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        rng = (rng ^ (rng >> 31)) | 1;
        for (path, &id) in &files.paths {
            let Some(durable) = &files.durable[id] else {
                remove_if_there(path)?;
                continue;
            };
            let current = std::fs::read(path).unwrap_or_default();
            std::fs::write(path, torn(durable, &files.lost[id], &current, &mut rng))?;
        }
        Ok(())
    }

    /// After a power cut: every file this storage opened holds what its last `fsync` made
    /// durable (a file never synced is removed).
    pub fn reboot(&self) -> io::Result<()> {
        let files = self.0.files();
        for (path, &id) in &files.paths {
            match &files.durable[id] {
                Some(bytes) => std::fs::write(path, bytes)?,
                None => remove_if_there(path)?,
            }
        }
        Ok(())
    }
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The whole contents of `file`.
fn contents(file: &dyn StoredFile) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; file.size()? as usize];
    k3_io::storage::read_exact_at(file, &mut bytes, 0)?;
    Ok(bytes)
}

impl WriteStorage for FaultyStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn StoredFile>> {
        self.0.step("open")?;
        // What was on disk before this storage touched the file counts as durable.
        let before = std::fs::read(path).ok();
        let inner = OsStorage.open(path, mode)?;
        let mut files = self.0.files();
        let id = match files.paths.get(path) {
            Some(&id) => id,
            None => {
                files.durable.push(before);
                files.lost.push(BTreeSet::new());
                let id = files.durable.len() - 1;
                files.paths.insert(path.to_path_buf(), id);
                id
            }
        };
        Ok(Box::new(FaultyFile { inner, id, shared: self.0.clone() }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.step("rename")?;
        OsStorage.rename(from, to)?;
        let mut files = self.0.files();
        let moved = files.paths.remove(from);
        if let Some(id) = moved {
            files.paths.insert(to.to_path_buf(), id);
        } else {
            files.paths.remove(to);
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.0.step("remove_file")?;
        OsStorage.remove_file(path)?;
        self.0.files().paths.remove(path);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.step("sync_dir")?;
        OsStorage.sync_dir(dir)
    }
}

/// A file opened through a [`FaultyStorage`]: each call is one operation.
struct FaultyFile {
    inner: Box<dyn StoredFile>,
    id: usize,
    shared: Arc<Shared>,
}

impl FaultyFile {
    /// Records the file's contents as durable (after a sync), less what a failed sync lost.
    fn synced(&self) -> io::Result<()> {
        let bytes = contents(&*self.inner)?;
        let mut files = self.shared.files();
        let kept = after_sync(files.durable[self.id].as_deref(), &files.lost[self.id], bytes);
        files.durable[self.id] = Some(kept);
        Ok(())
    }

    /// A sync that failed: the pages dirty now are lost unless written again.
    fn sync_failed(&self, e: io::Error) -> io::Error {
        if let Ok(bytes) = contents(&*self.inner) {
            let mut files = self.shared.files();
            let dirty = dirty_pages(files.durable[self.id].as_deref(), &bytes);
            files.lost[self.id].extend(dirty);
        }
        e
    }

    /// Bytes `[start, end)` were written (or cut off): their pages are dirty again.
    fn rewritten(&self, start: u64, end: u64) {
        let pages = start as usize / PAGE..(end as usize).div_ceil(PAGE);
        self.shared.files().lost[self.id].retain(|p| !pages.contains(p));
    }

    fn sync(&self, name: &'static str, sync: impl Fn(&dyn StoredFile) -> io::Result<()>) -> io::Result<()> {
        match self.shared.step(name) {
            Err(e) if !self.shared.power_is_off() => return Err(self.sync_failed(e)),
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        sync(&*self.inner)?;
        self.synced()
    }
}

impl StoredFile for FaultyFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let short = self.shared.step_or_short("write_at")?;
        let len = if short && buf.len() > 1 { buf.len() / 2 } else { buf.len() };
        let written = self.inner.write_at(&buf[..len], offset)?;
        self.rewritten(offset, offset + written as u64);
        Ok(written)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.shared.step("read_at")?;
        self.inner.read_at(buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        self.shared.step("size")?;
        self.inner.size()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.shared.step("set_len")?;
        self.inner.set_len(len)?;
        self.rewritten(len, u64::MAX / 2);
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        self.sync("sync_data", |f| f.sync_data())
    }
    fn sync_all(&self) -> io::Result<()> {
        self.sync("sync_all", |f| f.sync_all())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage_with(fault: WriteFault, dir: &Path) -> (FaultyStorage, Box<dyn StoredFile>, PathBuf) {
        let path = dir.join("f");
        std::fs::write(&path, vec![1u8; 3 * PAGE]).unwrap();
        let storage = FaultyStorage::new(fault);
        let file = storage.open(&path, OpenMode::ReadWrite { truncate: false }).unwrap();
        (storage, file, path)
    }

    /// Linux after a failed `fsync`: the page dirty then is lost even after a later
    /// `fsync` succeeds, unless it was written again.
    #[test]
    fn a_failed_sync_loses_the_pages_dirty_then_unless_written_again() {
        let dir = crate::scratch_dir("failed-sync");
        let (storage, file, path) = storage_with(WriteFault::FailSync { nth: 0, errno: EIO }, &dir);
        file.write_at(&[2; 10], 0).unwrap();
        file.write_at(&[2; 10], 2 * PAGE as u64).unwrap();
        assert!(file.sync_data().is_err());
        file.write_at(&[3; 10], 2 * PAGE as u64 + 100).unwrap();
        file.sync_data().unwrap();
        storage.reboot().unwrap();
        let after = std::fs::read(&path).unwrap();
        assert_eq!(after[0], 1, "page 0 was lost at the failed sync");
        assert_eq!((after[2 * PAGE], after[2 * PAGE + 100]), (2, 3), "page 2 was written again");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A torn cut keeps every synced byte and lands each unsynced sector whole or not.
    #[test]
    fn a_torn_cut_lands_whole_sectors_and_keeps_what_was_synced() {
        let dir = crate::scratch_dir("torn-cut");
        let mut landed = BTreeSet::new();
        for seed in 1..40 {
            let (storage, file, path) = storage_with(WriteFault::None, &dir);
            file.write_at(&[2; 8], 0).unwrap();
            file.sync_data().unwrap();
            file.write_at(&[4; 2 * SECTOR], SECTOR as u64).unwrap();
            storage.reboot_torn(seed).unwrap();
            let after = std::fs::read(&path).unwrap();
            assert_eq!(&after[..8], &[2; 8], "synced bytes kept");
            for s in 1..3 {
                let sector = &after[s * SECTOR..(s + 1) * SECTOR];
                assert!(
                    sector.iter().all(|&b| b == sector[0]) && [1, 4].contains(&sector[0]),
                    "sector {s} torn inside"
                );
                landed.insert((s, sector[0]));
            }
        }
        assert_eq!(landed.len(), 4, "each sector both landed and not, over the seeds: {landed:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
