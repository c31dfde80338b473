//! The local API's cost per token over the runtime alone (issue 17's "per-token overhead
//! of the server against the runtime alone"): the same greedy completion of N tokens on
//! the tiny fixture model, queued on one runtime directly and sent through the server on
//! 127.0.0.1 (non-streaming and SSE), alternating for R rounds. Prints the median wall
//! time per token of each path and the differences.
//!
//! Run: `cargo run --release -p k3-server --example overhead -- [TOKENS] [ROUNDS]`

use k3_plan::stats::median;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use k3_engine::{DecodeMode, EngineOptions, GenerateParams, Sampling};
use k3_runtime::{ChatTurn, CompletionTurn, JobId, ModelRequest, ReplyHandler, ReplyOutcome, ReplyProgress, Runtime};
use k3_server::{Server, ServerConfig};
use k3_tests::http::post_json;

const PROMPT: &str = "Once upon a time";

/// Queues the completion on the runtime and reports the tokens it generated.
struct Direct {
    tokens: usize,
    done: mpsc::Sender<usize>,
}

impl ReplyHandler for Direct {
    fn queued(&mut self, _: JobId, _: usize) {}
    fn begin(&mut self, _: JobId) -> Option<ChatTurn> {
        None
    }
    fn begin_completion(&mut self, _: JobId) -> Option<CompletionTurn> {
        let params = GenerateParams {
            max_new_tokens: self.tokens,
            sampling: Sampling::Greedy,
            stop_ids: Vec::new(),
            mode: DecodeMode::Incremental,
        };
        Some(CompletionTurn { prompt: PROMPT.into(), params })
    }
    fn progress(&mut self, _: JobId, _: ReplyProgress) {}
    fn end(&mut self, _: JobId, outcome: ReplyOutcome) {
        let n = match outcome {
            ReplyOutcome::Finished(f) => f.generated.len(),
            ReplyOutcome::Failed { .. } | ReplyOutcome::Refused => 0,
        };
        let _ = self.done.send(n);
    }
}

fn direct(runtime: &Runtime, tokens: usize) -> (f64, usize) {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    runtime.complete(Box::new(Direct { tokens, done: tx }));
    let n = rx.recv().unwrap_or(0);
    (start.elapsed().as_secs_f64(), n)
}

fn through_server(
    addr: std::net::SocketAddr,
    model: &str,
    tokens: usize,
    stream: bool,
) -> Result<(f64, usize), String> {
    let body =
        format!(r#"{{"model":"{model}","prompt":"{PROMPT}","max_tokens":{tokens},"temperature":0,"stream":{stream}}}"#);
    let start = Instant::now();
    let answer = post_json(addr, "/v1/completions", &body);
    let seconds = start.elapsed().as_secs_f64();
    if answer.status != 200 {
        return Err(format!("the server answered {}: {}", answer.status, String::from_utf8_lossy(&answer.body)));
    }
    let usage = if stream {
        // The last chunk before [DONE] carries the usage.
        let data = answer.sse_data();
        let last = data.iter().rev().find(|d| d.as_str() != "[DONE]").cloned().unwrap_or_default();
        serde_json::from_str::<serde_json::Value>(&last).unwrap_or_default()["usage"].clone()
    } else {
        answer.json()["usage"].clone()
    };
    let n = usage["completion_tokens"].as_u64().unwrap_or(0) as usize;
    Ok((seconds, n))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let tokens: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(512);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    let runtime = Arc::new(Runtime::start()?);
    let options = EngineOptions::resident(k3_tests::fixture("tiny-mxfp4"), Some(1));
    let summary = runtime.open_model(ModelRequest { options, is_demo: false }).map_err(|e| e.to_string())?;
    let model = k3_server::registry::model_id(&summary.name);
    let server = Server::start(runtime.clone(), ServerConfig { port: 0, ..ServerConfig::default() })?;
    let addr = server.local_addr();
    direct(&runtime, tokens); // warm-up
    let (mut alone, mut whole, mut sse) = (Vec::new(), Vec::new(), Vec::new());
    let mut counts = Vec::new();
    for _ in 0..rounds {
        let (s, n) = direct(&runtime, tokens);
        alone.push(s / n as f64);
        let (s, m) = through_server(addr, &model, tokens, false)?;
        whole.push(s / m as f64);
        let (s, k) = through_server(addr, &model, tokens, true)?;
        sse.push(s / k as f64);
        counts.push((n, m, k));
    }
    let (d, w, e) = (median(&alone), median(&whole), median(&sse));
    println!("{tokens} tokens × {rounds} rounds on tiny-mxfp4, 1 engine thread; tokens (alone, whole, SSE) per round: {counts:?}");
    println!("runtime alone  {:>8.1} µs/token", d * 1e6);
    println!("server, whole  {:>8.1} µs/token  (+{:.1} µs, {:.3}×)", w * 1e6, (w - d) * 1e6, w / d);
    println!("server, SSE    {:>8.1} µs/token  (+{:.1} µs, {:.3}×)", e * 1e6, (e - d) * 1e6, e / d);
    Ok(())
}
