//! The hub's JSON endpoints: `revision/{rev}` (pin to a commit) and `tree/{commit}`
//! (every file with its size and hash), retried through transient failures.
//!
//! Owns: [`HubClient::pin_commit`], [`HubClient::list_files`] and their validation.
//! Must not: accept a commit that is not 40 hex, an LFS id that is not 64 hex, a path
//! `names::path_problem` refuses, or follow a pagination link off the endpoint.

use std::time::Duration;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::names::{is_commit, is_git_oid, is_sha256, path_problem, repo_problem};
use super::{escape_component, FileHash, HubClient, RepoFile};
use crate::error::{StoreError, StoreResult};
use crate::retry::{retry_after, Backoff};

/// Largest JSON answer read from the hub (a tree of thousands of files fits easily).
const JSON_CAP: usize = 16 << 20;
/// Most pages of a paginated tree followed.
const MAX_PAGES: usize = 1000;

/// Called before each wait on a transient failure: (URL, reason, wait).
pub type RetryNotice<'a> = &'a (dyn Fn(&str, &str, Duration) + Send + Sync);

#[derive(Deserialize)]
struct RevisionInfo {
    sha: Option<String>,
}

#[derive(Deserialize)]
struct TreeEntry {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    oid: Option<String>,
    #[serde(default)]
    lfs: Option<LfsInfo>,
}

#[derive(Deserialize)]
struct LfsInfo {
    oid: String,
    size: u64,
}

impl HubClient {
    /// The 40-hex commit `revision` names now (a commit is checked and returned as is).
    pub async fn pin_commit(
        &self,
        repo: &str,
        revision: &str,
        backoff: &mut Backoff,
        stop: &CancellationToken,
        notice: RetryNotice<'_>,
    ) -> StoreResult<String> {
        check_repo(repo)?;
        let url = format!("{}/api/models/{repo}/revision/{}", self.settings.endpoint, escape_component(revision));
        let (body, _) = self.get_json_bytes(&url, backoff, stop, notice).await?;
        let info: RevisionInfo = serde_json::from_slice(&body).map_err(|e| StoreError::BadAnswer {
            url: url.clone(),
            what: "revision JSON",
            detail: e.to_string(),
        })?;
        match info.sha {
            Some(sha) if is_commit(&sha) => Ok(sha),
            Some(sha) => {
                Err(StoreError::BadAnswer { url, what: "a 40-hex commit", detail: format!("`sha` is {sha:?}") })
            }
            None => Err(StoreError::BadAnswer { url, what: "revision JSON", detail: "no `sha` field".into() }),
        }
    }

    /// Every file of `commit`, sorted by path, each with a size and a hash to check.
    pub async fn list_files(
        &self,
        repo: &str,
        commit: &str,
        backoff: &mut Backoff,
        stop: &CancellationToken,
        notice: RetryNotice<'_>,
    ) -> StoreResult<Vec<RepoFile>> {
        check_repo(repo)?;
        let mut url = format!("{}/api/models/{repo}/tree/{commit}?recursive=true", self.settings.endpoint);
        let mut files = Vec::new();
        for _ in 0..MAX_PAGES {
            let (body, next) = self.get_json_bytes(&url, backoff, stop, notice).await?;
            let entries: Vec<TreeEntry> = serde_json::from_slice(&body).map_err(|e| StoreError::BadAnswer {
                url: url.clone(),
                what: "a tree listing",
                detail: e.to_string(),
            })?;
            for entry in entries {
                if let Some(file) = repo_file(repo, &url, entry)? {
                    files.push(file);
                }
            }
            match next {
                Some(next) if next.starts_with(&self.settings.endpoint) => url = next,
                Some(next) => {
                    return Err(StoreError::BadAnswer { url, what: "a pagination link on the hub", detail: next })
                }
                None => break,
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(w) = files.windows(2).find(|w| w[0].path == w[1].path) {
            return Err(StoreError::BadAnswer {
                url,
                what: "a tree with unique paths",
                detail: format!("`{}` twice", w[0].path),
            });
        }
        Ok(files)
    }

    /// GETs a JSON document, retrying 408/429/5xx and connection errors forever (with
    /// backoff) until `stop`; returns the body and the `Link: rel="next"` target.
    async fn get_json_bytes(
        &self,
        url: &str,
        backoff: &mut Backoff,
        stop: &CancellationToken,
        notice: RetryNotice<'_>,
    ) -> StoreResult<(Vec<u8>, Option<String>)> {
        if self.settings.offline {
            return Err(StoreError::Offline);
        }
        loop {
            let (reason, server_wait) = match self.authorized(self.http.get(url)).send().await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let wait = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| retry_after(v, std::time::SystemTime::now()));
                    match status {
                        200 => {
                            let next = next_link(resp.headers());
                            let body = read_capped(resp, url).await?;
                            backoff.reset();
                            return Ok((body, next));
                        }
                        401 | 403 => {
                            return Err(StoreError::Denied {
                                url: url.into(),
                                status,
                                token_path: self.settings.token_path.clone(),
                            })
                        }
                        404 => return Err(StoreError::NotFound { url: url.into() }),
                        408 | 429 | 500..=599 => (format!("HTTP {status}"), wait),
                        _ => {
                            return Err(StoreError::Http {
                                url: url.into(),
                                status,
                                message: "unexpected answer".into(),
                            })
                        }
                    }
                }
                Err(e) => match tls_failure(url, &e) {
                    Some(fatal) => return Err(fatal),
                    None => (describe(&e), None),
                },
            };
            let wait = backoff.next_wait(server_wait);
            notice(url, &reason, wait);
            tokio::select! {
                _ = stop.cancelled() => return Err(StoreError::Stopped),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

fn check_repo(repo: &str) -> StoreResult<()> {
    match repo_problem(repo) {
        Some(reason) => Err(StoreError::BadRepo { repo: repo.into(), reason }),
        None => Ok(()),
    }
}

fn repo_file(repo: &str, url: &str, e: TreeEntry) -> StoreResult<Option<RepoFile>> {
    if e.kind != "file" {
        return Ok(None);
    }
    if let Some(reason) = path_problem(&e.path) {
        return Err(StoreError::UnsafeName { repo: repo.into(), path: e.path, reason });
    }
    let bad = |detail: String| StoreError::BadAnswer { url: url.into(), what: "a valid tree entry", detail };
    let hash = match (e.lfs, e.oid) {
        (Some(lfs), _) => {
            if !is_sha256(&lfs.oid) {
                return Err(bad(format!("`{}`: LFS oid {:?} is not 64 hex", e.path, lfs.oid)));
            }
            if e.size.is_some_and(|s| s != lfs.size) {
                return Err(bad(format!("`{}`: size and lfs.size differ", e.path)));
            }
            return Ok(Some(RepoFile { path: e.path, size: lfs.size, hash: FileHash::Sha256(lfs.oid) }));
        }
        (None, Some(oid)) if is_git_oid(&oid) => FileHash::GitBlob(oid),
        (None, oid) => return Err(bad(format!("`{}`: oid {oid:?} is not 40 hex", e.path))),
    };
    let size = e.size.ok_or_else(|| bad(format!("`{}` has no size", e.path)))?;
    Ok(Some(RepoFile { path: e.path, size, hash }))
}

/// The target of `Link: <url>; rel="next"`, if any.
fn next_link(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let link = headers.get(reqwest::header::LINK)?.to_str().ok()?;
    link.split(',').find(|part| part.contains("rel=\"next\"")).and_then(|part| {
        let start = part.find('<')? + 1;
        let end = part.find('>')?;
        part.get(start..end).map(str::to_string)
    })
}

async fn read_capped(mut resp: reqwest::Response, url: &str) -> StoreResult<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(bytes)) => {
                if body.len() + bytes.len() > JSON_CAP {
                    return Err(StoreError::BadAnswer {
                        url: url.into(),
                        what: "a JSON answer under 16 MiB",
                        detail: "too long".into(),
                    });
                }
                body.extend_from_slice(&bytes);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(StoreError::Network { url: url.into(), message: describe(&e) }),
        }
    }
}

/// A TLS failure (a certificate refused, a handshake that failed) as the fatal error it is:
/// never retried blindly and never bypassed (DL-16). `None` for any other error, which the
/// callers retry (a network switch, sleep or DNS failure resumes).
pub fn tls_failure(url: &str, e: &reqwest::Error) -> Option<StoreError> {
    is_rustls(e).then(|| StoreError::Network {
        url: url.into(),
        message: format!("TLS failed ({}); certificates are always checked", describe(e)),
    })
}

/// Whether a `rustls::Error` is in `e`'s chain. The connector hands it over inside an
/// `io::Error`, whose `source()` skips the error it carries, so that one is looked into too.
fn is_rustls(e: &(dyn std::error::Error + 'static)) -> bool {
    if e.downcast_ref::<rustls::Error>().is_some() {
        return true;
    }
    let carried = e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
    if carried.is_some_and(|inner| is_rustls(inner)) {
        return true;
    }
    e.source().is_some_and(is_rustls)
}

/// A reqwest error in words, with its causes (reqwest's own Display hides them).
pub fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
