//! [`RuntimeError`]: what can go wrong in the runtime, around the engine's own errors.
//!
//! Owns: the runtime's failures (a model folder that is no folder, a tokenizer the model
//! cannot embed, no model loaded, the worker gone, a remote backend's failure) and carrying the engine's
//! [`k3_engine::Error`] unchanged (it names the file, tensor or field).
//! Must not: flatten an engine error into a string: adapters (app, CLI, server) map the
//! variants to their own codes and exit statuses.

use std::path::PathBuf;

/// A runtime failure.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The engine refused the model, the plan or the request.
    #[error(transparent)]
    Engine(#[from] k3_engine::Error),

    /// The model path is not a folder.
    #[error("{}: not a folder", path.display())]
    NotAFolder { path: PathBuf },

    /// The tokenizer defines ids the model cannot embed.
    #[error("{}: the tokenizer files define {tokenizer_ids} ids but config.json's vocab_size is {model_vocab}", path.display())]
    VocabMismatch { path: PathBuf, tokenizer_ids: usize, model_vocab: usize },

    /// A generation or replan was asked for while no model is loaded.
    #[error("no model is loaded; open a model folder first")]
    NoModel,

    /// The worker thread has stopped.
    #[error("the engine worker has stopped")]
    WorkerGone,

    /// A remote backend failed; `message` is its own (it names the URL, never the key).
    #[error("the remote backend {host} failed: {message}")]
    Remote { host: String, message: String },

    /// A turn's tools or response format cannot be held to by constrained decoding.
    #[error(transparent)]
    Constraint(#[from] k3_constrain::ConstrainError),
}

impl RuntimeError {
    /// True when the error is about unusable input (flags, folder, config, checkpoint,
    /// budget) rather than a failure while running (the CLI's exit status 2 vs 1).
    pub fn is_input_error(&self) -> bool {
        match self {
            RuntimeError::Engine(e) => e.is_input_error(),
            RuntimeError::NotAFolder { .. } | RuntimeError::VocabMismatch { .. } | RuntimeError::Constraint(_) => true,
            RuntimeError::NoModel | RuntimeError::WorkerGone | RuntimeError::Remote { .. } => false,
        }
    }
}
