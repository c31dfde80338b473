//! Time to the first token of turn 2 after a restart, with and without the saved state
//! (issue 18 item 3): turn 1 prefills a long prompt and replies, the session is saved, the
//! engine is dropped; then, each with the page cache dropped first, a new engine either
//! resumes the saved session and prefills only turn 2, or prefills the whole history.
//! Both must give the same tokens.
//!
//! `cargo run --release -p k3-tests --example resume_ttft -- MODEL TRUNK TRUNK_BUDGET CACHE_BUDGET PROMPT_TOKENS`

use std::path::{Path, PathBuf};
use std::time::Instant;

use k3_engine::{
    BudgetChoice, CancelToken, DecodeMode, Engine, EngineOptions, GenerateParams, MemoryOptions, NullSink, Sampling,
};

fn engine(model: &Path, trunk: &Path, budget: k3_plan::Budget) -> Result<Engine, String> {
    let mut memory = MemoryOptions::resident();
    memory.budget = Some(BudgetChoice::Fixed(budget));
    memory.trunk_dir = Some(trunk.to_path_buf());
    Engine::load(&EngineOptions { model_dir: model.to_path_buf(), threads: None, memory })
        .map_err(|e| format!("loading {}: {e}", model.display()))
}

fn drop_caches() {
    // Root only; elsewhere the figures include the page cache (said in the output).
    let ok = std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok();
    if !ok {
        eprintln!("(could not drop the page cache)");
    }
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, trunk, trunk_budget, cache_budget, n] = &args[..] else {
        return Err("usage: resume_ttft MODEL TRUNK TRUNK_BUDGET CACHE_BUDGET PROMPT_TOKENS".into());
    };
    let (model, trunk) = (PathBuf::from(model), PathBuf::from(trunk));
    let budget = k3_plan::Budget {
        trunk_bytes: k3_plan::parse_size(trunk_budget).map_err(|e| format!("trunk budget: {e}"))?,
        cache_bytes: k3_plan::parse_size(cache_budget).map_err(|e| format!("cache budget: {e}"))?,
    };
    let n: usize = n.parse().map_err(|e| format!("prompt tokens: {e}"))?;
    let params = |m| GenerateParams {
        max_new_tokens: m,
        sampling: Sampling::Greedy,
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    let state = std::env::temp_dir().join("resume_ttft.k3state");
    let e = engine(&model, &trunk, budget)?;
    let vocab = e.config().vocab_size as u32;
    let turn1: Vec<u32> = (0..n as u32).map(|i| (i * 7 + 3) % vocab).collect();
    let turn2: Vec<u32> = (0..8u32).map(|i| (i * 11 + 5) % vocab).collect();
    let mut s = e.new_session();
    let t = Instant::now();
    let first = e
        .generate(&mut s, &turn1, &params(4), &CancelToken::new(), &mut NullSink)
        .map_err(|e| format!("turn 1: {e}"))?;
    println!(
        "turn 1: {n} prompt tokens, first token after {:.2} s, {:.2} s in all",
        first.prefill_time.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    e.save_session(&s, &state, serde_json::Value::Null).map_err(|e| format!("save: {e}"))?;
    let bytes = std::fs::metadata(&state).map(|m| m.len()).unwrap_or(0);
    println!(
        "saved {} tokens' state: {:.1} MB in {:.3} s",
        s.tokens().len(),
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let history = s.tokens().to_vec();
    drop(e);
    let mut replies = Vec::new();
    for round in 1..=2 {
        for resumed in [true, false] {
            drop_caches();
            let e = engine(&model, &trunk, budget)?;
            let t = Instant::now();
            let (mut session, prompt) = if resumed {
                (e.resume_session(&state).map_err(|e| format!("resume: {e}"))?.0, turn2.clone())
            } else {
                let mut all = history.clone();
                all.extend_from_slice(&turn2);
                (e.new_session(), all)
            };
            let read = t.elapsed().as_secs_f64();
            let out = e
                .generate(&mut session, &prompt, &params(2), &CancelToken::new(), &mut NullSink)
                .map_err(|e| format!("turn 2: {e}"))?;
            let ttft = read + out.prefill_time.as_secs_f64();
            println!(
                "round {round}, {}: prefilled {} tokens, first token of turn 2 after {ttft:.2} s (state read {read:.3} s)",
                if resumed { "resumed from the saved state" } else { "no saved state" },
                out.n_prefilled
            );
            replies.push(out.generated);
        }
    }
    let _ = std::fs::remove_file(&state);
    if !replies.windows(2).all(|w| w[0] == w[1]) {
        return Err(format!("turn 2 differed between runs: {replies:?}"));
    }
    println!("turn 2's tokens are the same in all four runs");
    Ok(())
}
