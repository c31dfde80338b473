//! The engine's one error type.
//!
//! Owns: every way loading or running the model can fail, each variant carrying the
//! context a person needs to fix it (file, tensor, field, offset, expected vs actual).
//! Must not: hold plain strings as the only information, or let cancellation out of the
//! engine (a cancelled generation is a finish reason, not an error: [`Error::Stopped`]
//! only carries a stop seen inside a streamed read up to `Model::forward`, which turns it
//! into that finish reason).
//! Easy to break: `is_input_error` decides the CLI's exit status (2 for unusable input,
//! 1 for failures while running); a new variant must be placed on the right side.

use std::path::PathBuf;

use crate::format::CheckpointFault;

/// Result alias used throughout the engine.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in the engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A batched forward pass that carried this sequence with others failed (the pass's
    /// error, shared by every sequence of it).
    #[error("{source}")]
    Batch { source: std::sync::Arc<Error> },
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

    /// A tensor the config requires is absent from every shard.
    #[error("missing tensor `{name}`")]
    MissingTensor { name: String },

    /// A tensor has the wrong shape for the config.
    #[error("tensor `{name}`: expected shape {expected:?}, found {got:?}")]
    Shape { name: String, expected: Vec<u64>, got: Vec<u64> },

    /// A tensor has a dtype the engine cannot use in that role.
    #[error("tensor `{name}`: dtype {got} is not allowed here (expected {expected})")]
    Dtype { name: String, expected: &'static str, got: String },

    /// The tensors of one routed expert are inconsistent with each other.
    #[error("expert tensor `{name}`: {reason}")]
    Expert { name: String, reason: String },

    /// The trunk cannot be packed (a layer that is not one contiguous run, a write that
    /// does not read back).
    #[error("cannot pack layer {layer_idx}: {reason}")]
    Pack { layer_idx: usize, reason: String },

    /// A packed trunk (`trunk.json` + `trunk.bin`) is missing, damaged or disagrees with
    /// the checkpoint.
    #[error("{path}: {reason}")]
    Trunk { path: PathBuf, reason: String },

    /// A routed expert could not be read while generating: the generation fails (an
    /// expert is never skipped). `source` is why: an [`Error::Read`] naming the shard and
    /// offset, or the bind's error.
    #[error("reading layer {layer_idx} expert {expert_idx} failed: {source} (verify the model files)")]
    ExpertRead {
        layer_idx: usize,
        expert_idx: usize,
        #[source]
        source: Box<Error>,
    },

    /// A routed expert's bytes, as read for a generation, fail the CRC32C `k3 pack`
    /// recorded: the shard changed in place. The generation fails; nothing is cached.
    #[error("layer {layer_idx} expert {expert_idx}: the {len} bytes at offset {offset} of {} fail their CRC32C check (recorded {expected:08x}, read {actual:08x}): the shard changed since `k3 pack`; restore it (`k3 verify`) or re-run `k3 pack`", path.display())]
    ExpertChecksum {
        layer_idx: usize,
        expert_idx: usize,
        path: PathBuf,
        offset: u64,
        len: usize,
        expected: u32,
        actual: u32,
    },

    /// The generation's cancel token was set while a streamed read or a wait for one was
    /// under way. Internal: `Model::forward` turns it into its cancelled result, so no
    /// caller of the engine ever sees it.
    #[error("the generation was cancelled during a streamed read")]
    Stopped,

    /// A token id outside `0..vocab_size` was given.
    #[error("token id {id} is outside the vocabulary (vocab_size {vocab_size})")]
    TokenId { id: u32, vocab_size: usize },

    /// Generation options are unusable (NaN temperature, top-p outside (0, 1], ...).
    #[error("invalid option `{option}`: {reason}")]
    Option { option: &'static str, reason: String },

    /// The prompt would not fit the context length the memory plan reserved.
    #[error("a sequence of {requested} positions exceeds the context length of {limit} (raise --context-length)")]
    ContextLimit { requested: usize, limit: usize },

    /// A prompt too long for the context from its size alone: refused before it is encoded
    /// (a 4 MB message was encoded whole, +172 MB, before this).
    #[error(
        "the prompt is at least {at_least} tokens (from its {bytes} bytes), more than the {room} positions the \
         context length of {limit} has room for (raise --context-length)"
    )]
    PromptTooLong { bytes: usize, at_least: usize, room: usize, limit: usize },

    /// A tokenizer file (`tiktoken.model`, `tokenizer_config.json`) is unusable.
    #[error("{}{}: {reason}", path.display(), line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Tokenizer {
        path: PathBuf,
        /// One-based line of `tiktoken.model`, when the fault is on a line.
        line: Option<usize>,
        reason: String,
    },

    /// The forward pass produced a NaN or infinite logit: the checkpoint's weights or
    /// config cannot be used (nothing is sampled from it).
    #[error("the forward pass produced a non-finite logit ({value}) at position {position}: the checkpoint's weights or config.json values are unusable")]
    NonFiniteLogits { position: usize, value: f32 },

    /// A chat template failed to render.
    #[error("chat template: {reason}")]
    Template { reason: String },

    /// A decoding constraint (grammar, JSON schema) failed or allows no token.
    #[error("constrained decoding: {reason}")]
    Constraint { reason: String },

    /// The memory budgets cannot hold the model's minimum working set, or the plan does
    /// not fit the memory this machine has available. The planner's error carries the numbers.
    #[error("memory plan: {0}")]
    Budget(#[from] k3_plan::PlanError),
    /// A folder to write into is unusable (exists and is not empty, or is not a folder).
    #[error("{}: {reason}", path.display())]
    OutputFolder { path: PathBuf, reason: &'static str },

    /// A saved conversation state that cannot be restored (the caller prefills instead).
    #[error("saved state {path}: {reason}")]
    StateFile { path: PathBuf, reason: String },

    /// The work was rejected because it would need more tokens than given (e.g. empty prompt).
    #[error("{what} is empty")]
    Empty { what: &'static str },
}

impl Error {
    /// True when the error is about unusable input (flags, config, checkpoint) rather than
    /// a failure while running. The CLI maps this to exit status 2.
    pub fn is_input_error(&self) -> bool {
        match self {
            // A path that names nothing usable (missing, forbidden, not a folder, a folder,
            // a symlink loop) is the caller's input; other I/O errors happen while running.
            Error::Io { source, .. } => k3_io::names_nothing_usable(source),
            Error::Read { .. } | Error::ExpertRead { .. } | Error::ExpertChecksum { .. } | Error::Stopped => false,
            Error::Batch { source } => source.is_input_error(),
            Error::ConfigSyntax { .. }
            | Error::ConfigMissing { .. }
            | Error::ConfigType { .. }
            | Error::ConfigInvalid { .. }
            | Error::Checkpoint { .. }
            | Error::NoShards { .. }
            | Error::MissingTensor { .. }
            | Error::Shape { .. }
            | Error::Dtype { .. }
            | Error::Expert { .. }
            | Error::Pack { .. }
            | Error::Trunk { .. }
            | Error::TokenId { .. }
            | Error::Option { .. }
            | Error::ContextLimit { .. }
            | Error::PromptTooLong { .. }
            | Error::Tokenizer { .. }
            | Error::Template { .. }
            | Error::Constraint { .. }
            | Error::NonFiniteLogits { .. }
            | Error::Budget(_)
            | Error::OutputFolder { .. }
            | Error::StateFile { .. }
            | Error::Empty { .. } => true,
        }
    }

    /// Convenience constructor for an I/O error on a path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

impl From<k3_kernels::dispatch::UnsupportedIsa> for Error {
    /// A kernel level this CPU does not run is an unusable `isa` option.
    fn from(e: k3_kernels::dispatch::UnsupportedIsa) -> Self {
        Error::Option { option: "isa", reason: e.to_string() }
    }
}

impl From<k3_io::Error> for Error {
    /// Each case of `k3-io` is the engine's case of the same name, unchanged.
    fn from(e: k3_io::Error) -> Self {
        match e {
            k3_io::Error::Io { path, source } => Error::Io { path, source },
            k3_io::Error::Read { path, offset, len, source } => Error::Read { path, offset, len, source },
            k3_io::Error::ConfigSyntax { path, message } => Error::ConfigSyntax { path, message },
            k3_io::Error::ConfigMissing { path, fields } => Error::ConfigMissing { path, fields },
            k3_io::Error::ConfigType { path, field, expected, found } => {
                Error::ConfigType { path, field, expected, found }
            }
            k3_io::Error::ConfigInvalid { path, field, reason } => Error::ConfigInvalid { path, field, reason },
            k3_io::Error::Checkpoint { path, fault } => Error::Checkpoint { path, fault },
            k3_io::Error::NoShards { path } => Error::NoShards { path },
            k3_io::Error::Option { option, reason } => Error::Option { option, reason },
            k3_io::Error::Stopped => Error::Stopped,
        }
    }
}
