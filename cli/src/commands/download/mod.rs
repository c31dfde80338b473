//! `k3 download`: k3-store's install pipeline (a Hugging Face repository into a store
//! folder, pinned, resumable and verified, then the trunk packed beside it), then the
//! model opened once with the `auto` preset. Progress as a bar on a terminal or JSON lines (`--json`);
//! Ctrl-C pauses (everything durable is kept; the same command resumes).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k3_engine::{EngineOptions, MemoryOptions, TrunkPack};
use k3_plan::{format_bytes, parse_size, BudgetChoice};
use k3_store::download::space::tb;
use k3_store::{DownloadOptions, HubClient, HubSettings, Install, PackStatus, Packed, StoreError};
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
    let install = Install::new(opts);
    let result = runtime.block_on(install.download(hub, events, stop));
    view.finish();
    drop(runtime);
    let summary = result.map_err(store_failure)?;
    view.line(json!({"event": "verified", "commit": summary.commit, "files": summary.files, "total_bytes": summary.total_bytes}), &format!("all {} files verified ({}) at commit {}", summary.files, tb(summary.total_bytes), summary.commit));
    if args.no_pack || !install.has_model() {
        return Ok(());
    }
    pack(&install, &view)?;
    first_load(install.store(), &install.trunk(), &view)
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
    let sync = parse_size(&args.sync_size).map_err(|e| input_error(format!("--sync-size: {e}")))?;
    if !(4096..=(16 << 30)).contains(&sync) {
        return Err(input_error(format!("--sync-size {}: between 4 KiB and 16 GiB", args.sync_size)));
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
    o.sync_bytes = sync;
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

fn pack(install: &Install, view: &View) -> Result<(), Failure> {
    let trunk_dir = install.trunk();
    let packed = install.pack(&TrunkPack, &mut |p: PackStatus| {
        view.transient(json!({"event": "packing", "layer": p.layer, "layers": p.layers, "bytes_done": p.bytes_done, "bytes_total": p.bytes_total}), &format!("packing the trunk: layer {}/{} · {:.0} MB/s", p.layer, p.layers, p.mb_per_s));
    })?;
    match packed {
        Packed::AlreadyCurrent => view.line(
            json!({"event": "packed", "trunk": trunk_dir, "already": true}),
            &format!("the trunk in {} is already packed from these shards", trunk_dir.display()),
        ),
        Packed::Written { trunk, seconds } => {
            let resumed = match trunk.resumed_layers {
                0 => String::new(),
                n => format!("; resumed after layer {n}"),
            };
            view.line(
                json!({"event": "packed", "trunk": trunk_dir, "bytes": trunk.file_bytes, "resumed_layers": trunk.resumed_layers, "seconds": seconds}),
                &format!("packed the trunk ({}) into {}{resumed}", format_bytes(trunk.file_bytes), trunk_dir.display()),
            )
        }
    }
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
