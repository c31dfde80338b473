//! `IpcError`: the one error shape every command and generation failure reaches the UI in.
//!
//! Owns: the SCREAMING_SNAKE [`ErrorCode`]s, and the mapping from each library error
//! (engine, history store) to a code, a one-line readable message and optional details.
//! Must not: lose the file, tensor or field an engine error names: the engine's own
//! message (which names them) is the `message`.
//! Easy to break: every engine and runtime error variant is matched by name (no
//! catch-all), so a new variant does not compile until it has a code.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

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

impl From<k3_app::settings::SettingsError> for IpcError {
    fn from(e: k3_app::settings::SettingsError) -> Self {
        IpcError::new(ErrorCode::Io, e.to_string())
    }
}

impl From<k3_engine::Error> for IpcError {
    fn from(e: k3_engine::Error) -> Self {
        IpcError::from(&e)
    }
}

impl From<&k3_engine::Error> for IpcError {
    fn from(e: &k3_engine::Error) -> Self {
        use k3_engine::Error as E;
        let code = match e {
            // A batched pass's failure is the pass's own error, told to each sequence of it.
            E::Batch { source } => return IpcError::from(source.as_ref()),
            E::ConfigSyntax { .. } | E::ConfigMissing { .. } | E::ConfigType { .. } | E::ConfigInvalid { .. } => {
                ErrorCode::ModelConfig
            }
            E::Checkpoint { .. }
            | E::NoShards { .. }
            | E::MissingTensor { .. }
            | E::Shape { .. }
            | E::Dtype { .. }
            | E::Expert { .. }
            | E::Trunk { .. }
            | E::Pack { .. }
            | E::NonFiniteLogits { .. } => ErrorCode::Checkpoint,
            E::Tokenizer { .. } => ErrorCode::Tokenizer,
            E::Template { .. } => ErrorCode::Template,
            // A checksum mismatch is a failed expert read to the window; the message names it.
            E::ExpertRead { .. } | E::ExpertChecksum { .. } => ErrorCode::ExpertRead,
            E::ContextLimit { .. } | E::PromptTooLong { .. } => ErrorCode::ContextLimit,
            E::Option { .. } | E::TokenId { .. } | E::Empty { .. } | E::Constraint { .. } => ErrorCode::InvalidArgument,
            E::Budget(_) => ErrorCode::BudgetTooSmall,
            E::Io { .. } | E::Read { .. } | E::OutputFolder { .. } => ErrorCode::Io,
            // A saved state the runtime could not use is replayed instead; mapped for
            // exhaustiveness, like a file that could not be read.
            E::StateFile { .. } => ErrorCode::Io,
            // Never leaves the engine (a stop is a finish reason); mapped for exhaustiveness.
            E::Stopped => ErrorCode::Internal,
        };
        IpcError { code, message: e.to_string(), details: None }
    }
}

impl From<&RuntimeError> for IpcError {
    fn from(e: &RuntimeError) -> Self {
        let code = match e {
            RuntimeError::Engine(engine) => return IpcError::from(engine),
            RuntimeError::NotAFolder { .. } => ErrorCode::ModelFolder,
            RuntimeError::VocabMismatch { .. } => ErrorCode::Tokenizer,
            RuntimeError::NoModel => ErrorCode::ModelNotLoaded,
            RuntimeError::WorkerGone => ErrorCode::Internal,
            RuntimeError::Constraint(_) => ErrorCode::InvalidArgument,
            // The remote's own message (it names the URL) is the whole line the window shows.
            RuntimeError::Remote { message, .. } => return IpcError::new(ErrorCode::Remote, message.clone()),
        };
        IpcError::new(code, e.to_string())
    }
}
