//! `/proc/mounts` as [`Mount`]s, and the mount a path lives on.
//!
//! Owns: parsing the mount table (octal escapes such as `\040` for a space), telling
//! storage mounts from pseudo file systems, and network file systems by type.
//! Easy to break: a later mount on the same point shadows an earlier one; a path belongs to
//! the mount with the longest matching mount point.

use std::path::{Path, PathBuf};

/// One line of the mount table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub device: String,
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub options: Vec<String>,
}

impl Mount {
    /// Mounted read-only (`ro` among the options).
    pub fn read_only(&self) -> bool {
        self.options.iter().any(|o| o == "ro")
    }
}

/// Parses the text of `/proc/mounts`; malformed lines are skipped.
pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (device, point, fs, opts) = (f.next()?, f.next()?, f.next()?, f.next()?);
            Some(Mount {
                device: unescape(device),
                mount_point: PathBuf::from(unescape(point)),
                fs_type: fs.to_string(),
                options: opts.split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// Undoes the kernel's `\ooo` octal escapes.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal =
            bytes.get(i + 1..i + 4).filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |acc, c| acc.wrapping_mul(8).wrapping_add(c - b'0')));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// File system types whose files live on another machine.
const NETWORK_FS: [&str; 16] = [
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "sshfs",
    "fuse.sshfs",
    "9p",
    "ceph",
    "glusterfs",
    "fuse.glusterfs",
    "afs",
    "davfs",
    "fuse.rclone",
    "fuse.s3fs",
    "lustre",
];

/// True for a network file system type.
pub fn is_network_fs(fs_type: &str) -> bool {
    NETWORK_FS.contains(&fs_type)
}

/// File system types that are never a drive to keep a model on (images, snaps).
const NOT_STORAGE: [&str; 3] = ["squashfs", "iso9660", "udf"];

/// True for a mount that stores files on a drive or a server (not proc, sysfs, tmpfs, …).
pub fn is_storage(m: &Mount) -> bool {
    (m.device.starts_with("/dev/") && !NOT_STORAGE.contains(&m.fs_type.as_str())) || is_network_fs(&m.fs_type)
}

/// Storage mounts, one per device and file system (bind mounts of it collapse into the
/// shortest mount point).
pub fn storage_mounts(mounts: &[Mount]) -> Vec<Mount> {
    let mut out: Vec<Mount> = Vec::new();
    for m in mounts.iter().filter(|m| is_storage(m)) {
        let same = out.iter_mut().find(|o| o.device == m.device && o.fs_type == m.fs_type);
        match same {
            Some(o) if m.mount_point.as_os_str().len() < o.mount_point.as_os_str().len() => *o = m.clone(),
            Some(_) => {}
            None => out.push(m.clone()),
        }
    }
    out
}

/// FAT file systems: no file over 4 GiB, so no shard fits (RELIABILITY DL-19). Linux
/// says `vfat`/`msdos`, macOS `msdos`, Windows `FAT`/`FAT32`; exFAT holds large files.
pub fn is_fat(fs_type: &str) -> bool {
    matches!(fs_type.to_ascii_lowercase().as_str(), "vfat" | "msdos" | "fat" | "fat16" | "fat32")
}

/// The mount `path` (absolute, canonical) lives on: the longest mount point that is a
/// prefix of it, the latest such line when several mount the same point.
pub fn mount_of<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| path.starts_with(&m.mount_point))
        .max_by_key(|(i, m)| (m.mount_point.components().count(), *i))
        .map(|(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "proc /proc proc rw,relatime 0 0\n\
        /dev/nvme0n1p2 / ext4 rw,relatime 0 0\n\
        /dev/sdb1 /media/My\\040Disk vfat rw,nosuid 0 0\n\
        server:/export /mnt/nfs nfs4 rw,vers=4.2 0 0\n\
        tmpfs /tmp tmpfs rw 0 0\n\
        /dev/nvme0n1p2 /home/me/bind ext4 rw 0 0\n\
        /dev/loop3 /snap/core/1 squashfs ro 0 0\n\
        /dev/sdc1 /mnt/ro ext4 ro,relatime 0 0\n";

    #[test]
    fn the_table_parses_with_escapes_and_options() {
        let m = parse_mounts(TABLE);
        assert_eq!(m.len(), 8);
        assert_eq!(m[2].mount_point, PathBuf::from("/media/My Disk"));
        assert_eq!(m[2].fs_type, "vfat");
        assert!(m[7].read_only() && !m[1].read_only());
        assert_eq!(unescape(r"a\134b\011c\x"), "a\\b\tc\\x");
    }

    #[test]
    fn storage_mounts_skip_pseudo_and_image_file_systems_and_collapse_bind_mounts() {
        let m = parse_mounts(TABLE);
        let points: Vec<_> = storage_mounts(&m).into_iter().map(|m| m.mount_point).collect();
        let want: Vec<PathBuf> = ["/", "/media/My Disk", "/mnt/nfs", "/mnt/ro"].iter().map(PathBuf::from).collect();
        assert_eq!(points, want);
        assert!(is_network_fs("nfs4") && is_network_fs("fuse.sshfs") && !is_network_fs("ext4"));
    }

    #[test]
    fn a_path_belongs_to_its_longest_mount_point() {
        let m = parse_mounts(TABLE);
        let of = |p: &str| mount_of(&m, Path::new(p)).map(|m| m.mount_point.clone());
        assert_eq!(of("/mnt/nfs/models/k3"), Some(PathBuf::from("/mnt/nfs")));
        assert_eq!(of("/mnt/nfsx"), Some(PathBuf::from("/")), "a prefix of the name is not a parent");
        assert_eq!(of("/media/My Disk/x"), Some(PathBuf::from("/media/My Disk")));
    }
}
