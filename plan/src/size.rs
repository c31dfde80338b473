//! Bytes as people read them: the decimal gigabyte budgets are given in, and sizes printed
//! as `1.29 GB`. A leaf: errors and presets both print sizes.
//!
//! Owns: [`GB`], [`format_bytes`], [`format_count`], the 4096-byte alignment of slots ([`align_4096`],
//! `exact_slot`).

/// One decimal gigabyte.
pub const GB: u64 = 1_000_000_000;

/// Formats bytes as decimal GB/MB/KB with two decimals, e.g. `1.29 GB` (`999 B` below 1 KB).
pub fn format_bytes(bytes: u64) -> String {
    let (value, unit) = match bytes {
        b if b >= GB => (b as f64 / 1e9, "GB"),
        b if b >= 1_000_000 => (b as f64 / 1e6, "MB"),
        b if b >= 1_000 => (b as f64 / 1e3, "KB"),
        b => return format!("{b} B"),
    };
    format!("{value:.2} {unit}")
}

/// A count with its thousands separated, as the window writes them: `17547264` →
/// `17,547,264`.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Rounds up to the 4096-byte alignment of O_DIRECT buffers (saturating at the largest
/// multiple of 4096).
pub fn align_4096(bytes: u64) -> u64 {
    bytes.div_ceil(4096).saturating_mul(4096).min(u64::MAX - 4095)
}

/// `align_4096(bytes) + 4096` without saturating.
pub(crate) fn exact_slot(bytes: u64) -> Option<u64> {
    bytes.checked_next_multiple_of(4096)?.checked_add(4096)
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_have_their_thousands_separated() {
        assert_eq!(super::format_count(17_547_264), "17,547,264");
        assert_eq!(super::format_count(0), "0");
        assert_eq!(super::format_count(999), "999");
        assert_eq!(super::format_count(1000), "1,000");
        assert_eq!(super::format_count(u64::MAX), "18,446,744,073,709,551,615");
    }
}
