//! The request bodies (serde structs, never maps) and their checks (AP-06, AP-07).
//!
//! Owns: [`ChatRequest`] and [`CompletionRequest`] as clients send them, the sampling
//! fields both share ([`SamplingFields`] → the engine's `GenerateParams`), and the
//! limits: temperature in [0, 2] (0 = greedy), top_p in (0, 1], `n` = 1, at most
//! [`MAX_STOPS`] non-empty stop strings, max tokens in 1..=context length.
//! Must not: accept a value by coercion (`"5"` for 5, 1e12, −1: serde refuses them), or
//! let an unknown role through.

use k3_engine::{DecodeMode, GenerateParams, Sampling};
use serde::Deserialize;

use crate::api_error::ApiError;

/// Most stop strings a request may give.
pub const MAX_STOPS: usize = 16;
/// Longest stop string, in bytes.
pub const MAX_STOP_BYTES: usize = 256;
/// Most messages in one chat request.
pub const MAX_MESSAGES: usize = 4096;

/// `stop`: one string or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

/// The sampling fields of both endpoints.
#[derive(Debug, Default, Deserialize)]
pub struct SamplingFields {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: Option<u64>,
    pub max_tokens: Option<u64>,
    pub max_completion_tokens: Option<u64>,
    pub stop: Option<Stop>,
    pub n: Option<u64>,
}

/// A message's `content`: a string or a list of text parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
}

/// One message as a client sends it.
#[derive(Debug, Deserialize)]
pub struct WireMessage {
    pub role: String,
    pub content: Option<Content>,
    /// The think channel of an earlier assistant reply (thinking mode), sent back.
    pub reasoning_content: Option<String>,
    /// An assistant's tool calls, sent back.
    pub tool_calls: Option<Vec<WireToolCall>>,
    /// A tool message: the id of the call it answers.
    pub tool_call_id: Option<String>,
    /// A tool message: the tool's name (checked against the call's).
    pub name: Option<String>,
    /// A system message's tools (K3's dynamic tools).
    pub tools: Option<Vec<WireTool>>,
}

/// An assistant's tool call as OpenAI writes it.
#[derive(Debug, Deserialize)]
pub struct WireToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub function: WireFunctionCall,
}

#[derive(Debug, Deserialize)]
pub struct WireFunctionCall {
    pub name: String,
    /// JSON text.
    pub arguments: String,
}

/// A declared tool: `{"type": "function", "function": {name, description, parameters}}`.
#[derive(Debug, Deserialize)]
pub struct WireTool {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: Option<WireFunction>,
}

#[derive(Debug, Deserialize)]
pub struct WireFunction {
    pub name: Option<String>,
    pub description: Option<String>,
    pub parameters: Option<serde_json::Value>,
    pub strict: Option<bool>,
}

/// `tool_choice`: `"auto"`, `"none"`, `"required"` or `{"type":"function","function":{"name":…}}`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum WireToolChoice {
    Mode(String),
    Function {
        #[serde(rename = "type")]
        kind: String,
        function: WireChoiceName,
    },
}

#[derive(Debug, Deserialize)]
pub struct WireChoiceName {
    pub name: String,
}

/// `response_format`: `{"type": "text" | "json_object" | "json_schema", "json_schema": {…}}`.
#[derive(Debug, Deserialize)]
pub struct WireResponseFormat {
    #[serde(rename = "type")]
    pub kind: String,
    pub json_schema: Option<WireJsonSchema>,
}

#[derive(Debug, Deserialize)]
pub struct WireJsonSchema {
    pub name: Option<String>,
    pub schema: Option<serde_json::Value>,
    pub strict: Option<bool>,
}

/// `thinking`: a boolean, or Moonshot's `{"type": "enabled"|"disabled", "effort", "keep"}`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum WireThinking {
    On(bool),
    Object(ThinkingObject),
}

#[derive(Debug, Deserialize)]
pub struct ThinkingObject {
    #[serde(rename = "type")]
    pub kind: String,
    pub effort: Option<String>,
    pub keep: Option<String>,
}

/// `chat_template_kwargs` (vLLM's name): `{"thinking": true, "thinking_effort": "high"}`.
#[derive(Debug, Default, Deserialize)]
pub struct TemplateKwargs {
    pub thinking: Option<bool>,
    pub thinking_effort: Option<String>,
}

/// `POST /v1/chat/completions`.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<WireMessage>,
    #[serde(default)]
    pub stream: bool,
    #[serde(flatten)]
    pub sampling: SamplingFields,
    /// Thinking mode and effort (also `chat_template_kwargs.thinking`).
    pub thinking: Option<WireThinking>,
    /// OpenAI's effort name; overrides `thinking.effort`.
    pub reasoning_effort: Option<String>,
    pub chat_template_kwargs: Option<TemplateKwargs>,
    pub tools: Option<Vec<WireTool>>,
    pub tool_choice: Option<WireToolChoice>,
    pub parallel_tool_calls: Option<bool>,
    pub response_format: Option<WireResponseFormat>,
}

/// `prompt`: one string, or a list holding one.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    One(String),
    Many(Vec<String>),
}

/// `POST /v1/completions`.
#[derive(Debug, Deserialize)]
pub struct CompletionRequest {
    pub model: String,
    pub prompt: Prompt,
    #[serde(default)]
    pub stream: bool,
    #[serde(flatten)]
    pub sampling: SamplingFields,
}

/// The response header naming a request's top-level fields this server ignores (a misspelt
/// `max_token`, an option it does not implement), so a client can see them (probe finding:
/// they were dropped silently).
pub const IGNORED_FIELDS_HEADER: &str = "x-k3-ignored-fields";

/// The most ignored fields one header names.
const MAX_IGNORED_NAMED: usize = 16;

impl SamplingFields {
    /// The top-level fields both endpoints read into [`SamplingFields`].
    pub const FIELDS: &'static [&'static str] =
        &["temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "stop", "n"];
}

impl ChatRequest {
    /// The top-level fields `POST /v1/chat/completions` reads besides the sampling ones.
    pub const FIELDS: &'static [&'static str] = &[
        "model",
        "messages",
        "stream",
        "thinking",
        "reasoning_effort",
        "chat_template_kwargs",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
    ];
}

impl CompletionRequest {
    /// The top-level fields `POST /v1/completions` reads besides the sampling ones.
    pub const FIELDS: &'static [&'static str] = &["model", "prompt", "stream"];
}

/// The top-level fields of `body` (a JSON object) that are in none of the `known` lists, in
/// the order written, at most [`MAX_IGNORED_NAMED`], each shown as printable ASCII (others
/// as `?`). Empty when `body` is not an object.
pub fn unknown_fields(body: &[u8], known: &[&[&str]]) -> Vec<String> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Vec::new();
    };
    map.keys()
        .filter(|k| !known.iter().any(|list| list.contains(&k.as_str())))
        .take(MAX_IGNORED_NAMED)
        .map(|k| k.chars().take(64).map(|c| if c.is_ascii_graphic() { c } else { '?' }).collect())
        .collect()
}

/// Parses a JSON body into `T`; every failure is a 400 in OpenAI's shape. The body must
/// first be UTF-8 and strict JSON (`k3_io::json`: no key repeated in any object):
/// serde checks neither for a field it ignores (fuzz findings: `{"typ\xffe": …}` in a
/// content part, and a repeated unknown key, were accepted).
pub fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let bad = |message: String| ApiError::BadJson { message: format!("invalid request body: {message}") };
    let text = std::str::from_utf8(body)
        .map_err(|e| bad(format!("not UTF-8 (first bad byte at offset {})", e.valid_up_to())))?;
    k3_io::json::parse_value(body).map_err(bad)?;
    serde_json::from_str(text).map_err(|e| bad(e.to_string()))
}

fn invalid(param: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::Invalid { param, message: message.into() }
}

impl SamplingFields {
    /// The engine's parameters; `default_max` when no length is named, `context` the cap.
    pub fn params(&self, default_max: usize, context: usize) -> Result<GenerateParams, ApiError> {
        if self.n.is_some_and(|n| n != 1) {
            return Err(invalid("n", "only n = 1 is supported"));
        }
        Ok(GenerateParams {
            max_new_tokens: self.max_tokens(default_max, context)?,
            sampling: self.sampling()?,
            stop_ids: Vec::new(),
            mode: DecodeMode::Incremental,
        })
    }

    fn max_tokens(&self, default_max: usize, context: usize) -> Result<usize, ApiError> {
        let (param, asked) = match (self.max_completion_tokens, self.max_tokens) {
            (Some(n), _) => ("max_completion_tokens", n),
            (None, Some(n)) => ("max_tokens", n),
            (None, None) => return Ok(default_max.min(context).max(1)),
        };
        match usize::try_from(asked) {
            Ok(n) if (1..=context).contains(&n) => Ok(n),
            _ => Err(invalid(param, format!("{param} must be between 1 and the context length {context}"))),
        }
    }

    fn sampling(&self) -> Result<Sampling, ApiError> {
        let temperature = self.temperature.unwrap_or(1.0);
        if !(0.0..=2.0).contains(&temperature) {
            return Err(invalid("temperature", "temperature must be between 0 and 2"));
        }
        let top_p = self.top_p.unwrap_or(1.0);
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(invalid("top_p", "top_p must be in (0, 1]"));
        }
        let seed = if temperature == 0.0 { 0 } else { self.seed.unwrap_or_else(clock_seed) };
        Ok(Sampling::from_user(temperature as f32, top_p as f32, seed))
    }

    /// The stop strings, checked.
    pub fn stops(&self) -> Result<Vec<String>, ApiError> {
        let stops = match &self.stop {
            None => Vec::new(),
            Some(Stop::One(s)) => vec![s.clone()],
            Some(Stop::Many(v)) => v.clone(),
        };
        if stops.len() > MAX_STOPS {
            return Err(invalid("stop", format!("at most {MAX_STOPS} stop strings")));
        }
        if stops.iter().any(|s| s.is_empty() || s.len() > MAX_STOP_BYTES) {
            return Err(invalid("stop", format!("a stop string must have 1 to {MAX_STOP_BYTES} bytes")));
        }
        Ok(stops)
    }
}

/// A seed for a request that names none (sampling differs between requests).
fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

impl Content {
    /// The text of the content (parts joined); only `text` parts are accepted.
    pub fn text(&self) -> Result<String, ApiError> {
        match self {
            Content::Text(t) => Ok(t.clone()),
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match (p.kind.as_str(), &p.text) {
                    ("text", Some(t)) => Ok(t.as_str()),
                    _ => Err(invalid("messages", "only text content parts are supported")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|t| t.concat()),
        }
    }
}

impl Prompt {
    pub fn text(&self) -> Result<&str, ApiError> {
        let text = match self {
            Prompt::One(t) => t.as_str(),
            Prompt::Many(v) if v.len() == 1 => v[0].as_str(),
            Prompt::Many(_) => return Err(invalid("prompt", "exactly one prompt is supported")),
        };
        if text.is_empty() {
            return Err(invalid("prompt", "the prompt is empty"));
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(json: &str) -> Result<GenerateParams, ApiError> {
        parse::<SamplingFields>(json.as_bytes())?.params(100, 4096)
    }

    #[test]
    fn temperature_zero_is_greedy_and_limits_are_checked() {
        let p = fields(r#"{"temperature":0,"max_tokens":7}"#).expect("params");
        assert_eq!(p.sampling, Sampling::Greedy);
        assert_eq!(p.max_new_tokens, 7);
        let p = fields(r#"{"temperature":0.5,"top_p":0.9,"seed":3}"#).expect("params");
        assert_eq!(p.sampling, Sampling::TopP { temperature: 0.5, top_p: 0.9, seed: 3 });
        assert_eq!(p.max_new_tokens, 100);
        for bad in [
            r#"{"max_tokens":-1}"#,
            r#"{"max_tokens":1e12}"#,
            r#"{"max_tokens":"5"}"#,
            r#"{"max_tokens":0}"#,
            r#"{"max_tokens":5000}"#,
            r#"{"temperature":3}"#,
            r#"{"top_p":1.5}"#,
            r#"{"top_p":0}"#,
            r#"{"n":2}"#,
        ] {
            assert!(fields(bad).is_err(), "{bad}");
        }
    }

    /// Found by the `api_request` fuzz target (corpus seed `finding-ignored-key-not-utf8`):
    /// serde skipped an unknown key without checking its UTF-8, so a body that is not JSON
    /// was accepted (RELIABILITY AP-06: bad UTF-8 is a 400).
    #[test]
    fn fuzz_finding_a_key_that_is_not_utf8_is_refused_even_where_ignored() {
        let body = b"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"typ\xffe\":1,\"type\":\"text\",\"text\":\"c\"}]}]}";
        let err = parse::<ChatRequest>(body).expect_err("not UTF-8");
        assert!(matches!(&err, ApiError::BadJson { message } if message.contains("not UTF-8")), "{err:?}");
        let fine: Vec<u8> = body.iter().map(|&b| if b == 0xff { b'x' } else { b }).collect();
        assert!(parse::<ChatRequest>(&fine).is_ok(), "the same body in UTF-8 parses");
    }

    /// Found by the `api_request` fuzz target (corpus seed `finding-repeated-unknown-key`):
    /// a key serde ignores could be repeated (AP-06: duplicate keys are a 400).
    #[test]
    fn fuzz_finding_a_repeated_key_is_refused_even_where_ignored() {
        for body in [
            r#"{"model":"k3","temperaure":0,"messages":[{"role":"user","content":"hi"}],"temperaure":0}"#,
            r#"{"model":"k3","messages":[{"role":"user","content":"hi","x":1,"x":2}]}"#,
            r#"{"model":"k3","temperature":0.5,"messages":[{"role":"user","content":"hi"}],"temperature":1}"#,
        ] {
            let err = parse::<ChatRequest>(body.as_bytes()).expect_err(body);
            assert!(matches!(&err, ApiError::BadJson { message } if message.contains("duplicate key")), "{err:?}");
        }
    }

    #[test]
    fn stops_are_bounded() {
        let many = format!(r#"{{"stop":[{}]}}"#, vec!["\"x\""; 10_000].join(","));
        let f: SamplingFields = parse(many.as_bytes()).expect("parse");
        assert!(matches!(f.stops(), Err(ApiError::Invalid { param: "stop", .. })));
        let f: SamplingFields = parse(br#"{"stop":""}"#).expect("parse");
        assert!(f.stops().is_err());
        let f: SamplingFields = parse(br#"{"stop":"END"}"#).expect("parse");
        assert_eq!(f.stops().ok(), Some(vec!["END".to_string()]));
    }
}
