//! Settings › New chats' wire types: the defaults new chats start with and the model's
//! own (twins of `k3_app::chat_defaults`'), and the view the tab shows.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::ipc::twin::wire_struct;

wire_struct! {
    /// What a new conversation starts with (its seed is drawn fresh for each chat).
    pub struct ChatDefaults both ways k3_app::chat_defaults::ChatDefaults {
        temperature: f32,
        top_p: f32,
        max_tokens: u32,
        thinking: bool,
        system_prompt: String,
        /// The remote backend new chats are answered by (a Settings › Backends id); `None`: this
        /// computer. Files written before backends existed have none.
        #[serde(default)]
        backend: Option<String>,
    }
}

wire_struct! {
    /// What a checkpoint's `generation_config.json` says (absent fields: `None`).
    pub struct ModelDefaults both ways k3_app::chat_defaults::ModelDefaults {
        temperature: Option<f32>,
        top_p: Option<f32>,
        max_tokens: Option<u32>,
    }
}

/// What Settings › New chats shows: the saved defaults and the loaded model's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ChatDefaultsView {
    pub defaults: ChatDefaults,
    /// The loaded model's `generation_config.json`, when it has a usable one.
    pub model_defaults: Option<ModelDefaults>,
    /// Why there are none (no file, or what is wrong with it).
    pub model_note: Option<String>,
}
