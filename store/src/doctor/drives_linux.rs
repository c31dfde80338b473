//! `doctor::drives` on Linux: the mount table from `/proc/mounts`, sizes by `statvfs`, and
//! what backs a volume from sysfs.
//!
//! Owns: [`mount_table`], [`storage`], [`measure`] as `drives.rs` uses them, and
//! [`major_minor`] (the kernel's `dev_t` encoding).
//! Easy to break: see `drives.rs` (virtual disks report `rotational = 1`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::sys::statvfs::{statvfs, FsFlags};

use crate::doctor::drive::{Drive, DriveKind};
use crate::doctor::error::DoctorError;
use crate::doctor::mounts::{is_network_fs, parse_mounts, storage_mounts, Mount};

/// This machine's mount table.
pub(super) fn mount_table() -> Result<Vec<Mount>, DoctorError> {
    let table = Path::new("/proc/mounts");
    let text = std::fs::read_to_string(table).map_err(|e| DoctorError::io(table, e))?;
    Ok(parse_mounts(&text))
}

/// The storage mounts among `mounts` (no pseudo file systems, bind mounts collapsed).
pub(super) fn storage(mounts: &[Mount]) -> Vec<Mount> {
    storage_mounts(mounts)
}

/// The drive behind `mount`, measured at `at` (the mount point or a folder on it).
pub(super) fn measure(mount: &Mount, at: &Path) -> Result<Drive, DoctorError> {
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
        reads: None,
        writes: None,
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
