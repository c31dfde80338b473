//! The volumes a model could live on: file system, size, free space, and what kind of
//! drive backs them, as the kernel reports it.
//!
//! Owns: [`list_drives`] (every storage mount, or the mounts of the given
//! folders). Each system measures in its own file: Linux (`drives_linux.rs`) with
//! `/proc/mounts`, `statvfs` for total/free bytes and `ST_RDONLY`, `/sys/dev/block/MAJ:MIN`
//! (followed from a partition to its disk) for `queue/rotational` and `removable`; macOS
//! and Windows (`drives_sysinfo.rs`) with the `sysinfo` crate's disks (file system, kind,
//! removable, read-only) and `fs4` for the bytes this user may still write.
//! Must not: judge: verdicts are [`super::verdict`]'s.
//! Easy to break: virtual disks (virtio, device mapper over them, zram) often report
//! `rotational = 1`; a disk whose sysfs path runs through `virtio` or `/virtual/` is
//! [`DriveKind::Virtual`], not HDD. Free bytes are those an unprivileged user may take
//! (`f_bavail`), not `f_bfree`.

use std::path::{Path, PathBuf};

pub use super::drive::{Drive, DriveKind};
use super::error::DoctorError;
use super::mounts::{mount_of, Mount};

#[cfg(target_os = "linux")]
#[path = "drives_linux.rs"]
mod volumes;
#[cfg(not(target_os = "linux"))]
#[path = "drives_sysinfo.rs"]
mod volumes;

#[cfg(target_os = "linux")]
pub use volumes::major_minor;

/// Every storage volume when `paths` is empty, else the volumes of `paths` (each once).
pub fn list_drives(paths: &[PathBuf]) -> Result<Vec<Drive>, DoctorError> {
    let mounts = volumes::mount_table()?;
    if paths.is_empty() {
        let storage = volumes::storage(&mounts);
        return Ok(storage.iter().filter_map(|m| volumes::measure(m, &m.mount_point).ok()).collect());
    }
    let mut drives: Vec<Drive> = Vec::new();
    for path in paths {
        let canonical = dunce::canonicalize(path).map_err(|e| DoctorError::io(path, e))?;
        let mount = mount_of(&mounts, &canonical).ok_or_else(|| DoctorError::NoMount(path.clone()))?;
        match drives.iter_mut().find(|d| d.mount_point == mount.mount_point) {
            Some(d) => d.paths.push(path.clone()),
            None => {
                let mut d = volumes::measure(mount, &canonical)?;
                d.paths.push(path.clone());
                drives.push(d);
            }
        }
        if let Some(d) = drives.iter_mut().find(|d| d.mount_point == mount.mount_point) {
            d.reads = d.reads.take().or_else(|| read_mode(&canonical));
            d.writes = d.writes.take().or_else(|| write_mode(&canonical));
        }
    }
    Ok(drives)
}

/// How weight reads bypass the cache for the first regular file in `dir` (the engine's own
/// open, `k3_io::os::open_uncached`), or `None` when `dir` holds no file.
fn read_mode(dir: &Path) -> Option<String> {
    let entries = std::fs::read_dir(dir).ok()?;
    let file = entries.filter_map(Result::ok).map(|e| e.path()).find(|p| p.is_file())?;
    let (_, bypass) = k3_io::os::open_uncached(&file).ok()?;
    Some(bypass.describe())
}

/// How a download's chunks are written into `dir` (`k3_io::storage::write_all_uncached_at`,
/// the download's own path): one aligned block written to a probe file named for this
/// process, which is removed at once; `None` when `dir` takes no file.
fn write_mode(dir: &Path) -> Option<String> {
    use k3_io::storage::{write_all_uncached_at, OpenMode, OsStorage, WriteStorage};
    let probe = dir.join(format!(".k3-doctor-write-probe-{}", std::process::id()));
    let file = OsStorage.open(&probe, OpenMode::CreateNew { owner_only: true }).ok()?;
    let block = k3_io::Blob::zeroed(4096);
    let written = write_all_uncached_at(file.as_ref(), block.bytes(), 0);
    let mode = file.write_bypass().describe();
    drop(file);
    let removed = std::fs::remove_file(&probe);
    written.and(removed).ok().map(|()| mode)
}

/// The mount the existing folder `dir` lives on, from this machine's mount table.
pub fn mount_of_dir(dir: &Path) -> Option<Mount> {
    let mounts = volumes::mount_table().ok()?;
    let canonical = dunce::canonicalize(dir).ok()?;
    mount_of(&mounts, &canonical).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn dev_numbers_split_as_the_kernel_encodes_them() {
        assert_eq!(major_minor(0xfe00), (254, 0));
        assert_eq!(major_minor(0x0803), (8, 3));
        // glibc's makedev(259, 65537): the high minor bits sit above the major's.
        let dev = (259u64 & 0xfff) << 8 | (65537u64 & 0xff) | ((65537u64 & !0xff) << 12);
        assert_eq!(major_minor(dev), (259, 65537));
    }

    #[test]
    fn a_folder_is_found_on_its_volume_with_plausible_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let drives = list_drives(&[dir.path().to_path_buf(), dir.path().join(".")]).unwrap();
        assert_eq!(drives.len(), 1, "two folders on one volume: {drives:?}");
        let d = &drives[0];
        assert_eq!(d.paths.len(), 2);
        assert!(d.total_bytes >= d.free_bytes && d.free_bytes > 0, "{d:?}");
        assert!(dunce::canonicalize(dir.path()).unwrap().starts_with(&d.mount_point));
        let missing = list_drives(&[dir.path().join("missing")]).err();
        assert!(matches!(missing, Some(DoctorError::Io { .. })), "{missing:?}");
    }
}
