//! `doctor::drives` on macOS and Windows: the volumes the `sysinfo` crate lists (mount
//! point, file system, SSD or HDD, removable, read-only) and the bytes this user may still
//! write there (`fs4`: `statvfs`'s `f_bavail`, `GetDiskFreeSpaceExW`).
//!
//! Owns: [`mount_table`], [`storage`], [`measure`] as `drives.rs` uses them.
//! Easy to break: `sysinfo` names a disk by its label or device (not `/dev/…`), so the
//! Linux storage filter does not apply; every listed disk is storage.

use std::ffi::OsStr;
use std::path::Path;

use sysinfo::{Disk, DiskKind, Disks};

use crate::doctor::drive::{Drive, DriveKind};
use crate::doctor::error::DoctorError;
use crate::doctor::mounts::{is_network_fs, Mount};

/// Network file systems as macOS and Windows name them (besides Linux's names).
const NETWORK_FS_OTHER: [&str; 5] = ["smbfs", "afpfs", "webdav", "nfs", "cifs"];

fn text(s: &OsStr) -> String {
    s.to_string_lossy().into_owned()
}

fn mount_of_disk(disk: &Disk) -> Mount {
    let options = vec![if disk.is_read_only() { "ro" } else { "rw" }.to_string()];
    Mount {
        device: text(disk.name()),
        mount_point: disk.mount_point().to_path_buf(),
        fs_type: text(disk.file_system()),
        options,
    }
}

/// This machine's volumes as a mount table: `sysinfo`'s disks, then every root it left
/// out (a drive letter it could not query, as under Wine; macOS's `/`), with what `fs4`
/// can still tell of it.
pub(super) fn mount_table() -> Result<Vec<Mount>, DoctorError> {
    let mut mounts: Vec<Mount> = Disks::new_with_refreshed_list().list().iter().map(mount_of_disk).collect();
    for root in roots() {
        if root.exists() && !mounts.iter().any(|m| m.mount_point == root) {
            let unknown = String::from("unknown");
            mounts.push(Mount {
                device: root.display().to_string(),
                mount_point: root,
                fs_type: unknown,
                options: vec![],
            });
        }
    }
    Ok(mounts)
}

/// The roots every path lives under: drive letters on Windows, `/` elsewhere.
fn roots() -> Vec<std::path::PathBuf> {
    if cfg!(windows) {
        (b'A'..=b'Z').map(|letter| std::path::PathBuf::from(format!("{}:\\", letter as char))).collect()
    } else {
        vec![std::path::PathBuf::from("/")]
    }
}

/// Every listed volume is storage.
pub(super) fn storage(mounts: &[Mount]) -> Vec<Mount> {
    mounts.to_vec()
}

/// The drive behind `mount`, measured at `at` (the mount point or a folder on it).
pub(super) fn measure(mount: &Mount, at: &Path) -> Result<Drive, DoctorError> {
    let disks = Disks::new_with_refreshed_list();
    let disk = disks.list().iter().find(|d| d.mount_point() == mount.mount_point);
    let free_bytes = fs4::available_space(at).map_err(|e| DoctorError::io(at, e))?;
    let total_bytes = match disk {
        Some(d) => d.total_space(),
        None => fs4::total_space(at).map_err(|e| DoctorError::io(at, e))?,
    };
    let fs_lower = mount.fs_type.to_ascii_lowercase();
    let network = is_network_fs(&fs_lower) || NETWORK_FS_OTHER.contains(&fs_lower.as_str());
    Ok(Drive {
        mount_point: mount.mount_point.clone(),
        device: mount.device.clone(),
        fs_type: mount.fs_type.clone(),
        total_bytes,
        free_bytes,
        kind: match disk.map(Disk::kind) {
            Some(DiskKind::SSD) => DriveKind::Ssd,
            Some(DiskKind::HDD) => DriveKind::Hdd,
            Some(DiskKind::Unknown(_)) | None => DriveKind::Unknown,
        },
        removable: disk.map(Disk::is_removable),
        read_only: mount.read_only(),
        network,
        paths: Vec::new(),
        reads: None,
        writes: None,
    })
}
