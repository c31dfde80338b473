//! `k3`: the command-line tool, openly glue over `k3-engine`.
//!
//! Exit status: 0 success; 2 unusable input (bad flags, config, checkpoint), with one line
//! naming the file, tensor or field; 1 a failure while running. Never a panic.

mod args;
#[macro_use]
mod out;
mod commands;
mod progress;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            if code == 2 {
                // One line: clap's first paragraph, whitespace collapsed.
                let text = e.to_string();
                let first = text.split("\n\n").next().unwrap_or("invalid arguments");
                eprintln!("{}", first.split_whitespace().collect::<Vec<_>>().join(" "));
            } else {
                let _ = e.print();
            }
            return ExitCode::from(code);
        }
    };
    match commands::dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("k3: {}", failure.message);
            ExitCode::from(failure.exit_code)
        }
    }
}
