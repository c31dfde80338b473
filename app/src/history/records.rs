//! The stored form of the history's JSON columns: `conversations.settings`,
//! `messages.stats`, `messages.tool_calls` and `messages.tool_answer`.
//!
//! Owns: row types whose JSON field names are part of the file format, frozen here and
//! written out one by one, and the conversions to and from the wire DTOs.
//! Must not: derive anything from the DTOs: renaming a camelCase field of the UI's types
//! must not turn stored rows into "corrupt" ones; a change of the stored form is a new
//! migration in `schema.rs`.
//! Easy to break: the names below are what files written since schema version 1 hold.

use serde::{Deserialize, Serialize};

use super::types::{FinishReason, MessageStats, SamplingSettings, ThinkingEffort, ToolAnswer, ToolCall, ToolUse};

/// `conversations.settings`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct SettingsRecord {
    #[serde(rename = "temperature")]
    temperature: f32,
    #[serde(rename = "topP")]
    top_p: f32,
    #[serde(rename = "seed")]
    seed: u64,
    #[serde(rename = "maxTokens")]
    max_tokens: u32,
    #[serde(rename = "thinking")]
    thinking: bool,
    /// Since schema 3: absent when the model's default effort is used.
    #[serde(rename = "thinkingEffort", default, skip_serializing_if = "Option::is_none")]
    thinking_effort: Option<EffortRecord>,
    /// Since tools in the window: the tool servers the conversation offers (absent: none).
    #[serde(rename = "toolServers", default, skip_serializing_if = "Vec::is_empty")]
    tool_servers: Vec<String>,
    /// Since tools in the window: tools of those servers turned off (`<server>/<tool>`).
    #[serde(rename = "toolsOff", default, skip_serializing_if = "Vec::is_empty")]
    tools_off: Vec<String>,
    /// Since tools in the window: absent when the model decides.
    #[serde(rename = "toolChoice", default, skip_serializing_if = "ToolUseRecord::is_auto")]
    tool_choice: ToolUseRecord,
}

/// A stored tool choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
enum ToolUseRecord {
    #[default]
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "required")]
    Required,
}

impl ToolUseRecord {
    fn is_auto(&self) -> bool {
        *self == ToolUseRecord::Auto
    }
}

/// A stored thinking effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum EffortRecord {
    #[serde(rename = "low")]
    Low,
    #[serde(rename = "high")]
    High,
    #[serde(rename = "max")]
    Max,
}

/// One element of `messages.tool_calls` (a JSON array; schema 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ToolCallRecord {
    #[serde(rename = "id")]
    id: String,
    #[serde(rename = "tool")]
    tool: String,
    #[serde(rename = "index")]
    index: u32,
    #[serde(rename = "arguments")]
    arguments: String,
}

/// `messages.tool_answer` (schema 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ToolAnswerRecord {
    #[serde(rename = "callId")]
    call_id: String,
    #[serde(rename = "tool")]
    tool: String,
    #[serde(rename = "index")]
    index: u32,
    /// Since tools in the window: the server that answered.
    #[serde(rename = "server", default, skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    /// Since tools in the window: the result's size before it was cut.
    #[serde(rename = "cutFromBytes", default, skip_serializing_if = "Option::is_none")]
    cut_from_bytes: Option<u32>,
}

impl From<&ToolCall> for ToolCallRecord {
    fn from(c: &ToolCall) -> Self {
        ToolCallRecord { id: c.id.clone(), tool: c.tool.clone(), index: c.index, arguments: c.arguments.clone() }
    }
}

impl From<ToolCallRecord> for ToolCall {
    fn from(r: ToolCallRecord) -> Self {
        ToolCall { id: r.id, tool: r.tool, index: r.index, arguments: r.arguments }
    }
}

impl From<&ToolAnswer> for ToolAnswerRecord {
    fn from(a: &ToolAnswer) -> Self {
        ToolAnswerRecord {
            call_id: a.call_id.clone(),
            tool: a.tool.clone(),
            index: a.index,
            server: a.server.clone(),
            cut_from_bytes: a.cut_from_bytes,
        }
    }
}

impl From<ToolAnswerRecord> for ToolAnswer {
    fn from(r: ToolAnswerRecord) -> Self {
        ToolAnswer {
            call_id: r.call_id,
            tool: r.tool,
            index: r.index,
            server: r.server,
            cut_from_bytes: r.cut_from_bytes,
        }
    }
}

impl From<ThinkingEffort> for EffortRecord {
    fn from(e: ThinkingEffort) -> Self {
        match e {
            ThinkingEffort::Low => EffortRecord::Low,
            ThinkingEffort::High => EffortRecord::High,
            ThinkingEffort::Max => EffortRecord::Max,
        }
    }
}

impl From<EffortRecord> for ThinkingEffort {
    fn from(e: EffortRecord) -> Self {
        match e {
            EffortRecord::Low => ThinkingEffort::Low,
            EffortRecord::High => ThinkingEffort::High,
            EffortRecord::Max => ThinkingEffort::Max,
        }
    }
}

/// How a stored reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum FinishRecord {
    #[serde(rename = "stop")]
    Stop,
    #[serde(rename = "length")]
    Length,
    #[serde(rename = "cancelled")]
    Cancelled,
    #[serde(rename = "contextFull")]
    ContextFull,
}

/// `messages.stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct StatsRecord {
    #[serde(rename = "promptTokens")]
    prompt_tokens: u32,
    #[serde(rename = "prefilledTokens")]
    prefilled_tokens: u32,
    #[serde(rename = "outputTokens")]
    output_tokens: u32,
    #[serde(rename = "timeToFirstTokenMs")]
    time_to_first_token_ms: u64,
    #[serde(rename = "totalMs")]
    total_ms: u64,
    #[serde(rename = "secondsPerToken")]
    seconds_per_token: Option<f64>,
    #[serde(rename = "ioShare")]
    io_share: Option<f64>,
    #[serde(rename = "trueHitRate")]
    true_hit_rate: Option<f64>,
    #[serde(rename = "bytesRead")]
    bytes_read: u64,
    #[serde(rename = "finishReason")]
    finish_reason: FinishRecord,
    #[serde(rename = "seed")]
    seed: Option<u64>,
    #[serde(rename = "model")]
    model: String,
    /// Since schema 2: the host a remote backend answered from. Absent in local replies and
    /// in every row of schema 1 (which only the local engine wrote).
    #[serde(rename = "remoteHost", default, skip_serializing_if = "Option::is_none")]
    remote_host: Option<String>,
    /// Since the context planner: the positions the conversation may hold. Absent in remote
    /// replies and in rows written before.
    #[serde(rename = "contextLength", default, skip_serializing_if = "Option::is_none")]
    context_length: Option<u32>,
}

impl From<&SamplingSettings> for SettingsRecord {
    fn from(s: &SamplingSettings) -> Self {
        SettingsRecord {
            temperature: s.temperature,
            top_p: s.top_p,
            seed: s.seed,
            max_tokens: s.max_tokens,
            thinking: s.thinking,
            thinking_effort: s.thinking_effort.map(EffortRecord::from),
            tool_servers: s.tool_servers.clone(),
            tools_off: s.tools_off.clone(),
            tool_choice: match s.tool_choice {
                ToolUse::Auto => ToolUseRecord::Auto,
                ToolUse::Required => ToolUseRecord::Required,
            },
        }
    }
}

impl From<SettingsRecord> for SamplingSettings {
    fn from(r: SettingsRecord) -> Self {
        SamplingSettings {
            temperature: r.temperature,
            top_p: r.top_p,
            seed: r.seed,
            max_tokens: r.max_tokens,
            thinking: r.thinking,
            thinking_effort: r.thinking_effort.map(ThinkingEffort::from),
            tool_servers: r.tool_servers,
            tools_off: r.tools_off,
            tool_choice: match r.tool_choice {
                ToolUseRecord::Auto => ToolUse::Auto,
                ToolUseRecord::Required => ToolUse::Required,
            },
        }
    }
}

impl From<FinishReason> for FinishRecord {
    fn from(f: FinishReason) -> Self {
        match f {
            FinishReason::Stop => FinishRecord::Stop,
            FinishReason::Length => FinishRecord::Length,
            FinishReason::Cancelled => FinishRecord::Cancelled,
            FinishReason::ContextFull => FinishRecord::ContextFull,
        }
    }
}

impl From<FinishRecord> for FinishReason {
    fn from(f: FinishRecord) -> Self {
        match f {
            FinishRecord::Stop => FinishReason::Stop,
            FinishRecord::Length => FinishReason::Length,
            FinishRecord::Cancelled => FinishReason::Cancelled,
            FinishRecord::ContextFull => FinishReason::ContextFull,
        }
    }
}

impl From<&MessageStats> for StatsRecord {
    fn from(s: &MessageStats) -> Self {
        StatsRecord {
            prompt_tokens: s.prompt_tokens,
            prefilled_tokens: s.prefilled_tokens,
            output_tokens: s.output_tokens,
            time_to_first_token_ms: s.time_to_first_token_ms,
            total_ms: s.total_ms,
            seconds_per_token: s.seconds_per_token,
            io_share: s.io_share,
            true_hit_rate: s.true_hit_rate,
            bytes_read: s.bytes_read,
            finish_reason: s.finish_reason.into(),
            seed: s.seed,
            model: s.model.clone(),
            remote_host: s.remote_host.clone(),
            context_length: s.context_length,
        }
    }
}

impl From<StatsRecord> for MessageStats {
    fn from(r: StatsRecord) -> Self {
        MessageStats {
            prompt_tokens: r.prompt_tokens,
            prefilled_tokens: r.prefilled_tokens,
            output_tokens: r.output_tokens,
            time_to_first_token_ms: r.time_to_first_token_ms,
            total_ms: r.total_ms,
            seconds_per_token: r.seconds_per_token,
            io_share: r.io_share,
            true_hit_rate: r.true_hit_rate,
            bytes_read: r.bytes_read,
            finish_reason: r.finish_reason.into(),
            seed: r.seed,
            model: r.model,
            remote_host: r.remote_host,
            context_length: r.context_length,
            context_nearly_full: r.context_length.is_some_and(|limit| {
                k3_plan::nearly_full(u64::from(r.prompt_tokens) + u64::from(r.output_tokens), u64::from(limit))
            }),
        }
    }
}

/// The JSON keys a stored settings row has (for the format test).
pub const SETTINGS_KEYS: [&str; 5] = ["temperature", "topP", "seed", "maxTokens", "thinking"];

/// The JSON keys a stored stats row of a local reply has (for the format test); a remote
/// reply's also has `remoteHost`.
pub const STATS_KEYS: [&str; 13] = [
    "promptTokens",
    "prefilledTokens",
    "outputTokens",
    "timeToFirstTokenMs",
    "totalMs",
    "secondsPerToken",
    "ioShare",
    "trueHitRate",
    "bytesRead",
    "finishReason",
    "seed",
    "model",
    "contextLength",
];
