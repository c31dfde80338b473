//! How much room a download needs on one file system ([`Need`]) and the message when it
//! is not there ([`Shortfall`], every number in one unit). A leaf: the error type carries
//! a shortfall and the space check returns that error.
//!
//! Owns: [`Need`], [`Shortfall`], [`Unit`], [`tb`].

use std::fmt;
use std::path::PathBuf;

/// What one file system must still hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Need {
    /// Checkpoint bytes not yet durable in the store.
    pub checkpoint: u64,
    /// Bytes of the packed trunk still to be written there.
    pub trunk: u64,
    /// 1% of the whole checkpoint, for metadata, journals and the file system's own needs.
    pub margin: u64,
}

impl Need {
    pub fn total(&self) -> u64 {
        self.checkpoint.saturating_add(self.trunk).saturating_add(self.margin)
    }
}

/// Not enough room, with every number the message needs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Shortfall {
    pub dir: PathBuf,
    pub need: Need,
    pub free: u64,
}

impl Shortfall {
    pub fn short_by(&self) -> u64 {
        self.need.total().saturating_sub(self.free)
    }
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = &self.need;
        let unit = Unit::for_bytes(n.total().max(self.free));
        let mut parts = vec![format!("{} checkpoint", unit.number(n.checkpoint))];
        if n.trunk > 0 {
            parts.push(format!("{} trunk", unit.number(n.trunk)));
        }
        parts.push("1%".into());
        write!(
            f,
            "{}: needs {} ({}); {} free: {} short. Free space, choose another drive, or put the trunk on a second drive",
            self.dir.display(),
            unit.with_name(n.total()),
            parts.join(" + "),
            unit.with_name(self.free),
            unit.with_name(self.short_by())
        )
    }
}

/// A decimal unit (TB = 10¹²) chosen once so every number of a message reads alike.
#[derive(Clone, Copy)]
pub struct Unit {
    scale: f64,
    name: &'static str,
}

impl Unit {
    pub fn for_bytes(bytes: u64) -> Unit {
        let (scale, name) = match bytes {
            x if x >= 1_000_000_000_000 => (1e12, "TB"),
            x if x >= 1_000_000_000 => (1e9, "GB"),
            x if x >= 1_000_000 => (1e6, "MB"),
            _ => (1e3, "KB"),
        };
        Unit { scale, name }
    }

    pub fn number(self, bytes: u64) -> String {
        format!("{:.2}", bytes as f64 / self.scale)
    }

    pub fn with_name(self, bytes: u64) -> String {
        format!("{} {}", self.number(bytes), self.name)
    }
}

/// Decimal units with two decimals, in the unit the size reads best in.
pub fn tb(bytes: u64) -> String {
    Unit::for_bytes(bytes).with_name(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortfall_message_carries_every_number() {
        let s = Shortfall {
            dir: PathBuf::from("/mnt/models"),
            need: Need { checkpoint: 1_560_000_000_000, trunk: 110_000_000_000, margin: 15_600_000_000 },
            free: 1_200_000_000_000,
        };
        let text = s.to_string();
        assert!(text.contains("needs 1.69 TB (1.56 checkpoint + 0.11 trunk + 1%)"), "{text}");
        assert!(text.contains("1.20 TB free: 0.49 TB short"), "{text}");
        assert_eq!(s.short_by(), 485_600_000_000);
    }
}
