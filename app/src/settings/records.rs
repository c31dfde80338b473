//! The record of each settings file, its field names spelled as the file has them since
//! before files carried a version (camelCase). The window's types convert to and from these.
//!
//! Owns: `chat-defaults.json` ([`ChatDefaultsRecord`]), `local-api.json`
//! ([`LocalApiRecord`]), `performance.json` ([`ThreadsRecord`]), `speculation.json`
//! ([`SpeculationRecord`]), `resume.json` ([`ResumeRecord`]), `memory.json`
//! ([`MemoryRecord`]), `setup.json` ([`SetupRecord`]), `backends.json` ([`BackendsRecord`])
//! and each one's defaults.
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

/// A memory preset's name (`memory.json`'s `choice.name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PresetRecord {
    Auto,
    Ultra,
    Laptop,
    Desktop,
    Workstation,
    Server,
    Max,
}

/// The memory the user chose: a preset, or trunk and cache budgets in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum MemoryChoiceRecord {
    Preset {
        name: PresetRecord,
    },
    Custom {
        #[serde(rename = "trunkBytes")]
        trunk_bytes: u64,
        #[serde(rename = "cacheBytes")]
        cache_bytes: u64,
    },
}

/// How the trunk's layers are placed under the budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PlacementRecord {
    #[default]
    Prefix,
    Cost,
}

/// The measured rates a placement by cost was chosen with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostRatesRecord {
    pub disk_trunk_bytes_per_second: f64,
    pub disk_expert_bytes_per_second: f64,
    pub bf16_bytes_per_second: f64,
    pub expert_bytes_per_second: f64,
    pub decode_bytes_per_second: f64,
}

/// The memory models open with (Settings › Memory).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MemoryRecord {
    pub choice: Option<MemoryChoiceRecord>,
    /// Positions each conversation's KV cache is reserved for (`None`: the plan's largest).
    pub context_length: Option<usize>,
    pub placement: PlacementRecord,
    pub cost_rates: Option<CostRatesRecord>,
}

impl SettingsRecord for MemoryRecord {
    const FILE: &'static str = "memory.json";
}

/// The repository the wizard downloads unless told otherwise.
pub const DEFAULT_REPO: &str = "moonshotai/Kimi-K3";

/// The setup wizard's steps, in order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SetupStepRecord {
    #[default]
    Welcome,
    Hardware,
    Drives,
    SpeedTest,
    Preset,
    Download,
    Pack,
    FirstLoad,
    Ready,
}

/// The best point of the drive speed test's pattern sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatternRecord {
    pub request_bytes: u32,
    pub depth: u32,
    pub mb_per_s: f64,
}

/// The drive speed test's figures (MB = 10⁶ bytes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpeedRecord {
    pub qd1_mb_per_s: f64,
    pub qd16_mb_per_s: f64,
    pub qd1_experts_per_s: f64,
    pub qd16_experts_per_s: f64,
    pub direct: bool,
    /// Absent in files saved before the pattern was measured.
    #[serde(default)]
    pub read_pattern: Option<PatternRecord>,
}

/// The setup wizard's state, so reopening the app returns to the same step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SetupRecord {
    pub step: SetupStepRecord,
    pub repo: String,
    pub store_dir: Option<String>,
    pub trunk_dir: Option<String>,
    pub preset: Option<String>,
    pub speed: Option<SpeedRecord>,
    pub overrides: Vec<String>,
    pub dismissed: bool,
    pub adopted: bool,
}

impl Default for SetupRecord {
    fn default() -> Self {
        SetupRecord {
            step: SetupStepRecord::Welcome,
            repo: DEFAULT_REPO.into(),
            store_dir: None,
            trunk_dir: None,
            preset: None,
            speed: None,
            overrides: Vec::new(),
            dismissed: false,
            adopted: false,
        }
    }
}

impl SettingsRecord for SetupRecord {
    const FILE: &'static str = "setup.json";
}

/// Where a remote backend's key is kept (never the key itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum KeyPlaceRecord {
    SystemKeyring,
    UserFile,
}

/// One remote backend as saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendRecord {
    pub id: String,
    pub name: String,
    pub base_url: String,
    pub model: String,
    /// `None`: the endpoint takes no key.
    pub key: Option<KeyPlaceRecord>,
}

/// The remote backends the user added (Settings › Backends).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackendsRecord {
    pub backends: Vec<BackendRecord>,
}

impl SettingsRecord for BackendsRecord {
    const FILE: &'static str = "backends.json";
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
            (
                "memory.json",
                r#"{"choice": {"kind": "custom", "trunkBytes": 3000000000, "cacheBytes": 1000000000}, "contextLength": 4096, "placement": "cost",
                    "costRates": {"diskTrunkBytesPerSecond": 1.0, "diskExpertBytesPerSecond": 2.0, "bf16BytesPerSecond": 3.0, "expertBytesPerSecond": 4.0, "decodeBytesPerSecond": 5.0}}"#,
            ),
            (
                "setup.json",
                r#"{"step": "speedTest", "repo": "me/tiny", "storeDir": "/m", "trunkDir": null, "preset": "laptop",
                    "speed": {"qd1MbPerS": 1.5, "qd16MbPerS": 2.5, "qd1ExpertsPerS": 3.5, "qd16ExpertsPerS": 4.5, "direct": true,
                              "readPattern": {"requestBytes": 1048576, "depth": 8, "mbPerS": 2600.0}},
                    "overrides": ["cpu"], "dismissed": true, "adopted": false}"#,
            ),
            (
                "backends.json",
                r#"{"backends": [{"id": "gpu-box", "name": "GPU box", "baseUrl": "http://10.0.0.5:8000/v1", "model": "kimi-k3", "key": "userFile"}]}"#,
            ),
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
        let memory = s.get::<MemoryRecord>();
        assert_eq!(
            memory.choice,
            Some(MemoryChoiceRecord::Custom { trunk_bytes: 3_000_000_000, cache_bytes: 1_000_000_000 })
        );
        assert_eq!((memory.context_length, memory.placement), (Some(4096), PlacementRecord::Cost));
        assert_eq!(memory.cost_rates.map(|r| r.decode_bytes_per_second), Some(5.0));
        let setup = s.get::<SetupRecord>();
        assert_eq!(
            (setup.step, setup.repo.as_str(), setup.store_dir.as_deref()),
            (SetupStepRecord::SpeedTest, "me/tiny", Some("/m"))
        );
        let speed = setup.speed.unwrap();
        assert_eq!((speed.qd16_experts_per_s, speed.read_pattern.map(|p| p.depth)), (4.5, Some(8)));
        assert_eq!((setup.overrides, setup.dismissed), (vec!["cpu".to_string()], true));
        let backend = &s.get::<BackendsRecord>().backends[0];
        assert_eq!(
            (backend.base_url.as_str(), backend.key),
            ("http://10.0.0.5:8000/v1", Some(KeyPlaceRecord::UserFile))
        );
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
