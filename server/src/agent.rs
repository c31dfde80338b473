//! A chat request's agent options, from OpenAI's wire shapes to the chat core's
//! [`ChatOptions`]: tools, `tool_choice`, `response_format`, and thinking with its effort.
//!
//! Owns: the checks that make each a 400 naming its field — a tool without a name or of a
//! type other than `function`, duplicate tool names (across the request's and the system
//! messages' tools), a `tool_choice` naming no declared tool (or `required` with none),
//! an unknown `response_format` or one without an object schema, an effort the model
//! lacks, `thinking.keep` other than `all` (K3 keeps its thinking only whole).
//! Must not: reach the engine; wire types end here.

use k3_engine::chat::{ChatMode, ChatOptions, Effort, ResponseFormat, Role, ToolChoice, ToolSpec};
use k3_runtime::ChatTurn;

use crate::api_error::ApiError;
use crate::request::{ChatRequest, WireResponseFormat, WireThinking, WireTool, WireToolChoice};

/// Most tools one request may declare.
pub const MAX_TOOLS: usize = 256;
/// Longest tool name, in bytes (OpenAI's limit).
pub const MAX_TOOL_NAME: usize = 64;

fn invalid(param: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::Invalid { param, message: message.into() }
}

/// The mode and options `request` asks for; `message_tools` are the tools its system
/// messages declare (they share one namespace with the request's).
pub fn chat_options(request: &ChatRequest, message_tools: &[ToolSpec]) -> Result<(ChatMode, ChatOptions), ApiError> {
    let tools = request.tools.as_deref().map(|t| tool_specs(t, "tools")).transpose()?.unwrap_or_default();
    check_distinct(tools.iter().chain(message_tools))?;
    let declared: Vec<&str> = tools.iter().chain(message_tools).map(|t| t.name.as_str()).collect();
    let (mode, effort) = thinking(request)?;
    let options = ChatOptions {
        tool_choice: tool_choice(request.tool_choice.as_ref(), &declared)?,
        response_format: response_format(request.response_format.as_ref())?,
        effort,
        tools,
    };
    Ok((mode, options))
}

/// Declared tools as the chat core holds them (`param` names the field in errors).
pub fn tool_specs(tools: &[WireTool], param: &'static str) -> Result<Vec<ToolSpec>, ApiError> {
    if tools.len() > MAX_TOOLS {
        return Err(invalid(param, format!("at most {MAX_TOOLS} tools")));
    }
    tools.iter().map(|t| tool_spec(t, param)).collect()
}

fn tool_spec(tool: &WireTool, param: &'static str) -> Result<ToolSpec, ApiError> {
    if tool.kind != "function" {
        return Err(invalid(param, format!("tool type `{}` is not supported; use `function`", cut(&tool.kind))));
    }
    let function = tool.function.as_ref().ok_or_else(|| invalid(param, "a function tool needs `function`"))?;
    named_tool(function.name.clone(), function.description.clone(), function.parameters.clone(), param)
}

/// A tool from its parts, checked: a name of 1 to 64 letters, digits, `_`, `-` or `.`,
/// parameters a JSON schema object (none: an object without properties).
pub fn named_tool(
    name: Option<String>,
    description: Option<String>,
    parameters: Option<serde_json::Value>,
    param: &'static str,
) -> Result<ToolSpec, ApiError> {
    let name = name.ok_or_else(|| invalid(param, "a tool needs a `function.name`"))?;
    if name.is_empty()
        || name.len() > MAX_TOOL_NAME
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    {
        return Err(invalid(
            param,
            format!("tool name `{}` must be 1 to {MAX_TOOL_NAME} letters, digits, `_`, `-` or `.`", cut(&name)),
        ));
    }
    let parameters = parameters.unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    if !parameters.is_object() {
        return Err(invalid(param, format!("the parameters of `{name}` must be a JSON schema object")));
    }
    Ok(ToolSpec { name, description, parameters })
}

pub fn check_distinct<'a>(tools: impl Iterator<Item = &'a ToolSpec>) -> Result<(), ApiError> {
    let mut seen = std::collections::HashSet::new();
    for t in tools {
        if !seen.insert(t.name.as_str()) {
            return Err(invalid("tools", format!("the tool `{}` is declared twice", t.name)));
        }
    }
    Ok(())
}

fn tool_choice(choice: Option<&WireToolChoice>, declared: &[&str]) -> Result<ToolChoice, ApiError> {
    let choice = match choice {
        None => return Ok(ToolChoice::Auto),
        Some(WireToolChoice::Mode(mode)) => match mode.as_str() {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            other => {
                return Err(invalid("tool_choice", format!("`{}`: use auto, none, required or a function", cut(other))))
            }
        },
        Some(WireToolChoice::Function { kind, function }) if kind == "function" => {
            ToolChoice::Function(function.name.clone())
        }
        Some(WireToolChoice::Function { kind, .. }) => {
            return Err(invalid("tool_choice", format!("tool_choice type `{}` is not supported", cut(kind))))
        }
    };
    match &choice {
        ToolChoice::Required if declared.is_empty() => Err(invalid("tool_choice", "`required` needs declared tools")),
        ToolChoice::Function(name) if !declared.contains(&name.as_str()) => {
            Err(invalid("tool_choice", format!("the tool `{}` is not declared", cut(name))))
        }
        _ => Ok(choice),
    }
}

fn response_format(format: Option<&WireResponseFormat>) -> Result<ResponseFormat, ApiError> {
    let Some(format) = format else { return Ok(ResponseFormat::Text) };
    match format.kind.as_str() {
        "text" => Ok(ResponseFormat::Text),
        "json_object" => Ok(ResponseFormat::JsonObject),
        "json_schema" => {
            let spec = format
                .json_schema
                .as_ref()
                .ok_or_else(|| invalid("response_format", "`json_schema` needs a `json_schema` object"))?;
            let schema = spec
                .schema
                .clone()
                .filter(serde_json::Value::is_object)
                .ok_or_else(|| invalid("response_format", "`json_schema.schema` must be a JSON schema object"))?;
            Ok(ResponseFormat::JsonSchema { name: spec.name.clone().unwrap_or_else(|| "response".into()), schema })
        }
        other => {
            Err(invalid("response_format", format!("type `{}`: use text, json_object or json_schema", cut(other))))
        }
    }
}

/// The mode and effort: `thinking` (a boolean or Moonshot's object), else
/// `chat_template_kwargs.thinking`; `reasoning_effort` overrides the object's and the
/// kwargs' effort and turns thinking on unless it is explicitly off.
pub fn thinking(request: &ChatRequest) -> Result<(ChatMode, Option<Effort>), ApiError> {
    let kwargs = request.chat_template_kwargs.as_ref();
    let (on, mut effort) = match &request.thinking {
        Some(WireThinking::On(on)) => (Some(*on), None),
        Some(WireThinking::Object(object)) => {
            let on = match object.kind.as_str() {
                "enabled" => true,
                "disabled" => false,
                other => {
                    return Err(invalid("thinking", format!("thinking.type `{}`: use enabled or disabled", cut(other))))
                }
            };
            if object.keep.as_deref().is_some_and(|k| k != "all") {
                return Err(invalid(
                    "thinking",
                    "thinking.keep: K3 keeps earlier thinking whole; only `all` is supported",
                ));
            }
            (Some(on), object.effort.as_deref().map(|e| effort_named(e, "thinking")).transpose()?)
        }
        None => (kwargs.and_then(|k| k.thinking), None),
    };
    if effort.is_none() {
        effort = kwargs
            .and_then(|k| k.thinking_effort.as_deref())
            .map(|e| effort_named(e, "chat_template_kwargs"))
            .transpose()?;
    }
    if let Some(name) = &request.reasoning_effort {
        effort = Some(effort_named(name, "reasoning_effort")?);
    }
    let thinking = on.unwrap_or(request.reasoning_effort.is_some());
    let mode = if thinking { ChatMode::Thinking } else { ChatMode::Instruct };
    Ok((mode, effort.filter(|_| thinking)))
}

/// `k3 serve --require-tool-call`: a turn that declares tools and leaves the choice to
/// the model calls one; a turn that answers a tool result answers in text. One call per
/// request of the user, whatever the sampling draws, so a loop always ends.
pub fn require_call(turn: &mut ChatTurn) {
    if turn.input.options.tool_choice != ToolChoice::Auto || turn.declared_tools().is_empty() {
        return;
    }
    let answers_result = turn.input.messages.last().is_some_and(|m| m.role == Role::Tool);
    turn.input.options.tool_choice = if answers_result { ToolChoice::None } else { ToolChoice::Required };
}

/// The effort `name` names, when K3 supports it.
pub(crate) fn effort_named(name: &str, param: &'static str) -> Result<Effort, ApiError> {
    let supported = Effort::SUPPORTED_BY_K3.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ");
    match Effort::parse(name) {
        Some(e) if Effort::SUPPORTED_BY_K3.contains(&e) => Ok(e),
        Some(_) => {
            Err(invalid(param, format!("effort `{name}` is not one this model was trained at; use {supported}")))
        }
        None => Err(invalid(param, format!("effort `{}` is unknown; use {supported}", cut(name)))),
    }
}

/// At most 64 characters of client text, for an error message.
fn cut(text: &str) -> String {
    text.chars().take(64).collect()
}
