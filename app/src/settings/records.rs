//! The record of each settings file, its field names spelled as the file has them since
//! before files carried a version (camelCase). The window's types convert to and from these.
//!
//! Owns: `chat-defaults.json` ([`ChatDefaultsRecord`]), `local-api.json`
//! ([`LocalApiRecord`]), `performance.json` ([`ThreadsRecord`]), `speculation.json`
//! ([`SpeculationRecord`]), `resume.json` ([`ResumeRecord`]) and each one's defaults.
//! Must not: rename a field without a new version and a migration (`SettingsRecord::migrate`).

use serde::{Deserialize, Serialize};

use super::SettingsRecord;

/// What a new conversation starts with (Settings › New chats).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatDefaultsRecord {
    pub temperature: f32,
    #[serde(rename = "topP")]
    pub top_p: f32,
    #[serde(rename = "maxTokens")]
    pub max_tokens: u32,
    pub thinking: bool,
    #[serde(rename = "systemPrompt")]
    pub system_prompt: String,
    /// The remote backend new chats are answered by; `None`: this computer.
    pub backend: Option<String>,
}

impl Default for ChatDefaultsRecord {
    fn default() -> Self {
        ChatDefaultsRecord {
            temperature: 0.6,
            top_p: 0.95,
            max_tokens: 512,
            thinking: false,
            system_prompt: String::new(),
            backend: None,
        }
    }
}

impl SettingsRecord for ChatDefaultsRecord {
    const FILE: &'static str = "chat-defaults.json";
}

/// The local API as the user set it up (Settings › Local API).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LocalApiRecord {
    pub enabled: bool,
    pub port: u16,
    #[serde(rename = "apiKey")]
    pub api_key: String,
    pub lan: bool,
    #[serde(rename = "lanAddress")]
    pub lan_address: String,
}

impl Default for LocalApiRecord {
    fn default() -> Self {
        LocalApiRecord {
            enabled: false,
            port: k3_server::DEFAULT_PORT,
            api_key: String::new(),
            lan: false,
            lan_address: String::new(),
        }
    }
}

impl SettingsRecord for LocalApiRecord {
    const FILE: &'static str = "local-api.json";
}

/// The thread counts models open with (Settings › Performance); `None`: the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadsRecord {
    pub compute: Option<u32>,
    pub io: Option<u32>,
}

impl SettingsRecord for ThreadsRecord {
    const FILE: &'static str = "performance.json";
}

/// Exact speculative decoding's draft length (0: off).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpeculationRecord {
    #[serde(rename = "maxDraft")]
    pub max_draft: u32,
}

impl SettingsRecord for SpeculationRecord {
    const FILE: &'static str = "speculation.json";
}

/// Conversations whose engine state is kept when nothing is chosen.
pub const DEFAULT_KEEP: u32 = 4;

/// How many of the most recent conversations keep their engine state (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResumeRecord {
    pub keep: u32,
}

impl Default for ResumeRecord {
    fn default() -> Self {
        ResumeRecord { keep: DEFAULT_KEEP }
    }
}

impl SettingsRecord for ResumeRecord {
    const FILE: &'static str = "resume.json";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;

    /// Each file as the app wrote it before records (no version), and what it holds.
    #[test]
    fn files_written_before_versions_load_with_every_value() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            (
                "chat-defaults.json",
                r#"{"temperature": 0.0, "topP": 0.8, "maxTokens": 24, "thinking": true, "systemPrompt": "Be brief.", "backend": "b1"}"#,
            ),
            (
                "local-api.json",
                r#"{"enabled": true, "port": 8011, "apiKey": "k", "lan": true, "lanAddress": "192.168.1.20"}"#,
            ),
            ("performance.json", r#"{"compute": 3, "io": null}"#),
            ("speculation.json", r#"{"maxDraft": 4}"#),
            ("resume.json", r#"{"keep": 9}"#),
        ];
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let s = Settings::open(dir.path());
        let chat = s.get::<ChatDefaultsRecord>();
        assert_eq!(
            (chat.temperature, chat.top_p, chat.max_tokens, chat.thinking, chat.system_prompt.as_str()),
            (0.0, 0.8, 24, true, "Be brief.")
        );
        assert_eq!(chat.backend.as_deref(), Some("b1"));
        let api = s.get::<LocalApiRecord>();
        assert_eq!(
            (api.enabled, api.port, api.api_key.as_str(), api.lan, api.lan_address.as_str()),
            (true, 8011, "k", true, "192.168.1.20")
        );
        assert_eq!(s.get::<ThreadsRecord>(), ThreadsRecord { compute: Some(3), io: None });
        assert_eq!(s.get::<SpeculationRecord>().max_draft, 4);
        assert_eq!(s.get::<ResumeRecord>().keep, 9);
        assert!(s.problems().is_empty(), "{:?}", s.problems());
    }

    #[test]
    fn a_saved_record_reads_back_the_same_and_absent_fields_take_their_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let s = Settings::open(dir.path());
        let chat = ChatDefaultsRecord { system_prompt: "x".into(), ..ChatDefaultsRecord::default() };
        s.set(chat.clone()).unwrap();
        assert_eq!(Settings::open(dir.path()).get::<ChatDefaultsRecord>(), chat);
        std::fs::write(dir.path().join("resume.json"), "{}").unwrap();
        assert_eq!(Settings::open(dir.path()).get::<ResumeRecord>().keep, DEFAULT_KEEP);
    }
}
