//! [`Error`]: what reading a checkpoint (its `config.json`, shards and index) or a streamed
//! file can fail with, each case naming the file, field or offset. The engine's own error takes each case over
//! unchanged (`k3_engine::Error: From<k3_io::Error>`), so its messages and exit statuses are
//! these.

use std::path::PathBuf;

use crate::format::CheckpointFault;

pub type Result<T> = std::result::Result<T, Error>;

/// An OS error that says the path names nothing usable (missing, forbidden, not a folder,
/// a folder, a symlink loop): the caller's input, not a failure while running.
pub fn names_nothing_usable(source: &std::io::Error) -> bool {
    matches!(
        source.kind(),
        std::io::ErrorKind::NotFound
            | std::io::ErrorKind::PermissionDenied
            | std::io::ErrorKind::InvalidInput
            | std::io::ErrorKind::AlreadyExists
    ) || crate::os::is_wrong_kind_of_path(source)
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system error on a named file.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A positioned read of a streamed file (a shard's routed expert, a layer of
    /// `trunk.bin`) failed: the OS error, the end of the file before the data, or a read
    /// that reported more bytes than asked. `offset` and `len` are the failing call's.
    #[error("I/O error reading {} at offset {offset} ({len} bytes asked): {source}", path.display())]
    Read {
        path: PathBuf,
        offset: u64,
        len: usize,
        #[source]
        source: std::io::Error,
    },

    /// `config.json` is not valid JSON (or not an object) at all.
    #[error("{path}: not a usable JSON config: {message}")]
    ConfigSyntax { path: PathBuf, message: String },

    /// One or more required fields are absent; all of them are named at once.
    #[error("{path}: missing required field(s): {}", fields.join(", "))]
    ConfigMissing { path: PathBuf, fields: Vec<String> },

    /// A field is present but has the wrong JSON type.
    #[error("{path}: field `{field}` must be {expected}, found {found}")]
    ConfigType { path: PathBuf, field: String, expected: &'static str, found: String },

    /// A field is well-typed but its value is unusable (validation of spec §2.3).
    #[error("{path}: field `{field}`: {reason}")]
    ConfigInvalid { path: PathBuf, field: String, reason: String },

    /// A safetensors shard or the index file is malformed.
    #[error("{path}: {fault}")]
    Checkpoint { path: PathBuf, fault: Box<CheckpointFault> },

    /// The model folder holds no `*.safetensors` shard.
    #[error("{path}: no *.safetensors shards in the model folder")]
    NoShards { path: PathBuf },

    /// A read pattern that cannot be used (its size or depth).
    #[error("invalid option `{option}`: {reason}")]
    Option { option: &'static str, reason: String },

    /// A stop was seen inside a streamed read (the caller's `CancelToken`).
    #[error("the generation was cancelled during a streamed read")]
    Stopped,
}

impl Error {
    /// True when the error is about unusable input (a path, a checkpoint, a read pattern)
    /// rather than a failure while running; the CLI maps it to exit status 2.
    pub fn is_input_error(&self) -> bool {
        match self {
            Error::Io { source, .. } => names_nothing_usable(source),
            Error::Read { .. } | Error::Stopped => false,
            Error::ConfigSyntax { .. }
            | Error::ConfigMissing { .. }
            | Error::ConfigType { .. }
            | Error::ConfigInvalid { .. }
            | Error::Checkpoint { .. }
            | Error::NoShards { .. }
            | Error::Option { .. } => true,
        }
    }

    /// Convenience constructor for an I/O error on a path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}
