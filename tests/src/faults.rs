//! Storages that fail on purpose, for the seam of `k3_io::storage` (issue 13 item
//! 2, RELIABILITY §4 "Trait seam for faults"): no root, no FUSE.
//!
//! Owns: [`FaultyRead`] — wraps the OS `pread` and, on the reads a [`Target`] matches,
//! injects a [`ReadFault`] (EIO, EINTR, a short read, a delay, a length never asked for)
//! per a [`Times`] schedule, armed and cleared while an engine runs; [`FaultyStorage`] —
//! wraps the real file system for writers and fails its N-th operation with an errno, or
//! cuts the power there: that operation and every later one fail, and [`FaultyStorage::reboot`]
//! puts every file it touched back to what its last `fsync` made durable.
//! Must not: pass vacuously: both count the faults they injected, and tests assert it.
//! Easy to break: the power-cut model drops unsynced *data*; a rename or removal is taken as
//! durable at once (the writers under test `fsync` the folder right after, and the model
//! does not check that they do).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k3_io::storage::{OpenMode, OsRead, OsStorage, PositionedRead, StoredFile, WriteStorage};

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
    /// The power goes at operation `at`: it and every later one fail with `EIO`, and
    /// nothing more reaches the disk until [`FaultyStorage::reboot`].
    PowerCut { at: usize },
}

/// Every file a [`FaultyStorage`] opened: where it is now, and its contents as of its last
/// `fsync` (`None`: never synced, so a power cut leaves no such file).
#[derive(Debug, Default)]
struct Files {
    paths: HashMap<PathBuf, usize>,
    durable: Vec<Option<Vec<u8>>>,
}

/// The real file system with one scheduled fault and a power-cut model.
#[derive(Debug, Clone)]
pub struct FaultyStorage(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    fault: WriteFault,
    ops: AtomicUsize,
    files: Mutex<Files>,
    /// Each operation's name, in order.
    log: Mutex<Vec<&'static str>>,
}

impl Shared {
    /// Counts one operation (`name`) and says whether it may run.
    fn step(&self, name: &'static str) -> io::Result<()> {
        let n = self.ops.fetch_add(1, Ordering::Relaxed);
        self.log.lock().unwrap_or_else(|p| p.into_inner()).push(name);
        match self.fault {
            WriteFault::Fail { at, errno } if n == at => Err(io::Error::from_raw_os_error(errno)),
            WriteFault::PowerCut { at } if n >= at => Err(io::Error::from_raw_os_error(libc::EIO)),
            WriteFault::None | WriteFault::Fail { .. } | WriteFault::PowerCut { .. } => Ok(()),
        }
    }

    fn files(&self) -> MutexGuard<'_, Files> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl FaultyStorage {
    pub fn new(fault: WriteFault) -> FaultyStorage {
        let (ops, files, log) = (AtomicUsize::new(0), Mutex::default(), Mutex::default());
        FaultyStorage(Arc::new(Shared { fault, ops, files, log }))
    }

    /// Operations seen so far (a clean run's count is the loop bound of a fault sweep).
    pub fn ops(&self) -> usize {
        self.0.ops.load(Ordering::Relaxed)
    }

    /// The name of every operation so far, in order (`"write_at"`, `"sync_data"`, `"rename"`…).
    pub fn log(&self) -> Vec<&'static str> {
        self.0.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// After a power cut: every file this storage opened holds what its last `fsync` made
    /// durable (a file never synced is removed).
    pub fn reboot(&self) -> io::Result<()> {
        let files = self.0.files();
        for (path, &id) in &files.paths {
            match &files.durable[id] {
                Some(bytes) => std::fs::write(path, bytes)?,
                None => match std::fs::remove_file(path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                },
            }
        }
        Ok(())
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
    /// Records the file's contents as durable (after a sync).
    fn synced(&self) -> io::Result<()> {
        let bytes = contents(&*self.inner)?;
        if let Some(slot) = self.shared.files().durable.get_mut(self.id) {
            *slot = Some(bytes);
        }
        Ok(())
    }
}

impl StoredFile for FaultyFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.shared.step("write_at")?;
        self.inner.write_at(buf, offset)
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
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.shared.step("sync_data")?;
        self.inner.sync_data()?;
        self.synced()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.shared.step("sync_all")?;
        self.inner.sync_all()?;
        self.synced()
    }
}
