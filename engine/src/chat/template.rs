//! The XTML chat template (spec §12.4, tech report §F).
//!
//! Owns: rendering a conversation to text whose special-token strings the tokenizer turns
//! into their ids: from the checkpoint's own Jinja `chat_template` when
//! `tokenizer_config.json` has one (minijinja, with fuel, a recursion limit and an output
//! cap enforced while it renders), else from the
//! built-in equivalent below.
//! Built-in layout (one element per message, markers are single added tokens):
//! `<|open|>message role="R"<|sep|>TEXT<|close|>message<|sep|>` for system and user;
//! an assistant message is `<|open|>message role="assistant"<|sep|>`, then in thinking mode
//! `<|open|>think<|sep|>THINK<|close|>think<|sep|>` (kept even when empty), then
//! `<|open|>response<|sep|>TEXT<|close|>response<|sep|>`, then `<|close|>message<|sep|>`
//! and the stop marker `<|end_of_msg|>`. The generation prompt opens an assistant message
//! and then `<|open|>think<|sep|>` (thinking) or `<|open|>response<|sep|>` (instruct).
//! Must not: depend on token ids; ids come from the tokenizer files at encode time.
//! Easy to break: the template must be append-only (rendering one more message extends the
//! text) or multi-turn sessions fall back to a full re-prefill.

use minijinja::{context, Environment};
use serde::Serialize;

use crate::error::{Error, Result};

/// Steps of template execution allowed (CF-08: a template must not run away).
const TEMPLATE_FUEL: u64 = 2_000_000;
/// Largest rendered conversation accepted, in bytes.
const MAX_RENDERED_BYTES: usize = 16 << 20;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    /// The visible text (the `response` channel for the assistant).
    pub content: String,
    /// The assistant's `think` channel (thinking mode only).
    pub think: Option<String>,
}

impl ChatMessage {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        ChatMessage { role, content: content.into(), think: None }
    }
}

/// Instruct (answer directly) or thinking (reason in the `think` channel first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatMode {
    Instruct,
    Thinking,
}

/// A chat template: the checkpoint's Jinja text, or the built-in XTML renderer.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    jinja: Option<String>,
}

/// Text that closes an assistant message after its response channel content.
pub const ASSISTANT_CLOSE: &str = "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>";

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

    /// Renders `messages`; with `add_generation_prompt` the text ends with the prefix the
    /// model continues from.
    pub fn render(&self, messages: &[ChatMessage], mode: ChatMode, add_generation_prompt: bool) -> Result<String> {
        let text = match &self.jinja {
            None => render_builtin(messages, mode, add_generation_prompt),
            Some(source) => render_jinja(source, messages, mode, add_generation_prompt)?,
        };
        if text.len() > MAX_RENDERED_BYTES {
            return Err(Error::Template {
                reason: format!("rendered {} bytes, over the {MAX_RENDERED_BYTES}-byte cap", text.len()),
            });
        }
        Ok(text)
    }
}

fn render_builtin(messages: &[ChatMessage], mode: ChatMode, add_generation_prompt: bool) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str(&format!("<|open|>message role=\"{}\"<|sep|>", m.role.as_str()));
        if m.role == Role::Assistant {
            if mode == ChatMode::Thinking {
                out.push_str(&format!("<|open|>think<|sep|>{}<|close|>think<|sep|>", m.think.as_deref().unwrap_or("")));
            }
            out.push_str("<|open|>response<|sep|>");
            out.push_str(&m.content);
            out.push_str(ASSISTANT_CLOSE);
        } else {
            out.push_str(&m.content);
            out.push_str("<|close|>message<|sep|>");
        }
    }
    if add_generation_prompt {
        out.push_str(&generation_prompt(mode));
    }
    out
}

/// What the model continues from: an open assistant message and its first channel.
pub fn generation_prompt(mode: ChatMode) -> String {
    let channel = match mode {
        ChatMode::Instruct => "response",
        ChatMode::Thinking => "think",
    };
    format!("<|open|>message role=\"assistant\"<|sep|><|open|>{channel}<|sep|>")
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

fn render_jinja(source: &str, messages: &[ChatMessage], mode: ChatMode, add_generation_prompt: bool) -> Result<String> {
    let mut env = Environment::new();
    env.set_fuel(Some(TEMPLATE_FUEL));
    env.set_recursion_limit(64);
    let ctx = context! {
        messages => minijinja::value::Value::from(minijinja::value::Serde(messages)),
        add_generation_prompt => add_generation_prompt,
        thinking => mode == ChatMode::Thinking,
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
