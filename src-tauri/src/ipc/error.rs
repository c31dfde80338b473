//! `IpcError`: the one error shape every command and generation failure reaches the UI in.
//!
//! Owns: the SCREAMING_SNAKE [`ErrorCode`]s (the wire twins of `k3_app::error::ErrorKind`);
//! every library error reaches it through `k3_app::error::AppError`, whose kind rules it keeps.
//! Must not: lose the file, tensor or field an engine error names: the engine's own
//! message (which names them) is the `message`.
//! Easy to break: every engine and runtime error variant is matched by name (no
//! catch-all), so a new variant does not compile until it has a code.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use k3_app::error::{AppError, ErrorKind};
use k3_runtime::RuntimeError;

/// What kind of failure an [`IpcError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    ModelNotLoaded,
    ModelFolder,
    ModelConfig,
    Checkpoint,
    Tokenizer,
    Template,
    InvalidArgument,
    ContextLimit,
    BudgetTooSmall,
    ExpertRead,
    /// Getting the model: the hub, the network or the store refused.
    Download,
    /// A remote backend (Settings › Backends) refused, failed or could not be reached.
    Remote,
    /// A tool server (Settings › Tools) could not be started, reached or used.
    Tool,
    NotFound,
    History,
    Io,
    Internal,
}

/// An error from any command or generation: SCREAMING_SNAKE code, one readable line, optional details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, thiserror::Error)]
#[error("{message}")]
pub struct IpcError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<String>,
}

impl IpcError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        IpcError { code, message: message.into(), details: None }
    }

    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
}

impl From<ErrorKind> for ErrorCode {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::ModelNotLoaded => ErrorCode::ModelNotLoaded,
            ErrorKind::ModelFolder => ErrorCode::ModelFolder,
            ErrorKind::ModelConfig => ErrorCode::ModelConfig,
            ErrorKind::Checkpoint => ErrorCode::Checkpoint,
            ErrorKind::Tokenizer => ErrorCode::Tokenizer,
            ErrorKind::Template => ErrorCode::Template,
            ErrorKind::InvalidArgument => ErrorCode::InvalidArgument,
            ErrorKind::ContextLimit => ErrorCode::ContextLimit,
            ErrorKind::BudgetTooSmall => ErrorCode::BudgetTooSmall,
            ErrorKind::ExpertRead => ErrorCode::ExpertRead,
            ErrorKind::Download => ErrorCode::Download,
            ErrorKind::Remote => ErrorCode::Remote,
            ErrorKind::Tool => ErrorCode::Tool,
            ErrorKind::NotFound => ErrorCode::NotFound,
            ErrorKind::History => ErrorCode::History,
            ErrorKind::Io => ErrorCode::Io,
            ErrorKind::Internal => ErrorCode::Internal,
        }
    }
}

impl From<AppError> for IpcError {
    fn from(e: AppError) -> Self {
        IpcError { code: e.kind.into(), message: e.message, details: e.details }
    }
}

/// The app core's errors, each by its own `From` (the kind rules live in `k3_app::error`).
macro_rules! via_app_error {
    ($($source:ty),* $(,)?) => {
        $(impl From<$source> for IpcError {
            fn from(e: $source) -> Self {
                IpcError::from(AppError::from(e))
            }
        })*
    };
}

via_app_error!(
    k3_app::settings::SettingsError,
    k3_engine::Error,
    &k3_engine::Error,
    &RuntimeError,
    RuntimeError,
    k3_app::tools::ToolError,
    k3_app::history::HistoryError,
);

impl crate::ipc::twin::ToWire for AppError {
    type Wire = IpcError;
    fn to_wire(self) -> IpcError {
        self.into()
    }
}
