//! The runtime over the real demo checkpoint: the metrics probe answers while a reply is
//! running, replies queue FIFO and cancel reaches a queued one, a replan between turns
//! keeps the engine state of the conversation, and a bad folder leaves the model in use.

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use k3_engine::chat::{ChatMessage, ChatMode, Role};
use k3_engine::{BudgetChoice, DecodeMode, EngineOptions, FinishReason, GenerateParams, MemoryOptions, Sampling};
use k3_plan::Budget;
use k3_runtime::{
    Activity, ChatTurn, JobId, ModelRequest, ReplyHandler, ReplyOutcome, ReplyProgress, Runtime, RuntimeError,
};

/// The random-weight fixture (the figures below are its numbers).
const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/tiny-mxfp4");
/// The trained demo: its replies are text without stray added tokens, so a turn renders
/// back to exactly what was generated and the next one reuses the engine state (a reply
/// with a reserved id in it renders differently and is replayed: correct, not reused).
const TRAINED_DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/k3-demo");

/// What a job reported, in order.
#[derive(Debug)]
enum Seen {
    Queued(usize),
    Began,
    Text,
    End(ReplyOutcome),
}

struct Recorder {
    turn: Option<ChatTurn>,
    tx: Sender<Seen>,
}

impl ReplyHandler for Recorder {
    fn queued(&mut self, _job: JobId, position: usize) {
        let _ = self.tx.send(Seen::Queued(position));
    }
    fn begin(&mut self, _job: JobId) -> Option<ChatTurn> {
        let _ = self.tx.send(Seen::Began);
        self.turn.take()
    }
    fn progress(&mut self, _job: JobId, progress: ReplyProgress) {
        if let ReplyProgress::Text { .. } = progress {
            let _ = self.tx.send(Seen::Text);
        }
    }
    fn end(&mut self, _job: JobId, outcome: ReplyOutcome) {
        let _ = self.tx.send(Seen::End(outcome));
    }
}

fn demo(budget: Option<BudgetChoice>) -> ModelRequest {
    model(DEMO, budget)
}

fn model(dir: &str, budget: Option<BudgetChoice>) -> ModelRequest {
    let memory = MemoryOptions { budget, ..MemoryOptions::resident() };
    ModelRequest { options: EngineOptions { model_dir: dir.into(), threads: Some(1), memory }, is_demo: true }
}

fn turn(history: Vec<ChatMessage>, text: &str, max_new_tokens: usize) -> ChatTurn {
    ChatTurn {
        conversation: k3_runtime::ConversationKey::History(7),
        system: None,
        mode: ChatMode::Instruct,
        history,
        input: k3_engine::chat::TurnInput::user(text),
        params: GenerateParams {
            max_new_tokens,
            sampling: Sampling::Greedy,
            stop_ids: vec![],
            mode: DecodeMode::Incremental,
        },
        state_file: None,
    }
}

fn submit(rt: &Runtime, t: ChatTurn) -> (JobId, Receiver<Seen>) {
    let (tx, rx) = mpsc::channel();
    (rt.reply(Box::new(Recorder { turn: Some(t), tx })), rx)
}

fn outcome(rx: &Receiver<Seen>) -> ReplyOutcome {
    loop {
        if let Seen::End(o) = rx.recv_timeout(Duration::from_secs(120)).expect("the job ends") {
            return o;
        }
    }
}

fn finished(rx: &Receiver<Seen>) -> k3_runtime::FinishedReply {
    match outcome(rx) {
        ReplyOutcome::Finished(f) => *f,
        other => panic!("expected a finished reply, got {other:?}"),
    }
}

#[test]
fn the_probe_answers_while_a_reply_runs() {
    let rt = Runtime::start().unwrap();
    rt.open_model(demo(Some(BudgetChoice::Auto))).unwrap();
    let probe = rt.probe();
    // Greedy, the demo model answers this with over a thousand tokens: long enough to read
    // the probe many times while it runs.
    let (job, rx) = submit(&rt, turn(vec![], "Say something long", 3000));
    let mut texts = 0;
    while texts < 10 {
        if let Seen::Text = rx.recv_timeout(Duration::from_secs(60)).unwrap() {
            texts += 1;
        }
    }
    let mut readings = Vec::new();
    for _ in 0..5 {
        let asked = Instant::now();
        let s = probe.snapshot();
        readings.push((asked.elapsed(), s));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(rt.cancel(job));
    let _ = outcome(&rx);
    let mut last_tokens = 0;
    for (took, s) in &readings {
        assert!(*took < Duration::from_millis(50), "a reading never waits behind the reply: {took:?}");
        match s.activity {
            Activity::Generating { job: j, tokens, .. } => {
                assert_eq!(j, job);
                assert!(tokens >= last_tokens && tokens >= 10, "{tokens} tokens");
                last_tokens = tokens;
            }
            ref other => panic!("expected generating, got {other:?}"),
        }
        let stream = s.stream.expect("the engine's counters");
        assert!(stream.expert_requests > 0, "live counters: {stream:?}");
        assert!(s.model.as_ref().is_some_and(|m| m.plan.is_some()));
        assert!(s.rss_bytes.is_some_and(|r| r > 0));
    }
    assert!(matches!(probe.snapshot().activity, Activity::Idle));
}

#[test]
fn a_replan_between_turns_keeps_the_conversation_state_and_its_tokens() {
    // The same two turns on a runtime that never replans…
    let run = |replan: bool| {
        let rt = Runtime::start().unwrap();
        let all = Budget { trunk_bytes: u64::MAX, cache_bytes: u64::MAX };
        rt.open_model(model(TRAINED_DEMO, Some(BudgetChoice::Fixed(all)))).unwrap();
        let (_, rx) = submit(&rt, turn(vec![], "Hello there", 8));
        let first = finished(&rx);
        if replan {
            // …and on one that shrinks its expert cache to the minimum in between.
            let small = BudgetChoice::Fixed(Budget { trunk_bytes: u64::MAX, cache_bytes: 65_000 });
            let summary = rt.replan(Some(small), Box::new(|_, _| {})).unwrap();
            let slots = summary.plan.as_ref().unwrap().cache_slots;
            assert!(slots < 20, "the cache shrank to {slots} slots");
        }
        let history = vec![
            ChatMessage::new(Role::User, "Hello there"),
            ChatMessage::assistant(first.text.clone(), first.think.clone(), Vec::new()),
        ];
        let (_, rx) = submit(&rt, turn(history, "And then?", 8));
        (first, finished(&rx))
    };
    let (a1, a2) = run(false);
    let (b1, b2) = run(true);
    assert_eq!((a1.text, a2.text.clone()), (b1.text, b2.text), "a replan changes no token");
    assert!(b2.reused_history, "the replan kept the engine state: only the new turn was prefilled");
    assert!(b2.figures.prefilled_tokens < b2.figures.prompt_tokens);
    assert!(b2.figures.io_share.is_some());
}

#[test]
fn jobs_queue_in_order_and_a_queued_job_can_be_cancelled() {
    let rt = Runtime::start().unwrap();
    rt.open_model(demo(Some(BudgetChoice::Auto))).unwrap();
    let (first, rx1) = submit(&rt, turn(vec![], "Say something long", 3000));
    let (second, rx2) = submit(&rt, turn(vec![], "Hi", 4));
    assert!(matches!(rx1.recv().unwrap(), Seen::Queued(0)));
    assert!(matches!(rx2.recv().unwrap(), Seen::Queued(1)));
    assert!(rt.cancel(second), "a queued job is cancellable");
    assert!(rt.cancel(first));
    assert!(matches!(outcome(&rx1), ReplyOutcome::Finished(f) if f.finish == FinishReason::Cancelled));
    match outcome(&rx2) {
        ReplyOutcome::Finished(f) => assert_eq!((f.finish, f.figures.output_tokens), (FinishReason::Cancelled, 0)),
        other => panic!("{other:?}"),
    }
    assert!(!rt.cancel(first) && !rt.cancel(second), "ended jobs are gone");
}

#[test]
fn a_bad_folder_is_refused_and_the_model_in_use_stays() {
    let rt = Runtime::start().unwrap();
    let (_, rx) = submit(&rt, turn(vec![], "anyone?", 2));
    match outcome(&rx) {
        ReplyOutcome::Failed { error, partial_text: None } => assert!(matches!(*error, RuntimeError::NoModel)),
        other => panic!("no model yet: {other:?}"),
    }
    rt.open_model(demo(None)).unwrap();
    let mut bad = demo(None);
    bad.options.model_dir = "/nonexistent/k3".into();
    let e = rt.open_model(bad).unwrap_err();
    assert!(matches!(*e, RuntimeError::NotAFolder { .. }) && e.to_string().contains("/nonexistent/k3"), "{e}");
    let s = rt.probe().snapshot();
    assert!(s.model.is_some_and(|m| m.is_demo), "the demo stays loaded");
    assert_eq!(s.model_error.map(|f| f.path), Some("/nonexistent/k3".into()));
    let (_, rx) = submit(&rt, turn(vec![], "still there?", 3));
    assert_eq!(finished(&rx).figures.output_tokens, 3);
}

#[test]
fn the_timeline_has_one_sample_per_token_and_its_numbers_add_up_to_the_replys() {
    let rt = Runtime::start().unwrap();
    // A cache far smaller than the experts a token uses: every token reads experts.
    let small = BudgetChoice::Fixed(Budget { trunk_bytes: u64::MAX, cache_bytes: 60_000 });
    rt.open_model(demo(Some(small))).unwrap();
    let probe = rt.probe();
    let before = probe.snapshot().last_token_seq;
    let (job, rx) = submit(&rt, turn(vec![], "Count the stars", 12));
    let reply = finished(&rx);
    let samples = probe.tokens_since(before);
    assert_eq!(samples.len(), reply.figures.output_tokens, "one sample per generated token");
    assert_eq!(probe.snapshot().last_token_seq, before + samples.len() as u64);
    let mut summed = k3_engine::StreamMetrics::default();
    for (i, s) in samples.iter().enumerate() {
        assert_eq!((s.job, s.index, s.seq), (job, i, before + 1 + i as u64));
        assert!(s.metrics.io_wait() <= s.wall, "waits are measured inside the token's wall time: {s:?}");
        assert_eq!(s.compute() + s.metrics.io_wait(), s.wall, "compute = wall − wait");
        summed.accumulate(&s.metrics);
    }
    assert!(summed.expert_bytes_read > 0, "the small cache read experts: {summed:?}");
    assert_eq!(summed, reply.figures.metrics, "the samples add up to the reply's totals");
    let wall: Duration = samples.iter().map(|s| s.wall).sum();
    assert!(wall <= reply.figures.total, "{wall:?} of {:?}", reply.figures.total);
    assert!(probe.tokens_since(before + samples.len() as u64).is_empty(), "nothing after the newest");
    let now = probe.snapshot();
    let f = &reply.figures;
    assert_eq!(now.positions_in_use, f.prompt_tokens + f.output_tokens, "the conversation's KV positions in use");
    let plan = now.model.and_then(|m| m.plan).expect("a plan");
    let used = now.expert_slots_used.expect("the slot gauge");
    assert!(used > 0 && used <= plan.cache_slots, "{used} of {} slots in use", plan.cache_slots);
}
