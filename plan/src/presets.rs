//! Memory presets and human-readable sizes.
//!
//! Owns: the named budgets of spec §11 (`laptop` … `max`), the `auto` rule that sizes from
//! the machine's available memory, and parsing sizes such as `512MB`, `3GB`, `1.5GiB`.
//! Must not: read the machine itself (the caller passes [`MachineMemory`]).
//! Easy to break: budgets are decimal (1 GB = 10^9 bytes); `GiB` is binary.

/// One decimal gigabyte.
pub const GB: u64 = 1_000_000_000;

/// A named memory preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    Laptop,
    Desktop,
    Workstation,
    Server,
    Max,
    /// Sized from the machine's available memory.
    Auto,
}

impl Preset {
    pub const ALL: [Preset; 6] =
        [Preset::Laptop, Preset::Desktop, Preset::Workstation, Preset::Server, Preset::Max, Preset::Auto];

    pub fn parse(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Preset::Laptop => "laptop",
            Preset::Desktop => "desktop",
            Preset::Workstation => "workstation",
            Preset::Server => "server",
            Preset::Max => "max",
            Preset::Auto => "auto",
        }
    }

    /// The fixed budgets of spec §11 (`None` for `auto`).
    pub fn fixed_budget(self) -> Option<Budget> {
        let (trunk, cache) = match self {
            Preset::Laptop => (3.0, 1.0),
            Preset::Desktop => (16.0, 10.0),
            Preset::Workstation => (60.0, 30.0),
            Preset::Server => (110.0, 13.0),
            Preset::Max => (110.0, 109.0),
            Preset::Auto => return None,
        };
        Some(Budget { trunk_bytes: gb(trunk), cache_bytes: gb(cache) })
    }
}

fn gb(x: f64) -> u64 {
    (x * GB as f64) as u64
}

/// How much RAM the trunk (pinned layers + ring) and the expert cache may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub trunk_bytes: u64,
    pub cache_bytes: u64,
}

/// What the machine has, from `/proc/meminfo` or the platform equivalent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineMemory {
    pub total_bytes: u64,
    pub available_bytes: u64,
}

/// Why `auto` could not size a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoTooSmall {
    pub usable_bytes: u64,
    pub needed_bytes: u64,
}

/// Memory kept free by `auto` beyond the model's fixed needs: 2 GB plus 2 % of what is
/// available (spec §11's reserve, with the model's own fixed bytes in place of K3's).
pub fn auto_headroom(machine: MachineMemory) -> u64 {
    2 * GB + machine.available_bytes / 50
}

/// The `auto` rule of spec §11, generalised from K3's numbers to any model:
/// `usable = available − headroom − fixed`; if the whole trunk plus the smallest useful
/// cache fits, take the whole trunk and give the rest to the cache; else keep a small
/// cache (`min_cache_bytes`) and give the trunk the rest, capped at 55 % of total memory.
pub fn auto_budget(
    machine: MachineMemory,
    fixed_bytes: u64,
    trunk_total_bytes: u64,
    min_cache_bytes: u64,
    min_trunk_bytes: u64,
) -> Result<Budget, AutoTooSmall> {
    let reserve = auto_headroom(machine).saturating_add(fixed_bytes);
    let usable = machine.available_bytes.saturating_sub(reserve);
    let needed = min_cache_bytes.saturating_add(min_trunk_bytes);
    if usable < needed {
        return Err(AutoTooSmall { usable_bytes: usable, needed_bytes: needed });
    }
    if usable - min_cache_bytes >= trunk_total_bytes {
        return Ok(Budget { trunk_bytes: trunk_total_bytes, cache_bytes: usable - trunk_total_bytes });
    }
    let share = (machine.total_bytes as f64 * 0.55) as u64;
    let cap = share.saturating_sub(reserve).saturating_sub(min_cache_bytes).max(min_trunk_bytes);
    Ok(Budget { trunk_bytes: (usable - min_cache_bytes).min(cap), cache_bytes: min_cache_bytes })
}

/// Parses a size: a non-negative number with an optional unit `B`, `KB`, `MB`, `GB`, `TB`
/// (decimal) or `KiB`, `MiB`, `GiB`, `TiB` (binary); a bare number is bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let value: f64 = num.parse().map_err(|_| format!("`{text}` is not a size (try 512MB, 3GB, 1.5GiB)"))?;
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("`{text}`: unknown unit `{unit}` (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")),
    };
    let bytes = value * scale;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("`{text}` is too large"));
    }
    Ok(bytes.round() as u64)
}

/// Formats bytes as decimal GB/MB/KB with the exact count, e.g. `1.29 GB (1,290,000,000 B)`.
pub fn format_bytes(bytes: u64) -> String {
    let (value, unit) = match bytes {
        b if b >= GB => (b as f64 / 1e9, "GB"),
        b if b >= 1_000_000 => (b as f64 / 1e6, "MB"),
        b if b >= 1_000 => (b as f64 / 1e3, "KB"),
        b => return format!("{b} B"),
    };
    format!("{value:.2} {unit}")
}
