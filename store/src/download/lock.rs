//! One download per store (RELIABILITY DL-20): an exclusive advisory lock on
//! `.k3-desktop/lock`, held for the whole run and released by the OS if the process dies.
//!
//! Owns: [`StoreLock`]. Must not: delete the lock file (another process may hold it open).

use std::fs::{File, OpenOptions};
use std::io::Write;

use super::layout::StoreLayout;
use crate::durable::create_dirs;
use crate::error::{StoreError, StoreResult};

/// Held while a download runs; dropping it releases the lock.
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    pub fn acquire(layout: &StoreLayout) -> StoreResult<StoreLock> {
        create_dirs(&layout.k3_dir())?;
        let path = layout.lock();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked { store: layout.root().to_path_buf(), lock: path });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io(&path, e)),
        }
        let _ = file.set_len(0);
        let _ = writeln!(file, "{}", std::process::id());
        Ok(StoreLock { _file: file })
    }
}
