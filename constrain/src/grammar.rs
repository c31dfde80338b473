//! The grammar of one K3 reply under a request's options, in llguidance's Lark dialect
//! (special tokens as `<|open|>`, inline `%json { schema }`).
//!
//! Owns: what the reply may be, from where the generation prompt leaves off — in thinking
//! mode the think channel and its close — then the response channel (free text, nothing
//! when a call is required, or JSON against `response_format`), then per the tool choice
//! no tools channel (`none`), an optional one (`auto`) or one that must hold a call
//! (`required`, or a named function: a call of that tool only), and the message's close.
//! A call is `call tool="NAME" index="n"` with indices 1, 2, … in order (one call unless
//! parallel calls are allowed, at most [`MAX_PARALLEL_CALLS`]); its arguments follow the
//! tool's schema properties in the schema's order, the required ones always: a string
//! property as raw text (one of its `enum` values when it has them, within its
//! `minLength` and `maxLength` when it has those), any other type as
//! one-line JSON against the property's schema (`", "` and `": "` between items, as the
//! template writes JSON), a property without one type as any of the JSON kinds.
//! Must not: leave a declared name or key unescaped (attribute values are escaped as the
//! template escapes them, and every literal is JSON-quoted for Lark).

use k3_engine::chat::escape::escape_attr;
use k3_engine::chat::{ChatMode, ChatOptions, ResponseFormat, ToolChoice, ToolSpec};
use serde_json::{json, Value};

/// Most calls one reply may hold when parallel calls are allowed.
pub const MAX_PARALLEL_CALLS: usize = 8;

/// What shapes the reply.
#[derive(Debug, Clone)]
pub struct ReplyShape<'a> {
    pub mode: ChatMode,
    /// Every tool the reply may call (the request's and the system messages').
    pub tools: &'a [ToolSpec],
    pub options: &'a ChatOptions,
    /// More than one call per reply (OpenAI's `parallel_tool_calls`, true by default).
    pub parallel_calls: bool,
}

impl ReplyShape<'_> {
    /// True when the reply needs no constraint (no tools, free text, no forced choice):
    /// it is then decoded exactly as without this crate.
    pub fn is_free(&self) -> bool {
        self.tools.is_empty()
            && self.options.response_format == ResponseFormat::Text
            && matches!(self.options.tool_choice, ToolChoice::Auto | ToolChoice::None)
    }
}

/// The Lark grammar of a reply of `shape`.
pub fn reply_grammar(shape: &ReplyShape<'_>) -> String {
    let mut g = Grammar::default();
    let prefix = match shape.mode {
        ChatMode::Thinking => "TEXT? <|close|> \"think\" <|sep|> <|open|> \"response\" <|sep|> ",
        ChatMode::Instruct => "",
    };
    let callable: Vec<&ToolSpec> = match &shape.options.tool_choice {
        ToolChoice::None => Vec::new(),
        ToolChoice::Function(name) => shape.tools.iter().filter(|t| t.name == *name).collect(),
        ToolChoice::Auto | ToolChoice::Required => shape.tools.iter().collect(),
    };
    let must_call = matches!(shape.options.tool_choice, ToolChoice::Required | ToolChoice::Function(_));
    let response = if must_call { String::new() } else { g.response(&shape.options.response_format) };
    let end = "<|close|> \"message\" <|sep|> <|end_of_msg|>";
    let after = if callable.is_empty() {
        end.to_string()
    } else {
        let calls = g.calls(&callable, if shape.parallel_calls { MAX_PARALLEL_CALLS } else { 1 });
        let channel = format!("<|open|> \"tools\" <|sep|> {calls} <|close|> \"tools\" <|sep|> {end}");
        if must_call {
            channel
        } else {
            format!("({end}) | ({channel})")
        }
    };
    g.rules.insert(0, format!("start: {prefix}{response}<|close|> \"response\" <|sep|> ({after})"));
    g.rules.push("TEXT: /(?s:.+)/".into());
    g.rules.join("\n")
}

/// Rules as they are written.
#[derive(Default)]
struct Grammar {
    rules: Vec<String>,
}

impl Grammar {
    /// The response channel's content, with a trailing space.
    fn response(&mut self, format: &ResponseFormat) -> String {
        match format {
            ResponseFormat::Text => "TEXT? ".into(),
            ResponseFormat::JsonObject => self.json_rule("response_json", &json!({"type": "object"})) + " ",
            ResponseFormat::JsonSchema { schema, .. } => self.json_rule("response_json", schema) + " ",
        }
    }

    /// Calls 1, 2, … up to `most`: `call_1 (call_2 (…)?)?`.
    fn calls(&mut self, tools: &[&ToolSpec], most: usize) -> String {
        let mut has_args = Vec::with_capacity(tools.len());
        for (t, tool) in tools.iter().enumerate() {
            let args = self.arguments(t, tool);
            has_args.push(args.is_some());
            if let Some(args) = args {
                self.rules.push(format!("args_{t}: {args}"));
            }
        }
        for index in 1..=most {
            let alternatives: Vec<String> = tools
                .iter()
                .enumerate()
                .map(|(t, tool)| {
                    let open = literal(&format!("call tool=\"{}\" index=\"{index}\"", escape_attr(&tool.name)));
                    let args = if has_args[t] { format!("args_{t} ") } else { String::new() };
                    format!("<|open|> {open} <|sep|> {args}<|close|> \"call\" <|sep|>")
                })
                .collect();
            self.rules.push(format!("call_{index}: {}", alternatives.join(" | ")));
        }
        let mut calls = String::new();
        for index in (2..=most).rev() {
            calls = format!("(call_{index} {calls})?");
        }
        format!("call_1 {calls}")
    }

    /// The arguments of tool `t`, in its schema's property order (`None`: it takes none).
    fn arguments(&mut self, t: usize, tool: &ToolSpec) -> Option<String> {
        let properties = tool.parameters.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = tool
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = properties.filter(|p| !p.is_empty())?;
        // A property's schema may refer to the tool's shared definitions: they go with it.
        let defs: Vec<(&str, &Value)> =
            ["$defs", "definitions"].into_iter().filter_map(|k| tool.parameters.get(k).map(|v| (k, v))).collect();
        let mut parts = Vec::new();
        for (k, (key, schema)) in properties.iter().enumerate() {
            let name = format!("arg_{t}_{k}");
            let mut schema = schema.clone();
            if let Some(object) = schema.as_object_mut() {
                for (k, v) in &defs {
                    object.insert((*k).to_string(), (*v).clone());
                }
            }
            let body = self.argument(&name, key, &schema);
            self.rules.push(format!("{name}: {body}"));
            parts.push(if required.contains(&key.as_str()) { name } else { format!("{name}?") });
        }
        Some(parts.join(" "))
    }

    /// One argument `key` with the property `schema`.
    fn argument(&mut self, name: &str, key: &str, schema: &Value) -> String {
        let open = |kind: &str| literal(&format!("argument key=\"{}\" type=\"{kind}\"", escape_attr(key)));
        let close = "<|close|> \"argument\" <|sep|>";
        let string_value = match schema.get("enum").and_then(Value::as_array) {
            Some(values) if values.iter().all(Value::is_string) => {
                let options: Vec<String> = values.iter().filter_map(Value::as_str).map(literal).collect();
                format!("({})", options.join(" | "))
            }
            _ => self.string_rule(name, schema),
        };
        let kinds: Vec<&str> = match schema.get("type").and_then(Value::as_str) {
            Some("string") => vec!["string"],
            Some("integer" | "number") => vec!["number"],
            Some(other @ ("boolean" | "object" | "array" | "null")) => vec![other],
            _ => vec!["string", "number", "boolean", "object", "array", "null"],
        };
        let typed = kinds.len() == 1;
        let branches: Vec<String> = kinds
            .into_iter()
            .map(|kind| {
                let value = match kind {
                    "string" => string_value.clone(),
                    _ if typed => self.json_rule(&format!("{name}_json"), schema),
                    _ => self.json_rule(&format!("{name}_{kind}"), &json!({"type": kind})),
                };
                format!("<|open|> {} <|sep|> {value} {close}", open(kind))
            })
            .collect();
        branches.join(" | ")
    }

    /// Raw text for a string property: any text, or between its `minLength` and
    /// `maxLength` characters.
    fn string_rule(&mut self, name: &str, schema: &Value) -> String {
        let bound = |key: &str| schema.get(key).and_then(Value::as_u64);
        match (bound("minLength"), bound("maxLength")) {
            (None, None) => "TEXT?".into(),
            (min, max) => {
                let terminal = format!("{}_TEXT", name.to_uppercase());
                let max = max.map_or(String::new(), |m| m.to_string());
                self.rules.push(format!("{terminal}: /(?s:.{{{},{max}}})/", min.unwrap_or(0)));
                format!("{terminal}?")
            }
        }
    }

    /// A rule `name` holding one-line JSON against `schema`; returns the rule's name.
    fn json_rule(&mut self, name: &str, schema: &Value) -> String {
        let mut schema = schema.clone();
        if let Some(object) = schema.as_object_mut() {
            object.insert(
                "x-guidance".into(),
                json!({"item_separator": ", ", "key_separator": ": ", "whitespace_flexible": false}),
            );
        }
        self.rules.push(format!("{name}: %json {schema}"));
        name.to_string()
    }
}

/// `text` as a Lark string literal.
fn literal(text: &str) -> String {
    Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, parameters: Value) -> ToolSpec {
        ToolSpec { name: name.into(), description: None, parameters }
    }

    #[test]
    fn a_required_call_has_no_response_text_and_numbered_calls() {
        let tools =
            [tool("search", json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}))];
        let options = ChatOptions { tool_choice: ToolChoice::Required, ..ChatOptions::default() };
        let shape = ReplyShape { mode: ChatMode::Instruct, tools: &tools, options: &options, parallel_calls: false };
        let g = reply_grammar(&shape);
        assert!(g.starts_with("start: <|close|> \"response\" <|sep|> (<|open|> \"tools\" <|sep|> call_1 "), "{g}");
        assert!(g.contains(r#"call_1: <|open|> "call tool=\"search\" index=\"1\"" <|sep|> args_0"#), "{g}");
        assert!(g.contains(r#"arg_0_0: <|open|> "argument key=\"q\" type=\"string\"" <|sep|> TEXT? <|close|>"#), "{g}");
        assert!(!g.contains("call_2"), "one call without parallel calls: {g}");
        assert!(!shape.is_free());
    }

    #[test]
    fn a_tool_without_parameters_is_called_with_no_arguments() {
        let tools = [tool("now", json!({"type": "object", "properties": {}})), tool("ping", json!({"type": "object"}))];
        let options = ChatOptions { tool_choice: ToolChoice::Required, ..ChatOptions::default() };
        let shape = ReplyShape { mode: ChatMode::Instruct, tools: &tools, options: &options, parallel_calls: true };
        let g = reply_grammar(&shape);
        assert!(g.contains(r#"<|open|> "call tool=\"now\" index=\"1\"" <|sep|> <|close|> "call" <|sep|>"#), "{g}");
        assert!(!g.contains("args_"), "{g}");
        crate::check_shape(&shape).expect("the grammar compiles");
    }

    #[test]
    fn a_property_referring_to_shared_definitions_compiles() {
        let params = json!({
            "type": "object",
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
            "properties": {"at": {"$ref": "#/$defs/point"}},
            "required": ["at"]
        });
        let tools = [tool("go", params)];
        let options = ChatOptions { tool_choice: ToolChoice::Required, ..ChatOptions::default() };
        let shape = ReplyShape { mode: ChatMode::Instruct, tools: &tools, options: &options, parallel_calls: true };
        crate::check_shape(&shape).expect("the grammar compiles");
    }

    #[test]
    fn free_replies_need_no_grammar() {
        let options = ChatOptions::default();
        let shape = ReplyShape { mode: ChatMode::Thinking, tools: &[], options: &options, parallel_calls: true };
        assert!(shape.is_free());
    }
}
