//! [`MemoryPressure`]: how hard the system is pressed for memory, as each system measures
//! it — Linux's PSI (`some avg10`), macOS's memory-pressure level
//! (`kern.memorystatus_vm_pressure_level`), Windows' commit charge against its limit — and
//! the one rule the pressure guard applies to each ([`MemoryPressure::is_high`]).
//!
//! Must not: turn one system's measure into another's: a level is not a percentage, and a
//! commit charge is not a stall.

/// macOS's memory-pressure levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PressureLevel {
    Normal,
    Warning,
    Critical,
}

/// One reading of memory pressure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoryPressure {
    /// Linux: the percent of the last 10 s in which some task stalled on memory.
    StallPercent(f64),
    /// macOS: the kernel's memory-pressure level.
    Level(PressureLevel),
    /// Windows: committed memory as a percent of the commit limit (RAM plus page files).
    CommitPercent(f64),
}

/// PSI `some avg10` at which the guard warns.
pub const STALL_WARN_PERCENT: f64 = 10.0;
/// Commit charge (percent of the limit) at which the guard warns: past it, Windows starts
/// refusing allocations once the page files cannot grow.
pub const COMMIT_WARN_PERCENT: f64 = 90.0;

impl MemoryPressure {
    /// True when the system itself says memory is short: PSI at [`STALL_WARN_PERCENT`] or
    /// more, a macOS level of warning or critical, or a commit charge at
    /// [`COMMIT_WARN_PERCENT`] or more.
    pub fn is_high(&self) -> bool {
        match *self {
            MemoryPressure::StallPercent(p) => p >= STALL_WARN_PERCENT,
            MemoryPressure::Level(level) => level >= PressureLevel::Warning,
            MemoryPressure::CommitPercent(c) => c >= COMMIT_WARN_PERCENT,
        }
    }

    /// Linux's PSI figure, when this reading is one.
    pub fn stall_percent(&self) -> Option<f64> {
        match *self {
            MemoryPressure::StallPercent(p) => Some(p),
            MemoryPressure::Level(_) | MemoryPressure::CommitPercent(_) => None,
        }
    }

    /// The reading in words, naming what was measured.
    pub fn describe(&self) -> String {
        match *self {
            MemoryPressure::StallPercent(p) => format!("{p:.1}% of the last 10 s stalled on memory (PSI some avg10)"),
            MemoryPressure::Level(level) => format!(
                "{} (macOS memory pressure)",
                match level {
                    PressureLevel::Normal => "normal",
                    PressureLevel::Warning => "warning",
                    PressureLevel::Critical => "critical",
                }
            ),
            MemoryPressure::CommitPercent(c) => format!("{c:.0}% of the commit limit in use"),
        }
    }
}

/// macOS's `kern.memorystatus_vm_pressure_level` value as a level (1 normal, 2 warning,
/// 4 critical); `None` for any other value.
pub fn level_of(value: i32) -> Option<PressureLevel> {
    match value {
        1 => Some(PressureLevel::Normal),
        2 => Some(PressureLevel::Warning),
        4 => Some(PressureLevel::Critical),
        _ => None,
    }
}

/// The commit charge as a percent of its limit; `None` when the limit is unknown (0).
pub fn commit_percent(limit_bytes: u64, available_bytes: u64) -> Option<f64> {
    (limit_bytes > 0).then(|| (limit_bytes.saturating_sub(available_bytes)) as f64 / limit_bytes as f64 * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_systems_measure_warns_at_its_own_threshold_and_says_what_it_measured() {
        assert!(!MemoryPressure::StallPercent(9.9).is_high() && MemoryPressure::StallPercent(10.0).is_high());
        assert!(!MemoryPressure::Level(PressureLevel::Normal).is_high());
        assert!(MemoryPressure::Level(PressureLevel::Warning).is_high());
        assert!(MemoryPressure::Level(PressureLevel::Critical).is_high());
        assert!(!MemoryPressure::CommitPercent(89.0).is_high() && MemoryPressure::CommitPercent(93.0).is_high());
        assert_eq!(MemoryPressure::Level(PressureLevel::Warning).describe(), "warning (macOS memory pressure)");
        assert_eq!(MemoryPressure::CommitPercent(93.4).describe(), "93% of the commit limit in use");
        assert_eq!(MemoryPressure::StallPercent(12.0).stall_percent(), Some(12.0));
        assert_eq!(MemoryPressure::CommitPercent(12.0).stall_percent(), None);
        assert_eq!(
            (level_of(1), level_of(2), level_of(4), level_of(3)),
            (Some(PressureLevel::Normal), Some(PressureLevel::Warning), Some(PressureLevel::Critical), None)
        );
        assert_eq!(commit_percent(200, 50), Some(75.0));
        assert_eq!(commit_percent(0, 0), None);
    }
}
