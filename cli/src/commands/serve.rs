//! `k3 serve`: the local OpenAI-compatible API over the runtime, the same host `k3 chat`
//! and the app use.
//!
//! Opens the model (memory flags as every command), starts `k3_server` and prints
//! `listening on http://ADDR` as the first line of stdout (the bound port with
//! `--port 0`), then one line per request on stderr. A non-loopback `--host` needs
//! `--api-key` and prints a warning; a taken port is an error naming the next free port.
//! Ctrl-C stops the server (running generations are cancelled; the conversations kept in RAM
//! are saved to --state-dir first). The engine states of the
//! `--kept-conversations` most recent conversations stay in RAM (the plan counts them) and
//! `--kept-on-disk` more in `--state-dir`, so an agent's next request prefills only its news.
//! Up to `--batch` requests decode together (continuous batching: a request joins at the next
//! step once a place is free); the plan holds a sequence state for each.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use k3_runtime::{KeptOnDisk, ModelRequest, Runtime};
use k3_server::{BatchDir, Exposure, RequestLog, Server, ServerConfig, ServerError};

use super::{engine_options, input_error, runtime_error, Failure};
use crate::args::ServeArgs;

/// `--host`: an IP address (brackets allowed) or `localhost`.
fn parse_host(host: &str) -> Result<IpAddr, Failure> {
    match host {
        "localhost" => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        "ip6-localhost" => Ok(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        _ => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| input_error(format!("--host {host}: give an IP address such as 127.0.0.1 or ::1"))),
    }
}

fn config(args: &ServeArgs) -> Result<ServerConfig, Failure> {
    // Probe finding: 0 silently became 1.
    if args.max_tokens == 0 {
        return Err(input_error("--max-tokens 0: give at least 1".into()));
    }
    if !(args.header_timeout.is_finite() && args.header_timeout > 0.0 && args.header_timeout <= 3600.0) {
        return Err(input_error("--header-timeout: give seconds in (0, 3600]".into()));
    }
    let log = |r: &RequestLog| {
        let peer = r.peer.map(|p| p.to_string()).unwrap_or_default();
        eprintln!("{peer} {} {} {} {:.3} s", r.method, r.path, r.status, r.duration.as_secs_f64());
    };
    Ok(ServerConfig {
        host: parse_host(&args.host)?,
        port: args.port,
        api_key: args.api_key.clone().filter(|k| !k.is_empty()),
        allowed_origins: args.allow_origins.clone(),
        queue_capacity: args.queue,
        header_read_timeout: Duration::from_secs_f64(args.header_timeout),
        default_max_tokens: args.max_tokens,
        require_tool_call: args.require_tool_call,
        request_log: Some(Arc::new(log)),
        batch_dir: batch_dir(args),
        ..ServerConfig::default()
    })
}

/// `--batch-dir`, else the user's data folder's `k3/batches` (none without one): where the
/// Batch API keeps its files and batches across restarts.
fn batch_dir(args: &ServeArgs) -> Option<BatchDir> {
    match &args.batch_dir {
        Some(path) => Some(BatchDir { path: path.clone(), required: true }),
        None => dirs::data_dir().map(|d| BatchDir { path: d.join("k3").join("batches"), required: false }),
    }
}

/// `--state-dir`, else the user's cache folder's `k3/serve` (none when there is no such
/// folder or nothing is to be kept on disk).
fn state_dir(args: &ServeArgs) -> Option<std::path::PathBuf> {
    if args.kept_on_disk == 0 {
        return None;
    }
    args.state_dir.clone().or_else(|| dirs::cache_dir().map(|d| d.join("k3").join("serve")))
}

fn server_failure(e: ServerError) -> Failure {
    let exit_code = match &e {
        ServerError::Unspecified { .. } | ServerError::LanNeedsKey { .. } | ServerError::BadOrigin { .. } => 2,
        ServerError::PortTaken { .. } | ServerError::Bind { .. } | ServerError::Threads(_) => 1,
        ServerError::BatchDir { .. } => 2,
    };
    Failure { exit_code, message: e.to_string() }
}

pub fn serve(args: ServeArgs) -> Result<(), Failure> {
    let config = config(&args)?;
    let mut options = engine_options(&args.model)?;
    let batch = args.batch.unwrap_or(args.kept_conversations);
    if batch == 0 {
        return Err(input_error("--batch: give 1 or more requests decoded together".into()));
    }
    // Each request decoding holds a sequence state, and so does each conversation kept.
    options.memory.sequences = args.kept_conversations.max(batch);
    let kept = KeptOnDisk { dir: state_dir(&args), count: args.kept_on_disk };
    let runtime = Arc::new(
        Runtime::start_batching(kept, batch).map_err(|e| runtime_error(format!("starting the engine worker: {e}")))?,
    );
    let summary = runtime
        .open_model(ModelRequest { options, is_demo: false })
        .map_err(|e| Failure { exit_code: if e.is_input_error() { 2 } else { 1 }, message: e.to_string() })?;
    eprintln!(
        "context: {} positions per conversation; up to {} requests decoded together",
        summary.context_length, batch
    );
    let handle = Server::start(runtime.clone(), config).map_err(server_failure)?;
    outln!("listening on http://{}", handle.local_addr());
    if let Some(problem) = handle.batch_problem() {
        eprintln!("warning: no Batch API (/v1/files, /v1/batches): {problem}; give --batch-dir DIR");
    }
    if handle.status().exposure == Exposure::Lan {
        eprintln!(
            "warning: listening on {} — reachable from the network; every /v1 request needs the API key",
            handle.local_addr()
        );
    }
    let (stop, stopped) = mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = stop.send(());
    })
    .map_err(|e| runtime_error(format!("installing the Ctrl-C handler: {e}")))?;
    let _ = stopped.recv();
    handle.stop();
    // The conversations kept in RAM go to --state-dir, so a restart continues them.
    runtime.shutdown();
    Ok(())
}
