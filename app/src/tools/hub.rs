//! [`ToolHub`]: the live connections to the user's tool servers, the tools offered to the
//! model under names it can tell apart, and each call run with a timeout and a stop.
//!
//! Owns: one connection per server, opened on first use and opened again after its
//! program ended or its record changed; [`ToolOffer`] (a tool's own name when no other
//! offered server has it, else `<server id>_<tool>`); [`ToolHub::call`], which turns
//! every way a call can end into a [`CallOutcome`] for the model, never a hang.
//! Must not: run a call without a [`Permission`]: `Always` only for a tool the server's
//! record lists as always allowed, `GivenNow` only when the user just clicked Allow.
//! Easy to break: Stop kills the server's process (a call cannot be taken back otherwise);
//! its next call starts it again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k3_engine::chat::ToolSpec;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::client::{Connection, ServerTool};
use super::record::{ServerTransportRecord, ToolServerRecord};
use super::{CallOutcome, ToolError};

/// Why a call may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// The user clicked Allow on this call.
    GivenNow,
    /// The server's record always allows this tool (checked by the hub).
    Always,
}

/// One tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    /// The name the model calls it by.
    pub name: String,
    pub server_id: String,
    /// The name its server knows it by.
    pub tool: String,
    pub spec: ToolSpec,
}

/// The tools of a conversation's servers, and the servers that could not be reached.
#[derive(Debug, Clone, Default)]
pub struct ToolOffer {
    pub tools: Vec<OfferedTool>,
    /// (server name, why its tools are missing).
    pub problems: Vec<(String, ToolError)>,
}

/// How a conversation names one server's tool it turned off: `<server id>/<tool>`.
pub fn tool_key(server_id: &str, tool: &str) -> String {
    format!("{server_id}/{tool}")
}

impl ToolOffer {
    /// This offer without the tools `off` names ([`tool_key`]s).
    pub fn without(mut self, off: &[String]) -> ToolOffer {
        self.tools.retain(|t| !off.contains(&tool_key(&t.server_id, &t.tool)));
        self
    }

    /// The declarations the model reads.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec.clone()).collect()
    }

    /// The tool the model called `name`.
    pub fn route(&self, name: &str) -> Option<&OfferedTool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A server's connection and the transport it was opened with.
type Slot = Arc<Mutex<Option<(ServerTransportRecord, Arc<Connection>)>>>;

/// Finds an HTTP server's key (from the key vault); `None` when it takes none.
pub type KeyLookup = Box<dyn Fn(&ToolServerRecord) -> Option<String> + Send + Sync>;

/// Connections to the user's tool servers.
pub struct ToolHub {
    slots: std::sync::Mutex<HashMap<String, Slot>>,
    keys: KeyLookup,
}

impl ToolHub {
    pub fn new(keys: KeyLookup) -> ToolHub {
        ToolHub { slots: std::sync::Mutex::new(HashMap::new()), keys }
    }

    /// `server`'s tools, opening its connection if needed (Settings › Tools' "List tools").
    pub async fn tools(&self, server: &ToolServerRecord) -> Result<Vec<ServerTool>, ToolError> {
        let connection = self.connection(server).await?;
        match connection.list_tools().await {
            Err(ToolError::Stopped { .. }) => {
                // It ended since it was opened: once more, from a new start.
                self.forget(&server.id);
                self.connection(server).await?.list_tools().await
            }
            other => other,
        }
    }

    /// The tools of `servers` as the model will see them (the servers asked together, so
    /// one slow to start delays the reply by its own time only).
    pub async fn offer(&self, servers: &[ToolServerRecord]) -> ToolOffer {
        let answers = futures::future::join_all(servers.iter().map(|s| self.tools(s))).await;
        let mut listed = Vec::new();
        let mut problems = Vec::new();
        for (server, answer) in servers.iter().zip(answers) {
            match answer {
                Ok(tools) => listed.push((server, tools)),
                Err(e) => problems.push((server.name.clone(), e)),
            }
        }
        let count = |name: &str| listed.iter().flat_map(|(_, t)| t.iter()).filter(|t| t.name == name).count();
        let mut tools = Vec::new();
        for (server, server_tools) in &listed {
            for t in server_tools {
                let name = if count(&t.name) > 1 { format!("{}_{}", server.id, t.name) } else { t.name.clone() };
                let spec = ToolSpec {
                    name: name.clone(),
                    description: t.description.clone(),
                    parameters: t.input_schema.clone(),
                };
                tools.push(OfferedTool { name, server_id: server.id.clone(), tool: t.name.clone(), spec });
            }
        }
        ToolOffer { tools, problems }
    }

    /// Runs `tool` of `server` with `arguments` (JSON text) under `permission`. Every end
    /// but a refusal is an outcome for the model: the result, the tool's error, a server
    /// that stopped, the server's timeout, or `stop` (which kills the server's process).
    pub async fn call(
        &self,
        server: &ToolServerRecord,
        tool: &str,
        arguments: &str,
        permission: Permission,
        stop: &CancellationToken,
    ) -> Result<CallOutcome, ToolError> {
        if permission == Permission::Always && !server.allows_always(tool) {
            return Err(ToolError::NotAllowed { server: server.name.clone(), tool: tool.to_string() });
        }
        let arguments = match parse_arguments(tool, arguments) {
            Ok(a) => a,
            Err(e) => return Ok(CallOutcome::of_error(&e)),
        };
        let connection = tokio::select! {
            c = self.connection(server) => c,
            () = stop.cancelled() => Err(cancelled(server, tool)),
        };
        let connection = match connection {
            Ok(c) => c,
            Err(e) => return Ok(CallOutcome::stopped_if(&e)),
        };
        let seconds = u64::from(server.timeout_seconds.max(1));
        let ended = tokio::select! {
            r = connection.call(tool, arguments) => r.map(|r| CallOutcome::of_result(&r)),
            () = tokio::time::sleep(Duration::from_secs(seconds)) => {
                Err(ToolError::Timeout { server: server.name.clone(), tool: tool.to_string(), seconds })
            }
            () = stop.cancelled() => {
                connection.kill();
                self.forget(&server.id);
                Err(cancelled(server, tool))
            }
        };
        Ok(match ended {
            Ok(outcome) => outcome,
            Err(e) => {
                if matches!(e, ToolError::Stopped { .. }) {
                    self.forget(&server.id);
                }
                log::info!("tool call {tool} on {}: {e}", server.name);
                CallOutcome::stopped_if(&e)
            }
        })
    }

    /// The process of `server_id`'s program while it is connected.
    pub async fn process_id(&self, server_id: &str) -> Option<u32> {
        let slot = self.slots.lock().ok()?.get(server_id)?.clone();
        let held = slot.lock().await;
        held.as_ref().and_then(|(_, c)| c.process_id())
    }

    /// Ends `server_id`'s connection (its record was removed or changed, or it stopped).
    pub fn forget(&self, server_id: &str) {
        let slot = self.slots.lock().ok().and_then(|mut s| s.remove(server_id));
        if let Some(slot) = slot {
            if let Ok(mut held) = slot.try_lock() {
                if let Some((_, connection)) = held.take() {
                    connection.kill();
                }
            }
        }
    }

    async fn connection(&self, server: &ToolServerRecord) -> Result<Arc<Connection>, ToolError> {
        let slot = {
            let mut slots = self.slots.lock().map_err(|_| ToolError::UnknownServer { id: server.id.clone() })?;
            slots.entry(server.id.clone()).or_default().clone()
        };
        let mut held = slot.lock().await;
        if let Some((transport, connection)) = held.as_ref() {
            if *transport == server.transport && !connection.is_closed() {
                return Ok(connection.clone());
            }
            connection.kill();
        }
        let connection = Arc::new(Connection::open(server, (self.keys)(server)).await?);
        *held = Some((server.transport.clone(), connection.clone()));
        Ok(connection)
    }
}

impl Drop for ToolHub {
    fn drop(&mut self) {
        let ids: Vec<String> = self.slots.lock().map(|s| s.keys().cloned().collect()).unwrap_or_default();
        for id in ids {
            self.forget(&id);
        }
    }
}

fn cancelled(server: &ToolServerRecord, tool: &str) -> ToolError {
    ToolError::Cancelled { server: server.name.clone(), tool: tool.to_string() }
}

fn parse_arguments(tool: &str, arguments: &str) -> Result<rmcp::model::JsonObject, ToolError> {
    let text = if arguments.trim().is_empty() { "{}" } else { arguments };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(other) => Err(ToolError::BadArguments { tool: tool.to_string(), reason: format!("got {other}") }),
        Err(e) => Err(ToolError::BadArguments { tool: tool.to_string(), reason: e.to_string() }),
    }
}
