//! `k3 bench agent`: an agent loop's time to first token per turn with the prefix cache
//! (the conversation's engine state kept from the turn before) against without it (the
//! whole history prefilled, as a server that keeps nothing must), in one run.
//!
//! Owns: the loop — a system prompt, a declared tool, a first request, then per turn the
//! model's reply (greedy, `--reply-tokens`) and a new message of `--result-tokens` (a tool
//! result's size) —; per turn the kept session's prefill and a fresh session's replay of
//! the same history, their times to first token and prefilled positions, and a check that
//! both reply with the same tokens.
//! Replies are held to plain words ([`PlainWords`]): a synthetic checkpoint's random weights
//! pick any id, and a reply holding control markers or half a UTF-8 character renders back
//! as other text, so no later prompt would extend the kept state. The mask narrows which
//! tokens may be picked, the same for both arms; it never changes what a prefill costs.
//! Must not: count a turn as cached when the kept state was not reused (`reused_history`
//! is printed), or time the replay on a warmer cache than the kept turn (each turn runs
//! the replay first, then the kept session).

use std::time::Duration;

use k3_engine::chat::{ChatMessage, ChatMode, ChatOptions, ChatSession, ChatTemplate, Role, ToolSpec, TurnInput};
use k3_engine::constraint::{TokenConstraint, TokenMask};
use k3_engine::tokenizer::Tokenizer;
use k3_engine::{CancelToken, DecodeMode, Engine, GenerateParams, Generation, NullSink, Sampling};
use serde_json::json;

use super::{input_error, load_engine, load_tokenizer, Failure};
use crate::args::BenchAgentArgs;

const SYSTEM: &str = "You are a coding agent. Read the files you are given, call tools to look further, \
                      and answer with the change to make.";

/// The tool an agent declares (its schema is part of every prompt).
fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: Some("Read a file of the project".into()),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
                           "required": ["path"]}),
    }
}

/// A message of at least `tokens` tokens: numbered source lines, as a tool result holds.
fn filler(tok: &Tokenizer, turn: usize, tokens: usize) -> String {
    let mut text = format!("src/module_{turn}.rs:\n");
    let mut line = 0;
    while tok.encode(&text).len() < tokens {
        line += 1;
        text.push_str(&format!("{line:4}  let value_{line} = compute(input, {line}) + offset_{turn};\n"));
    }
    text
}

/// Replies made of letters and digits only: the same mask before every pick.
#[derive(Clone)]
struct PlainWords {
    mask: TokenMask,
}

impl PlainWords {
    fn new(tok: &Tokenizer, vocab: usize) -> Self {
        let plain = |id: u32| {
            !tok.is_added(id)
                && tok.token_bytes(id).is_ok_and(|b| !b.is_empty() && b.iter().all(u8::is_ascii_alphanumeric))
        };
        let ids: Vec<u32> = (0..vocab as u32).filter(|&id| plain(id)).collect();
        PlainWords { mask: TokenMask::only(&ids, vocab) }
    }
}

impl TokenConstraint for PlainWords {
    fn mask(&mut self) -> Result<TokenMask, String> {
        Ok(self.mask.clone())
    }

    fn commit(&mut self, _token: u32) -> Result<(), String> {
        Ok(())
    }
}

/// One turn's figures.
struct TurnFigures {
    history_tokens: usize,
    kept: (Duration, usize, bool),
    replay: Option<(Duration, usize)>,
}

pub fn agent(args: BenchAgentArgs) -> Result<(), Failure> {
    if args.turns == 0 || args.reply_tokens == 0 {
        return Err(input_error("--turns and --reply-tokens must be at least 1".into()));
    }
    let engine = load_engine(&args.model)?;
    let tok = load_tokenizer(&args.model.model)?;
    let options = ChatOptions { tools: vec![read_file_tool()], ..ChatOptions::default() };
    let params = GenerateParams {
        max_new_tokens: args.reply_tokens,
        sampling: Sampling::Greedy,
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    let new_chat = || ChatSession::new(&engine, ChatTemplate::builtin(), ChatMode::Instruct, Some(SYSTEM.into()));
    let mut kept = new_chat();
    // Built once: the mask is the same before every pick of every turn.
    let words = PlainWords::new(&tok, engine.config().vocab_size);
    let mut figures = Vec::new();
    if !args.json {
        print_header(&args);
    }
    for turn in 1..=args.turns {
        let text = if turn == 1 {
            "Fix the off-by-one in the parser.".to_string()
        } else {
            filler(&tok, turn, args.result_tokens)
        };
        let input = TurnInput {
            messages: vec![ChatMessage::new(Role::User, text)],
            options: options.clone(),
            ..TurnInput::default()
        };
        let history = kept.messages().to_vec();
        let replay = if turn >= args.replay_from {
            let mut fresh = new_chat();
            fresh.replace_history(history.clone());
            Some(send((&engine, &tok), &mut fresh, &input, (&params, &words))?)
        } else {
            None
        };
        let kept_gen = send((&engine, &tok), &mut kept, &input, (&params, &words))?;
        if let Some((g, _)) = &replay {
            if g.generated != kept_gen.0.generated {
                return Err(super::runtime_error(format!(
                    "turn {turn}: the replayed history replied with other tokens"
                )));
            }
        }
        let figure = TurnFigures {
            history_tokens: kept.tokens().len() - kept_gen.0.generated.len(),
            kept: (kept_gen.0.prefill_time, kept_gen.0.n_prefilled, kept_gen.1),
            replay: replay.map(|(g, _)| (g.prefill_time, g.n_prefilled)),
        };
        if !args.json {
            print_turn(turn, &figure);
        }
        figures.push(figure);
    }
    report(&args, &figures);
    Ok(())
}

/// One turn of `chat`: its generation and whether the kept state was reused.
fn send(
    (engine, tok): (&Engine, &Tokenizer),
    chat: &mut ChatSession,
    input: &TurnInput,
    (params, words): (&GenerateParams, &PlainWords),
) -> Result<(Generation, bool), Failure> {
    let mut words = words.clone();
    let reply = chat.send_turn(engine, tok, input, params, Some(&mut words), (&CancelToken::new(), &mut NullSink))?;
    Ok((reply.generation, reply.reused_history))
}

/// The table's title and column heads (each turn's row is printed as it finishes: a turn
/// on a large checkpoint takes minutes).
fn print_header(args: &BenchAgentArgs) {
    println!(
        "agent loop, {} turns ({} tokens per new message, {}-token replies), time to first token:",
        args.turns, args.result_tokens, args.reply_tokens
    );
    println!("  turn  prompt  kept: prefilled      ttft   replay: prefilled      ttft   speed-up");
}

fn print_turn(turn: usize, f: &TurnFigures) {
    let (kept_t, kept_n, reused) = f.kept;
    let replay = f.replay.map_or("        —           —          —".to_string(), |(t, n)| {
        format!("{n:9} {:9.2} s {:9.1}×", t.as_secs_f64(), t.as_secs_f64() / kept_t.as_secs_f64().max(1e-9))
    });
    let mark = if reused || turn == 1 { "" } else { "  (kept state not reused)" };
    println!("  {turn:4} {:7} {kept_n:15} {:9.2} s  {replay}{mark}", f.history_tokens, kept_t.as_secs_f64());
}

/// The summary: the median speed-up over the replayed turns past 1,000 prompt tokens (or
/// the whole table as JSON).
fn report(args: &BenchAgentArgs, figures: &[TurnFigures]) {
    let speedups: Vec<f64> = figures
        .iter()
        .filter(|f| f.history_tokens > 1000)
        .filter_map(|f| f.replay.map(|(t, _)| t.as_secs_f64() / f.kept.0.as_secs_f64().max(1e-9)))
        .collect();
    if args.json {
        let turns: Vec<_> = figures
            .iter()
            .enumerate()
            .map(|(i, f)| {
                json!({
                    "turn": i + 1, "prompt_tokens": f.history_tokens,
                    "kept": {"ttft_s": f.kept.0.as_secs_f64(), "prefilled": f.kept.1, "reused": f.kept.2},
                    "replay": f.replay.map(|(t, n)| json!({"ttft_s": t.as_secs_f64(), "prefilled": n})),
                })
            })
            .collect();
        println!("{}", json!({ "turns": turns, "speedups_past_1000_tokens": speedups, "identical_tokens": true }));
        return;
    }
    if speedups.is_empty() {
        println!("no replayed turn's prompt exceeds 1,000 tokens");
    } else {
        let mut sorted = speedups.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "past 1,000 prompt tokens: {:.1}× faster with the kept state (median of {} turn{}; least {:.1}×); \
             tokens identical",
            super::bench_stream::median(&speedups),
            speedups.len(),
            if speedups.len() == 1 { "" } else { "s" },
            sorted[0]
        );
    }
}
