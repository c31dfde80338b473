//! [`ModelInfo`] and [`ModelStatus`]: the model the worker has open, as the app's screens
//! name it, or why none is.

use crate::error::AppError;

/// The loaded model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    pub path: String,
    pub name: String,
    pub is_demo: bool,
    pub layers: u32,
    pub hidden_size: u32,
    pub vocab_size: u32,
    pub routed_experts: u32,
    pub experts_per_token: u32,
    pub checkpoint_bytes: u64,
    /// How weights are held, in one line (plan summary).
    pub memory: String,
    pub load_ms: u64,
}

/// What `current_model` reports: the model in use, or why none is.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelStatus {
    pub model: Option<ModelInfo>,
    pub error: Option<AppError>,
}
