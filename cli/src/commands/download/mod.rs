//! `k3 download`: a Hugging Face repository into a store folder (pinned, resumable,
//! verified: k3-store does the work), then the trunk packed beside it and the model opened
//! once with the `auto` preset. Progress as a bar on a terminal or JSON lines (`--json`);
//! Ctrl-C pauses (everything durable is kept; the same command resumes).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k3_engine::advanced::stream::trunk_pack::{pack_trunk, PackProgress};
use k3_engine::{EngineOptions, MemoryOptions};
use k3_plan::{format_bytes, parse_size, BudgetChoice};
use k3_store::download::layout::StoreLayout;
use k3_store::download::space::tb;
use k3_store::{DownloadOptions, HubClient, HubSettings, StoreError};
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod describe;
mod view;

use view::View;

use super::{input_error, runtime_error, Failure};
use crate::args::DownloadArgs;

pub fn download(args: DownloadArgs) -> Result<(), Failure> {
    let opts = options(&args)?;
    let mut settings = HubSettings::from_env();
    if let Some(endpoint) = &args.endpoint {
        settings.endpoint = endpoint.trim_end_matches('/').to_string();
    }
    let hub = HubClient::new(settings).map_err(store_failure)?;
    let stop = CancellationToken::new();
    let on_ctrl_c = stop.clone();
    let _ = ctrlc::set_handler(move || on_ctrl_c.cancel());
    let view = Arc::new(View::new(args.json));
    let sink_view = view.clone();
    let events: k3_store::download::EventSink = Arc::new(move |e| sink_view.event(e));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| runtime_error(format!("cannot start the async runtime: {e}")))?;
    let store = opts.store.clone();
    let trunk_dir = opts.trunk_dir.clone().unwrap_or_else(|| StoreLayout::new(&store).default_trunk());
    let result = runtime.block_on(k3_store::download(opts, hub, events, stop));
    view.finish();
    drop(runtime);
    let summary = result.map_err(store_failure)?;
    view.line(json!({"event": "verified", "commit": summary.commit, "files": summary.files, "total_bytes": summary.total_bytes}), &format!("all {} files verified ({}) at commit {}", summary.files, tb(summary.total_bytes), summary.commit));
    if args.no_pack || !store.join("config.json").is_file() {
        return Ok(());
    }
    pack(&store, &trunk_dir, &view)?;
    first_load(&store, &trunk_dir, &view)
}

fn options(args: &DownloadArgs) -> Result<DownloadOptions, Failure> {
    let secs = |flag: &str, v: f64| {
        if v.is_finite() && v > 0.0 && v < 86_400.0 {
            Ok(Duration::from_secs_f64(v))
        } else {
            Err(input_error(format!("{flag} {v}: give seconds between 0 and 86400")))
        }
    };
    let chunk = parse_size(&args.chunk_size).map_err(|e| input_error(format!("--chunk-size: {e}")))?;
    if !(4096..=(1 << 30)).contains(&chunk) {
        return Err(input_error(format!("--chunk-size {}: between 4 KiB and 1 GiB", args.chunk_size)));
    }
    if args.jobs == 0 || args.jobs > 64 {
        return Err(input_error(format!("--jobs {}: between 1 and 64", args.jobs)));
    }
    // Probe finding: a regular file here said only "File exists".
    if args.to.exists() && !args.to.is_dir() {
        return Err(input_error(format!("--to {}: not a folder (it is a file); name a folder", args.to.display())));
    }
    std::fs::create_dir_all(&args.to).map_err(|e| input_error(format!("--to {}: {e}", args.to.display())))?;
    let revision =
        args.revision.clone().or_else(|| HubSettings::from_env().revision_override).unwrap_or_else(|| "main".into());
    let mut o = DownloadOptions::new(&args.repo, &revision, args.to.clone());
    o.trunk_dir = args.trunk_to.clone();
    o.jobs = args.jobs;
    o.chunk_bytes = chunk as usize;
    o.backoff_base = secs("--retry-base", args.retry_base)?;
    o.backoff_cap = secs("--retry-cap", args.retry_cap)?;
    o.stall_timeout = secs("--stall-timeout", args.stall_timeout)?;
    o.space_poll = secs("--space-poll", args.space_poll)?;
    Ok(o)
}

fn store_failure(e: StoreError) -> Failure {
    let code = match &e {
        StoreError::Stopped => 130,
        e if e.is_input_error() => 2,
        _ => 1,
    };
    Failure { exit_code: code, message: e.to_string() }
}

fn pack(store: &Path, trunk_dir: &Path, view: &View) -> Result<(), Failure> {
    if k3_engine::trunk_is_current(store, trunk_dir) {
        view.line(
            json!({"event": "packed", "trunk": trunk_dir, "already": true}),
            &format!("the trunk in {} is already packed from these shards", trunk_dir.display()),
        );
        return Ok(());
    }
    let start = Instant::now();
    let mut last = Instant::now() - Duration::from_secs(1);
    let summary = pack_trunk(store, trunk_dir, &mut |p: PackProgress| {
        if last.elapsed() >= Duration::from_millis(100) || p.layer_idx + 1 == p.n_layers {
            last = Instant::now();
            let mbps = p.bytes_done as f64 / start.elapsed().as_secs_f64().max(1e-9) / 1e6;
            view.transient(json!({"event": "packing", "layer": p.layer_idx + 1, "layers": p.n_layers, "bytes_done": p.bytes_done, "bytes_total": p.bytes_total}), &format!("packing the trunk: layer {}/{} · {mbps:.0} MB/s", p.layer_idx + 1, p.n_layers));
        }
    })?;
    let resumed = match summary.resumed_layers {
        0 => String::new(),
        n => format!("; resumed after layer {n}"),
    };
    view.line(
        json!({"event": "packed", "trunk": trunk_dir, "bytes": summary.file_bytes, "resumed_layers": summary.resumed_layers, "seconds": start.elapsed().as_secs_f64()}),
        &format!("packed the trunk ({}) into {}{resumed}", format_bytes(summary.file_bytes), trunk_dir.display()),
    );
    Ok(())
}

fn first_load(store: &Path, trunk_dir: &Path, view: &View) -> Result<(), Failure> {
    let start = Instant::now();
    let mut memory = MemoryOptions::resident();
    memory.budget = Some(BudgetChoice::Auto);
    memory.trunk_dir = Some(trunk_dir.to_path_buf());
    let options = EngineOptions { model_dir: store.to_path_buf(), threads: None, memory };
    let engine = k3_runtime::model::open_engine(&options)?;
    let tokenizer = k3_runtime::model::open_tokenizer(store)?;
    k3_runtime::model::check_vocab(&tokenizer, &engine, store)?;
    let secs = start.elapsed().as_secs_f64();
    view.line(
        json!({"event": "ready", "model": store, "trunk": trunk_dir, "preset": "auto", "load_seconds": secs}),
        &format!(
            "ready: {} opens with the auto preset in {secs:.1} s (k3 chat --model {} --trunk {} --preset auto)",
            store.display(),
            store.display(),
            trunk_dir.display()
        ),
    );
    Ok(())
}
