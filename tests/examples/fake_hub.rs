//! The fake Hugging Face hub as a standalone server, for trying `k3 download` (and the
//! app's setup wizard) by hand: serves a fixture checkpoint (`--model NAME`, default
//! `tiny-mxfp4`) as `moonshotai/Kimi-K3-tiny` at one commit, throttled to `--rate` MB/s per
//! request.
//!
//! `cargo run -p k3-tests --example fake_hub -- [--model NAME] [--rate MBPS] [--drop-once FILE]`
//! (the connection serving FILE drops once, after 64 KiB), then
//! `k3 download --repo moonshotai/Kimi-K3-tiny --to STORE --endpoint <printed URL>`.

use k3_tests::fake_hub::{FakeHub, HubRepo, Lie};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rate =
        args.iter().position(|a| a == "--rate").and_then(|i| args.get(i + 1)).and_then(|v| v.parse::<f64>().ok());
    let model = args.iter().position(|a| a == "--model").and_then(|i| args.get(i + 1));
    let dir = k3_tests::fixture(model.map_or("tiny-mxfp4", String::as_str));
    let files = match k3_tests::fake_hub::checkpoint_files(&dir) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("fake_hub: reading {}: {e}", dir.display());
            std::process::exit(1);
        }
    };
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let hub =
        FakeHub::start(vec![HubRepo { id: "moonshotai/Kimi-K3-tiny".into(), commit: commit.into(), files }], commit);
    hub.set_rate(rate.map(|mb| (mb * 1e6) as u64));
    if let Some(file) = args.iter().position(|a| a == "--drop-once").and_then(|i| args.get(i + 1)) {
        hub.script(file, vec![Lie::EarlyClose { after: 64 << 10 }]);
    }
    println!("{}", hub.endpoint);
    loop {
        std::thread::park();
    }
}
