//! The chat template (spec §12.4, tech report §F): the checkpoint's Jinja text or the
//! built-in XTML renderer (`chat::xtml`), behind one [`ChatTemplate`].
//!
//! Owns: rendering a conversation and its options to text whose special-token strings
//! the tokenizer turns into their ids: from the checkpoint's own Jinja `chat_template`
//! when `tokenizer_config.json` has one (minijinja, with fuel, a recursion limit and an
//! output cap enforced while it renders), else from the built-in renderer. A Jinja
//! template gets the names Hugging Face passes (`messages` with `tool_calls`,
//! `tool_call_id`, `name`; `tools`, `thinking`, `thinking_effort`, `tool_choice`,
//! `response_format`, `add_generation_prompt`) and K3's own (`think`, typed arguments,
//! `option_text`).
//! Must not: depend on token ids; ids come from the tokenizer files at encode time.
//! Easy to break: the template must be append-only (rendering one more message extends the
//! text) or multi-turn sessions fall back to a full re-prefill.

use minijinja::{context, Environment};
use serde_json::{json, Value};

pub use crate::chat::message::{ChatMessage, Role};
pub use crate::chat::options::ChatMode;
pub use crate::chat::xtml::{generation_prompt, ASSISTANT_CLOSE};

use crate::chat::options::{
    effort_text, response_format_text, tool_choice_text, ChatOptions, ResponseFormat, ToolChoice,
};
use crate::chat::{escape, xtml};
use crate::error::{Error, Result};

/// Steps of template execution allowed (CF-08: a template must not run away).
#[cfg(not(fuzzing))]
const TEMPLATE_FUEL: u64 = 2_000_000;
/// Largest rendered conversation accepted, in bytes.
#[cfg(not(fuzzing))]
const MAX_RENDERED_BYTES: usize = 16 << 20;
// The fuzz build (`cargo fuzz` sets `--cfg fuzzing`) runs the same limits a tenth and a
// sixteenth as large: they are reached, and refused, the same way, and a runaway template
// stops in ~0.1 of the time under ASan instead of holding `chat_template` at ~400 inputs/s
// (perf, 2026-12-07: 57 % of its time in macro calls running to the fuel or the cap).
#[cfg(fuzzing)]
const TEMPLATE_FUEL: u64 = 200_000;
#[cfg(fuzzing)]
const MAX_RENDERED_BYTES: usize = 1 << 20;

/// A chat template: the checkpoint's Jinja text, or the built-in XTML renderer.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    jinja: Option<String>,
}

impl ChatTemplate {
    /// The built-in XTML renderer.
    pub fn builtin() -> Self {
        ChatTemplate { jinja: None }
    }

    /// The checkpoint's own template text (rendered with minijinja).
    pub fn jinja(source: impl Into<String>) -> Self {
        ChatTemplate { jinja: Some(source.into()) }
    }

    /// True when rendering uses the checkpoint's Jinja text.
    pub fn is_jinja(&self) -> bool {
        self.jinja.is_some()
    }

    /// Renders `messages` without tools or options; with `add_generation_prompt` the text
    /// ends with the prefix the model continues from.
    pub fn render(&self, messages: &[ChatMessage], mode: ChatMode, add_generation_prompt: bool) -> Result<String> {
        self.render_with(messages, &ChatOptions::default(), mode, add_generation_prompt)
    }

    /// Renders `messages` with the request's tools and options (see `chat::xtml` for the
    /// layout).
    pub fn render_with(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
        mode: ChatMode,
        add_generation_prompt: bool,
    ) -> Result<String> {
        let text = match &self.jinja {
            None => xtml::render(messages, options, mode, add_generation_prompt),
            Some(source) => render_jinja(source, messages, options, mode, add_generation_prompt)?,
        };
        if text.len() > MAX_RENDERED_BYTES {
            return Err(Error::Template {
                reason: format!("rendered {} bytes, over the {MAX_RENDERED_BYTES}-byte cap", text.len()),
            });
        }
        Ok(text)
    }
}

/// The rendered text, refusing every write past [`MAX_RENDERED_BYTES`]: the cap stops a
/// runaway template while it renders, not after it has built the whole text.
struct CappedText {
    bytes: Vec<u8>,
    over: bool,
}

impl std::io::Write for CappedText {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > MAX_RENDERED_BYTES {
            self.over = true;
            return Err(std::io::Error::other("the rendered text passes the cap"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn render_jinja(
    source: &str,
    messages: &[ChatMessage],
    options: &ChatOptions,
    mode: ChatMode,
    add_generation_prompt: bool,
) -> Result<String> {
    let mut env = Environment::new();
    env.set_fuel(Some(TEMPLATE_FUEL));
    env.set_recursion_limit(64);
    env.add_filter("tojson", tojson);
    let ctx = context! {
        messages => jinja_value(jinja_messages(messages)),
        add_generation_prompt => add_generation_prompt,
        thinking => mode == ChatMode::Thinking,
        thinking_effort => options.effort.map(|e| e.as_str()),
        tools => (!options.tools.is_empty()).then(|| jinja_value(xtml::tools_value(&options.tools))),
        tool_choice => jinja_value(tool_choice_value(&options.tool_choice)),
        response_format => jinja_value(response_format_value(&options.response_format)),
        option_text => jinja_value(option_texts(options)),
    };
    let fail = |e: minijinja::Error| Error::Template { reason: e.to_string() };
    let template = env.template_from_str(source).map_err(fail)?;
    let mut out = CappedText { bytes: Vec::new(), over: false };
    if let Err(e) = template.render_captured_to(ctx, &mut out) {
        if out.over {
            return Err(Error::Template { reason: format!("rendered more than the {MAX_RENDERED_BYTES}-byte cap") });
        }
        return Err(fail(e));
    }
    String::from_utf8(out.bytes).map_err(|_| Error::Template { reason: "rendered text is not UTF-8".into() })
}

/// The `tojson` filter as `transformers` defines it for chat templates (`json.dumps` with
/// `ensure_ascii=False`, keys in order; `indent` for a pretty form), with `<|` written
/// `\u003c|` as the built-in renderer writes it (`escape::json_text`).
fn tojson(value: minijinja::Value, indent: Option<usize>) -> std::result::Result<minijinja::Value, minijinja::Error> {
    let fail = |e: serde_json::Error| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string());
    let json = serde_json::to_value(&value).map_err(fail)?;
    let text = match indent {
        None => escape::json_text(&json),
        Some(n) => {
            let spaces = vec![b' '; n];
            let mut out = Vec::new();
            let formatter = serde_json::ser::PrettyFormatter::with_indent(&spaces);
            let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
            serde::Serialize::serialize(&json, &mut serializer).map_err(fail)?;
            escape::without_markers(&String::from_utf8_lossy(&out))
        }
    };
    Ok(minijinja::Value::from_safe_string(text))
}

/// `value` as a template value (through serde).
fn jinja_value<T: serde::Serialize>(value: T) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(value))
}

/// The messages as Hugging Face chat templates read them: `role`, `content`, an
/// assistant's `tool_calls` (`id`, `type`, `function.name`, `function.arguments` as JSON
/// text) and `reasoning_content`, a tool message's `tool_call_id` and `name`, a system
/// message's `tools`. K3's template also reads `think`, each call's `index` and
/// `typed_arguments` (`key`, `type`, `value`; null when the arguments render as a `json`
/// block) and a tool message's `index`.
fn jinja_messages(messages: &[ChatMessage]) -> Vec<Value> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut v = json!({"role": m.role.as_str(), "content": m.content});
            if let Some(think) = &m.think {
                v["think"] = think.as_str().into();
                v["reasoning_content"] = think.as_str().into();
            }
            if !m.tool_calls.is_empty() {
                v["tool_calls"] = m.tool_calls.iter().map(jinja_call).collect();
            }
            if let Some(answers) = &m.answers {
                v["name"] = answers.tool.as_str().into();
                v["index"] = answers.index.into();
                v["tool_call_id"] = answered_call_id(&messages[..i], &answers.tool, answers.index).into();
            }
            if !m.tools.is_empty() {
                v["tools"] = xtml::tools_value(&m.tools);
            }
            v
        })
        .collect()
}

fn jinja_call(call: &crate::chat::message::ToolCall) -> Value {
    let typed = xtml::split_arguments(&call.arguments).map(|args| {
        args.into_iter().map(|a| json!({"key": a.key, "type": a.kind, "value": a.text})).collect::<Vec<_>>()
    });
    json!({
        "id": call.id,
        "type": "function",
        "index": call.index,
        "function": {"name": call.tool, "arguments": call.arguments},
        "typed_arguments": typed,
    })
}

/// The id of the latest call `tool`/`index` among `earlier` messages (empty when none).
fn answered_call_id(earlier: &[ChatMessage], tool: &str, index: u32) -> String {
    earlier
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .find_map(|m| m.tool_calls.iter().find(|c| c.index == index && c.tool == tool))
        .map_or_else(String::new, |c| c.id.clone())
}

/// `tool_choice` as OpenAI writes it.
fn tool_choice_value(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Function(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// `response_format` as OpenAI writes it.
fn response_format_value(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::Text => json!({"type": "text"}),
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema { name, schema } => {
            json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema}})
        }
    }
}

/// The option messages' wording (`chat::options`), for a template that words its
/// options as the built-in renderer does: `tool_declare` (the tools as JSON),
/// `thinking_effort`, `tool_choice`, `response_format`; null where there is no message.
fn option_texts(options: &ChatOptions) -> Value {
    json!({
        "tool_declare": (!options.tools.is_empty()).then(|| xtml::tools_json(&options.tools)),
        "thinking_effort": options.effort.map(effort_text),
        "tool_choice": tool_choice_text(&options.tool_choice),
        "response_format": response_format_text(&options.response_format),
    })
}
