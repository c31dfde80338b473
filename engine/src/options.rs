//! What [`crate::Engine::load`] and [`crate::Engine::replan`] need: the model folder, the
//! thread count and how weights are held.
//!
//! Owns: [`EngineOptions`] and [`MemoryOptions`] (budget choice, packed trunk, I/O
//! threads, cache policy, context length, read pattern). The engine reads no environment variable:
//! every option arrives here from a flag or a setting.
//! Must not: decide memory: sizes and presets are `k3_plan`'s; this only carries the choice.
//! Easy to break: `context_length` is a promise: the plan reserves KV cache for exactly
//! that many positions and the engine refuses to go past it.

use std::path::PathBuf;
use std::sync::Arc;

pub use k3_plan::{BudgetChoice, ResidencyRule};

use crate::error::{Error, Result};
use crate::io::storage::{os_read, PositionedRead};
use crate::io::ReadPattern;
use crate::stream::CachePolicy;

/// The longest context the engine accepts at all (prompt + generated positions): the
/// planner's, so the wasm planner refuses the same lengths.
pub const MAX_CONTEXT: usize = k3_plan::MAX_CONTEXT as usize;

/// The most sequence states a plan may hold at once ([`MemoryOptions::sequences`]).
pub const MAX_SEQUENCES: usize = k3_plan::MAX_SEQUENCES as usize;

/// The context length [`MemoryOptions`] reserve unless set: the planner's base context.
/// Front ends whose user names no context open at the plan's fitted one instead
/// ([`MemoryOptions::fit_context`]).
pub const DEFAULT_CONTEXT_LENGTH: usize = k3_plan::BASE_CONTEXT as usize;

/// What [`crate::Engine::load`] needs.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Folder with `config.json` and the `*.safetensors` shards.
    pub model_dir: PathBuf,
    /// Worker threads for the kernels; `None` = all cores.
    pub threads: Option<usize>,
    pub memory: MemoryOptions,
}

impl EngineOptions {
    /// Everything resident in RAM (small models, tests).
    pub fn resident(model_dir: impl Into<PathBuf>, threads: Option<usize>) -> Self {
        EngineOptions { model_dir: model_dir.into(), threads, memory: MemoryOptions::resident() }
    }
}

/// How weights are held: resident, or streamed under a budget.
#[derive(Debug, Clone)]
pub struct MemoryOptions {
    /// `None`: every weight resident. `Some`: routed experts stream through a cache sized
    /// by the budget's `cache_bytes` (and, with a packed trunk, the trunk through
    /// `trunk_bytes`).
    pub budget: Option<BudgetChoice>,
    /// Folder of a packed trunk (`k3 pack`): with a budget, unpinned layers stream from it.
    pub trunk_dir: Option<PathBuf>,
    /// Concurrent expert reads.
    pub io_threads: usize,
    /// Which expert the cache evicts.
    pub cache_policy: CachePolicy,
    /// Positions (prompt + generated) of one conversation: the plan reserves KV cache for
    /// them, and a generation that reaches them ends with `FinishReason::ContextFull`.
    pub context_length: usize,
    /// Open at the largest context the plan keeps on this machine
    /// ([`crate::stream::plan::fitted_context`], the preset's default context) instead of
    /// `context_length`: what a front end asks when its user names no context. The engine
    /// resolves it once, at load; replans keep that context.
    pub fit_context: bool,
    /// Sequence states the plan holds at once, each with KV cache for `context_length`
    /// positions and its own recurrent state: the conversation being answered and those
    /// kept so their next turn prefills only what is new (`k3 serve --kept-conversations`).
    pub sequences: usize,
    /// Refuse to start when the plan exceeds the memory the machine has available.
    pub check_available: bool,
    /// Record every routed-expert request (see [`crate::Engine::take_expert_trace`]).
    pub record_trace: bool,
    /// How streamed reads are issued (from `k3 bench disk`, else the default).
    pub read_pattern: ReadPattern,
    /// How the plan places trunk layers: the pinned prefix, or by measured cost.
    pub residency: ResidencyRule,
    /// Where every streamed `pread` goes: the operating system's ([`crate::io::OsRead`]);
    /// tests put a fault-injecting one here.
    #[doc(hidden)]
    pub read_storage: Arc<dyn PositionedRead>,
}

impl MemoryOptions {
    pub fn resident() -> Self {
        MemoryOptions {
            budget: None,
            trunk_dir: None,
            io_threads: 4,
            cache_policy: CachePolicy::Lru,
            context_length: DEFAULT_CONTEXT_LENGTH,
            fit_context: false,
            sequences: 1,
            check_available: true,
            record_trace: false,
            read_pattern: ReadPattern::DEFAULT,
            residency: ResidencyRule::Prefix,
            read_storage: os_read(),
        }
    }

    /// Refuses a context length of 0 or above [`MAX_CONTEXT`], and sequences outside
    /// 1..=[`MAX_SEQUENCES`].
    pub fn validate(&self) -> Result<()> {
        if self.context_length == 0 || self.context_length > MAX_CONTEXT {
            return Err(Error::Option {
                option: "context-length",
                reason: format!("{} is not between 1 and {MAX_CONTEXT} positions", self.context_length),
            });
        }
        if self.sequences == 0 || self.sequences > MAX_SEQUENCES {
            return Err(Error::Option {
                option: "kept-conversations and batch",
                reason: format!("{} sequence states is not between 1 and {MAX_SEQUENCES}", self.sequences),
            });
        }
        if self.io_threads == 0 || self.io_threads as u64 > k3_plan::MAX_IO_THREADS {
            return Err(Error::Option {
                option: "io-threads",
                reason: format!("{} is not between 1 and {}", self.io_threads, k3_plan::MAX_IO_THREADS),
            });
        }
        Ok(self.read_pattern.validate()?)
    }
}
