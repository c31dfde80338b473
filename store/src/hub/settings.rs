//! Where the hub is and who we are to it: the Hugging Face environment variables
//! (PRODUCT.md §4.4) read in one place.
//!
//! Owns: `HF_ENDPOINT`, `HF_TOKEN` (then `$HF_HOME/token`), `HF_HOME`, `HF_HUB_CACHE`,
//! `HF_HUB_OFFLINE`, `HF_HUB_DOWNLOAD_TIMEOUT`, `K3_REVISION`.
//! Must not: log or print the token.

use std::path::PathBuf;
use std::time::Duration;

/// The hub everyone uses unless `HF_ENDPOINT` says otherwise.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

#[derive(Clone)]
pub struct HubSettings {
    /// Base URL without a trailing `/`.
    pub endpoint: String,
    pub token: Option<String>,
    /// Where the token file would be (named in the 401/403 message).
    pub token_path: PathBuf,
    /// The Hugging Face cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`).
    pub hub_cache: PathBuf,
    pub offline: bool,
    /// Connect timeout (`HF_HUB_DOWNLOAD_TIMEOUT`, seconds; 10 by default as in `huggingface_hub`).
    pub connect_timeout: Duration,
    /// `K3_REVISION`, when set: the revision to pin instead of `main`.
    pub revision_override: Option<String>,
}

impl std::fmt::Debug for HubSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubSettings")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("hub_cache", &self.hub_cache)
            .field("offline", &self.offline)
            .finish()
    }
}

impl HubSettings {
    /// The settings this process's environment gives.
    pub fn from_env() -> HubSettings {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        // `~` as the hub's own client expands it: $HOME on Unix, the user's profile on Windows.
        let home = dirs::home_dir().unwrap_or_else(|| PathBuf::from("."));
        let hf_home = var("HF_HOME").map(PathBuf::from).unwrap_or_else(|| home.join(".cache").join("huggingface"));
        let token_path = hf_home.join("token");
        let token = var("HF_TOKEN").or_else(|| {
            std::fs::read_to_string(&token_path).ok().map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
        });
        let endpoint = var("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let timeout =
            var("HF_HUB_DOWNLOAD_TIMEOUT").and_then(|t| t.parse::<f64>().ok()).filter(|t| *t > 0.0 && *t < 3600.0);
        HubSettings {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            token,
            token_path,
            hub_cache: var("HF_HUB_CACHE").map(PathBuf::from).unwrap_or_else(|| hf_home.join("hub")),
            offline: var("HF_HUB_OFFLINE")
                .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "TRUE" | "yes" | "ON" | "on")),
            connect_timeout: Duration::from_secs_f64(timeout.unwrap_or(10.0)),
            revision_override: var("K3_REVISION"),
        }
    }
}
