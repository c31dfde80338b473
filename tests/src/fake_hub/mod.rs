//! A fake Hugging Face hub on 127.0.0.1 for the download tests (RELIABILITY §4): a real
//! HTTP server with the revision, tree and resolve endpoints, a 302 from `resolve` to a
//! second "CDN" listener for LFS files, Range and the `X-Linked-*` headers, and a script
//! per file of lies to tell (DL-04…16) on its next open-ended body requests.
//!
//! Owns: [`FakeHub`], [`HubRepo`], [`HubFile`], [`Lie`], [`RequestRecord`].
//! Must not: apply a lie to a bounded range (a shard-header read) — lies are for bodies.

mod files;
mod routes;
mod types;

pub use files::{checkpoint_files, noise};
use types::State;
pub use types::{HubFile, HubRepo, Lie, RequestRecord};

use std::sync::Arc;

/// The running server; stops when dropped.
pub struct FakeHub {
    pub endpoint: String,
    pub cdn: String,
    state: Arc<State>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeHub {
    /// Serves `repos`; `main` is the commit the `main` revision resolves to.
    pub fn start(repos: Vec<HubRepo>, main: &str) -> FakeHub {
        let state = Arc::new(State::default());
        *state.repos.lock().unwrap() = repos;
        *state.main.lock().unwrap() = main.into();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let thread_state = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                let hub = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let cdn = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let (hub_addr, cdn_addr) = (hub.local_addr().unwrap(), cdn.local_addr().unwrap());
                *thread_state.cdn_base.lock().unwrap() = format!("http://{cdn_addr}");
                *thread_state.hub_base.lock().unwrap() = format!("http://{hub_addr}");
                addr_tx.send((hub_addr, cdn_addr)).unwrap();
                let hub_app = routes::hub_router(thread_state.clone());
                let cdn_app = routes::cdn_router(thread_state.clone());
                let hub_srv = axum::serve(hub, hub_app);
                let cdn_srv = axum::serve(cdn, cdn_app);
                tokio::select! {
                    _ = hub_srv => {}
                    _ = cdn_srv => {}
                    _ = shutdown_rx => {}
                }
            });
            rt.shutdown_background();
        });
        let (hub_addr, cdn_addr) = addr_rx.recv().unwrap();
        FakeHub {
            endpoint: format!("http://{hub_addr}"),
            cdn: format!("http://{cdn_addr}"),
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// Lies to tell on the next open-ended body requests for `path`, in order.
    pub fn script(&self, path: &str, lies: Vec<Lie>) {
        self.state.script.lock().unwrap().entry(path.into()).or_default().extend(lies);
    }

    /// Lies still unused for `path`.
    pub fn pending_lies(&self, path: &str) -> usize {
        self.state.script.lock().unwrap().get(path).map_or(0, |q| q.len())
    }

    pub fn set_main(&self, commit: &str) {
        *self.state.main.lock().unwrap() = commit.into();
    }

    /// Serve every body at most this many bytes per second per request.
    pub fn set_rate(&self, bytes_per_s: Option<u64>) {
        *self.state.rate.lock().unwrap() = bytes_per_s;
    }

    /// Extra raw entries appended to every tree listing (for DL-22).
    pub fn add_tree_entry(&self, entry: serde_json::Value) {
        self.state.extra_tree.lock().unwrap().push(entry);
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.state.log.lock().unwrap().clone()
    }

    pub fn clear_requests(&self) {
        self.state.log.lock().unwrap().clear();
    }
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
