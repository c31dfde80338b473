//! A long command's progress on stderr: one line rewritten in place (`\r`) on a terminal;
//! elsewhere (a log, a pipe, CI) one line per step, so a log reads as steps and not as one
//! endless line of carriage returns (probe finding).

use std::io::{IsTerminal, Write};

/// The progress line of one command.
pub struct StepLine {
    terminal: bool,
    /// The step last printed when not on a terminal.
    step: Option<String>,
    shown: bool,
}

impl StepLine {
    /// In place when stderr is a terminal, else a line per step.
    pub fn new() -> StepLine {
        StepLine { terminal: std::io::stderr().is_terminal(), step: None, shown: false }
    }

    /// Shows `line`, which belongs to `step`: on a terminal it replaces the line; elsewhere it
    /// is printed when `step` differs from the last one printed.
    pub fn show(&mut self, step: &str, line: &str) {
        if self.terminal {
            eprint!("\r{line}   ");
            let _ = std::io::stderr().flush();
        } else if self.step.as_deref() != Some(step) {
            eprintln!("{line}");
            self.step = Some(step.to_string());
        }
        self.shown = true;
    }

    /// Ends the line on a terminal (nothing to end elsewhere).
    pub fn finish(&mut self) {
        if self.terminal && self.shown {
            eprintln!();
        }
        self.shown = false;
    }
}
