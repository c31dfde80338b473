//! `k3 chat`: an interactive REPL over the runtime, the same host the desktop app uses.
//!
//! Lines starting with `/` are commands (`/reset`, `/system [TEXT]`, `/preset NAME`,
//! `/budget TRUNK CACHE`, `/help`, `/quit`); anything else is a user message. The
//! conversation lives here as messages; the runtime reuses the engine state of the turn
//! before whenever the history matches, and a replan keeps it. Ctrl-C stops the reply in
//! progress, not the program; end of input (Ctrl-D) exits. A stats line follows each reply.
//!
//! Owns: the loop; `conversation` holds what the REPL keeps, [`resume`] continues a saved one, [`slash`] runs the
//! `/` commands, [`reply`] sends a message and prints the reply.

mod conversation;
mod reply;
mod resume;
mod slash;

use std::io::{BufRead, IsTerminal};
use std::sync::{Arc, Mutex};

use k3_engine::chat::ChatMode;
use k3_engine::{DecodeMode, GenerateParams};
use k3_runtime::{ModelRequest, Runtime};

use super::{engine_options, input_error, runtime_error, sampling, Failure};
use crate::args::ChatArgs;
use conversation::{describe_plan, Conversation};
use reply::{install_ctrl_c, reply, CurrentReply};
use resume::resumed_conversation;
use slash::{command, slash_command, Slash};

pub fn chat(args: ChatArgs) -> Result<(), Failure> {
    if args.max_tokens == 0 {
        return Err(input_error("--max-tokens 0: give at least 1".into()));
    }
    // A device, FIFO, folder or dangling link is refused before anything is read or written.
    if let Some(path) = &args.resume {
        k3_engine::resume::check_state_path(path).map_err(|e| input_error(format!("--resume: {e}")))?;
    }
    let options = engine_options(&args.model)?;
    let runtime = Arc::new(Runtime::start().map_err(|e| runtime_error(format!("starting the engine worker: {e}")))?);
    let summary =
        runtime.open_model(ModelRequest { options, is_demo: false }).map_err(|e| match Arc::try_unwrap(e) {
            Ok(e) => Failure::from(e),
            Err(shared) => {
                Failure { exit_code: if shared.is_input_error() { 2 } else { 1 }, message: shared.to_string() }
            }
        })?;
    eprintln!("(memory plan: {})", describe_plan(&summary));
    let params = GenerateParams {
        max_new_tokens: args.max_tokens,
        sampling: sampling(&args.sampling),
        stop_ids: vec![],
        mode: match args.speculate {
            0 => DecodeMode::Incremental,
            n => DecodeMode::Speculative { max_draft: usize::from(n) },
        },
    };
    params.sampling.validate()?;
    let mode = if args.thinking { ChatMode::Thinking } else { ChatMode::Instruct };
    let mut conversation = Conversation {
        system: args.system.clone(),
        messages: Vec::new(),
        mode,
        params,
        state_file: args.resume.clone(),
    };
    resumed_conversation(&mut conversation);
    let current: CurrentReply = Arc::new(Mutex::new(None));
    install_ctrl_c(runtime.clone(), current.clone())?;
    let interactive = std::io::stdin().is_terminal();
    let mut stdin = std::io::stdin().lock();
    loop {
        if interactive {
            out!("you> ");
        }
        let Some(line) = read_line(&mut stdin)? else { break };
        let Ok(line) = String::from_utf8(line) else {
            outln!("(that line is not UTF-8; it was not sent)");
            continue;
        };
        let line = line.trim_end_matches(['\r', '\n']);
        match command(line) {
            Some(Slash::Quit) => break,
            Some(slash) => slash_command(&runtime, &mut conversation, slash),
            None if line.trim().is_empty() => {}
            None => match reply(&runtime, &mut conversation, line, &current) {
                Ok(()) => {}
                // One bad turn (too long for the context, …) ends that turn, not the session.
                Err(f) if runtime.probe().snapshot().model.is_some() && f.exit_code == 2 => {
                    outln!("\n(that message failed: {}; the conversation is unchanged)", f.message)
                }
                Err(f) => return Err(f),
            },
        }
    }
    Ok(())
}

/// The next line of standard input as bytes (`None` at its end); a line longer than
/// 16 MiB is refused without reading it all.
fn read_line(input: &mut impl BufRead) -> Result<Option<Vec<u8>>, Failure> {
    use std::io::Read;
    let mut line = Vec::new();
    let limit = 16 << 20;
    let n = input
        .by_ref()
        .take(limit + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| runtime_error(format!("reading standard input: {e}")))?;
    if n == 0 {
        return Ok(None);
    }
    if line.len() as u64 > limit {
        return Err(input_error("a line of standard input is longer than 16 MiB".into()));
    }
    Ok(Some(line))
}
