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
//! [`prompt`] holds what the loop sends, [`report`] prints the figures (`--json` derived
//! from typed results).
//! Must not: count a turn as cached when the kept state was not reused (`reused_history`
//! is printed), or time the replay on a warmer cache than the kept turn (each turn runs
//! the replay first, then the kept session).

mod prompt;
mod report;

use k3_bench::agent::TurnFigures;
use k3_engine::chat::{ChatMessage, ChatMode, ChatOptions, ChatSession, ChatTemplate, Role, TurnInput};
use k3_engine::tokenizer::Tokenizer;
use k3_engine::{CancelToken, DecodeMode, Engine, GenerateParams, Generation, NullSink, Sampling};

use super::{input_error, load_engine, load_tokenizer, Failure};
use crate::args::BenchAgentArgs;
use prompt::{filler, read_file_tool, PlainWords, SYSTEM};
use report::{print_header, print_turn, report};

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
