//! [`slug`]: the one rule for turning a user's text into a name made of letters, digits and
//! dashes — export file names from titles, backend ids from names.

/// `text` lowercased, every character `keep` refuses turned into a dash, runs of dashes and
/// dashes at either end dropped, at most `max` characters; empty when nothing is kept.
pub fn slug(text: &str, keep: impl Fn(char) -> bool, max: usize) -> String {
    text.chars()
        .map(|c| if keep(c) { c.to_ascii_lowercase() } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-")
        .chars()
        .take(max)
        .collect()
}
