//! [`AppError`]: the one failure shape of the app core's services, a [`ErrorKind`], one
//! readable line and optional details; the window's wire error (`src-tauri`'s `IpcError`)
//! converts from it.
//!
//! Owns: which kind each engine and runtime error is (matched by name, no catch-all, so a
//! new variant does not compile until it has a kind).
//! Must not: lose the file, tensor or field an engine error names: the engine's own
//! message (which names them) is the `message`.

use k3_runtime::RuntimeError;

/// What kind of failure an [`AppError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
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

/// A failure of an app service: its kind, one readable line, optional details.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct AppError {
    pub kind: ErrorKind,
    pub message: String,
    pub details: Option<String>,
}

impl AppError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        AppError { kind, message: message.into(), details: None }
    }

    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
}

impl From<crate::settings::SettingsError> for AppError {
    fn from(e: crate::settings::SettingsError) -> Self {
        AppError::new(ErrorKind::Io, e.to_string())
    }
}

impl From<k3_engine::Error> for AppError {
    fn from(e: k3_engine::Error) -> Self {
        AppError::from(&e)
    }
}

impl From<&k3_engine::Error> for AppError {
    fn from(e: &k3_engine::Error) -> Self {
        use k3_engine::Error as E;
        let kind = match e {
            // A batched pass's failure is the pass's own error, told to each sequence of it.
            E::Batch { source } => return AppError::from(source.as_ref()),
            E::ConfigSyntax { .. } | E::ConfigMissing { .. } | E::ConfigType { .. } | E::ConfigInvalid { .. } => {
                ErrorKind::ModelConfig
            }
            E::Checkpoint { .. }
            | E::NoShards { .. }
            | E::MissingTensor { .. }
            | E::Shape { .. }
            | E::Dtype { .. }
            | E::Expert { .. }
            | E::Trunk { .. }
            | E::Pack { .. }
            | E::NonFiniteLogits { .. } => ErrorKind::Checkpoint,
            E::Tokenizer { .. } => ErrorKind::Tokenizer,
            E::Template { .. } => ErrorKind::Template,
            // A checksum mismatch is a failed expert read to the window; the message names it.
            E::ExpertRead { .. } | E::ExpertChecksum { .. } => ErrorKind::ExpertRead,
            E::ContextLimit { .. } | E::PromptTooLong { .. } => ErrorKind::ContextLimit,
            E::Option { .. } | E::TokenId { .. } | E::Empty { .. } | E::Constraint { .. } => ErrorKind::InvalidArgument,
            E::Budget(_) => ErrorKind::BudgetTooSmall,
            E::Io { .. } | E::Read { .. } | E::OutputFolder { .. } => ErrorKind::Io,
            // A saved state the runtime could not use is replayed instead; mapped for
            // exhaustiveness, like a file that could not be read.
            E::StateFile { .. } => ErrorKind::Io,
            // Never leaves the engine (a stop is a finish reason); mapped for exhaustiveness.
            E::Stopped => ErrorKind::Internal,
        };
        AppError::new(kind, e.to_string())
    }
}

impl From<&RuntimeError> for AppError {
    fn from(e: &RuntimeError) -> Self {
        let kind = match e {
            RuntimeError::Engine(engine) => return AppError::from(engine),
            RuntimeError::NotAFolder { .. } => ErrorKind::ModelFolder,
            RuntimeError::VocabMismatch { .. } => ErrorKind::Tokenizer,
            RuntimeError::NoModel => ErrorKind::ModelNotLoaded,
            RuntimeError::WorkerGone => ErrorKind::Internal,
            RuntimeError::Constraint(_) => ErrorKind::InvalidArgument,
            // The remote's own message (it names the URL) is the whole line the window shows.
            RuntimeError::Remote { message, .. } => return AppError::new(ErrorKind::Remote, message.clone()),
        };
        AppError::new(kind, e.to_string())
    }
}

impl From<RuntimeError> for AppError {
    fn from(e: RuntimeError) -> Self {
        AppError::from(&e)
    }
}

impl From<crate::tools::ToolError> for AppError {
    fn from(e: crate::tools::ToolError) -> Self {
        use crate::tools::ToolError as T;
        let kind = match &e {
            T::UnknownServer { .. } => ErrorKind::NotFound,
            T::BadArguments { .. } | T::NotAllowed { .. } | T::UnknownTool { .. } => ErrorKind::InvalidArgument,
            T::Spawn { .. }
            | T::Address { .. }
            | T::Handshake { .. }
            | T::Stopped { .. }
            | T::Protocol { .. }
            | T::Timeout { .. }
            | T::Cancelled { .. } => ErrorKind::Tool,
        };
        AppError::new(kind, e.to_string())
    }
}
