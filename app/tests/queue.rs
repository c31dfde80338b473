//! The queue over the real trained demo checkpoint: each item gets the tokens a new chat of
//! its prompt gets; a hundred prompts survive a restart with none run twice; pause puts the
//! running item back and resume gives it the same tokens; cancel keeps what it wrote; with
//! no model the queue stops and says why.

use std::path::Path;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k3_app::queue::{
    ImportFormat, ItemDefaults, ItemSettings, NewItem, Notify, Queue, QueueItem, QueueNotice, QueueView, RunView,
    Status,
};
use k3_engine::{EngineOptions, MemoryOptions};
use k3_runtime::{ChatTurn, JobId, ModelRequest, ReplyHandler, ReplyOutcome, ReplyProgress, Runtime};

const TRAINED_DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/k3-demo");

fn runtime_with_demo() -> Arc<Runtime> {
    let rt = Runtime::start().expect("runtime");
    let options = EngineOptions { model_dir: TRAINED_DEMO.into(), threads: Some(1), memory: MemoryOptions::resident() };
    rt.open_model(ModelRequest { options, is_demo: true }).expect("the demo opens");
    Arc::new(rt)
}

fn defaults(temperature: f32, max_tokens: u32) -> ItemDefaults {
    ItemDefaults { settings: ItemSettings { temperature, top_p: 0.9, max_tokens, thinking: false }, system: None }
}

fn notices() -> (Notify, Arc<Mutex<Vec<QueueNotice>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    (Box::new(move |n| sink.lock().unwrap().push(n)), seen)
}

fn quiet() -> Notify {
    Box::new(|_| {})
}

/// Polls the queue's view until `done` holds (two minutes at most).
fn wait_for(queue: &Queue, what: &str, done: impl Fn(&QueueView) -> bool) -> QueueView {
    let start = Instant::now();
    loop {
        let view = queue.view();
        if done(&view) {
            return view;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "timed out waiting for {what}: {:?}", view.counts);
        std::thread::sleep(Duration::from_millis(5));
    }
}

struct Direct {
    turn: Option<ChatTurn>,
    tx: Sender<String>,
}

impl ReplyHandler for Direct {
    fn queued(&mut self, _job: JobId, _position: usize) {}
    fn begin(&mut self, _job: JobId) -> Option<ChatTurn> {
        self.turn.take()
    }
    fn progress(&mut self, _job: JobId, _progress: ReplyProgress) {}
    fn end(&mut self, _job: JobId, outcome: ReplyOutcome) {
        let text = match outcome {
            ReplyOutcome::Finished(f) => f.text,
            other => panic!("the direct reply ended as {other:?}"),
        };
        let _ = self.tx.send(text);
    }
}

/// What a new chat answering `item` alone gets (the same turn, straight on the runtime).
fn alone(rt: &Runtime, item: &QueueItem) -> String {
    let (tx, rx) = mpsc::channel();
    rt.reply(Box::new(Direct { turn: Some(k3_app::queue::turn(item)), tx }));
    rx.recv_timeout(Duration::from_secs(120)).expect("the direct reply ends")
}

fn finished_lines(dir: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("queue.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "finish")
        .map(|v| v["id"].as_u64().unwrap())
        .collect()
}

#[test]
fn each_item_gets_the_tokens_a_new_chat_of_its_prompt_gets() {
    let rt = runtime_with_demo();
    let dir = tempfile::tempdir().unwrap();
    let (notice, seen) = notices();
    let queue = Queue::open(dir.path(), rt.clone(), notice).unwrap();
    let typed = k3_app::queue::import::parse("Say something long\nWhat is a cat?\n", ImportFormat::Lines).unwrap();
    queue.add(typed, &defaults(0.0, 12)).unwrap();
    queue.add(vec![NewItem::prompt("Tell me a story")], &defaults(0.8, 12)).unwrap();
    let view = wait_for(&queue, "three answers", |v| v.counts.done == 3);
    assert!(view.eta_seconds.is_some_and(|s| s == 0.0), "nothing left: {:?}", view.eta_seconds);
    for item in &view.items {
        let RunView::Finished(outcome) = &item.run else { panic!("{item:?}") };
        assert_eq!(outcome.status, Status::Done);
        assert!(outcome.output_tokens > 0 && outcome.seconds > 0.0, "{outcome:?}");
        assert_eq!(outcome.text, alone(&rt, &item.item), "item {} differs from a chat of its prompt", item.item.label);
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first(), Some(&QueueNotice::Busy), "{seen:?}");
    match seen.last() {
        Some(QueueNotice::Settled(c)) => {
            assert_eq!((c.done, c.waiting, c.paused, c.halted.clone()), (3, 0, false, None))
        }
        other => panic!("the last notice is {other:?}"),
    }
}

#[test]
fn a_hundred_prompts_survive_a_restart_and_none_runs_twice() {
    let rt = runtime_with_demo();
    let dir = tempfile::tempdir().unwrap();
    let prompts: Vec<NewItem> = (0..100).map(|i| NewItem::prompt(format!("Question {i}: what comes next?"))).collect();
    let before = {
        let queue = Queue::open(dir.path(), rt.clone(), quiet()).unwrap();
        queue.add(prompts, &defaults(0.7, 3)).unwrap();
        wait_for(&queue, "some answers", |v| v.counts.done >= 20)
        // Dropped here mid-run: the running item stops and waits for the next open.
    };
    let answered_before: Vec<_> = before
        .items
        .iter()
        .filter_map(|i| match &i.run {
            RunView::Finished(o) => Some((i.item.id, o.clone())),
            RunView::Waiting | RunView::Running { .. } => None,
        })
        .collect();
    assert!(answered_before.len() < 100, "the restart came before the end");
    let queue = Queue::open(dir.path(), rt.clone(), quiet()).unwrap();
    let after = wait_for(&queue, "all hundred", |v| v.counts.done == 100);
    for (id, outcome) in &answered_before {
        let now = after.items.iter().find(|i| i.item.id == *id).unwrap();
        assert_eq!(now.run, RunView::Finished(outcome.clone()), "item {id} changed after the restart");
    }
    let mut lines = finished_lines(dir.path());
    lines.sort_unstable();
    assert_eq!(lines, (1..=100).collect::<Vec<u64>>(), "each item finished exactly once");
    // Seeded sampling: the first item answered after the restart gives what it would alone.
    let resumed = after.items.iter().find(|i| !answered_before.iter().any(|(id, _)| *id == i.item.id)).unwrap();
    let RunView::Finished(outcome) = &resumed.run else { unreachable!() };
    assert_eq!(outcome.text, alone(&rt, &resumed.item));
}

#[test]
fn pause_puts_the_running_item_back_and_cancel_keeps_what_it_wrote() {
    let rt = runtime_with_demo();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::open(dir.path(), rt.clone(), quiet()).unwrap();
    let ids = queue.add(vec![NewItem::prompt("Say something long"); 2], &defaults(0.0, 160)).unwrap();
    let running = |v: &QueueView| matches!(v.items[0].run, RunView::Running { tokens, .. } if tokens >= 3);
    wait_for(&queue, "the first item under way", running);
    queue.pause().unwrap();
    let paused = wait_for(&queue, "nothing running", |v| v.counts.running == 0);
    assert_eq!((paused.items[0].run.clone(), paused.counts.paused), (RunView::Waiting, true));
    assert!(finished_lines(dir.path()).is_empty(), "a paused item is not finished");
    queue.resume().unwrap();
    wait_for(
        &queue,
        "the second under way",
        |v| matches!(v.items[1].run, RunView::Running { tokens, .. } if tokens >= 3),
    );
    queue.cancel(ids[1]).unwrap();
    let view = wait_for(&queue, "the cancel", |v| matches!(v.items[1].run, RunView::Finished(_)));
    let (RunView::Finished(first), RunView::Finished(second)) = (&view.items[0].run, &view.items[1].run) else {
        unreachable!()
    };
    let whole = alone(&rt, &view.items[0].item);
    assert_eq!((first.status, &first.text), (Status::Done, &whole), "restarted after the pause: the same tokens");
    assert_eq!(second.status, Status::Cancelled);
    assert!(!second.text.is_empty() && whole.starts_with(&second.text), "{second:?}");
    let csv = queue.export(k3_app::queue::ExportFormat::Csv).content;
    assert!(csv.contains("cancelled") && csv.lines().count() >= 3, "{csv}");
    assert_eq!(queue.clear_finished().unwrap(), 2);
    assert!(queue.view().items.is_empty());
}

#[test]
fn with_no_model_the_queue_stops_says_why_and_keeps_the_item() {
    let rt = Arc::new(Runtime::start().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let (notice, seen) = notices();
    let queue = Queue::open(dir.path(), rt, notice).unwrap();
    queue.add(vec![NewItem::prompt("hello")], &defaults(0.0, 4)).unwrap();
    let view = wait_for(&queue, "the stop", |v| v.counts.halted.is_some() && v.counts.running == 0);
    assert!(view.counts.halted.as_deref().unwrap().contains("no model"), "{:?}", view.counts.halted);
    assert_eq!(view.items[0].run, RunView::Waiting);
    let start = Instant::now();
    while !matches!(seen.lock().unwrap().last(), Some(QueueNotice::Settled(_))) {
        assert!(start.elapsed() < Duration::from_secs(10), "no settled notice: {:?}", seen.lock().unwrap());
        std::thread::sleep(Duration::from_millis(5));
    }
}
