//! The fake hub's endpoints and its misbehaving bodies.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State as AxState};
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;

use super::types::{HubFile, Lie, RequestRecord, State};

type Shared = Arc<State>;

pub fn hub_router(state: Shared) -> Router {
    Router::new()
        .route("/api/models/{owner}/{name}/revision/{rev}", get(revision))
        .route("/api/models/{owner}/{name}/tree/{commit}", get(tree))
        .route("/{owner}/{name}/resolve/{commit}/{*path}", get(resolve))
        .with_state(state)
}

pub fn cdn_router(state: Shared) -> Router {
    Router::new().route("/cdn/{owner}/{name}/{commit}/{*path}", get(cdn)).with_state(state)
}

fn status(code: u16, body: &str) -> Response<Body> {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = StatusCode::from_u16(code).unwrap();
    r
}

fn find(state: &State, repo: &str, commit: &str, path: &str) -> Option<HubFile> {
    let repos = state.repos.lock().unwrap();
    repos.iter().find(|r| r.id == repo && r.commit == commit)?.files.iter().find(|f| f.path == path).cloned()
}

async fn revision(
    AxState(state): AxState<Shared>,
    Path((owner, name, rev)): Path<(String, String, String)>,
) -> Response<Body> {
    let repo = format!("{owner}/{name}");
    let commit = if rev == "main" { state.main.lock().unwrap().clone() } else { rev };
    let exists = state.repos.lock().unwrap().iter().any(|r| r.id == repo && r.commit == commit);
    if !exists {
        return status(404, "{\"error\":\"Revision Not Found\"}");
    }
    let mut r = Response::new(Body::from(serde_json::json!({"id": repo, "sha": commit}).to_string()));
    r.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    r
}

async fn tree(
    AxState(state): AxState<Shared>,
    Path((owner, name, commit)): Path<(String, String, String)>,
) -> Response<Body> {
    let repo = format!("{owner}/{name}");
    let repos = state.repos.lock().unwrap().clone();
    let Some(r) = repos.iter().find(|r| r.id == repo && r.commit == commit) else { return status(404, "{}") };
    let mut entries: Vec<serde_json::Value> = r
        .files
        .iter()
        .map(|f| {
            if f.lfs {
                serde_json::json!({"type": "file", "path": f.path, "size": f.bytes.len(), "oid": f.git_oid(),
                    "lfs": {"oid": f.sha256(), "size": f.bytes.len(), "pointerSize": 134}})
            } else {
                serde_json::json!({"type": "file", "path": f.path, "size": f.bytes.len(), "oid": f.git_oid()})
            }
        })
        .collect();
    entries.extend(state.extra_tree.lock().unwrap().iter().cloned());
    let mut resp = Response::new(Body::from(serde_json::Value::Array(entries).to_string()));
    resp.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    resp
}

async fn resolve(
    AxState(state): AxState<Shared>,
    Path((owner, name, commit, path)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response<Body> {
    let repo = format!("{owner}/{name}");
    let Some(file) = find(&state, &repo, &commit, &path) else { return status(404, "Entry not found") };
    if file.lfs {
        let cdn = state.cdn_base.lock().unwrap().clone();
        let mut r = status(302, "");
        let location = format!("{cdn}/cdn/{repo}/{commit}/{path}?X-Amz-Signature=fake");
        let h = r.headers_mut();
        h.insert("location", HeaderValue::from_str(&location).unwrap());
        h.insert("x-repo-commit", HeaderValue::from_str(&commit).unwrap());
        h.insert("x-linked-etag", HeaderValue::from_str(&format!("\"{}\"", file.sha256())).unwrap());
        h.insert("x-linked-size", HeaderValue::from_str(&file.bytes.len().to_string()).unwrap());
        return r;
    }
    serve(&state, false, &commit, &file, &headers)
}

async fn cdn(
    AxState(state): AxState<Shared>,
    Path((owner, name, commit, path)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response<Body> {
    let repo = format!("{owner}/{name}");
    let Some(file) = find(&state, &repo, &commit, &path) else { return status(404, "NoSuchKey") };
    serve(&state, true, &commit, &file, &headers)
}

/// `bytes=a-` or `bytes=a-b`.
fn parse_range(headers: &HeaderMap) -> Option<(u64, Option<u64>)> {
    let v = headers.get("range")?.to_str().ok()?.strip_prefix("bytes=")?;
    let (a, b) = v.split_once('-')?;
    Some((a.parse().ok()?, if b.is_empty() { None } else { Some(b.parse().ok()?) }))
}

fn serve(state: &State, cdn: bool, commit: &str, file: &HubFile, headers: &HeaderMap) -> Response<Body> {
    let size = file.bytes.len() as u64;
    let range = parse_range(headers);
    let (start, end) = range.unwrap_or((0, None));
    let lie =
        if end.is_none() { state.script.lock().unwrap().get_mut(&file.path).and_then(|q| q.pop_front()) } else { None };
    let sent = Arc::new(AtomicU64::new(0));
    let record = |code: u16| RequestRecord {
        cdn,
        path: file.path.clone(),
        commit: commit.into(),
        start,
        end,
        status: code,
        lie: lie.clone(),
        sent: sent.clone(),
    };
    let rate = *state.rate.lock().unwrap();
    let log = |code| state.log.lock().unwrap().push(record(code));
    match &lie {
        Some(Lie::Status { code, retry_after }) => {
            log(*code);
            let mut r = status(*code, "lie");
            if let Some(s) = retry_after {
                r.headers_mut().insert("retry-after", HeaderValue::from_str(&s.to_string()).unwrap());
            }
            return r;
        }
        Some(Lie::Expired) => {
            log(403);
            return status(403, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>");
        }
        Some(Lie::CaptivePortal) => {
            log(200);
            let mut r = status(200, "<html><body>Please log in to the Wi-Fi</body></html>");
            r.headers_mut().insert("content-type", HeaderValue::from_static("text/html; charset=utf-8"));
            return r;
        }
        _ => {}
    }
    if start >= size && range.is_some() {
        log(416);
        let mut r = status(416, "");
        r.headers_mut().insert("content-range", HeaderValue::from_str(&format!("bytes */{size}")).unwrap());
        return r;
    }
    let ignore = lie == Some(Lie::IgnoreRange) || range.is_none();
    let (from, to) = if ignore { (0, size - 1) } else { (start, end.unwrap_or(size - 1).min(size - 1)) };
    let mut body = file.bytes.slice(from as usize..=to as usize);
    if lie == Some(Lie::WrongBytes) {
        let mut v = body.to_vec();
        let mid = v.len() / 2;
        v[mid] ^= 0x55;
        body = Bytes::from(v);
    }
    let code = if ignore { 200 } else { 206 };
    log(code);
    let mut r = Response::new(Body::from_stream(body_stream(body, lie.clone(), rate, sent)));
    *r.status_mut() = StatusCode::from_u16(code).unwrap();
    let h = r.headers_mut();
    h.insert("content-type", HeaderValue::from_static("application/octet-stream"));
    h.insert(
        "etag",
        HeaderValue::from_str(&format!("\"{}\"", if file.lfs { file.sha256() } else { file.git_oid() })).unwrap(),
    );
    h.insert("accept-ranges", HeaderValue::from_static("bytes"));
    if !ignore {
        let cr = if lie == Some(Lie::BadContentRange) {
            format!("bytes 0-{}/{size}", to - from)
        } else {
            format!("bytes {from}-{to}/{size}")
        };
        h.insert("content-range", HeaderValue::from_str(&cr).unwrap());
    }
    r
}

const PIECE: usize = 64 << 10;

/// The body in pieces, with the lie's misbehaviour and the rate limit: each piece leaves at
/// the time the rate gives its first byte, counted from the body's start (a sleep per piece
/// would be at least the timer's millisecond, capping the rate near 64 MB/s).
fn body_stream(
    body: Bytes,
    lie: Option<Lie>,
    rate: Option<u64>,
    sent: Arc<AtomicU64>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    let started = tokio::time::Instant::now();
    futures_util::stream::unfold((body, 0usize, lie, false), move |(body, at, lie, done)| {
        let sent = sent.clone();
        async move {
            if done {
                return None;
            }
            let limit = match &lie {
                Some(Lie::EarlyClose { after }) | Some(Lie::Stall { after }) | Some(Lie::Trickle { after }) => {
                    (*after as usize).min(body.len())
                }
                _ => body.len(),
            };
            if at >= limit {
                match &lie {
                    Some(Lie::EarlyClose { .. }) => {
                        return Some((Err(std::io::Error::other("early close")), (body, at, lie, true)))
                    }
                    Some(Lie::Stall { .. }) if at < body.len() => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        return None;
                    }
                    Some(Lie::Trickle { .. }) if at < body.len() => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        let piece = body.slice(at..at + 1);
                        sent.fetch_add(1, Ordering::Relaxed);
                        return Some((Ok(piece), (body, at + 1, lie, false)));
                    }
                    Some(Lie::OverLong) => return Some((Ok(Bytes::from(vec![0xAB; 4096])), (body, at, lie, true))),
                    _ => return None,
                }
            }
            let n = PIECE.min(limit - at);
            if let Some(rate) = rate {
                tokio::time::sleep_until(started + Duration::from_secs_f64(at as f64 / rate.max(1) as f64)).await;
            }
            sent.fetch_add(n as u64, Ordering::Relaxed);
            Some((Ok(body.slice(at..at + n)), (body, at + n, lie, false)))
        }
    })
}
