//! Data transfer objects: what commands take and return, as the UI sees them.
//!
//! Owns: the wire shape (camelCase JSON) of models, conversations, messages and stats,
//! and their TypeScript twins (ts-rs; `ui/src/generated/ipc.ts`, kept fresh by
//! `tests/integration/contract.rs`).
//! Must not: hold behaviour: the conversation types are twins of `k3_app::history`'s
//! records (`ipc::twin`), converted field by field; the app core never sees these.
//! Easy to break: 64-bit integers are `number` in TypeScript (`#[ts(type = "number")]`):
//! ids and millisecond timestamps stay far below 2^53.

use crate::ipc::error::IpcError;
use crate::ipc::twin::{wire_enum, wire_struct};

wire_struct! {
    /// The loaded model.
    pub struct ModelInfo both ways k3_app::worker::ModelInfo {
        path: String,
        name: String,
        is_demo: bool,
        layers: u32,
        hidden_size: u32,
        vocab_size: u32,
        routed_experts: u32,
        experts_per_token: u32,
        #[ts(type = "number")]
        checkpoint_bytes: u64,
        /// How weights are held, in one line (plan summary).
        memory: String,
        #[ts(type = "number")]
        load_ms: u64,
    }
}

wire_struct! {
    /// What `current_model` reports: the model in use, or why none is.
    pub struct ModelStatus from k3_app::worker::ModelStatus {
        model: Option<ModelInfo>,
        error: Option<IpcError>,
    }
}

wire_struct! {
    /// Sampling settings of one conversation. `temperature` 0 means greedy.
    pub struct SamplingSettings both ways k3_app::history::SamplingSettings {
        temperature: f32,
        top_p: f32,
        #[ts(type = "number")]
        seed: u64,
        max_tokens: u32,
        thinking: bool,
        /// How long K3 thinks (thinking on only); `None`: the model's default.
        thinking_effort: Option<ThinkingEffort>,
        /// The tool servers (Settings › Tools ids) whose tools this conversation offers.
        #[serde(default)]
        tool_servers: Vec<String>,
        /// Tools of those servers turned off in this conversation, each `<server id>/<tool>`.
        #[serde(default)]
        tools_off: Vec<String>,
        /// Whether the reply to a user message must call a tool.
        #[serde(default)]
        tool_choice: ToolUse,
    }
}

wire_enum! {
    /// Whether the reply to a user message must call a tool (the replies after tool results
    /// always decide for themselves, or the loop would never end).
    #[serde(rename_all = "lowercase")]
    pub enum ToolUse from k3_app::history::ToolUse {
        /// The model decides.
        Auto,
        /// At least one call.
        Required,
    }
}

wire_enum! {
    /// The thinking efforts K3 was trained at.
    #[serde(rename_all = "lowercase")]
    pub enum ThinkingEffort from k3_app::history::ThinkingEffort {
        Low,
        High,
        Max,
    }
}

wire_enum! {
    #[serde(rename_all = "lowercase")]
    pub enum Role from k3_app::history::Role {
        User,
        Assistant,
        /// A tool's result, answering one call of the assistant message before it.
        Tool,
    }
}

wire_struct! {
    /// One tool call of an assistant message.
    pub struct ToolCall both ways k3_app::history::ToolCall {
        /// The call's id (what a tool message answering it names).
        id: String,
        tool: String,
        /// 1-based position among the message's calls.
        index: u32,
        /// The arguments, a JSON object's text.
        arguments: String,
    }
}

wire_struct! {
    /// The call a tool message answers.
    pub struct ToolAnswer both ways k3_app::history::ToolAnswer {
        call_id: String,
        tool: String,
        index: u32,
        /// The name of the tool server that answered (`None`: not run by one, or saved before).
        #[serde(default)]
        server: Option<String>,
        /// The result's whole size when it was cut for the model.
        #[serde(default)]
        cut_from_bytes: Option<u32>,
    }
}

wire_enum! {
    #[serde(rename_all = "lowercase")]
    pub enum MessageStatus from k3_app::history::MessageStatus {
        Complete,
        Stopped,
        Failed,
    }
}

wire_enum! {
    #[serde(rename_all = "lowercase")]
    pub enum FinishReason from k3_app::history::FinishReason {
        Stop,
        Length,
        Cancelled,
        /// The conversation reached the context length the memory plan reserved.
        #[serde(rename = "contextFull")]
        ContextFull,
    }
}

wire_struct! {
    /// Measured figures stored with an assistant message.
    pub struct MessageStats both ways k3_app::history::MessageStats {
        prompt_tokens: u32,
        prefilled_tokens: u32,
        output_tokens: u32,
        #[ts(type = "number")]
        time_to_first_token_ms: u64,
        #[ts(type = "number")]
        total_ms: u64,
        seconds_per_token: Option<f64>,
        io_share: Option<f64>,
        true_hit_rate: Option<f64>,
        #[ts(type = "number")]
        bytes_read: u64,
        finish_reason: FinishReason,
        #[ts(type = "number | null")]
        seed: Option<u64>,
        model: String,
        /// The host a remote backend answered from (its figures are tokens and timing only);
        /// `None` for the local engine.
        remote_host: Option<String>,
        /// Positions the conversation may hold (prompt and replies); `None` for a remote reply
        /// or one saved before this was recorded.
        context_length: Option<u32>,
        /// The conversation holds 90 % or more of `context_length` after this reply
        /// (`k3_plan::nearly_full`): the window says so before the context is full.
        context_nearly_full: bool,
    }
}

wire_struct! {
    pub struct Message both ways k3_app::history::Message {
        #[ts(type = "number")]
        id: i64,
        role: Role,
        content: String,
        think: Option<String>,
        status: MessageStatus,
        stats: Option<MessageStats>,
        /// Why a failed reply failed, as the window said it then.
        failure: Option<String>,
        /// An assistant message's tool calls, in order (empty otherwise).
        tool_calls: Vec<ToolCall>,
        /// The call a tool message answers (`None` for other roles).
        tool_answer: Option<ToolAnswer>,
        #[ts(type = "number")]
        created_at: i64,
    }
}

wire_struct! {
    pub struct ConversationSummary both ways k3_app::history::ConversationSummary {
        #[ts(type = "number")]
        id: i64,
        title: String,
        #[ts(type = "number")]
        updated_at: i64,
        message_count: u32,
        /// The remote backend's id when the conversation is not answered on this machine.
        backend: Option<String>,
    }
}

wire_struct! {
    pub struct Conversation both ways k3_app::history::Conversation {
        #[ts(type = "number")]
        id: i64,
        title: String,
        system_prompt: String,
        settings: SamplingSettings,
        #[ts(type = "number")]
        created_at: i64,
        #[ts(type = "number")]
        updated_at: i64,
        /// The remote backend (a Settings › Backends id) that answers it; `None`: the local engine.
        backend: Option<String>,
        messages: Vec<Message>,
    }
}

wire_enum! {
    #[serde(rename_all = "lowercase")]
    pub enum ExportFormat from k3_app::history::ExportFormat {
        Markdown,
        Json,
    }
}

wire_struct! {
    pub struct ExportFile both ways k3_app::history::ExportFile {
        file_name: String,
        content: String,
    }
}

wire_enum! {
    /// What the chat history's startup check found, when the user must hear about it.
    #[serde(rename_all = "camelCase")]
    pub enum HistoryNoticeKind from k3_app::history::HistoryNoticeKind {
        /// The history file was damaged: it was set aside and a new, empty history started.
        Damaged,
        /// The file belongs to a newer version of the app: left untouched, nothing saved.
        TooNew,
        /// The file could not be opened (permissions, I/O): left untouched, nothing saved.
        Unavailable,
        /// The history is fine; a damaged or foreign leftover beside it was set aside.
        LeftoverSetAside,
    }
}

wire_struct! {
    /// The startup notice about the chat history (`history_notice`), shown until dismissed.
    pub struct HistoryNotice both ways k3_app::history::HistoryNotice {
        kind: HistoryNoticeKind,
        /// One readable paragraph naming the file and every file set aside.
        message: String,
        /// The history database.
        file: String,
        /// Where damaged files were moved (their bytes unchanged).
        set_aside: Vec<String>,
        /// False when this session's chats live in memory only and are lost on quit.
        saved: bool,
    }
}

impl Default for ToolUse {
    fn default() -> Self {
        k3_app::history::ToolUse::default().into()
    }
}

impl Default for SamplingSettings {
    fn default() -> Self {
        k3_app::history::SamplingSettings::default().into()
    }
}
