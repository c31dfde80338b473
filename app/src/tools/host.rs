//! [`ToolsHost`]: Settings › Tools saved as the tools record, HTTP servers' keys in the key
//! vault, the one [`ToolHub`] every conversation's calls go through, and the Stop of each
//! conversation's running call.
//!
//! Owns: turning the user's decision on a pending call (Allow, Always allow, Deny, or the
//! window running an always-allowed one) into a tool message in the history. One call
//! runs at a time per conversation; a second decision while it runs is refused.
//! Must not: run a call whose decision is not the user's (`Auto` runs only what the
//! record always allows: the hub checks); keep a key in `tool-servers.json`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::settings::records::KeyPlaceRecord;
use crate::settings::Settings;
use crate::tools::pending::LoopMessage;
use crate::tools::{
    pending_calls, CallOutcome, PendingCall, Permission, ToolHub, ToolOffer, ToolServerRecord, ToolServersRecord,
};
use k3_engine::chat::{ToolChoice, ToolSpec};
use tokio_util::sync::CancellationToken;

use super::view::{
    transport_record, PendingToolCall, ServerToolInfo, ToolDecision, ToolServer, ToolServerInput, ToolTransport,
};
use crate::backends::{KeyPlace, KeyVault};
use crate::error::AppError;
use crate::history::HistoryStore;
use crate::history::{Message, MessageStatus, Role, SamplingSettings, ToolAnswer, ToolUse};

/// The vault id of tool server `id`'s key (beside the backends' keys, never the same id).
fn key_id(id: &str) -> String {
    format!("tool-server-{id}")
}

/// The ids of the servers Settings › Tools offers to new conversations.
pub fn offered_to_new_chats(settings: &Settings) -> Vec<String> {
    settings.get::<ToolServersRecord>().servers.iter().filter(|s| s.enabled).map(|s| s.id.clone()).collect()
}

/// Tool servers, their connections and the running calls.
pub struct ToolsHost {
    hub: ToolHub,
    settings: Arc<Settings>,
    vault: Arc<KeyVault>,
    running: Mutex<HashMap<i64, CancellationToken>>,
}

impl ToolsHost {
    pub fn open(data_dir: &Path, settings: Arc<Settings>, use_keyring: bool) -> ToolsHost {
        let vault = Arc::new(KeyVault::open(data_dir, use_keyring));
        let lookup = vault.clone();
        let keys = Box::new(move |server: &ToolServerRecord| match &server.transport {
            crate::tools::ServerTransportRecord::Http { key: Some(place), .. } => {
                let place = match place {
                    KeyPlaceRecord::SystemKeyring => KeyPlace::SystemKeyring,
                    KeyPlaceRecord::UserFile => KeyPlace::UserFile,
                };
                lookup.load(&key_id(&server.id), place).ok()
            }
            _ => None,
        });
        ToolsHost { hub: ToolHub::new(keys), settings, vault, running: Mutex::new(HashMap::new()) }
    }

    fn record(&self) -> ToolServersRecord {
        self.settings.get::<ToolServersRecord>()
    }

    fn server(&self, id: &str) -> Result<ToolServerRecord, AppError> {
        self.record().get(id).cloned().ok_or_else(|| crate::tools::ToolError::UnknownServer { id: id.into() }.into())
    }

    /// Every server, as Settings › Tools lists them.
    pub fn servers(&self) -> Vec<ToolServer> {
        self.record().servers.iter().map(ToolServer::from).collect()
    }

    /// Adds (`input.id` empty) or changes a server; its connection starts again on next use.
    pub fn save(&self, input: ToolServerInput) -> Result<ToolServer, AppError> {
        let name = input.name.trim();
        if name.is_empty() {
            return Err(AppError::invalid("a tool server needs a name"));
        }
        let mut record = self.record();
        let existing = record.servers.iter().position(|s| s.id == input.id && !input.id.is_empty());
        let id = match existing {
            Some(i) => record.servers[i].id.clone(),
            None => fresh_id(&record, name),
        };
        let key = self.keep_key(&id, &input, existing.map(|i| &record.servers[i]))?;
        let transport = transport_record(&input.transport, key);
        check_transport(&transport)?;
        let always_allowed = existing.map(|i| record.servers[i].always_allowed.clone()).unwrap_or_default();
        let saved = ToolServerRecord {
            id: id.clone(),
            name: name.to_string(),
            transport,
            enabled: input.enabled,
            always_allowed,
            timeout_seconds: input.timeout_seconds.clamp(1, 3600),
        };
        match existing {
            Some(i) => record.servers[i] = saved.clone(),
            None => record.servers.push(saved.clone()),
        }
        self.settings.set(record)?;
        self.hub.forget(&id);
        Ok(ToolServer::from(&saved))
    }

    /// Where `input`'s key is kept after saving: a new key saved, a cleared one deleted,
    /// else the place already kept (HTTP only).
    fn keep_key(
        &self,
        id: &str,
        input: &ToolServerInput,
        old: Option<&ToolServerRecord>,
    ) -> Result<Option<KeyPlaceRecord>, AppError> {
        let kept = match old.map(|o| &o.transport) {
            Some(crate::tools::ServerTransportRecord::Http { key, .. }) => *key,
            _ => None,
        };
        let ToolTransport::Http { .. } = input.transport else {
            if kept.is_some() {
                self.vault.delete(&key_id(id))?;
            }
            return Ok(None);
        };
        if input.clear_key {
            self.vault.delete(&key_id(id))?;
            return Ok(None);
        }
        match input.key.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
            Some(key) => Ok(Some(match self.vault.save(&key_id(id), key)? {
                KeyPlace::SystemKeyring => KeyPlaceRecord::SystemKeyring,
                KeyPlace::UserFile => KeyPlaceRecord::UserFile,
            })),
            None => Ok(kept),
        }
    }

    /// Removes a server, its key and its connection.
    pub fn remove(&self, id: &str) -> Result<(), AppError> {
        let mut record = self.record();
        let before = record.servers.len();
        record.servers.retain(|s| s.id != id);
        if record.servers.len() == before {
            return Err(crate::tools::ToolError::UnknownServer { id: id.into() }.into());
        }
        self.settings.set(record)?;
        self.hub.forget(id);
        self.vault.delete(&key_id(id))
    }

    /// Takes back "always allow" for `tool` of server `id`.
    pub fn revoke(&self, id: &str, tool: &str) -> Result<ToolServer, AppError> {
        self.change(id, |s| s.always_allowed.retain(|t| t != tool))
    }

    fn change(&self, id: &str, edit: impl FnOnce(&mut ToolServerRecord)) -> Result<ToolServer, AppError> {
        let mut record = self.record();
        let server = record
            .servers
            .iter_mut()
            .find(|s| s.id == id)
            .ok_or_else(|| AppError::from(crate::tools::ToolError::UnknownServer { id: id.into() }))?;
        edit(server);
        let view = ToolServer::from(&*server);
        self.settings.set(record)?;
        Ok(view)
    }

    /// Server `id`'s tools, starting it if needed (Settings › Tools' "List tools").
    pub async fn tools_of(&self, id: &str) -> Result<Vec<ServerToolInfo>, AppError> {
        let tools = self.hub.tools(&self.server(id)?).await?;
        Ok(tools
            .into_iter()
            .map(|t| ServerToolInfo {
                name: t.name,
                description: t.description,
                schema: serde_json::to_string_pretty(&t.input_schema).unwrap_or_default(),
            })
            .collect())
    }

    /// The tools a conversation with `settings` offers the model (its servers' tools but
    /// those it turned off); a server that cannot be reached is logged and left out.
    pub async fn offer(&self, settings: &SamplingSettings) -> ToolOffer {
        let record = self.record();
        let servers: Vec<ToolServerRecord> =
            settings.tool_servers.iter().filter_map(|id| record.get(id)).cloned().collect();
        let offer = self.hub.offer(&servers).await;
        for (server, problem) in &offer.problems {
            log::warn!("tool server {server} is left out of this reply: {problem}");
        }
        offer.without(&settings.tools_off)
    }

    /// The tools a reply of a conversation with `settings` is offered, and whether it must
    /// call one: a reply to the user must when the conversation requires it; a reply to
    /// tool results (`after_tools`) decides for itself, or the loop would never end.
    pub async fn for_reply(&self, settings: &SamplingSettings, after_tools: bool) -> (Vec<ToolSpec>, ToolChoice) {
        let tools = self.offer(settings).await.specs();
        let choice = match settings.tool_choice {
            ToolUse::Required if !after_tools && !tools.is_empty() => ToolChoice::Required,
            ToolUse::Required | ToolUse::Auto => ToolChoice::Auto,
        };
        (tools, choice)
    }

    /// The calls of `messages`' last reply that wait for the user, with the server each
    /// would run on.
    pub async fn pending(&self, settings: &SamplingSettings, messages: &[Message]) -> Vec<PendingToolCall> {
        let calls = pending_of(messages);
        if calls.is_empty() {
            return Vec::new();
        }
        let offer = self.offer(settings).await;
        let record = self.record();
        calls
            .into_iter()
            .map(|c| {
                let routed = offer.route(&c.tool);
                let server = routed.and_then(|t| record.get(&t.server_id));
                PendingToolCall {
                    message_id: c.message_id,
                    call_id: c.call_id,
                    arguments: c.arguments,
                    server_id: server.map(|s| s.id.clone()),
                    server_name: server.map(|s| s.name.clone()),
                    always_allowed: match (server, routed) {
                        (Some(s), Some(t)) => s.allows_always(&t.tool),
                        _ => false,
                    },
                    tool: c.tool,
                }
            })
            .collect()
    }

    /// Carries out `decision` on call `call_id` of conversation `id`'s last reply and
    /// saves its tool message.
    pub async fn decide(
        &self,
        store: &Mutex<HistoryStore>,
        id: i64,
        call_id: &str,
        decision: ToolDecision,
    ) -> Result<Message, AppError> {
        let conversation = lock(store)?.get(id)?;
        let call = pending_of(&conversation.messages)
            .into_iter()
            .find(|c| c.call_id == call_id)
            .ok_or_else(|| AppError::invalid(format!("call {call_id} does not wait for an answer")))?;
        let offer = self.offer(&conversation.settings).await;
        let routed = offer.route(&call.tool).cloned();
        let server = routed.as_ref().and_then(|t| self.record().get(&t.server_id).cloned());
        let outcome = match (decision, routed, server) {
            (ToolDecision::Deny, ..) => CallOutcome::denied(&call.tool),
            (_, Some(tool), Some(mut server)) => {
                let permission = match decision {
                    ToolDecision::Auto => Permission::Always,
                    ToolDecision::AlwaysAllow => {
                        let name = tool.tool.clone();
                        server = self.record().get(&server.id).cloned().unwrap_or(server);
                        self.change(&server.id, |s| {
                            if !s.allows_always(&name) {
                                s.always_allowed.push(name.clone());
                            }
                        })?;
                        Permission::GivenNow
                    }
                    ToolDecision::Allow | ToolDecision::Deny => Permission::GivenNow,
                };
                let stop = self.begin(id)?;
                let outcome = self.hub.call(&server, &tool.tool, &call.arguments, permission, &stop).await;
                self.end(id);
                outcome?
            }
            _ => {
                let message = format!("no enabled tool server offers {}: the call can only be denied", call.tool);
                return Err(AppError::invalid(message));
            }
        };
        let answer = ToolAnswer {
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            index: call.index,
            server: offer.route(&call.tool).and_then(|t| self.record().get(&t.server_id).map(|s| s.name.clone())),
            cut_from_bytes: outcome.cut_from_bytes.map(|b| u32::try_from(b).unwrap_or(u32::MAX)),
        };
        let status = match (outcome.stopped, outcome.is_error) {
            (true, _) => MessageStatus::Stopped,
            (false, true) => MessageStatus::Failed,
            (false, false) => MessageStatus::Complete,
        };
        Ok(lock(store)?.add_tool_message(id, &answer, &outcome.text, status)?)
    }

    fn begin(&self, id: i64) -> Result<CancellationToken, AppError> {
        let mut running = self.running.lock().map_err(|_| AppError::internal("tool calls lock poisoned"))?;
        if running.contains_key(&id) {
            return Err(AppError::invalid("a tool call of this conversation is running"));
        }
        let stop = CancellationToken::new();
        running.insert(id, stop.clone());
        Ok(stop)
    }

    fn end(&self, id: i64) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(&id);
        }
    }

    /// Stops conversation `id`'s running call (its server's process is killed); false
    /// when none runs.
    pub fn stop(&self, id: i64) -> bool {
        let stop = self.running.lock().ok().and_then(|r| r.get(&id).cloned());
        stop.map(|s| s.cancel()).is_some()
    }
}

fn lock(store: &Mutex<HistoryStore>) -> Result<std::sync::MutexGuard<'_, HistoryStore>, AppError> {
    store.lock().map_err(|_| AppError::internal("history store lock poisoned"))
}

/// The calls of `messages`' last reply that no tool message answers.
fn pending_of(messages: &[Message]) -> Vec<PendingCall> {
    pending_calls(messages.iter().map(|m| match m.role {
        Role::Assistant => LoopMessage::Assistant {
            id: m.id,
            calls:
                m.tool_calls.iter().map(|c| (c.id.as_str(), c.tool.as_str(), c.index, c.arguments.as_str())).collect(),
        },
        Role::Tool => match &m.tool_answer {
            Some(a) => LoopMessage::ToolResult { call_id: a.call_id.as_str() },
            None => LoopMessage::Other,
        },
        Role::User => LoopMessage::Other,
    }))
}

/// An id for a new server named `name`: its slug, made unique.
fn fresh_id(record: &ToolServersRecord, name: &str) -> String {
    let base = crate::slug::slug(name, |c| c.is_ascii_alphanumeric(), 24);
    let base = if base.is_empty() { "server".to_string() } else { base };
    let mut id = base.clone();
    let mut n = 2;
    while record.get(&id).is_some() {
        id = format!("{base}-{n}");
        n += 1;
    }
    id
}

/// A transport the hub can use: a command, or an http(s) URL.
fn check_transport(transport: &crate::tools::ServerTransportRecord) -> Result<(), AppError> {
    match transport {
        crate::tools::ServerTransportRecord::Stdio { command, env, .. } => {
            if command.is_empty() {
                return Err(AppError::invalid("a stdio tool server needs a command"));
            }
            if let Some(v) = env.iter().find(|v| v.name.is_empty() || v.name.contains('=')) {
                return Err(AppError::invalid(format!("{:?} is not an environment variable name", v.name)));
            }
            Ok(())
        }
        crate::tools::ServerTransportRecord::Http { url, .. } => {
            if url.starts_with("http://") || url.starts_with("https://") {
                Ok(())
            } else {
                Err(AppError::invalid(format!("{url:?} is not an http:// or https:// address")))
            }
        }
    }
}
