//! The Kimi pre-tokenisation pattern (spec §12.2), pinned in code.
//!
//! Owns: the eight alternatives, in order. It needs `&&` class intersection and a
//! look-ahead, which `fancy-regex` (used by `tiktoken-rs`) provides.
//! Easy to break: the fifth alternative starts with an optional literal SPACE.

/// The eight alternatives of the Kimi split pattern, tried in this order.
pub const KIMI_PATTERN_PARTS: [&str; 8] = [
    r"[\p{Han}]+",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
];

/// The whole pattern: the parts joined with `|`.
pub fn kimi_pattern() -> String {
    KIMI_PATTERN_PARTS.join("|")
}
