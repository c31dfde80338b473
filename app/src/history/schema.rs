//! Schema migrations, applied in order on open and recorded in `PRAGMA user_version`.
//!
//! Must not: edit a migration that has shipped; a schema change is a new entry.

/// Migration `i` brings the schema from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: conversations and messages.
    "CREATE TABLE conversations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        title TEXT NOT NULL,
        system_prompt TEXT NOT NULL DEFAULT '',
        settings TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        content TEXT NOT NULL,
        think TEXT,
        status TEXT NOT NULL CHECK (status IN ('complete', 'stopped', 'failed')),
        stats TEXT,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX messages_by_conversation ON messages(conversation_id, id);",
    // 2: the backend a conversation is answered by (a Settings › Backends id; NULL is the
    // local engine, which every conversation of schema 1 was), and why a failed reply failed.
    "ALTER TABLE conversations ADD COLUMN backend TEXT;
    ALTER TABLE messages ADD COLUMN failure TEXT",
    // 3: agent conversations: tool messages (a role the CHECK must allow, so the table is
    // rebuilt as SQLite requires), an assistant message's tool calls (a JSON array) and
    // the call a tool message answers (JSON).
    "CREATE TABLE messages_3 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
        content TEXT NOT NULL,
        think TEXT,
        status TEXT NOT NULL CHECK (status IN ('complete', 'stopped', 'failed')),
        stats TEXT,
        created_at INTEGER NOT NULL,
        failure TEXT,
        tool_calls TEXT,
        tool_answer TEXT
    );
    INSERT INTO messages_3 (id, conversation_id, role, content, think, status, stats, created_at, failure)
        SELECT id, conversation_id, role, content, think, status, stats, created_at, failure FROM messages;
    DROP TABLE messages;
    ALTER TABLE messages_3 RENAME TO messages;
    CREATE INDEX messages_by_conversation ON messages(conversation_id, id);",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The schema objects of `conn` (type, name, table, SQL), in a fixed order: what a file's
/// tables are compared by.
pub fn schema_of(conn: &rusqlite::Connection) -> rusqlite::Result<Vec<[String; 4]>> {
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name, tbl_name")?;
    let rows = stmt.query_map([], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?]))?;
    rows.collect()
}
