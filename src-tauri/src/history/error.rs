//! Errors of the history store, each naming the database file or the missing row, and
//! their IPC codes (the history depends on `ipc`, never the other way round).

use std::path::PathBuf;

use crate::ipc::error::{ErrorCode, IpcError};

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

impl From<HistoryError> for IpcError {
    fn from(e: HistoryError) -> Self {
        match e {
            HistoryError::NotFound { .. } => IpcError::new(ErrorCode::NotFound, e.to_string()),
            HistoryError::Invalid { .. } => IpcError::invalid(e.to_string()),
            HistoryError::Sqlite { .. }
            | HistoryError::TooNew { .. }
            | HistoryError::Folder { .. }
            | HistoryError::Corrupt { .. } => IpcError::new(ErrorCode::History, e.to_string()),
        }
    }
}
