//! The Hugging Face hub as the download sees it (PRODUCT.md §4.2): pin a revision to a
//! commit, list that commit's files with sizes and hashes, and fetch byte ranges of a
//! file through the `resolve` endpoint and whatever CDN it redirects to.
//!
//! Owns: [`HubClient`], [`RepoFile`], [`FileHash`]. Layout: `settings` (environment),
//! `names` (what a name may be), `api` (the JSON endpoints).
//! Must not: send the token to any host but the endpoint's (reqwest drops `Authorization`
//! on a redirect to another host), turn off TLS verification, or trust a name from the
//! hub before `names` accepted it.

pub mod api;
pub mod names;
pub mod settings;

use std::time::Duration;

use reqwest::header::{HeaderValue, AUTHORIZATION, RANGE};

pub use settings::HubSettings;

use crate::error::{StoreError, StoreResult};

/// How a file's bytes are checked.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileHash {
    /// An LFS file: the SHA-256 of its bytes (the tree's `lfs.oid`).
    Sha256(String),
    /// A small file kept in git: its blob id, SHA-1 of `blob <len>\0<bytes>`.
    GitBlob(String),
}

impl FileHash {
    /// The value `hf` tools store as the file's etag in `.metadata` files.
    pub fn etag(&self) -> &str {
        match self {
            FileHash::Sha256(h) | FileHash::GitBlob(h) => h,
        }
    }
}

/// One file of the pinned commit.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RepoFile {
    pub path: String,
    pub size: u64,
    pub hash: FileHash,
}

impl RepoFile {
    pub fn is_shard(&self) -> bool {
        self.path.ends_with(".safetensors")
    }
}

/// A client for one hub endpoint.
#[derive(Clone)]
pub struct HubClient {
    http: reqwest::Client,
    settings: HubSettings,
}

impl HubClient {
    pub fn new(settings: HubSettings) -> StoreResult<HubClient> {
        check_endpoint(&settings.endpoint)?;
        install_crypto_provider();
        let http = reqwest::Client::builder()
            .user_agent(concat!("k3-desktop/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(settings.connect_timeout)
            .redirect(reqwest::redirect::Policy::limited(10))
            .tcp_keepalive(Duration::from_secs(30))
            .build()
            .map_err(|e| StoreError::Network {
                url: settings.endpoint.clone(),
                message: format!("cannot build an HTTP client: {e}"),
            })?;
        Ok(HubClient { http, settings })
    }

    pub fn settings(&self) -> &HubSettings {
        &self.settings
    }

    /// `{endpoint}/{repo}/resolve/{commit}/{path}` with each path component escaped.
    pub fn file_url(&self, repo: &str, commit: &str, path: &str) -> String {
        let escaped: Vec<String> = path.split('/').map(escape_component).collect();
        format!("{}/{repo}/resolve/{commit}/{}", self.settings.endpoint, escaped.join("/"))
    }

    /// Starts a GET of `url` from byte `start` (through `end`, inclusive, when given). A
    /// range is always sent, `bytes=0-` included, so every answer can be checked.
    pub async fn get_range(&self, url: &str, start: u64, end: Option<u64>) -> reqwest::Result<reqwest::Response> {
        let range = match end {
            Some(end) => format!("bytes={start}-{end}"),
            None => format!("bytes={start}-"),
        };
        let mut req = self.authorized(self.http.get(url));
        if let Ok(v) = HeaderValue::from_str(&range) {
            req = req.header(RANGE, v);
        }
        req.send().await
    }

    /// Starts a GET of the whole of `url` (no Range).
    pub async fn get_whole(&self, url: &str) -> reqwest::Result<reqwest::Response> {
        self.authorized(self.http.get(url)).send().await
    }

    /// Whether a response came from the hub itself rather than the CDN it redirects to.
    pub fn is_hub_host(&self, url: &reqwest::Url) -> bool {
        match reqwest::Url::parse(&self.settings.endpoint) {
            Ok(hub) => hub.host_str() == url.host_str() && hub.port_or_known_default() == url.port_or_known_default(),
            Err(_) => false,
        }
    }

    fn authorized(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.settings.token {
            Some(token) => match HeaderValue::from_str(&format!("Bearer {token}")) {
                Ok(mut v) => {
                    v.set_sensitive(true);
                    req.header(AUTHORIZATION, v)
                }
                Err(_) => req,
            },
            None => req,
        }
    }
}

/// rustls needs one process-wide crypto provider; ring is ours. A second install (another
/// client, or the app's own) is harmless and ignored.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Percent-escapes everything but RFC 3986's unreserved characters.
pub fn escape_component(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
/// Refuses an endpoint that is not an `http(s)://host` URL at once (probe finding: such a
/// `--endpoint` was retried forever as a network failure).
fn check_endpoint(endpoint: &str) -> StoreResult<()> {
    let bad = |reason| StoreError::BadEndpoint { url: endpoint.to_string(), reason };
    let url = reqwest::Url::parse(endpoint).map_err(|_| bad("not a URL (give http://host or https://host)"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("only http:// and https:// are spoken"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    Ok(())
}
