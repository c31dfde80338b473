//! Memory presets and human-readable sizes.
//!
//! Owns: the named budgets of spec §11 (`laptop` … `max`, `auto`), the [`BudgetChoice`]
//! a preset or two sizes become, and parsing and printing sizes such as `512MB`, `3GB`,
//! `1.5GiB`. The `auto` rule itself is in [`crate::auto`].
//! Must not: read the machine itself.
//! Easy to break: budgets are decimal (1 GB = 10^9 bytes); `GiB` is binary.

use crate::error::PlanError;
use crate::size::GB;

/// A named memory preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// The smallest plan that still runs: one ring slot holding a piece of a layer, the
    /// fewest expert slots, the embeddings and head read when used.
    Ultra,
    Laptop,
    Desktop,
    Workstation,
    Server,
    Max,
    /// Sized from the machine's available memory.
    Auto,
}

impl Preset {
    pub const ALL: [Preset; 7] = [
        Preset::Ultra,
        Preset::Laptop,
        Preset::Desktop,
        Preset::Workstation,
        Preset::Server,
        Preset::Max,
        Preset::Auto,
    ];

    pub fn parse(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Like [`Preset::parse`], refusing an unknown name with the list of known ones.
    pub fn from_name(name: &str) -> Result<Preset, PlanError> {
        Preset::parse(name).ok_or_else(|| PlanError::UnknownPreset { name: name.to_string() })
    }

    /// The budgets this preset asks for.
    pub fn choice(self) -> BudgetChoice {
        match self.fixed_budget() {
            Some(budget) => BudgetChoice::Fixed(budget),
            None => BudgetChoice::Auto,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Preset::Ultra => "ultra",
            Preset::Laptop => "laptop",
            Preset::Desktop => "desktop",
            Preset::Workstation => "workstation",
            Preset::Server => "server",
            Preset::Max => "max",
            Preset::Auto => "auto",
        }
    }

    /// The fixed budgets of spec §11 (`None` for `auto`); `ultra` is ours: a ring slot for
    /// released K3's largest matrix (the dense FFN's 484 MB) and 17 expert slots.
    pub fn fixed_budget(self) -> Option<Budget> {
        let (trunk, cache) = match self {
            Preset::Ultra => (0.5, 0.3),
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

/// Budgets given explicitly (or by a fixed preset), or sized from the machine (`auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetChoice {
    Fixed(Budget),
    Auto,
}

impl BudgetChoice {
    /// The choice for `--preset NAME`, or for `--trunk-budget`/`--cache-budget` sizes (a
    /// missing one is unlimited). `None` when nothing was given: everything resident.
    pub fn from_flags(
        preset: Option<&str>,
        trunk: Option<&str>,
        cache: Option<&str>,
    ) -> Result<Option<BudgetChoice>, PlanError> {
        if let Some(name) = preset {
            return Preset::from_name(name).map(|p| Some(p.choice()));
        }
        if trunk.is_none() && cache.is_none() {
            return Ok(None);
        }
        let size = |v: Option<&str>| v.map(parse_size).transpose().map(|b| b.unwrap_or(u64::MAX));
        Ok(Some(BudgetChoice::Fixed(Budget { trunk_bytes: size(trunk)?, cache_bytes: size(cache)? })))
    }
}

/// Parses a size: a non-negative number with an optional unit `B`, `KB`, `MB`, `GB`, `TB`
/// (decimal) or `KiB`, `MiB`, `GiB`, `TiB` (binary); a bare number is bytes.
pub fn parse_size(text: &str) -> Result<u64, PlanError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let fail = |reason| PlanError::Size { text: text.to_string(), reason };
    let value: f64 = num.parse().map_err(|_| fail("is not a size"))?;
    // A lowercase `b` is a bit (`3Gb`: gigabits, probe finding: read as gigabytes).
    if unit.ends_with('b') {
        return Err(fail("ends in `b`, bits: sizes are in bytes (B), e.g. 3GB or 512MiB"));
    }
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
        _ => return Err(fail("has an unknown unit (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")),
    };
    let bytes = value * scale;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(fail("is too large"));
    }
    Ok(bytes.round() as u64)
}
