//! The OpenAI Batch API: a JSONL file of chat-completion requests run overnight, journaled
//! on disk so a crash or a restart resumes it.
//!
//! Owns: [`BatchApi`] — checking an input file when a batch is created (each line a
//! `POST /v1/chat/completions` with a unique `custom_id`), running its requests through the
//! same path as a live request (`prepare::prepare_bytes`), up to the runtime's batch
//! at once so they decode together, each answer appended to the output file (or, for an
//! error, the error file) before it counts, and resuming every unfinished batch when the
//! server starts. A request that names no seed gets one derived from its batch and
//! `custom_id`, so a resumed request gives the tokens it would have given.
//! Must not: run a finished request twice (its line is the journal, [`store`]), or lose
//! one (a request is finished only once its line is synced).
//! Easy to break: a request refused with 429 (the server's queue is full) is retried, not
//! failed; cancelling lets the requests running finish and starts no other.

pub(crate) mod api;
pub mod store;

pub use api::BatchApi;

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::api_error::ApiError;
use crate::state::AppState;
use store::{now, BatchObject, BatchStatus, FileObject, Store};

/// The one endpoint a batch may name.
pub const BATCH_ENDPOINT: &str = "/v1/chat/completions";
/// Requests one batch may hold (OpenAI's limit).
pub const MAX_BATCH_REQUESTS: usize = 50_000;
/// How long a request refused for a full queue waits before it is tried again.
const QUEUE_FULL_WAIT: Duration = Duration::from_millis(200);

/// One request of an input file.
#[derive(Debug, Clone)]
struct Item {
    custom_id: String,
    body: Value,
}

fn storage(e: io::Error) -> ApiError {
    ApiError::Engine { message: format!("the batch store failed: {e}") }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl BatchApi {
    /// Opens the folder (creating it).
    pub fn open(dir: &Path) -> io::Result<Arc<BatchApi>> {
        Ok(Arc::new(BatchApi {
            store: Store::open(dir)?,
            objects: Mutex::new(()),
            running: Mutex::new(HashMap::new()),
        }))
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Stores an uploaded file.
    pub fn upload(&self, filename: &str, purpose: &str, bytes: &[u8]) -> Result<FileObject, ApiError> {
        if purpose != "batch" {
            let message = format!("purpose `{purpose}` is not accepted here; upload batch input with purpose `batch`");
            return Err(ApiError::Invalid { param: "purpose", message });
        }
        self.store.add_file(filename, purpose, bytes).map_err(storage)
    }

    /// Checks the request and its input file, stores the batch and starts it.
    pub fn create(self: &Arc<Self>, state: &AppState, request: &Value) -> Result<BatchObject, ApiError> {
        let text = |key: &'static str| {
            request[key]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| ApiError::Invalid { param: key, message: format!("`{key}` must be a string") })
        };
        let (input_file_id, endpoint, window) = (text("input_file_id")?, text("endpoint")?, text("completion_window")?);
        if endpoint != BATCH_ENDPOINT {
            let message = format!("endpoint `{endpoint}` is not supported; use {BATCH_ENDPOINT}");
            return Err(ApiError::Invalid { param: "endpoint", message });
        }
        if window != "24h" {
            return Err(ApiError::Invalid { param: "completion_window", message: "use `24h`".into() });
        }
        let items = self.items(&input_file_id)?;
        let mut batch = BatchObject::in_progress(
            store::new_id("batch_"),
            input_file_id,
            (endpoint, window),
            items.len() as u64,
            now(),
        );
        batch.metadata = request.get("metadata").filter(|m| !m.is_null()).cloned();
        self.store.put_batch(&batch).map_err(storage)?;
        self.spawn(state, batch.id.clone());
        Ok(batch)
    }

    /// The requests of input file `id`, checked: JSON lines, each a POST to the batch
    /// endpoint with a unique `custom_id` and a body object.
    fn items(&self, id: &str) -> Result<Vec<Item>, ApiError> {
        let invalid = |message: String| ApiError::Invalid { param: "input_file_id", message };
        let path = self.store.file_path(id).filter(|_| self.store.file(id).is_some());
        let bytes = path.and_then(|p| std::fs::read(p).ok()).ok_or_else(|| invalid(format!("no file `{id}`")))?;
        let text = std::str::from_utf8(&bytes).map_err(|_| invalid(format!("file `{id}` is not UTF-8")))?;
        let mut items = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = |what: &str| invalid(format!("line {} of `{id}`: {what}", n + 1));
            let v: Value = serde_json::from_str(line).map_err(|e| at(&format!("not JSON ({e})")))?;
            let custom_id = v["custom_id"].as_str().ok_or_else(|| at("no `custom_id` string"))?.to_string();
            if v["method"] != "POST" || v["url"] != BATCH_ENDPOINT {
                return Err(at(&format!("each request must be POST {BATCH_ENDPOINT}")));
            }
            if !v["body"].is_object() {
                return Err(at("`body` must be an object"));
            }
            if !seen.insert(custom_id.clone()) {
                return Err(at(&format!("`custom_id` `{custom_id}` is used twice")));
            }
            items.push(Item { custom_id, body: v["body"].clone() });
        }
        if items.is_empty() || items.len() > MAX_BATCH_REQUESTS {
            return Err(invalid(format!(
                "a batch holds 1 to {MAX_BATCH_REQUESTS} requests; `{id}` has {}",
                items.len()
            )));
        }
        Ok(items)
    }

    /// Starts the runner of batch `id` on the server's tokio runtime.
    fn spawn(self: &Arc<Self>, state: &AppState, id: String) {
        let flag = Arc::new(AtomicBool::new(false));
        lock(&self.running).insert(id.clone(), flag.clone());
        let (api, state) = (self.clone(), state.clone());
        tokio::spawn(async move { api.run(state, id, flag).await });
    }

    /// Every batch left unfinished by the last run, started again (the server's start).
    pub fn resume_all(self: &Arc<Self>, state: &AppState) {
        for batch in self.store.batches() {
            if batch.status.is_running() {
                log::info!("resuming batch {}", batch.id);
                self.spawn(state, batch.id);
            } else if batch.status == BatchStatus::Cancelling {
                if let Err(e) = self.end(&batch.id, BatchStatus::Cancelled) {
                    log::warn!("ending the cancelled batch {}: {}", batch.id, e.body());
                }
            }
        }
    }

    /// Asks batch `id` to stop: the requests running finish, no other starts.
    pub fn cancel(&self, id: &str) -> Result<BatchObject, ApiError> {
        let batch = self.update(id, |b| {
            if b.status.is_running() {
                b.status = BatchStatus::Cancelling;
                b.cancelling_at = Some(now());
            }
        })?;
        if let Some(flag) = lock(&self.running).get(id) {
            flag.store(true, Ordering::Release);
        }
        Ok(batch)
    }

    /// Applies `change` to batch `id`'s object and stores it.
    fn update(&self, id: &str, change: impl FnOnce(&mut BatchObject)) -> Result<BatchObject, ApiError> {
        let _one_at_a_time = lock(&self.objects);
        let mut batch = self.store.batch(id).ok_or(ApiError::NotFound)?;
        change(&mut batch);
        self.store.put_batch(&batch).map_err(storage)?;
        Ok(batch)
    }

    /// Runs the requests of batch `id` not yet in its output or error file.
    async fn run(self: Arc<Self>, state: AppState, id: String, cancel: Arc<AtomicBool>) {
        let result = self.run_items(&state, &id, &cancel).await;
        lock(&self.running).remove(&id);
        let end = match result {
            Ok(()) if cancel.load(Ordering::Acquire) => BatchStatus::Cancelled,
            Ok(()) => BatchStatus::Completed,
            Err(e) => {
                log::warn!("batch {id} failed: {}", json!(e.body()));
                let message = e.body()["error"]["message"].clone();
                let _ = self
                    .update(&id, |b| b.errors = Some(json!({ "object": "list", "data": [{ "message": message }] })));
                BatchStatus::Failed
            }
        };
        if let Err(e) = self.end(&id, end) {
            log::warn!("ending batch {id}: {}", e.body());
        }
    }

    async fn run_items(&self, state: &AppState, id: &str, cancel: &AtomicBool) -> Result<(), ApiError> {
        let batch = self.store.batch(id).ok_or(ApiError::NotFound)?;
        let items = self.items(&batch.input_file_id)?;
        let done = self.recount(id)?;
        let todo: Vec<Item> = items.into_iter().filter(|i| !done.contains(&i.custom_id)).collect();
        let width = state.runtime.batch().max(1);
        let mut running = tokio::task::JoinSet::new();
        for item in todo {
            while running.len() >= width {
                self.record(id, running.join_next().await)?;
            }
            if cancel.load(Ordering::Acquire) {
                break;
            }
            let (state, seed) = (state.clone(), seed_of(id, &item.custom_id));
            running.spawn(async move {
                let (status, body) = run_request(&state, &item.body, seed).await;
                (item.custom_id, status, body)
            });
        }
        while let Some(joined) = running.join_next().await {
            self.record(id, Some(joined))?;
        }
        Ok(())
    }

    /// The requests of batch `id` already answered, with its counts set to what its output
    /// and error files hold. Those files are the journal: a line appended just before a
    /// kill, whose count was not yet stored, is counted here instead of never (found by
    /// the kill test: a resumed batch ended `completed` with 11 of 12 counted).
    fn recount(&self, id: &str) -> Result<std::collections::HashSet<String>, ApiError> {
        let ok = self.store.finished_ids(&output_id(id)).map_err(storage)?;
        let failed = self.store.finished_ids(&error_id(id)).map_err(storage)?;
        self.update(id, |b| {
            b.request_counts.completed = ok.len() as u64;
            b.request_counts.failed = failed.len() as u64;
        })?;
        Ok(ok.into_iter().chain(failed).collect())
    }

    /// Appends one finished request's line and counts it.
    fn record(
        &self,
        id: &str,
        joined: Option<Result<(String, u16, Value), tokio::task::JoinError>>,
    ) -> Result<(), ApiError> {
        let Some(joined) = joined else { return Ok(()) };
        let (custom_id, status, body) =
            joined.map_err(|e| ApiError::Engine { message: format!("a batch request stopped: {e}") })?;
        let ok = (200..300).contains(&status);
        let line = json!({
            "id": store::new_id("batch_req_"),
            "custom_id": custom_id,
            "response": { "status_code": status, "request_id": body["id"].clone(), "body": body },
            "error": null,
        });
        let file = if ok { output_id(id) } else { error_id(id) };
        self.store.append_line(&file, line.to_string().as_bytes()).map_err(storage)?;
        self.update(id, |b| {
            if ok {
                b.request_counts.completed += 1;
            } else {
                b.request_counts.failed += 1;
            }
        })?;
        Ok(())
    }

    /// Ends batch `id` as `status`: names the output and error files it wrote as files of the
    /// Files API, then stores the status and those files' ids in one update, so a client
    /// never sees an ended batch without its result files (found in CI: a client polling
    /// between two separate updates read `completed` with `output_file_id: null`).
    fn end(&self, id: &str, status: BatchStatus) -> Result<(), ApiError> {
        let written = |file: &str| self.store.file_path(file).is_some_and(|p| p.exists());
        let (out, err) = (output_id(id), error_id(id));
        for file in [&out, &err].into_iter().filter(|f| written(f)) {
            let object = FileObject {
                id: file.clone(),
                object: "file".into(),
                bytes: self.store.size(file),
                created_at: now(),
                filename: format!("{file}.jsonl"),
                purpose: "batch_output".into(),
            };
            self.store.put_file(&object).map_err(storage)?;
        }
        self.update(id, |b| {
            b.output_file_id = written(&out).then(|| out.clone());
            b.error_file_id = written(&err).then(|| err.clone());
            finish(b, status);
        })?;
        Ok(())
    }
}

/// Marks `b` ended as `status`, with its time.
fn finish(b: &mut BatchObject, status: BatchStatus) {
    let t = Some(now());
    b.status = status;
    match status {
        BatchStatus::Completed => {
            b.finalizing_at = t;
            b.completed_at = t;
        }
        BatchStatus::Cancelled => b.cancelled_at = t,
        BatchStatus::Failed => b.failed_at = t,
        BatchStatus::Expired => b.expired_at = t,
        BatchStatus::Validating | BatchStatus::InProgress | BatchStatus::Finalizing | BatchStatus::Cancelling => {}
    }
}

fn output_id(batch: &str) -> String {
    format!("file-{batch}-output")
}

fn error_id(batch: &str) -> String {
    format!("file-{batch}-errors")
}

/// The seed of a request that names none: from its batch and `custom_id` (FNV-1a), so a
/// resumed request samples as it would have.
fn seed_of(batch: &str, custom_id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in batch.bytes().chain([0]).chain(custom_id.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One request answered as a live `POST /v1/chat/completions` would be (never streamed),
/// retried while the queue is full: its status and JSON body.
async fn run_request(state: &AppState, body: &Value, seed: u64) -> (u16, Value) {
    let mut body = body.clone();
    if let Some(o) = body.as_object_mut() {
        o.insert("stream".into(), Value::Bool(false));
        o.entry("seed").or_insert(json!(seed));
    }
    let bytes = body.to_string().into_bytes();
    loop {
        match crate::prepare::prepare_bytes(state, &bytes) {
            Err(ApiError::QueueFull { .. }) => tokio::time::sleep(QUEUE_FULL_WAIT).await,
            Err(e) => return (e.status().as_u16(), e.body()),
            Ok((generation, _)) => {
                let response = generation.collect().await;
                let status = response.status().as_u16();
                let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap_or_default();
                return (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kill between a request's line and its count: the line is in the output file, the
    /// stored count one short. The resume counts what the files hold.
    #[test]
    fn a_line_written_before_a_kill_is_counted_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let api = BatchApi::open(dir.path()).unwrap();
        let mut batch = BatchObject::in_progress(
            "batch_kill".into(),
            "file-in".into(),
            (BATCH_ENDPOINT.into(), "24h".into()),
            3,
            0,
        );
        batch.request_counts.completed = 1;
        api.store.put_batch(&batch).unwrap();
        for (file, custom_id) in
            [(output_id("batch_kill"), "a"), (output_id("batch_kill"), "b"), (error_id("batch_kill"), "c")]
        {
            api.store.append_line(&file, json!({ "custom_id": custom_id }).to_string().as_bytes()).unwrap();
        }
        let done = api.recount("batch_kill").unwrap();
        assert_eq!(done.len(), 3);
        let counts = api.store.batch("batch_kill").unwrap().request_counts;
        assert_eq!((counts.completed, counts.failed), (2, 1), "the line written before the kill was not counted");
    }

    /// A client polling while a batch ends never reads it ended without its output file
    /// (the stored object changes once, status and file ids together).
    #[test]
    fn an_ended_batch_is_never_seen_without_its_output_file() {
        let dir = tempfile::tempdir().unwrap();
        let api = BatchApi::open(dir.path()).unwrap();
        let endpoint = (BATCH_ENDPOINT.into(), "24h".into());
        let batch = BatchObject::in_progress("batch_end".into(), "file-in".into(), endpoint, 1, 0);
        api.store.append_line(&output_id("batch_end"), br#"{"custom_id":"a"}"#).unwrap();
        let stop = AtomicBool::new(false);
        let seen_bare = std::thread::scope(|scope| {
            let poller = scope.spawn(|| {
                let mut bare = 0;
                while !stop.load(Ordering::Acquire) {
                    let b = api.store.batch("batch_end");
                    bare += usize::from(b.is_some_and(|b| !b.status.is_running() && b.output_file_id.is_none()));
                }
                bare
            });
            for _ in 0..20 {
                api.store.put_batch(&batch).unwrap();
                api.end("batch_end", BatchStatus::Completed).unwrap();
            }
            stop.store(true, Ordering::Release);
            poller.join().unwrap()
        });
        assert_eq!(seen_bare, 0, "a poller read the batch completed with no output_file_id");
        let ended = api.store.batch("batch_end").unwrap();
        assert_eq!(ended.output_file_id.as_deref(), Some(output_id("batch_end").as_str()));
    }

    #[test]
    fn a_seed_depends_on_the_batch_and_the_request_only() {
        assert_eq!(seed_of("batch_1", "a"), seed_of("batch_1", "a"));
        assert_ne!(seed_of("batch_1", "a"), seed_of("batch_1", "b"));
        assert_ne!(seed_of("batch_1", "a"), seed_of("batch_2", "a"));
        assert_ne!(seed_of("ab", "c"), seed_of("a", "bc"));
    }
}
