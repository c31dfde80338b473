//! The `/` commands of `k3 chat`: parsed from a line, and run (`/reset`, `/system`, and
//! `/preset` or `/budget`, which replan the loaded model and keep the conversation).

use k3_plan::{BudgetChoice, Preset};
use k3_runtime::{ModelSummary, Runtime};

use super::conversation::{describe_plan, Conversation};
use crate::commands::{input_error, Failure};

/// A `/` command of the REPL.
pub(super) enum Slash {
    Quit,
    Help,
    Reset,
    System(Option<String>),
    /// `/preset NAME` or `/budget TRUNK CACHE`, parsed (or why not).
    Memory(Result<BudgetChoice, Failure>),
    Unknown(String),
}

pub(super) fn command(line: &str) -> Option<Slash> {
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

pub(super) fn slash_command(runtime: &Runtime, conversation: &mut Conversation, slash: Slash) {
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
