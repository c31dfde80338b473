//! The download's fault seam under SQLite: a VFS whose writes, truncations, syncs and
//! deletions go through a [`WriteStorage`] (a `FaultyStorage` in the tests), so the chat
//! history meets the same short writes, failed `fsync`s and power cuts as the download.
//!
//! Owns: [`install`] — registers the VFS `k3-storage` as the process's default, wrapping
//! the operating system's VFS; [`use_storage`] — the storage files opened from then on
//! write through (`None`: they write as the OS VFS does). Opening, locking, shared memory
//! and reads stay with the OS VFS; the read-write files (database, WAL, journal) also get a
//! [`StoredFile`] from the storage when they open, and every change to their bytes goes
//! through it.
//! Must not: run beside other SQLite users of the process that expect the OS VFS to
//! write: it is the default for every connection opened after [`install`].
//! Easy to break: the stored file is a second descriptor of the same file, and closing a
//! descriptor drops every POSIX lock the process holds on that file. It closes together
//! with SQLite's own, which is safe with one connection per file at a time, as the tests
//! use it; two connections to one file would lose each other's locks.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use k3_io::storage::{OpenMode, StoredFile, WriteStorage};
use rusqlite::ffi;

/// The name the VFS is registered under.
pub const VFS_NAME: &CStr = c"k3-storage";

/// The storage new files write through.
static STORAGE: RwLock<Option<Arc<dyn WriteStorage>>> = RwLock::new(None);
/// The OS VFS, found once at [`install`].
static OS_VFS: OnceLock<usize> = OnceLock::new();

/// One open file: SQLite's header first (it reads `pMethods` there), then the OS VFS's own
/// file object in the same allocation, at `os_offset()`.
#[repr(C)]
struct WrappedFile {
    base: ffi::sqlite3_file,
    os: *mut ffi::sqlite3_file,
    stored: Option<Box<dyn StoredFile>>,
    path: Option<PathBuf>,
    /// Created by this open: its first sync also syncs the folder, as the OS VFS does.
    created: bool,
}

/// Where the OS VFS's file object starts in an allocation of `szOsFile` bytes.
const fn os_offset() -> usize {
    std::mem::size_of::<WrappedFile>().next_multiple_of(16)
}

/// Registers the VFS as the default (once); later calls do nothing.
pub fn install() -> Result<(), String> {
    if OS_VFS.get().is_some() {
        return Ok(());
    }
    // SAFETY: `sqlite3_vfs_find(NULL)` initializes SQLite and returns its default VFS,
    // which lives as long as the process; it is copied, not changed.
    let os = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
    if os.is_null() {
        return Err("SQLite has no default VFS".into());
    }
    // SAFETY: `os` is SQLite's registered default VFS (checked non-null above).
    let mut vfs = unsafe { *os };
    vfs.szOsFile = (os_offset() + vfs.szOsFile as usize) as c_int;
    vfs.zName = VFS_NAME.as_ptr();
    vfs.pNext = std::ptr::null_mut();
    vfs.xOpen = Some(open);
    vfs.xDelete = Some(delete);
    let _ = OS_VFS.set(os as usize);
    let vfs = Box::leak(Box::new(vfs));
    // SAFETY: `vfs` is leaked, so it outlives every connection; 1 makes it the default.
    let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 1) };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(format!("sqlite3_vfs_register: {rc}"))
    }
}

/// The storage files opened from now on write through (`None`: as the OS VFS does).
pub fn use_storage(storage: Option<Arc<dyn WriteStorage>>) {
    *STORAGE.write().unwrap_or_else(|p| p.into_inner()) = storage;
}

fn storage() -> Option<Arc<dyn WriteStorage>> {
    STORAGE.read().unwrap_or_else(|p| p.into_inner()).clone()
}

fn os_vfs() -> *mut ffi::sqlite3_vfs {
    OS_VFS.get().map_or(std::ptr::null_mut(), |&p| p as *mut ffi::sqlite3_vfs)
}

fn path_of(name: *const c_char) -> Option<PathBuf> {
    if name.is_null() {
        return None;
    }
    // SAFETY: SQLite passes a NUL-terminated file name that outlives the call.
    let name = unsafe { CStr::from_ptr(name) };
    name.to_str().ok().map(PathBuf::from)
}

/// SQLite's code for an I/O error of an operation (`ENOSPC` is "disk full").
fn code(e: &io::Error, otherwise: c_int) -> c_int {
    if e.raw_os_error() == Some(libc::ENOSPC) {
        ffi::SQLITE_FULL
    } else {
        otherwise
    }
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let os = os_vfs();
    let os_file = file.cast::<u8>().add(os_offset()).cast::<ffi::sqlite3_file>();
    (*file).pMethods = std::ptr::null();
    let path = path_of(name);
    let existed = path.as_deref().is_some_and(Path::exists);
    let Some(os_open) = (*os).xOpen else { return ffi::SQLITE_CANTOPEN };
    let rc = os_open(os, name, os_file, flags, out_flags);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let writable = flags & ffi::SQLITE_OPEN_READONLY == 0 && flags & ffi::SQLITE_OPEN_DELETEONCLOSE == 0;
    let stored = match (storage(), &path) {
        (Some(storage), Some(p)) if writable => match storage.open(p, OpenMode::ReadWrite { truncate: false }) {
            Ok(f) => Some(f),
            Err(_) => {
                if let Some(close) = (*(*os_file).pMethods).xClose {
                    close(os_file);
                }
                return ffi::SQLITE_CANTOPEN;
            }
        },
        _ => None,
    };
    let wrapped =
        WrappedFile { base: ffi::sqlite3_file { pMethods: &METHODS }, os: os_file, stored, path, created: !existed };
    // SAFETY: SQLite gave `szOsFile` bytes, 8-aligned, for this file; the header part is
    // written once here and dropped in `close`.
    file.cast::<WrappedFile>().write(wrapped);
    ffi::SQLITE_OK
}

unsafe extern "C" fn delete(_vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    let os = os_vfs();
    let (Some(storage), Some(path)) = (storage(), path_of(name)) else {
        return match (*os).xDelete {
            Some(f) => f(os, name, sync_dir),
            None => ffi::SQLITE_IOERR_DELETE,
        };
    };
    match storage.remove_file(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return ffi::SQLITE_IOERR_DELETE_NOENT,
        Err(_) => return ffi::SQLITE_IOERR_DELETE,
        Ok(()) => {}
    }
    match path.parent() {
        Some(dir) if sync_dir != 0 && storage.sync_dir(dir).is_err() => ffi::SQLITE_IOERR_DIR_FSYNC,
        _ => ffi::SQLITE_OK,
    }
}

/// The wrapped file behind SQLite's pointer.
unsafe fn wrapped<'a>(file: *mut ffi::sqlite3_file) -> &'a mut WrappedFile {
    // SAFETY (callers): SQLite calls the methods only on files `open` initialized.
    &mut *file.cast::<WrappedFile>()
}

/// The OS VFS's methods for the wrapped file.
unsafe fn os_methods<'a>(file: *mut ffi::sqlite3_file) -> (&'a ffi::sqlite3_io_methods, *mut ffi::sqlite3_file) {
    let os = wrapped(file).os;
    (&*(*os).pMethods, os)
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    let (methods, os) = os_methods(file);
    let rc = methods.xClose.map_or(ffi::SQLITE_OK, |f| f(os));
    // SAFETY: written in `open`; SQLite closes a file once.
    std::ptr::drop_in_place(file.cast::<WrappedFile>());
    rc
}

unsafe extern "C" fn read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: i64) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xRead.map_or(ffi::SQLITE_IOERR_READ, |f| f(os, buf, amount, offset))
}

unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    let w = wrapped(file);
    let Some(stored) = &w.stored else {
        let (methods, os) = os_methods(file);
        return methods.xWrite.map_or(ffi::SQLITE_IOERR_WRITE, |f| f(os, buf, amount, offset));
    };
    // SAFETY: SQLite passes `amount` readable bytes at `buf`.
    let mut bytes = std::slice::from_raw_parts(buf.cast::<u8>(), amount.max(0) as usize);
    let mut at = offset as u64;
    while !bytes.is_empty() {
        match stored.write_at(bytes, at) {
            Ok(0) => return ffi::SQLITE_FULL,
            Ok(n) => {
                bytes = &bytes[n..];
                at += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return code(&e, ffi::SQLITE_IOERR_WRITE),
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    let w = wrapped(file);
    let Some(stored) = &w.stored else {
        let (methods, os) = os_methods(file);
        return methods.xTruncate.map_or(ffi::SQLITE_IOERR_TRUNCATE, |f| f(os, size));
    };
    match stored.set_len(size.max(0) as u64) {
        Ok(()) => ffi::SQLITE_OK,
        Err(e) => code(&e, ffi::SQLITE_IOERR_TRUNCATE),
    }
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let w = wrapped(file);
    let Some(stored) = &w.stored else {
        let (methods, os) = os_methods(file);
        return methods.xSync.map_or(ffi::SQLITE_IOERR_FSYNC, |f| f(os, flags));
    };
    let synced = if flags & ffi::SQLITE_SYNC_DATAONLY != 0 { stored.sync_data() } else { stored.sync_all() };
    if synced.is_err() {
        return ffi::SQLITE_IOERR_FSYNC;
    }
    if w.created {
        let folder = w.path.as_deref().and_then(Path::parent);
        match (storage(), folder) {
            (Some(storage), Some(dir)) if storage.sync_dir(dir).is_err() => return ffi::SQLITE_IOERR_DIR_FSYNC,
            _ => w.created = false,
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xFileSize.map_or(ffi::SQLITE_IOERR_FSTAT, |f| f(os, size))
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xLock.map_or(ffi::SQLITE_IOERR_LOCK, |f| f(os, level))
}

unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xUnlock.map_or(ffi::SQLITE_IOERR_UNLOCK, |f| f(os, level))
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xCheckReservedLock.map_or(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, |f| f(os, out))
}

unsafe extern "C" fn file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xFileControl.map_or(ffi::SQLITE_NOTFOUND, |f| f(os, op, arg))
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xSectorSize.map_or(4096, |f| f(os))
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xDeviceCharacteristics.map_or(0, |f| f(os))
}

unsafe extern "C" fn shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xShmMap.map_or(ffi::SQLITE_IOERR_SHMMAP, |f| f(os, region, size, extend, out))
}

unsafe extern "C" fn shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xShmLock.map_or(ffi::SQLITE_IOERR_SHMLOCK, |f| f(os, offset, n, flags))
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    let (methods, os) = os_methods(file);
    if let Some(f) = methods.xShmBarrier {
        f(os);
    }
}

unsafe extern "C" fn shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    let (methods, os) = os_methods(file);
    methods.xShmUnmap.map_or(ffi::SQLITE_OK, |f| f(os, delete))
}

/// No memory-mapped reads: every read goes through `read`.
unsafe extern "C" fn fetch(
    _file: *mut ffi::sqlite3_file,
    _offset: i64,
    _amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    *out = std::ptr::null_mut();
    ffi::SQLITE_OK
}

unsafe extern "C" fn unfetch(_file: *mut ffi::sqlite3_file, _offset: i64, _page: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};
