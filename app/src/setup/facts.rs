//! This machine as the wizard's Hardware and Drives screens show it, and the same findings
//! as the flow's [`Facts`]: the doctor's verdicts (k3-store) with their exact numbers.
//!
//! Owns: [`MachineView`], [`Card`], [`DriveRow`], [`examine`]. Must not: judge anything
//! itself: every level and message is the doctor's.

use std::path::PathBuf;

use k3_store::doctor::drives::{Drive, DriveKind};
use k3_store::doctor::preset::RunShape;
use k3_store::doctor::verdict::{drive_verdicts, Level, SpaceNeed, Verdict};

use super::flow::{DriveFacts, Facts};
use super::settings::DEFAULT_REPO;
use crate::error::{AppError, ErrorKind};

/// One green/amber/red finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub item: String,
    /// `green`, `amber` or `red`.
    pub level: String,
    pub title: String,
    pub message: String,
}

/// One volume as a possible model store.
#[derive(Debug, Clone, PartialEq)]
pub struct DriveRow {
    pub mount: String,
    pub fs: String,
    /// `ssd`, `hdd`, `virtual` or `unknown`.
    pub kind: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub level: String,
    pub message: String,
    /// The folders asked about that live here.
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MachineView {
    pub cpu: Card,
    pub memory: Card,
    pub cpu_text: String,
    pub memory_text: String,
    pub drives: Vec<DriveRow>,
    pub recommended_preset: Option<String>,
}

fn level(l: Level) -> &'static str {
    match l {
        Level::Green => "green",
        Level::Amber => "amber",
        Level::Red => "red",
    }
}

/// A drive's kind as the UI names it.
pub(crate) fn kind(k: DriveKind) -> &'static str {
    match k {
        DriveKind::Ssd => "ssd",
        DriveKind::Hdd => "hdd",
        DriveKind::Virtual => "virtual",
        DriveKind::Unknown => "unknown",
    }
}

fn card(v: &Verdict, title: &str) -> Card {
    Card { item: v.item.clone(), level: level(v.level).into(), title: title.into(), message: v.message.clone() }
}

/// The space `repo` needs: the released checkpoint's, or nothing known yet for another
/// repository (its download checks the exact need before its first byte).
fn need_for(repo: &str) -> Option<SpaceNeed> {
    (repo == DEFAULT_REPO).then(k3_store::doctor::k3_space_need)
}

/// The worst verdict of a drive, for its row.
fn drive_row(d: &Drive, repo: &str) -> (DriveRow, Vec<Verdict>) {
    let verdicts =
        drive_verdicts(d, need_for(repo).unwrap_or(SpaceNeed { checkpoint_bytes: 0, trunk_bytes: 0, margin: 0.0 }));
    let worst = verdicts.iter().max_by_key(|v| v.level as u8).cloned();
    let (lvl, mut message) = worst.map(|v| (level(v.level), v.message)).unwrap_or(("green", String::new()));
    if need_for(repo).is_none() && lvl == "green" {
        message = format!(
            "{:.1} GB free; the download checks the exact need before its first byte",
            d.free_bytes as f64 / 1e9
        );
    }
    let row = DriveRow {
        mount: d.mount_point.display().to_string(),
        fs: d.fs_type.clone(),
        kind: kind(d.kind).into(),
        total_bytes: d.total_bytes,
        free_bytes: d.free_bytes,
        level: lvl.into(),
        message,
        paths: d.paths.iter().map(|p| p.display().to_string()).collect(),
    };
    (row, verdicts)
}

/// Examines this machine (every volume, plus `store`'s) and the flow's facts about it.
pub fn examine(store: Option<&str>, repo: &str, context_length: usize) -> Result<(MachineView, Facts), AppError> {
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Some(s) = store {
        let p = PathBuf::from(s);
        // The folder may not exist yet: judge the nearest existing parent.
        let existing = p.ancestors().find(|a| a.exists()).map(|a| a.to_path_buf()).unwrap_or(p);
        paths.push(existing);
    }
    let shape = RunShape {
        context_length: context_length as u64,
        io_threads: k3_engine::MemoryOptions::resident().io_threads as u64,
    };
    let all = k3_store::doctor::examine(&[], shape).map_err(|e| AppError::new(ErrorKind::Io, e.to_string()))?;
    let chosen = if paths.is_empty() {
        Vec::new()
    } else {
        k3_store::doctor::drives::list_drives(&paths).map_err(|e| AppError::new(ErrorKind::Io, e.to_string()))?
    };
    let find = |item: &str| all.verdicts.iter().find(|v| v.item == item).cloned();
    let cpu_v = find("cpu").unwrap_or(Verdict { item: "cpu".into(), level: Level::Amber, message: "unknown".into() });
    let mem_v =
        find("memory").unwrap_or(Verdict { item: "memory".into(), level: Level::Amber, message: "unknown".into() });
    let mut facts = Facts::default();
    if cpu_v.level != Level::Green {
        facts.cpu_problem = Some(cpu_v.message.clone());
    }
    if mem_v.level == Level::Red {
        facts.memory_problem = Some(mem_v.message.clone());
    }
    let mut rows: Vec<DriveRow> = all.drives.iter().map(|d| drive_row(d, repo).0).collect();
    if let Some(d) = chosen.first() {
        let (row, verdicts) = drive_row(d, repo);
        facts.store_drive = Some(drive_facts(d, &verdicts));
        if let Some(existing) = rows.iter_mut().find(|r| r.mount == row.mount) {
            *existing = row;
        } else {
            rows.push(row);
        }
    }
    let cpu = &all.cpu;
    let m = &all.memory;
    let view = MachineView {
        cpu: card(&cpu_v, "Processor"),
        memory: card(&mem_v, "Memory"),
        cpu_text: format!("{} · {} · {} cores · {}", cpu.model, cpu.arch, cpu.logical_cores, cpu.isa.names().join(" ")),
        memory_text: format!(
            "{:.1} GB total · {:.1} GB available · swap {:.1} GB{}{}",
            m.total_bytes as f64 / 1e9,
            m.available_bytes as f64 / 1e9,
            m.swap_total_bytes as f64 / 1e9,
            // The compressor's RAM (macOS; zswap on Linux), when there is any.
            m.compressed_bytes
                .filter(|c| *c > 0)
                .map(|c| format!(" · compressed {:.1} GB", c as f64 / 1e9))
                .unwrap_or_default(),
            m.cgroup_limit_bytes.map(|c| format!(" · limit {:.1} GB", c as f64 / 1e9)).unwrap_or_default()
        ),
        drives: rows,
        recommended_preset: all.recommended_preset.map(str::to_string),
    };
    Ok((view, facts))
}

fn drive_facts(d: &Drive, verdicts: &[Verdict]) -> DriveFacts {
    let red = |needle: &str| {
        verdicts.iter().find(|v| v.level == Level::Red && v.message.contains(needle)).map(|v| v.message.clone())
    };
    DriveFacts {
        short: red("short"),
        unsuitable: red("FAT32").or_else(|| red("read-only")),
        network: d.network.then(|| d.fs_type.clone()),
    }
}
