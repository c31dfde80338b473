//! Settings › Tools as saved (`tool-servers.json`): the servers a user added, how each is
//! reached, the environment its program gets, and the tools it may call without asking.
//!
//! Must not: hold a key (an HTTP server's key is in the key vault; the record says where).

use serde::{Deserialize, Serialize};

use crate::settings::records::KeyPlaceRecord;
use crate::settings::SettingsRecord;

/// The seconds a call may take before it goes back to the model as an error.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 60;

/// One variable of a stdio server's environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVarRecord {
    pub name: String,
    pub value: String,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ServerTransportRecord {
    /// A program the app starts, speaking MCP on its standard input and output.
    #[serde(rename_all = "camelCase")]
    Stdio {
        /// The program: a path, or a name found on the app's `PATH`.
        command: String,
        #[serde(default)]
        args: Vec<String>,
        /// Its whole environment: nothing else is passed on.
        #[serde(default)]
        env: Vec<EnvVarRecord>,
        #[serde(default)]
        working_dir: Option<String>,
    },
    /// A Streamable HTTP endpoint: `http://` on this machine (loopback) only, else `https://`.
    #[serde(rename_all = "camelCase")]
    Http {
        url: String,
        /// Where its bearer key is kept; `None`: it takes none.
        #[serde(default)]
        key: Option<KeyPlaceRecord>,
    },
}

/// One tool server as saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolServerRecord {
    pub id: String,
    pub name: String,
    pub transport: ServerTransportRecord,
    /// Offered to new conversations (each conversation keeps its own choice).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Tools the user allowed once and for all ("always allow this tool").
    #[serde(default)]
    pub always_allowed: Vec<String>,
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u32,
}

fn yes() -> bool {
    true
}

fn default_timeout() -> u32 {
    DEFAULT_TIMEOUT_SECONDS
}

impl ToolServerRecord {
    /// True when `tool` may run without asking.
    pub fn allows_always(&self, tool: &str) -> bool {
        self.always_allowed.iter().any(|t| t == tool)
    }
}

/// Every tool server the user added (Settings › Tools).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolServersRecord {
    pub servers: Vec<ToolServerRecord>,
}

impl ToolServersRecord {
    pub fn get(&self, id: &str) -> Option<&ToolServerRecord> {
        self.servers.iter().find(|s| s.id == id)
    }
}

impl SettingsRecord for ToolServersRecord {
    const FILE: &'static str = "tool-servers.json";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_server_reads_back_with_defaults_for_what_it_left_out() {
        let text = r#"{"servers": [
            {"id": "fs", "name": "Files", "transport": {"kind": "stdio", "command": "npx", "args": ["-y", "x"], "env": [{"name": "PATH", "value": "/usr/bin"}]}},
            {"id": "web", "name": "Web", "enabled": false, "alwaysAllowed": ["search"], "timeoutSeconds": 5,
             "transport": {"kind": "http", "url": "https://example.org/mcp", "key": "systemKeyring"}}
        ]}"#;
        let record: ToolServersRecord = serde_json::from_str(text).unwrap();
        let fs = record.get("fs").unwrap();
        assert!(fs.enabled && fs.always_allowed.is_empty() && fs.timeout_seconds == DEFAULT_TIMEOUT_SECONDS);
        let ServerTransportRecord::Stdio { command, args, env, working_dir } = &fs.transport else { panic!() };
        assert_eq!((command.as_str(), args.len(), env[0].name.as_str(), working_dir), ("npx", 2, "PATH", &None));
        let web = record.get("web").unwrap();
        assert!(!web.enabled && web.allows_always("search") && !web.allows_always("fetch"));
        assert_eq!(
            web.transport,
            ServerTransportRecord::Http {
                url: "https://example.org/mcp".into(),
                key: Some(KeyPlaceRecord::SystemKeyring)
            }
        );
        let again: ToolServersRecord = serde_json::from_str(&serde_json::to_string(&record).unwrap()).unwrap();
        assert_eq!(again, record);
    }
}
