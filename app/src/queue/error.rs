//! The queue's failures, each naming the file, line or item. A leaf the journal, the
//! import and the queue all return.
//!
//! Owns: [`QueueError`].

use std::path::PathBuf;

/// The queue's failures; each names the file, line or item.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The journal has a line this app cannot read; the file is left as it is.
    #[error("{}, line {line}: {reason}", path.display())]
    Journal { path: PathBuf, line: usize, reason: String },
    /// The prompts to import are not in the format chosen (`line` 0: the whole text).
    #[error("{}{reason}", if *line > 0 { format!("line {line}: ") } else { String::new() })]
    Import { line: usize, reason: String },
    #[error("the queue has no item {id}")]
    NoItem { id: u64 },
}
