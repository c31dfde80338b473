//! Reading the `tools` channel of a reply as it streams: tag by tag into tool calls.
//!
//! Owns: [`CallReader`], fed the tags (`<|open|>call tool="…" index="n"<|sep|>`,
//! `argument key="…" type="…"`, `json`, and their closes) and the text between them by
//! [`crate::chat::ReplyReader`]; it yields [`CallDelta`]s as they form (a call's name when
//! it opens, then fragments of its arguments as JSON text, which concatenate to the
//! call's `arguments`) and the finished [`ToolCall`]s; malformed output is a
//! [`CallError`] naming what is wrong, after which nothing more is read.
//! Must not: guess (a call of an undeclared tool, arguments that do not parse, an
//! unclosed call are errors, never repaired), or panic on any token sequence.

use crate::chat::escape::unescape_attr;
use crate::chat::message::ToolCall;
use crate::tokenizer::StreamDecoder;

/// A piece of a call as it forms, in the order OpenAI streams `tool_calls` deltas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallDelta {
    /// The call's position in the reply, from 0.
    pub position: usize,
    /// The call's id and tool, on the call's first delta.
    pub opened: Option<(String, String)>,
    /// The next fragment of the call's arguments (JSON text).
    pub arguments: String,
}

/// What is wrong with the model's tool calls.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("the model called the tool `{tool}`, which is not declared")]
    Undeclared { tool: String },
    #[error("the model's call of `{tool}` has arguments that are not valid JSON: {reason}")]
    BadArguments { tool: String, reason: String },
    #[error("the reply ended inside a call of `{tool}`")]
    Unclosed { tool: String },
    #[error("the tools channel holds `{found}` where {expected}")]
    Markup { found: String, expected: &'static str },
}

/// Where the reader is inside the channel.
#[derive(Debug)]
enum Place {
    /// Between calls.
    Channel,
    /// Inside a call, between its arguments.
    Call,
    /// Inside an argument (`string`: its text is JSON-quoted as it streams).
    Argument { string: bool, raw: String },
    /// Inside a call's `json` block.
    Json,
}

/// A call being read.
#[derive(Debug)]
struct OpenCall {
    tool: String,
    index: u32,
    id: String,
    arguments: String,
    /// Written as typed arguments (not a `json` block).
    typed: bool,
}

/// Reads one reply's tools channel.
pub struct CallReader {
    declared: Vec<String>,
    id_prefix: String,
    place: Place,
    open: Option<OpenCall>,
    calls: Vec<ToolCall>,
    deltas: Vec<CallDelta>,
    decoder: StreamDecoder,
    /// Text between tags where none belongs (whitespace is allowed), reported whole at
    /// the next tag or the end.
    stray: String,
    error: Option<CallError>,
}

impl CallReader {
    /// A reader accepting calls of the `declared` tools; call ids are `id_prefix` and
    /// the call's position.
    pub fn new(declared: Vec<String>, id_prefix: String) -> Self {
        CallReader {
            declared,
            id_prefix,
            place: Place::Channel,
            open: None,
            calls: Vec::new(),
            deltas: Vec::new(),
            decoder: StreamDecoder::new(),
            stray: String::new(),
            error: None,
        }
    }

    /// The calls finished so far.
    pub fn calls(&self) -> &[ToolCall] {
        &self.calls
    }

    /// The first thing wrong, if any (nothing is read after it).
    pub fn error(&self) -> Option<&CallError> {
        self.error.as_ref()
    }

    /// The deltas formed since the last call.
    pub fn take_deltas(&mut self) -> Vec<CallDelta> {
        std::mem::take(&mut self.deltas)
    }

    /// A tag inside the channel; returns true when it closes the channel.
    pub fn tag(&mut self, opening: bool, tag: &str) -> bool {
        if self.error.is_some() {
            return !opening && element(tag) == "tools";
        }
        self.flush_text();
        if let Err(e) = self.check_stray() {
            self.error = Some(e);
            return false;
        }
        let result = match (opening, element(tag), &self.place) {
            (false, "tools", Place::Channel) => return true,
            (true, "call", Place::Channel) => self.open_call(tag),
            (true, "argument", Place::Call) => self.open_argument(tag),
            (true, "json", Place::Call) if self.open_arguments_empty() => {
                self.place = Place::Json;
                Ok(())
            }
            (false, "argument", Place::Argument { .. }) => self.close_argument(),
            (false, "json", Place::Json) => {
                self.place = Place::Call;
                Ok(())
            }
            (false, "call", Place::Call) => self.close_call(),
            _ => Err(CallError::Markup { found: tag_text(opening, tag), expected: self.expected() }),
        };
        if let Err(e) = result {
            self.error = Some(e);
        }
        false
    }

    /// Bytes of ordinary tokens inside the channel.
    pub fn text(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let text = self.decoder.push(bytes);
        self.take_text(text);
    }

    /// The end of the reply: a call still open is an error.
    pub fn finish(&mut self) {
        if self.error.is_none() {
            self.flush_text();
            if let Err(e) = self.check_stray() {
                self.error = Some(e);
            } else if let Some(call) = &self.open {
                self.error = Some(CallError::Unclosed { tool: call.tool.clone() });
            }
        }
    }

    fn flush_text(&mut self) {
        let text = self.decoder.finish();
        self.take_text(text);
    }

    fn take_text(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        let fragment = match &mut self.place {
            Place::Argument { string: true, raw } => {
                raw.push_str(&text);
                json_string_body(&text)
            }
            Place::Argument { string: false, raw } => {
                raw.push_str(&text);
                text
            }
            Place::Json => text,
            Place::Channel | Place::Call => {
                if self.stray.len() < 256 {
                    self.stray.push_str(&text);
                }
                return;
            }
        };
        self.emit(fragment);
    }

    /// Text outside an argument that is not whitespace is an error.
    fn check_stray(&mut self) -> Result<(), CallError> {
        let stray = std::mem::take(&mut self.stray);
        if stray.trim().is_empty() {
            return Ok(());
        }
        Err(CallError::Markup { found: stray.trim().chars().take(40).collect(), expected: self.expected() })
    }

    fn expected(&self) -> &'static str {
        match self.place {
            Place::Channel => "a call or the channel's close was expected",
            Place::Call => "an argument, a json block or the call's close was expected",
            Place::Argument { .. } => "the argument's close was expected",
            Place::Json => "the json block's close was expected",
        }
    }

    fn open_call(&mut self, tag: &str) -> Result<(), CallError> {
        let attrs = attributes(tag).ok_or_else(|| markup(true, tag, "a call with quoted attributes was expected"))?;
        let tool = attr(&attrs, "tool").ok_or_else(|| markup(true, tag, "a call names its tool"))?;
        let index = attr(&attrs, "index")
            .and_then(|i| i.parse::<u32>().ok())
            .filter(|&i| i > 0 && self.calls.iter().all(|c| c.index != i))
            .ok_or_else(|| markup(true, tag, "a call has a new index from 1"))?;
        if !self.declared.contains(&tool) {
            return Err(CallError::Undeclared { tool });
        }
        let position = self.calls.len();
        let id = format!("{}{}", self.id_prefix, position);
        self.deltas.push(CallDelta { position, opened: Some((id.clone(), tool.clone())), arguments: String::new() });
        self.open = Some(OpenCall { tool, index, id, arguments: String::new(), typed: false });
        self.place = Place::Call;
        Ok(())
    }

    fn open_arguments_empty(&self) -> bool {
        self.open.as_ref().is_some_and(|c| c.arguments.is_empty())
    }

    fn open_argument(&mut self, tag: &str) -> Result<(), CallError> {
        let attrs =
            attributes(tag).ok_or_else(|| markup(true, tag, "an argument with quoted attributes was expected"))?;
        let key = attr(&attrs, "key").ok_or_else(|| markup(true, tag, "an argument names its key"))?;
        let kind = attr(&attrs, "type").unwrap_or_else(|| "string".into());
        let separator = if self.open_arguments_empty() { "{" } else { "," };
        let string = kind == "string";
        let quote = if string { "\"" } else { "" };
        self.emit(format!("{separator}{}:{quote}", serde_json::Value::from(key)));
        if let Some(call) = self.open.as_mut() {
            call.typed = true;
        }
        self.place = Place::Argument { string, raw: String::new() };
        Ok(())
    }

    fn close_argument(&mut self) -> Result<(), CallError> {
        let Place::Argument { string, raw } = std::mem::replace(&mut self.place, Place::Call) else {
            return Ok(());
        };
        if string {
            self.emit("\"".into());
        } else if let Err(e) = serde_json::from_str::<serde_json::Value>(&raw) {
            let tool = self.open.as_ref().map_or_else(String::new, |c| c.tool.clone());
            return Err(CallError::BadArguments { tool, reason: format!("argument value `{raw}`: {e}") });
        }
        Ok(())
    }

    fn close_call(&mut self) -> Result<(), CallError> {
        let close = match &self.open {
            None => return Ok(()),
            Some(c) if c.arguments.is_empty() => "{}",
            Some(c) if c.typed => "}",
            Some(_) => "",
        };
        self.emit(close.into());
        let Some(call) = self.open.take() else { return Ok(()) };
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&call.arguments) {
            return Err(CallError::BadArguments { tool: call.tool, reason: e.to_string() });
        }
        self.calls.push(ToolCall { index: call.index, id: call.id, tool: call.tool, arguments: call.arguments });
        self.place = Place::Channel;
        Ok(())
    }

    /// Adds `fragment` to the open call's arguments and to the deltas.
    fn emit(&mut self, fragment: String) {
        if fragment.is_empty() {
            return;
        }
        let Some(call) = self.open.as_mut() else { return };
        call.arguments.push_str(&fragment);
        let position = self.calls.len();
        match self.deltas.last_mut() {
            Some(last) if last.position == position => last.arguments.push_str(&fragment),
            _ => self.deltas.push(CallDelta { position, opened: None, arguments: fragment }),
        }
    }
}

/// A tag's element name (its text up to the first space).
pub fn element(tag: &str) -> &str {
    tag.split(' ').next().unwrap_or_default()
}

/// A tag's `key="value"` attributes, values unescaped; `None` if malformed.
fn attributes(tag: &str) -> Option<Vec<(String, String)>> {
    let mut rest = tag.get(element(tag).len()..)?;
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start_matches(' ');
        if rest.is_empty() {
            return Some(out);
        }
        let eq = rest.find("=\"")?;
        let key = &rest[..eq];
        let value_and_rest = &rest[eq + 2..];
        let end = value_and_rest.find('"')?;
        out.push((key.to_string(), unescape_attr(&value_and_rest[..end])?));
        rest = &value_and_rest[end + 1..];
    }
}

fn attr(attrs: &[(String, String)], key: &str) -> Option<String> {
    attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
}

fn tag_text(opening: bool, tag: &str) -> String {
    let tag: String = tag.chars().take(60).collect();
    if opening {
        format!("<|open|>{tag}<|sep|>")
    } else {
        format!("<|close|>{tag}<|sep|>")
    }
}

fn markup(opening: bool, tag: &str, expected: &'static str) -> CallError {
    CallError::Markup { found: tag_text(opening, tag), expected }
}

/// `text` as the inside of a JSON string (quotes and control characters escaped).
fn json_string_body(text: &str) -> String {
    let quoted = serde_json::Value::from(text).to_string();
    quoted[1..quoted.len() - 1].to_string()
}
