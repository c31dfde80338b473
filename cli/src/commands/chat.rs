//! `k3 chat`: an interactive REPL over the runtime, the same host the desktop app uses.
//!
//! Lines starting with `/` are commands (`/reset`, `/system [TEXT]`, `/preset NAME`,
//! `/budget TRUNK CACHE`, `/help`, `/quit`); anything else is a user message. The
//! conversation lives here as messages; the runtime reuses the engine state of the turn
//! before whenever the history matches, and a replan keeps it. Ctrl-C stops the reply in
//! progress, not the program; end of input (Ctrl-D) exits. A stats line follows each reply.

use std::io::{BufRead, IsTerminal};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use k3_engine::chat::{ChatMessage, ChatMode, Role, TurnInput};
use k3_engine::{DecodeMode, FinishReason, GenerateParams};
use k3_plan::{format_bytes, BudgetChoice, Preset};
use k3_runtime::{
    ChatTurn, JobId, ModelRequest, ModelSummary, ReplyHandler, ReplyOutcome, ReplyProgress, Runtime, StateNote,
};

use super::{engine_options, input_error, runtime_error, sampling, Failure};
use crate::args::ChatArgs;

/// Prints reply text as it streams and hands the outcome back to the REPL.
struct TerminalReply {
    turn: Option<ChatTurn>,
    done: Sender<ReplyOutcome>,
}

impl ReplyHandler for TerminalReply {
    fn queued(&mut self, _job: JobId, _position: usize) {}

    fn begin(&mut self, _job: JobId) -> Option<ChatTurn> {
        self.turn.take()
    }

    fn progress(&mut self, _job: JobId, progress: ReplyProgress) {
        if let ReplyProgress::Text { text, .. } = progress {
            out!("{text}");
        }
    }

    fn end(&mut self, _job: JobId, outcome: ReplyOutcome) {
        let _ = self.done.send(outcome);
    }
}

/// The job id of the reply in progress, shared with the Ctrl-C handler.
type CurrentReply = Arc<Mutex<Option<JobId>>>;

fn install_ctrl_c(runtime: Arc<Runtime>, current: CurrentReply) -> Result<(), Failure> {
    ctrlc::set_handler(move || {
        let guard = current.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match *guard {
            Some(job) => {
                runtime.cancel(job);
            }
            None => eprintln!("\n(Ctrl-C stops a reply; /quit or Ctrl-D exits)"),
        }
    })
    .map_err(|e| runtime_error(format!("installing the Ctrl-C handler: {e}")))
}

/// The conversation as the REPL keeps it.
struct Conversation {
    system: Option<String>,
    messages: Vec<ChatMessage>,
    mode: ChatMode,
    params: GenerateParams,
    /// `--resume FILE`: where the conversation and its engine state are kept.
    state_file: Option<std::path::PathBuf>,
}

/// The conversation `--resume FILE` holds (its system prompt and mode replace the flags'),
/// or a new one when the file does not exist yet. A file that cannot be read is never
/// overwritten: it is kept aside as `FILE.damaged` (probe finding: the next message replaced
/// six saved messages), and the conversation continues from its text when its header holds.
fn resumed_conversation(conversation: &mut Conversation) {
    let Some(path) = conversation.state_file.clone().filter(|p| p.exists()) else { return };
    let saved = match k3_engine::chat::read_saved_conversation(&path) {
        Ok(saved) => {
            outln!("(continuing the {} messages saved in {})", saved.messages.len(), path.display());
            saved
        }
        Err(e) => {
            let recovered = k3_engine::chat::recover_saved_conversation(&path);
            let aside = set_aside(&path);
            match (recovered, aside) {
                (Ok(saved), Ok(kept)) => {
                    outln!(
                        "({e}; kept as {}; continuing its {} messages from their text, read again from the start)",
                        kept.display(),
                        saved.messages.len()
                    );
                    saved
                }
                (Err(_), Ok(kept)) => {
                    outln!(
                        "({e}; kept as {}; starting a new conversation, saved in {})",
                        kept.display(),
                        path.display()
                    );
                    return;
                }
                (_, Err(why)) => {
                    outln!("({e}; it could not be kept aside ({why}), so this conversation is not saved)");
                    conversation.state_file = None;
                    return;
                }
            }
        }
    };
    conversation.system = saved.system;
    conversation.mode = saved.mode;
    conversation.messages = saved.messages;
}

/// Keeps a damaged state file as the first free `FILE.damaged`, `FILE.damaged.2`, …: moved,
/// or copied when FILE is a symbolic link (which stays, and is written through later).
fn set_aside(path: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    let name = |n: u32| {
        let suffix = if n == 1 { ".damaged".to_string() } else { format!(".damaged.{n}") };
        let mut os = path.as_os_str().to_owned();
        os.push(suffix);
        std::path::PathBuf::from(os)
    };
    let free =
        (1..1000).map(name).find(|p| !p.exists()).ok_or_else(|| std::io::Error::other("too many kept copies"))?;
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        std::fs::copy(path, &free)?;
    } else {
        std::fs::rename(path, &free)?;
    }
    Ok(free)
}

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

fn slash_command(runtime: &Runtime, conversation: &mut Conversation, slash: Slash) {
    match slash {
        Slash::Quit => {}
        Slash::Help => {
            outln!("/reset · /system [TEXT] · /preset NAME · /budget TRUNK CACHE · /quit · Ctrl-C stops a reply")
        }
        Slash::Reset => {
            conversation.messages.clear();
            outln!("(conversation cleared)");
        }
        Slash::System(text) => {
            conversation.system = text;
            conversation.messages.clear();
            outln!(
                "(system prompt {}; conversation cleared)",
                if conversation.system.is_some() { "set" } else { "removed" }
            );
        }
        Slash::Memory(choice) => {
            let started = std::time::Instant::now();
            match choice.and_then(|c| replan(runtime, c)) {
                Ok(summary) => outln!(
                    "(memory plan: {}; applied in {:.2} s; the conversation continues)",
                    describe_plan(&summary),
                    started.elapsed().as_secs_f64()
                ),
                Err(failure) => outln!("({})", failure.message),
            }
        }
        Slash::Unknown(c) => outln!("(unknown command {c}; try /help)"),
    }
}

fn replan(runtime: &Runtime, choice: BudgetChoice) -> Result<ModelSummary, Failure> {
    let mut line = crate::progress::StepLine::new();
    let progress = Box::new(move |done: usize, total: usize| {
        let step = format!("(pinning trunk layers: {done}/{total})");
        line.show(&step, &step);
        if done == total {
            line.finish();
        }
    });
    let summary = runtime.replan(Some(choice), progress)?;
    Ok(summary)
}

/// The plan in one line, with the context it reserves.
fn describe_plan(summary: &ModelSummary) -> String {
    let weights = match &summary.plan {
        Some(p) => format!(
            "{}/{} layers pinned, ring {}, {} expert slots, {} in all",
            p.pinned_layers,
            summary.layers,
            p.ring_slots,
            p.cache_slots,
            format_bytes(p.total_bytes)
        ),
        None => "every weight resident".to_string(),
    };
    format!("{weights}; context {} positions", summary.context_length)
}

fn reply(
    runtime: &Runtime,
    conversation: &mut Conversation,
    line: &str,
    current: &CurrentReply,
) -> Result<(), Failure> {
    let turn = ChatTurn {
        conversation: k3_runtime::ConversationKey::Terminal,
        system: conversation.system.clone(),
        mode: conversation.mode,
        history: conversation.messages.clone(),
        input: TurnInput::user(line),
        params: conversation.params.clone(),
        state_file: conversation.state_file.clone(),
    };
    let (done, outcome) = mpsc::channel();
    let job = runtime.reply(Box::new(TerminalReply { turn: Some(turn), done }));
    *current.lock().unwrap_or_else(|p| p.into_inner()) = Some(job);
    let outcome = outcome.recv().map_err(|_| runtime_error("the engine worker has stopped".into()));
    *current.lock().unwrap_or_else(|p| p.into_inner()) = None;
    let out = match outcome? {
        ReplyOutcome::Finished(out) => *out,
        ReplyOutcome::Failed { error, .. } => {
            let exit_code = if error.is_input_error() { 2 } else { 1 };
            return Err(Failure { exit_code, message: error.to_string() });
        }
        ReplyOutcome::Refused => return Err(runtime_error("the reply was refused".into())),
    };
    conversation.messages.push(ChatMessage::new(Role::User, line));
    conversation.messages.push(ChatMessage::assistant(out.text.clone(), out.think, Vec::new()));
    let f = &out.figures;
    outln!(
        "\n[{} tokens · {} · prefilled {} tokens{} in {:.2} s · {}]",
        f.output_tokens,
        finish_word(out.finish),
        f.prefilled_tokens,
        if out.reused_history { "" } else { " (full history)" },
        f.time_to_first_token.as_secs_f64(),
        f.seconds_per_token.map_or("– s/token".to_string(), |s| format!("{s:.3} s/token")),
    );
    let used = f.prompt_tokens + f.output_tokens;
    let limit = runtime.probe().snapshot().model.map_or(0, |m| m.context_length);
    if k3_plan::nearly_full(used as u64, limit as u64) {
        outln!(
            "(this conversation holds {used} of its {limit} positions ({} %): a reply that reaches {limit} ends as \
             \"context full\"; /reset starts a new one)",
            used * 100 / limit
        );
    }
    match &out.state {
        Some(StateNote::Resumed) => outln!("(the engine state was read from the saved file: no history replayed)"),
        Some(StateNote::Refused(reason)) => {
            outln!("(the saved state was not used: {reason}; the history was replayed)")
        }
        Some(StateNote::SaveFailed(reason)) => outln!("(the state could not be saved: {reason})"),
        Some(StateNote::Saved) | None => {}
    }
    Ok(())
}

fn finish_word(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::Cancelled => "cancelled",
        FinishReason::ContextFull => "context full",
    }
}

/// A `/` command of the REPL.
enum Slash {
    Quit,
    Help,
    Reset,
    System(Option<String>),
    /// `/preset NAME` or `/budget TRUNK CACHE`, parsed (or why not).
    Memory(Result<BudgetChoice, Failure>),
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
        "preset" => {
            Slash::Memory(Preset::from_name(arg).map(Preset::choice).map_err(|e| input_error(format!("/preset: {e}"))))
        }
        "budget" => Slash::Memory(budget(arg)),
        other => Slash::Unknown(format!("/{other}")),
    })
}

/// `/budget TRUNK CACHE`, e.g. `/budget 3GB 1GB`.
fn budget(arg: &str) -> Result<BudgetChoice, Failure> {
    let sizes: Vec<&str> = arg.split_whitespace().collect();
    let [trunk, cache] = sizes[..] else {
        return Err(input_error("/budget needs two sizes: TRUNK CACHE, e.g. /budget 3GB 1GB".into()));
    };
    match BudgetChoice::from_flags(None, Some(trunk), Some(cache)) {
        Ok(Some(choice)) => Ok(choice),
        Ok(None) => Err(input_error("/budget needs two sizes".into())),
        Err(e) => Err(input_error(format!("/budget: {e}"))),
    }
}
