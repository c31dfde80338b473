//! The history's own records: conversations, messages, their sampling settings, tool
//! calls and answers, stats, exports and the startup notice, as the app core hands them
//! out (the window's wire twins are `src-tauri`'s `ipc/dto.rs`).
//!
//! Must not: be what the database stores: the stored JSON forms are frozen in
//! `records.rs`, so renaming a field here never turns stored rows into corrupt ones.

use serde::{Deserialize, Serialize};

/// Sampling settings of one conversation. `temperature` 0 means greedy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingSettings {
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u64,
    pub max_tokens: u32,
    pub thinking: bool,
    /// How long K3 thinks (thinking on only); `None`: the model's default.
    pub thinking_effort: Option<ThinkingEffort>,
    /// The tool servers (Settings › Tools ids) whose tools this conversation offers.
    #[serde(default)]
    pub tool_servers: Vec<String>,
    /// Tools of those servers turned off in this conversation, each `<server id>/<tool>`.
    #[serde(default)]
    pub tools_off: Vec<String>,
    /// Whether the reply to a user message must call a tool.
    #[serde(default)]
    pub tool_choice: ToolUse,
}

/// Whether the reply to a user message must call a tool (the replies after tool results
/// always decide for themselves, or the loop would never end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolUse {
    /// The model decides.
    #[default]
    Auto,
    /// At least one call.
    Required,
}

impl Default for SamplingSettings {
    fn default() -> Self {
        SamplingSettings {
            temperature: 0.6,
            top_p: 0.95,
            seed: 0,
            max_tokens: 512,
            thinking: false,
            thinking_effort: None,
            tool_servers: Vec::new(),
            tools_off: Vec::new(),
            tool_choice: ToolUse::Auto,
        }
    }
}

/// The thinking efforts K3 was trained at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingEffort {
    Low,
    High,
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    /// A tool's result, answering one call of the assistant message before it.
    Tool,
}

/// One tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The call's id (what a tool message answering it names).
    pub id: String,
    pub tool: String,
    /// 1-based position among the message's calls.
    pub index: u32,
    /// The arguments, a JSON object's text.
    pub arguments: String,
}

/// The call a tool message answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnswer {
    pub call_id: String,
    pub tool: String,
    pub index: u32,
    /// The name of the tool server that answered (`None`: not run by one, or saved before).
    #[serde(default)]
    pub server: Option<String>,
    /// The result's whole size when it was cut for the model.
    #[serde(default)]
    pub cut_from_bytes: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    Complete,
    Stopped,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinishReason {
    Stop,
    Length,
    Cancelled,
    /// The conversation reached the context length the memory plan reserved.
    #[serde(rename = "contextFull")]
    ContextFull,
}

/// Measured figures stored with an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageStats {
    pub prompt_tokens: u32,
    pub prefilled_tokens: u32,
    pub output_tokens: u32,
    pub time_to_first_token_ms: u64,
    pub total_ms: u64,
    pub seconds_per_token: Option<f64>,
    pub io_share: Option<f64>,
    pub true_hit_rate: Option<f64>,
    pub bytes_read: u64,
    pub finish_reason: FinishReason,
    pub seed: Option<u64>,
    pub model: String,
    /// The host a remote backend answered from (its figures are tokens and timing only);
    /// `None` for the local engine.
    pub remote_host: Option<String>,
    /// Positions the conversation may hold (prompt and replies); `None` for a remote reply
    /// or one saved before this was recorded.
    pub context_length: Option<u32>,
    /// The conversation holds 90 % or more of `context_length` after this reply
    /// (`k3_plan::nearly_full`): the window says so before the context is full.
    pub context_nearly_full: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: i64,
    pub role: Role,
    pub content: String,
    pub think: Option<String>,
    pub status: MessageStatus,
    pub stats: Option<MessageStats>,
    /// Why a failed reply failed, as the window said it then.
    pub failure: Option<String>,
    /// An assistant message's tool calls, in order (empty otherwise).
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers (`None` for other roles).
    pub tool_answer: Option<ToolAnswer>,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummary {
    pub id: i64,
    pub title: String,
    pub updated_at: i64,
    pub message_count: u32,
    /// The remote backend's id when the conversation is not answered on this machine.
    pub backend: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    pub id: i64,
    pub title: String,
    pub system_prompt: String,
    pub settings: SamplingSettings,
    pub created_at: i64,
    pub updated_at: i64,
    /// The remote backend (a Settings › Backends id) that answers it; `None`: the local engine.
    pub backend: Option<String>,
    pub messages: Vec<Message>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    Markdown,
    Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportFile {
    pub file_name: String,
    pub content: String,
}

/// What the chat history's startup check found, when the user must hear about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HistoryNoticeKind {
    /// The history file was damaged: it was set aside and a new, empty history started.
    Damaged,
    /// The file belongs to a newer version of the app: left untouched, nothing saved.
    TooNew,
    /// The file could not be opened (permissions, I/O): left untouched, nothing saved.
    Unavailable,
    /// The history is fine; a damaged or foreign leftover beside it was set aside.
    LeftoverSetAside,
}

/// The startup notice about the chat history (`history_notice`), shown until dismissed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryNotice {
    pub kind: HistoryNoticeKind,
    /// One readable paragraph naming the file and every file set aside.
    pub message: String,
    /// The history database.
    pub file: String,
    /// Where damaged files were moved (their bytes unchanged).
    pub set_aside: Vec<String>,
    /// False when this session's chats live in memory only and are lost on quit.
    pub saved: bool,
}

impl SamplingSettings {
    /// Refuses settings the engine would refuse later (or silently read as greedy).
    pub fn check(&self) -> Result<(), crate::error::AppError> {
        use crate::error::AppError;
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(AppError::invalid(format!(
                "temperature {} must be 0 (greedy) or a positive number",
                self.temperature
            )));
        }
        if self.max_tokens == 0 {
            return Err(AppError::invalid("max tokens must be at least 1"));
        }
        Ok(self.generate_params(k3_engine::DecodeMode::Incremental).sampling.validate()?)
    }

    /// Engine parameters for these settings (temperature 0 = greedy), decoded as `mode`
    /// says.
    pub fn generate_params(&self, mode: k3_engine::DecodeMode) -> k3_engine::GenerateParams {
        let sampling = k3_engine::Sampling::from_user(self.temperature, self.top_p, self.seed);
        k3_engine::GenerateParams { max_new_tokens: self.max_tokens as usize, sampling, stop_ids: vec![], mode }
    }
}
