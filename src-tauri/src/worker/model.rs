//! [`LoadedModel`]: an engine, its tokenizer and chat template, opened from a folder.
//!
//! Owns: opening a model folder the way the app does (memory budget `auto`: experts
//! stream through a cache sized from this machine's available RAM) and describing it.
//! Must not: turn an engine error into a panic or a generic message: the engine's error
//! names the file, tensor or field, and the UI shows it as is.

use std::path::{Path, PathBuf};
use std::time::Instant;

use k3_engine::chat::ChatTemplate;
use k3_engine::tokenizer::Tokenizer;
use k3_engine::{BudgetChoice, Engine, EngineOptions, MemoryOptions};
use k3_plan::format_bytes;

use crate::ipc::dto::ModelInfo;
use crate::ipc::error::{ErrorCode, IpcError};

/// Which folder to open, and whether it is the bundled demo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelTarget {
    pub path: PathBuf,
    pub is_demo: bool,
}

/// A model ready to chat.
pub struct LoadedModel {
    pub engine: Engine,
    pub tokenizer: Tokenizer,
    pub template: ChatTemplate,
    pub info: ModelInfo,
}

impl LoadedModel {
    pub fn open(target: &ModelTarget) -> Result<LoadedModel, IpcError> {
        let start = Instant::now();
        let dir = &target.path;
        if !dir.is_dir() {
            return Err(IpcError::new(ErrorCode::ModelFolder, format!("{}: not a folder", dir.display())));
        }
        let context =
            |e: k3_engine::Error| IpcError::from(e).with_details(format!("Opening the model folder {}", dir.display()));
        let memory = MemoryOptions { budget: Some(BudgetChoice::Auto), ..MemoryOptions::resident() };
        let engine = Engine::load(&EngineOptions { model_dir: dir.clone(), threads: None, memory }).map_err(context)?;
        let tokenizer = Tokenizer::load(dir).map_err(context)?;
        let (tok_vocab, model_vocab) = (tokenizer.vocab_size(), engine.config().vocab_size);
        if tok_vocab > model_vocab {
            return Err(IpcError::new(
                ErrorCode::Tokenizer,
                format!(
                    "{}: the tokenizer files define {tok_vocab} ids but config.json's vocab_size is {model_vocab}",
                    dir.display()
                ),
            ));
        }
        let template = tokenizer.chat_template().map(ChatTemplate::jinja).unwrap_or_else(ChatTemplate::builtin);
        let info = describe(&engine, target, start.elapsed().as_millis() as u64);
        Ok(LoadedModel { engine, tokenizer, template, info })
    }
}

fn describe(engine: &Engine, target: &ModelTarget, load_ms: u64) -> ModelInfo {
    let cfg = engine.config();
    let name = if target.is_demo {
        "Demo model (tiny same-graph Kimi K3)".to_string()
    } else {
        target.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "Kimi K3".into())
    };
    let memory = match engine.plan() {
        Some(p) => format!(
            "auto budget: {}/{} layers in RAM, {} expert slots, plan {}",
            p.pinned_layers,
            cfg.n_layers,
            p.cache_slots,
            format_bytes(p.total_bytes)
        ),
        None => "all weights in RAM".to_string(),
    };
    ModelInfo {
        path: target.path.display().to_string(),
        name,
        is_demo: target.is_demo,
        layers: cfg.n_layers as u32,
        hidden_size: cfg.hidden_size as u32,
        vocab_size: cfg.vocab_size as u32,
        routed_experts: cfg.moe.n_experts as u32,
        experts_per_token: cfg.moe.top_k as u32,
        checkpoint_bytes: shard_bytes(&target.path),
        memory,
        load_ms,
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
