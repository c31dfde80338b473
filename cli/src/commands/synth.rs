//! `k3 synth`: build a [`SynthSpec`] from a preset and overrides, write it, print a summary.
//!
//! Owns: the order in which settings apply (preset, `--config`, `--layers`,
//! `--full-attn-layers`, single values, `--bf16-experts`, `--seed`) and the output
//! (progress on stderr, one summary on stdout, or one JSON object with `--json`).
//! Must not: write anything itself: the library validates, refuses a non-empty folder
//! (exit 2) and writes.
//! Easy to break: `--layers` resets the MLA layers to K3's pattern, so it is applied
//! before `--full-attn-layers` ([`spec`] applies them).

mod spec;

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use k3_synth::{self as synth, SynthProgress, SynthSpec, SynthSummary};
use serde_json::json;

use super::Failure;
use crate::args::SynthArgs;
use spec::spec;

/// Progress on stderr: an updating line on a terminal, a line every 10 s otherwise.
struct Reporter {
    terminal: bool,
    last: Option<Instant>,
}

impl Reporter {
    fn report(&mut self, p: SynthProgress) {
        let every = if self.terminal { Duration::from_millis(300) } else { Duration::from_secs(10) };
        if self.last.is_some_and(|t| t.elapsed() < every) {
            return;
        }
        self.last = Some(Instant::now());
        let line = format!(
            "shard {}/{}: {:.2} / {:.2} GB, {:.0} MB/s",
            (p.shard + 1).min(p.n_shards),
            p.n_shards,
            p.bytes_written as f64 / 1e9,
            p.total_bytes as f64 / 1e9,
            p.mb_per_s()
        );
        if self.terminal {
            eprint!("\r{line}   ");
        } else {
            eprintln!("{line}");
        }
    }
}

pub fn synth(args: SynthArgs) -> Result<(), Failure> {
    let spec = spec(&args)?;
    if args.dry_run {
        let (n_shards, n_tensors, shard_bytes, data_bytes) = synth::planned_size(&spec)?;
        let v =
            json!({"n_shards": n_shards, "n_tensors": n_tensors, "shard_bytes": shard_bytes, "data_bytes": data_bytes});
        if args.json {
            outln!("{v}");
        } else {
            outln!(
                "would write {n_shards} shards, {n_tensors} tensors, {shard_bytes} bytes ({:.2} GB)",
                gb(shard_bytes)
            );
        }
        return Ok(());
    }
    let terminal = !args.json && std::io::stderr().is_terminal();
    // Off a terminal the first line comes after one interval, so small runs print none.
    let mut reporter = Reporter { terminal, last: (!terminal).then(Instant::now) };
    let summary = synth::write_checkpoint(&spec, &args.out, &mut |p| reporter.report(p))?;
    if reporter.terminal {
        eprintln!();
    }
    print_summary(&args, &spec, &summary);
    Ok(())
}

fn gb(bytes: u64) -> f64 {
    bytes as f64 / 1e9
}

fn print_summary(args: &SynthArgs, spec: &SynthSpec, s: &SynthSummary) {
    if args.json {
        let v = json!({
            "out": s.out_dir.display().to_string(),
            "preset": args.preset,
            "seed": spec.seed,
            "expert_storage": spec.expert_storage.name(),
            "layer_map": s.layer_map,
            "n_experts": spec.num_experts,
            "n_shards": s.n_shards,
            "n_tensors": s.n_tensors,
            "shard_bytes": s.shard_bytes,
            "data_bytes": s.data_bytes,
            "expert_bytes": s.expert_bytes,
            "tokenizer_copied": s.tokenizer_copied,
            "seconds": s.seconds,
            "mb_per_s": s.mb_per_s(),
        });
        outln!("{v}");
        return;
    }
    outln!(
        "wrote {}: {} shards, {} tensors, {} bytes ({:.2} GB) in {:.1} s, {:.0} MB/s",
        s.out_dir.display(),
        s.n_shards,
        s.n_tensors,
        s.shard_bytes,
        gb(s.shard_bytes),
        s.seconds,
        s.mb_per_s()
    );
    outln!(
        "layers {}, {} experts of {} bytes ({}), seed {}, tokenizer files {}",
        s.layer_map,
        spec.num_experts,
        s.expert_bytes,
        spec.expert_storage.name(),
        spec.seed,
        if s.tokenizer_copied { "copied" } else { "not copied (vocab_size is not 768)" }
    );
}
