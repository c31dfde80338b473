//! Errors of the history store, each naming the database file or the missing row, and
//! their kinds in the app's errors.

use std::path::PathBuf;

use crate::error::{AppError, ErrorKind};

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

impl From<HistoryError> for AppError {
    fn from(e: HistoryError) -> Self {
        match e {
            HistoryError::NotFound { .. } => AppError::new(ErrorKind::NotFound, e.to_string()),
            HistoryError::Invalid { .. } => AppError::invalid(e.to_string()),
            HistoryError::Sqlite { .. }
            | HistoryError::TooNew { .. }
            | HistoryError::Folder { .. }
            | HistoryError::Corrupt { .. } => AppError::new(ErrorKind::History, e.to_string()),
        }
    }
}
