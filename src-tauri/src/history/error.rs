//! Errors of the history store, each naming the database file or the missing row.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("chat history {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "chat history {path}: schema version {found} is newer than this app understands ({known}); update the app"
    )]
    TooNew { path: PathBuf, found: i64, known: i64 },
    #[error("chat history {path}: creating its folder: {source}")]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} {id} does not exist")]
    NotFound { what: &'static str, id: i64 },
    #[error("{reason}")]
    Invalid { reason: String },
    #[error("chat history {path}: stored {field} is not valid: {reason}")]
    Corrupt { path: PathBuf, field: &'static str, reason: String },
}
