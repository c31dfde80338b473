//! `k3 bench constrain`: what constrained decoding costs per token, at the model's
//! vocabulary and at K3's, against a decode step measured in the same run.
//!
//! Owns: one reply of the model under a required call of a tool with a nested schema
//! (greedy, constrained), timed whole and mask by mask; the same reply's text encoded with
//! Moonshot's released Kimi ranks (163,584) plus the four XTML markers as added tokens, the
//! vocabulary K3 decodes over, replayed through a constraint of that vocabulary mask by
//! mask; each round's times (k3-bench's ConstrainReport takes their medians and each
//! mask's share of the model's decode step).
//! [`report`] prints the figures, or `--json` derived from typed results.
//! Must not: time the parser factory's construction as a mask (it is built once per model
//! and printed apart).

mod report;

use std::path::Path;
use std::time::Instant;

use k3_bench::constrain::{ConstrainReport, ConstrainRounds};
use k3_constrain::{Constrainer, ReplyShape};
use k3_engine::chat::{ChatMode, ChatOptions, ChatSession, ChatTemplate, ToolChoice, ToolSpec, TurnInput};
use k3_engine::constraint::TokenConstraint;
use k3_engine::tokenizer::Tokenizer;
use k3_engine::{CancelToken, DecodeMode, GenerateParams, NullSink, Sampling};
use serde_json::json;

use super::{input_error, load_engine, load_tokenizer, runtime_error, Failure};
use crate::args::BenchConstrainArgs;

/// A tool with a nested schema (strings, an enum, an object of an integer and a boolean).
fn weather() -> ToolSpec {
    ToolSpec {
        name: "weather".into(),
        description: Some("The weather in a city on a day".into()),
        parameters: json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 24},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "when": {"type": "object", "properties": {"day": {"type": "integer", "minimum": 1, "maximum": 31},
                         "morning": {"type": "boolean"}}, "required": ["day", "morning"], "additionalProperties": false}
            },
            "required": ["city", "units", "when"]
        }),
    }
}

/// K3's vocabulary: the released ranks and the XTML markers after them.
fn k3_vocabulary(dir: &Path) -> Result<Tokenizer, Failure> {
    let ranks = std::fs::read(dir.join("tiktoken.model"))
        .map_err(|e| input_error(format!("{}: {e}", dir.join("tiktoken.model").display())))?;
    let n = ranks.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
    let markers = ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"];
    let added: serde_json::Map<String, serde_json::Value> = markers
        .iter()
        .enumerate()
        .map(|(i, m)| ((n + i).to_string(), json!({"content": m, "special": true})))
        .collect();
    let config = json!({"added_tokens_decoder": added, "eos_token": "<|end_of_msg|>"}).to_string();
    Ok(Tokenizer::from_bytes(&ranks, config.as_bytes(), dir)?)
}

/// Per-token seconds of masks replaying `ids` through a fresh constraint of `constrainer`.
fn replay(constrainer: &Constrainer, shape: &ReplyShape<'_>, ids: &[u32]) -> Result<f64, Failure> {
    let mut constraint = constrainer
        .reply(shape)
        .map_err(|e| runtime_error(e.to_string()))?
        .ok_or_else(|| runtime_error("the reply needs no constraint".into()))?;
    let start = Instant::now();
    for &id in ids {
        let mask = constraint.mask().map_err(runtime_error)?;
        if !mask.allows(id) {
            return Err(runtime_error(format!("the replayed reply's token {id} is not allowed")));
        }
        constraint.commit(id).map_err(runtime_error)?;
    }
    Ok(start.elapsed().as_secs_f64() / ids.len().max(1) as f64)
}

pub fn constrain(args: BenchConstrainArgs) -> Result<(), Failure> {
    if args.rounds == 0 {
        return Err(input_error("--rounds must be at least 1".into()));
    }
    let engine = load_engine(&args.model)?;
    let tok = load_tokenizer(&args.model.model)?;
    let options = ChatOptions { tools: vec![weather()], tool_choice: ToolChoice::Required, ..ChatOptions::default() };
    let tools = options.tools.clone();
    let shape = ReplyShape { mode: ChatMode::Instruct, tools: &tools, options: &options, parallel_calls: false };
    let built = Instant::now();
    let demo = Constrainer::new(&tok).map_err(|e| runtime_error(e.to_string()))?;
    let demo_build = built.elapsed();
    let built = Instant::now();
    let k3_tok = k3_vocabulary(&args.k3_vocabulary)?;
    let k3 = Constrainer::new(&k3_tok).map_err(|e| runtime_error(e.to_string()))?;
    let k3_build = built.elapsed();

    let mut rounds = ConstrainRounds::default();
    let mut reply_ids = Vec::new();
    for _ in 0..args.rounds {
        let mut chat = ChatSession::new(&engine, ChatTemplate::builtin(), ChatMode::Instruct, None);
        let mut constraint = demo
            .reply(&shape)
            .map_err(|e| runtime_error(e.to_string()))?
            .ok_or_else(|| runtime_error("the reply needs no constraint".into()))?;
        let input = TurnInput { options: options.clone(), ..TurnInput::user("What is the weather in Bath?") };
        let params = GenerateParams {
            max_new_tokens: args.tokens,
            sampling: Sampling::Greedy,
            stop_ids: vec![],
            mode: DecodeMode::Incremental,
        };
        let c: &mut dyn TokenConstraint = &mut constraint;
        let reply = chat.send_turn(&engine, &tok, &input, &params, Some(c), (&CancelToken::new(), &mut NullSink))?;
        let g = &reply.generation;
        let decoded = g.generated.len().saturating_sub(1).max(1);
        let (masks, mask_time) = constraint.mask_cost();
        rounds.step.push((g.total_time - g.prefill_time).as_secs_f64() / decoded as f64);
        rounds.model_mask.push(mask_time.as_secs_f64() / masks.max(1) as f64);
        reply_ids = g.generated.clone();
        let text = tok.decode(&reply_ids)?;
        rounds.k3_mask.push(replay(&k3, &shape, &k3_tok.encode(&text))?);
    }
    let vocabularies = (tok.vocab_size(), k3_tok.vocab_size());
    let report = ConstrainReport::of(&rounds, reply_ids.len(), vocabularies, (demo_build, k3_build));
    report::print(&report, args.json);
    Ok(())
}
