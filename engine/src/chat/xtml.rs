//! The built-in XTML renderer (spec §12.4, tech report §F and Fig. 16) and the pieces of
//! XTML both renderers and the reply reader share.
//!
//! Owns: the context layout — global option messages (tool-declare, thinking-effort),
//! the input messages (system, user, assistant, tool; a system message's tools as a
//! dynamic tool-declare message where it stands), one-shot option messages (tool-choice,
//! response-format), the generation prefix — and the assistant message's channels
//! (think, response, tools). A call is `<|open|>call tool="…" index="n"<|sep|>` with one
//! typed `<|open|>argument key="…" type="…"<|sep|>` child per top-level key (strings
//! raw, other values as one-line JSON), or a `json` child holding arguments that are not
//! one JSON object. Attribute values escape `&`, `"`, `<` and `>` as XML does.
//! JSON in the context is written the way `transformers` renders a template's `tojson`
//! (Python's `json.dumps` with `ensure_ascii=False`, keys in their order) — one line,
//! `", "` and `": "` between items, as Fig. 16's `{"timeout": 150}` shows — except that
//! `<|` is written `\u003c|`, so no declared text can spell a control marker.
//! Must not: depend on token ids (the markers are strings the tokenizer maps), or word an
//! option message itself (`chat::options` does).
//! Easy to break: the layout must stay append-only for the input messages (rendering
//! one more message extends the text), or multi-turn sessions re-prefill; one-shot
//! options therefore come only after the last input message.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::chat::escape::{escape_attr, json_text, one_line_json};
use crate::chat::message::{ChatMessage, Role, ToolCall, ToolSpec};
use crate::chat::options::{
    effort_text, response_format_text, tool_choice_text, ChatMode, ChatOptions, ResponseFormat, ToolChoice,
};

/// Text that closes an assistant message after its response channel content (no calls).
pub const ASSISTANT_CLOSE: &str = "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>";

/// One typed argument of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argument {
    pub key: String,
    /// The JSON type of the value: string, number, boolean, object, array or null.
    pub kind: &'static str,
    /// The raw text for a string, else the value as one-line JSON ([`one_line_json`]).
    pub text: String,
}

/// Renders `messages` with `options`; with `add_generation_prompt` the text ends with the
/// one-shot option messages and the prefix the model continues from.
pub fn render(messages: &[ChatMessage], options: &ChatOptions, mode: ChatMode, add_generation_prompt: bool) -> String {
    let mut out = String::new();
    if !options.tools.is_empty() {
        push_option(&mut out, "tool-declare", &tools_json(&options.tools));
    }
    if let (ChatMode::Thinking, Some(effort)) = (mode, options.effort) {
        push_option(&mut out, "thinking-effort", &effort_text(effort));
    }
    for m in messages {
        push_message(&mut out, m, mode);
    }
    if add_generation_prompt {
        push_one_shot_options(&mut out, &options.tool_choice, &options.response_format);
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

fn push_one_shot_options(out: &mut String, choice: &ToolChoice, format: &ResponseFormat) {
    if let Some(text) = tool_choice_text(choice) {
        push_option(out, "tool-choice", &text);
    }
    if let Some(text) = response_format_text(format) {
        push_option(out, "response-format", &text);
    }
}

/// An option message: `<|open|>message role="system" type="KIND"<|sep|>TEXT<|close|>message<|sep|>`.
fn push_option(out: &mut String, kind: &str, text: &str) {
    out.push_str(&format!("<|open|>message role=\"system\" type=\"{kind}\"<|sep|>{text}<|close|>message<|sep|>"));
}

fn push_message(out: &mut String, m: &ChatMessage, mode: ChatMode) {
    match m.role {
        Role::Assistant => push_assistant(out, m, mode),
        Role::Tool => {
            let answers = m
                .answers
                .as_ref()
                .map_or(String::new(), |a| format!(" tool=\"{}\" index=\"{}\"", escape_attr(&a.tool), a.index));
            out.push_str(&format!("<|open|>message role=\"tool\"{answers}<|sep|>{}<|close|>message<|sep|>", m.content));
        }
        Role::System if m.content.is_empty() && !m.tools.is_empty() => {}
        Role::System | Role::User => {
            out.push_str(&format!(
                "<|open|>message role=\"{}\"<|sep|>{}<|close|>message<|sep|>",
                m.role.as_str(),
                m.content
            ));
        }
    }
    if m.role == Role::System && !m.tools.is_empty() {
        push_option(out, "tool-declare", &tools_json(&m.tools));
    }
}

fn push_assistant(out: &mut String, m: &ChatMessage, mode: ChatMode) {
    out.push_str("<|open|>message role=\"assistant\"<|sep|>");
    if mode == ChatMode::Thinking {
        out.push_str(&format!("<|open|>think<|sep|>{}<|close|>think<|sep|>", m.think.as_deref().unwrap_or("")));
    }
    out.push_str("<|open|>response<|sep|>");
    out.push_str(&m.content);
    out.push_str("<|close|>response<|sep|>");
    if !m.tool_calls.is_empty() {
        out.push_str("<|open|>tools<|sep|>");
        for call in &m.tool_calls {
            push_call(out, call);
        }
        out.push_str("<|close|>tools<|sep|>");
    }
    out.push_str("<|close|>message<|sep|><|end_of_msg|>");
}

fn push_call(out: &mut String, call: &ToolCall) {
    out.push_str(&format!("<|open|>call tool=\"{}\" index=\"{}\"<|sep|>", escape_attr(&call.tool), call.index));
    match split_arguments(&call.arguments) {
        Some(arguments) => {
            for a in arguments {
                out.push_str(&format!(
                    "<|open|>argument key=\"{}\" type=\"{}\"<|sep|>{}<|close|>argument<|sep|>",
                    escape_attr(&a.key),
                    a.kind,
                    a.text
                ));
            }
        }
        None => out.push_str(&format!("<|open|>json<|sep|>{}<|close|>json<|sep|>", call.arguments)),
    }
    out.push_str("<|close|>call<|sep|>");
}

/// The tools as the tool-declare message lists them: OpenAI's function form, as JSON.
pub fn tools_json(tools: &[ToolSpec]) -> String {
    json_text(&tools_value(tools))
}

/// The tools in OpenAI's (and Hugging Face templates') shape:
/// `[{"type":"function","function":{"name","description","parameters"}}]`.
pub fn tools_value(tools: &[ToolSpec]) -> serde_json::Value {
    let one = |t: &ToolSpec| {
        let mut function = serde_json::Map::new();
        function.insert("name".into(), t.name.clone().into());
        if let Some(d) = &t.description {
            function.insert("description".into(), d.clone().into());
        }
        function.insert("parameters".into(), t.parameters.clone());
        serde_json::json!({"type": "function", "function": function})
    };
    serde_json::Value::Array(tools.iter().map(one).collect())
}

/// A call's arguments as typed arguments, keys in the order written; `None` when they
/// are not one JSON object with distinct keys (they render as a `json` block).
pub fn split_arguments(arguments: &str) -> Option<Vec<Argument>> {
    let mut de = serde_json::Deserializer::from_str(arguments);
    let pairs = de.deserialize_map(OrderedPairs).ok()?;
    de.end().ok()?;
    let mut seen = std::collections::HashSet::new();
    pairs
        .into_iter()
        .map(|(key, raw)| {
            if !seen.insert(key.clone()) {
                return None;
            }
            let text = raw.get();
            let kind = json_kind(text)?;
            let text = match kind {
                "string" => serde_json::from_str::<String>(text).ok()?,
                _ => one_line_json(text),
            };
            Some(Argument { key, kind, text })
        })
        .collect()
}

/// The JSON type a raw value's first character names.
fn json_kind(raw: &str) -> Option<&'static str> {
    Some(match raw.trim_start().as_bytes().first()? {
        b'"' => "string",
        b'{' => "object",
        b'[' => "array",
        b't' | b'f' => "boolean",
        b'n' => "null",
        b'-' | b'0'..=b'9' => "number",
        _ => return None,
    })
}

/// The arguments text of typed arguments: `{"key":value,…}`, strings JSON-quoted.
pub fn join_arguments(arguments: &[Argument]) -> String {
    let mut out = String::from("{");
    for (i, a) in arguments.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::from(a.key.as_str()).to_string());
        out.push(':');
        match a.kind {
            "string" => out.push_str(&serde_json::Value::from(a.text.as_str()).to_string()),
            _ => out.push_str(&a.text),
        }
    }
    out.push('}');
    out
}

/// Collects an object's members in order, each value as its raw JSON text.
struct OrderedPairs;

impl<'de> Visitor<'de> for OrderedPairs {
    type Value = Vec<(String, Box<RawValue>)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut pairs = Vec::new();
        while let Some(pair) = map.next_entry::<String, Box<RawValue>>()? {
            pairs.push(pair);
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::message::ToolAnswer;
    use crate::chat::options::Effort;

    fn call(index: u32, tool: &str, arguments: &str) -> ToolCall {
        ToolCall { index, id: format!("call_{index}"), tool: tool.into(), arguments: arguments.into() }
    }

    #[test]
    fn arguments_split_in_order_with_types_and_rejoin() {
        let args =
            r#"{"code": "print(1)\n", "options": {"timeout": 150, "b": [1, 2]}, "n": -2.5e3, "ok": true, "z": null}"#;
        let split = split_arguments(args).expect("an object");
        let keys: Vec<_> = split.iter().map(|a| (a.key.as_str(), a.kind, a.text.as_str())).collect();
        assert_eq!(
            keys,
            [
                ("code", "string", "print(1)\n"),
                ("options", "object", r#"{"timeout": 150, "b": [1, 2]}"#),
                ("n", "number", "-2.5e3"),
                ("ok", "boolean", "true"),
                ("z", "null", "null"),
            ]
        );
        let joined = join_arguments(&split);
        assert_eq!(
            joined,
            r#"{"code":"print(1)\n","options":{"timeout": 150, "b": [1, 2]},"n":-2.5e3,"ok":true,"z":null}"#
        );
        assert_eq!(split_arguments(&joined).as_deref(), Some(&split[..]));
    }

    #[test]
    fn arguments_that_are_not_one_object_fall_back_to_json() {
        for bad in ["[1,2]", "\"x\"", "{\"a\":1,\"a\":2}", "{\"a\":1} x", "{\"a\":", ""] {
            assert_eq!(split_arguments(bad), None, "{bad}");
        }
        let m = ChatMessage::assistant("", None, vec![call(1, "f", "[1, 2]")]);
        let text = render(&[m], &ChatOptions::default(), ChatMode::Instruct, false);
        assert!(
            text.contains("<|open|>call tool=\"f\" index=\"1\"<|sep|><|open|>json<|sep|>[1, 2]<|close|>json<|sep|>"),
            "{text}"
        );
    }

    #[test]
    fn the_layout_follows_figure_16() {
        let tools = vec![ToolSpec {
            name: "search".into(),
            description: Some("Find <things> <|open|>".into()),
            parameters: serde_json::json!({"type": "object"}),
        }];
        let options = ChatOptions {
            tools: tools.clone(),
            effort: Some(Effort::High),
            tool_choice: ToolChoice::Required,
            response_format: ResponseFormat::Text,
        };
        let messages = vec![
            ChatMessage::new(Role::System, "S"),
            ChatMessage::new(Role::User, "U"),
            ChatMessage::assistant("", Some("T".into()), vec![call(1, "search", r#"{"q":"x"}"#)]),
            ChatMessage::tool_result(ToolAnswer { tool: "search".into(), index: 1 }, "R"),
        ];
        let text = render(&messages, &options, ChatMode::Thinking, true);
        let declare = r#"<|open|>message role="system" type="tool-declare"<|sep|>[{"type": "function", "function": {"name": "search", "description": "Find <things> \u003c|open|>", "parameters": {"type": "object"}}}]<|close|>message<|sep|>"#;
        let want = [
            declare,
            "<|open|>message role=\"system\" type=\"thinking-effort\"<|sep|>Reasoning effort: high. Think thoroughly before answering.<|close|>message<|sep|>",
            "<|open|>message role=\"system\"<|sep|>S<|close|>message<|sep|>",
            "<|open|>message role=\"user\"<|sep|>U<|close|>message<|sep|>",
            "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>T<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>",
            "<|open|>tools<|sep|><|open|>call tool=\"search\" index=\"1\"<|sep|><|open|>argument key=\"q\" type=\"string\"<|sep|>x<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
            "<|close|>message<|sep|><|end_of_msg|>",
            "<|open|>message role=\"tool\" tool=\"search\" index=\"1\"<|sep|>R<|close|>message<|sep|>",
            "<|open|>message role=\"system\" type=\"tool-choice\"<|sep|>Call at least one of the declared tools in this reply.<|close|>message<|sep|>",
            "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>",
        ]
        .concat();
        assert_eq!(text, want);
        // Append-only: the input messages' render is a prefix of the render with one more.
        let shorter = render(&messages[..3], &options, ChatMode::Thinking, false);
        assert!(text.starts_with(&shorter));
        // A system message's tools are declared where it stands.
        let dynamic = ChatMessage { tools, ..ChatMessage::new(Role::System, "") };
        let text =
            render(&[ChatMessage::new(Role::User, "U"), dynamic], &ChatOptions::default(), ChatMode::Instruct, false);
        assert!(text.ends_with(declare), "{text}");
        assert!(!text.contains("role=\"system\"<|sep|><|close|>"), "an empty system message is not rendered: {text}");
    }
}
