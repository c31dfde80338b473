//! [`HistoryStore`]: one SQLite connection to `chats.sqlite` and the queries the app needs.
//!
//! Owns: opening (WAL, `synchronous=FULL`, foreign keys, migrations), conversation and
//! message reads and writes, and the edits a regenerate or an edit-and-resend makes.
//! Must not: keep a transaction open between calls.
//! Easy to break: `updated_at` orders the conversation list; every write to a
//! conversation's messages touches it.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::error::HistoryError;
use super::quarantine::with_suffix;
use super::records::{SettingsRecord, StatsRecord, ToolAnswerRecord, ToolCallRecord};
use super::schema::{MIGRATIONS, SCHEMA_VERSION};
use super::types::{
    Conversation, ConversationSummary, Message, MessageStats, MessageStatus, Role, SamplingSettings, ToolAnswer,
    ToolCall,
};

/// Title of a conversation before its first message names it.
pub const DEFAULT_TITLE: &str = "New chat";
const TITLE_CHARS: usize = 60;

/// A completed (or stopped, or failed) assistant reply to save.
#[derive(Debug, Clone)]
pub struct NewAssistantMessage {
    pub content: String,
    pub think: Option<String>,
    pub status: MessageStatus,
    pub stats: Option<MessageStats>,
    /// Why a failed reply failed (the window's error line), kept with it.
    pub failure: Option<String>,
    /// The reply's tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
}

/// The chat history database.
pub struct HistoryStore {
    conn: Connection,
    path: PathBuf,
}

/// A message status as the `status` column spells it.
fn status_text(status: MessageStatus) -> &'static str {
    match status {
        MessageStatus::Complete => "complete",
        MessageStatus::Stopped => "stopped",
        MessageStatus::Failed => "failed",
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl HistoryStore {
    /// Opens (creating if needed) the database at `path` and migrates it.
    pub fn open(path: &Path) -> Result<HistoryStore, HistoryError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| HistoryError::Folder { path: dir.into(), source })?;
        }
        let conn = Connection::open(path).map_err(|source| HistoryError::Sqlite { path: path.into(), source })?;
        let store = HistoryStore { conn, path: path.into() };
        store.configure()?;
        store.migrate()?;
        Ok(store)
    }

    /// Creates a new history at `path` (which must not exist) without ever leaving a
    /// half-made file there: the database is built and migrated as `<path>.creating`, its
    /// WAL checkpointed away, then renamed into place and the folder synced.
    pub fn create_new(path: &Path) -> Result<HistoryStore, HistoryError> {
        let tmp = with_suffix(path, ".creating");
        let sql = |source| HistoryError::Sqlite { path: tmp.clone(), source };
        let folder = |source| HistoryError::Folder { path: path.into(), source };
        // A stale `.creating` set is an earlier start that died before its rename: it never
        // held a message.
        for suffix in ["", "-wal", "-shm", "-journal"] {
            match std::fs::remove_file(with_suffix(&tmp, suffix)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(folder(e)),
                Ok(()) | Err(_) => {}
            }
        }
        let store = HistoryStore::open(&tmp)?;
        store.sql(store.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())))?;
        store.conn.close().map_err(|(_, e)| sql(e))?;
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(HistoryError::Invalid {
                reason: format!("{} appeared while a new history was being created", path.display()),
            });
        }
        std::fs::rename(&tmp, path).map_err(folder)?;
        super::quarantine::sync_folder(path).map_err(folder)?;
        HistoryStore::open(path)
    }

    /// A history in memory only, for a session whose file cannot be used.
    pub fn temporary() -> Result<HistoryStore, HistoryError> {
        let path = PathBuf::from("(in memory, not saved)");
        let conn =
            Connection::open_in_memory().map_err(|source| HistoryError::Sqlite { path: path.clone(), source })?;
        let store = HistoryStore { conn, path };
        store.sql(store.conn.execute_batch("PRAGMA foreign_keys = ON;"))?;
        store.migrate()?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql<T>(&self, r: rusqlite::Result<T>) -> Result<T, HistoryError> {
        r.map_err(|source| HistoryError::Sqlite { path: self.path.clone(), source })
    }

    fn configure(&self) -> Result<(), HistoryError> {
        let mode: String = self.sql(self.conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(HistoryError::Invalid { reason: format!("journal mode {mode} instead of WAL") });
        }
        self.sql(self.conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;"))?;
        self.sql(self.conn.busy_timeout(std::time::Duration::from_secs(5)))
    }

    /// The schema version recorded in the file.
    pub fn schema_version(&self) -> Result<i64, HistoryError> {
        self.sql(self.conn.query_row("PRAGMA user_version", [], |r| r.get(0)))
    }

    fn migrate(&self) -> Result<(), HistoryError> {
        let found = self.schema_version()?;
        if found > SCHEMA_VERSION {
            return Err(HistoryError::TooNew { path: self.path.clone(), found, known: SCHEMA_VERSION });
        }
        for (version, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            let batch = format!("BEGIN; {sql}; PRAGMA user_version = {}; COMMIT;", version + 1);
            if let Err(e) = self.conn.execute_batch(&batch) {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(HistoryError::Sqlite { path: self.path.clone(), source: e });
            }
        }
        Ok(())
    }

    /// Every conversation, most recently updated first.
    pub fn list(&self) -> Result<Vec<ConversationSummary>, HistoryError> {
        let mut stmt = self.sql(self.conn.prepare(
            "SELECT c.id, c.title, c.updated_at, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id), c.backend
             FROM conversations c ORDER BY c.updated_at DESC, c.id DESC",
        ))?;
        let rows = stmt.query_map([], |r| {
            Ok(ConversationSummary {
                id: r.get(0)?,
                title: r.get(1)?,
                updated_at: r.get(2)?,
                message_count: r.get(3)?,
                backend: r.get(4)?,
            })
        });
        let rows = self.sql(rows)?;
        self.sql(rows.collect())
    }

    /// A new, empty conversation with `settings`.
    pub fn create(&self, settings: &SamplingSettings) -> Result<Conversation, HistoryError> {
        self.create_with_prompt(settings, "")
    }

    /// A new, empty conversation with `settings` and `system_prompt`, in one write.
    pub fn create_with_prompt(
        &self,
        settings: &SamplingSettings,
        system_prompt: &str,
    ) -> Result<Conversation, HistoryError> {
        let now = now_ms();
        let json = self.settings_json(settings)?;
        self.sql(self.conn.execute(
            "INSERT INTO conversations (title, system_prompt, settings, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
            params![DEFAULT_TITLE, system_prompt, json, now],
        ))?;
        self.get(self.conn.last_insert_rowid())
    }

    fn settings_json(&self, settings: &SamplingSettings) -> Result<String, HistoryError> {
        serde_json::to_string(&SettingsRecord::from(settings))
            .map_err(|e| HistoryError::Invalid { reason: e.to_string() })
    }

    /// A conversation with all its messages.
    pub fn get(&self, id: i64) -> Result<Conversation, HistoryError> {
        let head = self.conn.query_row(
            "SELECT title, system_prompt, settings, created_at, updated_at, backend FROM conversations WHERE id = ?1",
            [id],
            |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get::<_, String>(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        );
        let (title, system_prompt, settings, created_at, updated_at, backend) =
            self.sql(head.optional())?.ok_or(HistoryError::NotFound { what: "conversation", id })?;
        let settings =
            serde_json::from_str::<SettingsRecord>(&settings).map_err(|e| self.corrupt("settings", e))?.into();
        let messages = self.messages(id)?;
        Ok(Conversation { id, title, system_prompt, settings, created_at, updated_at, backend, messages })
    }

    /// The backend conversation `id` is answered by (`None`: the local engine).
    pub fn backend(&self, id: i64) -> Result<Option<String>, HistoryError> {
        let row = self.conn.query_row("SELECT backend FROM conversations WHERE id = ?1", [id], |r| r.get(0));
        self.sql(row.optional())?.ok_or(HistoryError::NotFound { what: "conversation", id })
    }

    /// Sets the backend conversation `id` is answered by (`None`: the local engine).
    pub fn set_backend(&self, id: i64, backend: Option<&str>) -> Result<Conversation, HistoryError> {
        let n = self.sql(self.conn.execute(
            "UPDATE conversations SET backend = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, backend, now_ms()],
        ))?;
        if n == 0 {
            return Err(HistoryError::NotFound { what: "conversation", id });
        }
        self.get(id)
    }

    fn corrupt(&self, field: &'static str, e: impl std::fmt::Display) -> HistoryError {
        HistoryError::Corrupt { path: self.path.clone(), field, reason: e.to_string() }
    }

    /// The messages of conversation `id`, oldest first.
    pub fn messages(&self, id: i64) -> Result<Vec<Message>, HistoryError> {
        let mut stmt = self.sql(self.conn.prepare(
            "SELECT id, role, content, think, status, stats, created_at, failure, tool_calls, tool_answer FROM messages
             WHERE conversation_id = ?1 ORDER BY id",
        ))?;
        let rows = self.sql(stmt.query_map([id], raw_message))?;
        let raw: Vec<RawMessage> = self.sql(rows.collect())?;
        raw.into_iter().map(|m| self.decode_message(m)).collect()
    }

    fn decode_message(&self, m: RawMessage) -> Result<Message, HistoryError> {
        let role = match m.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => return Err(self.corrupt("role", other)),
        };
        let status = match m.status.as_str() {
            "complete" => MessageStatus::Complete,
            "stopped" => MessageStatus::Stopped,
            "failed" => MessageStatus::Failed,
            other => return Err(self.corrupt("status", other)),
        };
        let stats = match m.stats {
            Some(s) => Some(serde_json::from_str::<StatsRecord>(&s).map_err(|e| self.corrupt("stats", e))?.into()),
            None => None,
        };
        let tool_calls = match m.tool_calls {
            Some(s) => serde_json::from_str::<Vec<ToolCallRecord>>(&s)
                .map_err(|e| self.corrupt("tool_calls", e))?
                .into_iter()
                .map(ToolCall::from)
                .collect(),
            None => Vec::new(),
        };
        let tool_answer = match m.tool_answer {
            Some(s) => {
                Some(serde_json::from_str::<ToolAnswerRecord>(&s).map_err(|e| self.corrupt("tool_answer", e))?.into())
            }
            None => None,
        };
        let (content, think, failure) = (m.content, m.think, m.failure);
        Ok(Message {
            id: m.id,
            role,
            content,
            think,
            status,
            stats,
            failure,
            tool_calls,
            tool_answer,
            created_at: m.created_at,
        })
    }

    /// Replaces title, system prompt and settings.
    pub fn update(
        &self,
        id: i64,
        title: &str,
        system_prompt: &str,
        settings: &SamplingSettings,
    ) -> Result<Conversation, HistoryError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(HistoryError::Invalid { reason: "a conversation title cannot be empty".into() });
        }
        let json = self.settings_json(settings)?;
        let n = self.sql(self.conn.execute(
            "UPDATE conversations SET title = ?2, system_prompt = ?3, settings = ?4, updated_at = ?5 WHERE id = ?1",
            params![id, title, system_prompt, json, now_ms()],
        ))?;
        if n == 0 {
            return Err(HistoryError::NotFound { what: "conversation", id });
        }
        self.get(id)
    }

    pub fn delete(&self, id: i64) -> Result<(), HistoryError> {
        let n = self.sql(self.conn.execute("DELETE FROM conversations WHERE id = ?1", [id]))?;
        if n == 0 {
            return Err(HistoryError::NotFound { what: "conversation", id });
        }
        Ok(())
    }

    /// Saves a user message; the first one also names the conversation.
    pub fn add_user_message(&mut self, conversation_id: i64, text: &str) -> Result<Message, HistoryError> {
        if text.trim().is_empty() {
            return Err(HistoryError::Invalid { reason: "the message is empty".into() });
        }
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(|source| HistoryError::Sqlite { path: path.clone(), source })?;
        let sql = |r: rusqlite::Result<usize>| r.map_err(|source| HistoryError::Sqlite { path: path.clone(), source });
        let now = now_ms();
        let touched = sql(tx.execute(
            "UPDATE conversations SET updated_at = ?2,
               title = CASE WHEN title = ?3 AND NOT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?1)
                            THEN ?4 ELSE title END
             WHERE id = ?1",
            params![conversation_id, now, DEFAULT_TITLE, title_from(text)],
        ))?;
        if touched == 0 {
            return Err(HistoryError::NotFound { what: "conversation", id: conversation_id });
        }
        sql(tx.execute(
            "INSERT INTO messages (conversation_id, role, content, status, created_at) VALUES (?1, 'user', ?2, 'complete', ?3)",
            params![conversation_id, text, now],
        ))?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|source| HistoryError::Sqlite { path: path.clone(), source })?;
        self.message(id)
    }

    /// Saves an assistant reply.
    pub fn add_assistant_message(
        &mut self,
        conversation_id: i64,
        reply: &NewAssistantMessage,
    ) -> Result<Message, HistoryError> {
        let stats = match &reply.stats {
            Some(s) => Some(
                serde_json::to_string(&StatsRecord::from(s))
                    .map_err(|e| HistoryError::Invalid { reason: e.to_string() })?,
            ),
            None => None,
        };
        let status = status_text(reply.status);
        let calls = reply.tool_calls.iter().map(ToolCallRecord::from).collect::<Vec<_>>();
        let calls = (!calls.is_empty()).then(|| serde_json::to_string(&calls)).transpose().map_err(invalid)?;
        self.insert_message(conversation_id, |tx, now| {
            tx.execute(
                "INSERT INTO messages (conversation_id, role, content, think, status, stats, created_at, failure, tool_calls)
                 VALUES (?1, 'assistant', ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![conversation_id, reply.content, reply.think, status, stats, now, reply.failure, calls],
            )
        })
    }

    /// Saves a tool's result, answering the call `answer` names: `Complete`, `Failed`
    /// (the tool or its server reported an error, or the user denied it) or `Stopped`.
    pub fn add_tool_message(
        &mut self,
        conversation_id: i64,
        answer: &ToolAnswer,
        content: &str,
        status: MessageStatus,
    ) -> Result<Message, HistoryError> {
        let answer = serde_json::to_string(&ToolAnswerRecord::from(answer)).map_err(invalid)?;
        let status = status_text(status);
        self.insert_message(conversation_id, |tx, now| {
            tx.execute(
                "INSERT INTO messages (conversation_id, role, content, status, created_at, tool_answer)
                 VALUES (?1, 'tool', ?2, ?3, ?4, ?5)",
                params![conversation_id, content, status, now, answer],
            )
        })
    }

    /// One transaction: the conversation's `updated_at` touched (or `NotFound`), then
    /// `insert(tx, now)` adds the message; the stored message is read back.
    fn insert_message(
        &mut self,
        conversation_id: i64,
        insert: impl FnOnce(&rusqlite::Transaction<'_>, i64) -> rusqlite::Result<usize>,
    ) -> Result<Message, HistoryError> {
        let path = self.path.clone();
        let sqlite = |source| HistoryError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(sqlite)?;
        let now = now_ms();
        let touched = tx
            .execute("UPDATE conversations SET updated_at = ?2 WHERE id = ?1", params![conversation_id, now])
            .map_err(sqlite)?;
        if touched == 0 {
            return Err(HistoryError::NotFound { what: "conversation", id: conversation_id });
        }
        insert(&tx, now).map_err(sqlite)?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(sqlite)?;
        self.message(id)
    }

    fn message(&self, id: i64) -> Result<Message, HistoryError> {
        let raw = self.conn.query_row(
            "SELECT id, role, content, think, status, stats, created_at, failure, tool_calls, tool_answer FROM messages WHERE id = ?1",
            [id],
            raw_message,
        );
        let raw = self.sql(raw.optional())?.ok_or(HistoryError::NotFound { what: "message", id })?;
        self.decode_message(raw)
    }

    /// For a regenerate: drops the last reply (if the conversation ends with one) and
    /// returns the user message it answered.
    pub fn drop_last_reply(&mut self, conversation_id: i64) -> Result<Message, HistoryError> {
        let messages = self.get(conversation_id)?.messages;
        let (last_user, tail) = match messages.iter().rposition(|m| m.role == Role::User) {
            Some(i) => (messages[i].clone(), &messages[i + 1..]),
            None => return Err(HistoryError::Invalid { reason: "there is no message to answer again".into() }),
        };
        self.delete_messages(conversation_id, tail.iter().map(|m| m.id), None)?;
        Ok(last_user)
    }

    /// For an edit-and-resend: replaces user message `message_id`'s text and drops every
    /// later message of the conversation.
    pub fn edit_user_message(
        &mut self,
        conversation_id: i64,
        message_id: i64,
        text: &str,
    ) -> Result<Message, HistoryError> {
        if text.trim().is_empty() {
            return Err(HistoryError::Invalid { reason: "the message is empty".into() });
        }
        let messages = self.get(conversation_id)?.messages;
        let at = messages
            .iter()
            .position(|m| m.id == message_id)
            .ok_or(HistoryError::NotFound { what: "message", id: message_id })?;
        if messages[at].role != Role::User {
            return Err(HistoryError::Invalid { reason: format!("message {message_id} is not a user message") });
        }
        let later = messages[at + 1..].iter().map(|m| m.id);
        self.delete_messages(conversation_id, later, Some((message_id, text)))?;
        self.message(message_id)
    }

    /// Deletes messages `ids` and, in the same transaction, gives message `rewrite.0` the
    /// text `rewrite.1`: an edit-and-resend is never half done.
    fn delete_messages(
        &mut self,
        conversation_id: i64,
        ids: impl Iterator<Item = i64>,
        rewrite: Option<(i64, &str)>,
    ) -> Result<(), HistoryError> {
        let path = self.path.clone();
        let err = |source| HistoryError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(err)?;
        for id in ids {
            tx.execute("DELETE FROM messages WHERE id = ?1 AND conversation_id = ?2", params![id, conversation_id])
                .map_err(err)?;
        }
        if let Some((id, text)) = rewrite {
            tx.execute("UPDATE messages SET content = ?2 WHERE id = ?1", params![id, text]).map_err(err)?;
        }
        tx.execute("UPDATE conversations SET updated_at = ?2 WHERE id = ?1", params![conversation_id, now_ms()])
            .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// `PRAGMA integrity_check`: "ok" for a sound file.
    pub fn integrity_check(&self) -> Result<String, HistoryError> {
        self.sql(self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)))
    }

    /// The raw connection, for tests that simulate crashes mid-transaction.
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

struct RawMessage {
    id: i64,
    role: String,
    content: String,
    think: Option<String>,
    status: String,
    stats: Option<String>,
    created_at: i64,
    failure: Option<String>,
    tool_calls: Option<String>,
    tool_answer: Option<String>,
}

fn raw_message(r: &Row<'_>) -> rusqlite::Result<RawMessage> {
    Ok(RawMessage {
        id: r.get(0)?,
        role: r.get(1)?,
        content: r.get(2)?,
        think: r.get(3)?,
        status: r.get(4)?,
        stats: r.get(5)?,
        created_at: r.get(6)?,
        failure: r.get(7)?,
        tool_calls: r.get(8)?,
        tool_answer: r.get(9)?,
    })
}

/// A title from the first line of the first message, at most 60 characters.
fn invalid(e: serde_json::Error) -> HistoryError {
    HistoryError::Invalid { reason: e.to_string() }
}

fn title_from(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(DEFAULT_TITLE);
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    title
}
