//! Remote backends (Settings › Backends): OpenAI-compatible endpoints a conversation can be
//! answered by instead of the local engine — a vLLM or SGLang cluster, a hosted API, another
//! machine's `k3 serve`.
//!
//! Owns: the list the user made (`backends.json` in the data folder: name, base URL, model
//! id and where the key is — never the key), adding (the URL checked), removing (the key
//! deleted too), the "Test" request, and turning a backend into the runtime's
//! `RemoteBackend` ([`k3_remote::RemoteChat`]) for a reply.
//! Must not: send a prompt anywhere by itself: only a conversation the user set to a backend
//! is answered by it (`worker::Worker::generate`). Keys live in [`keys::KeyVault`].

pub mod keys;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k3_remote::{host_of, ChatRequest, Endpoint, Outcome, RemoteChat, RemoteClient, Timeouts, WireMessage};

use crate::settings::records::{BackendsRecord, KeyPlaceRecord};
use crate::settings::{Settings, SettingsRecord};

use crate::error::{AppError, ErrorKind};
pub use keys::{KeyPlace, KeyVault};

/// The settings file inside the data folder.
pub const BACKENDS_FILE: &str = <BackendsRecord as SettingsRecord>::FILE;

/// One backend as the app holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BackendRecord {
    id: String,
    name: String,
    base_url: String,
    model: String,
    /// Where its key is; `None`: the endpoint takes no key.
    key: Option<KeyPlace>,
}

impl From<crate::settings::records::BackendRecord> for BackendRecord {
    fn from(r: crate::settings::records::BackendRecord) -> Self {
        let key = r.key.map(|k| match k {
            KeyPlaceRecord::SystemKeyring => KeyPlace::SystemKeyring,
            KeyPlaceRecord::UserFile => KeyPlace::UserFile,
        });
        BackendRecord { id: r.id, name: r.name, base_url: r.base_url, model: r.model, key }
    }
}

impl From<&BackendRecord> for crate::settings::records::BackendRecord {
    fn from(r: &BackendRecord) -> Self {
        let key = r.key.map(|k| match k {
            KeyPlace::SystemKeyring => KeyPlaceRecord::SystemKeyring,
            KeyPlace::UserFile => KeyPlaceRecord::UserFile,
        });
        let (id, name, base_url, model) = (r.id.clone(), r.name.clone(), r.base_url.clone(), r.model.clone());
        crate::settings::records::BackendRecord { id, name, base_url, model, key }
    }
}

/// A backend as Settings shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendView {
    pub id: String,
    pub name: String,
    pub base_url: String,
    pub model: String,
    /// `host[:port]`: where this backend's prompts go.
    pub host: String,
    pub key: Option<KeyPlace>,
}

/// What the Add form sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBackend {
    pub name: String,
    /// Ends in `/v1`.
    pub base_url: String,
    /// Empty: the endpoint takes no key.
    pub api_key: String,
    pub model: String,
}

/// What "Test" found: the models the endpoint lists and one short reply, timed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendTest {
    pub models: Vec<String>,
    pub reply: String,
    /// From sending the request to the reply's end.
    pub reply_ms: u64,
}

/// The backends, their keys and the file they are saved in.
pub struct Backends {
    /// Where the list is saved (`backends.json`).
    store: Arc<Settings>,
    vault: KeyVault,
    list: Mutex<Vec<BackendRecord>>,
}

impl Backends {
    /// The saved list; keys in the OS keyring when `use_keyring` and one answers.
    pub fn open(data_dir: &Path, store: Arc<Settings>, use_keyring: bool) -> Backends {
        let list = store.get::<BackendsRecord>().backends.into_iter().map(BackendRecord::from).collect();
        let vault = KeyVault::open(data_dir, use_keyring);
        Backends { store, vault, list: Mutex::new(list) }
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Vec<BackendRecord>> {
        self.list.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn list(&self) -> Vec<BackendView> {
        self.records().iter().map(view).collect()
    }

    /// Adds `new` (its URL checked, its key saved apart) and saves the list.
    pub fn add(&self, new: NewBackend) -> Result<BackendView, AppError> {
        let (name, base_url, model) = (new.name.trim(), new.base_url.trim(), new.model.trim());
        if name.is_empty() || model.is_empty() {
            return Err(AppError::invalid("a backend needs a name and a model id"));
        }
        RemoteClient::new(Endpoint { base_url: base_url.to_string(), api_key: None }, Timeouts::default())
            .map_err(|e| AppError::invalid(e.to_string()))?;
        let mut list = self.records();
        let id = new_id(name, &list);
        let key = match new.api_key.trim() {
            "" => None,
            key => Some(self.vault.save(&id, key)?),
        };
        let record = BackendRecord { id, name: name.into(), base_url: base_url.into(), model: model.into(), key };
        list.push(record.clone());
        if let Err(e) = self.save(&list) {
            list.pop();
            let _ = self.vault.delete(&record.id);
            return Err(e);
        }
        log::info!("backend {} added: {} at {}", record.id, record.model, host_of(&record.base_url));
        Ok(view(&record))
    }

    /// Removes backend `id` and its key.
    pub fn remove(&self, id: &str) -> Result<(), AppError> {
        let mut list = self.records();
        let at = list.iter().position(|b| b.id == id).ok_or_else(|| unknown(id))?;
        let removed = list.remove(at);
        if let Err(e) = self.save(&list) {
            list.insert(at, removed);
            return Err(e);
        }
        self.vault.delete(id)
    }

    fn save(&self, list: &[BackendRecord]) -> Result<(), AppError> {
        Ok(self.store.set(BackendsRecord { backends: list.iter().map(Into::into).collect() })?)
    }

    /// The endpoint (key loaded) and model id of backend `id`.
    fn endpoint(&self, id: &str) -> Result<(Endpoint, String), AppError> {
        let record = self.records().iter().find(|b| b.id == id).cloned().ok_or_else(|| unknown(id))?;
        let api_key = record.key.map(|place| self.vault.load(id, place)).transpose()?;
        Ok((Endpoint { base_url: record.base_url, api_key }, record.model))
    }

    /// The runtime's backend for a reply by backend `id`.
    pub fn chat(&self, id: &str) -> Result<Arc<RemoteChat>, AppError> {
        let (endpoint, model) = self.endpoint(id)?;
        let chat = RemoteChat::new(endpoint, model, Timeouts::default()).map_err(|e| remote(e.to_string()))?;
        Ok(Arc::new(chat))
    }

    /// Lists backend `id`'s models and sends it one short request, timed.
    pub async fn test(&self, id: &str) -> Result<BackendTest, AppError> {
        let (endpoint, model) = self.endpoint(id)?;
        let timeouts = Timeouts { first_byte: Duration::from_secs(60), ..Timeouts::default() };
        let client = RemoteClient::new(endpoint, timeouts).map_err(|e| remote(e.to_string()))?;
        let models = client.models().await.map_err(|e| remote(e.to_string()))?;
        let request = ChatRequest {
            model,
            messages: vec![WireMessage { role: "user", content: "Say hello in a few words.".into() }],
            max_tokens: 16,
            temperature: 0.0,
            top_p: 1.0,
            seed: None,
        };
        let started = Instant::now();
        let outcome = client.chat(&request, || false, |_| {}).await.map_err(|e| remote(e.to_string()))?;
        let reply_ms = started.elapsed().as_millis() as u64;
        let reply = match outcome {
            Outcome::Finished(reply) => reply.content,
            Outcome::Cancelled(partial) => partial.content,
        };
        Ok(BackendTest { models, reply, reply_ms })
    }

    /// The model ids an endpoint lists, before it is added (the Add form's "List models").
    pub async fn list_models(base_url: &str, api_key: &str) -> Result<Vec<String>, AppError> {
        let api_key = Some(api_key.trim().to_string()).filter(|k| !k.is_empty());
        let endpoint = Endpoint { base_url: base_url.trim().to_string(), api_key };
        let timeouts = Timeouts { first_byte: Duration::from_secs(30), ..Timeouts::default() };
        let client = RemoteClient::new(endpoint, timeouts).map_err(|e| AppError::invalid(e.to_string()))?;
        client.models().await.map_err(|e| remote(e.to_string()))
    }

    /// `Ok` when `id` is absent (this computer) or names a backend in the list.
    pub fn check_known(&self, id: Option<&str>) -> Result<(), AppError> {
        match id {
            Some(id) if self.host(id).is_none() => {
                Err(AppError::invalid(format!("no backend {id}: add it in Settings › Backends first")))
            }
            _ => Ok(()),
        }
    }

    /// The host backend `id` sends prompts to, when there is such a backend.
    pub fn host(&self, id: &str) -> Option<String> {
        self.records().iter().find(|b| b.id == id).map(|b| host_of(&b.base_url))
    }
}

fn view(b: &BackendRecord) -> BackendView {
    BackendView {
        id: b.id.clone(),
        name: b.name.clone(),
        base_url: b.base_url.clone(),
        model: b.model.clone(),
        host: host_of(&b.base_url),
        key: b.key,
    }
}

/// An id of `[a-z0-9-]` from `name`, unique in `list` ("gpu-box", "gpu-box-2", …).
fn new_id(name: &str, list: &[BackendRecord]) -> String {
    // ASCII only: the id names the key's file.
    let slug = crate::slug::slug(name, |c| c.is_ascii_alphanumeric(), 40);
    let base = if slug.is_empty() { "backend".to_string() } else { slug };
    let taken = |id: &str| list.iter().any(|b| b.id == id);
    (1..).map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") }).find(|id| !taken(id)).unwrap_or(base)
}

fn unknown(id: &str) -> AppError {
    AppError::new(ErrorKind::NotFound, format!("no backend {id} (it was removed in Settings › Backends)"))
}

fn remote(message: String) -> AppError {
    AppError::new(ErrorKind::Remote, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> BackendRecord {
        BackendRecord { id: id.into(), name: id.into(), base_url: String::new(), model: String::new(), key: None }
    }

    #[test]
    fn ids_are_slugs_made_unique() {
        assert_eq!(new_id("GPU box (vLLM)", &[]), "gpu-box-vllm");
        assert_eq!(new_id("GPU box", &[record("gpu-box")]), "gpu-box-2");
        assert_eq!(new_id("../../etc", &[]), "etc");
        assert_eq!(new_id("…", &[]), "backend");
    }
}
