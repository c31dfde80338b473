//! Opening a model folder, written once for every front end.
//!
//! Owns: [`open_engine`] (the folder check and `Engine::load`), [`check_vocab`] (a
//! tokenizer whose ids the model cannot embed is refused), [`LoadedModel`] (engine +
//! tokenizer + chat template: the checkpoint's own `chat_template` when it has one, else
//! the built-in XTML renderer), and [`ModelSummary`], the facts every front end shows.
//! Must not: turn an engine error into text: it travels as [`RuntimeError::Engine`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use k3_constrain::{ConstrainError, Constrainer, ReplyConstraint, ReplyShape};
use k3_engine::chat::ChatTemplate;
use k3_engine::tokenizer::Tokenizer;
use k3_engine::{Engine, EngineOptions, ResidencyRule};
use k3_io::ReadPattern;
use k3_plan::{BudgetChoice, Footprint, MemoryPlan};

use crate::error::RuntimeError;

/// Which folder to open, how, and whether it is the bundled demo.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub options: EngineOptions,
    pub is_demo: bool,
}

impl ModelRequest {
    pub fn path(&self) -> &Path {
        &self.options.model_dir
    }
}

/// Loads the engine of a model folder (a path that is no folder is refused first).
pub fn open_engine(options: &EngineOptions) -> Result<Engine, RuntimeError> {
    open_engine_with_progress(options, &mut |_, _| {})
}

/// [`open_engine`], reporting trunk layers pinned as `progress(done, total)`.
pub fn open_engine_with_progress(
    options: &EngineOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Engine, RuntimeError> {
    require_folder(&options.model_dir)?;
    Ok(Engine::load_with_progress(options, progress)?)
}

/// Refuses a path that is not a folder.
pub fn require_folder(path: &Path) -> Result<(), RuntimeError> {
    if path.is_dir() {
        Ok(())
    } else {
        Err(RuntimeError::NotAFolder { path: path.to_path_buf() })
    }
}

/// The tokenizer of a model folder (`tiktoken.model` + `tokenizer_config.json`).
pub fn open_tokenizer(dir: &Path) -> Result<Tokenizer, RuntimeError> {
    require_folder(dir)?;
    Ok(Tokenizer::load(dir)?)
}

/// Refuses a tokenizer whose ids the model cannot embed.
pub fn check_vocab(tokenizer: &Tokenizer, engine: &Engine, dir: &Path) -> Result<(), RuntimeError> {
    let (tokenizer_ids, model_vocab) = (tokenizer.vocab_size(), engine.config().vocab_size);
    if tokenizer_ids > model_vocab {
        return Err(RuntimeError::VocabMismatch { path: dir.to_path_buf(), tokenizer_ids, model_vocab });
    }
    Ok(())
}

/// The chat template a folder's tokenizer asks for, else the built-in one.
pub fn chat_template(tokenizer: &Tokenizer) -> ChatTemplate {
    tokenizer.chat_template().map(ChatTemplate::jinja).unwrap_or_else(ChatTemplate::builtin)
}

/// What every front end shows about the model in use.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSummary {
    pub path: PathBuf,
    /// The folder's name, or the demo's.
    pub name: String,
    pub is_demo: bool,
    pub layers: usize,
    pub hidden_size: usize,
    pub vocab_size: usize,
    pub routed_experts: usize,
    pub experts_per_token: usize,
    /// Total size of the folder's `*.safetensors` shards.
    pub checkpoint_bytes: u64,
    /// The budget asked for (`None`: every weight resident).
    pub budget: Option<BudgetChoice>,
    /// The plan it became (`None`: every weight resident).
    pub plan: Option<MemoryPlan>,
    pub context_length: usize,
    pub load_time: Duration,
    /// The checkpoint's sizes as the planner sees them (what a plan preview needs).
    pub footprint: Footprint,
    /// The packed trunk unpinned layers stream from (`None`: the trunk cannot stream).
    pub trunk_dir: Option<PathBuf>,
    /// Concurrent expert reads the plan reserves buffers for.
    pub io_threads: usize,
    /// Threads the kernels run on.
    pub compute_threads: usize,
    /// How streamed reads are issued (piece size and pieces in flight).
    pub read_pattern: ReadPattern,
    /// How the plan in force places the trunk's layers.
    pub residency: ResidencyRule,
}

impl ModelSummary {
    /// Unpinned trunk layers can stream (a packed trunk is in use).
    pub fn streams_trunk(&self) -> bool {
        self.trunk_dir.is_some()
    }
}

/// The name the demo model is shown under.
pub const DEMO_NAME: &str = "Demo model (Kimi K3-shaped, trained on Jane Austen)";

/// A model ready to chat.
pub struct LoadedModel {
    pub engine: Engine,
    pub tokenizer: Arc<Tokenizer>,
    pub template: ChatTemplate,
    pub summary: ModelSummary,
    /// Constrained decoding over this vocabulary, built on the first turn that needs it.
    constrainer: OnceLock<Result<Constrainer, ConstrainError>>,
}

impl LoadedModel {
    /// Opens the model; `progress(done, total)` hears each trunk layer pinned.
    pub fn open(request: &ModelRequest, progress: &mut dyn FnMut(usize, usize)) -> Result<LoadedModel, RuntimeError> {
        let start = Instant::now();
        let engine = open_engine_with_progress(&request.options, progress)?;
        let tokenizer = open_tokenizer(request.path())?;
        check_vocab(&tokenizer, &engine, request.path())?;
        let template = chat_template(&tokenizer);
        let summary = summarize(&engine, request, start.elapsed());
        let tokenizer = Arc::new(tokenizer);
        Ok(LoadedModel { engine, tokenizer, template, summary, constrainer: OnceLock::new() })
    }

    /// The constraint of a reply of `shape` (`None` when the reply is free).
    pub fn constraint(&self, shape: &ReplyShape<'_>) -> Result<Option<ReplyConstraint>, ConstrainError> {
        if shape.is_free() {
            return Ok(None);
        }
        match self.constrainer.get_or_init(|| Constrainer::new(&self.tokenizer)) {
            Ok(constrainer) => constrainer.reply(shape),
            Err(e) => Err(e.clone()),
        }
    }

    /// The summary after a replan changed the plan.
    pub fn refresh_summary(&mut self) {
        self.summary.plan = self.engine.plan().cloned();
        self.summary.budget = self.engine.memory_options().budget;
        self.summary.context_length = self.engine.context_length();
        self.summary.residency = self.engine.residency_rule();
    }
}

fn summarize(engine: &Engine, request: &ModelRequest, load_time: Duration) -> ModelSummary {
    let cfg = engine.config();
    let path = request.path().to_path_buf();
    let name = if request.is_demo {
        DEMO_NAME.to_string()
    } else {
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "Kimi K3".into())
    };
    ModelSummary {
        checkpoint_bytes: shard_bytes(&path),
        path,
        name,
        is_demo: request.is_demo,
        layers: cfg.n_layers,
        hidden_size: cfg.hidden_size,
        vocab_size: cfg.vocab_size,
        routed_experts: cfg.moe.n_experts,
        experts_per_token: cfg.moe.top_k,
        budget: engine.memory_options().budget,
        plan: engine.plan().cloned(),
        context_length: engine.context_length(),
        load_time,
        footprint: engine.footprint().clone(),
        trunk_dir: engine.memory_options().trunk_dir.clone(),
        io_threads: engine.memory_options().io_threads,
        compute_threads: engine.compute_threads(),
        read_pattern: engine.memory_options().read_pattern,
        residency: engine.residency_rule(),
    }
}

/// Total size of the folder's `*.safetensors` shards.
fn shard_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "safetensors"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}
