//! Settings › New chats: the sampling settings, system prompt and backend (this computer
//! unless the user chose a remote one) every new conversation starts with (each chat can still change its own), saved in `chat-defaults.json`, and the
//! loaded checkpoint's own defaults from its `generation_config.json` ("Reset to model
//! defaults").
//!
//! Owns: [`ChatDefaults`], [`ModelDefaults`] and reading `generation_config.json`
//! ([`model_defaults`]: the Hugging Face fields `temperature`, `top_p`, `max_new_tokens`,
//! `do_sample`; unknown fields ignored, out-of-range values named).
//! Must not: change a conversation that exists: defaults apply to new chats only.

use std::path::Path;

use serde::Deserialize;

use crate::settings::records::ChatDefaultsRecord;
use crate::settings::{Settings, SettingsRecord};

use crate::error::AppError;
use crate::history::SamplingSettings;

/// The settings file's name in the app's data folder.
pub const CHAT_DEFAULTS_FILE: &str = ChatDefaultsRecord::FILE;
/// A `generation_config.json` larger than this is not a settings file.
const MAX_GENERATION_CONFIG_BYTES: u64 = 1 << 20;

/// What a new conversation starts with (its seed is drawn fresh for each chat).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatDefaults {
    pub temperature: f32,
    pub top_p: f32,
    pub max_tokens: u32,
    pub thinking: bool,
    pub system_prompt: String,
    /// The remote backend new chats are answered by (a Settings › Backends id); `None`: this
    /// computer. Files written before backends existed have none.
    pub backend: Option<String>,
}

impl Default for ChatDefaults {
    fn default() -> Self {
        let s = SamplingSettings::default();
        ChatDefaults {
            temperature: s.temperature,
            top_p: s.top_p,
            max_tokens: s.max_tokens,
            thinking: s.thinking,
            system_prompt: String::new(),
            backend: None,
        }
    }
}

impl ChatDefaults {
    pub fn load(settings: &Settings) -> ChatDefaults {
        settings.get::<ChatDefaultsRecord>().into()
    }

    pub fn save(&self, settings: &Settings) -> Result<(), AppError> {
        Ok(settings.set(ChatDefaultsRecord::from(self))?)
    }

    /// A new conversation's sampling settings with `seed` (no tool servers: the caller
    /// adds the ones Settings › Tools offers to new conversations).
    pub fn sampling(&self, seed: u64) -> SamplingSettings {
        SamplingSettings {
            temperature: self.temperature,
            top_p: self.top_p,
            seed,
            max_tokens: self.max_tokens,
            thinking: self.thinking,
            thinking_effort: None,
            tool_servers: Vec::new(),
            tools_off: Vec::new(),
            tool_choice: crate::history::ToolUse::Auto,
        }
    }

    /// These defaults with the model's values where it gives them.
    pub fn with_model(&self, m: &ModelDefaults) -> ChatDefaults {
        ChatDefaults {
            temperature: m.temperature.unwrap_or(self.temperature),
            top_p: m.top_p.unwrap_or(self.top_p),
            max_tokens: m.max_tokens.unwrap_or(self.max_tokens),
            ..self.clone()
        }
    }
}

/// What a checkpoint's `generation_config.json` says (absent fields: `None`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelDefaults {
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct GenerationConfig {
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_new_tokens: Option<u64>,
    /// `false` means greedy whatever the temperature says.
    do_sample: Option<bool>,
}

/// The model folder's `generation_config.json`: `Ok(None)` when it has none, an error
/// naming the file and field when it cannot be used.
pub fn model_defaults(model_dir: &Path) -> Result<Option<ModelDefaults>, String> {
    let path = model_dir.join("generation_config.json");
    let named = |what: String| format!("{}: {what}", path.display());
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(named(e.to_string())),
    };
    if meta.len() > MAX_GENERATION_CONFIG_BYTES {
        return Err(named(format!("{} bytes is too large for a settings file", meta.len())));
    }
    let text = std::fs::read(&path).map_err(|e| named(e.to_string()))?;
    let g: GenerationConfig = serde_json::from_slice(&text).map_err(|e| named(e.to_string()))?;
    let check = |field: &str, v: f64, ok: bool| {
        if ok {
            Ok(v as f32)
        } else {
            Err(named(format!("{field} {v} is out of range")))
        }
    };
    let temperature =
        g.temperature.map(|t| check("temperature", t, t.is_finite() && (0.0..=10.0).contains(&t))).transpose()?;
    let top_p = g.top_p.map(|p| check("top_p", p, p.is_finite() && p > 0.0 && p <= 1.0)).transpose()?;
    let max_tokens = match g.max_new_tokens {
        Some(n) if n == 0 || n > k3_engine::MAX_CONTEXT as u64 => {
            return Err(named(format!("max_new_tokens {n} is not between 1 and {}", k3_engine::MAX_CONTEXT)))
        }
        n => n.map(|n| n as u32),
    };
    let greedy = g.do_sample == Some(false);
    Ok(Some(ModelDefaults { temperature: if greedy { Some(0.0) } else { temperature }, top_p, max_tokens }))
}

impl From<ChatDefaultsRecord> for ChatDefaults {
    fn from(r: ChatDefaultsRecord) -> Self {
        ChatDefaults {
            temperature: r.temperature,
            top_p: r.top_p,
            max_tokens: r.max_tokens,
            thinking: r.thinking,
            system_prompt: r.system_prompt,
            backend: r.backend,
        }
    }
}

impl From<&ChatDefaults> for ChatDefaultsRecord {
    fn from(d: &ChatDefaults) -> Self {
        ChatDefaultsRecord {
            temperature: d.temperature,
            top_p: d.top_p,
            max_tokens: d.max_tokens,
            thinking: d.thinking,
            system_prompt: d.system_prompt.clone(),
            backend: d.backend.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_file(text: &str) -> (tempfile::TempDir, Result<Option<ModelDefaults>, String>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("generation_config.json"), text).unwrap();
        let got = model_defaults(dir.path());
        (dir, got)
    }

    #[test]
    fn a_generation_config_gives_the_models_defaults_and_do_sample_false_is_greedy() {
        let (_d, got) =
            with_file(r#"{"temperature": 0.7, "top_p": 0.9, "max_new_tokens": 2048, "eos_token_id": [1, 2]}"#);
        assert_eq!(
            got.unwrap(),
            Some(ModelDefaults { temperature: Some(0.7), top_p: Some(0.9), max_tokens: Some(2048) })
        );
        let (_d, got) = with_file(r#"{"temperature": 0.7, "do_sample": false}"#);
        assert_eq!(got.unwrap().unwrap().temperature, Some(0.0));
        let none = tempfile::tempdir().unwrap();
        assert_eq!(model_defaults(none.path()), Ok(None), "no file: no model defaults");
    }

    #[test]
    fn bad_values_are_refused_naming_the_file_and_field() {
        for (text, field) in [
            (r#"{"top_p": 1.5}"#, "top_p 1.5"),
            (r#"{"temperature": -1}"#, "temperature -1"),
            (r#"{"max_new_tokens": 0}"#, "max_new_tokens 0"),
            ("not json", "generation_config.json"),
        ] {
            let (_d, got) = with_file(text);
            let e = got.unwrap_err();
            assert!(e.contains("generation_config.json") && e.contains(field), "{text}: {e}");
        }
    }

    #[test]
    fn defaults_round_trip_and_take_the_models_values_where_given() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::open(dir.path());
        assert_eq!(ChatDefaults::load(&settings), ChatDefaults::default());
        let mine = ChatDefaults {
            temperature: 0.0,
            max_tokens: 64,
            system_prompt: "Be brief.".into(),
            ..ChatDefaults::default()
        };
        mine.save(&settings).unwrap();
        assert_eq!(ChatDefaults::load(&Settings::open(dir.path())), mine);
        let model = ModelDefaults { temperature: Some(1.0), top_p: None, max_tokens: Some(4096) };
        let reset = mine.with_model(&model);
        assert_eq!((reset.temperature, reset.top_p, reset.max_tokens), (1.0, mine.top_p, 4096));
        assert_eq!(reset.system_prompt, "Be brief.", "the system prompt is the user's, not the model's");
        assert_eq!(mine.sampling(42).seed, 42);
    }
}
