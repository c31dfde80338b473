//! `k3 chat`: an interactive REPL over a multi-turn `ChatSession`.
//!
//! Lines starting with `/` are commands (`/reset`, `/system [TEXT]`, `/help`, `/quit`);
//! anything else is a user message. Ctrl-C stops the reply in progress, not the program;
//! end of input (Ctrl-D) exits. A stats line follows each reply.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex};

use k3_engine::chat::{ChatMode, ChatSession, ChatTemplate};
use k3_engine::tokenizer::{StreamDecoder, Tokenizer};
use k3_engine::{CancelToken, DecodeMode, EventSink, GenerateParams, TokenEvent};

use super::{check_vocab, load_engine, runtime_error, sampling, Failure};
use crate::args::ChatArgs;

/// Prints reply text as it streams, hiding the template's special tokens.
struct ReplySink<'a> {
    tokenizer: &'a Tokenizer,
    stream: StreamDecoder,
}

impl EventSink for ReplySink<'_> {
    fn token(&mut self, event: &TokenEvent<'_>) {
        if self.tokenizer.is_added(event.id) {
            return;
        }
        let piece = self.stream.push(self.tokenizer.token_bytes(event.id).unwrap_or_default());
        print!("{piece}");
        let _ = std::io::stdout().flush();
    }
}

/// The cancel token of the reply in progress, shared with the Ctrl-C handler.
type CurrentReply = Arc<Mutex<Option<CancelToken>>>;

fn install_ctrl_c(current: CurrentReply) -> Result<(), Failure> {
    ctrlc::set_handler(move || {
        let guard = current.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match guard.as_ref() {
            Some(token) => token.cancel(),
            None => eprintln!("\n(Ctrl-C stops a reply; /quit or Ctrl-D exits)"),
        }
    })
    .map_err(|e| runtime_error(format!("installing the Ctrl-C handler: {e}")))
}

pub fn chat(args: ChatArgs) -> Result<(), Failure> {
    let engine = load_engine(&args.model)?;
    let tokenizer = Tokenizer::load(&args.model.model)?;
    check_vocab(&tokenizer, &engine, &args.model.model)?;
    let template = match tokenizer.chat_template() {
        Some(source) => ChatTemplate::jinja(source),
        None => ChatTemplate::builtin(),
    };
    let mode = if args.thinking { ChatMode::Thinking } else { ChatMode::Instruct };
    let mut chat = ChatSession::new(&engine, template, mode, args.system.clone());
    let params = GenerateParams {
        max_new_tokens: args.max_tokens,
        sampling: sampling(&args.sampling),
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    params.sampling.validate()?;
    let current: CurrentReply = Arc::new(Mutex::new(None));
    install_ctrl_c(current.clone())?;
    let interactive = std::io::stdin().is_terminal();
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if interactive {
            print!("you> ");
            let _ = std::io::stdout().flush();
        }
        let Some(line) = lines.next() else { break };
        let line = line.map_err(|e| runtime_error(format!("reading standard input: {e}")))?;
        let line = line.trim_end_matches('\r');
        match command(line) {
            Some(Slash::Quit) => break,
            Some(Slash::Help) => println!("/reset · /system [TEXT] · /quit · Ctrl-C stops a reply"),
            Some(Slash::Reset) => {
                chat.reset();
                println!("(conversation cleared)");
            }
            Some(Slash::System(text)) => {
                chat.set_system(text);
                println!(
                    "(system prompt {}; conversation cleared)",
                    if chat.system().is_some() { "set" } else { "removed" }
                );
            }
            Some(Slash::Unknown(c)) => println!("(unknown command {c}; try /help)"),
            None if line.trim().is_empty() => {}
            None => reply(&engine, &tokenizer, &mut chat, line, &params, &current)?,
        }
    }
    Ok(())
}

fn reply(
    engine: &k3_engine::Engine,
    tokenizer: &Tokenizer,
    chat: &mut ChatSession,
    line: &str,
    params: &GenerateParams,
    current: &CurrentReply,
) -> Result<(), Failure> {
    let token = CancelToken::new();
    *current.lock().unwrap_or_else(|p| p.into_inner()) = Some(token.clone());
    let mut sink = ReplySink { tokenizer, stream: StreamDecoder::new() };
    let result = chat.send(engine, tokenizer, line, params, &token, &mut sink);
    *current.lock().unwrap_or_else(|p| p.into_inner()) = None;
    let out = result?;
    print!("{}", sink.stream.finish());
    let g = &out.generation;
    let n = g.generated.len();
    let decode_s = (g.total_time - g.prefill_time).as_secs_f64();
    println!(
        "\n[{n} tokens · {} · prefilled {} tokens{} in {:.2} s · {:.3} s/token]",
        format!("{:?}", g.finish).to_lowercase(),
        g.n_prefilled,
        if out.reused_history { "" } else { " (full history)" },
        g.prefill_time.as_secs_f64(),
        if n > 1 { decode_s / (n - 1) as f64 } else { g.total_time.as_secs_f64() }
    );
    Ok(())
}

/// A `/` command of the REPL.
enum Slash {
    Quit,
    Help,
    Reset,
    System(Option<String>),
    Unknown(String),
}

fn command(line: &str) -> Option<Slash> {
    let rest = line.strip_prefix('/')?;
    let (name, arg) = rest.split_once(' ').map_or((rest, ""), |(n, a)| (n, a.trim()));
    Some(match name {
        "quit" | "exit" => Slash::Quit,
        "help" => Slash::Help,
        "reset" => Slash::Reset,
        "system" => Slash::System((!arg.is_empty()).then(|| arg.to_string())),
        other => Slash::Unknown(format!("/{other}")),
    })
}
