//! The volumes a model could live on: file system, size, free space, and what kind of
//! drive backs them, as the kernel reports it.
//!
//! Owns: [`Drive`] and [`list_drives`] (every storage mount, or the mounts of the given
//! folders): `statvfs` for total/free bytes and `ST_RDONLY`, `/sys/dev/block/MAJ:MIN`
//! (followed from a partition to its disk) for `queue/rotational` and `removable`.
//! Must not: judge: verdicts are [`super::verdict`]'s.
//! Easy to break: virtual disks (virtio, device mapper over them, zram) often report
//! `rotational = 1`; a disk whose sysfs path runs through `virtio` or `/virtual/` is
//! [`DriveKind::Virtual`], not HDD. Free bytes are those an unprivileged user may take
//! (`f_bavail`), not `f_bfree`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::sys::statvfs::{statvfs, FsFlags};
use serde::Serialize;

use super::mounts::{is_network_fs, mount_of, parse_mounts, storage_mounts, Mount};
use super::DoctorError;

/// What backs a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DriveKind {
    Ssd,
    Hdd,
    /// A virtual disk (VM, device mapper, zram): the kernel's rotational flag means little.
    Virtual,
    /// No block device (network, FUSE) or no sysfs entry.
    Unknown,
}

/// One volume.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drive {
    pub mount_point: PathBuf,
    pub device: String,
    pub fs_type: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub kind: DriveKind,
    /// `None` when there is no block device to ask.
    pub removable: Option<bool>,
    pub read_only: bool,
    pub network: bool,
    /// The folders asked about that live on this volume (`--path`).
    pub paths: Vec<PathBuf>,
}

/// Every storage volume when `paths` is empty, else the volumes of `paths` (each once).
pub fn list_drives(paths: &[PathBuf]) -> Result<Vec<Drive>, DoctorError> {
    let table = Path::new("/proc/mounts");
    let text = std::fs::read_to_string(table).map_err(|e| DoctorError::io(table, e))?;
    let mounts = parse_mounts(&text);
    if paths.is_empty() {
        return Ok(storage_mounts(&mounts).iter().filter_map(|m| drive(m, &m.mount_point).ok()).collect());
    }
    let mut drives: Vec<Drive> = Vec::new();
    for path in paths {
        let canonical = path.canonicalize().map_err(|e| DoctorError::io(path, e))?;
        let mount = mount_of(&mounts, &canonical).ok_or_else(|| DoctorError::NoMount(path.clone()))?;
        match drives.iter_mut().find(|d| d.mount_point == mount.mount_point) {
            Some(d) => d.paths.push(path.clone()),
            None => {
                let mut d = drive(mount, &canonical)?;
                d.paths.push(path.clone());
                drives.push(d);
            }
        }
    }
    Ok(drives)
}

/// The drive behind `mount`, measured at `at` (the mount point or a folder on it).
fn drive(mount: &Mount, at: &Path) -> Result<Drive, DoctorError> {
    let vfs = statvfs(at).map_err(|e| DoctorError::io(at, std::io::Error::from(e)))?;
    let unit = vfs.fragment_size() as u64;
    let network = is_network_fs(&mount.fs_type);
    let disk = if network { None } else { std::fs::metadata(at).ok().and_then(|m| disk_dir(m.dev())) };
    Ok(Drive {
        mount_point: mount.mount_point.clone(),
        device: mount.device.clone(),
        fs_type: mount.fs_type.clone(),
        total_bytes: vfs.blocks() as u64 * unit,
        free_bytes: vfs.blocks_available() as u64 * unit,
        kind: disk.as_deref().map_or(DriveKind::Unknown, kind_of),
        removable: disk.as_deref().and_then(|d| flag(&d.join("removable"))),
        read_only: mount.read_only() || vfs.flags().contains(FsFlags::ST_RDONLY),
        network,
        paths: Vec::new(),
    })
}

/// Linux's `dev_t` split into (major, minor).
pub fn major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major, minor)
}

/// The sysfs folder of the whole disk holding device `dev` (a partition's parent).
fn disk_dir(dev: u64) -> Option<PathBuf> {
    let (major, minor) = major_minor(dev);
    let dir = Path::new("/sys/dev/block").join(format!("{major}:{minor}")).canonicalize().ok()?;
    if dir.join("partition").exists() {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir)
    }
}

fn kind_of(disk: &Path) -> DriveKind {
    let text = disk.to_string_lossy();
    if text.contains("/virtio") || text.contains("/virtual/") {
        return DriveKind::Virtual;
    }
    match flag(&disk.join("queue/rotational")) {
        Some(true) => DriveKind::Hdd,
        Some(false) => DriveKind::Ssd,
        None => DriveKind::Unknown,
    }
}

/// A sysfs `0`/`1` file.
fn flag(path: &Path) -> Option<bool> {
    match std::fs::read_to_string(path).ok()?.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(dir.path().canonicalize().unwrap().starts_with(&d.mount_point));
        let missing = list_drives(&[dir.path().join("missing")]).err();
        assert!(matches!(missing, Some(DoctorError::Io { .. })), "{missing:?}");
    }
}
