//! The app's overnight queue: `k3_app::queue::Queue` kept in `<data>/queue` over the
//! runtime the chats use, the machine kept awake while it runs, and a desktop notification
//! when it finishes or stops.
//!
//! Owns: [`QueueHost`] — opening the queue (a journal it cannot read leaves the queue
//! unavailable with the file named, and the file untouched), the keep-awake hold, the
//! notification text.
//! Must not: fail the queue because the system refused to keep awake or to notify: both
//! are logged, and the refusal is shown in the view.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use k3_app::queue::{Counts, Queue, QueueNotice};
use k3_runtime::Runtime;

use crate::awake::{self, AwakeGuard};
use crate::ipc::error::{ErrorCode, IpcError};
use crate::ipc::queue::QueueState;

/// The queue's folder in the app's data folder.
pub const QUEUE_DIR: &str = "queue";

/// Posts a desktop notification (title, body); set once the window exists.
pub type Notifier = Box<dyn Fn(&str, &str) -> Result<(), String> + Send>;

/// The queue, or why it is unavailable, with its keep-awake hold and notifier.
pub struct QueueHost {
    queue: Result<Queue, String>,
    awake: Arc<Mutex<Awake>>,
    notifier: Arc<Mutex<Option<Notifier>>>,
}

#[derive(Default)]
struct Awake {
    guard: Option<AwakeGuard>,
    refused: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl QueueHost {
    /// Opens the queue in `data_dir`/queue; it resumes what the last run left unfinished.
    pub fn open(data_dir: &Path, runtime: Arc<Runtime>) -> QueueHost {
        let awake = Arc::new(Mutex::new(Awake::default()));
        let notifier: Arc<Mutex<Option<Notifier>>> = Arc::new(Mutex::new(None));
        let (a, n) = (awake.clone(), notifier.clone());
        let queue = Queue::open(&data_dir.join(QUEUE_DIR), runtime, Box::new(move |notice| on_notice(notice, &a, &n)))
            .map_err(|e| {
                log::warn!("the queue is unavailable: {e}");
                e.to_string()
            });
        QueueHost { queue, awake, notifier }
    }

    /// Where notifications go from now on.
    pub fn set_notifier(&self, notifier: Notifier) {
        *lock(&self.notifier) = Some(notifier);
    }

    /// The queue, or an error saying why it cannot be used.
    pub fn queue(&self) -> Result<&Queue, IpcError> {
        self.queue.as_ref().map_err(|why| IpcError::new(ErrorCode::History, format!("the queue is unavailable: {why}")))
    }

    /// The view the window shows.
    pub fn state(&self) -> QueueState {
        match &self.queue {
            Ok(q) => QueueState::of(&q.view(), lock(&self.awake).refused.clone()),
            Err(why) => QueueState::unavailable(why.clone()),
        }
    }
}

/// Busy: hold the machine awake. Settled: let it sleep, and say how the queue ended.
fn on_notice(notice: QueueNotice, awake: &Mutex<Awake>, notifier: &Mutex<Option<Notifier>>) {
    match notice {
        QueueNotice::Busy => {
            let (guard, held) = awake::hold("Answering the prompt queue");
            if let Err(why) = &held {
                log::info!("the system did not keep the machine awake for the queue: {why}");
            }
            *lock(awake) = Awake { guard: Some(guard), refused: held.err() };
        }
        QueueNotice::Settled(counts) => {
            lock(awake).guard = None;
            let Some((title, body)) = settled_message(&counts) else { return };
            if let Some(notify) = lock(notifier).as_ref() {
                if let Err(e) = notify(&title, &body) {
                    log::info!("no desktop notification for the queue: {e}");
                }
            }
        }
    }
}

/// The notification of a queue that stopped: finished, or halted by a failure (a pause,
/// the user's own act, has none).
fn settled_message(c: &Counts) -> Option<(String, String)> {
    if let Some(why) = &c.halted {
        return Some((
            "The queue stopped".into(),
            format!("{why}. {} prompts wait; press Resume to try again.", c.waiting),
        ));
    }
    if c.paused || c.waiting > 0 {
        return None;
    }
    let mut body = format!("{} answered", c.done);
    for (n, what) in [(c.failed, "failed"), (c.cancelled, "cancelled")] {
        if n > 0 {
            body.push_str(&format!(" · {n} {what}"));
        }
    }
    Some(("The queue is done".into(), body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_or_halted_queue_is_announced_and_a_pause_is_not() {
        let done = Counts { done: 9, failed: 1, ..Counts::default() };
        assert_eq!(settled_message(&done), Some(("The queue is done".into(), "9 answered · 1 failed".into())));
        let halted = Counts { waiting: 3, halted: Some("no model is loaded".into()), ..Counts::default() };
        let (title, body) = settled_message(&halted).unwrap();
        assert!(title.contains("stopped") && body.contains("no model") && body.contains("3 prompts wait"), "{body}");
        assert_eq!(settled_message(&Counts { waiting: 2, paused: true, ..Counts::default() }), None);
    }
}
