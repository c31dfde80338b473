//! Green / amber / red verdicts with the exact numbers, as pure functions of what was
//! measured (so each is tested with constructed machines).
//!
//! Owns: the CPU verdict (AVX2 + FMA or AVX-512 kernels, else "scalar kernels give identical
//! output, much slower"), the memory verdict (red when `auto` refuses, with usable and
//! needed bytes), and each drive's (FAT32 refused for its 4 GiB file limit, read-only red,
//! short of space red with the shortfall, network file system, rotational or removable
//! drive amber). Texts follow PRODUCT.md §1.1.
//! Must not: measure anything.

use k3_plan::{format_bytes, Budget, PlanError, Preset};
use serde::Serialize;

use super::cpu::CpuInfo;
use super::drive::{Drive, DriveKind};
use super::memory::MemoryInfo;
use super::preset::Recommendation;

/// How an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Green,
    Amber,
    Red,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// `cpu`, `memory`, or `drive <mount point>`.
    pub item: String,
    pub level: Level,
    pub message: String,
}

fn verdict(item: &str, level: Level, message: String) -> Verdict {
    Verdict { item: item.to_string(), level, message }
}

/// The kernels this CPU gets.
pub fn cpu_verdict(cpu: &CpuInfo) -> Verdict {
    let isa = &cpu.isa;
    let cores = format!("{} cores", cpu.logical_cores);
    match cpu.arch.as_str() {
        "x86_64" if isa.avx512f && isa.avx512bw => {
            verdict("cpu", Level::Green, format!("AVX-512 kernels (AVX-512F/BW), {cores}"))
        }
        "x86_64" if isa.avx2 && isa.fma => verdict("cpu", Level::Green, format!("AVX2 + FMA kernels, {cores}")),
        "x86_64" => {
            let missing: Vec<&str> =
                [(isa.avx2, "AVX2"), (isa.fma, "FMA")].into_iter().filter(|(on, _)| !on).map(|(_, n)| n).collect();
            let message =
                format!("This CPU lacks {}. Scalar kernels give identical output, much slower.", missing.join(" and "));
            verdict("cpu", Level::Amber, message)
        }
        "aarch64" if isa.neon => verdict("cpu", Level::Green, format!("NEON kernels, {cores}")),
        arch => verdict(
            "cpu",
            Level::Amber,
            format!("{arch}: no SIMD kernels for this CPU yet. Portable kernels give identical output, much slower."),
        ),
    }
}

/// Red when `auto` refuses; amber when only `auto` fits; green when a named preset fits.
pub fn memory_verdict(
    mem: &MemoryInfo,
    auto: &Result<Budget, PlanError>,
    recommended: Option<Recommendation>,
) -> Verdict {
    let usable = format_bytes(mem.usable_available_bytes);
    match (auto, recommended) {
        (Err(PlanError::AutoTooSmall { usable_bytes, needed_bytes }), _) => verdict(
            "memory",
            Level::Red,
            format!(
                "Usable {} after the reserve; {} needed ({} available)",
                format_bytes(*usable_bytes),
                format_bytes(*needed_bytes),
                usable
            ),
        ),
        (Err(e), _) => verdict("memory", Level::Red, format!("{usable} available: {e}")),
        (Ok(_), None) => verdict("memory", Level::Red, format!("{usable} available: no preset fits")),
        (Ok(b), Some(Recommendation { preset: Preset::Auto, .. })) => verdict(
            "memory",
            Level::Amber,
            format!(
                "{usable} available: no named preset fits with headroom; auto: trunk {}, cache {}",
                format_bytes(b.trunk_bytes),
                format_bytes(b.cache_bytes)
            ),
        ),
        (Ok(_), Some(r)) => verdict(
            "memory",
            Level::Green,
            format!(
                "{usable} available: `{}` holds {}, leaving {} headroom",
                r.preset.name(),
                format_bytes(r.plan_bytes),
                format_bytes(mem.usable_available_bytes.saturating_sub(r.plan_bytes))
            ),
        ),
    }
}

/// What a model store must hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpaceNeed {
    pub checkpoint_bytes: u64,
    pub trunk_bytes: u64,
    /// Kept free beyond the files, as a fraction of them.
    pub margin: f64,
}

impl SpaceNeed {
    pub fn total_bytes(&self) -> u64 {
        ((self.checkpoint_bytes + self.trunk_bytes) as f64 * (1.0 + self.margin)).ceil() as u64
    }

    /// "needs 1.69 TB: 1.56 checkpoint + 0.11 trunk + 1%".
    fn text(&self) -> String {
        format!(
            "needs {} TB: {} checkpoint + {} trunk + {}%",
            tb(self.total_bytes()),
            tb(self.checkpoint_bytes),
            tb(self.trunk_bytes),
            (self.margin * 100.0).round()
        )
    }
}

/// Bytes in TB (10^12) with two decimals.
fn tb(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / 1e12)
}

/// Free bytes in TB, or in GB below 0.1 TB (where two TB decimals say little).
fn free_text(bytes: u64) -> String {
    if bytes >= 100_000_000_000 {
        format!("{} TB", tb(bytes))
    } else {
        format!("{:.1} GB", bytes as f64 / 1e9)
    }
}

/// Every finding for one drive as a model store; a green "fits" when nothing is wrong.
pub fn drive_verdicts(d: &Drive, need: SpaceNeed) -> Vec<Verdict> {
    let item = format!("drive {}", d.mount_point.display());
    let mut out = Vec::new();
    let mut red = |message: String| out.push(verdict(&item, Level::Red, message));
    if super::mounts::is_fat(&d.fs_type) {
        red("FAT32 refused: 4 GiB file limit, shards are ~17 GB (exFAT is fine)".into());
    }
    if d.read_only {
        red("read-only: nothing can be written here".into());
    }
    let total = need.total_bytes();
    if d.free_bytes < total {
        red(format!("{}; {} free: {} TB short", need.text(), free_text(d.free_bytes), tb(total - d.free_bytes)));
    }
    let mut amber = |message: String| out.push(verdict(&item, Level::Amber, message));
    if d.network {
        amber(format!("network file system ({}): file locks unreliable, reads slower than a local drive", d.fs_type));
    }
    if d.kind == DriveKind::Hdd {
        amber("rotational drive: random 17.5 MB expert reads are slow (measure with `k3 bench disk`)".into());
    }
    if let Some(reads) = d.reads.as_deref().filter(|r| r.starts_with("buffered")) {
        amber(format!("weights are read {reads}: streamed reads pass through the page cache"));
    }
    if d.removable == Some(true) {
        amber("removable: the model stops if the drive is unplugged".into());
    }
    if out.is_empty() {
        out.push(verdict(&item, Level::Green, format!("fits: {}; {} free", need.text(), free_text(d.free_bytes))));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::cpu::Isa;
    use std::path::PathBuf;

    const K3: SpaceNeed = SpaceNeed { checkpoint_bytes: 1_560_936_091_448, trunk_bytes: 108_811_952_128, margin: 0.01 };

    fn drive(fs: &str, free_bytes: u64) -> Drive {
        Drive {
            mount_point: PathBuf::from("/mnt/x"),
            device: "/dev/sdb1".into(),
            fs_type: fs.into(),
            total_bytes: 4_000_000_000_000,
            free_bytes,
            kind: DriveKind::Ssd,
            removable: Some(false),
            read_only: false,
            network: false,
            paths: vec![],
            reads: Some("O_DIRECT".into()),
            writes: Some("O_DIRECT".into()),
        }
    }

    fn levels(v: &[Verdict]) -> Vec<Level> {
        v.iter().map(|v| v.level).collect()
    }

    #[test]
    fn short_of_space_says_the_need_the_free_bytes_and_the_shortfall() {
        let v = drive_verdicts(&drive("ext4", 1_200_000_000_000), K3);
        assert_eq!(levels(&v), vec![Level::Red]);
        assert_eq!(v[0].message, "needs 1.69 TB: 1.56 checkpoint + 0.11 trunk + 1%; 1.20 TB free: 0.49 TB short");
        assert_eq!(v[0].item, "drive /mnt/x");
        let fits = drive_verdicts(&drive("ext4", 2_000_000_000_000), K3);
        assert_eq!(levels(&fits), vec![Level::Green]);
        assert_eq!(fits[0].message, "fits: needs 1.69 TB: 1.56 checkpoint + 0.11 trunk + 1%; 2.00 TB free");
    }

    #[test]
    fn fat32_and_read_only_are_red_and_exfat_is_fine() {
        let fat = drive_verdicts(&drive("vfat", 3_000_000_000_000), K3);
        assert_eq!(levels(&fat), vec![Level::Red]);
        assert!(fat[0].message.starts_with("FAT32 refused: 4 GiB file limit"), "{}", fat[0].message);
        assert_eq!(levels(&drive_verdicts(&drive("exfat", 3_000_000_000_000), K3)), vec![Level::Green]);
        let ro = drive_verdicts(&Drive { read_only: true, ..drive("ext4", 3_000_000_000_000) }, K3);
        assert_eq!(levels(&ro), vec![Level::Red]);
        assert!(ro[0].message.contains("read-only"));
    }

    #[test]
    fn network_rotational_and_removable_drives_are_amber() {
        let nfs =
            Drive { network: true, kind: DriveKind::Unknown, removable: None, ..drive("nfs4", 3_000_000_000_000) };
        let v = drive_verdicts(&nfs, K3);
        assert_eq!(levels(&v), vec![Level::Amber]);
        assert!(v[0].message.starts_with("network file system (nfs4)"), "{}", v[0].message);
        let usb = Drive { kind: DriveKind::Hdd, removable: Some(true), ..drive("ext4", 3_000_000_000_000) };
        assert_eq!(levels(&drive_verdicts(&usb, K3)), vec![Level::Amber, Level::Amber]);
        let short_nfs = drive_verdicts(&Drive { free_bytes: 43_740_000_000, ..nfs }, K3);
        assert_eq!(levels(&short_nfs), vec![Level::Red, Level::Amber], "every finding is listed");
        assert!(short_nfs[0].message.ends_with("; 43.7 GB free: 1.64 TB short"), "{}", short_nfs[0].message);
    }

    #[test]
    fn a_drive_whose_file_system_refuses_the_cache_bypass_is_amber_and_says_why() {
        let why = "buffered (the file system refuses O_DIRECT; pages are dropped after each read)";
        let v = drive_verdicts(&Drive { reads: Some(why.into()), ..drive("fuse", 3_000_000_000_000) }, K3);
        assert_eq!(levels(&v), vec![Level::Amber]);
        assert!(v[0].message.contains("refuses O_DIRECT"), "{}", v[0].message);
        for direct in ["O_DIRECT", "F_NOCACHE", "FILE_FLAG_NO_BUFFERING"] {
            let fine = Drive { reads: Some(direct.into()), ..drive("ext4", 3_000_000_000_000) };
            assert_eq!(levels(&drive_verdicts(&fine, K3)), vec![Level::Green], "{direct}");
        }
    }

    fn cpu(arch: &str, isa: Isa) -> CpuInfo {
        CpuInfo {
            model: "test".into(),
            arch: arch.into(),
            logical_cores: 8,
            physical_cores: Some(4),
            isa,
            os: "test".into(),
        }
    }

    #[test]
    fn a_cpu_without_avx2_or_fma_is_amber_with_the_scalar_warning() {
        let none = cpu_verdict(&cpu("x86_64", Isa::default()));
        assert_eq!(none.level, Level::Amber);
        assert_eq!(none.message, "This CPU lacks AVX2 and FMA. Scalar kernels give identical output, much slower.");
        let no_fma = cpu_verdict(&cpu("x86_64", Isa { avx2: true, ..Isa::default() }));
        assert!(no_fma.message.starts_with("This CPU lacks FMA."), "{}", no_fma.message);
        let avx2 = cpu_verdict(&cpu("x86_64", Isa { avx2: true, fma: true, ..Isa::default() }));
        assert_eq!((avx2.level, avx2.message.as_str()), (Level::Green, "AVX2 + FMA kernels, 8 cores"));
        let all = Isa { avx2: true, fma: true, avx512f: true, avx512bw: true, ..Isa::default() };
        assert!(cpu_verdict(&cpu("x86_64", all)).message.starts_with("AVX-512 kernels"));
        let neon = cpu_verdict(&cpu("aarch64", Isa { neon: true, ..Isa::default() }));
        assert_eq!((neon.level, neon.message.as_str()), (Level::Green, "NEON kernels, 8 cores"));
        assert_eq!(cpu_verdict(&cpu("riscv64", Isa::default())).level, Level::Amber);
    }

    fn mem(usable: u64) -> MemoryInfo {
        MemoryInfo {
            total_bytes: usable,
            available_bytes: usable,
            swap_total_bytes: 0,
            swap_free_bytes: 0,
            compressed_bytes: None,
            cgroup_limit_bytes: None,
            usable_available_bytes: usable,
        }
    }

    #[test]
    fn memory_is_red_when_auto_refuses_and_amber_when_only_auto_fits() {
        let refused = Err(PlanError::AutoTooSmall { usable_bytes: 2_100_000_000, needed_bytes: 3_000_000_000 });
        let v = memory_verdict(&mem(10_000_000_000), &refused, None);
        assert_eq!(v.level, Level::Red);
        assert_eq!(v.message, "Usable 2.10 GB after the reserve; 3.00 GB needed (10.00 GB available)");
        let budget = Budget { trunk_bytes: 3_000_000_000, cache_bytes: 500_000_000 };
        let auto_fits = Recommendation { preset: Preset::Auto, plan_bytes: 19_000_000_000 };
        let auto = memory_verdict(&mem(20_000_000_000), &Ok(budget), Some(auto_fits));
        assert_eq!(auto.level, Level::Amber);
        assert!(auto.message.contains("auto: trunk 3.00 GB, cache 500.00 MB"), "{}", auto.message);
        let laptop_fits = Recommendation { preset: Preset::Laptop, plan_bytes: 19_500_000_000 };
        let laptop = memory_verdict(&mem(30_000_000_000), &Ok(budget), Some(laptop_fits));
        assert_eq!(laptop.level, Level::Green);
        assert_eq!(laptop.message, "30.00 GB available: `laptop` holds 19.50 GB, leaving 10.50 GB headroom");
    }
}
