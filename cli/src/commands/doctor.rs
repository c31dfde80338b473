//! `k3 doctor`: this machine as the engine sees it — CPU and kernels, memory and the
//! recommended preset, every volume (or the `--path` folders) as a model store — with a
//! green/amber/red verdict per item, as an aligned report or one JSON object.

use k3_plan::format_bytes;
use k3_store::doctor::{examine, CpuInfo, DoctorError, DoctorReport, Drive, DriveKind, Level, MemoryInfo, RunShape};

use super::{input_error, runtime_error, Failure};
use crate::args::DoctorArgs;

pub fn doctor(args: DoctorArgs) -> Result<(), Failure> {
    let defaults = k3_engine::MemoryOptions::resident();
    let shape = RunShape { context_length: defaults.context_length as u64, io_threads: defaults.io_threads as u64 };
    let report = examine(&args.paths, shape).map_err(failure)?;
    if args.json {
        let text = serde_json::to_string(&report).map_err(|e| runtime_error(e.to_string()))?;
        outln!("{text}");
    } else {
        print_report(&report, shape);
    }
    Ok(())
}

fn failure(e: DoctorError) -> Failure {
    if e.is_input_error() {
        input_error(format!("doctor: {e}"))
    } else {
        runtime_error(format!("doctor: {e}"))
    }
}

fn print_report(r: &DoctorReport, shape: RunShape) {
    outln!("This machine for Kimi K3 (context {} positions, streamed trunk)", shape.context_length);
    outln!();
    print_cpu(&r.cpu);
    print_memory(&r.memory);
    outln!();
    print_drives(&r.drives);
    outln!();
    print_verdicts(r);
    outln!();
    match r.recommended_preset {
        Some(p) => match r.recommended_context {
            Some(c) => outln!(
                "Recommended preset: {p} · its trunk and cache keep up to {c} positions of context here ({} a position)",
                format_bytes(r.kv_bytes_per_position)
            ),
            None => outln!("Recommended preset: {p}"),
        },
        None => outln!("Recommended preset: none (even `auto` does not fit; see memory above)"),
    }
}

fn print_cpu(cpu: &CpuInfo) {
    let physical = cpu.physical_cores.map(|n| format!(" ({n} physical)")).unwrap_or_default();
    outln!("{:<8}{} · {} · {} logical cores{physical}", "CPU", cpu.model, cpu.arch, cpu.logical_cores);
    let isa = cpu.isa.names();
    outln!("{:<8}{}", "ISA", if isa.is_empty() { "no SIMD extensions the kernels use".into() } else { isa.join(" ") });
    outln!("{:<8}{}", "OS", cpu.os);
}

fn print_memory(m: &MemoryInfo) {
    let cgroup = m.cgroup_limit_bytes.map_or("none".into(), format_bytes);
    outln!(
        "{:<8}total {} · available {} · usable {} · cgroup limit {cgroup}",
        "Memory",
        format_bytes(m.total_bytes),
        format_bytes(m.available_bytes),
        format_bytes(m.usable_available_bytes)
    );
    // The compressor (macOS) or zswap's pool (Linux) is RAM holding what would be swapped.
    let compressed =
        m.compressed_bytes.map(|c| format!(" · compressed memory {}", format_bytes(c))).unwrap_or_default();
    outln!("{:<8}{} ({} free){compressed}", "Swap", format_bytes(m.swap_total_bytes), format_bytes(m.swap_free_bytes));
}

fn kind(d: &Drive) -> &'static str {
    match d.kind {
        DriveKind::Ssd => "SSD",
        DriveKind::Hdd => "HDD",
        DriveKind::Virtual => "virtual",
        DriveKind::Unknown => "unknown",
    }
}

fn flags(d: &Drive) -> String {
    let all = [(d.read_only, "read-only"), (d.removable == Some(true), "removable"), (d.network, "network")];
    let on: Vec<&str> = all.into_iter().filter(|(f, _)| *f).map(|(_, n)| n).collect();
    if on.is_empty() {
        "-".into()
    } else {
        on.join(", ")
    }
}

fn print_drives(drives: &[Drive]) {
    outln!("Drives");
    if drives.is_empty() {
        outln!("  (no storage volume found)");
        return;
    }
    let mount_w = drives.iter().map(|d| d.mount_point.display().to_string().len()).max().unwrap_or(5).max(5);
    let fs_w = drives.iter().map(|d| d.fs_type.len()).max().unwrap_or(2).max(2);
    let flags_w = drives.iter().map(|d| flags(d).len()).max().unwrap_or(5).max(5);
    let reads_w = drives.iter().map(|d| d.reads.as_deref().unwrap_or("-").len()).max().unwrap_or(5).max(5);
    let header = ["MOUNT", "FS", "KIND", "TOTAL", "FREE", "FLAGS", "READS", "WRITES"];
    let [m, f, k, t, fr, fl, r, w] = header;
    outln!("  {m:<mount_w$}  {f:<fs_w$}  {k:<7}  {t:>10}  {fr:>10}  {fl:<flags_w$}  {r:<reads_w$}  {w}");
    for d in drives {
        outln!(
            "  {:<mount_w$}  {:<fs_w$}  {:<7}  {:>10}  {:>10}  {:<flags_w$}  {:<reads_w$}  {}",
            d.mount_point.display(),
            d.fs_type,
            kind(d),
            format_bytes(d.total_bytes),
            format_bytes(d.free_bytes),
            flags(d),
            d.reads.as_deref().unwrap_or("-"),
            d.writes.as_deref().unwrap_or("-")
        );
    }
}

fn print_verdicts(r: &DoctorReport) {
    outln!("Verdicts");
    let item_w = r.verdicts.iter().map(|v| v.item.len()).max().unwrap_or(4);
    for v in &r.verdicts {
        let level = match v.level {
            Level::Green => "green",
            Level::Amber => "AMBER",
            Level::Red => "RED",
        };
        outln!("  {level:<5}  {:<item_w$}  {}", v.item, v.message);
    }
}
